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
end)
