-- kingest publishing to S3 (data.publisher.fs.uri=s3a://BUCKET) against the s3proxy of scripts/s3, task data local:
-- every object read back with boto3 (spec/support/s3_tool.py), never with kingest; exactly once for plain, rolled,
-- gzip, time-partitioned and Avro output; the commit without rename (If-None-Match: *, the journal's upload ids,
-- recovery, orphans swept); and each bad input with its error, nothing published and the offsets unmoved.
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
end)
