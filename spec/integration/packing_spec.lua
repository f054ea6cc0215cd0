-- Packing work units into tasks and the size estimators (BEHAVIOUR.md section 3), job.commit.policy, extract
-- limits and progress (section 4; README "Packing", "Extract limits", "Progress"), against the real broker.
-- A run is checked against the `kingest plan --json` made just before it, and the plan against a model of
-- the documented packing written here; records against kcat (every record exactly once); the stored offsets
-- and statistics with sqlite3.
local H = require("support.harness")

local JOB = "PackingSpec"

-- Writes DIR/job.lua for JOB pulling TOPICS (a list) from earliest into job-output/<topic>, with PROPS added
-- and EXTRA (Lua source of more fields of the job table) at the end; returns its path.
local function job_file(dir, topics, props, extra)
  local p = {
    ["job.name"] = JOB,
    ["kafka.brokers"] = H.bootstrap(),
    ["topic.whitelist"] = table.concat(topics, ","),
    ["bootstrap.with.offset"] = "earliest",
    ["writer.file.path.type"] = "tablename",
  }
  for k, v in pairs(props or {}) do p[k] = v end
  os.execute("mkdir -p " .. H.q(dir))
  return H.job_lua(dir, p, extra)
end

local slow_decode = H.slow_decode

local run_ok = H.run_ok

local function output(work, topic)
  return H.output_lines(work .. "/job-output/" .. topic)
end

-- Every record of each of TOPICS is in WORK's output exactly once.
local function assert_exactly_once(work, topics)
  for _, topic in ipairs(topics) do
    assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(work, topic)))
  end
end

-- The latest offset of every partition of TOPICS, asked of the broker by kcat: { ["topic:partition"] = n }.
local function latest_offsets(topics)
  local latest = {}
  for tp, o in pairs(H.offsets(unpack(topics))) do latest[tp] = o.latest end
  return latest
end

local function assert_near(want, got, tolerance, what)
  assert.is_number(got, what)
  assert.is_true(math.abs(want - got) <= tolerance, string.format("%s: want %.6f, got %.6f", what, want, got))
end

-- GOT equals WANT to the 6 significant digits of the plan's JSON.
local function assert_close(want, got, what)
  assert_near(want, got, 1e-5 * math.max(1, math.abs(want)), what)
end

-- "topic:partition" of a work unit.
local function name(u)
  return u.topic .. ":" .. u.partition
end

local function names(units)
  local t = {}
  for i, u in ipairs(units) do t[i] = name(u) end
  return t
end

