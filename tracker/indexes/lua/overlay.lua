-- What a lookup needs to answer from a local snapshot, read at once: the version
-- (epoch, n), the snapshot version and layout the dirty buckets count from (base,
-- base_layout) and the dirty bitmap. KEYS: the version hash, the dirty bitmap.
local v = redis.call('HMGET', KEYS[1], 'epoch', 'n', 'base', 'base_layout')
return {v[1] or false, v[2] or false, v[3] or false, v[4] or false,
        redis.call('GET', KEYS[2]) or ''}
