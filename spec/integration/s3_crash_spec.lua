-- Exactly once on S3, whatever happens to the process: the crash harness (spec/support/crash.lua) with the task
-- data on the local disk and the final dir in a bucket of the S3 server of scripts/s3 (data.publisher.fs.uri=s3a://),
-- kingest killed with SIGKILL at each of the engine's crash points and at random times, then run again until a run
-- succeeds. The bucket is read with boto3, never with kingest: every record once, no upload left unfinished.
local H = require("support.harness")
local Crash = require("support.crash")
local S = require("support.s3")

-- KINGEST_S3_CRASH_KILLS raises (or lowers) the number of kills; KINGEST_CRASH_VERBOSE prints the progress.
local KILLS = tonumber(os.getenv("KINGEST_S3_CRASH_KILLS") or "") or 16
local SEED = tonumber(os.getenv("KINGEST_CRASH_SEED") or "")

describe("kingest publishing to S3 killed with SIGKILL at every crash point and at random times", function()
  local report, campaign

  setup(function()
    report, campaign = Crash.campaign({
      s3 = S,
      s3_props = { ["parallel.runner.threads"] = "3" },
      name = "s3crash",
      kills = KILLS,
      min_per_point = 2,
      topics = 3,
      partitions = 3,
      initial = 30,
      per_round = 20,
      max_delay_ms = 1500,
      seed = SEED,
      progress = os.getenv("KINGEST_CRASH_VERBOSE") and print or nil,
    })
    io.stderr:write("s3_crash_spec: " .. Crash.summary(report) .. string.format(", %.1f s\n", report.seconds))
  end)

  local function none_of(...) Crash.assert_none_of(report, ...) end

  it("survives the kills, at least 2 at each crash point and 2 at random times", function()
    assert.is_true(report.kills >= math.min(KILLS, 16), Crash.summary(report))
    for _, point in ipairs(Crash.POINTS) do
      assert.is_true((report.by_point[point] or 0) >= 2, point .. ": " .. Crash.summary(report))
    end
    assert.is_true((report.by_point.random or 0) >= 2, Crash.summary(report))
  end)

  it("succeeds on the first rerun without a crash after every kill", function()
    assert.are.equal(0, report.failed_reruns, table.concat(report.violations, "\n"))
    none_of("run")
  end)

  it("loses no record and doubles none in the bucket", function()
    assert.is_true(report.produced > 300, Crash.summary(report))
    assert.are.equal(0, report.lost, Crash.summary(report))
    assert.are.equal(0, report.doubled, Crash.summary(report))
    none_of("lost", "doubled")
  end)

  it("publishes whole objects only, holding records of their own topic, and never takes one back", function()
    none_of("partial", "unknown", "unreadable", "vanished")
  end)

  it("leaves no task data, no unfinished upload and no unfinished commit after a successful run", function()
    assert.same({}, campaign:files_under(campaign.task_data))
    assert.same({}, S.uploads(campaign.bucket, ""))
    local rows = H.sqlite(campaign.db, "SELECT count(*) FROM pending_moves UNION ALL SELECT count(*) FROM pending_partitions")
    assert.same({ { "0" }, { "0" } }, rows)
    none_of("task-data", "pending")
  end)

  it("stores exactly the broker's latest offsets", function()
    local latest = {}
    for tp, o in pairs(H.offsets(unpack(report.topics))) do latest[tp] = o.latest end
    assert.same(latest, H.offsets_in_db(campaign.db))
    none_of("offsets", "broker")
  end)
end)
