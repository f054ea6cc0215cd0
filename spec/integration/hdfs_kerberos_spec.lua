-- kingest on a Kerberized HDFS ("hadoop-krb" fixture: scripts/hadoop start --secure on the KDC of scripts/kdc,
-- "kdc" fixture) against the real broker: with hadoop.security.authentication=kerberos and a keytab, every record
-- is published once as the keytab's principal (read back with curl --negotiate, independently of kingest, and the
-- files' owner asked of the NameNode); a keytab of another principal, a missing keytab and simple authentication
-- fail before anything is written, naming what is wrong; swebhdfs:// speaks TLS with webhdfs.ssl.ca.location and
-- refuses a NameNode whose certificate another CA signed. No delegation token the NameNode hands out appears in
-- anything kingest prints or writes.
local H = require("support.harness")
local cjson = require("cjson")

local HADOOP_DIR = assert(os.getenv("KINGEST_HADOOP_KRB_DIR"), "KINGEST_HADOOP_KRB_DIR is not set")
local KDC_DIR = assert(os.getenv("KINGEST_KDC_DIR"), "KINGEST_KDC_DIR is not set")

-- scripts/hadoop of the secure HDFS; returns its stdout, trimmed.
local function hadoop(args)
  local cmd = "KINGEST_HADOOP_DIR=" .. H.q(HADOOP_DIR) .. " " .. H.q(H.root .. "/scripts/hadoop")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  local code, out, err = H.sh(cmd)
  assert(code == 0, "scripts/hadoop " .. table.concat(args, " ") .. ": " .. err)
  return H.trim(out)
end

local function kdc(args)
  local cmd = H.q(H.root .. "/scripts/kdc")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  local code, out, err = H.sh(cmd)
  assert(code == 0, "scripts/kdc " .. table.concat(args, " ") .. ": " .. err)
  return H.trim(out)
end

