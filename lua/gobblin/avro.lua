-- gobblin.avro: the Avro binary encoding (Avro spec 1.11, "Binary Encoding" and "Schema Resolution") in
-- pure LuaJIT. avro.schema(text) parses a schema; its decoder and encoder are Lua source generated for the
-- schema (one function per record type, and per writer/reader pair of record types when resolving),
-- compiled with loadstring, so that a record is read or written by straight-line code the JIT compiles
-- well.
--
--   local avro = require("gobblin.avro")
--   local s = avro.schema('{"type":"record","name":"R","fields":[{"name":"id","type":"long"}]}')
--   local bytes = s:encode({ id = 7 })       -- "\14"
--   local value = s:decode(bytes)            -- { id = 7 }
--   local read = s:decoder(newer)            -- function(ptr, len) -> value, resolved to schema NEWER
--   local write = s:encoder()                -- function(value) -> ptr, len (an internal buffer)
--
-- Values (Avro type -> Lua):
--   null             nil; inside an array or a map, cjson.null (so that counts and keys survive). The
--                    encoder takes nil and cjson.null for null.
--   boolean          boolean
--   int, long        number. A long outside +-2^53 decodes to an int64_t cdata. The encoder takes whole
--                    numbers in range, and for long (or an int in range) int64_t/uint64_t cdata.
--   float, double    number (a float is rounded to single precision on the way out)
--   string, bytes    string (strings are not checked to be UTF-8)
--   fixed            string of exactly the fixed's size
--   enum             its symbol, a string
--   array            array table, 1-based
--   map              table string -> value
--   record           table keyed by field name; the encoder ignores keys that are not fields
--   union            the chosen branch's value, untagged. The encoder picks the first branch, in the union's
--                    order, that takes the value: nil/cjson.null -> null; a boolean -> boolean; a number ->
--                    int if whole and in int range, long if whole, float, double; a string -> string, bytes,
--                    enum (if one of its symbols), fixed (if of its size); a table -> array when the union has
--                    one and the table is empty or has [1], else the first record or map branch (else the
--                    array); an int64 cdata -> long (else double, float, int).
-- Records, arrays and maps carry gobblin.json's markers in their metatables (shared per schema node): a record
-- is an object of its fields in the schema's order, an array an array, a map an object, and their __jsonavro
-- says how gobblin.json writes their bytes and fixed (Avro's JSON encoding), decimals (exact numbers) and NaN and
-- infinities (strings); see gobblin.json. The encoder takes a table marked as an array for a union's array
-- branch, one marked as an object for its record or map branch.
-- A record field the encoder finds nil is written as null when its type takes null, else as the field's
-- default, else it is an error naming the field. Schema defaults are converted to the values above (bytes
-- and fixed defaults are JSON strings of code points 0-255; a union's default is of its first branch).
--
-- Errors are raised with error(message, 0): a schema error starts "invalid Avro schema: ", a decoding error
-- names the problem and the place ("... at field user.tags[2]"), an encoding error the field ("field
-- 'user.age': expected int, got string (\"abc\")"). The decoder never reads outside [ptr, ptr + len), and
-- checks lengths and counts against the bytes left before allocating. When a datum fails, the fast code
-- hands over to a second build of the same code that tracks the field path, which runs the datum again and
-- raises the error with the path; good datums pay nothing for paths. After a decoder (or the making of one)
-- raised, avro.failure says what failed: "resolution" (the writer's schema does not resolve to the reader's, found
-- when the decoder is made, or a union branch or an enum symbol of a datum that the reader lacks) or "decoding" (the
-- datum's bytes).
local ffi = require("ffi")
local bit = require("bit")
local cjson = require("cjson")
local tnew = require("table.new")

local type, pairs, ipairs, next, tostring, tonumber, error, pcall =
  type, pairs, ipairs, next, tostring, tonumber, error, pcall
local floor = math.floor
local concat, sformat = table.concat, string.format
local band, bor, bxor, lshift, rshift, arshift = bit.band, bit.bor, bit.bxor, bit.lshift, bit.rshift, bit.arshift
local cast, istype, ffi_string, ffi_copy = ffi.cast, ffi.istype, ffi.string, ffi.copy

if not ffi.abi("le") then error("gobblin.avro reads floats as little-endian: this host is big-endian", 0) end

local M = {}
local NULL = cjson.null

local U8P = ffi.typeof("const uint8_t *")
local U8PW = ffi.typeof("uint8_t *")
local FP = ffi.typeof("const float *")
local DP = ffi.typeof("const double *")
local FPW = ffi.typeof("float *")
local DPW = ffi.typeof("double *")
local I64 = ffi.typeof("int64_t")
local U64 = ffi.typeof("uint64_t")
local U8A = ffi.typeof("uint8_t[?]")
local F32BOX = ffi.new("float[1]")
local I64_MAX = 0x7fffffffffffffffULL

local json = cjson.new()
json.decode_max_depth(1000)

------------------------------------------------------------------------------------------------------------
-- Schema parsing

local PRIMITIVE = { null = true, boolean = true, int = true, long = true, float = true, double = true,
  bytes = true, string = true }

local function bad(fmt, ...) error("invalid Avro schema: " .. sformat(fmt, ...), 0) end

local function valid_name(s) return type(s) == "string" and s:find("^[A-Za-z_][A-Za-z0-9_]*$") ~= nil end

local function valid_fullname(s)
  if type(s) ~= "string" or s == "" then return false end
  for part in (s .. "."):gmatch("([^.]*)%.") do
    if not valid_name(part) then return false end
  end
  return true
end

local function unqualified(name) return (name:match("([^.]*)$")) end

-- A short text of a value for messages.
local function num_text(v)
  if v % 1 == 0 and v > -1e21 and v < 1e21 then return sformat("%.0f", v) end
  return tostring(v)
end
local function quote(s)
  if #s > 60 then s = s:sub(1, 60) .. "..." end
  return (sformat("%q", s):gsub("\\\n", "\\n"))
end
local function repr(v)
  local t = type(v)
  if v == NULL then return "null" end
  if t == "string" then return "string (" .. quote(v) .. ")" end
  if t == "number" then return "number (" .. num_text(v) .. ")" end
  if t == "boolean" or t == "cdata" then return t .. " (" .. tostring(v) .. ")" end
  return t
end

-- The name of node N's type in messages: int, record R, ["null","int"].
local function type_text(n)
  if n.type == "union" then
    local parts = {}
    for k, b in ipairs(n.branches) do parts[k] = '"' .. (b.name or b.type) .. '"' end
    return "[" .. concat(parts, ",") .. "]"
  end
  if n.name then return n.type .. " " .. n.name end
  return n.type
end

local function takes_null(n)
  if n.type == "null" then return true end
  if n.type == "union" then
    for _, b in ipairs(n.branches) do if b.type == "null" then return true end end
  end
  return false
end

-- A JSON string of code points 0-255 (how bytes and fixed defaults are written) as bytes.
local function code_points_to_bytes(s)
  if not s:find("[\128-\255]") then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:byte(i)
    if c < 128 then
      out[#out + 1] = string.char(c)
      i = i + 1
    elseif (c == 0xC2 or c == 0xC3) and i < n then
      out[#out + 1] = string.char((c - 0xC0) * 64 + s:byte(i + 1) - 128)
      i = i + 2
    else
      error("a code point above 255 in a bytes default", 0)
    end
  end
  return concat(out)
end

local function deep_copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = deep_copy(x) end
  return setmetatable(out, getmetatable(v))
end

-- The scale of node N when it is a decimal by the specification's rules (bytes or fixed with logicalType
-- decimal, a precision from 1, a scale from 0 to the precision, and for a fixed a precision its size holds);
-- nil otherwise, when the specification has the logical type ignored.
local function decimal_scale(n)
  if n.logicalType ~= "decimal" or (n.type ~= "bytes" and n.type ~= "fixed") then return nil end
  local p, sc = n.precision, n.scale
  if sc == nil then sc = 0 end
  if type(p) ~= "number" or p % 1 ~= 0 or p < 1 then return nil end
  if type(sc) ~= "number" or sc % 1 ~= 0 or sc < 0 or sc > p then return nil end
  if n.type == "fixed" and (n.size < 1 or p > floor((8 * n.size - 1) * math.log10(2))) then return nil end
  return sc
end

-- How gobblin.json writes the strings of node N (its __jsonavro kind): "bytes" (bytes and fixed, as Avro's JSON
-- encoding does), a decimal's scale, or nil for text (string, enum). For a union, the kind of its branches that
-- give strings; "mixed" when they differ (a string cannot then be told from bytes: text when it is UTF-8, else
-- bytes, so that the JSON stays valid).
local function string_kind(n)
  local t = n.type
  if t == "string" or t == "enum" then return "text" end
  if t == "bytes" or t == "fixed" then return decimal_scale(n) or "bytes" end
  return nil
end
local function json_kind(n)
  local k
  if n.type == "union" then
    for _, b in ipairs(n.branches) do
      local bk = string_kind(b)
      if bk ~= nil then
        if k == nil then k = bk elseif k ~= bk then return "mixed" end
      end
    end
  else
    k = string_kind(n)
  end
  if k == "text" then return nil end
  return k
end

-- The metatable of the Lua values of node N (a record, array or map), for gobblin.json: what they are, a
-- record's fields in the schema's order, and how their bytes, fixed and decimals are written.
local function json_mt(n)
  local mt = n.json_mt
  if mt then return mt end
  if n.type == "record" then
    local order, kinds = {}, {}
    for k, f in ipairs(n.fields) do
      order[k] = f.name
      kinds[f.name] = json_kind(f.type)
    end
    mt = { __jsontype = "object", __jsonorder = order, __jsonavro = { fields = kinds } }
  elseif n.type == "array" then
    mt = { __jsontype = "array", __jsonavro = { items = json_kind(n.items) } }
  else
    mt = { __jsontype = "object", __jsonavro = { items = json_kind(n.values) } }
  end
  n.json_mt = mt
  return mt
end

-- The Lua value of JSON default V for node N (see the header), or an error(msg, 0). A field's default for
-- a union is of the union's first branch; a union's value inside a default (NESTED) may be of any branch.
local function convert_default(n, v, nested)
  local t = n.type
  local function expected() error("expected " .. type_text(n) .. ", got " .. repr(v), 0) end
  if t == "null" then
    if v ~= NULL then expected() end
    return nil
  elseif t == "boolean" then
    if type(v) ~= "boolean" then expected() end
    return v
  elseif t == "int" or t == "long" then
    if type(v) ~= "number" then expected() end
    if v % 1 ~= 0 then error(num_text(v) .. " is not a whole number", 0) end
    if t == "int" and (v < -2147483648 or v > 2147483647) then error(num_text(v) .. " does not fit an int", 0) end
    return v
  elseif t == "float" or t == "double" then
    if type(v) ~= "number" then expected() end
    return v
  elseif t == "string" then
    if type(v) ~= "string" then expected() end
    return v
  elseif t == "bytes" or t == "fixed" then
    if type(v) ~= "string" then expected() end
    local b = code_points_to_bytes(v)
    if t == "fixed" and #b ~= n.size then error(#b .. " bytes, the fixed " .. n.name .. " has " .. n.size, 0) end
    return b
  elseif t == "enum" then
    if type(v) ~= "string" or not n.index[v] then error(repr(v) .. " is not a symbol of enum " .. n.name, 0) end
    return v
  elseif t == "array" then
    if type(v) ~= "table" or (v[1] == nil and next(v) ~= nil) then expected() end
    local out = {}
    for k = 1, #v do
      local x = convert_default(n.items, v[k], true)
      if x == nil then x = NULL end
      out[k] = x
    end
    return setmetatable(out, json_mt(n))
  elseif t == "map" then
    if type(v) ~= "table" then expected() end
    local out = {}
    for k, x in pairs(v) do
      if type(k) ~= "string" then expected() end
      x = convert_default(n.values, x, true)
      if x == nil then x = NULL end
      out[k] = x
    end
    return setmetatable(out, json_mt(n))
  elseif t == "record" then
    if type(v) ~= "table" then expected() end
    local out = {}
    for _, f in ipairs(n.fields) do
      local x = v[f.name]
      if x == nil then
        if f.has_default then out[f.name] = deep_copy(f.default)
        elseif not takes_null(f.type) then error("field '" .. f.name .. "' missing", 0) end
      else
        out[f.name] = convert_default(f.type, x, true)
      end
    end
    return setmetatable(out, json_mt(n))
  elseif t == "union" then
    if nested then
      for k = 2, #n.branches do
        local ok, x = pcall(convert_default, n.branches[k - 1], v, true)
        if ok then return x end
      end
      return convert_default(n.branches[#n.branches], v, true)
    end
    return convert_default(n.branches[1], v, nested)
  end
  error("no default for type " .. tostring(t), 0)
end

local node_ids = 0
local function new_node(t)
  node_ids = node_ids + 1
  t.id = node_ids
  return t
end

-- Full name of NAME given its NAMESPACE attribute and the enclosing namespace NS; and its namespace.
local function full_name(name, namespace, ns)
  if name:find(".", 1, true) then return name, name:match("^(.*)%.") end
  if namespace == nil or namespace == NULL then namespace = ns end
  if namespace == nil or namespace == "" then return name, nil end
  return namespace .. "." .. name, namespace
end

local function lookup(names, ref, ns)
  if ref:find(".", 1, true) then return names[ref] end
  if ns then
    local n = names[ns .. "." .. ref]
    if n then return n end
  end
  return names[ref]
end

local parse

-- Registers named node N (type KIND) from JSON object J in the enclosing namespace NS.
local function define(P, n, j, ns, kind, where)
  local name = j.name
  if not valid_fullname(name) then
    bad("%s%s has no valid name (got %s)", kind, where, repr(name))
  end
  local namespace = j.namespace
  if namespace ~= nil and namespace ~= NULL and namespace ~= "" and not valid_fullname(namespace) then
    bad("%s '%s' has an invalid namespace %s", kind, name, repr(namespace))
  end
  local full, own_ns = full_name(name, namespace, ns)
  if PRIMITIVE[unqualified(full)] and not full:find(".", 1, true) then
    bad("%s name '%s' is a primitive type's name", kind, full)
  end
  if P.names[full] then bad("named type '%s' is defined twice", full) end
  n.name, n.namespace = full, own_ns
  local aliases = j.aliases
  if aliases ~= nil then
    if type(aliases) ~= "table" then bad("aliases of %s '%s' are not an array", kind, full) end
    n.aliases = {}
    for k, a in ipairs(aliases) do
      if not valid_fullname(a) then bad("alias %s of %s '%s' is not a name", repr(a), kind, full) end
      n.aliases[k] = (full_name(a, nil, own_ns))
    end
  end
  P.names[full] = n
  return own_ns
end

local function parse_record(P, j, ns, where)
  local n = new_node({ type = "record", fields = {}, byname = {} })
  if j.type == "error" then n.is_error = true end
  local rns = define(P, n, j, ns, "record", where)
  local fs = j.fields
  if type(fs) ~= "table" or (fs[1] == nil and next(fs) ~= nil) then
    bad("record '%s' has no fields array", n.name)
  end
  for k = 1, #fs do
    local f = fs[k]
    if type(f) ~= "table" then bad("field %d of record '%s' is not an object", k, n.name) end
    if not valid_name(f.name) then bad("field %d of record '%s' has no valid name (got %s)", k, n.name, repr(f.name)) end
    if n.byname[f.name] then bad("duplicate field '%s' in record '%s'", f.name, n.name) end
    if f.type == nil or f.type == NULL then bad("field '%s' of record '%s' has no type", f.name, n.name) end
    local ft = parse(P, f.type, rns, sformat(" (field '%s' of record '%s')", f.name, n.name))
    local field = { name = f.name, type = ft, index = k, json_default = f.default }
    if f.aliases ~= nil then
      if type(f.aliases) ~= "table" then bad("aliases of field '%s' of record '%s' are not an array", f.name, n.name) end
      for _, a in ipairs(f.aliases) do
        if not valid_name(a) then bad("alias %s of field '%s' of record '%s' is not a name", repr(a), f.name, n.name) end
      end
      field.aliases = f.aliases
    end
    n.fields[k] = field
    n.byname[f.name] = field
  end
  P.records[#P.records + 1] = n
  return n
end

local function parse_enum(P, j, ns, where)
  local n = new_node({ type = "enum", index = {} })
  define(P, n, j, ns, "enum", where)
  local syms = j.symbols
  if type(syms) ~= "table" or (syms[1] == nil and next(syms) ~= nil) then bad("enum '%s' has no symbols array", n.name) end
  n.symbols = {}
  for k = 1, #syms do
    local s = syms[k]
    if not valid_name(s) then bad("enum '%s' symbol %s is not a name", n.name, repr(s)) end
    if n.index[s] then bad("enum '%s' has symbol '%s' twice", n.name, s) end
    n.symbols[k] = s
    n.index[s] = k - 1
  end
  if j.default ~= nil then
    if type(j.default) ~= "string" or not n.index[j.default] then
      bad("enum '%s' default %s is not one of its symbols", n.name, repr(j.default))
    end
    n.default = j.default
  end
  return n
end

function parse(P, j, ns, where)
  local tj = type(j)
  if tj == "string" then
    if PRIMITIVE[j] then return new_node({ type = j }) end
    local n = lookup(P.names, j, ns)
    if not n then bad("unknown named type '%s'%s", j, where) end
    return n
  end
  if tj ~= "table" then bad("a schema is a string, an object or an array, got %s%s", repr(j), where) end
  if j[1] ~= nil or next(j) == nil then
    if #j == 0 then bad("empty union%s", where) end
    local branches, seen = {}, {}
    for k = 1, #j do
      local b = parse(P, j[k], ns, where)
      if b.type == "union" then bad("a union directly inside a union%s", where) end
      local key = b.name or b.type
      if seen[key] then bad("union has two branches of type %s%s", key, where) end
      seen[key] = true
      branches[k] = b
    end
    return new_node({ type = "union", branches = branches })
  end
  local t = j.type
  if t == nil or t == NULL then bad("schema object has no type%s", where) end
  if type(t) == "table" then return parse(P, t, ns, where) end
  if type(t) ~= "string" then bad("type must be a string, got %s%s", repr(t), where) end
  local n
  if PRIMITIVE[t] then
    n = new_node({ type = t })
  elseif t == "record" or t == "error" then
    n = parse_record(P, j, ns, where)
  elseif t == "enum" then
    n = parse_enum(P, j, ns, where)
  elseif t == "array" then
    if j.items == nil or j.items == NULL then bad("array has no items%s", where) end
    n = new_node({ type = "array", items = parse(P, j.items, ns, where) })
  elseif t == "map" then
    if j.values == nil or j.values == NULL then bad("map has no values%s", where) end
    n = new_node({ type = "map", values = parse(P, j.values, ns, where) })
  elseif t == "fixed" then
    n = new_node({ type = "fixed" })
    define(P, n, j, ns, "fixed", where)
    local size = j.size
    if size == nil then bad("fixed '%s' has no size", n.name) end
    if type(size) ~= "number" or size < 0 or size % 1 ~= 0 then
      bad("fixed '%s' size %s is not a non-negative integer", n.name, repr(size))
    end
    n.size = size
  else
    -- {"type": "Name"}: a reference to a named type
    n = lookup(P.names, t, ns)
    if not n then bad("unknown named type '%s'%s", t, where) end
    return n
  end
  if j.logicalType ~= nil then
    n.logicalType, n.precision, n.scale = j.logicalType, j.precision, j.scale
  end
  return n
end

------------------------------------------------------------------------------------------------------------
-- Parsing Canonical Form (Avro spec): full names, no namespace, only type, name, fields, symbols, items,
-- values and size, in that order, no white space.

local function canon(n, seen, out)
  local t = n.type
  if PRIMITIVE[t] then out[#out + 1] = '"' .. t .. '"'; return end
  if t == "union" then
    out[#out + 1] = "["
    for k, b in ipairs(n.branches) do
      if k > 1 then out[#out + 1] = "," end
      canon(b, seen, out)
    end
    out[#out + 1] = "]"
  elseif t == "array" then
    out[#out + 1] = '{"type":"array","items":'
    canon(n.items, seen, out)
    out[#out + 1] = "}"
  elseif t == "map" then
    out[#out + 1] = '{"type":"map","values":'
    canon(n.values, seen, out)
    out[#out + 1] = "}"
  elseif seen[n] then
    out[#out + 1] = '"' .. n.name .. '"'
  else
    seen[n] = true
    out[#out + 1] = '{"name":"' .. n.name .. '","type":"' .. t .. '"'
    if t == "record" then
      out[#out + 1] = ',"fields":['
      for k, f in ipairs(n.fields) do
        if k > 1 then out[#out + 1] = "," end
        out[#out + 1] = '{"name":"' .. f.name .. '","type":'
        canon(f.type, seen, out)
        out[#out + 1] = "}"
      end
      out[#out + 1] = "]}"
    elseif t == "enum" then
      out[#out + 1] = ',"symbols":["' .. concat(n.symbols, '","') .. (#n.symbols > 0 and '"]}' or ']}')
      if #n.symbols == 0 then out[#out] = ',"symbols":[]}' end
    else
      out[#out + 1] = ',"size":' .. sformat("%d", n.size) .. "}"
    end
  end
end

------------------------------------------------------------------------------------------------------------
-- Code generation, shared by decoders and encoders. A generator G holds the functions of one build
-- (G.F, indexed by number), the helpers its code calls (G.H) and whether it tracks paths (G.traced).
-- Each generated function is a chunk of its own: its constants are locals of the chunk (the first
-- KLOCALS of them, the rest read from KT), the helpers too; only those a function uses become upvalues,
-- which keeps every function below LuaJIT's 60 upvalues.

local KLOCALS = 24
local KEYWORDS = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return then " ..
  "true until while"):gmatch("%S+") do KEYWORDS[w] = true end

-- "t.name", or 't["not a name"]'.
local function field_ref(t, name)
  if name:find("^[A-Za-z_][A-Za-z0-9_]*$") and not KEYWORDS[name] then return t .. "." .. name end
  return t .. "[" .. sformat("%q", name) .. "]"
end

local function new_unit(name)
  return { name = name, lines = {}, consts = {}, constidx = {}, n = 0 }
end

local function emit(u, s) u.lines[#u.lines + 1] = s end

-- The expression of constant V in unit U.
local function const(u, v)
  local k = u.constidx[v]
  if k == nil then
    k = #u.consts + 1
    u.consts[k] = v
    u.constidx[v] = k
  end
  if k <= KLOCALS then return "K" .. k end
  return "KT[" .. k .. "]"
end

local function tmp(u, base)
  u.n = u.n + 1
  return base .. u.n
end

local function compile(G, u, helper_names)
  local src = { "local F, KT, H = ...", "local " .. concat(helper_names, ", ") .. " = H." ..
    concat(helper_names, ", H.") }
  local nk = #u.consts
  if nk > KLOCALS then nk = KLOCALS end
  if nk > 0 then
    local ks, vs = {}, {}
    for k = 1, nk do ks[k], vs[k] = "K" .. k, "KT[" .. k .. "]" end
    src[#src + 1] = "local " .. concat(ks, ", ") .. " = " .. concat(vs, ", ")
  end
  src[#src + 1] = concat(u.lines, "\n")
  local text = concat(src, "\n")
  local chunk, err = loadstring(text, "=avro:" .. u.name)
  if not chunk then error("gobblin.avro: generated code does not compile: " .. tostring(err), 0) end
  return chunk(G.F, u.consts, G.H)
end

-- The text of the path in T/PT: "user.tags[2]".
local function path_text(T, PT)
  local parts = {}
  for k = 1, T.d do
    local c = PT[k]
    if type(c) == "number" then parts[k] = "[" .. c .. "]" else parts[k] = c end
  end
  return (concat(parts):gsub("^%.", ""))
end

local function key_text(k) return "[" .. sformat("%q", k) .. "]" end

------------------------------------------------------------------------------------------------------------
-- Decoders

local DEC_HELPERS = { "ffi_string", "tnew", "cast", "FP", "DP", "RINT", "RLONG", "EOF", "LEN", "COUNT",
  "BOOLB", "UNION", "ENUMX", "BRANCH", "TRAIL", "F32", "NULL", "COPY", "bxor", "rshift", "band", "tonumber", "SETMT",
  "T", "PT", "PKEY", "U8P" }

-- Helpers of the decoders of one build; FAIL(msg) raises (with the path, or by running the traced build).
local function decode_helpers(raise)
  -- M.failure says what the last failing datum met: "resolution" (a writer's branch or symbol the reader lacks),
  -- else "decoding" (its bytes).
  local function fail(msg)
    M.failure = "decoding"
    raise(msg)
  end
  local function resolution_fail(msg)
    M.failure = "resolution"
    raise(msg)
  end
  local function eof(i, need, e)
    fail(sformat("Avro datum ends early: %s byte(s) needed at offset %d, %d left", tostring(need), i, e - i))
  end

  local function rlong64(p, i, e, x)
    local u = cast(U64, x)
    local sh = 49
    for k = 8, 10 do
      if i >= e then eof(i, 1, e) end
      local c = p[i]
      i = i + 1
      if k == 10 and c > 1 then fail("varint longer than 64 bits at offset " .. (i - 1)) end
      u = bor(u, lshift(cast(U64, band(c, 127)), sh))
      if c < 128 then
        local v = cast(I64, bxor(rshift(u, 1), -band(u, 1)))
        if v >= -9007199254740992LL and v <= 9007199254740992LL then return tonumber(v), i end
        return v, i
      end
      sh = sh + 7
    end
    fail("varint longer than 10 bytes at offset " .. (i - 10))
  end

  local H = { ffi_string = ffi_string, tnew = tnew, cast = cast, FP = FP, DP = DP, NULL = NULL,
    COPY = deep_copy, bxor = bxor, rshift = rshift, band = band, tonumber = tonumber, PKEY = key_text,
    SETMT = setmetatable,
    U8P = U8P }

  -- A zig-zag long (a number, or an int64_t cdata outside +-2^53) at p[i]; and the next offset.
  local function rlong(p, i, e)
    local x, m = 0, 1
    for _ = 1, 7 do
      if i >= e then eof(i, 1, e) end
      local c = p[i]
      i = i + 1
      if c < 128 then
        x = x + c * m
        if x % 2 == 0 then return x / 2, i end
        return -(x + 1) / 2, i
      end
      x = x + (c - 128) * m
      m = m * 128
    end
    return rlong64(p, i, e, x)
  end

  -- A zig-zag int (at most 5 bytes, in int32 range) at p[i]; and the next offset.
  local function rint(p, i, e)
    local x, m = 0, 1
    for k = 1, 5 do
      if i >= e then eof(i, 1, e) end
      local c = p[i]
      i = i + 1
      if c < 128 then
        if k == 5 and c > 15 then fail("int varint out of the int range at offset " .. (i - 5)) end
        x = x + c * m
        if x % 2 == 0 then return x / 2, i end
        return -(x + 1) / 2, i
      end
      x = x + (c - 128) * m
      m = m * 128
    end
    fail("int varint longer than 5 bytes at offset " .. (i - 5))
  end

  -- Varints without a loop (a loop in a helper makes traces of their own): up to 7 bytes for a long, 4 for
  -- an int (whose 5th byte needs a range check); others, and those near the end, take the loops above.
  local function fast_varint(slow, long)
    return function(p, i, e)
      if i + 6 < e then
        local c = p[i]
        if c < 128 then return bxor(rshift(c, 1), -band(c, 1)), i + 1 end
        local x = c - 128
        c = p[i + 1]
        if c < 128 then
          x = x + c * 128
          return bxor(rshift(x, 1), -band(x, 1)), i + 2
        end
        x = x + (c - 128) * 128
        c = p[i + 2]
        if c < 128 then
          x = x + c * 16384
          return bxor(rshift(x, 1), -band(x, 1)), i + 3
        end
        x = x + (c - 128) * 16384
        c = p[i + 3]
        if c < 128 then
          x = x + c * 2097152
          return bxor(rshift(x, 1), -band(x, 1)), i + 4
        end
        if long then -- beyond 2^31: zig-zag in double arithmetic, exact below 2^49
          x = x + (c - 128) * 2097152
          c = p[i + 4]
          if c < 128 then
            x = x + c * 268435456
            if x % 2 == 0 then return x / 2, i + 5 end
            return -(x + 1) / 2, i + 5
          end
          x = x + (c - 128) * 268435456
          c = p[i + 5]
          if c < 128 then
            x = x + c * 34359738368
            if x % 2 == 0 then return x / 2, i + 6 end
            return -(x + 1) / 2, i + 6
          end
          x = x + (c - 128) * 34359738368
          c = p[i + 6]
          if c < 128 then
            x = x + c * 4398046511104
            if x % 2 == 0 then return x / 2, i + 7 end
            return -(x + 1) / 2, i + 7
          end
        end
      end
      return slow(p, i, e)
    end
  end
  H.RLONG, H.RINT = fast_varint(rlong, true), fast_varint(rint, false)

  H.EOF = eof
  function H.LEN(n, i, e)
    if n < 0 then fail("negative length " .. tostring(n) .. " at offset " .. i) end
    eof(i, n, e)
  end
  function H.COUNT(n, i, e)
    if n < 0 then fail("negative block count " .. tostring(n) .. " at offset " .. i) end
    fail(sformat("block count %s at offset %d is more than the %d bytes left can hold", tostring(n), i, e - i))
  end
  function H.BOOLB(x) fail("boolean byte " .. x) end
  function H.UNION(x, n) fail(sformat("union branch index %s out of range (%d branches)", tostring(x), n)) end
  function H.ENUMX(x, tab)
    if x >= 0 and x < #tab.w then
      resolution_fail(sformat("enum symbol '%s' of %s is not in the reader's enum %s", tab.w[x + 1], tab.wname,
        tab.rname))
    end
    fail(sformat("enum index %s out of range (%d symbols of %s)", tostring(x), #tab.w, tab.wname))
  end
  function H.BRANCH(k, desc)
    resolution_fail(sformat("union branch %d (%s) of the writer has no match in the reader's schema", k, desc))
  end
  function H.TRAIL(n) fail(n .. " bytes left after the datum") end
  function H.F32(x)
    F32BOX[0] = tonumber(x)
    return F32BOX[0]
  end
  return H
end

local RESOLVE_PROMOTE = { int = { long = true, float = true, double = true }, long = { float = true, double = true },
  float = { double = true }, string = { bytes = true }, bytes = { string = true } }

local function names_match(w, r)
  if w.name == r.name or unqualified(w.name) == unqualified(r.name) then return true end
  if r.aliases then
    for _, a in ipairs(r.aliases) do
      if a == w.name or unqualified(a) == unqualified(w.name) then return true end
    end
  end
  return false
end

-- Whether writer node W (not a union) resolves to reader node R (not a union), at the top level.
local function matches(w, r, exact_only)
  if w.type == r.type then
    if w.name then
      if not names_match(w, r) then return false end
      if w.type == "fixed" and w.size ~= r.size then return false end
    end
    return true
  end
  if exact_only then return false end
  local p = RESOLVE_PROMOTE[w.type]
  return p ~= nil and p[r.type] == true
end

-- The branch of reader union R that writer node W resolves to: the first of the same type, else the first
-- W promotes to.
local function union_match(r, w)
  for _, b in ipairs(r.branches) do if matches(w, b, true) then return b end end
  for _, b in ipairs(r.branches) do if matches(w, b) then return b end end
  return nil
end

local function resolve_error(path, w, r, why)
  error(sformat("cannot resolve: the writer's %s does not match the reader's %s%s%s", type_text(w), type_text(r),
    why and (" (" .. why .. ")") or "", path ~= "" and (" at field " .. path) or ""), 0)
end

-- Minimum number of bytes of a datum of node N.
local function min_size(n, seen)
  local t = n.type
  if t == "null" then return 0 end
  if t == "float" then return 4 end
  if t == "double" then return 8 end
  if t == "fixed" then return n.size end
  if t == "record" then
    seen = seen or {}
    if seen[n] then return 0 end
    seen[n] = true
    local s = 0
    for _, f in ipairs(n.fields) do s = s + min_size(f.type, seen) end
    seen[n] = nil
    return s
  end
  return 1
end

local rd, rec_reader

local function emit_varint(u, x, fn)
  emit(u, "if i >= e then EOF(i, 1, e) end")
  emit(u, x .. " = p[i]")
  emit(u, "if " .. x .. " < 128 then i = i + 1; " .. x .. " = bxor(rshift(" .. x .. ", 1), -band(" .. x ..
    ", 1)) else " .. x .. ", i = " .. fn .. "(p, i, e) end")
end

-- Emits a loop over the blocks of an array or map: BODY(u) reads one item; N is the block count variable.
local function emit_blocks(G, u, item_min, first_block, body)
  -- The first count is read before the loop, and the loop over blocks runs again only when a block
  -- follows: most writers write one block, and a loop that runs once per array stays out of the traces.
  local n, k = tmp(u, "n"), tmp(u, "k")
  emit(u, "local " .. k .. ", " .. n .. " = 0")
  emit_varint(u, n, "RLONG")
  emit(u, "if " .. n .. " ~= 0 then repeat")
  emit(u, "if " .. n .. " < 0 then")
  local sz = tmp(u, "sz")
  emit(u, "local " .. sz .. "; " .. n .. " = -" .. n)
  emit_varint(u, sz, "RLONG")
  emit(u, "if " .. sz .. " < 0 then LEN(" .. sz .. ", i, e) end")
  emit(u, "end")
  if item_min > 0 then
    emit(u, sformat("if %s < 0 or %s > (e - i) / %d then COUNT(%s, i, e) end", n, n, item_min, n))
  else
    emit(u, sformat("if %s < 0 or %s > e - i + 1000000 or %s + %s > 10000000 then COUNT(%s, i, e) end", n, n, k, n, n))
  end
  if first_block then first_block(n) end
  emit(u, "for _ = 1, " .. n .. " do")
  emit(u, k .. " = " .. k .. " + 1")
  body(k)
  emit(u, "end")
  emit_varint(u, n, "RLONG")
  emit(u, "until " .. n .. " == 0 end")
end

-- Emits code reading a datum of writer node W resolved to reader node R (nil: skipped) into lvalue DST.
-- NULLV is what a null becomes ("nil" in records, "NULL" in arrays and maps); PATH the static field path
-- (for build errors).
function rd(G, u, w, r, dst, nullv, path)
  if r == nil then dst = nil end
  local wt = w.type
  if wt == "union" then
    local x = tmp(u, "u")
    emit(u, "do local " .. x)
    emit_varint(u, x, "RLONG")
    local nb, any = #w.branches, r == nil
    for k, wb in ipairs(w.branches) do
      emit(u, (k == 1 and "if " or "elseif ") .. x .. " == " .. (k - 1) .. " then")
      local rb
      if r ~= nil then
        if r.type == "union" then rb = union_match(r, wb) elseif matches(wb, r) then rb = r end
      end
      if r ~= nil and rb == nil then
        emit(u, "BRANCH(" .. (k - 1) .. ", " .. const(u, type_text(wb)) .. ")")
      else
        any = true
        rd(G, u, wb, rb, dst, nullv, path)
      end
    end
    emit(u, "else UNION(" .. x .. ", " .. nb .. ") end")
    emit(u, "end")
    if not any then resolve_error(path, w, r, "no branch of the writer's union matches") end
    return
  end
  if r ~= nil then
    if r.type == "union" then
      local rb = union_match(r, w)
      if not rb then resolve_error(path, w, r) end
      r = rb
    elseif not matches(w, r) then
      resolve_error(path, w, r)
    end
  end
  local rt = r and r.type
  if wt == "null" then
    if dst and nullv ~= "nil" then emit(u, dst .. " = " .. nullv) end
  elseif wt == "boolean" then
    emit(u, "if i >= e then EOF(i, 1, e) end")
    if dst then
      local x = tmp(u, "b")
      emit(u, "do local " .. x .. " = p[i]; if " .. x .. " > 1 then BOOLB(" .. x .. ") end; " .. dst .. " = " ..
        x .. " == 1 end")
    else
      emit(u, "if p[i] > 1 then BOOLB(p[i]) end")
    end
    emit(u, "i = i + 1")
  elseif wt == "int" or wt == "long" then
    local x = tmp(u, "x")
    emit(u, "do local " .. x)
    emit_varint(u, x, wt == "int" and "RINT" or "RLONG")
    if dst then
      if rt == "float" then
        emit(u, dst .. " = F32(" .. x .. ")")
      elseif rt == "double" and wt == "long" then
        emit(u, dst .. " = tonumber(" .. x .. ")")
      else
        emit(u, dst .. " = " .. x)
      end
    end
    emit(u, "end")
  elseif wt == "float" or wt == "double" then
    local size = wt == "float" and 4 or 8
    emit(u, "if i + " .. size .. " > e then EOF(i, " .. size .. ", e) end")
    if dst then emit(u, dst .. " = cast(" .. (size == 4 and "FP" or "DP") .. ", p + i)[0]") end
    emit(u, "i = i + " .. size)
  elseif wt == "string" or wt == "bytes" then
    local n = tmp(u, "n")
    emit(u, "do local " .. n)
    emit_varint(u, n, "RLONG")
    emit(u, "if " .. n .. " < 0 or " .. n .. " > e - i then LEN(" .. n .. ", i, e) end")
    if dst then emit(u, dst .. " = ffi_string(p + i, " .. n .. ")") end
    emit(u, "i = i + " .. n)
    emit(u, "end")
  elseif wt == "fixed" then
    emit(u, "if i + " .. w.size .. " > e then EOF(i, " .. w.size .. ", e) end")
    if dst then emit(u, dst .. " = ffi_string(p + i, " .. w.size .. ")") end
    emit(u, "i = i + " .. w.size)
  elseif wt == "enum" then
    local tab = { w = w.symbols, wname = w.name, rname = r and r.name }
    for k, s in ipairs(w.symbols) do
      if r then
        if r.index[s] then tab[k - 1] = s elseif r.default then tab[k - 1] = r.default else tab[k - 1] = false end
      else
        tab[k - 1] = true
      end
    end
    local x, s = tmp(u, "x"), tmp(u, "s")
    local tk = const(u, tab)
    emit(u, "do local " .. x)
    emit_varint(u, x, "RINT")
    emit(u, "local " .. s .. " = " .. tk .. "[" .. x .. "]")
    emit(u, "if not " .. s .. " then ENUMX(" .. x .. ", " .. tk .. ") end")
    if dst then emit(u, dst .. " = " .. s) end
    emit(u, "end")
  elseif wt == "array" then
    local a = tmp(u, "a")
    local d
    emit(u, "do local " .. a)
    if G.traced then
      d = tmp(u, "d")
      emit(u, "local " .. d .. " = T.d + 1; T.d = " .. d .. "; PT[" .. d .. "] = ''")
    end
    local ri = r and r.items
    emit_blocks(G, u, min_size(w.items), function(n)
      if dst then emit(u, "if " .. a .. " == nil then " .. a .. " = tnew(" .. n .. ", 0) end") end
    end, function(k)
      if d then emit(u, "PT[" .. d .. "] = " .. k) end
      rd(G, u, w.items, ri, dst and (a .. "[" .. k .. "]"), "NULL", path .. "[]")
    end)
    if d then emit(u, "T.d = " .. d .. " - 1") end
    if dst then emit(u, dst .. " = SETMT(" .. a .. " or {}, " .. const(u, json_mt(r)) .. ")") end
    emit(u, "end")
  elseif wt == "map" then
    local m, key = tmp(u, "m"), tmp(u, "key")
    local d
    emit(u, "do local " .. m)
    if G.traced then
      d = tmp(u, "d")
      emit(u, "local " .. d .. " = T.d + 1; T.d = " .. d .. "; PT[" .. d .. "] = ''")
    end
    local rv = r and r.values
    emit_blocks(G, u, 1, function(n)
      if dst then emit(u, "if " .. m .. " == nil then " .. m .. " = tnew(0, " .. n .. ") end") end
    end, function(k)
      if d then emit(u, "PT[" .. d .. "] = " .. k) end
      emit(u, "local " .. key)
      rd(G, u, { type = "string" }, dst and { type = "string" }, dst and key, "nil", path)
      if d and dst then emit(u, "PT[" .. d .. "] = PKEY(" .. key .. ")") end
      rd(G, u, w.values, rv, dst and (m .. "[" .. key .. "]"), "NULL", path .. "[]")
    end)
    if d then emit(u, "T.d = " .. d .. " - 1") end
    if dst then emit(u, dst .. " = SETMT(" .. m .. " or {}, " .. const(u, json_mt(r)) .. ")") end
    emit(u, "end")
  elseif wt == "record" then
    local idx = rec_reader(G, w, r, path)
    if dst then emit(u, dst .. ", i = F[" .. idx .. "](p, i, e)") else emit(u, "i = F[" .. idx .. "](p, i, e)") end
  else
    error("gobblin.avro: no reader for type " .. tostring(wt), 0)
  end
end

-- The index in G.F of the function reading writer record W resolved to reader record R (nil: skipping
-- it): function(p, i, e) -> value, next offset (skipping: next offset).
function rec_reader(G, w, r, path)
  local key = w.id .. ":" .. (r and r.id or "skip")
  local idx = G.keys[key]
  if idx then return idx end
  idx = #G.F + 1
  G.keys[key] = idx
  G.F[idx] = false
  local u = new_unit((r and "read " or "skip ") .. w.name)
  emit(u, "return function(p, i, e)")
  local d
  if G.traced then
    emit(u, "local d = T.d + 1; T.d = d")
    d = "d"
  end
  if r then emit(u, "local t = SETMT(tnew(0, " .. #r.fields .. "), " .. const(u, json_mt(r)) .. ")") end
  local by_name = {}
  if r then
    for _, f in ipairs(r.fields) do
      by_name[f.name] = by_name[f.name] or f
    end
    for _, f in ipairs(r.fields) do
      if f.aliases then
        for _, a in ipairs(f.aliases) do by_name[a] = by_name[a] or f end
      end
    end
  end
  local seen = {}
  for _, wf in ipairs(w.fields) do
    local rf = by_name[wf.name]
    if rf and seen[rf] then rf = nil end
    if d then emit(u, "PT[d] = " .. const(u, "." .. wf.name)) end
    local fpath = (path == "" and "" or path .. ".") .. (rf and rf.name or wf.name)
    if rf then
      seen[rf] = true
      rd(G, u, wf.type, rf.type, field_ref("t", rf.name), "nil", fpath)
    else
      rd(G, u, wf.type, nil, nil, "nil", fpath)
    end
  end
  if r then
    for _, rf in ipairs(r.fields) do
      if not seen[rf] then
        if not rf.has_default then
          error(sformat("cannot resolve: reader field '%s' has no default and the writer has no such field%s",
            (path == "" and "" or path .. ".") .. rf.name, " (record " .. r.name .. ")"), 0)
        end
        local v = rf.default
        if type(v) == "table" then
          emit(u, field_ref("t", rf.name) .. " = COPY(" .. const(u, v) .. ")")
        elseif v ~= nil then
          emit(u, field_ref("t", rf.name) .. " = " .. const(u, v))
        end
      end
    end
  end
  if d then emit(u, "T.d = d - 1") end
  emit(u, r and "return t, i" or "return i")
  emit(u, "end")
  G.units[#G.units + 1] = { idx = idx, unit = u }
  return idx
end

-- Builds the decoding function of writer root W resolved to reader root R; TRACED: with paths in errors.
local function build_decoder(w, r, traced, fail)
  local G = { F = {}, keys = {}, units = {}, traced = traced }
  G.H = decode_helpers(fail)
  G.H.T, G.H.PT = { d = 0 }, {}
  local u = new_unit("decode")
  emit(u, "return function(ptr, len)")
  emit(u, "local p, e, i = cast(U8P, ptr), tonumber(len), 0")
  if traced then emit(u, "T.d = 0") end
  emit(u, "local v")
  rd(G, u, w, r, "v", "nil", "")
  emit(u, "if i ~= e then TRAIL(e - i) end")
  emit(u, "return v")
  emit(u, "end")
  for _, x in ipairs(G.units) do G.F[x.idx] = compile(G, x.unit, DEC_HELPERS) end
  return compile(G, u, DEC_HELPERS), G.H
end

------------------------------------------------------------------------------------------------------------
-- Encoders

local ENC_HELPERS = { "cast", "FPW", "DPW", "GROW", "WVAR", "WLONG", "TOINT", "TONUM", "BAD", "MISSING",
  "BADENUM", "BADFIXED", "BADUNION", "BADKEY", "copy", "type", "next", "NULL", "T", "PT", "PKEY", "JSONTYPE" }

-- Helpers of the encoders of one build. S: { buf, ptr, cap } the buffer; FAIL(msg) raises.
local function encode_helpers(S, fail)
  local H = { cast = cast, FPW = FPW, DPW = DPW, copy = ffi_copy, type = type, next = next, NULL = NULL,
    PKEY = key_text }

  -- What gobblin.json's marker says table X is ("array", "object"), or nil.
  function H.JSONTYPE(x)
    local mt = getmetatable(x)
    return type(mt) == "table" and rawget(mt, "__jsontype") or nil
  end

  -- A bigger buffer holding the O bytes written, with room for EXTRA more and 16 spare; its pointer and
  -- its capacity less 16.
  function H.GROW(o, extra)
    local need = o + extra + 32
    local cap = S.cap * 2
    while cap < need do cap = cap * 2 end
    local buf = U8A(cap)
    ffi_copy(buf, S.buf, o)
    S.buf, S.ptr, S.cap = buf, cast(U8PW, buf), cap
    return S.ptr, cap - 16
  end

  -- Writes the zig-zag varint of X (whole, |X| < 2^52) at b[o]; returns the next offset. No loop (a loop
  -- in a helper makes traces of its own): the zig-zag value is below 2^53, 8 bytes at most.
  local function wvar(b, o, x)
    local z = x >= 0 and x + x or -x - x - 1
    if z < 128 then b[o] = z; return o + 1 end
    b[o] = z % 128 + 128; z = floor(z / 128)
    if z < 128 then b[o + 1] = z; return o + 2 end
    b[o + 1] = z % 128 + 128; z = floor(z / 128)
    if z < 128 then b[o + 2] = z; return o + 3 end
    b[o + 2] = z % 128 + 128; z = floor(z / 128)
    if z < 128 then b[o + 3] = z; return o + 4 end
    b[o + 3] = z % 128 + 128; z = floor(z / 128)
    if z < 128 then b[o + 4] = z; return o + 5 end
    b[o + 4] = z % 128 + 128; z = floor(z / 128)
    if z < 128 then b[o + 5] = z; return o + 6 end
    b[o + 5] = z % 128 + 128; z = floor(z / 128)
    if z < 128 then b[o + 6] = z; return o + 7 end
    b[o + 6] = z % 128 + 128; z = floor(z / 128)
    b[o + 7] = z
    return o + 8
  end
  H.WVAR = wvar

  function H.BAD(what, v) fail("expected " .. what .. ", got " .. repr(v)) end

  -- X as a long: a whole number in range, or an int64_t/uint64_t cdata; written at b[o].
  function H.WLONG(x, b, o, c)
    if o > c then b, c = H.GROW(o, 0) end
    local v
    if type(x) == "number" then
      if x % 1 ~= 0 then fail(num_text(x) .. " is not a whole number") end
      if x < -9223372036854775808 or x >= 9223372036854775808 then fail(num_text(x) .. " does not fit a long") end
      if x > -4503599627370496 and x < 4503599627370496 then return b, wvar(b, o, x), c end
      v = I64(x)
    elseif istype(I64, x) then
      v = x
    elseif istype(U64, x) then
      if x > I64_MAX then fail(tostring(x) .. " does not fit a long") end
      v = cast(I64, x)
    else
      H.BAD("long", x)
    end
    local z = cast(U64, bxor(lshift(v, 1), arshift(v, 63)))
    while z >= 128 do
      b[o] = tonumber(bor(band(z, 127), 128))
      o = o + 1
      z = rshift(z, 7)
    end
    b[o] = tonumber(z)
    return b, o + 1, c
  end

  -- X as an int (number): whole numbers in range, int64 cdata in range.
  function H.TOINT(x)
    if type(x) == "number" then
      if x % 1 ~= 0 then fail(num_text(x) .. " is not a whole number") end
      fail(num_text(x) .. " does not fit an int")
    end
    if istype(I64, x) or istype(U64, x) then
      if x >= -2147483648LL and x <= 2147483647LL then return tonumber(x) end
      fail(tostring(x) .. " does not fit an int")
    end
    H.BAD("int", x)
  end

  function H.TONUM(what, x)
    if istype(I64, x) or istype(U64, x) then return tonumber(x) end
    H.BAD(what, x)
  end
  function H.MISSING() fail("missing (nil) and the field has no default") end
  function H.BADENUM(name, x)
    if type(x) == "string" then fail("'" .. x .. "' is not a symbol of enum " .. name) end
    H.BAD("enum " .. name, x)
  end
  function H.BADFIXED(name, size, x)
    if type(x) == "string" then fail(sformat("%d bytes, the fixed %s has %d", #x, name, size)) end
    H.BAD("fixed " .. name, x)
  end
  function H.BADUNION(desc, x)
    local what = type(x)
    if x == nil or x == NULL then what = "null" elseif what ~= "table" then what = repr(x) end
    fail("no branch of union " .. desc .. " takes " .. (what == "table" and "a table" or what))
  end
  function H.BADKEY(k) fail("map key " .. repr(k) .. " is not a string") end
  return H
end

local wr, rec_writer

local function space(u) emit(u, "if o > c then b, c = GROW(o, 0) end") end

-- Emits code writing an int-sized number in local X (whole, in int range) as a varint.
local function emit_wint(u, x)
  space(u)
  emit(u, "if " .. x .. " >= 0 and " .. x .. " < 64 then b[o] = " .. x .. " + " .. x .. "; o = o + 1 else o = WVAR(b, o, " ..
    x .. ") end")
end

local function emit_windex(u, k)
  space(u)
  if k < 64 then emit(u, "b[o] = " .. (k + k) .. "; o = o + 1") else emit(u, "o = WVAR(b, o, " .. k .. ")") end
end

-- Emits code writing the value in local X as node N.
function wr(G, u, n, x)
  local t = n.type
  if t == "null" then
    emit(u, "if " .. x .. " ~= nil and " .. x .. " ~= NULL then BAD('null', " .. x .. ") end")
  elseif t == "boolean" then
    space(u)
    emit(u, "if " .. x .. " == true then b[o] = 1 elseif " .. x .. " == false then b[o] = 0 else BAD('boolean', " ..
      x .. ") end")
    emit(u, "o = o + 1")
  elseif t == "int" then
    emit(u, "if type(" .. x .. ") ~= 'number' or " .. x .. " % 1 ~= 0 or " .. x .. " < -2147483648 or " .. x ..
      " > 2147483647 then " .. x .. " = TOINT(" .. x .. ") end")
    emit_wint(u, x)
  elseif t == "long" then
    emit(u, "if type(" .. x .. ") == 'number' and " .. x .. " % 1 == 0 and " .. x .. " > -4503599627370496 and " ..
      x .. " < 4503599627370496 then")
    emit_wint(u, x)
    emit(u, "else b, o, c = WLONG(" .. x .. ", b, o, c) end")
  elseif t == "float" or t == "double" then
    emit(u, "if type(" .. x .. ") ~= 'number' then " .. x .. " = TONUM('" .. t .. "', " .. x .. ") end")
    space(u)
    emit(u, "cast(" .. (t == "float" and "FPW" or "DPW") .. ", b + o)[0] = " .. x)
    emit(u, "o = o + " .. (t == "float" and 4 or 8))
  elseif t == "string" or t == "bytes" then
    local nn = tmp(u, "n")
    emit(u, "if type(" .. x .. ") ~= 'string' then BAD('" .. t .. "', " .. x .. ") end")
    emit(u, "local " .. nn .. " = #" .. x)
    emit(u, "if o + " .. nn .. " > c then b, c = GROW(o, " .. nn .. ") end")
    emit(u, "if " .. nn .. " < 64 then b[o] = " .. nn .. " + " .. nn .. "; o = o + 1 else o = WVAR(b, o, " .. nn .. ") end")
    emit(u, "copy(b + o, " .. x .. ", " .. nn .. ")")
    emit(u, "o = o + " .. nn)
  elseif t == "fixed" then
    emit(u, "if type(" .. x .. ") ~= 'string' or #" .. x .. " ~= " .. n.size .. " then BADFIXED(" ..
      const(u, n.name) .. ", " .. n.size .. ", " .. x .. ") end")
    emit(u, "if o + " .. n.size .. " > c then b, c = GROW(o, " .. n.size .. ") end")
    emit(u, "copy(b + o, " .. x .. ", " .. n.size .. ")")
    emit(u, "o = o + " .. n.size)
  elseif t == "enum" then
    local k = tmp(u, "k")
    emit(u, "local " .. k .. " = " .. const(u, n.index) .. "[" .. x .. "]")
    emit(u, "if " .. k .. " == nil then BADENUM(" .. const(u, n.name) .. ", " .. x .. ") end")
    emit_wint(u, k)
  elseif t == "array" then
    local nn, k, y = tmp(u, "n"), tmp(u, "k"), tmp(u, "y")
    emit(u, "if type(" .. x .. ") ~= 'table' then BAD('array', " .. x .. ") end")
    emit(u, "local " .. nn .. " = #" .. x)
    emit(u, "if " .. nn .. " > 0 then")
    emit_wint(u, nn)
    local d
    if G.traced then
      d = tmp(u, "d")
      emit(u, "local " .. d .. " = T.d + 1; T.d = " .. d .. "; PT[" .. d .. "] = ''")
    end
    emit(u, "for " .. k .. " = 1, " .. nn .. " do")
    if d then emit(u, "PT[" .. d .. "] = " .. k) end
    emit(u, "local " .. y .. " = " .. x .. "[" .. k .. "]")
    wr(G, u, n.items, y)
    emit(u, "end")
    if d then emit(u, "T.d = " .. d .. " - 1") end
    emit(u, "end")
    space(u)
    emit(u, "b[o] = 0; o = o + 1")
  elseif t == "map" then
    local nn, key, y = tmp(u, "n"), tmp(u, "key"), tmp(u, "y")
    emit(u, "if type(" .. x .. ") ~= 'table' then BAD('map', " .. x .. ") end")
    emit(u, "local " .. nn .. " = 0")
    emit(u, "for _ in next, " .. x .. " do " .. nn .. " = " .. nn .. " + 1 end")
    emit(u, "if " .. nn .. " > 0 then")
    emit_wint(u, nn)
    local d
    if G.traced then
      d = tmp(u, "d")
      emit(u, "local " .. d .. " = T.d + 1; T.d = " .. d .. "; PT[" .. d .. "] = ''")
    end
    emit(u, "for " .. key .. ", " .. y .. " in next, " .. x .. " do")
    emit(u, "if type(" .. key .. ") ~= 'string' then BADKEY(" .. key .. ") end")
    if d then emit(u, "PT[" .. d .. "] = PKEY(" .. key .. ")") end
    wr(G, u, { type = "string" }, key)
    wr(G, u, n.values, y)
    emit(u, "end")
    if d then emit(u, "T.d = " .. d .. " - 1") end
    emit(u, "end")
    space(u)
    emit(u, "b[o] = 0; o = o + 1")
  elseif t == "record" then
    emit(u, "if type(" .. x .. ") ~= 'table' then BAD(" .. const(u, "record " .. n.name) .. ", " .. x .. ") end")
    emit(u, "b, o, c = F[" .. rec_writer(G, n) .. "](" .. x .. ", b, o, c)")
  elseif t == "union" then
    local desc = const(u, type_text(n))
    local by = {}
    for k, b in ipairs(n.branches) do
      by[b.type] = by[b.type] or k
    end
    local function branch(k)
      emit_windex(u, k - 1)
      wr(G, u, n.branches[k], x)
    end
    local tv = tmp(u, "tv")
    emit(u, "local " .. tv .. " = type(" .. x .. ")")
    emit(u, "if " .. x .. " == nil or " .. x .. " == NULL then")
    if by.null then branch(by.null) else emit(u, "BADUNION(" .. desc .. ", " .. x .. ")") end
    emit(u, "elseif " .. tv .. " == 'boolean' then")
    if by.boolean then branch(by.boolean) else emit(u, "BADUNION(" .. desc .. ", " .. x .. ")") end
    -- The first branch, in union order, whose condition (COND_OF(branch): Lua source, "true", or nil for a
    -- branch that never takes the value) holds; none: the value fits no branch.
    local function first_branch(cond_of)
      local first, closed = true, false
      for k, b in ipairs(n.branches) do
        local cond = cond_of(b)
        if cond == "true" then
          if not first then emit(u, "else") end
          branch(k)
          closed = true
          break
        elseif cond then
          emit(u, (first and "if " or "elseif ") .. cond .. " then")
          branch(k)
          first = false
        end
      end
      if not closed then
        if not first then emit(u, "else") end
        emit(u, "BADUNION(" .. desc .. ", " .. x .. ")")
      end
      if not first then emit(u, "end") end
    end
    -- numbers: int if whole and in its range, long if whole, float, double
    emit(u, "elseif " .. tv .. " == 'number' then")
    first_branch(function(b)
      if b.type == "int" then
        return x .. " % 1 == 0 and " .. x .. " >= -2147483648 and " .. x .. " <= 2147483647"
      elseif b.type == "long" then
        return x .. " % 1 == 0 and " .. x .. " >= -9223372036854775808 and " .. x .. " < 9223372036854775808"
      elseif b.type == "float" or b.type == "double" then
        return "true"
      end
    end)
    -- strings: string, bytes, enum (one of its symbols), fixed (of its size)
    emit(u, "elseif " .. tv .. " == 'string' then")
    first_branch(function(b)
      if b.type == "string" or b.type == "bytes" then
        return "true"
      elseif b.type == "enum" then
        return const(u, b.index) .. "[" .. x .. "] ~= nil"
      elseif b.type == "fixed" then
        return "#" .. x .. " == " .. b.size
      end
    end)
    -- tables: an array when the table is marked as one (gobblin.json's __jsontype) or, unmarked, looks like one;
    -- else the first record or map
    emit(u, "elseif " .. tv .. " == 'table' then")
    local arr, other
    for k, b in ipairs(n.branches) do
      if b.type == "array" then arr = arr or k end
      if (b.type == "record" or b.type == "map") then other = other or k end
    end
    if arr and other then
      local jt = tmp(u, "jt")
      emit(u, "local " .. jt .. " = JSONTYPE(" .. x .. ")")
      emit(u, "if " .. jt .. " == 'array' or (" .. jt .. " ~= 'object' and (" .. x .. "[1] ~= nil or next(" .. x ..
        ") == nil)) then")
      branch(arr)
      emit(u, "else")
      branch(other)
      emit(u, "end")
    elseif arr or other then
      branch(arr or other)
    else
      emit(u, "BADUNION(" .. desc .. ", " .. x .. ")")
    end
    -- int64 cdata: long, else double, float, int
    emit(u, "elseif " .. tv .. " == 'cdata' then")
    local ck = by.long or by.double or by.float or by.int
    if ck then branch(ck) else emit(u, "BADUNION(" .. desc .. ", " .. x .. ")") end
    emit(u, "else BADUNION(" .. desc .. ", " .. x .. ") end")
  else
    error("gobblin.avro: no writer for type " .. tostring(t), 0)
  end
end

-- The index in G.F of the function writing record N: function(v, b, o, c) -> b, o, c.
function rec_writer(G, n)
  local idx = G.keys[n]
  if idx then return idx end
  idx = #G.F + 1
  G.keys[n] = idx
  G.F[idx] = false
  local u = new_unit("write " .. n.name)
  emit(u, "return function(v, b, o, c)")
  if G.traced then emit(u, "local d = T.d + 1; T.d = d") end
  for _, f in ipairs(n.fields) do
    if G.traced then emit(u, "PT[d] = " .. const(u, "." .. f.name)) end
    emit(u, "do local x = " .. field_ref("v", f.name))
    if not takes_null(f.type) then
      if f.has_default then
        emit(u, "if x == nil or x == NULL then x = " .. const(u, f.default) .. " end")
      else
        emit(u, "if x == nil then MISSING() end")
      end
    end
    wr(G, u, f.type, "x")
    emit(u, "end")
  end
  if G.traced then emit(u, "T.d = d - 1") end
  emit(u, "return b, o, c")
  emit(u, "end")
  G.units[#G.units + 1] = { idx = idx, unit = u }
  return idx
end

local function build_encoder(root, traced, fail)
  local S = { cap = traced and 256 or 4096 }
  S.buf = U8A(S.cap)
  S.ptr = cast(U8PW, S.buf)
  local G = { F = {}, keys = {}, units = {}, traced = traced }
  G.H = encode_helpers(S, fail)
  G.H.T, G.H.PT = { d = 0 }, {}
  local u = new_unit("encode")
  emit(u, "return function(v)")
  if traced then emit(u, "T.d = 0") end
  emit(u, "local b, o, c = S.ptr, 0, S.cap - 16")
  wr(G, u, root, "v")
  emit(u, "return b, o")
  emit(u, "end")
  for _, x in ipairs(G.units) do G.F[x.idx] = compile(G, x.unit, ENC_HELPERS) end
  G.H.S = S
  local helpers = { "S" }
  for _, h in ipairs(ENC_HELPERS) do helpers[#helpers + 1] = h end
  return compile(G, u, helpers), G.H, S
end

------------------------------------------------------------------------------------------------------------
-- Schema objects

local Schema = {}
Schema.__index = Schema

local function check_schema(s, what)
  if getmetatable(s) ~= Schema then error(what .. " expects a schema object (avro.schema(text))", 3) end
end

-- avro.schema(text): the schema of Avro schema JSON TEXT; raises "invalid Avro schema: ..." when it is not
-- one.
function M.schema(text)
  if getmetatable(text) == Schema then return text end
  if type(text) ~= "string" then error("avro.schema expects the schema's JSON text, got " .. type(text), 2) end
  local ok, j = pcall(json.decode, text)
  if not ok then bad("bad JSON: %s", tostring(j)) end
  if j == NULL then bad("a schema is a string, an object or an array, got null") end
  local P = { names = {}, records = {} }
  local root = parse(P, j, nil, "")
  -- defaults, once every type is known (a default may be of a record defined later in the text)
  for _, rec in ipairs(P.records) do
    for _, f in ipairs(rec.fields) do
      if f.json_default ~= nil then
        local okd, v = pcall(convert_default, f.type, f.json_default)
        if not okd then
          bad("default of field '%s' of record '%s' is not valid for its type %s: %s", f.name, rec.name,
            type_text(f.type), v)
        end
        f.has_default, f.default = true, v
      end
    end
  end
  return setmetatable({ text = text, root = root, name = root.name or root.type, names = P.names,
    _decoders = setmetatable({}, { __mode = "k" }) }, Schema)
end

-- s:decoder(reader): function(ptr, len) -> value, decoding one datum written with s, resolved to schema
-- object READER (nil: s). Resolution errors are raised here. The same function for the same reader.
function Schema:decoder(reader)
  if reader == nil then reader = self end
  check_schema(reader, "decoder")
  local d = self._decoders[reader]
  if d then return d end
  local state = { p = nil, len = 0 }
  local traced, th
  local function fail(msg)
    if not traced then
      traced, th = build_decoder(self.root, reader.root, true, function(m)
        local path = path_text(th.T, th.PT)
        error(path ~= "" and (m .. " at field " .. path) or m, 0)
      end)
    end
    traced(state.p, state.len)
    error(msg, 0)
  end
  local ok, fast = pcall(build_decoder, self.root, reader.root, false, fail)
  if not ok then
    M.failure = "resolution"
    error(fast, 0)
  end
  d = function(ptr, len)
    state.p, state.len = ptr, len
    return fast(ptr, len)
  end
  self._decoders[reader] = d
  return d
end

-- A new encoding function of schema S, with a buffer of its own.
local function make_encoder(self)
  local state = {}
  local traced, th
  local function fail(msg)
    if not traced then
      traced, th = build_encoder(self.root, true, function(m)
        local path = path_text(th.T, th.PT)
        error(path ~= "" and ("field '" .. path .. "': " .. m) or m, 0)
      end)
    end
    traced(state.v)
    error(msg, 0)
  end
  local fast = build_encoder(self.root, false, fail)
  return function(v)
    state.v = v
    return fast(v)
  end
end

-- s:encoder(): function(value) -> ptr, len: the datum of VALUE in a buffer the next call reuses. The same
-- function each time.
function Schema:encoder()
  local enc = self._encoder
  if not enc then
    enc = make_encoder(self)
    self._encoder = enc
  end
  return enc
end

-- s:encode(value) -> string: the datum's bytes.
function Schema:encode(v)
  local p, n = self:encoder()(v)
  return ffi_string(p, n)
end

-- s:decode(str, reader) -> value: decodes the datum in string STR (resolved to READER, if given).
function Schema:decode(str, reader)
  if type(str) ~= "string" then error("decode expects a string, got " .. type(str), 2) end
  return self:decoder(reader)(str, #str)
end

-- s:check(value) -> value: VALUE as the encoder takes it (the same errors), made plain: cjson.null as nil
-- (cjson.null in arrays and maps), defaults filled in, keys that are not fields dropped, floats rounded to
-- single precision. It encodes VALUE and decodes the datum, with an encoder of its own (a pointer the
-- encoder returned stays valid).
function Schema:check(v)
  local enc = self._check_encoder
  if not enc then
    enc = make_encoder(self)
    self._check_encoder = enc
  end
  local p, n = enc(v)
  return self:decoder()(p, n)
end

-- avro.canonical(s) -> string: the Parsing Canonical Form of schema S.
function M.canonical(s)
  check_schema(s, "canonical")
  if not s._canonical then
    local out = {}
    canon(s.root, {}, out)
    s._canonical = concat(out)
  end
  return s._canonical
end

-- avro.same(a, b) -> boolean: whether schemas A and B have the same Parsing Canonical Form.
function M.same(a, b)
  return M.canonical(a) == M.canonical(b)
end

M.Schema = Schema
return M
