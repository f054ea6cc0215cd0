-- Simulated power loss (engine/fs_crashsim.c, docs/testing.md): a run is cut at every one of its file system
-- operations in turn (KINGEST_POWERCUT=<n>): what was not synced is lost (files cut back to their synced bytes
-- and a torn part of the rest, entries of folders not synced since they changed undone), the process ends at
-- once, and the next run, without the cut, recovers. After each: the published output holds every produced
-- record exactly once, with no partial file and no torn line, the stored offsets (sqlite3) are the partitions'
-- ends, no commit is left journaled and no task data is left. The cut points include those around the commit
-- journal's state writes. What each cut undid, as the simulator tells it, is checked against the disk, and some
-- cuts must have lost written bytes and entries that were not synced yet: a cut that loses nothing tests nothing.
-- (The simulator's own test is engine/tests/test_crashsim.c.)
local H = require("support.harness")

local JOB = "PowerLoss"
local CUT_STATUS = 99

-- Two scenarios: the job's first run (every folder made by the run, the state store too), and a later run (3
-- records per partition published and stored before, 7 more to pull).
for _, scenario in ipairs({ { label = "first", before = 0 }, { label = "later", before = 3 } }) do
  describe("a power loss at every file system operation of a run (" .. scenario.label .. " run)", function()
    local topic, template, all, log_lines

    setup(function()
      topic = H.unique("powerloss_" .. scenario.label)
      H.create_topic(topic, 2)
      all = {}
      for p = 0, 1 do all = H.concat(all, H.records(topic, p, 0, 9)) end
      all = H.sorted(all)
      -- One task, files rolled every 4 records, published one at a time: the same operations in the same order in
      -- every run.
      template = H.workdir("powerloss_template")
      H.job({ dir = template, name = JOB, topics = topic, props = {
        ["writer.file.max.records"] = 4,
        ["parallel.runner.threads"] = 1,
        ["mr.job.max.mappers"] = 1,
      } })
      if scenario.before > 0 then
        for p = 0, 1 do H.produce(topic, H.records(topic, p, 0, scenario.before - 1), p) end
        H.run_ok(template .. "/job.lua", template)
      end
      for p = 0, 1 do H.produce(topic, H.records(topic, p, scenario.before, 9), p) end
    end)

    -- A fresh copy of the template (the job, nothing run yet).
    local function fresh(label)
      local dir = H.tmp .. "/" .. H.unique("powerloss_" .. label)
      assert.are.equal(0, (H.sh("rm -rf " .. H.q(dir) .. " && cp -a " .. H.q(template) .. " " .. H.q(dir))))
      return dir
    end

    local function run(dir, env)
      return H.run(dir .. "/job.lua", dir, env)
    end

    -- What is wrong with DIR's published output and state, as a list of sentences (empty when nothing is), and
    -- the numbers of records lost and doubled. A torn line (bytes after a file's last newline) is wrong wherever it
    -- is: the files that a power loss tore are the next run's to remove or write again.
    local function check(dir)
      local problems = {}
      local seen = {}
      local lines, torn = H.record_lines(dir .. "/job-output/" .. topic)
      for _, line in ipairs(lines) do seen[line] = (seen[line] or 0) + 1 end
      for _, t in ipairs(torn) do problems[#problems + 1] = t end
      local lost, doubled, wanted = 0, 0, {}
      for _, r in ipairs(all) do
        wanted[r] = true
        local n = seen[r] or 0
        if n == 0 then lost = lost + 1 end
        if n > 1 then doubled = doubled + n - 1 end
      end
      for line in pairs(seen) do
        if not wanted[line] then problems[#problems + 1] = "a line no record has (a partial file?): " .. line end
      end
      if lost > 0 then problems[#problems + 1] = lost .. " records lost" end
      if doubled > 0 then problems[#problems + 1] = doubled .. " records doubled" end
      local offsets = H.stored_offsets(dir, JOB)
      if offsets[topic .. ":0"] ~= 10 or offsets[topic .. ":1"] ~= 10 then
        problems[#problems + 1] = "stored offsets " .. tostring(offsets[topic .. ":0"]) .. ", " .. tostring(offsets[topic .. ":1"])
      end
      local rows = H.sqlite(dir .. "/state-store/" .. JOB .. ".db",
        "SELECT (SELECT count(*) FROM pending_moves) + (SELECT count(*) FROM pending_partitions)")
      if rows[1][1] ~= "0" then problems[#problems + 1] = "a commit is still journaled" end
      local left = H.files(dir .. "/task-data")
      if #left > 0 then problems[#problems + 1] = "task data left: " .. table.concat(left, ", ") end
      return problems, lost, doubled
    end

    -- What the cut told on stderr it undid (fs_crashsim.c): { bytes = unsynced bytes lost, entries = entries
    -- dropped, back = entries brought back }, and the sentences where the disk does not agree with it (a dropped
    -- entry still there, a file cut to another length than it says).
    local function undone(err)
      local function present(path) -- no shell per entry: a cut drops hundreds
        local f = io.open(path, "rb")
        if f then f:close() end
        return f ~= nil
      end
      local u, wrong = { bytes = 0, entries = 0, back = 0 }, {}
      for n, path, kept in err:gmatch("KINGEST_POWERCUT: lost (%d+) of the %d+ bytes of (.-) %(kept (%d+)%)\n") do
        u.bytes = u.bytes + tonumber(n)
        local f = io.open(path, "rb")
        local size = f and f:seek("end")
        if f then f:close() end
        if size and size ~= tonumber(kept) then
          wrong[#wrong + 1] = path .. " was cut to " .. kept .. " bytes, it holds " .. size
        end
      end
      for path in err:gmatch("KINGEST_POWERCUT: dropped (.-)\n") do
        u.entries = u.entries + 1
        if present(path) then wrong[#wrong + 1] = path .. " was dropped, it is there" end
      end
      for path in err:gmatch("KINGEST_POWERCUT: brought back (.-)\n") do
        u.back = u.back + 1
        if not present(path) then wrong[#wrong + 1] = path .. " was brought back, it is not there" end
      end
      return u, wrong
    end

    it("loses and doubles no record, for every cut point", function()
      -- A run without a cut counts the operations.
      local dir = fresh("count")
      local log = dir .. "/ops.log"
      local code, _, err = run(dir, { KINGEST_POWERCUT = "0", KINGEST_POWERCUT_LOG = log })
      assert.are.equal(0, code, err)
      assert.same({}, (check(dir)))
      log_lines = H.lines(H.slurp(log) or "")
      local n = #log_lines
      assert.is_true(n >= 50, "only " .. n .. " operations:\n" .. table.concat(log_lines, "\n"))
      local text = table.concat(log_lines, "\n")
      for _, point in ipairs({ "state.journal.before", "state.journal.after", "state.finish.before",
                               "state.finish.after", "rename", "dirsync", "fsync", "mkdir", "create", "write" }) do
        assert.truthy(text:find(" " .. point .. " ", 1, true), point .. " is not among the operations:\n" .. text)
      end
      os.execute("rm -rf " .. H.q(dir))

      local failures, cuts, lost, doubled = {}, 0, 0, 0
      -- The cuts that undid something not synced: lost bytes, dropped entries; and all they undid.
      local lossy, bytes_cuts, entries_cuts, total = 0, 0, 0, { bytes = 0, entries = 0, back = 0 }
      for cut = 1, n + 1 do
        dir = fresh("cut" .. cut)
        code, _, err = run(dir, { KINGEST_POWERCUT = tostring(cut) })
        local what = log_lines[cut] or "(none: the run ends first)"
        if cut <= n then
          cuts = cuts + 1
          if code ~= CUT_STATUS or not err:find("KINGEST_POWERCUT=" .. cut .. ": power lost before", 1, true) then
            failures[#failures + 1] = "cut " .. cut .. " (" .. what .. "): status " .. tostring(code) .. "\n" .. err
          end
        elseif code ~= 0 then
          failures[#failures + 1] = "a run past its last operation failed:\n" .. err
        end
        if err:find("KINGEST_POWERCUT: cannot", 1, true) then
          failures[#failures + 1] = "cut " .. cut .. ": the simulation failed:\n" .. err
        end
        local u, wrong = undone(err)
        for _, w in ipairs(wrong) do failures[#failures + 1] = "cut " .. cut .. " (" .. what .. "): " .. w end
        if u.bytes > 0 or u.entries > 0 then lossy = lossy + 1 end
        if u.bytes > 0 then bytes_cuts = bytes_cuts + 1 end
        if u.entries > 0 then entries_cuts = entries_cuts + 1 end
        for k, v in pairs(u) do total[k] = total[k] + v end
        local code2, _, err2 = run(dir)
        if code2 ~= 0 then
          failures[#failures + 1] = "cut " .. cut .. " (" .. what .. "): the next run failed:\n" .. err2
        end
        local problems, l, d = check(dir)
        lost, doubled = lost + l, doubled + d
        if #problems > 0 then
          failures[#failures + 1] = "cut " .. cut .. " (" .. what .. "): " .. table.concat(problems, "; ") .. "\n" .. err2
        end
        if #failures == 0 then os.execute("rm -rf " .. H.q(dir)) end
      end
      io.stderr:write(string.format("powerloss_spec (%s run): %d cut points of %d operations, %d of them lost what was "
        .. "not synced (%d bytes in %d cuts, %d entries in %d cuts; %d entries brought back); after recovery %d "
        .. "records lost, %d doubled\n", scenario.label, cuts, n, lossy, total.bytes, bytes_cuts, total.entries,
        entries_cuts, total.back, lost, doubled))
      assert.are.equal(n, cuts)
      assert.are.equal(0, lost, table.concat(failures, "\n"))
      assert.are.equal(0, doubled, table.concat(failures, "\n"))
      assert.same({}, failures)
      -- The cuts did lose what was not synced (written bytes and folder entries), and the runs after them made
      -- it good: else the checks above would hold of a simulator that loses nothing.
      assert.is_true(bytes_cuts > 0, "no cut lost a written byte that was not synced")
      assert.is_true(entries_cuts > 0, "no cut dropped a folder entry that was not synced")
    end)
  end)
end
