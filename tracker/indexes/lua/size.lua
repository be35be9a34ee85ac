-- Sizes an empty index (no field counted) for a bulk load: sets the layout unless a
-- writer counted fields meanwhile (single server; a load raises the count in its call).
if tonumber(redis.call('HGET', KEYS[1], 'fields') or '0') > 0 then return 0 end
redis.call('HSET', KEYS[1], 'layout', ARGV[1])
return 1
