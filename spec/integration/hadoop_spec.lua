-- The HDFS of the tests (scripts/hadoop, started by the "hadoop" fixture): its commands, WebHDFS as curl sees
-- it, files written over WebHDFS read back by Hadoop's own FsShell, safe mode, space quotas, and a NameNode
-- killed and started again. Checked with curl and FsShell, not with kingest.
local H = require("support.harness")
local W = require("support.webhdfs")

local hadoop = H.hadoop

local trim = H.trim

local user = (function()
  local _, out = H.sh("id -un")
  return trim(out)
end)()

describe("scripts/hadoop", function()
  local url, dir

  -- A WebHDFS request: METHOD on PATH with the query QUERY (user.name added), or on TARGET (a DataNode's
  -- Location) when given, uploading BODY_FILE when given; returns the HTTP status and the body.
  local function webhdfs(method, path, query, target, body_file)
    local u = target or (url .. "/webhdfs/v1" .. path .. "?" .. query .. "&user.name=" .. user)
    local cmd = "curl -s -m 20 -X " .. method .. " -w '\\n%{http_code}' " ..
      (body_file and ("-T " .. H.q(body_file) .. " ") or "") .. H.q(u)
    local code, out, err = H.sh(cmd)
    assert(code == 0, "curl: " .. err)
    local body, status = out:match("^(.-)\n?(%d+)$")
    return tonumber(status), body
  end

  -- CREATE in two steps, as a client that streams its body must: the NameNode names a DataNode (noredirect=true
  -- answers 200 with the Location in JSON instead of a 307), and the bytes go there. Returns the second
  -- step's status and body.
  local function create(path, text)
    local status, body = webhdfs("PUT", path, "op=CREATE&noredirect=true&overwrite=false")
    assert.equals(200, status, body)
    local location = body:match('"Location":"([^"]+)"')
    assert.is_string(location, body)
    local file = H.tmp .. "/" .. H.unique("hdfs_body")
    H.spit(file, text)
    local s, b = webhdfs("PUT", nil, nil, location, file)
    os.remove(file)
    return s, b
  end

  setup(function()
    local code, out, err = hadoop({ "url" })
    assert(code == 0, "no HDFS: " .. err)
    url = trim(out)
    dir = "/" .. H.unique("hadoop_spec")
    assert.equals(200, (webhdfs("PUT", dir, "op=MKDIRS")))
  end)

  it("reports the running HDFS, bound to loopback, and a second start reuses it", function()
    assert.matches("^http://127%.0%.0%.1:%d+$", url)
    local code, out = hadoop({ "status" })
    assert.equals(0, code)
    assert.matches("^running " .. url:gsub("%p", "%%%0") .. " namenode %d+ datanode %d+\n$", out)
    local start_code, start_out = hadoop({ "start" })
    assert.equals(0, start_code)
    assert.equals(url .. "\n", start_out)
    local _, again = hadoop({ "status" })
    assert.equals(out, again)
  end)

  it("has --help on every command and refuses unknown ones", function()
    for _, cmd in ipairs({ "start", "stop", "status", "url", "stop-namenode", "start-namenode", "safemode", "quota",
      "clearquota", "fs" }) do
      local code, out = hadoop({ cmd, "--help" })
      assert.equals(0, code)
      assert.matches("^usage: scripts/hadoop " .. cmd:gsub("%-", "%%-"), out)
    end
    local code, out = hadoop({ "--help" })
    assert.equals(0, code)
    assert.matches("stop%-namenode", out)
    local bad, _, err = hadoop({ "restart" })
    assert.equals(2, bad)
    assert.matches("unknown command 'restart'", err)
    bad, _, err = hadoop({ "safemode", "sideways" })
    assert.equals(2, bad)
    assert.matches("usage: scripts/hadoop safemode enter|leave|get", err, 1, true)
  end)

  it("answers WebHDFS on the URL, as the current user", function()
    local status, body = webhdfs("GET", "/", "op=LISTSTATUS")
    assert.equals(200, status)
    assert.matches('"pathSuffix":"' .. dir:sub(2) .. '"', body, 1, true)
    status, body = webhdfs("GET", dir, "op=GETFILESTATUS")
    assert.equals(200, status)
    assert.matches('"owner":"' .. user .. '"', body, 1, true)
    assert.matches('"type":"DIRECTORY"', body, 1, true)
  end)

  it("serves a file written over WebHDFS to FsShell, and CREATE never overwrites it", function()
    local path = dir .. "/hello.txt"
    local status, body = create(path, "hello\nhdfs\n")
    assert.equals(201, status, body)
    local code, out, err = hadoop({ "fs", "-cat", path })
    assert(code == 0, err)
    assert.equals("hello\nhdfs\n", out)
    status, body = create(path, "again\n")
    assert.equals(403, status)
    assert.matches("FileAlreadyExistsException", body, 1, true)
    assert.equals("hello\nhdfs\n", W.read(path))
  end)

  it("refuses writes in safe mode and takes them again when it is left", function()
    local code, out, err = hadoop({ "safemode", "enter" })
    assert(code == 0, err)
    assert.matches("Safe mode is ON", out)
    local status, body = webhdfs("PUT", dir .. "/in_safe_mode", "op=MKDIRS")
    -- Leave before asserting, so a failure here does not leave HDFS read-only for the next tests.
    local left, _, left_err = hadoop({ "safemode", "leave" })
    assert(left == 0, left_err)
    assert.equals(403, status)
    assert.matches("Name node is in safe mode", body, 1, true)
    status, body = create(dir .. "/after_safe_mode.txt", "x\n")
    assert.equals(201, status, body)
    code = hadoop({ "status" })
    assert.equals(0, code)
  end)

  it("makes a write fail under a space quota, and clears it", function()
    local quota_dir = dir .. "/quota"
    assert.equals(200, (webhdfs("PUT", quota_dir, "op=MKDIRS")))
    local code, _, err = hadoop({ "quota", quota_dir, "1000" })
    assert(code == 0, err)
    local status, body = create(quota_dir .. "/a.txt", "over the quota\n")
    assert.equals(403, status)
    assert.matches("The DiskSpace quota of " .. quota_dir .. " is exceeded", body, 1, true)
    code, _, err = hadoop({ "clearquota", quota_dir })
    assert(code == 0, err)
    status, body = create(quota_dir .. "/b.txt", "no quota\n")
    assert.equals(201, status, body)
    code = hadoop({ "quota", quota_dir, "many" })
    assert.equals(1, code)
  end)

  it("keeps the data when the NameNode is killed and started again", function()
    local path = dir .. "/survivor.txt"
    local status, body = create(path, "still here\n")
    assert.equals(201, status, body)
    local _, before = hadoop({ "status" })
    local code, _, err = hadoop({ "stop-namenode" })
    assert(code == 0, err)
    code = hadoop({ "status" })
    assert.equals(1, code)
    local down = H.sh("curl -sf -m 2 " .. H.q(url .. "/webhdfs/v1/?op=LISTSTATUS&user.name=" .. user))
    assert.are_not.equal(0, down)
    local out
    code, out, err = hadoop({ "start-namenode" })
    assert(code == 0, err)
    assert.equals(url .. "\n", out)
    local _, after = hadoop({ "status" })
    assert.equals(before:match("datanode %d+"), after:match("datanode %d+"))
    code, out, err = hadoop({ "fs", "-cat", path })
    assert(code == 0, err)
    assert.equals("still here\n", out)
  end)
end)
