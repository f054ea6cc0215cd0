-- Exactly once on HDFS under faults of HDFS itself, against the real broker and the HDFS of scripts/hadoop: a
-- NameNode killed (SIGKILL) while a run writes and during a commit, safe mode, a space quota too small for
-- the output, and permission denied. A run that meets one fails with a clear error naming the path and HDFS's
-- reason, leaves the offsets where they were and publishes nothing partial; once HDFS is well again, the next run
-- publishes every record exactly once. A fault during a run is set off by a proxy in front of the NameNode
-- (spec/support/namenode_proxy.py) at a chosen request, so that the run meets it every time, and each such case
-- checks that it did. Published files are read with curl (WebHDFS OPEN) and, once per test, with Hadoop's FsShell,
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
  for k, v in pairs(opts.props or {}) do props[k] = v end
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
    if W.in_safe_mode() then W.hadoop({ "safemode", "leave" }) end
  end)

  -- Starts spec/support/namenode_proxy.py in front of the NameNode, logging to WORK/proxy.log: at the NTH request of
  -- OP whose request line holds MATCH, it runs THEN (a shell command), before handing the request on (BEFORE) or
  -- after the NameNode answered it (the answer then dropped). Returns the webhdfs:// URI through it (as USER, when
  -- given) and a function that returns the proxy's log.
  local function start_proxy(work, opts)
    local port, nn = free_port(), W.url():match(":(%d+)$")
    local log = work .. "/proxy.log"
    local cmd = string.format("python3 %s %d %s --op %s --match %s --nth %d --then %s%s >%s 2>&1 & echo $!",
      H.q(H.root .. "/spec/support/namenode_proxy.py"), port, nn, opts.op, H.q(opts.match), opts.nth, H.q(opts.then_),
      opts.before and " --before" or "", H.q(log))
    local _, pid = H.sh(cmd)
    proxy_pid = tonumber(pid:match("%d+"))
    assert.truthy(H.wait_until(function() return (H.slurp(log) or ""):find("namenode_proxy:", 1, true) end, 10))
    return "webhdfs://" .. (opts.user and (opts.user .. "@") or "") .. "127.0.0.1:" .. port,
      function() return H.slurp(log) or "" end
  end

  -- The command that runs scripts/hadoop ARGS..., for a proxy's THEN.
  local function hadoop_command(...)
    local parts = { H.q(H.root .. "/scripts/hadoop") }
    for _, a in ipairs({ ... }) do parts[#parts + 1] = H.q(a) end
    return table.concat(parts, " ")
  end

  it("fails with a clear error when the NameNode is killed while records are written, offsets unmoved; the run "
    .. "after its restart publishes every record once", function()
    local topic, lines = topic_of("nn_pull", 400)
    local work, root = H.workdir("nn_pull"), "/kingest/" .. H.unique("nn_pull")
    -- Two tasks, one after the other, write four files of 50 records each to the task data: as the first task
    -- creates its third, the NameNode is killed. (Tasks side by side would race: a file the other task is closing
    -- at that moment fails at the DataNode, with the DataNode's error.)
    local uri, proxy_log = start_proxy(work, { op = "CREATE", match = root .. "/task-data/", nth = 3, before = true,
      then_ = hadoop_command("stop-namenode") })
    local path = hdfs_job(work, topic, root, { uri = uri, props = { ["taskexecutor.threadpool.size"] = 1 } })
    local last, err = H.run_fails(path, work, 1, { root .. "/task-data/", "WebHDFS", "did not answer" })
    assert.truthy(proxy_log():find("fault: ran the command before handing on PUT", 1, true), proxy_log())
    assert.matches("^kingest: ", last)
    assert.same({}, H.stored_offsets(work, JOB), err)
    hadoop("start-namenode")
    assert.same({}, published(root))
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
    local uri, proxy_log = start_proxy(work, { op = "RENAME", match = "destination=" .. root .. "/out/", nth = 1,
      then_ = hadoop_command("stop-namenode") })
    local path = hdfs_job(work, topic, root, { uri = uri })
    local last, err = H.run_fails(path, work, 1, { "cannot move", root .. "/out/", "WebHDFS" })
    assert.truthy(proxy_log():find("fault: the NameNode answered", 1, true), proxy_log())
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
    -- As the second file of task data is created, HDFS enters safe mode; the NameNode then refuses that file.
    local uri, proxy_log = start_proxy(work, { op = "CREATE", match = root .. "/task-data/", nth = 2, before = true,
      then_ = hadoop_command("safemode", "enter") })
    local path = hdfs_job(work, topic, root, { uri = uri })
    local _, err = H.run_fails(path, work, 1, { "safe mode", root .. "/task-data/" })
    assert.truthy(proxy_log():find("fault: ran the command before handing on PUT", 1, true), proxy_log())
    hadoop("safemode", "leave")
    assert.same({}, H.stored_offsets(work, JOB), err)
    assert.same({}, published(root))
    H.run_ok(path, work)
    assert_exactly_once(root, lines)
  end)

  it("fails on a space quota too small for the output, naming it, nothing published, offsets unmoved; succeeds "
    .. "once it is cleared", function()
    local topic, lines = topic_of("quota", 600)
    local work, root = H.workdir("quota"), "/kingest/" .. H.unique("quota")
    W.mkdirs(root .. "/out")
    -- 3000 bytes: the first few files of 50 records fit, the commit's next rename does not.
    W.space_quota(root .. "/out", 3000)
    local path = hdfs_job(work, topic, root)
    H.run_fails(path, work, 1, { "quota", root .. "/out", "DSQuotaExceededException" })
    assert.same({}, H.stored_offsets(work, JOB))
    assert.same({}, published(root)) -- the renames made before the refused one were undone
    W.space_quota(root .. "/out", nil)
    H.run_ok(path, work)
    assert_exactly_once(root, lines, true)
  end)

  it("takes back the files a commit from local task data uploaded before a quota refused the next, offsets "
    .. "unmoved; succeeds once it is cleared", function()
    local topic, lines = topic_of("upquota", 600) -- 12 files of about 650 bytes
    local work, root = H.workdir("upquota"), "/kingest/" .. H.unique("upquota")
    W.mkdirs(root .. "/out")
    -- An upload counts a whole block (1 MiB) while it is written: the first few fit beside it, then one does not.
    W.space_quota(root .. "/out", 1048576 + 3000)
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
    W.space_quota(root .. "/out", nil)
    local again = H.run_ok(path, work)
    assert.falsy(again:find("interrupted commit", 1, true), again) -- the failed run dropped its journal
    assert_exactly_once(root, lines, true)
    for _, f in ipairs(W.paths(root)) do assert.matches("^out/[^/]+/part%.task_[^/]+%.txt$", f) end
  end)

  it("fails with Permission denied on a final dir it may not write, naming it, offsets unmoved", function()
    local topic, lines = topic_of("perm", 200)
    local work, root = H.workdir("perm"), "/kingest/" .. H.unique("perm")
    W.mkdirs(root .. "/out")
    W.mkdirs(root .. "/task-data")
    W.chmod(root .. "/task-data", "777")
    W.chmod(root .. "/out", "500") -- the current user's (the superuser's), not kg_other's
    local path = hdfs_job(work, topic, root, { uri = W.uri("kg_other") })
    H.run_fails(path, work, 1, { "Permission denied", root .. "/out", "kg_other" })
    assert.same({}, H.stored_offsets(work, JOB))
    W.chmod(root .. "/out", "777")
    H.run_ok(path, work)
    assert_exactly_once(root, lines, true)
  end)

  it("fails when the final dir becomes unwritable during the run: the commit publishes nothing, offsets unmoved",
    function()
    local topic, lines = topic_of("perm_mid", 400)
    local work, root = H.workdir("perm_mid"), "/kingest/" .. H.unique("perm_mid")
    W.mkdirs(root .. "/out")
    W.mkdirs(root .. "/task-data")
    W.chmod(root .. "/out", "777")
    W.chmod(root .. "/task-data", "777")
    -- As the first file of task data is created, the final dir becomes read-only: the commit cannot move into it.
    local uri, proxy_log = start_proxy(work, { op = "CREATE", match = root .. "/task-data/", nth = 1, before = true,
      user = "kg_other", then_ = W.chmod_command(root .. "/out", "555") })
    local path = hdfs_job(work, topic, root, { uri = uri })
    local _, err = H.run_fails(path, work, 1, { "Permission denied", root .. "/out", "kg_other" })
    assert.truthy(proxy_log():find("fault: ran the command before handing on PUT", 1, true), proxy_log())
    assert.same({}, H.stored_offsets(work, JOB), err)
    assert.same({}, published(root))
    W.chmod(root .. "/out", "777")
    H.run_ok(path, work)
    assert_exactly_once(root, lines)
  end)
end)
