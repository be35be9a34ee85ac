-- Whole-bucket appends (tracker/indexes/appends.py): each bucket of KEYS serialized
-- (false for a missing one), as one reply. A DUMP a bucket made the client read one
-- reply a bucket; the client is what an add waits on now, Redis has time to spare.
local out = {}
for i = 1, #KEYS do out[i] = redis.call('DUMP', KEYS[i]) end
return out
