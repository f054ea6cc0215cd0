-- kingest writing to HDFS through WebHDFS (writer.fs.uri=webhdfs://...), against the real broker and the HDFS of
-- scripts/hadoop: task data and the final folder on HDFS, or task data local and the final folder on HDFS
-- (data.publisher.fs.uri), the state store local; published files read back with curl (WebHDFS OPEN) and, once per
-- test, with Hadoop's own FsShell, never with kingest; and the errors of a WebHDFS that does not answer, an hdfs://
-- URI and a publisher kingest cannot serve.
local H = require("support.harness")
local W = require("support.webhdfs")

local webhdfs, hdfs_lines = W.uri, W.fs_lines

local function literal(s) return (s:gsub("%p", "%%%0")) end

describe("output to HDFS through WebHDFS", function()
  local job = H.job_writer("HdfsJob")

  local function hdfs_job(work, topic, root, extra)
    local props = {
      ["writer.fs.uri"] = webhdfs(),
      ["task.data.root.dir"] = root .. "/task-data",
      ["data.publisher.final.dir"] = root .. "/out",
    }
    for k, v in pairs(extra or {}) do props[k] = v end
    return job(work, topic, props)
  end

  it("publishes every record exactly once to HDFS, keeps its state locally, and pulls only new records next", function()
    local lines = {}
    for i = 1, 2000 do lines[i] = "hdfs record " .. i end
    local topic = H.topic_with("hdfs_out", lines)
    H.create_topic(topic .. "_b", 2)
    H.produce(topic .. "_b", { "b1", "b2", "b3" })
    local work = H.workdir("hdfs_out")
    local root = "/kingest/" .. H.unique("run")
    local path = hdfs_job(work, topic .. "," .. topic .. "_b", root)
    H.run_ok(path, work)
    local got, files = W.lines(root .. "/out/" .. topic)
    assert.same(lines, got)
    assert.equals(1, #files)
    assert.matches("/part%.task_HdfsJob_%d+_%d%.txt$", "/" .. files[1])
    local b = W.lines(root .. "/out/" .. topic .. "_b")
    assert.same({ "b1", "b2", "b3" }, H.sorted(b))
    local stored = H.stored_offsets(work, "HdfsJob") -- in the local state database
    assert.equals(2000, stored[topic .. ":0"])
    assert.equals(3, (stored[topic .. "_b:0"] or 0) + (stored[topic .. "_b:1"] or 0))
    -- The task data's root holds what the run read: its owner's only (it was made by the run), the output not.
    local modes = {}
    for _, e in ipairs(W.ls(root)) do modes[e.name] = e.permission end
    assert.same({ ["task-data"] = "700", out = "755" }, modes)
    -- Task data is gone from HDFS once the run is over.
    local left = table.concat(W.paths(root .. "/task-data"), "\n")
    assert.falsy(left:find("part%.task_"))
    H.produce(topic, { "one more" })
    H.run_ok(path, work)
    local again = hdfs_lines(root .. "/out/" .. topic)
    lines[#lines + 1] = "one more"
    assert.same(lines, again)
  end)

  it("uploads local task data to the final folder on HDFS at commit, files in parallel, exactly once", function()
    local lines = {}
    for i = 1, 1200 do lines[i] = string.format("uploaded %05d", i) end
    local topic = H.topic_with("hdfs_up", lines)
    local work = H.workdir("hdfs_up")
    local root = "/kingest/" .. H.unique("up")
    local path = job(work, topic, {
      ["data.publisher.fs.uri"] = webhdfs(),
      ["data.publisher.final.dir"] = root .. "/out",
      ["writer.file.max.records"] = "100",
      ["parallel.runner.threads"] = "4",
    })
    local log = H.run_ok(path, work)
    assert.matches("Published 12 files to " .. literal(root .. "/out") .. " %(uploaded%)", log)
    local got, files = W.lines(root .. "/out/" .. topic)
    assert.same(lines, H.sorted(got))
    assert.equals(12, #files)
    -- Nothing but the published files: no upload left under its temporary name, no task data on HDFS.
    local all = W.paths(root)
    assert.equals(12, #all, table.concat(all, "\n"))
    for _, f in ipairs(all) do assert.matches("^out/" .. literal(topic) .. "/part%.task_[^/]+%.txt$", f) end
    -- The local task data is gone, and the next run uploads only the new records.
    local _, left = H.sh("find " .. H.q(work .. "/task-data") .. " -type f")
    assert.equals("", left)
    H.produce(topic, { "late one" })
    H.run_ok(path, work)
    lines[#lines + 1] = "late one"
    assert.same(H.sorted(lines), H.sorted((hdfs_lines(root .. "/out/" .. topic))))
    assert.equals(13, #W.paths(root))
  end)

  it("refuses a final folder on HDFS that the user may not write, before a record moves", function()
    local topic = H.topic_with("hdfs_up_denied", { "a", "b", "c" })
    local work = H.workdir("hdfs_up_denied")
    local root = "/kingest/" .. H.unique("denied")
    W.mkdirs(root .. "/out")
    W.chmod(root .. "/out", "555")
    local last = H.run_fails(job(work, topic, {
      ["data.publisher.fs.uri"] = webhdfs("nobody"),
      ["data.publisher.final.dir"] = root .. "/out",
    }), work, 1, { "data.publisher.final.dir", root .. "/out" })
    assert.matches("Permission denied", last)
    assert.same({}, H.stored_offsets(work, "HdfsJob"))
    assert.same({}, W.paths(root .. "/out"))
  end)

  it("writes rolled, gzip-compressed files to HDFS that Hadoop reads", function()
    local lines = {}
    for i = 1, 3000 do lines[i] = string.format("compressed %05d", i) end
    local topic = H.topic_with("hdfs_gz", lines)
    local work = H.workdir("hdfs_gz")
    local root = "/kingest/" .. H.unique("gz")
    H.run_ok(hdfs_job(work, topic, root, { ["writer.codec.type"] = "gzip", ["writer.file.max.records"] = "1000" }),
      work)
    local got, files = hdfs_lines(root .. "/out/" .. topic) -- fs -text decompresses .gz
    assert.same(lines, got)
    assert.equals(3, #files)
    for i, f in ipairs(files) do assert.matches("%." .. (i - 1) .. "%.txt%.gz$", f) end
  end)

  it("fails within a bounded time when WebHDFS does not answer, offsets unmoved", function()
    local topic = H.topic_with("hdfs_down", { "x" })
    local work = H.workdir("hdfs_down")
    local started = H.now_ms()
    local last = H.run_fails(job(work, topic, {
      ["writer.fs.uri"] = "webhdfs://127.0.0.1:9",
      ["task.data.root.dir"] = "/kingest/down/task-data",
      ["data.publisher.final.dir"] = "/kingest/down/out",
    }), work, 1, { "127.0.0.1:9" })
    assert.truthy(H.now_ms() - started < 60000, "took too long: " .. last)
    assert.same({}, H.stored_offsets(work, "HdfsJob"))
  end)

  it("refuses an hdfs:// URI with the WebHDFS hint, and a publisher on another file system (78, as validate)", function()
    local work = H.workdir("hdfs_bad")
    H.run_fails(job(work, "t", { ["writer.fs.uri"] = "hdfs://127.0.0.1:8020" }), work, 78,
      { "writer.fs.uri=hdfs://127.0.0.1:8020", "use webhdfs://HOST:PORT" })
    H.run_fails(job(work, "t", { ["writer.fs.uri"] = webhdfs(), ["data.publisher.fs.uri"] = "file:///" }), work, 78,
      { "data.publisher.fs.uri=file:///", "from local task data to HDFS only" })
    H.run_fails(job(work, "t", { ["state.store.fs.uri"] = webhdfs() }), work, 78,
      { "state.store.fs.uri", "local SQLite" })
  end)
end)
