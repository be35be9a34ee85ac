"""All fingerprints within Hamming distance ``k``: the permuted tables of Manku, Jain and
Das Sarma, "Detecting near-duplicates for web crawling" (WWW 2007).

Split the 64 bits into ``blocks`` blocks (``blocks > k``). Two fingerprints at distance
``<= k`` differ in at most ``k`` blocks, so at least ``blocks - k`` blocks are equal. One
*table* per choice of ``blocks - k`` blocks: the table orders every fingerprint by those
blocks (its *prefix*) followed by the others. A query looks up its own prefix in every
table and checks the full distance of the few fingerprints found there. That finds every
fingerprint within ``k`` (none is missed), and only fingerprints within ``k`` are returned,
so the answer equals a brute-force scan.

Default layout: ``blocks = k + 1``, i.e. ``k + 1`` tables whose prefix is one block of
``64 / (k + 1)`` bits (16 bits for the classic ``k = 3``). With ``n`` fingerprints a bucket
holds about ``n / 2**16``; larger collections can use more blocks, e.g. ``blocks=6`` gives
``C(6, 3) = 20`` tables with 32-bit prefixes (the paper's choice for billions).

Both indexes map an integer id (``>= 0``, below ``2**63``) to one fingerprint: their
entries (``tracker.indexes.base.Index``) are ``(id, fingerprint)``. Adding an id again with
the same fingerprint changes nothing, with another fingerprint moves it; removing an entry
removes the id only if it holds that fingerprint. ``add``/``remove`` count ids added or
moved / removed. Query results are ``[(id, distance)]`` sorted by distance then id.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tracker.common.records import JSONObject
from tracker.indexes.redis_client import delete_matching

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

__all__ = ["HammingLayout", "MemoryHammingIndex", "RedisHammingIndex", "brute_force", "popcount"]

_BITS = 64
_U64 = np.uint64

if hasattr(np, "bitwise_count"):  # numpy >= 2.0

    def popcount(x: np.ndarray) -> np.ndarray:
        """Bits set in each element of a uint64 array."""
        return np.bitwise_count(x)

else:  # pragma: no cover - numpy 1.x
    _POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

    def popcount(x: np.ndarray) -> np.ndarray:
        """Bits set in each element of a uint64 array (byte lookup table)."""
        b = np.ascontiguousarray(x, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
        return _POP8[b].sum(axis=1, dtype=np.uint8).reshape(np.shape(x))


def _as_u64(fps: Iterable[int] | np.ndarray) -> np.ndarray:
    if isinstance(fps, np.ndarray):
        return fps.astype(np.uint64, copy=False)
    return np.fromiter((int(f) & 0xFFFFFFFFFFFFFFFF for f in fps), dtype=np.uint64)


def _as_ids(ids: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu" or (arr < 0).any() or int(arr.max()) >= 1 << 63:
        raise ValueError("ids must be integers in [0, 2**63)")
    return arr.astype(np.int64, copy=False)


def _pairs(items: Iterable[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Validated (ids, fps) of entries; for an id given twice the last fingerprint wins."""
    entries = list(items)
    id_arr = _as_ids([i for i, _ in entries])
    fp_arr = _as_u64([f for _, f in entries])
    if len(id_arr) > 1:
        # keep the last occurrence of each id
        rev_ids = id_arr[::-1]
        _, first = np.unique(rev_ids, return_index=True)
        keep = len(id_arr) - 1 - first
        id_arr, fp_arr = id_arr[keep], fp_arr[keep]
    return id_arr, fp_arr


def brute_force(ids: np.ndarray, fps: np.ndarray, fp: int, k: int) -> list[tuple[int, int]]:
    """Reference answer: every ``(id, distance)`` with distance ``<= k``, by a full scan."""
    d = popcount(_as_u64(fps) ^ _U64(fp))
    sel = np.flatnonzero(d <= k)
    order = np.lexsort((np.asarray(ids)[sel], d[sel]))
    return [
        (int(i), int(x)) for i, x in zip(np.asarray(ids)[sel][order], d[sel][order], strict=True)
    ]


