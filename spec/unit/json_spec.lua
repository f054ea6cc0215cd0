-- gobblin.json: the engine's JSON codec (engine/json.c and its Lua glue in engine/lua_bridge.c), loaded from
-- libkingest_ffi.so as the engine loads it into each task's state. cjson (Lua's usual codec) is the independent
-- reader and writer the results are checked against, and tonumber (strtod) the reference for numbers.
local ffi = require("ffi")
local json = require("gobblin.json")
local gffi = require("gobblin.ffi")
local cjson = require("cjson")

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- Whether A and B are the same double, bit for bit (so -0 is not 0).
local bits = ffi.new("union { double d; uint64_t u; }[2]")
local function same_double(a, b)
  bits[0].d, bits[1].d = a, b
  return bits[0].u == bits[1].u
end

describe("gobblin.json", function()
  describe("decode", function()
    it("reads objects, arrays, strings, numbers, booleans and null, nested", function()
      local text = '{"id":7,"name":"n","tags":["a","b"],"ok":true,"no":false,"gone":null,' ..
        '"nested":{"deeper":{"list":[1,[2,[3]],{}]}},"empty":[],"score":-2.5e-3}'
      local v = json.decode(text)
      assert.are.equal(7, v.id)
      assert.are.equal("n", v.name)
      assert.same({ "a", "b" }, v.tags)
      assert.is_true(v.ok)
      assert.is_false(v.no)
      assert.are.equal(json.null, v.gone) -- the key is kept
      assert.are.equal(3, v.nested.deeper.list[2][2][1])
      assert.same({}, v.empty)
      assert.are.equal(-0.0025, v.score)
      -- Everything as cjson reads it.
      assert.same(cjson.decode(text), v)
    end)

    it("takes white space around and between tokens, and nothing else after the value", function()
      assert.same({ a = { 1, 2 } }, json.decode(' \t\r\n{ "a" : [ 1 , 2 ] } \n'))
      assert.are.equal(5, json.decode("5"))
      assert.are.equal("s", json.decode('"s"'))
      assert.are.equal(json.null, json.decode("null"))
    end)

    it("decodes escapes: the short ones, \\u in the BMP, surrogate pairs joined into one UTF-8 character", function()
      assert.are.equal('"\\/\b\f\n\r\t', json.decode('"\\"\\\\\\/\\b\\f\\n\\r\\t"'))
      assert.are.equal("A\0B", json.decode('"A\\u0000B"'))
      assert.are.equal("\xc3\xa9", json.decode('"\\u00e9"'))         -- é, two bytes
      assert.are.equal("\xe2\x82\xac", json.decode('"\\u20AC"'))     -- €, three bytes
      assert.are.equal("\xef\xbf\xbf", json.decode('"\\uffff"'))
      assert.are.equal("\xf0\x9f\x98\x80", json.decode('"\\ud83d\\ude00"')) -- U+1F600, four bytes
      assert.are.equal("\xf4\x8f\xbf\xbf", json.decode('"\\udbff\\udfff"')) -- U+10FFFF
      assert.are.equal("x\xf0\x9f\x98\x80y", json.decode('"x\\uD83D\\uDE00y"'))
      -- Raw UTF-8 passes as it is, and so do bytes that are not UTF-8.
      assert.are.equal("h\xc3\xa9 \xff", json.decode('"h\xc3\xa9 \xff"'))
      -- Keys are decoded the same way.
      assert.same({ ["\xc3\xa9"] = 1 }, json.decode('{"\\u00e9":1}'))
      -- As cjson reads them.
      for _, s in ipairs({ '"\\u00e9\\u20ac\\ud83d\\ude00"', '"a\\"b"', '"\\u0041"' }) do
        assert.are.equal(cjson.decode(s), json.decode(s))
      end
    end)

    it("keeps long strings and many keys", function()
      local long = string.rep("0123456789", 10000)
      assert.are.equal(long, json.decode('"' .. long .. '"'))
      local parts = {}
      for i = 1, 2000 do parts[i] = string.format('"k%d":%d', i, i) end
      local v = json.decode("{" .. table.concat(parts, ",") .. "}")
      for i = 1, 2000 do assert.are.equal(i, v["k" .. i]) end
      -- The same keys again, and then other keys at the same places: each document gets its own.
      local w = json.decode('{"k1":"x","k2":"y"}')
      assert.same({ k1 = "x", k2 = "y" }, w)
      assert.same({ a = 1, k2 = 2, c = { k1 = 3 } }, json.decode('{"a":1,"k2":2,"c":{"k1":3}}'))
    end)

    it("reads integers up to 2^53 as numbers, and larger ones that fit 64 bits exactly, as int64 or uint64 cdata",
      function()
        assert.are.equal(9007199254740992, json.decode("9007199254740992"))
        assert.are.equal("number", type(json.decode("-9007199254740992")))
        local big = json.decode("9007199254740993")
        assert.is_true(ffi.istype("int64_t", big))
        assert.are.equal(9007199254740993LL, big)
        assert.are.equal(9223372036854775807LL, json.decode("9223372036854775807"))
        local min = json.decode("-9223372036854775808")
        assert.is_true(ffi.istype("int64_t", min))
        assert.are.equal("-9223372036854775808LL", tostring(min))
        local u = json.decode("18446744073709551615")
        assert.is_true(ffi.istype("uint64_t", u))
        assert.are.equal(18446744073709551615ULL, u)
        assert.are.equal(9223372036854775808ULL, json.decode("9223372036854775808"))
        -- Beyond 64 bits: the nearest double.
        assert.are.equal(18446744073709551616, json.decode("18446744073709551616"))
        assert.are.equal("number", type(json.decode("-9223372036854775809")))
        assert.are.equal(1e30, json.decode("1000000000000000000000000000000"))
        -- Written back digit for digit.
        local text = '[9007199254740993,-9223372036854775808,18446744073709551615,1234567890123456789]'
        assert.are.equal(text, json.encode(json.decode(text)))
      end)

    it("reads every decimal as strtod does (correctly rounded), through its fast path and without", function()
      local cases = { "0", "-0.0", "1", "0.1", "0.2", "0.3", "2.5", "-2.5e-3", "1e22", "1e23",
        "4.35", "9007199254740993.0", "12345678901234567.8", "0.000001", "1.7976931348623157e308", "2.2250738585072014e-308",
        "4.9406564584124654e-324", "5e-324", "1e-400", "123.456e-7", "1E+2", "1e-0", "0.30000000000000004",
        "3.141592653589793238462643383279", "8.98846567431158e307", "7.2057594037927933e16",
        "1.00000000000000011102230246251565404236316680908203125", "0.1000000000000000055511151231257827" }
      for _, s in ipairs(cases) do
        local d = json.decode(s)
        assert.is_true(same_double(tonumber(s), d), s .. " read as " .. string.format("%.17g", d))
      end
      -- Random decimals (not integers, which are the test above's): up to 22 digits, with a point, an exponent or
      -- both.
      math.randomseed(14)
      for _ = 1, 20000 do
        local ndigits = math.random(1, 22)
        local digits = {}
        for i = 1, ndigits do digits[i] = tostring(math.random(i == 1 and 1 or 0, 9)) end
        local s = table.concat(digits)
        local point = math.random(0, ndigits)
        if point > 0 and point < ndigits then s = s:sub(1, point) .. "." .. s:sub(point + 1) end
        if not s:find(".", 1, true) or math.random() < 0.5 then s = s .. "e" .. math.random(-30, 30) end
        if math.random() < 0.5 then s = "-" .. s end
        local d = json.decode(s)
        assert.is_true(same_double(tonumber(s), d), s .. " read as " .. string.format("%.17g", d))
      end
    end)

    it("keeps the sign of negative zero", function()
      assert.is_true(same_double(-0.0, json.decode("-0")))
      assert.is_true(same_double(-0.0, json.decode("-0.0e5")))
      assert.are.equal("-0", json.encode(json.decode("-0")))
    end)

    it("refuses what is not JSON, naming the byte where it stops being JSON", function()
      local cases = {
        { "", "at byte 1: no JSON value (the text is empty)" },
        { "   ", "at byte 4: no JSON value (the text is empty)" },
        { "{oops", "at byte 2: an object key must be a string" },
        { '{"a"}', "at byte 5: expected ':' after an object key" },
        { '{"a":}', "at byte 6: expected a value" },
        { '{"a":1', "at byte 7: an object is not closed" },
        { '{"a":1 "b":2}', "at byte 8: expected ',' or '}' after an object member" },
        { '{"a":1,}', "at byte 8: an object key must be a string" },
        { "[1,2", "at byte 5: an array is not closed" },
        { "[1 2]", "at byte 4: expected ',' or ']' after an array item" },
        { "[1,]", "at byte 4: expected a value" },
        { "[", "at byte 2: a value is missing" },
        { '"abc', "at byte 5: a string is not closed" },
        { '"a\nb"', "at byte 3: a control character in a string must be escaped" },
        { '"\\x"', "at byte 2: an unknown escape in a string" },
        { '"\\u12"', "at byte 2: a \\u escape needs four hex digits" },
        { '"\\u12g4"', "at byte 2: a \\u escape needs four hex digits" },
        { '"\\ud83d"', "at byte 2: a surrogate pair is missing its second half" },
        { '"\\ud83d\\u0041"', "at byte 2: a surrogate pair is missing its second half" },
        { '"\\ude00"', "at byte 2: a lone low surrogate" },
        { "tru", "at byte 1: expected a value" },
        { "nul", "at byte 1: expected a value" },
        { "01", "at byte 2: a number must not start with 0 followed by digits" },
        { "-", "at byte 1: a '-' must be followed by a digit" },
        { "1.", "at byte 3: a '.' must be followed by a digit" },
        { "1e", "at byte 3: an exponent must have a digit" },
        { "+1", "at byte 1: expected a value" },
        { ".5", "at byte 1: expected a value" },
        { "1e400", "at byte 1: a number too large for a double" },
        { '{"a":1} x', "at byte 9: text follows the value" },
        { "NaN", "at byte 1: expected a value" },
        { "'a'", "at byte 1: expected a value" },
      }
      for _, c in ipairs(cases) do
        assert.are.equal("invalid JSON " .. c[2], err_of(json.decode, c[1]), c[1])
      end
    end)

    it("limits nesting: 1000 deep by default, less when asked", function()
      local deep = string.rep("[", 1000) .. string.rep("]", 1000)
      local v = json.decode(deep)
      for _ = 1, 999 do v = v[1] end
      assert.same({}, v)
      assert.matches("at byte 1001: nested too deep",
        err_of(json.decode, string.rep("[", 1001) .. string.rep("]", 1001)))
      assert.are.equal("invalid JSON at byte 3: nested too deep", err_of(json.decode, '[[{"a":1}]]', 2))
      assert.same({ { 1 } }, json.decode("[[1]]", 2))
    end)

    it("reads a record view's payload where it is; a null payload is nil", function()
      local payload = '{"user":"u1","n":[1,2]}'
      local rec = gffi.record_t()
      rec.topic_ptr = "t"
      rec.value_ptr = payload
      rec.value_len = #payload
      assert.same({ user = "u1", n = { 1, 2 } }, json.decode(rec))
      -- Only its LEN bytes: what follows them in memory is not read.
      rec.value_len = 7
      assert.are.equal("invalid JSON at byte 8: expected ':' after an object key", err_of(json.decode, rec))
      rec.value_ptr = nil
      assert.is_nil(json.decode(rec))
    end)

    it("refuses anything but a string or a record view", function()
      assert.matches("gobblin.json.decode expects a string or a record view, got number", err_of(json.decode, 5))
      assert.matches("got nil", err_of(json.decode, nil))
      assert.matches("got cdata", err_of(json.decode, ffi.new("int[1]")))
    end)

    it("gives JSON null as the value cjson.null has", function()
      assert.are.equal(cjson.null, json.null)
      assert.same({ json.null, 1 }, json.decode("[null,1]"))
    end)
  end)

  describe("encode", function()
    it("writes sequences as arrays, other tables as objects, and empty tables as {}", function()
      assert.are.equal("[1,2,3]", json.encode({ 1, 2, 3 }))
      assert.are.equal('{"a":1}', json.encode({ a = 1 }))
      assert.are.equal("{}", json.encode({}))
      assert.are.equal('[{},{"x":[true,false,null]}]', json.encode({ {}, { x = { true, false, json.null } } }))
      local mixed = cjson.decode(json.encode({ 1, 2, x = 3 }))
      assert.same({ ["1"] = 1, ["2"] = 2, x = 3 }, mixed) -- number keys as strings
    end)

    it("writes holes of an array as null, and a table too sparse for an array as an object", function()
      assert.are.equal("[1,null,3]", json.encode({ 1, nil, 3 }))
      assert.are.equal("[null,null,null,null,5]", json.encode({ [5] = 5 }))
      assert.same({ ["1"] = 1, ["20"] = 2 }, cjson.decode(json.encode({ [1] = 1, [20] = 2 })))
      assert.are.equal('{"1.5":1}', json.encode({ [1.5] = 1 }))
    end)

    it("escapes quotes, backslashes and control characters, and passes other bytes as they are", function()
      assert.are.equal('"a\\"b\\\\c/\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f"', json.encode('a"b\\c/\b\f\n\r\t\0\1\31'))
      assert.are.equal('"h\xc3\xa9 \xf0\x9f\x98\x80 \x7f"', json.encode("h\xc3\xa9 \xf0\x9f\x98\x80 \x7f"))
      local s = ""
      for c = 0, 255 do s = s .. string.char(c) end
      assert.are.equal(s, cjson.decode(json.encode(s)))
      assert.are.equal(s, json.decode(json.encode(s)))
    end)

    it("writes each double with the fewest digits that read back as exactly it", function()
      local cases = {
        { 0, "0" }, { -0.0, "-0" }, { 1, "1" }, { -17, "-17" }, { 0.1, "0.1" }, { 0.1 + 0.2, "0.30000000000000004" },
        { 1 / 3, "0.3333333333333333" }, { 2 ^ 53, "9007199254740992" }, { 2 ^ 53 + 2, "9.007199254740994e+15" },
        { 1e21, "1e+21" }, { 2 ^ 63, "9.223372036854776e+18" }, { -1e17, "-1e+17" }, { 1.5e-10, "1.5e-10" }, { 142.857, "142.857" }, { 5e-324, "5e-324" },
        { 1.7976931348623157e308, "1.7976931348623157e+308" }, { 1700000000001, "1700000000001" },
        { -123.456, "-123.456" }, { 1e-7, "0.0000001" }, { 123456789012345.67, "123456789012345.67" },
      }
      for _, c in ipairs(cases) do assert.are.equal(c[2], json.encode(c[1]), c[2]) end
    end)

    it("writes doubles that read back exactly, through cjson and tonumber too", function()
      math.randomseed(53)
      local buf = ffi.new("union { double d; uint32_t w[2]; }")
      for i = 1, 20000 do
        local d
        if i % 2 == 0 then
          -- any bit pattern that is a finite double
          repeat
            buf.w[0], buf.w[1] = math.random(0, 2 ^ 32 - 1), math.random(0, 2 ^ 32 - 1)
            d = buf.d
          until d == d and d ~= math.huge and d ~= -math.huge
        else
          d = math.random(-1e6, 1e6) / 10 ^ math.random(0, 8) -- decimals of few digits
        end
        local s = json.encode(d)
        assert.is_true(same_double(d, json.decode(s)), s)
        assert.is_true(same_double(d, tonumber(s)), s)
        assert.are.equal(d, cjson.decode(s))
      end
    end)

    it("writes 64-bit integer cdata digit for digit", function()
      assert.are.equal("[-9223372036854775808,18446744073709551615,42]",
        json.encode({ -9223372036854775807LL - 1, 18446744073709551615ULL, 42LL }))
    end)

    it("refuses what JSON cannot hold, saying what it is", function()
      assert.are.equal("cannot encode as JSON: nan (JSON has no NaN or infinity)", err_of(json.encode, 0 / 0))
      assert.are.equal("cannot encode as JSON: inf (JSON has no NaN or infinity)", err_of(json.encode, { x = 1 / 0 }))
      assert.are.equal("cannot encode as JSON: a function value", err_of(json.encode, { f = print }))
      assert.are.equal("cannot encode as JSON: a table key is a boolean (object keys are strings or numbers)",
        err_of(json.encode, { [true] = 1 }))
      assert.are.equal("cannot encode as JSON: a cdata value that is not a 64-bit integer",
        err_of(json.encode, { ffi.new("int[2]") }))
      local loop = {}
      loop.self = loop
      assert.matches("nested more than 1000 deep %(a table that holds itself%?%)", err_of(json.encode, loop))
      assert.matches("a userdata value", err_of(json.encode, io.stdout))
    end)

    it("writes nil and json.null as null", function()
      assert.are.equal("null", json.encode(nil))
      assert.are.equal("null", json.encode(json.null))
    end)

    it("round-trips what it reads: nested values come back equal", function()
      math.randomseed(7)
      local function value(depth)
        local r = math.random(1, depth > 3 and 4 or 6)
        if r == 1 then return math.random(-1e9, 1e9) / 1000 end
        if r == 2 then
          local t = {}
          for i = 1, math.random(0, 12) do t[i] = string.char(math.random(0, 255)) end
          return table.concat(t)
        end
        if r == 3 then return math.random() < 0.5 end
        if r == 4 then return json.null end
        if r == 5 then
          local a = {}
          for i = 1, math.random(1, 5) do a[i] = value(depth + 1) end
          return a
        end
        local o = {}
        for i = 1, math.random(1, 5) do o["k" .. i .. string.char(math.random(0, 255))] = value(depth + 1) end
        return o
      end
      for _ = 1, 2000 do
        local v = value(0)
        local text = json.encode(v)
        assert.same(v, json.decode(text))
        assert.same(cjson.decode(text), json.decode(text))
      end
    end)
  end)

  describe("markers and key order", function()
    it("writes back what it read as it came: [] as [], {} as {}, keys in their order", function()
      local docs = {
        '{"id":1,"tags":[],"attrs":{}}',
        '{"z":1,"a":2,"m":{"q":1,"b":[1,{}],"a":[[]]}}',
        '{"a":2,"z":1}',
        '[{"x":1,"y":2},{"y":3,"x":4},{},[]]',
        '{"k2":1,"k1":2,"":3,"a_key_longer_than_thirty_bytes_for_sure":{"b":[],"a":{}}}',
        "[]", "{}",
      }
      for _, text in ipairs(docs) do assert.are.equal(text, json.encode(json.decode(text))) end
      -- A key given twice: the object has the later value, at the first one's place.
      assert.are.equal('{"a":2,"b":3}', json.encode(json.decode('{"a":1,"b":3,"a":2}')))
    end)

    it("marks decoded arrays with json.array_mt and objects with the metatable of their keys", function()
      local v = json.decode('{"list":[1],"none":[],"obj":{},"o":{"b":1,"a":2}}')
      assert.are.equal(json.array_mt, getmetatable(v.list))
      assert.are.equal(json.array_mt, getmetatable(v.none))
      assert.are.equal(json.object_mt, getmetatable(v.obj))
      assert.are.equal(json.order({ "b", "a" }), getmetatable(v.o))
      assert.are.equal(json.order({ "list", "none", "obj", "o" }), getmetatable(v))
      assert.are_not.equal(json.order({ "a", "b" }), getmetatable(v.o))
      assert.same({ "b", "a" }, getmetatable(v.o).__jsonorder)
      assert.are.equal("array", json.array_mt.__jsontype)
      assert.are.equal("object", json.object_mt.__jsontype)
    end)

    it("writes keys a script adds after the document's own, sorted, and leaves out those it removes", function()
      local v = json.decode('{"z":1,"a":2,"m":3}')
      v.a = nil
      v.new = true
      v.b = "x"
      v.z = 10
      v[2] = "two"
      assert.are.equal('{"z":10,"m":3,"2":"two","b":"x","new":true}', json.encode(v))
      assert.same({ "z", "m", 2, "b", "new" }, json.keys(v))
      -- Keys added that are all strings; objects of one shape whose keys a script put in another order.
      local w = json.decode('{"z":1,"a":2}')
      w.c, w.b = 3, 4
      assert.are.equal('{"z":1,"a":2,"b":4,"c":3}', json.encode(w))
      local mt = getmetatable(json.decode('{"k1":1,"k2":2,"k3":3,"k4":4}'))
      for i = 1, 50 do
        local t = {}
        for k = 4, 1, -1 do t["k" .. ((k + i) % 4 + 1)] = k end
        t = setmetatable(t, mt)
        assert.are.equal(string.format('{"k1":%d,"k2":%d,"k3":%d,"k4":%d}', t.k1, t.k2, t.k3, t.k4), json.encode(t))
        assert.are.equal('{"k1":1,"k2":2,"k3":3,"k4":4}', json.encode(json.decode('{"k1":1,"k2":2,"k3":3,"k4":4}')))
      end
      -- An object of an object of the same shape, and so on.
      local nested = '{"a":{"a":{"a":1,"b":[]},"b":{}},"b":{"a":{},"b":2}}'
      assert.are.equal(nested, json.encode(json.decode(nested)))
      -- An empty decoded object: every key is one a script added.
      local e = json.decode("{}")
      e.y, e.x = 1, 2
      assert.are.equal('{"x":2,"y":1}', json.encode(e))
      -- Items added to a decoded array; a key that is not an index makes it an object, so that nothing is lost.
      local a = json.decode("[]")
      a[1], a[2] = "p", "q"
      assert.are.equal('["p","q"]', json.encode(a))
      a.name = "n"
      assert.same({ ["1"] = "p", ["2"] = "q", name = "n" }, cjson.decode(json.encode(a)))
    end)

    it("gives scripts json.empty_array, json.array_mt, json.object_mt and json.order for tables of their own",
      function()
      assert.are.equal('{"tags":[]}', json.encode({ tags = json.empty_array }))
      assert.are.equal("[]", json.encode(json.empty_array))
      assert.are.equal("[]", json.encode(setmetatable({}, json.array_mt)))
      assert.are.equal("[1,2]", json.encode(setmetatable({ 1, 2 }, json.array_mt)))
      assert.are.equal("{}", json.encode(setmetatable({}, json.object_mt)))
      assert.are.equal('{"1":"a","2":"b"}', json.encode(setmetatable({ "a", "b" }, json.object_mt)))
      assert.are.equal('{"a":1,"b":2,"c":3}', json.encode(setmetatable({ c = 3, b = 2, a = 1 }, json.object_mt)))
      local mt = json.order({ "id", "name", 3 })
      assert.are.equal(mt, json.order({ "id", "name", 3 }))
      assert.are.equal(json.object_mt, json.order({}))
      assert.are.equal('{"id":1,"name":"n","3":"three","extra":0}',
        json.encode(setmetatable({ extra = 0, [3] = "three", name = "n", id = 1 }, mt)))
      assert.are.equal('{"name":"n"}', json.encode(setmetatable({ name = "n" }, mt)))
      assert.matches("gobblin.json.order: the key id is in the list twice", err_of(json.order, { "id", "x", "id" }))
      assert.matches("gobblin.json.order: key 2 is a table %(keys are strings or numbers%)",
        err_of(json.order, { "a", {} }))
      -- A metatable of a script's own that follows the same convention.
      local own = { __jsontype = "object", __jsonorder = { "b", "a" } }
      assert.are.equal('{"b":2,"a":1,"c":3}', json.encode(setmetatable({ a = 1, b = 2, c = 3 }, own)))
      assert.are.equal("cannot encode as JSON: __jsonorder has the key b twice",
        err_of(json.encode, setmetatable({ b = 1, c = 2 }, { __jsontype = "object", __jsonorder = { "b", "b" } })))
    end)

    it("spares only a table said to be closed the look for keys its order lacks, and only for that encode", function()
      local mt = json.order({ "a", "b" })
      local t = setmetatable({ a = 1, b = 2 }, mt)
      json.encode_staged(t, true) -- the runtime's call for converter.project's results
      t.c = 3
      assert.are.equal('{"a":1,"b":2,"c":3}', json.encode(t))
      assert.is_true(require("gobblin.converter").closed[require("gobblin.converter").project({ "a" })])
    end)

    it("keeps today's rules for a table without a marker", function()
      assert.are.equal("{}", json.encode({}))
      assert.are.equal("[1,2]", json.encode({ 1, 2 }))
      assert.are.equal('{"a":1}', json.encode({ a = 1 }))
      assert.are.equal("{}", json.encode(setmetatable({}, { __index = {} })))
      assert.same({ "a" }, json.keys({ a = 1 }))
    end)

    it("writes values decoded from Avro as Avro's JSON encoding does: bytes, fixed, decimals, arrays, maps", function()
      local avro = require("gobblin.avro")
      local s = avro.schema([[{"type": "record", "name": "R", "fields": [
        {"name": "z", "type": "int"},
        {"name": "b", "type": "bytes"},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 4}},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 3}},
        {"name": "df", "type": {"type": "fixed", "name": "D", "size": 16, "logicalType": "decimal", "precision": 38,
          "scale": 2}},
        {"name": "bad", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}},
        {"name": "a", "type": {"type": "array", "items": "bytes"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "bytes"]}},
        {"name": "u", "type": ["null", "bytes"]},
        {"name": "us", "type": ["null", "string", "bytes"]},
        {"name": "e", "type": {"type": "array", "items": "int"}},
        {"name": "x", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "late", "type": {"type": "map", "values": "int"}},
        {"name": "opt", "type": ["null", "int"]}]}]])
      local v = s:decode(s:encode({ z = 1, b = "\0\1\127\128\255\"", f = "\0\127\128\255",
        d = "\255\255\255\255\255\255\255\255\255\254", -- -2, in ten bytes of two's complement
        df = "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\48\57", bad = "\1", a = { "\200", "" }, m = { y = "\255", x = json.null },
        u = "\1", us = "plain", e = {}, x = 0 / 0, s = "t\n", late = {} }))
      assert.are.equal('{"z":1,"b":"\\u0000\\u0001\127\194\128\195\191\\"","f":"\\u0000\127\194\128\195\191",' ..
        '"d":-0.002,"df":123.45,"bad":"\\u0001","a":["\195\136",""],"m":{"x":null,"y":"\195\191"},"u":"\\u0001",' ..
        '"us":"plain","e":[],"x":"NaN","s":"t\\n","late":{},"opt":null}', json.encode(v))
      -- A union of string and bytes: text when it is UTF-8, else bytes, so that the JSON is valid either way.
      v.us = "\255\0"
      assert.matches('"us":"\195\191\\u0000"', json.encode(v))
      v.us = "\195\169"
      assert.matches('"us":"\195\169"', json.encode(v))
      -- The infinities as Avro's JSON encoding writes them; a script's own table still refuses them.
      v.x = 1 / 0
      assert.matches('"x":"Infinity"', json.encode(v))
      v.x = -1 / 0
      assert.matches('"x":"%-Infinity"', json.encode(v))
      assert.matches("JSON has no NaN or infinity", err_of(json.encode, { x = 0 / 0 }))
      -- A script's changes: a bytes field given new bytes is still bytes; a field added comes after, as is.
      v.b = "\255"
      v.added = "\1"
      local text = json.encode(v)
      assert.matches('"b":"\195\191"', text)
      assert.matches('"late":{},"opt":null,"added":"\\u0001"}$', text)
      -- Every field of an Avro record is written: one a script sets to nil is null, as the Avro encoder takes it.
      v.z = nil
      assert.matches('^{"z":null,"b":', json.encode(v))
      -- Fields resolved from an older schema: the reader's order, and its defaults with their markers.
      local old = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}, ' ..
        '{"name": "z", "type": "int"}]}')
      local new = avro.schema('{"type": "record", "name": "R", "fields": [{"name": "z", "type": "int"}, ' ..
        '{"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}, ' ..
        '{"name": "attrs", "type": {"type": "map", "values": "int"}, "default": {}}, {"name": "s", "type": "string"}]}')
      local r = old:decode(old:encode({ s = "x", z = 5 }), new)
      assert.are.equal('{"z":5,"tags":[],"attrs":{},"s":"x"}', json.encode(r))
      -- Decoded twice: each value its own tables.
      local r2 = old:decode(old:encode({ s = "y", z = 6 }), new)
      r2.tags[1] = "t"
      assert.are.equal('{"z":5,"tags":[],"attrs":{},"s":"x"}', json.encode(r))
    end)
  end)
end)
