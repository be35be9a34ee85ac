"""What an append-only file on the embedded *index* server would cost an ingest (issue
37), the measurement behind the queue server of its own.

Accepted jobs must survive a SIGKILL, so the Redis that holds the queue and the job
records keeps an AOF. Kept in the index's server, every index write would go to the
AOF too, the whole-bucket appends of an add (``tracker/indexes/appends.py``) included.
This runs the same ingest into fresh data folders with the index server as Yinji
starts it (snapshots only; the jobs have ``queue.db`` with its AOF) and with an AOF on
it (``appendonly yes``, ``appendfsync everysec``), alternating the two so that a change
of the machine's load hits both, and reports medians.

    python bench/bench_embedded_aof.py [--docs 2000] [--base 0] [--rounds 3]

``--base N``: N documents are ingested first (not timed), then ``--docs`` more are
added and timed: an add to a library, whose whole-bucket appends rewrite the buckets
they touch, all of it written to the AOF.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from textgen import work  # type: ignore[import-not-found]

import tracker.indexes.redis_client as rc
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

INDEX_AOF = {
    "appendonly": "yes",
    "appendfilename": "index.aof",
    "appendfsync": "everysec",
    "aof-use-rdb-preamble": "yes",
}


@contextmanager
def aof(enabled: bool) -> Iterator[None]:
    """The index server started with an AOF (``enabled``) or as Yinji starts it."""
    before = dict(rc.INDEX_SERVER_CONFIG)
    if enabled:
        rc.INDEX_SERVER_CONFIG.update(INDEX_AOF)
    try:
        yield
    finally:
        rc.INDEX_SERVER_CONFIG.clear()
        rc.INDEX_SERVER_CONFIG.update(before)


def one(
    docs: list[Document], enabled: bool, base: list[Document] | None = None
) -> tuple[float, float, int]:
    """(ingest seconds, close seconds, AOF bytes) of one ingest of ``docs`` into a fresh
    folder (holding ``base`` first)."""
    folder = Path(tempfile.mkdtemp(prefix="yinji-aof-bench-"))
    try:
        settings = Settings(data_dir=folder / "data")
        with aof(enabled):
            lib = Library.open(settings)
            if base:
                lib.ingest(base)
            t0 = time.perf_counter()
            lib.ingest(docs)
            t1 = time.perf_counter()
            lib.close()  # the embedded server saves and stops
            t2 = time.perf_counter()
        size = sum(p.stat().st_size for p in (folder / "data").glob("index.aof*"))
        return t1 - t0, t2 - t1, size
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", type=int, default=0)
    args = parser.parse_args()
    docs = [Document(id=f"d{i}", text=work(10_000 + i, 40)) for i in range(args.docs)]
    base = [Document(id=f"b{i}", text=work(900_000 + i, 40)) for i in range(args.base)]
    chars = sum(len(d.text) for d in docs)
    runs: dict[bool, list[tuple[float, float, int]]] = {True: [], False: []}
    one(docs[:50], True)  # warm-up: imports, first server start
    for r in range(args.rounds):
        for enabled in (False, True) if r % 2 == 0 else (True, False):
            runs[enabled].append(one(docs, enabled, base))
            ingest, close, size = runs[enabled][-1]
            print(
                f"round {r + 1} index AOF {'on' if enabled else 'off'}: ingest {ingest:.2f} s, "
                f"close {close:.2f} s, AOF {size / 1e6:.1f} MB",
                flush=True,
            )
    held = sum(len(d.text) for d in base)
    print(
        f"\n{machine()}; {args.docs} documents, {chars / 1e6:.2f} M characters added to a "
        f"library of {held / 1e6:.2f} M"
    )
    med = {k: statistics.median(x[0] for x in v) for k, v in runs.items()}
    close = {k: statistics.median(x[1] for x in v) for k, v in runs.items()}
    for enabled in (False, True):
        print(
            f"index AOF {'on ' if enabled else 'off'}: ingest median {med[enabled]:.2f} s "
            f"({chars / med[enabled] / 1e6:.2f} M chars/s), close median {close[enabled]:.2f} s"
        )
    print(f"ratio on/off (ingest): {med[True] / med[False]:.2f}")


if __name__ == "__main__":
    main()
