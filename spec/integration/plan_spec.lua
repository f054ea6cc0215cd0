-- `kingest plan JOB [--json]` (docs/operations.md), against the real broker: the table and the JSON, the
-- watermarks against the broker's offsets (kcat) and the stored ones (sqlite3), that it changes nothing in
-- the work dir and takes no lock, that it fails in bounded time without a broker, and that the next run
-- executes exactly the plan.
local H = require("support.harness")

local JOB = "PlanSpec"

-- Two topics: X with partitions of 4, 0 and 9 records, Y with 6 and 3.
local COUNTS = { x = { 4, 0, 9 }, y = { 6, 3 } }

local function make_topics()
  local topics = { x = H.unique("plan_x"), y = H.unique("plan_y") }
  for key, counts in pairs(COUNTS) do
    H.create_topic(topics[key], #counts)
    for p, n in ipairs(counts) do
      local lines = {}
      for i = 1, n do lines[i] = string.format("%s p%d r%d", key, p - 1, i) end
      if n > 0 then H.produce(topics[key], lines, p - 1) end
    end
  end
  return topics
end

-- Writes WORK/job.lua for JOB pulling TOPICS from earliest in 2 tasks, with a metrics file, and PROPS added.
local function job_file(work, topics, props, extra)
  local p = { ["mr.job.max.mappers"] = 2, ["metrics.reporting.file.enabled"] = true }
  for k, v in pairs(props or {}) do p[k] = v end
  return H.job({ dir = work, name = JOB, topics = { topics.x, topics.y }, props = p, code = extra })
end

local function plan(job, work, ...)
  return H.kingest({ "plan", job, ... }, { GOBBLIN_WORK_DIR = work })
end

-- Every work unit of a JSON plan: { ["topic:partition"] = unit }, and how many there are.
local function units_of(p)
  local units, n = {}, 0
  for _, task in ipairs(p.tasks) do
    for _, u in ipairs(task.workUnits) do
      local tp = u.topic .. ":" .. u.partition
      assert.is_nil(units[tp], tp .. " is in two tasks")
      units[tp] = u
      n = n + 1
    end
  end
  return units, n
end

-- The sorted keys of T.
local function keys(t)
  local k = {}
  for key in pairs(t) do k[#k + 1] = key end
  table.sort(k)
  return k
end

local function assert_near(want, got, tolerance, what)
  assert.is_number(got, what)
  assert.is_true(math.abs(want - got) <= tolerance, string.format("%s: want %.6f, got %.6f", what, want, got))
end

describe("kingest plan", function()
  local topics

  setup(function()
    topics = make_topics()
  end)

  it("prints a table: the job, each task with its work units, and the min and max load with their spread", function()
    local work = H.workdir("plan")
    local job = job_file(work, topics)
    local code, out, err = plan(job, work)
    assert.are.equal(0, code, err)
    assert.are.equal("", err)
    local p = H.plan_json(job, work)
    local lines = H.lines(out)
    assert.are.equal(string.format("Job %s: 5 work units, 22 records, in %d tasks (SINGLE_LEVEL, AVG_RECORD_TIME, " ..
      "mr.job.max.mappers=2)", JOB, #p.tasks), lines[1])
    assert.are.equal(2, #p.tasks)
    -- Each task: a heading, the column names, one row per work unit, as in the JSON.
    local k = 2
    for i, task in ipairs(p.tasks) do
      assert.are.equal("", lines[k])
      local load, size, count = lines[k + 1]:match("^Task " .. (i - 1) .. ": load ([%d%.]+), estimated size ([%d%.]+), (%d+) work units$")
      assert.is_string(load, lines[k + 1])
      assert_near(task.load, tonumber(load), 0.0051, "load")
      assert_near(task.estimatedSize, tonumber(size), 0.0051, "estimated size")
      assert.are.equal(#task.workUnits, tonumber(count))
      assert.same({ "TOPIC", "PARTITION", "LOW", "HIGH", "RANGE", "EST_SIZE", "START" },
        { lines[k + 2]:match("^  (%S+) +(%S+) +(%S+) +(%S+) +(%S+) +(%S+) +(%S+)$") })
      for j, u in ipairs(task.workUnits) do
        assert.same({ u.topic, tostring(u.partition), tostring(u.low), tostring(u.high), tostring(u.range),
          string.format("%.2f", u.estimatedSize), "bootstrap" },
          { lines[k + 2 + j]:match("^  (%S+) +(%S+) +(%S+) +(%S+) +(%S+) +(%S+) +(%S+)$") })
      end
      k = k + 3 + #task.workUnits
    end
    assert.are.equal("", lines[k])
    local min, max, spread = lines[k + 1]:match("^Min load ([%d%.]+), max load ([%d%.]+), spread ([%d%.]+)%%$")
    assert.is_string(min, lines[k + 1])
    assert_near(p.minLoad, tonumber(min), 0.0051, "min load")
    assert_near(p.maxLoad, tonumber(max), 0.0051, "max load")
    assert.are.equal(string.format("%.2f", p.spreadPercent), spread)
    assert.are.equal(k + 1, #lines)
  end)

  it("prints JSON with --json: tasks, loads, and work units whose watermarks are the broker's offsets", function()
    local work = H.workdir("plan")
    local p = H.plan_json(job_file(work, topics), work)
    assert.are.equal(JOB, p.job)
    assert.are.equal("SINGLE_LEVEL", p.packer)
    assert.are.equal("AVG_RECORD_TIME", p.estimator)
    assert.are.equal(2, p.maxMappers)
    assert.are.equal(5, p.workUnits)
    assert.are.equal(22, p.records)
    assert.are.equal(22, p.estimatedSize) -- no history: 1.0 per record
    local loads = {}
    for i, task in ipairs(p.tasks) do
      assert.are.equal(i - 1, task.index)
      assert.is_number(task.load)
      loads[i] = task.load
    end
    assert.are.equal(math.min(unpack(loads)), p.minLoad)
    assert.are.equal(math.max(unpack(loads)), p.maxLoad)
    assert_near((p.maxLoad - p.minLoad) / p.maxLoad * 100, p.spreadPercent, 0.0051, "spread")

    local units, n = units_of(p)
    assert.are.equal(5, n)
    local broker = H.offsets(topics.x, topics.y)
    for tp, o in pairs(broker) do
      local u = units[tp]
      assert.is_table(u, tp)
      assert.are.equal(o.earliest, u.earliest)
      assert.are.equal(o.latest, u.latest)
      assert.are.equal(o.earliest, u.low) -- bootstrap.with.offset=earliest
      assert.are.equal(o.latest, u.high)
      assert.are.equal(u.high - u.low, u.range)
      assert.are.equal(require("cjson").null, u.stored)
      assert.are.equal("bootstrap", u.start)
      assert.are.equal(u.range, u.estimatedSize)
    end
  end)

  describe("after a run", function()
    local work, job

    setup(function()
      work = H.workdir("plan_after")
      job = job_file(work, topics)
      local code, _, err = H.run(job, work)
      assert(code == 0, err)
      H.produce(topics.x, { "x p1 late 1", "x p1 late 2" }, 1)
      H.produce(topics.y, { "y p0 late 1" }, 0)
    end)

    it("starts each work unit at the stored offset and ends it at the broker's latest", function()
      local p = H.plan_json(job, work)
      local units, n = units_of(p)
      assert.are.equal(5, n)
      local stored, broker = H.stored_offsets(work, JOB), H.offsets(topics.x, topics.y)
      for tp, o in pairs(broker) do
        local u = units[tp]
        assert.are.equal(stored[tp], u.stored)
        assert.are.equal(stored[tp], u.low)
        assert.are.equal("previous", u.start)
        assert.are.equal(o.latest, u.high)
        assert.are.equal(o.earliest, u.earliest)
      end
      assert.are.equal(3, p.records)
      assert.are.equal(2, units[topics.x .. ":1"].range)
      assert.are.equal(1, units[topics.y .. ":0"].range)
    end)

    it("changes nothing in the work dir: state database, lock, output, metrics and task data are as they were", function()
      local before = H.snapshot(work)
      assert.is_string(before["state-store/" .. JOB .. ".db"])
      assert.are.equal(1, #H.files(work .. "/metrics"))
      for _, args in ipairs({ {}, { "--json" } }) do
        local code, _, err = plan(job, work, unpack(args))
        assert.are.equal(0, code, err)
        local after = H.snapshot(work)
        assert.same(keys(before), keys(after))
        for f, content in pairs(before) do assert.is_true(content == after[f], f .. " changed") end
      end
    end)
  end)

  it("works on a job that never ran and creates nothing, not even the state store's folder", function()
    local work = H.workdir("plan_new")
    local job = job_file(work, topics)
    local p = H.plan_json(job, work)
    assert.are.equal(5, p.workUnits)
    local code, _, err = plan(job, work)
    assert.are.equal(0, code, err)
    assert.same({ "job.lua" }, H.files(work))
    assert.same({}, H.dirs(work))
  end)

  it("works while a run of the same job holds the lock, and the run goes on", function()
    local work = H.workdir("plan_locked")
    local job = job_file(work, topics, {}, H.slow_decode(100))
    local running = H.spawn({ "run", job }, { GOBBLIN_WORK_DIR = work }, work .. "/running")
    local pulling = H.wait_until(function() return H.stderr_of(running):find("Pulling partition", 1, true) end, 10)
    assert.truthy(pulling, H.stderr_of(running))
    local pid = H.pid_of(running)
    assert.are.equal(tostring(pid), (H.slurp(work .. "/locks/" .. JOB .. ".lock") or ""):match("%d+"))

    local t0 = H.now_ms()
    local p = H.plan_json(job, work)
    assert.is_true(H.now_ms() - t0 < 5000)
    assert.is_nil(H.slurp(running.status), "the run should still be running")
    -- The running job has not committed yet: every partition is still new, its whole range to pull.
    local latest, total = {}, 0
    for tp, o in pairs(H.offsets(topics.x, topics.y)) do
      latest[tp] = o.latest
      total = total + o.latest
    end
    assert.are.equal(total, p.records)
    for _, u in pairs(units_of(p)) do assert.are.equal(require("cjson").null, u.stored) end
    assert.are.equal(0, H.wait_exit(running, 30), H.stderr_of(running))
    assert.same(latest, H.stored_offsets(work, JOB))
  end)

  it("fails with a clear message naming the cause, within the metadata timeout, when the brokers cannot be reached", function()
    local work = H.workdir("plan_nobroker")
    local job = job_file(work, topics, { ["kafka.brokers"] = "127.0.0.1:1", ["kafka.metadata.timeout.ms"] = 2000 })
    for _, args in ipairs({ {}, { "--json" } }) do
      local t0 = H.now_ms()
      local code, out, err = plan(job, work, unpack(args))
      local ms = H.now_ms() - t0
      assert.are.equal(1, code, err)
      assert.are.equal("", out)
      assert.is_true(ms < 6000, "took " .. ms .. " ms")
      assert.matches("^kingest: cannot reach Kafka at kafka%.brokers=127%.0%.0%.1:1: 127%.0%.0%.1:1: connection " ..
        "refused %(Connect to ipv4#127%.0%.0%.1:1 failed: Connection refused%) %(%d+ connection attempts? in %d+ ms%)$",
        H.last_line(err))
    end
    assert.same({ "job.lua" }, H.files(work))
  end)

  it("prints its usage for plan --help and help plan, and exits 2 without a job", function()
    local code, out, err = H.kingest({ "plan", "--help" })
    assert.are.equal(0, code, err)
    assert.are.equal("Usage: kingest plan JOB [options]", H.lines(out)[1])
    assert.truthy(out:find("--json", 1, true), out)
    local code2, out2 = H.kingest({ "help", "plan" })
    assert.are.equal(0, code2)
    assert.are.equal(out, out2)
    code, out, err = H.kingest({ "plan" })
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("kingest: plan needs one job file", H.lines(err)[1])
  end)

  it("is what the next run executes: the same tasks with the same work units and watermarks", function()
    local work = H.workdir("plan_then_run")
    local job = job_file(work, topics, { ["mr.job.max.mappers"] = 3, ["kafka.workunit.packer.type"] = "BI_LEVEL" })
    local p = H.plan_json(job, work)
    local code, _, log = H.run(job, work)
    assert.are.equal(0, code, log)
    local tasks = H.task_lines(log)
    assert.are.equal(#p.tasks, #tasks)
    assert.truthy(log:find("Running 5 work units as " .. #p.tasks .. " tasks", 1, true), log)
    for i, task in ipairs(p.tasks) do
      local parts = {}
      for j, u in ipairs(task.workUnits) do
        parts[j] = u.topic .. ":" .. u.partition
        local line = string.format("Pulling partition %s:%d from offset %d to %d, range=%d", u.topic, u.partition,
          u.low, u.high, u.range)
        assert.truthy(log:find(line, 1, true), "missing: " .. line)
      end
      assert.are.equal(i - 1, tasks[i].index)
      assert.same(parts, tasks[i].partitions)
      assert_near(task.load, tasks[i].load, 0.0051, "load of task " .. (i - 1))
    end
    for _, topic in ipairs({ topics.x, topics.y }) do
      assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(H.output_lines(work .. "/job-output/" .. topic)))
    end
  end)
end)
