-- Exactly once on HDFS, whatever happens to the process: the crash harness (spec/support/crash.lua) with the
-- job's task data and final dir on the HDFS of scripts/hadoop (writer.fs.uri=webhdfs://...), kingest killed with
-- SIGKILL at each of the engine's crash points and at random times, then run again until a run succeeds. The
-- final dir and the task data are read through WebHDFS with curl (LISTSTATUS, OPEN), never with kingest, and
-- at the end once more with Hadoop's FsShell. A smaller campaign than crash_spec's: every run on HDFS makes a
-- few WebHDFS requests per file. Twice: with the task data on HDFS (a commit renames), and with the task data on
-- the local disk and the final dir on HDFS (data.publisher.fs.uri: a commit uploads, then renames).
local H = require("support.harness")
local Crash = require("support.crash")
local W = require("support.webhdfs")

-- KINGEST_HDFS_CRASH_KILLS raises (or lowers) the number of kills; KINGEST_CRASH_VERBOSE prints the progress.
local KILLS = tonumber(os.getenv("KINGEST_HDFS_CRASH_KILLS") or "") or 20
local SEED = tonumber(os.getenv("KINGEST_CRASH_SEED") or "")

local function campaign_on(title, staging, name)
  describe(title, function()
    local report, campaign

    setup(function()
      report, campaign = Crash.campaign({
        hdfs = W.uri(),
        staging = staging,
        name = name,
        kills = KILLS,
        min_per_point = 2,
        topics = 3,
        partitions = 3,
        initial = 30,
        per_round = 20,
        max_delay_ms = 2500, -- a run on HDFS takes longer than on a local disk
        seed = SEED,
        progress = os.getenv("KINGEST_CRASH_VERBOSE") and print or nil,
      })
      io.stderr:write("hdfs_crash_spec (" .. staging .. " task data): " .. Crash.summary(report) .. string.format(", %.1f s\n", report.seconds))
    end)

    local function none_of(...) Crash.assert_none_of(report, ...) end

    it("survives the kills, at least 2 at each crash point and 2 at random times", function()
      assert.is_true(report.kills >= math.min(KILLS, 20), Crash.summary(report))
      for _, point in ipairs(Crash.POINTS) do
        assert.is_true((report.by_point[point] or 0) >= 2, point .. ": " .. Crash.summary(report))
      end
      assert.is_true((report.by_point.random or 0) >= 2, Crash.summary(report))
      -- Some kills at publish came between two renames of a commit of several files.
      assert.is_true(report.between_moves >= 1, report.between_moves .. " of " .. report.by_point.publish)
    end)

    it("succeeds on the first rerun without a crash after every kill", function()
      assert.are.equal(0, report.failed_reruns, table.concat(report.violations, "\n"))
      none_of("run")
    end)

    it("loses no record and doubles none in the final dir on HDFS", function()
      assert.is_true(report.produced > 300, Crash.summary(report))
      assert.are.equal(0, report.lost, Crash.summary(report))
      assert.are.equal(0, report.doubled, Crash.summary(report))
      none_of("lost", "doubled")
    end)

    it("publishes whole files only, holding records of their own topic, and never takes one back", function()
      none_of("partial", "unknown", "unreadable", "vanished")
    end)

    it("leaves no task data, no upload in the final dir and no unfinished commit after a successful run", function()
      assert.same({}, campaign:files_under(campaign.task_data))
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

    it("holds every produced record exactly once as Hadoop's FsShell reads the final dir", function()
      local lines = W.fs_lines(campaign.final)
      local seen, doubled = {}, 0
      for _, l in ipairs(lines) do
        if seen[l] then doubled = doubled + 1 end
        seen[l] = true
      end
      local lost = 0
      for payload in pairs(campaign.produced) do
        if not seen[payload] then lost = lost + 1 end
      end
      assert.are.equal(report.produced, #lines)
      assert.are.equal(0, lost)
      assert.are.equal(0, doubled)
    end)
  end)
end

campaign_on("kingest on HDFS killed with SIGKILL at every crash point and at random times", "hdfs", "hcrash")
campaign_on("kingest publishing from local task data to HDFS killed with SIGKILL at every crash point and at random times",
  "local", "hupcrash")
