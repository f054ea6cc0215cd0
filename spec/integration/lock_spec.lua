-- The job lock (docs/behaviour.md, section 7): while a run of a job is going on, a second run of the same job
-- exits at once with Gobblin's message, also one whose job.lock.dir differs (the lock beside the state); a lock left by a process that died is taken over; and
-- job.lock.enabled=false lets runs overlap. The runs that hold the lock are made slow by a decodeRecord
-- that busy-waits 0.3 s per record, over 10 records.
local H = require("support.harness")

local RECORDS = {}
for i = 1, 10 do RECORDS[i] = "record " .. i end

-- A topic with the ten records, a work dir, and the slow job.lua; LOCK_ENABLED (default true) goes into
-- job.lock.enabled.
local function slow_job(label, lock_enabled)
  local c = { name = "SlowJob_" .. label, topic = H.unique("lock_" .. label), work = H.workdir("lock_" .. label) }
  H.create_topic(c.topic, 1)
  H.produce(c.topic, RECORDS)
  c.file = H.job({ dir = c.work, name = c.name, topics = c.topic, code = H.slow_decode(300),
                   props = { ["job.lock.enabled"] = lock_enabled ~= false } })
  return c
end

-- Starts a run of the job in the background; waits until it is pulling records (so it holds the lock).
local function start_in_background(c, files)
  local p = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/" .. files)
  local pulling = H.wait_until(function() return H.stderr_of(p):find("Pulling partition", 1, true) end, 10)
  assert.truthy(pulling, "the background run did not start pulling:\n" .. H.stderr_of(p))
  assert.is_nil(H.slurp(p.status), "the background run ended early:\n" .. H.stderr_of(p))
  return p
end

local function run(c)
  return H.kingest({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work })
end

describe("the job lock", function()
  it("is released by a clean run with no pid left behind, so that the next run takes nothing over", function()
    local c = { name = "QuickJob", topic = H.unique("lock_clean"), work = H.workdir("lock_clean") }
    H.create_topic(c.topic, 1)
    H.produce(c.topic, RECORDS)
    c.file = H.job({ dir = c.work, name = c.name, topics = c.topic })
    local lockfile = c.work .. "/locks/" .. c.name .. ".lock"
    for n = 1, 2 do
      local code, _, err = run(c)
      assert.are.equal(0, code, err)
      assert.falsy(err:find("Taking over", 1, true), "run " .. n .. ":\n" .. err)
      -- The file stays (flock(2) needs it) but holds no pid once the run is over.
      assert.are.equal("", H.slurp(lockfile), "run " .. n .. " left a pid in " .. lockfile)
      local statelock = c.work .. "/state-store/" .. c.name .. ".db.lock"
      assert.are.equal("", H.slurp(statelock), "run " .. n .. " left a pid in " .. statelock)
    end
    assert.same(RECORDS, H.output_lines(c.work .. "/job-output/" .. c.topic))
  end)

  it("makes a second run of a running job exit at once with Gobblin's message, and the first run completes", function()
    local c = slow_job("busy")
    local first = start_in_background(c, "first")

    local t0 = H.now_ms()
    local code, _, err = run(c)
    local ms = H.now_ms() - t0
    assert.is_true(ms < 5000, "the second run took " .. ms .. " ms")
    assert.are_not.equal(0, code)
    assert.are.equal(3, code) -- `kingest run --help`: 3 when another run of the same job holds the lock
    assert.are.equal("kingest: Previous instance of job " .. c.name .. " is still running, skipping this run",
      H.last_line(err))
    -- It names the live holder, and leaves the holder's pid in the lock file.
    local pid = H.pid_of(first)
    assert.truthy(err:find("(lock held by process " .. pid .. ")", 1, true), err)
    assert.falsy(err:find("Taking over", 1, true), err)
    assert.are.equal(pid .. "\n", H.slurp(c.work .. "/locks/" .. c.name .. ".lock"))
    -- It holds the lock beside the state database too: a run whose job.lock.dir is another folder, on the same
    -- state, is refused as well.
    assert.are.equal(pid .. "\n", H.slurp(c.work .. "/state-store/" .. c.name .. ".db.lock"))
    local other = H.job({ dir = c.work .. "/other", name = c.name, topics = c.topic, code = H.slow_decode(300),
                          props = { ["job.lock.dir"] = c.work .. "/other/locks" } })
    code, _, err = H.kingest({ "run", other }, { GOBBLIN_WORK_DIR = c.work })
    assert.are.equal(3, code, err)
    assert.are.equal("kingest: Previous instance of job " .. c.name .. " is still running, skipping this run",
      H.last_line(err))
    assert.truthy(err:find("(lock held by process " .. pid .. ")", 1, true), err)
    assert.is_nil(H.slurp(first.status), "the first run should still be running")

    assert.are.equal(0, H.wait_exit(first, 30), H.stderr_of(first))
    assert.truthy(H.stderr_of(first):find("Extracted 10 data records", 1, true), H.stderr_of(first))
    assert.same(RECORDS, H.output_lines(c.work .. "/job-output/" .. c.topic))
    assert.same({ [c.topic .. ":0"] = 10 }, H.stored_offsets(c.work, c.name))
  end)

  it("is taken over when the process that held it was killed, and the killed run publishes nothing", function()
    local c = slow_job("killed")
    local victim = start_in_background(c, "victim")
    local pid = H.pid_of(victim)
    assert.are.equal(tostring(pid), (H.slurp(c.work .. "/locks/" .. c.name .. ".lock") or ""):match("%d+"))
    -- Kill it once it has written records to its staging file.
    assert.truthy(H.wait_until(function() return #H.files(c.work .. "/task-data") > 0 end, 10), "no staging file")
    assert.are.equal(0, (H.sh("kill -KILL " .. pid)))
    assert.are.equal(128 + 9, H.wait_exit(victim, 10))
    -- The lock file still names the dead process; nothing was published or stored.
    assert.are.equal(tostring(pid), (H.slurp(c.work .. "/locks/" .. c.name .. ".lock") or ""):match("%d+"))
    assert.same({}, H.files(c.work .. "/job-output"))
    assert.same({}, H.stored_offsets(c.work, c.name))

    local code, _, err = run(c)
    assert.are.equal(0, code, err)
    assert.truthy(err:find("Taking over the lock of job " .. c.name .. " left by process " .. pid, 1, true), err)
    assert.same(RECORDS, H.output_lines(c.work .. "/job-output/" .. c.topic))
    assert.are.equal(1, #H.files(c.work .. "/job-output/" .. c.topic))
    assert.same({ [c.topic .. ":0"] = 10 }, H.stored_offsets(c.work, c.name))
    -- The killed run's staging files are gone too, as after any completed run.
    assert.same({}, H.files(c.work .. "/task-data"))
    -- And the next run starts where this one stopped.
    code, _, err = run(c)
    assert.are.equal(0, code, err)
    assert.truthy(err:find("Extracted 0 data records", 1, true), err)
    assert.same(RECORDS, H.output_lines(c.work .. "/job-output/" .. c.topic))
  end)

  it("lets two runs of the same job overlap when job.lock.enabled=false", function()
    local c = slow_job("disabled", false)
    local first = start_in_background(c, "first")
    local code, _, err = run(c)
    assert.are.equal(0, code, err)
    assert.falsy(err:find("Previous instance", 1, true), err)
    assert.truthy(err:find("Extracted 10 data records", 1, true), err)
    assert.are.equal(0, H.wait_exit(first, 30), H.stderr_of(first))
    assert.falsy(H.stderr_of(first):find("Previous instance", 1, true))
  end)
end)
