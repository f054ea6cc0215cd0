-- Bad input never costs data. Each case starts from a job that has already run once (two records pulled,
-- published and their offsets stored) and has two new records waiting. Then the job file is broken, or
-- the job points at something unusable, and run: the run must fail with a non-zero status and one clear
-- last line on stderr, `kingest: ...`, naming what is wrong; the stored offsets and every published file
-- must be exactly as before. Then the job is repaired and run again: it must pull exactly the two new
-- records, so that nothing was skipped or lost by the failed run.
local H = require("support.harness")

local FIRST = { "first 1", "first 2" }
local SECOND = { "second 1", "second 2" }

-- The properties of the good job, in file order.
local function good_props(c)
  return {
    { "job.name", c.job },
    { "kafka.brokers", H.bootstrap() },
    { "topic.whitelist", c.topic },
    { "bootstrap.with.offset", "earliest" },
    { "writer.file.path.type", "tablename" },
  }
end

-- The text of the job as a Gobblin properties file. CHANGES maps a property to its new value (false drops
-- it); properties that the good job lacks are appended in CHANGES order (an array of {name, value}).
local function pull_text(c, changes, extra)
  local lines = { "# kingest bad-input spec: job " .. c.job }
  for _, kv in ipairs(good_props(c)) do
    local v = kv[2]
    if changes and changes[kv[1]] ~= nil then v = changes[kv[1]] end
    if v then lines[#lines + 1] = kv[1] .. "=" .. v end
  end
  for _, kv in ipairs(extra or {}) do lines[#lines + 1] = kv[1] .. "=" .. kv[2] end
  return table.concat(lines, "\n") .. "\n"
end

-- The text of the job as a job.lua: PRELUDE (code before the table), the properties with CHANGES
-- applied, RAW lines, and decodeRecord with body DECODE (none when DECODE is false).
local function lua_text(c, opts)
  opts = opts or {}
  local lines = { "-- kingest bad-input spec: job " .. c.job }
  if opts.prelude then lines[#lines + 1] = opts.prelude end
  lines[#lines + 1] = "return {"
  for _, kv in ipairs(good_props(c)) do
    local v = kv[2]
    if opts.changes and opts.changes[kv[1]] ~= nil then v = opts.changes[kv[1]] end
    if v then lines[#lines + 1] = string.format("  [%q] = %q,", kv[1], v) end
  end
  if opts.raw then lines[#lines + 1] = opts.raw end
  if opts.decode ~= false then
    lines[#lines + 1] = "  decodeRecord = function(record)"
    lines[#lines + 1] = "    " .. (opts.decode or "return record")
    lines[#lines + 1] = "  end,"
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

-- The number of the first line of TEXT that contains NEEDLE.
local function line_of(text, needle)
  local n = 0
  for _, line in ipairs(H.lines(text)) do
    n = n + 1
    if line:find(needle, 1, true) then return n end
  end
  error("no line contains " .. needle)
end

local function run(c, path, env)
  local e = { GOBBLIN_WORK_DIR = c.work }
  for k, v in pairs(env or {}) do e[k] = v end
  return H.kingest({ "run", path }, e)
end

-- A job of KIND ("pull" or "lua") that has run once, with two new records waiting. Returns its context:
-- the job file, work dir, topic, and the stored offsets and published files after the good run.
local function ran_once(label, kind)
  local c = { job = "BadInput_" .. label, topic = H.unique("bad_" .. label), work = H.workdir("bad_" .. label) }
  c.file = c.work .. "/" .. (kind == "lua" and "job.lua" or "job.pull")
  c.good = kind == "lua" and lua_text(c) or pull_text(c)
  H.create_topic(c.topic, 1)
  H.produce(c.topic, FIRST)
  H.spit(c.file, c.good)
  local code, _, err = run(c, c.file)
  assert.are.equal(0, code, err)
  assert.same(FIRST, H.output_lines(c.work .. "/job-output/" .. c.topic))
  c.offsets = H.stored_offsets(c.work, c.job)
  assert.same({ [c.topic .. ":0"] = 2 }, c.offsets)
  c.published = H.snapshot(c.work .. "/job-output")
  H.produce(c.topic, SECOND)
  return c
end

-- Runs job file PATH, which must fail cleanly: exit STATUS (78 for a job that is not valid, as `kingest validate`
-- says, 66 for a job file that cannot be read, 1 for a run that fails); the last line of stderr is the only one
-- starting with `kingest: ` and contains every string of NAMES; offsets, published files and task data are
-- as they were. Returns that line and how long the run took in milliseconds.
local function fails_cleanly(c, path, status, names, env)
  local t0 = H.now_ms()
  local code, _, err = run(c, path, env)
  local ms = H.now_ms() - t0
  assert.are.equal(status, code, "the run should fail with status " .. status .. ":\n" .. err)
  local last = H.last_line(err)
  assert.matches("^kingest: ", last, 1, false, "the last line of stderr should be the error:\n" .. err)
  local count = 0
  for _, line in ipairs(H.lines(err)) do
    if line:find("^kingest: ") then count = count + 1 end
  end
  assert.are.equal(1, count, "exactly one `kingest: ` line:\n" .. err)
  for _, name in ipairs(names) do
    assert.truthy(last:find(name, 1, true), ("the error should name %q: %s"):format(name, last))
  end
  assert.same(c.offsets, H.stored_offsets(c.work, c.job))
  assert.same(c.published, H.snapshot(c.work .. "/job-output"))
  assert.same({}, H.files(c.work .. "/task-data"))
  return last, ms
end

-- Repairs the job file and runs it: exactly the two waiting records are pulled and published.
local function picks_up_exactly_the_new_records(c)
  H.spit(c.file, c.good)
  local code, _, err = run(c, c.file)
  assert.are.equal(0, code, err)
  assert.truthy(err:find("Pulling partition " .. c.topic .. ":0 from offset 2 to 4, range=2", 1, true), err)
  assert.same({ FIRST[1], FIRST[2], SECOND[1], SECOND[2] }, H.output_lines(c.work .. "/job-output/" .. c.topic))
  assert.same({ [c.topic .. ":0"] = 4 }, H.stored_offsets(c.work, c.job))
end

describe("a run with bad input", function()
  describe("in a job.lua", function()
    it("reports a syntax error with the file and line, and changes nothing", function()
      local c = ran_once("syntax", "lua")
      local text = lua_text(c, { raw = '  ["extract.namespace"] = = "oops",' })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, { c.file .. ":" .. line_of(text, "= = ") .. ":" })
      picks_up_exactly_the_new_records(c)
    end)

    it("reports an error raised by the file's top-level code with its file and line", function()
      local c = ran_once("raises", "lua")
      local text = lua_text(c, { prelude = 'error("the codec table is missing")' })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, { c.file .. ":" .. line_of(text, "error(") .. ":", "the codec table is missing" })
      picks_up_exactly_the_new_records(c)
    end)

    it("says that the file must return a table when it returns a number", function()
      local c = ran_once("number", "lua")
      H.spit(c.file, "-- oops\nreturn 42\n")
      local last = fails_cleanly(c, c.file, 78, { c.file, "table", "number" })
      assert.matches("must return a table", last)
      picks_up_exactly_the_new_records(c)
    end)

    it("names a module that the job's code requires and that does not exist, before any record moves", function()
      local c = ran_once("require_top", "lua")
      local text = lua_text(c, {
        prelude = 'local codec = require("kingest_spec_no_such_codec")',
        decode = "return codec.decode(record)",
      })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, { "kingest_spec_no_such_codec", "not found", c.file .. ":" .. line_of(text, "require(") })
      picks_up_exactly_the_new_records(c)
    end)

    it("fails, rather than skipping every record, when decodeRecord requires a module that does not exist", function()
      local c = ran_once("require_decode", "lua")
      H.spit(c.file, lua_text(c, { decode = 'return require("kingest_spec_no_such_codec").decode(record)' }))
      fails_cleanly(c, c.file, 1, { "decodeRecord", c.topic .. ":0", "kingest_spec_no_such_codec", "not found" })
      picks_up_exactly_the_new_records(c)
    end)

    -- Misspelt hooks were ignored: the raw records were written and the offsets moved past them.
    for _, case in ipairs({
      { "decoderecord", "  decoderecord = function(record) return record:value():upper() end,",
        "decoderecord is a function", "did you mean decodeRecord?" },
      { "convertors", "  convertors = { function(v) return v:value():upper() end },",
        "convertors is a list of functions", "did you mean converters?" },
      { "estimate_size", "  estimate_size = function() return 1 end,",
        "estimate_size is a function", "did you mean estimateSize?" },
      { "nested", "  kafka = { decodeRecord = function(record) return record end },",
        "kafka.decodeRecord is a function", "did you mean decodeRecord, at the top of the job table?" },
    }) do
      it("refuses a misspelt or misplaced hook (" .. case[1] .. ") before anything is pulled", function()
        local c = ran_once("hook_" .. case[1], "lua")
        H.spit(c.file, lua_text(c, { raw = case[2], decode = false }))
        local last = fails_cleanly(c, c.file, 78, { c.file .. ": " .. case[3],
          "but kingest calls only the job table's decodeRecord, converters, estimateSize, source and partition", case[4] })
        assert.are.equal("kingest: " .. c.file .. ": " .. case[3] .. ", but kingest calls only the job table's " ..
          "decodeRecord, converters, estimateSize, source and partition; " .. case[4], last)
        picks_up_exactly_the_new_records(c)
      end)
    end

    it("refuses a source that does not exist, listing the sources kingest provides, before anything is pulled", function()
      local c = ran_once("source_jsn", "lua")
      H.spit(c.file, lua_text(c, { raw = '  source = "gobblin.source.kafka_jsn",', decode = false }))
      local last = fails_cleanly(c, c.file, 78, {})
      assert.are.equal("kingest: " .. c.file .. ": source gobblin.source.kafka_jsn cannot be loaded (did you mean " ..
        "gobblin.source.kafka_json? kingest provides gobblin.source.kafka_json, gobblin.source.kafka_csv, " ..
        "gobblin.source.kafka_simple): module 'gobblin.source.kafka_jsn' not found:", last)
      picks_up_exactly_the_new_records(c)
    end)

    -- With skip (the default policy), the failing converter used to skip every record and commit.
    for _, case in ipairs({
      { "upper", "return v:upper()", "a record view is not a string: it has no method or field 'upper'; call " ..
        "rec:value() for the payload" },
      { "concat", 'return v .. "!"', "a record view is not a string: it cannot be concatenated with ..; call " ..
        "rec:value() for the payload" },
      { "find", 'return string.find(v, "first") and v', "(string expected, got cdata): a record view is not a " ..
        "string: call rec:value() for the payload" },
    }) do
      it("fails the task, whatever decode.error.policy, when a converter uses the record view as a string (" ..
        case[1] .. ")", function()
        local c = ran_once("view_" .. case[1], "lua")
        local text = lua_text(c, { raw = "  converters = { function(v) " .. case[2] .. " end },", decode = false })
        H.spit(c.file, text)
        -- A string function's own error has no line of the script; the others point at the converter.
        local where = case[1] == "find" and "" or (c.file .. ":" .. line_of(text, "converters = ") .. ": ")
        fails_cleanly(c, c.file, 1, { "converter 1 failed for " .. c.topic .. ":0 at offset 2", where .. case[3] })
        picks_up_exactly_the_new_records(c)
      end)
    end

    it("refuses a kafka.consumer setting the engine relies on, in the nested form too", function()
      local c = ran_once("consumer_lua", "lua")
      H.spit(c.file, lua_text(c, { raw = '  kafka = { consumer = { ["auto.offset.reset"] = "earliest" } },' }))
      local last = fails_cleanly(c, c.file, 78, {})
      assert.are.equal("kingest: " .. c.file .. ": property kafka.consumer.auto.offset.reset=earliest cannot be set: " ..
        "kingest decides where an out-of-range offset goes on: use reset.on.offset.out.of.range (and " ..
        "bootstrap.with.offset for partitions without a stored offset)", last)
      picks_up_exactly_the_new_records(c)
    end)

    it("refuses a near-miss of topic.whitelist, which would pull every topic", function()
      local c = ran_once("whitelst_lua", "lua")
      H.spit(c.file, lua_text(c, { changes = { ["topic.whitelist"] = false }, raw = "  topic = { whitelst = " ..
        string.format("%q", c.topic) .. " },", decode = "return record" }))
      local last = fails_cleanly(c, c.file, 78, {})
      assert.are.equal("kingest: " .. c.file .. ": unknown property topic.whitelst; did you mean topic.whitelist?", last)
      picks_up_exactly_the_new_records(c)
    end)

    it("names the property, the value and the allowed values of a bad bootstrap.with.offset", function()
      local c = ran_once("oldest_lua", "lua")
      H.spit(c.file, lua_text(c, { changes = { ["bootstrap.with.offset"] = "oldest" } }))
      fails_cleanly(c, c.file, 78, { c.file, "bootstrap.with.offset", "'oldest'", "earliest, latest, skip" })
      picks_up_exactly_the_new_records(c)
    end)
  end)

  describe("in a .pull file", function()
    it("names kafka.brokers when it is missing", function()
      local c = ran_once("no_brokers", "pull")
      H.spit(c.file, pull_text(c, { ["kafka.brokers"] = false }))
      fails_cleanly(c, c.file, 78, { c.file, "missing", "kafka.brokers" })
      picks_up_exactly_the_new_records(c)
    end)

    it("names the file and line, the property, the value and the allowed values of bootstrap.with.offset=oldest", function()
      local c = ran_once("oldest_pull", "pull")
      local text = pull_text(c, { ["bootstrap.with.offset"] = "oldest" })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, {
        c.file .. ":" .. line_of(text, "bootstrap.with.offset=") .. ":",
        "bootstrap.with.offset", "'oldest'", "earliest, latest, skip",
      })
      picks_up_exactly_the_new_records(c)
    end)

    it("names an unknown source.class", function()
      local c = ran_once("source_class", "pull")
      local text = pull_text(c, nil, { { "source.class", "gobblin.source.extractor.extract.kafka.KafkaFancySource" } })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, {
        c.file .. ":" .. line_of(text, "source.class=") .. ":", "source.class",
        "gobblin.source.extractor.extract.kafka.KafkaFancySource", "KafkaSimpleSource",
      })
      picks_up_exactly_the_new_records(c)
    end)

    it("refuses a near-miss of topic.whitelist with its line, rather than pulling every topic", function()
      local c = ran_once("whitelst_pull", "pull")
      local text = pull_text(c, { ["topic.whitelist"] = false }, { { "topic.whitelst", c.topic } })
      H.spit(c.file, text)
      local last = fails_cleanly(c, c.file, 78, {})
      assert.are.equal("kingest: " .. c.file .. ":" .. line_of(text, "topic.whitelst=") .. ": unknown property " ..
        "topic.whitelst; did you mean topic.whitelist?", last)
      picks_up_exactly_the_new_records(c)
    end)

    -- enable.partition.eof=false left a run one offset short of the end, for ever.
    for _, case in ipairs({
      { "enable.partition.eof", "false", "kingest relies on enable.partition.eof=true to see where each partition " ..
        "ends (without it a run stops short of the end); remove it" },
      { "auto.offset.reset", "earliest", "kingest decides where an out-of-range offset goes on: use " ..
        "reset.on.offset.out.of.range (and bootstrap.with.offset for partitions without a stored offset)" },
      { "enable.auto.commit", "true", "kingest stores offsets in its state database when a run commits; remove it" },
      { "bootstrap.servers", "127.0.0.1:1", "use kafka.brokers" },
      { "group.id", "ingest", "kingest joins no consumer group: it assigns partitions itself and stores offsets in " ..
        "its state database, not in the group; remove it" },
    }) do
      it("refuses kafka.consumer." .. case[1] .. ", naming the property, its line and what to do", function()
        local c = ran_once("consumer_" .. case[1]:gsub("%.", "_"), "pull")
        local key = "kafka.consumer." .. case[1]
        local text = pull_text(c, nil, { { key, case[2] } })
        H.spit(c.file, text)
        local last = fails_cleanly(c, c.file, 78, {})
        assert.are.equal("kingest: " .. c.file .. ":" .. line_of(text, key .. "=") .. ": property " .. key .. "=" ..
          case[2] .. " cannot be set: " .. case[3], last)
        picks_up_exactly_the_new_records(c)
      end)
    end

    -- A count limit of 0.5 and a time limit of 1 ms let nothing through, and the run reported success.
    for _, case in ipairs({
      { "count", { { "extract.limit.count.limit", "0.5" } }, "extract.limit.count.limit=",
        "invalid value '0.5' for property extract.limit.count.limit: expected a whole number of records, at least 1 " ..
        "(a lower count lets no record through)" },
      { "time", { { "extract.limit.time.limit", "1" }, { "extract.limit.time.limit.timeunit", "milliseconds" } },
        "extract.limit.time.limit=", "invalid value '1' for property extract.limit.time.limit: expected a number " ..
        "of milliseconds from 1000 to 1e+15; a time limit must allow at least 1 second, since starting to fetch a " ..
        "partition alone can take longer" },
      { "rate", { { "extract.limit.rate.limit", "0" } }, "extract.limit.rate.limit=",
        "invalid value '0' for property extract.limit.rate.limit: expected a number of records per second from " ..
        "0.000277778 to 1e+15; a rate limit must let at least 1 record per hour through" },
    }) do
      it("refuses a " .. case[1] .. " limit that lets no record through, naming the property, value and range",
        function()
        local c = ran_once("limit_" .. case[1], "pull")
        local props = { { "extract.limit.enabled", "true" }, { "extract.limit.type", case[1] } }
        for _, kv in ipairs(case[2]) do props[#props + 1] = kv end
        local text = pull_text(c, nil, props)
        H.spit(c.file, text)
        local last = fails_cleanly(c, c.file, 78, {})
        assert.are.equal("kingest: " .. c.file .. ":" .. line_of(text, case[3]) .. ": " .. case[4], last)
        picks_up_exactly_the_new_records(c)
      end)
    end

    it("names an environment variable that ${env:...} refers to and that is not set", function()
      local c = ran_once("env", "pull")
      local var = "KINGEST_SPEC_UNSET_" .. H.unique("V"):gsub("%W", "_")
      assert.is_nil(os.getenv(var))
      local text = pull_text(c, { ["kafka.brokers"] = "${env:" .. var .. "}" })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, { c.file .. ":" .. line_of(text, "kafka.brokers=") .. ":", var, "not set" })
      picks_up_exactly_the_new_records(c)
    end)

    it("names the job file when it does not exist", function()
      local c = ran_once("missing_file", "pull")
      local missing = c.work .. "/jbo.pull"
      fails_cleanly(c, missing, 66, { missing, "No such file" })
      picks_up_exactly_the_new_records(c)
    end)
  end)

  describe("from the environment", function()
    -- With the default kafka.metadata.timeout.ms (15 s): a broker that refuses the connection, or whose name does
    -- not resolve, is reported with that cause as soon as it is certain, not when the timeout is used up. (The
    -- bound on the time is a sanity bound only, far above the second it takes.)
    it("names the cause of a refused connection: the run fails at once, not after kafka.metadata.timeout.ms", function()
      local c = ran_once("unreachable", "pull")
      H.spit(c.file, pull_text(c, { ["kafka.brokers"] = "127.0.0.1:1" }))
      local last, ms = fails_cleanly(c, c.file, 1, { "cannot reach Kafka at kafka.brokers=127.0.0.1:1: 127.0.0.1:1: " ..
        "connection refused (Connect to ipv4#127.0.0.1:1 failed: Connection refused) (" })
      assert.matches(" connection attempts? in %d+ ms%)$", last)
      assert.is_true(ms < 10000, "the run took " .. ms .. " ms: " .. last)
      picks_up_exactly_the_new_records(c)
    end)

    it("names a broker host that does not resolve, and every broker's cause when there are several", function()
      local c = ran_once("unresolved", "pull")
      H.spit(c.file, pull_text(c, { ["kafka.brokers"] = "kingest-no-such-host.invalid:9092" }))
      local _, ms = fails_cleanly(c, c.file, 1, { "kingest-no-such-host.invalid:9092: the host name does not resolve " ..
        "(Failed to resolve 'kingest-no-such-host.invalid:9092': " })
      assert.is_true(ms < 10000, "the run took " .. ms .. " ms")
      H.spit(c.file, pull_text(c, { ["kafka.brokers"] = "127.0.0.1:1,kingest-no-such-host.invalid:9092" }))
      fails_cleanly(c, c.file, 1, { "127.0.0.1:1: connection refused (", "kingest-no-such-host.invalid:9092: the host " ..
        "name does not resolve (" })
      picks_up_exactly_the_new_records(c)
    end)

    it("refuses a broker address with a bad port when the job loads (librdkafka would read 9092x as 9092)", function()
      local c = ran_once("bad_port", "pull")
      local text = pull_text(c, { ["kafka.brokers"] = H.bootstrap() .. "x" })
      H.spit(c.file, text)
      fails_cleanly(c, c.file, 78, { c.file .. ":" .. line_of(text, "kafka.brokers=") .. ": property kafka.brokers=" ..
        H.bootstrap() .. "x: entry '" .. H.bootstrap() .. "x' is not host:port: invalid port: expected a number from 1 " ..
        "to 65535" })
      picks_up_exactly_the_new_records(c)
    end)

    it("names data.publisher.final.dir when it lies below a regular file", function()
      local c = ran_once("final_dir", "pull")
      H.spit(c.work .. "/not-a-folder", "a regular file\n")
      local dir = c.work .. "/not-a-folder/output"
      H.spit(c.file, pull_text(c, nil, { { "data.publisher.final.dir", dir } }))
      fails_cleanly(c, c.file, 1, { "data.publisher.final.dir", dir, "Not a directory" })
      assert.are.equal("a regular file\n", H.slurp(c.work .. "/not-a-folder"))
      picks_up_exactly_the_new_records(c)
    end)

    it("names task.data.root.dir when it lies below a regular file", function()
      local c = ran_once("task_dir", "pull")
      H.spit(c.work .. "/not-a-folder", "a regular file\n")
      local dir = c.work .. "/not-a-folder/task-data"
      H.spit(c.file, pull_text(c, nil, { { "task.data.root.dir", dir } }))
      fails_cleanly(c, c.file, 1, { "task.data.root.dir", dir, "Not a directory" })
      assert.are.equal("a regular file\n", H.slurp(c.work .. "/not-a-folder"))
      picks_up_exactly_the_new_records(c)
    end)
  end)
end)