class HammingLayout:
    """Block split and tables for ``k`` over 64-bit fingerprints.

    Blocks are numbered from the most significant bits; when 64 is not a multiple of
    ``blocks`` the first blocks are one bit wider. Table ``t`` puts its prefix blocks (in
    block order) in the top bits, then the remaining blocks in block order. A permutation
    of bits keeps Hamming distances, so permuted fingerprints can be compared directly.
    """

    def __init__(self, k: int = 3, blocks: int | None = None) -> None:
        blocks = k + 1 if blocks is None else blocks
        if k < 0 or blocks <= k or blocks > _BITS:
            raise ValueError(f"need 0 <= k < blocks <= 64, got k={k} blocks={blocks}")
        self.k = k
        self.blocks = blocks
        base, extra = divmod(_BITS, blocks)
        self.sizes = [base + (1 if b < extra else 0) for b in range(blocks)]
        # shift of block b inside the original fingerprint (block 0 = top bits)
        self.shifts = [_BITS - sum(self.sizes[: b + 1]) for b in range(blocks)]
        self.tables = [
            (*prefix, *(b for b in range(blocks) if b not in prefix))
            for prefix in combinations(range(blocks), blocks - k)
        ]
        self.prefix_bits = [sum(self.sizes[b] for b in t[: blocks - k]) for t in self.tables]
        # (mask, source shift, destination shift) per block of each table, for permute()
        self._moves: list[list[tuple[int, int, int]]] = []
        for order in self.tables:
            pos = _BITS
            moves = []
            for b in order:
                pos -= self.sizes[b]
                moves.append(((1 << self.sizes[b]) - 1, self.shifts[b], pos))
            self._moves.append(moves)
        # the moves of the prefix blocks only: enough for the top prefix_bits[t] bits
        self._prefix_moves = [m[: blocks - k] for m in self._moves]

    def __repr__(self) -> str:
        return f"HammingLayout(k={self.k}, blocks={self.blocks}, tables={len(self.tables)})"

    def permute(self, fps: np.ndarray, t: int) -> np.ndarray:
        """Fingerprints (uint64 array) as ordered in table ``t``."""
        out = np.zeros(len(fps), dtype=np.uint64)
        for mask, src, dst in self._moves[t]:
            out |= ((fps >> _U64(src)) & _U64(mask)) << _U64(dst)
        return out

    def permute_int(self, fp: int, t: int) -> int:
        out = 0
        for mask, src, dst in self._moves[t]:
            out |= ((fp >> src) & mask) << dst
        return out

    def prefix(self, fp: int, t: int, bits: int | None = None) -> int:
        """The top ``bits`` (default ``prefix_bits[t]``, at most that) bits of the permuted
        fingerprint in table ``t``: its bucket."""
        out = 0
        for mask, src, dst in self._prefix_moves[t]:
            out |= ((fp >> src) & mask) << dst
        return out >> (_BITS - (self.prefix_bits[t] if bits is None else bits))


def _ragged_positions(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate ``range(s, s + n)`` for each (s, n); also return the range number."""
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(starts)), lengths)
    offsets = np.cumsum(lengths) - lengths
    pos = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, lengths)
    return pos, owner


def _group_results(
    qidx: np.ndarray, ids: np.ndarray, dist: np.ndarray, nq: int
) -> list[list[tuple[int, int]]]:
    """Sort hits by (query, distance, id), drop repeats (a hit found in several tables)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(nq)]
    if len(qidx) == 0:
        return out
    order = np.lexsort((ids, dist, qidx))
    qidx, ids, dist = qidx[order], ids[order], dist[order]
    keep = np.ones(len(qidx), dtype=bool)
    keep[1:] = (qidx[1:] != qidx[:-1]) | (ids[1:] != ids[:-1])
    qidx, ids, dist = qidx[keep], ids[keep], dist[keep]
    bounds = np.searchsorted(qidx, np.arange(nq + 1))
    id_list, d_list = ids.tolist(), dist.tolist()
    for q in range(nq):
        a, b = bounds[q], bounds[q + 1]
        if a != b:
            out[q] = list(zip(id_list[a:b], d_list[a:b], strict=True))
    return out


