-- Whole-bucket appends (tracker/indexes/appends.py): each bucket of KEYS replaced by
-- its new serialized form ARGV[i]. Sent inside MULTI after a WATCH of the buckets, so
-- it runs only if none changed since it was read; one reply, not one a bucket.
for i = 1, #KEYS do redis.call('RESTORE', KEYS[i], 0, ARGV[i], 'REPLACE') end
return #KEYS
