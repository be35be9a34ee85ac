-- A snapshot taken at version ARGV[1] (epoch/n) in layout ARGV[2] becomes the overlay's
-- base, its dirty bitmap emptied, only if no write came since (the version is still
-- ARGV[1]): 1, else 0 (the snapshot is taken again). KEYS: the version hash, the dirty
-- bitmap.
local v = redis.call('HMGET', KEYS[1], 'epoch', 'n')
if not v[1] or (v[1] .. '/' .. (v[2] or '0')) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'base', ARGV[1], 'base_layout', ARGV[2])
redis.call('DEL', KEYS[2])
return 1
