-- job.commit.policy (docs/behaviour.md, section 8), against the real broker: with one task failing, `full`
-- publishes nothing and moves no offset, `successful` commits the task that succeeded. Records are checked
-- against kcat, the stored offsets and the run history with sqlite3.
local H = require("support.harness")

local JOB = "CommitPolicySpec"

-- Writes DIR/job.lua for JOB pulling TOPICS (a list) from earliest into job-output/<topic>, with PROPS added
-- and EXTRA (Lua source of more fields of the job table) at the end; returns its path.
local job_file = H.job_writer(JOB)

local run_ok = H.run_ok

local output = H.published

local assert_exactly_once = H.assert_exactly_once

describe("job.commit.policy", function()
  -- Two topics of two partitions, 11 records each; decodeRecord fails at offset 2 of the BAD topic.
  local good, bad

  setup(function()
    good, bad = H.unique("good"), H.unique("bad")
    for _, topic in ipairs({ good, bad }) do H.create_topic(topic, 2) end
    H.produce(good, { "g0 1", "g0 2", "g0 3", "g0 4", "g0 5" }, 0)
    H.produce(good, { "g1 1", "g1 2", "g1 3", "g1 4", "g1 5", "g1 6" }, 1)
    H.produce(bad, { "b0 1", "b0 2", "b0 3", "b0 4" }, 0)
    H.produce(bad, { "b1 1", "b1 2", "b1 3", "b1 4", "b1 5", "b1 6", "b1 7" }, 1)
  end)

  -- BI_LEVEL into 2 tasks with a pre-grouping factor of 1: each topic (half the total) is one first-level
  -- group, so each task holds one topic.
  local function failing_job(dir, policy)
    return job_file(dir, { good, bad }, {
      ["mr.job.max.mappers"] = 2,
      ["kafka.workunit.packer.type"] = "BI_LEVEL",
      ["workunit.pre.grouping.size.factor"] = 1,
      ["decode.error.policy"] = "fail",
      ["job.commit.policy"] = policy,
    }, table.concat({
      "  decodeRecord = function(msg)",
      string.format("    if msg:topic() == %q and msg.offset == 2 then error('cannot decode ' .. msg:value()) end", bad),
      "    return msg",
      "  end,",
    }, "\n"))
  end

  local function assert_one_topic_per_task(plan)
    assert.are.equal(2, #plan.tasks)
    for _, task in ipairs(plan.tasks) do
      assert.are.equal(2, #task.workUnits)
      assert.are.equal(task.workUnits[1].topic, task.workUnits[2].topic)
    end
  end

  local function last_result(work)
    local rows = H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT result FROM runs ORDER BY started_ms DESC LIMIT 1")
    return rows[1] and rows[1][1]
  end

  it("successful publishes and commits the task that succeeded, not the one that failed, and exits 1", function()
    local work = H.workdir("commit_successful")
    local job = failing_job(work, "successful")
    assert_one_topic_per_task(H.plan_json(job, work))
    local code, _, err = H.run(job, work)
    assert.are.equal(1, code, err)
    assert.truthy(err:find("1 of 2 tasks failed; job.commit.policy=successful: committing the 1 tasks that succeeded",
      1, true), err)
    local last = H.last_line(err)
    assert.truthy(last:find("^kingest: task task_" .. JOB .. "_%d+_%d failed: decodeRecord failed for " .. bad ..
      ":%d at offset 2 %(decode.error.policy=fail%)"), last)
    assert.same({ good }, H.dirs(work .. "/job-output"))
    assert.same(H.sorted(H.kcat_payloads(good)), H.sorted(output(work, good)))
    assert.same({ [good .. ":0"] = 5, [good .. ":1"] = 6 }, H.stored_offsets(work, JOB))
    assert.same({}, H.files(work .. "/task-data"))
    assert.are.equal("FAILED", last_result(work))

    -- With the script fixed, the next run pulls the failed topic from the start, and nothing of the other again.
    local log = run_ok(job_file(work .. "/fixed", { good, bad }, { ["mr.job.max.mappers"] = 2 }), work)
    assert.truthy(log:find("Pulling partition " .. good .. ":1 from offset 6 to 6, range=0", 1, true), log)
    assert.truthy(log:find("Pulling partition " .. bad .. ":1 from offset 0 to 7, range=7", 1, true), log)
    assert_exactly_once(work, { good, bad })
    assert.same({ [good .. ":0"] = 5, [good .. ":1"] = 6, [bad .. ":0"] = 4, [bad .. ":1"] = 7 },
      H.stored_offsets(work, JOB))
  end)

  it("full publishes nothing and moves no offset when one task fails, and exits 1", function()
    local work = H.workdir("commit_full")
    local job = failing_job(work, "full")
    assert_one_topic_per_task(H.plan_json(job, work))
    local code, _, err = H.run(job, work)
    assert.are.equal(1, code, err)
    -- The other task did succeed: the policy is what keeps its output back.
    assert.are.equal(1, #H.grep(err, "with state SUCCESSFUL"), err)
    assert.truthy(err:find("1 of 2 tasks failed; job.commit.policy=full: nothing is published and no offset moves",
      1, true), err)
    assert.truthy(H.last_line(err):find("decodeRecord failed for " .. bad, 1, true), err)
    assert.same({}, H.files(work .. "/job-output"))
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({}, H.files(work .. "/task-data"))
    assert.are.equal("FAILED", last_result(work))
    -- Nothing published, nothing written: the task that succeeded wrote files that were removed.
    assert.same({ { "0", "0" } }, H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT records, bytes FROM runs"))
  end)
end)
