-- kingest publishing to S3 against a second implementation of it: moto (PyPI moto[server], in Python, started by
-- this spec on a free port in about a second), beside the s3proxy of s3_spec. The same exactly-once checks, the
-- commit's journal and recovery, and If-None-Match: * refusing a write to a key another client wrote first (set
-- off by spec/support/s3_fault_proxy.py just before kingest's write). Every object read back with boto3. moto takes
-- any keys, so the credential cases stay in s3_spec.
local H = require("support.harness")
local S = require("support.s3")

local function literal(s) return (s:gsub("%p", "%%%0")) end

describe("output to S3 on moto", function()
  local job = H.job_writer("S3Moto")
  local moto, env

  setup(function()
    moto = S.moto(H.tmp .. "/" .. H.unique("moto") .. ".log")
    env = moto.env
  end)
  teardown(function() if moto then moto.stop() end end)

  local function props(bucket, folder, extra) return S.props(bucket, folder, extra, moto) end

  it("publishes every record exactly once as objects, and pulls only new records next", function()
    local lines = {}
    for i = 1, 1500 do lines[i] = string.format("moto record %05d", i) end
    local topic = H.topic_with("moto_plain", lines)
    local work = H.workdir("moto_plain")
    local bucket = S.bucket("mplain", env)
    local path = job(work, topic, props(bucket, "/out", { ["writer.file.max.records"] = "500",
      ["parallel.runner.threads"] = "3" }))
    local log = H.run_ok(path, work)
    assert.matches("Published 3 files to /out %(written to the object store%)", log)
    local got, objects = S.lines(bucket, "out/", env)
    assert.same(lines, H.sorted(got))
    assert.equals(3, #objects)
    for _, o in ipairs(objects) do
      assert.matches("^out/" .. literal(topic) .. "/part%.task_S3Moto_%d+_%d%.%d%.txt$", o.key)
    end
    assert.equals(1500, H.stored_offsets(work, "S3Moto")[topic .. ":0"])
    assert.same({}, S.uploads(bucket, "", env))
    H.produce(topic, { "one more" })
    H.run_ok(path, work)
    got = S.lines(bucket, "out/", env)
    lines[#lines + 1] = "one more"
    assert.same(H.sorted(lines), H.sorted(got))
  end)

  it("uploads a large file in parts with the ETag the journal foresaw; a run killed after the journal has its "
    .. "upload aborted and the object written by the next", function()
    local lines, pad = {}, string.rep("m", 150)
    for i = 1, 40000 do lines[i] = string.format("%05d %s", i, pad) end -- about 6 MB: two parts
    local topic = H.topic_with("moto_big", lines)
    local work = H.workdir("moto_big")
    local bucket = S.bucket("mbig", env)
    local path = job(work, topic, props(bucket, "/big", { ["fs.s3a.multipart.threshold"] = "5M",
      ["fs.s3a.multipart.size"] = "5M" }))
    assert.are_not.equal(0, (H.run(path, work, { KINGEST_CRASH_AT = "journaled" })))
    local rows = H.sqlite(work .. "/state-store/S3Moto.db", "SELECT dst, upload_id, size, etag FROM pending_moves")
    assert.equals(1, #rows)
    local key = rows[1][1]:sub(2)
    assert.same({ { key = key, id = rows[1][2] } }, S.uploads(bucket, "big/", env))
    assert.same({}, S.objects(bucket, "big/", env))
    local log = H.run_ok(path, work)
    assert.matches("Aborted the unfinished upload " .. literal(rows[1][2]), log)
    assert.same({}, S.uploads(bucket, "", env))
    local objects = S.objects(bucket, "big/", env)
    assert.equals(1, #objects)
    assert.equals(key, objects[1].key)
    assert.equals(rows[1][4], objects[1].etag) -- moto's ETag of two parts is the one the journal foresaw
    assert.matches("%-2$", objects[1].etag)
    assert.equals(tonumber(rows[1][3]), objects[1].size)
    assert.same(lines, (S.lines(bucket, "big/", env)))
    assert.equals(40000, H.stored_offsets(work, "S3Moto")[topic .. ":0"])
  end)

  local function refused(name, bucket, folder, lines, extra)
    return S.refused({ job = job, job_name = "S3Moto", name = name, bucket = bucket, folder = folder, lines = lines,
      extra = extra, server = moto })
  end

  it("never overwrites an object another client wrote first: PutObject under If-None-Match is refused, the run "
    .. "fails naming the key, and the next run publishes every record once", function()
    local lines = { "n1", "n2", "n3" }
    local bucket = S.bucket("mrefused", env)
    local p, key, topic, work = refused("moto_refused", bucket, "/out", lines)
    H.run_ok(job(work, topic, p), work)
    local got = {}
    for _, o in ipairs(S.objects(bucket, "out/", env)) do
      if o.key ~= key then
        for l in S.get(bucket, o.key, env):gmatch("[^\n]+") do got[#got + 1] = l end
      end
    end
    assert.same(lines, H.sorted(got))
    assert.equals("someone else's\n", S.get(bucket, key, env))
  end)

  it("never overwrites an object another client wrote first: CompleteMultipartUpload under If-None-Match is "
    .. "refused and the upload aborted", function()
    local lines, pad = {}, string.rep("r", 150)
    for i = 1, 40000 do lines[i] = string.format("%05d %s", i, pad) end
    local bucket = S.bucket("mrefusedmp", env)
    refused("moto_refused_mp", bucket, "/big", lines, { ["fs.s3a.multipart.threshold"] = "5M",
      ["fs.s3a.multipart.size"] = "5M" })
    assert.same({}, S.uploads(bucket, "", env))
    assert.equals(1, #S.objects(bucket, "", env))
  end)
end)
