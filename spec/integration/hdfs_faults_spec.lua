-- Exactly once on HDFS under faults of HDFS itself, against the real broker and the HDFS of scripts/hadoop: a
-- NameNode killed (SIGKILL) while a run pulls and during a commit, safe mode, a space quota too small for the
-- output, and permission denied. A run that meets one fails with a clear error naming the path and HDFS's reason,
-- leaves the offsets where they were and publishes nothing partial; once HDFS is well again, the next run
-- publishes every record exactly once. Published files are read with curl (WebHDFS OPEN) or Hadoop's FsShell,
-- never with kingest.
local H = require("support.harness")
local W = require("support.webhdfs")

local JOB = "HdfsFaults"
local job = H.job_writer(JOB)

-- The job's properties on HDFS under ROOT (a fresh folder): task data ROOT/task-data, final dir ROOT/out; two
-- tasks, files rolled every 50 records, so that a commit moves many files.
local function hdfs_job(work, topic, root, opts)
  opts = opts or {}
  local props = {
    ["writer.fs.uri"] = opts.uri or W.uri(),
    ["task.data.root.dir"] = root .. "/task-data",
    ["data.publisher.final.dir"] = root .. "/out",
    ["mr.job.max.mappers"] = 2,
    ["writer.file.max.records"] = 50,
    -- One file at a time, so that a fault at the Nth rename leaves N files published.
    ["parallel.runner.threads"] = 1,
  }
  return job(work, topic, props, opts.code)
end

-- A topic of 2 partitions holding N records "<name> NNNN"; returns the topic and the records.
local function topic_of(name, n)
  local topic = H.unique(name)
  H.create_topic(topic, 2)
  local lines = {}
  for i = 1, n do lines[i] = string.format("%s %04d", name, i) end
  H.produce(topic, lines)
  return topic, lines
end

-- Asserts that the final dir under ROOT holds every one of LINES exactly once, and nothing else, as curl reads it
-- (WebHDFS OPEN), or Hadoop's FsShell with FSSHELL.
local function assert_exactly_once(root, lines, fsshell)
  local got = fsshell and W.fs_lines(root .. "/out") or W.lines(root .. "/out")
  assert.same(H.sorted(lines), H.sorted(got))
end

-- The files published under ROOT/out (relative paths).
local function published(root) return W.paths(root .. "/out") end

-- Runs scripts/hadoop ARGS and asserts that it succeeded.
local function hadoop(...) return W.hadoop_ok({ ... }) end

