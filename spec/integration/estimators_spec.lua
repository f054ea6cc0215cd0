-- The size estimators (docs/behaviour.md, section 3; docs/running.md, "Packing"), against the real broker: what each
-- counts per record without history, and how the statistics a run stores size the work units of the next plan
-- (sqlite3 reads them).
local H = require("support.harness")

local JOB = "EstimatorsSpec"

-- Writes DIR/job.lua for JOB pulling TOPICS (a list) from earliest into job-output/<topic>, with PROPS added
-- and EXTRA (Lua source of more fields of the job table) at the end; returns its path.
local job_file = H.job_writer(JOB)

local slow_decode = H.slow_decode

local run_ok = H.run_ok

local P = require("support.plans")
local assert_close, name, plan_units = P.assert_close, P.name, P.plan_units
local payload, mean_length = P.payload, P.mean_length

local function stored_stats(work)
  return P.stored_stats(work, JOB)
end

describe("the size estimators", function()
  -- Topic A is slow (2 ms per record in decodeRecord), B is fast, C has no records before the first run.
  local COUNTS = { a = { 10, 20, 0 }, b = { 15, 5 }, c = { 0, 0 } }
  local topics, work, jobs = {}, nil, {}

  setup(function()
    for k, key in ipairs({ "a", "b", "c" }) do
      topics[key] = H.unique("estimate_" .. key)
      H.create_topic(topics[key], #COUNTS[key])
      for p, n in ipairs(COUNTS[key]) do
        local lines = {}
        for i = 1, n do lines[i] = payload(k, p - 1, i) end
        if n > 0 then H.produce(topics[key], lines, p - 1) end
      end
    end
    work = H.workdir("estimate")
    local list = { topics.a, topics.b, topics.c }
    for _, estimator in ipairs({ "AVG_RECORD_TIME", "AVG_RECORD_SIZE" }) do
      jobs[estimator] = job_file(work .. "/" .. estimator, list, {
        ["kafka.workunit.size.estimator.type"] = estimator,
        ["mr.job.max.mappers"] = 2,
      }, slow_decode(2, topics.a))
    end
  end)

  local function geometric_mean(values)
    local sum = 0
    for _, v in ipairs(values) do sum = sum + math.log(math.max(v, 0.01)) end
    return math.exp(sum / #values)
  end

  it("count 1.0 per record (AVG_RECORD_TIME) or 1024 bytes (AVG_RECORD_SIZE) when nothing has history", function()
    local by_time, by_size = H.plan_json(jobs.AVG_RECORD_TIME, work), H.plan_json(jobs.AVG_RECORD_SIZE, work)
    assert.are.equal(7, by_time.workUnits)
    for _, u in ipairs(plan_units(by_time)) do assert.are.equal(u.range, u.estimatedSize) end
    for _, u in ipairs(plan_units(by_size)) do assert.are.equal(u.range * 1024, u.estimatedSize) end
    assert.are.equal(50, by_time.estimatedSize)
    assert.are.equal(50 * 1024, by_size.estimatedSize)
  end)

  it("AVG_RECORD_TIME: range x the topic's geometric mean of stored ms per record, else that of the other topics", function()
    run_ok(jobs.AVG_RECORD_TIME, work)
    H.produce(topics.a, { "a more 1", "a more 2", "a more 3", "a more 4" }, 0)
    H.produce(topics.a, { "a new 1", "a new 2", "a new 3", "a new 4", "a new 5", "a new 6" }, 2)
    H.produce(topics.b, { "b more 1", "b more 2", "b more 3" }, 0)
    H.produce(topics.c, { "c 1", "c 2", "c 3", "c 4", "c 5" }, 0)
    H.produce(topics.c, { "c 6", "c 7" }, 1)
    -- As a user editing the state: a partition far faster than 0.01 ms per record counts as 0.01.
    H.sqlite(work .. "/state-store/" .. JOB .. ".db", string.format(
      "UPDATE partition_state SET avg_record_millis = 0.0001 WHERE topic = '%s' AND partition = 1", topics.b))

    local stats = stored_stats(work)
    local per_topic = {}
    for tp, s in pairs(stats) do
      local topic = tp:match("^(.*):%d+$")
      if s.records and s.records > 0 then
        per_topic[topic] = per_topic[topic] or {}
        table.insert(per_topic[topic], s.millis)
      end
    end
    local means = {}
    for topic, values in pairs(per_topic) do means[topic] = geometric_mean(values) end
    assert.is_nil(means[topics.c])
    -- Each of A's records took the 2 ms its decodeRecord spent on it (less a whole-millisecond clock's rounding).
    assert.is_true(means[topics.a] >= 1.8, "A: " .. means[topics.a] .. " ms per record")
    local fallback = geometric_mean({ means[topics.a], means[topics.b] })

    local plan = H.plan_json(jobs.AVG_RECORD_TIME, work)
    assert.are.equal(7, plan.workUnits)
    local ranges = 0
    for _, u in ipairs(plan_units(plan)) do
      assert_close(u.range * (means[u.topic] or fallback), u.estimatedSize, name(u) .. " estimated size")
      ranges = ranges + u.range
    end
    assert.are.equal(20, ranges)
  end)

  it("AVG_RECORD_SIZE: range x the partition's stored average record size, else 1024", function()
    local stats = stored_stats(work)
    assert.is_table(stats[topics.a .. ":0"], "the run of the previous test did not happen")
    local plan = H.plan_json(jobs.AVG_RECORD_SIZE, work)
    local defaulted = 0
    for _, u in ipairs(plan_units(plan)) do
      local s = stats[name(u)]
      local size = s and s.records and s.records > 0 and s.size or 1024
      if size == 1024 and u.range > 0 then defaulted = defaulted + 1 end
      assert_close(u.range * size, u.estimatedSize, name(u) .. " estimated size")
    end
    assert.are.equal(3, defaulted) -- A:2 and C's two partitions
    -- The stored average is the payloads' own: A:0 held "t1 p0 r1 " .. "t1 p0 r10 ", and now gets 4 records.
    local lengths = {}
    for i = 1, 10 do lengths[i] = payload(1, 0, i) end
    for _, u in ipairs(plan_units(plan)) do
      if name(u) == topics.a .. ":0" then assert_close(4 * mean_length(lengths), u.estimatedSize, "A:0") end
    end
  end)
end)
