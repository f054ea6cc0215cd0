-- The command line: help and version on stdout with status 0, usage errors on stderr with status 2,
-- `kingest properties`, `kingest state show` of a job that never ran, and what a run says about properties
-- it ignores (MapReduce-only ones), does not implement or does not know (typos), with and without --strict.
local H = require("support.harness")

-- The project version, from CMakeLists.txt.
local VERSION = H.slurp(H.root .. "/CMakeLists.txt"):match("project%(kingest VERSION ([%d%.]+)")

local function kingest(...)
  return H.kingest({ ... })
end

-- Checks that `kingest ARGS...` prints usage starting with HEADER on stdout, nothing on stderr, and exits 0.
local function prints_usage(header, ...)
  local code, out, err = kingest(...)
  local cmd = table.concat({ ... }, " ")
  assert.are.equal(0, code, cmd .. ": " .. err)
  assert.are.equal("", err, cmd)
  assert.are.equal(header, H.lines(out)[1], cmd .. ":\n" .. out)
  return out
end

-- Checks that `kingest ARGS...` exits 2 with nothing on stdout and FIRST_LINE first on stderr.
local function is_a_usage_error(first_line, ...)
  local code, out, err = kingest(...)
  local cmd = table.concat({ ... }, " ")
  assert.are.equal(2, code, cmd .. ": " .. err)
  assert.are.equal("", out, cmd)
  assert.are.equal(first_line, H.lines(err)[1], cmd .. ":\n" .. err)
  return err
end

