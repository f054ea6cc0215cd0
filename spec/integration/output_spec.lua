-- Output shaping against the real broker: compressed text files (read with gzip and zstd), files rolled by size
-- and by records (every record exactly once across them), and time-partitioned folders (by the Kafka timestamp,
-- or by a Lua hook), each bad setting with its error.
local H = require("support.harness")
local cjson = require("cjson")

local job = H.job_writer("Shaped")

-- The lines of every file under DIR, decompressed by the tool for its extension (gzip, zstd, or none).
local function lines_under(dir)
  local lines, files = {}, H.files(dir)
  for _, f in ipairs(files) do
    local path = H.q(dir .. "/" .. f)
    local cmd = f:match("%.gz$") and "gzip -dc " .. path or f:match("%.zst$") and "zstd -q -dc " .. path or
      "cat " .. path
    local code, out, err = H.sh(cmd)
    assert(code == 0, cmd .. ": " .. err)
    for line in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  end
  return lines, files
end

local function numbered(n, prefix)
  local lines = {}
  for i = 1, n do lines[i] = string.format("%s-%05d some payload text to compress", prefix or "rec", i) end
  return lines
end

describe("compressed text output", function()
  for _, c in ipairs({ { codec = "gzip", ext = "txt.gz" }, { codec = "zstd", ext = "txt.zst" } }) do
    it("writes " .. c.codec .. " files that " .. c.codec .. " reads back, every record once", function()
      local lines = numbered(3000)
      local topic = H.topic_with("codec_" .. c.codec, lines)
      local work = H.workdir("codec")
      H.run_ok(job(work, topic, { ["writer.codec.type"] = c.codec }), work)
      local got, files = lines_under(work .. "/job-output/" .. topic)
      assert.equals(1, #files)
      assert.matches("^part%.task_Shaped_%d+_0%." .. c.ext:gsub("%.", "%%.") .. "$", files[1])
      assert.same(lines, got)
    end)
  end

  it("refuses an unknown codec, and an Avro codec for text (78, as validate)", function()
    local work = H.workdir("codec_bad")
    H.run_fails(job(work, "t", { ["writer.codec.type"] = "lz4" }), work, 78,
      { "writer.codec.type", "lz4", "null, deflate, snappy, gzip, zstd" })
    H.run_fails(job(work, "t", { ["writer.codec.type"] = "snappy" }), work, 78,
      { "writer.codec.type=snappy", "gzip or zstd" })
  end)
end)

describe("rolling", function()
  it("rolls a task's file by records; every record is published exactly once, in offset order", function()
    local lines = numbered(2500)
    local topic = H.topic_with("roll_records", lines)
    local work = H.workdir("roll_records")
    H.run_ok(job(work, topic, { ["writer.file.max.records"] = "1000" }), work)
    local got, files = lines_under(work .. "/job-output/" .. topic)
    assert.equals(3, #files)
    for i, f in ipairs(files) do assert.matches("^part%.task_Shaped_%d+_0%." .. (i - 1) .. "%.txt$", f) end
    assert.same(lines, got) -- file 0, 1, 2 in name order hold the records in offset order
    local counts = {}
    for _, f in ipairs(files) do
      local _, n = H.sh("wc -l <" .. H.q(work .. "/job-output/" .. topic .. "/" .. f))
      counts[#counts + 1] = tonumber(n)
    end
    assert.same({ 1000, 1000, 500 }, counts)
    H.assert_exactly_once(work, { topic })
  end)

  it("rolls by size, compressed too, at record boundaries", function()
    local lines = numbered(4000)
    local topic = H.topic_with("roll_size", lines)
    local work = H.workdir("roll_size")
    H.run_ok(job(work, topic, { ["writer.file.max.size"] = "50000" }), work)
    local got, files = lines_under(work .. "/job-output/" .. topic)
    assert.same(lines, got)
    assert.truthy(#files >= 3, #files .. " files")
    for _, f in ipairs(files) do
      local _, size = H.sh("stat -c %s " .. H.q(work .. "/job-output/" .. topic .. "/" .. f))
      assert.truthy(tonumber(size) < 50000 + 100, f .. " has " .. size .. " bytes")
    end
    -- Compressed: blocks of 64,000 bytes go to the compressor, so the files roll at block boundaries.
    local more = numbered(20000, "gz")
    local ztopic = H.topic_with("roll_size_gz", more)
    local zwork = H.workdir("roll_size_gz")
    H.run_ok(job(zwork, ztopic, { ["writer.file.max.size"] = "20000", ["writer.codec.type"] = "gzip" }), zwork)
    local zgot, zfiles = lines_under(zwork .. "/job-output/" .. ztopic)
    assert.same(more, zgot)
    assert.truthy(#zfiles >= 2, #zfiles .. " gzip files")
  end)

  it("refuses a roll size or count of 0 (78, as validate)", function()
    local work = H.workdir("roll_bad")
    H.run_fails(job(work, "t", { ["writer.file.max.size"] = "0" }), work, 78, { "writer.file.max.size", "from 1" })
    H.run_fails(job(work, "t", { ["writer.file.max.records"] = "0" }), work, 78, { "writer.file.max.records" })
  end)
end)

describe("time-partitioned folders", function()
  -- Produces RECORDS ({ iso time, payload } pairs) to partition 0 of a new topic, each with its time as the Kafka
  -- timestamp (Python's confluent-kafka: kcat cannot set one). The broker refuses timestamps more than an hour
  -- ahead (log.message.timestamp.after.max.ms), so the times are in the past.
  local function topic_at(name, records)
    local topic = H.unique(name)
    H.create_topic(topic, 1)
    local lines = {}
    for _, r in ipairs(records) do
      local _, secs = H.sh("date -u -d " .. H.q(r[1]) .. " +%s")
      lines[#lines + 1] = (tonumber(secs) * 1000) .. "\t" .. r[2]
    end
    local script = "import sys\nfrom confluent_kafka import Producer\n" ..
      "p = Producer({'bootstrap.servers': sys.argv[1]})\nfailed = []\n" ..
      "for line in sys.stdin.read().splitlines():\n" ..
      "    ts, value = line.split('\\t', 1)\n" ..
      "    p.produce(sys.argv[2], value.encode(), partition=0, timestamp=int(ts),\n" ..
      "              on_delivery=lambda err, _: err and failed.append(err))\n" ..
      "if p.flush(30) or failed: sys.exit('producing failed: %s' % failed[:1])\n"
    local input = H.tmp .. "/" .. H.unique("ts_in")
    H.spit(input, table.concat(lines, "\n") .. "\n")
    local code, _, err = H.sh("python3 -c " .. H.q(script) .. " " .. H.q(H.bootstrap()) .. " " .. H.q(topic) ..
      " <" .. H.q(input))
    os.remove(input)
    assert(code == 0, err)
    return topic
  end

  it("files each record under its Kafka timestamp's hour, in the zone given, a late record in its own hour", function()
    local topic = topic_at("part_ts", {
      { "2026-11-28T15:10:00Z", "a" }, { "2026-11-28T16:59:59Z", "b" }, { "2026-11-28T15:45:00Z", "late" },
      { "2026-11-27T23:30:00Z", "day before" },
    })
    local work = H.workdir("part_ts")
    H.run_ok(job(work, topic, {
      ["writer.partitioner.class"] = "gobblin.writer.partitioner.TimeBasedWriterPartitioner",
      ["writer.partition.pattern"] = "yyyy/MM/dd/HH",
      ["writer.partition.timezone"] = "UTC",
      ["writer.partition.prefix"] = "hourly",
    }), work)
    local base = work .. "/job-output/" .. topic
    assert.same({ "a", "late" }, H.output_lines(base .. "/hourly/2026/11/28/15"))
    assert.same({ "b" }, H.output_lines(base .. "/hourly/2026/11/28/16"))
    assert.same({ "day before" }, H.output_lines(base .. "/hourly/2026/11/27/23"))
    assert.equals(4, #H.output_lines(base))
    -- Gobblin's default zone, America/Los_Angeles (UTC-8 in November), and granularity, HOUR.
    local la = H.workdir("part_la")
    H.run_ok(job(la, topic, { ["writer.partitioner.class"] = "TimeBasedWriterPartitioner" }), la)
    assert.same({ "a", "late" }, H.output_lines(la .. "/job-output/" .. topic .. "/2026/11/28/07"))
    assert.same({ "day before" }, H.output_lines(la .. "/job-output/" .. topic .. "/2026/11/27/15"))
  end)

  it("files records under the time a Lua partition hook returns, with DAY granularity", function()
    local topic = H.topic_with("part_hook", {
      '{"id":1,"at":"2026-01-02"}', '{"id":2,"at":"2025-12-31"}', '{"id":3,"at":"2026-01-02"}',
    })
    local work = H.workdir("part_hook")
    H.run_ok(job(work, topic, {
      ["writer.partitioner.class"] = "TimeBasedJsonWriterPartitioner",
      ["writer.partition.granularity"] = "DAY",
      ["writer.partition.timezone"] = "UTC",
      ["writer.output.format"] = "json",
    }, [[
  source = "gobblin.source.kafka_json",
  partition = function(r)
    return ({ ["2026-01-02"] = 1767355200000, ["2025-12-31"] = 1767182400000 })[r.at] -- noon UTC
  end,
]]), work)
    local base = work .. "/job-output/" .. topic
    local function ids(dir)
      local out = {}
      for _, l in ipairs(H.output_lines(dir)) do out[#out + 1] = cjson.decode(l).id end
      return out
    end
    assert.same({ 1, 3 }, ids(base .. "/2026/01/02"))
    assert.same({ 2 }, ids(base .. "/2025/12/31"))
  end)

  it("names the partition hook, not decodeRecord, as the stage of a record whose time it cannot give", function()
    local topic = H.topic_with("part_stage", { "x", "y", "z" })
    local work = H.workdir("part_stage")
    local log = H.run_ok(job(work, topic, {
      ["writer.partitioner.class"] = "TimeBasedWriterPartitioner",
      ["writer.partition.pattern"] = "yyyy",
      ["writer.partition.timezone"] = "UTC",
      ["decode.error.policy"] = "quarantine",
      ["decode.error.max.ratio"] = "1",
    }, [[
  partition = function(rec)
    if rec:value() == "y" then return "2001" end
    if rec:value() == "z" then error("no time for z") end
    return 978307200000 -- 2001-01-01
  end,
]]), work)
    local base = work .. "/job-output/" .. topic
    assert.same({ "x" }, H.output_lines(base .. "/2001"))
    local errors = H.json_lines(base .. "/_errors")
    assert.same({ { 1, "partition" }, { 2, "partition" } },
      { { errors[1].offset, errors[1].stage }, { errors[2].offset, errors[2].stage } })
    assert.are.equal("partition returned string; it must return the record's time in milliseconds since the epoch " ..
      "(a number >= 0)", errors[1].error)
    assert.matches("/job%.lua:%d+: no time for z$", errors[2].error)
    assert.matches("^\t[^\n]*/job%.lua:%d+ %(partition%)\n", errors[2].traceback)
    assert.truthy(log:find("Quarantining record " .. topic .. ":0 at offset 1: partition failed: partition returned " ..
      "string", 1, true), log)
    assert.is_nil(log:find("decodeRecord failed", 1, true), log)
  end)

  it("takes back all of a failed record's outputs, in every folder it wrote to", function()
    local topic = H.topic_with("part_back", { "x", "y", "z" })
    local work = H.workdir("part_back")
    H.run_ok(job(work, topic, {
      ["writer.partitioner.class"] = "TimeBasedWriterPartitioner",
      ["writer.partition.pattern"] = "yyyy",
      ["writer.partition.timezone"] = "UTC",
      ["task.skip.error.records"] = "-1",
      ["decode.error.max.ratio"] = "1",
    }, [[
  converters = { function(r)
    local v = r:value()
    return require("gobblin").many({ v .. "-2001", v .. "-2002" })
  end },
  partition = function(out)
    if out == "y-2002" then error("no year for y-2002") end
    return out:sub(-4) == "2001" and 978307200000 or 1009843200000 -- 2001-01-01, 2002-01-01
  end,
]]), work)
    local base = work .. "/job-output/" .. topic
    assert.same({ "x-2001", "z-2001" }, H.output_lines(base .. "/2001")) -- y-2001 was taken back
    assert.same({ "x-2002", "z-2002" }, H.output_lines(base .. "/2002"))
  end)

  it("refuses a pattern with an unknown letter, an unknown zone, and partition settings without a partitioner",
    function()
      local work = H.workdir("part_bad")
      local P = "gobblin.writer.partitioner.TimeBasedWriterPartitioner"
      H.run_fails(job(work, "t", { ["writer.partitioner.class"] = P, ["writer.partition.pattern"] = "yyyy/MM/dd/QQ" }),
        work, 78, { "writer.partition.pattern", "unknown letter 'Q' at position 12" })
      H.run_fails(job(work, "t", { ["writer.partitioner.class"] = P, ["writer.partition.timezone"] = "Mars/Base" }),
        work, 78, { "writer.partition.timezone", "unknown time zone 'Mars/Base'" })
      H.run_fails(job(work, "t", { ["writer.partition.pattern"] = "yyyy" }), work, 78,
        { "writer.partition.pattern is read by writer.partitioner.class" })
      H.run_fails(job(work, "t", { ["writer.partitioner.class"] = "TimePartitioner" }), work, 78,
        { "unknown class 'TimePartitioner'" })
      H.run_fails(job(work, "t", {}, "  partition = function() return 0 end,"), work, 78,
        { "partition", "writer.partitioner.class" })
    end)
end)
