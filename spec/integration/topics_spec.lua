-- Topics that change under a job (docs/running.md, step 3), against the real broker: partitions added
-- to a topic the job pulls, a topic deleted and created again, whitelisted names and stored partitions the broker
-- does not have, and cluster errors met while planning. Output is checked against kcat, stored offsets with
-- sqlite3.
local H = require("support.harness")

local JOB = "TopicsSpec"

-- Writes WORK/job.lua pulling WHITELIST into job-output/<topic>, without a job lock, with a metrics file and
-- PROPS added. bootstrap.with.offset is left to its default unless PROPS set it.
local function job_file(work, whitelist, props)
  local p = {
    ["job.lock.enabled"] = false,
    ["bootstrap.with.offset"] = H.UNSET,
    ["metrics.reporting.file.enabled"] = true,
  }
  for k, v in pairs(props or {}) do p[k] = v end
  return H.job({ dir = work, name = JOB, topics = whitelist, props = p })
end

local output = H.published

local function assert_logged(log, text)
  assert.truthy(log:find(text, 1, true), "missing log line: " .. text .. "\n" .. log)
end

-- The job's counters of the last metrics file line of WORK.
local function job_counters(work)
  local counters
  for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
    if line.type == "metrics" and not line.context.task then counters = line.counters end
  end
  return counters
end

local function db(work)
  return work .. "/state-store/" .. JOB .. ".db"
end

describe("new partitions of a topic the job already pulls", function()
  -- Jobs with each value of kafka.new.partition.offset have pulled a 2-partition topic (and stored its two
  -- partitions); then it gets partitions 2 and 3, and 100 records, 25 in each partition.
  local topic
  local jobs = {}
  local variants = {
    default = {},
    latest = { ["kafka.new.partition.offset"] = "latest" },
    bootstrap = { ["kafka.new.partition.offset"] = "bootstrap" }, -- bootstrap.with.offset is latest
    bootstrap_earliest = { ["kafka.new.partition.offset"] = "bootstrap", ["bootstrap.with.offset"] = "earliest" },
  }
  local produced = {}

  setup(function()
    topic = H.unique("newpart")
    H.create_topic(topic, 2)
    for name, props in pairs(variants) do
      local work = H.workdir("newpart_" .. name)
      local job = job_file(work, topic, props)
      local code, _, err = H.run(job, work)
      assert(code == 0, err)
      jobs[name] = { work = work, job = job }
    end
    local code, _, err = H.kafka({ "add-partitions", topic, "4" })
    assert(code == 0, "add-partitions: " .. err)
    for p = 0, 3 do
      local lines = H.records(topic, p, 1, 25)
      H.produce(topic, lines, p)
      for _, l in ipairs(lines) do produced[#produced + 1] = l end
    end
    assert.same(H.sorted(produced), H.sorted(H.kcat_payloads(topic)))
  end)

  it("start at their earliest offset by default, named in a WARN, so that every record arrives", function()
    local j = jobs.default
    local plan = H.plan_json(j.job, j.work)
    local starts = {}
    for _, task in ipairs(plan.tasks) do
      for _, u in ipairs(task.workUnits) do starts[u.partition] = { u.start, u.low } end
    end
    assert.same({ [0] = { "previous", 0 }, [1] = { "previous", 0 }, [2] = { "new-partition", 0 },
      [3] = { "new-partition", 0 } }, starts)
    local log = H.run_ok(j.job, j.work)
    assert_logged(log, "WARN New partitions of topics this job already pulls start at their earliest offset: " ..
      topic .. ":2, " .. topic .. ":3 (kafka.new.partition.offset=earliest)")
    assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(j.work, topic)))
    assert.are.equal(100, #output(j.work, topic))
    assert.same({ [topic .. ":0"] = 25, [topic .. ":1"] = 25, [topic .. ":2"] = 25, [topic .. ":3"] = 25 },
      H.stored_offsets(j.work, JOB))
    -- Known now: the next run has nothing new to say about them.
    log = H.run_ok(j.job, j.work)
    assert.is_nil(log:find("New partitions", 1, true), log)
  end)

  it("start at their latest offset with kafka.new.partition.offset=latest, and the WARN says what is not pulled", function()
    local j = jobs.latest
    local log = H.run_ok(j.job, j.work)
    assert_logged(log, "WARN New partitions of topics this job already pulls start at their latest offset: " ..
      topic .. ":2, " .. topic .. ":3; records written to them before now are not pulled " ..
      "(kafka.new.partition.offset=latest)")
    assert.same(H.sorted(H.concat(H.records(topic, 0, 1, 25), H.records(topic, 1, 1, 25))),
      H.sorted(output(j.work, topic)))
    assert.same({ [topic .. ":0"] = 25, [topic .. ":1"] = 25, [topic .. ":2"] = 25, [topic .. ":3"] = 25 },
      H.stored_offsets(j.work, JOB))
  end)

  it("follow bootstrap.with.offset with kafka.new.partition.offset=bootstrap", function()
    local j = jobs.bootstrap
    local log = H.run_ok(j.job, j.work)
    assert_logged(log, "WARN New partitions of topics this job already pulls follow bootstrap.with.offset=latest: " ..
      topic .. ":2, " .. topic .. ":3 (kafka.new.partition.offset=bootstrap)")
    assert.are.equal(50, #output(j.work, topic))
    j = jobs.bootstrap_earliest
    log = H.run_ok(j.job, j.work)
    assert_logged(log, "follow bootstrap.with.offset=earliest: " .. topic .. ":2, " .. topic .. ":3")
    assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(j.work, topic)))
  end)

  it("leaves a topic the job never pulled to bootstrap.with.offset", function()
    local other = H.unique("newpart_other")
    H.create_topic(other, 2)
    H.produce(other, { "before" }, 1)
    local work = H.workdir("newpart_other")
    local log = H.run_ok(job_file(work, other), work)
    assert.is_nil(log:find("New partitions", 1, true), log)
    assert.is_false(H.exists(work .. "/job-output/" .. other))
    assert.same({ [other .. ":0"] = 0, [other .. ":1"] = 1 }, H.stored_offsets(work, JOB))
  end)
