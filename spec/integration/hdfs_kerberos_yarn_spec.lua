-- The Hadoop mode on a Kerberized YARN ("yarn-krb" fixture: scripts/hadoop start-yarn on the Kerberized HDFS of the
-- "hadoop-krb" fixture, on the KDC of the "kdc" fixture) against the real broker: the driver takes one delegation
-- token with YARN's principal as its renewer, each map runs in a container of YARN's and authenticates with the
-- token of its container's token file (HADOOP_TOKEN_FILE_LOCATION), and the token is cancelled at the end. Every
-- record is read back with curl --negotiate; the token (taken from the credentials file the Hadoop client is given)
-- is looked for in the maps' input, the job's configuration, the containers' logs, kingest's log and work folder.
local H = require("support.harness")
local cjson = require("cjson")

local HADOOP_DIR = assert(os.getenv("KINGEST_HADOOP_KRB_DIR"), "KINGEST_HADOOP_KRB_DIR is not set")

-- scripts/hadoop of the secure HDFS, as its superuser; returns its stdout.
local function hadoop(args)
  local cmd = "KINGEST_HADOOP_DIR=" .. H.q(HADOOP_DIR) .. " " .. H.q(H.root .. "/scripts/hadoop")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  local code, out, err = H.sh(cmd)
  assert(code == 0, "scripts/hadoop " .. table.concat(args, " ") .. ": " .. err)
  return out
end

local function kdc(args)
  local cmd = H.q(H.root .. "/scripts/kdc")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  local code, out, err = H.sh(cmd)
  assert(code == 0, "scripts/kdc " .. table.concat(args, " ") .. ": " .. err)
  return H.trim(out)
end


