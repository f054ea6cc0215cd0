-- Extract limits (docs/behaviour.md, section 4; docs/running.md, "Extract limits"), against the real broker: time,
-- count and rate limits on a task, their camel-case spellings, the PrematureExtractorStop events, and the
-- settings that are refused. Records are checked against what was produced, stored offsets with sqlite3.
local H = require("support.harness")

local JOB = "LimitsSpec"

-- Writes DIR/job.lua for JOB pulling TOPICS (a list) from earliest into job-output/<topic>, with PROPS added
-- and EXTRA (Lua source of more fields of the job table) at the end; returns its path.
local job_file = H.job_writer(JOB)

local slow_decode = H.slow_decode

local run_ok = H.run_ok

local output = H.published

describe("extract limits", function()
  -- One topic of three partitions with 100 records each, pulled by one task.
  local topic
  local records = {} -- [partition] = its payloads, in offset order

  setup(function()
    topic = H.unique("limit")
    H.create_topic(topic, 3)
    for p = 0, 2 do
      records[p] = {}
      for i = 1, 100 do records[p][i] = string.format("p%d r%03d", p, i) end
      H.produce(topic, records[p], p)
    end
  end)

  local function limited(dir, props, extra)
    local p = {
      ["mr.job.max.mappers"] = 1,
      ["extract.limit.enabled"] = true,
      ["metrics.reporting.file.enabled"] = true,
    }
    for k, v in pairs(props) do p[k] = v end
    return job_file(dir, { topic }, p, extra)
  end

  -- The PrematureExtractorStop events of the run whose LOG is given: { [partition] = metadata }.
  local function stops(work, log)
    local job_id = log:match("Starting job " .. JOB .. " %((job_" .. JOB .. "_%d+)%)")
    local found = {}
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "event" and line.name == "PrematureExtractorStop" and line.job == job_id then
        found[line.metadata.partition] = line.metadata
      end
    end
    return found
  end

  -- Checks that WORK's output holds, of each partition, exactly its first N[p] records, and that N[p] is stored.
  local function assert_prefixes(work, n)
    local want, stored = {}, {}
    for p = 0, 2 do
      for i = 1, n[p] do want[#want + 1] = records[p][i] end
      stored[topic .. ":" .. p] = n[p]
    end
    assert.same(H.sorted(want), H.sorted(output(work, topic)))
    assert.same(stored, H.stored_offsets(work, JOB))
  end

  it("count: the task pulls at most the limit, shared by its partitions, and the next run goes on from there", function()
    local work = H.workdir("limit_count")
    local log = run_ok(limited(work, { ["extract.limit.type"] = "count", ["extract.limit.count.limit"] = 90 }), work)
    assert.truthy(log:find("Running 3 work units as 1 tasks", 1, true), log)
    local events = stops(work, log)
    for p = 0, 2 do
      assert.truthy(log:find("Stopping partition " .. topic .. ":" .. p .. " early at offset 30 of 100: extract.limit.type=count",
        1, true), log)
      assert.are.equal(100, events[p].expectedHighWatermark)
      assert.are.equal(30, events[p].actualHighWatermark)
      assert.truthy(events[p].reason:find("count", 1, true), events[p].reason)
    end
    assert_prefixes(work, { [0] = 30, 30, 30 })

    -- Gobblin's camel-case name works the same.
    log = run_ok(limited(work .. "/camel", { ["extract.limit.type"] = "count", ["extract.limit.countLimit"] = 90 }), work)
    for p = 0, 2 do
      assert.truthy(log:find("Pulling partition " .. topic .. ":" .. p .. " from offset 30 to 100, range=70", 1, true), log)
    end
    assert_prefixes(work, { [0] = 60, 60, 60 })
  end)

  it("time: the task stops after the limit, each partition having had its share, and the next run goes on", function()
    -- 20 ms per record: the 300 records would take 6 s.
    local work = H.workdir("limit_time")
    local t0 = H.now_ms()
    local log = run_ok(limited(work, { ["extract.limit.type"] = "time", ["extract.limit.time.limit"] = 2 },
      slow_decode(20)), work)
    local ms = H.now_ms() - t0
    assert.is_true(ms >= 1900 and ms < 5000, "the run took " .. ms .. " ms")
    local stored, events = H.stored_offsets(work, JOB), stops(work, log)
    local pulled = {}
    for p = 0, 2 do
      pulled[p] = stored[topic .. ":" .. p]
      assert.is_true(pulled[p] >= 5 and pulled[p] < 100, "partition " .. p .. " pulled " .. tostring(pulled[p]))
      assert.truthy(log:find("Stopping partition " .. topic .. ":" .. p .. " early at offset " .. pulled[p] ..
        " of 100: extract.limit.type=time", 1, true), log)
      assert.are.equal(pulled[p], events[p].actualHighWatermark)
      assert.truthy(events[p].reason:find("time", 1, true), events[p].reason)
    end
    assert_prefixes(work, pulled)

    -- The camel-case names, in milliseconds.
    log = run_ok(limited(work .. "/camel", {
      ["extract.limit.type"] = "time",
      ["extract.limit.timeLimit"] = 1500,
      ["extract.limit.timeLimitTimeunit"] = "milliseconds",
    }, slow_decode(20)), work)
    stored = H.stored_offsets(work, JOB)
    local next = {}
    for p = 0, 2 do
      assert.truthy(log:find("Pulling partition " .. topic .. ":" .. p .. " from offset " .. pulled[p] .. " to 100", 1, true),
        log)
      next[p] = stored[topic .. ":" .. p]
      assert.is_true(next[p] > pulled[p] and next[p] < 100, "partition " .. p .. ": " .. pulled[p] .. " then " .. next[p])
    end
    assert_prefixes(work, next)
  end)

  it("rate: the task pulls no faster than the limit", function()
    -- 200 a second, spelled both ways (12000 a minute is 200 a second): 300 records take 1.5 s.
    local spellings = {
      { ["extract.limit.rate.limit"] = 200 },
      { ["extract.limit.rateLimit"] = 12000, ["extract.limit.rateLimitTimeunit"] = "minutes" },
    }
    for _, props in ipairs(spellings) do
      props["extract.limit.type"] = "rate"
      local work = H.workdir("limit_rate")
      local t0 = H.now_ms()
      local log = run_ok(limited(work, props), work)
      local ms = H.now_ms() - t0
      assert.is_true(ms >= 1400 and ms < 10000, "the run took " .. ms .. " ms")
      assert.is_nil(log:find("Stopping partition", 1, true), log)
      assert_prefixes(work, { [0] = 100, 100, 100 })
    end
  end)

  it("refuses pool, a type without its limit and two spellings that disagree, naming the property", function()
    local cases = {
      { { ["extract.limit.type"] = "pool" }, "extract.limit.type=pool is not supported" },
      { {}, "extract.limit.enabled=true needs extract.limit.type (time, rate or count)" },
      { { ["extract.limit.type"] = "count" }, "extract.limit.type=count needs extract.limit.count.limit" },
      { { ["extract.limit.type"] = "time" }, "extract.limit.type=time needs extract.limit.time.limit" },
      { { ["extract.limit.type"] = "rate" }, "extract.limit.type=rate needs extract.limit.rate.limit" },
      { { ["extract.limit.type"] = "count", ["extract.limit.count.limit"] = 90, ["extract.limit.countLimit"] = 50 },
        "properties extract.limit.count.limit=90 and extract.limit.countLimit=50 disagree; set one of them" },
      { { ["extract.limit.type"] = "time", ["extract.limit.time.limit"] = 2, ["extract.limit.timeLimit"] = 3 },
        "properties extract.limit.time.limit=2 and extract.limit.timeLimit=3 disagree; set one of them" },
    }
    for _, case in ipairs(cases) do
      local work = H.workdir("limit_bad")
      local code, _, err = H.run(limited(work, case[1]), work)
      assert.are.equal(78, code, err) -- EX_CONFIG: the job is not valid, as validate says
      local last = H.last_line(err)
      assert.truthy(last:find("^kingest: ") and last:find(case[2], 1, true), "want " .. case[2] .. ", got: " .. last)
      assert.same({ "job.lua" }, H.files(work)) -- refused before anything was pulled or stored
    end
    -- The two spellings with the same value are one setting.
    local work = H.workdir("limit_same")
    H.plan_json(limited(work, {
      ["extract.limit.type"] = "count",
      ["extract.limit.count.limit"] = 90,
      ["extract.limit.countLimit"] = 90,
    }), work)
  end)
end)
