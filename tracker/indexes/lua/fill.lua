-- Redis Cluster bulk load: one bucket (its declared key) a call. ARGV: stop_df, field
-- width, records (field, value length byte, value), the format.
local stop_df = tonumber(ARGV[1])
local fw = tonumber(ARGV[2])
local blob = ARGV[3]
--! include codec.lua
--! include fill_core.lua
local i, len = 1, #blob
local fl, vl = {}, {}
while i <= len do
  local vn = string.byte(blob, i + fw)
  fl[#fl + 1] = string.sub(blob, i, i + fw - 1)
  vl[#vl + 1] = string.sub(blob, i + fw + 1, i + fw + vn)
  i = i + fw + 1 + vn
end
fill(KEYS[1], fl, vl)
return {n, nf}
