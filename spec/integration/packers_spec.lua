-- Packing work units into tasks (docs/behaviour.md, section 3; docs/running.md, "Packing"), against the real broker: a
-- run is checked against the `kingest plan --json` made just before it, and the plan against a model of the
-- documented packing written here; records against kcat (every record exactly once); the stored offsets and
-- statistics with sqlite3.
local H = require("support.harness")

local JOB = "PackersSpec"

-- Writes DIR/job.lua for JOB pulling TOPICS (a list) from earliest into job-output/<topic>, with PROPS added
-- and EXTRA (Lua source of more fields of the job table) at the end; returns its path.
local job_file = H.job_writer(JOB)

local run_ok = H.run_ok

local output = H.published

local assert_exactly_once = H.assert_exactly_once

-- The latest offset of every partition of TOPICS, asked of the broker by kcat: { ["topic:partition"] = n }.
local function latest_offsets(topics)
  local latest = {}
  for tp, o in pairs(H.offsets(unpack(topics))) do latest[tp] = o.latest end
  return latest
end

local P = require("support.plans")
local assert_near, assert_close, name, names, plan_units = P.assert_near, P.assert_close, P.name, P.names, P.plan_units
local payload, mean_length = P.payload, P.mean_length

local function stored_stats(work)
  return P.stored_stats(work, JOB)
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

-- The documented packing (docs/behaviour.md, section 3), as a model. UNITS are { topic, partition, range, size }.
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
