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
    assert.same({ { 1, "partition hook" }, { 2, "partition hook" } },
      { { errors[1].offset, errors[1].stage }, { errors[2].offset, errors[2].stage } })
    assert.are.equal("partition returned string; it must return the record's time in milliseconds since the epoch " ..
      "(a number >= 0)", errors[1].error)
    assert.matches("/job%.lua:%d+: no time for z$", errors[2].error)
    assert.matches("^\t[^\n]*/job%.lua:%d+ %(partition hook%)\n", errors[2].traceback)
    assert.truthy(log:find("Quarantining record " .. topic .. ":0 at offset 1: partition hook failed: partition returned " ..
      "string", 1, true), log)
    assert.is_nil(log:find("decodeRecord failed", 1, true), log)
  end)

  it("takes back all of a failed record's outputs, in every folder it wrote to; the failure is the partition hook's",
    function()
    local topic = H.topic_with("part_back", { "x", "y", "z" })
    local work = H.workdir("part_back")
    local log = H.run_ok(job(work, topic, {
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
    assert.truthy(log:find("Skipping record " .. topic .. ":0 at offset 1: partition hook failed: ", 1, true), log)
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

describe("bytes written", function()
  local SCHEMA = '{"type":"record","name":"Line","fields":[{"name":"id","type":"long"},{"name":"text","type":"string"}]}'
  -- Avro output: each line becomes a record of SCHEMA, encoded by the runtime.
  local TO_AVRO = [[
  decodeRecord = function(rec)
    local v = rec:value()
    return { id = tonumber(v:match("%d+")), text = v }
  end,
]]
  -- The same, a line holding "bad" failing in the script (quarantined with decode.error.policy=quarantine).
  local TO_AVRO_OR_FAIL = TO_AVRO:gsub("local v = rec:value%(%)", 'local v = rec:value()\n    if v:find("bad") then error("bad line") end')

  -- The records of the published file PATH, counted by tools that are not kingest's: fastavro, zcat, zstd, wc.
  local function records_in(path)
    local cmd
    if path:match("%.avro$") then
      cmd = "python3 -c " .. H.q("import sys, fastavro\nprint(sum(1 for _ in fastavro.reader(open(sys.argv[1], 'rb'))))") ..
        " " .. H.q(path)
    elseif path:match("%.gz$") then
      cmd = "zcat " .. H.q(path) .. " | wc -l"
    elseif path:match("%.zst$") then
      cmd = "zstd -q -dc " .. H.q(path) .. " | wc -l"
    else
      cmd = "wc -l <" .. H.q(path)
    end
    local code, out, err = H.sh(cmd)
    assert(code == 0, cmd .. ": " .. err)
    return tonumber(out:match("%d+"))
  end

  -- The files published under DIR, the quarantine folder (_errors) apart: their sizes (stat) and records.
  local function measured(dir)
    local bytes, records, files, errors = 0, 0, 0, 0
    for _, f in ipairs(H.files(dir)) do
      local path = dir .. "/" .. f
      local _, size = H.sh("stat -c %s " .. H.q(path))
      if f:match("^_errors/") then
        errors = errors + tonumber(size)
      else
        bytes = bytes + tonumber(size)
        records = records + records_in(path)
        files = files + 1
      end
    end
    return { bytes = bytes, records = records, files = files, errors = errors }
  end

  -- What the run in WORK of job NAME (whose LOG is given) reports it wrote: the log's last line, its history row
  -- (`kingest state history --json`), the job's line of the metrics file and the Prometheus textfile.
  local function reported(work, name, log)
    local r = {}
    local records, bytes = log:match("completed in %d+ms: (%d+) records, (%d+) bytes written")
    r.log = { records = tonumber(records), bytes = tonumber(bytes) }
    local code, out, err = H.kingest({ "state", "history", name, "--json", "-w", work })
    assert.are.equal(0, code, err)
    local run = cjson.decode(out)[1]
    r.history = { records = run.records_written, bytes = run.bytes_written }
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "metrics" and line.context.task == nil then
        r.metrics = { records = line.counters["gobblin.writer.records.written"],
                      bytes = line.counters["gobblin.writer.bytes.written"] }
      end
    end
    local prom = H.slurp(work .. "/kingest.prom") or ""
    r.prometheus = {
      records = tonumber(prom:match('\nkingest_run_records_written{job="' .. name .. '"} (%d+)')),
      bytes = tonumber(prom:match('\nkingest_run_bytes_written{job="' .. name .. '"} (%d+)')),
      bytes_total = tonumber(prom:match('\nkingest_bytes_written_total{job="' .. name .. '"} (%d+)')),
    }
    return r
  end

  local cases = {
    { name = "text", props = {} },
    { name = "gzip text", props = { ["writer.codec.type"] = "gzip" } },
    { name = "zstd text", props = { ["writer.codec.type"] = "zstd" } },
    { name = "Avro, null codec", props = { ["writer.output.format"] = "avro", ["writer.codec.type"] = "null",
      schema = SCHEMA }, code = TO_AVRO },
    { name = "Avro, deflate", props = { ["writer.output.format"] = "avro", schema = SCHEMA }, code = TO_AVRO },
    { name = "Avro, snappy", props = { ["writer.output.format"] = "avro", ["writer.codec.type"] = "snappy",
      schema = SCHEMA }, code = TO_AVRO },
    { name = "rolled gzip text", props = { ["writer.codec.type"] = "gzip", ["writer.file.max.records"] = "700" },
      files = 3 },
    { name = "rolled Avro", props = { ["writer.output.format"] = "avro", ["writer.file.max.records"] = "700",
      schema = SCHEMA }, code = TO_AVRO, files = 3 },
    { name = "Avro with quarantined records, not counted", props = { ["writer.output.format"] = "avro",
      schema = SCHEMA, ["decode.error.policy"] = "quarantine", ["task.skip.error.records"] = "-1",
      ["decode.error.max.ratio"] = "1" }, code = TO_AVRO_OR_FAIL, bad = true },
  }
  local topic
  for _, case in ipairs(cases) do
    it("are the bytes of the published files, in the log, the history, the metrics file and Prometheus: " ..
      case.name, function()
      if not topic then
        local lines = numbered(2000)
        for i = 100, 2000, 400 do lines[i] = lines[i] .. " bad" end
        topic = H.topic_with("bytes", lines)
      end
      local work = H.workdir("bytes")
      local props = { ["metrics.reporting.file.enabled"] = "true",
                      ["metrics.reporting.prometheus.file"] = work .. "/kingest.prom" }
      for k, v in pairs(case.props) do props[k] = v end
      local log = H.run_ok(H.job({ dir = work, name = "Bytes", topics = topic, props = props, code = case.code }), work)
      local m = measured(work .. "/job-output/" .. topic)
      assert.are.equal(case.files or 1, m.files)
      assert.are.equal(case.bad and 1995 or 2000, m.records)
      if case.bad then assert.is_true(m.errors > 0, "no quarantine file") end
      local r = reported(work, "Bytes", log)
      local expected = { records = m.records, bytes = m.bytes }
      assert.are.same(expected, r.log)
      assert.are.same(expected, r.history)
      assert.are.same(expected, r.metrics)
      assert.are.same({ records = m.records, bytes = m.bytes, bytes_total = m.bytes }, r.prometheus)
    end)
  end
end)

describe("CSV output", function()
  -- The rows of the CSV file PATH as Python's csv module reads them (gzip-compressed when it ends in .gz), with
  -- DELIMITER (default ",").
  local function csv_rows(path, delimiter)
    local script = "import csv, gzip, json, sys\n" ..
      "f = gzip.open(sys.argv[1], 'rt', newline='') if sys.argv[1].endswith('.gz') else open(sys.argv[1], newline='')\n" ..
      "print(json.dumps([row for row in csv.reader(f, delimiter=sys.argv[2], strict=True)]))\n"
    local code, out, err = H.sh("python3 -c " .. H.q(script) .. " " .. H.q(path) .. " " .. H.q(delimiter or ","))
    assert(code == 0, err)
    return cjson.decode(out)
  end

  -- Every row of the CSV files under DIR (the quarantine folder aside), file by file: { file = { rows } }.
  local function files_rows(dir, delimiter)
    local out, names = {}, {}
    for _, f in ipairs(H.files(dir)) do
      if not f:match("^_errors/") then
        names[#names + 1] = f
        out[#names] = csv_rows(dir .. "/" .. f, delimiter)
      end
    end
    return out, names
  end

  local PAYLOADS = {
    '{"id":1,"name":"plain","score":2.5,"ok":true,"tags":["a","b"]}',
    '{"name":"a, \\"quoted\\"\\nline","id":2,"ok":false,"score":0.1,"tags":[]}',
    '{"id":9007199254740993,"name":"","score":null,"note":"cr\\r here"}',
    '{"id":4,"name":"nested","tags":{"k":[1,{"x":null}]},"score":-0.25}',
    '{"id":5}',
  }
  local HEADER = { "id", "name", "score", "ok", "tags", "note" }
  -- PAYLOADS as Python's csv module reads the lines: strings as they were, numbers as JSON writes them, null and
  -- absent fields empty, nested values as JSON text.
  local ROWS = {
    { "1", "plain", "2.5", "true", '["a","b"]', "" },
    { "2", 'a, "quoted"\nline', "0.1", "false", "[]", "" },
    { "9007199254740993", "", "", "", "", "cr\r here" },
    { "4", "nested", "-0.25", "", '{"k":[1,{"x":null}]}', "" },
    { "5", "", "", "", "", "" },
  }

  it("writes RFC 4180 lines of the columns from a JSON source's tables, a header in each rolled file", function()
    local topic = H.topic_with("csv_json", PAYLOADS)
    local work = H.workdir("csv_json")
    H.run_ok(job(work, topic, {
      ["writer.output.format"] = "csv",
      ["writer.csv.columns"] = table.concat(HEADER, ","),
      ["writer.csv.header"] = "true",
      ["writer.file.max.records"] = "2",
    }, '  source = "gobblin.source.kafka_json",'), work)
    local files, names = files_rows(work .. "/job-output/" .. topic)
    assert.are.equal(3, #files)
    local rows = {}
    for i, f in ipairs(files) do
      assert.matches("%.csv$", names[i])
      assert.same(HEADER, f[1], names[i] .. " begins with the header")
      for j = 2, #f do rows[#rows + 1] = f[j] end
    end
    -- The empty array may be [] or {} as the JSON codec writes an empty table: that is the codec's, not CSV's.
    rows[2][5] = rows[2][5] == "{}" and "[]" or rows[2][5]
    assert.same(ROWS, rows)
    -- LF line ends, and quotes only where RFC 4180 needs them.
    local raw = H.slurp(work .. "/job-output/" .. topic .. "/" .. names[1])
    assert.are.equal('id,name,score,ok,tags,note\n1,plain,2.5,true,"[""a"",""b""]",\n2,"a, ""quoted""\nline",0.1,false,',
      raw:sub(1, 94))
  end)

  it("takes the columns from the job's schema and the values from decodeRecord's tables, gzip-compressed", function()
    local topic = H.topic_with("csv_schema", { "1 one", "2 two", "3 three" })
    local work = H.workdir("csv_schema")
    H.run_ok(job(work, topic, {
      ["writer.output.format"] = "csv",
      ["writer.codec.type"] = "gzip",
      ["writer.csv.header"] = "true",
      schema = '{"type":"record","name":"Row","fields":[{"name":"n","type":"long"},{"name":"word","type":"string"},' ..
        '{"name":"even","type":"boolean"},{"name":"big","type":"long"}]}',
    }, [[
  decodeRecord = function(rec)
    local n, word = rec:value():match("^(%d+) (.*)$")
    n = tonumber(n)
    return { word = word, n = n, even = n % 2 == 0, big = 9007199254740993LL * n }
  end,
]]), work)
    local files, names = files_rows(work .. "/job-output/" .. topic)
    assert.same({ "part.task_Shaped_" .. names[1]:match("task_Shaped_(%d+_0)") .. ".csv.gz" }, names)
    assert.same({ { "n", "word", "even", "big" }, { "1", "one", "false", "9007199254740993" },
                  { "2", "two", "true", "18014398509481986" }, { "3", "three", "false", "27021597764222979" } },
      files[1])
  end)

  it("fails a record with a field that is no column, naming it, unless writer.csv.extra.fields=ignore", function()
    local topic = H.topic_with("csv_extra", { '{"id":1,"name":"a"}', '{"id":2,"name":"b","surprise":true}', '[3,"c"]',
      '[4,"d","one too many"]', 'not json', '{"id":6,"name":"f"}' })
    local work = H.workdir("csv_extra")
    local props = {
      ["writer.output.format"] = "csv",
      ["writer.csv.columns"] = "id,name",
      ["decode.error.policy"] = "quarantine",
      ["decode.error.max.ratio"] = "1",
    }
    -- No decodeRecord: the JSON payloads go to the CSV writer as they are.
    local log = H.run_ok(job(work, topic, props), work)
    local base = work .. "/job-output/" .. topic
    assert.same({ { { "1", "a" }, { "3", "c" }, { "6", "f" } } }, (files_rows(base)))
    local quarantined = H.json_lines(base .. "/_errors")
    assert.are.equal(3, #quarantined)
    local offsets, stages = {}, {}
    for i, q in ipairs(quarantined) do offsets[i], stages[i] = q.offset, q.stage end
    assert.same({ 1, 3, 4 }, offsets)
    assert.same({ "writer", "writer", "writer" }, stages)
    assert.truthy(quarantined[1].error:find('its field "surprise" is not one of the columns (id,name); ' ..
      'writer.csv.extra.fields=ignore leaves such fields out', 1, true), quarantined[1].error)
    assert.truthy(quarantined[2].error:find("it is an array of 3 items, and there are 2 columns", 1, true))
    assert.truthy(quarantined[3].error:find("it is not a JSON object or array", 1, true))
    assert.truthy(log:find("Quarantining record " .. topic .. ":0 at offset 1: writer failed: cannot write the " ..
      "record as a line of CSV file ", 1, true), log)

    -- Ignored: the field is left out, the array's extra item too; CRLF line ends and another delimiter.
    local work2 = H.workdir("csv_extra_ignore")
    props["writer.csv.extra.fields"] = "ignore"
    props["writer.csv.line.end"] = "crlf"
    props["writer.csv.delimiter"] = ";"
    H.run_ok(job(work2, topic, props), work2)
    local base2 = work2 .. "/job-output/" .. topic
    assert.same({ { { "1", "a" }, { "2", "b" }, { "3", "c" }, { "4", "d" }, { "6", "f" } } }, (files_rows(base2, ";")))
    local _, names = files_rows(base2, ";")
    assert.are.equal("1;a\r\n2;b\r\n3;c\r\n4;d\r\n6;f\r\n", H.slurp(base2 .. "/" .. names[1]))
    assert.are.equal(1, #H.json_lines(base2 .. "/_errors")) -- not json is still no record
  end)

  it("refuses a csv job whose columns cannot be known, and CSV settings for another format, at validate and run",
    function()
      local work = H.workdir("csv_bad")
      local function refused(props, names)
        local path = job(work, "t", props)
        local code, _, err = H.kingest({ "validate", path }, { GOBBLIN_WORK_DIR = work })
        assert.are.equal(78, code, err)
        for _, name in ipairs(names) do assert.truthy(err:find(name, 1, true), err) end
        H.run_fails(path, work, 78, names)
      end
      refused({ ["writer.output.format"] = "csv" },
        { "writer.output.format=csv needs its columns: set writer.csv.columns", "writer.avro.schema" })
      refused({ ["writer.output.format"] = "csv", schema = '"string"' },
        { "schema (the columns of writer.output.format=csv): the schema is not a record" })
      refused({ ["writer.output.format"] = "csv", ["writer.csv.columns"] = "id,name,id" }, { "column id is given twice" })
      refused({ ["writer.output.format"] = "csv", ["writer.csv.columns"] = "id", ["writer.csv.delimiter"] = '"' },
        { "writer.csv.delimiter must be one character other than a double quote" })
      refused({ ["writer.csv.header"] = "true" }, { "writer.csv.header is read by the CSV writer only" })
      refused({ ["writer.output.format"] = "csv", ["writer.csv.columns"] = "id", ["simple.writer.prepend.size"] = "true" },
        { "simple.writer.prepend.size=true" })
    end)
end)
