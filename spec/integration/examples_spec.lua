-- The jobs of scripts/examples, run as they are against the real broker: each reads KAFKA_BROKERS and
-- TOPIC (or TOPICS) from the environment and pulls a fresh topic holding known records; its output is
-- parsed line by line and compared record by record, in offset order.
local H = require("support.harness")
local cjson = require("cjson")

local EXAMPLES = H.root .. "/scripts/examples/"

local topic_with = H.topic_with

-- Runs example FILE in a fresh work dir with ENV added (KAFKA_BROKERS is set); asserts that it succeeded.
-- Returns the work dir and the log.
local function run_example(file, env, work)
  work = work or H.workdir("ex_" .. file:gsub("%.lua$", ""))
  local e = { KAFKA_BROKERS = H.bootstrap() }
  for k, v in pairs(env) do e[k] = v end
  local code, _, err = H.run(EXAMPLES .. file, work, e)
  assert.are.equal(0, code, err)
  return work, err
end

-- The log lines at WARN or ERROR.
local function complaints(log)
  local found = {}
  for _, line in ipairs(H.lines(log)) do
    if line:match("^%S+ %S+ WARN ") or line:match("^%S+ %S+ ERROR ") then found[#found + 1] = line end
  end
  return found
end

describe("the example bytes_to_json.lua", function()
  it("parses each JSON payload, adds its topic, partition and offset, and writes it back as JSON", function()
    local topic = topic_with("ex_bytes", {
      '{"id":1,"name":"alpha"}',
      '{"id":2,"tags":["x","y"],"nested":{"gone":null,"n":2.5}}',
      'not json',
      '{"id":3,"name":"gamma \\u00e9"}',
    })
    local work, log = run_example("bytes_to_json.lua", { TOPIC = topic })
    local function at(offset) return { topic = topic, partition = 0, offset = offset } end
    assert.same({
      { id = 1, name = "alpha", _kafka = at(0) },
      { id = 2, tags = { "x", "y" }, nested = { gone = cjson.null, n = 2.5 }, _kafka = at(1) },
      { id = 3, name = "gamma \195\169", _kafka = at(3) },
    }, H.json_lines(work .. "/job-output/" .. topic))
    local files = H.files(work .. "/job-output/" .. topic)
    assert.are.equal(1, #files)
    assert.matches("%.json$", files[1])
    -- The payload that is not JSON is skipped (the default policy), logged, and the offsets move past it.
    assert.truthy(log:find("Skipping record " .. topic .. ":0 at offset 2: converter 1 failed: invalid JSON", 1, true), log)
    assert.same({ [topic .. ":0"] = 4 }, H.stored_offsets(work, "example_bytes_to_json"))
  end)
end)

describe("the example csv_to_json.lua", function()
  local LINES = {
    '1,Widget,2,2.5',
    '2,"Gadget, large",1,10',
    '3,"Widget,2,1.5',                  -- unterminated quote
    '4,"The ""Best"" Thing",3,0.5',
    '5,Gizmo,1,abc',                    -- a price that is not a number
    'A7,Thing,1,1',
    '8,a,b,c,d',                        -- too many fields
    '9,Doohickey,4,0.25',
  }
  local topic, work, log
  setup(function()
    topic = topic_with("ex_csv", LINES)
    work, log = run_example("csv_to_json.lua", { TOPIC = topic })
  end)

  it("writes each good line as a JSON record with typed fields and the total", function()
    assert.same({
      { id = 1, product = "Widget", quantity = 2, price = 2.5, total = 5 },
      { id = 2, product = "Gadget, large", quantity = 1, price = 10, total = 10 },
      { id = 4, product = 'The "Best" Thing', quantity = 3, price = 0.5, total = 1.5 },
      { id = "A7", product = "Thing", quantity = 1, price = 1, total = 1 },
      { id = 9, product = "Doohickey", quantity = 4, price = 0.25, total = 1 },
    }, H.json_lines(work .. "/job-output/" .. topic))
  end)

  it("quarantines the bad lines in job-output/<topic>/_errors with their error and raw bytes", function()
    local dir = work .. "/job-output/" .. topic .. "/_errors"
    local files = H.files(dir)
    assert.are.equal(1, #files)
    assert.matches("^part%.task_example_csv_to_json_%d+_0%.jsonl$", files[1])
    local want = {
      { offset = 2, error = "invalid CSV: unterminated quoted field 2" },
      { offset = 4, error = "quantity and price must be numbers, got 1 and abc" },
      { offset = 6, error = "invalid CSV: 5 fields, expected at most 4 (id,product,quantity,price)" },
    }
    local got = H.json_lines(dir)
    assert.are.equal(#want, #got)
    for i, e in ipairs(got) do
      assert.are.equal(topic, e.topic)
      assert.are.equal(0, e.partition)
      assert.are.equal(want[i].offset, e.offset)
      assert.are.equal("decodeRecord", e.stage)
      assert.truthy(e.error:find(want[i].error, 1, true), e.error)
      assert.are.equal(LINES[want[i].offset + 1], H.base64_decode(e.value_base64))
      assert.are.equal(cjson.null, e.key_base64)
    end
    assert.are.equal(3, #H.grep(log, "WARN Quarantining record " .. topic .. ":0 at offset "), log)
  end)

  it("moves the offsets past every line, good or bad", function()
    assert.same({ [topic .. ":0"] = #LINES }, H.stored_offsets(work, "example_csv_to_json"))
  end)
end)

describe("the example filter.lua", function()
  it("keeps only ERROR and FATAL events, with their time, service and message", function()
    local topic = topic_with("ex_filter", {
      '{"time":"t1","level":"INFO","service":"api","message":"started","host":"h1"}',
      '{"time":"t2","level":"ERROR","service":"api","message":"boom","host":"h1","trace":"at x"}',
      '{"time":"t3","level":"WARN","service":"db","message":"slow"}',
      '{"time":"t4","level":"FATAL","service":"db","message":"down","pid":7}',
      '{"time":"t5","level":"ERROR","service":"web"}',
      '{"time":"t6","level":"error","service":"web","message":"lower case is not ERROR"}',
    })
    local work, log = run_example("filter.lua", { TOPIC = topic })
    assert.same({
      { time = "t2", service = "api", message = "boom" },
      { time = "t4", service = "db", message = "down" },
      { time = "t5", service = "web" },
    }, H.json_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 6 }, H.stored_offsets(work, "example_filter"))
    -- `source = ...` is script code, not an unknown property: the run has nothing to complain about.
    assert.same({}, complaints(log))
  end)
end)

describe("the example one_to_many.lua", function()
  it("writes one record per item of each order, and none for an order without items", function()
    local topic = topic_with("ex_orders", {
      '{"id":"o1","items":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}',
      '{"id":"o2","items":[]}',
      '{"id":"o3"}',
      '{"id":"o4","items":[{"sku":"C","quantity":5}]}',
    })
    local work, log = run_example("one_to_many.lua", { TOPIC = topic })
    assert.same({
      { order_id = "o1", line = 1, sku = "A", quantity = 1 },
      { order_id = "o1", line = 2, sku = "B", quantity = 2 },
      { order_id = "o4", line = 1, sku = "C", quantity = 5 },
    }, H.json_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 4 }, H.stored_offsets(work, "example_one_to_many"))
    assert.same({}, complaints(log))
  end)
end)

describe("the example custom_estimator.lua", function()
  local JOB = "example_custom_estimator"
  local light, heavy, work
  local LOG2 = math.log10(2)

  -- Records of N bytes each: "<prefix>-<i>" padded with dots.
  local function records(prefix, count, size)
    local out = {}
    for i = 1, count do
      local s = prefix .. "-" .. i
      out[i] = s .. ("."):rep(size - #s)
    end
    return out
  end

  -- The log's task lines, by their work units: { ["t:0, t:1"] = { units = n, size = s, load = l } }.
  local function task_lines(log)
    local tasks = {}
    for _, line in ipairs(H.lines(log)) do
      local n, size, load, units = line:match("INFO Task task_" .. JOB .. "_%d+_%d+: (%d+) work units, estimated size " ..
        "([%d.]+), load ([%d.]+): (.*)$")
      if n then tasks[units] = { units = tonumber(n), size = tonumber(size), load = tonumber(load) } end
    end
    return tasks
  end

  -- Asserts that TASKS holds exactly WANT ({ [units] = { units = n, size = s } }), each load being the
  -- size times log10(2), as Gobblin weighs an item of one partition.
  local function assert_tasks(want, tasks, log)
    local got = {}
    for units, t in pairs(tasks) do
      got[units] = { units = t.units, size = t.size }
      assert.is_true(math.abs(t.load - t.size * LOG2) < 0.01, "load of " .. units .. ": " .. t.load)
    end
    assert.same(want, got, log)
  end

  setup(function()
    light = H.unique("ex_clicks")
    heavy = H.unique("ex_clicks") .. "_heavy"
    H.create_topic(light, 2)
    H.create_topic(heavy, 1)
    H.produce(light, records("l0", 4, 10), 0)
    H.produce(light, records("l1", 2, 10), 1)
    H.produce(heavy, records("h", 3, 20), 0)
    work = H.workdir("ex_estimator")
  end)

  it("sizes work units by estimateSize: range x 500, ten times that for the _heavy topic, on a first run", function()
    local _, log = run_example("custom_estimator.lua", { TOPICS = light .. "," .. heavy }, work)
    assert_tasks({
      [heavy .. ":0"] = { units = 1, size = 3 * 500 * 10 },
      [light .. ":0, " .. light .. ":1"] = { units = 2, size = 4 * 500 + 2 * 500 },
    }, task_lines(log), log)
    assert.same(records("h", 3, 20), H.output_lines(work .. "/job-output/" .. heavy))
    local l = records("l0", 4, 10)
    for _, r in ipairs(records("l1", 2, 10)) do l[#l + 1] = r end
    assert.same(H.sorted(l), H.sorted(H.output_lines(work .. "/job-output/" .. light)))
  end)

  it("uses the average record size the first run stored on the next run", function()
    local rows = H.sqlite(work .. "/state-store/" .. JOB .. ".db",
      "SELECT topic, partition, avg_record_size FROM partition_state ORDER BY topic, partition")
    local want = { { light, "0", "10.0" }, { light, "1", "10.0" }, { heavy, "0", "20.0" } }
    table.sort(want, function(a, b) return a[1] .. ":" .. a[2] < b[1] .. ":" .. b[2] end)
    assert.same(want, rows)
    H.produce(light, records("m0", 3, 10), 0)
    H.produce(light, records("m1", 1, 10), 1)
    H.produce(heavy, records("i", 2, 20), 0)
    local _, log = run_example("custom_estimator.lua", { TOPICS = light .. "," .. heavy }, work)
    assert_tasks({
      [heavy .. ":0"] = { units = 1, size = 2 * 20 * 10 },
      [light .. ":0, " .. light .. ":1"] = { units = 2, size = 3 * 10 + 1 * 10 },
    }, task_lines(log), log)
    local h = records("h", 3, 20)
    for _, r in ipairs(records("i", 2, 20)) do h[#h + 1] = r end
    assert.same(h, H.output_lines(work .. "/job-output/" .. heavy))
    assert.same({ [light .. ":0"] = 7, [light .. ":1"] = 3, [heavy .. ":0"] = 5 }, H.stored_offsets(work, JOB))
  end)
end)

describe("the example quickstart.lua", function()
  local JOB = "GobblinKafkaQuickStart"
  local topic, work

  setup(function()
    topic = topic_with("ex_quickstart", { "This is a message", "This is a another message" })
    work = H.workdir("ex_quickstart")
  end)

  local function run()
    local _, log = run_example("quickstart.lua", { QUICKSTART_TOPICS = topic }, work)
    return log
  end

  it("pulls the topic into job-output/<topic> and writes the metrics file", function()
    local log = run()
    local ms = log:match("Starting job " .. JOB .. " %(job_" .. JOB .. "_(%d+)%)")
    assert.is_not_nil(ms, log)
    assert.same({ topic .. "/part.task_" .. JOB .. "_" .. ms .. "_0.txt" }, H.files(work .. "/job-output"))
    assert.same({ "This is a message", "This is a another message" }, H.output_lines(work .. "/job-output/" .. topic))
    assert.same({ JOB .. ".metrics.job_" .. JOB .. "_" .. ms .. ".txt" }, H.files(work .. "/metrics"))
    local job
    for _, line in ipairs(H.metrics_lines(work .. "/metrics")) do
      if line.type == "metrics" and not line.context.task then job = line end
    end
    assert.is_not_nil(job)
    assert.are.equal(2, job.counters["gobblin.extractor.records.read"])
    assert.are.equal(2, job.counters["gobblin.writer.records.written"])
    assert.are.equal(44, job.counters["gobblin.writer.bytes.written"])
    assert.same({ [topic .. ":0"] = 2 }, H.stored_offsets(work, JOB))
  end)

  it("pulls nothing on a second run, and exactly the one new record on a third", function()
    local log = run()
    assert.truthy(log:find("Pulling partition " .. topic .. ":0 from offset 2 to 2, range=0", 1, true), log)
    assert.are.equal(1, #H.files(work .. "/job-output/" .. topic))
    H.produce(topic, { "This is a third message" })
    log = run()
    assert.truthy(log:find("Extracted 1 data records", 1, true), log)
    assert.same({ "This is a message", "This is a another message", "This is a third message" },
      H.output_lines(work .. "/job-output/" .. topic))
    assert.same(H.kcat_payloads(topic), H.output_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(work, JOB))
  end)
end)
