-- The value codec (format 1 and 2), shared by every bucket script; its Python twin is
-- tracker/indexes/codec.py (tests/tracker/indexes/test_index_codec.py: both agree).
--
-- Stored values (the seqs of a field's mothers). Format 1 (indexes written before format
-- 2): the packed little-endian uint32 seqs. Format 2: a single seq (most fields) as its
-- decimal digits, which Redis keeps in a listpack as an integer (2-5 bytes instead of 6:
-- ~2 bytes a posting less); two seqs as \1 and the 8 packed bytes (a marker, so it is
-- never read as 8 digits); three or more (>= 12 bytes, longer than any decimal seq)
-- packed. A stop marker is one \0 byte in both, then the packed seqs of its first SAMPLE
-- (4) holders (a length never a multiple of 4). 16 seqs stay within Redis' 64-byte
-- compact values. Every script ends its ARGV with the format.
local FMT = tonumber(ARGV[#ARGV])
local SAMPLE = 4
local function is_stop(v)
  return string.byte(v, 1) == 0 and #v % 4 == 1
end
-- The stop marker of holders t (4-byte seqs, in the order they came): the first SAMPLE.
local function stop_of(t)
  return '\0' .. table.concat(t, '', 1, math.min(#t, SAMPLE))
end
local function decode(v)
  if is_stop(v) then return nil end
  if v == '' then return {} end
  local from = 1
  if FMT == 2 and #v < 12 then
    if #v == 9 and string.byte(v, 1) == 1 then from = 2
    else return {struct.pack('<I4', tonumber(v))} end
  end
  local t = {}
  for j = from, #v, 4 do t[#t + 1] = string.sub(v, j, j + 3) end
  return t
end
-- The stored value of one seq; memoized: a batch brings each mother's seq thousands
-- of times, and formatting it each time cost ~1 us a posting.
local singles = {}
local function one(s)
  if FMT ~= 2 then return s end
  local d = singles[s]
  if d == nil then
    d = string.format('%d', struct.unpack('<I4', s))
    singles[s] = d
  end
  return d
end
local function encode(t)
  if FMT == 2 then
    if #t == 1 then return one(t[1]) end
    if #t == 2 then return '\1' .. t[1] .. t[2] end
  end
  return table.concat(t)
end
-- The stored value v ('' for a new field) with the 4-byte seqs t (a string or a table)
-- added: (the new value or nil when nothing changed, how many postings are new).
local function merge(v, t, stop_df)
  local cur = decode(v)
  if cur == nil then return nil, 0 end
  if type(t) == 'string' then t = {t} end
  local added = 0
  for _, s in ipairs(t) do
    local found = false
    for _, p in ipairs(cur) do
      if p == s then found = true; break end
    end
    if not found then
      added = added + 1
      if #cur + 1 > stop_df then return stop_of(cur), added end
      cur[#cur + 1] = s
    end
  end
  if added > 0 then return encode(cur), added end
  return nil, 0
end
