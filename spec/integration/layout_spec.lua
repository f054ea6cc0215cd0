-- Where the records end up and in what bytes (docs/behaviour.md, sections 4, 6 and 9), against the real broker:
-- writer.file.path.type, the location overrides, the simple writer's delimiter and size prefix, job.lua
-- forms and decodeRecord, and the metrics file.
local H = require("support.harness")
local cjson = require("cjson")

local JOB = "LayoutSpec"

-- Writes WORK/job.lua pulling TOPICS (a whitelist) from earliest, without a job lock, with PROPS added (and
-- EXTRA Lua inside the returned table). writer.file.path.type is left to its default unless PROPS set it.
local function job_file(work, topics, props, extra)
  local p = { ["job.lock.enabled"] = false, ["writer.file.path.type"] = H.UNSET }
  for k, v in pairs(props or {}) do p[k] = v end
  return H.job({ dir = work, name = JOB, topics = topics, props = p, code = extra })
end

-- Runs JOB in WORK and asserts that it succeeded (H.run_ok) and that its log names its job id; returns the job
-- id's epoch milliseconds and the log.
local function run_ms(job, work)
  local log = H.run_ok(job, work)
  return H.job_ms(log, JOB), log
end

local topic_with = H.topic_with

-- Folders named task-staging or task-output anywhere under DIR.
local function leftover_task_dirs(dir)
  local _, out = H.sh("find " .. H.q(dir) .. " -type d \\( -name task-staging -o -name task-output \\)")
  return out
end

