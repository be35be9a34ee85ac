-- The single-server add: many buckets in one call, keys named in the script, so the
-- client packs one argument per ~32,000 postings instead of one call per bucket (at
-- 2**17 buckets a batch touched every bucket with ~5 postings each: redis-py's packing
-- and Redis' per-call cost were the ingest wall). KEYS[1] is the layout: writes made
-- with a stale layout (a reshard since) are refused ({-1}), and so are writes while a
-- reshard moves the buckets (KEYS[2] exists: {-2}); the client waits and redoes them.
-- ARGV: layout, stop_df, field width, key prefix, records (uint32 LE bucket, field,
-- seq) sorted by bucket, the format.
--! include codec.lua
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
