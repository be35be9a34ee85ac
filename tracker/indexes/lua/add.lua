-- Redis Cluster add: one bucket (KEYS[1]) a call. ARGV[3] packs the bucket's postings as
-- records of (field, 4-byte seq), ARGV[2] the field's width: one argument instead of two
-- per posting keeps client packing cheap. One HMGET reads every touched field and one
-- HSET writes every changed one, so the Lua loop does no Redis call per posting (the
-- loop per posting was the ingest wall). Returns {new postings, new fields}.
--! include codec.lua
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
