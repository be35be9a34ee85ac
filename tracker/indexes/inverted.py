"""The Redis inverted index: fingerprint -> mothers (by seq), the daguan engine's index.

Entries (``tracker.indexes.base.Index``) are ``(seq, fingerprints)``: a mother and the
uint64 array of its fingerprints; a *posting* is one (fingerprint, seq) pair.

Layout, chosen for memory (10-11 bytes a posting at every size, see
docs/BENCHMARKS.md, section Scale, and docs/SCALING.md):

- A fingerprint (uint64) is mixed by a bijective 64-bit hash (splitmix64); its top
  ``IDENTITY_BITS`` (41) are its *identity*. The identity's top ``bucket_bits`` choose a
  bucket, the rest is the *field* (big-endian, in the fewest whole bytes: 4 bytes below
  2**17 buckets, 3 from there on). Bucket and field together are the identity, so the
  index reshards to any bucket count from its own contents (``reshard``).
- Each bucket is one Redis HASH ``{prefix}:b{bits}v2:{bucket}``; the value of a field
  holds the seqs of the mothers having that fingerprint, a single seq (most fields) as
  decimal digits that Redis stores as a small integer (format 2, ``_CODEC``; indexes
  written before it keep packed seqs under ``{prefix}:b{bits}:`` until a reshard). Redis
  keeps a hash as a compact listpack/ziplist (no per-entry pointers) up to 512 entries
  (``hash-max-ziplist-entries``, values <= 64 bytes): the bucket count grows with the
  library so that a bucket holds ~192 fields (``TARGET_FIELDS``), resharding before
  one would pass ``RESHARD_FIELDS``. Past 512 every bucket would become a hashtable and
  a posting would cost ~7x more (the old fixed 16,384 buckets at 100 M characters).
- The layout (bucket bits / identity bits) and a field count live in the hash
  ``{prefix}:layout``; an index written before layouts were kept (2**14 buckets
  ``{prefix}:b:{bucket}``, 46-bit identities) is read as such and resharded on request.
- A fingerprint found in more than ``stop_df`` mothers is replaced by a stop marker
  (one byte): it is boilerplate (且听下回分解, legal formulas) and must not make
  matches on its own; queries skip it. ``index rebuild`` recomputes stop markers.

Every write touches one key on Redis Cluster: the bucket Lua scripts declare their one
key (on a cluster they are sent as EVAL, which redis-py's cluster pipeline routes by
that key; it refuses pipelined Script objects), and lookups are pipelined HGETs, each
routed to its bucket's node. On a single server, adds and lookups name their keys inside
one Lua call per ~32,000 postings / per query (packing thousands of keys in redis-py
was the cost), and check the layout first so that a reshard meanwhile is noticed and
the call redone. Adds and removes are idempotent, so a redelivered ingest task writes no
duplicate posting.

Bulk loads (``load``, ``BulkLoader``: ``index rebuild``, and an ingest into an empty
index): postings grouped by identity on the client, each field written once with its
final value; the index sized once from the exact count of identities. On a single
server a bucket is written whole by one plain HSET into a key of the load's own
(``{prefix}:bt{token}:{bucket}``, RESP packed with numpy), then moved in place by a
script: RENAMENX when the bucket does not exist yet, else merged field by field exactly
as adds merge (another writer came first), under the same layout and move guard as
adds. On Redis Cluster one script call per bucket does the same with its one key. The
result is the index that adding the same postings in the same order makes (same field
values, byte for byte), at ~1.4 us of Redis time a posting instead of ~4 (100 M).

Versions: ``{prefix}:version`` (an ``epoch`` made at the first write, and ``n``) is
raised before and after every write (adds, removes, reshards; clear removes it), so a reader that
saw the same version twice saw no write in between, and a copy of the index taken at a
version (``tracker.indexes.snapshot``) answers exactly as Redis does while the version
stays. The epoch tells a Redis emptied and written again from the same ``n``; a Redis
restarted from an older save brings back the version that its buckets had.

Writes and reshards: a reshard marks the index as moving (``{prefix}:moving``, with a
TTL it keeps refreshing, so a dead reshard frees writers within a minute), copies every
bucket, switches the layout, then drops the old buckets. A write that landed in an old
bucket already copied would be lost, so no write is trusted across a move: the
single-server add refuses inside its Lua call while the index moves or when the layout
is not the one it was packed for; every other write (removes, and every write on Redis
Cluster, where the layout and the buckets live on different nodes and one script cannot
read both) re-reads the layout and the move mark after its replies, and is redone with
the new layout if a move started or finished meanwhile (writes are idempotent). A move
that starts after that check copies buckets that already hold the write.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tracker.redis_client import delete_matching

STOP = b"\x00"  # one byte: never a multiple of 4, so never a posting list

# Stored values (the seqs of a field's mothers). Format 1 (indexes written before format
# 2): the packed little-endian uint32 seqs. Format 2: a single seq (most fields) as its
# decimal digits, which Redis keeps in a listpack as an integer (2-5 bytes instead of
# 6: ~2 bytes a posting less); two seqs as \x01 and the 8 packed bytes (a marker, so it
# is never read as 8 digits); three or more (>= 12 bytes, longer than any decimal seq)
# packed. A stop marker is one \x00 byte in both. 16 seqs stay within Redis' 64-byte
# compact values. Every script ends its ARGV with the format.
_CODEC = """
local FMT = tonumber(ARGV[#ARGV])
local function decode(v)
  if v == '\\0' then return nil end
  if v == '' then return {} end
  local from = 1
  if FMT == 2 and #v < 12 then
    if #v == 9 and string.byte(v, 1) == 1 then from = 2
    else return {struct.pack('<I4', tonumber(v))} end
  end
  local t = {}
  for j = from, #v, 4 do t[#t + 1] = string.sub(v, j, j + 3) end
  return t
end
-- The stored value of one seq; memoized: a batch brings each mother's seq thousands
-- of times, and formatting it each time cost ~1 us a posting.
local singles = {}
local function one(s)
  if FMT ~= 2 then return s end
  local d = singles[s]
  if d == nil then
    d = string.format('%d', struct.unpack('<I4', s))
    singles[s] = d
  end
  return d
end
local function encode(t)
  if FMT == 2 then
    if #t == 1 then return one(t[1]) end
    if #t == 2 then return '\\1' .. t[1] .. t[2] end
  end
  return table.concat(t)
end
-- The stored value v ('' for a new field) with the 4-byte seqs t (a string or a table)
-- added: (the new value or nil when nothing changed, how many postings are new).
local function merge(v, t, stop_df)
  local cur = decode(v)
  if cur == nil then return nil, 0 end
  if type(t) == 'string' then t = {t} end
  local added = 0
  for _, s in ipairs(t) do
    local found = false
    for _, p in ipairs(cur) do
      if p == s then found = true; break end
    end
    if not found then
      added = added + 1
      if #cur + 1 > stop_df then return '\\0', added end
      cur[#cur + 1] = s
    end
  end
  if added > 0 then return encode(cur), added end
  return nil, 0
end
"""

# ARGV[3] packs the bucket's postings as records of (field, 4-byte seq), ARGV[2] the
# field's width: one argument instead of two per posting keeps client packing cheap.
# One HMGET reads every touched field and one HSET writes every changed one, so the
# Lua loop does no Redis call per posting (the loop per posting was the ingest wall).
# Returns {new postings, new fields}.
_ADD_SCRIPT = (
    _CODEC
    + """
local stop_df = tonumber(ARGV[1])
local fw = tonumber(ARGV[2])
local rw = fw + 4
local blob = ARGV[3]
local fields, seqs, order = {}, {}, {}
for i = 1, #blob, rw do
  local f = string.sub(blob, i, i + fw - 1)
  local s = string.sub(blob, i + fw, i + rw - 1)
  if seqs[f] == nil then
    seqs[f] = {}
    order[#order + 1] = f
  end
  local t = seqs[f]
  t[#t + 1] = s
end
local n, nf = 0, 0
local out = {}
for a = 1, #order, 2000 do
  local part = {}
  for i = a, math.min(a + 1999, #order) do part[#part + 1] = order[i] end
  local vals = redis.call('HMGET', KEYS[1], unpack(part))
  for i = 1, #part do
    local f = part[i]
    local v = vals[i]
    local t = seqs[f]
    if not v and #t == 1 then
      nf = nf + 1; n = n + 1
      out[#out + 1] = f; out[#out + 1] = one(t[1])
    else
      if not v then v = ''; nf = nf + 1 end
      local w, added = merge(v, t, stop_df)
      n = n + added
      if w then out[#out + 1] = f; out[#out + 1] = w end
    end
  end
end
for a = 1, #out, 4000 do
  redis.call('HSET', KEYS[1], unpack(out, a, math.min(a + 3999, #out)))
end
return {n, nf}
"""
)

# The single-server add: many buckets in one call, keys named in the script, so the
# client packs one argument per ~32,000 postings instead of one call per bucket (at
# 2**17 buckets a batch touched every bucket with ~5 postings each: redis-py's packing
# and Redis' per-call cost were the ingest wall). KEYS[1] is the layout: writes made
# with a stale layout (a reshard since) are refused ({-1}), and so are writes while a
# reshard moves the buckets (KEYS[2] exists: {-2}); the client waits and redoes them.
# ARGV: layout, stop_df, field width, key prefix, records (uint32 LE bucket, field,
# seq) sorted by bucket.
_ADD_MANY_SCRIPT = (
    _CODEC
    + """
local stored = redis.call('HGET', KEYS[1], 'layout')
if stored and stored ~= ARGV[1] then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {-2, 0} end
local stop_df = tonumber(ARGV[2])
local fw = tonumber(ARGV[3])
local prefix = ARGV[4]
local blob = ARGV[5]
local rw = fw + 8
local n, nf = 0, 0
local function flush(key, seqs, order)
  if #order <= 4 then
    -- A large library: a batch brings a bucket one or two fields, mostly new ones. One
    -- HSETNX writes a new field; only a known one is read and rewritten.
    for _, f in ipairs(order) do
      local t = seqs[f]
      if type(t) == 'string' and redis.call('HSETNX', key, f, one(t)) == 1 then
        n = n + 1; nf = nf + 1
      else
        local v = redis.call('HGET', key, f)
        if not v then v = ''; nf = nf + 1 end
        local w, added = merge(v, t, stop_df)
        n = n + added
        if w then redis.call('HSET', key, f, w) end
      end
    end
    return
  end
  for a = 1, #order, 2000 do
    local part = {}
    for i = a, math.min(a + 1999, #order) do part[#part + 1] = order[i] end
    local vals = redis.call('HMGET', key, unpack(part))
    local out = {}
    for i = 1, #part do
      local f = part[i]
      local v = vals[i]
      local t = seqs[f]
      if not v and type(t) == 'string' then
        -- The common case, a new field of one seq, without merging.
        nf = nf + 1; n = n + 1
        out[#out + 1] = f; out[#out + 1] = one(t)
      else
        if not v then v = ''; nf = nf + 1 end
        local w, added = merge(v, t, stop_df)
        n = n + added
        if w then out[#out + 1] = f; out[#out + 1] = w end
      end
    end
    if #out > 0 then redis.call('HSET', key, unpack(out)) end
  end
end
local cur = nil
local seqs, order = {}, {}
for i = 1, #blob, rw do
  local b = string.sub(blob, i, i + 3)
  if b ~= cur then
    if cur then flush(prefix .. struct.unpack('<I4', cur), seqs, order) end
    cur = b; seqs = {}; order = {}
  end
  local f = string.sub(blob, i + 4, i + 3 + fw)
  local s = string.sub(blob, i + 4 + fw, i + rw - 1)
  local t = seqs[f]
  if t == nil then
    seqs[f] = s
    order[#order + 1] = f
  elseif type(t) == 'string' then
    seqs[f] = {t, s}
  else
    t[#t + 1] = s
  end
end
if cur then flush(prefix .. struct.unpack('<I4', cur), seqs, order) end
return {n, nf}
"""
)

_REMOVE_SCRIPT = (
    _CODEC
    + """
local fw = tonumber(ARGV[1])
local rw = fw + 4
local blob = ARGV[2]
local n, nf = 0, 0
for i = 1, #blob, rw do
  local f = string.sub(blob, i, i + fw - 1)
  local s = string.sub(blob, i + fw, i + rw - 1)
  local v = redis.call('HGET', KEYS[1], f)
  local cur = v and decode(v)
  if cur then
    local kept = {}
    for _, p in ipairs(cur) do
      if p ~= s then kept[#kept + 1] = p else n = n + 1 end
    end
    if #kept == 0 then redis.call('HDEL', KEYS[1], f); nf = nf + 1
    elseif #kept < #cur then redis.call('HSET', KEYS[1], f, encode(kept)) end
  end
end
return {n, nf}
"""
)

# Bulk loading (``RedisInvertedIndex.load``): each field comes with its FINAL value (the
# load's seqs of that field, encoded as _CODEC writes them, a stop marker past stop_df),
# grouped by bucket. ``fill`` writes a bucket that does not exist yet whole by HSETs of
# up to 2,000 fields (no HMGET, no merge), and merges into a bucket that exists (another
# writer came first, or the index was not empty) field by field exactly as an add of the
# same seqs would. n counts the postings a value holds (a stop marker: stop_df + 1, as
# add counts up to the stop).
_FILL_CORE = (
    _CODEC
    + """
local n, nf = 0, 0
local function nseq(v)
  if v == '\\0' then return stop_df + 1 end
  if FMT == 2 and #v < 12 then
    if #v == 9 and string.byte(v, 1) == 1 then return 2 end
    return 1
  end
  return #v / 4
end
local function fill(key, fl, vl)
  if redis.call('EXISTS', key) == 0 then
    for a = 1, #fl, 2000 do
      local out = {}
      for i = a, math.min(a + 1999, #fl) do
        out[#out + 1] = fl[i]; out[#out + 1] = vl[i]
        n = n + nseq(vl[i])
      end
      redis.call('HSET', key, unpack(out))
    end
    nf = nf + #fl
    return
  end
  for a = 1, #fl, 2000 do
    local part = {}
    for i = a, math.min(a + 1999, #fl) do part[#part + 1] = fl[i] end
    local vals = redis.call('HMGET', key, unpack(part))
    local out = {}
    for j = 1, #part do
      local v, w = vals[j], vl[a + j - 1]
      if not v then
        nf = nf + 1; n = n + nseq(w)
        out[#out + 1] = part[j]; out[#out + 1] = w
      elseif w == '\\0' then
        -- More than stop_df seqs came: with any stored ones, still more.
        local cur = decode(v)
        if cur then
          n = n + stop_df + 1 - #cur
          out[#out + 1] = part[j]; out[#out + 1] = '\\0'
        end
      else
        local m, added = merge(v, decode(w), stop_df)
        n = n + added
        if m then out[#out + 1] = part[j]; out[#out + 1] = m end
      end
    end
    if #out > 0 then redis.call('HSET', key, unpack(out)) end
  end
end
"""
)

# Single server: each new bucket is written by a plain HSET into a key of its own
# (``{prefix}:bt{token}:{bucket}``, only this load writes it; the client packs the
# commands itself, no Lua per field), then this script moves it in place: RENAMENX when
# the bucket does not exist (O(1)), else its fields merged as adds would merge them and
# the temporary key deleted. Guarded like _ADD_MANY_SCRIPT ({-1}: the layout changed,
# {-2}: a reshard moves the buckets: the client deletes its keys and redoes the load).
# ARGV: layout, stop_df, temporary key prefix, key prefix, records (uint32 LE bucket,
# postings, fields), the format. The field count is raised in the same call.
_SETTLE_SCRIPT = (
    """
local stored = redis.call('HGET', KEYS[1], 'layout')
if stored and stored ~= ARGV[1] then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {-2, 0} end
local stop_df = tonumber(ARGV[2])
local tmp = ARGV[3]
local prefix = ARGV[4]
local hdr = ARGV[5]
"""
    + _FILL_CORE
    + """
for i = 1, #hdr, 12 do
  local b, np, nfl = struct.unpack('<I4I4I4', hdr, i)
  local t, k = tmp .. b, prefix .. b
  if redis.call('EXISTS', t) == 1 then
    if redis.call('RENAMENX', t, k) == 1 then
      n = n + np; nf = nf + nfl
    else
      local all = redis.call('HGETALL', t)
      local fl, vl = {}, {}
      for j = 1, #all, 2 do fl[#fl + 1] = all[j]; vl[#vl + 1] = all[j + 1] end
      fill(k, fl, vl)
      redis.call('DEL', t)
    end
  end
end
if nf > 0 then redis.call('HINCRBY', KEYS[1], 'fields', nf) end
return {n, nf}
"""
)

# Redis Cluster: one bucket (its declared key) a call. ARGV: stop_df, field width,
# records (field, value length byte, value).
_FILL_SCRIPT = (
    """
local stop_df = tonumber(ARGV[1])
local fw = tonumber(ARGV[2])
local blob = ARGV[3]
"""
    + _FILL_CORE
    + """
local i, len = 1, #blob
local fl, vl = {}, {}
while i <= len do
  local vn = string.byte(blob, i + fw)
  fl[#fl + 1] = string.sub(blob, i, i + fw - 1)
  vl[#vl + 1] = string.sub(blob, i + fw + 1, i + fw + vn)
  i = i + fw + 1 + vn
end
fill(KEYS[1], fl, vl)
return {n, nf}
"""
)

# Sizes an empty index (no field counted) for a bulk load: sets the layout unless a
# writer counted fields meanwhile (single server; a load raises the count in its call).
_SIZE_SCRIPT = """
if tonumber(redis.call('HGET', KEYS[1], 'fields') or '0') > 0 then return 0 end
redis.call('HSET', KEYS[1], 'layout', ARGV[1])
return 1
"""

# The whole query in one call, keys named inside the script: packing ~2,000 key names
# and arguments in redis-py cost more than the lookups themselves. ARGV: the layout the
# client assumed (a reshard since is answered with the stored one, and the client
# retries), the key prefix, the field width, then the query packed as records of
# (little-endian uint32 bucket, field). Single server only (its keys are undeclared);
# on Redis Cluster lookups are pipelined HGETs routed per bucket.
_LOOKUP_SCRIPT = """
local stored = redis.call('HGET', KEYS[1], 'layout')
if stored and stored ~= ARGV[1] then return {stored} end
local prefix = ARGV[2]
local fw = tonumber(ARGV[3])
local q = ARGV[4]
local rw = fw + 4
local out = {}
local k = 0
for i = 1, #q, rw do
  k = k + 1
  local b = struct.unpack('<I4', string.sub(q, i, i + 3))
  out[k] = redis.call('HGET', prefix .. b, string.sub(q, i + 4, i + rw - 1)) or false
end
return {ARGV[1], out}
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


# Bits of the mixed fingerprint kept (bucket bits + field bits). 41 bits put a field in
# 4 bytes from 512 buckets on and in 3 bytes from 2**17 buckets on (a library of ~100 M
# characters): 11 bytes a posting in the listpack instead of 12. Two of the ~1.4e8
# fingerprints of a billion characters share an identity ~4,500 times, each a stray
# posting of one window, which ranking (two or more hits) and alignment ignore.
# An index written before layouts were kept used 46 bits and 2**14 buckets.
IDENTITY_BITS = 41
LEGACY = (14, 46)
FORMAT = 2  # the value format of new indexes and of every reshard (see _CODEC)
MIN_BITS = 6
MAX_BITS = 30
# Fields per bucket: Redis keeps a hash as a compact listpack up to 512 entries (values
# <= 64 bytes, i.e. stop_df <= 16); past it every bucket becomes a hashtable and a
# posting costs ~7x more. A reshard doubles buckets until they hold about TARGET.
TARGET_FIELDS = 192
RESHARD_FIELDS = 400
# A reshard's move mark lives this long unless refreshed (after every batch of buckets):
# a reshard that died stops holding writers back within this time.
MOVE_TTL_MS = 60_000
# How long a write waits for a reshard to finish before giving up with an error.
MOVE_WAIT_S = 3600.0


def bits_for(fields: int) -> int:
    """The bucket bits that put about ``TARGET_FIELDS`` fields in a bucket."""
    bits = MIN_BITS
    while bits < MAX_BITS and fields > TARGET_FIELDS << bits:
        bits += 1
    return bits


@dataclass
class Pairs:
    """(identity, seq) postings, identities of ``IDENTITY_BITS`` (a bulk load's unit)."""

    ident: np.ndarray
    seqs: np.ndarray


def _hset_commands(
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
    _scatter(rec, p + 2, vlen, vdata)
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


def _scatter(out: np.ndarray, starts: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> None:
    """``out[starts[i]:starts[i] + lengths[i]]`` = the i-th run of ``data`` (the runs one
    after the other), for every i at once."""
    if not data.size:
        return
    first = np.cumsum(lengths) - lengths
    out[np.repeat(starts - first, lengths) + np.arange(data.size)] = data


class RedisInvertedIndex:
    """fingerprint (uint64) -> set of seqs (uint32), in bucketed Redis hashes.

    A fingerprint's *identity* is the top ``ident_bits`` of its mix; the top
    ``bucket_bits`` of the identity name the bucket, the rest is the field (stored
    big-endian in the fewest whole bytes). Both together are the identity, so the
    index can be resharded to any bucket count from its own contents (``reshard``).
    The current bucket bits live in Redis (hash ``{prefix}:layout``: ``bits``, and
    ``fields`` counted by adds) beside the buckets,
    so every process reads the same layout; ``bucket_bits`` is the layout of a new
    index (None: the smallest, grown by ``grow`` as postings come).
    """

    def __init__(
        self, redis: Any, prefix: str, *, bucket_bits: int | None = None, stop_df: int = 16
    ) -> None:
        if bucket_bits is not None and not MIN_BITS <= bucket_bits <= MAX_BITS:
            raise ValueError(f"bucket_bits must be in {MIN_BITS}..{MAX_BITS}, got {bucket_bits}")
        self.redis = redis
        self.prefix = prefix
        self.initial_bits = bucket_bits
        self.stop_df = stop_df
        self._cluster = type(redis).__name__ == "RedisCluster"
        self._add = redis.register_script(_ADD_SCRIPT)
        self._add_many = redis.register_script(_ADD_MANY_SCRIPT)
        self._remove = redis.register_script(_REMOVE_SCRIPT)
        self._lookup = redis.register_script(_LOOKUP_SCRIPT)
        self._settle = redis.register_script(_SETTLE_SCRIPT)
        self._fill = redis.register_script(_FILL_SCRIPT)
        self._size = redis.register_script(_SIZE_SCRIPT)
        self.bucket_bits, self.ident_bits, self.fmt = self._read_layout()

    # -- layout ---------------------------------------------------------------
    @property
    def layout_key(self) -> str:
        return f"{self.prefix}:layout"

    @property
    def moving_key(self) -> str:
        """Exists while a reshard moves the buckets (value: the layout it moves to)."""
        return f"{self.prefix}:moving"

    @property
    def version_key(self) -> str:
        """``epoch`` and ``n``: raised before and after every write (module docstring)."""
        return f"{self.prefix}:version"

    def version(self) -> str | None:
        """The index's version (``epoch/n``), or None before its first write."""
        epoch, n = self.redis.hmget(self.version_key, ["epoch", "n"])
        if epoch is None:
            return None
        return f"{epoch.decode()}/{int(n or 0)}"

    def _bump_version(self) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.hsetnx(self.version_key, "epoch", uuid.uuid4().hex)
        pipe.hincrby(self.version_key, "n", 1)
        pipe.execute()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Around a write: the version raised before (a reader taking the old version
        after this no longer trusts a copy of it) and after (also when it failed)."""
        self._bump_version()
        try:
            yield
        finally:
            self._bump_version()

    def wait_for_move(self, timeout: float = MOVE_WAIT_S) -> None:
        """Return once no reshard is moving this index's buckets (at once, usually)."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while self.redis.exists(self.moving_key):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"index {self.prefix} is being resharded (for over {timeout:.0f} s); "
                    "try again when it is done"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _layout_held(self, used: str) -> bool:
        """After a write made with layout ``used``: no move started or finished since."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(self.layout_key, "layout")
        pipe.exists(self.moving_key)
        stored, moving = pipe.execute()
        return not moving and (stored is None or stored.decode() == used)

    def _read_layout(self) -> tuple[int, int, int]:
        """(bucket bits, identity bits, value format) as stored: ``bits/ident`` (format
        1, written before format 2) or ``bits/ident/format``."""
        stored = self.redis.hget(self.layout_key, "layout")
        if stored is not None:
            parts = [int(x) for x in stored.split(b"/")]
            return parts[0], parts[1], parts[2] if len(parts) > 2 else 1
        if self.initial_bits is not None:
            return self.initial_bits, IDENTITY_BITS, FORMAT
        # An index written before layouts were stored has 16,384 buckets by old names.
        legacy = [f"{self.prefix}:b:{b}" for b in range(0, 1 << LEGACY[0], 256)]
        pipe = self.redis.pipeline(transaction=False)
        for key in legacy:
            pipe.exists(key)
        if any(pipe.execute()):
            return (*LEGACY, 1)
        return MIN_BITS, IDENTITY_BITS, FORMAT

    def refresh(self) -> int:
        """Re-read the layout (another process may have resharded)."""
        self.bucket_bits, self.ident_bits, self.fmt = self._read_layout()
        return self.bucket_bits

    @property
    def field_bytes(self) -> int:
        return field_width(self.bucket_bits, self.ident_bits)

    @property
    def layout(self) -> str:
        return layout_name(self.bucket_bits, self.ident_bits, self.fmt)

    def key_prefix(
        self, bits: int | None = None, ident: int | None = None, fmt: int | None = None
    ) -> str:
        if bits is None:
            bits, ident, fmt = self.bucket_bits, self.ident_bits, self.fmt
        if (bits, ident or IDENTITY_BITS) == LEGACY:
            return f"{self.prefix}:b:"
        # Format 2 buckets have names of their own: a reshard converting a format 1
        # index to the same bucket count writes next to the buckets it reads.
        return f"{self.prefix}:b{bits}{'v2' if (fmt or FORMAT) == 2 else ''}:"

    # -- addressing -----------------------------------------------------------
    def bucket_key(
        self, bucket: int, bits: int | None = None, ident: int | None = None, fmt: int | None = None
    ) -> str:
        return f"{self.key_prefix(bits, ident, fmt)}{bucket}"

    def locate(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bucket numbers, fields as uint64) of fingerprints."""
        ident = mix64(np.asarray(fps, dtype=np.uint64)) >> np.uint64(64 - self.ident_bits)
        return split_identity(ident, self.bucket_bits, self.ident_bits)

    # -- writes ---------------------------------------------------------------
    def _grouped(self, items: Iterable[tuple[int, np.ndarray]] | Pairs) -> dict[int, bytes]:
        """bucket -> its postings packed as (field, 4-byte seq) records."""
        bucket_parts: list[np.ndarray] = []
        field_parts: list[np.ndarray] = []
        seq_parts: list[np.ndarray] = []
        if isinstance(items, Pairs):  # (identity, seq) pairs, as a bulk load gathers them
            b, f = split_identity(items.ident, self.bucket_bits, self.ident_bits)
            bucket_parts, field_parts = [b], [f]
            seq_parts = [items.seqs.astype("<u4")]
            items = ()
        for seq, fps in items:
            uniq = np.unique(np.asarray(fps, dtype=np.uint64))
            if uniq.size == 0:
                continue
            b, f = self.locate(uniq)
            bucket_parts.append(b)
            field_parts.append(f)
            seq_parts.append(np.full(uniq.size, seq, dtype="<u4"))
        if not bucket_parts or not bucket_parts[0].size:
            return {}
        buckets = np.concatenate(bucket_parts)
        order = np.argsort(buckets, kind="stable")
        buckets = buckets[order]
        fw = self.field_bytes
        records = np.empty((buckets.size, fw + 4), dtype=np.uint8)
        records[:, :fw] = pack_fields(np.concatenate(field_parts)[order], fw)
        records[:, fw:] = np.concatenate(seq_parts)[order].view(np.uint8).reshape(-1, 4)
        blob = records.tobytes()
        rw = fw + 4
        bounds = np.flatnonzero(np.diff(buckets)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [buckets.size]]).tolist()
        return {int(buckets[a]): blob[rw * a : rw * z] for a, z in zip(starts, ends, strict=True)}

    def add(self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000) -> int:
        """Add postings ``(seq, fingerprints)``; returns how many were new."""
        items = list(items)
        if not self._cluster:  # (the cluster path waits in _guarded_write)
            self.wait_for_move()
        self.refresh()
        self.redis.hsetnx(self.layout_key, "layout", self.layout)
        with self._writing():
            if self._cluster:
                replies = self._guarded_write(
                    self._add, items, lambda: [self.stop_df, self.field_bytes], chunk
                )
            else:
                replies = self._add_sorted(items)
        new_fields = sum(int(r[1]) for r in replies)
        if new_fields:
            self.redis.hincrby(self.layout_key, "fields", new_fields)
        return sum(int(r[0]) for r in replies)

    def _add_sorted(self, items: list[tuple[int, np.ndarray]], per_call: int = 32_768) -> list[Any]:
        """Single server: the batch's postings sorted by bucket, ``per_call`` a script
        call, pipelined; redone with the new layout if a reshard came between."""
        keys = [self.layout_key, self.moving_key]
        for _ in range(5):
            blob, rw = self._records(items)
            pipe = self.redis.pipeline(transaction=False)
            args = [self.layout, self.stop_df, self.field_bytes, self.key_prefix()]
            step = rw * per_call
            for a in range(0, len(blob), step):
                self._add_many(keys=keys, args=[*args, blob[a : a + step], self.fmt], client=pipe)
            replies = pipe.execute() if blob else []
            if all(int(r[0]) >= 0 for r in replies):
                return replies
            # Resharded or resharding meanwhile; adds are idempotent: redo them all.
            self.wait_for_move()
            self.refresh()
        raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")

    def _records(self, items: list[tuple[int, np.ndarray]]) -> tuple[bytes, int]:
        """(uint32 LE bucket, field, seq) records sorted by bucket, and their width."""
        fw = self.field_bytes
        parts_b, parts_f, parts_s = [], [], []
        for seq, fps in items:
            uniq = np.unique(np.asarray(fps, dtype=np.uint64))
            if uniq.size == 0:
                continue
            b, f = self.locate(uniq)
            parts_b.append(b)
            parts_f.append(f)
            parts_s.append(np.full(uniq.size, seq, dtype="<u4"))
        if not parts_b:
            return b"", fw + 8
        buckets = np.concatenate(parts_b)
        order = np.argsort(buckets, kind="stable")
        rec = np.empty((buckets.size, fw + 8), dtype=np.uint8)
        rec[:, :4] = buckets[order].astype("<u4").view(np.uint8).reshape(-1, 4)
        rec[:, 4 : 4 + fw] = pack_fields(np.concatenate(parts_f)[order], fw)
        rec[:, 4 + fw :] = np.concatenate(parts_s)[order].view(np.uint8).reshape(-1, 4)
        return rec.tobytes(), fw + 8

    # -- bulk loads -------------------------------------------------------------
    def identities(self, fps: np.ndarray) -> np.ndarray:
        """The ``IDENTITY_BITS``-bit identities of fingerprints (what a bulk load groups
        by; independent of the bucket count)."""
        return mix64(np.asarray(fps, dtype=np.uint64)) >> np.uint64(64 - IDENTITY_BITS)

    def is_empty(self) -> bool:
        """No field counted and no bucket under this prefix (the scan stops at the first
        key found, so it is cheap on a full index too)."""
        if self.fields_estimate():
            return False
        for _ in self.redis.scan_iter(match=f"{self.prefix}:b*", count=1000):
            return False
        return True

    def load(
        self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000, size: bool = True
    ) -> int:
        """Add postings ``(seq, fingerprints)`` as ``add`` does (same result, byte for
        byte, as adding them in this order), grouped here by fingerprint so that each
        field is written once with its final value and a bucket that does not exist yet
        in one HSET (``_FILL_CORE``). ``size``: an empty index first takes the bucket
        count that its distinct fingerprints call for (``bits_for``), so nothing is
        resharded later. Returns how many postings were new."""
        items = list(items)
        self.refresh()
        if self.fmt != FORMAT or self.ident_bits != IDENTITY_BITS or self.stop_df > 63:
            # An old index (written as it is), or values past one length byte.
            return self.add(items, chunk=chunk)
        parts = [(seq, np.asarray(fps, dtype=np.uint64)) for seq, fps in items]
        parts = [(seq, fps) for seq, fps in parts if fps.size]
        if not parts:
            return 0
        ident = np.concatenate([self.identities(fps) for _, fps in parts])
        seqs = np.concatenate([np.full(fps.size, seq, dtype=np.uint32) for seq, fps in parts])
        return self.load_pairs(ident, seqs, chunk=chunk, size=size)

    def load_pairs(
        self, ident: np.ndarray, seqs: np.ndarray, *, chunk: int = 2000, size: bool = True
    ) -> int:
        """``load`` of (identity, seq) pairs in arrival order (a field's seqs are stored
        in that order, as adds in that order store them)."""
        if ident.size == 0:
            return 0
        order = np.argsort(ident, kind="stable")
        ident, seqs = ident[order], seqs[order].astype(np.uint32)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(ident)) + 1])
        groups = ident[starts]
        vlen, vdata, counts = self._fill_values(seqs, starts)
        del order, ident
        if size:
            self.size_for(groups.size)
        if not self._cluster:
            self.wait_for_move()
        new_fields = 0
        with self._writing():
            for _ in range(5):
                self.refresh()
                if self.fmt != FORMAT or self.ident_bits != IDENTITY_BITS:
                    raise RuntimeError(f"index {self.prefix} is in an old layout: reshard it")
                self.redis.hsetnx(self.layout_key, "layout", self.layout)
                used = self.layout
                if self._cluster:
                    replies = self._fill_buckets(groups, vlen, vdata, chunk)
                    if self._layout_held(used):
                        new_fields = sum(int(r[1]) for r in replies)
                        break
                else:
                    replies = self._fill_direct(groups, vlen, vdata, counts)
                    if all(int(r[0]) >= 0 for r in replies):
                        break  # (the script counted its fields)
                    self.wait_for_move()  # resharded meanwhile: redo all (idempotent)
            else:
                raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")
        if new_fields:
            self.redis.hincrby(self.layout_key, "fields", new_fields)
        return sum(int(r[0]) for r in replies)

    def size_for(self, fields: int) -> int:
        """Before a bulk load of ``fields`` distinct identities into an EMPTY index: the
        layout set to ``bits_for(fields)`` buckets (format 2) unless a writer counted
        fields meanwhile. An index that is not empty keeps its layout. The bits."""
        bits = bits_for(fields)
        if (bits, IDENTITY_BITS, FORMAT) == (self.refresh(), self.ident_bits, self.fmt):
            return bits
        if not self.is_empty():
            return self.bucket_bits
        name = layout_name(bits, IDENTITY_BITS, FORMAT)
        with self._writing():
            if self._cluster:  # layout and buckets on different nodes: checked above
                self.redis.hset(self.layout_key, "layout", name)
            else:
                self._size(keys=[self.layout_key], args=[name])
        return self.refresh()

    def _fill_values(
        self, seqs: np.ndarray, starts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The final value of every field (its seqs ``seqs[starts[i]:starts[i + 1]]``):
        (lengths, the values' bytes one after the other). Single seqs (most fields)
        as decimal digits, made with numpy; the others through ``encode_value``."""
        counts = np.diff(np.append(starts, seqs.size))
        single = counts == 1
        ones = seqs[starts[single]].astype(np.uint64)
        nd = np.ones(ones.size, dtype=np.int64)
        for k in range(1, 10):
            nd += ones >= np.uint64(10**k)
        digits = np.empty((ones.size, 10), dtype=np.uint8)  # right-aligned, MSB first
        x = ones.copy()
        for j in range(9, -1, -1):
            digits[:, j] = (x % np.uint64(10)).astype(np.uint8) + 48
            x //= np.uint64(10)
        one_bytes = digits[np.arange(10) >= (10 - nd)[:, None]]
        many_at = np.flatnonzero(~single)
        many: list[bytes] = []
        posts: list[int] = []  # postings of each (as adds count: up to the stop)
        raw = seqs.astype("<u4").tobytes()
        for a, c in zip(starts[many_at].tolist(), counts[many_at].tolist(), strict=True):
            got = [raw[4 * i : 4 * i + 4] for i in range(a, a + c)]
            kept = list(dict.fromkeys(got))  # a seq twice (identity collision): once
            many.append(STOP if len(kept) > self.stop_df else encode_value(kept, FORMAT))
            posts.append(min(len(kept), self.stop_df + 1))
        vlen = np.empty(starts.size, dtype=np.int64)
        vlen[single] = nd
        vlen[many_at] = np.fromiter(map(len, many), dtype=np.int64, count=len(many))
        vstart = np.cumsum(vlen) - vlen
        vdata = np.empty(int(vlen.sum()), dtype=np.uint8)
        _scatter(vdata, vstart[single], nd, one_bytes)
        _scatter(vdata, vstart[many_at], vlen[many_at], np.frombuffer(b"".join(many), np.uint8))
        counts = np.ones(starts.size, dtype=np.int64)
        counts[many_at] = posts
        return vlen, vdata, counts

    def _fill_records(
        self, groups: np.ndarray, vlen: np.ndarray, vdata: np.ndarray
    ) -> tuple[np.ndarray, bytes, np.ndarray]:
        """(buckets, records, each record's byte offset) for the current layout: records
        of (field, value length byte, value), in identity order."""
        buckets, fields = split_identity(groups, self.bucket_bits, self.ident_bits)
        fw = self.field_bytes
        head = fw + 1
        size = head + vlen
        off = np.cumsum(size) - size
        buf = np.empty(int(size.sum()), dtype=np.uint8)
        packed = pack_fields(fields, fw)
        for c in range(fw):
            buf[off + c] = packed[:, c]
        buf[off + fw] = vlen.astype(np.uint8)
        _scatter(buf, off + head, vlen, vdata)
        return buckets, buf.tobytes(), off

    def _fill_direct(
        self,
        groups: np.ndarray,
        vlen: np.ndarray,
        vdata: np.ndarray,
        counts: np.ndarray,
        per_call: int = 2048,
    ) -> list[Any]:
        """Single server: every bucket HSET whole into a temporary key (commands packed
        here with numpy, sent raw: redis-py's packing of two arguments a posting cost
        more than Redis' work), then ``_SETTLE_SCRIPT`` per ``per_call`` buckets. A
        refused settle deletes this load's temporary keys and returns its reply."""
        buckets, fields = split_identity(groups, self.bucket_bits, self.ident_bits)
        firsts = np.concatenate([[0], np.flatnonzero(np.diff(buckets)) + 1])
        per_bucket = np.diff(np.append(firsts, groups.size))
        nbuckets = firsts.size
        ubuckets = buckets[firsts]
        posts = np.add.reduceat(counts, firsts)
        tmp = f"{self.prefix}:bt{uuid.uuid4().hex[:12]}:"
        buf, starts = _hset_commands(
            [f"{tmp}{b}".encode() for b in ubuckets.tolist()],
            per_bucket,
            pack_fields(fields, self.field_bytes),
            vlen,
            vdata,
        )
        hdr = np.empty((nbuckets, 3), dtype="<u4")
        hdr[:, 0], hdr[:, 1], hdr[:, 2] = ubuckets, posts, per_bucket
        keys = [self.layout_key, self.moving_key]
        args = [self.layout, self.stop_df, tmp, self.key_prefix()]
        replies: list[Any] = []
        ends = np.append(starts, len(buf)).tolist()
        pool = self.redis.connection_pool
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
                reply = self._settle(keys=keys, args=[*args, hdr[a:z].tobytes(), self.fmt])
                replies.append(reply)
                if int(reply[0]) < 0:
                    delete_matching(self.redis, f"{tmp}*")
                    break
        except BaseException:
            conn.disconnect()
            with contextlib.suppress(Exception):
                delete_matching(self.redis, f"{tmp}*")
            raise
        finally:
            pool.release(conn)
        return replies

    def _fill_buckets(
        self, groups: np.ndarray, vlen: np.ndarray, vdata: np.ndarray, chunk: int
    ) -> list[Any]:
        """Redis Cluster: one ``_FILL_SCRIPT`` EVAL per bucket, ``chunk`` per pipeline."""
        buckets, blob, off = self._fill_records(groups, vlen, vdata)
        firsts = np.concatenate([[0], np.flatnonzero(np.diff(buckets)) + 1])
        ends = np.append(off, len(blob))
        bounds = [*firsts.tolist(), groups.size]
        args = [self.stop_df, self.field_bytes]
        replies: list[Any] = []
        pipe = self.redis.pipeline(transaction=False)
        pending = 0
        for a, z in itertools.pairwise(bounds):
            key = self.bucket_key(int(buckets[a]))
            part = blob[int(ends[a]) : int(ends[z])]
            pipe.execute_command("EVAL", self._fill.script, 1, key, *args, part, self.fmt)
            pending += 1
            if pending >= chunk:
                replies += pipe.execute()
                pending = 0
        if pending:
            replies += pipe.execute()
        return replies

    def remove_pairs(self, ident: np.ndarray, seqs: np.ndarray, *, chunk: int = 2000) -> int:
        """``remove`` of (identity, seq) pairs (a bulk load taking back mothers replaced
        meanwhile); returns how many postings there were."""
        if ident.size == 0:
            return 0
        with self._writing():
            replies = self._guarded_write(
                self._remove, Pairs(ident, seqs), lambda: [self.field_bytes], chunk
            )
        gone = sum(int(r[1]) for r in replies)
        if gone:
            self.redis.hincrby(self.layout_key, "fields", -gone)
        return sum(int(r[0]) for r in replies)

    def remove(self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000) -> int:
        """Remove postings ``(seq, fingerprints)``; returns how many there were."""
        with self._writing():
            replies = self._guarded_write(
                self._remove, list(items), lambda: [self.field_bytes], chunk
            )
        gone = sum(int(r[1]) for r in replies)
        if gone:
            self.redis.hincrby(self.layout_key, "fields", -gone)
        return sum(int(r[0]) for r in replies)

    def _guarded_write(
        self,
        script: Any,
        items: list[tuple[int, np.ndarray]] | Pairs,
        args: Any,
        chunk: int,
    ) -> list[Any]:
        """``_write`` with the current layout, checked afterwards and redone (after the
        reshard) if a reshard started or finished meanwhile; ``args()`` gives the
        script's arguments for the current layout."""
        for _ in range(5):
            self.wait_for_move()
            self.refresh()
            used = self.layout
            replies = self._write(script, items, args(), chunk)
            if self._layout_held(used):
                return replies
        raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")

    def _write(
        self,
        script: Any,
        items: Iterable[tuple[int, np.ndarray]] | Pairs,
        args: list[Any],
        chunk: int,
    ) -> list[Any]:
        """Run a bucket script once per touched bucket (its postings packed as the last
        argument), ``chunk`` calls per pipeline; the scripts' replies."""
        replies: list[Any] = []
        pipe = self.redis.pipeline(transaction=False)
        pending = 0
        for bucket, blob in self._grouped(items).items():
            key = self.bucket_key(bucket)
            if self._cluster:
                pipe.execute_command("EVAL", script.script, 1, key, *args, blob, self.fmt)
            else:
                script(keys=[key], args=[*args, blob, self.fmt], client=pipe)
            pending += 1
            if pending >= chunk:
                replies += pipe.execute()
                pending = 0
        if pending:
            replies += pipe.execute()
        return replies

    # -- reads ----------------------------------------------------------------
    def lookup(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Postings of distinct fingerprints.

        Returns ``(fp_index, seqs, stopped)``: parallel arrays where ``seqs[i]`` is a
        mother holding ``fps[fp_index[i]]``, and how many fingerprints were stop words.
        """
        fps = np.asarray(fps, dtype=np.uint64)
        if fps.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32), 0
        values, fmt = self._values(fps)
        return parse_values(values, fmt)

    def _values(self, fps: np.ndarray) -> tuple[list[Any], int]:
        """The stored value (or None) of each fingerprint's field, and their format."""
        for _ in range(3):
            buckets, fields = self.locate(fps)
            fw = self.field_bytes
            packed = pack_fields(fields, fw)
            if self._cluster:  # buckets live on several nodes: one HGET each, routed
                pipe = self.redis.pipeline(transaction=False)
                pipe.hget(self.layout_key, "layout")
                for b, f in zip(buckets.tolist(), packed, strict=True):
                    pipe.hget(self.bucket_key(b), f.tobytes())
                got = pipe.execute()
                if got[0] is None or got[0].decode() == self.layout:
                    return list(got[1:]), self.fmt
            else:
                records = np.empty((fps.size, fw + 4), dtype=np.uint8)
                records[:, :4] = buckets.astype("<u4").view(np.uint8).reshape(-1, 4)
                records[:, 4:] = packed
                reply = self._lookup(
                    keys=[self.layout_key],
                    args=[self.layout, self.key_prefix(), fw, records.tobytes()],
                )
                if len(reply) == 2:
                    return list(reply[1]), self.fmt
            self.refresh()  # resharded meanwhile: ask again with the new layout
        raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")

    # -- maintenance ----------------------------------------------------------
    def clear(self) -> int:
        """Delete every bucket and the layout of this index; returns how many keys.
        The next writes start a new index at the initial layout."""
        self._bump_version()  # a reader of the old version stops trusting copies of it
        n = delete_matching(self.redis, f"{self.prefix}:b*")
        n += self.redis.delete(self.layout_key)
        # The next write makes a new epoch: no copy of the cleared index matches it.
        self.redis.delete(self.version_key)
        self.bucket_bits = self.initial_bits if self.initial_bits is not None else MIN_BITS
        self.ident_bits, self.fmt = IDENTITY_BITS, FORMAT
        return n

    def fields_estimate(self) -> int:
        """Fingerprints (fields) counted by adds and removes: cheap enough to read after
        every batch (``stats`` counts them exactly)."""
        return int(self.redis.hget(self.layout_key, "fields") or 0)

    def advice(self, fields: int | None = None) -> dict[str, Any]:
        """Whether the buckets are too full (past the compact encoding) or too empty."""
        fields = self.fields_estimate() if fields is None else fields
        per_bucket = fields / (1 << self.bucket_bits)
        wanted = bits_for(fields)
        needs = per_bucket > RESHARD_FIELDS or (self.bucket_bits > wanted + 1)
        # An index of the old value format also gains from a reshard (~2 B a posting).
        old_format = fields > 0 and self.fmt != FORMAT
        if needs:
            advice = (
                f"reshard: yinji index reshard (buckets {1 << self.bucket_bits} -> "
                f"{1 << wanted}) / 需要重新分桶"
            )
        elif old_format:
            advice = "reshard: yinji index reshard (compact values) / 重新分桶可压缩取值"
        else:
            advice = "ok / 分桶合适"
        return {
            "fields_per_bucket": round(per_bucket, 1),
            "recommended_bucket_bits": wanted,
            "needs_reshard": needs or old_format,
            "value_format": self.fmt,
            "advice": advice,
        }

    def grow(self, extra: int = 0) -> int | None:
        """Reshard when buckets would hold more than ``RESHARD_FIELDS`` fields after
        ``extra`` more; the new bits or None. On an empty index this moves nothing."""
        fields = self.fields_estimate() + extra
        if fields / (1 << self.refresh()) <= RESHARD_FIELDS:
            return None
        return self.reshard(bits_for(fields))

    def reshard(self, bits: int, *, batch: int = 256) -> int:
        """Move every posting to ``2**bits`` buckets, from the index alone (the bucket
        and field together are the identity; a legacy 46-bit identity is cut to
        ``IDENTITY_BITS``, merging the rare postings that then share one). Callers hold
        the index lock; lookups see the new layout only once every bucket is written,
        and retry by themselves. Values are written in format 2 (an index in format 1
        is converted, also to the same bucket count). Returns bits."""
        if not MIN_BITS <= bits <= MAX_BITS:
            raise ValueError(f"bucket_bits must be in {MIN_BITS}..{MAX_BITS}, got {bits}")
        old, old_ident = self.refresh(), self.ident_bits
        ident = IDENTITY_BITS
        if (bits, ident, FORMAT) == (old, old_ident, self.fmt):
            return bits
        old_fw, new_fw = field_width(old, old_ident), field_width(bits, ident)
        old_keys = [self.bucket_key(b, old, old_ident, self.fmt) for b in range(1 << old)]
        # Writers hold back (or redo) from here until the new layout is in place.
        with self._writing():
            self.redis.set(self.moving_key, layout_name(bits, ident, FORMAT), px=MOVE_TTL_MS)
            try:
                self._copy_buckets(old_keys, old, old_ident, old_fw, bits, ident, new_fw, batch)
                self._switch_layout(bits, ident)
            finally:
                self.redis.delete(self.moving_key)
            pipe = self.redis.pipeline(transaction=False)
            for key in old_keys:
                pipe.unlink(key)
            pipe.execute()
        return bits

    def _switch_layout(self, bits: int, ident: int) -> None:
        self.redis.hset(self.layout_key, "layout", layout_name(bits, ident, FORMAT))
        self.bucket_bits, self.ident_bits, self.fmt = bits, ident, FORMAT

    def _copy_buckets(
        self,
        old_keys: list[str],
        old: int,
        old_ident: int,
        old_fw: int,
        bits: int,
        ident: int,
        new_fw: int,
        batch: int,
    ) -> None:
        """Every posting of the old buckets written to the new ones (in ``FORMAT``)."""
        old_fmt = self.fmt
        for a in range(0, len(old_keys), batch):
            self.redis.pexpire(self.moving_key, MOVE_TTL_MS)
            pipe = self.redis.pipeline(transaction=False)
            for key in old_keys[a : a + batch]:
                pipe.hgetall(key)
            contents = pipe.execute()
            ident_parts, value_parts = [], []
            for i, content in enumerate(contents):
                if not content:
                    continue
                raw = np.frombuffer(b"".join(content.keys()), dtype=np.uint8)
                fields = unpack_fields(raw.reshape(-1, old_fw))
                head = np.uint64(a + i) << np.uint64(old_ident - old)
                ident_parts.append((head | fields) >> np.uint64(old_ident - ident))
                if old_fmt == FORMAT:
                    value_parts.extend(content.values())
                else:
                    value_parts.extend(
                        encode_value(decode_value(v, old_fmt), FORMAT) for v in content.values()
                    )
            if not ident_parts:
                continue
            new_b, new_f = split_identity(np.concatenate(ident_parts), bits, ident)
            packed = pack_fields(new_f, new_fw)
            groups: dict[int, dict[bytes, bytes]] = {}
            for b, f, v in zip(new_b.tolist(), packed, value_parts, strict=True):
                mapping = groups.setdefault(b, {})
                key = f.tobytes()
                mapping[key] = v if key not in mapping else self._merge(mapping[key], v)
            pipe = self.redis.pipeline(transaction=False)
            for b, mapping in groups.items():
                pipe.hset(self.bucket_key(b, bits, ident, FORMAT), mapping=mapping)
            pipe.execute()

    def _merge(self, a: bytes, b: bytes) -> bytes:
        """One posting list of two identities cut to one (both in ``FORMAT``)."""
        sa, sb = decode_value(a, FORMAT), decode_value(b, FORMAT)
        if sa is None or sb is None:
            return STOP
        seqs = list(dict.fromkeys([*sa, *sb]))
        return STOP if len(seqs) > self.stop_df else encode_value(seqs, FORMAT)

    def stats(self) -> dict[str, Any]:
        keys = fields = postings = stopped = 0
        nbytes = 0
        self.refresh()
        for key in self.redis.scan_iter(match=f"{self.key_prefix()}*", count=1000):
            keys += 1
            for v in self.redis.hvals(key):
                fields += 1
                if v == STOP:
                    stopped += 1
                else:
                    postings += len(packed_seqs(v, self.fmt)) // 4
                nbytes += len(v) + self.field_bytes
        return {
            "buckets": keys,
            "fingerprints": fields,
            "postings": postings,
            "stop_fingerprints": stopped,
            "payload_bytes": nbytes,
            "bucket_bits": self.bucket_bits,
            "stop_df": self.stop_df,
            **self.advice(fields),
        }


def layout_name(bits: int, ident: int, fmt: int) -> str:
    """The stored layout: ``bits/ident`` for format 1 (as written before formats),
    ``bits/ident/fmt`` from format 2 on."""
    return f"{bits}/{ident}" if fmt == 1 else f"{bits}/{ident}/{fmt}"


def packed_seqs(value: bytes, fmt: int) -> bytes:
    """The packed little-endian uint32 seqs of a stored value (not a stop marker)."""
    if fmt == 2 and len(value) < 12:
        if len(value) == 9 and value[0] == 1:
            return value[1:]
        return int(value).to_bytes(4, "little")
    return value


def parse_values(values: list[Any], fmt: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(fp_index, seqs, stopped)`` of looked-up values (None: no field). Single seqs
    (decimal in format 2, most hits) are converted in one ``map(int, ...)``."""
    stopped = 0
    one_at: list[int] = []
    ones: list[bytes] = []
    many_at: list[int] = []
    blobs: list[bytes] = []
    for i, v in enumerate(values):
        if not v:
            continue
        n = len(v)
        if fmt == 2 and n < 12 and not (n == 9 and v[0] == 1):
            if v == STOP:
                stopped += 1
            else:
                one_at.append(i)
                ones.append(v)
        elif v == STOP:
            stopped += 1
        else:
            many_at.append(i)
            blobs.append(packed_seqs(v, fmt))
    if not ones and not blobs:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), stopped
    lengths = np.fromiter((len(b) // 4 for b in blobs), dtype=np.int64, count=len(blobs))
    fp_index = np.concatenate(
        [
            np.asarray(one_at, dtype=np.int64),
            np.repeat(np.asarray(many_at, dtype=np.int64), lengths),
        ]
    )
    seqs = np.concatenate(
        [
            np.fromiter(map(int, ones), dtype=np.uint32, count=len(ones)),
            np.frombuffer(b"".join(blobs), dtype="<u4").astype(np.uint32),
        ]
    )
    if ones and blobs:  # in fingerprint order, as callers may expect
        order = np.argsort(fp_index, kind="stable")
        fp_index, seqs = fp_index[order], seqs[order]
    return fp_index, seqs, stopped


def decode_value(value: bytes, fmt: int) -> list[bytes] | None:
    """The 4-byte seqs of a stored value, None for a stop marker."""
    if value == STOP:
        return None
    packed = packed_seqs(value, fmt)
    return [packed[i : i + 4] for i in range(0, len(packed), 4)]


def encode_value(seqs: list[bytes] | None, fmt: int) -> bytes:
    """The stored value of 4-byte seqs (None: a stop marker), as ``_CODEC`` writes it."""
    if seqs is None:
        return STOP
    if fmt == 2 and len(seqs) == 1:
        return str(int.from_bytes(seqs[0], "little")).encode()
    if fmt == 2 and len(seqs) == 2:
        return b"\x01" + seqs[0] + seqs[1]
    return b"".join(seqs)


def field_width(bits: int, ident: int = IDENTITY_BITS) -> int:
    """Bytes of a field when the bucket takes ``bits`` of an ``ident``-bit identity."""
    return -(-(ident - bits) // 8)


def split_identity(
    ident: np.ndarray, bits: int, ident_bits: int = IDENTITY_BITS
) -> tuple[np.ndarray, np.ndarray]:
    shift = np.uint64(ident_bits - bits)
    buckets = (ident >> shift).astype(np.int64)
    fields = ident & ((np.uint64(1) << shift) - np.uint64(1))
    return buckets, fields


def pack_fields(fields: np.ndarray, width: int) -> np.ndarray:
    """uint64 fields -> rows of their last ``width`` big-endian bytes."""
    return fields.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - width :]


def unpack_fields(rows: np.ndarray) -> np.ndarray:
    full = np.zeros((rows.shape[0], 8), dtype=np.uint8)
    full[:, 8 - rows.shape[1] :] = rows
    return full.view(">u8").reshape(-1).astype(np.uint64)


_PAIR = np.dtype([("ident", "<u8"), ("seq", "<u4")])  # 12 bytes a posting in a spill file
PART_BITS = 8  # spill partitions by the identity's top bits (<= a spilled load's bucket bits)
IN_MEMORY_PARTS = 1_000_000  # from this many postings, load in partitions (overlapped)


def _distinct(ident: np.ndarray) -> int:
    """How many distinct values (a sort: faster than numpy's hashing unique here)."""
    s = np.sort(ident)
    return int(s.size and 1 + np.count_nonzero(s[1:] != s[:-1]))


class BulkLoader:
    """The postings of a rebuild or of an ingest into an empty index, gathered and then
    bulk loaded (``RedisInvertedIndex.load_pairs``) in bounded memory.

    ``extend`` keeps (identity, seq) pairs in arrival order, in memory up to
    ``memory_pairs``, then spills them (12 bytes a posting) into ``2**PART_BITS``
    partition files by identity range under ``folder``. ``finish`` counts the distinct
    identities (exactly: each partition sorted in turn), sizes the empty index once, and
    loads one partition at a time: partitions hold whole buckets, so every bucket is
    new when it is written and takes the fast path. ``take_back`` removes the postings
    of given seqs again (mothers replaced meanwhile); ``close`` deletes the files."""

    def __init__(
        self, index: RedisInvertedIndex, folder: Path, *, memory_pairs: int = 4_000_000
    ) -> None:
        self.index = index
        self.folder = Path(folder)
        self.memory_pairs = memory_pairs
        self._ident: list[np.ndarray] = []
        self._seqs: list[np.ndarray] = []
        self._held = 0
        self._spilled = False
        self.seqs: list[int] = []  # every mother gathered, in arrival order
        self.pairs = 0
        self.distinct = 0  # identities loaded (known after finish)
        self._last: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.uint64), np.zeros(0, np.uint32))

    def extend(self, items: Iterable[tuple[int, np.ndarray]]) -> None:
        for seq, fps in items:
            fps = np.asarray(fps, dtype=np.uint64)
            self.seqs.append(int(seq))
            if not fps.size:
                continue
            self._ident.append(self.index.identities(fps))
            self._seqs.append(np.full(fps.size, seq, dtype=np.uint32))
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
        self, ident: np.ndarray, seqs: np.ndarray
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(partition, its identities, its seqs), arrival order kept within each."""
        part = (ident >> np.uint64(IDENTITY_BITS - PART_BITS)).astype(np.int64)
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange((1 << PART_BITS) + 1)).tolist()
        for p in range(1 << PART_BITS):
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
        first to reshard it if these fields would overfill its buckets."""
        if not self._spilled:
            ident, seqs = self._take()
            self._last = (ident, seqs)  # for take_back
            self.distinct = _distinct(ident)
            if grow is not None and self.distinct and not self.index.is_empty():
                grow(self.distinct)
            if ident.size < IN_MEMORY_PARTS:
                return self.index.load_pairs(ident, seqs)
            self.index.size_for(self.distinct)
            parts = ((i, s) for _, i, s in self._split(ident, seqs))
            return self._load_parts(parts, between)
        self._spill()
        self.distinct = sum(_distinct(ident) for ident, _ in self._parts())
        if grow is not None and not self.index.is_empty():
            grow(self.distinct)
        self.index.size_for(self.distinct)
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
                pending.append(pool.submit(self.index.load_pairs, ident, seqs, size=False))
                while len(pending) >= 2:
                    new += pending.popleft().result()
                    if between is not None:
                        between()
            while pending:
                new += pending.popleft().result()
        return new

    def take_back(self, seqs: set[int]) -> int:
        """Remove the gathered postings of ``seqs`` from the index (after ``finish``);
        how many there were."""
        if not seqs:
            return 0
        want = np.fromiter(seqs, dtype=np.uint32, count=len(seqs))
        parts = self._parts() if self._spilled else iter([self._last])
        gone = 0
        for ident, got in parts:
            keep = np.isin(got, want)
            if keep.any():
                gone += self.index.remove_pairs(ident[keep], got[keep])
        return gone

    def close(self) -> None:
        self._ident, self._seqs = [], []
        self._last = (self._last[0][:0], self._last[1][:0])
        shutil.rmtree(self.folder, ignore_errors=True)
