-- A full disk and a second file system: a 256 KB tmpfs as task.data.root.dir. Mounting it needs root (or
-- CAP_SYS_ADMIN): where `mount -t tmpfs` fails, the spec exits with status 77 before running anything, which
-- ctest reports as skipped (SKIP_RETURN_CODE in spec/CMakeLists.txt), never as passed.
local H = require("support.harness")
local W = require("support.big_writes")

local mnt = H.tmp .. "/" .. H.unique("full_disk")
os.execute("mkdir -p " .. H.q(mnt))
do
  local code, _, err = H.sh("mount -t tmpfs -o size=256k tmpfs " .. H.q(mnt))
  if code ~= 0 then
    os.execute("rmdir " .. H.q(mnt))
    io.stderr:write("disk_spec: skipped: cannot mount a 256 KB tmpfs here (mount -t tmpfs needs root): " .. err .. "\n")
    os.exit(77)
  end
end

local function job(label, topic, extra)
  local c = { name = "Disk_" .. label, topic = topic, work = H.workdir("disk_" .. label) }
  c.file = H.job({ dir = c.work, name = c.name, topics = topic, code = extra })
  c.output = c.work .. "/job-output/" .. topic
  return c
end

local function run(c, env)
  return H.run(c.file, c.work, env)
end

local function big_records(label, n, extra)
  return W.big_records("disk_" .. label, n, function(topic) return job(label, topic, extra) end)
end
local assert_no_trace, assert_rerun_pulls_everything_once = W.assert_no_trace, W.assert_rerun_pulls_everything_once

describe("on a full disk", function()
  teardown(function()
    os.execute("umount " .. H.q(mnt) .. " && rmdir " .. H.q(mnt))
  end)

  it("fails the task with 'No space left on device' (1.6 MB of records), commits nothing, cleans the staging, and a rerun elsewhere succeeds", function()
    -- task.data.root.dir and data.publisher.final.dir (one file system: publishing renames) come from the
    -- environment, so that the rerun can use the defaults.
    local c = big_records("enospc", 80, '  ["task.data.root.dir"] = os.getenv("FAULTS_TASK_DATA"),\n' ..
      '  ["data.publisher.final.dir"] = os.getenv("FAULTS_FINAL_DIR"),')
    local code, _, err = run(c, { FAULTS_TASK_DATA = mnt, FAULTS_FINAL_DIR = mnt .. "/published" })
    assert.are.equal(1, code, err)
    local last = H.last_line(err)
    assert.truthy(last:find("^kingest: task task_" .. c.name .. "_%d+_0 failed: cannot write output file "), last)
    assert.truthy(last:find(mnt .. "/" .. c.name .. "/job_" .. c.name .. "_", 1, true), last)
    assert.truthy(last:find(": No space left on device$"), last)
    assert_no_trace(c)
    assert.same({}, H.files(mnt)) -- the staging on the full disk is cleaned too, and nothing is published
    assert_rerun_pulls_everything_once(c)
  end)

  it("refuses, before pulling anything, task data and a final folder on different file systems", function()
    local c = big_records("xdev", 4, '  ["task.data.root.dir"] = os.getenv("FAULTS_TASK_DATA"),')
    local code, _, err = run(c, { FAULTS_TASK_DATA = mnt })
    assert.are.equal(1, code, err)
    local last = H.last_line(err)
    assert.truthy(last:find("task.data.root.dir", 1, true) and last:find("data.publisher.final.dir", 1, true)
      and last:find("different file systems", 1, true), last)
    assert.falsy(err:find("Pulling", 1, true))
    assert_no_trace(c)
    assert_rerun_pulls_everything_once(c)
  end)
end)
