-- spec.support.crash: the crash harness. Against the real broker, it produces known records (payload
-- "<topic>-<partition>-<seq>", each unique), runs a job that pulls them and kills kingest with SIGKILL at the
-- engine's crash points (KINGEST_CRASH_AT=<point>:<n>) or after a random delay, runs it again until a run
-- succeeds, and checks that every produced record is in the final dir exactly once. Used by
-- spec/integration/crash_spec.lua and by scripts/soak.
--
--   local Crash = require("support.crash")
--   local report = Crash.campaign({ kills = 50, seed = 42, progress = print })
--   -- report.kills, report.runs, report.produced, report.lost, report.doubled, report.violations, ...
--
-- Some cycles produce their records while the killed run is going on, so runs also plan and read partitions
-- that grow under them.
--
-- With OPTS.hdfs (a webhdfs://HOST:PORT URI), the job keeps its task data and its final dir on HDFS
-- (writer.fs.uri), and every check reads them through WebHDFS with curl (LISTSTATUS and OPEN,
-- spec/support/webhdfs.lua), never with kingest; without it, both are on the local disk. With OPTS.hdfs and
-- OPTS.staging = "local", the task data stays on the local disk and only the final dir is on HDFS
-- (data.publisher.fs.uri): the commit uploads. With OPTS.s3 (spec/support/s3.lua's module), the task data stays
-- on the local disk and the final dir is in a new bucket of the S3 server of scripts/s3, read back with boto3: the
-- commit writes objects, and no unfinished upload may be left at the end.
--
-- Checks, after every kill: no published file is partial (each ends with the delimiter and holds known records
-- of its own topic only) and no record is in the final dir twice. After every successful run: the final dir
-- holds exactly the records below the stored offsets (read with sqlite3), each once, and none past them;
-- task.data.root.dir holds no file; no commit is pending in the state store; each stored offset lies between
-- the broker's latest offset before the run and after it. At the end, after a last run: every produced record
-- exactly once, and the stored offsets equal the broker's latest offsets (asked of the broker with kcat).
local H = require("support.harness")

local Crash = {}

-- The engine's crash points, in the order a run passes them.
Crash.POINTS = { "fetch", "write", "task-output", "journaled", "publish", "finish", "recover" }

-- What one campaign cycles through: every crash point, and kills at random times (twice as often).
Crash.SCENARIOS = { "fetch", "write", "task-output", "journaled", "publish", "finish", "recover", "random", "random" }

local DEFAULTS = {
  topics = 3,             -- topics, each with PARTITIONS partitions
  partitions = 4,
  initial = 40,           -- records per partition before the first run
  per_round = 30,         -- at most this many new records per partition before each cycle
  mappers = { 2, 4 },     -- mr.job.max.mappers is drawn from this range for every run
  batch = { 5, 50 },      -- kafka.fetch.batch.size likewise
  max_delay_ms = 400,     -- random-time kills come after 0 .. this many ms (at most what a clean run takes)
  record_cost_us = 0,     -- decodeRecord busy-waits this long per record (makes runs longer)
  chain = 0.25,           -- probability that the first rerun after a kill is killed too
  concurrent = 0.3,       -- probability that a cycle's records are produced while its killed run goes on
  max_reruns = 5,         -- clean runs allowed to reach a successful one after kills
  max_violations = 50,
  hdfs = nil,             -- a webhdfs:// URI: task data and final dir on that HDFS
  staging = "hdfs",       -- with hdfs, "local": task data on the local disk, the final dir on HDFS
  s3 = nil,               -- spec/support/s3.lua: the final dir in a bucket of scripts/s3's server
}

local Campaign = {}
Campaign.__index = Campaign

local function seed_from_kernel()
  local f = io.open("/proc/sys/kernel/random/uuid")
  local uuid = f and f:read("*l") or tostring(os.time())
  if f then f:close() end
  return tonumber(uuid:gsub("%X", ""):sub(1, 7), 16)
end

-- A new campaign; nothing happens until setup(). OPTS overrides DEFAULTS; also: seed, progress (a function
-- called with one line of text), name (prefix of topic and job names).
function Crash.new(opts)
  local c = setmetatable({}, Campaign)
  for k, v in pairs(DEFAULTS) do c[k] = v end
  for k, v in pairs(opts or {}) do c[k] = v end
  c.seed = c.seed or seed_from_kernel()
  math.randomseed(c.seed)
  c.name = c.name or "crash"
  c.stats = {
    kills = 0, runs = 0, produced = 0, cycles = 0, misses = 0, late = 0, reruns = 0, failed_reruns = 0,
    between_moves = 0, -- kills at publish that left some files of the commit published and some not
    by_point = {},
  }
  c.violations = {}   -- messages, the first max_violations
  c.kinds = {}        -- kind -> how many violations of it
  c.produced = {}     -- payload -> true
  c.latest = {}       -- "topic:partition" -> records produced = the broker's latest offset (fresh topics)
  c.settled = {}      -- the same, of the records known to be in the broker (not being produced)
  c.count = {}        -- payload -> times seen in the final dir
  c.distinct = 0      -- payloads seen at least once
  c.extra = 0         -- sum over payloads of (times seen - 1)
  c.by_tp = {}        -- "topic:partition" -> { distinct = payloads seen, max = highest sequence number seen }
  c.files = {}        -- final-dir path -> { size =, lines = { payloads }, partial =, unknown = }
  c.context = "setup"
  return c
end

function Campaign:log(fmt, ...)
  if self.progress then self.progress(string.format(fmt, ...)) end
end

-- Notes a broken promise of KIND ("lost", "doubled", "partial", "unknown", "unreadable", "vanished", "task-data",
-- "pending", "offsets", "broker", "run").
function Campaign:violation(kind, fmt, ...)
  local msg = string.format("%s [seed %d, cycle %d, %s]: ", kind, self.seed, self.stats.cycles, self.context) ..
              string.format(fmt, ...)
  self.kinds[kind] = (self.kinds[kind] or 0) + 1
  if #self.violations < self.max_violations then self.violations[#self.violations + 1] = msg end
  self:log("VIOLATION %s", msg)
end

local function random_in(range)
  return math.random(range[1], range[2])
end

-- Creates the topics, writes the job, produces the initial records.
function Campaign:setup()
  self.work = H.workdir(self.name)
  self.job_name = "Crash_" .. H.unique("job")
  self.topic_names = {}
  for i = 1, self.topics do
    local t = H.unique(self.name .. i)
    H.create_topic(t, self.partitions)
    self.topic_names[i] = t
  end
  local fs_props = ""
  if self.hdfs then
    self.W = require("support.webhdfs")
    self.hdfs_http = self.W.http_of(self.hdfs)
    self.hdfs_root = "/kingest/" .. H.unique(self.name)
    self.final = self.hdfs_root .. "/job-output"
    self.task_data_on_hdfs = self.staging ~= "local"
    self.task_data = self.task_data_on_hdfs and self.hdfs_root .. "/task-data" or self.work .. "/task-data"
    fs_props = table.concat({
      string.format("  [%q] = %q,", self.task_data_on_hdfs and "writer.fs.uri" or "data.publisher.fs.uri", self.hdfs),
      string.format("  [\"task.data.root.dir\"] = %q,", self.task_data),
      string.format("  [\"data.publisher.final.dir\"] = %q,", self.final),
    }, "\n")
  elseif self.s3 then
    self.bucket = self.s3.bucket(self.name)
    self.final = "/job-output"
    self.task_data = self.work .. "/task-data"
    local lines = {}
    for k, v in pairs(self.s3.props(self.bucket, self.final, self.s3_props)) do
      lines[#lines + 1] = string.format("  [%q] = %q,", k, v)
    end
    table.sort(lines)
    fs_props = table.concat(lines, "\n")
  else
    self.final = self.work .. "/job-output"
    self.task_data = self.work .. "/task-data"
  end
  self.db = self.work .. "/state-store/" .. self.job_name .. ".db"
  local cost = ""
  if self.record_cost_us > 0 then
    cost = string.format(table.concat({
      "  decodeRecord = function(msg)",
      "    local done = os.clock() + %g",
      "    while os.clock() < done do end",
      "    return msg",
      "  end,",
    }, "\n"), self.record_cost_us / 1e6)
  end
  self.job = self.work .. "/job.lua"
  H.spit(self.job, table.concat({
    "-- The crash harness's job: every record of its topics, one file per task and topic (more when rolled).",
    "return {",
    string.format("  [\"job.name\"] = %q,", self.job_name),
    string.format("  [\"kafka.brokers\"] = %q,", H.bootstrap()),
    string.format("  [\"topic.whitelist\"] = %q,", table.concat(self.topic_names, ",")),
    "  [\"bootstrap.with.offset\"] = \"earliest\",",
    "  [\"writer.file.path.type\"] = \"tablename\",",
    "  [\"progress.interval.ms\"] = 0,",
    "  [\"mr.job.max.mappers\"] = tonumber(os.getenv(\"KINGEST_CRASH_MAPPERS\") or \"3\"),",
    "  [\"kafka.fetch.batch.size\"] = tonumber(os.getenv(\"KINGEST_CRASH_BATCH\") or \"1000\"),",
    "  [\"writer.file.max.records\"] = tonumber(os.getenv(\"KINGEST_CRASH_ROLL\") or \"\"),",
    "  [\"parallel.runner.threads\"] = tonumber(os.getenv(\"KINGEST_CRASH_PUBLISHERS\") or \"\"),",
    fs_props,
    cost,
    "}",
  }, "\n") .. "\n")
  self:produce(self.initial, true)
  self:log("crash harness: seed %d, %d topics x %d partitions, work dir %s%s", self.seed, self.topics,
    self.partitions, self.work, self.hdfs and (", on " .. self.hdfs .. self.hdfs_root) or "")
end

-- Produces new records: up to N per partition (exactly N when EXACT), with at least one in a partition of
-- every topic, so that every run that pulls them writes a file per topic at least. Record <seq> of a partition
-- is at offset <seq> - 1: the topics are fresh and kcat produces with idempotence, so that a retry cannot
-- store a record twice (and be mistaken for a duplicate of kingest's). All partitions are produced to at
-- once, each by its own kcat. With BACKGROUND, returns at once; wait_produced() waits for the producers.
function Campaign:produce(n, exact, background)
  local jobs, files = {}, {}
  local fresh = {} -- the partitions with new records, and how many: { { topic, partition, count } }
  for _, topic in ipairs(self.topic_names) do
    local counts, any = {}, false
    for p = 0, self.partitions - 1 do
      counts[p] = exact and n or math.random(0, n)
      any = any or counts[p] > 0
    end
    if not any then counts[math.random(0, self.partitions - 1)] = math.max(1, n) end
    for p = 0, self.partitions - 1 do
      if counts[p] > 0 then
        local tp = topic .. ":" .. p
        local lines = {}
        for _ = 1, counts[p] do
          self.latest[tp] = (self.latest[tp] or 0) + 1
          local payload = string.format("%s-%d-%d", topic, p, self.latest[tp])
          lines[#lines + 1] = payload
          self.produced[payload] = true
        end
        local f = os.tmpname()
        H.spit(f, table.concat(lines, "\n") .. "\n")
        files[#files + 1] = f
        jobs[#jobs + 1] = string.format("kcat -P -b %s -t %s -p %d -X enable.idempotence=true <%s & pids=\"$pids $!\"",
          H.q(H.bootstrap()), H.q(topic), p, H.q(f))
        fresh[#fresh + 1] = { topic = topic, partition = p, count = counts[p] }
        self.stats.produced = self.stats.produced + counts[p]
      end
    end
  end
  self.fresh = fresh
  local handle = { files = files, done = os.tmpname(), log = os.tmpname() }
  os.remove(handle.done)
  local cmd = "pids=; rc=0; " .. table.concat(jobs, "; ") .. "; for p in $pids; do wait $p || rc=1; done; echo $rc >" ..
              H.q(handle.done)
  if background then
    assert(H.sh("(" .. cmd .. ") >/dev/null 2>" .. H.q(handle.log) .. " &") == 0, "cannot start kcat")
    return handle
  end
  H.sh("(" .. cmd .. ") 2>" .. H.q(handle.log))
  self:wait_produced(handle)
end

-- Waits for the producers that produce() started; errors when one failed.
function Campaign:wait_produced(handle)
  local status = H.wait_until(function() return H.slurp(handle.done) end, 60)
  local log = H.slurp(handle.log) or ""
  for _, f in ipairs(handle.files) do os.remove(f) end
  os.remove(handle.done)
  os.remove(handle.log)
  assert(status and status:match("^0"), "producing with kcat failed: " .. log)
  for tp, n in pairs(self.latest) do self.settled[tp] = n end
end

-- Checks that the broker's latest offset of every partition equals what was produced.
function Campaign:check_broker()
  local broker = H.offsets(unpack(self.topic_names))
  for tp, o in pairs(broker) do
    if o.latest ~= (self.latest[tp] or 0) then
      self:violation("broker", "the broker's latest offset of %s is %d, but %d records were produced", tp, o.latest,
        self.latest[tp] or 0)
    end
  end
  return broker
end

-- The environment of one run: a random mr.job.max.mappers and fetch batch size, and every other run a random
-- writer.file.max.records, so that kills also find tasks with several rolled files.
function Campaign:env(extra)
  self.before_run = {} -- what the broker holds for sure as the run starts
  for tp, n in pairs(self.settled) do self.before_run[tp] = n end
  self.mappers_now = random_in(self.mappers)
  self.batch_now = random_in(self.batch)
  local env = {
    GOBBLIN_WORK_DIR = self.work,
    KINGEST_CRASH_MAPPERS = tostring(self.mappers_now),
    KINGEST_CRASH_BATCH = tostring(self.batch_now),
    KINGEST_CRASH_ROLL = math.random(2) == 1 and tostring(random_in({ 5, 60 })) or "",
    -- Files published one at a time half the runs (a kill at publish then falls between two), else at once.
    KINGEST_CRASH_PUBLISHERS = math.random(2) == 1 and "1" or tostring(random_in({ 2, 8 })),
  }
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end

local function env_prefix(env)
  local parts = {}
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. H.q(v) end
  return "env " .. table.concat(parts, " ")
end

-- Runs the job once with ENV added; returns status (128 + 9 when killed), stdout, stderr. The shell waits
-- for kingest itself, so that its "Killed" goes to the captured stderr, not to the terminal.
function Campaign:run(extra)
  local t0 = H.now_ms()
  local code, out, err = H.sh(string.format("%s %s run %s; exit $?", env_prefix(self:env(extra)), H.q(H.bin),
    H.q(self.job)))
  if code == 0 then
    -- How long a whole run takes, so that random-time kills can be aimed inside runs.
    local ms = H.now_ms() - t0
    self.run_ms = self.run_ms and (self.run_ms * 0.8 + ms * 0.2) or ms
  end
  return code, out, err
end

-- One run of the job, killed by the engine itself at the HIT-th pass of POINT (KINGEST_CRASH_AT). Returns
-- true when the process was killed there, false when it finished first (the point was passed fewer times).
function Campaign:crash_at(point, hit)
  local spec = point .. ":" .. hit
  local code, _, err = self:run({ KINGEST_CRASH_AT = spec })
  self.stats.runs = self.stats.runs + 1
  local killed = code == 128 + 9 and err:find("KINGEST_CRASH_AT=" .. spec .. ": killing the process", 1, true) ~= nil
  if killed then
    self.stats.kills = self.stats.kills + 1
    self.stats.by_point[point] = (self.stats.by_point[point] or 0) + 1
    if point == "publish" then self:note_half_published() end
    self:after_kill("KINGEST_CRASH_AT=" .. spec)
  elseif code == 0 then
    self.stats.misses = self.stats.misses + 1
    self:after_success("run with KINGEST_CRASH_AT=" .. spec .. " (not reached)", self.before_run)
  else
    self:violation("run", "the run with KINGEST_CRASH_AT=%s exited %d:\n%s", spec, code, err)
  end
  return killed
end

-- After a kill at publish: counts it in stats.between_moves when the commit it left is half done (some of its
-- files published, some not), as the publish point is meant to leave it.
function Campaign:note_half_published()
  local moved, total = 0, 0
  for _, row in ipairs(H.sqlite(self.db, "SELECT dst FROM pending_moves")) do
    total = total + 1
    if self:exists(row[1]) then moved = moved + 1 end
  end
  if moved > 0 and moved < total then self.stats.between_moves = self.stats.between_moves + 1 end
end

-- One run of the job, killed with SIGKILL DELAY_MS after it was started. Returns true when it was killed,
-- false when it had already finished.
function Campaign:kill_after(delay_ms)
  local out, err = os.tmpname(), os.tmpname()
  local cmd = string.format("%s %s run %s >%s 2>%s & pid=$!; sleep %.3f; kill -KILL $pid 2>/dev/null; wait $pid; echo $?",
    env_prefix(self:env()), H.q(H.bin), H.q(self.job), H.q(out), H.q(err), delay_ms / 1000)
  local _, status = H.sh(cmd)
  local log = H.slurp(err) or ""
  os.remove(out)
  os.remove(err)
  local code = tonumber(status:match("%d+"))
  self.stats.runs = self.stats.runs + 1
  if code == 128 + 9 then
    self.stats.kills = self.stats.kills + 1
    self.stats.by_point.random = (self.stats.by_point.random or 0) + 1
    self:after_kill(string.format("SIGKILL after %d ms", delay_ms))
    return true
  elseif code == 0 then
    self.stats.late = self.stats.late + 1
    self:after_success(string.format("run that finished before its SIGKILL at %d ms", delay_ms), self.before_run)
  else
    self:violation("run", "the run to be killed after %d ms exited %s:\n%s", delay_ms, tostring(code), log)
  end
  return false
end

-- Runs the job without a crash until a run succeeds (at most max_reruns times).
function Campaign:rerun()
  for _ = 1, self.max_reruns do
    local code, _, err = self:run()
    self.stats.runs = self.stats.runs + 1
    self.stats.reruns = self.stats.reruns + 1
    if code == 0 then
      self:after_success("rerun", self.before_run)
      return err
    end
    self.stats.failed_reruns = self.stats.failed_reruns + 1
    self:violation("run", "a rerun without a crash exited %d:\n%s", code, err)
  end
  error(string.format("no successful run in %d attempts (seed %d, work dir %s)", self.max_reruns, self.seed, self.work))
end

-- Brings the view of the final dir up to date: reads the files that are new or changed since the last scan,
-- and notes files that are partial, hold unknown records, or vanished.
function Campaign:scan()
  local present = {}
  for path, size in pairs(self:final_files()) do
    present[path] = true
    local known = self.files[path]
    if not known or known.size ~= size then
      if known then self:forget(path) end
      self:read_file(path, size)
    end
  end
  for path in pairs(self.files) do
    if not present[path] then
      self:violation("vanished", "published file %s vanished from the final dir", path)
      self:forget(path)
    end
  end
end

local function tp_seq(payload)
  local topic, p, seq = payload:match("^(.*)-(%d+)-(%d+)$")
  return topic .. ":" .. p, tonumber(seq)
end

function Campaign:forget(path)
  for _, payload in ipairs(self.files[path].lines) do
    local n = self.count[payload]
    self.count[payload] = n - 1
    if n == 1 then
      self.distinct = self.distinct - 1
      local tp = tp_seq(payload)
      self.by_tp[tp].distinct = self.by_tp[tp].distinct - 1
    else
      self.extra = self.extra - 1
    end
  end
  self.files[path] = nil
end

function Campaign:read_file(path, size)
  local text, why = self:read_final(path)
  local entry = { size = size, lines = {}, unknown = 0 }
  if not text then
    -- Its records are not counted (a duplicate among them would go unseen): a violation, and read again next scan.
    self:violation("unreadable", "published file %s cannot be read: %s", path, why)
    entry.size = -1
    text = ""
  end
  local topic = path:match("^([^/]+)/part%.task_.+%.txt$")
  if not topic then self:violation("unknown", "unexpected file in the final dir: %s", path) end
  if #text > 0 and text:sub(-1) ~= "\n" then
    entry.partial = true
    self:violation("partial", "published file %s is partial: it does not end with the delimiter (%d bytes)", path, #text)
  end
  for line in text:gmatch("([^\n]*)\n") do
    if self.produced[line] and (not topic or line:sub(1, #topic + 1) == topic .. "-") then
      entry.lines[#entry.lines + 1] = line
      local n = self.count[line] or 0
      self.count[line] = n + 1
      if n == 0 then
        self.distinct = self.distinct + 1
        local tp, seq = tp_seq(line)
        local t = self.by_tp[tp] or { distinct = 0, max = 0 }
        self.by_tp[tp] = t
        t.distinct = t.distinct + 1
        if seq > t.max then t.max = seq end
      else
        self.extra = self.extra + 1
      end
    else
      entry.unknown = entry.unknown + 1
    end
  end
  if entry.unknown > 0 then
    self:violation("unknown", "published file %s holds %d lines that are not records of its topic", path, entry.unknown)
  end
  self.files[path] = entry
end

-- Lost and doubled records now: { lost = produced records not in the final dir, doubled = extra copies }. With
-- UPTO ({ ["topic:partition"] = offset }), only the records below those offsets count as lost, and ahead is
-- how many partitions hold records at or past them.
function Campaign:tally(upto)
  local lost, ahead = 0, 0
  for tp, n in pairs(self.latest) do
    local seen = self.by_tp[tp] or { distinct = 0, max = 0 }
    local want = upto and (upto[tp] or 0) or n
    -- The records seen are distinct produced records of the partition: when none is past WANT, they are
    -- records 1 .. WANT, and WANT minus their number are missing.
    if seen.max > want then ahead = ahead + 1 end
    lost = lost + math.max(0, want - seen.distinct)
  end
  return { lost = lost, doubled = self.extra, ahead = ahead }
end

function Campaign:after_kill(what)
  self.context = what
  self:scan()
  local t = self:tally()
  if t.doubled > 0 then self:violation("doubled", "%d records are in the final dir twice after the kill", t.doubled) end
end

-- The files under DIR (recursively), as paths relative to it, sorted.
function Campaign:files_under(dir)
  if self.s3 and dir == self.final then
    local paths = {}
    for _, o in ipairs(self.s3.objects(self.bucket, "job-output/")) do paths[#paths + 1] = o.key:sub(12) end
    return paths
  end
  if self.hdfs and (dir ~= self.task_data or self.task_data_on_hdfs) then return self.W.paths(dir, self.hdfs_http) end
  local _, out = H.sh("cd " .. H.q(dir) .. " 2>/dev/null && find . -type f -printf '%P\\n' | sort")
  return H.lines(out)
end

-- The files in the final dir that readers see: { ["relative/path"] = size }; in self.hidden, the paths of the
-- others (names that start with "_" or ".", as an upload that a kill cut short).
function Campaign:final_files()
  local all
  if self.s3 then -- every object read at once (one boto3 process), kept for read_final
    all, self.s3_bodies = {}, {}
    for line in self.s3.tool({ "dump", self.bucket, "job-output/" }):gmatch("[^\n]+") do
      local o = require("cjson").decode(line)
      all[o.key:sub(12)] = o.size
      self.s3_bodies[o.key:sub(12)] = o.body
    end
  elseif self.hdfs then
    all = self.W.list(self.final, self.hdfs_http)
  else
    local code, out, err = H.sh("cd " .. H.q(self.final) .. " 2>/dev/null && find . -type f -printf '%P\\t%s\\n' || true")
    assert(code == 0, "find: " .. err)
    all = {}
    for path, size in out:gmatch("([^\t\n]+)\t(%d+)\n") do all[path] = tonumber(size) end
  end
  local files = {}
  self.hidden = {}
  for path, size in pairs(all) do
    if path:match("[^/]+$"):match("^[_.]") then self.hidden[#self.hidden + 1] = path else files[path] = size end
  end
  return files
end

-- The bytes of the final dir's file PATH (relative); nil and the reason when it cannot be read.
function Campaign:read_final(path)
  if self.s3 then
    local text = self.s3_bodies and self.s3_bodies[path]
    if text then return text end
    return nil, "not listed"
  end
  if self.hdfs then
    local ok, text = pcall(self.W.read, self.final .. "/" .. path, self.hdfs_http)
    if ok then return text end
    return nil, tostring(text)
  end
  local text = H.slurp(self.final .. "/" .. path)
  if text then return text end
  return nil, "cannot be read"
end

-- Whether file PATH (absolute, on the job's file system) exists.
function Campaign:exists(path)
  if self.s3 and path:sub(1, #self.final + 1) == self.final .. "/" then
    return #self.s3.objects(self.bucket, path:sub(2)) > 0
  end
  if self.hdfs then return self.W.exists(path, self.hdfs_http) end
  return H.slurp(path) ~= nil
end

-- Checks the final dir, the task data and the state store after a successful run. BEFORE: the broker's latest
-- offsets before the run (the stored offsets must be at least these, and at most the latest now).
function Campaign:after_success(what, before)
  self.context = what
  self:scan()
  local stored = H.offsets_in_db(self.db)
  local t = self:tally(stored)
  if t.lost > 0 then self:violation("lost", "%d records below the stored offsets are missing", t.lost) end
  if t.doubled > 0 then self:violation("doubled", "%d records are doubled after a successful run", t.doubled) end
  if t.ahead > 0 then
    self:violation("doubled", "%d partitions have records at or past their stored offset: the next run pulls them again",
      t.ahead)
  end
  if #self.hidden > 0 then
    self:violation("task-data", "the final dir holds %d hidden files after a successful run: %s", #self.hidden,
      table.concat(self.hidden, ", "))
  end
  local left = self:files_under(self.task_data)
  if #left > 0 then
    self:violation("task-data", "task.data.root.dir holds %d files after a successful run: %s", #left, table.concat(left, ", "))
  end
  local rows = H.sqlite(self.db, "SELECT (SELECT count(*) FROM pending_moves) + (SELECT count(*) FROM pending_partitions)")
  if rows[1][1] ~= "0" then self:violation("pending", "a commit is still pending after a successful run") end
  for tp, n in pairs(self.latest) do
    local low = before[tp] or 0
    if not stored[tp] or stored[tp] < low or stored[tp] > n then
      self:violation("offsets", "stored offset of %s is %s, the broker's latest offset was %d before the run and is "
        .. "at most %d now", tp, tostring(stored[tp]), low, n)
    end
  end
end

-- A hit count that is reached for sure in a run pulling the records produced last: for fetch, at most one
-- batch per partition per batch size; for write, one pass per record; for task-output, at least one file
-- per topic.
function Campaign:hits(point)
  local records, fetches, topics = 0, 0, {}
  for _, f in ipairs(self.fresh or {}) do
    records = records + f.count
    fetches = fetches + math.ceil(f.count / self.batch_now)
    topics[f.topic] = true
  end
  local files = 0
  for _ in pairs(topics) do files = files + 1 end
  if point == "fetch" then return math.random(1, math.max(1, fetches)) end
  if point == "write" then return math.random(1, math.max(1, records)) end
  if point == "task-output" then return math.random(1, math.max(1, files)) end
  if point == "publish" then return math.random(1, math.max(1, files - 1)) end -- between two moves
  return 1
end

-- Kills a run with SCENARIO: a crash point, "recover" (a commit left pending by a kill at journaled or
-- publish, then a kill while the next run finishes it), or "random" (a kill at a random time). Returns the
-- number of kills.
function Campaign:kill(scenario)
  if scenario == "random" then
    -- 0 .. max_delay_ms, but no later than a clean run takes: a kill after the end is no kill.
    local max = math.min(self.max_delay_ms, math.floor((self.run_ms or self.max_delay_ms) * 1.1))
    return self:kill_after(math.random(0, max)) and 1 or 0
  elseif scenario == "recover" then
    local files = 0
    local topics = {}
    for _, f in ipairs(self.fresh or {}) do topics[f.topic] = true end
    for _ in pairs(topics) do files = files + 1 end
    local moved = math.random(0, math.max(0, files - 1))
    local first = moved == 0 and self:crash_at("journaled", 1) or self:crash_at("publish", moved)
    if not first then return 0 end
    return 1 + (self:crash_at("recover", math.random(1, math.max(1, files - moved))) and 1 or 0)
  end
  -- crash_at draws the run's own batch size; the hit count must hold for any batch size, so take the largest.
  self.batch_now = self.batch[2]
  return self:crash_at(scenario, self:hits(scenario)) and 1 or 0
end

-- One cycle: new records (sometimes produced while the killed run goes on), a kill (sometimes two in a row),
-- then reruns until one succeeds.
function Campaign:cycle(scenario)
  self.stats.cycles = self.stats.cycles + 1
  self.context = "producing"
  local producing = self:produce(self.per_round, false, math.random() < self.concurrent)
  local kills = self:kill(scenario)
  if kills > 0 and math.random() < self.chain then
    -- The next run killed too, anywhere; "recover" hits only when the first kill left a commit unfinished.
    local second = Crash.SCENARIOS[math.random(1, #Crash.SCENARIOS)]
    if second == "recover" then
      kills = kills + (self:crash_at("recover", 1) and 1 or 0)
    else
      kills = kills + self:kill(second)
    end
  end
  if producing then self:wait_produced(producing) end
  if kills > 0 then self:rerun() end
  return kills
end

-- The final checks, after a last run that pulls what is left: the broker's offsets, and everything
-- after_success checks, with the stored offsets equal to the broker's latest. Returns the report.
function Campaign:finish()
  self:rerun()
  self.context = "final check"
  self:check_broker()
  self:after_success("final check", self.latest)
  local t = self:tally()
  local report = {
    seed = self.seed, work = self.work, topics = self.topic_names,
    kills = self.stats.kills, runs = self.stats.runs, produced = self.stats.produced, cycles = self.stats.cycles,
    misses = self.stats.misses, late = self.stats.late, reruns = self.stats.reruns,
    failed_reruns = self.stats.failed_reruns, by_point = self.stats.by_point, between_moves = self.stats.between_moves,
    lost = t.lost, doubled = t.doubled, files = 0, violations = self.violations, kinds = self.kinds,
  }
  for _ in pairs(self.files) do report.files = report.files + 1 end
  return report
end

-- "kills 52 (fetch 5, write 5, ...), runs 120, records 4321 in 310 files, lost 0, doubled 0".
function Crash.summary(r)
  local points = {}
  for _, p in ipairs(Crash.POINTS) do
    if r.by_point[p] then points[#points + 1] = p .. " " .. r.by_point[p] end
  end
  if r.by_point.random then points[#points + 1] = "random time " .. r.by_point.random end
  return string.format("kills %d (%s), runs %d, records %d in %d files, lost %d, doubled %d, violations %d (seed %d)",
    r.kills, table.concat(points, ", "), r.runs, r.produced, r.files, r.lost, r.doubled, #r.violations, r.seed)
end

-- Asserts that REPORT noted no violation of any of the KINDS given, with the violations and the summary.
function Crash.assert_none_of(report, ...)
  local assert = require("luassert")
  for _, kind in ipairs({ ... }) do
    assert.are.equal(0, report.kinds[kind] or 0,
      kind .. " violations:\n" .. table.concat(report.violations, "\n") .. "\n" .. Crash.summary(report))
  end
end

-- A whole campaign: setup, then cycles over Crash.SCENARIOS (OPTS.scenarios) until OPTS.kills kills were made
-- (and, with OPTS.min_per_point, that many at each point of the scenarios), then the final checks.
-- OPTS.progress_every: report progress every that many kills. Returns the report and the campaign.
function Crash.campaign(opts)
  local c = Crash.new(opts)
  c:setup()
  local scenarios = opts.scenarios or Crash.SCENARIOS
  local target = opts.kills or 50
  local max_cycles = target * 4 + 20
  local every = opts.progress_every or 10
  local next_report = every
  local i = 0
  local t0 = H.now_ms()
  c:rerun() -- the first run pulls the initial records
  local min_each = opts.min_per_point or 0
  local function short_of_points()
    for _, s in ipairs(scenarios) do
      local point = s == "random" and "random" or s
      if (c.stats.by_point[point] or 0) < min_each then return true end
    end
    return false
  end
  while (c.stats.kills < target or short_of_points()) and i < max_cycles do
    i = i + 1
    c:cycle(scenarios[(i - 1) % #scenarios + 1])
    if c.stats.kills >= next_report then
      local t = c:tally(H.offsets_in_db(c.db))
      c:log("%d kills, %d runs, %d records, lost %d, doubled %d, violations %d, %.1f s", c.stats.kills,
        c.stats.runs, c.stats.produced, t.lost, t.doubled, #c.violations, (H.now_ms() - t0) / 1000)
      next_report = next_report + every
    end
  end
  local report = c:finish()
  report.seconds = (H.now_ms() - t0) / 1000
  return report, c
end

return Crash
