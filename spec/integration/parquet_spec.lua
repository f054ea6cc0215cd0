-- Parquet output end to end, against the real broker and the schema registry of scripts/registry: Avro records
-- framed for the registry in, Parquet files out, read by pyarrow, duckdb and fastparquet
-- (spec/support/parquet_read.py) and compared value for value with fastavro's decoding of the very bytes produced
-- (spec/support/parquet_records.py); each codec; row groups at the block size; statistics; Lua tables written
-- with a declared schema; and the schemas Parquet output refuses, named before the run.
local H = require("support.harness")
local cjson = require("cjson")

local trim = H.trim

local registry_url
local function confluent_api()
  if not registry_url then
    local code, out, err = H.sh(H.q(H.root .. "/scripts/registry") .. " url")
    assert(code == 0, "no registry: " .. err)
    registry_url = trim(out)
  end
  return registry_url .. "/apis/ccompat/v7"
end

local function script(name) return "python3 " .. H.q(H.root .. "/spec/support/" .. name) end

-- The records of parquet_records.py, produced once to a topic of two partitions: the topic, and the truth (fastavro's
-- decoding of each record, a JSON line with sorted keys), by seq.
local N = 400
local produced
local function records()
  if produced then return produced.topic, produced.truth end
  local topic = H.unique("parquet")
  H.create_topic(topic, 2)
  local code, out, err = H.sh(script("parquet_records.py") .. " produce " .. H.q(H.bootstrap()) .. " " ..
    H.q(confluent_api()) .. " " .. H.q(topic) .. " " .. N)
  assert(code == 0, "parquet_records: " .. err)
  local truth = {}
  for line in out:gmatch("[^\n]+") do truth[#truth + 1] = line end
  assert.equals(N, #truth)
  produced = { topic = topic, truth = truth }
  return topic, truth
end

local function schema_text()
  local code, out, err = H.sh(script("parquet_records.py") .. " schema")
  assert(code == 0, err)
  return trim(out)
end

-- The Parquet files under DIR read by parquet_read.py: a list of each file's metadata, and every row (JSON lines
-- with sorted keys) ordered by seq.
local function read_parquet(dir)
  local files = {}
  for _, f in ipairs(H.files(dir)) do
    assert.matches("%.parquet$", f)
    files[#files + 1] = H.q(dir .. "/" .. f)
  end
  assert(#files > 0, "no file under " .. dir)
  local code, out, err = H.sh(script("parquet_read.py") .. " " .. table.concat(files, " "))
  assert(code == 0, err)
  local metas, rows = {}, {}
  for line in out:gmatch("[^\n]+") do
    local v = cjson.decode(line)
    if v.file and v.created_by then metas[#metas + 1] = v else rows[#rows + 1] = { seq = v.seq or v.id, line = line } end
  end
  table.sort(rows, function(a, b) return a.seq < b.seq end)
  local lines = {}
  for i, r in ipairs(rows) do lines[i] = r.line end
  return metas, lines
end

-- The job's properties: Parquet output (by writer.output.format, or with BUILDER by writer.builder.class alone),
-- reading the registry's records, with EXTRA.
local function props(extra, builder)
  local p = { ["kafka.deserializer.type"] = "CONFLUENT_AVRO", ["kafka.schema.registry.url"] = confluent_api() }
  if builder then p["writer.builder.class"] = builder else p["writer.output.format"] = "parquet" end
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

-- Each line of GOT equals the truth's, by seq (the line's text: every value exactly, nulls included).
local function assert_rows(truth, got)
  assert.equals(#truth, #got)
  for i = 1, #truth do
    if truth[i] ~= got[i] then -- the first difference, without the rest of a 300,000-byte value
      local at = 1
      while truth[i]:byte(at) == got[i]:byte(at) do at = at + 1 end
      error(("row %d differs at byte %d: the truth has %q, the file %q"):format(i - 1, at,
        truth[i]:sub(math.max(1, at - 80), at + 80), got[i]:sub(math.max(1, at - 80), at + 80)))
    end
  end
end

describe("Parquet output of Avro records", function()
  local job = H.job_writer("ParquetJob")

  for _, c in ipairs({ { codec = nil, name = "SNAPPY" },
    { codec = "gzip", name = "GZIP", builder = "gobblin.writer.ParquetDataWriterBuilder" },
    { codec = "zstd", name = "ZSTD" }, { codec = "uncompressed", name = "UNCOMPRESSED" } }) do
    it("writes every value as fastavro decodes it, read alike by pyarrow, duckdb and fastparquet (" .. c.name .. ")",
      function()
        local topic, truth = records()
        local work = H.workdir("parquet_" .. c.name)
        H.run_ok(job(work, topic, props({ ["writer.codec.type"] = c.codec }, c.builder)), work)
        local metas, rows = read_parquet(work .. "/job-output/" .. topic)
        assert_rows(truth, rows)
        local total = 0
        for _, m in ipairs(metas) do
          assert.same({ c.name }, m.codecs)
          assert.matches("^kingest version %d+%.%d+", m.created_by)
          assert.equals(schema_text(), m.avro_schema) -- the registry's schema, as parquet-avro reads it
          total = total + m.rows
        end
        assert.equals(N, total)
      end)
  end

  it("maps each Avro type to its Parquet column, and keeps min, max and null counts per column", function()
    local topic, truth = records()
    local work = H.workdir("parquet_stats")
    H.run_ok(job(work, topic, props()), work)
    local metas = read_parquet(work .. "/job-output/" .. topic)
    local cols = metas[1].columns
    assert.same({ type = "INT64", logical = "None", optional = false }, cols.id)
    assert.same({ type = "BYTE_ARRAY", logical = "String", optional = false }, cols.name)
    assert.same({ type = "BYTE_ARRAY", logical = "String", optional = true }, cols.note)
    assert.same({ type = "BOOLEAN", logical = "None", optional = true }, cols.maybe)
    assert.same({ type = "INT32", logical = "None", optional = true }, cols.on)
    assert.same({ type = "FLOAT", logical = "None", optional = false }, cols.f)
    assert.same({ type = "DOUBLE", logical = "None", optional = true }, cols.d)
    assert.same({ type = "BYTE_ARRAY", logical = "None", optional = true }, cols.oraw)
    assert.same({ type = "BYTE_ARRAY", logical = "Enum", optional = false }, cols.kind)
    assert.same({ type = "FIXED_LEN_BYTE_ARRAY", logical = "None", optional = true }, cols.otag)
    -- The statistics over every file's row groups, against what the truth holds.
    local want = {}
    for _, line in ipairs(truth) do
      local r = cjson.decode(line)
      for k, v in pairs(r) do
        local w = want[k] or { nulls = 0 }
        want[k] = w
        if v == cjson.null then
          w.nulls = w.nulls + 1
        else
          if type(v) == "boolean" then v = v and 1 or 0 end
          if w.min == nil or v < w.min then w.min = v end
          if w.max == nil or v > w.max then w.max = v end
        end
      end
    end
    local got = {}
    for _, m in ipairs(metas) do
      for k, s in pairs(m.stats) do
        local g = got[k] or { nulls = 0, has_min_max = true }
        got[k] = g
        g.nulls = g.nulls + s.nulls
        -- a file whose values of the column are all null has no min and max of it
        g.has_min_max = g.has_min_max and (s.has_min_max or s.nulls == m.rows)
        local lo, hi = s.min, s.max
        if type(lo) == "boolean" then lo, hi = lo and 1 or 0, hi and 1 or 0 end
        if lo ~= nil and lo ~= cjson.null and (g.min == nil or lo < g.min) then g.min = lo end
        if hi ~= nil and hi ~= cjson.null and (g.max == nil or hi > g.max) then g.max = hi end
      end
    end
    for k, w in pairs(want) do
      assert.equals(w.nulls, got[k].nulls, "null count of " .. k)
      if k == "name" then
        -- a 300,000-byte value is longer than the statistics keep: no min and max for the column
        assert.is_false(got[k].has_min_max)
      else
        assert.is_true(got[k].has_min_max, "min and max of " .. k)
        assert.equals(w.min, got[k].min, "min of " .. k)
        assert.equals(w.max, got[k].max, "max of " .. k)
      end
    end
  end)

  it("closes row groups at writer.parquet.block.size and pages at writer.parquet.page.size, every value kept",
    function()
      local topic, truth = records()
      local work = H.workdir("parquet_groups")
      H.run_ok(job(work, topic, props({ ["writer.parquet.block.size"] = "4000", ["writer.parquet.page.size"] = "1000" })),
        work)
      local metas, rows = read_parquet(work .. "/job-output/" .. topic)
      assert_rows(truth, rows)
      local groups = 0
      for _, m in ipairs(metas) do groups = groups + m.row_groups end
      assert.is_true(groups >= 4, "row groups: " .. groups)
    end)

  it("writes the tables a script returns, encoded with the job's declared schema", function()
    local topic = H.topic_with("parquet_lua", { '{"id": 1, "name": "a"}', '{"id": 2, "name": null}',
      '{"id": 3, "name": "\\u00e9t\\u00e9"}' })
    local work = H.workdir("parquet_lua")
    local schema = '{"type":"record","name":"Pair","fields":[{"name":"id","type":"long"},' ..
      '{"name":"name","type":["null","string"]}]}'
    local path = job(work, topic, { ["writer.output.format"] = "parquet" }, [[
  schema = ]] .. string.format("%q", schema) .. [[,
  converters = { function(r) return require("cjson").decode(r:value()) end },
]])
    H.run_ok(path, work)
    local metas, rows = read_parquet(work .. "/job-output/" .. topic)
    assert.equals(schema, metas[1].avro_schema)
    local got = {}
    for _, line in ipairs(rows) do got[#got + 1] = cjson.decode(line) end
    table.sort(got, function(a, b) return a.id < b.id end)
    assert.same({ { id = 1, name = "a" }, { id = 2, name = cjson.null }, { id = 3, name = "\195\169t\195\169" } }, got)
  end)

  it("refuses, before the run, a schema it cannot write, naming the field and what it writes (78, as validate)",
    function()
      local work = H.workdir("parquet_nested")
      local path = job(work, "whatever", { ["writer.output.format"] = "parquet" }, [[
  schema = '{"type": "record", "name": "E", "fields": [{"name": "id", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}',]])
      local last = H.run_fails(path, work, 78, { "schema: the schema cannot be written as Parquet", "field E.tags is an array" })
      assert.matches("boolean, int, long, float, double, string, bytes, enum or fixed", last)
      path = job(work, "whatever", { ["writer.output.format"] = "parquet" }, [[
  schema = '{"type": "record", "name": "E", "fields": [{"name": "u", "type": ["int", "string"]}]}',]])
      H.run_fails(path, work, 78, { "field E.u is a union of 2 branches that are not null" })
      path = job(work, "whatever", { ["writer.output.format"] = "parquet", ["writer.codec.type"] = "deflate" }, [[
  schema = '{"type": "record", "name": "E", "fields": [{"name": "id", "type": "long"}]}',]])
      H.run_fails(path, work, 78, { "writer.codec.type=deflate", "snappy, gzip, zstd or uncompressed" })
    end)

  it("fails the task naming the field when the registry's schema is one it cannot write, and leaves no file",
    function()
      local topic = H.unique("parquet_nested_registry")
      H.create_topic(topic, 1)
      local schema = '{"type":"record","name":"Outer","fields":[{"name":"inner","type":{"type":"record",' ..
        '"name":"Inner","fields":[{"name":"x","type":"int"}]}}]}'
      local f = H.tmp .. "/" .. H.unique("nested") .. ".avsc"
      H.spit(f, schema)
      local code, _, err = H.avro_produce({ "produce", "confluent", H.bootstrap(), confluent_api(), topic, f },
        '{"inner": {"x": 1}}\n')
      assert(code == 0, err)
      local work = H.workdir("parquet_nested_registry")
      local _, log = H.run_fails(job(work, topic, props()), work, 1)
      assert.matches("field Outer.inner is a record, which Parquet output does not write yet", log, 1, true)
      assert.same({}, H.files(work .. "/job-output"))
      assert.same({}, H.stored_offsets(work, "ParquetJob"))
    end)
end)
