-- Avro end to end, against the real broker and the schema registry of scripts/registry: records framed for a
-- registry (Confluent's and LinkedIn's) in, Avro object container files out, Avro records in Lua, and each bad
-- input with its error. Output files are read with fastavro (spec/support/avro_read.py) and avrocat, not with
-- kingest.
local H = require("support.harness")
local cjson = require("cjson")

local V1 = '{"type":"record","name":"Event","namespace":"kingest.test","fields":[' ..
  '{"name":"id","type":"long"},{"name":"name","type":"string"},' ..
  '{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}'
-- V1 with two fields added, each with a default: what a reader of V2 sees of V1's records.
local V2 = '{"type":"record","name":"Event","namespace":"kingest.test","fields":[' ..
  '{"name":"id","type":"long"},{"name":"name","type":"string"},' ..
  '{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},' ..
  '{"name":"country","type":"string","default":"unknown"},' ..
  '{"name":"score","type":["null","double"],"default":null}]}'

local trim = H.trim

local registry_url
local function registry()
  if not registry_url then
    local code, out, err = H.sh(H.q(H.root .. "/scripts/registry") .. " url")
    assert(code == 0, "no registry: " .. err)
    registry_url = trim(out)
  end
  return registry_url
end
local function confluent_api() return registry() .. "/apis/ccompat/v7" end

local function schema_file(text)
  os.execute("mkdir -p " .. H.q(H.tmp))
  local path = H.tmp .. "/" .. H.unique("schema") .. ".avsc"
  H.spit(path, text)
  return path
end

local function avro_produce(args, stdin)
  local code, out, err = H.avro_produce(args, stdin)
  assert(code == 0, "avro_produce: " .. err)
  return trim(out)
end

-- The properties of a job reading Confluent-framed Avro records from the test registry, with EXTRA added.
local function confluent_props(extra)
  local p = { ["kafka.deserializer.type"] = "CONFLUENT_AVRO", ["kafka.schema.registry.url"] = confluent_api() }
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

-- Produces the JSON objects RECORDS to TOPIC, encoded with SCHEMA and framed as FORMAT says.
local function produce(format, url, topic, schema, records)
  local lines = {}
  for i, r in ipairs(records) do lines[i] = cjson.encode(r) end
  avro_produce({ "produce", format, H.bootstrap(), url, topic, schema_file(schema) }, table.concat(lines, "\n") .. "\n")
end

local function produce_raw(topic, hex_lines)
  avro_produce({ "raw", H.bootstrap(), topic }, table.concat(hex_lines, "\n") .. "\n")
end