class MemoryHammingIndex:
    """In-memory index: per table one sorted array of permuted fingerprints.

    A query reads a bucket directory (the start of every ``D``-bit prefix, ``D <=`` the
    table's prefix bits and about ``log2(n)``, so a directory slot holds a few entries), so
    all tables of all queries are answered by a handful of vectorized numpy calls. Reading
    a coarser prefix than the table's only adds candidates, all checked by the full
    distance. Changes are merged into the sorted arrays; the directory is rebuilt lazily.
    """

    def __init__(self, k: int = 3, blocks: int | None = None) -> None:
        self.layout = HammingLayout(k, blocks)
        self.k = k
        ntab = len(self.layout.tables)
        self._ids = np.zeros(0, dtype=np.int64)  # sorted ids
        self._fps = np.zeros(0, dtype=np.uint64)  # their fingerprints
        self._keys = [np.zeros(0, dtype=np.uint64) for _ in range(ntab)]  # sorted permuted
        self._tids = [np.zeros(0, dtype=np.int64) for _ in range(ntab)]  # ids of _keys
        self._flat: tuple[np.ndarray, np.ndarray, int] | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, fps)`` currently indexed, sorted by id."""
        return self._ids.copy(), self._fps.copy()

    # -- changes -------------------------------------------------------------------------
    def add(self, items: Iterable[tuple[int, int]]) -> int:
        """Index ``(id, fingerprint)`` entries; returns how many ids were added or moved."""
        id_arr, fp_arr = _pairs(items)
        if len(id_arr) == 0:
            return 0
        held = self._held(id_arr)
        same = held.copy()
        same[held] = self._fps[np.searchsorted(self._ids, id_arr[held])] == fp_arr[held]
        moved = held & ~same
        if moved.any():
            self._drop(id_arr[moved])
        new = ~same
        id_arr, fp_arr = id_arr[new], fp_arr[new]
        if len(id_arr) == 0:
            return 0
        ins = np.searchsorted(self._ids, id_arr)
        self._ids = np.insert(self._ids, ins, id_arr)
        self._fps = np.insert(self._fps, ins, fp_arr)
        for t in range(len(self.layout.tables)):
            pk = self.layout.permute(fp_arr, t)
            order = np.argsort(pk, kind="stable")
            at = np.searchsorted(self._keys[t], pk[order])
            self._keys[t] = np.insert(self._keys[t], at, pk[order])
            self._tids[t] = np.insert(self._tids[t], at, id_arr[order])
        self._flat = None
        return len(id_arr)

    def remove(self, items: Iterable[tuple[int, int]]) -> int:
        """Forget the ids of these entries that hold the entry's fingerprint (others are
        ignored); returns how many."""
        id_arr, fp_arr = _pairs(items)
        held = self._held(id_arr)
        held[held] = self._fps[np.searchsorted(self._ids, id_arr[held])] == fp_arr[held]
        return self._drop(id_arr[held])

    def _held(self, id_arr: np.ndarray) -> np.ndarray:
        """Which of these ids are indexed."""
        pos = np.searchsorted(self._ids, id_arr)
        found = pos < len(self._ids)
        found[found] = self._ids[pos[found]] == id_arr[found]
        return found

    def _drop(self, ids: np.ndarray) -> int:
        """Forget these ids (unknown ids are ignored); returns how many were known."""
        id_arr = np.unique(ids)
        if len(id_arr) == 0 or len(self._ids) == 0:
            return 0
        keep = ~np.isin(self._ids, id_arr, assume_unique=True)
        dropped = int(len(keep) - np.count_nonzero(keep))
        if dropped == 0:
            return 0
        self._ids, self._fps = self._ids[keep], self._fps[keep]
        for t in range(len(self._keys)):
            k = ~np.isin(self._tids[t], id_arr)
            self._keys[t], self._tids[t] = self._keys[t][k], self._tids[t][k]
        self._flat = None
        return dropped

    def clear(self) -> int:
        """Forget every id; returns how many there were."""
        n = len(self._ids)
        self._drop(self._ids)
        return n

    def stats(self) -> JSONObject:
        return {
            "ids": len(self),
            "k": self.k,
            "blocks": self.layout.blocks,
            "tables": len(self.layout.tables),
        }

    # -- queries -------------------------------------------------------------------------
    def _prepare(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Flat (tables x n, 2) array of (original fingerprint, id) in table order (one
        gather fetches both), and the bucket directory: ``dirs[t, s]`` is the flat position
        of the first entry of table ``t`` whose permuted fingerprint has top ``D`` bits
        ``>= s``."""
        if self._flat is None:
            n = len(self._ids)
            dbits = max(
                1, min(min(self.layout.prefix_bits), 22, math.ceil(math.log2(max(n, 2))) - 1)
            )
            bounds = np.arange(1 << dbits, dtype=np.uint64) << _U64(_BITS - dbits)
            dirs = np.empty((len(self._keys), (1 << dbits) + 1), dtype=np.int64)
            for t, keys in enumerate(self._keys):
                dirs[t, :-1] = np.searchsorted(keys, bounds) + t * n
                dirs[t, -1] = (t + 1) * n
            pairs = np.zeros((len(self._keys) * n, 2), dtype=np.uint64)
            if n:
                ids_flat = np.concatenate(self._tids)
                # original fingerprints in table order: compare with the unpermuted query
                pairs[:, 0] = self._fps[np.searchsorted(self._ids, ids_flat)]
                pairs[:, 1] = ids_flat.astype(np.uint64)
            self._flat = (pairs, dirs, dbits)
        return self._flat

    def query(self, fp: int, k: int | None = None) -> list[tuple[int, int]]:
        """Every ``(id, distance)`` within ``k`` (default: the index's k) of ``fp``."""
        k = self._check_k(k)
        if len(self._ids) == 0:
            return []
        pairs, dirs, dbits = self._prepare()
        # One query: find the buckets with Python ints, then one concatenation of the
        # buckets' slices and one popcount (fewer numpy calls than the batched path).
        prefix = self.layout.prefix
        spans = []
        for t in range(len(dirs)):
            slot = prefix(fp, t, dbits)
            a, b = dirs[t, slot], dirs[t, slot + 1]
            if b > a:
                spans.append(pairs[a:b])
        if not spans:
            return []
        cand = np.concatenate(spans)
        d = popcount(cand[:, 0] ^ _U64(fp))
        hit = np.flatnonzero(d <= k)
        if len(hit) == 0:
            return []
        found = dict(zip(cand[hit, 1].tolist(), d[hit].tolist(), strict=True))
        return sorted(found.items(), key=lambda x: (x[1], x[0]))

    def query_many(
        self, fps: Sequence[int] | np.ndarray, k: int | None = None
    ) -> list[list[tuple[int, int]]]:
        """``query`` for many fingerprints at once (vectorized over queries and tables)."""
        k = self._check_k(k)
        q = _as_u64(fps)
        nq = len(q)
        if nq == 0 or len(self._ids) == 0:
            return [[] for _ in range(nq)]
        pairs, dirs, dbits = self._prepare()
        ntab = len(self.layout.tables)
        pq = np.stack([self.layout.permute(q, t) for t in range(ntab)])  # (tables, nq)
        slots = (pq >> _U64(_BITS - dbits)).astype(np.int64)
        rows = np.arange(ntab)[:, None]
        starts = dirs[rows, slots].ravel()
        lengths = dirs[rows, slots + 1].ravel() - starts
        pos, owner = _ragged_positions(starts, lengths)
        qidx = owner % nq
        cand = pairs[pos]
        d = popcount(cand[:, 0] ^ q[qidx])
        hit = d <= k
        return _group_results(qidx[hit], cand[hit, 1].astype(np.int64), d[hit].astype(np.int64), nq)

    def _check_k(self, k: int | None) -> int:
        if k is None:
            return self.k
        if k > self.k or k < 0:
            raise ValueError(f"this index answers k <= {self.k}, got {k}")
        return k


