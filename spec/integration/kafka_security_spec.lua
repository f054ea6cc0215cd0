-- Kafka's security mechanisms through kafka.consumer.*, on the secured broker of `scripts/kafka start --secure --kdc`
-- (its listeners, certificates, users and passwords in secure.json) and the KDC of scripts/kdc: SASL_SSL with PLAIN,
-- SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, SSL with a client certificate, SASL_PLAINTEXT with GSSAPI from a
-- keytab. With the right credentials a run pulls every record exactly once (against kcat on the broker's PLAINTEXT
-- listener); with wrong ones (a password, a CA, a certificate, a host name, a keytab) it fails at once with exit
-- status 77 and an error naming the protocol, the mechanism, the broker and the cause, publishes nothing and moves
-- no offset. No secret appears in anything a run prints or writes, librdkafka's debug log included.
local H = require("support.harness")
local cjson = require("cjson")

local state_dir = os.getenv("KINGEST_KAFKA_DIR") or (H.root .. "/.kafka")
local S = cjson.decode((assert(H.slurp(state_dir .. "/secure/secure.json"),
  "no secure.json in " .. state_dir .. "/secure: scripts/kafka start --secure --kdc DIR first")))
local KRB5_CONFIG = S.kdc_dir and S.kdc_dir .. "/krb5.conf"

-- Records of the spec's topic: two partitions, keyed, produced once through the PLAINTEXT listener.
local TOPIC = H.unique("secured")
local PER_PARTITION = 40
local produced = false
local function topic()
  if not produced then
    H.create_topic(TOPIC, 2)
    for p = 0, 1 do H.produce(TOPIC, H.records(TOPIC, p, 0, PER_PARTITION), p) end
    produced = true
  end
  return TOPIC
end

-- The brokers' metadata timeout of every job: a failure must come long before it.
local METADATA_TIMEOUT_MS = 60000
-- How long a refused run may take at most: a few librdkafka connection attempts on a loaded machine.
local FAIL_WITHIN_MS = 20000

local function merge(...)
  local t = {}
  for _, part in ipairs({ ... }) do
    for k, v in pairs(part) do t[k] = v end
  end
  return t
end

-- Each mechanism's kafka.consumer.* properties with its credentials; a password comes from ${env:KAFKA_SECRET}.
local function sasl_ssl(mechanism, user)
  return {
    ["kafka.consumer.security.protocol"] = "SASL_SSL",
    ["kafka.consumer.sasl.mechanism"] = mechanism,
    ["kafka.consumer.sasl.username"] = user,
    ["kafka.consumer.sasl.password"] = "${env:KAFKA_SECRET}",
    ["kafka.consumer.ssl.ca.location"] = S.ca,
  }
end
local function oauthbearer(config)
  return {
    ["kafka.consumer.security.protocol"] = "SASL_SSL",
    ["kafka.consumer.sasl.mechanism"] = "OAUTHBEARER",
    ["kafka.consumer.enable.sasl.oauthbearer.unsecure.jwt"] = "true",
    ["kafka.consumer.sasl.oauthbearer.config"] = config,
    ["kafka.consumer.ssl.ca.location"] = S.ca,
  }
end
local function mtls(cert, key, with_password)
  return {
    ["kafka.consumer.security.protocol"] = "SSL",
    ["kafka.consumer.ssl.ca.location"] = S.ca,
    ["kafka.consumer.ssl.certificate.location"] = cert,
    ["kafka.consumer.ssl.key.location"] = key,
    ["kafka.consumer.ssl.key.password"] = with_password and "${env:KAFKA_SECRET}" or nil,
  }
end
local function gssapi(keytab, principal)
  return {
    ["kafka.consumer.security.protocol"] = "SASL_PLAINTEXT",
    ["kafka.consumer.sasl.mechanism"] = "GSSAPI",
    ["kafka.consumer.sasl.kerberos.service.name"] = S.kerberos_service,
    ["kafka.consumer.sasl.kerberos.principal"] = principal or S.client_principal,
    ["kafka.consumer.sasl.kerberos.keytab"] = keytab,
  }
end

