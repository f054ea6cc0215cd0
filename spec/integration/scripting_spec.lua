-- Job logic in Lua, against the real broker: what decodeRecord sees of a record, binary payloads, converter
-- chains, decode.error.policy, script metrics, script.batch.timeout.ms, and job scripts that cannot be
-- loaded. Records are produced with kcat where the spec needs keys, headers or exact bytes; output is
-- checked record by record.
local H = require("support.harness")
local cjson = require("cjson")

local JOB = "ScriptingSpec"

-- Writes WORK/job.lua pulling TOPIC from earliest into job-output/<topic>, with PROPS added and EXTRA (Lua
-- code: decodeRecord, converters, ...) inside the returned table; PRELUDE (Lua code) comes before it.
local function job_file(work, topic, props, extra, prelude)
  local p = { ["metrics.reporting.file.enabled"] = true }
  for k, v in pairs(props or {}) do p[k] = v end
  return H.job({ dir = work, name = JOB, topics = topic, props = p, code = extra, prelude = prelude })
end

local run_ok, run_fails = H.run_ok, H.run_fails

local topic_with = H.topic_with

-- The metrics lines of the run in WORK: the task lines (an array) and the job line.
local function metrics_of(work)
  local tasks, job = {}, nil
  for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
    if line.type == "metrics" then
      if line.context.task then
        tasks[#tasks + 1] = line
      else
        assert.is_nil(job, "two job metrics lines")
        job = line
      end
    end
  end
  assert.is_not_nil(job, "no job metrics line")
  return tasks, job
end

-- The task-data, stored offsets and published files of WORK: what a failed run must leave as it was.
local function traces(work)
  return { offsets = H.stored_offsets(work, JOB), published = H.snapshot(work .. "/job-output"),
           task_data = H.files(work .. "/task-data") }
end

describe("decodeRecord", function()
  it("sees each record's key, headers, partition, offset and timestamp, and a table it returns is written as JSON", function()
    local topic = H.unique("scr_fields")
    H.create_topic(topic, 1)
    -- Keys split off at ':'; a line without ':' has a null key. Then records without headers, and a null payload.
    H.kcat_produce(topic, { args = { "-K:", "-H", "h1=v1", "-H", "h2=v2" }, stdin = "k1:first\nno key\n:empty key\n" })
    H.kcat_produce(topic, { stdin = "plain\n" })
    H.kcat_produce(topic, { args = { "-K:", "-Z", "-D", "|" }, stdin = "k2:|" })
    -- A null header value, an empty one, one with '=', and a repeated name.
    H.kcat_produce(topic, { args = { "-H", "nullh", "-H", "e=", "-H", "eq=a=b", "-H", "e=again" }, stdin = "odd headers\n" })
    local work = H.workdir("scr_fields")
    run_ok(job_file(work, topic, nil, [[
  decodeRecord = function(msg)
    local headers = {}
    for i, h in ipairs(msg:headers()) do headers[i] = { name = h[1], value = h[2] } end
    return { topic = msg:topic(), partition = msg.partition, offset = msg.offset, timestamp = msg.timestamp,
             key = msg:key(), value = msg:value(), headers = headers }
  end,]]), work)
    -- The broker's timestamps, read by kcat.
    local ts = {}
    for _, line in ipairs(H.kcat_lines(topic, "%o %T")) do
      local o, t = line:match("^(%d+) (%d+)$")
      ts[tonumber(o)] = tonumber(t)
    end
    local both = { { name = "h1", value = "v1" }, { name = "h2", value = "v2" } }
    local function rec(offset, key, value, headers)
      return { topic = topic, partition = 0, offset = offset, timestamp = ts[offset], key = key, value = value,
               headers = headers }
    end
    local got = H.json_lines(work .. "/job-output/" .. topic)
    assert.same({
      rec(0, "k1", "first", both),
      rec(1, nil, "no key", both),
      rec(2, "", "empty key", both),
      rec(3, nil, "plain", {}),
      rec(4, "k2", nil, {}),
      rec(5, nil, "odd headers", { { name = "nullh" }, { name = "e", value = "" }, { name = "eq", value = "a=b" },
                                   { name = "e", value = "again" } }),
    }, got)
    for offset = 0, 5 do assert.is_true(ts[offset] > 1500000000000, "timestamp of offset " .. offset) end
    assert.same({ [topic .. ":0"] = 6 }, H.stored_offsets(work, JOB))
  end)
end)

describe("binary payloads", function()
  -- Bytes with NULs, every byte value, an empty payload and one of about 1 MB.
  local topic, payloads

  -- 8-byte big-endian length + record, repeated: the records of a file written with simple.writer.prepend.size.
  local function unframe(bytes)
    local records, pos = {}, 1
    while pos <= #bytes do
      local len = 0
      for i = 0, 7 do len = len * 256 + bytes:byte(pos + i) end
      records[#records + 1] = bytes:sub(pos + 8, pos + 8 + len - 1)
      pos = pos + 8 + len
    end
    return records
  end

  setup(function()
    topic = H.unique("scr_binary")
    local code, _, err = H.kafka({ "create-topic", topic, "1", "--config", "max.message.bytes=2000000" })
    assert(code == 0, err)
    local all = {}
    for b = 0, 255 do all[#all + 1] = string.char(b) end
    local big = {}
    for i = 1, 1000000 do big[i] = string.char((i * 7919) % 251) end -- includes NULs, no repeating short period
    payloads = { "a\0b\0\0c\0", table.concat(all), "", table.concat(big) }
    local dir = H.workdir("scr_binary_input")
    for i, p in ipairs(payloads) do H.spit(dir .. "/" .. i, p) end
    local large = { "-X", "message.max.bytes=2000000" }
    -- kcat sends each file as one record, but skips an empty one: the empty payload comes with a key.
    H.kcat_produce(topic, { args = large, files = { dir .. "/1", dir .. "/2" } })
    H.kcat_produce(topic, { args = { "-K:" }, stdin = "empty:\n" })
    H.kcat_produce(topic, { args = large, files = { dir .. "/4" } })
    assert.same({ [topic .. ":0"] = { earliest = 0, latest = 4 } }, H.offsets(topic))
  end)

  local function output_records(extra)
    local work = H.workdir("scr_binary")
    run_ok(job_file(work, topic, { ["simple.writer.prepend.size"] = true, ["simple.writer.delimiter"] = "" }, extra),
      work)
    local files = H.files(work .. "/job-output/" .. topic)
    assert.are.equal(1, #files)
    assert.same({ [topic .. ":0"] = 4 }, H.stored_offsets(work, JOB))
    return unframe(H.slurp(work .. "/job-output/" .. topic .. "/" .. files[1]))
  end

  -- assert.same would print a megabyte on failure: compare lengths, then each record's bytes.
  local function assert_records(want, got)
    assert.are.equal(#want, #got)
    for i = 1, #want do
      assert.are.equal(#want[i], #got[i], "length of record " .. i)
      assert.is_true(want[i] == got[i], "bytes of record " .. i)
    end
  end

  it("pass through unchanged with KafkaSimpleSource and simple.writer.prepend.size=true", function()
    assert_records(payloads, output_records())
  end)

  it("pass through unchanged when decodeRecord returns them as Lua strings", function()
    assert_records(payloads, output_records([[
  decodeRecord = function(msg)
    local v = msg:value()
    assert(#v == msg.value_len)
    return v
  end,]]))
  end)
end)

describe("a converter chain", function()
  local topic
  setup(function()
    topic = topic_with("scr_chain", { "x y", "z", "skip", "w skip v" })
  end)

  it("passes each record of gobblin.many on, drops a record returned as nil, and writes an array table as ONE JSON array", function()
    local work = H.workdir("scr_chain")
    run_ok(job_file(work, topic, nil, [[
  converters = {
    function(msg)                                   -- one record per word
      local words = {}
      for w in msg:value():gmatch("%S+") do words[#words + 1] = w end
      return gobblin.many(words)
    end,
    function(word)                                  -- drop "skip"
      if word == "skip" then return nil end
      return word:upper()
    end,
    function(word, ctx) return { word, ctx.offset } end,  -- an array: one record
  },]], 'local gobblin = require("gobblin")'), work)
    local dir = work .. "/job-output/" .. topic
    assert.same({ { "X", 0 }, { "Y", 0 }, { "Z", 1 }, { "W", 3 }, { "V", 3 } }, H.json_lines(dir))
    assert.same({ '["X",0]', '["Y",0]', '["Z",1]', '["W",3]', '["V",3]' }, H.output_lines(dir))
    assert.same({ [topic .. ":0"] = 4 }, H.stored_offsets(work, JOB))
  end)

  it("writes every record of a gobblin.many that decodeRecord returns, and nothing for an empty one", function()
    local work = H.workdir("scr_chain")
    run_ok(job_file(work, topic, nil, [[
  decodeRecord = function(msg)
    local v = msg:value()
    if v == "skip" then return gobblin.many({}) end
    return gobblin.many({ v, v:upper() })
  end,]], 'local gobblin = require("gobblin")'), work)
    assert.same({ "x y", "X Y", "z", "Z", "w skip v", "W SKIP V" }, H.output_lines(work .. "/job-output/" .. topic))
  end)
end)

describe("decode.error.policy", function()
  -- Twelve records, eight of which decodeRecord cannot decode.
  local BAD = { 1, 2, 3, 5, 6, 8, 9, 11 }
  local lines, good = {}, {}
  local topic
  for o = 0, 11 do lines[o + 1] = "ok " .. o end
  for _, o in ipairs(BAD) do lines[o + 1] = "bad " .. o end
  for _, line in ipairs(lines) do
    if line:find("^ok") then good[#good + 1] = line end
  end

  local DECODE = [[
  decodeRecord = function(msg)
    local v = msg:value()
    if v:find("^bad") then error("cannot decode " .. v) end
    return v
  end,]]

  setup(function()
    topic = topic_with("scr_policy", lines)
  end)

  it("skip (the default) drops and counts failing records, logs the first 5 with their traceback, and moves on", function()
    local work = H.workdir("scr_skip")
    local job = job_file(work, topic, { ["decode.error.max.ratio"] = 1 }, DECODE)
    local log = run_ok(job, work)
    assert.same(good, H.output_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 12 }, H.stored_offsets(work, JOB))
    local warned = H.grep(log, "WARN Skipping record ")
    assert.are.equal(5, #warned, log)
    for i = 1, 5 do
      assert.truthy(warned[i]:find("Skipping record " .. topic .. ":0 at offset " .. BAD[i] .. ": decodeRecord failed: " ..
        job .. ":", 1, true), warned[i])
      assert.truthy(warned[i]:find("cannot decode bad " .. BAD[i], 1, true), warned[i])
    end
    assert.are.equal(5, #H.grep(log, "stack traceback:"), log)
    assert.is_nil(log:find("cannot decode bad " .. BAD[6], 1, true), "the sixth failure should not be logged")
    local tasks, jobline = metrics_of(work)
    assert.are.equal(1, #tasks)
    for _, line in ipairs({ tasks[1], jobline }) do
      assert.are.equal(8, line.counters["num.of.decoding.errors"])
      assert.are.equal(8, line.counters["gobblin.extractor.records.failed"])
      assert.are.equal(12, line.counters["gobblin.extractor.records.read"])
      assert.are.equal(4, line.counters["gobblin.writer.records.written"])
    end
  end)

  it("fail stops the run at the first failing record, naming topic:partition and offset; nothing is published", function()
    local t = topic_with("scr_fail", { "ok a", "ok b" })
    local work = H.workdir("scr_fail")
    run_ok(job_file(work, t, nil, DECODE), work)
    H.produce(t, { "ok c", "bad d", "ok e" })
    local before = traces(work)
    assert.same({ [t .. ":0"] = 2 }, before.offsets)
    run_fails(job_file(work, t, { ["decode.error.policy"] = "fail" }, DECODE), work, 1,
      { t .. ":0 at offset 3", "decode.error.policy=fail", "cannot decode bad d" })
    assert.same(before, traces(work))
    -- The next run with the default policy pulls the three new records (one of them skipped).
    run_ok(job_file(work, t, { ["decode.error.max.ratio"] = 0.5 }, DECODE), work)
    assert.same({ "ok a", "ok b", "ok c", "ok e" }, H.output_lines(work .. "/job-output/" .. t))
    assert.same({ [t .. ":0"] = 5 }, H.stored_offsets(work, JOB))
  end)

  -- The lines of the one quarantine file of TOPIC under WORK, decoded.
  local function quarantined(work, t)
    local dir = work .. "/job-output/" .. t .. "/_errors"
    local files = H.files(dir)
    assert.are.equal(1, #files)
    assert.matches("^part%.task_" .. JOB .. "_%d+_0%.jsonl$", files[1])
    return H.json_lines(dir)
  end

  it("quarantine writes each failing record, with where it came from and its error, to <FP>/_errors", function()
    local work = H.workdir("scr_quarantine")
    local job = job_file(work, topic, { ["decode.error.policy"] = "quarantine", ["decode.error.max.ratio"] = 1 }, DECODE)
    local DECODE_LINE
    for n, line in ipairs(H.lines(H.slurp(job))) do
      if line:find('error("cannot decode', 1, true) then DECODE_LINE = n end
    end
    local log = run_ok(job, work)
    assert.same(good, H.top_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 12 }, H.stored_offsets(work, JOB))
    local ts = {}
    for _, line in ipairs(H.kcat_lines(topic, "%o %T")) do
      local o, t = line:match("^(%d+) (%d+)$")
      ts[tonumber(o)] = tonumber(t)
    end
    local errors = quarantined(work, topic)
    assert.are.equal(#BAD, #errors)
    for i, e in ipairs(errors) do
      assert.are.equal(topic, e.topic)
      assert.are.equal(0, e.partition)
      assert.are.equal(BAD[i], e.offset)
      assert.are.equal(ts[BAD[i]], e.timestamp)
      assert.are.equal("decodeRecord", e.stage)
      -- The message alone in "error", the traceback in a field of its own: the job's line, named by its hook.
      assert.are.equal(job .. ":" .. DECODE_LINE .. ": cannot decode bad " .. BAD[i], e.error)
      assert.are.equal("\t" .. job .. ":" .. DECODE_LINE .. " (decodeRecord)\n", e.traceback:match("^[^\n]*\n"))
      assert.are.equal(cjson.null, e.key_base64)
      assert.are.equal("bad " .. BAD[i], H.base64_decode(e.value_base64))
    end
    assert.are.equal(5, #H.grep(log, "WARN Quarantining record " .. topic .. ":0 at offset "), log)
    local _, jobline = metrics_of(work)
    assert.are.equal(8, jobline.counters["num.of.decoding.errors"])
    assert.are.equal(8, jobline.counters["num.of.quarantined.records"])
  end)

  it("names the job's own line and its hook first in a traceback, even when a tail call left no frame of the hook", function()
    local work = H.workdir("scr_tailcall")
    local job = job_file(work, topic, { ["decode.error.max.ratio"] = 1 }, [[
  decodeRecord = function(msg)
    return check(msg:value())
  end,]], [[
local function check(v)
  if v:find("^bad") then error("no good: " .. v) end
  return v
end]])
    local log = run_ok(job, work)
    assert.same(good, H.output_lines(work .. "/job-output/" .. topic))
    local line
    for n, text in ipairs(H.lines(H.slurp(job))) do
      if text:find('error("no good', 1, true) then line = n end
    end
    -- decodeRecord's frame is gone (return check(...) is a tail call): the frame that took its place is named by
    -- the hook, and it comes first, before the runtime's; error() itself is left out.
    assert.truthy(log:find("WARN Skipping record " .. topic .. ":0 at offset 1: decodeRecord failed: " .. job .. ":" ..
      line .. ": no good: bad 1 (the task goes on: 1 failed so far, within decode.error.max.ratio=1)\n" ..
      "stack traceback:\n\t" .. job .. ":" .. line .. " (decodeRecord)\n\t", 1, true), log)
    assert.truthy(log:find(" %(decodeRecord%)\n\t[^\n]*/gobblin/runtime%.lua:%d+ %(kingest runtime%)\n"), log)
    assert.is_nil(log:find("in function 'error'", 1, true), log)
  end)

  it("reports a failing converter as its stage, \"converter 2\"", function()
    local work = H.workdir("scr_converter")
    local log = run_ok(job_file(work, topic, { ["decode.error.policy"] = "quarantine", ["decode.error.max.ratio"] = 1,
                                                ["task.skip.error.records"] = -1 }, [[
  converters = {
    function(msg) return msg:value() end,
    function(v)
      if v:find("^bad") then error("converter 2 refuses " .. v, 0) end
      return v:upper()
    end,
  },]]), work)
    local upper = {}
    for i, v in ipairs(good) do upper[i] = v:upper() end
    assert.same(upper, H.top_lines(work .. "/job-output/" .. topic))
    local errors = quarantined(work, topic)
    assert.are.equal(#BAD, #errors)
    for i, e in ipairs(errors) do
      assert.are.equal("converter 2", e.stage)
      assert.are.equal(BAD[i], e.offset)
      assert.are.equal("converter 2 refuses bad " .. BAD[i], e.error)
      assert.matches("^\t.*/job%.lua:%d+ %(converter 2%)\n", e.traceback)
    end
    assert.truthy(log:find("Quarantining record " .. topic .. ":0 at offset 1: converter 2 failed: converter 2 refuses bad 1",
      1, true), log)
  end)

  describe("with task.skip.error.records", function()
    local small
    setup(function()
      small = topic_with("scr_limit", { "ok 0", "bad 1", "bad 2", "ok 3", "bad 4" })
    end)

    it("fails the run when more records fail than it allows; nothing is published", function()
      local work = H.workdir("scr_limit")
      run_fails(job_file(work, small, { ["task.skip.error.records"] = 2, ["decode.error.max.ratio"] = 1 }, DECODE), work, 5,
        { "more than 2 records failed", "task.skip.error.records", small .. ":0 offset 4" })
      assert.same({}, H.stored_offsets(work, JOB))
      assert.same({}, H.files(work .. "/job-output"))
      assert.same({}, H.files(work .. "/task-data"))
    end)

    it("skips as many as it allows", function()
      local work = H.workdir("scr_limit")
      run_ok(job_file(work, small, { ["task.skip.error.records"] = 3, ["decode.error.max.ratio"] = 1 }, DECODE), work)
      assert.same({ "ok 0", "ok 3" }, H.output_lines(work .. "/job-output/" .. small))
      assert.same({ [small .. ":0"] = 5 }, H.stored_offsets(work, JOB))
    end)
  end)
end)

describe("the error budget", function()
  -- The result, read and skipped counts of the newest run of JOB under WORK, read with sqlite3.
  local function last_run(work)
    local row = H.sqlite(work .. "/state-store/" .. JOB .. ".db",
      "SELECT result, records_read, records, skipped, quarantined FROM runs ORDER BY started_ms DESC LIMIT 1")[1]
    return { result = row[1], read = tonumber(row[2]), written = tonumber(row[3]), skipped = tonumber(row[4]),
             quarantined = tonumber(row[5]) }
  end

  local many = {}
  for i = 0, 499 do many[#many + 1] = "rec " .. i end
  local topic
  setup(function() topic = topic_with("scr_budget", many) end)

  -- Asserts that a run over TOPIC failed with status 5 naming NAMES, left nothing behind and moved no offset.
  local function over_budget(work, job, names)
    local _, log = run_fails(job, work, 5, names)
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({}, H.files(work .. "/job-output"))
    assert.same({}, H.files(work .. "/task-data"))
    local run = last_run(work)
    assert.are.equal("FAILED", run.result)
    -- A task that fails skips nothing: its failed records are counted as in a failed task, and read again next time.
    assert.is_true(run.read > 0, log)
    assert.same({ 0, 0 }, { run.skipped, run.quarantined })
    local summary = H.grep(log, " failed in the script: 0 were skipped, 0 were quarantined, ")
    assert.are.equal(1, #summary, log)
    assert.truthy(summary[1]:find(" in tasks that failed (those tasks publish nothing, quarantine included, and " ..
      "their offsets do not move)", 1, true), summary[1])
    return log
  end

  it("fails the run with status 5 when decodeRecord fails on every record: nothing published, no offset moved", function()
    local work = H.workdir("scr_budget")
    local log = over_budget(work, job_file(work, topic, nil, [[
  decodeRecord = function(msg) error("broken decoder") end,]]),
      { "failed in the script, more than decode.error.max.ratio=0.1", topic .. ":0 offset 0: decodeRecord failed:",
        "broken decoder" })
    -- It stops once the bound is certain to be passed: the 51st failure of 500 records.
    assert.truthy(log:find("51 of the task's 500 records failed", 1, true), log)
  end)

  it("fails the run when decodeRecord returns a number for every record", function()
    local work = H.workdir("scr_budget")
    over_budget(work, job_file(work, topic, nil, [[
  decodeRecord = function(msg) return 42 end,]]), { "decode.error.max.ratio", "the record to write is a number" })
  end)

  it("fails the task at the first record a converter fails on, as Gobblin does, unless task.skip.error.records allows", function()
    local work = H.workdir("scr_budget")
    local CONVERTER = [[
  converters = { function(v) error("broken converter") end },]]
    local log = over_budget(work, job_file(work, topic, nil, CONVERTER),
      { "a converter failed at " .. topic .. ":0 offset 0", "task.skip.error.records", "converter 1 failed: ",
        "broken converter" })
    -- The record's own line says what becomes of it and of its task, and it is not counted as skipped.
    assert.truthy(log:find(" WARN converter 1 failed for " .. topic .. ":0 at offset 0: " .. work .. "/job.lua:",
      1, true), log)
    assert.truthy(log:find(": broken converter; the task fails: a converter failure fails the task unless " ..
      "task.skip.error.records is set (none of its output is published and its offsets do not move)\n", 1, true), log)
    assert.are.same({}, H.grep(log, "WARN Skipping record"))
    assert.truthy(log:find(" 1 failed in the script: 0 were skipped, 0 were quarantined, 1 in tasks that failed ", 1,
      true), log)
    -- Allowing it lets the ratio decide.
    over_budget(work, job_file(work, topic, { ["task.skip.error.records"] = -1 }, CONVERTER), { "decode.error.max.ratio=0.1" })
  end)

  it("skips failures within the budget, with one WARN line of counts per partition and the first error, and history counts", function()
    local t = H.unique("scr_within")
    H.create_topic(t, 2)
    H.produce(t, H.records(t, 0, 0, 19), 0)
    H.produce(t, H.records(t, 1, 0, 19), 1)
    local work = H.workdir("scr_within")
    local log = run_ok(job_file(work, t, { ["decode.error.policy"] = "skip" }, string.format([[
  decodeRecord = function(msg)
    local v = msg:value()
    if v == %q or v == %q then error("cannot take " .. v, 0) end
    return v
  end,]], t .. "-0-7", t .. "-1-3")), work)
    local summary = H.grep(log, "failed in the script: ")
    assert.are.equal(1, #summary, log)
    assert.truthy(summary[1]:find("WARN Of 40 records read, 2 failed in the script: 2 were skipped, 0 were " ..
      "quarantined; 0 were deleted before they were read: " .. t .. ":0 1 skipped, " .. t .. ":1 1 skipped; first " ..
      "failure: " .. t .. ":", 1, true), summary[1])
    -- Each skipped record's line says the task goes on, and within what.
    assert.are.equal(2, #H.grep(log, "(the task goes on: "), log)
    local run = last_run(work)
    assert.same({ result = "SUCCESSFUL", read = 40, written = 38, skipped = 2, quarantined = 0 }, run)
    -- And per partition in the metrics file's KafkaExtractorTopicMetadata events.
    local events = {}
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "event" and line.name == "KafkaExtractorTopicMetadata" then
        local m = line.metadata
        events[m.topic .. ":" .. m.partition] = { m.numRecordsConsumed, m.decodingErrors, m.skipped, m.quarantined,
                                                  m.deletedBeforeRead }
      end
    end
    assert.same({ [t .. ":0"] = { 20, 1, 1, 0, 0 }, [t .. ":1"] = { 20, 1, 1, 0, 0 } }, events)
    local code, out, err = H.kingest({ "state", "history", work .. "/job.lua" }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.truthy(out:find("%s40%s+38%s+%d+%s+2%s+0%s+0%s+0%s+SUCCESSFUL"), out) -- no deleted, no tombstones
    -- A run with no failure has no such line.
    H.produce(t, { "fine" }, 0)
    assert.are.same({}, H.grep(run_ok(job_file(work, t, nil, nil), work), "failed in the script"))
  end)

  it("makes os.exit in a script an error like any other, and the run goes on", function()
    local t = topic_with("scr_exit", H.records("x", 0, 0, 29))
    local work = H.workdir("scr_exit")
    local log = run_ok(job_file(work, t, nil, [[
  decodeRecord = function(msg)
    if msg:value() == "x-0-3" then os.exit(0) end
    return msg:value()
  end,]]), work)
    assert.truthy(log:find("Skipping record " .. t .. ":0 at offset 3: decodeRecord failed: ", 1, true), log)
    assert.truthy(log:find("os.exit is not allowed in a job script", 1, true), log)
    local want = H.records("x", 0, 0, 29)
    table.remove(want, 4)
    assert.same(want, H.output_lines(work .. "/job-output/" .. t))
    assert.are.equal("SUCCESSFUL", last_run(work).result)
    -- In the job file's own code it fails the load, before anything runs.
    local code, _, err = H.run(job_file(work, t, nil, nil, "os.exit(3)"), work)
    assert.are.equal(78, code, err)
    assert.truthy(H.last_line(err):find("os.exit is not allowed in a job script", 1, true), err)
  end)
end)

describe("a record's outputs", function()
  -- decodeRecord splits each record into three; the converter refuses the third part of a "bad" record, after
  -- the first two parts went to the writer.
  local SPLIT = [[
  decodeRecord = function(msg)
    local v = msg:value()
    return gobblin.many({ v .. ".1", v .. ".2", v .. ".3" })
  end,
  converters = {
    function(v)
      if v:find("^bad.*%.3$") then error("refusing " .. v, 0) end
      return v
    end,
  },]]

  for _, case in ipairs({ { "in the middle", { "ok a", "bad b", "ok c" } }, { "first", { "bad a", "ok b" } },
                          { "alone", { "bad a" } } }) do
    it("are all or nothing when a converter fails after some were written (the failing record " .. case[1] .. ")", function()
      local t = topic_with("scr_atomic", case[2])
      local work = H.workdir("scr_atomic")
      run_ok(job_file(work, t, { ["decode.error.policy"] = "quarantine", ["task.skip.error.records"] = -1,
                                 ["decode.error.max.ratio"] = 1 }, SPLIT, 'local gobblin = require("gobblin")'), work)
      local want = {}
      for _, v in ipairs(case[2]) do
        if v:find("^ok") then
          for i = 1, 3 do want[#want + 1] = v .. "." .. i end
        end
      end
      assert.same(want, H.top_lines(work .. "/job-output/" .. t))
      if #want == 0 then assert.same({}, H.top_files(work .. "/job-output/" .. t)) end
      local errors = H.json_lines(work .. "/job-output/" .. t .. "/_errors")
      assert.are.equal(1, #errors)
      assert.truthy(errors[1].error:find("refusing bad", 1, true), errors[1].error)
      local _, jobline = metrics_of(work)
      assert.are.equal(#want, jobline.counters["gobblin.writer.records.written"])
    end)
  end
end)

describe("script metrics", function()
  local DECODE = [[
  decodeRecord = function(msg, ctx)
    local v = msg:value()
    ctx.metrics:counter("my.counter"):inc()
    ctx.metrics:counter("my.down"):dec(2)
    ctx.metrics:meter("my.meter"):mark(2)
    ctx.metrics:histogram("my.hist"):update(#v)
    return v
  end,]]

  it("reports ctx.metrics counters, meters and histograms with the task's and the job's counters", function()
    local topic = topic_with("scr_metrics", { "a", "bb", "ccc", "dddd", "eeeee" })
    local work = H.workdir("scr_metrics")
    run_ok(job_file(work, topic, nil, DECODE), work)
    local tasks, job = metrics_of(work)
    assert.are.equal(1, #tasks)
    local want = {
      ["my.counter"] = 5, ["my.down"] = -10, ["my.meter.count"] = 10,
      ["my.hist.count"] = 5, ["my.hist.min"] = 1, ["my.hist.max"] = 5, ["my.hist.mean"] = 3,
    }
    local percentiles = { ["my.hist.p50"] = 3, ["my.hist.p75"] = 4, ["my.hist.p95"] = 5, ["my.hist.p99"] = 5 }
    for _, line in ipairs({ tasks[1], job }) do
      for name, value in pairs(want) do
        assert.are.equal(value, line.counters[name], name .. " in " .. cjson.encode(line.context))
      end
      assert.is_true(line.counters["my.meter.meanRate"] > 0)
    end
    -- Percentiles exist per task only: they cannot be combined across tasks.
    for name, value in pairs(percentiles) do
      assert.are.equal(value, tasks[1].counters[name], name)
      assert.is_nil(job.counters[name], name)
    end
  end)

  it("sums the tasks' script counters and meter counts for the job", function()
    local topic = H.unique("scr_metrics2")
    H.create_topic(topic, 2)
    H.produce(topic, { "a", "bb", "ccc" }, 0)
    H.produce(topic, { "dddd", "eeeee" }, 1)
    local work = H.workdir("scr_metrics2")
    run_ok(job_file(work, topic, { ["mr.job.max.mappers"] = 2 }, DECODE), work)
    local tasks, job = metrics_of(work)
    assert.are.equal(2, #tasks)
    local counts = {}
    for i, t in ipairs(tasks) do
      counts[i] = t.counters["my.counter"]
      assert.are.equal(2 * counts[i], t.counters["my.meter.count"])
      assert.are.equal(counts[i], t.counters["my.hist.count"])
    end
    assert.same({ 2, 3 }, H.sorted(counts))
    assert.are.equal(5, job.counters["my.counter"])
    assert.are.equal(-10, job.counters["my.down"])
    assert.are.equal(10, job.counters["my.meter.count"])
    assert.are.equal(5, job.counters["my.hist.count"])
  end)
end)

describe("script.batch.timeout.ms", function()
  local TIMEOUT = 300
  local topic
  local works = {}

  -- A job that loops forever on the record "loop" with LOOP (Lua code), or passes every record on without it.
  local function job_with(work, loop)
    return job_file(work, topic, { ["script.batch.timeout.ms"] = TIMEOUT }, string.format([[
  decodeRecord = function(msg)
    if msg:value() == "loop" then
      %s
    end
    return msg
  end,]], loop or "-- no loop"))
  end

  -- Runs JOB in WORK in the background; waits at most LIMIT seconds. Returns status, stderr and milliseconds.
  local function run_bounded(job, work, limit)
    local t0 = H.now_ms()
    local p = H.spawn({ "run", job }, { GOBBLIN_WORK_DIR = work }, work .. "/bounded")
    local code = H.wait_exit(p, limit)
    local ms = H.now_ms() - t0
    if not code then
      local pid = H.pid_of(p)
      if pid then os.execute("kill -9 " .. pid) end
      error("the run did not end within " .. limit .. " s:\n" .. H.stderr_of(p))
    end
    return code, H.stderr_of(p), ms
  end

  -- Each case starts from a job that has pulled "a" and "b"; then "c", "loop" and "d" arrive.
  setup(function()
    topic = topic_with("scr_timeout", { "a", "b" })
    for _, name in ipairs({ "hook", "jit" }) do
      works[name] = H.workdir("scr_timeout_" .. name)
      run_ok(job_with(works[name]), works[name])
    end
    H.produce(topic, { "c", "loop", "d" })
  end)

  -- The job without the loop pulls the three new records, once.
  local function next_run_pulls_the_rest(work)
    local log = run_ok(job_with(work), work)
    assert.truthy(log:find("Pulling partition " .. topic .. ":0 from offset 2 to 5, range=3", 1, true), log)
    assert.same({ "a", "b", "c", "loop", "d" }, H.output_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 5 }, H.stored_offsets(work, JOB))
    assert.same({}, H.files(work .. "/task-data"))
    assert.same({}, H.dirs(work .. "/task-data/" .. JOB))
    return log
  end

  it("stops a script looping in interpreted code through the hook, and fails the run naming the partition", function()
    local work = works.hook
    local before = traces(work)
    local code, err, ms = run_bounded(job_with(work, "while true do os.time() end"), work, 20)
    assert.are.equal(1, code, err)
    local last = H.last_line(err)
    assert.matches("^kingest: ", last)
    for _, name in ipairs({ "script.batch.timeout.ms", topic .. ":0", "more than " .. TIMEOUT .. " ms", "was stopped" }) do
      assert.truthy(last:find(name, 1, true), ("the error should name %q: %s"):format(name, last))
    end
    assert.is_true(ms < TIMEOUT + 3000, "interrupted after " .. ms .. " ms, before the hard stop")
    assert.same(before, traces(work))
    next_run_pulls_the_rest(work)
  end)

  it("ends the process when a compiled loop cannot be interrupted; nothing is published and the next run pulls it all once", function()
    local work = works.jit
    local before = traces(work)
    local code, err, ms = run_bounded(job_with(work, "local x = 0 while true do x = x + 1 end"), work, 20)
    assert.are.equal(1, code, err)
    assert.is_true(ms >= TIMEOUT + 3000 and ms < TIMEOUT + 3000 + 3000, "the run ended after " .. ms .. " ms")
    local last = H.last_line(err)
    assert.matches("^kingest: ", last)
    for _, name in ipairs({ "cannot be interrupted", "script.batch.timeout.ms=" .. TIMEOUT, topic .. ":0",
                            "nothing is published and no offset moves" }) do
      assert.truthy(last:find(name, 1, true), ("the error should name %q: %s"):format(name, last))
    end
    assert.same(before.offsets, H.stored_offsets(work, JOB))
    assert.same(before.published, H.snapshot(work .. "/job-output"))
    -- The run is recorded as failed, with its reason.
    local runs = H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT result, message FROM runs ORDER BY started_ms")
    assert.are.equal(2, #runs)
    assert.are.equal("FAILED", runs[2][1])
    assert.truthy(runs[2][2]:find("cannot be interrupted", 1, true), runs[2][2])
    -- Whatever task data the stopped run left, the next run removes it, and publishes every record once.
    local left = H.dirs(work .. "/task-data/" .. JOB)
    local log = next_run_pulls_the_rest(work)
    if #left > 0 then assert.truthy(log:find("Removed the task data of an earlier run", 1, true), log) end
  end)
end)

describe("the first scripting example (docs/scripting.md, and README.md's tour)", function()
  it("skips a record its converter cannot read, says so, and publishes the rest", function()
    local doc = H.slurp(H.root .. "/docs/scripting.md")
    local from = assert(doc:find("**What the first converter gets.**", 1, true))
    local code = assert(doc:match("```lua\n(.-)```", from))
    assert.truthy(H.slurp(H.root .. "/README.md"):find("```lua\n" .. code .. "```", 1, true),
      "README.md's tour does not show docs/scripting.md's first scripting example")
    local t = H.unique("scr_readme")
    H.create_topic(t, 1)
    local work = H.workdir("scr_readme")
    local job = work .. "/job.lua"
    H.spit(job, (code:gsub('"localhost:9092"', string.format("%q", H.bootstrap()))
      :gsub('%["topic%.whitelist"%] = "events"', '["topic.whitelist"] = ' .. string.format("%q", t))))
    H.run_ok(job, work) -- the first run starts at the latest offset (bootstrap.with.offset's default)
    local lines = {}
    for i = 0, 39 do lines[#lines + 1] = i == 17 and "not json" or string.format('{"n":%d}', i) end
    H.produce(t, lines)
    local log = H.run_ok(job, work)
    local out = {} -- writer.file.path.type=default: <topic>/<extract id>_append/part.*.json
    for _, line in ipairs(H.output_lines(work .. "/job-output/" .. t)) do out[#out + 1] = cjson.decode(line) end
    assert.are.equal(39, #out)
    for _, o in ipairs(out) do assert.is_true(o.n == o.offset and o.n ~= 17, cjson.encode(o)) end
    assert.truthy(log:find(" WARN Skipping record " .. t .. ":0 at offset 17: converter 1 failed: invalid JSON at " ..
      "byte 1: expected a value (the task goes on: 1 failed so far, within decode.error.max.ratio=0.1)", 1, true), log)
    assert.truthy(log:find(" WARN Of 40 records read, 1 failed in the script: 1 were skipped, 0 were quarantined; ", 1,
      true), log)
    assert.same({ [t .. ":0"] = 40 }, H.stored_offsets(work, "job"))
  end)
end)

describe("a job script that cannot be loaded", function()
  -- A job that has pulled two records, with two more waiting: each broken version of it must fail before
  -- anything is planned or pulled, leaving offsets and output as they were.
  local topic, work, before
  setup(function()
    topic = topic_with("scr_load", { "one", "two" })
    work = H.workdir("scr_load")
    run_ok(job_file(work, topic), work)
    H.produce(topic, { "three", "four" })
    before = traces(work)
    assert.same({ [topic .. ":0"] = 2 }, before.offsets)
  end)

  local function fails_before_pulling(job, names)
    local last, log = run_fails(job, work, 78, names)
    assert.is_nil(log:find("Created workunit", 1, true), log)
    assert.is_nil(log:find("Pulling partition", 1, true), log)
    assert.same(before, traces(work))
    return last, log
  end

  it("stops when a converter is not a function", function()
    fails_before_pulling(job_file(work, topic, nil, '  converters = { "nope" },'),
      { "converters[1] must be a function, got string" })
  end)

  it("stops when decodeRecord is not a function", function()
    fails_before_pulling(job_file(work, topic, nil, "  decodeRecord = 42,"), { "decodeRecord must be a function, got number" })
  end)

  it("stops when the source module does not exist", function()
    fails_before_pulling(job_file(work, topic, nil, '  source = "gobblin.source.nonexistent",'),
      { "source gobblin.source.nonexistent cannot be loaded", "module 'gobblin.source.nonexistent' not found" })
  end)

  it("stops when a require at the top of the job file fails, naming the file and line", function()
    local job = job_file(work, topic, nil, nil, 'local codec = require("kingest_spec_missing_codec")')
    fails_before_pulling(job, { job .. ":1:", "module 'kingest_spec_missing_codec' not found" })
  end)

  it("prints a load error once: a syntax error alone, an error of the top level after the job's own frames", function()
    local job = job_file(work, topic, nil, "  decodeRecord = function(msg) return msg:value( end,")
    local last, log = fails_before_pulling(job, { job .. ":" })
    assert.are.equal(1, #H.grep(log, "unexpected symbol near 'end'"), log)
    assert.is_nil(log:find("stack traceback", 1, true), log)
    assert.are.equal(1, #H.lines(log), log)
    job = job_file(work, topic, nil, nil, "local t = nil\nlocal x = t.field")
    last, log = fails_before_pulling(job, { job .. ":2: attempt to index local 't' (a nil value)" })
    assert.are.equal("kingest: " .. job .. ":2: attempt to index local 't' (a nil value)", last)
    assert.are.equal(1, #H.grep(log, "attempt to index local 't'"), log)
    -- The traceback, above the message: the job's frame first, the runtime's after it.
    assert.truthy(log:find(" ERROR stack traceback of the error below (the script's frames first):\n\t" .. job ..
      ":2 (main chunk)\n\t", 1, true), log)
  end)

  it("leaves the job to pull exactly the two waiting records once repaired", function()
    local log = run_ok(job_file(work, topic), work)
    assert.truthy(log:find("Pulling partition " .. topic .. ":0 from offset 2 to 4, range=2", 1, true), log)
    assert.same({ "one", "two", "three", "four" }, H.output_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 4 }, H.stored_offsets(work, JOB))
  end)
end)

describe("a job file's top level", function()
  it("runs once for the properties, the start-of-run check and estimateSize together, and once in each task", function()
    local topic = H.unique("scr_runs")
    H.create_topic(topic, 2)
    H.produce(topic, { "a", "b" }, 0)
    H.produce(topic, { "c" }, 1)
    local work = H.workdir("scr_runs")
    local runs = work .. "/top-level-runs"
    local job = job_file(work, topic,
      { ["mr.job.max.mappers"] = 2, ["kafka.workunit.size.estimator.type"] = "CUSTOM" },
      "  estimateSize = function(wu) return wu.range end,",
      string.format("do local f = assert(io.open(%q, 'a')); f:write('ran\\n'); f:close() end", runs))
    local log = run_ok(job, work)
    assert.truthy(log:find("Extracted 2 data records", 1, true) and log:find("Extracted 1 data records", 1, true), log)
    assert.are.equal(string.rep("ran\n", 1 + 2), H.slurp(runs)) -- the main thread's job state, then 2 tasks
  end)
end)
