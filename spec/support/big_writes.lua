-- For the tests of writes that fail (a file-size limit, a full disk, a second file system): a job that already
-- ran once (3 small records published, offset 3 stored), then N records of 20 KB each; and the checks that a
-- failed run left no trace and that a rerun pulls every record once.
local H = require("support.harness")
local assert = require("luassert") -- busted's assert lives in the spec's environment, not here

local M = {}

-- Makes topic <PREFIX>_<unique> with the 3 small records, has NEW_JOB(topic) make the job C (name, topic, work,
-- file, output), runs it once, then produces N big records. C gains small, all, n and published.
function M.big_records(prefix, n, new_job)
  local topic = H.unique(prefix)
  H.create_topic(topic, 1)
  local small = H.records(topic, 0, 0, 2)
  H.produce(topic, small, 0)
  local c = new_job(topic)
  local code, _, err = H.run(c.file, c.work)
  assert.are.equal(0, code, err)
  local big = {}
  for i = 3, n + 2 do big[#big + 1] = string.format("%s-0-%d:%s", topic, i, string.rep("x", 20000)) end
  H.produce(topic, big, 0)
  c.small, c.all, c.n = small, H.concat(small, big), n
  c.published = H.snapshot(c.work .. "/job-output")
  return c
end

-- The failed run left no trace: same published files, same stored offset, no task data.
function M.assert_no_trace(c)
  assert.same(c.published, H.snapshot(c.work .. "/job-output"))
  assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, c.name))
  assert.same({}, H.files(c.work .. "/task-data"))
end

-- A rerun (with ENV) pulls the big records once and leaves no task data.
function M.assert_rerun_pulls_everything_once(c, env)
  local code, _, err = H.run(c.file, c.work, env)
  assert.are.equal(0, code, err)
  assert.truthy(err:find("Extracted " .. c.n .. " data records", 1, true), err)
  assert.same(c.all, H.output_lines(c.output))
  assert.same({ [c.topic .. ":0"] = c.n + 3 }, H.stored_offsets(c.work, c.name))
  assert.same({}, H.files(c.work .. "/task-data"))
end

return M
