-- What a lookup needs to answer from a local snapshot, read at once: the version
-- (epoch, n), the snapshot version and layout the dirty buckets count from (base,
-- base_layout), the dirty bitmap and the tail segments lookups read
-- (tracker/indexes/tail.py). KEYS: the version hash, the dirty bitmap, the tails set
-- (one hash slot).
local v = redis.call('HMGET', KEYS[1], 'epoch', 'n', 'base', 'base_layout')
return {v[1] or false, v[2] or false, v[3] or false, v[4] or false,
        redis.call('GET', KEYS[2]) or '', redis.call('SMEMBERS', KEYS[3])}
