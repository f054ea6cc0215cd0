-- gobblin.avro (the Avro binary codec) and gobblin.converter.json_to_avro.
local avro = require("gobblin.avro")
local converter = require("gobblin.converter")
local cjson = require("cjson")
local ffi = require("ffi")

local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
local function unhex(h) return (h:gsub("%s", ""):gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

-- The error message of F(...), which must fail.
local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  assert.is_string(err)
  return err
end

local function round_trip(s, v) return s:decode(s:encode(v)) end

local ALL = avro.schema([[{"type": "record", "name": "All", "namespace": "t", "doc": "every type", "fields": [
  {"name": "n", "type": "null"},
  {"name": "b", "type": "boolean"},
  {"name": "i", "type": "int"},
  {"name": "l", "type": "long"},
  {"name": "f", "type": "float"},
  {"name": "d", "type": "double"},
  {"name": "by", "type": "bytes"},
  {"name": "s", "type": "string"},
  {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
  {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
  {"name": "a", "type": {"type": "array", "items": "long"}},
  {"name": "m", "type": {"type": "map", "values": "string"}},
  {"name": "u", "type": ["null", "string", "long"]},
  {"name": "r", "type": {"type": "record", "name": "Inner", "fields": [
    {"name": "x", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "end", "type": "int"},
  {"name": "nil", "type": "string"}
]}]])

local function all_value()
  return { b = true, i = -7, l = 1234567890123, f = 1.5, d = -2.25, by = "\0\1\255\0", s = "héllo ✓",
    fx = "abcd", e = "GREEN", a = { 1, -2, 3 }, m = { k = "v", ["a b"] = "" }, u = "x",
    r = { x = 9, tags = { "p", "q" } }, ts = 1700000000000, ["end"] = 1, ["nil"] = "w" }
end

local LIST = avro.schema([[{"type": "record", "name": "Node", "fields": [
  {"name": "value", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}]])

describe("gobblin.avro", function()
  describe("schema", function()
    it("keeps the text and names the top-level type", function()
      assert.equal("t.All", ALL.name)
      assert.matches('"every type"', ALL.text)
      assert.equal("int", avro.schema('"int"').name)
      assert.equal("array", avro.schema('{"type": "array", "items": "int"}').name)
      assert.equal("union", avro.schema('["null", "int"]').name)
    end)

    it("resolves names with the namespace rules", function()
      local s = avro.schema([[{"type": "record", "name": "R", "namespace": "a.b", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
        {"name": "e2", "type": "E"},
        {"name": "e3", "type": "a.b.E"},
        {"name": "f", "type": {"type": "fixed", "name": "c.F", "size": 1}},
        {"name": "f2", "type": "c.F"},
        {"name": "g", "type": {"type": "fixed", "name": "G", "namespace": "", "size": 2}},
        {"name": "g2", "type": "G"}]}]])
      assert.equal("a.b.R", s.name)
      assert.truthy(s.names["a.b.E"])
      assert.truthy(s.names["c.F"])
      assert.truthy(s.names["G"])
      local v = { e = "X", e2 = "X", e3 = "X", f = "1", f2 = "2", g = "gg", g2 = "hh" }
      assert.same(v, round_trip(s, v))
      assert.equal(
        '{"name":"a.b.R","type":"record","fields":[{"name":"e","type":{"name":"a.b.E","type":"enum","symbols":["X"]}},' ..
        '{"name":"e2","type":"a.b.E"},{"name":"e3","type":"a.b.E"},{"name":"f","type":{"name":"c.F","type":"fixed",' ..
        '"size":1}},{"name":"f2","type":"c.F"},{"name":"g","type":{"name":"G","type":"fixed","size":2}},' ..
        '{"name":"g2","type":"G"}]}', avro.canonical(s))
    end)

    it("keeps logicalType attributes and decodes the underlying type", function()
      local s = avro.schema('{"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}')
      assert.equal("decimal", s.root.logicalType)
      assert.equal(9, s.root.precision)
      assert.equal("\1\2", round_trip(s, "\1\2"))
    end)

    it("converts defaults to Lua values", function()
      local s = avro.schema([[{"type": "record", "name": "D", "fields": [
        {"name": "b", "type": "bytes", "default": "\u0000\u00ff"},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}, "default": "\u00e9a"},
        {"name": "u", "type": ["int", "null"], "default": 3},
        {"name": "a", "type": {"type": "array", "items": ["null", "int"]}, "default": [1, null]},
        {"name": "m", "type": {"type": "map", "values": "int"}, "default": {"k": 2}},
        {"name": "r", "type": {"type": "record", "name": "In", "fields": [
          {"name": "x", "type": "int", "default": 1}, {"name": "y", "type": "string"}]}, "default": {"y": "z"}}]}]])
      local f = s.root.fields
      assert.equal("\0\255", f[1].default)
      assert.equal("\233a", f[2].default)
      assert.equal(3, f[3].default)
      assert.same({ 1, cjson.null }, f[4].default)
      assert.same({ k = 2 }, f[5].default)
      assert.same({ x = 1, y = "z" }, f[6].default)
    end)

    describe("refuses invalid schemas with a clear error", function()
      local cases = {
        { "{oops", "^invalid Avro schema: bad JSON: .*Expected" },
        { '{"type": "record", "name": "R", "fields": [{"name": "x"}]}',
          "invalid Avro schema: field 'x' of record 'R' has no type" },
        { '{"type": "record", "name": "R", "fields": [{"name": "x", "type": "Foo"}]}',
          "invalid Avro schema: unknown named type 'Foo' (field 'x' of record 'R')" },
        { '{"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}, {"name": "x", "type": "int"}]}',
          "invalid Avro schema: duplicate field 'x' in record 'R'" },
        { '{"type": "enum", "name": "E", "symbols": ["A", "1B"]}',
          'invalid Avro schema: enum \'E\' symbol string ("1B") is not a name' },
        { '{"type": "enum", "name": "E", "symbols": ["A", "A"]}', "invalid Avro schema: enum 'E' has symbol 'A' twice" },
        { '{"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}',
          'invalid Avro schema: enum \'E\' default string ("B") is not one of its symbols' },
        { '{"type": "record", "name": "R", "fields": [{"name": "age", "type": "int", "default": "x"}]}',
          'invalid Avro schema: default of field \'age\' of record \'R\' is not valid for its type int: ' ..
            'expected int, got string ("x")' },
        { '{"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "int"], "default": 1}]}',
          "invalid Avro schema: default of field 'u' of record 'R' is not valid for its type [\"null\",\"int\"]: " ..
            "expected null, got number (1)" },
        { '{"type": "record", "name": "R", "fields": [{"name": "f", "type": {"type": "fixed", "name": "F", "size": 2},' ..
          ' "default": "abc"}]}', "invalid Avro schema: default of field 'f' of record 'R' is not valid for its type " ..
            "fixed F: 3 bytes, the fixed F has 2" },
        { '{"type": "fixed", "name": "F"}', "invalid Avro schema: fixed 'F' has no size" },
        { '{"type": "fixed", "name": "F", "size": -1}', "invalid Avro schema: fixed 'F' size number (-1) is not a " ..
          "non-negative integer" },
        { '{"type": "array"}', "invalid Avro schema: array has no items" },
        { '{"type": "map"}', "invalid Avro schema: map has no values" },
        { '{"type": "record", "fields": []}', "invalid Avro schema: record has no valid name (got nil)" },
        { '{"type": "record", "name": "R"}', "invalid Avro schema: record 'R' has no fields array" },
        { '{"type": "record", "name": "int", "fields": []}', "invalid Avro schema: record name 'int' is a primitive " ..
          "type's name" },
        { '["int", "int"]', "invalid Avro schema: union has two branches of type int" },
        { '["int", ["null"]]', "invalid Avro schema: a union directly inside a union" },
        { '[]', "invalid Avro schema: empty union" },
        { '{"name": "x"}', "invalid Avro schema: schema object has no type" },
        { '"strng"', "invalid Avro schema: unknown named type 'strng'" },
        { '{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "enum", "name": "E", ' ..
          '"symbols": ["A"]}}, {"name": "b", "type": {"type": "enum", "name": "E", "symbols": ["B"]}}]}',
          "invalid Avro schema: named type 'E' is defined twice" },
        { 'null', "invalid Avro schema: a schema is a string, an object or an array, got null" },
      }
      for _, c in ipairs(cases) do
        it(c[1], function()
          local err = err_of(avro.schema, c[1])
          if c[2]:sub(1, 1) == "^" then assert.matches(c[2], err) else assert.equal(c[2], err) end
        end)
      end
    end)
  end)

  describe("binary encoding", function()
    it("writes the Avro spec's examples", function()
      local long = avro.schema('"long"')
      assert.equal("00", hex(long:encode(0)))
      assert.equal("02", hex(long:encode(1)))
      assert.equal("01", hex(long:encode(-1)))
      assert.equal("03", hex(long:encode(-2)))
      assert.equal("7f", hex(long:encode(-64)))
      assert.equal("8001", hex(long:encode(64)))
      assert.equal("06666f6f", hex(avro.schema('"string"'):encode("foo")))
      assert.equal("00", hex(avro.schema('["null", "string"]'):encode(nil)))
      assert.equal("0202", hex(avro.schema('["null", "int"]'):encode(1)))
      assert.equal("0000803f", hex(avro.schema('"float"'):encode(1)))
      assert.equal("000000000000f03f", hex(avro.schema('"double"'):encode(1)))
      assert.equal("3606666f6f", hex(avro.schema('{"type": "record", "name": "test", "fields": [' ..
        '{"name": "a", "type": "long"}, {"name": "b", "type": "string"}]}'):encode({ a = 27, b = "foo" })))
      assert.equal("04060800", hex(avro.schema('{"type": "array", "items": "long"}'):encode({ 3, 4 })))
    end)

    it("round-trips a record of every type", function()
      local v = all_value()
      local out = round_trip(ALL, v)
      assert.same(v, out)
    end)

    it("round-trips int bounds and longs of every size", function()
      local int, long = avro.schema('"int"'), avro.schema('"long"')
      for _, x in ipairs({ 0, 1, -1, 63, -64, 64, 8191, 8192, 2147483647, -2147483648 }) do
        assert.equal(x, round_trip(int, x))
        assert.equal(x, round_trip(long, x))
      end
      assert.equal("ffffffff0f", hex(int:encode(-2147483648)))
      for _, x in ipairs({ 2 ^ 31, -2 ^ 31 - 1, 2 ^ 40 + 3, -(2 ^ 52) + 1, 2 ^ 53, -2 ^ 53 }) do
        assert.equal(x, round_trip(long, x))
      end
      -- beyond 2^53: int64_t cdata
      local big = round_trip(long, 2 ^ 53 + 2)
      assert.is_true(ffi.istype("int64_t", big))
      assert.equal("9007199254740994LL", tostring(big))
      local max, min = ffi.new("int64_t", 0x7fffffffffffffffLL), -0x7fffffffffffffffLL - 1
      assert.equal("feffffffffffffffff01", hex(long:encode(max)))
      assert.equal("ffffffffffffffffff01", hex(long:encode(min)))
      assert.equal(tostring(max), tostring(round_trip(long, max)))
      assert.equal(tostring(min), tostring(round_trip(long, min)))
      assert.equal("9007199254740993LL", tostring(round_trip(long, 9007199254740993LL)))
      assert.equal("-9007199254740995LL", tostring(round_trip(long, -9007199254740995LL)))
      assert.equal(2 ^ 62, tonumber(round_trip(long, 2 ^ 62)))
      assert.equal(12, round_trip(long, 12ULL))
    end)

    it("round-trips longs and ints at every varint length, mid-datum and at its end", function()
      local longs = avro.schema('{"type": "array", "items": "long"}')
      local ints = avro.schema('{"type": "array", "items": "int"}')
      local lv, iv = {}, {}
      for k = 0, 62 do
        local p = ffi.new("int64_t", 1) * 2 ^ k
        for _, x in ipairs({ p - 1, p, p + 1, -p, -p - 1, -p + 1 }) do
          if x >= -9007199254740992LL and x <= 9007199254740992LL then lv[#lv + 1] = tonumber(x) else lv[#lv + 1] = x end
          if x >= -2147483648LL and x <= 2147483647LL then iv[#iv + 1] = tonumber(x) end
        end
      end
      local out = round_trip(longs, lv)
      assert.equal(#lv, #out)
      for k = 1, #lv do assert.equal(tostring(lv[k]), tostring(out[k])) end
      assert.same(iv, round_trip(ints, iv))
      local long, int = avro.schema('"long"'), avro.schema('"int"')
      for k = 1, #lv do assert.equal(tostring(lv[k]), tostring(round_trip(long, lv[k]))) end
      for k = 1, #iv do assert.equal(iv[k], round_trip(int, iv[k])) end
    end)

    it("round-trips floats and doubles", function()
      local float, double = avro.schema('"float"'), avro.schema('"double"')
      assert.equal(1.5, round_trip(float, 1.5))
      assert.equal(-0.25, round_trip(float, -0.25))
      assert.is_true(math.abs(round_trip(float, 0.1) - 0.1) < 1e-8)
      assert.are_not.equal(0.1, round_trip(float, 0.1)) -- single precision
      assert.equal(0.1, round_trip(double, 0.1))
      assert.equal(math.huge, round_trip(double, math.huge))
      local nan = round_trip(double, 0 / 0)
      assert.is_true(nan ~= nan)
      assert.equal(1e308, round_trip(double, 1e308))
    end)

    it("round-trips strings and bytes, unicode and NULs", function()
      local str, bytes = avro.schema('"string"'), avro.schema('"bytes"')
      assert.equal("", round_trip(str, ""))
      assert.equal("日本語 ✓ é", round_trip(str, "日本語 ✓ é"))
      assert.equal("\0\1\2\255\0", round_trip(bytes, "\0\1\2\255\0"))
      local long = string.rep("0123456789", 10000)
      assert.equal(long, round_trip(str, long))
    end)

    it("round-trips arrays and maps with no items and many", function()
      local arr = avro.schema('{"type": "array", "items": "string"}')
      local map = avro.schema('{"type": "map", "values": "long"}')
      assert.same({}, round_trip(arr, {}))
      assert.same({}, round_trip(map, {}))
      assert.equal("00", hex(arr:encode({})))
      local many, m = {}, {}
      for k = 1, 5000 do many[k] = "s" .. k; m["k" .. k] = k * 1000 end
      assert.same(many, round_trip(arr, many))
      assert.same(m, round_trip(map, m))
      local nested = avro.schema('{"type": "array", "items": {"type": "map", "values": {"type": "array", "items": "int"}}}')
      local v = { { a = { 1, 2 }, b = {} }, {}, { c = { 3 } } }
      assert.same(v, round_trip(nested, v))
    end)

    it("keeps nulls in arrays and maps as cjson.null", function()
      local arr = avro.schema('{"type": "array", "items": ["null", "int"]}')
      local map = avro.schema('{"type": "map", "values": "null"}')
      assert.same({ 1, cjson.null, 3 }, round_trip(arr, { 1, cjson.null, 3 }))
      assert.same({ a = cjson.null }, round_trip(map, { a = cjson.null }))
    end)

    it("round-trips nested records and a recursive linked list", function()
      local list = { value = 1, next = { value = 2, next = { value = 3 } } }
      assert.same(list, round_trip(LIST, list))
      assert.equal("020204020600", hex(LIST:encode(list)))
      local long = { value = 0 }
      for k = 1, 500 do long = { value = k, next = long } end
      assert.same(long, round_trip(LIST, long))
    end)

    it("decodes the block form with negative counts and byte sizes", function()
      local arr = avro.schema('{"type": "array", "items": "long"}')
      -- count -2, size 2 bytes, 1 2; count 1, 3; end
      assert.same({ 1, 2, 3 }, arr:decode(unhex("03 04 02 04 02 06 00")))
      local map = avro.schema('{"type": "map", "values": "int"}')
      -- count -1, size 4, "ab" -> 5; end
      assert.same({ ab = 5 }, map:decode(unhex("01 08 04 61 62 0a 00")))
      local err = err_of(arr.decode, arr, unhex("03 03 02 04 00"))
      assert.matches("^negative length %-2", err)
    end)

    it("picks union branches by value", function()
      local u = avro.schema('["null", "boolean", "int", "long", "double", "string", ' ..
        '{"type": "enum", "name": "E", "symbols": ["A"]}, {"type": "array", "items": "int"}, ' ..
        '{"type": "map", "values": "int"}]')
      assert.equal("00", hex(u:encode(nil)))
      assert.equal("00", hex(u:encode(cjson.null)))
      assert.equal("0201", hex(u:encode(true)))
      assert.equal("0402", hex(u:encode(1)))
      assert.equal("068080808010", hex(u:encode(2 ^ 31)))
      assert.equal("08000000000000f83f", hex(u:encode(1.5)))
      assert.equal("0a0241", hex(u:encode("A")))
      assert.equal("0e0202", hex(u:encode({ 1 })):sub(1, 6))
      assert.equal("0e00", hex(u:encode({})))
      assert.equal("100202610200", hex(u:encode({ a = 1 })))
      assert.equal("060a", hex(u:encode(ffi.new("int64_t", 5))))
      assert.same({ a = 1 }, u:decode(u:encode({ a = 1 })))
      local e = avro.schema('[{"type": "enum", "name": "E", "symbols": ["A"]}, "string"]')
      assert.equal("0000", hex(e:encode("A")))
      assert.equal("020242", hex(e:encode("B")))
      assert.equal("00000000000000f03f", hex(avro.schema('["double", "int"]'):encode(1)))
      assert.equal("0002", hex(avro.schema('["int", "double"]'):encode(1)))
      assert.equal("02", hex(avro.schema('["int", "long"]'):encode(2 ^ 40)):sub(1, 2))
      local fl = avro.schema('["null", {"type": "fixed", "name": "F", "size": 2}, "bytes"]')
      assert.equal("026162", hex(fl:encode("ab")))
      assert.equal("0406616263", hex(fl:encode("abc")))
    end)

    it("decodes from a char pointer and a length", function()
      local bytes = ALL:encode(all_value())
      local buf = ffi.new("char[?]", #bytes + 10)
      ffi.copy(buf, bytes, #bytes)
      assert.same(all_value(), ALL:decoder()(ffi.cast("const char *", buf), #bytes))
      assert.same(all_value(), ALL:decoder()(buf, ffi.new("size_t", #bytes)))
    end)

    it("caches decoders and encoders", function()
      local r = avro.schema(ALL.text)
      assert.equal(ALL:decoder(), ALL:decoder())
      assert.equal(ALL:decoder(), ALL:decoder(ALL))
      assert.equal(ALL:decoder(r), ALL:decoder(r))
      assert.are_not.equal(ALL:decoder(), ALL:decoder(r))
      assert.equal(ALL:encoder(), ALL:encoder())
    end)

    it("encodes into a buffer reused and grown", function()
      local enc = avro.schema('"string"'):encoder()
      local p1, n1 = enc(string.rep("x", 10))
      assert.equal(11, n1)
      local big = string.rep("y", 100000)
      local p2, n2 = enc(big)
      assert.equal(100003, n2)
      assert.equal(big, ffi.string(p2 + 3, n2 - 3))
      local _, n3 = enc("z")
      assert.equal(2, n3)
      -- check() does not write into the encoder's buffer
      local p4, n4 = enc("keep")
      assert.equal("other", avro.schema('"string"'):check("other"))
      local s = avro.schema('"string"')
      local p5, n5 = s:encoder()("keep")
      assert.equal("other", s:check("other"))
      assert.equal("\8keep", ffi.string(p5, n5))
      assert.equal("\8keep", ffi.string(p4, n4))
    end)
  end)

  describe("decoding errors", function()
    local RU = avro.schema([[{"type": "record", "name": "Outer", "fields": [
      {"name": "user", "type": {"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}}]}]])

    it("names the problem and the field", function()
      -- name "a", tags: count 2, "x", then a length of -1
      local err = err_of(RU.decode, RU, unhex("02 61 04 02 78 01"))
      assert.equal("negative length -1 at offset 6 at field user.tags[2]", err)
      err = err_of(RU.decode, RU, unhex("02 61 04 02 78"))
      assert.equal("Avro datum ends early: 1 byte(s) needed at offset 5, 0 left at field user.tags[2]", err)
    end)

    it("refuses bytes left after the datum", function()
      assert.equal("1 bytes left after the datum", err_of(avro.schema('"long"').decode, avro.schema('"long"'), "\2\0"))
    end)

    it("refuses bad union, enum and boolean bytes", function()
      local u = avro.schema('["null", "string", "int"]')
      assert.equal("union branch index 7 out of range (3 branches)", err_of(u.decode, u, "\14"))
      assert.equal("union branch index -1 out of range (3 branches)", err_of(u.decode, u, "\1"))
      local e = avro.schema('{"type": "enum", "name": "Color", "symbols": ["R", "G", "B"]}')
      assert.equal("enum index 10 out of range (3 symbols of Color)", err_of(e.decode, e, "\20"))
      assert.equal("enum index -1 out of range (3 symbols of Color)", err_of(e.decode, e, "\1"))
      local b = avro.schema('"boolean"')
      assert.equal("boolean byte 5", err_of(b.decode, b, "\5"))
      local r = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "ok", "type": "boolean"}]}')
      assert.equal("boolean byte 2 at field ok", err_of(r.decode, r, "\2"))
    end)

    it("refuses negative lengths and lengths past the end", function()
      local s = avro.schema('"string"')
      assert.equal("negative length -2 at offset 1", err_of(s.decode, s, "\3"))
      assert.equal("Avro datum ends early: 3 byte(s) needed at offset 1, 2 left", err_of(s.decode, s, "\6ab"))
      -- a length of 2^62: an error, not an allocation
      assert.matches("^Avro datum ends early: 4611686018427387904LL byte%(s%) needed",
        err_of(s.decode, s, unhex("80808080808080808001") .. "abc"))
      local f = avro.schema('{"type": "fixed", "name": "F", "size": 4}')
      assert.equal("Avro datum ends early: 4 byte(s) needed at offset 0, 3 left", err_of(f.decode, f, "abc"))
    end)

    it("refuses counts the bytes left cannot hold", function()
      local arr = avro.schema('{"type": "array", "items": "long"}')
      assert.equal("block count 1000000 at offset 3 is more than the 2 bytes left can hold",
        err_of(arr.decode, arr, unhex("80897a 0202")))
      assert.matches("^block count 4611686018427387904LL at offset 10 is more",
        err_of(arr.decode, arr, unhex("80808080808080808001 02")))
      local nulls = avro.schema('{"type": "array", "items": "null"}')
      assert.same({ cjson.null, cjson.null, cjson.null }, nulls:decode("\6\0"))
      assert.matches("^block count 2000000 ", err_of(nulls.decode, nulls, unhex("8092f40100")))
      local map = avro.schema('{"type": "map", "values": "null"}')
      assert.matches("^block count 1000 at offset 2 is more", err_of(map.decode, map, unhex("d00f 0000")))
      assert.matches("^negative block count %-9223372036854775808LL",
        err_of(arr.decode, arr, unhex("ffffffffffffffffff01 00")))
    end)

    it("refuses varints that are too long", function()
      local long, int = avro.schema('"long"'), avro.schema('"int"')
      assert.equal("varint longer than 64 bits at offset 9", err_of(long.decode, long, string.rep("\128", 10) .. "\0"))
      assert.equal("varint longer than 64 bits at offset 9", err_of(long.decode, long, string.rep("\255", 9) .. "\2"))
      assert.equal("int varint out of the int range at offset 0", err_of(int.decode, int, "\128\128\128\128\16"))
      assert.equal("int varint longer than 5 bytes at offset 0", err_of(int.decode, int, string.rep("\128", 5) .. "\0"))
      assert.equal(2147483647, int:decode("\254\255\255\255\15"))
    end)

    it("fails cleanly on a datum cut at every byte", function()
      local bytes = ALL:encode(all_value())
      for k = 0, #bytes - 1 do
        local err = err_of(ALL.decode, ALL, bytes:sub(1, k))
        -- a block count is checked against the bytes left before its items are read
        assert.is_truthy(err:find("ends early", 1, true) or err:find("^block count %d+ at offset %d+ is more"), err)
      end
      local lb = LIST:encode({ value = 1, next = { value = 2, next = { value = 300 } } })
      for k = 0, #lb - 1 do
        assert.matches("ends early", err_of(LIST.decode, LIST, lb:sub(1, k)))
      end
    end)

    it("decodes random bytes to a value or a clean error", function()
      math.randomseed(20240601)
      local values, errors = 0, 0
      local schemas = { ALL, LIST, avro.schema('{"type": "map", "values": {"type": "array", "items": "null"}}') }
      collectgarbage()
      local before = collectgarbage("count")
      for n = 1, 1000 do
        local len = math.random(0, 80)
        local t = {}
        for k = 1, len do t[k] = string.char(math.random(0, 255)) end
        local bytes = table.concat(t)
        -- a valid prefix now and then, to get past the first fields
        if n % 3 == 0 then bytes = ALL:encode(all_value()):sub(1, math.random(0, 40)) .. bytes end
        for _, s in ipairs(schemas) do
          local ok, v = pcall(s.decode, s, bytes)
          if ok then values = values + 1 else
            assert.is_string(v)
            assert.is_nil(v:find("attempt to", 1, true), v)
            errors = errors + 1
          end
        end
      end
      assert.equal(3000, values + errors)
      assert.is_true(errors > 0)
      assert.is_true(collectgarbage("count") - before < 100 * 1024)
    end)
  end)

  describe("encoding errors", function()
    local RU = avro.schema([[{"type": "record", "name": "R", "fields": [
      {"name": "id", "type": "long"},
      {"name": "user", "type": {"type": "record", "name": "U", "fields": [
        {"name": "age", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
      {"name": "n", "type": "int", "default": 0},
      {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}, "default": "A"},
      {"name": "u", "type": ["null", "int"]},
      {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}, "default": "ab"},
      {"name": "m", "type": {"type": "map", "values": "boolean"}, "default": {}},
      {"name": "f", "type": "float", "default": 0}]}]])
    local function value(t)
      local v = { id = 1, user = { age = 3, tags = { "a" } } }
      for k, x in pairs(t) do v[k] = x end
      return v
    end

    it("name the field and the problem", function()
      local cases = {
        { value({ user = { age = "abc", tags = {} } }), "field 'user.age': expected int, got string (\"abc\")" },
        { value({ id = false }), "field 'id': expected long, got boolean (false)" },
        { { user = { age = 1, tags = {} } }, "field 'id': missing (nil) and the field has no default" },
        { value({ n = 3.5 }), "field 'n': 3.5 is not a whole number" },
        { value({ n = 3000000000 }), "field 'n': 3000000000 does not fit an int" },
        { value({ id = 2 ^ 63 }), "field 'id': 9223372036854775808 does not fit a long" },
        { value({ id = 0.5 }), "field 'id': 0.5 is not a whole number" },
        { value({ kind = "FOO" }), "field 'kind': 'FOO' is not a symbol of enum Kind" },
        { value({ kind = 1 }), "field 'kind': expected enum Kind, got number (1)" },
        { value({ u = {} }), "field 'u': no branch of union [\"null\",\"int\"] takes a table" },
        { value({ u = 1.5 }), "field 'u': no branch of union [\"null\",\"int\"] takes number (1.5)" },
        { value({ user = { age = 1, tags = { "a", 5 } } }), "field 'user.tags[2]': expected string, got number (5)" },
        { value({ user = "x" }), "field 'user': expected record U, got string (\"x\")" },
        { value({ fx = "abc" }), "field 'fx': 3 bytes, the fixed F has 2" },
        { value({ m = { [1] = true } }), "field 'm': map key number (1) is not a string" },
        { value({ m = { a = 1 } }), "field 'm[\"a\"]': expected boolean, got number (1)" },
        { value({ f = "1" }), "field 'f': expected float, got string (\"1\")" },
        { value({ id = ffi.new("uint64_t", 2 ^ 63) }), "field 'id': 9223372036854775808ULL does not fit a long" },
      }
      local enc = RU:encoder()
      for _, c in ipairs(cases) do
        assert.equal(c[2], err_of(enc, c[1]))
      end
      assert.equal("expected int, got string (\"x\")", err_of(avro.schema('"int"').encode, avro.schema('"int"'), "x"))
      assert.equal("expected record R, got nil", err_of(RU.encode, RU, nil))
    end)

    it("fill missing fields with null or the default", function()
      local out = RU:check(value({ extra = "dropped", u = cjson.null }))
      assert.same({ id = 1, user = { age = 3, tags = { "a" } }, n = 0, kind = "A", fx = "ab", m = {}, f = 0 }, out)
      -- the encoder still works after an error
      assert.same(value({ n = 2, u = 5, kind = "B", fx = "xy", m = { t = true }, f = 0.5 }),
        RU:check(value({ n = 2, u = 5, kind = "B", fx = "xy", m = { t = true }, f = 0.5 })))
    end)

    it("take int64 cdata for ints in range", function()
      assert.equal(5, avro.schema('"int"'):check(ffi.new("int64_t", 5)))
      assert.equal("field 'n': 5000000000LL does not fit an int",
        err_of(RU.encode, RU, value({ n = ffi.new("int64_t", 5000000000) })))
    end)
  end)

  describe("schema resolution", function()
    local V1 = avro.schema([[{"type": "record", "name": "User", "namespace": "v1", "fields": [
      {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}]])

    it("fills fields the writer lacks with the reader's defaults", function()
      local V2 = avro.schema([[{"type": "record", "name": "User", "namespace": "v2", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "email", "type": "string", "default": "none"},
        {"name": "n", "type": "int", "default": 5},
        {"name": "r", "type": {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]},
         "default": {"x": 1}},
        {"name": "a", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
        {"name": "u", "type": ["null", "string"], "default": null},
        {"name": "b", "type": "bytes", "default": "\u00ff"}]}]])
      local dec = V1:decoder(V2)
      local bytes = V1:encode({ id = 7, name = "n" })
      local out = dec(bytes, #bytes)
      assert.same({ id = 7, name = "n", email = "none", n = 5, r = { x = 1 }, a = { 1, 2 }, b = "\255" }, out)
      -- a fresh copy each time
      out.a[1] = 99
      assert.same({ 1, 2 }, V1:decode(bytes, V2).a)
      assert.are_not.equal(V1:decode(bytes, V2).r, V1:decode(bytes, V2).r)
    end)

    it("skips fields the reader lacks", function()
      local W = avro.schema([[{"type": "record", "name": "User", "fields": [
        {"name": "id", "type": "long"}, {"name": "skip", "type": {"type": "record", "name": "S", "fields": [
          {"name": "a", "type": {"type": "array", "items": "string"}},
          {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
          {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
          {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
          {"name": "fl", "type": "float"}, {"name": "b", "type": "boolean"}, {"name": "n", "type": "null"}]}},
        {"name": "name", "type": "string"}]}]])
      local bytes = W:encode({ id = 1, name = "x", skip = { a = { "p", "q" }, m = { k = 1.5, z = cjson.null },
        f = "abc", e = "Y", fl = 2, b = true } })
      assert.same({ id = 1, name = "x" }, W:decode(bytes, V1))
      local err = err_of(W.decode, W, bytes:sub(1, 5), V1)
      assert.matches("ends early", err)
    end)

    it("promotes numbers and converts strings and bytes", function()
      local W = avro.schema([[{"type": "record", "name": "P", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "long"}, {"name": "c", "type": "float"},
        {"name": "d", "type": "string"}, {"name": "e", "type": "bytes"}, {"name": "f", "type": "int"},
        {"name": "g", "type": "long"}, {"name": "h", "type": "int"}]}]])
      local R = avro.schema([[{"type": "record", "name": "P", "fields": [
        {"name": "a", "type": "long"}, {"name": "b", "type": "double"}, {"name": "c", "type": "double"},
        {"name": "d", "type": "bytes"}, {"name": "e", "type": "string"}, {"name": "f", "type": "float"},
        {"name": "g", "type": "float"}, {"name": "h", "type": "double"}]}]])
      local bytes = W:encode({ a = 1, b = 2 ^ 40, c = 1.5, d = "s", e = "\0b", f = 16777217, g = 3, h = -4 })
      assert.same({ a = 1, b = 2 ^ 40, c = 1.5, d = "s", e = "\0b", f = 16777216, g = 3, h = -4 }, W:decode(bytes, R))
    end)

    it("matches renamed fields and records through aliases", function()
      local R = avro.schema([[{"type": "record", "name": "Person", "aliases": ["v1.User"], "fields": [
        {"name": "id", "type": "long"}, {"name": "full_name", "type": "string", "aliases": ["name"]}]}]])
      assert.same({ id = 1, full_name = "Ann" }, V1:decode(V1:encode({ id = 1, name = "Ann" }), R))
      local R2 = avro.schema([[{"type": "record", "name": "Person", "fields": [{"name": "id", "type": "long"}]}]])
      assert.matches("^cannot resolve: the writer's record v1.User does not match the reader's record Person",
        err_of(V1.decoder, V1, R2))
    end)

    it("maps enum symbols, to the reader's default when unknown", function()
      local W = avro.schema('{"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}')
      local R = avro.schema('{"type": "enum", "name": "E", "symbols": ["C", "A"], "default": "A"}')
      local R0 = avro.schema('{"type": "enum", "name": "E", "symbols": ["C", "A"]}')
      assert.equal("C", W:decode(W:encode("C"), R))
      assert.equal("A", W:decode(W:encode("B"), R))
      assert.equal("C", W:decode(W:encode("C"), R0))
      assert.equal("enum symbol 'B' of E is not in the reader's enum E", err_of(W.decode, W, W:encode("B"), R0))
    end)

    it("resolves unions to non-unions and back", function()
      local W = avro.schema('["null", "string"]')
      local S = avro.schema('"string"')
      assert.equal("x", W:decode(W:encode("x"), S))
      assert.equal("union branch 0 (null) of the writer has no match in the reader's schema",
        err_of(W.decode, W, W:encode(nil), S))
      local I = avro.schema('"int"')
      local U = avro.schema('["null", "string", "long"]')
      assert.equal(7, I:decode(I:encode(7), U))
      assert.equal("x", S:decode(S:encode("x"), U))
      local WU = avro.schema('["null", "int", "boolean"]')
      local RU = avro.schema('["double", "null"]')
      assert.equal(3, WU:decode(WU:encode(3), RU))
      assert.is_nil(WU:decode(WU:encode(nil), RU))
      assert.matches("^union branch 2 %(boolean%)", err_of(WU.decode, WU, WU:encode(true), RU))
      -- a union in a record field
      local WR = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "v", "type": ["null", "int"]}]}')
      local RR = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "v", "type": "long"}]}')
      assert.same({ v = 4 }, WR:decode(WR:encode({ v = 4 }), RR))
      assert.matches("at field v$", err_of(WR.decode, WR, WR:encode({}), RR))
    end)

    it("resolves recursive records", function()
      local R = avro.schema([[{"type": "record", "name": "Node", "fields": [
        {"name": "value", "type": "long"}, {"name": "label", "type": "string", "default": "-"},
        {"name": "next", "type": ["null", "Node"]}]}]])
      assert.same({ value = 1, label = "-", next = { value = 2, label = "-" } },
        LIST:decode(LIST:encode({ value = 1, next = { value = 2 } }), R))
    end)

    it("refuses incompatible schemas when the decoder is built", function()
      local W = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "x", "type": "string"}]}')
      local R = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]}')
      assert.equal("cannot resolve: the writer's string does not match the reader's int at field x",
        err_of(W.decoder, W, R))
      local R2 = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "x", "type": "string"}, ' ..
        '{"name": "y", "type": "int"}]}')
      assert.equal("cannot resolve: reader field 'y' has no default and the writer has no such field (record R)",
        err_of(W.decoder, W, R2))
      local F4 = avro.schema('{"type": "fixed", "name": "F", "size": 4}')
      local F5 = avro.schema('{"type": "fixed", "name": "F", "size": 5}')
      assert.matches("^cannot resolve", err_of(F4.decoder, F4, F5))
      local L = avro.schema('"long"')
      assert.matches("^cannot resolve", err_of(L.decoder, L, avro.schema('"int"')))
      local WU = avro.schema('["null", "boolean"]')
      assert.matches("^cannot resolve", err_of(WU.decoder, WU, avro.schema('"string"')))
      assert.matches("^cannot resolve", err_of(L.decoder, L, avro.schema('["null", "string"]')))
      local A = avro.schema('{"type": "array", "items": "string"}')
      assert.equal("cannot resolve: the writer's string does not match the reader's int at field []",
        err_of(A.decoder, A, avro.schema('{"type": "array", "items": "int"}')))
    end)
  end)

  describe("canonical and same", function()
    it("gives the Parsing Canonical Form", function()
      assert.equal('"int"', avro.canonical(avro.schema('{"type": "int", "logicalType": "date"}')))
      assert.equal('{"name":"a.E","type":"enum","symbols":["X","Y"]}',
        avro.canonical(avro.schema('{"type": "enum", "namespace": "a", "name": "E", "doc": "d", "symbols": ["X", "Y"]}')))
      assert.equal('["null",{"type":"map","values":{"type":"array","items":"long"}}]',
        avro.canonical(avro.schema('["null", {"type": "map", "values": {"type": "array", "items": "long"}}]')))
      assert.equal('{"name":"Node","type":"record","fields":[{"name":"value","type":"int"},' ..
        '{"name":"next","type":["null","Node"]}]}', avro.canonical(LIST))
    end)

    it("compares schemas by canonical form", function()
      local a = avro.schema('{"type": "record", "name": "R", "namespace": "x", "doc": "one", "fields": [' ..
        '{"name": "f", "type": "int", "default": 1, "doc": "d"}]}')
      local b = avro.schema('{"name":"x.R","type":"record","aliases":["Q"],"fields":[{"type":{"type":"int"},"name":"f"}]}')
      local c = avro.schema('{"type": "record", "name": "R", "namespace": "x", "fields": [{"name": "f", "type": "long"}]}')
      local d = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "f", "type": "int"}]}')
      assert.is_true(avro.same(a, b))
      assert.is_false(avro.same(a, c))
      assert.is_false(avro.same(a, d))
    end)
  end)

  describe("fastavro", function()
    local have = os.execute("python3 -c 'import fastavro' >/dev/null 2>&1")
    have = have == 0 or have == true
    local SCHEMA = [[{"type": "record", "name": "X", "namespace": "n", "fields": [
      {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
      {"name": "score", "type": "double"}, {"name": "ratio", "type": "float"}, {"name": "ok", "type": "boolean"},
      {"name": "tags", "type": {"type": "array", "items": "string"}},
      {"name": "email", "type": ["null", "string"]},
      {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
      {"name": "counts", "type": {"type": "map", "values": "long"}},
      {"name": "data", "type": "bytes"},
      {"name": "next", "type": ["null", "X"]}]}]]
    local SCRIPT = [[
import io, json, sys, fastavro
def ints(v):
    if isinstance(v, float) and v.is_integer(): return int(v)
    if isinstance(v, dict): return {k: ints(x) for k, x in v.items()}
    if isinstance(v, list): return [ints(x) for x in v]
    return v
schema = fastavro.parse_schema(json.load(open(sys.argv[1])))
for line in open(sys.argv[3]):
    if sys.argv[2] == "read":
        v = fastavro.schemaless_reader(io.BytesIO(bytes.fromhex(line.strip())), schema)
        print(json.dumps(v, default=lambda b: b.hex(), sort_keys=True))
    else:
        def unhex(v):
            if v is None: return v
            v["data"] = bytes.fromhex(v["data"]); unhex(v.get("next")); return v
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, unhex(ints(json.loads(line))))
        print(out.getvalue().hex())
]]
    local values = {
      { id = 1, name = "a", age = 30, score = 1.5, ratio = 0.25, ok = true, tags = { "x", "y" }, email = "e@x",
        kind = "B", counts = { a = 1, b = -2 }, data = "00ff10" },
      { id = -2 ^ 40, name = "日本 ✓", age = -2147483648, score = -1e300, ratio = -2, ok = false, tags = {},
        kind = "A", counts = {}, data = "", next = { id = 1e17, name = "", age = 0, score = 0, ratio = 0, ok = true,
          tags = { "" }, kind = "A", counts = { z = 2 ^ 40 }, data = "00" } },
    }
    local function with_bytes(v)
      if v == nil then return nil end
      local out = {}
      for k, x in pairs(v) do out[k] = x end
      out.data = unhex(v.data)
      out.next = with_bytes(v.next)
      return out
    end
    local function run(mode, lines)
      local dir = os.tmpname()
      os.remove(dir)
      local files = { schema = dir .. ".avsc", script = dir .. ".py", input = dir .. ".in" }
      local function write(path, text) local f = assert(io.open(path, "w")); f:write(text); f:close() end
      write(files.schema, SCHEMA)
      write(files.script, SCRIPT)
      write(files.input, table.concat(lines, "\n") .. "\n")
      local p = io.popen(string.format("python3 %s %s %s %s", files.script, files.schema, mode, files.input))
      local out = {}
      for line in p:lines() do out[#out + 1] = line end
      p:close()
      for _, f in pairs(files) do os.remove(f) end
      return out
    end

    it("reads what the encoder writes and writes what the decoder reads", function()
      if not have then pending("python3 with fastavro is not installed") return end
      local s = avro.schema(SCHEMA)
      local lines = {}
      for k, v in ipairs(values) do lines[k] = hex(s:encode(with_bytes(v))) end
      local read = run("read", lines)
      assert.equal(#values, #read)
      for k, v in ipairs(values) do
        local expected = cjson.decode(cjson.encode(v))
        local got = cjson.decode(read[k])
        local function strip(t) -- fastavro writes nulls; drop them, as the encoder's input had none
          for key, x in pairs(t) do
            if x == cjson.null then t[key] = nil elseif type(x) == "table" then strip(x) end
          end
          return t
        end
        assert.same(expected, strip(got))
      end
      local enc = {}
      for k, v in ipairs(values) do enc[k] = cjson.encode(v) end
      local written = run("write", enc)
      assert.equal(#values, #written)
      for k, v in ipairs(values) do
        local got = s:decode(unhex(written[k]))
        if got.next then got.next.id = tonumber(got.next.id) end
        assert.same(with_bytes(v), got)
      end
    end)
  end)
end)

describe("gobblin.converter.json_to_avro", function()
  local TEXT = [[{"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"}, {"name": "kind", "type": "string", "default": "click"},
    {"name": "note", "type": ["null", "string"]}, {"name": "tags", "type": {"type": "array", "items": "string"},
     "default": []}]}]]

  it("keeps the schema's fields, fills defaults and drops the rest", function()
    local conv = converter.json_to_avro(avro.schema(TEXT))
    assert.same({ id = 5, kind = "click", tags = {} }, conv('{"id": 5, "extra": {"x": 1}, "note": null}'))
    assert.same({ id = 5, kind = "view", note = "n", tags = { "a" } },
      conv({ id = 5, kind = "view", note = "n", tags = { "a" } }))
  end)

  it("takes the schema as text, or from ctx.output_schema", function()
    assert.same({ id = 1, kind = "click", tags = {} }, converter.json_to_avro(TEXT)('{"id": 1}'))
    local conv = converter.json_to_avro()
    assert.same({ id = 2, kind = "click", tags = {} }, conv('{"id": 2}', { output_schema = avro.schema(TEXT) }))
    assert.equal("json_to_avro needs a schema: pass one or set the job's schema", err_of(conv, '{"id": 2}', {}))
  end)

  it("names a missing field and a wrong type", function()
    local conv = converter.json_to_avro(TEXT)
    assert.equal("field 'id': missing (nil) and the field has no default", err_of(conv, '{"kind": "x"}'))
    assert.equal("field 'id': expected long, got string (\"5\")", err_of(conv, '{"id": "5"}'))
    assert.matches("^invalid JSON", err_of(conv, "{oops"))
  end)

  it("drops a null payload and reads record views", function()
    local gffi = require("gobblin.ffi")
    local conv = converter.json_to_avro(TEXT)
    assert.is_nil(conv(gffi.record_t()))
    assert.is_nil(conv("null"))
    local payload = '{"id": 9, "tags": ["t"]}'
    local rec = gffi.record_t()
    rec.value_ptr = payload
    rec.value_len = #payload
    assert.same({ id = 9, kind = "click", tags = { "t" } }, conv(rec))
    assert.equal(payload, rec:value()) -- payload kept alive until here
  end)

  it("gives values the encoder writes", function()
    local s = avro.schema(TEXT)
    local v = converter.json_to_avro(s)('{"id": 3, "note": "x"}')
    assert.same(v, s:decode(s:encode(v)))
  end)
end)