describe("kingest's Hadoop mode on a Kerberized YARN", function()
  local http, krb5conf, realm, dir, keytab, wrapper
  local job = H.job_writer("KrbYarnJob")

  -- curl against the NameNode with SPNEGO as the first principal of KEYTAB_OF (no ticket cache on disk), or with
  -- no authentication at all when KEYTAB_OF is nil: the HTTP status and the body.
  local function curl(keytab_of, method, url)
    local out = os.tmpname()
    local auth = keytab_of and string.format("KRB5_CLIENT_KTNAME=%s KRB5CCNAME=MEMORY:spec ", H.q(keytab_of)) or ""
    local code, status, err = H.sh(string.format("KRB5_CONFIG=%s %scurl -s -L %s -X %s -o %s -w '%%{http_code}' %s",
      H.q(krb5conf), auth, keytab_of and "--negotiate -u :" or "", method, H.q(out), H.q(url)))
    local body = H.slurp(out) or ""
    os.remove(out)
    assert(code == 0, "curl " .. url .. ": " .. err)
    return tonumber(status), body
  end

  local function lines_under(path)
    local status, body = curl(keytab, "GET", http .. "/webhdfs/v1" .. path .. "?op=LISTSTATUS")
    assert.equals(200, status, body)
    local lines, owners = {}, {}
    for _, f in ipairs(cjson.decode(body).FileStatuses.FileStatus) do
      owners[f.owner] = true
      local s, text = curl(keytab, "GET", http .. "/webhdfs/v1" .. path .. "/" .. f.pathSuffix .. "?op=OPEN")
      assert.equals(200, s, text)
      for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    end
    return lines, owners
  end

  setup(function()
    krb5conf, realm = kdc({ "conf" }), kdc({ "realm" })
    http = H.trim(hadoop({ "url" }))
    local code, _, err = H.sh("KINGEST_HADOOP_DIR=" .. H.q(HADOOP_DIR) .. " " .. H.q(H.root .. "/scripts/hadoop")
      .. " yarn-status")
    assert(code == 0, "no YARN on the Kerberized HDFS: " .. err)
    dir = H.tmp .. "/" .. H.unique("krbyarn")
    os.execute("mkdir -p " .. H.q(dir))
    keytab = dir .. "/kingest.keytab"
    kdc({ "principal", "kingest", keytab })
    local super = HADOOP_DIR .. "/hdfs.keytab"
    assert.equals(200, (curl(super, "PUT", http .. "/webhdfs/v1/kingest?op=MKDIRS")))
    assert.equals(200, (curl(super, "PUT", http .. "/webhdfs/v1/kingest?op=SETOWNER&owner=kingest")))
    -- The Hadoop command of the job: scripts/hadoop, after keeping a copy of the credentials file it is given and
    -- of the maps' input (read with the Kerberos login the driver gives it), for the checks below.
    wrapper = dir .. "/hadoop"
    H.spit(wrapper, table.concat({
      "#!/bin/sh",
      "prev=",
      "for a; do",
      "  case $a in -Dmapreduce.job.credentials.binary=*) cp \"${a#*=}\" " .. H.q(dir .. "/tokens") .. ";; esac",
      "  [ \"$prev\" = -input ] && " .. H.q(H.root .. "/scripts/hadoop") .. " fs -cat \"$a\" >"
        .. H.q(dir .. "/input.txt"),
      "  prev=$a",
      "done",
      "exec " .. H.q(H.root .. "/scripts/hadoop") .. " \"$@\"",
      "",
    }, "\n"))
    os.execute("chmod 700 " .. H.q(wrapper))
  end)

  it("runs each map in a container with the job's delegation token, renewed by YARN, cancelled at the end, and "
    .. "shown nowhere", function()
    -- Two partitions, two maps.
    local lines, halves = {}, { {}, {} }
    for i = 1, 300 do
      lines[i] = string.format("yarn secured %03d", i)
      table.insert(halves[i % 2 + 1], lines[i])
    end
    local topic = H.unique("krbyarn")
    H.create_topic(topic, 2)
    H.produce(topic, halves[1], 0)
    H.produce(topic, halves[2], 1)
    local work = H.workdir("krbyarn")
    local root = "/kingest/" .. H.unique("yarn")
    local path = job(work, topic, {
      ["writer.fs.uri"] = (http:gsub("^http://", "webhdfs://")),
      ["task.data.root.dir"] = root .. "/task-data",
      ["data.publisher.final.dir"] = root .. "/out",
      ["hadoop.security.authentication"] = "kerberos",
      ["kerberos.principal"] = "kingest@" .. realm,
      ["kerberos.keytab"] = keytab,
      ["launcher.type"] = "MAPREDUCE",
      ["mr.job.root.dir"] = root .. "/mr",
      ["mr.job.max.mappers"] = 2,
      ["mr.hadoop.command"] = wrapper,
      ["mr.streaming.jar"] = H.trim(hadoop({ "streaming-jar" })),
      ["yarn.resourcemanager.principal"] = "yarn/localhost@" .. realm,
    })
    local code, out, err = H.kingest({ "run", path, "--log-level", "debug" }, { GOBBLIN_WORK_DIR = work,
      KRB5_CONFIG = krb5conf, KINGEST_HADOOP_DIR = HADOOP_DIR })
    assert.equals(0, code, err)
    local got, owners = lines_under(root .. "/out/" .. topic)
    assert.same(H.sorted(lines), H.sorted(got))
    assert.same({ kingest = true }, owners)
    assert.truthy(err:find("Took a delegation token of kingest@" .. realm .. " (renewer yarn)", 1, true), err)
    assert.truthy(err:find("Cancelled the Hadoop job's delegation token", 1, true), err)
    local app = err:match("Hadoop job: application (application_%d+_%d+)")
    assert.is_string(app, "the job did not go to YARN: " .. err)

    -- The one token the maps got, from the credentials file the Hadoop client was given.
    local c, listed, perr = H.sh("python3 " .. H.q(H.root .. "/spec/support/hadoop_tokens.py") .. " "
      .. H.q(dir .. "/tokens"))
    assert(c == 0, perr)
    local token, password = listed:match("^(%S+) (%x+)\n$")
    assert.is_string(token, listed)

    -- Each map ran in a container, with the token of its container's token file.
    local _, logs = H.sh("find " .. H.q(HADOOP_DIR .. "/yarn") .. " -path '*/" .. app .. "/container_*' -type f")
    local maps, texts = 0, {}
    for f in logs:gmatch("[^\n]+") do
      local text = H.slurp(f) or ""
      texts[#texts + 1] = { f, text }
      if text:find("Authenticating to HDFS with the job's delegation token", 1, true) then
        maps = maps + 1
        assert.truthy(text:find("(HADOOP_TOKEN_FILE_LOCATION)", 1, true), f .. ":\n" .. text)
      end
    end
    assert.equals(2, maps, logs)

    -- YARN's ResourceManager renewed it when the job was submitted (it renews what it is the renewer of).
    local rm_log = H.slurp(HADOOP_DIR .. "/yarn.log")
    assert.truthy(rm_log:find("Renewed delegation%-token= %[Kind: WEBHDFS delegation[^\n]*owner=kingest, "
      .. "renewer=yarn"), "no renewal in " .. HADOOP_DIR .. "/yarn.log")

    -- Cancelled: the NameNode no longer takes it.
    local status, body = curl(nil, "GET", http .. "/webhdfs/v1/?op=GETFILESTATUS&delegation=" .. token)
    assert.equals(403, status, body)
    assert.truthy(body:find("can't be found in cache", 1, true), body)

    -- Nowhere: the maps' input, the job's configuration (the job history's copy), the containers' logs, kingest's
    -- log and work folder.
    local input = assert(H.slurp(dir .. "/input.txt"))
    local confs = hadoop({ "fs", "-find", "/yarn/staging/history", "-name", "*_conf.xml" })
    local conf = nil
    for f in confs:gmatch("[^\n]+") do
      if f:find(app:gsub("^application_", "job_"), 1, true) then conf = hadoop({ "fs", "-cat", f }) end
    end
    assert.is_string(conf, "no configuration of the job in the job history: " .. confs)
    assert.truthy(conf:find("<name>kingest.job.credentials</name>", 1, true), conf)
    texts[#texts + 1] = { "the maps' input", input }
    texts[#texts + 1] = { "the job's configuration", conf }
    texts[#texts + 1] = { "kingest's log", out .. err }
    local _, files = H.sh("find " .. H.q(work) .. " -type f")
    for f in files:gmatch("[^\n]+") do texts[#texts + 1] = { f, H.slurp(f) or "" } end
    local kt = H.slurp(keytab)
    for _, t in ipairs(texts) do
      assert.falsy(t[2]:find(token, 1, true), t[1] .. " shows the delegation token")
      assert.falsy(t[2]:lower():find(password, 1, true), t[1] .. " shows the token's password")
      assert.falsy(t[2]:find(kt:sub(-16), 1, true), t[1] .. " holds key bytes of the keytab")
    end
  end)
end)
