-- The commit's failure paths (docs/behaviour.md, section 8), each forced by the engine's test hook
-- KINGEST_FAULT (docs/testing.md): a move of the publish step that fails (the first, a middle one and the last of
-- three), a folder sync after a move that fails, and the commit journal's state writes (record, apply, drop)
-- meeting a busy database (a real SQLITE_BUSY: a second connection holds the write lock) or a full disk. Each
-- run ends with a clear error and status 1, leaves the published files and the stored offsets in agreement
-- (checked with the files and sqlite3), and the next run, without the fault, rolls forward or starts again so
-- that every record is published exactly once.
local H = require("support.harness")

local JOB = "CommitFaults"

-- A job of one task over a one-partition topic, whose output rolls every 4 records (three files for the twelve
-- records of the faulty run), published one file at a time (parallel.runner.threads=1) so that "the second
-- move" is one file. A first run publishes 3 records; then 12 more are produced.
local function scenario(label)
  local c = { topic = H.unique("cfault_" .. label), work = H.workdir("cfault_" .. label) }
  H.create_topic(c.topic, 1)
  c.first = H.records(c.topic, 0, 0, 2)
  H.produce(c.topic, c.first, 0)
  c.file = H.job({ dir = c.work, name = JOB, topics = c.topic, props = {
    ["writer.file.max.records"] = 4,
    ["parallel.runner.threads"] = 1,
    ["mr.job.max.mappers"] = 1,
  } })
  c.output = c.work .. "/job-output/" .. c.topic
  c.db = c.work .. "/state-store/" .. JOB .. ".db"
  H.run_ok(c.file, c.work)
  c.all = H.concat(c.first, H.records(c.topic, 0, 3, 14))
  H.produce(c.topic, H.records(c.topic, 0, 3, 14), 0)
  c.published = H.snapshot(c.output)
  assert.are.equal(1, #H.files(c.output))
  return c
end

local function journal(c)
  local rows = H.sqlite(c.db, "SELECT (SELECT count(*) FROM pending_moves), (SELECT count(*) FROM pending_partitions)")
  return { tonumber(rows[1][1]), tonumber(rows[1][2]) }
end

-- The failed run left no trace: the files published before, the offset stored before, no journal, no task data.
local function assert_no_trace(c)
  assert.same(c.published, H.snapshot(c.output))
  assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, JOB))
  assert.same({ 0, 0 }, journal(c))
  assert.same({}, H.files(c.work .. "/task-data"))
end

