"""The Redis inverted index: fingerprint -> mothers (by seq), the daguan engine's index.

Entries (``tracker.indexes.base.Index``) are ``(seq, fingerprints)``: a mother and the
uint64 array of its fingerprints; a *posting* is one (fingerprint, seq) pair.

Layout, chosen for memory (about 12–16 bytes a posting, see docs/BENCHMARKS.md):

- A fingerprint (uint64) is mixed by a bijective 64-bit hash (splitmix64). Its top
  ``bucket_bits`` choose a bucket; the next 32 bits are the *field* in that bucket.
  Daguan fingerprints at the default 4 levels x 23 letters are 46 bits, and
  ``bucket_bits + 32 >= 46``, so no two fingerprints ever share a (bucket, field).
- Each bucket is one Redis HASH ``{prefix}:{name}:b:{bucket}``; the value of a field
  is the packed little-endian uint32 seqs of the mothers having that fingerprint.
  Small hashes are kept by Redis as a listpack/ziplist (no per-entry pointers);
  we raise ``hash-max-ziplist-entries`` where we may (the embedded server) and say
  so in the deployment docs.
- A fingerprint found in more than ``stop_df`` mothers is replaced by a stop marker
  (one byte): it is boilerplate (且听下回分解, legal formulas) and must not make
  matches on its own; queries skip it. ``index rebuild`` recomputes stop markers.

Every write touches one key, so the index works unchanged on Redis Cluster: the bucket
Lua scripts declare their one key (on a cluster they are sent as EVAL, which redis-py's
cluster pipeline routes by that key; it refuses pipelined Script objects). Lookups read
many buckets in one Lua call on a single server only; on a cluster they are pipelined
HGETs, each routed to its bucket's node. Writes are grouped per bucket and pipelined:
one script call per touched bucket per batch. Adds and removes are idempotent, so a
redelivered ingest task writes no duplicate posting.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tracker.redis_client import delete_matching

STOP = b"\x00"  # one byte: never a multiple of 4, so never a posting list

# ARGV[2] packs the bucket's postings as 8-byte records (4-byte field, 4-byte seq):
# one argument instead of two per posting keeps client-side packing cheap.
_ADD_SCRIPT = """
local stop_len = tonumber(ARGV[1]) * 4
local blob = ARGV[2]
local n = 0
for i = 1, #blob, 8 do
  local f = string.sub(blob, i, i + 3)
  local s = string.sub(blob, i + 4, i + 7)
  local v = redis.call('HGET', KEYS[1], f)
  if not v then
    redis.call('HSET', KEYS[1], f, s)
    n = n + 1
  elseif #v ~= 1 then
    local found = false
    for j = 1, #v, 4 do
      if string.sub(v, j, j + 3) == s then found = true; break end
    end
    if not found then
      if #v + 4 > stop_len then
        redis.call('HSET', KEYS[1], f, '\\0')
      else
        redis.call('HSET', KEYS[1], f, v .. s)
      end
      n = n + 1
    end
  end
