-- Prometheus metrics (docs/operations.md; docs/behaviour.md section 9), against the real broker: the textfile
-- for node_exporter checked by promtool, the counts per partition against kcat and the state store, the lag, the
-- run history's times, a real Pushgateway read back over HTTP, interim reports during a run, and reporters that
-- cannot write or push.
local H = require("support.harness")

local JOB = "PromSpec"

local run_ok = H.run_ok

-- The samples of a text in Prometheus's exposition format: { name =, labels = { name = value }, value = number }.
local function parse(text)
  local samples = {}
  for line in (text or ""):gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then
      local name, rest = line:match("^([%a_:][%w_:]*)(.*)$")
      assert(name, "not a sample line: " .. line)
      local labels = {}
      if rest:sub(1, 1) == "{" then
        local i = 2
        while rest:sub(i, i) ~= "}" do
          local key, j = rest:match('^([%a_][%w_]*)="()', i)
          assert(key, "bad labels: " .. line)
          local value = {}
          while true do
            local c = rest:sub(j, j)
            assert(c ~= "", "unterminated label value: " .. line)
            if c == "\\" then
              local n = rest:sub(j + 1, j + 1)
              value[#value + 1] = n == "n" and "\n" or n
              j = j + 2
            elseif c == '"' then
              j = j + 1
              break
            else
              value[#value + 1] = c
              j = j + 1
            end
          end
          labels[key] = table.concat(value)
          if rest:sub(j, j) == "," then j = j + 1 end
          i = j
        end
        rest = rest:sub(i + 1)
      end
      samples[#samples + 1] = { name = name, labels = labels, value = tonumber(rest:match("^%s+(%S+)")) }
    end
  end
  return samples
end

-- The value of the one sample NAME whose labels include LABELS (nil when there is none).
local function value(samples, name, labels)
  local found
  for _, s in ipairs(samples) do
    local match = s.name == name
    for k, v in pairs(labels or {}) do match = match and s.labels[k] == v end
    if match then
      assert(found == nil, "more than one sample " .. name)
      found = s.value
    end
  end
  return found
end

-- promtool's verdict on TEXT: its exit status and what it printed.
local function promtool(text)
  local file = H.tmp .. "/" .. H.unique("promtool") .. ".prom"
  H.spit(file, text)
  local code, out, err = H.sh("promtool check metrics <" .. H.q(file))
  os.remove(file)
  return code, out .. err
end

local function assert_valid(text)
  local code, said = promtool(text)
  assert.are.equal(0, code, "promtool check metrics: " .. said .. "\n" .. text)
end

-- The number of records in each partition of TOPIC, as kcat reads them: { [partition] = n }.
local function kcat_counts(topic)
  local counts = {}
  for _, p in ipairs(H.kcat_lines(topic, "%p")) do counts[p] = (counts[p] or 0) + 1 end
  return counts
end

-- The end (epoch ms) of the runs of JOB in WORK with RESULT, newest first, from the state store by sqlite3.
local function ended(work, result)
  local rows = H.sqlite(work .. "/state-store/" .. JOB .. ".db",
    "SELECT ended_ms FROM runs WHERE result = '" .. result .. "' ORDER BY ended_ms DESC")
  local t = {}
  for i, row in ipairs(rows) do t[i] = tonumber(row[1]) end
  return t
end

local function free_port()
  local code, out, err = H.sh("python3 -c " ..
    H.q("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"))
  assert(code == 0, err)
  return tonumber(out:match("%d+"))
end

-- Starts a Pushgateway on a free loopback port, keeping nothing on disk; returns { url =, pid = }.
local function start_pushgateway(dir)
  os.execute("mkdir -p " .. H.q(dir))
  local port = free_port()
  local log, pidfile = dir .. "/pushgateway.log", dir .. "/pushgateway.pid"
  assert(H.sh("/usr/bin/prometheus-pushgateway --web.listen-address=127.0.0.1:" .. port ..
    " --persistence.file= >" .. H.q(log) .. " 2>&1 & echo $! >" .. H.q(pidfile)) == 0)
  local gw = { url = "http://127.0.0.1:" .. port, pid = tonumber(H.slurp(pidfile):match("%d+")) }
  assert(H.wait_until(function() return H.sh("curl -sf " .. H.q(gw.url .. "/-/ready")) == 0 end, 60),
    "the Pushgateway did not start: " .. (H.slurp(log) or ""))
  return gw
end

-- What the Pushgateway serves at /metrics, parsed.
local function gateway_samples(gw)
  local code, out, err = H.sh("curl -sf " .. H.q(gw.url .. "/metrics"))
  assert(code == 0, "curl " .. gw.url .. "/metrics: " .. err)
  return parse(out), out
end

-- A loopback TCP port that accepts connections and never answers (for at most 5 minutes); returns { port =, pid = }.
local function silent_listener(dir)
  os.execute("mkdir -p " .. H.q(dir))
  local portfile, pidfile = dir .. "/silent.port", dir .. "/silent.pid"
  local script = table.concat({
    "import os, socket, sys, time",
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(64); s.settimeout(1)",
    "open(sys.argv[1] + '.tmp', 'w').write(str(s.getsockname()[1])); os.rename(sys.argv[1] + '.tmp', sys.argv[1])",
    "held, end = [], time.time() + 300",
    "while time.time() < end:",
    "    try: held.append(s.accept()[0])",
    "    except socket.timeout: pass",
  }, "\n")
  assert(H.sh("python3 -c " .. H.q(script) .. " " .. H.q(portfile) .. " >/dev/null 2>&1 & echo $! >" ..
    H.q(pidfile)) == 0)
  local port = H.wait_until(function()
    local s = H.slurp(portfile)
    return s and tonumber(s:match("%d+"))
  end, 30)
  assert(port, "the silent listener did not start")
  return { port = port, pid = tonumber(H.slurp(pidfile):match("%d+")) }
end

local function stop(process)
  if process and process.pid then os.execute("kill " .. process.pid .. " 2>/dev/null") end
end

-- A job script that counts records in a script counter, records their sizes in a histogram, and fails on "bad".
local COUNTING = [[
  decodeRecord = function(msg, ctx)
    ctx.metrics:counter("seen.records"):inc()
    ctx.metrics:histogram("recordSize"):update(msg.value_len)
    if msg:value() == "bad" then error("cannot decode bad") end
    return msg
  end,
]]

local function job(work, topics, props, code, name)
  return H.job({ dir = work, name = name or JOB, topics = topics, props = props, code = code })
end

describe("the Prometheus textfile", function()
  it("is written at the end of the run: valid for promtool, with the counts per partition, the lag, the offsets, " ..
     "the run's times and the script's metrics, and no temporary file beside it", function()
    local topic = H.unique("prom_counts")
    H.create_topic(topic, 2)
    H.produce(topic, { "a", "bad", "ccc" }, 0)
    H.produce(topic, { "dd", "e" }, 1)
    local work = H.workdir("prom_counts")
    local dir = work .. "/textfile"
    os.execute("mkdir -p " .. H.q(dir))
    local file = dir .. "/kingest.prom"
    run_ok(job(work, { topic }, { ["metrics.reporting.prometheus.file"] = file, ["decode.error.max.ratio"] = 1 },
      COUNTING), work)

    local text = assert(H.slurp(file), "no " .. file)
    assert_valid(text)
    assert.same({ "kingest.prom" }, H.top_files(dir))
    local s = parse(text)
    for _, sample in ipairs(s) do assert.are.equal(JOB, sample.labels.job, sample.name) end

    -- Per partition: read as kcat counts them, and each one written, skipped or quarantined.
    local produced = kcat_counts(topic)
    local offsets = H.offsets(topic)
    local stored = H.stored_offsets(work, JOB)
    for _, p in ipairs({ "0", "1" }) do
      local at = { topic = topic, partition = p }
      local read = value(s, "kingest_partition_records_read", at)
      assert.are.equal(produced[p], read)
      assert.are.equal(read, value(s, "kingest_partition_records_written", at) +
        value(s, "kingest_partition_records_skipped", at) + value(s, "kingest_partition_records_quarantined", at))
      assert.are.equal(offsets[topic .. ":" .. p].latest, value(s, "kingest_partition_next_offset", at))
      assert.are.equal(stored[topic .. ":" .. p], value(s, "kingest_partition_next_offset", at))
      assert.are.equal(offsets[topic .. ":" .. p].latest, value(s, "kingest_partition_latest_offset", at))
      assert.are.equal(0, value(s, "kingest_partition_lag_records", at))
    end
    assert.are.equal(2, value(s, "kingest_partition_records_written", { partition = "0" }))
    assert.are.equal(1, value(s, "kingest_partition_records_skipped", { partition = "0" }))
    assert.are.equal(1, value(s, "kingest_partition_records_failed", { partition = "0" }))
    assert.are.equal(7, value(s, "kingest_partition_bytes_read", { partition = "0" })) -- "a" "bad" "ccc"

    -- The run: the output as published, the history's times.
    assert.are.equal(5, value(s, "kingest_run_records_read"))
    assert.are.equal(#H.published(work, topic), value(s, "kingest_run_records_written"))
    assert.are.equal(4, value(s, "kingest_run_records_written"))
    assert.are.equal(1, value(s, "kingest_run_records_skipped"))
    assert.are.equal(1, value(s, "kingest_run_success"))
    assert.are.equal(1, value(s, "kingest_run_result", { result = "SUCCESSFUL" }))
    assert.are.equal(0, value(s, "kingest_run_result", { result = "FAILED" }))
    assert.are.equal(0, value(s, "kingest_run_in_progress"))
    assert.are.equal(2, value(s, "kingest_run_tasks"))
    local ended_ms = ended(work, "SUCCESSFUL")[1]
    assert.are.equal(ended_ms / 1000, value(s, "kingest_last_run_timestamp_seconds"))
    assert.are.equal(ended_ms / 1000, value(s, "kingest_last_success_timestamp_seconds"))
    assert.is_true(value(s, "kingest_run_start_timestamp_seconds") <= ended_ms / 1000)

    -- The script's own: the counter summed over the tasks, the histogram per task.
    assert.are.equal(5, value(s, "kingest_script_seen_records"))
    local count, sum = 0, 0
    for _, task in ipairs({ "0", "1" }) do
      count = count + value(s, "kingest_script_record_size_count", { task = task })
      sum = sum + value(s, "kingest_script_record_size_sum", { task = task })
    end
    assert.are.equal(5, count)
    assert.are.equal(1 + 3 + 3 + 2 + 1, sum)
    assert.is_not_nil(value(s, "kingest_script_record_size", { task = "0", quantile = "0.5" }))
    assert.are.equal(3, math.max(value(s, "kingest_script_record_size_max", { task = "0" }),
      value(s, "kingest_script_record_size_max", { task = "1" })))
  end)

  it("shows the lag a run leaves, and after a failed run the last success's time and the committed offsets",
    function()
    local topic = H.topic_with("prom_lag", { "r0", "r1", "r2", "r3" })
    local work = H.workdir("prom_lag")
    local file = work .. "/kingest.prom"
    local base = { ["metrics.reporting.prometheus.file"] = file }
    local at = { topic = topic, partition = "0" }
    run_ok(job(work, { topic }, base, COUNTING), work)
    assert.are.equal(0, value(parse(H.slurp(file)), "kingest_partition_lag_records", at))

    -- Three more; a run limited to one record leaves two.
    H.produce(topic, { "r4", "r5", "r6" })
    local limited = { ["extract.limit.enabled"] = true, ["extract.limit.type"] = "count",
                      ["extract.limit.count.limit"] = 1 }
    for k, v in pairs(base) do limited[k] = v end
    run_ok(job(work, { topic }, limited, COUNTING), work)
    local text = H.slurp(file)
    assert_valid(text)
    local s = parse(text)
    assert.are.equal(1, value(s, "kingest_partition_records_read", at))
    assert.are.equal(5, value(s, "kingest_partition_next_offset", at))
    assert.are.equal(7, H.offsets(topic)[topic .. ":0"].latest)
    assert.are.equal(2, value(s, "kingest_partition_lag_records", at))
    local success_ms = ended(work, "SUCCESSFUL")[1]
    assert.are.equal(success_ms / 1000, value(s, "kingest_last_success_timestamp_seconds"))

    -- A record the script cannot decode, and decode.error.policy=fail: the run fails and commits nothing.
    H.produce(topic, { "bad" })
    local failing = { ["decode.error.policy"] = "fail" }
    for k, v in pairs(base) do failing[k] = v end
    local code, _, log = H.run(job(work, { topic }, failing, COUNTING), work)
    assert.are.equal(1, code, log)
    text = H.slurp(file)
    assert_valid(text)
    s = parse(text)
    assert.are.equal(0, value(s, "kingest_run_success"))
    assert.are.equal(1, value(s, "kingest_run_result", { result = "FAILED" }))
    assert.are.equal(0, value(s, "kingest_run_result", { result = "SUCCESSFUL" }))
    assert.are.equal(1, value(s, "kingest_run_tasks_failed"))
    assert.are.equal(success_ms / 1000, value(s, "kingest_last_success_timestamp_seconds"))
    assert.are.equal(ended(work, "FAILED")[1] / 1000, value(s, "kingest_last_run_timestamp_seconds"))
    assert.are.equal(5, H.stored_offsets(work, JOB)[topic .. ":0"])
    assert.are.equal(5, value(s, "kingest_partition_next_offset", at))
    assert.are.equal(3, value(s, "kingest_partition_lag_records", at))
    assert.are.equal(1, value(s, "kingest_partition_records_failed", at))

    -- The counters add up every run of the job, as sqlite3 reads the history: 4 + 1 + the failed run's.
    local totals = H.sqlite(work .. "/state-store/" .. JOB .. ".db",
      "SELECT sum(records_read), sum(records), sum(bytes), sum(skipped), count(*) FROM runs")[1]
    assert.are.equal(tonumber(totals[1]), value(s, "kingest_records_read_total"))
    assert.is_true(value(s, "kingest_records_read_total") >= 5)
    -- Written as the history counts it: what was published, so nothing of the failed run (its task's two records
    -- were written to a file that was removed).
    assert.are.equal(tonumber(totals[2]), value(s, "kingest_records_written_total"))
    assert.are.equal(4 + 1 + 0, value(s, "kingest_records_written_total"))
    assert.are.equal(tonumber(totals[3]), value(s, "kingest_bytes_written_total"))
    assert.are.equal(0, value(s, "kingest_records_skipped_total"))
    assert.are.equal(2, value(s, "kingest_runs_total", { result = "SUCCESSFUL" }))
    assert.are.equal(1, value(s, "kingest_runs_total", { result = "FAILED" }))
    assert.are.equal(3, tonumber(totals[5]))
    assert.truthy(text:find("\n# TYPE kingest_records_read_total counter\n", 1, true), text)
  end)

  it("names the script's metrics in snake case, and leaves out with a WARN those whose names clash or are empty",
    function()
    local topic = H.topic_with("prom_names", { "x", "yy", "zzz" })
    local work = H.workdir("prom_names")
    local file = work .. "/kingest.prom"
    local log = run_ok(job(work, { topic }, { ["metrics.reporting.prometheus.file"] = file }, [[
  decodeRecord = function(msg, ctx)
    ctx.metrics:counter("dup.name"):inc()
    ctx.metrics:counter("dup_name"):inc(2)
    ctx.metrics:counter("..."):inc()
    ctx.metrics:meter("bytesIn"):mark(#msg:value())
    ctx.metrics:histogram("never.updated")
    return msg
  end,
]]), work)
    local text = H.slurp(file)
    assert_valid(text)
    local s = parse(text)
    assert.are.equal(3, value(s, "kingest_script_dup_name"))
    assert.are.equal(1, #H.grep(log, [[ WARN Script metric "dup_name" is left out of the Prometheus metrics: its ]] ..
      "name there, kingest_script_dup_name, is taken by another metric"), log)
    assert.are.equal(1, #H.grep(log, [[ WARN Script metric "..." is left out of the Prometheus metrics: its name ]] ..
      "has no letter or digit"), log)
    assert.are.equal(6, value(s, "kingest_script_bytes_in"))
    assert.is_true(value(s, "kingest_script_bytes_in_mean_rate") > 0)
    assert.are.equal(0, value(s, "kingest_script_never_updated_count", { task = "0" }))
    assert.are.equal(0, value(s, "kingest_script_never_updated_sum", { task = "0" }))
    assert.is_nil(value(s, "kingest_script_never_updated", { task = "0", quantile = "0.5" }))
    assert.truthy(text:find("\n# TYPE kingest_script_never_updated summary\n"), text)
  end)

  it("cannot be written: a WARN naming the path and the reason, and the run still commits", function()
    local topic = H.topic_with("prom_unwritable", { "x", "y" })
    local work = H.workdir("prom_unwritable")
    H.spit(work .. "/not-a-folder", "")
    local file = work .. "/not-a-folder/kingest.prom"
    local log = run_ok(job(work, { topic }, { ["metrics.reporting.prometheus.file"] = file }), work)
    local warns = H.grep(log, " WARN cannot write the Prometheus file " .. file ..
      " (metrics.reporting.prometheus.file): ")
    assert.are.equal(1, #warns, log)
    assert.truthy(warns[1]:find("Not a directory", 1, true), warns[1])
    assert.are.equal(2, H.stored_offsets(work, JOB)[topic .. ":0"])
    assert.same({ "SUCCESSFUL" }, H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT result FROM runs")[1])
    H.assert_exactly_once(work, { topic })
  end)

  it("refuses a path that names a folder, naming the property", function()
    local work = H.workdir("prom_folder")
    H.run_fails(job(work, { "t" }, { ["metrics.reporting.prometheus.file"] = work .. "/" }), work, 78,
      { "metrics.reporting.prometheus.file", "names a folder" })
  end)
end)

describe("the Pushgateway", function()
  local gw
  local NAME = "Prom spec+1" -- escaped in the push URL

  setup(function()
    gw = start_pushgateway(H.tmp .. "/" .. H.unique("pushgateway"))
  end)

  teardown(function()
    stop(gw)
  end)

  it("gets the run's metrics in the job's group, replaced by the next run", function()
    local topic = H.unique("prom_push")
    H.create_topic(topic, 2)
    H.produce(topic, { "a", "b", "c" }, 0)
    H.produce(topic, { "d" }, 1)
    local work = H.workdir("prom_push")
    local props = { ["metrics.reporting.prometheus.pushgateway.url"] = gw.url .. "/" }
    local log = run_ok(job(work, { topic }, props, COUNTING, NAME), work)
    assert.truthy(log:find("Pushed the Prometheus metrics to " .. gw.url .. "/metrics/job/Prom%20spec%2B1", 1, true),
      log)

    local s, text = gateway_samples(gw)
    local group = { job = NAME, instance = "" }
    assert.is_not_nil(value(s, "push_time_seconds", group), text)
    assert.are.equal(4, value(s, "kingest_run_records_read", group))
    assert.are.equal(1, value(s, "kingest_run_success", group))
    assert.are.equal(3, value(s, "kingest_partition_records_read", { job = NAME, topic = topic, partition = "0" }))
    assert.are.equal(1, value(s, "kingest_partition_records_written", { job = NAME, topic = topic, partition = "1" }))
    assert.are.equal(0, value(s, "kingest_partition_lag_records", { job = NAME, topic = topic, partition = "1" }))
    assert.are.equal(4, value(s, "kingest_script_seen_records", group))

    -- Nothing new: the group now holds the second run's metrics only (its script never counted anything).
    run_ok(job(work, { topic }, props, COUNTING, NAME), work)
    s, text = gateway_samples(gw)
    assert.are.equal(0, value(s, "kingest_run_records_read", group))
    assert.are.equal(1, value(s, "kingest_run_success", group))
    assert.is_nil(value(s, "kingest_script_seen_records", group), text)
    assert.are.equal(3, value(s, "kingest_partition_next_offset", { job = NAME, topic = topic, partition = "0" }))
  end)

  it("and the textfile get interim reports while the run goes on", function()
    local records = {}
    for i = 0, 9 do records[#records + 1] = "record " .. i end
    local topic = H.topic_with("prom_interim", records)
    local work = H.workdir("prom_interim")
    local flag, file = work .. "/go", work .. "/textfile/kingest.prom"
    os.execute("mkdir -p " .. H.q(work .. "/textfile"))
    -- The script waits at offset 5 (at most two minutes) until the spec has seen the interim reports.
    local code = string.format([[
  decodeRecord = function(msg, ctx)
    if ctx.offset == 5 then
      for _ = 1, 2400 do
        local f = io.open(%q)
        if f then f:close() break end
        os.execute("sleep 0.05")
      end
    end
    return msg
  end,
]], flag)
    local path = job(work, { topic }, {
      ["metrics.reporting.prometheus.file"] = file,
      ["metrics.reporting.prometheus.pushgateway.url"] = gw.url,
      ["metrics.report.interval"] = 200,
      ["kafka.fetch.batch.size"] = 1,
      ["script.batch.timeout.ms"] = 600000,
    }, code, NAME .. " interim")
    local p = H.spawn({ "run", path }, { GOBBLIN_WORK_DIR = work }, work .. "/run")
    local interim = H.wait_until(function()
      local text = H.slurp(file)
      local s = text and parse(text)
      return s and value(s, "kingest_run_in_progress") == 1 and value(s, "kingest_run_records_read") == 5 and text
    end, 120)
    local pushed = interim and H.wait_until(function()
      local s = gateway_samples(gw)
      local group = { job = NAME .. " interim" }
      return value(s, "kingest_run_in_progress", group) == 1 and value(s, "kingest_run_records_read", group) == 5
    end, 120)
    H.spit(flag, "")
    assert.are.equal(0, H.wait_exit(p, 120), H.stderr_of(p))
    assert.truthy(interim, "no interim report in " .. file .. ":\n" .. H.stderr_of(p))
    assert.truthy(pushed, "no interim report on the Pushgateway")
    assert_valid(interim)
    local s = parse(interim)
    assert.are.equal(5, value(s, "kingest_run_records_written"))
    assert.are.equal(1, value(s, "kingest_run_tasks"))
    assert.is_nil(value(s, "kingest_run_success")) -- not known yet

    s = parse(H.slurp(file))
    assert.are.equal(0, value(s, "kingest_run_in_progress"))
    assert.are.equal(10, value(s, "kingest_run_records_read"))
    assert.same({ "kingest.prom" }, H.top_files(work .. "/textfile"))
    local g = gateway_samples(gw)
    assert.are.equal(10, value(g, "kingest_run_records_read", { job = NAME .. " interim" }))
    assert.are.equal(0, value(g, "kingest_run_in_progress", { job = NAME .. " interim" }))
  end)

  it("that never answers: a WARN once the timeout has passed, and the run still commits", function()
    local dir = H.tmp .. "/" .. H.unique("silent")
    local silent = silent_listener(dir)
    finally(function() stop(silent) end)
    local topic = H.topic_with("prom_silent", { "x", "y", "z" })
    local work = H.workdir("prom_silent")
    local url = "http://127.0.0.1:" .. silent.port
    local log = run_ok(job(work, { topic }, { ["metrics.reporting.prometheus.pushgateway.url"] = url,
      ["metrics.reporting.prometheus.pushgateway.timeout.ms"] = 1000 }), work)
    local warns = H.grep(log, " WARN cannot push the metrics to the Pushgateway at " .. url .. "/metrics/job/" .. JOB ..
      " (metrics.reporting.prometheus.pushgateway.url): ")
    assert.are.equal(1, #warns, log)
    assert.truthy(warns[1]:find("timed out", 1, true), warns[1])
    assert.are.equal(3, H.stored_offsets(work, JOB)[topic .. ":0"])
    assert.same({ "SUCCESSFUL" }, H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT result FROM runs")[1])
    H.assert_exactly_once(work, { topic })
  end)

  it("on a closed port: a WARN, and the run still commits", function()
    local port = free_port() -- nothing listens there once the probe has closed it
    local topic = H.topic_with("prom_closed", { "x" })
    local work = H.workdir("prom_closed")
    local url = "http://127.0.0.1:" .. port
    local log = run_ok(job(work, { topic }, { ["metrics.reporting.prometheus.pushgateway.url"] = url }), work)
    local warns = H.grep(log, " WARN cannot push the metrics to the Pushgateway at " .. url)
    assert.are.equal(1, #warns, log)
    assert.truthy(warns[1]:find("Couldn't connect", 1, true), warns[1])
    assert.are.equal(1, H.stored_offsets(work, JOB)[topic .. ":0"])
  end)

  it("that answers with an error: a WARN with its status and message", function()
    local topic = H.topic_with("prom_rejected", { "x" })
    local work = H.workdir("prom_rejected")
    -- A URL with a path the Pushgateway does not serve.
    local url = gw.url .. "/pushgateway"
    local log = run_ok(job(work, { topic }, { ["metrics.reporting.prometheus.pushgateway.url"] = url }), work)
    local warns = H.grep(log, " WARN cannot push the metrics to the Pushgateway at " .. url .. "/metrics/job/" .. JOB ..
      " (metrics.reporting.prometheus.pushgateway.url): HTTP 404: 404 page not found")
    assert.are.equal(1, #warns, log)
    assert.are.equal(1, H.stored_offsets(work, JOB)[topic .. ":0"])
  end)

  it("refuses a URL that is not http:// or https://, naming the property", function()
    local work = H.workdir("prom_url")
    H.run_fails(job(work, { "t" }, { ["metrics.reporting.prometheus.pushgateway.url"] = "127.0.0.1:9091" }), work, 78,
      { "metrics.reporting.prometheus.pushgateway.url=127.0.0.1:9091", "http://" })
  end)
end)
