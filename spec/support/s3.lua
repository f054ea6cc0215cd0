-- The specs' view of the S3 server of scripts/s3 (KINGEST_S3_DIR): its endpoint and keys for a job, buckets, and
-- what is in them as boto3 (spec/support/s3_tool.py) reads it, never kingest.
local H = require("support.harness")
local json = require("cjson")

local S = {}

local state = os.getenv("KINGEST_S3_DIR") or (H.root .. "/.s3")
local tool = H.root .. "/spec/support/s3_tool.py"

local function read_in(dir, name) return H.trim(assert(H.slurp(dir .. "/" .. name), "no " .. name .. " in " .. dir)) end
local function read(name) return read_in(state, name) end

function S.endpoint() return read("url") end
function S.access_key() return read("access-key") end
function S.secret_key() return read("secret-key") end

-- Runs s3_tool.py ARGS (with ENV added); asserts that it succeeded; returns its stdout.
function S.tool(args, env, stdin)
  local parts = { "env" }
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. H.q(v) end
  parts[#parts + 1] = "python3 " .. H.q(tool)
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  local cmd = table.concat(parts, " ")
  if stdin then cmd = cmd .. " <" .. H.q(stdin) end
  local code, out, err = H.sh(cmd)
  require("luassert").are.equal(0, code, "s3_tool.py " .. table.concat(args, " ") .. ": " .. err)
  return out
end

-- A new bucket of a unique name.
function S.bucket(name, env)
  local b = H.unique(name or "b"):lower():gsub("_", "-")
  S.tool({ "mkbucket", b }, env)
  return b
end

-- The objects under PREFIX of BUCKET: a list of { key, size, etag }, sorted by key.
function S.objects(bucket, prefix, env)
  local list = {}
  for line in S.tool({ "objects", bucket, prefix or "" }, env):gmatch("[^\n]+") do list[#list + 1] = json.decode(line) end
  table.sort(list, function(a, b) return a.key < b.key end)
  return list
end

-- The bytes of object KEY.
function S.get(bucket, key, env) return S.tool({ "get", bucket, key }, env) end

-- The lines of every object under PREFIX, in key order, and the objects.
function S.lines(bucket, prefix, env)
  local lines, objects = {}, S.objects(bucket, prefix, env)
  for _, o in ipairs(objects) do
    for l in S.get(bucket, o.key, env):gmatch("[^\n]+") do lines[#lines + 1] = l end
  end
  return lines, objects
end

-- The records of every object under PREFIX (text lines, gzip undone, or Avro records as tables), all in one list,
-- and a table of key to its records.
function S.records(bucket, prefix, env)
  local all, by_key = {}, {}
  for line in S.tool({ "records", bucket, prefix or "" }, env):gmatch("[^\n]+") do
    local o = json.decode(line)
    by_key[o.key] = o.records
    for _, r in ipairs(o.records) do all[#all + 1] = r end
  end
  return all, by_key
end

-- The unfinished multipart uploads under PREFIX: a list of { key, id }.
function S.uploads(bucket, prefix, env)
  local list = {}
  for line in S.tool({ "uploads", bucket, prefix or "" }, env):gmatch("[^\n]+") do list[#list + 1] = json.decode(line) end
  return list
end

-- The properties of a job whose final folder is FOLDER in BUCKET on the test server, or on SERVER (a table of url,
-- access_key and secret_key: S.own_server's, S.moto's), with local task data.
function S.props(bucket, folder, extra, server)
  local p = {
    ["data.publisher.fs.uri"] = "s3a://" .. bucket,
    ["data.publisher.final.dir"] = folder,
    ["fs.s3a.endpoint"] = server and server.url or S.endpoint(),
    ["fs.s3a.path.style.access"] = "true",
    ["fs.s3a.access.key"] = server and server.access_key or S.access_key(),
    ["fs.s3a.secret.key"] = server and server.secret_key or S.secret_key(),
    ["fs.s3a.retry.interval"] = "100ms",
  }
  for k, v in pairs(extra or {}) do
    if v == H.UNSET then p[k] = nil else p[k] = v end
  end
  return p
end

-- A second s3proxy of scripts/s3 in a state folder of its own under the specs' temporary folder (the jars are the
-- test server's), for a case that kills its server: { dir, env (for S.tool and the others' ENV), url, access_key,
-- secret_key, start(), kill() (SIGKILL), stop() }. Started.
function S.own_server(name)
  local dir = H.tmp .. "/" .. H.unique(name or "s3")
  os.execute("mkdir -p " .. H.q(dir) .. " && ln -s " .. H.q(state .. "/jars") .. " " .. H.q(dir .. "/jars"))
  local script = H.q(H.root .. "/scripts/s3")
  local env = { KINGEST_S3_DIR = dir }
  local server = { dir = dir, env = env }
  local function sh(cmd)
    local code, _, err = H.sh("KINGEST_S3_DIR=" .. H.q(dir) .. " " .. cmd)
    require("luassert").are.equal(0, code, cmd .. ": " .. err)
  end
  function server.start()
    sh(script .. " start")
    server.url = read_in(dir, "url")
    server.access_key, server.secret_key = read_in(dir, "access-key"), read_in(dir, "secret-key")
  end
  function server.kill() sh("kill -9 $(cat " .. H.q(dir .. "/s3proxy.pid") .. ")") end
  function server.stop() sh(script .. " stop") end
  server.start()
  return server
end

-- A moto server (PyPI moto[server], an S3 of its own in Python: a second implementation to check against; it
-- takes any keys) on a free loopback port, logging to LOG: { url, access_key, secret_key, env (S3_ENDPOINT and the
-- keys, for S.tool and the others' ENV), stop() }. Started and answering.
function S.moto(log)
  local port = S.free_port()
  local _, pid = H.sh("python3 -m moto.server -p " .. port .. " >" .. H.q(log) .. " 2>&1 & echo $!")
  pid = tonumber(pid:match("%d+"))
  local url = "http://127.0.0.1:" .. port
  local server = { url = url, access_key = "AKIAKINGESTMOTO", secret_key = "moto-takes-any-secret" }
  server.env = { S3_ENDPOINT = url, AWS_ACCESS_KEY_ID = server.access_key, AWS_SECRET_ACCESS_KEY = server.secret_key }
  function server.stop() os.execute("kill " .. pid .. " 2>/dev/null") end
  local up = H.wait_until(function() return (H.sh("curl -sf -o /dev/null " .. H.q(url .. "/"))) == 0 end, 30)
  if not up then server.stop() end
  require("luassert").truthy(up, "moto did not answer at " .. url .. ": " .. (H.slurp(log) or ""))
  return server
end

-- A write refused under If-None-Match: * : the job (O.job, a job writer for the job O.job_name) runs through the
-- fault proxy, which lets another client write the key of kingest's first write under O.folder of O.bucket just
-- before handing that write on (a PutObject, or with O.extra's fs.s3a.multipart.threshold the
-- CompleteMultipartUpload of a file in parts); the topic O.name holds O.lines. Asserts that the run fails naming the
-- key and the refusal, that the other object stays and that no offset is stored; returns the job's properties
-- (straight to the server again), the key, the topic and the work folder. O.server: S.moto's or S.own_server's
-- (default the test server).
function S.refused(o)
  local luassert = require("luassert")
  local server = o.server or { url = S.endpoint(), access_key = S.access_key(), secret_key = S.secret_key() }
  local env = o.server and o.server.env
  local topic = H.topic_with(o.name, o.lines)
  local work = H.workdir(o.name)
  local theirs = work .. "/theirs.txt"
  H.spit(theirs, "someone else's\n")
  local put = string.format("S3_ENDPOINT=%s AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s python3 %s put "
    .. "\"$FAULT_BUCKET\" \"$FAULT_KEY\" <%s", H.q(server.url), H.q(server.access_key), H.q(server.secret_key),
    H.q(tool), H.q(theirs))
  local multipart = o.extra and o.extra["fs.s3a.multipart.threshold"]
  local method, match = multipart and "POST" or "PUT", multipart and "?uploadId=" or ("/" .. o.bucket .. o.folder .. "/")
  local endpoint, proxy_log, stop = S.proxy(work, { "--method", method, "--match", match, "--nth", "1", "--before",
    "--then", put }, server.url)
  local p = S.props(o.bucket, o.folder, o.extra, o.server)
  p["fs.s3a.endpoint"] = endpoint
  local ok, err = pcall(function()
    local last = H.run_fails(o.job(work, topic, p), work, 1, { "S3 bucket " .. o.bucket .. " key " .. o.folder:sub(2)
      .. "/" .. topic .. "/part.task_" .. o.job_name .. "_", "an object is there already", "If-None-Match: *",
      "never overwritten" })
    luassert.truthy(proxy_log():find("fault: ran the command before handing on " .. method, 1, true), proxy_log())
    return last
  end)
  stop()
  if not ok then error(err, 0) end
  local key = err:match("key (%S+): ")
  luassert.equals("someone else's\n", S.get(o.bucket, key, env))
  luassert.is_nil(H.stored_offsets(work, o.job_name)[topic .. ":0"])
  p["fs.s3a.endpoint"] = server.url
  return p, key, topic, work
end

-- A free loopback port.
function S.free_port()
  local _, out = H.sh("python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])'")
  return tonumber(H.trim(out))
end

-- Starts spec/support/s3_fault_proxy.py in front of the server at URL (default the test server), with ARGS (a list:
-- --method, --match, --nth or --first, --then...), logging to WORK/proxy.log. Returns the proxy's URL (for
-- fs.s3a.endpoint), a function returning its log, and a function that stops it.
function S.proxy(work, args, url)
  local port, target = S.free_port(), (url or S.endpoint()):match(":(%d+)$")
  local log = work .. "/proxy.log"
  local cmd = { "python3", H.q(H.root .. "/spec/support/s3_fault_proxy.py"), port, target }
  for _, a in ipairs(args) do cmd[#cmd + 1] = H.q(a) end
  local _, pid = H.sh(table.concat(cmd, " ") .. " >" .. H.q(log) .. " 2>&1 & echo $!")
  pid = tonumber(pid:match("%d+"))
  local function text() return H.slurp(log) or "" end
  require("luassert").truthy(H.wait_until(function() return text():find("s3_fault_proxy:", 1, true) end, 10), text())
  return "http://127.0.0.1:" .. port, text, function() os.execute("kill " .. pid .. " 2>/dev/null") end
end

return S
