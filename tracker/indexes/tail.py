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
only once it is loaded; a merge takes it out of the set only after
its mothers are in the main index, so a lookup meanwhile finds them twice (the union
counts them once), never not at all: a lookup that read the main index before the merge's
last adds and a segment after its drop reads again (``RedisInvertedIndex.tails_held``;
from local snapshots it leaves the answer to Redis). Removes go to the main index and
every segment.

Leftovers: a segment being loaded or dropped is in ``{P:version}:tails:pending``; a load
holds the lease ``{P:version}:tails:load:{n}`` (an owner with a heartbeat,
``tracker.indexes.lock``) until its segment joins the set (moved from pending to the set in
one script) or is given up (an error: its keys deleted at once). A load killed
(``kill -9``) or a merge killed while it dropped a segment leaves its keys, which no lookup
reads; the next ``reclaim`` (a merge, ``yinji index merge-tails``, the workers' periodic
task, a big ingest) deletes the keys of every pending segment whose lease no live owner
holds (a dead owner on this host at once, elsewhere after ``BEAT_TTL_MS``). A load whose
lease was taken for dead (its process frozen past the heartbeat's TTL) is refused at its
commit (``SegmentLost``, its keys deleted; the ingest fails and the next check re-adds its
stored works), never committed half deleted.

Every key is one key of one slot (the scripts' keys share the version's hash tag): all
of this works on Redis Cluster as on one server.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from tracker.indexes.codec import (
    decode_value,
    encode_value,
    is_stop,
    stop_sample,
    stop_value,
)
from tracker.indexes.lock import IndexLock
from tracker.indexes.temporary import sweep_temporary

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

# KEYS: the tails set, the pending set. ARGV: a segment. Moved from pending into the set
# (1), or 0 when it is no longer pending (reclaimed: its load was taken for dead).
_COMMIT = """
if redis.call('SREM', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
"""

# KEYS: the tails set, the pending set. ARGV: a segment. Out of the set into pending (its
# keys go next; a drop that dies there leaves them to ``reclaim``).
_DROP = """
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 then redis.call('SADD', KEYS[2], ARGV[1]) end
return 1
"""

# KEYS: the pending set, the segment's lease. ARGV: a segment. Out of pending (1: its keys
# are the caller's to delete) unless a load holds the lease, or another took it (0).
_CLAIM = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
return redis.call('SREM', KEYS[1], ARGV[1])
"""


class SegmentLost(RuntimeError):
    """A segment's load was taken for dead (no heartbeat) and its keys reclaimed before
    it was committed: nothing of it is read, the works it held are stored."""


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


def pending_key(index: Segmented) -> str:
    """The set of segments being loaded or dropped (keys that lookups do not read)."""
    return f"{index.tails_key}:pending"


def pending(index: Segmented) -> set[int]:
    """The segments being loaded or dropped."""
    return {int(x) for x in index.redis.smembers(pending_key(index))}


def lease_key(index: Segmented, number: int) -> str:
    """The lease of the load of segment ``number`` (``tracker.indexes.lock.IndexLock``)."""
    return f"{index.tails_key}:load:{number}"


def _script(index: Segmented, source: str) -> Any:
    # (typed loosely: redis-py's stubs of RedisCluster lack register_script)
    return cast(Any, index.redis).register_script(source)


class Lease:
    """The load of a new segment, held by this process (``IndexLock.hold``: a heartbeat
    thread) and pending until ``commit`` or ``abandon``."""

    def __init__(self, index: Segmented, segment: Segment) -> None:
        self.index, self.segment = index, segment
        self._held = contextlib.ExitStack()
        lock = IndexLock(index.redis, lease_key(index, number_of(segment)))
        self._held.enter_context(lock.hold())
        index.redis.sadd(pending_key(index), number_of(segment))  # (after the lease)

    def commit(self, seqs: list[int]) -> None:
        """The segment, loaded with mothers ``seqs``, read by lookups from now on;
        ``SegmentLost`` (its keys deleted) if it was reclaimed meanwhile."""
        index, segment = self.index, self.segment
        try:
            if seqs:
                index.redis.append(seqs_key(segment), np.asarray(seqs, dtype="<u4").tobytes())
            done = _script(index, _COMMIT)(
                keys=[index.tails_key, pending_key(index)], args=[number_of(segment)]
            )
            if not int(done):
                _delete(index, segment)
                raise SegmentLost(
                    f"the load of tail segment {segment.prefix} was taken for dead (no "
                    "heartbeat) and its keys deleted: the works are stored, the next check "
                    "indexes them"
                )
        finally:
            self._held.close()

    def abandon(self) -> None:
        """The segment given up (a load that failed): its keys deleted, no longer
        pending, the lease released."""
        try:
            _delete(self.index, self.segment, temporary=True)
            self.index.redis.srem(pending_key(self.index), number_of(self.segment))
        finally:
            self._held.close()


def reclaim(index: Segmented) -> list[int]:
    """The keys of pending segments whose load or drop died deleted (a live load's
    stay): the segments reclaimed."""
    gone: list[int] = []
    for number in sorted(pending(index)):
        lease = IndexLock(index.redis, lease_key(index, number))
        if lease.owner() is not None:
            continue  # a live load (a dead owner's lease is removed here)
        claimed = _script(index, _CLAIM)(keys=[pending_key(index), lease.key], args=[number])
        if int(claimed):
            _delete(index, index.tail(number), temporary=True)
            gone.append(number)
    return gone


def _delete(index: Segmented, segment: Segment, *, temporary: bool = False) -> int:
    """A segment's keys deleted: its buckets, the keys beside them, what it was loaded
    with; ``temporary``: those of its bulk load, if that died between its writes and its
    settle (``tracker.indexes.temporary``: a scan of the server, for a load that failed)."""
    n = segment.drop_keys() + int(index.redis.delete(seqs_key(segment)))
    return n + (sweep_temporary(index.redis, segment.prefix) if temporary else 0)


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
    """A segment no longer read (out of the set first, pending while its keys go),
    then deleted; its keys."""
    keys = [index.tails_key, pending_key(index)]
    _script(index, _DROP)(keys=keys, args=[number_of(segment)])
    n = _delete(index, segment)
    index.redis.srem(pending_key(index), number_of(segment))
    return n
