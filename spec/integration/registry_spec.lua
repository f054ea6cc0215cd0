-- The schema registry of the tests (scripts/registry, started by the "registry" fixture) and the producer of
-- Avro records (spec/support/avro_produce.py): records on the topic are framed as Gobblin's decoders read them,
-- and the registry serves their schemas at the paths the client asks (Confluent's API, and LinkedIn's through
-- the registry's v2 API). Checked with kcat, xxd, curl and md5sum, not with kingest.
local H = require("support.harness")

local SCHEMA = '{"type":"record","name":"Event","namespace":"kingest.test","fields":' ..
  '[{"name":"id","type":"long"},{"name":"name","type":"string"}]}'

local function registry(args)
  local cmd = H.q(H.root .. "/scripts/registry")
  for _, a in ipairs(args) do cmd = cmd .. " " .. H.q(a) end
  return H.sh(cmd)
end

local trim = H.trim

local avro = H.avro_produce

-- The records of TOPIC as hex strings.
local function payloads_hex(topic)
  local code, out, err = H.sh("kcat -C -b " .. H.q(H.bootstrap()) .. " -t " .. H.q(topic) ..
    " -X fetch.wait.max.ms=10 -e -q -f '%s' | xxd -p | tr -d '\\n'")
  assert(code == 0, "kcat: " .. err)
  return trim(out)
end

describe("scripts/registry", function()
  local url, schema_file
  setup(function()
    local code, out, err = registry({ "url" })
    assert(code == 0, "no registry: " .. err)
    url = trim(out)
    os.execute("mkdir -p " .. H.q(H.tmp))
    schema_file = H.tmp .. "/" .. H.unique("schema") .. ".avsc"
    -- Spaced and indented on purpose: the registered text is the compact form.
    H.spit(schema_file, (SCHEMA:gsub(",", ", "):gsub(":", ": ")))
  end)

  it("reports the running registry, bound to loopback, and answers its health check", function()
    assert.matches("^http://127%.0%.0%.1:%d+$", url)
    local code, out = registry({ "status" })
    assert.equals(0, code)
    assert.matches("^running " .. url:gsub("%p", "%%%0") .. " pid %d+\n$", out)
    local _, health = H.sh("curl -sf " .. H.q(url .. "/health/ready"))
    assert.matches('"status": *"UP"', health)
  end)

  it("has --help on every command and refuses unknown ones", function()
    for _, cmd in ipairs({ "start", "stop", "status", "url" }) do
      local code, out = registry({ cmd, "--help" })
      assert.equals(0, code)
      assert.matches("^usage: scripts/registry " .. cmd, out)
    end
    local code, _, err = registry({ "restart" })
    assert.equals(2, code)
    assert.matches("unknown command 'restart'", err)
  end)

  it("registers a Confluent schema and produces records framed with its 4-byte id", function()
    local topic = H.unique("avro_confluent")
    H.create_topic(topic, 1)
    local api = url .. "/apis/ccompat/v7"
    local code, _, err = avro({ "produce", "confluent", H.bootstrap(), api, topic, schema_file },
      '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n')
    assert(code == 0, err)
    local _, id = avro({ "register", "confluent", api, topic, schema_file })
    id = tonumber(trim(id))
    assert.is_number(id)
    local _, latest = H.sh("curl -sf " .. H.q(api .. "/subjects/" .. topic .. "-value/versions/latest"))
    assert.matches('"id":' .. id, latest, 1, true)
    local _, by_id = H.sh("curl -sf " .. H.q(api .. "/schemas/ids/" .. id))
    assert.matches(SCHEMA:gsub('"', '\\"'), by_id, 1, true)
    -- byte 0, the id big-endian, then long 1 (zigzag 02), string "a" (02 61); long 2, string "b".
    local frame = string.format("00%08x", id)
    assert.equals(frame .. "02" .. "0261" .. frame .. "04" .. "0262", payloads_hex(topic))
  end)

  it("stores a LinkedIn schema under id=<md5> and latest_with_type=<topic>, and frames records with the MD5",
    function()
      local topic = H.unique("avro_linkedin")
      H.create_topic(topic, 1)
      local group = url .. "/apis/registry/v2/groups/" .. H.unique("group") .. "/artifacts"
      local code, _, err = avro({ "produce", "linkedin", H.bootstrap(), group, topic, schema_file },
        '{"id": 3, "name": "c"}\n')
      assert(code == 0, err)
      local _, md5 = H.sh("printf %s " .. H.q(SCHEMA) .. " | md5sum | cut -c1-32")
      md5 = trim(md5)
      local _, id = avro({ "register", "linkedin", group, topic, schema_file })
      assert.equals(md5, trim(id))
      local _, by_id = H.sh("curl -sf " .. H.q(group .. "/id=" .. md5))
      assert.equals(SCHEMA, by_id)
      local _, latest = H.sh("curl -sf " .. H.q(group .. "/latest_with_type=" .. topic))
      assert.equals(SCHEMA, latest)
      assert.equals("00" .. md5 .. "06" .. "0263", payloads_hex(topic))
    end)

  it("frames records with a given schema id and registers nothing", function()
    local topic = H.unique("avro_unknown")
    H.create_topic(topic, 1)
    local code, _, err = avro({ "produce", "confluent", H.bootstrap(), url .. "/apis/ccompat/v7", topic,
      schema_file, "--schema-id", "999999" }, '{"id": 1, "name": "a"}\n')
    assert(code == 0, err)
    assert.equals("00000f423f020261", payloads_hex(topic))
    local status = H.sh("curl -sf " .. H.q(url .. "/apis/ccompat/v7/subjects/" .. topic .. "-value/versions/latest"))
    assert.are_not.equals(0, status)
  end)
end)
