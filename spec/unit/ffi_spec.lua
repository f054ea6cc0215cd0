-- The FFI declarations in lua/gobblin/ffi.lua must match engine/kg_ffi.h exactly.
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function normalise(s)
  return (s:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

describe("gobblin.ffi", function()
  it("declares exactly the block between FFI-BEGIN and FFI-END of engine/kg_ffi.h", function()
    local header = read("engine/kg_ffi.h")
    local block = header:match("/%* FFI%-BEGIN %*/\n(.-)/%* FFI%-END %*/")
    assert.is_not_nil(block)
    local lua = read("lua/gobblin/ffi.lua")
    local cdef = lua:match("ffi%.cdef %[%[\n(.-)%]%]")
    assert.is_not_nil(cdef)
    assert.are.equal(normalise(block), normalise(cdef))
  end)

  it("gives record views methods that make strings only when asked", function()
    local ffi = require("ffi")
    local gffi = require("gobblin.ffi")
    local payload = "a\0b"
    local rec = gffi.record_t()
    rec.topic_ptr = "events"
    rec.value_ptr = payload
    rec.value_len = #payload
    rec.offset = 42
    rec.partition = 3
    assert.are.equal("a\0b", rec:value())
    assert.are.equal("events", rec:topic())
    assert.is_nil(rec:key())
    assert.are.equal(42, rec.offset)
    assert.are.equal(3, rec.partition)
    rec.value_ptr = nil
    assert.is_nil(rec:value())
    assert.is_true(ffi.istype("kg_record_t", rec))
  end)

  it("makes a record view used as a string an error that says so and names what was tried", function()
    local gffi = require("gobblin.ffi")
    local payload = "abc"
    local rec = gffi.record_t()
    rec.topic_ptr = "events"
    rec.value_ptr = payload
    rec.value_len = #payload
    local hint = "; call rec:value() for the payload (a converter gets the record view when the job has no " ..
      "source and no decodeRecord, or when decodeRecord returns it)"
    local here = debug.getinfo(1, "S").short_src
    local cases = {
      { function() return rec:upper() end, "it has no method or field 'upper'" },
      { function() return rec:gsub("a", "b") end, "it has no method or field 'gsub'" },
      { function() return rec:find("a") end, "it has no method or field 'find'" },
      { function() return rec.payload end, "it has no method or field 'payload'" },
      { function() return rec .. "x" end, "it cannot be concatenated with .." },
      { function() return "x" .. rec end, "it cannot be concatenated with .." },
      { function() return #rec end, "#rec is not its length (rec.value_len is)" },
    }
    for i, case in ipairs(cases) do
      local ok, err = pcall(case[1])
      assert.is_false(ok, "case " .. i)
      -- The error points at the script's line, not at gobblin.ffi.
      assert.are.equal(here .. ":" .. debug.getinfo(case[1], "S").linedefined .. ": a record view is not a string: " ..
        case[2] .. hint, err)
    end
    -- The view's own methods and fields are untouched.
    assert.are.equal("abc", rec:value())
    assert.are.equal("events", rec:topic())
    assert.are.equal(3, tonumber(rec.value_len))
    assert.same({}, rec:headers())
  end)
end)