describe("the kingest command line", function()
  describe("prints usage on stdout and exits 0", function()
    it("for kingest --help, -h and help", function()
      for _, arg in ipairs({ "--help", "-h", "help" }) do
        local out = prints_usage("Usage: kingest <command> [options]", arg)
        for _, cmd in ipairs({ "run JOB", "plan JOB", "state show JOB", "state history JOB", "state set-offset JOB",
                               "state reset JOB", "properties", "run-task JOB", "version", "help" }) do
          assert.truthy(out:find("\n  " .. cmd, 1, true), arg .. " should list " .. cmd .. ":\n" .. out)
        end
        -- The table of exit statuses, one line each.
        for status, meaning in ipairs({ "failure", "bad usage", "another run of the job holds its lock", "partial",
                                        "over the error budget", "stopped by SIGTERM or SIGINT" }) do
          assert.truthy(out:find("\n  " .. status .. "  " .. meaning, 1, true), arg .. ": exit status " .. status .. ":\n" .. out)
        end
      end
    end)

    it("for kingest run --help and kingest help run", function()
      local out = prints_usage("Usage: kingest run JOB [options]", "run", "--help")
      assert.truthy(out:find("--work-dir", 1, true), out)
      assert.truthy(out:find("\n      --strict           Refuse to run when the job has properties kingest does not know or " ..
        "does not\n", 1, true), out)
      assert.truthy(prints_usage("Usage: kingest plan JOB [options]", "plan", "--help"):find("\n      --strict ", 1, true))
      assert.are.equal(out, prints_usage("Usage: kingest run JOB [options]", "help", "run"))
    end)

    it("for kingest state --help and the --help of every state command", function()
      local header = "Usage: kingest state COMMAND JOB [arguments] [options]"
      local out = prints_usage(header, "state", "--help")
      for _, sub in ipairs({ "show", "history", "set-offset", "reset" }) do
        assert.are.equal(out, prints_usage(header, "state", sub, "--help"))
        assert.truthy(out:find("\n  " .. sub, 1, true), sub)
      end
    end)

    it("for kingest properties --help", function()
      prints_usage("Usage: kingest properties", "properties", "--help")
    end)
  end)

  it("prints `kingest <version>` and the librdkafka it carries, with its features, for --version", function()
    assert.is_string(VERSION)
    -- The librdkafka of third_party/librdkafka/build.conf (its upstream version, without Debian's revision):
    -- 2.6.1 or later, the first that logs in with SCRAM to Kafka 4, with every codec and security mechanism.
    local rdkafka = H.slurp(H.root .. "/third_party/librdkafka/build.conf"):match("\nversion=([%d%.]+)%-")
    assert.is_string(rdkafka)
    local major, minor, patch = rdkafka:match("^(%d+)%.(%d+)%.(%d+)$")
    assert.is_true(tonumber(major) * 10000 + tonumber(minor) * 100 + tonumber(patch) >= 20601, rdkafka)
    for _, arg in ipairs({ "--version", "-V", "version" }) do
      local code, out, err = kingest(arg)
      assert.are.equal(0, code, err)
      local features = out:match("^kingest " .. VERSION:gsub("%.", "%%.") .. "\nlibrdkafka " ..
                                 rdkafka:gsub("%.", "%%.") .. " %(builtin%.features ([%w_,]+)%)\n$")
      assert(features, out)
      local has = {}
      for f in features:gmatch("[^,]+") do has[f] = true end
      for _, f in ipairs({ "gzip", "snappy", "lz4", "zstd", "ssl", "sasl_plain", "sasl_scram", "sasl_gssapi",
                           "sasl_oauthbearer" }) do
        assert.is_true(has[f] == true, f .. " not in " .. features)
      end
    end
  end)

  describe("exits 2 with a message on stderr", function()
    it("without arguments", function()
      local err = is_a_usage_error("Usage: kingest <command> [options]")
      assert.truthy(err:find("Commands:", 1, true), err)
    end)

    it("for an unknown command", function()
      is_a_usage_error("kingest: unknown command frobnicate", "frobnicate")
      is_a_usage_error("kingest: unknown command frobnicate", "help", "frobnicate")
    end)

    it("for an unknown option", function()
      is_a_usage_error("kingest: unknown option --frobnicate", "--frobnicate")
      is_a_usage_error("kingest: unknown option --frobnicate", "run", "--frobnicate", "job.pull")
      is_a_usage_error("kingest: unknown option --frobnicate", "state", "show", "--frobnicate", "job.pull")
      is_a_usage_error("kingest: unknown option --strict", "state", "show", "--strict", "job.pull")
    end)

    it("for an option the command does not take, on every command", function()
      local commands = {
        { "run", "job.pull" }, { "plan", "job.pull" }, { "run-task", "job.pull" }, { "state", "show", "job.pull" },
        { "state", "history", "job.pull" }, { "state", "set-offset", "job.pull", "t:0", "1" },
        { "state", "reset", "job.pull" }, { "properties" }, { "validate", "job.pull" }, { "test", "job.pull" },
      }
      for _, cmd in ipairs(commands) do
        for _, opt in ipairs({ "--frobnicate", "-Z", "--yes", "--markdown", "--limit=3", "--json", "--dry-run" }) do
          local args = { unpack(cmd) }
          args[#args + 1] = opt
          local takes = (opt == "--yes" and cmd[2] == "reset") or (opt == "--markdown" and cmd[1] == "properties") or
            (opt == "--limit=3" and cmd[2] == "history") or
            (opt == "--json" and (cmd[1] == "plan" or cmd[2] == "show" or cmd[2] == "history")) or
            (opt == "--dry-run" and (cmd[2] == "set-offset" or cmd[2] == "reset"))
          if not takes then
            -- validate and test exit with sysexits' EX_USAGE, the others with 2.
            local want = (cmd[1] == "validate" or cmd[1] == "test") and 64 or 2
            local code, out, err = kingest(unpack(args))
            assert.are.equal(want, code, table.concat(args, " ") .. ": " .. err)
            assert.are.equal("", out)
            assert.are.equal("kingest: unknown option " .. opt:match("^[^=]*"), H.lines(err)[1])
          end
        end
      end
    end)

    it("for arguments that help and version do not take", function()
      is_a_usage_error("kingest: help takes one command at most", "help", "run", "extra")
      is_a_usage_error("kingest: --version takes no arguments", "--version", "--foo")
      is_a_usage_error("kingest: -V takes no arguments", "-V", "x")
      is_a_usage_error("kingest: version takes no arguments", "version", "x")
      is_a_usage_error("kingest: unknown command --foo", "help", "--foo")
    end)

    it("for a misspelled option, with the one meant", function()
      is_a_usage_error("kingest: unknown option --work-dri; did you mean --work-dir?", "run", "job.pull", "--work-dri=x")
      is_a_usage_error("kingest: unknown option --dryrun; did you mean --dry-run?", "state", "reset", "j", "--dryrun")
      is_a_usage_error("kingest: unknown option --jsn; did you mean --json?", "state", "history", "j", "--jsn")
    end)

    it("for a flag given a value, an empty value, or a bad log level or format", function()
      is_a_usage_error("kingest: option --json takes no value", "plan", "job.pull", "--json=yes")
      is_a_usage_error("kingest: option --work-dir needs a value", "run", "job.pull", "--work-dir=")
      is_a_usage_error("kingest: invalid --log-level loud: allowed values are debug, info, warn, error", "run",
        "job.pull", "--log-level=loud")
      is_a_usage_error("kingest: invalid --log-format xml: allowed values are text, json", "run", "job.pull",
        "--log-format", "xml")
    end)

    it("for run without a job", function()
      local err = is_a_usage_error("kingest: run needs one job file", "run")
      assert.truthy(err:find("Usage: kingest run JOB", 1, true), err)
      is_a_usage_error("kingest: option --work-dir needs a value", "run", "job.pull", "--work-dir")
    end)
  end)

  it("takes --opt=value and --opt value alike, and -- ends the options", function()
    local work = H.workdir("cli_optforms")
    local job = H.job_pull(work, "job.name=OptForms\nkafka.brokers=127.0.0.1:1\n")
    for _, args in ipairs({ { "--work-dir", work }, { "--work-dir=" .. work }, { "-w", work } }) do
      local code, out, err = kingest("state", "show", "OptForms", unpack(args))
      assert.are.equal(1, code)
      assert.are.equal("", out)
      assert.matches("^kingest: no state for job OptForms: " .. work:gsub("%p", "%%%0") .. "/state%-store/OptForms%.db does not exist$",
        H.last_line(err))
    end
    -- After --, an argument that looks like an option is the job file: here one that cannot be read (66).
    local code, _, err = kingest("plan", "--", "--json")
    assert.are.equal(66, code)
    assert.truthy(H.last_line(err):find("--json", 1, true), err)
    local out
    code, out, err = kingest("properties", "--markdown")
    assert.are.equal(0, code, err)
    assert.are.equal("| Property | Default | Meaning |", H.lines(out)[1])
    assert.truthy(job)
  end)

  it("lists the job properties with their defaults", function()
    local code, out, err = kingest("properties")
    assert.are.equal(0, code, err)
    -- Each property: its name (and a note), its description indented, then `default: ...`.
    local defaults = {}
    for name, default in out:gmatch("([%w%.%*]+)[^\n]*\n    [^\n]*\n    default: ([^\n]*)") do
      defaults[name] = default
    end
    assert.are.equal("latest", defaults["bootstrap.with.offset"], out)
    assert.are.equal("nearest", defaults["reset.on.offset.out.of.range"])
    assert.are.equal("true", defaults["job.lock.enabled"])
    assert.are.equal("100", defaults["mr.job.max.mappers"])
    assert.are.equal("(none)", defaults["kafka.brokers"])
    assert.truthy(out:find("\nmr.job.root.dir (MapReduce only)\n", 1, true), out)
  end)

  describe("state show of a job that never ran", function()
    local work, job

    setup(function()
      work = H.workdir("cli_state")
      job = H.job_pull(work, "job.name=NeverRan\nkafka.brokers=127.0.0.1:1\n")
    end)

    it("fails with a clear message, given the job file", function()
      local code, out, err = H.kingest({ "state", "show", job }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(1, code)
      assert.are.equal("", out)
      assert.matches("^kingest: no state for job NeverRan: .*NeverRan%.db does not exist$", H.last_line(err))
      assert.same({}, H.files(work .. "/state-store"))
    end)

    it("fails with a clear message, given the job's name", function()
      local code, out, err = kingest("state", "show", "NeverRan", "--work-dir", work)
      assert.are.equal(1, code)
      assert.are.equal("", out)
      assert.matches("^kingest: no state for job NeverRan: .*NeverRan%.db does not exist$", H.last_line(err))
      assert.same({}, H.files(work .. "/state-store"))
    end)
  end)

  describe("a run", function()
    local topic

    setup(function()
      topic = H.unique("cli")
      H.create_topic(topic, 1)
      H.produce(topic, { "one", "two" })
    end)

    -- Lines 6 to 9 of a job made by pull: Gobblin properties kingest does not implement, and one it does not know.
    local UNIMPLEMENTED = H.fixture("unimplemented.properties")

    local function pull(work, extra)
      return H.job_pull(work, table.concat({
        "job.name=CliJob",
        "kafka.brokers=" .. H.bootstrap(),
        "topic.whitelist=" .. topic,
        "writer.file.path.type=tablename",
        "bootstrap.with.offset=earliest",
      }, "\n") .. "\n" .. extra)
    end

    it("logs one JSON object per line with --log-format json or log.format=json, --log-format winning", function()
      local cjson = require("cjson")
      for _, how in ipairs({ "option", "property", "both" }) do
        local work = H.workdir("cli_jsonlog")
        local job = pull(work, how == "option" and "" or ("log.format=" .. (how == "both" and "text" or "json") .. "\n"))
        local args = { "run", job }
        if how ~= "property" then args[#args + 1] = "--log-format=json" end
        local code, _, err = H.kingest(args, { GOBBLIN_WORK_DIR = work })
        assert.are.equal(0, code, err)
        assert.same({ "one", "two" }, H.output_lines(work .. "/job-output/" .. topic))
        local seen = {}
        for _, line in ipairs(H.lines(err)) do
          local ok, o = pcall(cjson.decode, line)
          assert.is_true(ok, how .. ": not JSON: " .. line)
          assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$", o.time)
          assert.is_string(o.message)
          assert.are.equal("CliJob", o.job, line)
          assert.matches("^job_CliJob_%d+$", o.job_id)
          seen[o.message] = o
        end
        local pulling = seen["Pulling partition " .. topic .. ":0 from offset 0 to 2, range=2"]
        assert.is_table(pulling, err)
        assert.same({ "INFO", topic, 0 }, { pulling.level, pulling.topic, pulling.partition })
        assert.matches("^task_CliJob_%d+_0$", pulling.task)
        local topic_line = seen["Pulling topic " .. topic]
        assert.same({ topic, nil }, { topic_line.topic, topic_line.partition })
        -- A job-level line has no task, topic or partition.
        local extracted = seen["Extracted 2 data records"]
        assert.is_table(extracted, err)
        assert.is_nil(extracted.topic)
      end
    end)

    it("with --log-format json or log.format=json writes only JSON lines on stderr: usage and job errors, the final error with its exit status, a traceback in a field of its own", function()
      local cjson = require("cjson")
      -- Every line of ERR decoded; the last one's level, message and exit status.
      local function json_lines(err, what)
        local out = {}
        for _, line in ipairs(H.lines(err)) do
          local ok, o = pcall(cjson.decode, line)
          assert.is_true(ok and type(o) == "table", what .. ": not JSON: " .. line .. "\n" .. err)
          out[#out + 1] = o
        end
        assert.is_true(#out > 0, what)
        return out, out[#out]
      end
      local work = H.workdir("cli_jsonerr")
      -- Usage errors, --log-format anywhere on the line.
      for _, args in ipairs({ { "run", "--log-format", "json" }, { "run", "--bogus", "--log-format=json", "j.pull" },
                              { "state", "show", "--log-format", "json" } }) do
        local code, out, err = H.kingest(args, { GOBBLIN_WORK_DIR = work })
        assert.are.equal(2, code, err)
        assert.are.equal("", out)
        local _, last = json_lines(err, table.concat(args, " "))
        assert.same({ "ERROR", 2 }, { last.level, last.exit_status })
      end
      -- A job that is not valid, whose own log.format is json: its WARN and its error are JSON lines too, and the
      -- run exits 78 as validate does.
      local bad = H.job_pull(work, "job.name=CliJsonBad\nlog.format=json\nkafka.brokers=" .. H.bootstrap() ..
        "\nmy.own.setting=1\nbootstrap.with.offset=oldest\n", "bad.pull")
      local code, _, err = H.kingest({ "run", bad }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(78, code, err)
      local lines, last = json_lines(err, "bad job")
      assert.are.equal(bad .. ":4: unknown property my.own.setting (ignored)", lines[1].message)
      assert.same({ "ERROR", 78 }, { last.level, last.exit_status })
      assert.matches("^" .. bad:gsub("%p", "%%%0") .. ":5: invalid value 'oldest' for property bootstrap%.with%.offset",
        last.message)
      -- A run that fails: its last line is the error, with the exit status; a test hook's WARN is JSON as well.
      local nowhere = H.job_pull(work, "job.name=CliJsonNowhere\nkafka.brokers=127.0.0.1:1\n", "nowhere.pull")
      code, _, err = H.kingest({ "run", nowhere, "--log-format", "json" },
        { GOBBLIN_WORK_DIR = work, KINGEST_FAULT = "publish.move:9" })
      assert.are.equal(1, code, err)
      lines, last = json_lines(err, "unreachable")
      assert.same({ "ERROR", 1 }, { last.level, last.exit_status })
      assert.matches("^cannot reach Kafka at kafka%.brokers=127%.0%.0%.1:1: 127%.0%.0%.1:1: connection refused",
        last.message)
      assert.are.equal("Test hook KINGEST_FAULT=publish.move:9 is set: steps of the commit fail on purpose; not for " ..
        "production use (docs/testing.md)", lines[1].message)
      -- A script error: the message, and its traceback in a field of its own.
      local job = H.job({ dir = work, name = "CliJsonScript", topics = topic,
        props = { ["decode.error.policy"] = "fail" }, code = [[
  decodeRecord = function(msg)
    error("cannot take " .. msg:value())
  end,]] })
      code, _, err = H.kingest({ "run", job, "--log-format", "json" }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(1, code, err)
      lines, last = json_lines(err, "script error")
      assert.matches(": decodeRecord failed for " .. topic .. ":0 at offset 0 %(decode%.error%.policy=fail%): " ..
        job:gsub("%p", "%%%0") .. ":%d+: cannot take one$", last.message)
      assert.matches("^\t" .. job:gsub("%p", "%%%0") .. ":%d+ %(decodeRecord%)\n", last.traceback)
      assert.are.equal(1, last.exit_status)
    end)

    it("refuses a log.format it does not know, naming the property", function()
      local work = H.workdir("cli_badlog")
      local job = pull(work, "log.format=xml\n")
      local code, _, err = H.kingest({ "run", job }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(78, code, err)
      assert.truthy(H.last_line(err):find("log.format", 1, true), err)
      assert.truthy(H.last_line(err):find("xml", 1, true), err)
    end)

    it("with MapReduce-only properties logs one INFO line naming those it ignores", function()
      local work = H.workdir("cli_mr")
      local job = pull(work, "mr.job.root.dir=${env:GOBBLIN_WORK_DIR}/working\nfs.uri=file:///\n" ..
        "mapreduce.map.memory.mb=2048\nmr.job.max.mappers=2\n")
      local code, _, err = H.kingest({ "run", job }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(0, code, err)
      assert.same({ "one", "two" }, H.output_lines(work .. "/job-output/" .. topic))
      local mentions = {}
      for _, line in ipairs(H.lines(err)) do
        if line:find("MapReduce", 1, true) then mentions[#mentions + 1] = line end
      end
      assert.are.equal(1, #mentions, err)
      assert.matches(" INFO ", mentions[1])
      assert.matches("mr.job.root.dir", mentions[1], 1, true)
      assert.matches("mapreduce.map.memory.mb", mentions[1], 1, true)
      -- fs.uri=file:/// and mr.job.max.mappers mean something in standalone mode: not ignored.
      assert.falsy(mentions[1]:find("fs.uri", 1, true), mentions[1])
      assert.falsy(mentions[1]:find("mr.job.max.mappers", 1, true), mentions[1])
      assert.falsy(err:find(" WARN ", 1, true), err)
    end)

    -- Runs JOB (in WORK, with ARGS after the job file), which must be refused before anything is pulled: exit
    -- 78 (EX_CONFIG, as validate), the last line of stderr is exactly LAST, nothing is published and no state is
    -- stored.
    local function refused(job, work, last, ...)
      local code, out, err = H.kingest({ "run", job, ... }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(78, code, err)
      assert.are.equal("", out)
      assert.are.equal(last, H.last_line(err), err)
      assert.falsy(err:find("Pulling", 1, true), err)
      assert.same({}, H.files(work .. "/job-output"))
      assert.same({}, H.files(work .. "/state-store"))
      return err
    end

    local function warnings(err)
      local found = {}
      for _, line in ipairs(H.lines(err)) do
        local w = line:match(" WARN (.*)$")
        if w then found[#found + 1] = w end
      end
      return found
    end

    it("with a property close to one kingest reads fails with `did you mean`, naming the file and line", function()
      local work = H.workdir("cli_typo")
      -- With topic.whitelist misspelt, the default (every topic) would be pulled.
      local job = H.job_pull(work, table.concat({
        "job.name=CliTypo",
        "kafka.brokers=" .. H.bootstrap(),
        "topic.whitelst=" .. topic,
        "writer.file.path.type=tablename",
        "bootstrap.with.ofset=earliest",
      }, "\n") .. "\n")
      refused(job, work, "kingest: " .. job .. ":3: unknown property topic.whitelst; did you mean topic.whitelist?; " ..
        job .. ":5: unknown property bootstrap.with.ofset; did you mean bootstrap.with.offset?")
      local code, _, err = H.kingest({ "plan", job }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(78, code, err)
      assert.matches("did you mean topic.whitelist?", H.last_line(err), 1, true)
    end)

    it("with Gobblin properties kingest does not implement warns what it does instead, and runs", function()
      local work = H.workdir("cli_unimplemented")
      local job = pull(work, UNIMPLEMENTED)
      local code, _, err = H.kingest({ "run", job }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(0, code, err)
      assert.same({ "one", "two" }, H.output_lines(work .. "/job-output/" .. topic))
      assert.same({
        job .. ":6: writer.staging.dir=/tmp/staging is not implemented: staging files go under task.data.root.dir",
        job .. ":7: converter.classes=gobblin.converter.IdentityConverter is not implemented: records are written as " ..
          "the source gives them; converters are Lua functions (converters in a job.lua)",
        job .. ":9: unknown property my.own.setting (ignored)",
      }, warnings(err))
    end)

    it("with --strict or job.strict=true refuses those properties, naming each, before anything is pulled", function()
      local work = H.workdir("cli_strict")
      local job = pull(work, UNIMPLEMENTED .. "mr.job.root.dir=/gobblin/working\n")
      local refusal = " refuses 3 properties that kingest does not know or implement (each is logged above): " ..
        job .. ":6: writer.staging.dir, " .. job .. ":7: converter.classes, " .. job .. ":9: my.own.setting"
      local err = refused(job, work, "kingest: --strict: job.strict=true" .. refusal, "--strict")
      assert.same({}, warnings(err))
      assert.are.equal(1, #H.grep(err, " ERROR " .. job .. ":6: writer.staging.dir=/tmp/staging is not implemented: " ..
        "staging files go under task.data.root.dir"), err)
      assert.are.equal(1, #H.grep(err, " ERROR " .. job .. ":9: unknown property my.own.setting"), err)
      local code, out, perr = H.kingest({ "plan", job, "--strict" }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(78, code, perr)
      assert.are.equal("", out)
      assert.are.equal("kingest: --strict: job.strict=true" .. refusal, H.last_line(perr))

      local strict = pull(work, UNIMPLEMENTED .. "job.strict=true\n")
      refused(strict, work, "kingest: " .. strict .. ":10: job.strict=true" .. refusal)

      -- Harmless and MapReduce-only properties pass under --strict.
      local clean = pull(work, "job.runonce=true\nmr.job.root.dir=/gobblin/working\n" ..
        "kafka.consumer.fetch.wait.max.ms=20\n")
      local code2, _, err2 = H.kingest({ "run", clean, "--strict" }, { GOBBLIN_WORK_DIR = work })
      assert.are.equal(0, code2, err2)
      assert.same({ "one", "two" }, H.output_lines(work .. "/job-output/" .. topic))
    end)
  end)
end)
