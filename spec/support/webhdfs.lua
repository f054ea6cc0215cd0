-- spec.support.webhdfs: the HDFS of scripts/hadoop as the specs see it, independently of kingest: its commands
-- (scripts/hadoop, FsShell among them), and WebHDFS through curl, which is fast enough to read many files (one
-- FsShell call starts a JVM, over a second: a spec reads with FsShell once per test, with curl otherwise).
--
--   local W = require("support.webhdfs")
--   W.uri()                      -- "webhdfs://127.0.0.1:PORT", for writer.fs.uri
--   W.list("/some/dir")          -- { ["sub/part.x.txt"] = size, ... }, every file under it (none when missing)
--   W.read("/some/dir/file")     -- the file's bytes (curl OPEN, following the redirect to the DataNode)
local H = require("support.harness")
local cjson = require("cjson")

local W = {}

local trim = H.trim

-- Runs scripts/hadoop ARGS...; returns status, stdout, stderr.
W.hadoop = H.hadoop

-- Like W.hadoop, but errors unless it succeeded; returns stdout.
function W.hadoop_ok(args)
  local code, out, err = W.hadoop(args)
  assert(code == 0, "scripts/hadoop " .. table.concat(args, " ") .. " exited " .. tostring(code) .. ":\n" .. err)
  return out
end

-- The user WebHDFS requests are made as: the current one, who runs the NameNode and is its superuser.
W.user = (function()
  local _, out = H.sh("id -un")
  return trim(out)
end)()

-- The WebHDFS base URL, http://127.0.0.1:PORT (asked of scripts/hadoop once).
function W.url()
  if not W._url then
    local code, out, err = W.hadoop({ "url" })
    assert(code == 0, "no HDFS: " .. err)
    W._url = trim(out)
  end
  return W._url
end

-- kingest's file system URI for it; with USER, webhdfs://USER@HOST:PORT.
function W.uri(user)
  return (W.url():gsub("^http://", "webhdfs://" .. (user and (user .. "@") or "")))
end

-- The base URL of a webhdfs:// URI (http://HOST:PORT).
function W.http_of(uri)
  return (uri:gsub("^webhdfs://[^@/]*@", "http://"):gsub("^webhdfs://", "http://"))
end

