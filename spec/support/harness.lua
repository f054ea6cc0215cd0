-- spec.support.harness: what the integration specs share: running kingest and scripts/kafka, unique topic
-- names, scratch work dirs, and independent checks of the output (kcat, sqlite3).
local H = {}

H.root = os.getenv("KINGEST_ROOT") or "."
H.bin = os.getenv("KINGEST_BIN") or (H.root .. "/build/kingest")
H.tmp = os.getenv("KINGEST_TEST_TMP") or "/tmp/kingest-test"

-- Quotes S for the shell.
function H.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end
H.slurp = slurp

local function spit(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end
H.spit = spit

local counter = 0
-- A name nobody else uses in this broker: PREFIX_<pid-ish>_<n>.
function H.unique(prefix)
  counter = counter + 1
  if not H.run_id then
    -- Unique across processes: LuaJIT's math.random is not seeded, so read the kernel's.
    local f = io.open("/proc/sys/kernel/random/uuid")
    local uuid = f and f:read("*l") or tostring(os.time())
    if f then f:close() end
    H.run_id = uuid:gsub("-", ""):sub(1, 10)
  end
  return string.format("%s_%s_%d", prefix, H.run_id, counter)
end

-- Runs CMD (a shell string); returns exit status, stdout, stderr.
function H.sh(cmd)
  os.execute("mkdir -p " .. H.q(H.tmp))
  local out, err = os.tmpname(), os.tmpname()
  local ok, how, status = os.execute("(" .. cmd .. ") >" .. out .. " 2>" .. err .. " </dev/null")
  local code
  if type(ok) == "number" then -- Lua 5.1 / LuaJIT without 5.2 compat: the raw wait status
    code = ok >= 256 and math.floor(ok / 256) or ok
  else
    code = status
  end
  local o, e = slurp(out) or "", slurp(err) or ""
  os.remove(out)
  os.remove(err)
  return code, o, e
end

-- Runs `kingest ARGS...` with ENV (a table) added; returns status, stdout, stderr.
function H.kingest(args, env)
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. H.q(v) end
  parts[#parts + 1] = H.q(H.bin)
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  return H.sh("env " .. table.concat(parts, " "))
end

-- Runs scripts/kafka ARGS...; errors when it fails. STDIN (optional) is fed to it.
function H.kafka(args, stdin)
  local cmd = H.q(H.root .. "/scripts/kafka")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  if stdin then
    local f = os.tmpname()
    spit(f, stdin)
    cmd = cmd .. " <" .. f
    local code, out, err = H.sh(cmd:gsub(" </dev/null", ""))
    os.remove(f)
    return code, out, err
  end
  return H.sh(cmd)
end

function H.bootstrap()
  if not H._bootstrap then
    local code, out, err = H.kafka({ "bootstrap" })
    assert(code == 0, "no broker: " .. err)
    H._bootstrap = out:gsub("%s+$", "")
  end
  return H._bootstrap
end

-- Creates TOPIC with PARTITIONS partitions.
function H.create_topic(topic, partitions)
  local code, _, err = H.kafka({ "create-topic", topic, tostring(partitions or 1) })
  assert(code == 0, "create-topic " .. topic .. ": " .. err)
end

-- Produces LINES (an array of strings) to TOPIC, into PARTITION when given.
function H.produce(topic, lines, partition)
  local args = { "produce", topic }
  if partition then args[#args + 1] = tostring(partition) end
  local code, _, err = H.kafka(args, table.concat(lines, "\n") .. "\n")
  assert(code == 0, "produce " .. topic .. ": " .. err)
end

-- Moves the start of TOPIC:PARTITION to OFFSET.
function H.delete_records(topic, partition, offset)
  local code, _, err = H.kafka({ "delete-records", topic, tostring(partition), tostring(offset) })
  assert(code == 0, "delete-records: " .. err)
end

-- A fresh work dir.
function H.workdir(name)
  local dir = H.tmp .. "/" .. H.unique(name or "work")
  os.execute("rm -rf " .. H.q(dir) .. " && mkdir -p " .. H.q(dir))
  return dir
end

-- Writes a job.lua returning PROPS (a table of property name to value) into DIR; returns its path.
function H.job_lua(dir, props, extra)
  local lines = { "return {" }
  local keys = {}
  for k in pairs(props) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = props[k]
    local lit = type(v) == "string" and string.format("%q", v) or tostring(v)
    lines[#lines + 1] = string.format("  [%q] = %s,", k, lit)
  end
  if extra then lines[#lines + 1] = extra end
  lines[#lines + 1] = "}"
  local path = dir .. "/job.lua"
  spit(path, table.concat(lines, "\n") .. "\n")
  return path
end

-- A property value for H.job's PROPS that leaves the property out of the job (the engine's default applies).
H.UNSET = setmetatable({}, { __tostring = function() return "H.UNSET" end })

-- The properties (name to value) of the job.lua H.job writes for OPTS.
function H.job_props(opts)
  local topics = opts.topics
  if type(topics) == "table" then topics = table.concat(topics, ",") end
  local p = {
    ["job.name"] = opts.name or "Job",
    ["kafka.brokers"] = opts.brokers or H.bootstrap(),
    ["topic.whitelist"] = topics,
    ["bootstrap.with.offset"] = "earliest",
    ["writer.file.path.type"] = "tablename",
  }
  for k, v in pairs(opts.props or {}) do
    if v == H.UNSET then p[k] = nil else p[k] = v end
  end
  return p
end

-- Writes OPTS.dir/job.lua (creating the folder) and returns its path. The job pulls OPTS.topics (a whitelist
-- string, or a list of topic names) from OPTS.brokers (default: the test broker) from the earliest offset into
-- job-output/<topic>, as job OPTS.name (default "Job"); OPTS.props (property name to value) adds to and
-- overrides those defaults, a value of H.UNSET leaving the property out. OPTS.code is Lua source of more
-- fields of the job table (decodeRecord, converters, ...); OPTS.prelude is Lua source put before the table.
function H.job(opts)
  local p = H.job_props(opts)
  os.execute("mkdir -p " .. H.q(opts.dir))
  local path = H.job_lua(opts.dir, p, opts.code)
  if opts.prelude then spit(path, opts.prelude .. "\n" .. slurp(path)) end
  return path
end

-- A job writer for the job named NAME: function(dir, topics, props, code) writing DIR/job.lua with H.job and
-- returning its path.
function H.job_writer(name)
  return function(dir, topics, props, code)
    return H.job({ dir = dir, name = name, topics = topics, props = props, code = code })
  end
end

-- The text of spec/fixtures/NAME: job text that specs share.
function H.fixture(name)
  return assert(slurp(H.root .. "/spec/fixtures/" .. name), "no fixture " .. name)
end

-- Writes a Gobblin properties file with TEXT into DIR; returns its path.
function H.job_pull(dir, text, name)
  local path = dir .. "/" .. (name or "job.pull")
  spit(path, text)
  return path
end

-- The files under DIR, sorted, as paths relative to it: every one, or with TOP only those directly in it.
local function list_files(dir, top)
  local depth = top and " -mindepth 1 -maxdepth 1" or ""
  local _, out = H.sh("cd " .. H.q(dir) .. " 2>/dev/null && find ." .. depth .. " -type f | sort")
  local files = {}
  for line in out:gmatch("[^\n]+") do files[#files + 1] = line:gsub("^%./", "") end
  return files
end

-- The bytes of TEXT after its last newline (a torn last line), or nil when it ends in one or is empty. (A pattern
-- anchored only at the end, "[^\n]+$", would rescan each line from each of its bytes: hours for a file of 20 KB
-- lines.)
function H.torn_tail(text)
  if text == "" or text:sub(-1) == "\n" then return nil end
  local back = text:reverse():find("\n", 1, true)
  return back and text:sub(#text - back + 2) or text
end

-- The lines of FILES (relative to DIR), concatenated in that order, each without its newline; and the files that
-- end in a torn line (bytes after their last newline, left out of the lines), as sentences naming the file.
local function lines_of(dir, files)
  local lines, torn = {}, {}
  for _, f in ipairs(files) do
    local text = slurp(dir .. "/" .. f) or ""
    for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    local tail = H.torn_tail(text)
    if tail then torn[#torn + 1] = string.format("%s/%s ends in a torn line of %d bytes: %q", dir, f, #tail, tail) end
  end
  return lines, torn
end

-- Every file under DIR (recursively), sorted.
function H.files(dir) return list_files(dir, false) end

-- The lines of every file under DIR, concatenated in file-name order (bytes after a file's last newline left out:
-- H.whole_lines where a torn line must fail).
function H.output_lines(dir) return (lines_of(dir, H.files(dir))) end

-- The lines of every file under DIR, as H.output_lines, and the sentences naming the files that end in a torn line.
function H.record_lines(dir) return lines_of(dir, H.files(dir)) end

-- The lines of every file under DIR, as H.output_lines; errors, naming the file, when one ends in a torn line.
function H.whole_lines(dir)
  local lines, torn = lines_of(dir, H.files(dir))
  assert(#torn == 0, table.concat(torn, "\n"))
  return lines
end

-- The lines a run in WORK published for TOPIC (its folder in job-output, with writer.file.path.type=tablename).
function H.published(work, topic) return H.output_lines(work .. "/job-output/" .. topic) end

-- Sorted copy of an array.
function H.sorted(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c
end

-- The payloads of TOPIC read by kcat (independent of kingest), one string per record.
function H.kcat_payloads(topic)
  -- A short fetch wait: kcat's default (500 ms) is spent once per call, after the last record.
  local code, out, err = H.sh("kcat -C -b " .. H.q(H.bootstrap()) .. " -t " .. H.q(topic) ..
    " -X fetch.wait.max.ms=10 -e -q -f '%s\\n'")
  assert(code == 0, "kcat: " .. err)
  local lines = {}
  for line in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  return lines
end

-- Asserts that every record of each of TOPICS (a list), as kcat reads it, is in WORK's output exactly once.
function H.assert_exactly_once(work, topics)
  for _, topic in ipairs(topics) do
    require("luassert").are.same(H.sorted(H.kcat_payloads(topic)), H.sorted(H.published(work, topic)))
  end
end

-- Runs SQL on the SQLite database at DB with the sqlite3 tool; returns its rows as arrays of strings.
function H.sqlite(db, sql)
  local code, out, err = H.sh("sqlite3 -separator '|' " .. H.q(db) .. " " .. H.q(sql))
  assert(code == 0, "sqlite3: " .. err)
  local rows = {}
  for line in out:gmatch("[^\n]+") do
    local row = {}
    for cell in (line .. "|"):gmatch("([^|]*)|") do row[#row + 1] = cell end
    rows[#rows + 1] = row
  end
  return rows
end

-- The next offsets stored in the state database DB: { ["topic:partition"] = offset } ({} without DB).
function H.offsets_in_db(db)
  local offsets = {}
  local f = io.open(db)
  if not f then return offsets end
  f:close()
  for _, row in ipairs(H.sqlite(db, "SELECT topic, partition, next_offset FROM partition_state")) do
    offsets[row[1] .. ":" .. row[2]] = tonumber(row[3])
  end
  return offsets
end

-- The stored next offsets of JOB under WORK: { ["topic:partition"] = offset }.
function H.stored_offsets(work, job)
  return H.offsets_in_db(work .. "/state-store/" .. job .. ".db")
end

-- Overwrites the stored next offset of TOPIC:PARTITION for JOB under WORK with sqlite3, as a user editing
-- the state store would; errors unless exactly that row existed.
function H.set_stored_offset(work, job, topic, partition, offset)
  local db = work .. "/state-store/" .. job .. ".db"
  local rows = H.sqlite(db, string.format(
    "UPDATE partition_state SET next_offset = %d WHERE topic = '%s' AND partition = %d; SELECT changes();",
    offset, (topic:gsub("'", "''")), partition))
  assert(rows[1] and rows[1][1] == "1", "no stored offset for " .. topic .. ":" .. partition .. " in " .. db)
end

-- Runs `kingest run JOB` with GOBBLIN_WORK_DIR=WORK (and ENV added); returns status, stdout, stderr.
function H.run(job, work, env)
  local e = { GOBBLIN_WORK_DIR = work }
  for k, v in pairs(env or {}) do e[k] = v end
  return H.kingest({ "run", job }, e)
end

-- The earliest and latest offset of every partition of each TOPIC, asked of the broker by kcat (independent
-- of kingest): { ["topic:partition"] = { earliest = n, latest = n } }.
function H.offsets(...)
  local offsets = {}
  for _, topic in ipairs({ ... }) do
    local code, out, err = H.sh("kcat -L -b " .. H.q(H.bootstrap()) .. " -t " .. H.q(topic) .. " -m 5")
    assert(code == 0, "kcat -L " .. topic .. ": " .. err)
    local partitions = {}
    for p in out:gmatch("\n +partition (%d+),") do partitions[#partitions + 1] = p end
    assert(#partitions > 0, "topic " .. topic .. " has no partitions:\n" .. out)
    -- kcat -Q asks for the offset of a time: -2 is the earliest offset, -1 the latest.
    for _, which in ipairs({ { "earliest", -2 }, { "latest", -1 } }) do
      local cmd = "kcat -Q -b " .. H.q(H.bootstrap())
      for _, p in ipairs(partitions) do cmd = cmd .. " -t " .. H.q(topic .. ":" .. p .. ":" .. which[2]) end
      code, out, err = H.sh(cmd)
      assert(code == 0, "kcat -Q " .. topic .. ": " .. err)
      local n = 0
      for p, offset in out:gmatch("%[(%d+)%] offset (%-?%d+)") do
        local tp = topic .. ":" .. p
        offsets[tp] = offsets[tp] or {}
        offsets[tp][which[1]] = tonumber(offset)
        n = n + 1
      end
      assert(n == #partitions, "kcat -Q " .. topic .. ": expected " .. #partitions .. " offsets:\n" .. out)
    end
  end
  return offsets
end

-- The folders directly under DIR, sorted ({} when DIR does not exist).
function H.dirs(dir)
  local _, out = H.sh("cd " .. H.q(dir) .. " 2>/dev/null && find . -mindepth 1 -maxdepth 1 -type d | sort")
  local dirs = {}
  for line in out:gmatch("[^\n]+") do dirs[#dirs + 1] = line:gsub("^%./", "") end
  return dirs
end

-- True when PATH exists (file or folder).
function H.exists(path)
  return (H.sh("test -e " .. H.q(path))) == 0
end

-- Every JSON line of the metrics files under DIR, decoded with cjson, in file order.
function H.metrics_lines(dir)
  local cjson = require("cjson")
  local items = {}
  for _, f in ipairs(H.files(dir)) do
    for line in (slurp(dir .. "/" .. f) or ""):gmatch("[^\n]+") do items[#items + 1] = cjson.decode(line) end
  end
  return items
end

-- A snapshot of a folder tree: { [relative path] = content }, to check that a failed run changed nothing.
function H.snapshot(dir)
  local snap = {}
  for _, f in ipairs(H.files(dir)) do snap[f] = slurp(dir .. "/" .. f) end
  return snap
end

-- Helpers of the failure, lock and command-line specs.

-- The lines of TEXT, without their newlines.
function H.lines(text)
  local lines = {}
  for line in (text or ""):gmatch("([^\n]*)\n?") do lines[#lines + 1] = line end
  while lines[#lines] == "" do lines[#lines] = nil end
  return lines
end

-- S without its trailing white space (a command's output without its newline).
function H.trim(s) return (s:gsub("%s+$", "")) end

-- Runs scripts/hadoop with ARGS (each quoted): code, stdout, stderr.
function H.hadoop(args)
  local cmd = H.q(H.root .. "/scripts/hadoop")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  return H.sh(cmd)
end

-- The last non-empty line of TEXT ("" when there is none).
function H.last_line(text)
  local lines = H.lines(text)
  return lines[#lines] or ""
end

-- Milliseconds of the wall clock, from `date +%s%N` (os.time has whole seconds only).
function H.now_ms()
  local p = assert(io.popen("date +%s%N"))
  local ns = p:read("*l")
  p:close()
  return math.floor(tonumber(ns) / 1e6)
end

function H.sleep(seconds)
  os.execute("sleep " .. tostring(seconds))
end

-- Polls PREDICATE every 50 ms until it returns a true value (returned) or TIMEOUT seconds pass (nil).
function H.wait_until(predicate, timeout)
  local deadline = H.now_ms() + timeout * 1000
  repeat
    local v = predicate()
    if v then return v end
    H.sleep(0.05)
  until H.now_ms() > deadline
  return nil
end

-- Starts `kingest ARGS...` with ENV added in the background. FILES is a path prefix: the process writes
-- its pid to FILES.pid, its stdout and stderr to FILES.out and FILES.err, and, once it has exited, its exit
-- status to FILES.status (128 + signal when killed). Returns a handle for H.pid_of, H.wait_exit, H.stderr_of.
function H.spawn(args, env, files)
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. H.q(v) end
  parts[#parts + 1] = H.q(H.bin)
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  local p = { pid = files .. ".pid", out = files .. ".out", err = files .. ".err", status = files .. ".status" }
  os.remove(p.status)
  -- sh execs kingest, so the pid it writes is kingest's; the outer shell waits and records the status.
  local inner = "echo $$ >" .. H.q(p.pid) .. "; exec env " .. table.concat(parts, " ") .. " >" .. H.q(p.out) ..
                " 2>" .. H.q(p.err)
  local cmd = "(sh -c " .. H.q(inner) .. "; echo $? >" .. H.q(p.status .. ".tmp") .. "; mv " ..
              H.q(p.status .. ".tmp") .. " " .. H.q(p.status) .. ") >/dev/null 2>&1 &"
  assert(H.sh(cmd) == 0, "cannot start " .. cmd)
  return p
end

-- The pid of a spawned process (waits up to 5 s for it to be written).
function H.pid_of(p)
  return H.wait_until(function()
    local s = H.slurp(p.pid)
    return s and tonumber(s:match("%d+"))
  end, 5)
end

-- What a spawned process has written to stderr so far.
function H.stderr_of(p)
  return H.slurp(p.err) or ""
end

-- Waits up to TIMEOUT seconds for a spawned process to exit; returns its exit status (nil on timeout).
function H.wait_exit(p, timeout)
  return H.wait_until(function()
    local s = H.slurp(p.status)
    return s and tonumber(s:match("%d+"))
  end, timeout)
end

-- Helpers of the scripting and examples specs.

-- Produces to TOPIC with kcat itself: `kcat -P -b <broker> -t TOPIC -p PARTITION ARGS... FILES...`, with STDIN
-- (optional) fed to it. OPTS: partition (default 0), args, files, stdin. Errors when kcat fails.
function H.kcat_produce(topic, opts)
  opts = opts or {}
  local cmd = "kcat -P -b " .. H.q(H.bootstrap()) .. " -t " .. H.q(topic) .. " -p " .. tostring(opts.partition or 0)
  for _, a in ipairs(opts.args or {}) do cmd = cmd .. " " .. H.q(a) end
  for _, f in ipairs(opts.files or {}) do cmd = cmd .. " " .. H.q(f) end
  local input
  if opts.stdin then
    input = os.tmpname()
    spit(input, opts.stdin)
    cmd = cmd .. " <" .. H.q(input)
  end
  local code, _, err = H.sh(cmd) -- the inner redirection wins over H.sh's </dev/null
  if input then os.remove(input) end
  assert(code == 0, "kcat -P " .. topic .. ": " .. err)
end

-- The records of TOPIC read by kcat (independent of kingest), formatted by kcat's -f FORMAT, one line each
-- (FORMAT must not print newlines of its own).
function H.kcat_lines(topic, format)
  local code, out, err = H.sh("kcat -C -b " .. H.q(H.bootstrap()) .. " -t " .. H.q(topic) ..
    " -X fetch.wait.max.ms=10 -e -q -f " .. H.q(format .. "\\n"))
  assert(code == 0, "kcat: " .. err)
  return H.lines(out)
end

-- The files directly in DIR (not in its subfolders, such as _errors), sorted.
function H.top_files(dir) return list_files(dir, true) end

-- The lines of the files directly in DIR (not in its subfolders), in file-name order.
function H.top_lines(dir) return (lines_of(dir, H.top_files(dir))) end

-- Every line of the files directly in DIR decoded with cjson, in file-name then line order: the JSON
-- records a job wrote to one output folder.
function H.json_lines(dir)
  local cjson = require("cjson")
  local items = {}
  for i, line in ipairs(H.top_lines(dir)) do items[i] = cjson.decode(line) end
  return items
end

-- Decodes standard base64 (with = padding).
function H.base64_decode(s)
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local value = {}
  for i = 1, 64 do value[alphabet:byte(i)] = i - 1 end
  local out, bits, nbits = {}, 0, 0
  for i = 1, #s do
    local v = value[s:byte(i)]
    if v then
      bits, nbits = bits * 64 + v, nbits + 6
      if nbits >= 8 then
        nbits = nbits - 8
        local byte = math.floor(bits / 2 ^ nbits)
        out[#out + 1] = string.char(byte)
        bits = bits - byte * 2 ^ nbits
      end
    else
      assert(s:sub(i, i) == "=", "not base64: " .. s)
    end
  end
  return table.concat(out)
end

-- The lines of TEXT that contain NEEDLE (plain text).
function H.grep(text, needle)
  local found = {}
  for _, line in ipairs(H.lines(text)) do
    if line:find(needle, 1, true) then found[#found + 1] = line end
  end
  return found
end

-- Helpers of the packing and plan specs.

-- Runs `kingest plan JOB --json` with GOBBLIN_WORK_DIR=WORK (and ENV added); errors unless it succeeded and
-- printed one JSON document. Returns the decoded plan, then stdout and stderr.
function H.plan_json(job, work, env)
  local e = { GOBBLIN_WORK_DIR = work }
  for k, v in pairs(env or {}) do e[k] = v end
  local code, out, err = H.kingest({ "plan", job, "--json" }, e)
  assert(code == 0, "kingest plan --json " .. job .. " exited " .. tostring(code) .. ": " .. err)
  local ok, plan = pcall(require("cjson").decode, out)
  assert(ok and type(plan) == "table", "kingest plan --json printed no JSON object:\n" .. out)
  return plan, out, err
end

-- The "Task <id>: N work units, estimated size S, load L: t:p, ..." lines of a run's LOG, in log order:
-- { id =, index = n of the task id, units = N, size = S, load = L, partitions = { "t:p", ... }, more = how many
-- the line left out ("... (k more)"), 0 when none }.
function H.task_lines(log)
  local tasks = {}
  for _, line in ipairs(H.lines(log)) do
    local id, index, units, size, load, parts =
      line:match(" INFO Task (task_%S-_(%d+)): (%d+) work units, estimated size ([%d%.]+), load ([%d%.]+): (.*)$")
    if id then
      local t = { id = id, index = tonumber(index), units = tonumber(units), size = tonumber(size),
                  load = tonumber(load), partitions = {}, more = 0 }
      for part in (parts .. ", "):gmatch("(.-), ") do
        local more = part:match("^%.%.%. %((%d+) more%)$")
        if more then t.more = tonumber(more) else t.partitions[#t.partitions + 1] = part end
      end
      tasks[#tasks + 1] = t
    end
  end
  return tasks
end

-- The "Min load of a task = A; max load of a task = B; spread = C%" line of a run's LOG: { min =, max =,
-- spread = C as printed }, or nil.
function H.load_line(log)
  local min, max, spread = log:match("INFO Min load of a task = ([%d%.]+); max load of a task = ([%d%.]+); spread = ([%d%.]+)%%")
  if not min then return nil end
  return { min = tonumber(min), max = tonumber(max), spread = spread }
end

-- Records with payloads "<topic>-<partition>-<offset>" for offsets FROM..TO of TOPIC:PARTITION.
function H.records(topic, partition, from, to)
  local t = {}
  for i = from, to do t[#t + 1] = string.format("%s-%d-%d", topic, partition, i) end
  return t
end

-- The arrays given, one after the other, in one new array.
function H.concat(...)
  local t = {}
  for _, list in ipairs({ ... }) do
    for _, v in ipairs(list) do t[#t + 1] = v end
  end
  return t
end

-- A job.lua `decodeRecord` entry that busy-waits at least MS milliseconds per record (on the engine's
-- monotonic clock: wall time, whatever else runs) and hands the record on; with TOPIC, only that topic's.
function H.slow_decode(ms, topic)
  return table.concat({
    "  decodeRecord = function(msg)",
    topic and string.format("    if msg:topic() ~= %q then return msg end", topic) or "    -- every topic",
    string.format("    local done = require('gobblin.ffi').C.kg_ffi_clock_mono_ms() + %d", math.ceil(ms) + 1),
    "    while require('gobblin.ffi').C.kg_ffi_clock_mono_ms() < done do end",
    "    return msg",
    "  end,",
  }, "\n")
end

-- A topic of one partition holding LINES; returns its (unique) name.
function H.topic_with(name, lines)
  local topic = H.unique(name)
  H.create_topic(topic, 1)
  H.produce(topic, lines)
  return topic
end

-- Runs spec/support/avro_produce.py with ARGS (a list), STDIN fed to it; returns its exit code, stdout and stderr.
function H.avro_produce(args, stdin)
  local input = H.tmp .. "/" .. H.unique("avro_in")
  spit(input, stdin or "")
  local cmd = "python3 " .. H.q(H.root .. "/spec/support/avro_produce.py")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  local code, out, err = H.sh(cmd .. " <" .. H.q(input))
  os.remove(input)
  return code, out, err
end

-- Runs JOB in WORK (with ENV added) and asserts that it succeeded; returns its log.
function H.run_ok(job, work, env)
  local code, _, err = H.run(job, work, env)
  require("luassert").are.equal(0, code, err) -- busted's assert lives in the spec's environment, not here
  return err
end

-- Runs JOB in WORK (with ENV added) and asserts that it failed with exit status STATUS (default 1; not a crash)
-- and one clear last line on stderr, `kingest: ...`, containing every string of NAMES (a list, may be nil);
-- returns that line and the log.
function H.run_fails(job, work, status, names, env)
  local assert = require("luassert")
  status = status or 1
  local code, _, err = H.run(job, work, env)
  assert.are.equal(status, code, "the run should fail with status " .. status .. ":\n" .. err)
  local last = H.last_line(err)
  assert.matches("^kingest: ", last, 1, false, "the last line of stderr should be the error:\n" .. err)
  for _, name in ipairs(names or {}) do
    assert.truthy(last:find(name, 1, true), ("the error should name %q: %s"):format(name, last))
  end
  return last, err
end

-- The epoch milliseconds of the job id of JOB's run whose LOG is given (`Starting job JOB (job_JOB_<ms>)`);
-- asserts that the log has it.
function H.job_ms(log, job)
  local ms = log:match("Starting job " .. job .. " %(job_" .. job .. "_(%d+)%)")
  require("luassert").is_not_nil(ms, "no job id in the log:\n" .. log)
  return ms
end

return H
