"""How many functions and files one ``yinji check FILE`` passes through (issue #27).

Ingests a few generated works into a temporary data folder (``yinji ingest``), then runs
``yinji check --json SUSPECT`` in this process under ``sys.setprofile`` and counts the
distinct functions of the ``tracker`` package that were called (module bodies,
comprehensions and lambdas left out), the files they live in, and how often
``Settings.from_env`` ran. Modules are imported before the traced run, so import-time
code is not counted. Run it on another tree with ``PYTHONPATH=/tmp/old``::

    python bench/trace_check.py
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from textgen import work  # noqa: E402

#: The modules that only route a check (the rest computes: engines, index, align, store).
ORCHESTRATION = ("cli.py", "library.py", "services/", "matching/matcher.py")


def trace(argv: list[str]) -> tuple[Counter[str], list[str], Counter[str]]:
    """Run the CLI with ``argv`` under a profiler: (calls per tracker function, files in
    the order first entered, calls per function on the per-suspect path: between the
    first call of ``cli._check_inputs`` and its last return, so opening and closing the
    library are left out)."""
    import tracker
    from tracker.cli import main

    package = str(Path(tracker.__file__).resolve().parent)
    seen: list[str] = []  # every tracker call, in order
    window: list[int] = []  # positions in ``seen`` of _check_inputs' calls and returns

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        code = frame.f_code
        if not code.co_filename.startswith(package) or code.co_name.startswith("<"):
            return
        rel = Path(code.co_filename).relative_to(package).as_posix()
        name = f"{rel}:{code.co_qualname}"
        if name == "cli.py:_check_inputs":
            window.append(len(seen))
        if event == "call":
            seen.append(name)

    out = io.StringIO()
    sys.setprofile(profile)
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(argv, standalone_mode=False)
    finally:
        sys.setprofile(None)
    files: list[str] = []
    for name in seen:
        rel = name.split(":")[0]
        if rel not in files:
            files.append(rel)
    path = Counter(seen[min(window) : max(window)]) if window else Counter()
    return Counter(seen), files, path


def tracker_file() -> str:
    import tracker

    return str(tracker.__file__)


def main() -> None:
    from tracker.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        works = folder / "works"
        works.mkdir()
        for i in range(20):
            (works / f"w{i:02d}.txt").write_text(work(i, 60), encoding="utf-8")
        suspect = folder / "suspect.txt"
        suspect.write_text(work(900, 10) + work(3, 30)[200:1400] + work(901, 10), "utf-8")
        data = str(folder / "data")
        quiet = contextlib.redirect_stderr(io.StringIO())
        with contextlib.suppress(SystemExit), quiet, contextlib.redirect_stdout(io.StringIO()):
            cli(["--data-dir", data, "ingest", str(works)], standalone_mode=False)
            # A first check warms the modules it imports (their bodies are not counted).
            cli(["--data-dir", data, "check", "--no-save", str(suspect)], standalone_mode=False)
            calls, files, path = trace(["--data-dir", data, "check", "--json", str(suspect)])
    settings = calls["plumbing/config.py:Settings.from_env"]
    layer = [n for n in calls if n.startswith(ORCHESTRATION)]
    print(f"package: {Path(tracker_file()).parent}")
    print(f"functions of tracker called: {len(calls)} in {len(files)} files")
    print(
        f"of them on the orchestration layer (cli, library, services, matching): {len(layer)} "
        f"in {len({n.split(':')[0] for n in layer})} files"
    )
    on_path = [n for n in path if n.startswith(ORCHESTRATION)]
    print(
        f"per-suspect path (inside cli._check_inputs): {len(path)} functions in "
        f"{len({n.split(':')[0] for n in path})} files; orchestration layer {len(on_path)} "
        f"in {len({n.split(':')[0] for n in on_path})} files"
    )
    print(f"Settings.from_env ran {settings} times")
    print("files, in the order first entered: " + " → ".join(files))
    if "-v" in sys.argv:
        for name, n in sorted(calls.items()):
            print(f"  {n:6d}  {name}" + ("  (per-suspect path)" if name in path else ""))


if __name__ == "__main__":
    main()
