-- MapReduce mode (launcher.type=MAPREDUCE) on the real YARN and HDFS of scripts/hadoop ("yarn" and "hadoop"
-- fixtures) against the real broker: the same job run standalone and as a map-only Hadoop Streaming job gives the
-- same published records and stored offsets; a map attempt that fails is retried and only the successful one's
-- files are published; a job YARN fails, a driver killed during the job and during its commit leave nothing
-- lost or doubled; the maps run on the properties the driver resolved (its environment), never see a secret in
-- their input, and a SIGTERM kills the Hadoop job; a run whose maps read nothing fails with their errors; and the
-- errors of a Hadoop that cannot be found, reached or run. Published files are read with curl (WebHDFS OPEN) and,
-- once per test, with Hadoop's FsShell, never with kingest.
local H = require("support.harness")
local W = require("support.webhdfs")

local streaming_jar = (W.hadoop_ok({ "streaming-jar" }):gsub("%s+$", ""))

-- Three topics of 1, 2 and 3 partitions holding uneven numbers of records, each "<topic> <p> <n>"; returns the
-- topic names and, per topic, its records.
local function topics_with(name, counts)
  local names, records = {}, {}
  for t, per_partition in ipairs(counts) do
    local topic = H.unique(name .. t)
    H.create_topic(topic, #per_partition)
    records[topic] = {}
    for p, n in ipairs(per_partition) do
      local lines = {}
      for i = 1, n do lines[i] = string.format("%s %d %05d", topic, p - 1, i) end
      H.produce(topic, lines, p - 1)
      for _, l in ipairs(lines) do records[topic][#records[topic] + 1] = l end
    end
    names[#names + 1] = topic
  end
  return names, records
end

-- Adds N more records to each partition of each topic in NAMES (as topics_with makes them), into RECORDS.
local function produce_more(names, records, partitions, n, tag)
  for t, topic in ipairs(names) do
    for p = 0, partitions[t] - 1 do
      local lines = {}
      for i = 1, n do lines[i] = string.format("%s %d %s%03d", topic, p, tag, i) end
      H.produce(topic, lines, p)
      for _, l in ipairs(lines) do records[topic][#records[topic] + 1] = l end
    end
  end
end

-- How a case's Hadoop job runs, as generic options of Streaming that go before the case's own mr.streaming.args.
-- "yarn": each map in a container of its own, as a real cluster runs them (the cases about failed and retried map
-- attempts, and the one that kills a job while its map is busy: YARN kills a container's processes, while a job
-- killed in uber mode leaves its coordinator's Streaming child running on its own). "uber": on YARN still, but the
-- maps run one after the other inside the job's coordinator (Hadoop's uber mode: no container and no JVM per map).
-- "local": Hadoop's local job runner, the maps inside the client's JVM, no YARN (the cases about kingest's side of
-- the job only, and the runs that follow a case's YARN job: what they check, offsets, commits and what is
-- published, is the driver's; a job in the client's JVM takes 5 s where one on YARN takes 20).
local MODES = {
  yarn = "",
  uber = "-D mapreduce.job.ubertask.enable=true",
  ["local"] = "-D mapreduce.framework.name=local -D mapreduce.local.map.tasks.maximum=4",
}

-- The properties of a job on HDFS under ROOT; MapReduce ones when MR (a key of MODES).
local function props(root, mr, extra)
  local p = {
    ["writer.fs.uri"] = W.uri(),
    ["task.data.root.dir"] = root .. "/task-data",
    ["data.publisher.final.dir"] = root .. "/out",
    ["mr.job.max.mappers"] = 4,
    ["metrics.reporting.file.enabled"] = "true",
  }
  if mr then
    p["launcher.type"] = "MAPREDUCE"
    p["mr.job.root.dir"] = root .. "/mr"
    p["mr.hadoop.command"] = H.root .. "/scripts/hadoop"
    p["mr.streaming.jar"] = streaming_jar
  end
  for k, v in pairs(extra or {}) do p[k] = v end
  if mr then
    local args = assert(MODES[mr], mr) .. " " .. (p["mr.streaming.args"] or "")
    p["mr.streaming.args"] = args:match("^%s*(.-)%s*$")
    if p["mr.streaming.args"] == "" then p["mr.streaming.args"] = nil end
  end
  return p
end

local function all_of(names, records)
  local all = {}
  for _, topic in ipairs(names) do
    for _, l in ipairs(records[topic]) do all[#all + 1] = l end
  end
  return all
end

-- Asserts that the final dir under ROOT holds exactly RECORDS, per topic, as curl reads it (WebHDFS OPEN); with
-- FSSHELL, also as Hadoop's FsShell reads it: the records of all the topics, every file under the final dir read by
-- one fs -text (a JVM: once per test).
local function assert_published(root, names, records, fsshell)
  for _, topic in ipairs(names) do
    local got = W.lines(root .. "/out/" .. topic)
    assert.same(H.sorted(records[topic]), H.sorted(got), "topic " .. topic)
  end
  if fsshell then
    assert.same(H.sorted(all_of(names, records)), H.sorted((W.fs_lines(root .. "/out"))), "read by FsShell")
  end
end

describe("kingest in MapReduce mode on YARN", function()
  setup(function()
    local code, _, err = W.hadoop({ "yarn-status" })
    assert(code == 0, "no YARN: " .. err)
  end)

  it("publishes the same records and stores the same offsets as a standalone run; a second run pulls only new "
    .. "records", function()
    local counts = { { 300 }, { 120, 40 }, { 200, 0, 90 } }
    local names, records = topics_with("mr_same", counts)
    local topics = table.concat(names, ",")
    local root_local, root_mr = "/kingest/" .. H.unique("standalone"), "/kingest/" .. H.unique("mr")
    local work_local, work_mr = H.workdir("mr_same_local"), H.workdir("mr_same_mr")
    -- A script that needs a variable of its environment: the maps get it through -cmdenv.
    local code = 'decodeRecord = function(m) assert(os.getenv("KINGEST_SPEC_TAG") == "on", "no tag") return m end,'
    H.run_ok(H.job({ dir = work_local, name = "Standalone", topics = topics, props = props(root_local, false),
      code = code }), work_local, { KINGEST_SPEC_TAG = "on" })
    local job = H.job({ dir = work_mr, name = "OnYarn", topics = topics, code = code,
      props = props(root_mr, "uber",
        { ["mr.streaming.args"] = "-D mapreduce.job.priority=HIGH -cmdenv KINGEST_SPEC_TAG=on" }) })
    local log = H.run_ok(job, work_mr)
    -- What the driver says: the application, its tracking URL, the maps' progress as Hadoop sees it.
    assert.matches("Hadoop job: application application_%d+_%d+", log)
    assert.matches("Hadoop job: tracking URL http://[^ ]+/proxy/application_", log)
    assert.matches("Hadoop job: map 100%% reduce 0%%", log)
    assert.matches("Job job_OnYarn_%d+ completed in", log)
    assert_published(root_local, names, records)
    assert_published(root_mr, names, records)
    assert.same(H.stored_offsets(work_local, "Standalone"), H.stored_offsets(work_mr, "OnYarn"))
    -- The metrics file sums the maps' counts, as a standalone run's does, with a line per task.
    local function job_counters(work)
      local job, tasks = nil, 0
      for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
        if line.type == "metrics" and not line.context.task then job = line.counters end
        if line.type == "metrics" and line.context.task then tasks = tasks + 1 end
      end
      return job, tasks
    end
    local mr_counters, mr_tasks = job_counters(work_mr)
    local local_counters, local_tasks = job_counters(work_local)
    assert.equals(750, mr_counters["gobblin.writer.records.written"])
    assert.equals(750, mr_counters["gobblin.extractor.records.read"])
    assert.equals(local_counters["gobblin.writer.bytes.written"], mr_counters["gobblin.writer.bytes.written"])
    assert.equals(local_tasks, mr_tasks)
    -- The run's folder under mr.job.root.dir is gone (input, output, the attempts' task data).
    assert.same({}, W.paths(root_mr .. "/mr"))
    -- Next run: only the new records, published once.
    produce_more(names, records, { 1, 2, 3 }, 7, "b")
    job = H.job({ dir = work_mr, name = "OnYarn", topics = topics, code = code,
      props = props(root_mr, "local", { ["mr.streaming.args"] = "-cmdenv KINGEST_SPEC_TAG=on" }) })
    local again = H.run_ok(job, work_mr)
    assert.matches("committed the offsets of 6 partitions", again)
    assert_published(root_mr, names, records, true)
    local stored = H.stored_offsets(work_mr, "OnYarn")
    assert.equals(307, stored[names[1] .. ":0"])
    assert.equals(97, stored[names[3] .. ":2"])
  end)

  it("retries a map attempt that dies after printing its result, and publishes only the retry's files", function()
    local names, records = topics_with("mr_retry", { { 120, 40 } })
    local root, work = "/kingest/" .. H.unique("retry"), H.workdir("mr_retry")
    -- Records that take 200 ms each in a map's first attempt, so that the first task works 24 s without reading
    -- input: its status lines (every second) keep it alive past a 20 s mapreduce.task.timeout (which also counts
    -- the start of the map's JVM, over 10 s on a loaded machine). The maps report to YARN every half second, and the
    -- driver asks every second. The retries ($mapreduce_task_attempt_id not ending in _0), whose files are
    -- published, go at full speed.
    local slow_first = table.concat({
      "  decodeRecord = function(msg)",
      "    if not (os.getenv('mapreduce_task_attempt_id') or ''):find('_0$') then return msg end",
      "    local done = require('gobblin.ffi').C.kg_ffi_clock_mono_ms() + 201",
      "    while require('gobblin.ffi').C.kg_ffi_clock_mono_ms() < done do end",
      "    return msg",
      "  end,",
    }, "\n")
    local job = H.job({ dir = work, name = "Retry", topics = names[1], code = slow_first,
      props = props(root, "yarn", { ["progress.interval.ms"] = 1000,
        ["mr.streaming.args"] = "-D mapreduce.task.progress-report.interval=500 -D mapreduce.task.timeout=20000 "
          .. "-D mapreduce.task.timeout.check-interval-ms=500" }) })
    -- Every map's first attempt is killed with SIGKILL once its result line is out.
    local log = H.run_ok(job, work, { KINGEST_MAP_CRASH_AT = "map:1" })
    assert.matches("Task Id : attempt_%d+_%d+_m_%d+_0, Status : FAILED", log)
    assert.falsy(log:find("taskTimedOut: true", 1, true), log) -- no attempt was killed for silence
    -- The maps' reporter:status lines, as YARN keeps them, in the driver's log.
    assert.matches("INFO Progress: task_Retry_%d+_%d " .. names[1] .. ":%d %d+/%d+ records", log)
    assert_published(root, names, records, true)
    local files = W.paths(root .. "/out")
    assert.equals(2, #files, table.concat(files, "\n")) -- one per task: the failed attempts' never appear
    assert.same({ [names[1] .. ":0"] = 120, [names[1] .. ":1"] = 40 }, H.stored_offsets(work, "Retry"))
  end)

  it("fails when YARN fails the job: offsets unmoved, nothing published, its HDFS folder removed; of the runs after "
    .. "it, one killed in its commit, the next finishes that commit", function()
    local names, records = topics_with("mr_fail", { { 90, 90, 90 } })
    local root, work = "/kingest/" .. H.unique("fail"), H.workdir("mr_fail")
    local job = H.job({ dir = work, name = "Fails", topics = names[1],
      props = props(root, "yarn", { ["mr.map.max.attempts"] = 1, ["parallel.runner.threads"] = 1 }) })
    local last = H.run_fails(job, work, 1, { "the Hadoop job of job_Fails_", "failed" },
      { KINGEST_MAP_CRASH_AT = "map:1" })
    assert.matches("Job not successful", last)
    assert.same({}, H.stored_offsets(work, "Fails"))
    assert.same({}, W.paths(root .. "/out"))
    assert.same({}, W.paths(root .. "/mr"))
    -- The next run's Hadoop job succeeds, and its driver is killed once the commit has published one file.
    job = H.job({ dir = work, name = "Fails", topics = names[1],
      props = props(root, "local", { ["parallel.runner.threads"] = 1 }) })
    local code, _, err = H.run(job, work, { KINGEST_CRASH_AT = "publish:1" })
    assert.equals(128 + 9, code, err)
    assert.equals(1, #W.paths(root .. "/out"))
    local again = H.run_ok(job, work)
    assert.truthy(again:find("Finished the interrupted commit", 1, true), again)
    assert_published(root, names, records, true)
    assert.same({}, W.paths(root .. "/mr"))
    local stored = H.stored_offsets(work, "Fails")
    assert.equals(270, stored[names[1] .. ":0"] + stored[names[1] .. ":1"] + stored[names[1] .. ":2"])
  end)

  it("recovers from a driver killed while its Hadoop job runs: the abandoned run's folder is removed, every "
    .. "record published once", function()
    local names, records = topics_with("mr_kill", { { 100, 100 } })
    local root, work = "/kingest/" .. H.unique("kill"), H.workdir("mr_kill")
    local job = H.job({ dir = work, name = "Killed", topics = names[1], props = props(root, "uber") })
    local log = work .. "/driver.log"
    local _, pid = H.sh(string.format("GOBBLIN_WORK_DIR=%s %s run %s >%s 2>&1 & echo $!", H.q(work), H.q(H.bin),
      H.q(job), H.q(log)))
    assert.truthy(H.wait_until(function() return (H.slurp(log) or ""):find("Hadoop job: job_", 1, true) end, 60),
      H.slurp(log))
    H.sh("kill -KILL " .. pid:match("%d+"))
    -- The orphaned Hadoop job goes on and ends; its output is never published.
    local dead = (H.slurp(log) or ""):match("Starting job Killed %((job_Killed_%d+)%)")
    assert.truthy(H.wait_until(function()
      return W.exists(root .. "/mr/Killed/" .. dead .. "/output/_SUCCESS")
    end, 120))
    assert.same({}, W.paths(root .. "/out"))
    assert.same({}, H.stored_offsets(work, "Killed"))
    job = H.job({ dir = work, name = "Killed", topics = names[1], props = props(root, "local") })
    local again = H.run_ok(job, work)
    assert.truthy(again:find("Removed the task data of an earlier run that did not finish: " .. root .. "/mr/Killed/"
      .. dead, 1, true), again)
    assert_published(root, names, records, true)
    assert.same({}, W.paths(root .. "/mr"))
  end)

  it("runs a job whose brokers and secret come from the driver's environment on what the driver resolved, with no "
    .. "secret in the maps' input; SIGTERM kills its Hadoop job: STOPPED, exit 6, nothing published, and the next "
    .. "run pulls every record once", function()
    local names, records = topics_with("mr_env", { { 60, 40 } })
    local root, work = "/kingest/" .. H.unique("env"), H.workdir("mr_env")
    local secret = H.unique("spec-secret")
    -- While the file HOLD exists, the maps' decodeRecord waits after 20 records of its task: the first run's Hadoop
    -- job has written some of its output, and cannot end by itself.
    local hold = work .. "/hold"
    H.spit(hold, "")
    finally(function() os.remove(hold) end)
    local function env_job(mode) return H.job({ dir = work, name = "EnvJob", topics = names[1],
      props = props(root, mode, { ["kafka.brokers"] = H.UNSET, ["progress.interval.ms"] = 1000,
        ["kafka.fetch.batch.size"] = 5, ["mr.streaming.args"] = "-cmdenv KINGEST_SPEC_SECRET=" .. secret }),
      prelude = "local seen = 0",
      code = table.concat({
        '["kafka.brokers"] = os.getenv("KINGEST_SPEC_BROKERS") or "127.0.0.1:9",',
        '["kafka.consumer.sasl.password"] = os.getenv("KINGEST_SPEC_SECRET"),',
        "decodeRecord = function(msg)",
        "  seen = seen + 1",
        string.format("  local f = seen > 20 and io.open(%q)", hold),
        "  while f do f:close() os.execute('sleep 0.2') f = io.open(" .. string.format("%q", hold) .. ") end",
        "  return msg",
        "end,",
      }, "\n") }) end
    local job = env_job("yarn")
    local env = { GOBBLIN_WORK_DIR = work, KINGEST_SPEC_BROKERS = H.bootstrap(), KINGEST_SPEC_SECRET = secret }
    local p = H.spawn({ "run", job }, env, work .. "/first")
    assert.truthy(H.wait_until(function() return H.stderr_of(p):find("Hadoop job: job_%d+_%d+ running") end, 90),
      H.stderr_of(p))
    -- The maps' input: the driver's brokers, the secret's name and not its value, nor the Hadoop command line.
    local job_id = H.stderr_of(p):match("Starting job EnvJob %((job_EnvJob_%d+)%)")
    local input = W.read(root .. "/mr/EnvJob/" .. job_id .. "/input/tasks.txt")
    assert.equals(2, #H.lines(input), input)
    assert.truthy(input:find('["kafka.brokers","' .. H.bootstrap() .. '",', 1, true), input)
    assert.truthy(input:find('"secrets":["kafka.consumer.sasl.password"]', 1, true), input)
    assert.falsy(input:find(secret, 1, true), input)
    assert.falsy(input:find("mr.streaming.args", 1, true), input)
    -- Once a map has pulled records, SIGTERM: the driver kills the application and stops.
    assert.truthy(H.wait_until(function()
      return H.stderr_of(p):find("INFO Progress: task_EnvJob_%d+_%d " .. names[1]:gsub("%p", "%%%0") .. ":%d [1-9]")
    end, 120), H.stderr_of(p))
    assert.equals(0, (H.sh("kill -TERM " .. H.pid_of(p))))
    local code = H.wait_exit(p, 120)
    local log = H.stderr_of(p)
    assert.equals(6, code, log)
    assert.matches("INFO Killed the Hadoop job job_%d+_%d+", log)
    -- YARN has it killed, not finished.
    local hadoop_job = log:match("Hadoop job: (job_%d+_%d+) running")
    assert.matches("Job state: KILLED", W.hadoop_ok({ "job", "-status", hadoop_job }), 1, true)
    assert.same({ { "STOPPED", "stopped by SIGTERM; the next run goes on from here" } },
      H.sqlite(work .. "/state-store/EnvJob.db", "SELECT result, message FROM runs"))
    assert.same({}, W.paths(root .. "/out"))
    assert.same({}, H.stored_offsets(work, "EnvJob"))
    -- The next run, with the same environment: every record, once, from the driver's brokers.
    os.remove(hold)
    local again = H.run_ok(env_job("local"), work, env)
    assert.matches("Job job_EnvJob_%d+ completed in %d+ms: 100 records", again)
    assert_published(root, names, records, true)
    assert.same({ [names[1] .. ":0"] = 60, [names[1] .. ":1"] = 40 }, H.stored_offsets(work, "EnvJob"))
    assert.same({}, W.paths(root .. "/mr"))
  end)

  it("fails a run whose maps read nothing: exit 7, the maps' fetch errors in the driver's log and the history, "
    .. "offsets unmoved", function()
    local names = topics_with("mr_none", { { 30, 30 } })
    local root, work = "/kingest/" .. H.unique("none"), H.workdir("mr_none")
    -- The broker holds each fetch for a second; the maps wait at most 300 ms for a record.
    local job = H.job({ dir = work, name = "NoneMoved", topics = names[1], props = props(root, "local", {
      ["kafka.consumer.fetch.min.bytes"] = "1048576",
      ["kafka.consumer.fetch.wait.max.ms"] = "1000",
      ["kafka.fetch.timeout.ms"] = "300",
    }) })
    local last, log = H.run_fails(job, work, 7, { "nothing moved: 2 partitions had records to read",
      names[1] .. ":0 (offsets 0 to 30): no record for 300 ms (kafka.fetch.timeout.ms) at offset 0 (kafka.brokers="
        .. H.bootstrap() .. ")" })
    -- The maps succeeded: they read nothing.
    assert.truthy(log:find("Hadoop job: Job job_%w+_%d+ completed successfully"), log)
    assert.falsy(log:find("Hadoop job: Job job_%w+_%d+ failed"), log)
    local rows = H.sqlite(work .. "/state-store/NoneMoved.db", "SELECT result, message FROM runs")
    assert.equals("FAILED", rows[1][1])
    assert.equals(last:sub(#"kingest: " + 1), rows[1][2])
    assert.same({}, H.stored_offsets(work, "NoneMoved"))
    assert.same({}, W.paths(root .. "/out"))
  end)

  it("names the ResourceManager it tried when YARN cannot be reached, offsets unmoved", function()
    local names = topics_with("mr_norm", { { 5 } })
    local root, work = "/kingest/" .. H.unique("norm"), H.workdir("mr_norm")
    local job = H.job({ dir = work, name = "NoRm", topics = names[1], props = props(root, "yarn", {
      ["mr.streaming.args"] = "-Dyarn.resourcemanager.address=127.0.0.1:9 -Dipc.client.connect.max.retries=0 "
        .. "-Dyarn.resourcemanager.connect.max-wait.ms=3000 -Dyarn.resourcemanager.connect.retry-interval.ms=500",
    }) })
    H.run_fails(job, work, 1, { "the Hadoop job of job_NoRm_", "127.0.0.1:9" })
    assert.same({}, H.stored_offsets(work, "NoRm"))
    assert.same({}, W.paths(root .. "/mr"))
  end)
end)

-- What `kingest validate` finds is refused with 78 (EX_CONFIG), before anything is contacted; what needs HDFS to tell
-- (a folder that cannot be written) fails the run with 1.
describe("kingest in MapReduce mode, refusing what cannot work", function()
  local function job_with(extra)
    local work = H.workdir("mr_bad")
    local root = "/kingest/" .. H.unique("bad")
    return H.job({ dir = work, name = "MrBad", topics = "t", props = props(root, "yarn", extra) }), work, root
  end

  it("a Hadoop command that is not there, naming where it looked", function()
    local job, work = job_with({ ["mr.hadoop.command"] = "/nonexistent/bin/hadoop" })
    H.run_fails(job, work, 78, { "mr.hadoop.command=/nonexistent/bin/hadoop", "not found" })
    job, work = job_with({ ["mr.hadoop.command"] = "hadoop-not-installed" })
    H.run_fails(job, work, 78, { "mr.hadoop.command=hadoop-not-installed", "PATH=" })
  end)

  it("a Hadoop client that fails: its last lines in the log at ERROR, the line that says why in the error", function()
    local names = topics_with("mr_client", { { 5 } })
    local work, root = H.workdir("mr_client"), "/kingest/" .. H.unique("client")
    local client = H.root:gsub("%p", "%%%0") .. "/scripts/hadoop"
    -- An option Streaming does not know.
    local job = H.job({ dir = work, name = "MrBad", topics = names[1], props = props(root, "yarn",
      { ["mr.streaming.args"] = "-D mapreduce.job.reduces=0 -no-such-option" }) })
    local last, log = H.run_fails(job, work, 1, { "the Hadoop job of job_MrBad_", "exited 1",
      "Unrecognized option: -no-such-option" })
    assert.truthy(log:find("ERROR The Hadoop client " .. client .. " exited 1; its last %d+ lines:\n"), log)
    assert.truthy(log:find("ERROR Hadoop client: Streaming Command Failed!", 1, true), log)
    assert.falsy(last:find("Streaming Command Failed", 1, true), last)
    -- A client that names no error, only what it could not find: its last line says why.
    job = H.job({ dir = work, name = "MrBad", topics = names[1], props = props(root, "yarn",
      { ["mr.streaming.jar"] = work }) })
    last, log = H.run_fails(job, work, 1, { "the Hadoop job of job_MrBad_", "exited 1",
      "hadoop: jar: no such file: " .. work })
    assert.truthy(log:find("ERROR The Hadoop client " .. client .. " exited 1; its last line:\n"), log)
    assert.same({}, H.stored_offsets(work, "MrBad"))
  end)

  it("a streaming jar that is not there", function()
    local job, work = job_with({ ["mr.streaming.jar"] = "/nonexistent/hadoop-streaming.jar" })
    H.run_fails(job, work, 78, { "mr.streaming.jar=/nonexistent/hadoop-streaming.jar", "No such file" })
  end)

  it("an mr.job.root.dir that cannot be written, and none at all", function()
    local root = "/kingest/" .. H.unique("ro")
    W.mkdirs(root .. "/mr")
    W.mkdirs(root .. "/open")
    W.chmod(root .. "/mr", "555")
    W.chmod(root .. "/open", "777")
    local work = H.workdir("mr_ro")
    local job = H.job({ dir = work, name = "MrBad", topics = "t", props = props(root, "yarn", {
      ["writer.fs.uri"] = W.uri("nobody"),
      ["task.data.root.dir"] = root .. "/open/task-data",
      ["data.publisher.final.dir"] = root .. "/open/out",
    }) })
    H.run_fails(job, work, 1, { "mr.job.root.dir", root .. "/mr", "Permission denied" })
    local none
    none, work = job_with({ ["mr.job.root.dir"] = "" })
    H.run_fails(none, work, 78, { "launcher.type=MAPREDUCE needs mr.job.root.dir" })
  end)

  it("a local writer file system, and a launcher.type it does not know", function()
    local job, work = job_with({ ["writer.fs.uri"] = "file:///", ["task.data.root.dir"] = "",
      ["data.publisher.final.dir"] = "" })
    H.run_fails(job, work, 78, { "launcher.type=MAPREDUCE", "writer.fs.uri", "webhdfs://" })
    job, work = job_with({ ["launcher.type"] = "SPARK" })
    H.run_fails(job, work, 78, { "launcher.type", "SPARK", "LOCAL", "MAPREDUCE" })
  end)
end)
