-- kingest publishing to Azure Blob Storage (data.publisher.fs.uri=wasb://CONTAINER@ACCOUNT...) against the Azurite
-- of scripts/azurite, task data local: every blob read back with spec/support/azure_blob.py, never with kingest;
-- exactly once through the commit without rename (Put Blob and Put Block List under If-None-Match: *, each blob
-- marked with the upload the journal names), a run killed in its commit finished by the next, a blob at a journalled
-- key never overwritten, and bad input with its error, nothing published and the offsets unmoved.
local H = require("support.harness")
local A = require("support.azure")

local function literal(s) return (s:gsub("%p", "%%%0")) end

describe("output to Azure Blob", function()
  local job = H.job_writer("AzJob")

  local function numbered(prefix, n, pad)
    local lines = {}
    for i = 1, n do lines[i] = string.format("%s %05d%s", prefix, i, pad or "") end
    return lines
  end

  it("publishes every record exactly once as blobs, a large file in blocks, and pulls only new records next", function()
    -- 3 files of 500 records of about 60 bytes: 30 KB each, written in blocks of 16 KiB; the last file is small.
    local lines = numbered("azure record", 1200, " " .. string.rep("a", 40))
    local topic = H.topic_with("az_plain", lines)
    local work = H.workdir("az_plain")
    local container = A.container("plain")
    local path = job(work, topic, A.props(container, "/out", { ["writer.file.max.records"] = "500",
      ["parallel.runner.threads"] = "3", ["fs.azure.write.request.size"] = "16384" }))
    local log = H.run_ok(path, work)
    assert.matches("Published 3 files to /out %(written to the object store%)", log)
    local got, blobs = A.lines(container, "out/")
    assert.same(lines, H.sorted(got))
    assert.equals(3, #blobs)
    for _, b in ipairs(blobs) do
      assert.matches("^out/" .. literal(topic) .. "/part%.task_AzJob_%d+_%d%.%d%.txt$", b.name)
    end
    assert.same(blobs, A.blobs(container, "out/")) -- no uncommitted blocks left anywhere
    local sizes = {}
    for _, b in ipairs(blobs) do sizes[#sizes + 1] = b.size end
    table.sort(sizes)
    assert.is_true(sizes[1] < 16384 and sizes[3] > 16384) -- one Put Blob, and uploads in blocks
    assert.equals(1200, H.stored_offsets(work, "AzJob")[topic .. ":0"])
    assert.same({}, H.sqlite(work .. "/state-store/AzJob.db", "SELECT * FROM pending_moves"))
    H.produce(topic, { "one more" })
    H.run_ok(path, work)
    lines[#lines + 1] = "one more"
    assert.same(H.sorted(lines), H.sorted((A.lines(container, "out/"))))
  end)

  describe("the commit without rename", function()
    local function pending(work)
      return H.sqlite(work .. "/state-store/AzJob.db", "SELECT dst, upload_id, size, etag FROM pending_moves ORDER BY seq")
    end

    it("journals an upload id for every blob before writing it; a run killed after its first blob has the rest "
      .. "written by the next, each record once", function()
      local lines = numbered("crash", 1200, " " .. string.rep("c", 30)) -- two files in blocks, a third of 9 KB
      local topic = H.topic_with("az_crash", lines)
      local work = H.workdir("az_crash")
      local container = A.container("crash")
      local path = job(work, topic, A.props(container, "/out", { ["writer.file.max.records"] = "500",
        ["parallel.runner.threads"] = "1", ["fs.azure.write.request.size"] = "16384" }))
      assert.are_not.equal(0, (H.run(path, work, { KINGEST_CRASH_AT = "publish" })))
      local rows = pending(work)
      assert.equals(3, #rows)
      for _, r in ipairs(rows) do
        assert.matches("^/out/" .. literal(topic) .. "/part%.task_AzJob_", r[1])
        assert.matches("^%x+$", r[2]) -- an upload id for each, small or in blocks
        assert.equals("", r[4]) -- Azure's ETag is known only once a blob is written
      end
      local before = A.committed(container, "out/")
      assert.equals(1, #before) -- the first blob was written when the run was killed
      assert.is_nil(H.stored_offsets(work, "AzJob")[topic .. ":0"])
      local log = H.run_ok(path, work)
      assert.matches("Finishing the interrupted commit", log)
      local got, blobs = A.lines(container, "out/")
      assert.same(lines, H.sorted(got))
      assert.equals(3, #blobs)
      for i, b in ipairs(blobs) do assert.equals("/" .. b.name, rows[i][1]) end
      assert.equals(before[1].etag, blobs[1].etag) -- the blob of the killed run, kept and not written again
      assert.same(blobs, A.blobs(container, "out/"))
      assert.equals(1200, H.stored_offsets(work, "AzJob")[topic .. ":0"])
      assert.same({}, pending(work))
    end)

    it("writes again, as a new upload, a blob whose upload was killed between its blocks, leaving no block behind",
      function()
      local lines = numbered("blk", 2000, " " .. string.rep("b", 40)) -- about 100 KB: 7 blocks of 16 KiB
      local topic = H.topic_with("az_block", lines)
      local work = H.workdir("az_block")
      local container = A.container("block")
      local path = job(work, topic, A.props(container, "/out", { ["fs.azure.write.request.size"] = "16384" }))
      assert.are_not.equal(0, (H.run(path, work, { KINGEST_CRASH_AT = "block:3" })))
      local row = pending(work)[1]
      local left = A.blobs(container, "out/")
      assert.equals(1, #left)
      assert.same({ "/" .. left[1].name, false }, { row[1], left[1].committed }) -- blocks sent, nothing readable
      assert.same({}, A.committed(container, "out/"))
      local log = H.run_ok(path, work)
      assert.matches("Writing " .. literal(row[1]) .. " again, as a new upload %(not " .. row[2] .. "%)", log)
      local got, blobs = A.lines(container, "out/")
      assert.same(lines, got)
      assert.equals(tonumber(row[3]), blobs[1].size)
      assert.same(blobs, A.blobs(container, "out/")) -- the killed upload's blocks went with the new one's commit
      assert.equals(2000, H.stored_offsets(work, "AzJob")[topic .. ":0"])
    end)

    it("knows its blobs by their ETag once the journal has it: a run killed before its offsets publishes nothing twice",
      function()
      local lines = numbered("fin", 600)
      local topic = H.topic_with("az_finish", lines)
      local work = H.workdir("az_finish")
      local container = A.container("finish")
      local path = job(work, topic, A.props(container, "/out", { ["writer.file.max.records"] = "300" }))
      assert.are_not.equal(0, (H.run(path, work, { KINGEST_CRASH_AT = "finish" })))
      local rows = pending(work)
      assert.equals(2, #rows)
      local blobs = A.committed(container, "out/")
      assert.equals(2, #blobs)
      for i, b in ipairs(blobs) do
        assert.equals(b.etag, rows[i][4])
        assert.equals(b.size, tonumber(rows[i][3]))
      end
      H.run_ok(path, work)
      assert.same(blobs, A.committed(container, "out/"))
      assert.same(lines, H.sorted((A.lines(container, "out/"))))
      assert.equals(600, H.stored_offsets(work, "AzJob")[topic .. ":0"])
    end)

    it("never overwrites a blob it did not write at a journalled key, even one of the journalled size", function()
      -- About 20 KB: an upload in blocks of 16 KiB, whose journal row has its upload id and size, and no ETag yet.
      local topic = H.topic_with("az_theirs", numbered("mine", 1000, " " .. string.rep("m", 10)))
      local work = H.workdir("az_theirs")
      local container = A.container("theirs")
      local path = job(work, topic, A.props(container, "/out", { ["fs.azure.write.request.size"] = "16384" }))
      assert.are_not.equal(0, (H.run(path, work, { KINGEST_CRASH_AT = "journaled" })))
      local row = pending(work)[1]
      local dst, size = row[1], tonumber(row[3])
      assert.is_true(size > 16384)
      local theirs = H.tmp .. "/" .. H.unique("theirs")
      H.spit(theirs, string.rep("t", size - 1) .. "\n") -- someone else's bytes, of the same length
      A.tool({ "put", container, dst:sub(2), theirs })
      H.run_fails(path, work, nil, { dst, "is not the object this commit wrote", "never overwritten" })
      assert.equals(string.rep("t", size - 1) .. "\n", A.get(container, dst:sub(2)))
      assert.is_nil(H.stored_offsets(work, "AzJob")[topic .. ":0"])
      assert.equals(1, #pending(work)) -- the journal stays for the operator
    end)
  end)

  describe("bad input", function()
    -- Runs a job whose settings EXTRA override the good ones and asserts that it fails naming NAMES, that nothing is
    -- in CONTAINER and that no offset is stored.
    local function fails(name, container, extra, names)
      local topic = H.topic_with("az_bad", { "a", "b" })
      local work = H.workdir("az_bad_" .. name)
      local last, log = H.run_fails(job(work, topic, A.props(container, "/out", extra)), work, nil, names)
      assert.is_nil(H.stored_offsets(work, "AzJob")[topic .. ":0"])
      return last, log
    end

    it("names Azure Blob, the account, the container, the status and Azure's code for a wrong key", function()
      local container = A.container("badkey")
      local wrong = "d3Jvbmcta2V5LW5vdC10aGUtYWNjb3VudHMtb3duLWtleS1hdC1hbGwtMDEyMzQ1Njc4OQ=="
      local last = fails("key", container, { ["fs.azure.account.key." .. A.account .. ".blob.core.windows.net"] = wrong },
        { "data.publisher.final.dir", "Azure Blob account " .. A.account .. ", container " .. container, "HTTP 403",
          "the account's key is refused" })
      -- Azure's code: AuthenticationFailed from the service, AuthorizationFailure from the emulator
      assert.truthy(last:find("HTTP 403 AuthenticationFailed", 1, true) or last:find("HTTP 403 AuthorizationFailure", 1, true))
      assert.falsy(last:find(wrong, 1, true))
      assert.same({}, A.blobs(container, ""))
    end)

    it("names ContainerNotFound for a container that is not there, and does not make it", function()
      local container = H.unique("nosuch"):lower():gsub("[^a-z0-9]", "-")
      fails("container", container, {}, { "container " .. container, "HTTP 404", "ContainerNotFound",
        "the container does not exist" })
      local code = H.sh(table.concat({ "python3", H.q(H.root .. "/spec/support/azure_blob.py"), H.q(A.endpoint()),
        A.account, H.q(A.key()), "list", H.q(container) }, " "))
      assert.are_not.equal(0, code) -- still no such container
    end)

    it("refuses task data staged directly on Azure Blob", function()
      local work = H.workdir("az_stage")
      local container = A.container("stage")
      local props = A.props(container, "/out")
      props["writer.fs.uri"] = props["data.publisher.fs.uri"]
      H.run_fails(job(work, "t", props), work, 78, { "writer.fs.uri=wasb://", "cannot be staged on an object store" })
      assert.same({}, A.blobs(container, ""))
    end)
  end)
end)
