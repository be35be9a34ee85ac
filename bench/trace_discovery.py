"""How many functions and files one discovered page passes through (issue #41).

A library of one book (two chapters); a local JieQi-style pirate site (GBK, search form,
book index, chapter pages; ``tests/support/discokit.py``) holding both of the
chapters; one registered site; one discovery run in this process (``read_processes=0``,
so extraction runs here too) under ``sys.setprofile`` on every thread. Counts the
distinct functions of the ``tracker`` package the run called (module bodies,
comprehensions and lambdas left out) and the files they live in, beside the pages it
fetched and checked. Modules are imported by a first, untraced run, so import-time code
is not counted. Run it on another tree with ``PYTHONPATH=/tmp/old``::

    python bench/trace_discovery.py
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from discokit import FakePirateSite  # noqa: E402
from textgen import work  # noqa: E402


def _first(*names: str) -> ModuleType:
    """The first of ``names`` that imports (a module moved between the trees compared)."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(names[-1])


def one_run(data: Path, chapters: list[str], trace: bool) -> tuple[Counter[str], Any]:
    import tracker
    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.discovery.run import DiscoveryRun, RunOptions
    from tracker.discovery.sites import SiteRegistry, find_search, load_profiles
    from tracker.library import Library

    Settings = _first("tracker.plumbing.config", "tracker.plumbing.config").Settings
    Document = _first("tracker.text.documents", "tracker.documents.readers").Document

    package = str(Path(tracker.__file__).resolve().parent)
    seen: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(package) or code.co_name.startswith("<"):
            return
        rel = Path(code.co_filename).relative_to(package).as_posix()
        seen[f"{rel}:{code.co_qualname}"] += 1

    with FakePirateSite({"西山记": chapters}) as pirate:
        config = CrawlerConfig(
            allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port == pirate.server.port,
            min_interval=0.0,
            retries=0,
        )
        crawler = Crawler(config)
        with Library.open(Settings.from_env(data)) as lib:
            if not lib.store.count_mothers():
                lib.ingest(
                    [
                        Document(
                            id=f"xs-{i:04d}",
                            title=f"《西山记》第{i}章",
                            text=text,
                            metadata={"book_id": "xs", "book_title": "西山记", "chapter_index": i},
                        )
                        for i, text in enumerate(chapters, 1)
                    ]
                )
                registry = SiteRegistry(lib.store)
                registry.add(find_search(crawler, pirate.base + "/", load_profiles()))
            run = DiscoveryRun(
                lib,
                RunOptions(interval=0.0, max_pages=20, read_processes=0, concurrency=1),
                providers=[],
                crawler=crawler,
            )
            if trace:
                threading.setprofile(profile)
                sys.setprofile(profile)
            try:
                report = run.run()
            finally:
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
    return seen, report


def main() -> None:
    import tracker

    chapters = [work(7, 40), work(8, 40)]
    with tempfile.TemporaryDirectory() as tmp:
        one_run(Path(tmp) / "warm", chapters, trace=False)
        calls, report = one_run(Path(tmp) / "data", chapters, trace=True)
    files = {name.split(":")[0] for name in calls}
    print(f"package: {Path(tracker.__file__).parent}")
    fetched = getattr(report, "fetched", "?")
    checked = getattr(report, "checked", "?")
    matched = getattr(report, "matched", getattr(report, "matches", "?"))
    print(f"run: fetched {fetched}, checked {checked}, matched {matched}")
    print(f"functions of tracker called: {len(calls)} in {len(files)} files")
    discovery = [n for n in calls if n.startswith("discovery/")]
    print(
        f"of them in discovery/: {len(discovery)} in "
        f"{len({n.split(':')[0] for n in discovery})} files"
    )
    if "-v" in sys.argv:
        for name, n in sorted(calls.items()):
            print(f"  {n:6d}  {name}")


if __name__ == "__main__":
    main()