end
return n
"""

_REMOVE_SCRIPT = """
local blob = ARGV[1]
local n = 0
for i = 1, #blob, 8 do
  local f = string.sub(blob, i, i + 3)
  local s = string.sub(blob, i + 4, i + 7)
  local v = redis.call('HGET', KEYS[1], f)
  if v and #v ~= 1 then
    local kept = {}
    for j = 1, #v, 4 do
      local p = string.sub(v, j, j + 3)
      if p ~= s then kept[#kept + 1] = p else n = n + 1 end
    end
    if #kept == 0 then redis.call('HDEL', KEYS[1], f)
    else redis.call('HSET', KEYS[1], f, table.concat(kept)) end
  end
end
return n
"""

# Many HGETs in one call: redis-py's per-command cost (~15 us) would otherwise
# dominate a query of ~2,000 fingerprints. Used only where all keys may go to one
# server; on Redis Cluster lookups are pipelined HGETs instead.
_LOOKUP_SCRIPT = """
local fields = ARGV[1]
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call('HGET', KEYS[i], string.sub(fields, 4 * i - 3, 4 * i)) or false
end
return out
"""

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_C = np.uint64(0x9E3779B97F4A7C15)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer: a bijection on uint64 that spreads nearby values."""
    z = values.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z += _C
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


class RedisInvertedIndex:
    """fingerprint (uint64) -> set of seqs (uint32), in bucketed Redis hashes."""

    def __init__(
        self, redis: Any, prefix: str, *, bucket_bits: int = 14, stop_df: int = 16
    ) -> None:
        if not 4 <= bucket_bits <= 32:
            raise ValueError("bucket_bits must be in 4..32")
        self.redis = redis
        self.prefix = prefix
        self.bucket_bits = bucket_bits
        self.stop_df = stop_df
        self._cluster = type(redis).__name__ == "RedisCluster"
        self._add = redis.register_script(_ADD_SCRIPT)
        self._remove = redis.register_script(_REMOVE_SCRIPT)
        self._lookup = redis.register_script(_LOOKUP_SCRIPT)

    # -- addressing -----------------------------------------------------------
    def bucket_key(self, bucket: int) -> str:
        return f"{self.prefix}:b:{bucket}"

    def locate(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bucket numbers, 4-byte field values as uint32) of fingerprints."""
        mixed = mix64(np.asarray(fps, dtype=np.uint64))
        buckets = (mixed >> np.uint64(64 - self.bucket_bits)).astype(np.int64)
        fields = ((mixed >> np.uint64(32 - self.bucket_bits)) & np.uint64(0xFFFFFFFF)).astype(">u4")
        return buckets, fields

    # -- writes ---------------------------------------------------------------
    def _grouped(self, items: Iterable[tuple[int, np.ndarray]]) -> dict[int, bytes]:
        """bucket -> its postings packed as 8-byte (field, seq) records."""
        bucket_parts: list[np.ndarray] = []
        field_parts: list[np.ndarray] = []
        seq_parts: list[np.ndarray] = []
        for seq, fps in items:
            uniq = np.unique(np.asarray(fps, dtype=np.uint64))
            if uniq.size == 0:
                continue
            b, f = self.locate(uniq)
            bucket_parts.append(b)
            field_parts.append(f)
            seq_parts.append(np.full(uniq.size, seq, dtype="<u4"))
        if not bucket_parts:
            return {}
        buckets = np.concatenate(bucket_parts)
        order = np.argsort(buckets, kind="stable")
        buckets = buckets[order]
        records = np.empty(buckets.size, dtype=[("field", ">u4"), ("seq", "<u4")])
        records["field"] = np.concatenate(field_parts)[order]
        records["seq"] = np.concatenate(seq_parts)[order]
        blob = records.tobytes()
        bounds = np.flatnonzero(np.diff(buckets)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [buckets.size]]).tolist()
        return {int(buckets[a]): blob[8 * a : 8 * z] for a, z in zip(starts, ends, strict=True)}

    def add(self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000) -> int:
        """Add postings ``(seq, fingerprints)``; returns how many were new."""
        return self._write(self._add, items, [self.stop_df], chunk)

    def remove(self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000) -> int:
        """Remove postings ``(seq, fingerprints)``; returns how many there were."""
        return self._write(self._remove, items, [], chunk)

    def _write(
        self, script: Any, items: Iterable[tuple[int, np.ndarray]], args: list[Any], chunk: int
    ) -> int:
        """Run a bucket script once per touched bucket (its postings packed as the last
        argument), ``chunk`` calls per pipeline; the sum of the scripts' counts."""
        total = 0
        pipe = self.redis.pipeline(transaction=False)
        pending = 0
        for bucket, blob in self._grouped(items).items():
            key = self.bucket_key(bucket)
            if self._cluster:
                pipe.execute_command("EVAL", script.script, 1, key, *args, blob)
            else:
                script(keys=[key], args=[*args, blob], client=pipe)
            pending += 1
            if pending >= chunk:
                total += sum(int(x) for x in pipe.execute())
                pending = 0
        if pending:
            total += sum(int(x) for x in pipe.execute())
        return total

    # -- reads ----------------------------------------------------------------
    def lookup(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Postings of distinct fingerprints.

        Returns ``(fp_index, seqs, stopped)``: parallel arrays where ``seqs[i]`` is a
        mother holding ``fps[fp_index[i]]``, and how many fingerprints were stop words.
        """
        fps = np.asarray(fps, dtype=np.uint64)
        if fps.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32), 0
        buckets, fields = self.locate(fps)
        field_bytes = fields.astype(">u4").tobytes()
        if self._cluster:  # buckets live on several nodes: one HGET each, routed
            pipe = self.redis.pipeline(transaction=False)
            for i, b in enumerate(buckets.tolist()):
                pipe.hget(self.bucket_key(b), field_bytes[4 * i : 4 * i + 4])
            values = pipe.execute()
        else:
            keys = [self.bucket_key(b) for b in buckets.tolist()]
            values = []
            for a in range(0, len(keys), 4096):  # bounded argument lists
                values += self._lookup(
                    keys=keys[a : a + 4096], args=[field_bytes[4 * a : 4 * (a + 4096)]]
                )
        stopped = 0
        idx_parts: list[int] = []
        blobs: list[bytes] = []
        for i, v in enumerate(values):
            if not v:
                continue
            if len(v) == 1:
                stopped += 1
                continue
            blobs.append(v)
            idx_parts.append(i)
        if not blobs:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32), stopped
        lengths = np.fromiter((len(b) // 4 for b in blobs), dtype=np.int64, count=len(blobs))
        seqs = np.frombuffer(b"".join(blobs), dtype="<u4").astype(np.uint32)
        fp_index = np.repeat(np.asarray(idx_parts, dtype=np.int64), lengths)
        return fp_index, seqs, stopped

    # -- maintenance ----------------------------------------------------------
    def clear(self) -> int:
        """Delete every bucket of this index; returns how many keys."""
        return delete_matching(self.redis, f"{self.prefix}:b:*")

    def stats(self) -> dict[str, Any]:
        keys = fields = postings = stopped = 0
        nbytes = 0
        for key in self.redis.scan_iter(match=f"{self.prefix}:b:*", count=1000):
            keys += 1
            for v in self.redis.hvals(key):
                fields += 1
                if len(v) == 1:
                    stopped += 1
                else:
                    postings += len(v) // 4
                nbytes += len(v) + 4
        return {
            "buckets": keys,
            "fingerprints": fields,
            "postings": postings,
            "stop_fingerprints": stopped,
            "payload_bytes": nbytes,
            "bucket_bits": self.bucket_bits,
            "stop_df": self.stop_df,
        }
