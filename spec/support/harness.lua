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
  H.run_id = H.run_id or (tostring(os.time()) .. tostring(math.random(1000, 9999)))
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

-- Writes a Gobblin properties file with TEXT into DIR; returns its path.
function H.job_pull(dir, text, name)
  local path = dir .. "/" .. (name or "job.pull")
  spit(path, text)
  return path
end

-- Every file under DIR (recursively), sorted.
function H.files(dir)
  local _, out = H.sh("cd " .. H.q(dir) .. " 2>/dev/null && find . -type f | sort")
  local files = {}
  for line in out:gmatch("[^\n]+") do files[#files + 1] = line:gsub("^%./", "") end
  return files
end

-- The lines of every file under DIR, concatenated in file-name order.
function H.output_lines(dir)
  local lines = {}
  for _, f in ipairs(H.files(dir)) do
    for line in (slurp(dir .. "/" .. f) or ""):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  end
  return lines
end

-- Sorted copy of an array.
function H.sorted(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c
end

-- The payloads of TOPIC read by kcat (independent of kingest), one string per record.
function H.kcat_payloads(topic)
  local code, out, err = H.sh("kcat -C -b " .. H.q(H.bootstrap()) .. " -t " .. H.q(topic) .. " -e -q -f '%s\\n'")
  assert(code == 0, "kcat: " .. err)
  local lines = {}
  for line in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  return lines
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

-- The stored next offsets of JOB under WORK: { ["topic:partition"] = offset }.
function H.stored_offsets(work, job)
  local db = work .. "/state-store/" .. job .. ".db"
  local offsets = {}
  if not io.open(db) then return offsets end
  for _, row in ipairs(H.sqlite(db, "SELECT topic, partition, next_offset FROM partition_state")) do
    offsets[row[1] .. ":" .. row[2]] = tonumber(row[3])
  end
  return offsets
end

-- A snapshot of a folder tree: { [relative path] = content }, to check that a failed run changed nothing.
function H.snapshot(dir)
  local snap = {}
  for _, f in ipairs(H.files(dir)) do snap[f] = slurp(dir .. "/" .. f) end
  return snap
end

return H
