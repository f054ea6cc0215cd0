-- kingest state: show (every stored partition with the broker's earliest and latest offsets and the lag),
-- history (past runs and operator changes), set-offset and reset. The edits take the job lock, so they refuse
-- while the job runs (status 3), refuse while a commit is unfinished, log what they changed at INFO and keep it
-- in the history; the next run starts where they said. Offsets are checked against kcat and sqlite3.
local H = require("support.harness")

local records, concat = H.records, H.concat

-- A topic of PARTITIONS partitions holding COUNTS[p + 1] records in partition p.
local function topic_with(label, counts)
  local topic = H.unique("state_" .. label)
  H.create_topic(topic, #counts)
  for p = 0, #counts - 1 do
    if counts[p + 1] > 0 then H.produce(topic, records(topic, p, 0, counts[p + 1] - 1), p) end
  end
  return topic
end

-- A work dir and a job.lua named State_<label> pulling WHITELIST (earliest first) into job-output/<topic>;
-- PROPS are added and EXTRA (Lua text) is appended to the table.
local function job(label, whitelist, props, extra)
  local c = { name = "State_" .. label, work = H.workdir("state_" .. label) }
  c.file = H.job({ dir = c.work, name = c.name, topics = whitelist, props = props, code = extra })
  c.db = c.work .. "/state-store/" .. c.name .. ".db"
  return c
end

local function run_ok(c, env)
  return H.run_ok(c.file, c.work, env)
end

-- `kingest state ARGS...` with GOBBLIN_WORK_DIR set to C's work dir: status, stdout, stderr.
local function state(c, ...)
  return H.kingest({ "state", ... }, { GOBBLIN_WORK_DIR = c.work })
end

-- The partition rows of `state show` output: { ["topic:partition"] = { next, earliest, latest, lag, records,
-- avg_ms, avg_bytes, updated } }, every value as printed.
local function show_rows(out)
  local rows = {}
  for _, line in ipairs(H.lines(out)) do
    local topic, p, next, e, l, lag, rec, ms, b, updated =
      line:match("^(%S+)%s+(%d+)%s+(%d+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(.+)$")
    if topic and topic ~= "TOPIC" then
      rows[topic .. ":" .. p] = { next = next, earliest = e, latest = l, lag = lag, records = rec, avg_ms = ms,
                                  avg_bytes = b, updated = updated }
    end
  end
  return rows
end

-- The rows of `state history` output, newest first: { time, what, id, read, records (written), bytes, skipped,
-- quarantined, deleted, result, details }.
local function history_rows(out)
  local rows = {}
  for _, line in ipairs(H.lines(out)) do
    local time, what, id, read, rec, bytes, skipped, quarantined, deleted, tombstones, result, details = line:match(
      "^(%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d)  (%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)%s+(%S+)  (%S+)%s*(.-)$")
    if time then
      rows[#rows + 1] = { time = time, what = what, id = id, read = read, records = rec, bytes = bytes,
                          skipped = skipped, quarantined = quarantined, deleted = deleted, tombstones = tombstones,
                          result = result, details = details }
    end
  end
  return rows
end

-- The INFO lines of LOG that contain TEXT (plain), without their time stamps.
local function info(log, text)
  local found = {}
  for _, line in ipairs(H.grep(log, text)) do
    found[#found + 1] = line:match("^%d+%-%d+%-%d+ [%d:%.]+ INFO (.*)$") or ("not INFO: " .. line)
  end
  return found
end

describe("kingest state show", function()
  local topic, c

  setup(function()
    -- Partition 0: 5 records pulled, then 4 more waiting. Partition 1: 3 records pulled, then the first 2
    -- deleted, so that its earliest offset is 2.
    topic = topic_with("show", { 5, 3 })
    c = job("show", topic)
    run_ok(c)
    H.produce(topic, records(topic, 0, 5, 8), 0)
    H.delete_records(topic, 1, 2)
  end)

  it("lists every stored partition: next offset, the broker's earliest and latest offsets, the lag and the last run's statistics", function()
    local code, out, err = state(c, "show", c.file)
    assert.are.equal(0, code, err)
    assert.truthy(out:find("Job " .. c.name .. ", state " .. c.db .. ": 2 partitions\n", 1, true), out)
    assert.truthy(out:find("TOPIC%s+PARTITION%s+NEXT_OFFSET%s+EARLIEST%s+LATEST%s+LAG%s+RECORDS%s+AVG_REC_MS%s+AVG_REC_B%s+UPDATED"), out)
    local rows = show_rows(out)
    local broker = H.offsets(topic)
    local stored = H.stored_offsets(c.work, c.name)
    assert.same({ [topic .. ":0"] = 5, [topic .. ":1"] = 3 }, stored)
    assert.same({ earliest = 0, latest = 9 }, broker[topic .. ":0"])
    assert.same({ earliest = 2, latest = 3 }, broker[topic .. ":1"])
    for tp, row in pairs(rows) do
      assert.are.equal(tostring(stored[tp]), row.next)
      assert.are.equal(tostring(broker[tp].earliest), row.earliest)
      assert.are.equal(tostring(broker[tp].latest), row.latest)
      assert.are.equal(tostring(broker[tp].latest - stored[tp]), row.lag)
      assert.matches("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d$", row.updated)
    end
    local n = 0
    for _ in pairs(rows) do n = n + 1 end
    assert.are.equal(2, n)
    -- The statistics of the run: records pulled and their average size (the payloads' bytes).
    local bytes = 0
    for _, r in ipairs(records(topic, 0, 0, 4)) do bytes = bytes + #r end
    assert.are.equal("5", rows[topic .. ":0"].records)
    assert.are.equal(string.format("%.1f", bytes / 5), rows[topic .. ":0"].avg_bytes)
    assert.are.equal("3", rows[topic .. ":1"].records)
  end)

  it("shows a stored offset outside the broker's range as out-of-range", function()
    local other = topic_with("show_range", { 6 })
    local d = job("show_range", other)
    run_ok(d) -- offset 6 stored
    H.produce(other, records(other, 0, 6, 9), 0)
    H.delete_records(other, 0, 8) -- the broker's range is now [8, 10]
    local code, out, err = state(d, "show", d.file)
    assert.are.equal(0, code, err)
    local row = show_rows(out)[other .. ":0"]
    assert.same({ "6", "8", "10", "out-of-range" }, { row.next, row.earliest, row.latest, row.lag })
  end)

  it("shows '-' for the broker's columns when given the job's name instead of its file", function()
    local code, out, err = H.kingest({ "state", "show", c.name, "--work-dir", c.work }, {})
    assert.are.equal(0, code, err)
    local rows = show_rows(out)
    assert.same({ "5", "-", "-", "-", "5" }, { rows[topic .. ":0"].next, rows[topic .. ":0"].earliest,
      rows[topic .. ":0"].latest, rows[topic .. ":0"].lag, rows[topic .. ":0"].records })
    assert.same({ "3", "-", "-", "-" }, { rows[topic .. ":1"].next, rows[topic .. ":1"].earliest,
      rows[topic .. ":1"].latest, rows[topic .. ":1"].lag })
    assert.falsy(out:find("brokers' offsets are not shown", 1, true), out)
  end)

  it("still shows the stored state, with a note saying why the broker's columns are empty, when the brokers cannot be reached", function()
    -- The same job (name and work dir), pointing at a port nobody listens on.
    local dir = H.workdir("state_unreachable")
    local file = H.job_lua(dir, {
      ["job.name"] = c.name,
      ["kafka.brokers"] = "127.0.0.1:1",
      ["kafka.metadata.timeout.ms"] = 1000,
      ["topic.whitelist"] = topic,
    })
    local t0 = H.now_ms()
    local code, out, err = H.kingest({ "state", "show", file }, { GOBBLIN_WORK_DIR = c.work })
    assert.are.equal(0, code, err)
    assert.is_true(H.now_ms() - t0 < 10000)
    assert.matches("\n%(the brokers' offsets are not shown: [^\n]*127%.0%.0%.1:1[^\n]*%)\n", out)
    local rows = show_rows(out)
    assert.same({ "5", "-", "-", "-" }, { rows[topic .. ":0"].next, rows[topic .. ":0"].earliest,
      rows[topic .. ":0"].latest, rows[topic .. ":0"].lag })
    assert.are.equal("3", rows[topic .. ":1"].next)
  end)
end)

local function BAD_OFFSET(o)
  return "kingest: invalid offset '" .. o .. "': expected a whole number >= 0, earliest, latest, @TIME (ISO 8601 or " ..
    "epoch ms), +N or -N"
end

local function BAD_TIME(o)
  return "kingest: invalid time '" .. o .. "': expected @ and epoch milliseconds (@1796000000000) or ISO 8601 " ..
    "(@2026-11-30T14:05:00Z, @2026-11-30T14:05+01:00, @2026-11-30)"
end

describe("kingest state set-offset", function()
  it("makes the next run start the partition at the offset, logs the change and keeps it in the history", function()
    local topic = topic_with("set", { 10, 4 })
    local c = job("set", topic)
    run_ok(c)
    H.produce(topic, records(topic, 0, 10, 19), 0)
    local code, out, err = state(c, "set-offset", c.file, topic .. ":0", "15")
    assert.are.equal(0, code, err)
    assert.are.equal("", out)
    assert.same({ "Set the offset of " .. topic .. ":0 in job " .. c.name .. " from 10 to 15" }, info(err, "Set the offset"))
    assert.same({ [topic .. ":0"] = 15, [topic .. ":1"] = 4 }, H.stored_offsets(c.work, c.name))
    -- The next run starts there: records 15..19, and partition 1 where it was.
    local log = run_ok(c)
    assert.truthy(log:find("Created workunit for partition " .. topic .. ":0: lowWatermark=15, highWatermark=20, range=5",
      1, true), log)
    assert.truthy(log:find("Created workunit for partition " .. topic .. ":1: lowWatermark=4, highWatermark=4, range=0",
      1, true), log)
    assert.same(H.sorted(concat(records(topic, 0, 0, 9), records(topic, 0, 15, 19), records(topic, 1, 0, 3))),
      H.sorted(H.output_lines(c.work .. "/job-output/" .. topic)))
    assert.same({ [topic .. ":0"] = 20, [topic .. ":1"] = 4 }, H.stored_offsets(c.work, c.name))
    code, out, err = state(c, "history", c.file)
    assert.are.equal(0, code, err)
    local change = history_rows(out)[2] -- the newest is the run after it
    assert.same({ "set-offset", topic .. ":0", "-", "-", "CHANGED", "offset 10 -> 15" },
      { change.what, change.id, change.records, change.bytes, change.result, change.details })
  end)

  it("sets a partition the job never pulled, and the next run starts it there instead of bootstrapping", function()
    local topic = topic_with("set_new", { 6 })
    local c = job("set_new", topic)
    local code, _, err = state(c, "set-offset", c.file, topic .. ":0", "2")
    assert.are.equal(0, code, err)
    assert.same({ "Set the offset of " .. topic .. ":0 in job " .. c.name .. " to 2 (it had none)" },
      info(err, "Set the offset"))
    local log = run_ok(c)
    assert.truthy(log:find("Created workunit for partition " .. topic .. ":0: lowWatermark=2, highWatermark=6, range=4",
      1, true), log)
    assert.same(records(topic, 0, 2, 5), H.output_lines(c.work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 6 }, H.stored_offsets(c.work, c.name))
  end)

  it("refuses invalid arguments with status 2 and a clear message, changing nothing", function()
    local topic = topic_with("set_bad", { 3 })
    local c = job("set_bad", topic)
    run_ok(c)
    local cases = {
      { { "nocolon", "5" }, "kingest: invalid partition 'nocolon': expected TOPIC:PARTITION, e.g. events:3" },
      { { topic .. ":x", "5" }, "kingest: invalid partition '" .. topic .. ":x': expected TOPIC:PARTITION, e.g. events:3" },
      { { ":0", "5" }, "kingest: invalid partition ':0': expected TOPIC:PARTITION, e.g. events:3" },
      { { topic .. ":0", "abc" }, BAD_OFFSET("abc") },
      { { topic .. ":0", "1.5" }, BAD_OFFSET("1.5") },
      { { topic .. ":0", "+-3" }, BAD_OFFSET("+-3") },
      { { topic .. ":0", " 5" }, BAD_OFFSET(" 5") },
      { { topic .. ":0", "@yesterday" }, BAD_TIME("@yesterday") },
      { { topic .. ":0", "@2026-13-01" }, BAD_TIME("@2026-13-01") },
      { { topic .. ":0", "@2026-11-30T25:00Z" }, BAD_TIME("@2026-11-30T25:00Z") },
      { { topic .. ":0", "5", "--yes" }, "kingest: unknown option --yes" },
      { { topic .. ":0", "5", "--dry-run=1" }, "kingest: option --dry-run takes no value" },
      { { topic .. ":0" }, "kingest: state set-offset: wrong number of arguments" },
    }
    for _, case in ipairs(cases) do
      local code, _, err = state(c, "set-offset", c.file, unpack(case[1]))
      assert.are.equal(2, code, table.concat(case[1], " ") .. ": " .. err)
      assert.are.equal(case[2], H.lines(err)[1])
    end
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(c.work, c.name))
    assert.same({ { "0" } }, H.sqlite(c.db, "SELECT count(*) FROM state_changes"))
  end)
end)

describe("kingest state set-offset's forms", function()
  -- Partition 0 holds records 0..9, produced before T_MID, and 10..19, produced after it; a run stored 20.
  local topic, c, t_mid

  setup(function()
    topic = topic_with("forms", { 10 })
    H.sleep(1.2)
    t_mid = H.now_ms()
    H.sleep(1.2)
    H.produce(topic, records(topic, 0, 10, 19), 0)
    c = job("forms", topic)
    run_ok(c)
  end)

  -- Sets the offset with ARGS..., checks the status and the stored offset afterwards (EXPECT), and returns stderr.
  local function set(expect_code, expect, ...)
    local code, out, err = state(c, "set-offset", c.file, topic .. ":0", ...)
    assert.are.equal(expect_code, code, table.concat({ ... }, " ") .. ": " .. err)
    assert.same({ [topic .. ":0"] = expect }, H.stored_offsets(c.work, c.name))
    return err, out
  end

  it("takes earliest, latest, +N and -N", function()
    set(0, 0, "earliest")
    set(0, 20, "latest")
    set(0, 15, "-5")
    set(0, 18, "+3")
    local err = set(1, 18, "+3") -- 21 is past the end
    assert.are.equal("kingest: offset 21 is outside the range of " .. topic .. ":0 on the broker: [0, 20] (earliest, " ..
      "latest); --force sets it anyway", H.last_line(err))
    err = set(1, 18, "-19")
    assert.are.equal("kingest: offset -19 from the stored 18 would be -1, below 0", H.last_line(err))
    set(0, 20, "latest")
  end)

  it("takes @TIME as Kafka's offsets-for-times, in epoch milliseconds or ISO 8601", function()
    set(0, 10, "@" .. t_mid)
    set(0, 20, "latest")
    local secs = math.floor(t_mid / 1000)
    local iso = os.date("!%Y-%m-%dT%H:%M:%S", secs) .. string.format(".%03dZ", t_mid % 1000)
    set(0, 10, "@" .. iso)
    set(0, 0, "@2000-01-01")
    -- No record is that recent: the latest offset, and it says so.
    local err = set(0, 20, "@2099-01-01T00:00+02:00")
    assert.truthy(err:find("INFO No record of " .. topic .. ":0 is as recent as 2099-01-01T00:00+02:00: taking the " ..
      "latest offset", 1, true), err)
  end)

  it("refuses an offset outside the broker's range, naming the range, unless --force", function()
    H.delete_records(topic, 0, 5)
    local err = set(1, 20, "3")
    assert.are.equal("kingest: offset 3 is outside the range of " .. topic .. ":0 on the broker: [5, 20] (earliest, " ..
      "latest); --force sets it anyway", H.last_line(err))
    set(1, 20, "21")
    set(0, 5, "earliest")
    set(0, 3, "3", "--force")
    set(0, 20, "latest")
  end)

  it("prints what --dry-run would change and changes nothing", function()
    local changes = H.sqlite(c.db, "SELECT count(*) FROM state_changes")[1][1]
    local _, out = set(0, 20, "-4", "--dry-run")
    assert.are.equal("Would set the offset of " .. topic .. ":0 in job " .. c.name .. " from 20 to 16\n", out)
    _, out = set(0, 20, "--dry-run", "earliest")
    assert.are.equal("Would set the offset of " .. topic .. ":0 in job " .. c.name .. " from 20 to 5\n", out)
    assert.are.equal(changes, H.sqlite(c.db, "SELECT count(*) FROM state_changes")[1][1])
  end)

  -- A broker asked for the offsets of a partition it does not have would be asked again until
  -- kafka.metadata.timeout.ms (15 s): set-offset looks the partition up first and answers at once.
  it("names a topic or a partition the broker does not have at once, with the topic meant, changing nothing", function()
    local t0 = H.now_ms()
    local code, _, err = state(c, "set-offset", c.file, topic .. "x:0", "3")
    assert.are.equal(1, code, err)
    assert.are.equal("kingest: cannot set the offset of " .. topic .. "x:0: topic " .. topic .. "x is not on the " ..
      "broker (kafka.brokers=" .. H.bootstrap() .. "); did you mean " .. topic .. ", which the job pulls? (--force " ..
      "sets it unchecked)", H.last_line(err))
    code, _, err = state(c, "set-offset", c.file, topic .. ":7", "latest")
    assert.are.equal(1, code, err)
    assert.are.equal("kingest: cannot set the offset of " .. topic .. ":7: topic " .. topic .. " has no partition 7: " ..
      "its partitions are 0 to 0", H.last_line(err))
    code, _, err = state(c, "set-offset", c.file, H.unique("state_nothing_like_it") .. ":0", "earliest")
    assert.are.equal(1, code, err)
    assert.matches(" is not on the broker %(kafka%.brokers=[^,]+, %d+ topics?%)$", H.last_line(err))
    -- A sanity bound, far below the 15 s a broker's "unknown partition" would cost each.
    assert.is_true(H.now_ms() - t0 < 10000, H.now_ms() - t0 .. " ms")
    assert.same({ [topic .. ":0"] = 20 }, H.stored_offsets(c.work, c.name))
  end)

  it("given the job's name, needs the file for the broker's offsets and warns that a number is not checked", function()
    local code, _, err = H.kingest({ "state", "set-offset", c.name, topic .. ":0", "latest", "--work-dir=" .. c.work }, {})
    assert.are.equal(1, code, err)
    assert.are.equal("kingest: offset 'latest' needs the brokers: give the job file instead of the job name " ..
      c.name .. ", so that kingest knows them", H.last_line(err))
    code, _, err = H.kingest({ "state", "set-offset", c.name, topic .. ":0", "12", "--work-dir", c.work }, {})
    assert.are.equal(0, code, err)
    assert.truthy(err:find("WARN Offset 12 of " .. topic .. ":0 is not checked against the broker's range: " .. c.name ..
      " is a job name, not a job file", 1, true), err)
    assert.same({ [topic .. ":0"] = 12 }, H.stored_offsets(c.work, c.name))
    set(0, 20, "latest")
  end)
end)

describe("kingest state show --json and history --json", function()
  it("print what the tables print, as JSON that sqlite3 and the broker agree with", function()
    local cjson = require("cjson")
    local topic = topic_with("json", { 6, 3 })
    local c = job("json", topic)
    run_ok(c)
    H.produce(topic, records(topic, 0, 6, 9), 0)
    assert.are.equal(0, (state(c, "set-offset", c.file, topic .. ":1", "1")))
    local code, out, err = state(c, "show", c.file, "--json")
    assert.are.equal(0, code, err)
    local show = cjson.decode(out)
    assert.are.equal(c.name, show.job)
    assert.are.equal(c.db, show.state)
    assert.are.equal(cjson.null, show.brokers_error)
    assert.are.equal(2, #show.partitions)
    local stored, broker = H.stored_offsets(c.work, c.name), H.offsets(topic)
    for _, p in ipairs(show.partitions) do
      local tp = p.topic .. ":" .. p.partition
      assert.are.equal(stored[tp], p.next_offset)
      assert.are.equal(broker[tp].earliest, p.earliest)
      assert.are.equal(broker[tp].latest, p.latest)
      assert.are.equal(broker[tp].latest - stored[tp], p.lag)
      assert.is_false(p.out_of_range)
      assert.is_number(p.updated_ms)
    end
    assert.same({ 4, 2 }, { show.partitions[1].lag, show.partitions[2].lag })
    assert.are.equal(6, show.partitions[1].records)

    code, out, err = state(c, "history", c.file, "-j", "--limit=5")
    assert.are.equal(0, code, err)
    local history = cjson.decode(out)
    assert.are.equal(2, #history)
    local change, run = history[1], history[2]
    assert.same({ "change", "set-offset", topic, 1, 3, 1 },
      { change.kind, change.command, change.topic, change.partition, change.old_offset, change.new_offset })
    local row = H.sqlite(c.db, "SELECT job_id, started_ms, ended_ms, records_read, records, bytes, result FROM runs")[1]
    assert.same({ "run", row[1], tonumber(row[2]), tonumber(row[3]), 9, 9, tonumber(row[6]), "SUCCESSFUL", 0, 0, 0, 0 },
      { run.kind, run.job_id, run.time_ms, run.ended_ms, run.records_read, run.records_written, run.bytes_written,
        run.result, run.skipped, run.quarantined, run.deleted, run.tombstones })
    -- A job that never ran: the same error as the table's, nothing on stdout.
    local d = job("json_never", topic)
    code, out, err = state(d, "history", d.file, "--json")
    assert.are.equal(1, code) -- no state store yet: the same error as the table
    assert.are.equal("", out)
  end)
end)

describe("kingest state reset", function()
  it("forgets one partition, then a topic, then everything; the next run bootstraps what was forgotten", function()
    local a, b = topic_with("reset_a", { 3, 2 }), topic_with("reset_b", { 4 })
    local c = job("reset", a .. "," .. b)
    run_ok(c)
    local all = { [a .. ":0"] = 3, [a .. ":1"] = 2, [b .. ":0"] = 4 }
    assert.same(all, H.stored_offsets(c.work, c.name))

    -- One partition.
    local code, _, err = state(c, "reset", c.file, a .. ":1")
    assert.are.equal(0, code, err)
    assert.same({ "Reset " .. a .. ":1 in job " .. c.name .. ": forgot offset 2; the next run treats it as new" },
      info(err, "Reset "))
    assert.same({ [a .. ":0"] = 3, [b .. ":0"] = 4 }, H.stored_offsets(c.work, c.name))
    local log = run_ok(c)
    -- bootstrap.with.offset=earliest: a forgotten partition is pulled again from the start.
    assert.truthy(log:find("Created workunit for partition " .. a .. ":1: lowWatermark=0, highWatermark=2, range=2", 1,
      true), log)
    assert.truthy(log:find("Created workunit for partition " .. a .. ":0: lowWatermark=3, highWatermark=3, range=0", 1,
      true), log)
    assert.same(all, H.stored_offsets(c.work, c.name))

    -- A topic.
    code, _, err = state(c, "reset", c.file, a)
    assert.are.equal(0, code, err)
    assert.same({
      "Reset " .. a .. ":0 in job " .. c.name .. ": forgot offset 3; the next run treats it as new",
      "Reset " .. a .. ":1 in job " .. c.name .. ": forgot offset 2; the next run treats it as new",
    }, info(err, "Reset "))
    assert.same({ [b .. ":0"] = 4 }, H.stored_offsets(c.work, c.name))
    log = run_ok(c)
    assert.truthy(log:find("Created workunit for partition " .. a .. ":0: lowWatermark=0, highWatermark=3", 1, true), log)
    assert.truthy(log:find("Created workunit for partition " .. b .. ":0: lowWatermark=4, highWatermark=4", 1, true), log)

    -- Everything: only with --yes; --dry-run lists what it would forget and changes nothing.
    local out
    code, out, err = state(c, "reset", c.file)
    assert.are.equal(2, code, err)
    assert.are.equal("", out)
    assert.are.equal("kingest: state reset without a topic forgets every stored partition of job " .. c.name ..
      " (3): pass --yes to do it, or --dry-run to list them", H.lines(err)[1])
    code, out, err = state(c, "reset", c.file, "--dry-run")
    assert.are.equal(0, code, err)
    assert.same({ "Would forget " .. a .. ":0 in job " .. c.name .. " (offset 3)",
                  "Would forget " .. a .. ":1 in job " .. c.name .. " (offset 2)",
                  "Would forget " .. b .. ":0 in job " .. c.name .. " (offset 4)" }, H.lines(out))
    assert.same(all, H.stored_offsets(c.work, c.name))
    code, _, err = state(c, "reset", c.file, "--yes")
    assert.are.equal(0, code, err)
    assert.are.equal(3, #info(err, "Reset "))
    assert.same({}, H.stored_offsets(c.work, c.name))
    log = run_ok(c)
    assert.truthy(log:find("Created workunit for partition " .. b .. ":0: lowWatermark=0, highWatermark=4", 1, true), log)
    assert.same(all, H.stored_offsets(c.work, c.name))

    -- A topic the job never pulled: nothing to do, and it says so.
    code, _, err = state(c, "reset", c.file, "no_such_topic")
    assert.are.equal(0, code, err)
    assert.same({ "Nothing to reset in job " .. c.name }, info(err, "Nothing to reset"))
    assert.same(all, H.stored_offsets(c.work, c.name))

    -- Every reset is in the history: 1 + 2 + 3 partitions forgotten.
    code, out, err = state(c, "history", c.file, "--limit", "0")
    assert.are.equal(0, code, err)
    local resets = 0
    for _, row in ipairs(history_rows(out)) do
      if row.what == "reset" then
        resets = resets + 1
        assert.are.equal("CHANGED", row.result)
        assert.matches("^offset %d+ %-> none$", row.details)
      end
    end
    assert.are.equal(6, resets)
  end)
end)

describe("a state database that is not one", function()
  it("is refused when it is empty, naming the file and the way out; nothing is published again", function()
    local topic = topic_with("empty_db", { 100 })
    local c = job("empty_db", topic)
    run_ok(c)
    local published = H.snapshot(c.work .. "/job-output")
    assert.are.equal(100, #H.output_lines(c.work .. "/job-output/" .. topic))
    -- The database cut to 0 bytes (a full disk, a restore gone wrong, `: > job.db`).
    assert.are.equal(0, (H.sh(": > " .. H.q(c.db) .. " && rm -f " .. H.q(c.db) .. "-wal " .. H.q(c.db) .. "-shm")))
    local code, _, err = H.run(c.file, c.work)
    assert.are.equal(1, code, err)
    assert.are.equal("kingest: state store " .. c.db .. " is empty (0 bytes), not the state of job " .. c.name ..
      ": kingest does not take it for a new job's, which would pull every partition again and publish again what " ..
      "was published; restore it (with its -wal file, if any) from a backup, or remove it, with its -wal and -shm " ..
      "files, to start the job over (every partition is then new, and bootstrap.with.offset decides where each starts)",
      H.last_line(err))
    assert.falsy(err:find("Pulling partition", 1, true), err)
    assert.same(published, H.snapshot(c.work .. "/job-output"))
    assert.are.equal("", H.slurp(c.db))
    -- The state commands say the same, and edit nothing.
    for _, args in ipairs({ { "show", c.file }, { "history", c.file }, { "set-offset", c.file, topic .. ":0", "5" } }) do
      local scode, _, serr = state(c, unpack(args))
      assert.are.equal(1, scode, serr)
      assert.truthy(H.last_line(serr):find(c.db .. " is empty (0 bytes)", 1, true), serr)
    end
    assert.are.equal("", H.slurp(c.db))
  end)
end)

describe("kingest state history", function()
  it("lists the runs newest first with their records and result, a failed run with its message, and the edits", function()
    local topic = topic_with("history", { 8 })
    local c = job("history", topic)
    run_ok(c)
    -- The same job with a decodeRecord that fails: the run fails and records why.
    local broken = job("history", topic, { ["decode.error.policy"] = "fail" },
      '  decodeRecord = function(record) error("no good: " .. record:value()) end,')
    H.produce(topic, records(topic, 0, 8, 9), 0)
    local code, _, err = H.run(broken.file, c.work)
    assert.are.equal(1, code, err)
    local message = H.last_line(err):match("^kingest: (.*)$")
    assert.truthy(message:find("no good: " .. topic .. "-0-8", 1, true), message)
    assert.are.equal(0, (state(c, "set-offset", c.file, topic .. ":0", "9")))
    run_ok(c)

    local out
    code, out, err = state(c, "history", c.file)
    assert.are.equal(0, code, err)
    assert.matches("^TIME%s+WHAT%s+JOB ID / PARTITION%s+READ%s+WRITTEN%s+BYTES%s+SKIPPED%s+QUARANTINED%s+DELETED%s+TOMBSTONES%s+RESULT%s+DETAILS\n",
      out)
    local rows = history_rows(out)
    assert.are.equal(4, #rows, out)
    local bytes = #(topic .. "-0-9") + 1
    assert.same({ "run", "1", "1", tostring(bytes), "0", "0", "0", "0", "SUCCESSFUL" }, { rows[1].what, rows[1].read,
      rows[1].records, rows[1].bytes, rows[1].skipped, rows[1].quarantined, rows[1].deleted, rows[1].tombstones,
      rows[1].result })
    assert.matches("^job_" .. c.name .. "_%d+$", rows[1].id)
    assert.matches("^%d+ ms$", rows[1].details)
    assert.same({ "set-offset", topic .. ":0", "CHANGED", "offset 8 -> 9" },
      { rows[2].what, rows[2].id, rows[2].result, rows[2].details })
    assert.same({ "run", "FAILED", "2", "0" }, { rows[3].what, rows[3].result, rows[3].read, rows[3].records })
    assert.same({ "0", "0", "0" }, { rows[3].skipped, rows[3].quarantined, rows[3].deleted })
    local shown = rows[3].details:match("^%d+ ms: (.*)$") -- the message, cut to the width of the table
    assert.truthy(shown and #shown > 40, rows[3].details)
    assert.are.equal(message:sub(1, #shown), shown)
    local total = 0
    for _, r in ipairs(records(topic, 0, 0, 7)) do total = total + #r + 1 end
    assert.same({ "run", "8", tostring(total), "SUCCESSFUL" }, { rows[4].what, rows[4].records, rows[4].bytes, rows[4].result })
    assert.is_true(rows[1].time >= rows[4].time)

    -- --limit keeps the newest rows.
    code, out = state(c, "history", c.file, "--limit", "2")
    assert.are.equal(0, code)
    local limited = history_rows(out)
    assert.are.equal(2, #limited)
    assert.same({ rows[1].id, rows[2].id }, { limited[1].id, limited[2].id })
  end)

  it("records the runs of a process that was killed as DIED, saying whether their commit was completed", function()
    local topic = topic_with("history_died", { 6 })
    local c = job("history_died", topic)
    local function killed_at(point)
      local code, _, err = H.sh(string.format("env GOBBLIN_WORK_DIR=%s KINGEST_CRASH_AT=%s %s run %s; exit $?",
        H.q(c.work), point, H.q(H.bin), H.q(c.file)))
      assert.are.equal(128 + 9, code, err)
    end
    killed_at("write:3")  -- while writing: nothing committed
    killed_at("finish")   -- after publishing, before storing the offsets: the next run completes the commit
    run_ok(c)
    local code, out, err = state(c, "history", c.file)
    assert.are.equal(0, code, err)
    local rows = history_rows(out)
    assert.are.equal(3, #rows, out)
    assert.same({ "run", "0", "SUCCESSFUL" }, { rows[1].what, rows[1].records, rows[1].result })
    assert.same({ "-", "DIED", "the process ended before the run finished (killed or crashed); its commit was completed" },
      { rows[2].records, rows[2].result, rows[2].details })
    assert.same({ "-", "DIED", "the process ended before the run finished (killed or crashed); nothing of it was committed" },
      { rows[3].records, rows[3].result, rows[3].details })
    assert.same(records(topic, 0, 0, 5), H.output_lines(c.work .. "/job-output/" .. topic))
  end)
end)

describe("editing the state of a job", function()
  it("refuses while a run of the job holds its lock, with status 3 and a clear message, and changes nothing", function()
    local topic = topic_with("busy", { 3 })
    local c = job("busy", topic, nil, H.slow_decode(300))
    run_ok(c) -- offset 3 stored
    H.produce(topic, records(topic, 0, 3, 12), 0)
    local p = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/slow")
    assert.truthy(H.wait_until(function() return H.stderr_of(p):find("Pulling partition", 1, true) end, 20),
      H.stderr_of(p))
    local pid = H.pid_of(p)
    local expected = "kingest: job " .. c.name .. " is running (process " .. pid .. " holds its lock): wait for it or stop it first"
    for _, args in ipairs({
      { "set-offset", c.file, topic .. ":0", "1" },
      { "reset", c.file, topic .. ":0" },
      { "reset", c.file, "--yes" },
      { "set-offset", c.name, topic .. ":0", "1", "--work-dir", c.work }, -- by name: the lock of the work dir
    }) do
      local code, _, err = state(c, unpack(args))
      assert.are.equal(3, code, table.concat(args, " ") .. ": " .. err)
      assert.are.equal(expected, H.last_line(err))
    end
    assert.is_nil(H.slurp(p.status), "the run ended before the edits were tried")
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(c.work, c.name))
    -- Show and history only read, so they work while the job runs.
    local code, out = state(c, "show", c.file)
    assert.are.equal(0, code)
    assert.are.equal("3", show_rows(out)[topic .. ":0"].next)
    assert.are.equal(0, (state(c, "history", c.file)))

    assert.are.equal(0, H.wait_exit(p, 60), H.stderr_of(p))
    assert.same({ [topic .. ":0"] = 13 }, H.stored_offsets(c.work, c.name))
    assert.same(concat(records(topic, 0, 0, 12)), H.output_lines(c.work .. "/job-output/" .. topic))
    assert.same({ { "0" } }, H.sqlite(c.db, "SELECT count(*) FROM state_changes"))
    -- Once it is done, the edit goes through.
    local err
    code, _, err = state(c, "set-offset", c.file, topic .. ":0", "1")
    assert.are.equal(0, code, err)
    assert.same({ [topic .. ":0"] = 1 }, H.stored_offsets(c.work, c.name))
  end)

  it("refuses however the state is named: by job name with --state-store-dir alone, or with a work dir whose lock " ..
    "folder is not the job's", function()
    local topic = topic_with("named", { 3 })
    local c = job("named", topic, { ["job.lock.dir"] = H.tmp .. "/" .. H.unique("locks_elsewhere") }, H.slow_decode(300))
    run_ok(c) -- offset 3 stored
    H.produce(topic, records(topic, 0, 3, 12), 0)
    local p = H.spawn({ "run", c.file }, { GOBBLIN_WORK_DIR = c.work }, c.work .. "/slow")
    assert.truthy(H.wait_until(function() return H.stderr_of(p):find("Pulling partition", 1, true) end, 20),
      H.stderr_of(p))
    local pid = H.pid_of(p)
    local expected = "kingest: job " .. c.name .. " is running (process " .. pid .. " holds its lock): wait for it or stop it first"
    local store = c.work .. "/state-store"
    for _, args in ipairs({
      { "set-offset", c.name, topic .. ":0", "7", "-s", store }, -- no work dir: no job lock folder known
      { "reset", c.name, topic .. ":0", "-s", store },
      { "reset", c.name, "--yes", "--state-store-dir", store },
      { "set-offset", c.name, topic .. ":0", "7", "-w", c.work }, -- the work dir's lock folder, not job.lock.dir
      { "set-offset", c.file, topic .. ":0", "7", "-w", c.work }, -- the job file: its job.lock.dir
    }) do
      local cmd = "env -u GOBBLIN_WORK_DIR " .. H.q(H.bin) .. " state"
      for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
      local code, _, err = H.sh(cmd)
      assert.are.equal(3, code, table.concat(args, " ") .. ": " .. err)
      assert.are.equal(expected, H.last_line(err))
    end
    assert.is_nil(H.slurp(p.status), "the run ended before the edits were tried")
    assert.are.equal(0, H.wait_exit(p, 60), H.stderr_of(p))
    -- The run's commit is the one stored, and no edit was recorded.
    assert.same({ [topic .. ":0"] = 13 }, H.stored_offsets(c.work, c.name))
    assert.same({ { "0" } }, H.sqlite(c.db, "SELECT count(*) FROM state_changes"))
    -- Once it is done, an edit by name alone goes through.
    local code, _, err = H.sh("env -u GOBBLIN_WORK_DIR " .. H.q(H.bin) .. " state set-offset " .. H.q(c.name) .. " " ..
      H.q(topic .. ":0") .. " 7 -s " .. H.q(store))
    assert.are.equal(0, code, err)
    assert.same({ [topic .. ":0"] = 7 }, H.stored_offsets(c.work, c.name))
  end)

  it("refuses while a commit is unfinished, until a run finishes it", function()
    local topic = topic_with("pending", { 4 })
    local c = job("pending", topic)
    -- Killed right after the commit was journaled: files not moved, offsets not stored.
    local code, _, err = H.sh(string.format("env GOBBLIN_WORK_DIR=%s KINGEST_CRASH_AT=journaled %s run %s; exit $?",
      H.q(c.work), H.q(H.bin), H.q(c.file)))
    assert.are.equal(128 + 9, code, err)
    local job_id = H.sqlite(c.db, "SELECT DISTINCT job_id FROM pending_moves")[1][1]
    assert.matches("^job_" .. c.name .. "_%d+$", job_id)
    local expected = "kingest: job " .. c.name .. " has an unfinished commit (" .. job_id .. "): run the job once, it " ..
                     "finishes the commit first, then edit its state"
    for _, args in ipairs({ { "set-offset", c.file, topic .. ":0", "2" }, { "reset", c.file, topic } }) do
      code, _, err = state(c, unpack(args))
      assert.are.equal(1, code, err)
      assert.are.equal(expected, H.last_line(err))
    end
    assert.same({}, H.stored_offsets(c.work, c.name))
    assert.same({ { "0" } }, H.sqlite(c.db, "SELECT count(*) FROM state_changes"))

    local log = run_ok(c)
    assert.truthy(log:find("Finished the interrupted commit of " .. job_id, 1, true), log)
    assert.same(records(topic, 0, 0, 3), H.output_lines(c.work .. "/job-output/" .. topic))
    code, _, err = state(c, "reset", c.file, topic)
    assert.are.equal(0, code, err)
    assert.same({ "Reset " .. topic .. ":0 in job " .. c.name .. ": forgot offset 4; the next run treats it as new" },
      info(err, "Reset "))
  end)
end)
