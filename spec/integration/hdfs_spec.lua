-- kingest writing to HDFS through WebHDFS (writer.fs.uri=webhdfs://...), against the real broker and the HDFS of
-- scripts/hadoop: task data and the final folder on HDFS, the state store local; published files read back with
-- Hadoop's own FsShell, never with kingest; and the errors of a WebHDFS that does not answer and an hdfs:// URI.
local H = require("support.harness")
local W = require("support.webhdfs")

local hadoop, webhdfs, hdfs_lines = W.hadoop, W.uri, W.fs_lines

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
    local got, files = hdfs_lines(root .. "/out/" .. topic)
    assert.same(lines, got)
    assert.equals(1, #files)
    assert.matches("/part%.task_HdfsJob_%d+_%d%.txt$", files[1])
    local b = hdfs_lines(root .. "/out/" .. topic .. "_b")
    assert.same({ "b1", "b2", "b3" }, H.sorted(b))
    local stored = H.stored_offsets(work, "HdfsJob") -- in the local state database
    assert.equals(2000, stored[topic .. ":0"])
    assert.equals(3, (stored[topic .. "_b:0"] or 0) + (stored[topic .. "_b:1"] or 0))
    -- Task data is gone from HDFS once the run is over.
    local _, left = hadoop({ "fs", "-ls", "-R", root .. "/task-data" })
    assert.falsy(left:find("part%.task_"))
    H.produce(topic, { "one more" })
    H.run_ok(path, work)
    local again = hdfs_lines(root .. "/out/" .. topic)
    lines[#lines + 1] = "one more"
    assert.same(lines, again)
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

  it("refuses an hdfs:// URI with the WebHDFS hint, and a publisher on another file system", function()
    local work = H.workdir("hdfs_bad")
    H.run_fails(job(work, "t", { ["writer.fs.uri"] = "hdfs://127.0.0.1:8020" }), work, 1,
      { "writer.fs.uri=hdfs://127.0.0.1:8020", "use webhdfs://HOST:PORT" })
    H.run_fails(job(work, "t", { ["writer.fs.uri"] = webhdfs(), ["data.publisher.fs.uri"] = "file:///" }), work, 1,
      { "data.publisher.fs.uri=file:///", "not implemented" })
    H.run_fails(job(work, "t", { ["state.store.fs.uri"] = webhdfs() }), work, 1,
      { "state.store.fs.uri", "local SQLite" })
  end)
end)
