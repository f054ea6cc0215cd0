-- gobblin.converter: ready-made converters. Each function returns a converter, function(record, ctx),
-- to put in a job's `converters` list.
local json = require("gobblin.json")

local type, pairs, ipairs, tostring, error, getmetatable, setmetatable, rawget =
  type, pairs, ipairs, tostring, error, getmetatable, setmetatable, rawget

local M = {}

-- The converters whose every result is a table of its own holding no key but those of its metatable's __jsonorder
-- (project's): gobblin.runtime has the result of such a converter, when it is the job's last and no partition
-- function sees the result first, encoded without a look for other keys (json.encode_staged's CLOSED).
M.closed = setmetatable({}, { __mode = "k" })

-- The bytes of a record: a string as is, a record view's payload (nil for a null payload).
local function bytes_of(record)
  local t = type(record)
  if t == "string" then return record end
  if t == "cdata" then return record:value() end
  error("expected bytes (a string or a record), got " .. t, 0)
end
M.bytes_of = bytes_of

-- bytes_to_json: parses the record's bytes as JSON into a Lua table (gobblin.json; a record view's payload is read
-- where it is, without a Lua string made of it). A null payload is dropped; bytes that are not JSON raise an error
-- (handled by decode.error.policy). JSON null is json.null (cjson.null). OPTS.max_depth: how deep arrays and
-- objects may nest (default 100).
function M.bytes_to_json(opts)
  opts = opts or {}
  local max_depth = opts.max_depth or 100
  local decode = json.decode
  return function(record)
    local t = type(record)
    if t ~= "string" and t ~= "cdata" then error("expected bytes (a string or a record), got " .. t, 0) end
    return decode(record, max_depth)
  end
end

-- json_to_bytes: serialises a Lua table as JSON text (gobblin.json). Strings and record views pass through
-- unchanged.
function M.json_to_bytes(opts)
  local encode = json.encode
  return function(record)
    local t = type(record)
    if t == "table" then return encode(record) end
    if t == "string" or t == "cdata" then return record end
    error("json_to_bytes expects a table, got " .. t, 0)
  end
end

-- json_to_avro: a JSON record as a Lua value ready for the Avro encoder of SCHEMA (a schema object from
-- gobblin.avro, or its JSON text), as Gobblin's JsonIntermediateToAvroConverter does: JSON fields that are
-- not in the schema are dropped, a missing field becomes null or its default, and a missing field with
-- neither is an error naming it (as are values of the wrong type). Without SCHEMA, the job's output schema
-- (ctx.output_schema) is used. The record may be JSON text, a record view or an already-decoded table; a
-- null payload is dropped.
function M.json_to_avro(schema)
  local avro = require("gobblin.avro")
  if type(schema) == "string" then
    schema = avro.schema(schema)
  elseif schema ~= nil and getmetatable(schema) ~= avro.Schema then
    error("json_to_avro expects a schema (avro.schema(text)) or its JSON text, got " .. type(schema), 2)
  end
  local parsed_text, parsed -- a job schema given as text, parsed once
  return function(record, ctx)
    local s = schema or (ctx and ctx.output_schema)
    if s == nil then error("json_to_avro needs a schema: pass one or set the job's schema", 0) end
    if type(s) == "string" then
      if s ~= parsed_text then parsed_text, parsed = s, avro.schema(s) end
      s = parsed
    end
    local value = record
    if type(record) ~= "table" then
      local t = type(record)
      if t ~= "string" and t ~= "cdata" then error("expected bytes (a string or a record), got " .. t, 0) end
      value = json.decode(record)
    end
    if value == nil or value == json.null then return nil end
    return s:check(value)
  end
end

-- project: keeps only FIELDS (an array of names) of a table record; missing fields stay missing. The result is an
-- object whose fields are written in the order of FIELDS (json.order(FIELDS)), whatever the record's order; the
-- values are the record's own (a nested table keeps its markers and order). The converter is generated for FIELDS
-- (one table constructor, no loop), which LuaJIT compiles into a copy of a presized table.
function M.project(fields)
  if type(fields) ~= "table" or #fields == 0 then error("project expects a non-empty array of field names", 2) end
  local items, names, seen = {}, {}, {}
  for i = 1, #fields do
    local f = fields[i]
    if type(f) ~= "string" and type(f) ~= "number" then
      error("project expects an array of field names; item " .. i .. " is a " .. type(f), 2)
    end
    if not seen[f] then -- a name given twice is kept once, at its first place
      seen[f] = true
      local k = type(f) == "string" and string.format("%q", f) or tostring(f)
      items[#items + 1] = "[" .. k .. "] = record[" .. k .. "]"
      names[#names + 1] = f
    end
  end
  local source = "local type, error, setmetatable, order = ...\n" ..
    "return function(record)\n" ..
    "  if type(record) ~= 'table' then error('project expects a table record, got ' .. type(record), 0) end\n" ..
    "  return setmetatable({ " .. table.concat(items, ", ") .. " }, order)\n" ..
    "end\n"
  local conv = assert(loadstring(source, "=gobblin.converter.project"))(type, error, setmetatable, json.order(names))
  M.closed[conv] = true
  return conv
end

-- rename: renames fields of a table record by MAPPING (old name -> new name); other fields are kept. The fields
-- keep their places: a decoded object (or a table with json.order, or an Avro record) comes out with its keys in
-- the same order, the renamed ones where the old names were, keys it does not list after them, sorted (as
-- gobblin.json writes them); an Avro record's bytes, fixed and decimals are still written as such. When two fields
-- end up with one name, it is at the first one's place, with the value of the one gobblin.json writes later. A
-- table without an order comes out without one.
function M.rename(mapping)
  if type(mapping) ~= "table" then error("rename expects a table of old = new names", 2) end
  -- For each metatable met: the record's keys in order, their new names, and the metatable of the result.
  local derived = setmetatable({}, { __mode = "k" })
  local function derive(mt)
    local order = rawget(mt, "__jsonorder") or {}
    local from, to, known, names, placed = {}, {}, {}, {}, {}
    for i = 1, #order do
      local k = order[i]
      local name = mapping[k] or k
      from[i], to[i], known[k] = k, name, true
      if not placed[name] then
        placed[name] = true
        names[#names + 1] = name
      end
    end
    local out_mt
    local avro = rawget(mt, "__jsonavro")
    if type(avro) == "table" then
      local fields = {}
      for k, kind in pairs(avro.fields or {}) do fields[mapping[k] or k] = kind end
      out_mt = { __jsontype = "object", __jsonorder = names, __jsonavro = { fields = fields, items = avro.items } }
    else
      out_mt = json.order(names)
    end
    return { from = from, to = to, known = known, mt = out_mt }
  end
  return function(record)
    if type(record) ~= "table" then error("rename expects a table record, got " .. type(record), 0) end
    local mt = getmetatable(record)
    if type(mt) ~= "table" or rawget(mt, "__jsontype") ~= "object" then
      local out = {}
      for k, v in pairs(record) do
        local to = mapping[k]
        if to then out[to] = v else out[k] = v end
      end
      return out
    end
    local d = derived[mt]
    if not d then
      d = derive(mt)
      derived[mt] = d
    end
    local out, from, to, known = {}, d.from, d.to, d.known
    for i = 1, #from do
      local v = record[from[i]]
      if v ~= nil then out[to[i]] = v end
    end
    local rest
    for k in pairs(record) do
      if not known[k] then
        rest = rest or {}
        rest[#rest + 1] = k
      end
    end
    if rest then
      -- in the order gobblin.json writes them, so that the later one wins a name
      table.sort(rest, function(x, y) return tostring(x) < tostring(y) end)
      for i = 1, #rest do
        local k = rest[i]
        out[mapping[k] or k] = record[k]
      end
    end
    return setmetatable(out, d.mt)
  end
end

-- filter: passes the record on when PREDICATE(record, ctx) is true, drops it otherwise.
function M.filter(predicate)
  if type(predicate) ~= "function" then error("filter expects a predicate function", 2) end
  return function(record, ctx)
    if predicate(record, ctx) then return record end
    return nil
  end
end

-- format_timestamp: formats the number in OPTS.field (milliseconds since the epoch, or seconds with
-- unit = "s") with os.date's OPTS.format (default ISO 8601 in UTC, "!%Y-%m-%dT%H:%M:%SZ"), into
-- OPTS.into (default: the same field). OPTS.field = "@timestamp" uses the Kafka record's timestamp.
-- A record without the field is passed on unchanged.
function M.format_timestamp(opts)
  if type(opts) ~= "table" or type(opts.field) ~= "string" then
    error("format_timestamp expects { field = name, format = os.date format, into = name, unit = 'ms'|'s' }", 2)
  end
  local field, into = opts.field, opts.into or opts.field
  local format = opts.format or "!%Y-%m-%dT%H:%M:%SZ"
  local divisor = (opts.unit == "s") and 1 or 1000
  local with_millis = opts.millis
  return function(record, ctx)
    if type(record) ~= "table" then error("format_timestamp expects a table record, got " .. type(record), 0) end
    local v
    if field == "@timestamp" then v = ctx and ctx.timestamp else v = record[field] end
    if v == nil then return record end
    local n = tonumber(v)
    if not n then error("field " .. field .. " is not a number: " .. tostring(v), 0) end
    local secs = math.floor(n / divisor)
    local s = os.date(format, secs)
    if with_millis and divisor == 1000 then
      s = s:gsub("Z$", string.format(".%03dZ", n % 1000))
    end
    record[into] = s
    return record
  end
end

-- A name the module lacks is a job that cannot work (converter.bytes_to_jsn() would fail as "attempt to call a
-- nil value"): the error names it, the closest converter, and the converters there are, at the job's line.
setmetatable(M, {
  __index = function(_, name)
    local names = {}
    for k, v in pairs(M) do
      if type(v) == "function" and k ~= "bytes_of" then names[#names + 1] = k end
    end
    table.sort(names)
    local near = type(name) == "string" and require("gobblin.runtime").nearest(name, names)
    error(string.format("gobblin.converter has no converter %s (it has %s)%s", tostring(name),
      table.concat(names, ", "), near and ("; did you mean " .. near .. "?") or ""), 2)
  end,
})

return M