class RedisHammingIndex:
    """The same tables kept in Redis, one key per (table, prefix) bucket.

    - Bucket ``f"{prefix}:hamming:{name}:t{table}:{prefix_hex}"``: a set of 16-byte members,
      the fingerprint then the id (both big-endian), so SADD/SREM make adds and removes
      idempotent and a query reads one SMEMBERS per table.
    - Id map ``f"{prefix}:hamming:{name}:ids:{id % shards:02x}"``: hash id -> fingerprint
      (8 bytes), needed to move or remove an id without being told its fingerprint.

    Every command names one key and writes go through non-transactional pipelines, so the
    index works unchanged on Redis Cluster (redis-py's cluster pipeline routes each command
    to its slot). The client must return bytes (``decode_responses=False``). Two writers
    moving the *same* id at the same time may leave a stale member; distinct ids are safe.
    """

    def __init__(
        self,
        redis: RedisClient,
        prefix: str,
        name: str = "main",
        k: int = 3,
        blocks: int | None = None,
        id_shards: int = 256,
        bucket_bits: int | None = None,
    ) -> None:
        """``bucket_bits``: name buckets by at most this many bits of each table's prefix
        (default: the whole prefix). A coarser bucket only adds members that the query's
        full-distance check discards, so answers are unchanged; it saves a Redis key per
        fingerprint when prefixes are long and sparse (``k = 0``: one 64-bit prefix)."""
        # Typed loosely inside: redis-py's stubs of RedisCluster lack register_script.
        self.redis: Any = cast(Any, redis)
        self.layout = HammingLayout(k, blocks)
        self.k = k
        self.base = f"{prefix}:hamming:{name}"
        self.id_shards = id_shards
        if bucket_bits is not None and not 1 <= bucket_bits <= 64:
            raise ValueError(f"bucket_bits must be in [1, 64], got {bucket_bits}")
        self._bits = [
            b if bucket_bits is None else min(b, bucket_bits) for b in self.layout.prefix_bits
        ]
        self._hexw = [math.ceil(b / 4) for b in self._bits]
        self._check_client()

    def _check_client(self) -> None:
        try:
            decode = self.redis.get_encoder().decode_responses
        except Exception:
            decode = False
        if decode:
            raise ValueError("RedisHammingIndex needs a client with decode_responses=False")

    # -- keys ----------------------------------------------------------------------------
    def bucket_key(self, fp: int, t: int) -> str:
        return f"{self.base}:t{t}:{self.layout.prefix(fp, t, self._bits[t]):0{self._hexw[t]}x}"

    def _id_key(self, i: int) -> str:
        return f"{self.base}:ids:{i % self.id_shards:02x}"

    @staticmethod
    def _member(fp: int, i: int) -> bytes:
        return fp.to_bytes(8, "big") + i.to_bytes(8, "big")

    def _lookup(self, ids: Sequence[int]) -> list[int | None]:
        """Current fingerprints of ids (None when unknown), one pipelined HMGET per shard."""
        shards: dict[str, list[int]] = defaultdict(list)
        for i in ids:
            shards[self._id_key(i)].append(i)
        pipe = self.redis.pipeline(transaction=False)
        for key, members in shards.items():
            pipe.hmget(key, [str(i) for i in members])
        found: dict[int, int | None] = {}
        for (_, members), values in zip(shards.items(), pipe.execute(), strict=True):
            for i, v in zip(members, values, strict=True):
                found[i] = None if v is None else int.from_bytes(v, "big")
        return [found[i] for i in ids]

    # -- changes -------------------------------------------------------------------------
    def add(self, items: Iterable[tuple[int, int]], *, batch: int = 20000) -> int:
        """Index ``(id, fingerprint)`` entries; returns how many ids were added or moved."""
        id_arr, fp_arr = _pairs(items)
        return sum(
            self._add_batch(id_arr[s : s + batch].tolist(), fp_arr[s : s + batch].tolist())
            for s in range(0, len(id_arr), batch)
        )

    def _add_batch(self, ids: list[int], fps: list[int]) -> int:
        old = self._lookup(ids)
        adds: dict[str, list[bytes]] = defaultdict(list)
        rems: dict[str, list[bytes]] = defaultdict(list)
        idmap: dict[str, dict[str, bytes]] = defaultdict(dict)
        ntab = len(self.layout.tables)
        for i, fp, prev in zip(ids, fps, old, strict=True):
            if prev == fp:
                continue  # already there: adding again is a no-op
            if prev is not None:
                for t in range(ntab):
                    rems[self.bucket_key(prev, t)].append(self._member(prev, i))
            member = self._member(fp, i)
            for t in range(ntab):
                adds[self.bucket_key(fp, t)].append(member)
            idmap[self._id_key(i)][str(i)] = fp.to_bytes(8, "big")
        if not adds:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for key, members in rems.items():
            pipe.srem(key, *members)
        for key, members in adds.items():
            pipe.sadd(key, *members)
        for key, mapping in idmap.items():
            pipe.hset(key, mapping=mapping)
        pipe.execute()
        return sum(len(m) for m in idmap.values())

    def remove(self, items: Iterable[tuple[int, int]], *, batch: int = 20000) -> int:
        """Forget the ids of these entries that hold the entry's fingerprint (others are
        ignored); returns how many."""
        id_arr, fp_arr = _pairs(items)
        return sum(
            self._remove_batch(id_arr[s : s + batch].tolist(), fp_arr[s : s + batch].tolist())
            for s in range(0, len(id_arr), batch)
        )

    def _remove_batch(self, ids: list[int], fps: list[int]) -> int:
        rems: dict[str, list[bytes]] = defaultdict(list)
        dels: dict[str, list[str]] = defaultdict(list)
        for i, fp, held in zip(ids, fps, self._lookup(ids), strict=True):
            if held != fp:
                continue  # not indexed, or under another fingerprint: not this entry
            for t in range(len(self.layout.tables)):
                rems[self.bucket_key(fp, t)].append(self._member(fp, i))
            dels[self._id_key(i)].append(str(i))
        if not dels:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for key, members in rems.items():
            pipe.srem(key, *members)
        for key, fields in dels.items():
            pipe.hdel(key, *fields)
        pipe.execute()
        return sum(len(f) for f in dels.values())

    def clear(self) -> int:
        """Delete every key of this index (SCAN on its prefix); returns how many."""
        return delete_matching(self.redis, f"{self.base}:*")

    def __len__(self) -> int:
        pipe = self.redis.pipeline(transaction=False)
        for s in range(self.id_shards):
            pipe.hlen(f"{self.base}:ids:{s:02x}")
        return int(sum(pipe.execute()))

    def get(self, ids: Sequence[int]) -> list[int | None]:
        """Fingerprints of these ids (None when not indexed)."""
        return self._lookup([int(i) for i in ids])

    def stats(self) -> JSONObject:
        return {
            "ids": len(self),
            "k": self.k,
            "blocks": self.layout.blocks,
            "tables": len(self.layout.tables),
        }

    # -- queries -------------------------------------------------------------------------
    def query(self, fp: int, k: int | None = None) -> list[tuple[int, int]]:
        """Every ``(id, distance)`` within ``k`` (default: the index's k) of ``fp``."""
        return self.query_many([fp], k)[0]

    def query_many(
        self, fps: Sequence[int] | np.ndarray, k: int | None = None
    ) -> list[list[tuple[int, int]]]:
        k = self.k if k is None else k
        if not 0 <= k <= self.k:
            raise ValueError(f"this index answers k <= {self.k}, got {k}")
        qs = [int(f) for f in _as_u64(fps).tolist()]
        ntab = len(self.layout.tables)
        pipe = self.redis.pipeline(transaction=False)
        for fp in qs:
            for t in range(ntab):
                pipe.smembers(self.bucket_key(fp, t))
        replies = pipe.execute()
        if sum(len(m) for m in replies) <= 4096:
            # Few members (the usual case): plain Python beats numpy's fixed costs here.
            found: list[dict[int, int]] = [{} for _ in qs]
            from_bytes = int.from_bytes
            for r, members in enumerate(replies):
                q = qs[r // ntab]
                hits = found[r // ntab]
                for m in members:
                    d = (from_bytes(m[:8], "big") ^ q).bit_count()
                    if d <= k:
                        hits[from_bytes(m[8:], "big")] = d
            return [sorted(h.items(), key=lambda x: (x[1], x[0])) for h in found]
        rec = np.dtype([("fp", ">u8"), ("id", ">i8")])
        chunks: list[bytes] = []
        owners: list[np.ndarray] = []
        for r, members in enumerate(replies):
            if members:
                chunks.append(b"".join(members))
                owners.append(np.full(len(members), r // ntab, dtype=np.int64))
        if not chunks:
            return [[] for _ in qs]
        arr = np.frombuffer(b"".join(chunks), dtype=rec)
        owner = np.concatenate(owners)
        dist = popcount(arr["fp"].astype(np.uint64) ^ np.array(qs, dtype=np.uint64)[owner])
        hit = dist <= k
        return _group_results(
            owner[hit], arr["id"][hit].astype(np.int64), dist[hit].astype(np.int64), len(qs)
        )
