"""Bulk loads of the inverted index (``index rebuild``, and an ingest into an empty
index): postings grouped by identity on the client, each field written once with its
final value; the index sized once from the exact count of identities.

On a single server a bucket is written whole into a key of the load's own
(``{prefix}:bt{token}:{bucket}``, RESP packed with numpy): by ``RESTORE`` of the bucket
serialized on the client where the server's form of a small hash is known (the
embedded server: ``tracker.indexes.ziplist``), else by one plain HSET; then moved in place by
``lua/settle.lua``: RENAMENX when the bucket does not exist yet, else merged field by
field exactly as adds merge (another writer came first), under the same layout and move
guard as adds. On Redis Cluster one ``lua/fill.lua`` call per bucket does the same with
its one key. The result is the index that adding the same postings in the same order
makes (same field values, byte for byte), at ~1.4 us of Redis time a posting instead of
~4 (100 M).

A load's temporary keys carry a lease (``{prefix}:bt{token}:live``: its owner
``host|pid|token`` with a TTL of ``LEASE_MS``, refreshed after every settle call). A load
killed between its HSETs and its settle (``kill -9``) leaves temporary keys behind, which
made an empty index look non-empty; ``tracker.indexes.temporary`` (run when a load or an ingest asks
whether the index is empty) deletes the keys of every load whose lease is gone or whose
owner's process on this host no longer runs, and leaves a live load's keys alone.

``BulkLoader`` gathers a rebuild's postings in bounded memory (spilling to partition
files) and loads them partition by partition.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from tracker.indexes.codec import FORMAT, fill_values, scatter
from tracker.indexes.editions import Seen
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import (
    IDENTITY_BITS,
    bits_for,
    layout_name,
    pack_fields,
    split_identity,
    temp_prefix,
)
from tracker.indexes.lock import Owner
from tracker.indexes.redis_client import delete_matching
from tracker.indexes.tail import Lease
from tracker.indexes.temporary import LEASE, LEASE_MS
from tracker.indexes.ziplist import ServerForm, new_bucket_payloads, run_positions

_PAIR = np.dtype([("ident", "<u8"), ("seq", "<u4")])  # 12 bytes a posting in a spill file
PART_BITS = 8  # spill partitions by the identity's top bits (<= a spilled load's bucket bits)
# From this many postings an in-memory load goes in ``2**IN_MEMORY_PART_BITS`` partitions,
# two at a time: one sorted and packed here while Redis writes the other. Few and large:
# each partition costs a few round trips and a settle call of its own.
IN_MEMORY_PARTS = 250_000
IN_MEMORY_PART_BITS = 2


def _distinct(ident: np.ndarray) -> int:
    """How many distinct values (a sort: faster than numpy's hashing unique here)."""
    s = np.sort(ident)
    return int(s.size and 1 + np.count_nonzero(s[1:] != s[:-1]))


def hset_commands(
    keys: list[bytes], per_key: np.ndarray, fields: np.ndarray, vlen: np.ndarray, vdata: np.ndarray
) -> tuple[bytes, np.ndarray]:
    """RESP of ``HSET key f v ...`` for each key with its ``per_key`` fields (rows of
    ``fields``, values ``vlen``/``vdata`` one after the other), built with numpy; and
    where each command starts."""
    n, fw = fields.shape
    nd = 1 + (vlen >= 10) + (vlen >= 100)
    size = 1 + len(str(fw)) + 2 + fw + 2 + 1 + nd + 2 + vlen + 2
    off = np.cumsum(size) - size
    rec = np.empty(int(size.sum()), dtype=np.uint8)
    head = np.frombuffer(f"${fw}\r\n".encode(), np.uint8)
    for c, byte in enumerate(head.tolist()):
        rec[off + c] = byte
    p = off + head.size
    for c in range(fw):
        rec[p + c] = fields[:, c]
    p = p + fw
    rec[p], rec[p + 1], rec[p + 2] = 13, 10, 36  # \r \n $
    p = p + 3
    digits = np.stack([vlen // 100, (vlen // 10) % 10, vlen % 10], axis=1) + 48
    for c in range(3):
        use = nd > 2 - c
        rec[(p + nd - 3 + c)[use]] = digits[use, c]
    p = p + nd
    rec[p], rec[p + 1] = 13, 10
    scatter(rec, p + 2, vlen, vdata)
    p = p + 2 + vlen
    rec[p], rec[p + 1] = 13, 10
    heads = [
        b"*%d\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n" % (2 + 2 * c, len(k), k)
        for k, c in zip(keys, per_key.tolist(), strict=True)
    ]
    hlen = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
    first = np.cumsum(per_key) - per_key
    rlen = np.add.reduceat(size, first) if n else np.zeros(0, np.int64)
    starts = np.cumsum(hlen + rlen) - (hlen + rlen)
    bounds = np.append(off[first], rec.size).tolist() if n else [0]
    body = rec.tobytes()
    parts: list[bytes] = []
    for i, head_bytes in enumerate(heads):
        parts.append(head_bytes)
        parts.append(body[bounds[i] : bounds[i + 1]])
    return b"".join(parts), starts


def bucket_commands(
    keys: list[bytes],
    per_key: np.ndarray,
    fields: np.ndarray,
    vlen: np.ndarray,
    vdata: np.ndarray,
    form: ServerForm | None,
    ints: np.ndarray | None = None,
) -> tuple[bytes, np.ndarray]:
    """The commands that write each new bucket whole into its key (``hset_commands``'
    arguments), and where each starts: ``RESTORE`` of the bucket serialized here where
    the server's form is known (``tracker.indexes.ziplist``: Redis copies it in instead
    of inserting its fields one by one, each insert searching the ziplist), ``HSET``
    for the buckets it does not make and on other servers."""
    which, payloads = (
        new_bucket_payloads(per_key, fields, vlen, vdata, form, ints)
        if form is not None
        else (np.zeros(0, dtype=np.int64), [])
    )
    if not which.size:
        return hset_commands(keys, per_key, fields, vlen, vdata)
    made = np.zeros(per_key.size, dtype=bool)
    made[which] = True
    pieces: list[bytes] = [b""] * per_key.size
    for b, payload in zip(which.tolist(), payloads, strict=True):
        k = keys[b]
        pieces[b] = b"".join(
            (
                b"*5\r\n$7\r\nRESTORE\r\n$%d\r\n%s\r\n$1\r\n0\r\n$%d\r\n"
                % (len(k), k, len(payload)),
                payload,
                b"\r\n$7\r\nREPLACE\r\n",
            )
        )
    rest = np.flatnonzero(~made)
    if rest.size:
        row_key = np.repeat(np.arange(per_key.size), per_key)
        rows = np.flatnonzero(~made[row_key])
        vstart = np.cumsum(vlen) - vlen
        lengths = vlen[rows]
        blob, hstarts = hset_commands(
            [keys[b] for b in rest.tolist()],
            per_key[rest],
            fields[rows],
            lengths,
            vdata[run_positions(vstart[rows], lengths)],
        )
        bounds = [*hstarts.tolist(), len(blob)]
        for j, b in enumerate(rest.tolist()):
            pieces[b] = blob[bounds[j] : bounds[j + 1]]
    sizes = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    return b"".join(pieces), np.cumsum(sizes) - sizes


def load(
    index: RedisInvertedIndex,
    items: Iterable[tuple[int, np.ndarray]],
    *,
    chunk: int = 2000,
    size: bool = True,
) -> int:
    """Add postings ``(seq, fingerprints)`` as ``index.add`` does (same result, byte for
    byte, as adding them in this order), grouped here by fingerprint so that each field
    is written once with its final value and a bucket that does not exist yet in one
    HSET (``lua/fill_core.lua``). ``size``: an empty index first takes the bucket count
    that its distinct fingerprints call for (``bits_for``), so nothing is resharded
    later. Returns how many postings were new."""
    items = list(items)
    index.refresh()
    if index.fmt != FORMAT or index.ident_bits != IDENTITY_BITS or index.stop_df > 63:
        # An old index (written as it is), or values past one length byte.
        return index.add(items, chunk=chunk)
    items = index._posted(items)
    parts = [(seq, np.asarray(fps, dtype=np.uint64)) for seq, fps in items]
    parts = [(seq, fps) for seq, fps in parts if fps.size]
    if not parts:
        return 0
    ident = np.concatenate([index.identities(fps) for _, fps in parts])
    seqs = np.concatenate([np.full(fps.size, seq, dtype=np.uint32) for seq, fps in parts])
    return load_pairs(index, ident, seqs, chunk=chunk, size=size)


def load_pairs(
    index: RedisInvertedIndex,
    ident: np.ndarray,
    seqs: np.ndarray,
    *,
    chunk: int = 2000,
    size: bool = True,
) -> int:
    """``load`` of (identity, seq) pairs (of ``index.identities``) in arrival order (a
    field's seqs are stored in that order, as adds in that order store them)."""
    if ident.size == 0:
        return 0
    order = np.argsort(ident, kind="stable")
    ident, seqs = ident[order], seqs[order].astype(np.uint32)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ident)) + 1])
    groups = ident[starts]
    repeated = np.zeros(seqs.size, dtype=bool)
    ints = np.full(starts.size, -1, dtype=np.int64)  # (single seqs, for the payloads)
    vlen, vdata, counts = fill_values(seqs, starts, index.stop_df, repeated=repeated, ints=ints)
    if index.recording is not None:
        index.recording.add(ident, seqs, starts, repeated, index.stop_df)
    del order, ident
    if size:
        size_for(index, groups.size)
    if not index._cluster:
        index.wait_for_move()
    new_fields = 0
    with index._writing(loading=True):
        for _ in range(5):
            index.refresh()
            if index.fmt != FORMAT or index.ident_bits != IDENTITY_BITS:
                raise RuntimeError(f"index {index.prefix} is in an old layout: reshard it")
            index.redis.hsetnx(index.layout_key, "layout", index.layout)
            used = index.layout
            if index._cluster:
                replies = fill_buckets(index, groups, vlen, vdata, chunk)
                if index._layout_held(used):
                    new_fields = sum(int(r[1]) for r in replies)
                    break
            else:
                replies = fill_direct(index, groups, vlen, vdata, counts, ints=ints)
                if all(int(r[0]) >= 0 for r in replies):
                    break  # (the script counted its fields)
                index.wait_for_move()  # resharded meanwhile: redo all (idempotent)
        else:
            raise RuntimeError(f"the layout of index {index.prefix} keeps changing; try again")
    if new_fields:
        index.redis.hincrby(index.layout_key, "fields", new_fields)
    return sum(int(r[0]) for r in replies)


