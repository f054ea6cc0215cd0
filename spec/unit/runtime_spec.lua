-- gobblin.runtime: decodeRecord, converter chains, ctx and script metrics, driven over the engine's FFI.
local B = require("support.batch")
local runtime = require("gobblin.runtime")
local cjson = require("cjson")

local function processor(text)
  return runtime.processor(B.job_file(text))
end

describe("gobblin.runtime", function()
  describe("without decodeRecord (KafkaSimpleSource)", function()
    it("writes every payload unchanged: empty, binary with NUL bytes, and a null payload as empty bytes", function()
      local p = runtime.processor(nil)
      local big = string.rep("x", 1024 * 1024)
      local out = B.run(p, { { value = "one" }, { value = "" }, { value = "a\0b\255" }, { value = nil }, { value = big } })
      assert.same({ "one", "", "a\0b\255", "", big }, out)
    end)

    it("says it is a pass-through, which the engine then writes without calling it, only when no code runs",
      function()
        assert.is_true(runtime.processor(nil).passthrough)
        assert.is_true(processor([[return { source = "gobblin.source.kafka_simple" }]]).passthrough)
        assert.is_false(processor([[return { decodeRecord = function(m) return m end }]]).passthrough)
        assert.is_false(processor([[return { converters = { function(r) return r end } }]]).passthrough)
        assert.is_false(processor([[return { source = "gobblin.source.kafka_json" }]]).passthrough)
        assert.is_false(processor([[return { ["writer.partitioner.class"] = "TimeBasedWriterPartitioner",
          partition = function() return 0 end }]]).passthrough)
      end)

    it("handles an empty batch", function()
      local out, errors = B.run(runtime.processor(nil), {})
      assert.same({}, out)
      assert.same({}, errors)
    end)
  end)

  describe("with a decodeRecord", function()
    it("writes strings, drops nil, and writes tables as JSON", function()
      local p = processor([[return { decodeRecord = function(msg)
        local v = msg:value()
        if v == "drop" then return nil end
        if v == "table" then return { n = 1 } end
        return v:upper()
      end }]])
      local out = B.run(p, { { value = "a" }, { value = "drop" }, { value = "table" }, { value = "b" } })
      assert.same({ "A", '{"n":1}', "B" }, out)
    end)

    it("writes a table with gobblin.json: 64-bit integers and doubles exactly, from a payload read in place",
      function()
        local p = processor([[local json = require("gobblin.json")
          return { decodeRecord = function(msg) return json.decode(msg) end }]])
        local out = B.run(p, { { value = '{"id":12345678901234567890,"x":0.30000000000000004,"n":null}' } })
        assert.are.equal(1, #out)
        assert.truthy(out[1]:find('"id":12345678901234567890', 1, true), out[1])
        assert.truthy(out[1]:find('"x":0.30000000000000004', 1, true), out[1])
        assert.truthy(out[1]:find('"n":null', 1, true), out[1])
      end)

    it("sees the record's key, topic, partition, offset and timestamp", function()
      local p = processor([[return { decodeRecord = function(msg, ctx)
        return table.concat({ tostring(msg:key()), msg:topic(), msg.partition, msg.offset, msg.timestamp,
          ctx.topic, ctx.partition, ctx.offset }, "|")
      end }]])
      local out = B.run(p, { { value = "v", key = "k", topic = "events", partition = 3, offset = 41, timestamp = 1700 },
        { value = "v", topic = "events", partition = 3, offset = 42 } })
      assert.same({ "k|events|3|41|1700|events|3|41", "nil|events|3|42|-1|events|3|42" }, out)
    end)

    it("resumes after a failing record, and reports which stage failed", function()
      local p = processor([[return { decodeRecord = function(msg)
        if msg:value() == "bad" then error("cannot decode") end
        return msg
      end }]])
      local out, errors = B.run(p, { { value = "1" }, { value = "bad" }, { value = "3" }, { value = "bad" } })
      assert.same({ "1", "3" }, out)
      assert.are.equal(2, #errors)
      assert.are.equal(1, errors[1].index)
      assert.are.equal(3, errors[2].index)
      assert.matches("cannot decode", errors[1].message)
      assert.are.equal("decodeRecord", errors[1].stage)
    end)

    it("can come from a source module named by `source`", function()
      local p = processor([[return { source = "gobblin.source.kafka_json" }]])
      local out = B.run(p, { { value = '{"a":[1,2]}' } })
      assert.same({ a = { 1, 2 } }, cjson.decode(out[1]))
    end)

    it("refuses a source module that does not exist", function()
      assert.has_error(function() processor([[return { source = "gobblin.source.nope" }]]) end)
    end)
  end)

  describe("converters", function()
    it("run in order on what decodeRecord returns", function()
      local p = processor([[return {
        decodeRecord = function(msg) return msg:value() end,
        converters = {
          function(r) return r .. "-1" end,
          function(r) return r .. "-2" end,
        } }]])
      assert.same({ "a-1-2" }, (B.run(p, { { value = "a" } })))
    end)

    it("drop a record by returning nil", function()
      local p = processor([[return { converters = {
        function(r) local v = r:value() if v:find("^keep") then return v end end } }]])
      assert.same({ "keep1", "keep2" }, (B.run(p, { { value = "keep1" }, { value = "no" }, { value = "keep2" } })))
    end)

    it("pass several records on with gobblin.many, each through the rest of the chain", function()
      local p = processor([[local gobblin = require("gobblin")
        return { converters = {
          function(r) local out = {} for w in r:value():gmatch("%S+") do out[#out + 1] = w end return gobblin.many(out) end,
          function(w) if w ~= "skip" then return w:upper() end end,
        } }]])
      assert.same({ "A", "B", "C" }, (B.run(p, { { value = "a skip b" }, { value = "c" } })))
    end)

    it("treat a plain array as one record, not several", function()
      local p = processor([[return { converters = { function(r) return { 1, 2, 3 } end } }]])
      assert.same({ "[1,2,3]" }, (B.run(p, { { value = "x" } })))
    end)

    it("report the failing converter by its position", function()
      local p = processor([[return { converters = {
        function(r) return r:value() end,
        function(r) if r == "bad" then error("boom") end return r end } }]])
      local out, errors = B.run(p, { { value = "bad" }, { value = "ok" } })
      assert.same({ "ok" }, out)
      assert.are.equal("converter 2", errors[1].stage)
    end)

    it("must be functions", function()
      local path = B.job_file([[return { converters = { "nope" } }]])
      assert.has_error(function() runtime.processor(path) end, path .. ": converters[1] must be a function, got string")
      path = B.job_file([[return { converters = { function() end, x = 1 } }]])
      assert.has_error(function() runtime.processor(path) end,
        path .. ": converters must be an array of functions; it has a key x")
    end)

    it("get the record view when the job has no source and no decodeRecord, and using it as a string is an error " ..
      "that names what was tried and fails every record", function()
      local hint = "; call rec:value() for the payload (a converter gets the record view when the job has no " ..
        "source and no decodeRecord, or when decodeRecord returns it)"
      local cases = {
        { "return r:upper()", "it has no method or field 'upper'" },
        { "return (r:gsub('a', 'b'))", "it has no method or field 'gsub'" },
        { "return r .. '!'", "it cannot be concatenated with .." },
        { "return '!' .. r", "it cannot be concatenated with .." },
        { "return tostring(#r)", "#rec is not its length (rec.value_len is)" },
      }
      for _, case in ipairs(cases) do
        local path = B.job_file("return { converters = {\n  function(r) " .. case[1] .. " end } }")
        local out, errors = B.run(runtime.processor(path), { { value = "a" }, { value = "b" } })
        assert.same({}, out)
        assert.are.equal(2, #errors, case[1])
        assert.are.equal("converter 1", errors[1].stage)
        assert.are.equal(path .. ":2: a record view is not a string: " .. case[2] .. hint,
          errors[1].message:match("^[^\n]*"), case[1])
      end
      -- What the view is for still works, and a view passed through is written as its payload.
      local p = processor([[return { converters = { function(r) return r:value() .. "|" .. r.offset .. "|" .. r:topic() end,
        function(s) return s:upper() end } }]])
      assert.same({ "A|7|T" }, (B.run(p, { { value = "a", offset = 7, topic = "t" } })))
      p = processor([[return { converters = { function(r) return r end } }]])
      assert.same({ "a" }, (B.run(p, { { value = "a" } })))
    end)
  end)

  describe("loading a job", function()
    local function load_error(text)
      local path = B.job_file(text)
      local ok, err = pcall(runtime.load_job, path)
      assert.is_false(ok, "the job should be refused:\n" .. text)
      return (err:gsub("^" .. path:gsub("%p", "%%%0"), "JOB")), path
    end

    local CALLS = "but kingest calls only the job table's decodeRecord, converters, estimateSize, source and partition"

    it("refuses a misspelt hook, at once, with the one it meant", function()
      assert.are.equal("JOB: decoderecord is a function, " .. CALLS .. "; did you mean decodeRecord?",
        load_error([[return { decoderecord = function(msg) return msg end }]]))
      assert.are.equal("JOB: decode_record is a function, " .. CALLS .. "; did you mean decodeRecord?",
        load_error([[return { decode_record = function(msg) return msg end }]]))
      assert.are.equal("JOB: convertors is a list of functions, " .. CALLS .. "; did you mean converters?",
        load_error([[return { convertors = { function(r) return r end } }]]))
      assert.are.equal("JOB: estimate_size is a function, " .. CALLS .. "; did you mean estimateSize?",
        load_error([[return { estimate_size = function() return 1 end }]]))
      assert.are.equal("JOB: sourse is not a property kingest reads, nor one of the decodeRecord, converters, " ..
        "estimateSize, source and partition it calls; did you mean source?",
        load_error([[return { sourse = "gobblin.source.kafka_json" }]]))
    end)

    it("refuses any other function, at any depth, naming its key", function()
      assert.are.equal("JOB: transform is a function, " .. CALLS,
        load_error([[return { transform = function(r) return r end }]]))
      assert.are.equal("JOB: kafka.decodeRecord is a function, " .. CALLS ..
        "; did you mean decodeRecord, at the top of the job table?",
        load_error([[return { kafka = { brokers = "b:1", decodeRecord = function(m) return m end } }]]))
      assert.are.equal("JOB: writer.hooks is a list of functions, " .. CALLS,
        load_error([[return { writer = { hooks = { function() end } } }]]))
      assert.are.equal("JOB: the job table[1] is a function, " .. CALLS,
        load_error([[return { function() end }]]))
    end)

    it("refuses decodeRecord and source together, where one would be ignored", function()
      assert.are.equal("JOB: decodeRecord and source are both set, and only one of them can decode the records: " ..
        "keep one (a converter can do what comes after the source's decodeRecord)",
        load_error([[return { source = "gobblin.source.kafka_json", decodeRecord = function(m) return m end }]]))
    end)

    it("refuses hooks of the wrong type", function()
      assert.are.equal("JOB: decodeRecord must be a function, got string",
        load_error([[return { decodeRecord = "gobblin.source.kafka_json" }]]))
      assert.are.equal("JOB: estimateSize must be a function, got number",
        load_error([[return { estimateSize = 5 }]]))
      assert.are.equal("JOB: source must be a module name such as \"gobblin.source.kafka_json\", got table " ..
        "(Gobblin's source.class is written [\"source.class\"] = ...)",
        load_error([[return { source = { class = "KafkaSimpleSource" } }]]))
    end)

    it("refuses a source that does not exist, listing the ones kingest provides", function()
      local provides = "kingest provides gobblin.source.kafka_json, gobblin.source.kafka_csv, gobblin.source.kafka_simple"
      local err = load_error([[return { source = "gobblin.source.kafka_jsn" }]])
      assert.are.equal("JOB: source gobblin.source.kafka_jsn cannot be loaded (did you mean gobblin.source.kafka_json? " ..
        provides .. "): module 'gobblin.source.kafka_jsn' not found:", err:match("^[^\n]*"))
      err = load_error([[return { source = "kafka_csv" }]])
      assert.are.equal("JOB: source kafka_csv cannot be loaded (did you mean gobblin.source.kafka_csv? " ..
        provides .. "): module 'kafka_csv' not found:", err:match("^[^\n]*"))
      err = load_error([[return { source = "my_company.decoders" }]])
      assert.are.equal("JOB: source my_company.decoders cannot be loaded (" .. provides ..
        "): module 'my_company.decoders' not found:", err:match("^[^\n]*"))
    end)

    it("accepts a source module of the user's own, next to the job file", function()
      local path = B.job_file([[return { source = "kingest_spec_own_source" }]])
      local dir = path:match("^(.*)/")
      local f = assert(io.open(dir .. "/kingest_spec_own_source.lua", "w"))
      f:write("return { decodeRecord = function(msg) return 'own:' .. msg:value() end }\n")
      f:close()
      local saved = package.path
      package.path = dir .. "/?.lua;" .. package.path -- the engine adds the job file's folder
      local ok, p = pcall(runtime.processor, path)
      package.path = saved
      os.remove(dir .. "/kingest_spec_own_source.lua")
      assert.is_true(ok, tostring(p))
      assert.same({ "own:x" }, (B.run(p, { { value = "x" } })))
    end)

    it("lists in SOURCES exactly the modules of lua/gobblin/source/", function()
      local files = {}
      local ls = assert(io.popen("ls lua/gobblin/source"))
      for name in ls:lines() do files[#files + 1] = "gobblin.source." .. name:gsub("%.lua$", "") end
      ls:close()
      local listed = {}
      for i, s in ipairs(runtime.SOURCES) do listed[i] = s end
      table.sort(files)
      table.sort(listed)
      assert.same(files, listed)
    end)

    it("hands the engine the properties without the hooks", function()
      local path = B.job_file([[return { ["job.name"] = "j", kafka = { brokers = "b:1" }, source = "gobblin.source.kafka_json",
        converters = { function(r) return r end }, estimateSize = function() return 1 end }]])
      assert.same({ ["job.name"] = "j", kafka = { brokers = "b:1" } }, runtime.load_properties(path))
      path = B.job_file([[return { ["job.name"] = "j", decodeRecord = function(m) return m end }]])
      assert.same({ ["job.name"] = "j" }, runtime.load_properties(path))
    end)

    it("hands over the job table with its properties, and builds a processor from it without running the file again", function()
      local count = os.tmpname()
      local path = B.job_file(string.format([[
        local f = assert(io.open(%q, "a")); f:write("ran\n"); f:close()
        return { ["job.name"] = "j", decodeRecord = function(m) return m:value():upper() end }]], count))
      local props, job = runtime.load_properties(path)
      assert.same({ ["job.name"] = "j" }, props)
      assert.are.equal("function", type(job.decodeRecord))
      local out = B.run(runtime.job_processor(job), { { value = "a" } })
      assert.same({ "A" }, out)
      local f = assert(io.open(count))
      assert.are.equal("ran\n", f:read("*a"))
      f:close()
      os.remove(count)
    end)
  end)

  describe("a write the engine refuses", function()
    local JOB = [[local gobblin = require("gobblin")
      return { decodeRecord = function(msg, ctx)
        ctx.metrics:counter("decoded"):inc()
        local v = msg:value()
        if v == "many" then return gobblin.many({ "m1", "m2", "m3" }) end
        if v == "table" then return { v = v } end
        if v == "view" then return msg end
        return v
      end }]]
    local RECORDS = { { value = "view", offset = 10 }, { value = "s", offset = 11 }, { value = "table", offset = 12 },
      { value = "many", offset = 13 }, { value = "after", offset = 14 } }

    it("stops the batch at the record that wrote, whatever it wrote, with an error saying so", function()
      -- fail_at: the write that is refused; then the record the batch stops at and what was written before it.
      local cases = {
        { 1, 0, {} }, { 2, 1, { "view" } }, { 3, 2, { "view", "s" } }, { 4, 3, { "view", "s", '{"v":"table"}' } },
        { 6, 3, { "view", "s", '{"v":"table"}', "m1", "m2" } },
      }
      for _, case in ipairs(cases) do
        local p = processor(JOB)
        local out, errors, batch = B.run(p, RECORDS, { fail_at = case[1] })
        assert.same(case[3], out)
        assert.are.equal(1, #errors)
        assert.are.equal(case[2], errors[1].index)
        assert.are.equal(case[2] + 1, batch.next)
        assert.are.equal(string.format("the writer failed (error -2) on the output of t:0 offset %d; the batch stops here",
          10 + case[2]), errors[1].message)
        assert.are.equal(case[2] + 1, p.collect()["decoded"]) -- no record after it ran through the script
      end
    end)

    it("passes the engine's error code on in the message", function()
      local _, errors = B.run(runtime.processor(nil), { { value = "a", topic = "events", partition = 3, offset = 7 } },
        { fail_at = 1, rc = -7 })
      assert.are.equal("the writer failed (error -7) on the output of events:3 offset 7; the batch stops here",
        errors[1].message)
    end)
  end)

  describe("ctx", function()
    it("keeps script state per partition across batches", function()
      local p = processor([[return { decodeRecord = function(msg, ctx)
        ctx.state.n = (ctx.state.n or 0) + 1
        return ctx.partition .. ":" .. ctx.state.n
      end }]])
      B.run(p, { { value = "a", partition = 0 }, { value = "b", partition = 0 } })
      local out = B.run(p, { { value = "c", partition = 1 } })
      assert.same({ "1:1" }, out)
      out = B.run(p, { { value = "d", partition = 0 } })
      assert.same({ "0:3" }, out)
    end)

    it("counts script metrics that the engine collects", function()
      local p = processor([[return { decodeRecord = function(msg, ctx)
        ctx.metrics:counter("num.of.decoding.errors"):inc()
        ctx.metrics:meter("records.seen"):mark()
        ctx.metrics:histogram("payload.size"):update(#msg:value())
        return msg
      end, converters = { function(r) return r end } }]])
      B.run(p, { { value = "a" }, { value = "bbb" } })
      local m = p.collect()
      assert.are.equal(2, m["num.of.decoding.errors"])
      assert.are.equal(2, m["records.seen.count"])
      assert.are.equal(2, m["payload.size.count"])
      assert.are.equal(1, m["payload.size.min"])
      assert.are.equal(3, m["payload.size.max"])
      assert.are.equal(2, m["payload.size.mean"])
      assert.are.equal(2, m["gobblin.converter.records.in"])
      assert.are.equal(2, m["gobblin.converter.records.out"])
    end)
  end)
end)
