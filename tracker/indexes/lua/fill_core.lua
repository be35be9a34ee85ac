-- Bulk loading: each field comes with its FINAL value (the load's seqs of that field,
-- encoded as codec.lua writes them, a stop marker past stop_df), grouped by bucket.
-- fill(key, fields, values) writes a bucket that does not exist yet whole by HSETs of up
-- to 2,000 fields (no HMGET, no merge), and merges into a bucket that exists (another
-- writer came first, or the index was not empty) field by field exactly as an add of
-- the same seqs would. n counts the postings a value holds (a stop marker: stop_df + 1,
-- as add counts up to the stop). Needs codec.lua and a local stop_df before it.
local n, nf = 0, 0
local function nseq(v)
  if is_stop(v) then return stop_df + 1 end
  if FMT == 2 and #v < 12 then
    if #v == 9 and string.byte(v, 1) == 1 then return 2 end
    return 1
  end
  return #v / 4
end
local function fill(key, fl, vl)
  if redis.call('EXISTS', key) == 0 then
    for a = 1, #fl, 2000 do
      local out = {}
      for i = a, math.min(a + 1999, #fl) do
        out[#out + 1] = fl[i]; out[#out + 1] = vl[i]
        n = n + nseq(vl[i])
      end
      redis.call('HSET', key, unpack(out))
    end
    nf = nf + #fl
    return
  end
  for a = 1, #fl, 2000 do
    local part = {}
    for i = a, math.min(a + 1999, #fl) do part[#part + 1] = fl[i] end
    local vals = redis.call('HMGET', key, unpack(part))
    local out = {}
    for j = 1, #part do
      local v, w = vals[j], vl[a + j - 1]
      if not v then
        nf = nf + 1; n = n + nseq(w)
        out[#out + 1] = part[j]; out[#out + 1] = w
      elseif is_stop(w) then
        -- More than stop_df seqs came: with any stored ones, still more. The holders
        -- kept: the stored ones first, then the load's (as adds in that order keep them).
        local cur = decode(v)
        if cur then
          n = n + stop_df + 1 - #cur
          for k = 2, #w, 4 do
            local s = string.sub(w, k, k + 3)
            local found = false
            for _, p in ipairs(cur) do
              if p == s then found = true; break end
            end
            if not found then cur[#cur + 1] = s end
          end
          out[#out + 1] = part[j]; out[#out + 1] = stop_of(cur)
        end
      else
        local m, added = merge(v, decode(w), stop_df)
        n = n + added
        if m then out[#out + 1] = part[j]; out[#out + 1] = m end
      end
    end
    if #out > 0 then redis.call('HSET', key, unpack(out)) end
  end
end
