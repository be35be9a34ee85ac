-- Around every write (before and after it): the buckets it touches marked dirty for the
-- local snapshot the overlay counts from (tracker/indexes/snapshot.py), and the version
-- raised. KEYS: the version hash, the dirty bitmap (same hash slot). ARGV: the layout the
-- buckets were computed in, the buckets as a bitmap (SETBIT order; '' when the write may
-- touch any bucket: a bulk load, a reshard), a new epoch (used if there is none).
-- A write in another layout than the overlay's, or of unknown buckets, ends the overlay:
-- lookups then use a snapshot only at its exact version, or Redis.
local base_layout = redis.call('HGET', KEYS[1], 'base_layout')
if base_layout then
  local add = ARGV[2]
  if add == '' or ARGV[1] ~= base_layout then
    redis.call('HDEL', KEYS[1], 'base', 'base_layout')
    redis.call('DEL', KEYS[2])
  else
    local cur = redis.call('GET', KEYS[2]) or ''
    local i = string.find(add, '[^%z]')
    while i do
      local a = string.byte(add, i)
      local c = string.byte(cur, i) or 0
      local o = bit.bor(a, c)
      if o ~= c then redis.call('SETRANGE', KEYS[2], i - 1, string.char(o)) end
      i = string.find(add, '[^%z]', i + 1)
    end
  end
end
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[3])
return redis.call('HINCRBY', KEYS[1], 'n', 1)
