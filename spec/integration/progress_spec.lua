-- Progress of a run (docs/behaviour.md, sections 4 and 9; docs/running.md, "Progress"), against the real broker: INFO
-- Progress lines in a log, a live status line on a terminal, and interim reports in the metrics file.
local H = require("support.harness")

local JOB = "ProgressSpec"

-- Writes DIR/job.lua for JOB pulling TOPICS (a list) from earliest into job-output/<topic>, with PROPS added
-- and EXTRA (Lua source of more fields of the job table) at the end; returns its path.
local job_file = H.job_writer(JOB)

local slow_decode = H.slow_decode

local run_ok = H.run_ok

local output = H.published

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