-- A free loopback port.
local function free_port()
  local _, out = H.sh([[python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])']])
  return tonumber(out:match("%d+"))
end

describe("kingest on HDFS under faults", function()
  local proxy_pid

  -- Whatever a test did, HDFS is whole again for the next: a NameNode running and out of safe mode.
  after_each(function()
    if proxy_pid then os.execute("kill " .. proxy_pid .. " 2>/dev/null") end
    proxy_pid = nil
    local code, out = W.hadoop({ "status" })
    if code ~= 0 and out:find("namenode %-") then W.hadoop_ok({ "start-namenode" }) end
    W.hadoop({ "safemode", "leave" })
  end)

  -- Starts kingest on JOB in WORK in the background and waits until it pulls; returns the handle.
  local function spawn_pulling(path, work)
    local p = H.spawn({ "run", path }, { GOBBLIN_WORK_DIR = work }, work .. "/spawned")
    assert.truthy(H.wait_until(function() return H.stderr_of(p):find("Pulling partition", 1, true) end, 30),
      "the run did not start pulling:\n" .. H.stderr_of(p))
    return p
  end

  -- Waits for spawned P to end; returns its status and its last stderr line.
  local function ended(p)
    local status = H.wait_exit(p, 120)
    assert.is_not_nil(status, "the run did not end:\n" .. H.stderr_of(p))
    return status, H.last_line(H.stderr_of(p)), H.stderr_of(p)
  end

  it("fails with a clear error when the NameNode is killed while records are written, offsets unmoved; the run "
    .. "after its restart publishes every record once", function()
    local topic, lines = topic_of("nn_pull", 400)
    local work, root = H.workdir("nn_pull"), "/kingest/" .. H.unique("nn_pull")
    -- 10 ms a record: some 4 s of pulling, with a file of 50 records uploaded every half second.
    local path = hdfs_job(work, topic, root, { code = H.slow_decode(10) })
    local p = spawn_pulling(path, work)
    H.sleep(0.5)
    hadoop("stop-namenode")
    local status, last, log = ended(p)
    if status ~= 0 then -- (it may have finished before the kill on a slow machine)
      assert.equals(1, status, log)
      assert.matches("^kingest: ", last)
      assert.truthy(last:find(root .. "/task-data/", 1, true), "the error should name the path: " .. last)
      assert.same({}, H.stored_offsets(work, JOB))
    end
    hadoop("start-namenode")
    if status ~= 0 then assert.same({}, published(root)) end
    H.run_ok(path, work)
    assert_exactly_once(root, lines, true)
    local stored = H.stored_offsets(work, JOB)
    assert.equals(400, stored[topic .. ":0"] + stored[topic .. ":1"])
  end)

  it("keeps a commit whose rename the NameNode did before it died unanswered, and the next run finishes it: every "
    .. "record once", function()
    local topic, lines = topic_of("nn_commit", 600)
    local work, root = H.workdir("nn_commit"), "/kingest/" .. H.unique("nn_commit")
    -- A proxy in front of the NameNode: at the commit's first rename into the final dir, it hands the rename on,
    -- reads the NameNode's answer, kills the NameNode with SIGKILL and drops the answer.
    local port, nn = free_port(), W.url():match(":(%d+)$")
    local log = work .. "/proxy.log"
    local cmd = string.format("python3 %s %d %s --op RENAME --match %s --nth 1 --then %s >%s 2>&1 & echo $!",
      H.q(H.root .. "/spec/support/namenode_proxy.py"), port, nn, H.q("destination=" .. root .. "/out/"),
      H.q(H.q(H.root .. "/scripts/hadoop") .. " stop-namenode"), H.q(log))
    local _, pid = H.sh(cmd)
    proxy_pid = tonumber(pid:match("%d+"))
    assert.truthy(H.wait_until(function() return (H.slurp(log) or ""):find("namenode_proxy:", 1, true) end, 10))
    local path = hdfs_job(work, topic, root, { uri = "webhdfs://127.0.0.1:" .. port })
    local last, err = H.run_fails(path, work, 1, { "cannot move", root .. "/out/", "WebHDFS" })
    assert.truthy((H.slurp(log) or ""):find("fault: the NameNode answered", 1, true), H.slurp(log))
    assert.same({}, H.stored_offsets(work, JOB), last)
    hadoop("start-namenode")
    -- The rename did happen: one file is in the final dir already, its records not yet committed.
    assert.equals(1, #published(root))
    local pending = H.sqlite(work .. "/state-store/" .. JOB .. ".db", "SELECT count(*) FROM pending_moves")[1][1]
    local again = H.run_ok(path, work)
    -- Had the failed run dropped its journal, this run would pull all records again: the published file's twice.
    assert_exactly_once(root, lines, true)
    local stored = H.stored_offsets(work, JOB)
    assert.equals(600, stored[topic .. ":0"] + stored[topic .. ":1"])
    assert.is_true(tonumber(pending) > 1, "the commit should have stayed journaled")
    assert.truthy(err:find("stays journaled", 1, true), err)
    assert.truthy(again:find("Finished the interrupted commit", 1, true), again)
    -- And no later run pulls them again.
    H.run_ok(path, work)
    assert_exactly_once(root, lines)
  end)

  it("finishes a commit whose run was killed between two renames, after the NameNode was killed and restarted",
    function()
    local topic, lines = topic_of("nn_publish", 600)
    local work, root = H.workdir("nn_publish"), "/kingest/" .. H.unique("nn_publish")
    local path = hdfs_job(work, topic, root)
    local code, _, err = H.run(path, work, { KINGEST_CRASH_AT = "publish:3" })
    assert.equals(128 + 9, code, err)
    assert.equals(3, #published(root))
    hadoop("stop-namenode")
    H.run_fails(path, work, 1, { "WebHDFS", "did not answer" })
    assert.same({}, H.stored_offsets(work, JOB))
    hadoop("start-namenode")
    local again = H.run_ok(path, work)
    assert.truthy(again:find("Finished the interrupted commit", 1, true), again)
    assert_exactly_once(root, lines, true)
  end)

  it("fails on an HDFS in safe mode, naming it, offsets unmoved; publishes everything once it left", function()
    local topic, lines = topic_of("safemode", 300)
    local work, root = H.workdir("safemode"), "/kingest/" .. H.unique("safemode")
    local path = hdfs_job(work, topic, root)
    assert.matches("Safe mode is ON", hadoop("safemode", "enter"))
    H.run_fails(path, work, 1, { "safe mode", root .. "/out" })
    assert.same({}, H.stored_offsets(work, JOB))
    hadoop("safemode", "leave")
    assert.same({}, published(root))
    H.run_ok(path, work)
    assert_exactly_once(root, lines, true)
  end)

  it("fails when HDFS enters safe mode while the run writes, offsets unmoved, nothing published", function()
    local topic, lines = topic_of("safemode_mid", 400)
    local work, root = H.workdir("safemode_mid"), "/kingest/" .. H.unique("safemode_mid")
    local path = hdfs_job(work, topic, root, { code = H.slow_decode(10) })
    local p = spawn_pulling(path, work)
    hadoop("safemode", "enter")
    local status, last, log = ended(p)
    hadoop("safemode", "leave")
    if status ~= 0 then
      assert.equals(1, status, log)
      assert.truthy(last:find("safe mode", 1, true), last)
      assert.same({}, H.stored_offsets(work, JOB))
      assert.same({}, published(root))
    end
    H.run_ok(path, work)
    assert_exactly_once(root, lines)
  end)

  it("fails on a space quota too small for the output, naming it, nothing published, offsets unmoved; succeeds "
    .. "once it is cleared", function()
    local topic, lines = topic_of("quota", 600)
    local work, root = H.workdir("quota"), "/kingest/" .. H.unique("quota")
    hadoop("fs", "-mkdir", "-p", root .. "/out")
    -- 3000 bytes: the first few files of 50 records fit, the commit's next rename does not.
    hadoop("quota", root .. "/out", "3000")
    local path = hdfs_job(work, topic, root)
    H.run_fails(path, work, 1, { "quota", root .. "/out", "DSQuotaExceededException" })
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({}, published(root)) -- the renames made before the refused one were undone
    hadoop("clearquota", root .. "/out")
    H.run_ok(path, work)
    assert_exactly_once(root, lines, true)
  end)

  it("takes back the files a commit from local task data uploaded before a quota refused the next, offsets "
    .. "unmoved; succeeds once it is cleared", function()
    local topic, lines = topic_of("upquota", 600) -- 12 files of about 650 bytes
    local work, root = H.workdir("upquota"), "/kingest/" .. H.unique("upquota")
    hadoop("fs", "-mkdir", "-p", root .. "/out")
    -- An upload counts a whole block (1 MiB) while it is written: the first few fit beside it, then one does not.
    hadoop("quota", root .. "/out", tostring(1048576 + 3000))
    local path = job(work, topic, {
      ["data.publisher.fs.uri"] = W.uri(),
      ["data.publisher.final.dir"] = root .. "/out",
      ["mr.job.max.mappers"] = 2,
      ["writer.file.max.records"] = 50,
      ["parallel.runner.threads"] = 1,
    })
    local _, log = H.run_fails(path, work, 1, { "cannot copy", root .. "/out", "DSQuotaExceededException" })
    assert.truthy(log:find("_COPYING_", 1, true), log) -- the refused upload, under its temporary name
    assert.matches("Took back the %d+ files the failed commit of job_" .. JOB, log)
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({}, W.paths(root)) -- the uploads made before the refused one were removed, and so was it
    hadoop("clearquota", root .. "/out")
    local again = H.run_ok(path, work)
    assert.falsy(again:find("interrupted commit", 1, true), again) -- the failed run dropped its journal
    assert_exactly_once(root, lines, true)
    for _, f in ipairs(W.paths(root)) do assert.matches("^out/[^/]+/part%.task_[^/]+%.txt$", f) end
  end)

  it("fails with Permission denied on a final dir it may not write, naming it, offsets unmoved", function()
    local topic, lines = topic_of("perm", 200)
    local work, root = H.workdir("perm"), "/kingest/" .. H.unique("perm")
    hadoop("fs", "-mkdir", "-p", root .. "/out", root .. "/task-data")
    hadoop("fs", "-chmod", "777", root .. "/task-data")
    hadoop("fs", "-chmod", "500", root .. "/out") -- the current user's (the superuser's), not kg_other's
    local path = hdfs_job(work, topic, root, { uri = W.uri("kg_other") })
    H.run_fails(path, work, 1, { "Permission denied", root .. "/out", "kg_other" })
    assert.same({}, H.stored_offsets(work, JOB))
    hadoop("fs", "-chmod", "777", root .. "/out")
    H.run_ok(path, work)
    assert_exactly_once(root, lines, true)
  end)

  it("fails when the final dir becomes unwritable during the run: the commit publishes nothing, offsets unmoved",
    function()
    local topic, lines = topic_of("perm_mid", 400)
    local work, root = H.workdir("perm_mid"), "/kingest/" .. H.unique("perm_mid")
    hadoop("fs", "-mkdir", "-p", root .. "/out", root .. "/task-data")
    hadoop("fs", "-chmod", "777", root .. "/out", root .. "/task-data")
    local path = hdfs_job(work, topic, root, { uri = W.uri("kg_other"), code = H.slow_decode(10) })
    local p = spawn_pulling(path, work)
    hadoop("fs", "-chmod", "555", root .. "/out")
    local status, last, log = ended(p)
    if status ~= 0 then
      assert.equals(1, status, log)
      assert.truthy(last:find("Permission denied", 1, true) and last:find(root .. "/out", 1, true), last)
      assert.same({}, H.stored_offsets(work, JOB))
      assert.same({}, published(root))
    end
    hadoop("fs", "-chmod", "777", root .. "/out")
    H.run_ok(path, work)
    assert_exactly_once(root, lines)
  end)
end)
