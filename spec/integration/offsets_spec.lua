-- Where each partition starts and which topics are pulled (docs/behaviour.md, section 2), against the real broker:
-- bootstrap.with.offset, topic.whitelist/blacklist, topics.move.to.latest.offset, reset.on.offset.out.of.range,
-- and many partitions over one or several tasks. Output is checked against kcat, stored offsets with sqlite3
-- and the broker's own offset tool.
local H = require("support.harness")

local JOB = "OffsetsSpec"

-- Writes WORK/job.lua pulling TOPICS (a whitelist string) into job-output/<topic>, without a job lock, with PROPS
-- added. bootstrap.with.offset is left to its default unless PROPS set it.
local function job_file(work, topics, props)
  local p = { ["job.lock.enabled"] = false, ["bootstrap.with.offset"] = H.UNSET }
  for k, v in pairs(props or {}) do p[k] = v end
  return H.job({ dir = work, name = JOB, topics = topics, props = p })
end

local run_ok = H.run_ok

local output = H.published

-- "PREFIX FROM" .. "PREFIX TO".
local function records(prefix, from, to)
  local t = {}
  for i = from, to do t[#t + 1] = prefix .. " " .. i end
  return t
end

local function concat(a, b)
  local t = {}
  for _, v in ipairs(a) do t[#t + 1] = v end
  for _, v in ipairs(b) do t[#t + 1] = v end
  return t
end

local function assert_logged(log, text)
  assert.truthy(log:find(text, 1, true), "missing log line: " .. text .. "\n" .. log)
end

describe("bootstrap.with.offset", function()
  -- A fresh topic that already holds three records when the job first sees it.
  local function topic_with_history(name)
    local topic = H.unique(name)
    H.create_topic(topic, 1)
    H.produce(topic, { "old 1", "old 2", "old 3" })
    return topic
  end

  it("earliest pulls every record already in the partition", function()
    local topic, work = topic_with_history("boot_earliest"), H.workdir("offsets")
    local log = run_ok(job_file(work, topic, { ["bootstrap.with.offset"] = "earliest" }), work)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 0 to 3, range=3")
    assert.same({ "old 1", "old 2", "old 3" }, output(work, topic))
    assert.same(H.kcat_payloads(topic), output(work, topic))
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(work, JOB))
  end)

  -- latest (given or by default): the first run stores the latest offset, the next pulls what came since.
  local function starts_at_latest(name, props)
    local topic, work = topic_with_history(name), H.workdir("offsets")
    local job = job_file(work, topic, props)
    local log = run_ok(job, work)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 3 to 3, range=0")
    assert_logged(log, "Extracted 0 data records")
    assert.is_false(H.exists(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(work, JOB))

    H.produce(topic, { "new 1", "new 2" })
    log = run_ok(job, work)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 3 to 5, range=2")
    assert.same({ "new 1", "new 2" }, output(work, topic))
    assert.same({ [topic .. ":0"] = 5 }, H.stored_offsets(work, JOB))
  end

  it("latest pulls nothing on the first run, stores the latest offset, and pulls later records next time", function()
    starts_at_latest("boot_latest", { ["bootstrap.with.offset"] = "latest" })
  end)

  it("defaults to latest", function()
    starts_at_latest("boot_default", {})
  end)

  it("skip pulls and stores nothing, so the partition stays new until another policy bootstraps it", function()
    local topic, work = topic_with_history("boot_skip"), H.workdir("offsets")
    local db = work .. "/state-store/" .. JOB .. ".db"
    local job = job_file(work, topic, { ["bootstrap.with.offset"] = "skip" })
    for _ = 1, 2 do
      local log = run_ok(job, work)
      assert_logged(log, "Partition " .. topic .. ":0 is new and bootstrap.with.offset=skip: not pulled")
      assert.is_nil(log:find("Pulling partition", 1, true), log)
      assert.is_false(H.exists(work .. "/job-output/" .. topic))
      assert.same({ { "0" } }, H.sqlite(db, "SELECT count(*) FROM partition_state"))
    end
    -- Still new: bootstrapping it now with earliest pulls the whole partition.
    job = job_file(work, topic, { ["bootstrap.with.offset"] = "earliest" })
    run_ok(job, work)
    assert.same({ "old 1", "old 2", "old 3" }, output(work, topic))
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(work, JOB))
  end)
end)

describe("topic.whitelist and topic.blacklist", function()
  local prefix, internal
  local names = { "orders", "orders_eu", "users", "users_archive", "logs" }

  -- Topics prefix_<name>, each holding one record "record of <name>"; and an internal-looking __prefix_internal.
  setup(function()
    prefix = H.unique("filter")
    for _, name in ipairs(names) do
      H.create_topic(prefix .. "_" .. name, 1)
      H.produce(prefix .. "_" .. name, { "record of " .. name })
    end
    internal = "__" .. prefix .. "_internal"
    H.create_topic(internal, 1)
    H.produce(internal, { "record of internal" })
  end)

  -- Runs a job with WHITELIST and BLACKLIST from earliest; returns its work dir and log.
  local function pull(whitelist, blacklist)
    local work = H.workdir("filter")
    local log = run_ok(job_file(work, whitelist, {
      ["topic.blacklist"] = blacklist,
      ["bootstrap.with.offset"] = "earliest",
    }), work)
    return work, log
  end

  it("pulls the topics whose whole name matches a whitelist regex and no blacklist regex", function()
    local p = prefix
    local work = pull(p .. "_orders.*, " .. p .. "_users," .. p .. "_log", ".*_eu")
    -- orders_eu matches the whitelist but the blacklist wins; users_archive and logs only match a prefix.
    assert.same({ p .. "_orders", p .. "_users" }, H.dirs(work .. "/job-output"))
    assert.same({ "record of orders" }, output(work, p .. "_orders"))
    assert.same({ "record of users" }, output(work, p .. "_users"))
    assert.same({ [p .. "_orders:0"] = 1, [p .. "_users:0"] = 1 }, H.stored_offsets(work, JOB))
  end)

  it("lets the blacklist win over a whitelisted exact name", function()
    local p = prefix
    local work = pull(p .. "_logs," .. p .. "_users", p .. "_logs")
    assert.same({ p .. "_users" }, H.dirs(work .. "/job-output"))
    assert.same({ [p .. "_users:0"] = 1 }, H.stored_offsets(work, JOB))
  end)

  it("reads the patterns as Java regexes: \\d is a digit and \\D a non-digit", function()
    -- prefix ends in _<n>: match that number with \d+ (and nothing of other runs).
    local p = prefix:gsub("_%d+$", "_\\d+")
    local work = pull(p .. "_(logs|users_archive)", p .. "_users\\D.*")
    assert.same({ prefix .. "_logs" }, H.dirs(work .. "/job-output"))
  end)

  it("takes every topic when the whitelist is empty", function()
    -- Every topic of the shared broker is discovered; skip keeps the run from pulling or storing any of them.
    local work = H.workdir("filter")
    local log = run_ok(job_file(work, "", {
      ["topic.blacklist"] = prefix .. "_.*_eu," .. prefix .. "_logs",
      ["bootstrap.with.offset"] = "skip",
    }), work)
    for _, name in ipairs({ "orders", "users", "users_archive" }) do
      assert_logged(log, "Discovered topic " .. prefix .. "_" .. name .. " with 1 partitions")
    end
    for _, name in ipairs({ "orders_eu", "logs" }) do
      assert.is_nil(log:find("Discovered topic " .. prefix .. "_" .. name .. " ", 1, true), log)
    end
    assert.is_nil(log:find("Discovered topic __", 1, true), log)
    assert.same({}, H.stored_offsets(work, JOB))
  end)

  it("never pulls a topic whose name starts with __ unless it is whitelisted by its exact name", function()
    local work = pull("__" .. prefix .. "_int.*," .. prefix .. "_logs", "")
    assert.same({ prefix .. "_logs" }, H.dirs(work .. "/job-output"))
    work = pull(internal, "")
    assert.same({ internal }, H.dirs(work .. "/job-output"))
    assert.same({ "record of internal" }, output(work, internal))
  end)
end)

describe("topics.move.to.latest.offset", function()
  -- Pulls the three records of each of TOPICS, then three more arrive in each; returns the work dir.
  local function job_behind(topics)
    local work = H.workdir("move")
    for _, topic in ipairs(topics) do
      H.create_topic(topic, 1)
      H.produce(topic, records(topic, 1, 3))
    end
    run_ok(job_file(work, table.concat(topics, ","), { ["bootstrap.with.offset"] = "earliest" }), work)
    for _, topic in ipairs(topics) do H.produce(topic, records(topic, 4, 6)) end
    return work
  end

  it("moves the listed topics to latest, by exact name, and pulls the others from their stored offset", function()
    local moved = H.unique("move")
    local other = moved .. "_more" -- starts with the listed name, but is not it
    local work = job_behind({ moved, other })
    local log = run_ok(job_file(work, moved .. "," .. other, {
      ["bootstrap.with.offset"] = "earliest",
      ["topics.move.to.latest.offset"] = "no_such_topic, " .. moved,
    }), work)
    assert_logged(log, "Pulling partition " .. moved .. ":0 from offset 6 to 6, range=0")
    assert_logged(log, "Pulling partition " .. other .. ":0 from offset 3 to 6, range=3")
    assert.same(records(moved, 1, 3), output(work, moved))
    assert.same(records(other, 1, 6), output(work, other))
    assert.same({ [moved .. ":0"] = 6, [other .. ":0"] = 6 }, H.stored_offsets(work, JOB))
  end)

  it("moves every topic to latest with `all`", function()
    local topic = H.unique("move_all")
    local work = job_behind({ topic })
    local log = run_ok(job_file(work, topic, { ["topics.move.to.latest.offset"] = "all" }), work)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 6 to 6, range=0")
    assert_logged(log, "Extracted 0 data records")
    assert.same(records(topic, 1, 3), output(work, topic))
    assert.same({ [topic .. ":0"] = 6 }, H.stored_offsets(work, JOB))
  end)
end)

describe("reset.on.offset.out.of.range", function()
  -- Each policy's job (and one without the property) has pulled records 0..9 and stored offset 10. Then
  -- records 10..19 arrive and the records below 15 are deleted: the stored 10 is below the range [15, 20].
  local topic
  local jobs = {}
  local policies = { "earliest", "latest", "nearest", "skip", "default", "nearest_above" }

  setup(function()
    topic = H.unique("reset")
    H.create_topic(topic, 1)
    H.produce(topic, records("record", 0, 9))
    for _, policy in ipairs(policies) do
      local work = H.workdir("reset_" .. policy)
      local props = {
        ["bootstrap.with.offset"] = "earliest",
        ["metrics.reporting.file.enabled"] = true,
      }
      if policy ~= "default" then props["reset.on.offset.out.of.range"] = policy:gsub("_above$", "") end
      local job = job_file(work, topic, props)
      local code, _, err = H.run(job, work)
      assert(code == 0, err)
      assert(H.stored_offsets(work, JOB)[topic .. ":0"] == 10, "the first run did not store 10")
      jobs[policy] = { work = work, job = job }
    end
    H.produce(topic, records("record", 10, 19))
    H.delete_records(topic, 0, 15)
  end)

  -- Runs POLICY's job; checks the reset's WARN line and that it was counted; returns the log.
  local function run_reset(policy, stored, chosen)
    local j = jobs[policy]
    local log = run_ok(j.job, j.work)
    local warn = string.format("WARN Offset %d of partition %s:0 is out of range [15, 20]; ", stored, topic)
    assert_logged(log, warn .. (chosen and ("reset.on.offset.out.of.range moves it to " .. chosen)
      or "reset.on.offset.out.of.range=skip: not pulled, the stored offset is kept"))
    local job_counters
    for _, line in ipairs(H.metrics_lines(j.work .. "/metrics")) do
      if line.type == "metrics" and not line.context.task then job_counters = line.counters end
    end
    assert.are.equal(1, job_counters["kafka.offset.resets"])
    return log
  end

  it("earliest restarts at the earliest offset", function()
    local log = run_reset("earliest", 10, 15)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 15 to 20, range=5")
    assert.same(concat(records("record", 0, 9), records("record", 15, 19)), output(jobs.earliest.work, topic))
    assert.same(records("record", 15, 19), H.kcat_payloads(topic))
    assert.same({ [topic .. ":0"] = 20 }, H.stored_offsets(jobs.earliest.work, JOB))
  end)

  it("latest restarts at the latest offset and pulls nothing", function()
    local log = run_reset("latest", 10, 20)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 20 to 20, range=0")
    assert.same(records("record", 0, 9), output(jobs.latest.work, topic))
    assert.same({ [topic .. ":0"] = 20 }, H.stored_offsets(jobs.latest.work, JOB))
  end)

  it("nearest restarts at the earliest offset when the stored one is below it", function()
    run_reset("nearest", 10, 15)
    assert.same(concat(records("record", 0, 9), records("record", 15, 19)), output(jobs.nearest.work, topic))
    assert.same({ [topic .. ":0"] = 20 }, H.stored_offsets(jobs.nearest.work, JOB))
  end)

  it("defaults to nearest", function()
    run_reset("default", 10, 15)
    assert.same(concat(records("record", 0, 9), records("record", 15, 19)), output(jobs.default.work, topic))
  end)

  it("nearest restarts at the latest offset when the stored one is above it", function()
    local j = jobs.nearest_above
    H.set_stored_offset(j.work, JOB, topic, 0, 1000)
    local log = run_reset("nearest_above", 1000, 20)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 20 to 20, range=0")
    assert.same(records("record", 0, 9), output(j.work, topic))
    assert.same({ [topic .. ":0"] = 20 }, H.stored_offsets(j.work, JOB))
  end)

  it("skip pulls nothing and keeps the stored offset, run after run", function()
    for _ = 1, 2 do
      local log = run_reset("skip", 10, nil)
      assert.is_nil(log:find("Pulling partition", 1, true), log)
      assert.same(records("record", 0, 9), output(jobs.skip.work, topic))
      assert.same({ [topic .. ":0"] = 10 }, H.stored_offsets(jobs.skip.work, JOB))
    end
  end)
end)

describe("several topics with several partitions", function()
  -- Three topics of three partitions; partition p of topic t gets 2 + t + p records.
  local topics = {}
  local works = {}

  setup(function()
    for t = 1, 3 do
      local topic = H.unique("multi")
      topics[t] = topic
      H.create_topic(topic, 3)
      for p = 0, 2 do H.produce(topic, records(string.format("t%d p%d", t, p), 1, 2 + t + p), p) end
    end
  end)

  -- The latest offset of each of the nine partitions, asked of the broker by kcat: { ["topic:partition"] = n }.
  local function latest_offsets()
    local latest, n = {}, 0
    for tp, o in pairs(H.offsets(topics[1], topics[2], topics[3])) do
      latest[tp] = o.latest
      n = n + 1
    end
    assert.are.equal(9, n)
    return latest
  end

  -- Every record of every topic is in WORK's output exactly once.
  local function assert_exactly_once(work)
    for _, topic in ipairs(topics) do
      assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(work, topic)))
    end
  end

  -- The task ids in the names of WORK's output files.
  local function task_ids(work)
    local ids, seen = {}, {}
    for _, f in ipairs(H.files(work .. "/job-output")) do
      local id = f:match("part%.(task_[%w_]+)%.txt$")
      if id and not seen[id] then
        seen[id] = true
        ids[#ids + 1] = id
      end
    end
    return ids
  end

  for _, mappers in ipairs({ 1, 3 }) do
    it("pulls every record exactly once with mr.job.max.mappers=" .. mappers, function()
      local work = H.workdir("multi")
      works[mappers] = work
      local log = run_ok(job_file(work, table.concat(topics, ","), {
        ["bootstrap.with.offset"] = "earliest",
        ["mr.job.max.mappers"] = mappers,
      }), work)
      assert_logged(log, "Running 9 work units as " .. mappers .. " tasks")
      assert.are.equal(mappers, #task_ids(work))
      assert_exactly_once(work)
      assert.same(latest_offsets(), H.stored_offsets(work, JOB))
    end)
  end

  it("pulls exactly the new records on the next run, with 1 and with 3 mappers", function()
    for t, topic in ipairs(topics) do
      for p = 0, 2 do H.produce(topic, { string.format("t%d p%d late", t, p) }, p) end
    end
    for _, mappers in ipairs({ 1, 3 }) do
      local work = works[mappers]
      assert.is_not_nil(work, "the first run with " .. mappers .. " mappers did not happen")
      local log = run_ok(work .. "/job.lua", work)
      local extracted = 0
      for n in log:gmatch("Extracted (%d+) data records") do extracted = extracted + tonumber(n) end
      assert.are.equal(9, extracted)
      assert_exactly_once(work)
    end
    local want = latest_offsets()
    assert.same(want, H.stored_offsets(works[1], JOB))
    assert.same(want, H.stored_offsets(works[3], JOB))
  end)
end)
