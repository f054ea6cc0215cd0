-- kingest run-task, what each map of a MapReduce run executes, run here as Hadoop Streaming runs it (a task line
-- after its byte offset on stdin, the attempt id in $mapreduce_task_attempt_id) but without YARN, against the
-- real broker and the local disk: the task's files under its attempt's folder, its result on one stdout line,
-- reporter:status lines on stderr, a failed task as a result, the driver's properties that the line carries (and
-- the secrets it does not), and bad task lines.
local H = require("support.harness")
local cjson = require("cjson")

local ATTEMPT = "attempt_1796000000000_0001_m_000000_0"

-- A task line for TOPIC's partitions 0 .. N-1, each read from 0 to HIGH, carrying PROPS (name to value: the
-- driver's properties) and the names of the driver's SECRETS.
local function task_line(job_dir, topic, n, high, props, secrets)
  local units = {}
  for p = 0, n - 1 do
    units[#units + 1] = string.format('{"topic":"%s","partition":%d,"low":0,"high":%d,"range":%d,"earliest":0,'
      .. '"latest":%d,"stored":null,"start":"bootstrap","estimatedSize":%d}', topic, p, high, high, high, high)
  end
  local names, list = {}, {}
  for k in pairs(props) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do list[#list + 1] = { k, tostring(props[k]), "driver/job.lua" } end
  return string.format('{"task":"task_RunTask_1796000000000_0","index":0,"jobId":"job_RunTask_1796000000000",'
    .. '"jobDir":"%s","extractId":"20261130000000","properties":%s,"secrets":%s,"units":[%s]}', job_dir,
    #list > 0 and cjson.encode(list) or "[]", #(secrets or {}) > 0 and cjson.encode(secrets) or "[]",
    table.concat(units, ","))
end

-- A job.lua written by H.job for OPTS, and the properties a driver resolves from it.
local function job_of(opts)
  return H.job(opts), H.job_props(opts)
end

-- Runs kingest run-task JOB with STDIN in WORK as a map would; returns status, stdout, stderr.
local function run_task(job, work, stdin, env)
  local input = work .. "/stdin"
  H.spit(input, stdin)
  local vars = { "mapreduce_task_attempt_id=" .. ATTEMPT }
  for k, v in pairs(env or {}) do vars[#vars + 1] = k .. "=" .. H.q(v) end
  return H.sh(string.format("cd %s && env %s %s run-task %s <%s", H.q(work), table.concat(vars, " "), H.q(H.bin),
    H.q(job), H.q(input)))
end

-- The result lines of STDOUT, decoded.
local function results(stdout)
  local got = {}
  for line in stdout:gmatch("[^\n]+") do
    local json = line:match("^kingest%-result\t(.*)$")
    if json then got[#got + 1] = cjson.decode(json) end
  end
  return got
end

describe("kingest run-task", function()
  local topic, lines = nil, {}

  setup(function()
    topic = H.unique("run_task")
    H.create_topic(topic, 2)
    for p = 0, 1 do
      local part = {}
      for i = 1, 60 do part[i] = string.format("rt %d %03d", p, i) end
      H.produce(topic, part, p)
      lines[p] = part
    end
  end)

  it("runs its line's task in the attempt's folder, prints one result line and reports its status", function()
    local work = H.workdir("run_task")
    local job_dir = work .. "/mr/RunTask/job_RunTask_1796000000000"
    -- Records that take 25 ms each (3 s in all), so that the task reports its status; and a script that prints.
    local job, props = job_of({ dir = work, name = "RunTask", topics = topic,
      props = { ["data.publisher.final.dir"] = work .. "/final", ["progress.interval.ms"] = 1000 },
      code = H.slow_decode(25):gsub("return msg", "print('a script line') return msg") })
    local code, out, err = run_task(job, work, "0\t" .. task_line(job_dir, topic, 2, 60, props) .. "\n")
    assert.equals(0, code, err)
    local got = results(out)
    assert.equals(1, #got, out)
    local r = got[1]
    assert.equals("task_RunTask_1796000000000_0", r.task)
    assert.is_true(r.succeeded)
    assert.equals(2, #r.units)
    for i, u in ipairs(r.units) do
      assert.equals(topic, u.topic)
      assert.equals(i - 1, u.partition)
      assert.equals(60, u.actualHigh)
      assert.equals(60, u.records)
    end
    assert.equals(1, #r.files)
    local prefix = job_dir .. "/attempts/" .. ATTEMPT .. "/"
    assert.equals(prefix, r.files[1].output:sub(1, #prefix))
    assert.equals(work .. "/final/" .. topic .. "/", r.files[1].final:sub(1, #work + 8 + #topic))
    local written = H.lines(H.slurp(r.files[1].output))
    local want = {}
    for p = 0, 1 do for _, l in ipairs(lines[p]) do want[#want + 1] = l end end
    assert.same(H.sorted(want), H.sorted(written))
    assert.equals(60 * 2, r.metrics["gobblin.writer.records.written"])
    -- The script's lines are on stdout too, and are not results.
    assert.truthy(out:find("a script line\n", 1, true))
    -- Status lines for YARN, naming the task and its partition.
    assert.matches("\nreporter:status:task_RunTask_1796000000000_0 " .. topic .. ":%d %d+/60 records", "\n" .. err)
    -- A map keeps no state and publishes nothing.
    assert.is_nil(H.slurp(work .. "/state-store/RunTask.db"))
    assert.equals("", select(2, H.sh("find " .. H.q(work .. "/final") .. " -type f 2>/dev/null")))
  end)

  it("prints a failed task as a result and exits 0, so that the driver applies the commit policy", function()
    local work = H.workdir("run_task_fail")
    local job, props = job_of({ dir = work, name = "RunTask", topics = topic,
      props = { ["decode.error.policy"] = "fail" },
      code = "decodeRecord = function(msg) error('cannot decode') end," })
    local code, out, err = run_task(job, work, "0\t" .. task_line(work .. "/mr", topic, 1, 60, props) .. "\n")
    assert.equals(0, code, err)
    local got = results(out)
    assert.equals(1, #got, out)
    assert.is_false(got[1].succeeded)
    assert.matches("cannot decode", got[1].error)
    assert.same({}, got[1].files)
  end)

  it("runs its task on the driver's properties, not on its own evaluation of the job file, and names (only) "
    .. "those that differ", function()
    local work = H.workdir("run_task_env")
    -- The brokers come from the environment: the driver had the variable, the map has not.
    local opts = { dir = work, name = "RunTask", topics = topic,
      props = { ["kafka.brokers"] = H.UNSET, ["kafka.fetch.timeout.ms"] = 3000 },
      code = '["kafka.brokers"] = os.getenv("KINGEST_SPEC_BROKERS") or "127.0.0.1:9",' }
    local job, props = job_of(opts)
    props["kafka.brokers"] = H.bootstrap()
    local code, out, err = run_task(job, work, "0\t" .. task_line(work .. "/mr", topic, 2, 60, props) .. "\n")
    assert.equals(0, code, err)
    local got = results(out)
    assert.equals(1, #got, out)
    assert.is_true(got[1].succeeded, got[1].error)
    for _, u in ipairs(got[1].units) do
      assert.equals(60, u.actualHigh)
      assert.is_false(u.fetchFailed)
    end
    assert.equals(120, got[1].metrics["gobblin.writer.records.written"])
    assert.truthy(err:find("gives these properties otherwise in this map than in the driver: kafka.brokers; the task "
      .. "runs on the driver's values", 1, true), err)
    assert.falsy(err:find("127.0.0.1:9", 1, true), err)
  end)

  it("runs a properties job whose ${env:VAR} this map cannot resolve on the driver's properties, with a WARN",
    function()
    local work = H.workdir("run_task_pull")
    local props = { ["job.name"] = "RunTask", ["kafka.brokers"] = H.bootstrap(), ["topic.whitelist"] = topic,
      ["bootstrap.with.offset"] = "earliest", ["writer.file.path.type"] = "tablename" }
    local job = H.job_pull(work, "job.name=RunTask\nkafka.brokers=${env:KINGEST_SPEC_BROKERS}\ntopic.whitelist=" ..
      topic .. "\nbootstrap.with.offset=earliest\nwriter.file.path.type=tablename\n")
    local code, out, err = run_task(job, work, "0\t" .. task_line(work .. "/mr", topic, 1, 60, props) .. "\n")
    assert.equals(0, code, err)
    local got = results(out)
    assert.equals(1, #got, out)
    assert.is_true(got[1].succeeded, got[1].error)
    assert.equals(60, got[1].units[1].actualHigh)
    assert.truthy(err:find("WARN This map cannot evaluate the job file (", 1, true), err)
    assert.truthy(err:find("KINGEST_SPEC_BROKERS", 1, true), err)
    assert.truthy(err:find("the task runs on the driver's properties", 1, true), err)
  end)

  it("carries a partition's fetch error in its result, naming the brokers", function()
    local work = H.workdir("run_task_fetch")
    local job, props = job_of({ dir = work, name = "RunTask", topics = topic,
      props = { ["kafka.brokers"] = "127.0.0.1:9", ["kafka.fetch.timeout.ms"] = 1000 } })
    local code, out, err = run_task(job, work, "0\t" .. task_line(work .. "/mr", topic, 1, 60, props) .. "\n")
    assert.equals(0, code, err)
    local got = results(out)
    assert.equals(1, #got, out)
    local u = got[1].units[1]
    assert.is_true(u.fetchFailed)
    assert.equals(0, u.actualHigh)
    assert.matches("kafka.brokers=127.0.0.1:9", u.fetchError, 1, true)
  end)

  it("refuses to run a task whose driver had a secret this map's evaluation of the job file has not", function()
    local work = H.workdir("run_task_secret")
    local job, props = job_of({ dir = work, name = "RunTask", topics = topic,
      code = '["kafka.consumer.sasl.password"] = os.getenv("KINGEST_SPEC_SECRET"),' })
    local line = "0\t" .. task_line(work .. "/mr", topic, 1, 60, props, { "kafka.consumer.sasl.password" }) .. "\n"
    assert.falsy(line:find("a-spec-secret", 1, true))
    local code, out, err = run_task(job, work, line)
    assert.equals(0, code, err)
    local got = results(out)
    assert.equals(1, #got, out)
    assert.is_false(got[1].succeeded)
    assert.matches("kafka.consumer.sasl.password is set in the driver but not in this map's evaluation of",
      got[1].error, 1, true)
    assert.matches("-cmdenv VAR=VALUE in mr.streaming.args", got[1].error, 1, true)
    assert.same({}, got[1].files)
    assert.equals(0, got[1].units[1].records)
    assert.equals(0, got[1].units[1].actualHigh)
    -- With the secret in its environment, the same line runs; the secret is in no line it prints.
    code, out, err = run_task(job, work, line, { KINGEST_SPEC_SECRET = "a-spec-secret" })
    assert.equals(0, code, err)
    got = results(out)
    assert.is_true(got[1].succeeded, got[1].error)
    assert.equals(60, got[1].units[1].actualHigh)
    assert.falsy((out .. err):find("a-spec-secret", 1, true))
  end)

  it("refuses no task line, a line without a task, a task without work units and one without properties", function()
    local work = H.workdir("run_task_bad")
    local job, props = job_of({ dir = work, name = "RunTask", topics = topic })
    local code, out, err = run_task(job, work, "")
    assert.equals(1, code)
    assert.matches("no task line on stdin", H.last_line(err))
    code, out, err = run_task(job, work, "17\tnot a task\n")
    assert.equals(1, code)
    assert.matches("a task line without a task", H.last_line(err))
    local line = task_line(work .. "/mr", topic, 1, 60, props)
    code, out, err = run_task(job, work, "0\t" .. line:gsub('"units"', '"unit"') .. "\n")
    assert.equals(1, code)
    assert.matches('has no "units" array', H.last_line(err))
    assert.same({}, results(out))
    code, out, err = run_task(job, work, "0\t" .. line:gsub('"properties"', '"props"') .. "\n")
    assert.equals(1, code)
    assert.matches('the task line has no "properties" and "secrets" arrays', H.last_line(err), 1, true)
    assert.same({}, results(out))
  end)

  it("has --help", function()
    local code, out = H.kingest({ "run-task", "--help" })
    assert.equals(0, code)
    assert.matches("Usage: kingest run%-task JOB", out)
    assert.matches("reporter:status:", out)
  end)
end)
