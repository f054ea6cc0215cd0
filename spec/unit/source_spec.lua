-- The built-in sources and the job-file loader of gobblin.runtime.
local gffi = require("gobblin.ffi")
local runtime = require("gobblin.runtime")

local function tmpfile(text)
  local path = os.tmpname() .. ".lua"
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

describe("gobblin.source.kafka_simple", function()
  it("decodeRecord hands on the record itself, so the payload is written without a copy", function()
    local simple = require("gobblin.source.kafka_simple")
    local rec = gffi.record_t()
    assert.are.equal(rec, simple.decodeRecord(rec))
  end)
end)

describe("gobblin.runtime", function()
  describe("load_job", function()
    it("returns the table a job file returns", function()
      local path = tmpfile('return { ["kafka.brokers"] = "b:1", kafka = { x = 1 } }')
      local job = runtime.load_job(path)
      assert.are.equal("b:1", job["kafka.brokers"])
      os.remove(path)
    end)

    it("names the file and line of a syntax error", function()
      local path = tmpfile('return {\n  ["kafka.brokers"] = "b:1"\n  oops = \n}')
      local ok, err = pcall(runtime.load_job, path)
      assert.is_false(ok)
      assert.matches(path:gsub("%p", "%%%0") .. ":3:", err)
      os.remove(path)
    end)

    it("refuses a job file that does not return a table", function()
      local path = tmpfile('return 42')
      local ok, err = pcall(runtime.load_job, path)
      assert.is_false(ok)
      assert.matches("must return a table", err)
      os.remove(path)
    end)
  end)

  describe("decoder", function()
    it("uses the job's decodeRecord when it has one", function()
      local f = function() end
      assert.are.equal(f, runtime.decoder({ decodeRecord = f }))
    end)

    it("falls back to KafkaSimpleSource", function()
      assert.are.equal(require("gobblin.source.kafka_simple").decodeRecord, runtime.decoder({}))
    end)

    it("refuses a decodeRecord that is not a function", function()
      assert.has_error(function() runtime.decoder({ decodeRecord = "x" }) end,
        "decodeRecord must be a function, got string")
    end)
  end)
end)
