"""Tail segments (``tracker.indexes.tail``) under faults and races: a lookup while a merge
ends, a load that dies before its segment joins the lookups (its keys reclaimed by the
next merge, a live load's never), and what the next lookups find meanwhile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tracker.indexes import tail
from tracker.indexes.bulk import BulkLoader
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.snapshot import SnapshotFolder, take_snapshot


def _mothers(seed: int, first_seq: int, n: int) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (first_seq + i, np.unique(rng.integers(0, 2**63, 200, dtype=np.uint64))) for i in range(n)
    ]


def _with_segment(
    redis: Any, tmp_path: Path
) -> tuple[RedisInvertedIndex, RedisInvertedIndex, list[Any]]:
    """An index holding mothers 1-4 and a segment of it holding mothers 101-104."""
    main = RedisInvertedIndex(redis, "m", bucket_bits=10)
    old, new = _mothers(1, 1, 4), _mothers(2, 101, 4)
    main.add(old)
    segment = main.tail(tail.new_number(main))
    loader = BulkLoader(main, tmp_path / "spill", into=segment)
    loader.extend(new)
    loader.finish()
    loader.close()
    assert [t.prefix for t in main.tails()] == [segment.prefix]
    return main, segment, new


def _merge_when_read(main: RedisInvertedIndex, segment: RedisInvertedIndex, new: list[Any]) -> None:
    """The last adds of a merge and the segment's drop, just after a lookup read the
    index and the set of segments, before it reads the segment."""
    real = main.tail
    done: list[int] = []

    def tail_of(number: int) -> RedisInvertedIndex:
        if not done:
            done.append(number)
            main.add(new)  # (the merge's adds: the index holds them now)
            tail.drop(main, segment)  # (then the segment goes)
        return real(number)

    main.tail = tail_of  # type: ignore[method-assign]


def test_a_lookup_while_a_merge_ends_finds_the_merged_mothers(
    index_redis: Any, tmp_path: Path
) -> None:
    main, segment, new = _with_segment(index_redis, tmp_path)
    fps = new[0][1]
    _merge_when_read(main, segment, new)
    at, seqs, _ = main.lookup(fps)
    assert main.tails() == []  # (merged meanwhile)
    # Every fingerprint of mother 101 found: in the segment or in the index.
    assert set(at.tolist()) == set(range(fps.size)) and set(seqs.tolist()) == {101}


def test_a_lookup_from_snapshots_while_a_merge_ends_finds_the_merged_mothers(
    index_redis: Any, tmp_path: Path
) -> None:
    main, segment, new = _with_segment(index_redis, tmp_path)
    folder = tmp_path / "snapshots"
    take_snapshot(main, folder)
    take_snapshot(segment, folder)
    snaps = SnapshotFolder(folder)
    fps = new[0][1]
    _merge_when_read(main, segment, new)
    got = snaps.lookup(main, fps)
    if got is None:  # (no local answer: the caller asks Redis)
        got = main.lookup(fps)
    at, seqs, _ = got
    assert set(at.tolist()) == set(range(fps.size)) and set(seqs.tolist()) == {101}
