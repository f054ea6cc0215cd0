-- Exactly once, whatever happens to the process: with the real broker holding known records (3 topics of 4
-- partitions, payloads "<topic>-<partition>-<seq>"), kingest is killed with SIGKILL at each of the engine's
-- crash points (KINGEST_CRASH_AT: while fetching, while writing, while moving task output, after the commit is
-- journaled, between two published files, before the offsets are stored, while an interrupted commit is
-- finished) and at random times, then run again until a run succeeds. More records are produced before every
-- kill, and mr.job.max.mappers (2-4) and kafka.fetch.batch.size change from run to run. The harness is
-- spec/support/crash.lua; scripts/soak runs it for as many kills as wanted.
local H = require("support.harness")
local Crash = require("support.crash")

-- KINGEST_CRASH_KILLS raises (or lowers) the number of kills; KINGEST_CRASH_VERBOSE prints the progress.
local KILLS = tonumber(os.getenv("KINGEST_CRASH_KILLS") or "") or 54
local SEED = tonumber(os.getenv("KINGEST_CRASH_SEED") or "")

describe("kingest killed with SIGKILL at every crash point and at random times", function()
  local report, campaign

  setup(function()
    report, campaign = Crash.campaign({
      kills = KILLS,
      min_per_point = 3,
      seed = SEED,
      progress = os.getenv("KINGEST_CRASH_VERBOSE") and print or nil,
    })
    io.stderr:write("crash_spec: " .. Crash.summary(report) .. string.format(", %.1f s\n", report.seconds))
  end)

  -- Asserts that the campaign noted no violation of any of KINDS.
  local function none_of(...) Crash.assert_none_of(report, ...) end

  it("survives at least 50 kills, at least 3 at each crash point and 3 at random times", function()
    assert.is_true(report.kills >= 50, Crash.summary(report))
    for _, point in ipairs(Crash.POINTS) do
      assert.is_true((report.by_point[point] or 0) >= 3, point .. ": " .. Crash.summary(report))
    end
    assert.is_true((report.by_point.random or 0) >= 3, Crash.summary(report))
    -- Kills at publish come between two moves of a commit of several files.
    assert.is_true(report.between_moves >= 3, report.between_moves .. " of " .. report.by_point.publish)
  end)

  it("succeeds on the first rerun without a crash after every kill", function()
    assert.are.equal(0, report.failed_reruns, table.concat(report.violations, "\n"))
    none_of("run")
  end)

  it("loses no record: every produced record is in the final dir", function()
    assert.is_true(report.produced > 1000, Crash.summary(report))
    assert.are.equal(0, report.lost, Crash.summary(report))
    none_of("lost")
  end)

  it("doubles no record, neither after a kill nor after a successful run", function()
    assert.are.equal(0, report.doubled, Crash.summary(report))
    none_of("doubled")
  end)

  it("publishes whole files only, holding records of their own topic, and never takes one back", function()
    assert.is_true(report.files >= report.kills, Crash.summary(report)) -- several files per commit
    none_of("partial", "unknown", "unreadable", "vanished")
  end)

  it("leaves no task data and no unfinished commit after a successful run", function()
    assert.same({}, H.files(campaign.task_data))
    local rows = H.sqlite(campaign.db, "SELECT count(*) FROM pending_moves UNION ALL SELECT count(*) FROM pending_partitions")
    assert.same({ { "0" }, { "0" } }, rows)
    none_of("task-data", "pending")
  end)

  it("stores exactly the broker's latest offsets", function()
    local latest, partitions = {}, 0
    for tp, o in pairs(H.offsets(unpack(report.topics))) do
      latest[tp] = o.latest
      partitions = partitions + 1
    end
    assert.are.equal(3 * 4, partitions)
    assert.same(latest, H.offsets_in_db(campaign.db))
    none_of("offsets", "broker")
  end)
end)