def size_for(index: RedisInvertedIndex, fields: int, *, fresh: bool = False) -> int:
    """Before a bulk load of ``fields`` distinct identities into an EMPTY index: the
    layout set to ``bits_for(fields)`` buckets (format 2) unless a writer counted
    fields meanwhile. An index that is not empty keeps its layout. The bits.
    ``fresh``: an index nobody else writes yet (a new tail segment): not asked whether
    it is empty (a SCAN of every key of the server, ~0.4 s at 100 M)."""
    bits = bits_for(fields)
    if (bits, IDENTITY_BITS, FORMAT) == (index.refresh(), index.ident_bits, index.fmt):
        return bits
    if not fresh and not index.is_empty():
        return index.bucket_bits
    name = layout_name(bits, IDENTITY_BITS, FORMAT)
    with index._writing(loading=True):
        if index._cluster:  # layout and buckets on different nodes: checked above
            index.redis.hset(index.layout_key, "layout", name)
        else:
            index._size(keys=[index.layout_key], args=[name])
    return index.refresh()


def fill_records(
    index: RedisInvertedIndex, groups: np.ndarray, vlen: np.ndarray, vdata: np.ndarray
) -> tuple[np.ndarray, bytes, np.ndarray]:
    """(buckets, records, each record's byte offset) for the current layout: records
    of (field, value length byte, value), in identity order."""
    buckets, fields = split_identity(groups, index.bucket_bits, index.ident_bits)
    fw = index.field_bytes
    head = fw + 1
    size = head + vlen
    off = np.cumsum(size) - size
    buf = np.empty(int(size.sum()), dtype=np.uint8)
    packed = pack_fields(fields, fw)
    for c in range(fw):
        buf[off + c] = packed[:, c]
    buf[off + fw] = vlen.astype(np.uint8)
    scatter(buf, off + head, vlen, vdata)
    return buckets, buf.tobytes(), off