-- A job of its own in a fresh work dir: LABEL names both; BROKER is the listener; PROPS its security settings;
-- OPTS.topic the topic (default: the spec's), OPTS.props more properties.
local function secured_job(label, broker, props, opts)
  opts = opts or {}
  local id = label:gsub("%W", "_")
  local c = { name = "Secured_" .. id, work = H.workdir("secured_" .. id), topic = opts.topic or topic() }
  c.file = H.job({ dir = c.work, name = c.name, brokers = broker, topics = c.topic,
    props = merge({ ["kafka.metadata.timeout.ms"] = METADATA_TIMEOUT_MS }, props, opts.props or {}) })
  return c
end

-- The environment of a run: the secret for ${env:KAFKA_SECRET}, the KDC's krb5.conf and a ticket cache of the
-- run's own (kinit writes it; the default one would be shared with every other process of this user).
local function env_of(c, secret)
  return { KAFKA_SECRET = secret or "", KRB5_CONFIG = KRB5_CONFIG or "/nonexistent",
           KRB5CCNAME = "FILE:" .. c.work .. "/ccache" }
end

-- Runs `kingest ARGS` (default: run C's job) with SECRET; returns status, stdout, stderr and the milliseconds.
local function kingest(c, secret, args)
  local started = H.now_ms()
  local code, out, err = H.kingest(args or { "run", c.file }, merge(env_of(c, secret), { GOBBLIN_WORK_DIR = c.work }))
  return code, out, err, H.now_ms() - started
end

-- Asserts that job C, run with SECRET, pulls every record of its topic exactly once and stores the end offsets.
local function pulls_everything(c, secret)
  local code, _, err = kingest(c, secret)
  assert.are.equal(0, code, err)
  H.assert_exactly_once(c.work, { c.topic })
  local want = {}
  for tp, o in pairs(H.offsets(c.topic)) do want[tp] = o.latest end
  assert.are.same(want, H.stored_offsets(c.work, c.name))
  return err
end

-- Asserts that `kingest ARGS` (default: run C's job) with SECRET fails with status 77 well before the metadata
-- timeout, its last line naming each of NAMES, and that the run published nothing and left the stored offsets as
-- they were (BEFORE, default none); returns that line.
local function refused(c, secret, names, args, before)
  local files = H.files(c.work .. "/job-output")
  local code, _, err, ms = kingest(c, secret, args)
  assert.are.equal(77, code, "the run should fail with status 77:\n" .. err)
  local last = H.last_line(err)
  assert.matches("^kingest: ", last)
  assert.truthy(last:find("authentication with Kafka at kafka.brokers=", 1, true), last)
  for _, name in ipairs(names) do
    assert.truthy(last:find(name, 1, true), ("the error should name %q: %s"):format(name, last))
  end
  assert.is_true(ms < FAIL_WITHIN_MS,
    ("the refusal took %d ms (kafka.metadata.timeout.ms=%d)"):format(ms, METADATA_TIMEOUT_MS))
  assert.are.same(files, H.files(c.work .. "/job-output"))
  assert.are.same(before or {}, H.stored_offsets(c.work, c.name))
  return last
end

-- Asserts that SECRET appears nowhere in TEXTS (a list of strings) nor in any file under DIR but the job file
-- (which holds no secret either: it reads them from the environment).
local function assert_secret_absent(secret, texts, dir)
  assert.is_true(#secret >= 8, "a secret this short proves nothing: " .. secret)
  for i, text in ipairs(texts) do
    assert.is_nil(text:find(secret, 1, true), ("output %d holds the secret:\n%s"):format(i, text))
  end
  local code, out = H.sh("grep -rlaF -- " .. H.q(secret) .. " " .. H.q(dir))
  assert.are.equal(1, code, "files under " .. dir .. " hold the secret:\n" .. out)
end

local PLAIN = function() return sasl_ssl("PLAIN", S.plain_user) end

-- The broker of listener address ADDR (host:port), as errors name it.
local function broker_of(addr) return "broker " .. addr .. ":" end

describe("Kafka's security mechanisms", function()
  describe("SASL_SSL with PLAIN", function()
    it("pulls every record exactly once with the right password; a wrong one fails at once with status 77, naming the mechanism, the user, the broker and the cause, and moves no offset", function()
      local t = H.unique("secured_plain")
      H.create_topic(t, 1)
      H.produce(t, H.records(t, 0, 0, 10), 0)
      local c = secured_job("plain", S.sasl_ssl, PLAIN(), { topic = t })
      pulls_everything(c, S.plain_password)
      local before = H.stored_offsets(c.work, c.name)
      H.produce(t, H.records(t, 0, 10, 15), 0)
      refused(c, "not-" .. S.plain_password, { "security.protocol=SASL_SSL", "sasl.mechanism=PLAIN",
        "sasl.username=" .. S.plain_user, broker_of(S.sasl_ssl), "authentication failed",
        "Invalid username or password" }, nil, before)
      -- The next run with the right password goes on from where the first one stopped.
      pulls_everything(c, S.plain_password)
    end)

    it("fails at once when the CA does not trust the broker's certificate, naming the certificate and why", function()
      local c = secured_job("untrusted_ca", S.sasl_ssl,
        merge(PLAIN(), { ["kafka.consumer.ssl.ca.location"] = S.untrusted_ca }))
      refused(c, S.plain_password, { "security.protocol=SASL_SSL", "ssl.ca.location=" .. S.untrusted_ca,
        broker_of(S.sasl_ssl), "the broker's certificate (subject=/CN=", "not trusted", "certificate verify failed" })
    end)

    it("fails at once in kingest plan and kingest state set-offset too, with status 77", function()
      local c = secured_job("plain_plan", S.sasl_ssl, PLAIN())
      refused(c, "wrong-password-for-plan", { "sasl.mechanism=PLAIN", "Invalid username or password" },
        { "plan", c.file })
      refused(c, "wrong-password-for-state", { "sasl.mechanism=PLAIN", "Invalid username or password" },
        { "state", "set-offset", c.file, c.topic .. ":0", "earliest" })
    end)
  end)

  for _, mechanism in ipairs({ "SCRAM-SHA-256", "SCRAM-SHA-512" }) do
    describe("SASL_SSL with " .. mechanism, function()
      it("pulls every record exactly once with the right password", function()
        pulls_everything(secured_job(mechanism, S.sasl_ssl, sasl_ssl(mechanism, S.scram_user)), S.scram_password)
      end)

      it("fails at once with a wrong password, naming the mechanism and the broker's reason", function()
        local c = secured_job(mechanism .. "_wrong", S.sasl_ssl, sasl_ssl(mechanism, S.scram_user))
        refused(c, "not-" .. S.scram_password, { "sasl.mechanism=" .. mechanism, "sasl.username=" .. S.scram_user,
          broker_of(S.sasl_ssl), "authentication failed", "invalid credentials" })
      end)
    end)
  end

  describe("SASL_SSL with OAUTHBEARER (unsecured JWT)", function()
    it("pulls every record exactly once with a token that has the scope the broker requires", function()
      pulls_everything(secured_job("oauthbearer", S.sasl_ssl,
        oauthbearer("principal=kingest scope=" .. S.oauthbearer_scope)))
    end)

    it("fails at once with a token the broker refuses, naming its reason", function()
      local c = secured_job("oauthbearer_scope", S.sasl_ssl, oauthbearer("principal=kingest scope=other"))
      refused(c, nil, { "sasl.mechanism=OAUTHBEARER", broker_of(S.sasl_ssl), "insufficient_scope" })
    end)
  end)

  describe("SSL with a client certificate", function()
    it("pulls every record exactly once with the CA's client certificate and its encrypted key", function()
      pulls_everything(secured_job("mtls", S.ssl, mtls(S.client_cert, S.client_key, true)), S.client_key_password)
    end)

    it("fails at once on a wrong password of the client's key, naming the key and its password's property", function()
      local c = secured_job("mtls_key_password", S.ssl, mtls(S.client_cert, S.client_key, true))
      local code, _, err = kingest(c, "wrong-" .. S.client_key_password)
      assert.are.equal(1, code, err)
      local last = H.last_line(err)
      assert.truthy(last:find("cannot create a Kafka client", 1, true), last)
      assert.truthy(last:find("kafka.consumer.ssl.key.location=" .. S.client_key ..
        " with kafka.consumer.ssl.key.password", 1, true), last)
      assert.falsy(err:find(S.client_key_password, 1, true), err)
      assert.are.same({}, H.stored_offsets(c.work, c.name))
    end)

    it("fails at once when the broker refuses the client certificate: none, or one of another CA", function()
      local c = secured_job("mtls_none", S.ssl, mtls(nil, nil))
      refused(c, nil, { "security.protocol=SSL", broker_of(S.ssl), "the broker refused the client certificate" })
      c = secured_job("mtls_other_ca", S.ssl, mtls(S.untrusted_client_cert, S.untrusted_client_key))
      refused(c, nil, { "ssl.certificate.location=" .. S.untrusted_client_cert, broker_of(S.ssl),
        "the broker refused the client certificate" })
    end)

    it("fails at once when the broker's certificate does not name the host, and works with the check turned off", function()
      local c = secured_job("mismatch", S.ssl_mismatch, { ["kafka.consumer.security.protocol"] = "SSL",
        ["kafka.consumer.ssl.ca.location"] = S.ca })
      refused(c, nil, { "security.protocol=SSL", broker_of(S.ssl_mismatch),
        "(subject=/CN=broker.invalid, issuer=/CN=kingest test CA)", "hostname mismatch" })
      c = secured_job("mismatch_unchecked", S.ssl_mismatch, { ["kafka.consumer.security.protocol"] = "SSL",
        ["kafka.consumer.ssl.ca.location"] = S.ca, ["kafka.consumer.ssl.endpoint.identification.algorithm"] = "none" })
      pulls_everything(c)
    end)
  end)

  it("fails at once on a broker certificate that has expired, naming it", function()
    -- A TLS server of OpenSSL's own with a certificate that ended yesterday: the handshake, where the client checks
    -- it, is what the broker's would be.
    local dir = H.workdir("expired_cert")
    local function ok(cmd) local code, _, err = H.sh(cmd) assert(code == 0, cmd .. ": " .. err) end
    ok(("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 "
      .. "-subj '/CN=expired test CA' 2>&1 && openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr "
      .. "-subj /CN=localhost 2>&1 && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' >ext && "
      .. "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days -1 "
      .. "-extfile ext 2>&1"):format(H.q(dir)))
    local _, port = H.sh([[python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); ]]
      .. [[print(s.getsockname()[1])']])
    port = assert(tonumber(port:match("%d+")))
    local _, pid = H.sh(("cd %s && openssl s_server -accept 127.0.0.1:%d -cert srv.pem -key srv.key -quiet "
      .. ">server.log 2>&1 </dev/null & echo $!"):format(H.q(dir), port))
    finally(function() os.execute("kill " .. pid:match("%d+") .. " 2>/dev/null") end)
    assert.truthy(H.wait_until(function()
      return H.sh("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port .. "' 2>/dev/null") == 0
    end, 10), "openssl s_server did not listen")
    local c = secured_job("expired", "localhost:" .. port, { ["kafka.consumer.security.protocol"] = "SSL",
      ["kafka.consumer.ssl.ca.location"] = dir .. "/ca.pem" })
    refused(c, nil, { "security.protocol=SSL", "broker localhost:" .. port .. ":",
      "the broker's certificate (subject=/CN=localhost, issuer=/CN=expired test CA) has expired" })
  end)

  describe("SASL_PLAINTEXT with GSSAPI", function()
    it("pulls every record exactly once with the client's keytab", function()
      assert.is_not_nil(S.sasl_plaintext, "the secured broker has no GSSAPI listener (scripts/kafka start --secure --kdc)")
      pulls_everything(secured_job("gssapi", S.sasl_plaintext, gssapi(S.client_keytab)))
    end)

    it("fails at once with the keytab of another principal, or with no keytab, naming the principal and the keytab", function()
      local c = secured_job("gssapi_other", S.sasl_plaintext, gssapi(S.other_keytab))
      refused(c, nil, { "sasl.mechanism=GSSAPI", "the Kerberos login cannot work: kafka.consumer.sasl.kerberos.keytab="
        .. S.other_keytab .. " has no keys of kafka.consumer.sasl.kerberos.principal=" .. S.client_principal,
        "(it holds: " })
      local missing = H.tmp .. "/" .. H.unique("missing") .. ".keytab"
      c = secured_job("gssapi_missing", S.sasl_plaintext, gssapi(missing))
      refused(c, nil, { "the Kerberos login cannot work: kafka.consumer.sasl.kerberos.keytab=" .. missing .. ": " })
    end)
  end)

  describe("secrets", function()
    -- Every output of a run at --log-level debug with librdkafka's security and broker debug log, its --log-file,
    -- and every file it wrote (output, state store, metrics, ticket cache aside: kinit's), for each secret.
    local function run_debug(c, secret)
      local log = c.work .. "/kingest.log"
      local code, out, err = kingest(c, secret, { "run", c.file, "--log-level", "debug", "--log-file", log })
      return code, out, err
    end
    local debug = { ["kafka.consumer.debug"] = "security,broker,protocol" }

    it("never appear in what a run prints or writes, at --log-level debug with librdkafka's debug log", function()
      for _, case in ipairs({
        { "plain", S.sasl_ssl, PLAIN(), S.plain_password, 0 },
        { "plain_wrong", S.sasl_ssl, PLAIN(), "wrong-" .. S.plain_password, 77 },
        { "scram_wrong", S.sasl_ssl, sasl_ssl("SCRAM-SHA-512", S.scram_user), "wrong-" .. S.scram_password, 77 },
        { "mtls", S.ssl, mtls(S.client_cert, S.client_key, true), S.client_key_password, 0 },
      }) do
        local c = secured_job("secret_" .. case[1], case[2], case[3], { props = debug })
        local code, out, err = run_debug(c, case[4])
        assert.are.equal(case[5], code, err)
        assert.truthy(err:find("librdkafka", 1, true), "no librdkafka debug line in the log:\n" .. err)
        assert_secret_absent(case[4], { out, err }, c.work)
      end
    end)
  end)
end)