-- Every work unit of PLAN, task after task.
local function plan_units(plan)
  local units = {}
  for _, task in ipairs(plan.tasks) do
    for _, u in ipairs(task.workUnits) do units[#units + 1] = u end
  end
  return units
end

-- The index of the task of each work unit of PLAN: { ["topic:partition"] = task index }.
local function task_of(plan)
  local t = {}
  for i, task in ipairs(plan.tasks) do
    for _, u in ipairs(task.workUnits) do t[name(u)] = i - 1 end
  end
  return t
end

-- Work units in topic, then partition order (ties between equal loads are broken by the first unit).
local function by_unit(a, b)
  if a.topic ~= b.topic then return a.topic < b.topic end
  return a.partition < b.partition
end

local function item_load(size, count)
  return math.max(size, 0.01) * math.log10(math.max(count, 2))
end

-- The documented packing (BEHAVIOUR.md section 3), as a model. UNITS are { topic, partition, range, size }.
-- Returns the tasks ({ units, size, load }, in task order) and the items worst-fit-decreasing placed: for
-- BI_LEVEL the first-level groups.
local function model_pack(units, n, packer, factor)
  local sorted = {}
  for i, u in ipairs(units) do sorted[i] = u end
  table.sort(sorted, by_unit)
  local total = 0
  for _, u in ipairs(units) do total = total + u.size end
  local capacity = total / (factor * n)
  local items = {}
  local function new_item()
    items[#items + 1] = { units = {}, size = 0 }
    return items[#items]
  end
  local function add(item, u)
    item.units[#item.units + 1] = u
    item.size = item.size + u.size
  end
  local i = 1
  while i <= #sorted do
    local topic, first_of_topic = {}, sorted[i]
    while sorted[i] and sorted[i].topic == first_of_topic.topic do
      topic[#topic + 1] = sorted[i]
      i = i + 1
    end
    local topic_total = 0
    for _, u in ipairs(topic) do topic_total = topic_total + u.size end
    if packer == "SINGLE_LEVEL" then
      -- One item per unit with records; one per topic for its empty units.
      local empties
      for _, u in ipairs(topic) do
        if u.range == 0 then
          empties = empties or new_item()
          add(empties, u)
        else
          add(new_item(), u)
        end
      end
    elseif topic_total <= capacity then
      local item = new_item()
      for _, u in ipairs(topic) do add(item, u) end
    else
      -- Best-fit-decreasing: each unit into the fullest group of its topic that it still fits in.
      local first = #items + 1
      table.sort(topic, function(a, b)
        if a.size ~= b.size then return a.size > b.size end
        return by_unit(a, b)
      end)
      for _, u in ipairs(topic) do
        local best
        if u.size <= capacity then
          for g = first, #items do
            if items[g].size + u.size <= capacity and (not best or items[g].size > items[best].size) then best = g end
          end
        end
        add(items[best] or new_item(), u)
      end
    end
  end
  for _, item in ipairs(items) do
    table.sort(item.units, by_unit)
    item.load = item_load(item.size, #item.units)
  end
  -- Worst-fit-decreasing into N tasks.
  local placed = {}
  for k, item in ipairs(items) do placed[k] = item end
  table.sort(placed, function(a, b)
    if a.load ~= b.load then return a.load > b.load end
    return by_unit(a.units[1], b.units[1])
  end)
  local tasks = {}
  for g = 1, math.min(n, #placed) do tasks[g] = { units = {}, size = 0, load = 0 } end
  for _, item in ipairs(placed) do
    local lightest = 1
    for g = 2, #tasks do
      if tasks[g].load < tasks[lightest].load then lightest = g end
    end
    for _, u in ipairs(item.units) do add(tasks[lightest], u) end
    tasks[lightest].load = tasks[lightest].load + item.load
  end
  for _, task in ipairs(tasks) do table.sort(task.units, by_unit) end
  return tasks, items
end

-- Checks that PLAN is what the documented packing makes of its work units; returns the model's items.
local function assert_plan_is_the_model(plan, n, packer)
  local units = {}
  for _, u in ipairs(plan_units(plan)) do
    units[#units + 1] = { topic = u.topic, partition = u.partition, range = u.range, size = u.estimatedSize }
  end
  local tasks, items = model_pack(units, n, packer, 3.0)
  assert.are.equal(#tasks, #plan.tasks)
  for i, task in ipairs(tasks) do
    assert.same(names(task.units), names(plan.tasks[i].workUnits))
    assert_close(task.load, plan.tasks[i].load, "load of task " .. (i - 1))
    assert_close(task.size, plan.tasks[i].estimatedSize, "estimated size of task " .. (i - 1))
  end
  return items
end

-- Checks that the run whose LOG is given made the tasks of PLAN in WORK: the log's task lines, load line and
-- watermarks, and the output files, one per task and topic that had records (their names carry the index).
local function assert_run_follows_plan(plan, log, work)
  assert.truthy(log:find("Running " .. plan.workUnits .. " work units as " .. #plan.tasks .. " tasks", 1, true), log)
  local lines = H.task_lines(log)
  assert.are.equal(#plan.tasks, #lines, log)
  for i, task in ipairs(plan.tasks) do
    local line, parts = lines[i], names(task.workUnits)
    assert.are.equal(i - 1, line.index)
    assert.are.equal(#parts, line.units)
    local listed = {}
    for k = 1, math.min(20, #parts) do listed[k] = parts[k] end -- the log names the first 20
    assert.same(listed, line.partitions)
    assert.are.equal(math.max(0, #parts - 20), line.more)
    assert_near(task.estimatedSize, line.size, 0.0051, "estimated size of task " .. (i - 1))
    assert_near(task.load, line.load, 0.0051, "load of task " .. (i - 1))
    for _, u in ipairs(task.workUnits) do
      local pulling = string.format("Pulling partition %s from offset %d to %d, range=%d", name(u), u.low, u.high, u.range)
      assert.truthy(log:find(pulling, 1, true), "missing: " .. pulling)
    end
  end
  local loads = H.load_line(log)
  assert.is_table(loads, log)
  assert_near(plan.minLoad, loads.min, 0.0051, "min load")
  assert_near(plan.maxLoad, loads.max, 0.0051, "max load")
  assert.are.equal(string.format("%.2f", plan.spreadPercent), loads.spread)

  local want, got = {}, {}
  for i, task in ipairs(plan.tasks) do
    local seen = {}
    for _, u in ipairs(task.workUnits) do
      if u.range > 0 and not seen[u.topic] then
        seen[u.topic] = true
        want[#want + 1] = (i - 1) .. " " .. u.topic
      end
    end
  end
  local stamp = log:match("Starting job " .. JOB .. " %(job_" .. JOB .. "_(%d+)%)")
  assert.is_string(stamp, log)
  for _, f in ipairs(H.files(work .. "/job-output")) do
    local topic, ms, index = f:match("^([^/]+)/part%.task_" .. JOB .. "_(%d+)_(%d+)%.txt$")
    assert.is_string(topic, "unexpected output file " .. f)
    if ms == stamp then got[#got + 1] = index .. " " .. topic end
  end
  assert.same(H.sorted(want), H.sorted(got))
end

-- "t<T> p<P> r<I>" and a padding that grows with the partition, so that partitions differ in record size.
local function payload(t, p, i)
  return string.format("t%d p%d r%d %s", t, p, i, string.rep("x", 3 * p))
end

local function mean_length(lines)
  local sum = 0
  for _, l in ipairs(lines) do sum = sum + #l end
  return sum / #lines
end

-- The stored statistics of WORK's job, read with sqlite3: { ["topic:partition"] = { millis, size, records } },
-- each nil when NULL.
local function stored_stats(work)
  local stats = {}
  local db = work .. "/state-store/" .. JOB .. ".db"
  for _, row in ipairs(H.sqlite(db, "SELECT topic, partition, avg_record_millis, avg_record_size, records_pulled FROM partition_state")) do
    stats[row[1] .. ":" .. row[2]] = { millis = tonumber(row[3]), size = tonumber(row[4]), records = tonumber(row[5]) }
  end
  return stats
end

describe("packing work units into tasks", function()
  -- Three topics of eight partitions holding uneven numbers of records, some none.
  local COUNTS = {
    { 0, 3, 41, 0, 120, 7, 200, 15 },
    { 52, 0, 9, 77, 0, 0, 130, 1 },
    { 5, 160, 0, 33, 90, 11, 0, 64 },
  }
  local topics = {}
  local produced = {} -- ["topic:partition"] = the payloads produced before the first runs
  local works = {}    -- [packer .. N] = the work dir of that first run

  setup(function()
    for t, counts in ipairs(COUNTS) do
      topics[t] = H.unique("pack")
      H.create_topic(topics[t], 8)
      for p, n in ipairs(counts) do
        local lines = {}
        for i = 1, n do lines[i] = payload(t, p - 1, i) end
        if n > 0 then H.produce(topics[t], lines, p - 1) end
        produced[topics[t] .. ":" .. (p - 1)] = lines
      end
    end
  end)

  for _, packer in ipairs({ "SINGLE_LEVEL", "BI_LEVEL" }) do
    for _, n in ipairs({ 1, 2, 4 }) do
      it(packer .. " with mr.job.max.mappers=" .. n .. " runs the tasks of its plan and pulls every record once", function()
        local work = H.workdir("pack")
        local job = job_file(work, topics, { ["mr.job.max.mappers"] = n, ["kafka.workunit.packer.type"] = packer })
        local plan = H.plan_json(job, work)
        assert.are.equal(24, plan.workUnits)
        assert.are.equal(packer, plan.packer)
        -- Nothing has history: AVG_RECORD_TIME counts 1.0 per record.
        for _, u in ipairs(plan_units(plan)) do assert.are.equal(u.range, u.estimatedSize) end

        local items = assert_plan_is_the_model(plan, n, packer)
        local task = task_of(plan)
        if packer == "BI_LEVEL" then
          -- A first-level group holds one topic and goes whole into one task, so a topic is written to at
          -- most as many files as it has groups.
          local groups, tasks_of_topic = {}, {}
          for _, item in ipairs(items) do
            local t = item.units[1].topic
            groups[t] = (groups[t] or 0) + 1
            for _, u in ipairs(item.units) do
              assert.are.equal(t, u.topic)
              assert.are.equal(task[name(item.units[1])], task[name(u)])
            end
          end
          for _, u in ipairs(plan_units(plan)) do
            if u.range > 0 then
              tasks_of_topic[u.topic] = tasks_of_topic[u.topic] or {}
              tasks_of_topic[u.topic][task[name(u)]] = true
            end
          end
          for _, t in ipairs(topics) do
            local files = 0
            for _ in pairs(tasks_of_topic[t]) do files = files + 1 end
            assert.is_true(files <= groups[t], t .. ": " .. files .. " files from " .. groups[t] .. " groups")
          end
        else
          -- The empty work units of a topic are one item, so they are all in one task.
          for _, t in ipairs(topics) do
            local in_task
            for _, u in ipairs(plan_units(plan)) do
              if u.topic == t and u.range == 0 then
                in_task = in_task or task[name(u)]
                assert.are.equal(in_task, task[name(u)])
              end
            end
          end
        end

        local log = run_ok(job, work)
        assert_run_follows_plan(plan, log, work)
        assert_exactly_once(work, topics)
        assert.same(latest_offsets(topics), H.stored_offsets(work, JOB))
        works[packer .. n] = work
      end)
    end
  end

  it("stores each partition's statistics, and the next plan and run size work units by them (AVG_RECORD_SIZE)", function()
    -- More records: into two partitions that were empty (no history: 1024 bytes each) and two that were not.
    local more = { { 1, 0, 6 }, { 2, 4, 3 }, { 3, 1, 10 }, { 1, 6, 4 } }
    for _, m in ipairs(more) do
      local t, p, k = m[1], m[2], m[3]
      local lines = {}
      for i = 1, k do lines[i] = payload(t, p, 1000 + i) end
      H.produce(topics[t], lines, p)
    end
    for _, packer in ipairs({ "SINGLE_LEVEL", "BI_LEVEL" }) do
      for _, n in ipairs({ 1, 2, 4 }) do
        local work = works[packer .. n]
        assert.is_string(work, "the first run of " .. packer .. " with " .. n .. " mappers did not happen")
        -- What the first run stored: statistics for the partitions that pulled records, none for the others.
        local stats = stored_stats(work)
        for tp, lines in pairs(produced) do
          local s = stats[tp]
          assert.is_table(s, tp)
          if #lines > 0 then
            assert.are.equal(#lines, s.records)
            assert_near(mean_length(lines), s.size, 1e-9, tp .. " average record size")
            assert.is_true(s.millis >= 0, tp)
          else
            assert.same({}, s, tp)
          end
        end

        local job = job_file(work .. "/by_size", topics, {
          ["mr.job.max.mappers"] = n,
          ["kafka.workunit.packer.type"] = packer,
          ["kafka.workunit.size.estimator.type"] = "AVG_RECORD_SIZE",
        })
        local plan = H.plan_json(job, work)
        assert.are.equal("AVG_RECORD_SIZE", plan.estimator)
        local defaulted, measured = 0, 0
        for _, u in ipairs(plan_units(plan)) do
          local tp = name(u)
          assert.are.equal("previous", u.start)
          assert.are.equal(u.stored, u.low)
          local size = stats[tp].size
          assert_close(u.range * (size or 1024), u.estimatedSize, tp .. " estimated size")
          if u.range > 0 then
            if size then measured = measured + 1 else defaulted = defaulted + 1 end
          end
        end
        assert.are.equal(2, defaulted)
        assert.are.equal(2, measured)
        local log = run_ok(job, work)
        assert_run_follows_plan(plan, log, work)
        assert_exactly_once(work, topics)
        assert.same(latest_offsets(topics), H.stored_offsets(work, JOB))
      end
    end
  end)
end)

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

describe("job.commit.policy", function()
  -- Two topics of two partitions, 11 records each; decodeRecord fails at offset 2 of the BAD topic.
  local good, bad

  setup(function()
    good, bad = H.unique("good"), H.unique("bad")
    for _, topic in ipairs({ good, bad }) do H.create_topic(topic, 2) end
    H.produce(good, { "g0 1", "g0 2", "g0 3", "g0 4", "g0 5" }, 0)
    H.produce(good, { "g1 1", "g1 2", "g1 3", "g1 4", "g1 5", "g1 6" }, 1)
    H.produce(bad, { "b0 1", "b0 2", "b0 3", "b0 4" }, 0)
    H.produce(bad, { "b1 1", "b1 2", "b1 3", "b1 4", "b1 5", "b1 6", "b1 7" }, 1)
  end)

  -- BI_LEVEL into 2 tasks with a pre-grouping factor of 1: each topic (half the total) is one first-level
  -- group, so each task holds one topic.
  local function failing_job(dir, policy)
    return job_file(dir, { good, bad }, {
      ["mr.job.max.mappers"] = 2,
      ["kafka.workunit.packer.type"] = "BI_LEVEL",
      ["workunit.pre.grouping.size.factor"] = 1,
      ["decode.error.policy"] = "fail",
      ["job.commit.policy"] = policy,
    }, table.concat({
      "  decodeRecord = function(msg)",
      string.format("    if msg:topic() == %q and msg.offset == 2 then error('cannot decode ' .. msg:value()) end", bad),
      "    return msg",
      "  end,",
    }, "\n"))
  end

  local function assert_one_topic_per_task(plan)
    assert.are.equal(2, #plan.tasks)
    for _, task in ipairs(plan.tasks) do
      assert.are.equal(2, #task.workUnits)
      assert.are.equal(task.workUnits[1].topic, task.workUnits[2].topic)
    end
  end

  local function last_result(work)
    local rows = H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT result FROM runs ORDER BY started_ms DESC LIMIT 1")
    return rows[1] and rows[1][1]
  end

  it("successful publishes and commits the task that succeeded, not the one that failed, and exits 1", function()
    local work = H.workdir("commit_successful")
    local job = failing_job(work, "successful")
    assert_one_topic_per_task(H.plan_json(job, work))
    local code, _, err = H.run(job, work)
    assert.are.equal(1, code, err)
    assert.truthy(err:find("1 of 2 tasks failed; job.commit.policy=successful: committing the 1 tasks that succeeded",
      1, true), err)
    local last = H.last_line(err)
    assert.truthy(last:find("^kingest: task task_" .. JOB .. "_%d+_%d failed: decodeRecord failed for " .. bad ..
      ":%d at offset 2 %(decode.error.policy=fail%)"), last)
    assert.same({ good }, H.dirs(work .. "/job-output"))
    assert.same(H.sorted(H.kcat_payloads(good)), H.sorted(output(work, good)))
    assert.same({ [good .. ":0"] = 5, [good .. ":1"] = 6 }, H.stored_offsets(work, JOB))
    assert.same({}, H.files(work .. "/task-data"))
    assert.are.equal("FAILED", last_result(work))

    -- With the script fixed, the next run pulls the failed topic from the start, and nothing of the other again.
    local log = run_ok(job_file(work .. "/fixed", { good, bad }, { ["mr.job.max.mappers"] = 2 }), work)
    assert.truthy(log:find("Pulling partition " .. good .. ":1 from offset 6 to 6, range=0", 1, true), log)
    assert.truthy(log:find("Pulling partition " .. bad .. ":1 from offset 0 to 7, range=7", 1, true), log)
    assert_exactly_once(work, { good, bad })
    assert.same({ [good .. ":0"] = 5, [good .. ":1"] = 6, [bad .. ":0"] = 4, [bad .. ":1"] = 7 },
      H.stored_offsets(work, JOB))
  end)

  it("full publishes nothing and moves no offset when one task fails, and exits 1", function()
    local work = H.workdir("commit_full")
    local job = failing_job(work, "full")
    assert_one_topic_per_task(H.plan_json(job, work))
    local code, _, err = H.run(job, work)
    assert.are.equal(1, code, err)
    -- The other task did succeed: the policy is what keeps its output back.
    assert.are.equal(1, #H.grep(err, "with state SUCCESSFUL"), err)
    assert.truthy(err:find("1 of 2 tasks failed; job.commit.policy=full: nothing is published and no offset moves",
      1, true), err)
    assert.truthy(H.last_line(err):find("decodeRecord failed for " .. bad, 1, true), err)
    assert.same({}, H.files(work .. "/job-output"))
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({}, H.files(work .. "/task-data"))
    assert.are.equal("FAILED", last_result(work))
  end)
end)

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
      assert.are.equal(1, code, err)
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

describe("progress", function()
  -- One partition of 40 records, 25 ms each in decodeRecord: a run of about a second.
  local topic

  setup(function()
    topic = H.unique("progress")
    H.create_topic(topic, 1)
    local lines = {}
    for i = 1, 40 do lines[i] = "record " .. i end
    H.produce(topic, lines)
  end)

  local function slow_job(work)
    return job_file(work, { topic }, { ["progress.interval.ms"] = 300 }, slow_decode(25))
  end

  it("is an INFO Progress: line per running task every progress.interval.ms when stderr is not a terminal", function()
    local work = H.workdir("progress")
    local log = run_ok(slow_job(work), work)
    local lines = H.grep(log, " INFO Progress: ")
    assert.is_true(#lines >= 2, log)
    for _, line in ipairs(lines) do
      assert.truthy(line:find(" INFO Progress: task_" .. JOB .. "_%d+_0 " .. topic .. ":0 %d+/40 records %(%d+%%%), %d+ records/s"),
        line)
    end
    assert.is_nil(log:find("\27[", 1, true), "no terminal control sequences in a log")
    assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(work, topic)))
  end)

  it("puts interim metrics in the metrics file every metrics.report.interval, before the final report", function()
    local work = H.workdir("interim")
    local job = job_file(work, { topic }, { ["metrics.reporting.file.enabled"] = true,
      ["metrics.report.interval"] = 300 }, slow_decode(25))
    run_ok(job, work)
    local interim, final, read = 0, 0, -1
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "metrics" and line.interim then
        assert.are.equal(0, final, "an interim report after the final one")
        local now = line.counters["gobblin.extractor.records.read"]
        assert.is_true(now >= read, "records read went down")
        assert.are.equal(now, line.counters["gobblin.writer.records.written"])
        read = now
        interim = interim + 1
      elseif line.type == "metrics" then
        final = final + 1
      end
    end
    assert.is_true(interim >= 2, "interim reports: " .. interim)
    assert.are.equal(2, final) -- the task's and the job's
  end)

  it("is a live status line under the log on a terminal", function()
    local work = H.workdir("progress_tty")
    local cmd = "env TERM=xterm GOBBLIN_WORK_DIR=" .. H.q(work) .. " " .. H.q(H.bin) .. " run " .. H.q(slow_job(work))
    local code, screen, err = H.sh("script -qfec " .. H.q(cmd) .. " /dev/null")
    assert.are.equal(0, code, err .. screen)
    assert.truthy(screen:find("\27[", 1, true), "no terminal control sequence:\n" .. screen)
    local status = false
    for line in screen:gmatch("[^\r\n]+") do
      if line:find("task_" .. JOB .. "_%d+_0 " .. topic .. ":0 %d+/40 records %(%d+%%%), %d+ records/s") then status = true end
    end
    assert.is_true(status, "no status line:\n" .. screen)
    assert.is_nil(screen:find(" INFO Progress: ", 1, true), "the terminal gets the status line, not progress log lines")
    assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(work, topic)))
  end)
end)