def fill_direct(
    index: RedisInvertedIndex,
    groups: np.ndarray,
    vlen: np.ndarray,
    vdata: np.ndarray,
    counts: np.ndarray,
    per_call: int = 2048,
    *,
    ints: np.ndarray | None = None,
) -> list[list[int]]:
    """Single server: every bucket written whole into a temporary key (``RESTORE`` of
    the bucket serialized here, or ``HSET``: ``bucket_commands``; commands packed here
    with numpy, sent raw: redis-py's packing of two arguments a posting cost more than
    Redis' work), then ``lua/settle.lua`` per ``per_call`` buckets. A refused settle
    deletes this load's temporary keys and returns its reply."""
    buckets, fields = split_identity(groups, index.bucket_bits, index.ident_bits)
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(buckets)) + 1])
    per_bucket = np.diff(np.append(firsts, groups.size))
    nbuckets = firsts.size
    ubuckets = buckets[firsts]
    posts = np.add.reduceat(counts, firsts)
    me = Owner.me()
    tmp = temp_prefix(index.prefix, me.token[:12])
    lease = f"{tmp}{LEASE}"
    index.redis.set(lease, me.id, px=LEASE_MS)  # before the first temporary key
    buf, starts = bucket_commands(
        [f"{tmp}{b}".encode() for b in ubuckets.tolist()],
        per_bucket,
        pack_fields(fields, index.field_bytes),
        vlen,
        vdata,
        index.server_form(),
        ints,
    )
    hdr = np.empty((nbuckets, 3), dtype="<u4")
    hdr[:, 0], hdr[:, 1], hdr[:, 2] = ubuckets, posts, per_bucket
    keys = [index.layout_key, index.moving_key]
    args = [index.layout, index.stop_df, tmp, index.key_prefix()]
    replies: list[Any] = []
    ends = np.append(starts, len(buf)).tolist()
    pool = index.redis.connection_pool
    try:
        conn = pool.get_connection()
    except TypeError:  # redis-py before 5.3 wants a command name
        conn = pool.get_connection("HSET")
    try:
        for a in range(0, nbuckets, per_call):
            z = min(a + per_call, nbuckets)
            conn.send_packed_command([buf[ends[a] : ends[z]]], check_health=False)
            for _ in range(z - a):
                conn.read_response()
            reply = index._settle(keys=keys, args=[*args, hdr[a:z].tobytes(), index.fmt])
            replies.append(reply)
            index.redis.set(lease, me.id, px=LEASE_MS)
            if int(reply[0]) < 0:
                delete_matching(index.redis, f"{tmp}*")
                break
    except BaseException:
        conn.disconnect()
        with contextlib.suppress(Exception):
            delete_matching(index.redis, f"{tmp}*")
        raise
    finally:
        pool.release(conn)
    index.redis.delete(lease)
    return replies


