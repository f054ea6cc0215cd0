-- kingest publishing to S3 (data.publisher.fs.uri=s3a://BUCKET) against the s3proxy of scripts/s3, task data local:
-- every object read back with boto3 (spec/support/s3_tool.py), never with kingest; exactly once for plain, rolled,
-- gzip, time-partitioned and Avro output; the commit without rename (If-None-Match: *, the journal's upload ids,
-- recovery, orphans swept); 503 SlowDown, a connection cut and the server killed in the middle of a part, set off by
-- spec/support/s3_fault_proxy.py; and each bad input with its error, nothing published and the offsets unmoved.
local H = require("support.harness")
local S = require("support.s3")

local function literal(s) return (s:gsub("%p", "%%%0")) end

describe("output to S3", function()
  local job = H.job_writer("S3Job")

  it("publishes every record exactly once as objects, and pulls only new records next", function()
    local lines = {}
    for i = 1, 1500 do lines[i] = string.format("s3 record %05d", i) end
    local topic = H.topic_with("s3_plain", lines)
    local work = H.workdir("s3_plain")
    local bucket = S.bucket("plain")
    local path = job(work, topic, S.props(bucket, "/out", { ["writer.file.max.records"] = "500",
      ["parallel.runner.threads"] = "3" }))
    local log = H.run_ok(path, work)
    assert.matches("Published 3 files to /out %(written to the object store%)", log)
    local got, objects = S.lines(bucket, "out/")
    assert.same(lines, H.sorted(got))
    assert.equals(3, #objects)
    for _, o in ipairs(objects) do assert.matches("^out/" .. literal(topic) .. "/part%.task_S3Job_%d+_%d%.%d%.txt$", o.key) end
    assert.equals(1500, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    assert.same({}, S.uploads(bucket, "out/"))
    H.produce(topic, { "one more" })
    H.run_ok(path, work)
    got = S.lines(bucket, "out/")
    lines[#lines + 1] = "one more"
    assert.same(H.sorted(lines), H.sorted(got))
  end)

  it("publishes rolled gzip, time-partitioned and Avro output exactly once", function()
    local lines = {}
    for i = 1, 900 do lines[i] = string.format("gz %04d", i) end
    local topic = H.topic_with("s3_gz", lines)
    local work = H.workdir("s3_gz")
    local bucket = S.bucket("gz")
    H.run_ok(job(work, topic, S.props(bucket, "/gz", {
      ["writer.codec.type"] = "gzip",
      ["writer.file.max.records"] = "400",
      ["writer.partitioner.class"] = "TimeBasedWriterPartitioner",
      ["writer.partition.pattern"] = "yyyy/MM/dd",
      ["writer.partition.timezone"] = "UTC",
    })), work)
    local got, by_key = S.records(bucket, "gz/")
    assert.same(lines, H.sorted(got))
    local keys = {}
    for k in pairs(by_key) do keys[#keys + 1] = k end
    assert.equals(3, #keys)
    local day = os.date("!%Y/%m/%d")
    for _, k in ipairs(keys) do assert.matches("^gz/" .. literal(topic) .. "/" .. day .. "/part%.task_.*%.gz$", k) end
    -- Avro: each line a record of the job's schema, read back with fastavro.
    local awork = H.workdir("s3_avro")
    local apath = H.job({ dir = awork, name = "S3Avro", topics = topic, props = S.props(bucket, "/avro", {
      ["writer.output.format"] = "avro", ["writer.file.max.records"] = "500" }), code = [[
  schema = '{"type":"record","name":"Line","fields":[{"name":"id","type":"long"},{"name":"text","type":"string"}]}',
  decodeRecord = function(rec)
    local v = rec:value()
    return { id = tonumber(v:match("%d+")), text = v }
  end,
]] })
    H.run_ok(apath, awork)
    local records = S.records(bucket, "avro/")
    assert.equals(900, #records)
    local texts = {}
    for i, r in ipairs(records) do
      texts[i] = r.text
      assert.equals(tonumber(r.text:match("%d+")), r.id)
    end
    assert.same(lines, H.sorted(texts))
  end)

  it("uploads a large file in parts, several at once, under If-None-Match, leaving no upload behind", function()
    local lines, line = {}, string.rep("x", 180)
    for i = 1, 70000 do lines[i] = string.format("%06d %s", i, line) end -- about 13 MB: three parts of 5 MB
    local topic = H.topic_with("s3_multi", lines)
    local work = H.workdir("s3_multi")
    local bucket = S.bucket("multi")
    H.run_ok(job(work, topic, S.props(bucket, "/big", {
      ["fs.s3a.multipart.threshold"] = "5M",
      ["fs.s3a.multipart.size"] = "5M",
      ["fs.s3a.fast.upload.active.blocks"] = "3",
    })), work)
    local objects = S.objects(bucket, "big/")
    assert.equals(1, #objects)
    assert.matches("%-3$", objects[1].etag) -- S3's ETag of an object completed from three parts
    local got = S.lines(bucket, "big/")
    assert.equals(70000, #got)
    assert.same(lines, got)
    assert.same({}, S.uploads(bucket, "big/"))
  end)

  describe("the commit without rename", function()
    local BIG = { ["fs.s3a.multipart.threshold"] = "5M", ["fs.s3a.multipart.size"] = "5M" }
    local function big_topic(name)
      local lines, pad = {}, string.rep("y", 150)
      for i = 1, 40000 do lines[i] = string.format("%05d %s", i, pad) end -- about 6 MB: two parts
      return H.topic_with(name, lines), lines
    end

    it("journals each key and its upload id before the upload; a run killed there has its upload aborted and the "
      .. "object written by the next", function()
      local topic, lines = big_topic("s3_jrnl")
      local work = H.workdir("s3_jrnl")
      local bucket = S.bucket("jrnl")
      local path = job(work, topic, S.props(bucket, "/out", BIG))
      local code = H.run(path, work, { KINGEST_CRASH_AT = "journaled" })
      assert.are_not.equal(0, code)
      local db = work .. "/state-store/S3Job.db"
      local rows = H.sqlite(db, "SELECT dst, upload_id, size, etag FROM pending_moves")
      assert.equals(1, #rows)
      local key = rows[1][1]:sub(2)
      assert.matches("^out/" .. literal(topic) .. "/part%.task_S3Job_%d+_0%.txt$", key)
      assert.matches("%-2$", rows[1][4]) -- the ETag foreseen: two parts
      local ups = S.uploads(bucket, "out/")
      assert.same({ { key = key, id = rows[1][2] } }, ups) -- the journalled upload, begun and not completed
      assert.same({}, S.objects(bucket, "out/"))
      local log = H.run_ok(path, work)
      assert.matches("Aborted the unfinished upload", log)
      assert.same({}, S.uploads(bucket, "out/"))
      local objects = S.objects(bucket, "out/")
      assert.equals(1, #objects)
      assert.equals(key, objects[1].key)
      assert.equals(rows[1][4], objects[1].etag)
      assert.equals(tonumber(rows[1][3]), objects[1].size)
      assert.same(lines, (S.lines(bucket, "out/")))
      assert.equals(40000, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)

    it("never overwrites an object it did not write at a journalled key: the error names the key", function()
      local topic = H.topic_with("s3_theirs", { "mine 1", "mine 2" })
      local work = H.workdir("s3_theirs")
      local bucket = S.bucket("theirs")
      local path = job(work, topic, S.props(bucket, "/out"))
      assert.are_not.equal(0, (H.run(path, work, { KINGEST_CRASH_AT = "journaled" })))
      local dst = H.sqlite(work .. "/state-store/S3Job.db", "SELECT dst FROM pending_moves")[1][1]
      local theirs = H.tmp .. "/" .. H.unique("theirs")
      H.spit(theirs, "someone else's\n")
      S.tool({ "put", bucket, dst:sub(2) }, nil, theirs)
      H.run_fails(path, work, nil, { dst, "is not the object this commit wrote", "never overwritten" })
      assert.equals("someone else's\n", S.get(bucket, dst:sub(2)))
      assert.is_nil(H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)

    it("never overwrites an object another client wrote just before its write: If-None-Match refuses PutObject and "
      .. "CompleteMultipartUpload, the run fails naming the key, and the next run publishes every record once", function()
      local bucket = S.bucket("refused")
      local lines = { "r1", "r2", "r3" }
      local p, key, topic, work = S.refused({ job = job, job_name = "S3Job", name = "s3_refused", bucket = bucket,
        folder = "/out", lines = lines })
      H.run_ok(job(work, topic, p), work)
      local got = {}
      for _, o in ipairs(S.objects(bucket, "out/")) do
        if o.key ~= key then
          for l in S.get(bucket, o.key):gmatch("[^\n]+") do got[#got + 1] = l end
        end
      end
      assert.same(lines, H.sorted(got))
      assert.equals("someone else's\n", S.get(bucket, key))
      local big, pad = {}, string.rep("q", 150)
      for i = 1, 40000 do big[i] = string.format("%05d %s", i, pad) end -- about 6 MB: two parts
      local mbucket = S.bucket("refusedmp")
      S.refused({ job = job, job_name = "S3Job", name = "s3_refused_mp", bucket = mbucket, folder = "/big",
        lines = big, extra = BIG })
      assert.same({}, S.uploads(mbucket, ""))
      assert.equals(1, #S.objects(mbucket, ""))
    end)

    it("sweeps the uploads a killed run began and never journalled, and leaves others' alone", function()
      local topic = H.topic_with("s3_orphan", { "o1", "o2" })
      local work = H.workdir("s3_orphan")
      local bucket = S.bucket("orphan")
      local orphan = "out/" .. topic .. "/part.task_S3Job_1700000000000_0.txt"
      local other = "out/" .. topic .. "/part.task_OtherJob_1700000000000_0.txt"
      S.tool({ "begin", bucket, orphan })
      S.tool({ "begin", bucket, other })
      local log = H.run_ok(job(work, topic, S.props(bucket, "/out")), work)
      assert.matches("Aborted an unfinished upload a killed run left: /" .. literal(orphan), log)
      local left = S.uploads(bucket, "out/")
      assert.equals(1, #left)
      assert.equals(other, left[1].key)
      assert.same({ "o1", "o2" }, H.sorted((S.lines(bucket, "out/"))))
    end)
  end)

  describe("503 SlowDown", function()
    -- 503s are answered by spec/support/s3_fault_proxy.py in front of the server, at the requests it is told.
    local stop = function() end
    after_each(function() stop() end)

    -- Runs JOB in WORK at DEBUG; returns its status and log.
    local function run_debug(path, work)
      local code, _, err = H.kingest({ "run", "-l", "debug", path }, { GOBBLIN_WORK_DIR = work })
      return code, err
    end

    local function records(name, n)
      local lines = {}
      for i = 1, n do lines[i] = string.format("%s %05d", name, i) end
      return lines
    end

    it("are tried again, said in the log, and the run publishes every record once", function()
      local lines = records("slow", 900)
      local topic = H.topic_with("s3_slow", lines)
      local work = H.workdir("s3_slow")
      local bucket = S.bucket("slow")
      local endpoint, proxy_log
      endpoint, proxy_log, stop = S.proxy(work, { "--method", "PUT", "--match", "/" .. bucket .. "/out/", "--first", "2" })
      local path = job(work, topic, S.props(bucket, "/out", { ["fs.s3a.endpoint"] = endpoint,
        ["writer.file.max.records"] = "300", ["parallel.runner.threads"] = "1" }))
      local code, log = run_debug(path, work)
      assert.equals(0, code, log)
      local _, faults = proxy_log():gsub("fault: answered 503 SlowDown", "")
      assert.equals(2, faults, proxy_log())
      local _, said = log:gsub("S3 PUT [^\n]*/out/[^\n]*: HTTP 503 SlowDown: Please reduce your request rate%.; "
        .. "trying again in %d+ ms %(attempt %d of 5%)", "")
      assert.equals(2, said, log)
      local got, objects = S.lines(bucket, "out/")
      assert.same(lines, H.sorted(got))
      assert.equals(3, #objects)
      assert.same({}, S.uploads(bucket, "out/"))
      assert.equals(900, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)

    it("to a CompleteMultipartUpload under If-None-Match are tried again, and the object is written once", function()
      local lines, pad = {}, string.rep("z", 150)
      for i = 1, 40000 do lines[i] = string.format("%05d %s", i, pad) end -- about 6 MB: two parts
      local topic = H.topic_with("s3_slowmp", lines)
      local work = H.workdir("s3_slowmp")
      local bucket = S.bucket("slowmp")
      local endpoint, proxy_log
      endpoint, proxy_log, stop = S.proxy(work, { "--method", "POST", "--match", "uploadId=", "--first", "2" })
      local path = job(work, topic, S.props(bucket, "/out", { ["fs.s3a.endpoint"] = endpoint,
        ["fs.s3a.multipart.threshold"] = "5M", ["fs.s3a.multipart.size"] = "5M" }))
      local code, log = run_debug(path, work)
      assert.equals(0, code, log)
      local _, faults = proxy_log():gsub("fault: answered 503 SlowDown to POST [^\n]*uploadId=", "")
      assert.equals(2, faults, proxy_log())
      assert.matches("S3 POST [^\n]*uploadId=[^\n]*: HTTP 503 SlowDown", log)
      local objects = S.objects(bucket, "out/")
      assert.equals(1, #objects)
      assert.matches("%-2$", objects[1].etag)
      assert.same(lines, (S.lines(bucket, "out/")))
      assert.same({}, S.uploads(bucket, "out/"))
      assert.equals(40000, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)

    it("that outlast fs.s3a.attempts.maximum fail the run naming S3, the bucket, the key, 503, SlowDown and the "
      .. "attempts; nothing is published, the offsets stay, and the next run publishes every record once", function()
      local lines = records("slower", 900)
      local topic = H.topic_with("s3_slower", lines)
      local work = H.workdir("s3_slower")
      local bucket = S.bucket("slower")
      -- Every PUT of the third file is refused: the first two are written, then deleted as the commit is undone.
      local endpoint, proxy_log
      endpoint, proxy_log, stop = S.proxy(work, { "--method", "PUT", "--match", "_0.2.txt", "--first", "1000" })
      local props = S.props(bucket, "/out", { ["fs.s3a.endpoint"] = endpoint, ["fs.s3a.attempts.maximum"] = "3",
        ["writer.file.max.records"] = "300", ["parallel.runner.threads"] = "1" })
      local path = job(work, topic, props)
      local last, log = H.run_fails(path, work, 1, { "S3 bucket " .. bucket .. " key out/" .. topic .. "/part.task_S3Job_",
        "_0.2.txt", "HTTP 503 SlowDown", "3 attempts" })
      local _, faults = proxy_log():gsub("fault: answered 503 SlowDown", "")
      assert.equals(3, faults, proxy_log())
      assert.truthy(proxy_log():find("DELETE /" .. bucket .. "/out/", 1, true), proxy_log()) -- the undo
      assert.same({}, S.objects(bucket, ""), last)
      assert.same({}, S.uploads(bucket, ""))
      assert.is_nil(H.stored_offsets(work, "S3Job")[topic .. ":0"], log)
      stop()
      props["fs.s3a.endpoint"] = S.endpoint()
      H.run_ok(job(work, topic, props), work)
      local got, objects = S.lines(bucket, "out/")
      assert.same(lines, H.sorted(got))
      assert.equals(3, #objects)
      assert.equals(900, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)
  end)

  describe("the server killed in the middle of a multipart upload", function()
    -- A server of its own (the test server serves other specs at the same time), killed (SIGKILL) by
    -- spec/support/s3_fault_proxy.py once half of the second part's body has reached it.
    local server, stop = nil, function() end
    after_each(function()
      stop()
      if server then server.stop() end
      server, stop = nil, function() end
    end)

    it("or only the connection cut there: the part is sent again and the object written once", function()
      local lines, line = {}, string.rep("c", 180)
      for i = 1, 40000 do lines[i] = string.format("%06d %s", i, line) end -- about 7.5 MB: two parts
      local topic = H.topic_with("s3_cut", lines)
      local work = H.workdir("s3_cut")
      local bucket = S.bucket("cut")
      local endpoint, proxy_log
      endpoint, proxy_log, stop = S.proxy(work, { "--method", "PUT", "--match", "partNumber=2&", "--nth", "1", "--cut" })
      H.run_ok(job(work, topic, S.props(bucket, "/big", { ["fs.s3a.endpoint"] = endpoint,
        ["fs.s3a.multipart.threshold"] = "5M", ["fs.s3a.multipart.size"] = "5M" })), work)
      assert.truthy(proxy_log():find("fault: handed on half the body and cut the connection", 1, true), proxy_log())
      local _, tries = proxy_log():gsub("\nPUT [^\n]*partNumber=2&", "")
      assert.equals(2, tries, proxy_log())
      local objects = S.objects(bucket, "big/")
      assert.equals(1, #objects)
      assert.matches("%-2$", objects[1].etag)
      assert.same(lines, (S.lines(bucket, "big/")))
      assert.same({}, S.uploads(bucket, ""))
      assert.equals(40000, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)

    it("fails the run, offsets unmoved; after its restart the next run publishes every record once and leaves no "
      .. "unfinished upload", function()
      server = S.own_server("s3kill")
      local env = server.env
      local lines, line = {}, string.rep("k", 180)
      for i = 1, 70000 do lines[i] = string.format("%06d %s", i, line) end -- about 13 MB: three parts of 5 MB
      local topic = H.topic_with("s3_kill", lines)
      local work = H.workdir("s3_kill")
      local bucket = S.bucket("kill", env)
      local endpoint, proxy_log
      endpoint, proxy_log, stop = S.proxy(work, { "--method", "PUT", "--match", "partNumber=2&", "--nth", "1",
        "--then", "kill -9 $(cat " .. H.q(server.dir .. "/s3proxy.pid") .. ")" }, server.url)
      local props = S.props(bucket, "/big", {
        ["fs.s3a.endpoint"] = endpoint,
        ["fs.s3a.access.key"] = server.access_key,
        ["fs.s3a.secret.key"] = server.secret_key,
        ["fs.s3a.multipart.threshold"] = "5M",
        ["fs.s3a.multipart.size"] = "5M",
        ["fs.s3a.fast.upload.active.blocks"] = "1",
        ["fs.s3a.attempts.maximum"] = "3",
      })
      local path = job(work, topic, props)
      local last, log = H.run_fails(path, work, 1, { "S3 bucket " .. bucket .. " key big/" .. topic .. "/part.task_S3Job_",
        "partNumber=2&uploadId=", "3 attempts" })
      assert.truthy(proxy_log():find("fault: handed on half the body, ran the command", 1, true), proxy_log())
      assert.is_nil(H.stored_offsets(work, "S3Job")[topic .. ":0"], log)
      stop()
      server.start()
      assert.same({}, S.objects(bucket, "", env), last)
      local left = S.uploads(bucket, "", env)
      assert.equals(1, #left) -- the killed server's upload, with its first part, outlived it
      props["fs.s3a.endpoint"] = server.url
      local log2 = H.run_ok(job(work, topic, props), work)
      -- The killed run's commit stayed journalled (nothing could undo it without the server): this run finished it.
      assert.matches("Aborted the unfinished upload " .. literal(left[1].id), log2)
      local objects = S.objects(bucket, "big/", env)
      assert.equals(1, #objects, log2)
      assert.matches("%-3$", objects[1].etag)
      assert.same(lines, (S.lines(bucket, "big/", env)))
      assert.same({}, S.uploads(bucket, "", env), log2)
      assert.equals(70000, H.stored_offsets(work, "S3Job")[topic .. ":0"])
    end)
  end)

  describe("bad input", function()
    -- Runs a job whose S3 settings EXTRA override the good ones and asserts that it fails naming NAMES, that
    -- nothing is published and that no offset is stored.
    local function fails(name, extra, names, env, status)
      local topic = H.topic_with("s3_bad", { "a", "b" })
      local work = H.workdir("s3_bad_" .. name)
      local bucket = S.bucket("bad")
      local props = S.props(bucket, "/out", extra)
      if extra.bucket then props["data.publisher.fs.uri"] = "s3a://" .. extra.bucket; props.bucket = nil end
      local last, log = H.run_fails(job(work, topic, props), work, status, names, env)
      assert.same({}, S.objects(bucket, ""))
      assert.is_nil(H.stored_offsets(work, "S3Job")[topic .. ":0"])
      return last, log
    end

    it("names S3, the bucket, the status and SignatureDoesNotMatch for a wrong secret", function()
      local last = fails("secret", { ["fs.s3a.secret.key"] = "not-the-secret" },
        { "S3 bucket ", "HTTP 403", "SignatureDoesNotMatch", "data.publisher.final.dir" })
      assert.falsy(last:find("not-the-secret", 1, true))
    end)

    it("names InvalidAccessKeyId for a key the server does not know", function()
      fails("key", { ["fs.s3a.access.key"] = "AKIANOSUCHKEY" }, { "HTTP 403", "InvalidAccessKeyId" })
    end)

    it("names NoSuchBucket for a bucket that is not there", function()
      fails("bucket", { bucket = "no-such-bucket-kg" }, { "S3 bucket no-such-bucket-kg", "HTTP 404", "NoSuchBucket" })
    end)

    it("names RequestTimeTooSkewed for a clock far off", function()
      fails("skew", {}, { "HTTP 403", "RequestTimeTooSkewed" }, { KINGEST_S3_CLOCK_SKEW = "-3600" })
    end)

    it("bounds an endpoint that refuses connections by its attempts, and says so", function()
      local _, port = H.sh("python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])'")
      fails("endpoint", { ["fs.s3a.endpoint"] = "http://127.0.0.1:" .. H.trim(port), ["fs.s3a.attempts.maximum"] = "3" },
        { "S3 bucket ", "3 attempts", "Couldn't connect" })
    end)

    it("refuses task data staged directly on S3", function()
      local work = H.workdir("s3_stage")
      local bucket = S.bucket("stage")
      local props = S.props(bucket, "/out", { ["writer.fs.uri"] = "s3a://" .. bucket })
      H.run_fails(job(work, "t", props), work, 78, { "writer.fs.uri=s3a://", "cannot be staged on an object store" })
    end)
  end)
end)
