-- Faults around a run never lose or double a record: the broker frozen, or stopped and started again, in the
-- middle of a run (on a broker of this spec's own, so that the shared one is never touched); a partition's
-- records deleted while it is read; a file-size limit or a full disk while writing; two runs of the same job
-- at once. Each case checks the run's outcome (a clear error, or a clear account of what it did), then that a
-- rerun finishes, and that the output holds every record exactly once (checked against what was produced) with
-- the stored offsets (sqlite3) where they should be.
local H = require("support.harness")
local W = require("support.big_writes")

local busy_decode = H.slow_decode

-- A work dir and a job.lua pulling TOPIC from BROKERS into job-output/<topic>, with PROPS added and EXTRA
-- (Lua text) appended to the table.
local function job(label, brokers, topic, props, extra)
  local c = { name = "Faults_" .. label, topic = topic, work = H.workdir("faults_" .. label) }
  c.file = H.job({ dir = c.work, name = c.name, brokers = brokers, topics = topic, props = props, code = extra })
  c.output = c.work .. "/job-output/" .. topic
  return c
end

local records, concat = H.records, H.concat

-- Produces LINES to TOPIC:PARTITION at BROKER one record batch per record, so that a consumer that asks for
-- little gets little at a time and needs the broker all along.
local function produce_one_by_one(broker, topic, partition, lines)
  local f = os.tmpname()
  H.spit(f, table.concat(lines, "\n") .. "\n")
  local code, _, err = H.sh(string.format(
    "kcat -P -b %s -t %s -p %d -X batch.num.messages=1 -X linger.ms=0 -X enable.idempotence=true <%s",
    H.q(broker), H.q(topic), partition, H.q(f)))
  os.remove(f)
  assert(code == 0, "kcat -P: " .. err)
end

-- Small prefetch: the consumer keeps a handful of records, so the broker is needed for the rest.
local SMALL_FETCH = {
  ["kafka.fetch.batch.size"] = 20,
  ["kafka.consumer.queued.min.messages"] = 20,
  ["kafka.consumer.queued.max.messages.kbytes"] = 1,
  ["kafka.consumer.fetch.message.max.bytes"] = 200,
}

local function with(a, b)
  local t = {}
  for k, v in pairs(a) do t[k] = v end
  for k, v in pairs(b or {}) do t[k] = v end
  return t
end

-- The highest "N/M records" a run has reported in its Progress lines so far (0 before the first).
local function progress(p)
  local best = 0
  for n in H.stderr_of(p):gmatch(" INFO Progress: %S+ %S+ (%d+)/%d+ records") do
    best = math.max(best, tonumber(n))
  end
  return best
end

-- The job-level metrics line of a run's metrics file under WORK.
local function job_metrics(work)
  for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
    if line.type == "metrics" and line.context and not line.context.task then return line end
  end
end

local function run(c, env)
  return H.run(c.file, c.work, env)
end

-- Runs C until a run succeeds (at most TRIES times); returns the last log.
local function run_until_success(c, tries)
  local err
  for _ = 1, tries or 3 do
    local code
    code, _, err = run(c)
    if code == 0 then return err end
  end
  error("no successful run in " .. (tries or 3) .. " tries:\n" .. err)
end

describe("a broker that stops in the middle of a run", function()
  -- A broker of this spec's own, in its own state folder, that the tests freeze, stop and start again.
  local broker = {}

  local function kafka2(args)
    local cmd = "KINGEST_KAFKA_DIR=" .. H.q(broker.dir) .. " " .. H.q(H.root .. "/scripts/kafka")
    for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
    local code, out, err = H.sh(cmd)
    assert(code == 0, "scripts/kafka " .. table.concat(args, " ") .. " (second broker): " .. err)
    return out
  end

  local function broker_pid()
    return tonumber((H.slurp(broker.dir .. "/broker.pid") or ""):match("%d+"))
  end

  local function answers()
    return (H.sh("kcat -b " .. H.q(broker.addr) .. " -L -m 2")) == 0
  end

  setup(function()
    broker.dir = H.tmp .. "/" .. H.unique("kafka_faults")
    os.execute("mkdir -p " .. H.q(broker.dir))
    -- The jars of the shared broker's state folder, so that nothing is fetched again.
    local shared = os.getenv("KINGEST_KAFKA_DIR") or (H.root .. "/.kafka")
    local _, lib = H.sh("realpath " .. H.q(shared .. "/lib"))
    lib = lib:gsub("%s+$", "")
    if lib ~= "" and H.exists(lib .. "/.stamp") then os.execute("ln -sfn " .. H.q(lib) .. " " .. H.q(broker.dir .. "/lib")) end
    broker.addr = kafka2({ "start" }):gsub("%s+$", "")
  end)

  teardown(function()
    local pid = broker_pid()
    if pid then os.execute("kill -CONT " .. pid .. " 2>/dev/null") end
    kafka2({ "stop" })
    os.execute("rm -rf " .. H.q(broker.dir))
  end)

  -- A topic of 2 partitions with 100 records each, produced one by one, and a slow job over it (20 ms per
  -- record) with a small prefetch and PROPS.
  local function slow_case(label, props)
    local topic = H.unique("broker_" .. label)
    kafka2({ "create-topic", topic, "2" })
    local all = {}
    for p = 0, 1 do
      local lines = records(topic, p, 0, 99)
      produce_one_by_one(broker.addr, topic, p, lines)
      all = concat(all, lines)
    end
    local c = job(label, broker.addr, topic, with(SMALL_FETCH, with({
      ["mr.job.max.mappers"] = 2,
      ["progress.interval.ms"] = 100,
      ["kafka.fetch.batch.size"] = 5,
      ["kafka.consumer.queued.min.messages"] = 5,
    }, props)), busy_decode(20))
    c.all = H.sorted(all)
    return c
  end

  -- Starts a run of C in the background and waits until both partitions are being pulled.
  local function start_pulling(c)
    local p = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/run")
    assert.truthy(H.wait_until(function() return progress(p) >= 5 end, 20), "the run did not start pulling:\n" ..
      H.stderr_of(p))
    assert.is_nil(H.slurp(p.status), "the run ended too early:\n" .. H.stderr_of(p))
    return p
  end

  -- The run either failed with one clear last line (status FAIL_CODE), or finished (status 0) and said which
  -- partitions it could not finish; then reruns finish, and every record is in the output exactly once.
  local function assert_outcome(c, p, code, fail_code)
    local log = H.stderr_of(p)
    if code == 0 then
      assert.truthy(log:find("Job job_" .. c.name .. "_%d+ completed"), log)
    else
      assert.are.equal(fail_code or 1, code, log)
      assert.truthy(H.last_line(log):match("^kingest: .+"), log)
    end
    run_until_success(c)
    assert.same(c.all, H.sorted(H.output_lines(c.output)))
    assert.same({ [c.topic .. ":0"] = 100, [c.topic .. ":1"] = 100 }, H.stored_offsets(c.work, c.name))
    -- Nothing more to pull, and nothing pulled twice.
    local code2, _, err = run(c)
    assert.are.equal(0, code2, err)
    assert.truthy(err:find("Extracted 0 data records", 1, true), err)
    assert.same(c.all, H.sorted(H.output_lines(c.output)))
    return log
  end

  -- The broker is frozen once the run pulls, and stays frozen until the run has ended: the run can only give
  -- up on both partitions, so that what follows is decided, not left to timing. PROPS go into the job.
  local function frozen_run(label, props)
    local c = slow_case(label, with({ ["kafka.fetch.timeout.ms"] = 1500, ["kafka.metadata.timeout.ms"] = 1500 }, props))
    local p = start_pulling(c)
    local pid = broker_pid()
    assert.are.equal(0, (H.sh("kill -STOP " .. pid)))
    local code = H.wait_exit(p, 60)
    assert.are.equal(0, (H.sh("kill -CONT " .. pid)))
    assert.is_not_nil(code, "the run did not end:\n" .. H.stderr_of(p))
    return c, p, code
  end

  -- What a run that gave up on its partitions says: each partition it could not finish, with where it stopped;
  -- PARTIAL in its log and in the history.
  local function assert_partial(c, log)
    local topic = c.topic:gsub("%p", "%%%0")
    assert.truthy(log:find("WARN No record from " .. topic .. ":%d for 1500 ms %(kafka.fetch.timeout.ms%) at offset %d+")
      or log:find("WARN [^\n]*; partition " .. topic .. ":%d stops at offset %d+"), log)
    assert.falsy(log:find("Actual high watermark for partition " .. c.topic .. ":0=100, expected=100", 1, true) and
      log:find("Actual high watermark for partition " .. c.topic .. ":1=100, expected=100", 1, true), log)
    assert.truthy(log:find("WARN %d partitions? stopped short of their high watermark after fetch errors"), log)
    local rows = H.sqlite(c.work .. "/state-store/" .. c.name .. ".db",
      "SELECT result, message FROM runs ORDER BY started_ms LIMIT 1") -- the first run; the reruns came after it
    assert.equals("PARTIAL", rows[1][1])
    -- The history says which partitions, where they stopped and why, naming the brokers.
    assert.matches("^%d partitions? stopped short of their high watermark after fetch errors %(the next run goes on "
      .. "from there%): " .. topic .. ":%d at %d+ of 100: .-kafka%.brokers=", rows[1][2])
  end

  it("frozen (SIGSTOP) past kafka.fetch.timeout.ms: the run stops the partitions it cannot read, commits what it read, exits 0 as PARTIAL, and a rerun pulls the rest", function()
    local c, p, code = frozen_run("frozen")
    assert.are.equal(0, code, H.stderr_of(p))
    assert_partial(c, assert_outcome(c, p, code))
  end)

  it("frozen (SIGSTOP) with job.fail.on.partial=true: the same commit, and exit status 4", function()
    local c, p, code = frozen_run("frozen_fail", { ["job.fail.on.partial"] = true })
    assert.are.equal(4, code, H.stderr_of(p))
    assert_partial(c, assert_outcome(c, p, code, 4))
  end)

  it("stopped (SIGTERM) and started again from its data: the run goes on where it was, or stops the partitions it could not finish, exits 0, and a rerun finishes", function()
    local c = slow_case("restarted", { ["kafka.fetch.timeout.ms"] = 30000, ["kafka.metadata.timeout.ms"] = 5000 })
    local p = start_pulling(c)
    -- Stop the broker as scripts/kafka stop does, keeping its data and its command line.
    local pid = broker_pid()
    local argv = {}
    for a in (H.slurp("/proc/" .. pid .. "/cmdline") or ""):gmatch("([^%z]*)%z") do argv[#argv + 1] = H.q(a) end
    assert.is_true(#argv > 3)
    assert.are.equal(0, (H.sh("kill -TERM " .. pid)))
    assert.truthy(H.wait_until(function() return not H.exists("/proc/" .. pid) end, 30), "the broker did not stop")
    local pulled_before_stop = progress(p)
    H.sleep(1)
    assert.is_nil(H.slurp(p.status), "the run ended while the broker was down:\n" .. H.stderr_of(p))
    -- Start it again on the same ports and data.
    assert.are.equal(0, (H.sh("cd " .. H.q(broker.dir) .. " && setsid sh -c 'echo $$ >broker.pid; exec \"$@\"' _ " ..
      table.concat(argv, " ") .. " </dev/null >>broker.out 2>&1 &")))
    assert.truthy(H.wait_until(answers, 60), "the broker did not come back")
    local code = H.wait_exit(p, 90)
    assert.is_not_nil(code, "the run did not end:\n" .. H.stderr_of(p))
    assert.is_true(pulled_before_stop < 100, "a partition was pulled to its end before the broker stopped")
    -- Whether the broker came back within kafka.fetch.timeout.ms decides between a complete run and a partial
    -- one; either way the run commits what it read and exits 0, and its history says which it was.
    assert.are.equal(0, code, H.stderr_of(p))
    local log = assert_outcome(c, p, code)
    local partial = log:find("WARN %d partitions? stopped short of their high watermark after fetch errors") ~= nil
    assert.same({ { partial and "PARTIAL" or "SUCCESSFUL" } }, H.sqlite(c.work .. "/state-store/" .. c.name .. ".db",
      "SELECT result FROM runs ORDER BY started_ms LIMIT 1"))
  end)
end)

describe("records deleted while their partition is read", function()
  -- 1000 records "<topic>-0-<offset>", one record batch each, read slowly (8 ms per record) with a small
  -- prefetch, and metrics on; records 0..699 are deleted once the run has pulled 50 of them.
  local function deleted_while_read(label, reset)
    local topic = H.unique("deleted_" .. label)
    H.create_topic(topic, 1)
    produce_one_by_one(H.bootstrap(), topic, 0, records(topic, 0, 0, 999))
    local c = job(label, H.bootstrap(), topic, with(SMALL_FETCH, {
      ["reset.on.offset.out.of.range"] = reset,
      ["metrics.reporting.file.enabled"] = true,
      ["progress.interval.ms"] = 100,
    }), busy_decode(8))
    local p = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/run")
    assert.truthy(H.wait_until(function() return progress(p) >= 50 end, 30), H.stderr_of(p))
    H.delete_records(topic, 0, 700)
    assert.is_true(progress(p) < 680, "the run read too fast to see the deletion:\n" .. H.stderr_of(p))
    local code = H.wait_exit(p, 60)
    c.log = H.stderr_of(p)
    assert.are.equal(0, code, c.log)
    return c
  end

  it("with reset.on.offset.out.of.range=nearest goes on at the new start, logs and counts the skipped range", function()
    local c = deleted_while_read("nearest", "nearest")
    local from, skipped = c.log:match("WARN Records (%d+) to 699 of partition " .. c.topic:gsub("%p", "%%%0") ..
      ":0 were deleted before they were read %(the range is now %[700, 1000%]%); reset%.on%.offset%.out%.of%.range=nearest " ..
      "goes on at 700: (%d+) records skipped")
    assert.is_not_nil(from, c.log)
    from, skipped = tonumber(from), tonumber(skipped)
    assert.are.equal(700, from + skipped)
    assert.is_true(from >= 50 and skipped > 0)
    -- Every record read before the deletion, then 700..999: nothing lost that still existed, nothing twice.
    assert.same(concat(records(c.topic, 0, 0, from - 1), records(c.topic, 0, 700, 999)), H.output_lines(c.output))
    local metrics = job_metrics(c.work)
    assert.are.equal(skipped, metrics.counters["kafka.records.skipped"])
    assert.are.equal(1, metrics.counters["kafka.offset.resets"])
    assert.are.equal(from + 300, metrics.counters["gobblin.writer.records.written"])
    assert.same({ [c.topic .. ":0"] = 1000 }, H.stored_offsets(c.work, c.name))
  end)

  it("with reset.on.offset.out.of.range=skip stops the partition and keeps its offset, in this run and the next", function()
    local c = deleted_while_read("skip", "skip")
    local stop = c.log:match("WARN Offset (%d+) of partition " .. c.topic:gsub("%p", "%%%0") ..
      ":0 went out of range %[700, 1000%] while it was read; reset%.on%.offset%.out%.of%.range=skip: the partition " ..
      "stops here and keeps this offset")
    assert.is_not_nil(stop, c.log)
    stop = tonumber(stop)
    assert.is_true(stop >= 50 and stop < 700)
    assert.same(records(c.topic, 0, 0, stop - 1), H.output_lines(c.output))
    assert.same({ [c.topic .. ":0"] = stop }, H.stored_offsets(c.work, c.name))
    assert.are.equal(1, job_metrics(c.work).counters["kafka.offset.resets"])
    -- The next run finds the stored offset below the range, and skip keeps it.
    local code, _, err = run(c)
    assert.are.equal(0, code, err)
    assert.truthy(err:find(string.format("WARN Offset %d of partition %s:0 is out of range [700, 1000]; " ..
      "reset.on.offset.out.of.range=skip: not pulled, the stored offset is kept", stop, c.topic), 1, true), err)
    assert.same({ [c.topic .. ":0"] = stop }, H.stored_offsets(c.work, c.name))
    assert.same(records(c.topic, 0, 0, stop - 1), H.output_lines(c.output))
  end)
end)

describe("a write that fails", function()
  -- The writer buffers 1 MB: 40 records of 20 KB fail when the file is flushed as the task ends, 80 while writing.
  local function big_records(label, n, props, extra)
    return W.big_records("write_" .. label, n, function(topic) return job(label, H.bootstrap(), topic, props, extra) end)
  end
  local assert_no_trace, assert_rerun_pulls_everything_once = W.assert_no_trace, W.assert_rerun_pulls_everything_once

  it("past a file-size limit (ulimit -f) fails the task with the file and 'File too large', commits nothing, and a rerun succeeds", function()
    local c = big_records("fsize", 40)
    -- 512 blocks of 512 bytes: 256 KB, room for the state store's files but not for 800 KB of records.
    local code, _, err = H.sh(string.format("ulimit -f 512; exec env GOBBLIN_WORK_DIR=%s %s run %s", H.q(c.work),
      H.q(H.bin), H.q(c.file)))
    assert.are.equal(1, code, err)
    local last = H.last_line(err)
    assert.truthy(last:find("^kingest: task task_" .. c.name .. "_%d+_0 failed: cannot write output file "), last)
    assert.truthy(last:find(c.work .. "/task-data/" .. c.name .. "/job_" .. c.name .. "_", 1, true), last)
    assert.truthy(last:find("/task-staging/" .. c.topic .. "/part.task_" .. c.name, 1, true), last)
    assert.truthy(last:find(": File too large$"), last)
    assert.truthy(err:find("ERROR 1 of 1 tasks failed; job.commit.policy=full: nothing is published and no offset moves",
      1, true), err)
    assert_no_trace(c)
    assert_rerun_pulls_everything_once(c)
  end)
end)

describe("two runs of the same job started at once", function()
  it("lets one work and turns the other away with status 3 and the lock message; the output is exactly once", function()
    local topic = H.unique("twice")
    H.create_topic(topic, 2)
    local all = {}
    for p = 0, 1 do
      local lines = records(topic, p, 0, 19)
      H.produce(topic, lines, p)
      all = concat(all, lines)
    end
    local c = job("twice", H.bootstrap(), topic, nil, busy_decode(30))
    local a = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/a")
    local b = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/b")
    local codes = { H.wait_exit(a, 60), H.wait_exit(b, 60) }
    assert.same({ 0, 3 }, H.sorted(codes))
    local loser = codes[1] == 3 and a or b
    assert.are.equal("kingest: Previous instance of job " .. c.name .. " is still running, skipping this run",
      H.last_line(H.stderr_of(loser)))
    assert.falsy(H.stderr_of(loser):find("Pulling", 1, true))
    assert.same(H.sorted(all), H.sorted(H.output_lines(c.output)))
    assert.same({ [topic .. ":0"] = 20, [topic .. ":1"] = 20 }, H.stored_offsets(c.work, c.name))
    -- One run recorded in the history, not two.
    assert.same({ { "1" } }, H.sqlite(c.work .. "/state-store/" .. c.name .. ".db", "SELECT count(*) FROM runs"))
  end)
end)