local function escape_path(path)
  return (path:gsub("[^%w%-%._~/]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- The URL of OP on PATH at BASE (default W.url()).
local function op_url(path, op, base, extra)
  return string.format("%s/webhdfs/v1%s?op=%s&user.name=%s%s", base or W.url(), escape_path(path), op, W.user,
    extra or "")
end

-- A GET of URL with curl (following redirects); returns the HTTP status and the body. A server error or a
-- failed connection is tried again for up to 15 s: a NameNode or DataNode that a spec has just restarted answers
-- 5xx (an EOFException from a DataNode not yet registered again) for a moment, and that is not what is tested.
local function get(url)
  local deadline = H.now_ms() + 15000
  while true do
    local out = os.tmpname()
    local code, status, err = H.sh("curl -s -L -m 30 -o " .. H.q(out) .. " -w '%{http_code}' " .. H.q(url))
    local body = H.slurp(out) or ""
    os.remove(out)
    status = tonumber(status)
    if (code == 0 and status and status < 500) or H.now_ms() >= deadline then
      assert(code == 0, "curl " .. url .. ": " .. err)
      return status, body
    end
    H.sleep(0.5)
  end
end

-- The entries of folder PATH: { { name =, type = "FILE"|"DIRECTORY", length = } }, nil when it does not exist.
function W.ls(path, base)
  local status, body = get(op_url(path, "LISTSTATUS", base))
  if status == 404 then return nil end
  assert(status == 200, "LISTSTATUS " .. path .. ": HTTP " .. tostring(status) .. ": " .. body:sub(1, 300))
  local entries = {}
  for _, st in ipairs(cjson.decode(body).FileStatuses.FileStatus) do
    entries[#entries + 1] = { name = st.pathSuffix, type = st.type, length = st.length, permission = st.permission }
  end
  return entries
end

-- Every file under folder DIR, recursively: { ["relative/path"] = size } ({} when DIR does not exist).
function W.list(dir, base)
  local files = {}
  local function walk(path, rel)
    for _, e in ipairs(W.ls(path, base) or {}) do
      local r = rel == "" and e.name or (rel .. "/" .. e.name)
      if e.type == "DIRECTORY" then walk(path .. "/" .. e.name, r) else files[r] = e.length end
    end
  end
  walk(dir, "")
  return files
end

-- The sorted relative paths of W.list(DIR).
function W.paths(dir, base)
  local paths = {}
  for p in pairs(W.list(dir, base)) do paths[#paths + 1] = p end
  table.sort(paths)
  return paths
end

-- The bytes of file PATH (OPEN); errors when it cannot be read.
function W.read(path, base)
  local status, body = get(op_url(path, "OPEN", base))
  assert(status == 200, "OPEN " .. path .. ": HTTP " .. tostring(status) .. ": " .. body:sub(1, 300))
  return body
end

-- Whether PATH (a file or a folder) exists.
function W.exists(path, base)
  local status, body = get(op_url(path, "GETFILESTATUS", base))
  assert(status == 200 or status == 404, "GETFILESTATUS " .. path .. ": HTTP " .. tostring(status) .. ": " ..
    body:sub(1, 300))
  return status == 200
end

-- The lines of every file under DIR, in path order, read with curl OPEN; and the sorted paths. Errors, naming the
-- file, when one ends in a torn line (bytes after its last newline).
function W.lines(dir, base)
  local lines, paths = {}, W.paths(dir, base)
  for _, p in ipairs(paths) do
    local text = W.read(dir .. "/" .. p, base)
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    local tail = H.torn_tail(text)
    assert(not tail, string.format("%s/%s ends in a torn line of %d bytes: %q", dir, p, #(tail or ""), tail or ""))
  end
  return lines, paths
end

-- The shell command (curl, no JVM) that sets the permission of PATH to PERMISSION (octal, "555") as the superuser,
-- and fails when HDFS refuses.
function W.chmod_command(path, permission)
  return "curl -s -f -o /dev/null -X PUT " .. H.q(op_url(path, "SETPERMISSION", nil, "&permission=" .. permission))
end

-- Sets the permission of PATH (W.chmod_command); errors when HDFS refuses.
function W.chmod(path, permission)
  local code, _, err = H.sh(W.chmod_command(path, permission))
  assert(code == 0, "SETPERMISSION " .. path .. " " .. permission .. ": " .. err)
end

-- mkdir -p PATH on HDFS as the superuser (curl MKDIRS); errors when HDFS refuses.
function W.mkdirs(path)
  local code, out, err = H.sh("curl -s -f -X PUT " .. H.q(op_url(path, "MKDIRS")))
  assert(code == 0 and out:find('"boolean":true', 1, true), "MKDIRS " .. path .. ": " .. out .. err)
end

-- Writes TEXT to PATH, a new file, as the superuser, in WebHDFS's two steps (CREATE names a DataNode, the bytes go
-- there); errors when HDFS refuses (a file that exists included).
function W.create(path, text)
  local code, out, err = H.sh("curl -s -f -X PUT " ..
    H.q(op_url(path, "CREATE", nil, "&noredirect=true&overwrite=false")))
  local location = code == 0 and out:match('"Location":"([^"]+)"')
  assert(location, "CREATE " .. path .. ": " .. out .. err)
  local body = os.tmpname()
  H.spit(body, text)
  code, out, err = H.sh("curl -s -f -X PUT -T " .. H.q(body) .. " " .. H.q(location))
  os.remove(body)
  assert(code == 0, "CREATE " .. path .. " at the DataNode: " .. out .. err)
end

-- Sets the space quota of folder PATH to BYTES, or removes it when BYTES is nil, as the superuser: curl SETQUOTA,
-- the NameNode call that `scripts/hadoop quota` and `clearquota` make through DFSAdmin (-1 removes it; the
-- namespace quota is left as it is). Errors when HDFS refuses.
function W.space_quota(path, bytes)
  local code, out, err = H.sh("curl -s -f -X PUT " ..
    H.q(op_url(path, "SETQUOTA", nil, "&storagespacequota=" .. tostring(bytes or -1))))
  assert(code == 0, "SETQUOTA " .. path .. " " .. tostring(bytes) .. ": " .. out .. err)
end

-- Whether the NameNode is in safe mode (or does not answer), from its JMX servlet as scripts/hadoop reads it: no
-- JVM, unlike `scripts/hadoop safemode get`.
function W.in_safe_mode()
  local jmx = W.url() .. "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
  local code, out = H.sh("curl -s -f -m 5 " .. H.q(jmx))
  return code ~= 0 or not out:find('"FSState" *: *"Operational"')
end

-- The text of the files at PATHS (absolute), one after the other, as Hadoop's FsShell reads them: one `fs -text`,
-- which decompresses what Hadoop's codecs know (.gz). Slow (a JVM), but Hadoop's own reader.
function W.fs_text(paths)
  local args = { "fs", "-text" }
  for _, f in ipairs(paths) do args[#args + 1] = f end
  return W.hadoop_ok(args)
end

-- The lines of every file under DIR as Hadoop's FsShell reads them: the files listed through WebHDFS (curl
-- LISTSTATUS), then read by one `fs -text` of them all (W.fs_text: one JVM). Returns the lines and the sorted
-- absolute paths; errors on a torn last line.
function W.fs_lines(dir)
  local files = {}
  for _, p in ipairs(W.paths(dir)) do files[#files + 1] = dir .. "/" .. p end
  local lines = {}
  if #files > 0 then
    local text = W.fs_text(files)
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    -- One output for all files: a torn last line of any but the last runs into the next file's first (a line no
    -- record has); the last's is left after the last newline.
    local tail = H.torn_tail(text)
    assert(not tail, string.format("the last of the files under %s ends in a torn line: %q", dir, tail or ""))
  end
  return lines, files
end

return W
