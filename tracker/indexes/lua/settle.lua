-- Single server bulk load: each new bucket is written by a plain HSET into a key of its
-- own ({prefix}:bt{token}:{bucket}, only this load writes it; the client packs the
-- commands itself, no Lua per field), then this script moves it in place: RENAMENX when
-- the bucket does not exist (O(1)), else its fields merged as adds would merge them and
-- the temporary key deleted. Guarded like add_many.lua ({-1}: the layout changed, {-2}:
-- a reshard moves the buckets: the client deletes its keys and redoes the load).
-- ARGV: layout, stop_df, temporary key prefix, key prefix, records (uint32 LE bucket,
-- postings, fields), the format. The field count is raised in the same call.
local stored = redis.call('HGET', KEYS[1], 'layout')
if stored and stored ~= ARGV[1] then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {-2, 0} end
local stop_df = tonumber(ARGV[2])
local tmp = ARGV[3]
local prefix = ARGV[4]
local hdr = ARGV[5]
--! include codec.lua
--! include fill_core.lua
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
