-- `kingest validate` and `kingest test`: trying a job without a broker. No broker runs for this spec (it is in
-- KG_NO_KAFKA_SPECS): every job names an address nothing answers at, and strace shows that neither command
-- opens a network socket. Outputs are compared exactly, JSON after decoding, Avro as avro-c prints it; the exit
-- statuses are sysexits.h's.
local H = require("support.harness")
local cjson = require("cjson")

local EXAMPLES = H.root .. "/scripts/examples/"
-- An address no packet reaches (TEST-NET-1, RFC 5737), and a registry behind it.
local NOWHERE = "192.0.2.1:9092"
local ENV = { KAFKA_BROKERS = NOWHERE, SCHEMA_REGISTRY_URL = "http://192.0.2.1:8081/apis/ccompat/v7" }

local EX_USAGE, EX_DATAERR, EX_NOINPUT, EX_CONFIG = 64, 65, 66, 78

-- A scratch folder that also serves as TMPDIR, so that a spec can see that test leaves nothing there.
local function scratch(name)
  local dir = H.workdir(name)
  os.execute("mkdir -p " .. H.q(dir .. "/tmp"))
  return dir
end

-- Runs `kingest ARGS...` in DIR's environment with INPUT (a string, may be nil) on stdin; ENV is added to the
-- spec's. Returns status, stdout, stderr.
local function kingest(dir, args, input, env)
  local parts = { "env", "TMPDIR=" .. H.q(dir .. "/tmp"), "GOBBLIN_WORK_DIR=" .. H.q(dir .. "/work") }
  local e = {}
  for k, v in pairs(ENV) do e[k] = v end
  for k, v in pairs(env or {}) do e[k] = v end
  for k, v in pairs(e) do parts[#parts + 1] = k .. "=" .. H.q(v) end
  parts[#parts + 1] = H.q(H.bin)
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  if input then
    local path = dir .. "/" .. H.unique("stdin")
    H.spit(path, input)
    parts[#parts + 1] = "<" .. H.q(path)
  end
  return H.sh(table.concat(parts, " "))
end

-- The line of FILE (1-based) where PATTERN (plain text) first occurs.
local function line_of(file, pattern)
  local n = 0
  for line in (H.slurp(file) .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:find(pattern, 1, true) then return n end
  end
  error(pattern .. " is not in " .. file)
end

-- The lines of TEXT that are not the engine's log lines (dated), nor a traceback's.
local function summary_lines(text)
  local out = {}
  for _, line in ipairs(H.lines(text)) do
    if line:match("^kingest") then out[#out + 1] = line end
  end
  return out
end

-- The last line of TEXT.
local function last_line(text)
  local lines = H.lines(text)
  return lines[#lines]
end

-- Each line of TEXT decoded as JSON.
local function json_lines(text)
  local out = {}
  for _, line in ipairs(H.lines(text)) do out[#out + 1] = cjson.decode(line) end
  return out
end

-- Asserts that DIR holds no file: neither the work dir nor TMPDIR got anything.
local function assert_nothing_written(dir)
  assert.same({}, H.files(dir .. "/work"))
  assert.same({}, H.files(dir .. "/tmp"))
  assert.same({}, H.dirs(dir .. "/tmp"))
end

-- A job.lua in DIR with PROPS and CODE (Lua source of more fields), reading from nowhere.
local function job(dir, props, code, name)
  local p = { ["kafka.brokers"] = NOWHERE, ["topic.whitelist"] = "events", ["writer.file.path.type"] = "tablename" }
  for k, v in pairs(props or {}) do p[k] = v end
  local path = H.job_lua(dir, p, code)
  if name then
    os.rename(path, dir .. "/" .. name)
    path = dir .. "/" .. name
  end
  return path
end

describe("kingest validate", function()
  it("passes every example job without reaching a broker or a registry, and says what each is", function()
    local dir = scratch("validate_examples")
    local _, listing = H.sh("cd " .. H.q(EXAMPLES) .. " && ls *.lua")
    local n = 0
    for file in listing:gmatch("[^\n]+") do
      local path = EXAMPLES .. file
      local code, out, err = kingest(dir, { "validate", path })
      assert.are.equal(0, code, file .. ": " .. err)
      assert.are.equal("OK", last_line(out), file)
      local job_name = H.slurp(path):match('%["job%.name"%] = "([^"]+)"')
      assert.are.equal("job          " .. job_name .. " (" .. path .. ")", H.lines(out)[1], file)
      assert.truthy(out:find("brokers      " .. NOWHERE .. " (not contacted)", 1, true), file .. ":\n" .. out)
      n = n + 1
    end
    assert.is_true(n >= 9, "examples found: " .. n)
    assert_nothing_written(dir)
  end)

  it("names each hook and where it is defined", function()
    local dir = scratch("validate_hooks")
    local csv = EXAMPLES .. "csv_to_json.lua"
    local _, out = kingest(dir, { "validate", csv })
    local decode_at = csv .. ":" .. line_of(csv, "decodeRecord = function")
    assert.truthy(out:find("\ndecodeRecord " .. decode_at .. "\n", 1, true), out)
    assert.truthy(out:find("\nconverters   none\n", 1, true), out)
    -- What becomes of a failed record, and of its task.
    assert.truthy(out:find("\non errors    decode.error.policy=quarantine: a record that fails in decodeRecord is " ..
      "quarantined, up to decode.error.max.ratio=0.5 of a task's records; a converter failure fails the task, as " ..
      "task.skip.error.records is not set\n", 1, true), out)
    assert.truthy(out:find("\nwriter       the simple writer, json, codec null: " .. dir .. "/work/job-output/<topic>/" ..
      "part.<taskId>.json\n", 1, true), out)

    local bytes = EXAMPLES .. "bytes_to_json.lua"
    _, out = kingest(dir, { "validate", bytes })
    assert.truthy(out:find("\nconverters   3: gobblin.converter.bytes_to_json(), " .. bytes .. ":" ..
      line_of(bytes, "function(event, ctx)") .. ", gobblin.converter.json_to_bytes()\n", 1, true), out)
    _, out = kingest(dir, { "validate", EXAMPLES .. "filter.lua" })
    assert.truthy(out:find("\nsource       gobblin.source.kafka_json (decodeRecord: gobblin.converter.bytes_to_json())\n",
      1, true), out)
    local est = EXAMPLES .. "custom_estimator.lua"
    _, out = kingest(dir, { "validate", est })
    local estimate_at = est .. ":" .. line_of(est, "estimateSize = function")
    assert.truthy(out:find("\nestimateSize " .. estimate_at .. "\n", 1, true), out)
    _, out = kingest(dir, { "validate", EXAMPLES .. "avro_passthrough.lua" })
    assert.truthy(out:find("\ninput        Avro records in Confluent's framing, schemas from " ..
      ENV.SCHEMA_REGISTRY_URL .. " (not contacted)\n", 1, true), out)
  end)

  it("opens no network socket, for validate and for test", function()
    local dir = scratch("validate_strace")
    assert.are.equal(0, (H.sh("command -v strace")), "strace is needed (scripts/setup installs it)")
    local csv = EXAMPLES .. "csv_to_json.lua"
    for _, args in ipairs({ { "validate", csv }, { "test", csv } }) do
      local trace = dir .. "/" .. H.unique("strace")
      -- LeakSanitizer cannot work under ptrace; the other cases check for leaks.
      local cmd = { "env", "KAFKA_BROKERS=" .. NOWHERE, "TMPDIR=" .. H.q(dir .. "/tmp"),
        "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=86", "strace", "-f", "-qq",
        "-e", "trace=socket,connect,openat", "-o", H.q(trace), H.q(H.bin) }
      for _, a in ipairs(args) do cmd[#cmd + 1] = H.q(a) end
      local input = dir .. "/" .. H.unique("stdin")
      H.spit(input, "1,a,2,3\n")
      local code, _, err = H.sh(table.concat(cmd, " ") .. " <" .. H.q(input))
      assert.are.equal(0, code, args[1] .. ": " .. err)
      local calls = H.slurp(trace)
      -- The trace is real: it saw the job file opened.
      assert.truthy(calls:find('openat%([^\n]*"' .. csv:gsub("%p", "%%%0") .. '"'), args[1] .. ":\n" .. calls)
      assert.falsy(calls:find("AF_INET", 1, true), args[1] .. " opened a network socket:\n" .. calls)
    end
  end)

  it("refuses a job.lua with a syntax error, naming the file and line (78)", function()
    local dir = scratch("validate_syntax")
    local path = dir .. "/job.lua"
    H.spit(path, 'return {\n  ["kafka.brokers"] = "' .. NOWHERE .. '",\n' ..
      '  decodeRecord = function(msg) return msg:value( end,\n}\n')
    local code, out, err = kingest(dir, { "validate", path })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: " .. path .. ":3: unexpected symbol near 'end'", summary_lines(err)[1], err)
  end)

  it("refuses a misspelt property with its file, line and the property meant (78)", function()
    local dir = scratch("validate_typo")
    local pull = H.job_pull(dir, "job.name=typo\nkafka.brokers=" .. NOWHERE .. "\ntopic.whitelst=events\n")
    local code, out, err = kingest(dir, { "validate", pull })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: " .. pull .. ":3: unknown property topic.whitelst; did you mean topic.whitelist?",
      summary_lines(err)[1])
    local lua = job(dir, { ["decode.error.polcy"] = "skip" })
    code, _, err = kingest(dir, { "validate", lua })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("kingest: " .. lua .. ": unknown property decode.error.polcy; did you mean decode.error.policy?",
      summary_lines(err)[1])
  end)

  it("refuses invalid values as a run would, and with --strict what a run with job.strict=true refuses", function()
    local dir = scratch("validate_values")
    local pull = H.job_pull(dir, "job.name=v\nkafka.brokers=" .. NOWHERE .. "\nbootstrap.with.offset=first\n")
    local code, _, err = kingest(dir, { "validate", pull })
    assert.are.equal(EX_CONFIG, code, err)
    assert.truthy(summary_lines(err)[1]:find(pull .. ":3", 1, true), err)
    assert.truthy(summary_lines(err)[1]:find("bootstrap.with.offset", 1, true), err)
    -- A Gobblin converter class: kingest does not implement converter.classes, which is a WARN, an error with
    -- --strict.
    pull = H.job_pull(dir, "job.name=v\nkafka.brokers=" .. NOWHERE .. "\nconverter.classes=gobblin.converter.Foo\n",
      "classes.pull")
    local out
    code, out, err = kingest(dir, { "validate", pull })
    assert.are.equal(0, code, err)
    assert.are.equal("OK", last_line(out))
    assert.truthy(err:find("WARN " .. pull .. ":3: converter.classes=gobblin.converter.Foo is not implemented", 1,
      true), err)
    code, out, err = kingest(dir, { "validate", "--strict", pull })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("", out)
    assert.truthy(summary_lines(err)[1]:find("job.strict=true refuses 1 property", 1, true), err)
    -- A librdkafka setting the client refuses: found without making a client.
    pull = H.job_pull(dir, "job.name=v\nkafka.brokers=" .. NOWHERE .. "\nkafka.consumer.fetch.wait.max.mss=5\n",
      "consumer.pull")
    code, _, err = kingest(dir, { "validate", pull })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("kingest: " .. pull .. ":3: property kafka.consumer.fetch.wait.max.mss=5: the Kafka client " ..
      'refuses it: No such configuration property: "fetch.wait.max.mss"', summary_lines(err)[1])
    -- A topic pattern that does not compile, and a CUSTOM estimator without estimateSize: a run finds them
    -- while it plans.
    pull = H.job_pull(dir, "job.name=v\nkafka.brokers=" .. NOWHERE .. "\ntopic.whitelist=events,a(b\n", "regex.pull")
    code, _, err = kingest(dir, { "validate", pull })
    assert.are.equal(EX_CONFIG, code, err)
    assert.truthy(summary_lines(err)[1]:find("kingest: " .. pull .. ":3: invalid regular expression 'a(b' in " ..
      "property topic.whitelist", 1, true), err)
    local lua = job(dir, { ["kafka.workunit.size.estimator.type"] = "CUSTOM" })
    code, _, err = kingest(dir, { "validate", lua })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("kingest: " .. lua .. ": kafka.workunit.size.estimator.type=CUSTOM needs an estimateSize " ..
      "function in the job table", summary_lines(err)[1])
  end)

  it("refuses a converter that gobblin.converter does not have, at the job's line (78)", function()
    local dir = scratch("validate_converter")
    local path = dir .. "/job.lua"
    H.spit(path, 'local converter = require("gobblin.converter")\nreturn {\n  ["kafka.brokers"] = "' .. NOWHERE ..
      '",\n  converters = { converter.bytes_to_jsn() },\n}\n')
    local code, out, err = kingest(dir, { "validate", path })
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: " .. path .. ":4: gobblin.converter has no converter bytes_to_jsn (it has " ..
      "bytes_to_json, filter, format_timestamp, json_to_avro, json_to_bytes, project, rename); did you mean " ..
      "bytes_to_json?", summary_lines(err)[1])
    -- A module the job requires as it loads, and a source that does not exist.
    H.spit(path, 'local x = require("gobblin.convertr")\nreturn { ["kafka.brokers"] = "' .. NOWHERE .. '" }\n')
    code, _, err = kingest(dir, { "validate", path })
    assert.are.equal(EX_CONFIG, code, err)
    assert.truthy(summary_lines(err)[1]:find("module 'gobblin.convertr' not found", 1, true), err)
    path = job(dir, {}, '  source = "gobblin.source.kafka_jsn",')
    code, _, err = kingest(dir, { "validate", path })
    assert.are.equal(EX_CONFIG, code, err)
    assert.truthy(summary_lines(err)[1]:find("source gobblin.source.kafka_jsn cannot be loaded (did you mean " ..
      "gobblin.source.kafka_json?", 1, true), err)
  end)

  it("refuses a kafka.brokers entry that is not host:port, naming the entry and why (78), as a run does", function()
    local dir = scratch("validate_brokers")
    for _, case in ipairs({
      { "localhost:9092x", "entry 'localhost:9092x' is not host:port: invalid port: expected a number from 1 to 65535" },
      { NOWHERE .. ",kafka-2:0", "entry 'kafka-2:0' is not host:port: invalid port: expected a number from 1 to 65535" },
      { "::1:9092", "entry '::1:9092' is not host:port: an IPv6 address goes in brackets, with the port after them: " ..
        "[::1]:9092" },
      { "[::1:9092", "entry '[::1:9092' is not host:port: an IPv6 address needs its closing bracket: [::1]:9092" },
    }) do
      local path = job(dir, { ["kafka.brokers"] = case[1] })
      for _, cmd in ipairs({ "validate", "run" }) do
        local code, out, err = kingest(dir, { cmd, path })
        assert.are.equal(EX_CONFIG, code, cmd .. " " .. case[1] .. ": " .. err)
        assert.are.equal("", out)
        assert.are.equal("kingest: " .. path .. ": property kafka.brokers=" .. case[1] .. ": " .. case[2],
          last_line(err))
      end
    end
    -- An IPv6 address in brackets, a protocol prefix and spaces around the entries are fine.
    local path = job(dir, { ["kafka.brokers"] = "[::1]:9092, SASL_SSL://kafka-1.example.com:9093" })
    local code, out, err = kingest(dir, { "validate", path })
    assert.are.equal(0, code, err)
    assert.truthy(out:find("\nbrokers      [::1]:9092, SASL_SSL://kafka-1.example.com:9093 (not contacted)\n", 1, true),
      out)
    assert_nothing_written(dir)
  end)

  it("logs a WARN, once, for each test hook set in the environment, naming it and its value (docs/testing.md)", function()
    local dir = scratch("validate_hooks_env")
    local path = job(dir, {})
    local hooks = { KINGEST_CRASH_AT = "publish:2", KINGEST_FAULT = "publish.move:1,state.finish.busy",
                    KINGEST_POWERCUT = "0", KINGEST_KAFKA_FAULT = "offsets:NOT_LEADER_FOR_PARTITION:3",
                    KINGEST_MAP_CRASH_AT = "map:1", KINGEST_S3_CLOCK_SKEW = "-3600" }
    local code, out, err = kingest(dir, { "validate", path }, nil, hooks)
    assert.are.equal(0, code, err)
    assert.are.equal("OK", last_line(out))
    local what = {
      KINGEST_CRASH_AT = "the process kills itself (SIGKILL) at a crash point",
      KINGEST_FAULT = "steps of the commit fail on purpose",
      KINGEST_POWERCUT = "the local file system is behind a simulated power loss",
      KINGEST_KAFKA_FAULT = "Kafka queries of the planning fail on purpose",
      KINGEST_MAP_CRASH_AT = "the first attempt of each Hadoop map kills itself at a crash point",
      KINGEST_S3_CLOCK_SKEW = "requests to S3 are signed with a clock this many seconds off",
    }
    for name, value in pairs(hooks) do
      local lines = H.grep(err, " WARN Test hook " .. name .. "=")
      assert.are.equal(1, #lines, name .. ":\n" .. err)
      assert.matches(" WARN Test hook " .. name .. "=" .. value:gsub("%p", "%%%0") .. " is set: " ..
        what[name]:gsub("%p", "%%%0") .. "; not for production use %(docs/testing%.md%)$", lines[1])
    end
    -- None set: not a word.
    code, _, err = kingest(dir, { "validate", path })
    assert.are.equal(0, code, err)
    assert.are.same({}, H.grep(err, "Test hook"))
    assert_nothing_written(dir)
  end)

  it("says a job file that cannot be read is missing input (66)", function()
    local dir = scratch("validate_missing")
    local code, out, err = kingest(dir, { "validate", dir .. "/nope.lua" })
    assert.are.equal(EX_NOINPUT, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: " .. dir .. "/nope.lua: cannot read job file: No such file or directory", H.lines(err)[1])
    code, _, err = kingest(dir, { "validate", dir })
    assert.are.equal(EX_NOINPUT, code, err)
    assert.are.equal("kingest: " .. dir .. ": cannot read job file: Is a directory", H.lines(err)[1])
  end)

  it("exits 64 for bad usage, and 0 with its usage for --help", function()
    local dir = scratch("validate_usage")
    local path = job(dir)
    for _, args in ipairs({ { "validate" }, { "validate", path, path }, { "validate", "--bogus", path },
                            { "test", path, "--format", "xml" }, { "test", path, "--partition", "-1" },
                            { "test", path, "-f", "length-prefixed", "-k", "=" }, { "test", path, "--topic" } }) do
      local code, out, err = kingest(dir, args, "")
      assert.are.equal(EX_USAGE, code, table.concat(args, " ") .. ": " .. err)
      assert.are.equal("", out, table.concat(args, " "))
    end
    for _, cmd in ipairs({ "validate", "test" }) do
      local code, out, err = kingest(dir, { cmd, "--help" })
      assert.are.equal(0, code, err)
      assert.matches("^Usage: kingest " .. cmd .. " JOB", out)
      local code2, out2 = kingest(dir, { "help", cmd })
      assert.are.equal(0, code2)
      assert.are.equal(out, out2)
    end
    local _, out = kingest(dir, { "--help" })
    assert.truthy(out:find("\n  validate JOB ", 1, true) and out:find("\n  test JOB ", 1, true), out)
  end)
end)

describe("kingest test", function()
  it("writes what the text writer would, byte for byte, and nothing else anywhere", function()
    local dir = scratch("test_text")
    local input = "hello\n\nworld \t\n" .. "last line without a newline"
    local code, out, err = kingest(dir, { "test", EXAMPLES .. "quickstart.lua" }, input)
    assert.are.equal(0, code, err)
    assert.are.equal("hello\n\nworld \t\nlast line without a newline\n", out)
    local lines = summary_lines(err)
    local file = dir .. "/work/job-output/test/part.task_GobblinKafkaQuickStart_"
    assert.matches("^kingest test: output file " .. file:gsub("%p", "%%%0") .. "%d+_0%.txt$", lines[1])
    assert.are.equal("kingest test: 4 records read: 4 written (4 outputs), 0 dropped, 0 skipped, 0 quarantined, " ..
      "0 failed, 0 not processed", lines[2])
    assert_nothing_written(dir)
  end)

  it("runs csv_to_json.lua record by record, quarantining what its decodeRecord refuses", function()
    local dir = scratch("test_csv")
    local csv = EXAMPLES .. "csv_to_json.lua"
    local code, out, err = kingest(dir, { "test", csv }, '1,Widget,2,2.5\n2,"Gadget, large",1,10\n3,Thing,x,1\n')
    assert.are.equal(1, code, err)
    assert.same({
      { id = 1, product = "Widget", quantity = 2, price = 2.5, total = 5 },
      { id = 2, product = "Gadget, large", quantity = 1, price = 10, total = 10 },
    }, json_lines(out))
    local decode_line = line_of(csv, 'error("quantity and price must be numbers')
    assert.truthy(err:find(" WARN Quarantining record orders_csv:0 at offset 2: decodeRecord failed: " .. csv .. ":" ..
      decode_line .. ": quantity and price must be numbers, got x and 1 (the task goes on: 1 failed so far, within " ..
      "decode.error.max.ratio=0.5)\nstack traceback:\n\t" .. csv .. ":" .. decode_line .. " (decodeRecord)\n", 1, true), err)
    local lines = summary_lines(err)
    assert.matches("^kingest test: quarantine file .*/job%-output/orders_csv/_errors/" ..
      "part%.task_example_csv_to_json_%d+_0%.jsonl$", lines[2])
    assert.are.equal("kingest test: 3 records read: 2 written (2 outputs), 0 dropped, 0 skipped, 1 quarantined, " ..
      "0 failed, 0 not processed", lines[3])
    assert_nothing_written(dir)
  end)

  it("runs bytes_to_json.lua, skipping a payload that is not JSON", function()
    local dir = scratch("test_bytes")
    local code, out, err = kingest(dir, { "test", EXAMPLES .. "bytes_to_json.lua", "--partition", "2" },
      '{"id":1}\nnot json\n{"id":3,"tags":["x"]}\n')
    assert.are.equal(1, code, err)
    local function at(offset) return { topic = "events", partition = 2, offset = offset } end
    assert.same({ { id = 1, _kafka = at(0) }, { id = 3, tags = { "x" }, _kafka = at(2) } }, json_lines(out))
    assert.truthy(err:find(" WARN Skipping record events:2 at offset 1: converter 1 failed: invalid JSON", 1, true), err)
    assert.are.equal("kingest test: 3 records read: 2 written (2 outputs), 0 dropped, 1 skipped, 0 quarantined, " ..
      "0 failed, 0 not processed", last_line(err))
  end)

  describe("with a decodeRecord that fails on one record", function()
    local CODE = [[
  decodeRecord = function(msg, ctx)
    local v = msg:value()
    if v == "bad" then error("cannot decode " .. v .. " at " .. ctx.offset) end
    return v:upper()
  end,]]
    local function input(n, bad)
      local lines = {}
      for i = 0, n - 1 do lines[#lines + 1] = i == bad and "bad" or ("r" .. i) end
      return table.concat(lines, "\n") .. "\n"
    end
    local function expected(n, bad, upto)
      local lines = {}
      for i = 0, (upto or n) - 1 do if i ~= bad then lines[#lines + 1] = "R" .. i end end
      return table.concat(lines, "\n") .. "\n"
    end

    it("skips it within the error budget, logging its offset and traceback, and exits 1", function()
      local dir = scratch("test_decode_skip")
      local path = job(dir, {}, CODE)
      local code, out, err = kingest(dir, { "test", path }, input(10, 4))
      assert.are.equal(1, code, err)
      assert.are.equal(expected(10, 4), out)
      local line = line_of(path, 'error("cannot decode')
      assert.truthy(err:find(" WARN Skipping record events:0 at offset 4: decodeRecord failed: " .. path .. ":" ..
        line .. ": cannot decode bad at 4 (the task goes on: 1 failed so far, within decode.error.max.ratio=0.1)\n" ..
        "stack traceback:\n\t" .. path .. ":" .. line .. " (decodeRecord)\n", 1, true), err)
      assert.are.equal("kingest test: 10 records read: 9 written (9 outputs), 0 dropped, 1 skipped, 0 quarantined, " ..
        "0 failed, 0 not processed", last_line(err))
      -- Every record fine: exit 0.
      code, out, err = kingest(dir, { "test", path }, input(3))
      assert.are.equal(0, code, err)
      assert.are.equal(expected(3), out)
    end)

    it("fails the task over the error budget, as a run of those records would", function()
      local dir = scratch("test_decode_budget")
      local path = job(dir, {}, CODE)
      local code, out, err = kingest(dir, { "test", path }, input(5, 1))
      assert.are.equal(1, code, err)
      assert.are.equal(expected(5, 1, 2), out)
      assert.truthy(err:find("kingest test: a run would fail the task here, publish none of its output and move no " ..
        "offset: 1 of the task's 5 records failed in the script, more than decode.error.max.ratio=0.1 of them; last " ..
        "at events:0 offset 1", 1, true), err)
      -- The record that fails the task is not skipped: it failed, and its line says so.
      assert.truthy(err:find(" WARN decodeRecord failed for events:0 at offset 1: " .. path .. ":" ..
        line_of(path, 'error("cannot decode') .. ": cannot decode bad at 1; the task fails: 1 of the task's 5 records " ..
        "failed in the script, more than decode.error.max.ratio=0.1 (none of its output is published and its offsets " ..
        "do not move)\nstack traceback:\n", 1, true), err)
      assert.are.equal("kingest test: 5 records read: 1 written (1 output), 0 dropped, 0 skipped, 0 quarantined, " ..
        "1 failed, 3 not processed", last_line(err))
    end)

    it("stops at it with decode.error.policy=fail", function()
      local dir = scratch("test_decode_fail")
      local path = job(dir, { ["decode.error.policy"] = "fail" }, CODE)
      local code, out, err = kingest(dir, { "test", path }, input(4, 2))
      assert.are.equal(1, code, err)
      assert.are.equal(expected(4, 2, 2), out)
      assert.truthy(err:find("kingest test: a run would fail the task here, publish none of its output and move no " ..
        "offset: decodeRecord failed for events:0 at offset 2 (decode.error.policy=fail): " .. path .. ":" ..
        line_of(path, 'error("cannot decode') .. ": cannot decode bad at 2\nstack traceback:", 1, true), err)
      assert.are.equal("kingest test: 4 records read: 2 written (2 outputs), 0 dropped, 0 skipped, 0 quarantined, " ..
        "1 failed, 1 not processed", last_line(err))
    end)

    it("with --log-format json writes its report and its failed records as JSON lines, the traceback apart", function()
      local dir = scratch("test_json")
      local path = job(dir, {}, CODE)
      local code, out, err = kingest(dir, { "test", path, "--log-format", "json" }, input(10, 4))
      assert.are.equal(1, code, err)
      assert.are.equal(expected(10, 4), out)
      local lines = {}
      for _, line in ipairs(H.lines(err)) do
        local ok, o = pcall(cjson.decode, line)
        assert.is_true(ok and type(o) == "table", "not JSON: " .. line)
        lines[#lines + 1] = o
      end
      assert.are.equal("Skipping record events:0 at offset 4: decodeRecord failed: " .. path .. ":" ..
        line_of(path, 'error("cannot decode') .. ": cannot decode bad at 4 (the task goes on: 1 failed so far, within " ..
        "decode.error.max.ratio=0.1)", lines[1].message)
      assert.matches("^\t" .. path:gsub("%p", "%%%0") .. ":%d+ %(decodeRecord%)\n", lines[1].traceback)
      assert.same({ "INFO", "10 records read: 9 written (9 outputs), 0 dropped, 1 skipped, 0 quarantined, 0 failed, " ..
        "0 not processed" }, { lines[#lines].level, lines[#lines].message })
    end)
  end)

  it("writes JSON records back as they came: [] as [], {} as {}, each object's keys in their order", function()
    local dir = scratch("test_json_shape")
    local job = dir .. "/job.lua"
    H.spit(job, 'return {\n  ["kafka.brokers"] = "' .. NOWHERE .. '",\n  ["topic.whitelist"] = "events",\n' ..
      '  source = "gobblin.source.kafka_json",\n}\n')
    local input = table.concat({
      '{"id":1,"tags":[],"attrs":{}}',
      '{"z":1,"a":2,"m":{"q":[[],{}],"b":{"y":null,"x":[]}}}',
      '{"a":2,"z":1}',
      '[{"k":1,"j":2},{"j":3,"k":4},[],{}]',
    }, "\n") .. "\n"
    local code, out, err = kingest(dir, { "test", job }, input)
    assert.are.equal(0, code, err)
    assert.are.equal(input, out)
    -- A converter that projects fields and one that adds a field: the fields asked for in their order, the field
    -- added after the record's own.
    H.spit(job, 'local converter = require("gobblin.converter")\nreturn {\n  ["kafka.brokers"] = "' .. NOWHERE ..
      '",\n  ["topic.whitelist"] = "events",\n  source = "gobblin.source.kafka_json",\n' ..
      '  converters = { converter.project({ "ts", "id", "tags", "attrs" }),\n' ..
      '    converter.format_timestamp({ field = "ts", into = "at" }) },\n}\n')
    code, out, err = kingest(dir, { "test", job }, '{"id":1,"tags":[],"attrs":{},"ts":0,"x":5}\n')
    assert.are.equal(0, code, err)
    assert.are.equal('{"ts":0,"id":1,"tags":[],"attrs":{},"at":"1970-01-01T00:00:00Z"}\n', out)
    -- A projection as the job's last converter (its results are written without a look for other keys).
    H.spit(job, 'local converter = require("gobblin.converter")\nreturn {\n  ["kafka.brokers"] = "' .. NOWHERE ..
      '",\n  ["topic.whitelist"] = "events",\n  source = "gobblin.source.kafka_json",\n' ..
      '  converters = { converter.project({ "user", "id", "tags", "gone" }) },\n}\n')
    code, out, err = kingest(dir, { "test", job }, '{"id":1,"tags":[{"b":1,"a":[]}],"user":{"z":{},"y":2},"ts":0}\n' ..
      '{"x":1}\n')
    assert.are.equal(0, code, err)
    assert.are.equal('{"user":{"z":{},"y":2},"id":1,"tags":[{"b":1,"a":[]}]}\n{}\n', out)
  end)

  it("counts what a filter drops, and exits 0", function()
    local dir = scratch("test_filter")
    local code, out, err = kingest(dir, { "test", EXAMPLES .. "filter.lua" }, table.concat({
      '{"level":"ERROR","time":1,"service":"a","message":"m1","host":"h"}',
      '{"level":"INFO","time":2,"service":"a","message":"m2"}',
      '{"level":"FATAL","time":3,"service":"b","message":"m3"}',
      '{"level":"DEBUG","time":4,"service":"b","message":"m4"}',
    }, "\n") .. "\n")
    assert.are.equal(0, code, err)
    assert.same({ { time = 1, service = "a", message = "m1" }, { time = 3, service = "b", message = "m3" } },
      json_lines(out))
    assert.are.equal("kingest test: 4 records read: 2 written (2 outputs), 2 dropped, 0 skipped, 0 quarantined, " ..
      "0 failed, 0 not processed", last_line(err))
  end)

  it("counts a record that writes several outputs once, and one that writes none as dropped", function()
    local dir = scratch("test_many")
    local code, out, err = kingest(dir, { "test", EXAMPLES .. "one_to_many.lua" },
      '{"id":7,"items":[{"sku":"a","quantity":1},{"sku":"b","quantity":2}]}\n{"id":8,"items":[]}\n')
    assert.are.equal(0, code, err)
    assert.same({ { order_id = 7, line = 1, sku = "a", quantity = 1 },
                  { order_id = 7, line = 2, sku = "b", quantity = 2 } }, json_lines(out))
    assert.are.equal("kingest test: 2 records read: 1 written (2 outputs), 1 dropped, 0 skipped, 0 quarantined, " ..
      "0 failed, 0 not processed", last_line(err))
  end)

  it("reads length-prefixed binary records, a null payload among them", function()
    local dir = scratch("test_binary")
    local all = {}
    for b = 0, 255 do all[#all + 1] = string.char(b) end
    local payloads = { "abc", "", table.concat(all), "\n\0\n" }
    local function be32(n) return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
      math.floor(n / 256) % 256, n % 256) end
    local input = {}
    for _, p in ipairs(payloads) do input[#input + 1] = be32(#p) .. p end
    input[#input + 1] = "\255\255\255\255" -- a null payload: written as no bytes, as a run writes a tombstone
    local code, out, err = kingest(dir, { "test", EXAMPLES .. "quickstart.lua", "--format", "length-prefixed" },
      table.concat(input))
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat(payloads, "\n") .. "\n\n", out)
    assert.are.equal("kingest test: 5 records read: 5 written (5 outputs), 0 dropped, 0 skipped, 0 quarantined, " ..
      "0 failed, 0 not processed", last_line(err))
    -- Input cut short is not in the format (65).
    code, out, err = kingest(dir, { "test", EXAMPLES .. "quickstart.lua", "-f", "length-prefixed" }, be32(3) .. "ab")
    assert.are.equal(EX_DATAERR, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: stdin: record 0 (at byte 0) is cut short: its length says 3 bytes, and 2 follow " ..
      "(--format length-prefixed: a 4-byte big-endian length, then that many bytes)", H.lines(err)[1])
    assert_nothing_written(dir)
  end)

  it("hands the script the topic, partition, key, offsets and timestamp it is told", function()
    local dir = scratch("test_ctx")
    local path = job(dir, { ["topic.whitelist"] = "events.*,other" }, [[
  decodeRecord = function(msg, ctx)
    return table.concat({ ctx.topic, msg:topic(), tostring(msg:key()), ctx.partition, ctx.offset, msg.offset,
      ctx.timestamp, msg:value(), #msg:headers() }, "|")
  end,]])
    -- The whitelist begins with a pattern: the topic must be given.
    local code, out, err = kingest(dir, { "test", path }, "x\n")
    assert.are.equal(EX_USAGE, code, err)
    assert.are.equal("kingest: pass --topic: the records need a topic, and topic.whitelist (events.*,other) does " ..
      "not begin with a plain topic name", H.lines(err)[1])
    code, out, err = kingest(dir, { "test", path, "--topic=orders", "-p", "5", "--key-separator", "::",
      "--timestamp", "1700000000123" }, "k1::v1\nno key\n::empty key\n")
    assert.are.equal(0, code, err)
    assert.are.equal("orders|orders|k1|5|0|0|1700000000123|v1|0\n" ..
      "orders|orders|nil|5|1|1|1700000000123|no key|0\n" ..
      "orders|orders||5|2|2|1700000000123|empty key|0\n", out)
  end)

  it("prints Avro output as the JSON of the records the Avro file holds", function()
    local dir = scratch("test_avro")
    local code, out, err = kingest(dir, { "test", EXAMPLES .. "json_to_avro.lua" },
      '{"user":"ann","page":"/a","at":1700000000000}\n' ..
      '{"user":"bob","page":"/b","at":1700000000001,"referrer":"https://x","extra":1}\n')
    assert.are.equal(0, code, err)
    -- avro-c's JSON encoding: a union's value is tagged with its branch.
    assert.same({
      { user = "ann", page = "/a", at = 1700000000000, referrer = cjson.null },
      { user = "bob", page = "/b", at = 1700000000001, referrer = { string = "https://x" } },
    }, json_lines(out))
    assert.matches("output file .*/job%-output/clicks/part%.task_example_json_to_avro_%d+_0%.avro$", summary_lines(err)[1])
    -- A record that does not fit the schema is quarantined, naming the field.
    code, out, err = kingest(dir, { "test", EXAMPLES .. "json_to_avro.lua", "-t", "views" },
      '{"user":"cid","page":3,"at":1}\n' .. ('{"user":"dan","page":"/d","at":2}\n'):rep(10))
    assert.are.equal(1, code, err)
    assert.are.equal(10, #json_lines(out))
    assert.truthy(err:find(" WARN Quarantining record views:0 at offset 0: converter 1 failed: field 'page': " ..
      "expected string, got number (3)", 1, true), err)
    assert.are.equal("kingest test: 11 records read: 10 written (10 outputs), 0 dropped, 0 skipped, 1 quarantined, " ..
      "0 failed, 0 not processed", last_line(err))
    assert_nothing_written(dir)
  end)

  it("refuses a job validate refuses (78) and a job file it cannot read (66)", function()
    local dir = scratch("test_bad_job")
    local pull = H.job_pull(dir, "job.name=t\nkafka.brokers=" .. NOWHERE .. "\ntopic.whitelst=events\n")
    local code, out, err = kingest(dir, { "test", pull, "-t", "events" }, "x\n")
    assert.are.equal(EX_CONFIG, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: " .. pull .. ":3: unknown property topic.whitelst; did you mean topic.whitelist?",
      H.lines(err)[#H.lines(err)])
    code, _, err = kingest(dir, { "test", dir .. "/none.pull", "-t", "events" }, "x\n")
    assert.are.equal(EX_NOINPUT, code, err)
  end)
end)