describe("writer.file.path.type", function()
  local topic
  setup(function()
    topic = topic_with("layout", { "one", "two" })
  end)

  local function run_with(props)
    local work = H.workdir("layout")
    props["extract.namespace"] = "gobblin.extract.kafka"
    local before = os.date("!%Y%m%d%H%M%S")
    local ms = run_ms(job_file(work, topic, props), work)
    local after = os.date("!%Y%m%d%H%M%S")
    local files = H.files(work .. "/job-output")
    assert.are.equal(1, #files, table.concat(files, "\n"))
    assert.are.equal("one\ntwo\n", H.slurp(work .. "/job-output/" .. files[1]))
    return files[1], "part.task_" .. JOB .. "_" .. ms .. "_0.txt", before, after
  end

  it("tablename writes job-output/<topic>/part.<taskId>.txt", function()
    local file, part = run_with({ ["writer.file.path.type"] = "tablename" })
    assert.are.equal(topic .. "/" .. part, file)
  end)

  it("namespace_table writes job-output/<namespace with dots as slashes>/<topic>/part.<taskId>.txt", function()
    local file, part = run_with({ ["writer.file.path.type"] = "namespace_table" })
    assert.are.equal("gobblin/extract/kafka/" .. topic .. "/" .. part, file)
  end)

  -- default: job-output/<namespace path>/<topic>/<extract id>_append/, the extract id being the job's UTC start.
  local function assert_default_layout(file, part, before, after)
    local prefix = "gobblin/extract/kafka/" .. topic .. "/"
    assert.are.equal(prefix, file:sub(1, #prefix))
    local stamp, rest = file:sub(#prefix + 1):match("^(%d+)_append/(.*)$")
    assert.is_not_nil(stamp, file)
    assert.are.equal(14, #stamp)
    assert.is_true(before <= stamp and stamp <= after, before .. " <= " .. stamp .. " <= " .. after)
    assert.are.equal(part, rest)
  end

  it("default writes job-output/<namespace path>/<topic>/<yyyyMMddHHmmss>_append/part.<taskId>.txt", function()
    assert_default_layout(run_with({ ["writer.file.path.type"] = "default" }))
  end)

  it("is default when not set", function()
    assert_default_layout(run_with({}))
  end)
end)

describe("the output locations", function()
  local topic
  setup(function()
    topic = topic_with("locations", { "one", "two" })
  end)

  it("are <work dir>/job-output, task-data and state-store by default, without staging or task output left", function()
    local work = H.workdir("locations")
    local ms = run_ms(job_file(work, topic, { ["writer.file.path.type"] = "tablename" }), work)
    assert.same({ topic .. "/part.task_" .. JOB .. "_" .. ms .. "_0.txt" }, H.files(work .. "/job-output"))
    assert.same({ [topic .. ":0"] = 2 }, H.stored_offsets(work, JOB))
    assert.is_true(H.exists(work .. "/task-data/" .. JOB))
    assert.is_false(H.exists(work .. "/task-data/" .. JOB .. "/job_" .. JOB .. "_" .. ms))
    assert.same({}, H.files(work .. "/task-data"))
    assert.are.equal("", leftover_task_dirs(work))
  end)

  it("follow data.publisher.final.dir, task.data.root.dir and state.store.dir", function()
    local work, elsewhere = H.workdir("locations"), H.workdir("elsewhere")
    local job = job_file(work, topic, {
      ["writer.file.path.type"] = "tablename",
      ["data.publisher.final.dir"] = elsewhere .. "/published",
      ["task.data.root.dir"] = elsewhere .. "/scratch",
      ["state.store.dir"] = elsewhere .. "/offsets",
    })
    local ms = run_ms(job, work)
    assert.same({ topic .. "/part.task_" .. JOB .. "_" .. ms .. "_0.txt" }, H.files(elsewhere .. "/published"))
    assert.same({ "one", "two" }, H.output_lines(elsewhere .. "/published/" .. topic))
    assert.same({ [topic .. ":0"] = 2 }, H.offsets_in_db(elsewhere .. "/offsets/" .. JOB .. ".db"))
    assert.is_true(H.exists(elsewhere .. "/scratch/" .. JOB))
    assert.same({}, H.files(elsewhere .. "/scratch"))
    assert.are.equal("", leftover_task_dirs(elsewhere))
    for _, default in ipairs({ "job-output", "task-data", "state-store" }) do
      assert.is_false(H.exists(work .. "/" .. default), default .. " was created")
    end
    -- `kingest state show` finds the moved state through the job file.
    local code, out, err = H.kingest({ "state", "show", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.matches(topic .. "%s+0%s+2%s", out)
  end)
end)

describe("the simple writer", function()
  local topic
  local long = ("x"):rep(300)
  setup(function()
    topic = topic_with("writer", { "one", "two", "h\195\169llo", long })
  end)

  local function output_bytes(work)
    local files = H.files(work .. "/job-output/" .. topic)
    assert.are.equal(1, #files)
    return H.slurp(work .. "/job-output/" .. topic .. "/" .. files[1])
  end

  -- An 8-byte big-endian length.
  local function be64(n)
    return ("\0"):rep(6) .. string.char(math.floor(n / 256), n % 256)
  end

  it("appends simple.writer.delimiter after each record", function()
    local work = H.workdir("writer")
    run_ms(job_file(work, topic, { ["writer.file.path.type"] = "tablename", ["simple.writer.delimiter"] = "|" }), work)
    assert.are.equal("one|two|h\195\169llo|" .. long .. "|", output_bytes(work))
  end)

  it("writes the records back to back when simple.writer.delimiter is empty", function()
    local work = H.workdir("writer")
    local job = H.job_pull(work, table.concat({
      "job.name=" .. JOB,
      "job.lock.enabled=false",
      "kafka.brokers=" .. H.bootstrap(),
      "topic.whitelist=" .. topic,
      "bootstrap.with.offset=earliest",
      "writer.file.path.type=tablename",
      "simple.writer.delimiter=",
    }, "\n") .. "\n")
    run_ms(job, work)
    assert.are.equal("onetwoh\195\169llo" .. long, output_bytes(work))
  end)

  it("writes each record's length in 8 big-endian bytes before it with simple.writer.prepend.size=true", function()
    local work = H.workdir("writer")
    run_ms(job_file(work, topic, {
      ["writer.file.path.type"] = "tablename",
      ["simple.writer.delimiter"] = "",
      ["simple.writer.prepend.size"] = true,
    }), work)
    assert.are.equal(be64(3) .. "one" .. be64(3) .. "two" .. be64(6) .. "h\195\169llo" .. be64(300) .. long,
      output_bytes(work))
  end)

  it("puts the delimiter after the record, not after the size, when both are set", function()
    local work = H.workdir("writer")
    run_ms(job_file(work, topic, { ["writer.file.path.type"] = "tablename", ["simple.writer.prepend.size"] = true }),
      work)
    assert.are.equal(be64(3) .. "one\n" .. be64(3) .. "two\n" .. be64(6) .. "h\195\169llo\n" .. be64(300) .. long .. "\n",
      output_bytes(work))
  end)
end)

describe("a job.lua", function()
  local topics
  setup(function()
    topics = { topic_with("joblua", { "alpha", "beta", "skip me", "gamma" }), topic_with("joblua", { "delta" }) }
  end)

  -- WORK's output files with the run-specific task ids taken out: { [path] = content }.
  local function outputs(work)
    local out = {}
    for path, content in pairs(H.snapshot(work .. "/job-output")) do
      out[path:gsub("task_" .. JOB .. "_%d+_", "task_")] = content
    end
    return out
  end

  it("in the nested table form works like the dotted form", function()
    local dotted, nested = H.workdir("dotted"), H.workdir("nested")
    run_ms(job_file(dotted, topics[1] .. "," .. topics[2], {
      ["writer.file.path.type"] = "namespace_table",
      ["extract.namespace"] = "from.lua",
      ["simple.writer.delimiter"] = "|",
      ["mr.job.max.mappers"] = 1,
    }), dotted)
    H.spit(nested .. "/job.lua", string.format([[
return {
  job = { name = %q, lock = { enabled = false } },
  kafka = { brokers = %q },
  topic = { whitelist = { %q, %q } },
  bootstrap = { with = { offset = "earliest" } },
  writer = { file = { path = { type = "namespace_table" } } },
  extract = { namespace = "from.lua" },
  simple = { writer = { delimiter = "|" } },
  mr = { job = { max = { mappers = 1 } } },
}
]], JOB, H.bootstrap(), topics[1], topics[2]))
    run_ms(nested .. "/job.lua", nested)
    local want = {
      ["from/lua/" .. topics[1] .. "/part.task_0.txt"] = "alpha|beta|skip me|gamma|",
      ["from/lua/" .. topics[2] .. "/part.task_0.txt"] = "delta|",
    }
    assert.same(want, outputs(dotted))
    assert.same(want, outputs(nested))
    assert.same(H.stored_offsets(dotted, JOB), H.stored_offsets(nested, JOB))
    assert.same({ [topics[1] .. ":0"] = 4, [topics[2] .. ":0"] = 1 }, H.stored_offsets(nested, JOB))
  end)

  -- Runs a job over the first topic with DECODE as its decodeRecord; returns the work dir.
  local function run_decoder(decode)
    local work = H.workdir("decode")
    run_ms(job_file(work, topics[1], { ["writer.file.path.type"] = "tablename" }, "  decodeRecord = " .. decode .. ","),
      work)
    return work
  end

  it("writes what its own decodeRecord returns", function()
    local work = run_decoder("function(msg) return msg:value():upper() end")
    assert.same({ "ALPHA", "BETA", "SKIP ME", "GAMMA" }, H.output_lines(work .. "/job-output/" .. topics[1]))
  end)

  it("drops the records for which decodeRecord returns nil, and moves past them", function()
    local work = run_decoder([[function(msg)
    if msg:value():find("skip") then return nil end
    return msg
  end]])
    assert.same({ "alpha", "beta", "gamma" }, H.output_lines(work .. "/job-output/" .. topics[1]))
    assert.same({ [topics[1] .. ":0"] = 4 }, H.stored_offsets(work, JOB))
  end)

  it("writes a Lua table that decodeRecord returns as one line of JSON", function()
    local work = run_decoder([[function(msg)
    return { value = msg:value(), offset = msg.offset, partition = msg.partition, topic = msg:topic() }
  end]])
    local got = {}
    for i, line in ipairs(H.output_lines(work .. "/job-output/" .. topics[1])) do got[i] = cjson.decode(line) end
    assert.same({
      { value = "alpha", offset = 0, partition = 0, topic = topics[1] },
      { value = "beta", offset = 1, partition = 0, topic = topics[1] },
      { value = "skip me", offset = 2, partition = 0, topic = topics[1] },
      { value = "gamma", offset = 3, partition = 0, topic = topics[1] },
    }, got)
  end)
end)

describe("the metrics file", function()
  -- Partition 0 holds four records (one of which the job drops), partition 1 two, partition 2 none; three
  -- tasks, one per partition.
  local topic, work, ms, lines
  local records = { [0] = { "a1", "a22", "drop me", "a4444" }, [1] = { "b1", "b22" }, [2] = {} }
  local written = { [0] = { "a1", "a22", "a4444" }, [1] = { "b1", "b22" }, [2] = {} }

  local function bytes_of(list)
    local n = 0
    for _, r in ipairs(list) do n = n + #r + 1 end
    return n
  end

  setup(function()
    topic = H.unique("metrics")
    H.create_topic(topic, 3)
    H.produce(topic, records[0], 0)
    H.produce(topic, records[1], 1)
    work = H.workdir("metrics")
    local job = job_file(work, topic, {
      ["writer.file.path.type"] = "tablename",
      ["mr.job.max.mappers"] = 3,
      ["metrics.reporting.file.enabled"] = true,
    }, [[  decodeRecord = function(msg)
    if msg:value() == "drop me" then return nil end
    return msg
  end,]])
    local code, _, err = H.run(job, work)
    assert(code == 0, err)
    ms = err:match("Starting job " .. JOB .. " %(job_" .. JOB .. "_(%d+)%)")
    lines = H.metrics_lines(work .. "/metrics")
  end)

  -- The KafkaExtractorTopicMetadata events by partition.
  local function topic_metadata()
    local by_partition = {}
    for _, line in ipairs(lines) do
      if line.type == "event" and line.name == "KafkaExtractorTopicMetadata" then
        assert.is_nil(by_partition[line.metadata.partition], "two events for one partition")
        by_partition[line.metadata.partition] = line.metadata
      end
    end
    return by_partition
  end

  it("is <metrics.log.dir>/<job>.metrics.<jobId>, JSON lines", function()
    assert.same({ JOB .. ".metrics.job_" .. JOB .. "_" .. ms }, H.files(work .. "/metrics"))
    assert.is_true(#lines > 0)
  end)

  it("has a KafkaExtractorTopicMetadata event per partition with its watermarks and record count", function()
    local events = topic_metadata()
    for p = 0, 2 do
      local e = events[p]
      assert.is_not_nil(e, "no event for partition " .. p)
      assert.are.equal(topic, e.topic)
      assert.are.equal(0, e.lowWatermark)
      assert.are.equal(#records[p], e.expectedHighWatermark)
      assert.are.equal(#records[p], e.actualHighWatermark)
      assert.are.equal(#records[p], e.numRecordsConsumed)
      assert.are.equal(0, e.decodingErrors)
      assert.matches("^task_" .. JOB .. "_" .. ms .. "_%d$", e.task)
    end
  end)

  it("counts each task's records read, records written and bytes written", function()
    local task_of = {}
    for p, e in pairs(topic_metadata()) do task_of[e.task] = p end
    local seen = 0
    for _, line in ipairs(lines) do
      if line.type == "metrics" and line.context.task then
        local p = task_of[line.context.task]
        assert.is_not_nil(p, "a task without partition: " .. line.context.task)
        assert.are.equal("SUCCESSFUL", line.context.state)
        local c = line.counters
        assert.are.equal(#records[p], c["gobblin.extractor.records.read"], "records read by partition " .. p)
        assert.are.equal(#written[p], c["gobblin.writer.records.written"], "records written by partition " .. p)
        assert.are.equal(bytes_of(written[p]), c["gobblin.writer.bytes.written"], "bytes written by partition " .. p)
        seen = seen + 1
      end
    end
    assert.are.equal(3, seen)
  end)

  it("sums the tasks' counters for the job, matching the files written", function()
    local job
    for _, line in ipairs(lines) do
      if line.type == "metrics" and not line.context.task then
        assert.is_nil(job, "two job metrics lines")
        job = line
      end
    end
    assert.is_not_nil(job)
    assert.are.equal("job_" .. JOB .. "_" .. ms, job.context.job)
    assert.are.equal("SUCCESSFUL", job.context.state)
    local c = job.counters
    assert.are.equal(6, c["gobblin.extractor.records.read"])
    assert.are.equal(5, c["gobblin.writer.records.written"])
    assert.are.equal(5, c["job.records.written"])
    local size = 0
    for _, f in ipairs(H.files(work .. "/job-output")) do size = size + #H.slurp(work .. "/job-output/" .. f) end
    assert.are.equal(bytes_of(written[0]) + bytes_of(written[1]), size)
    assert.are.equal(size, c["gobblin.writer.bytes.written"])
  end)
end)
