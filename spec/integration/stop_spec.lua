-- Stopping a run with SIGTERM or SIGINT: the run stops fetching, commits what was completely written, is
-- recorded as STOPPED and exits with status 6; the next run goes on from there. A second signal ends the process
-- at once, and the commit journal keeps that safe. Output is checked against the records produced, offsets
-- with sqlite3.
local H = require("support.harness")

local N = 300

-- A job over a new one-partition topic of N records whose decodeRecord takes 20 ms a record, in batches of 5,
-- so that a run takes about 6 s and a signal finds it in the middle.
local function slow_job(name)
  local topic = H.topic_with(name, H.records(name, 0, 0, N - 1))
  local work = H.workdir(name)
  local job = H.job({ dir = work, name = name, topics = topic, code = H.slow_decode(20),
                      props = { ["kafka.fetch.batch.size"] = 5, ["progress.interval.ms"] = 100 } })
  return { name = name, topic = topic, work = work, job = job, all = H.records(name, 0, 0, N - 1) }
end

-- The most records a spawned run's progress lines have reported for its partition.
local function progress(p)
  local best = 0
  for n in H.stderr_of(p):gmatch(" INFO Progress: %S+ %S+ (%d+)/%d+ records") do best = math.max(best, tonumber(n)) end
  return best
end

-- Starts a run of C and waits until it has pulled some records.
local function start(c)
  local p = H.spawn({ "run", c.job }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/run")
  assert.truthy(H.wait_until(function() return progress(p) >= 20 end, 30),
    "the run did not start pulling:\n" .. H.stderr_of(p))
  assert.is_nil(H.slurp(p.status), "the run ended too early:\n" .. H.stderr_of(p))
  return p
end

local function runs(c)
  return H.sqlite(c.work .. "/state-store/" .. c.name .. ".db", "SELECT result, message FROM runs ORDER BY started_ms")
end

-- Runs C again until it has everything; checks every record was published exactly once and the offset is at
-- the end.
local function finish(c)
  local code, _, err = H.run(c.job, c.work)
  assert.are.equal(0, code, err)
  assert.same(c.all, H.output_lines(c.work .. "/job-output/" .. c.topic))
  assert.same({ [c.topic .. ":0"] = N }, H.stored_offsets(c.work, c.name))
end

describe("a run stopped by a signal", function()
  for _, sig in ipairs({ "TERM", "INT" }) do
    it("SIG" .. sig .. ": stops fetching, commits what was completely written, exits 6 and is recorded as STOPPED", function()
      local c = slow_job("stop_" .. sig:lower())
      local p = start(c)
      assert.are.equal(0, (H.sh("kill -" .. sig .. " " .. H.pid_of(p))))
      local code = H.wait_exit(p, 60)
      local log = H.stderr_of(p)
      assert.are.equal(6, code, log)
      assert.truthy(log:find("kingest: stopping on SIG" .. sig .. ": finishing the batches in hand", 1, true), log)
      assert.truthy(log:find("Stopping partition " .. c.topic .. ":0 early at offset %d+ of " .. N .. ": stopped by SIG" .. sig),
        log)
      assert.truthy(log:find("INFO Job job_" .. c.name .. "_%d+ stopped in %d+ms"), log)
      -- What was committed is exactly the records published, a prefix of the topic, short of the end.
      local stored = H.stored_offsets(c.work, c.name)[c.topic .. ":0"]
      assert.is_true(stored >= 20 and stored < N, tostring(stored))
      local published = H.output_lines(c.work .. "/job-output/" .. c.topic)
      assert.same({ unpack(c.all, 1, stored) }, published)
      local rows = runs(c)
      assert.are.equal(1, #rows)
      assert.are.equal("STOPPED", rows[1][1])
      assert.truthy(rows[1][2]:find("stopped by SIG" .. sig .. "; the next run goes on from here", 1, true), rows[1][2])
      assert.same({}, H.files(c.work .. "/task-data"))
      finish(c)
    end)
  end

  it("with --log-format json, says it is stopping, and on which signal, in a JSON line as every other", function()
    local cjson = require("cjson")
    local c = slow_job("stop_json")
    local p = H.spawn({ "run", c.job, "--log-format", "json" }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/run")
    assert.truthy(H.wait_until(function()
      local best = 0
      for n in H.stderr_of(p):gmatch('"message":"Progress: %S+ %S+ (%d+)/%d+ records') do
        best = math.max(best, tonumber(n))
      end
      return best >= 20
    end, 30), "the run did not start pulling:\n" .. H.stderr_of(p))
    assert.are.equal(0, (H.sh("kill -TERM " .. H.pid_of(p))))
    local code = H.wait_exit(p, 60)
    local log = H.stderr_of(p)
    assert.are.equal(6, code, log)
    local function seconds(time) -- both UTC: their difference is right whatever the local zone
      local y, mo, d, h, mi, sec = time:match("^(%d+)%-(%d+)%-(%d+)T(%d+):(%d+):(%d+)")
      return os.time({ year = y, month = mo, day = d, hour = h, min = mi, sec = sec })
    end
    local notices, before = {}, nil
    for _, line in ipairs(H.lines(log)) do
      local ok, o = pcall(cjson.decode, line)
      assert.is_true(ok and type(o) == "table", "not JSON: " .. line)
      assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$", o.time)
      if tostring(o.message):find("^stopping") then
        notices[#notices + 1] = o
        o.before = before
      end
      before = o.time
    end
    assert.are.equal(1, #notices, log)
    assert.same({ "WARN", "SIGTERM", c.name }, { notices[1].level, notices[1].signal, notices[1].job })
    assert.are.equal("stopping on SIGTERM: finishing the batches in hand and committing what was completely written " ..
      "(signal again to stop at once)", notices[1].message)
    -- The notice's time, worked out by hand in the signal handler, is that of the line before it, give or take.
    assert.is_true(math.abs(seconds(notices[1].time) - seconds(notices[1].before)) <= 5, log)
  end)

  it("a second signal ends the process at once; the next run records it as DIED and publishes each record once", function()
    local c = slow_job("stop_twice")
    local p = start(c)
    local pid = H.pid_of(p)
    assert.are.equal(0, (H.sh("kill -TERM " .. pid)))
    assert.truthy(H.wait_until(function() return H.stderr_of(p):find("kingest: stopping", 1, true) end, 10))
    H.sh("kill -TERM " .. pid)
    local code = H.wait_exit(p, 60)
    -- Ended by the signal itself, unless the run had finished its commit in between (then it exited 6).
    assert.truthy(code == 128 + 15 or code == 6, tostring(code) .. "\n" .. H.stderr_of(p))
    finish(c)
    local rows = runs(c)
    assert.are.equal(2, #rows)
    assert.are.equal(code == 6 and "STOPPED" or "DIED", rows[1][1])
    assert.are.equal("SUCCESSFUL", rows[2][1])
  end)
end)