-- What the proxy at URL has seen: a list of { time =, path =, answer = }, oldest first.
local function proxy_log(url)
  local code, out, err = H.sh("curl -sf " .. H.q(url .. "/_proxy/log"))
  assert(code == 0, err)
  local entries = {}
  for line in out:gmatch("[^\n]+") do entries[#entries + 1] = cjson.decode(line) end
  return entries
end

-- The Avro files under DIR read by fastavro, avrocat and avro-tools: a list of { schema =, codec =, count =, file = } and all records
-- (tables, in file order).
local function read_avro(dir)
  local files = {}
  for _, f in ipairs(H.files(dir)) do
    if f:match("%.avro$") then files[#files + 1] = H.q(dir .. "/" .. f) end
  end
  assert(#files > 0, "no .avro file under " .. dir)
  local code, out, err = H.sh("python3 " .. H.q(H.root .. "/spec/support/avro_read.py") .. " " .. table.concat(files, " "))
  assert(code == 0, err)
  local metas, records = {}, {}
  for line in out:gmatch("[^\n]+") do
    local v = cjson.decode(line)
    if v.file and v.schema then metas[#metas + 1] = v else records[#records + 1] = v end
  end
  return metas, records
end

local function by_id(records)
  table.sort(records, function(a, b) return a.id < b.id end)
  return records
end

local function events(n, from)
  local list = {}
  for i = 1, n do
    local id = (from or 0) + i
    list[i] = { id = id, name = "name-" .. id, at = 1700000000000 + id }
  end
  return list
end

describe("Avro records from a schema registry", function()
  local job = H.job_writer("AvroJob")

  it("writes Confluent-framed records to Avro files with the registry's schema, byte for byte, datums as they are",
    function()
      local topic = H.unique("avro_pass")
      H.create_topic(topic, 2)
      produce("confluent", confluent_api(), topic, V1, events(500))
      local work = H.workdir("avro_pass")
      local path = job(work, topic, confluent_props({
        ["writer.output.format"] = "avro",
      }))
      local log = H.run_ok(path, work)
      local metas, records = read_avro(work .. "/job-output/" .. topic)
      for _, m in ipairs(metas) do
        assert.equals(V1, m.schema) -- the registry's text, logicalType kept
        assert.equals("deflate", m.codec)
        assert.matches("%.avro$", m.file)
      end
      assert.same(events(500), by_id(records))
      assert.matches(": 500 records, %d+ bytes written", log)
      -- The second run finds nothing new: the offsets moved.
      H.run_ok(path, work)
      local _, again = read_avro(work .. "/job-output/" .. topic)
      assert.equals(500, #again)
    end)

  for _, codec in ipairs({ "null", "snappy", "deflate" }) do
    it("writes files every reader reads with writer.codec.type=" .. codec, function()
      local topic = H.unique("avro_codec")
      H.create_topic(topic, 1)
      produce("confluent", confluent_api(), topic, V1, events(300))
      local work = H.workdir("avro_codec")
      H.run_ok(job(work, topic, confluent_props({
        ["writer.builder.class"] = "gobblin.writer.AvroDataWriterBuilder",
        ["writer.codec.type"] = codec,
        ["writer.deflate.level"] = "6",
      })), work)
      local metas, records = read_avro(work .. "/job-output/" .. topic)
      assert.equals(codec, metas[1].codec)
      assert.same(events(300), by_id(records))
    end)
  end

  it("reads LinkedIn's framing (16-byte MD5 ids) with source.class=KafkaAvroSource", function()
    local topic = H.unique("avro_linkedin")
    H.create_topic(topic, 1)
    local group = registry() .. "/apis/registry/v2/groups/" .. H.unique("group") .. "/artifacts"
    produce("linkedin", group, topic, V1, events(50))
    local work = H.workdir("avro_linkedin")
    H.run_ok(job(work, topic, {
      ["source.class"] = "gobblin.source.extractor.extract.kafka.KafkaAvroSource",
      ["kafka.schema.registry.url"] = group,
      ["writer.output.format"] = "avro",
    }), work)
    local metas, records = read_avro(work .. "/job-output/" .. topic)
    assert.equals(V1, metas[1].schema)
    assert.same(events(50), by_id(records))
  end)

  it("resolves records of an older schema to the topic's latest, a field added with a default included", function()
    local topic = H.unique("avro_evolve")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(3))
    local newer = { { id = 4, name = "name-4", at = 1700000000004, country = "FR", score = 0.5 } }
    produce("confluent", confluent_api(), topic, V2, newer)
    local work = H.workdir("avro_evolve")
    H.run_ok(job(work, topic, confluent_props({
      ["writer.output.format"] = "avro",
    })), work)
    local metas, records = read_avro(work .. "/job-output/" .. topic)
    assert.equals(V2, metas[1].schema)
    local expected = events(3)
    for _, e in ipairs(expected) do
      e.country = "unknown"
      e.score = cjson.null
    end
    expected[4] = { id = 4, name = "name-4", at = 1700000000004, country = "FR", score = 0.5 }
    assert.same(expected, by_id(records))
  end)

  it("writes Avro records as JSON lines to text output", function()
    local topic = H.unique("avro_json")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(5))
    local work = H.workdir("avro_json")
    H.run_ok(job(work, topic, confluent_props({
      ["writer.output.format"] = "json",
    })), work)
    local got = {}
    for _, line in ipairs(H.published(work, topic)) do got[#got + 1] = cjson.decode(line) end
    assert.same(events(5), by_id(got))
  end)

  it("writes Avro records as CSV lines of the columns, read back by Python's csv module", function()
    local topic = H.unique("avro_csv")
    H.create_topic(topic, 1)
    local list = events(5)
    list[3].name = 'with, a "quote"'
    produce("confluent", confluent_api(), topic, V1, list)
    local work = H.workdir("avro_csv")
    H.run_ok(job(work, topic, confluent_props({
      ["writer.output.format"] = "csv",
      ["writer.csv.columns"] = "name,id,at",
      ["writer.csv.header"] = "true",
    })), work)
    local files = H.files(work .. "/job-output/" .. topic)
    assert.are.equal(1, #files)
    local code, out, err = H.sh("python3 -c " ..
      H.q("import csv, json, sys\nprint(json.dumps(list(csv.reader(open(sys.argv[1], newline='')))))") .. " " ..
      H.q(work .. "/job-output/" .. topic .. "/" .. files[1]))
    assert.are.equal(0, code, err)
    local expected = { { "name", "id", "at" } }
    for _, e in ipairs(list) do expected[#expected + 1] = { e.name, tostring(e.id), tostring(e.at) } end
    assert.same(expected, cjson.decode(out))
  end)

  it("writes bytes, fixed, decimals, arrays, maps and unions as JSON that Python reads as they were produced",
    function()
      -- Records made and checked by spec/support/avro_json.py (strict UTF-8, Python's json, fastavro's JSON writer).
      local schema = schema_file([[{"type": "record", "name": "Blob", "namespace": "kingest.test", "fields": [
        {"name": "id", "type": "long"},
        {"name": "b", "type": "bytes"},
        {"name": "f", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}},
        {"name": "big", "type": {"type": "fixed", "name": "D16", "size": 16, "logicalType": "decimal",
          "precision": 38, "scale": 2}},
        {"name": "ints", "type": {"type": "array", "items": "int"}},
        {"name": "blobs", "type": {"type": "array", "items": "bytes"}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "maybe", "type": ["null", "bytes"]},
        {"name": "choice", "type": ["null", "string",
          {"type": "record", "name": "Inner", "fields": [{"name": "n", "type": "long"}]}]},
        {"name": "either", "type": ["string", "bytes"]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "x", "type": "double"},
        {"name": "name", "type": "string"}]}]])
      local helper = "python3 " .. H.q(H.root .. "/spec/support/avro_json.py")
      local topic = H.unique("avro_json_types")
      H.create_topic(topic, 1)
      local code, _, err = H.sh(helper .. " produce " .. H.q(H.bootstrap()) .. " " .. H.q(confluent_api()) .. " " ..
        H.q(topic) .. " " .. H.q(schema) .. " 201 24")
      assert.are.equal(0, code, err)
      -- Written by the engine's path for record views, and as a converter's table.
      for _, code_text in ipairs({ "", "  converters = { function(r) return r end },\n" }) do
        local work = H.workdir("avro_json_types")
        H.run_ok(job(work, topic, confluent_props({ ["writer.output.format"] = "json" }), code_text), work)
        local out
        code, out, err = H.sh(helper .. " check " .. H.q(schema) .. " 201 24 " .. H.q(work .. "/job-output/" .. topic))
        assert.are.equal(0, code, err)
        assert.are.equal("201", trim(out))
      end
    end)

  it("hands converters decoded records and encodes what they return with the output schema", function()
    local topic = H.unique("avro_lua")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(20))
    local work = H.workdir("avro_lua")
    H.run_ok(job(work, topic, confluent_props({
      ["writer.output.format"] = "avro",
    }), [[
  converters = {
    function(r) if r.id % 2 == 0 then return nil end return r end,
    function(r) r.name = r.name:upper(); return r end,
  },
]]), work)
    local _, records = read_avro(work .. "/job-output/" .. topic)
    local expected = {}
    for _, e in ipairs(events(20)) do
      if e.id % 2 == 1 then
        e.name = e.name:upper()
        expected[#expected + 1] = e
      end
    end
    assert.same(expected, by_id(records))
  end)

  it("turns JSON bytes into Avro with a declared schema and gobblin.converter.json_to_avro", function()
    local topic = H.topic_with("json_in", {
      '{"id": 1, "name": "a", "at": 5, "extra": true}',
      '{"id": 2, "name": "b", "at": 6, "country": "DE"}',
    })
    local work = H.workdir("json_to_avro")
    H.run_ok(job(work, topic, { ["writer.output.format"] = "avro" }, [[
  schema = ]] .. string.format("%q", V2) .. [[,
  converters = { require("gobblin.converter").json_to_avro() },
]]), work)
    local metas, records = read_avro(work .. "/job-output/" .. topic)
    assert.equals(V2, metas[1].schema)
    assert.same({
      { id = 1, name = "a", at = 5, country = "unknown", score = cjson.null },
      { id = 2, name = "b", at = 6, country = "DE", score = cjson.null },
    }, by_id(records))
  end)
end)

describe("Avro bad input", function()
  local job = H.job_writer("AvroBad")

  local function avro_job(work, topic, props, code)
    local p = confluent_props({ ["writer.output.format"] = "avro" })
    for k, v in pairs(props or {}) do p[k] = v end
    return job(work, topic, p, code)
  end

  it("fails within a bounded time (kafka.schema.registry.retry.timeout.ms), offsets unmoved, when the registry does "
    .. "not answer; the next run reads all", function()
      local topic = H.unique("avro_down")
      H.create_topic(topic, 1)
      produce("confluent", confluent_api(), topic, V1, events(10))
      local work = H.workdir("avro_down")
      local started = H.now_ms()
      local last = H.run_fails(avro_job(work, topic, { ["kafka.schema.registry.url"] = "http://127.0.0.1:9/ccompat",
        ["kafka.schema.registry.retry.timeout.ms"] = "3000" }), work, 1, { "http://127.0.0.1:9/ccompat" })
      assert.truthy(H.now_ms() - started < 60000, "the failure took too long")
      assert.matches("schema registry", last)
      assert.same({}, H.stored_offsets(work, "AvroBad"))
      H.run_ok(avro_job(work, topic), work)
      local _, records = read_avro(work .. "/job-output/" .. topic)
      assert.same(events(10), by_id(records))
    end)

  it("skips, quarantines or fails on records too short, of another framing, or not of their schema", function()
    local topic = H.unique("avro_badrec")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(2))
    local id = avro_produce({ "register", "confluent", confluent_api(), topic, schema_file(V1) })
    local frame = string.format("00%08x", tonumber(id))
    produce_raw(topic, {
      "0000",                     -- too short for the header
      "07" .. frame:sub(3) .. "02", -- a magic byte that is not 0
      frame .. "0202",            -- id, then a long and a string cut short
    })
    produce("confluent", confluent_api(), topic, V1, events(1, 2))
    local work = H.workdir("avro_badrec")
    local path = avro_job(work, topic, { ["decode.error.max.ratio"] = "1", ["metrics.reporting.file.enabled"] = "true" })
    local log = H.run_ok(path, work)
    assert.matches("too short", log, 1, true)
    assert.matches("not the magic byte 0", log, 1, true)
    assert.matches("the 2 bytes after the header are not one Avro datum of schema " .. id ..
      ": it ends early: a string of 1 bytes at byte 2, 0 left at field name", log, 1, true)
    local _, records = read_avro(work .. "/job-output/" .. topic)
    assert.same(events(3), by_id(records))
    local job_metrics
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "metrics" and not line.context.task then job_metrics = line end
    end
    -- The topic's latest schema and the id of V1: one request each (none retried).
    assert.equals(2, job_metrics.counters["kafka.schema.registry.requests"])
    assert.equals(3, job_metrics.counters["num.of.skipped.records"])
    assert.equals(6, job_metrics.counters["gobblin.extractor.records.read"])
    assert.equals(3, job_metrics.counters["gobblin.writer.records.written"])

    -- quarantine: the three bad records, raw, in _errors.
    local qwork = H.workdir("avro_badrec_q")
    H.run_ok(avro_job(qwork, topic, { ["decode.error.max.ratio"] = "1", ["decode.error.policy"] = "quarantine" }), qwork)
    local quarantined = H.json_lines(qwork .. "/job-output/" .. topic .. "/_errors")
    assert.equals(3, #quarantined)
    assert.equals("Avro decoding", quarantined[1].stage)
    assert.equals("AAA=", quarantined[1].value_base64) -- the raw payload
    assert.matches("not one Avro datum of schema " .. id, quarantined[3].error, 1, true)

    -- fail: the run fails naming the record, and no offset moves.
    local fwork = H.workdir("avro_badrec_f")
    H.run_fails(avro_job(fwork, topic, { ["decode.error.policy"] = "fail" }), fwork, 1,
      { topic .. ":0", "offset 2", "too short" })
    assert.same({}, H.stored_offsets(fwork, "AvroBad"))

    -- over the error budget (3 of 6 > 0.1): exit status 5.
    local bwork = H.workdir("avro_badrec_b")
    H.run_fails(avro_job(bwork, topic), bwork, 5, { "decode.error.max.ratio" })
  end)

  it("names the Avro resolution as the stage that failed when a record does not resolve to the job's schema",
    function()
      local topic = H.unique("avro_noresolve")
      H.create_topic(topic, 1)
      produce("confluent", confluent_api(), topic, V1, events(2))
      local other = '{"type":"record","name":"Event","namespace":"kingest.test","fields":[' ..
        '{"name":"id","type":"string"}]}'
      local work = H.workdir("avro_noresolve")
      local log = H.run_ok(avro_job(work, topic, { ["writer.avro.schema"] = other, ["decode.error.max.ratio"] = "1",
        ["decode.error.policy"] = "quarantine" }), work)
      local quarantined = H.json_lines(work .. "/job-output/" .. topic .. "/_errors")
      assert.equals(2, #quarantined)
      assert.equals("Avro resolution", quarantined[1].stage)
      assert.matches("^cannot resolve: the writer's long does not match the reader's string at field id",
        quarantined[1].error)
      assert.truthy(log:find("Quarantining record " .. topic .. ":0 at offset 0: Avro resolution failed: cannot resolve",
        1, true), log)
    end)

  it("stops a batch whose Avro records take longer to read than script.batch.timeout.ms", function()
    local topic = H.unique("avro_slow")
    H.create_topic(topic, 1)
    local gaps = '{"type":"record","name":"Gaps","fields":[{"name":"gaps","type":{"type":"array","items":"null"}},' ..
      '{"name":"pad","type":"bytes"}]}'
    local id = avro_produce({ "register", "confluent", confluent_api(), topic, schema_file(gaps) })
    local function varint(n) -- zig-zag, 7 bits a byte
      local z, out = 2 * n, {}
      repeat
        local b = z % 128
        z = math.floor(z / 128)
        out[#out + 1] = string.format("%02x", z > 0 and b + 128 or b)
      until z == 0
      return table.concat(out)
    end
    local frame = string.format("00%08x", tonumber(id))
    -- One small record, then one of 900 KB holding 14 million nulls: within what a datum of its size may hold,
    -- and far more work than 10 ms allow.
    produce_raw(topic, { frame .. "020000", frame .. varint(14000000) .. "00" .. varint(900000) ..
      string.rep("00", 900000) })
    local work = H.workdir("avro_slow")
    H.run_fails(avro_job(work, topic, { ["script.batch.timeout.ms"] = "10" }), work, 1,
      { "reading the Avro records of one batch of " .. topic .. ":0", "took more than 10 ms",
        "script.batch.timeout.ms" })
    assert.same({}, H.stored_offsets(work, "AvroBad"))
    H.run_ok(avro_job(work, topic), work) -- with the default, the records are read and written
    assert.same({ [topic .. ":0"] = 2 }, H.stored_offsets(work, "AvroBad"))
  end)

  it("refuses a job declaring an invalid schema, naming the schema's problem (78, as validate)", function()
    local work = H.workdir("avro_badschema")
    local path = job(work, "whatever", { ["writer.output.format"] = "avro" },
      [[  schema = '{"type": "record", "name": "E", "fields": [{"name": "x", "type": "lnog"}]}',]])
    local last = H.run_fails(path, work, 78, { "schema", "lnog" })
    assert.matches("invalid Avro schema", last)
  end)

  it("names the field of a Lua value that does not fit the output schema", function()
    local topic = H.topic_with("avro_misfit", { '{"id": "seven", "name": "a", "at": 1}' })
    local work = H.workdir("avro_misfit")
    local path = job(work, topic, { ["writer.output.format"] = "avro", ["decode.error.policy"] = "fail" }, [[
  schema = ]] .. string.format("%q", V1) .. [[,
  converters = { function(r) return require("cjson").decode(r:value()) end },
]])
    H.run_fails(path, work, 1, { "id", "expected long" })
  end)
end)

-- spec/support/registry_proxy.py in front of the test registry: its base URL, and a function that stops it.
local function start_proxy()
  local port_file = H.tmp .. "/" .. H.unique("proxy") .. ".port"
  local code, _, err = H.sh("python3 " .. H.q(H.root .. "/spec/support/registry_proxy.py") .. " " .. H.q(registry()) ..
    " --port-file " .. H.q(port_file) .. " >/dev/null 2>&1 & echo $! >" .. H.q(port_file .. ".pid"))
  assert(code == 0, err)
  local port = H.wait_until(function()
    local text = H.slurp(port_file)
    return text and tonumber(text:match("%d+"))
  end, 20)
  assert(port, "the registry proxy did not start")
  local pid = tonumber(H.slurp(port_file .. ".pid"):match("%d+"))
  return "http://127.0.0.1:" .. port, function() os.execute("kill " .. pid .. " 2>/dev/null") end
end

-- Tells the proxy at URL what to do: <url>/_proxy/<QUERY>.
local function proxy_do(url, query)
  local code, _, err = H.sh("curl -sf -o /dev/null " .. H.q(url .. "/_proxy/" .. query))
  assert(code == 0, "registry proxy: " .. query .. ": " .. err)
end

-- What the proxy at URL has seen: a list of { time =, path =, answer = }, oldest first.
local function proxy_log(url)
  local code, out, err = H.sh("curl -sf " .. H.q(url .. "/_proxy/log"))
  assert(code == 0, err)
  local entries = {}
  for line in out:gmatch("[^\n]+") do entries[#entries + 1] = cjson.decode(line) end
  return entries
end

-- The Avro files under DIR read by fastavro: a list of { file =, schema =, records = }, by file name.
local function avro_files(dir)
  local code, out, err = H.sh("python3 -c " .. H.q([[
import datetime, json, os, sys, fastavro
def plain(v):  # timestamp-millis: back to the long that was written
    if isinstance(v, datetime.datetime):
        return round(v.timestamp() * 1000)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    if name.endswith(".avro"):
        with open(os.path.join(d, name), "rb") as f:
            r = fastavro.reader(f)
            print(json.dumps({"file": name, "schema": r.metadata["avro.schema"], "records": [plain(x) for x in r]}))
]]) .. " " .. H.q(dir))
  assert(code == 0, err)
  local files = {}
  for line in out:gmatch("[^\n]+") do files[#files + 1] = cjson.decode(line) end
  return files
end

describe("A schema registry that stumbles", function()
  local job = H.job_writer("AvroOutage")
  local proxy, stop_proxy
  -- 380 records of V1 and 20 of V2 around them; V2's id is the one the faults are put on.
  local topic, v2_id
  local function ids(n)
    local list = {}
    for i = 1, n do list[i] = i end
    return list
  end

  setup(function()
    proxy, stop_proxy = start_proxy()
    topic = H.unique("avro_outage")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(190))
    local newer = {}
    for i = 1, 20 do
      newer[i] = { id = 190 + i, name = "name-" .. (190 + i), at = 1700000000000 + 190 + i, country = "FR", score = 1 }
    end
    produce("confluent", confluent_api(), topic, V2, newer)
    produce("confluent", confluent_api(), topic, V1, events(190, 210))
    v2_id = avro_produce({ "register", "confluent", confluent_api(), topic, schema_file(V2) })
  end)
  teardown(function() stop_proxy() end)
  before_each(function() proxy_do(proxy, "clear") end)

  local function outage_job(work, extra)
    local p = confluent_props({ ["kafka.schema.registry.url"] = proxy .. "/apis/ccompat/v7",
      ["writer.output.format"] = "json", ["kafka.schema.registry.retry.timeout.ms"] = "3000" })
    for k, v in pairs(extra or {}) do p[k] = v end
    return job(work, topic, p)
  end

  local function published_ids(work)
    local got = {}
    for _, line in ipairs(H.published(work, topic)) do got[#got + 1] = cjson.decode(line).id end
    table.sort(got)
    return got
  end

  it("fails the task when it rate-limits one schema id past the retry timeout: no record lost, offsets unmoved",
    function()
      proxy_do(proxy, "fault?status=429&match=/schemas/ids/" .. v2_id)
      local work = H.workdir("avro_429")
      local last, log = H.run_fails(outage_job(work), work, 1,
        { proxy .. "/apis/ccompat/v7/schemas/ids/" .. v2_id, "HTTP 429", "schema id " .. v2_id,
          "kafka.schema.registry.retry.timeout.ms=3000", topic .. ":0 at offset 190" })
      assert.falsy(log:find("Skipping record", 1, true), log)
      assert.same({}, H.stored_offsets(work, "AvroOutage"))
      local run = H.sqlite(work .. "/state-store/AvroOutage.db", "SELECT result, message FROM runs")[1]
      assert.equals("FAILED", run[1])
      assert.truthy(run[2]:find("HTTP 429", 1, true) and run[2]:find("schema id " .. v2_id, 1, true) and
        run[2]:find(proxy, 1, true), run[2])
      -- The registry answers again: the next run reads all 400 from where the failed one started.
      proxy_do(proxy, "clear")
      H.run_ok(outage_job(work), work)
      assert.same(ids(400), published_ids(work))
      assert.same({ [topic .. ":0"] = 400 }, H.stored_offsets(work, "AvroOutage"))
    end)

  it("waits what Retry-After asks and reads every record", function()
    proxy_do(proxy, "fault?status=429&retry_after=1&times=2&match=/schemas/ids/" .. v2_id)
    local before = #proxy_log(proxy)
    local work = H.workdir("avro_429_once")
    H.run_ok(outage_job(work), work)
    assert.same(ids(400), published_ids(work))
    local asked = {}
    for i, entry in ipairs(proxy_log(proxy)) do
      if i > before and entry.path:find("/schemas/ids/" .. v2_id, 1, true) then asked[#asked + 1] = entry end
    end
    assert.same({ 429, 429, "passed 200" }, { asked[1].answer, asked[2].answer, asked[3].answer, asked[4] })
    assert.truthy(asked[3].time - asked[1].time >= 1.9, "Retry-After: 1 was not waited for, twice")
  end)

  it("fails the task when the registry lost its store (404 for ids the records carry), offsets unmoved", function()
    proxy_do(proxy, "fault?forget=1&match=/schemas/ids/")
    local work = H.workdir("avro_forgot")
    H.run_fails(outage_job(work), work, 1, { "does not know schema id", "not a bad record", topic .. ":0 at offset 0" })
    assert.same({}, H.stored_offsets(work, "AvroOutage"))
  end)

  it("fails soon, saying so, when the registry refuses the client, whatever the retry timeout", function()
    proxy_do(proxy, "fault?status=401&match=/apis/")
    local work = H.workdir("avro_401")
    local started = H.now_ms()
    H.run_fails(outage_job(work, { ["kafka.schema.registry.retry.timeout.ms"] = "600000" }), work, 1,
      { "authentication refused by schema registry " .. proxy, "HTTP 401 (unauthorized)" })
    assert.truthy(H.now_ms() - started < 60000, "a refused client was tried for too long")
    assert.same({}, H.stored_offsets(work, "AvroOutage"))
  end)
end)

describe("A schema registered while a task reads its topic", function()
  local job = H.job_writer("AvroEvolve")
  local proxy, stop_proxy
  -- 3 records of V1, 2 of V2 (V2 registered after them), 2 more of V1; and the registry's answer for the
  -- topic's latest schema from before V2 was registered, which the proxy gives once: what a task that began
  -- before V2 was registered holds.
  local topic, stale
  setup(function()
    proxy, stop_proxy = start_proxy()
    topic = H.unique("avro_midrun")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(3))
    stale = H.tmp .. "/" .. H.unique("stale_latest") .. ".json"
    local code, _, err = H.sh("curl -sf -o " .. H.q(stale) .. " " ..
      H.q(confluent_api() .. "/subjects/" .. topic .. "-value/versions/latest"))
    assert(code == 0, err)
    produce("confluent", confluent_api(), topic, V2, {
      { id = 4, name = "name-4", at = 1700000000004, country = "FR", score = 0.5 },
      { id = 5, name = "name-5", at = 1700000000005, country = "NL", score = cjson.null },
    })
    produce("confluent", confluent_api(), topic, V1, events(2, 5))
  end)
  teardown(function() stop_proxy() end)

  local function evolve_job(work, extra)
    proxy_do(proxy, "clear")
    proxy_do(proxy, "fault?times=1&body_file=" .. stale .. "&match=/subjects/" .. topic .. "-value/versions/latest")
    local p = confluent_props({ ["kafka.schema.registry.url"] = proxy .. "/apis/ccompat/v7" })
    for k, v in pairs(extra or {}) do p[k] = v end
    return job(work, topic, p)
  end

  local V2_OF_V1 = { country = "unknown", score = cjson.null }
  local function with(e, more)
    local out = {}
    for k, v in pairs(e) do out[k] = v end
    for k, v in pairs(more) do out[k] = v end
    return out
  end

  it("starts a file with the newer schema for its records, in the same commit: no field dropped", function()
    local work = H.workdir("avro_midrun")
    local log = H.run_ok(evolve_job(work, { ["writer.output.format"] = "avro" }), work)
    assert.truthy(log:find("has a newer latest schema in the registry than when the task began", 1, true), log)
    local files = avro_files(work .. "/job-output/" .. topic)
    assert.equals(2, #files)
    local first, second = files[1], files[2]
    if first.schema ~= V1 then first, second = second, first end
    assert.matches("^part%.task_.*_0%.avro$", first.file) -- the first file keeps its name, the next is numbered
    assert.matches("^part%.task_.*_0%.1%.avro$", second.file)
    assert.equals(V1, first.schema)
    assert.same(events(3), first.records)
    assert.equals(V2, second.schema)
    local later = events(2, 5)
    assert.same({
      { id = 4, name = "name-4", at = 1700000000004, country = "FR", score = 0.5 },
      { id = 5, name = "name-5", at = 1700000000005, country = "NL", score = cjson.null },
      with(later[1], V2_OF_V1), with(later[2], V2_OF_V1),
    }, second.records)
    assert.same({ [topic .. ":0"] = 7 }, H.stored_offsets(work, "AvroEvolve"))
  end)

  it("writes the newer records' fields to JSON output", function()
    local work = H.workdir("avro_midrun_json")
    H.run_ok(evolve_job(work, { ["writer.output.format"] = "json" }), work)
    local got = {}
    for _, line in ipairs(H.published(work, topic)) do got[#got + 1] = cjson.decode(line) end
    assert.same({
      events(3)[1], events(3)[2], events(3)[3],
      { id = 4, name = "name-4", at = 1700000000004, country = "FR", score = 0.5 },
      { id = 5, name = "name-5", at = 1700000000005, country = "NL", score = cjson.null }, -- every field, null too
      { id = 6, name = "name-6", at = 1700000000006, country = "unknown", score = cjson.null },
      { id = 7, name = "name-7", at = 1700000000007, country = "unknown", score = cjson.null },
    }, got)
  end)

  it("writes as writer.avro.schema says when the job fixes it, and says what it leaves out", function()
    local work = H.workdir("avro_midrun_fixed")
    local log = H.run_ok(evolve_job(work, { ["writer.output.format"] = "avro", ["writer.avro.schema"] = V1 }), work)
    assert.truthy(log:find("have a schema that writer.avro.schema does not hold with nothing lost (the reader's " ..
      "record kingest.test.Event has no such field at field country): they are written as the job's schema says",
      1, true), log)
    local files = avro_files(work .. "/job-output/" .. topic)
    assert.equals(1, #files)
    assert.equals(V1, files[1].schema)
    assert.equals(7, #files[1].records)
  end)
end)

describe("Tombstones in an Avro topic", function()
  local job = H.job_writer("AvroTomb")
  local topic
  setup(function()
    topic = H.unique("avro_tomb")
    H.create_topic(topic, 1)
    -- 10 records and 5 tombstones (null payloads), a third of the topic: far over decode.error.max.ratio's tenth.
    local lines = {}
    for i, e in ipairs(events(10)) do
      lines[#lines + 1] = cjson.encode(e)
      if i % 2 == 0 then lines[#lines + 1] = "null" end
    end
    avro_produce({ "produce", "confluent", H.bootstrap(), confluent_api(), topic, schema_file(V1) },
      table.concat(lines, "\n") .. "\n")
  end)

  it("counts them as deleted records, not failures: skipped, not written, offsets past them", function()
    local work = H.workdir("avro_tomb")
    local log = H.run_ok(job(work, topic, confluent_props({ ["writer.output.format"] = "avro",
      ["metrics.reporting.file.enabled"] = "true" })), work)
    local _, records = read_avro(work .. "/job-output/" .. topic)
    assert.same(events(10), by_id(records))
    assert.same({ [topic .. ":0"] = 15 }, H.stored_offsets(work, "AvroTomb"))
    assert.matches("10 records, %d+ bytes written; 5 tombstones %(deleted records%)", log)
    assert.falsy(log:find("Skipping record", 1, true), log)
    local job_metrics
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "metrics" and not line.context.task then job_metrics = line end
    end
    assert.equals(5, job_metrics.counters["kafka.records.tombstones"])
    assert.equals(15, job_metrics.counters["gobblin.extractor.records.read"])
    assert.equals(10, job_metrics.counters["gobblin.writer.records.written"])
    assert.equals(0, job_metrics.counters["num.of.decoding.errors"] or 0)
    -- read = written + skipped + quarantined + tombstones, in the history too
    local run = H.sqlite(work .. "/state-store/AvroTomb.db",
      "SELECT result, records_read, records, skipped, quarantined, tombstones FROM runs")[1]
    assert.same({ "SUCCESSFUL", "15", "10", "0", "0", "5" }, run)
  end)

  it("hands them to a job's own decodeRecord as records without a payload", function()
    local work = H.workdir("avro_tomb_decode")
    H.run_ok(job(work, topic, confluent_props({ ["writer.output.format"] = "json" }), [[
  decodeRecord = function(rec)
    if rec:value() == nil then return "deleted" end
    return rec:avro()
  end,
]]), work)
    local deleted, kept = 0, 0
    for _, line in ipairs(H.published(work, topic)) do
      if line == "deleted" then deleted = deleted + 1 else kept = kept + 1 end
    end
    assert.same({ 5, 10 }, { deleted, kept })
  end)
end)

describe("the Avro examples", function()
  local EXAMPLES = H.root .. "/scripts/examples/"
  local function run_example(file, env)
    local work = H.workdir("ex_" .. file:gsub("%.lua$", ""))
    local e = { KAFKA_BROKERS = H.bootstrap(), SCHEMA_REGISTRY_URL = confluent_api() }
    for k, v in pairs(env) do e[k] = v end
    local code, _, err = H.run(EXAMPLES .. file, work, e)
    assert.are.equal(0, code, err)
    return work
  end

  it("avro_passthrough.lua writes the topic's records with its latest schema", function()
    local topic = H.unique("ex_avro_pass")
    H.create_topic(topic, 1)
    produce("confluent", confluent_api(), topic, V1, events(2))
    produce("confluent", confluent_api(), topic, V2,
      { { id = 3, name = "name-3", at = 1700000000003, country = "NL", score = 2 } })
    local work = run_example("avro_passthrough.lua", { TOPIC = topic })
    local metas, records = read_avro(work .. "/job-output/" .. topic)
    assert.equals(V2, metas[1].schema)
    assert.equals("deflate", metas[1].codec)
    assert.same({
      { id = 1, name = "name-1", at = 1700000000001, country = "unknown", score = cjson.null },
      { id = 2, name = "name-2", at = 1700000000002, country = "unknown", score = cjson.null },
      { id = 3, name = "name-3", at = 1700000000003, country = "NL", score = 2 },
    }, by_id(records))
  end)

  it("avro_transform.lua drops users without an email and writes contacts", function()
    local topic = H.unique("ex_avro_users")
    H.create_topic(topic, 1)
    local users = '{"type":"record","name":"User","fields":[{"name":"id","type":"long"},' ..
      '{"name":"email","type":["null","string"],"default":null}]}'
    produce("confluent", confluent_api(), topic, users, {
      { id = 1, email = "Ann@Example.COM" }, { id = 2, email = cjson.null }, { id = 3, email = "bo@x.org" },
    })
    local work = run_example("avro_transform.lua", { TOPIC = topic })
    local metas, records = read_avro(work .. "/job-output/" .. topic)
    assert.matches('"name": "Contact"', metas[1].schema, 1, true)
    assert.same({
      { id = 1, email = "ann@example.com", domain = "example.com" },
      { id = 3, email = "bo@x.org", domain = "x.org" },
    }, by_id(records))
  end)

  it("json_to_avro.lua fits JSON payloads to its schema and quarantines the one that does not fit", function()
    local lines = {
      '{"user": "u1", "page": "/a", "at": 1000, "browser": "x"}',
      '{"user": "u2", "page": "/b", "at": "yesterday"}',
      '{"user": "u3", "page": "/c", "at": 3000, "referrer": "/a"}',
    }
    for i = 4, 12 do lines[i] = string.format('{"user": "u%02d", "page": "/p", "at": %d}', i, i) end
    local topic = H.topic_with("ex_clicks", lines)
    local work = run_example("json_to_avro.lua", { TOPIC = topic })
    local metas, records = read_avro(work .. "/job-output/" .. topic)
    assert.equals("snappy", metas[1].codec)
    table.sort(records, function(a, b) return a.user < b.user end)
    local expected = {
      { user = "u1", page = "/a", at = 1000, referrer = cjson.null },
      { user = "u3", page = "/c", at = 3000, referrer = "/a" },
    }
    for i = 4, 12 do expected[#expected + 1] = { user = string.format("u%02d", i), page = "/p", at = i, referrer = cjson.null } end
    table.sort(expected, function(a, b) return a.user < b.user end)
    assert.same(expected, records)
    local quarantined = H.json_lines(work .. "/job-output/" .. topic .. "/_errors")
    assert.equals(1, #quarantined)
    assert.equals(1, quarantined[1].offset)
    assert.matches("field 'at': expected long", quarantined[1].error, 1, true)
  end)
end)

describe("kingest test of a job that reads Avro", function()
  it("decodes framed payloads with the registry's schemas and resolves them to the topic's latest", function()
    local topic = H.unique("avro_tryout")
    local id1 = avro_produce({ "register", "confluent", confluent_api(), topic, schema_file(V1) })
    avro_produce({ "register", "confluent", confluent_api(), topic, schema_file(V2) })
    -- Confluent's framing of EVENTS encoded with V1 (fastavro), each as a 4-byte length and its bytes, then one
    -- payload whose first byte is not the magic byte.
    local lines = {}
    for i, e in ipairs(events(3)) do lines[i] = cjson.encode(e) end
    local input, json = H.tmp .. "/" .. H.unique("tryout_in"), H.tmp .. "/" .. H.unique("tryout_json")
    H.spit(json, table.concat(lines, "\n") .. "\n")
    local code, _, err = H.sh("python3 -c " .. H.q([[
import io, json, struct, sys, fastavro
schema = fastavro.parse_schema(json.loads(open(sys.argv[1]).read()))
out = sys.stdout.buffer
for line in sys.stdin:
    datum = io.BytesIO()
    fastavro.schemaless_writer(datum, schema, json.loads(line))
    payload = b"\0" + struct.pack(">I", int(sys.argv[2])) + datum.getvalue()
    out.write(struct.pack(">I", len(payload)) + payload)
out.write(struct.pack(">I", 6) + b"\7abcde")
]]) .. " " .. H.q(schema_file(V1)) .. " " .. id1 .. " >" .. H.q(input) .. " <" .. H.q(json))
    assert.are.equal(0, code, err)
    local dir = H.workdir("avro_tryout")
    local path = H.job({ dir = dir, topics = topic, props = confluent_props({
      ["kafka.brokers"] = "192.0.2.1:9092", ["writer.output.format"] = "avro", ["decode.error.max.ratio"] = 0.5 }) })
    local out
    code, out, err = H.sh("env GOBBLIN_WORK_DIR=" .. H.q(dir .. "/work") .. " " .. H.q(H.bin) .. " test " ..
      H.q(path) .. " --format length-prefixed <" .. H.q(input))
    assert.are.equal(1, code, err)
    local got = {}
    for line in out:gmatch("[^\n]+") do got[#got + 1] = cjson.decode(line) end
    local want = events(3)
    for _, e in ipairs(want) do
      e.country, e.score = "unknown", cjson.null
    end
    assert.same(want, got)
    assert.truthy(err:find("WARN Skipping record " .. topic .. ":0 at offset 3: Avro decoding failed: the payload " ..
      "starts with byte 7, not the magic byte 0", 1, true), err)
    assert.matches("kingest test: 4 records read: 3 written %(3 outputs%), 0 dropped, 1 skipped, 0 quarantined, " ..
      "0 failed, 0 not processed\n$", err)
    assert.same({}, H.files(dir .. "/work"))
  end)
end)