describe("kingest on a Kerberized HDFS", function()
  local http, https, krb5conf, realm, dir, keytab, other_keytab, ca, other_ca
  local job = H.job_writer("KrbJob")

  -- curl against the NameNode with SPNEGO as the first principal of KEYTAB (its own ticket cache in memory): the
  -- HTTP status and the body. EXTRA: more curl options.
  local function negotiate(keytab_of, method, url, extra)
    local out = os.tmpname()
    local code, status, err = H.sh(string.format(
      "KRB5_CONFIG=%s KRB5_CLIENT_KTNAME=%s KRB5CCNAME=MEMORY:spec curl -s -L --negotiate -u : -X %s %s -o %s "
        .. "-w '%%{http_code}' %s", H.q(krb5conf), H.q(keytab_of), method, extra or "", H.q(out), H.q(url)))
    local body = H.slurp(out) or ""
    os.remove(out)
    assert(code == 0, "curl " .. url .. ": " .. err)
    return tonumber(status), body
  end

  local function status_of(path)
    local status, body = negotiate(keytab, "GET", http .. "/webhdfs/v1" .. path .. "?op=GETFILESTATUS")
    return status, status == 200 and cjson.decode(body).FileStatus or nil
  end

  -- The lines of every file under DIR_ on HDFS, read with curl as kingest's principal; and the files' owners.
  local function lines_under(path)
    local status, body = negotiate(keytab, "GET", http .. "/webhdfs/v1" .. path .. "?op=LISTSTATUS")
    assert.equals(200, status, body)
    local lines, owners = {}, {}
    for _, f in ipairs(cjson.decode(body).FileStatuses.FileStatus) do
      owners[f.owner] = true
      local s, text = negotiate(keytab, "GET", http .. "/webhdfs/v1" .. path .. "/" .. f.pathSuffix .. "?op=OPEN")
      assert.equals(200, s, text)
      for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    end
    return lines, owners
  end

  setup(function()
    krb5conf, realm = kdc({ "conf" }), kdc({ "realm" })
    http, https = hadoop({ "url" }), hadoop({ "https-url" })
    ca = HADOOP_DIR .. "/tls/ca.pem"
    dir = H.tmp .. "/" .. H.unique("krb")
    os.execute("mkdir -p " .. H.q(dir))
    keytab, other_keytab = dir .. "/kingest.keytab", dir .. "/other.keytab"
    kdc({ "principal", "kingest", keytab })
    kdc({ "principal", "intruder", other_keytab })
    -- A CA that signed nothing of the HDFS's.
    local code, _, err = H.sh("cd " .. H.q(dir) .. " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
      .. "-subj '/CN=another CA' -keyout other-ca.key -out other-ca.pem")
    assert(code == 0, err)
    other_ca = dir .. "/other-ca.pem"
    -- kingest's folder, made by the superuser (the daemons' keytab's first principal, hdfs/localhost).
    local super = HADOOP_DIR .. "/hdfs.keytab"
    assert.equals(200, (negotiate(super, "PUT", http .. "/webhdfs/v1/kingest?op=MKDIRS")))
    assert.equals(200, (negotiate(super, "PUT", http .. "/webhdfs/v1/kingest?op=SETOWNER&owner=kingest")))
    -- Where Hadoop's job client stages a job, as on every cluster.
    assert.equals(200, (negotiate(super, "PUT", http .. "/webhdfs/v1/tmp?op=MKDIRS&permission=1777")))
  end)

  local function krb_job(work, topic, root, extra)
    local props = {
      ["writer.fs.uri"] = (http:gsub("^http://", "webhdfs://")),
      ["task.data.root.dir"] = root .. "/task-data",
      ["data.publisher.final.dir"] = root .. "/out",
      ["hadoop.security.authentication"] = "kerberos",
      ["kerberos.principal"] = "kingest@" .. realm,
      ["kerberos.keytab"] = keytab,
    }
    for k, v in pairs(extra or {}) do props[k] = v end
    return job(work, topic, props)
  end

  local env = function() return { KRB5_CONFIG = krb5conf } end

  -- Asserts that no delegation token (a Hadoop token's URL-safe form starts with its identifier's length, then the
  -- owner) appears in TEXT, nor the keytab's bytes.
  local function assert_no_secret(text, what)
    for value in text:gmatch("delegation=([%w%-_]+)") do
      assert.equals("***", value, what .. " shows a delegation token")
    end
    assert.falsy(text:find("\"urlString\"", 1, true), what .. " shows a token")
    local kt = H.slurp(keytab)
    assert.falsy(text:find(kt:sub(-16), 1, true), what .. " holds key bytes of the keytab")
  end

  it("publishes every record once as the keytab's principal, and prints or writes no token", function()
    local lines = {}
    for i = 1, 500 do lines[i] = "secured record " .. i end
    local topic = H.topic_with("krb_out", lines)
    local work = H.workdir("krb_out")
    local root = "/kingest/" .. H.unique("run")
    local path = krb_job(work, topic, root)
    local code, out, err = H.kingest({ "run", path, "--log-level", "debug" }, { GOBBLIN_WORK_DIR = work,
      KRB5_CONFIG = krb5conf })
    assert.equals(0, code, err)
    local got, owners = lines_under(root .. "/out/" .. topic)
    assert.same(H.sorted(lines), H.sorted(got))
    assert.same({ kingest = true }, owners)
    assert.equals(500, H.stored_offsets(work, "KrbJob")[topic .. ":0"])
    assert_no_secret(out .. err, "the log")
    local _, files = H.sh("find " .. H.q(work) .. " -type f")
    for f in files:gmatch("[^\n]+") do assert_no_secret(H.slurp(f) or "", f) end
  end)

  it("refuses a keytab of another principal and a missing keytab before anything is written", function()
    local topic = H.topic_with("krb_bad", { "a", "b" })
    local work = H.workdir("krb_bad")
    local root = "/kingest/" .. H.unique("bad")
    local principal = "kingest@" .. realm
    H.run_fails(krb_job(work, topic, root, { ["kerberos.keytab"] = other_keytab }), work, 78,
      { "kerberos.keytab=" .. other_keytab, "has no keys of kerberos.principal=" .. principal,
        "intruder@" .. realm }, env())
    H.run_fails(krb_job(work, topic, root, { ["kerberos.keytab"] = dir .. "/none.keytab" }), work, 78,
      { "kerberos.keytab=" .. dir .. "/none.keytab", principal, "No such file or directory" }, env())
    assert.equals(404, (status_of(root)))
    assert.is_nil(H.stored_offsets(work, "KrbJob")[topic .. ":0"])
  end)

  it("fails with simple authentication against the Kerberized NameNode, writing nothing as anyone", function()
    local topic = H.topic_with("krb_simple", { "a", "b" })
    local work = H.workdir("krb_simple")
    local root = "/kingest/" .. H.unique("simple")
    local path = job(work, topic, {
      ["writer.fs.uri"] = (http:gsub("^http://", "webhdfs://kingest@")),
      ["task.data.root.dir"] = root .. "/task-data",
      ["data.publisher.final.dir"] = root .. "/out",
    })
    H.run_fails(path, work, 1, { "asks for Kerberos", "user.name=kingest",
      "hadoop.security.authentication=kerberos" }, env())
    assert.equals(404, (status_of(root)))
  end)

  it("runs the Hadoop mode with one delegation token, handed to the maps in the job's credentials and cancelled "
    .. "at the end", function()
    local lines = {}
    for i = 1, 300 do lines[i] = string.format("mr secured %03d", i) end
    local topic = H.topic_with("krb_mr", lines)
    local work = H.workdir("krb_mr")
    local root = "/kingest/" .. H.unique("mr")
    local path = krb_job(work, topic, root, {
      ["launcher.type"] = "MAPREDUCE",
      ["mr.job.root.dir"] = root .. "/mr",
      ["mr.hadoop.command"] = H.root .. "/scripts/hadoop",
      ["mr.streaming.jar"] = hadoop({ "streaming-jar" }),
      -- No YARN on this HDFS: Hadoop's local job runner, its client logged in by kingest.
      ["mr.streaming.args"] = "-D mapreduce.framework.name=local",
      ["yarn.resourcemanager.principal"] = "rm/localhost@" .. realm,
    })
    local code, out, err = H.kingest({ "run", path, "--log-level", "debug" }, { GOBBLIN_WORK_DIR = work,
      KRB5_CONFIG = krb5conf, KINGEST_HADOOP_DIR = HADOOP_DIR })
    assert.equals(0, code, err)
    local got, owners = lines_under(root .. "/out/" .. topic)
    assert.same(H.sorted(lines), H.sorted(got))
    assert.same({ kingest = true }, owners)
    assert.truthy(err:find("Took a delegation token of kingest@" .. realm .. " (renewer rm)", 1, true), err)
    assert.truthy(err:find("Cancelled the Hadoop job's delegation token", 1, true), err)
    assert_no_secret(out .. err, "the log")
  end)

  it("says so when the Hadoop job's token was cancelled before the driver cancels it (as YARN does once a job has "
    .. "ended)", function()
    local lines = { "cancelled early 1", "cancelled early 2" }
    local topic = H.topic_with("krb_mr_early", lines)
    local work = H.workdir("krb_mr_early")
    local root = "/kingest/" .. H.unique("early")
    -- The Hadoop command: scripts/hadoop, then a cancel of the job's token (from the credentials file it was given)
    -- by the token's owner, as YARN's ResourceManager cancels a job's tokens once the job has ended.
    local wrapper = dir .. "/hadoop-then-cancel"
    H.spit(wrapper, table.concat({
      "#!/bin/sh",
      "for a; do case $a in -Dmapreduce.job.credentials.binary=*) creds=${a#*=};; esac; done",
      H.q(H.root .. "/scripts/hadoop") .. " \"$@\"",
      "rc=$?",
      "token=$(python3 " .. H.q(H.root .. "/spec/support/hadoop_tokens.py") .. " \"$creds\" | cut -d' ' -f1)",
      "KRB5_CLIENT_KTNAME=" .. H.q(keytab) .. " KRB5CCNAME=MEMORY:cancel curl -sf --negotiate -u : -X PUT "
        .. H.q(http .. "/webhdfs/v1/?op=CANCELDELEGATIONTOKEN&token=") .. "\"$token\" >/dev/null || exit 99",
      "exit $rc",
      "",
    }, "\n"))
    os.execute("chmod 700 " .. H.q(wrapper))
    local path = krb_job(work, topic, root, {
      ["launcher.type"] = "MAPREDUCE",
      ["mr.job.root.dir"] = root .. "/mr",
      ["mr.hadoop.command"] = wrapper,
      ["mr.streaming.jar"] = hadoop({ "streaming-jar" }),
      ["mr.streaming.args"] = "-D mapreduce.framework.name=local",
      ["yarn.resourcemanager.principal"] = "rm/localhost@" .. realm,
    })
    local code, _, err = H.kingest({ "run", path }, { GOBBLIN_WORK_DIR = work, KRB5_CONFIG = krb5conf,
      KINGEST_HADOOP_DIR = HADOOP_DIR })
    assert.equals(0, code, err)
    assert.same(H.sorted(lines), H.sorted((lines_under(root .. "/out/" .. topic))))
    assert.truthy(err:find("The Hadoop job's delegation token was cancelled already", 1, true), err)
    assert.falsy(err:find("cannot cancel the delegation token", 1, true), err)
  end)

  it("speaks TLS to swebhdfs:// with webhdfs.ssl.ca.location, and refuses a certificate of another CA", function()
    local lines = { "over tls 1", "over tls 2", "over tls 3" }
    local topic = H.topic_with("krb_tls", lines)
    local work = H.workdir("krb_tls")
    local root = "/kingest/" .. H.unique("tls")
    -- auth=kerberos in the URI says the same as the property.
    local uri = https:gsub("^https://", "swebhdfs://") .. "/?auth=kerberos"
    local props = { ["writer.fs.uri"] = uri, ["hadoop.security.authentication"] = "simple",
      ["webhdfs.ssl.ca.location"] = other_ca }
    local last = H.run_fails(krb_job(work, topic, root, props), work, 1, { "TLS", "webhdfs.ssl.ca.location=" .. other_ca },
      env())
    assert.truthy(last:find("certificate", 1, true), last)
    assert.equals(404, (status_of(root)))
    props["webhdfs.ssl.ca.location"] = ca
    H.run_ok(krb_job(work, topic, root, props), work, env())
    assert.same(lines, H.sorted((lines_under(root .. "/out/" .. topic))))
  end)
end)
