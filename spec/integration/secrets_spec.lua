-- Secrets (docs/security.md), against the real broker, the schema registry of scripts/registry and a real
-- Pushgateway: ${file:PATH} and ${env:VAR} secrets never appear in what kingest prints or writes (every command's
-- output at --log-level debug with librdkafka's debug=all, every file under the work dir, the state store dumped by
-- sqlite3), the folders of a run are its owner's only; the registry (behind spec/support/registry_proxy.py speaking
-- TLS with basic authentication) and the Pushgateway (its own --web.config.file) over HTTPS with a CA file and
-- credentials: the right ones work, wrong ones and an untrusted CA fail with their own errors.
local H = require("support.harness")

local JOB = "SecretsSpec"

local function free_port()
  local code, out, err = H.sh("python3 -c " ..
    H.q("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"))
  assert(code == 0, err)
  return tonumber(out:match("%d+"))
end

-- A CA in DIR/NAME-ca.pem and a server certificate it signs (DIR/NAME.pem, key DIR/NAME.key) for localhost and
-- 127.0.0.1, made with openssl.
local function certificates(dir, name)
  os.execute("mkdir -p " .. H.q(dir))
  local p = dir .. "/" .. name
  local ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  local code, _, err = H.sh(table.concat({
    "openssl req -x509 " .. ec .. " -keyout " .. H.q(p .. "-ca.key") .. " -out " .. H.q(p .. "-ca.pem") ..
      " -days 2 -subj /CN=" .. name .. "-test-ca",
    "openssl req " .. ec .. " -keyout " .. H.q(p .. ".key") .. " -out " .. H.q(p .. ".csr") .. " -subj /CN=localhost",
    "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' >" .. H.q(p .. ".ext"),
    "openssl x509 -req -in " .. H.q(p .. ".csr") .. " -CA " .. H.q(p .. "-ca.pem") .. " -CAkey " ..
      H.q(p .. "-ca.key") .. " -CAcreateserial -out " .. H.q(p .. ".pem") .. " -days 2 -extfile " .. H.q(p .. ".ext"),
  }, " && "))
  assert(code == 0, "openssl: " .. err)
  return { ca = p .. "-ca.pem", cert = p .. ".pem", key = p .. ".key" }
end

