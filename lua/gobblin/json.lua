-- gobblin.json: kingest's JSON codec, in C in the engine (engine/jsoncodec.c), for records.
--
--   local json = require("gobblin.json")
--   local t = json.decode(rec)        -- a record view's payload, read in place (nil for a null payload)
--   local t = json.decode('{"a":1}')  -- or a string
--   local s = json.encode(t)
--
-- decode takes RFC 8259 JSON and raises "invalid JSON at byte N: ..." for anything else. Objects become tables,
-- arrays become sequences, JSON null becomes json.null (the same value as cjson.null), so a key whose value is
-- null is kept. Numbers are exact: an integer beyond 2^53 that fits 64 bits becomes an int64_t cdata
-- (uint64_t above 2^63-1), which encode writes back digit for digit; others are doubles, and encode writes a
-- double with the fewest digits that read back as exactly it. Nesting is limited to max_depth (default 1000).
--
-- encode writes a table whose keys are the integers 1..n as an array (holes as null; a table too sparse for
-- that is an object), any other table as an object (number keys as strings, in the table's own order), an empty
-- table as {}; strings as they are (escaping '"', '\' and control characters), booleans, json.null and nil as
-- null. NaN, infinities, functions and other userdata are errors, as are tables nested deeper than 1000 (a table
-- that holds itself).
local ffi = require("ffi")
local gffi = require("gobblin.ffi")
local core = require("gobblin.json.core")

local C = gffi.C
local record_t = gffi.record_t
local istype, type, error = ffi.istype, type, error
local cdecode, cencode = core.decode, core.encode

local int64_t, uint64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local TWO32 = 4294967296ULL

-- A 64-bit integer from its high and low 32 bits (C cannot make cdata).
core.hooks.int64 = function(hi, lo, unsigned)
  local v = uint64_t(hi) * TWO32 + lo
  if unsigned then return v end
  return ffi.cast(int64_t, v)
end

-- The JSON text of a cdata value: a 64-bit integer's digits; nil for any other cdata.
core.hooks.cdata = function(v)
  if istype(int64_t, v) or istype(uint64_t, v) then
    return (tostring(v):gsub("U?LL$", ""))
  end
  return nil
end

local M = { null = core.null }

-- The value of the JSON in X: a string, or a record view's payload (nil when the payload is null).
function M.decode(x, max_depth)
  if type(x) == "string" then return cdecode(x, max_depth) end
  if istype(record_t, x) then
    if x.value_ptr == nil then return nil end
    C.kg_ffi_json_source(x.value_ptr, x.value_len)
    return cdecode(nil, max_depth)
  end
  error("gobblin.json.decode expects a string or a record view, got " .. type(x), 2)
end

-- The JSON text of VALUE.
M.encode = cencode

-- encode_staged(value): encodes VALUE for the next C.kg_ffi_json_emit(batch) of this thread, which hands the text
-- to the writer without a Lua string made of it (gobblin.runtime writes tables so).
M.encode_staged = core.encode_staged

return M
