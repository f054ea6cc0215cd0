-- gobblin.json: kingest's JSON codec, in C in the engine (engine/json.c and lua_bridge.c), for records.
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
-- What a decoded value was is kept in its tables' metatables, so that encode writes it back as it came: every
-- decoded array has json.array_mt (so [] stays [], as lua-cjson's decode_array_with_array_mt does), every decoded
-- object the metatable of its keys in the document's order, json.order(keys) (json.object_mt for {}). encode
-- writes an object's keys in that order, then any key a script added, sorted byte-wise (a number key by its
-- text); a key a script removed is left out. The metatables are shared (one per list of keys) and are not to be
-- changed; a table a script makes can use them too:
--
--   setmetatable({}, json.array_mt)                 -- written as [] (and as an array when it has items)
--   setmetatable({}, json.object_mt)                -- written as {} (its keys sorted)
--   setmetatable(t, json.order({ "id", "name" }))   -- id, then name, then any other key sorted
--   t.tags = json.empty_array                       -- a value written as []
--   json.keys(t)                                    -- t's keys in the order encode writes them
--
-- encode writes any other table as before: a table whose keys are the integers 1..n as an array (holes as null;
-- a table too sparse for that is an object), any other table as an object (number keys as strings, in the
-- table's own order, lua_next's), an empty table as {}; strings as they are (escaping '"', '\' and control
-- characters), booleans, json.null and nil as null. NaN, infinities, functions and other userdata are errors, as
-- are tables nested deeper than 1000 (a table that holds itself). A table with json.array_mt that has keys other
-- than 1..n is written by those rules too (as an object), so that no key is lost.
--
-- The markers are fields of the metatable: __jsontype ("array" or "object"), __jsonorder (an object's keys written
-- first) and __jsonavro, read when encode first meets the metatable. Values decoded from Avro (gobblin.avro) carry
-- them: a record is an object of every field of its schema, in the schema's order (a nil field as null), an array
-- an array, a map an object (keys sorted); __jsonavro = { fields = { name = kind }, items = kind } says how their
-- strings are written: "bytes" (bytes and fixed, as Avro's JSON encoding writes them: each byte the code point
-- U+0000-U+00FF), a number S (a decimal of scale S: its bytes as an exact JSON number), "mixed" (a union of
-- string and bytes: text when it is UTF-8, else bytes); and NaN and infinities in them are the strings "NaN",
-- "Infinity", "-Infinity".
--
-- lua-cjson (require("cjson")) does not read these markers: cjson.encode writes an empty decoded array as {} and
-- keys in lua_next's order.
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

local M = { null = core.null, empty_array = core.empty_array, array_mt = core.array_mt, object_mt = core.object_mt }

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

-- order(keys): the metatable of objects whose members encode writes in the order of KEYS (an array of distinct
-- strings or numbers), then any other member sorted; the same table for the same list, and the one decoded objects
-- with those keys have.
M.order = core.order

local getmetatable, rawget, next, tostring, sort = getmetatable, rawget, next, tostring, table.sort

local function by_text(a, b) return tostring(a) < tostring(b) end

-- keys(t): the keys of table T in the order encode writes them as an object's members: for a table marked as an
-- object, those of its order that T has, then the others sorted; for any other table, lua_next's order.
function M.keys(t)
  if type(t) ~= "table" then error("gobblin.json.keys expects a table, got " .. type(t), 2) end
  local mt = getmetatable(t)
  local keys, n = {}, 0
  if type(mt) ~= "table" or rawget(mt, "__jsontype") ~= "object" then
    for k in next, t do
      n = n + 1
      keys[n] = k
    end
    return keys
  end
  local order, seen = rawget(mt, "__jsonorder"), {}
  if order then
    for i = 1, #order do
      local k = order[i]
      seen[k] = true
      if rawget(t, k) ~= nil then
        n = n + 1
        keys[n] = k
      end
    end
  end
  local rest = {}
  for k in next, t do
    if not seen[k] then rest[#rest + 1] = k end
  end
  sort(rest, by_text)
  for i = 1, #rest do keys[n + i] = rest[i] end
  return keys
end

-- encode_staged(value [, closed]): encodes VALUE for the next C.kg_ffi_json_emit(batch) of this thread, which hands
-- the text to the writer without a Lua string made of it (gobblin.runtime writes tables so). CLOSED: VALUE is a
-- table holding no key but those of its metatable's __jsonorder, so that encode does not look for others (a key
-- that is there all the same is not written).
M.encode_staged = core.encode_staged

return M