-- Every file under DIR, as one text: its name and its bytes, an SQLite database as sqlite3 dumps it.
local function everything_under(dir)
  local code, out = H.sh("find " .. H.q(dir) .. " -type f")
  assert(code == 0)
  local parts = {}
  for path in out:gmatch("[^\n]+") do
    local text = H.slurp(path) or ""
    if text:sub(1, 16) == "SQLite format 3\0" then
      local _, dump = H.sh("sqlite3 " .. H.q(path) .. " .dump")
      text = text .. dump
    end
    parts[#parts + 1] = "== " .. path .. "\n" .. text
  end
  return table.concat(parts, "\n")
end

local function assert_absent(secret, text, what)
  local at = text:find(secret, 1, true)
  assert.is_nil(at, what .. " holds the secret: " .. (at and text:sub(math.max(1, at - 300), at + 100) or ""))
end

local function mode_of(path)
  local code, out = H.sh("stat -c %a " .. H.q(path))
  assert(code == 0, "stat " .. path)
  return H.trim(out)
end

describe("a secret", function()
  local topic, secret_file, file_secret, env_secret
  setup(function()
    topic = H.topic_with(H.unique("secrets"), { "one", "two", "three" })
    file_secret = H.unique("FromAFile")
    env_secret = H.unique("FromTheEnv")
    local dir = H.workdir("secret_files")
    secret_file = dir .. "/password"
    H.spit(secret_file, file_secret .. "\n")
    os.execute("chmod 600 " .. H.q(secret_file))
  end)

  -- The job's properties: the file's secret as the SASL password and as a property of no secret name, the
  -- environment's as the TLS key's password, librdkafka's every debug context, the metrics file and Prometheus (its
  -- file, and a Pushgateway with the secret in its URL that is not there).
  local function secret_props(work)
    return {
      ["kafka.consumer.sasl.password"] = "${file:" .. secret_file .. "}",
      ["kafka.consumer.sasl.username"] = "${file:" .. secret_file .. "}",
      ["kafka.consumer.ssl.key.password"] = "${env:KINGEST_SPEC_SECRET}",
      ["kafka.consumer.debug"] = "all",
      ["metrics.reporting.file.enabled"] = "true",
      ["metrics.reporting.prometheus.file"] = work .. "/kingest.prom",
      ["metrics.reporting.prometheus.pushgateway.url"] = "http://kingest:${env:KINGEST_SPEC_SECRET}@127.0.0.1:" ..
        free_port(),
      ["metrics.reporting.prometheus.pushgateway.timeout.ms"] = "1000",
    }
  end

  it("appears in nothing kingest prints or writes, at every log level, librdkafka's debug included", function()
    local work = H.workdir("secrets")
    local job = H.job({ dir = work, name = JOB, topics = topic, props = secret_props(work) })
    local env = { GOBBLIN_WORK_DIR = work, KINGEST_SPEC_SECRET = env_secret }
    local said = {}
    local function kingest(args, stdin)
      local a = {}
      for _, x in ipairs(args) do a[#a + 1] = x end
      local code, out, err
      if stdin then
        local input = work .. "/" .. H.unique("stdin")
        H.spit(input, stdin)
        local parts = { "env" }
        for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. H.q(v) end
        parts[#parts + 1] = H.q(H.bin)
        for _, x in ipairs(a) do parts[#parts + 1] = H.q(x) end
        code, out, err = H.sh(table.concat(parts, " ") .. " <" .. H.q(input))
      else
        code, out, err = H.kingest(a, env)
      end
      said[#said + 1] = table.concat(a, " ") .. " exited " .. tostring(code) .. "\n" .. out .. err
      return code, out, err
    end
    local code, _, err = kingest({ "run", job, "--log-level", "debug" })
    assert.are.equal(0, code, err)
    assert.truthy(err:find(" DEBUG librdkafka ", 1, true), "no librdkafka debug line")
    -- librdkafka had the secrets: the file's without its newline.
    assert.truthy(err:find("sasl.username", 1, true) or err:find("CONF", 1, true))
    assert.same({ "one", "three", "two" }, H.sorted(H.published(work, topic)))
    assert.truthy(err:find("cannot push the metrics to the Pushgateway at http://***@127.0.0.1:", 1, true), err)
    kingest({ "run", job, "--log-level", "debug", "--log-format", "json" })
    kingest({ "plan", job, "--log-level", "debug" })
    kingest({ "plan", job, "--json" })
    kingest({ "validate", job, "--log-level", "debug" })
    kingest({ "test", job, "--log-level", "debug" }, '{"payload":"x"}\n')
    kingest({ "properties" })
    kingest({ "state", "show", job })
    kingest({ "state", "history", job, "--json" })
    -- A secret the Kafka client refuses: the error names the property, never the value.
    local refused = H.job({ dir = work .. "/refused", name = JOB .. "Refused", topics = topic, props = {
      ["kafka.consumer.sasl.secret.extra"] = "${file:" .. secret_file .. "}",
    } })
    for _, command in ipairs({ "run", "validate" }) do
      code, _, err = kingest({ command, refused, "--log-level", "debug" })
      assert.are.equal(78, code, err)
      assert.truthy(err:find("property kafka.consumer.sasl.secret.extra=****: the Kafka client refuses it", 1, true),
        err)
    end
    local files = everything_under(work)
    for _, secret in ipairs({ file_secret, env_secret }) do
      for i, text in ipairs(said) do assert_absent(secret, text, "output " .. i) end
      assert_absent(secret, files, "the work dir")
    end
    assert.truthy(files:find("kingest_records_read_total", 1, true), "no Prometheus file")
    assert.truthy(files:find('"type":"metrics"', 1, true), "no metrics file")
    assert.truthy(files:find("CREATE TABLE runs", 1, true), "no state store")
  end)

  it("is kept in folders and files of its owner only: the state store, the work dir, the task data", function()
    local work = H.tmp .. "/" .. H.unique("owner_only") .. "/work"
    local job = H.job({ dir = H.workdir("owner_only_job"), name = JOB, topics = topic,
      props = { ["kafka.consumer.sasl.password"] = "${file:" .. secret_file .. "}" } })
    H.run_ok(job, work)
    assert.are.equal("700", mode_of(work))
    assert.are.equal("700", mode_of(work .. "/state-store"))
    assert.are.equal("600", mode_of(work .. "/state-store/" .. JOB .. ".db"))
    assert.are.equal("700", mode_of(work .. "/task-data"))
    assert.are.equal("700", mode_of(work .. "/locks"))
  end)

  it("from a file others may read gets a WARN naming the file and its mode", function()
    local work = H.workdir("secret_mode")
    local open = work .. "/open-password"
    H.spit(open, "x-" .. file_secret .. "\n")
    os.execute("chmod 644 " .. H.q(open))
    local job = H.job({ dir = work, name = JOB, topics = topic,
      props = { ["kafka.consumer.sasl.password"] = "${file:" .. open .. "}" } })
    local code, _, err = H.kingest({ "validate", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.truthy(err:find(" WARN " .. job .. ":", 1, true), err)
    assert.truthy(err:find("property kafka.consumer.sasl.password reads a secret from " .. open ..
      ", which its group or others may read (mode 0644): chmod 600 it", 1, true), err)
    assert_absent(file_secret, err, "the WARN")
  end)

  it("from a file that is not there is an error naming the property and the path", function()
    local work = H.workdir("secret_missing")
    local job = H.job({ dir = work, name = JOB, topics = topic,
      props = { ["kafka.consumer.sasl.password"] = "${file:" .. work .. "/nothing}" } })
    local last = H.run_fails(job, work, 78, { "property kafka.consumer.sasl.password refers to file " .. work ..
      "/nothing, which cannot be read: No such file or directory" })
    assert.matches("^kingest: " .. job:gsub("%p", "%%%0") .. ": property ", last) -- a job.lua's origin is its file
  end)
end)

describe("the schema registry", function()
  local SCHEMA = '{"type":"record","name":"Event","namespace":"kingest.test","fields":' ..
    '[{"name":"id","type":"long"}]}'
  local api, certs, other, proxy_url, proxy_pid, topic, password
  setup(function()
    local code, out, err = H.sh(H.q(H.root .. "/scripts/registry") .. " url")
    assert(code == 0, "no registry: " .. err)
    api = H.trim(out) .. "/apis/ccompat/v7"
    local dir = H.workdir("registry_tls")
    certs = certificates(dir, "registry")
    other = certificates(dir, "other")
    password = H.unique("RegistryPassword")
    local port_file = dir .. "/proxy.port"
    assert(H.sh("python3 " .. H.q(H.root .. "/spec/support/registry_proxy.py") .. " " .. H.q(api) ..
      " --port-file " .. H.q(port_file) .. " --tls-cert " .. H.q(certs.cert) .. " --tls-key " .. H.q(certs.key) ..
      " --basic " .. H.q("reader:" .. password) .. " --bearer " .. H.q("token-" .. password) .. " >/dev/null 2>&1 & echo $! >" .. H.q(port_file .. ".pid")) == 0)
    local port = H.wait_until(function()
      local text = H.slurp(port_file)
      return text and tonumber(text:match("%d+"))
    end, 20)
    assert(port, "the registry proxy did not start")
    proxy_pid = tonumber(H.slurp(port_file .. ".pid"):match("%d+"))
    proxy_url = "https://localhost:" .. port
    topic = H.unique("secured_registry")
    H.create_topic(topic, 1)
    local schema = dir .. "/event.avsc"
    H.spit(schema, SCHEMA)
    code, _, err = H.avro_produce({ "produce", "confluent", H.bootstrap(), api, topic, schema },
      '{"id": 1}\n{"id": 2}\n')
    assert(code == 0, err)
  end)
  teardown(function() if proxy_pid then os.execute("kill " .. proxy_pid .. " 2>/dev/null") end end)

  local function registry_job(work, props)
    local p = { ["kafka.deserializer.type"] = "CONFLUENT_AVRO", ["kafka.schema.registry.url"] = proxy_url,
      ["kafka.schema.registry.retry.timeout.ms"] = "2000" }
    for k, v in pairs(props) do p[k] = v end
    return H.job({ dir = work, name = JOB .. "Registry", topics = topic, props = p, code = [[
      decodeRecord = function(r) return tostring(r:avro().id) end,
    ]] })
  end

  it("is reached over HTTPS with the CA file and basic authentication from a file", function()
    local work = H.workdir("registry_ok")
    local info = H.workdir("registry_ok_secret") .. "/user-info"
    H.spit(info, "reader:" .. password .. "\n")
    os.execute("chmod 600 " .. H.q(info))
    local log = H.run_ok(registry_job(work, {
      ["kafka.schema.registry.ssl.ca.location"] = certs.ca,
      ["kafka.schema.registry.basic.auth.user.info"] = "${file:" .. info .. "}",
    }), work)
    assert.same({ "1", "2" }, H.sorted(H.published(work, topic)))
    assert_absent(password, log .. everything_under(work), "the run")
  end)

  it("refuses wrong credentials: the error names the URL, the user and the registry's reason", function()
    local work = H.workdir("registry_wrong")
    local last = H.run_fails(registry_job(work, {
      ["kafka.schema.registry.ssl.ca.location"] = certs.ca,
      ["kafka.schema.registry.basic.auth.user.info"] = "reader:wrong-" .. password,
    }), work, 1, { "authentication refused by schema registry " .. proxy_url .. "/",
      "user reader, basic authentication from kafka.schema.registry.basic.auth.user.info",
      "HTTP 401 (unauthorized)", "Unauthorized: bad user name or password" })
    assert_absent(password, last, "the error")
  end)

  it("is reached with a bearer token, and names it when the token is refused", function()
    local work = H.workdir("registry_bearer")
    local token = H.workdir("registry_bearer_secret") .. "/token"
    H.spit(token, "token-" .. password .. "\n")
    os.execute("chmod 600 " .. H.q(token))
    local log = H.run_ok(registry_job(work, {
      ["kafka.schema.registry.ssl.ca.location"] = certs.ca,
      ["kafka.schema.registry.bearer.auth.token"] = "${file:" .. token .. "}",
    }), work)
    assert.same({ "1", "2" }, H.sorted(H.published(work, topic)))
    assert_absent(password, log .. everything_under(work), "the run")
    work = H.workdir("registry_bearer_wrong")
    local last = H.run_fails(registry_job(work, {
      ["kafka.schema.registry.ssl.ca.location"] = certs.ca,
      ["kafka.schema.registry.bearer.auth.token"] = "stale-" .. password,
    }), work, 1, { "authentication refused by schema registry " .. proxy_url .. "/", "bearer", "HTTP 401" })
    assert_absent(password, last, "the error")
  end)

  it("without credentials says that none were given", function()
    local work = H.workdir("registry_none")
    H.run_fails(registry_job(work, { ["kafka.schema.registry.ssl.ca.location"] = certs.ca }), work, 1,
      { "no credentials given: kafka.schema.registry.basic.auth.user.info", "HTTP 401" })
  end)

  it("fails at once on a certificate its CA file does not vouch for, naming the CA", function()
    local work = H.workdir("registry_untrusted")
    H.run_fails(registry_job(work, {
      ["kafka.schema.registry.ssl.ca.location"] = other.ca,
      ["kafka.schema.registry.basic.auth.user.info"] = "reader:" .. password,
    }), work, 1, { "cannot speak TLS with schema registry " .. proxy_url,
      "its certificate checked against kafka.schema.registry.ssl.ca.location=" .. other.ca,
      "certificate" })
  end)
end)

describe("the Pushgateway", function()
  local gw, certs, other, password, dir, topic
  setup(function()
    dir = H.workdir("pushgateway_tls")
    certs = certificates(dir, "pushgateway")
    other = certificates(dir, "other")
    password = H.unique("GatewayPassword")
    local code, hash, err = H.sh("python3 -W ignore -c " .. H.q("import crypt, sys; print(crypt.crypt(sys.argv[1], " ..
      "crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))") .. " " .. H.q(password))
    assert(code == 0, err)
    H.spit(dir .. "/web.yml", "tls_server_config:\n  cert_file: " .. certs.cert .. "\n  key_file: " .. certs.key ..
      "\nbasic_auth_users:\n  pusher: '" .. H.trim(hash) .. "'\n")
    local port = free_port()
    local log, pidfile = dir .. "/pushgateway.log", dir .. "/pushgateway.pid"
    assert(H.sh("/usr/bin/prometheus-pushgateway --web.listen-address=127.0.0.1:" .. port ..
      " --web.config.file=" .. H.q(dir .. "/web.yml") .. " --persistence.file= >" .. H.q(log) ..
      " 2>&1 & echo $! >" .. H.q(pidfile)) == 0)
    gw = { url = "https://localhost:" .. port, pid = tonumber(H.slurp(pidfile):match("%d+")) }
    assert(H.wait_until(function()
      return H.sh("curl -sf --cacert " .. H.q(certs.ca) .. " -u " .. H.q("pusher:" .. password) .. " " ..
        H.q(gw.url .. "/-/ready")) == 0
    end, 60), "the Pushgateway did not start: " .. (H.slurp(log) or ""))
    topic = H.topic_with(H.unique("pushed"), { "a", "b" })
  end)
  teardown(function() if gw and gw.pid then os.execute("kill " .. gw.pid .. " 2>/dev/null") end end)

  local function gateway_job(work, props)
    local p = { ["metrics.reporting.prometheus.pushgateway.url"] = gw.url,
      ["metrics.reporting.prometheus.pushgateway.timeout.ms"] = "5000" }
    for k, v in pairs(props) do p[k] = v end
    return H.job({ dir = work, name = JOB .. "Gateway", topics = topic, props = p })
  end

  it("takes the metrics over HTTPS with the CA file and basic authentication", function()
    local work = H.workdir("gateway_ok")
    local info = H.workdir("gateway_ok_secret") .. "/user-info"
    H.spit(info, "pusher:" .. password .. "\n")
    os.execute("chmod 600 " .. H.q(info))
    local log = H.run_ok(gateway_job(work, {
      ["metrics.reporting.prometheus.pushgateway.ssl.ca.location"] = certs.ca,
      ["metrics.reporting.prometheus.pushgateway.basic.auth.user.info"] = "${file:" .. info .. "}",
    }), work)
    assert.truthy(log:find("Pushed the Prometheus metrics to " .. gw.url .. "/metrics/job/" .. JOB .. "Gateway", 1,
      true), log)
    local code, out, err = H.sh("curl -sf --cacert " .. H.q(certs.ca) .. " -u " .. H.q("pusher:" .. password) ..
      " " .. H.q(gw.url .. "/metrics"))
    assert(code == 0, err)
    assert.truthy(out:find('kingest_records_written_total{instance="",job="' .. JOB .. 'Gateway"} 2', 1, true), out)
    assert_absent(password, log .. everything_under(work), "the run")
  end)

  it("refuses wrong credentials: the WARN names the user and the Pushgateway's reason", function()
    local work = H.workdir("gateway_wrong")
    local log = H.run_ok(gateway_job(work, {
      ["metrics.reporting.prometheus.pushgateway.ssl.ca.location"] = certs.ca,
      ["metrics.reporting.prometheus.pushgateway.basic.auth.user.info"] = "pusher:wrong-" .. password,
    }), work)
    local warn = H.grep(log, " WARN cannot push the metrics to the Pushgateway at " .. gw.url)
    assert.are.equal(1, #warn, log)
    assert.truthy(warn[1]:find("HTTP 401", 1, true), warn[1])
    assert.truthy(warn[1]:find("(user pusher, from metrics.reporting.prometheus.pushgateway.basic.auth.user.info)",
      1, true), warn[1])
    assert_absent(password, log, "the log")
  end)

  it("names the CA file when the Pushgateway's certificate is not one it vouches for", function()
    local work = H.workdir("gateway_untrusted")
    local log = H.run_ok(gateway_job(work, {
      ["metrics.reporting.prometheus.pushgateway.ssl.ca.location"] = other.ca,
      ["metrics.reporting.prometheus.pushgateway.basic.auth.user.info"] = "pusher:" .. password,
    }), work)
    local warn = H.grep(log, " WARN cannot push the metrics to the Pushgateway at " .. gw.url)
    assert.are.equal(1, #warn, log)
    assert.truthy(warn[1]:find("the Pushgateway's certificate checked against " ..
      "metrics.reporting.prometheus.pushgateway.ssl.ca.location=" .. other.ca, 1, true), warn[1])
  end)
end)