end)

describe("a topic deleted and created again", function()
  -- A job that has pulled COUNT records of a new 1-partition topic; returns the topic, work dir and job.
  local function pulled(name, count, props)
    local topic = H.unique(name)
    H.create_topic(topic, 1)
    H.produce(topic, H.records(topic .. " old", 0, 0, count - 1))
    local work = H.workdir(name)
    local p = { ["bootstrap.with.offset"] = "earliest" }
    for k, v in pairs(props or {}) do p[k] = v end
    local job = job_file(work, topic, p)
    H.run_ok(job, work)
    assert.are.equal(count, #output(work, topic))
    return topic, work, job
  end

  local function recreate(topic, partitions, count)
    local code, _, err = H.kafka({ "delete-topic", topic })
    assert(code == 0, err)
    H.create_topic(topic, partitions)
    if count > 0 then H.produce(topic, H.records(topic .. " new", 0, 0, count - 1), 0) end
  end

  -- The records of the run after the first: the output minus the first run's COUNT records.
  local function new_records(work, topic)
    local lines = {}
    for _, l in ipairs(output(work, topic)) do
      if not l:find(" old-", 1, true) then lines[#lines + 1] = l end
    end
    return lines
  end

  it("is detected when the stored offset lies inside the new range: every new record arrives", function()
    local topic, work, job = pulled("recreated", 40)
    assert.same({ { "39" } }, H.sqlite(db(work), "SELECT last_offset FROM partition_state"))
    recreate(topic, 1, 150)
    local plan = H.plan_json(job, work)
    assert.are.equal("recreated", plan.tasks[1].workUnits[1].start)
    assert.are.equal(0, plan.tasks[1].workUnits[1].low)
    local log = H.run_ok(job, work)
    assert_logged(log, "WARN Partition " .. topic .. ":0 was recreated since offset 40 was stored: the record at " ..
      "offset 39 is not the last one pulled (timestamp ")
    assert_logged(log, "; reset.on.offset.out.of.range=nearest starts it at its earliest offset 0 of [0, 150] " ..
      "(for a recreated log nearest means earliest)")
    assert.same(H.kcat_payloads(topic), new_records(work, topic))
    assert.are.equal(150, #new_records(work, topic))
    assert.are.equal(1, job_counters(work)["kafka.offset.resets"])
    assert.same({ { "150", "149", "0" } }, H.sqlite(db(work), "SELECT next_offset, last_offset, log_start FROM partition_state"))
    -- The new log is now the known one: the next run goes on from 150 without a WARN.
    H.produce(topic, { "after" }, 0)
    log = H.run_ok(job, work)
    assert.is_nil(log:find("was recreated", 1, true), log)
    assert_logged(log, "Pulling partition " .. topic .. ":0 from offset 150 to 151, range=1")
  end)

  it("is detected when the stored offset lies beyond the new end: the new records arrive, not latest", function()
    local topic, work, job = pulled("recreated_short", 40)
    recreate(topic, 1, 10)
    local log = H.run_ok(job, work)
    assert_logged(log, "WARN Partition " .. topic .. ":0 was recreated since offset 40 was stored: the last record " ..
      "pulled, at offset 39, is beyond the log's end 10; reset.on.offset.out.of.range=nearest starts it at its " ..
      "earliest offset 0 of [0, 10]")
    assert.same(H.kcat_payloads(topic), new_records(work, topic))
    assert.are.equal(10, #new_records(work, topic))
    assert.are.equal(1, job_counters(work)["kafka.offset.resets"])
    assert.same({ [topic .. ":0"] = 10 }, H.stored_offsets(work, JOB))
  end)

  it("is detected by a log start that went backwards when no last record is known", function()
    local topic, work, job = pulled("recreated_start", 40)
    H.delete_records(topic, 0, 30)
    H.produce(topic, { "one more" }, 0)
    H.run_ok(job, work)
    assert.same({ { "41", "30" } }, H.sqlite(db(work), "SELECT next_offset, log_start FROM partition_state"))
    H.sqlite(db(work), "UPDATE partition_state SET last_offset = NULL, last_timestamp = NULL, last_hash = NULL")
    recreate(topic, 1, 60)
    local log = H.run_ok(job, work)
    assert_logged(log, "WARN Partition " .. topic .. ":0 was recreated since offset 41 was stored: its log now " ..
      "starts at offset 0, before 30 where it started at the last run")
    assert.are.equal(60, #new_records(work, topic) - 1) -- and "one more" of the first log
    assert.same({ [topic .. ":0"] = 60 }, H.stored_offsets(work, JOB))
  end)

  it("follows reset.on.offset.out.of.range=latest and skip", function()
    local topic, work, job = pulled("recreated_latest", 40, { ["reset.on.offset.out.of.range"] = "latest" })
    recreate(topic, 1, 150)
    local log = H.run_ok(job, work)
    assert_logged(log, "reset.on.offset.out.of.range=latest starts it at its latest offset 150 of [0, 150]")
    assert.same({}, new_records(work, topic))
    assert.same({ [topic .. ":0"] = 150 }, H.stored_offsets(work, JOB))

    topic, work, job = pulled("recreated_skip", 40, { ["reset.on.offset.out.of.range"] = "skip" })
    recreate(topic, 1, 150)
    for _ = 1, 2 do
      log = H.run_ok(job, work)
      assert_logged(log, "; reset.on.offset.out.of.range=skip: not pulled, the stored offset is kept (range [0, 150])")
      assert.same({ [topic .. ":0"] = 40 }, H.stored_offsets(work, JOB))
    end
  end)

  it("with fewer partitions names the stored partitions the broker no longer has, and keeps their offsets", function()
    local topic = H.unique("shrunk")
    H.create_topic(topic, 3)
    for p = 0, 2 do H.produce(topic, { "p" .. p }, p) end
    local work = H.workdir("shrunk")
    local job = job_file(work, topic, { ["bootstrap.with.offset"] = "earliest" })
    H.run_ok(job, work)
    recreate(topic, 1, 0)
    local log = H.run_ok(job, work)
    assert_logged(log, "WARN Stored partitions " .. topic .. ":1 at 1, " .. topic .. ":2 at 1 are not on the broker " ..
      "(topic " .. topic .. " has 1 partitions); their offsets are kept")
    assert.same({ [topic .. ":0"] = 0, [topic .. ":1"] = 1, [topic .. ":2"] = 1 }, H.stored_offsets(work, JOB))
  end)
end)

describe("topic.whitelist names and stored topics the broker does not have", function()
  local topic

  setup(function()
    topic = H.unique("events")
    H.create_topic(topic, 1)
    H.produce(topic, { "e1", "e2" })
  end)

  it("a whitelisted plain name of no topic gets a WARN with the nearest broker topic", function()
    local typo = topic:sub(1, 1) .. topic:sub(3) -- one letter missing
    local work = H.workdir("typo")
    local job = job_file(work, typo .. "," .. topic .. "_none.*", { ["bootstrap.with.offset"] = "earliest" })
    local log = H.run_ok(job, work)
    assert_logged(log, "WARN topic.whitelist entry '" .. typo .. "' matches no topic on the broker; did you mean '" ..
      topic .. "'?")
    -- A regex that matches nothing may wait for topics to come: no WARN.
    assert.is_nil(log:find("entry '" .. topic .. "_none", 1, true), log)
    -- kingest plan says the same.
    local code, out, err = H.kingest({ "plan", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.truthy(out:find("Job " .. JOB .. ": 0 work units", 1, true), out)
    assert_logged(err, "did you mean '" .. topic .. "'?")
  end)

  it("fails the run and the plan before anything is pulled with topic.missing.policy=fail", function()
    local typo = topic .. "x"
    local work = H.workdir("typo_fail")
    local job = job_file(work, topic .. "," .. typo, {
      ["bootstrap.with.offset"] = "earliest",
      ["topic.missing.policy"] = "fail",
    })
    local want = "kingest: topic.whitelist entry '" .. typo .. "' matches no topic on the broker; did you mean '" ..
      topic .. "'? (topic.missing.policy=fail)"
    local code, _, err = H.run(job, work)
    assert.are.equal(1, code, err)
    assert.are.equal(want, H.last_line(err))
    assert.is_false(H.exists(work .. "/job-output/" .. topic))
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({ { "FAILED" } }, H.sqlite(db(work), "SELECT result FROM runs"))
    code, _, err = H.kingest({ "plan", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(1, code, err)
    assert.are.equal(want, H.last_line(err))
  end)

  it("a deleted topic the job pulled gets a WARN, keeps its stored offset, or fails with topic.missing.policy=fail", function()
    local gone = H.unique("gone")
    H.create_topic(gone, 1)
    H.produce(gone, { "g1" })
    local work = H.workdir("gone")
    local job = job_file(work, gone .. ".*", { ["bootstrap.with.offset"] = "earliest" })
    H.run_ok(job, work)
    local code, _, err = H.kafka({ "delete-topic", gone })
    assert(code == 0, err)
    local log = H.run_ok(job, work)
    assert_logged(log, "WARN Topic " .. gone .. " is not on the broker, but this job has stored offsets for it (" ..
      gone .. ":0 at 1); they are kept")
    assert.same({ [gone .. ":0"] = 1 }, H.stored_offsets(work, JOB))
    job = job_file(work, gone .. ".*", { ["topic.missing.policy"] = "fail" })
    code, _, err = H.run(job, work)
    assert.are.equal(1, code, err)
    assert.matches("^kingest: Topic " .. gone .. " is not on the broker", H.last_line(err))
    assert.same({ [gone .. ":0"] = 1 }, H.stored_offsets(work, JOB))
  end)
end)

describe("cluster errors while planning", function()
  it("are retried until kafka.metadata.timeout.ms: a transient 'not leader' answer does not fail the run", function()
    local topic = H.unique("notleader")
    H.create_topic(topic, 3)
    for p = 0, 2 do H.produce(topic, H.records(topic, p, 1, 5), p) end
    -- _IN_PROGRESS: what librdkafka leaves on a partition whose leader had not answered when the wait ran out.
    for _, fault in ipairs({ "offsets:NOT_LEADER_FOR_PARTITION:3", "offsets:LEADER_NOT_AVAILABLE:2",
                             "offsets:_IN_PROGRESS:2", "metadata:BROKER_NOT_AVAILABLE:2" }) do
      local work = H.workdir("notleader")
      local job = job_file(work, topic, { ["bootstrap.with.offset"] = "earliest" })
      local code, _, err = H.run(job, work, { KINGEST_KAFKA_FAULT = fault })
      assert.are.equal(0, code, fault .. ": " .. err)
      assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(work, topic)))
      assert.same({ [topic .. ":0"] = 5, [topic .. ":1"] = 5, [topic .. ":2"] = 5 }, H.stored_offsets(work, JOB))
    end
  end)

  it("that persist fail the run with the last error and the time really spent", function()
    local topic = H.unique("notleader_long")
    H.create_topic(topic, 1)
    local work = H.workdir("notleader_long")
    local job = job_file(work, topic, { ["kafka.metadata.timeout.ms"] = 1000 })
    local code, _, err = H.run(job, work, { KINGEST_KAFKA_FAULT = "offsets:NOT_LEADER_FOR_PARTITION:1000000" })
    assert.are.equal(1, code, err)
    local ms = H.last_line(err):match("^kingest: cannot fetch the offsets of partition " .. topic:gsub("%p", "%%%0") ..
      ":0 from kafka%.brokers=[^:]+:%d+: Broker: Not leader for partition %(retried for (%d+) ms%)$")
    assert.is_string(ms, err)
    assert.is_true(tonumber(ms) >= 1000, err)
    -- Not retriable: fails at once, and says it was not retried.
    code, _, err = H.run(job, work, { KINGEST_KAFKA_FAULT = "offsets:TOPIC_AUTHORIZATION_FAILED:1" })
    assert.are.equal(1, code, err)
    assert.matches("Broker: Topic authorization failed %(after %d+ ms%)$", H.last_line(err))
  end)

  -- KINGEST_KAFKA_FAULT with a partition: that one partition answers "leader not available" for the whole run,
  -- as a partition whose leader is down does, while the others answer.
  it("leave a partition without a leader out of the run: it keeps its offset, the others are pulled, the run is PARTIAL", function()
    local topic = H.unique("leaderless")
    H.create_topic(topic, 3)
    for p = 0, 2 do H.produce(topic, H.records(topic, p, 1, 3), p) end
    local work = H.workdir("leaderless")
    local job = job_file(work, topic, { ["bootstrap.with.offset"] = "earliest", ["kafka.metadata.timeout.ms"] = 4000 })
    H.run_ok(job, work)
    for p = 0, 2 do H.produce(topic, H.records(topic, p, 4, 5), p) end
    local fault = { KINGEST_KAFKA_FAULT = "offsets:LEADER_NOT_AVAILABLE:1000000:" .. topic .. ":1" }
    local code, _, log = H.run(job, work, fault)
    assert.are.equal(0, code, log)
    assert_logged(log, "WARN cannot fetch the offsets of partition " .. topic .. ":1: Broker: Leader not available; " ..
      "skipping the partition this run, its stored offset is kept")
    assert_logged(log, "WARN 1 partitions were not pulled: the brokers gave no offsets for them within " ..
      "kafka.metadata.timeout.ms (they keep their stored offsets; the next run tries again): " .. topic ..
      ":1 (Broker: Leader not available)")
    assert.same({ [topic .. ":0"] = 5, [topic .. ":1"] = 3, [topic .. ":2"] = 5 }, H.stored_offsets(work, JOB))
    local run = H.sqlite(db(work), "SELECT result, message FROM runs ORDER BY started_ms DESC LIMIT 1")[1]
    assert.same({ "PARTIAL", "1 partitions not pulled, the brokers gave no offsets: " .. topic ..
      ":1 (Broker: Leader not available)" }, run)
    -- job.fail.on.partial=true: the same commit of what could be pulled, and exit status 4 naming the partition.
    H.produce(topic, H.records(topic, 0, 6, 6), 0)
    local strict = job_file(work, topic, { ["bootstrap.with.offset"] = "earliest", ["kafka.metadata.timeout.ms"] = 4000,
      ["job.fail.on.partial"] = true })
    code, _, log = H.run(strict, work, fault)
    assert.are.equal(4, code, log)
    assert.are.equal("kingest: the run was partial (job.fail.on.partial=true): 1 partitions not pulled, the brokers " ..
      "gave no offsets: " .. topic .. ":1 (Broker: Leader not available)", H.last_line(log))
    assert.same({ [topic .. ":0"] = 6, [topic .. ":1"] = 3, [topic .. ":2"] = 5 }, H.stored_offsets(work, JOB))
    -- With its leader back, the next run pulls what it had waiting; every record is published once.
    H.run_ok(job, work)
    assert.same({ [topic .. ":0"] = 6, [topic .. ":1"] = 5, [topic .. ":2"] = 5 }, H.stored_offsets(work, JOB))
    assert.same(H.sorted(H.kcat_payloads(topic)), H.sorted(output(work, topic)))
  end)

  it("from a broker that accepts connections but never answers fail within the timeout, saying how long", function()
    -- A listener that never answers: a Kafka client waits for its first response until it gives up.
    local port_file = H.workdir("silent") .. "/port"
    local code, _, err = H.sh("python3 -c 'import socket, sys, time\ns = socket.socket()\ns.bind((\"127.0.0.1\", 0))\n" ..
      "s.listen()\nopen(sys.argv[1], \"w\").write(str(s.getsockname()[1]))\ntime.sleep(30)' " .. H.q(port_file) ..
      " >/dev/null 2>&1 &")
    assert(code == 0, err)
    local port = H.wait_until(function() return tonumber(H.slurp(port_file) or "") end, 10)
    assert.is_number(port)
    local work = H.workdir("silent")
    local job = job_file(work, "anything", { ["kafka.brokers"] = "127.0.0.1:" .. port,
      ["kafka.metadata.timeout.ms"] = 1500 })
    local t0 = H.now_ms()
    local rc, _, log = H.run(job, work)
    local wall = H.now_ms() - t0
    assert.are.equal(1, rc, log)
    local ms = H.last_line(log):match("^kingest: cannot reach Kafka at kafka%.brokers=127%.0%.0%.1:" .. port ..
      ": .* %(%a+ %a* ?(%d+) ms, kafka%.metadata%.timeout%.ms=1500%)$")
    assert.is_string(ms, log)
    -- The time it reports is the time it spent: at least the timeout, and no more than the run took.
    assert.is_true(tonumber(ms) >= 1500 and tonumber(ms) <= wall, log)
  end)
end)
