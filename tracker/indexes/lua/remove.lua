-- Remove postings from one bucket (KEYS[1]). ARGV: field width, records (field, 4-byte
-- seq), the format. Returns {postings removed, fields removed}.
--! include codec.lua
local fw = tonumber(ARGV[1])
local rw = fw + 4
local blob = ARGV[2]
local n, nf = 0, 0
for i = 1, #blob, rw do
  local f = string.sub(blob, i, i + fw - 1)
  local s = string.sub(blob, i + fw, i + rw - 1)
  local v = redis.call('HGET', KEYS[1], f)
  local cur = v and decode(v)
  if cur then
    local kept = {}
    for _, p in ipairs(cur) do
      if p ~= s then kept[#kept + 1] = p else n = n + 1 end
    end
    if #kept == 0 then redis.call('HDEL', KEYS[1], f); nf = nf + 1
    elseif #kept < #cur then redis.call('HSET', KEYS[1], f, encode(kept)) end
  end
end
return {n, nf}