def fill_buckets(
    index: RedisInvertedIndex, groups: np.ndarray, vlen: np.ndarray, vdata: np.ndarray, chunk: int
) -> list[list[int]]:
    """Redis Cluster: one ``_FILL_SCRIPT`` EVAL per bucket, ``chunk`` per pipeline."""
    buckets, blob, off = fill_records(index, groups, vlen, vdata)
    firsts = np.concatenate([[0], np.flatnonzero(np.diff(buckets)) + 1])
    ends = np.append(off, len(blob))
    bounds = [*firsts.tolist(), groups.size]
    args = [index.stop_df, index.field_bytes]
    replies: list[Any] = []
    pipe = index.redis.pipeline(transaction=False)
    pending = 0
    for a, z in itertools.pairwise(bounds):
        key = index.bucket_key(int(buckets[a]))
        part = blob[int(ends[a]) : int(ends[z])]
        pipe.execute_command("EVAL", index._fill.script, 1, key, *args, part, index.fmt)
        pending += 1
        if pending >= chunk:
            replies += pipe.execute()
            pending = 0
    if pending:
        replies += pipe.execute()
    return replies


class BulkLoader:
    """The postings of a rebuild or of an ingest into an empty index, gathered and then
    bulk loaded (``load_pairs``) in bounded memory.

    ``extend`` keeps (identity, seq) pairs in arrival order, in memory up to
    ``memory_pairs``, then spills them (12 bytes a posting) into ``2**PART_BITS``
    partition files by identity range under ``folder``. ``finish`` counts the distinct
    identities (exactly: each partition sorted in turn), sizes the empty index once, and
    loads one partition at a time: partitions hold whole buckets, so every bucket is
    new when it is written and takes the fast path. ``take_back`` removes the postings
    of given seqs again (mothers replaced meanwhile); ``close`` deletes the files.

    ``into``: a new tail segment of ``index`` (``tracker.indexes.tail``) to load instead
    of ``index`` itself: mothers are posted under ``index``'s edition groups (found by
    lookups of it), and the segment joins those lookups read once it is loaded."""

    def __init__(
        self,
        index: RedisInvertedIndex,
        folder: Path,
        *,
        memory_pairs: int = 4_000_000,
        into: RedisInvertedIndex | None = None,
    ) -> None:
        self.posting = index  # whose edition groups the mothers are posted under
        self.index = index if into is None else into  # the index written
        # A new segment's load holds a lease until it commits or closes (``tail.Lease``).
        self._lease = None if into is None else Lease(index, into)
        self.folder = Path(folder)
        self.memory_pairs = memory_pairs
        self._ident: list[np.ndarray] = []
        self._seqs: list[np.ndarray] = []
        self._held = 0
        self._spilled = False
        self.seqs: list[int] = []  # every mother gathered, in arrival order
        self._seen = Seen()  # edition groups of this load (``tracker.indexes.editions``)
        self.pairs = 0
        self.distinct = 0  # identities loaded (known after finish)
        self._last: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.uint64), np.zeros(0, np.uint32))

    def extend(self, items: Iterable[tuple[int, np.ndarray]]) -> None:
        items = [(int(seq), np.asarray(fps, dtype=np.uint64)) for seq, fps in items]
        self.seqs.extend(seq for seq, _ in items)
        # Edition groups among this load's mothers, and (into a tail segment) with those
        # the index holds (into the index itself: it was empty when the load began).
        tail = self.posting is not self.index
        for posted, fps in self.posting._posted(items, self._seen, look=tail):
            if not fps.size:
                continue
            self._ident.append(self.index.identities(fps))
            self._seqs.append(np.full(fps.size, posted, dtype=np.uint32))
            self._held += fps.size
            self.pairs += fps.size
        if self._held >= self.memory_pairs:
            self._spill()

    def _take(self) -> tuple[np.ndarray, np.ndarray]:
        if not self._ident:
            return np.zeros(0, np.uint64), np.zeros(0, np.uint32)
        ident, seqs = np.concatenate(self._ident), np.concatenate(self._seqs)
        self._ident, self._seqs, self._held = [], [], 0
        return ident, seqs

    def _part(self, p: int) -> Path:
        return self.folder / f"part-{p:03d}.bin"

    def _spill(self) -> None:
        ident, seqs = self._take()
        if not ident.size:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self._spilled = True
        for p, part_ident, part_seqs in self._split(ident, seqs):
            rec = np.empty(part_ident.size, dtype=_PAIR)
            rec["ident"], rec["seq"] = part_ident, part_seqs
            with open(self._part(p), "ab") as fh:
                rec.tofile(fh)

    def _parts(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for p in range(1 << PART_BITS):
            if self._part(p).exists():
                rec = np.fromfile(self._part(p), dtype=_PAIR)
                yield rec["ident"].copy(), rec["seq"].copy()

    def _split(
        self, ident: np.ndarray, seqs: np.ndarray, bits: int = PART_BITS
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(partition, its identities, its seqs) by the identities' top ``bits`` bits
        (whole buckets when ``bits`` <= the index's bucket bits), arrival order kept
        within each."""
        part = (ident >> np.uint64(IDENTITY_BITS - bits)).astype(np.int64)
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange((1 << bits) + 1)).tolist()
        for p in range(1 << bits):
            a, z = bounds[p], bounds[p + 1]
            if z > a:
                take = order[a:z]
                yield p, ident[take], seqs[take]

    def finish(
        self,
        between: Callable[[], None] | None = None,
        grow: Callable[[int], None] | None = None,
    ) -> int:
        """Load everything gathered (``between`` is called between partitions, e.g. to
        refresh a lock); returns how many postings were new. An index that is no longer
        empty (another writer came first) keeps its layout: ``grow(fields)`` is called
        first to reshard it if these fields would overfill its buckets. A tail segment
        loaded joins the lookups of its index."""
        new = self._finish(between, grow)
        if self._lease is not None and self.pairs:
            lease, self._lease = self._lease, None
            lease.commit(self.seqs)
        return new

    def record(self) -> None:
        """Keep the rows this load writes, for the snapshot after it
        (``RedisInvertedIndex.start_recording``)."""
        self.index.start_recording()

    def _finish(
        self,
        between: Callable[[], None] | None = None,
        grow: Callable[[int], None] | None = None,
    ) -> int:
        fresh = self.posting is not self.index  # a new tail segment: nobody else's
        if not self._spilled:
            ident, seqs = self._take()
            self._last = (ident, seqs)  # for take_back
            self.distinct = _distinct(ident)
            if grow is not None and self.distinct and not fresh and not self.index.is_empty():
                grow(self.distinct)
            if ident.size < IN_MEMORY_PARTS:
                return load_pairs(self.index, ident, seqs)
            bits = min(IN_MEMORY_PART_BITS, size_for(self.index, self.distinct, fresh=fresh))
            parts = ((i, s) for _, i, s in self._split(ident, seqs, bits))
            return self._load_parts(parts, between)
        self._spill()
        self.distinct = sum(_distinct(ident) for ident, _ in self._parts())
        if grow is not None and not fresh and not self.index.is_empty():
            grow(self.distinct)
        size_for(self.index, self.distinct, fresh=fresh)
        return self._load_parts(self._parts(), between)

    def _load_parts(
        self,
        parts: Iterator[tuple[np.ndarray, np.ndarray]],
        between: Callable[[], None] | None,
    ) -> int:
        """Partitions loaded (each holds whole buckets, all new)."""
        # Two partitions at a time: one sorted and packed here while Redis writes the
        # other (numpy and the socket wait release the GIL).
        new = 0
        pending: deque[Future[int]] = deque()
        with ThreadPoolExecutor(2, thread_name_prefix="yinji-load") as pool:
            for ident, seqs in parts:
                pending.append(pool.submit(load_pairs, self.index, ident, seqs, size=False))
                while len(pending) >= 2:
                    new += pending.popleft().result()
                    if between is not None:
                        between()
            while pending:
                new += pending.popleft().result()
        return new

    def take_back(self, seqs: set[int]) -> int:
        """Remove the gathered postings of ``seqs`` from the index (after ``finish``);
        how many there were. A mother whose edition group keeps other members leaves the
        group and its postings (theirs too)."""
        if not seqs:
            return 0
        gone_seqs = [(s, np.zeros(0, np.uint64)) for s in seqs]
        posted = {g for g, _ in self.posting._withdrawn(gone_seqs)}
        if not posted:
            return 0
        want = np.fromiter(posted, dtype=np.uint32, count=len(posted))
        parts = self._parts() if self._spilled else iter([self._last])
        gone = 0
        for ident, got in parts:
            keep = np.isin(got, want)
            if keep.any():
                gone += self.index.remove_pairs(ident[keep], got[keep])
        return gone

    def close(self) -> None:
        """The spill files deleted; a segment not committed given up (its keys deleted)."""
        if self._lease is not None:
            lease, self._lease = self._lease, None
            with contextlib.suppress(Exception):  # (Redis away: ``tail.reclaim`` later)
                lease.abandon()
        self._ident, self._seqs = [], []
        self._last = (self._last[0][:0], self._last[1][:0])
        shutil.rmtree(self.folder, ignore_errors=True)