-- The next run, without the fault: every record once, the offset at the end; EXTRACTED records pulled by it
-- (12 when it starts again, 0 when it finished the commit of the failed run); then nothing left.
local function assert_rerun(c, extracted)
  local err = H.run_ok(c.file, c.work)
  assert.truthy(err:find("Extracted " .. extracted .. " data records", 1, true), err)
  assert.same(c.all, H.whole_lines(c.output))
  assert.are.equal(4, #H.files(c.output))
  assert.same({ [c.topic .. ":0"] = 15 }, H.stored_offsets(c.work, JOB))
  assert.same({ 0, 0 }, journal(c))
  assert.same({}, H.files(c.work .. "/task-data"))
  return err
end

local function fails(c, fault, names)
  local last, err = H.run_fails(c.file, c.work, 1, names, { KINGEST_FAULT = fault })
  for item in fault:gmatch("[^,]+") do
    if not item:find(":", 1, true) then item = item .. ":1" end
    assert.truthy(err:find("KINGEST_FAULT=" .. item .. ": failing here", 1, true), item .. " did not fire:\n" .. err)
  end
  return last, err
end

describe("a move of the publish step that fails", function()
  for _, case in ipairs({ { 1, "first" }, { 2, "second" }, { 3, "last" } }) do
    local n, which = case[1], case[2]
    it("(the " .. which .. " of three) takes back the moves made, drops the journal, and the next run publishes everything once", function()
      local c = scenario("move" .. n)
      local last, err = fails(c, "publish.move:" .. n, { "cannot move", c.work .. "/task-data/", c.output .. "/part.task_", "Input/output error" })
      if n > 1 then
        assert.truthy(err:find("Took back the " .. (n - 1) .. " files the failed commit of job_" .. JOB, 1, true), err)
      else
        assert.falsy(err:find("Took back", 1, true), err)
      end
      assert_no_trace(c)
      assert_rerun(c, 12)
    end)
  end
end)

describe("a folder sync after a publish move that fails", function()
  -- Each move syncs its destination folder, then its source folder: sync 1 is the first move's destination,
  -- 4 the second move's source, 6 the last move's source.
  for _, case in ipairs({ { 1, "destination", 1 }, { 4, "source", 2 }, { 6, "source", 3 } }) do
    local n, side, move = case[1], case[2], case[3]
    it("(sync " .. n .. ": move " .. move .. "'s " .. side .. " folder) fails the commit, takes back every move made, that one included", function()
      local c = scenario("dirsync" .. n)
      local folder = side == "destination" and c.output or (c.work .. "/task-data/" .. JOB .. "/job_" .. JOB)
      fails(c, "publish.dirsync:" .. n, { "cannot sync folder " .. folder, "Input/output error" })
      assert_no_trace(c)
      assert_rerun(c, 12)
    end)
  end
end)

describe("a state write of the commit journal that fails", function()
  for _, kind in ipairs({ "busy", "full" }) do
    local reason = kind == "busy" and "database is locked" or "database or disk is full"

    it("(recording the commit, " .. kind .. ") publishes nothing and moves no offset", function()
      local c = scenario("journal_" .. kind)
      fails(c, "state.journal." .. kind, { "state store " .. c.db, reason })
      assert_no_trace(c)
      assert_rerun(c, 12)
    end)

    it("(applying the offsets, " .. kind .. ") keeps the journal and the task data; the next run finishes the commit", function()
      local c = scenario("finish_" .. kind)
      local _, err = fails(c, "state.finish." .. kind, { "state store " .. c.db, reason })
      assert.truthy(err:find("Keeping the task data in", 1, true), err)
      -- The files are published, the offset is not applied yet: the journal says what remains to do.
      assert.same(c.all, H.whole_lines(c.output))
      assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, JOB))
      assert.same({ 3, 1 }, journal(c))
      local rerun = assert_rerun(c, 0)
      assert.truthy(rerun:find("Finishing the interrupted commit of job_" .. JOB .. "_%d+ %(3 files%)"), rerun)
    end)

    it("(dropping the journal after a failed move, " .. kind .. ") keeps the journal; the next run publishes the files taken back, once", function()
      local c = scenario("abort_" .. kind)
      local _, err = fails(c, "publish.move:2,state.abort." .. kind, { "cannot move" })
      assert.truthy(err:find("Took back the 1 files", 1, true), err)
      assert.truthy(err:find("ERROR state store " .. c.db .. ": " .. reason, 1, true), err)
      assert.truthy(err:find("Keeping the task data in", 1, true), err)
      assert.same(c.published, H.snapshot(c.output))
      assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, JOB))
      assert.same({ 3, 1 }, journal(c))
      local rerun = assert_rerun(c, 0)
      assert.truthy(rerun:find("Finishing the interrupted commit of job_" .. JOB .. "_%d+ %(3 files%)"), rerun)
    end)
  end
end)

describe("finishing an interrupted commit", function()
  -- A commit left journaled with its three files in task output (a move failed and the journal could not be
  -- dropped), then the next run's recovery meets a fault of its own.
  local function interrupted(label)
    local c = scenario(label)
    fails(c, "publish.move:2,state.abort.full", { "cannot move" })
    assert.same({ 3, 1 }, journal(c))
    return c
  end

  it("when a move fails (the second of three), fails the run and keeps the journal; the run after finishes it, every record once", function()
    local c = interrupted("recover_move")
    local _, err = fails(c, "recover.move:2", { "cannot move", c.output .. "/part.task_", "Input/output error" })
    assert.truthy(err:find("Finishing the interrupted commit of job_" .. JOB .. "_%d+ %(3 files%)"), err)
    assert.falsy(err:find("Pulling", 1, true), err)
    -- One file published, the offsets not applied, the journal kept.
    assert.are.equal(2, #H.files(c.output))
    assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, JOB))
    assert.same({ 3, 1 }, journal(c))
    assert_rerun(c, 0)
  end)

  it("when a folder sync fails, fails the run and keeps the journal; the run after finishes it, every record once", function()
    local c = interrupted("recover_dirsync")
    fails(c, "recover.dirsync:3", { "cannot sync folder " .. c.output, "Input/output error" })
    assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, JOB))
    assert.same({ 3, 1 }, journal(c))
    assert_rerun(c, 0)
  end)

  for _, kind in ipairs({ "busy", "full" }) do
    local reason = kind == "busy" and "database is locked" or "database or disk is full"
    it("when applying the offsets fails (" .. kind .. "), fails the run with the files published and the journal kept; the run after finishes it", function()
      local c = interrupted("recover_finish_" .. kind)
      fails(c, "state.finish." .. kind, { "state store " .. c.db, reason })
      assert.same(c.all, H.whole_lines(c.output))
      assert.same({ [c.topic .. ":0"] = 3 }, H.stored_offsets(c.work, JOB))
      assert.same({ 3, 1 }, journal(c))
      assert_rerun(c, 0)
    end)
  end
end)

