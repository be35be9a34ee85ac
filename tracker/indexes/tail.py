"""Tail segments of an inverted index: a big add into a big index, loaded in bulk beside it
and merged in later (issue #37).

An add of 10 M characters into a 100 M-character index gives every one of its ~130,000
buckets ~11 new postings: whatever the write path, every bucket is read and written
again (``tracker.indexes.appends``: ~4.6 s of that add, then ~1.8 s rewriting the whole
local snapshot). The same postings loaded into an *empty* index are written whole, once,
without reading anything back (``tracker.indexes.bulk``: the rate of an ingest into an
empty library), and its snapshot is only theirs. So, as a log-structured index does
(Lucene's segments, an LSM tree's levels), a big add into a non-empty index goes into a
new **tail segment**: an index of its own (``{prefix}:t{n}``, its own layout, version and
snapshot), posted under the main index's edition groups. Lookups read the main index and
every segment and take the union (``union``: a fingerprint held by more than ``stop_df``
mothers in all of them together is a stop word, as one index would make it). Later the
segments are **merged** into the main index (``IndexAdmin.merge_tails``: their mothers'
stored fingerprints added by the ordinary add path, then each segment dropped): by an
ingest that finds ``MAX_TAILS`` segments or a tail past ``MAX_TAIL_SHARE`` of the main
index, by ``yinji index merge-tails``, and by the workers' periodic task.

Keys: ``{P:version}:tails``, a set of the segment numbers lookups read (in the version's
hash slot, so ``lua/overlay.lua`` reads it with the version; ``lua/lookup.lua`` with the
query); ``{P:version}:tail-next``, the counter that numbers them; ``P:t{n}:seqs``, the
mothers (packed uint32) a segment was loaded with, for its merge. A segment joins the set
only once it is loaded (a load that dies leaves keys no lookup reads, deleted with the
index by ``clear``: ``yinji index rebuild``); a merge takes it out of the set only after
its mothers are in the main index, so a lookup meanwhile finds them twice (the union
counts them once), never not at all: a lookup that read the main index before the merge's
last adds and a segment after its drop reads again (``RedisInvertedIndex.tails_held``;
from local snapshots it leaves the answer to Redis). Removes go to the main index and
every segment.
Every key is one key of one slot: all of this works on Redis Cluster as on one server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from tracker.indexes.codec import (
    decode_value,
    encode_value,
    is_stop,
    stop_sample,
    stop_value,
)

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

#: The fewest characters of an ingest into a non-empty index that go to a new tail
#: segment (fewer: the ordinary adds, which touch a few buckets each).
MIN_TAIL_CHARS = 2_000_000
#: Segments an index may have; an ingest that would make one more merges them first.
#: Each one costs a check ~1 ms (one more lookup; docs/BENCHMARKS.md: p50 +1-2 ms with
#: two at 100 M, +3-4.5 ms and a p99 past 25 ms with four).
MAX_TAILS = 2
#: The segments' fields, against the main index's, above which they are merged first.
MAX_TAIL_SHARE = 0.5

#: Mothers a merge adds at a time (a write touches every bucket once per batch).
MERGE_BATCH = 4096

Postings = tuple[np.ndarray, np.ndarray, int]  # (fp_index, seqs, stopped), as lookup gives


class Segment(Protocol):
    """A tail segment: an index of its own (``RedisInvertedIndex``)."""

    prefix: str

    def drop_keys(self) -> int: ...


class Segmented(Protocol):
    """An index with tail segments (``RedisInvertedIndex``)."""

    prefix: str

    @property
    def tails_key(self) -> str: ...

    @property
    def tail_next_key(self) -> str: ...

    @property
    def redis(self) -> RedisClient: ...

    def tail(self, number: int) -> Segment: ...


def tail_prefix(prefix: str, number: int) -> str:
    """The key prefix of tail segment ``number`` of the index with key prefix ``prefix``."""
    return f"{prefix}:t{number}"


def union(
    n: int,
    parts: list[tuple[Postings, np.ndarray]],
    stop_df: int,
    stop_mask: np.ndarray | None = None,
) -> Postings:
    """The postings of one index from those of its main index and segments (``parts``:
    each one's lookup of the same ``n`` fingerprints with its stop mask), as adds into
    one index make them: a fingerprint stopped in any part is stopped; otherwise its
    mothers (each once, the main index's first) are its postings, unless more than
    ``stop_df``: a stop word. Fingerprint order, as ``lookup`` gives; ``stop_mask`` set
    where a fingerprint is a stop word."""
    # The parts that found anything (a check of an older work finds nothing in a
    # segment): one alone is the answer as it is.
    found = [(p, mask) for p, mask in parts if p[0].size or p[2]]
    if len(found) <= 1:
        (fp_index, seqs, stopped), mask = found[0] if found else parts[0]
        if stop_mask is not None:
            stop_mask |= mask
        return fp_index, seqs, stopped
    stop = np.zeros(n, dtype=bool)
    for _, mask in found:
        stop |= mask
    parts = found
    fp = np.concatenate([p[0] for p, _ in parts])
    seqs = np.concatenate([p[1] for p, _ in parts]).astype(np.uint32)
    keep = ~stop[fp]
    fp, seqs = fp[keep], seqs[keep]
    # Each (fingerprint, mother) once, where it came first (the main index's first).
    key = (fp.astype(np.uint64) << np.uint64(32)) | seqs.astype(np.uint64)
    _, first = np.unique(key, return_index=True)
    first.sort()
    fp, seqs = fp[first], seqs[first]
    over = np.bincount(fp, minlength=n) > stop_df
    stop |= over
    keep = ~over[fp]
    fp, seqs = fp[keep], seqs[keep]
    order = np.argsort(fp, kind="stable")
    if stop_mask is not None:
        stop_mask |= stop
    return fp[order].astype(np.int64), seqs[order], int(stop.sum())


def merged_value(a: bytes | None, b: bytes | None, stop_df: int, fmt: int) -> bytes | None:
    """One stored value from a field's value in the main index (``a``) and in a segment
    (``b``), as adding ``b``'s mothers after ``a``'s makes it: a stop marker keeps the
    first ``SAMPLE`` holders in the order they came."""
    if not b:
        return a
    if not a:
        return b
    if is_stop(a):
        return a
    first = decode_value(a, fmt) or []
    more = (
        [int(s).to_bytes(4, "little") for s in stop_sample(b)]
        if is_stop(b)
        else (decode_value(b, fmt) or [])
    )
    seqs = list(dict.fromkeys([*first, *more]))
    if is_stop(b) or len(seqs) > stop_df:
        return stop_value(seqs[:stop_df])  # (the holders an add had when it stopped)
    return encode_value(seqs, fmt)


def merge_due(main_fields: int, tail_fields: list[int]) -> bool:
    """Whether segments holding ``tail_fields`` fields are merged into an index of
    ``main_fields`` before one more is made: ``MAX_TAILS`` of them, or together past
    ``MAX_TAIL_SHARE`` of the index."""
    if not tail_fields:
        return False
    return len(tail_fields) >= MAX_TAILS or sum(tail_fields) > MAX_TAIL_SHARE * main_fields


def new_number(index: Segmented) -> int:
    """The number of a new, empty segment of ``index`` to load (``index.tail(n)``; not
    read by lookups until ``commit``)."""
    return int(index.redis.incr(index.tail_next_key))


def commit(index: Segmented, segment: Segment, seqs: list[int]) -> None:
    """``segment``, loaded with mothers ``seqs``, read by lookups from now on."""
    if seqs:
        index.redis.append(seqs_key(segment), np.asarray(seqs, dtype="<u4").tobytes())
    index.redis.sadd(index.tails_key, number_of(segment))


def number_of(segment: Segment) -> int:
    """A segment's number (from its key prefix, ``tail_prefix``)."""
    return int(segment.prefix.rsplit(":t", 1)[1])


def seqs_key(segment: Segment) -> str:
    """Where a segment keeps the mothers it was loaded with."""
    return f"{segment.prefix}:seqs"


def loaded_seqs(index: Segmented, segment: Segment) -> list[int]:
    """The mothers a segment was loaded with (in load order)."""
    blob = index.redis.get(seqs_key(segment)) or b""
    return np.frombuffer(blob, dtype="<u4").astype(np.int64).tolist()


def drop(index: Segmented, segment: Segment) -> int:
    """A segment no longer read (out of the set first), then deleted; its keys."""
    index.redis.srem(index.tails_key, number_of(segment))
    n = segment.drop_keys()
    return n + int(index.redis.delete(seqs_key(segment)))
