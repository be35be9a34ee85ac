"""Ingest of a whole-book file as a book of chapters (issue #36: ≥ 2 M chars/s wall for a
5 M-character book), as ``yinji ingest book.txt`` runs it: a new process each time
(start-up, reading and decoding, the chapter reader, fingerprints, store, index,
snapshot, the book record), into a fresh embedded library (sqlite + embedded Redis in a
temporary folder).

The book: chapters of the novels under ../shared/data/novels (several editions, as
``tracker.books.parse.split_chapters`` finds them), renumbered 第1章 … and written as one
TXT of about 5 M characters, in GB18030 as pirate downloads are (``--encoding``). Modes,
in turn (A B A B ...), medians over ``--runs`` runs each:

- ``book``: ``yinji ingest book.txt`` (a book of chapters);
- ``works``: ``yinji ingest --as-works book.txt`` (one work, for scale);
- ``baseline`` with ``--baseline-tree DIR``: ``yinji ingest book.txt`` run from another
  source tree (e.g. ``git archive <commit> | tar -x -C DIR``), the before of a change;
  the two libraries' index (every Redis field but tokens) and stored fingerprints are
  then compared by digest: a speed-up must not change an answer.

Each tree runs once first, untimed, to write its bytecode (kept in a folder of the
run, ``PYTHONPYCACHEPREFIX``), as an installed package has it; ``--compile-each-run``
keeps none. Besides wall time, each run's CPU time (user + system of the process and
the children it waited for; the embedded Redis server runs on its own and is not in
it), and per baseline the ratios pair by pair.

    python bench/bench_book_ingest.py [--chars 5000000] [--runs 5] [--baseline-tree DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine  # noqa: E402
from tracker.documents.readers import decode_text  # noqa: E402

NOVELS = Path(os.environ.get("YINJI_SHARED_DATA", "/work/shared/data")) / "novels"


def build_book(path: Path, chars: int, encoding: str = "gb18030") -> tuple[int, int]:
    """Write the book; (characters of chapter text, chapters)."""
    from tracker.books.parse import split_chapters

    sources = sorted(NOVELS.glob("*.txt")) + sorted((NOVELS / "other").glob("*.txt"))
    if not sources:
        raise SystemExit(f"no novels under {NOVELS} (set YINJI_SHARED_DATA)")
    parts = ["《书库合集》\n作者：佚名\n"]
    total = n = 0
    while total < chars:
        for src in sources:
            _front, chapters, _w = split_chapters(decode_text(src.read_bytes(), src.name))
            for ch in chapters:
                if len(ch.text) < 200:
                    continue
                n += 1
                parts.append(f"\n第{n}章 {ch.title.split(' ', 1)[-1][:30]}\n{ch.text.strip()}\n")
                total += len(ch.text)
                if total >= chars:
                    break
            if total >= chars:
                break
    path.write_bytes("".join(parts).encode(encoding))
    return total, n


@dataclass
class Run:
    wall: float  # seconds, start to exit
    cpu: float  # user + system seconds of the process and the children it waited for
    said: str  # the CLI's summary lines


def run(tree: Path, book: Path, data: Path, *extra: str, pycache: Path | None = None) -> Run:
    """``yinji ingest`` run from ``tree`` into a fresh ``data`` folder, as a new process.
    With ``pycache`` its modules' bytecode is kept there (``PYTHONPYCACHEPREFIX``), as an
    installed package keeps it: every run after the first starts without compiling
    (a shell with ``PYTHONDONTWRITEBYTECODE`` set would compile every module of the
    tree on every start)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    cmd = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", *extra]
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(
        [*cmd, str(book)], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    said = [ln for ln in done.stderr.splitlines() if ln.startswith(("ingested", "made"))]
    return Run(wall, cpu, "; ".join(said))


def digest(data: Path) -> str:
    """Digest of a library's index (every Redis hash field but the random tokens and
    the version counter) and of its stored works and fingerprints."""
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    h = hashlib.sha256()
    with Library.open(Settings(data_dir=data)) as lib:
        for key in sorted(lib.redis.scan_iter(count=10_000)):
            if key.endswith(b":version"):
                # a change counter (random epoch, writes counted): a load in parts
                # counts more writes for the same postings
                continue
            if lib.redis.type(key) != b"hash":
                h.update(key + b"\0" + repr(lib.redis.get(key)).encode())
                continue
            fields = sorted(lib.redis.hgetall(key).items())
            h.update(
                key + b"\0" + repr([f for f in fields if f[0] not in (b"epoch", b"token")]).encode()
            )
    with sqlite3.connect(data / "yinji.sqlite3") as db:
        for table in ("mothers", "fingerprints", "books"):
            cols = [c[1] for c in db.execute(f"pragma table_info({table})")]
            keep = [c for c in cols if not c.endswith("_at") and c not in ("created", "updated")]
            if not keep:  # a tree from before books has no books table
                continue
            for row in db.execute(f"select {', '.join(keep)} from {table} order by 1, 2"):
                h.update(repr([_timeless(v) for v in row]).encode())
    return h.hexdigest()[:16]


def _timeless(value: object) -> object:
    """A column's value; in a JSON document, the times (keys ending ``_at``) left out."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            doc = json.loads(value)
        except ValueError:
            return value
        return json.dumps(_drop_times(doc), sort_keys=True, ensure_ascii=False)
    return value


def _drop_times(doc: object) -> object:
    if isinstance(doc, dict):
        return {k: _drop_times(v) for k, v in doc.items() if not str(k).endswith("_at")}
    if isinstance(doc, list):
        return [_drop_times(v) for v in doc]
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--encoding", default="gb18030")
    parser.add_argument("--baseline-tree", type=Path, default=None)
    parser.add_argument("--no-works", action="store_true", help="leave out the one-work mode")
    parser.add_argument(
        "--compile-each-run",
        action="store_true",
        help="no bytecode kept between runs (every start compiles the tree's modules)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp) / "book.txt"
        chars, chapters = build_book(book, args.chars, args.encoding)
        size = len(decode_text(book.read_bytes()))
        print(f"# {machine()}")
        print(f"# load average at the start: {os.getloadavg()[0]:.1f}")
        print(
            f"book: {size:,} characters ({args.encoding}, {book.stat().st_size:,} bytes), "
            f"{chapters} chapters, {chars:,} of chapter text"
        )
        modes: dict[str, tuple[Path, tuple[str, ...]]] = {"book": (ROOT, ())}
        if args.baseline_tree is not None:
            modes["baseline"] = (args.baseline_tree.resolve(), ())
        if not args.no_works:
            modes["works"] = (ROOT, ("--as-works",))
        caches = {m: None if args.compile_each_run else Path(tmp) / f"pyc-{m}" for m in modes}
        for mode, (tree, extra) in modes.items():  # a warm-up: bytecode written, not timed
            run(tree, book, Path(tmp) / f"warm-{mode}", *extra, pycache=caches[mode])
        runs: dict[str, list[Run]] = {m: [] for m in modes}
        digests: dict[str, set[str]] = {m: set() for m in modes}
        for i in range(args.runs):
            order = list(modes) if i % 2 == 0 else list(reversed(modes))
            for mode in order:
                tree, extra = modes[mode]
                data = Path(tmp) / f"data-{mode}-{i}"
                done = run(tree, book, data, *extra, pycache=caches[mode])
                runs[mode].append(done)
                if mode != "works":
                    digests[mode].add(digest(data))
                rate = size / done.wall / 1e6
                print(
                    f"run {i + 1} {mode:8}: {done.wall:6.2f} s wall, {done.cpu:5.2f} s CPU, "
                    f"{rate:.2f} M chars/s; {done.said}"
                )
        print(f"# load average at the end: {os.getloadavg()[0]:.1f}")
        for mode, rs in runs.items():
            wall = statistics.median(r.wall for r in rs)
            cpu = statistics.median(r.cpu for r in rs)
            print(
                f"{mode:8}: median {wall:.2f} s wall = {size / wall / 1e6:.2f} M chars/s, "
                f"{cpu:.2f} s CPU (walls {', '.join(f'{r.wall:.2f}' for r in rs)})"
            )
        for mode in modes:
            if mode == "book":
                continue
            # pair by pair (run i of both): the machine's drift cancels out
            walls = [a.wall / b.wall for a, b in zip(runs["book"], runs[mode], strict=True)]
            cpus = [a.cpu / b.cpu for a, b in zip(runs["book"], runs[mode], strict=True)]
            print(
                f"book / {mode}: wall ratio {statistics.median(walls):.2f}, "
                f"CPU ratio {statistics.median(cpus):.2f} (medians of the pairs)"
            )
        if "baseline" in modes:
            same = digests["book"] == digests["baseline"] and len(digests["book"]) == 1
            verdict = "identical" if same else "DIFFERENT"
            print(
                f"index and store digests: {sorted(digests['book'])} vs "
                f"{sorted(digests['baseline'])}: {verdict}"
            )


if __name__ == "__main__":
    main()
