-- The whole query in one call, keys named inside the script: packing ~2,000 key names
-- and arguments in redis-py cost more than the lookups themselves. ARGV: the layout the
-- client assumed (a reshard since is answered with the stored one, and the client
-- retries), the key prefix, the field width, then the query packed as records of
-- (little-endian uint32 bucket, field). KEYS: the layout hash, the set of tail segments
-- (tracker/indexes/tail.py), which is answered too. Single server only (its bucket keys
-- are undeclared); on Redis Cluster lookups are pipelined HGETs routed per bucket.
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
return {ARGV[1], out, redis.call('SMEMBERS', KEYS[2])}
