-- Reading at any latency kcat reads at: a broker behind a proxy that delays each direction by 300 ms, and a
-- broker-side fetch wait (fetch.min.bytes + fetch.wait.max.ms). Every record must arrive in one run, which
-- must end SUCCESSFUL, not PARTIAL; and a run whose fetch wait outlasts kafka.fetch.timeout.ms, so that not one
-- record arrives, fails and says why.
local H = require("support.harness")

local proxy_pid

-- Starts scripts/delay-proxy in front of the broker's DELAYED listener; returns the address to bootstrap from.
local function start_proxy(delay_ms, rate)
  local code, out, err = H.kafka({ "delayed" })
  assert(code == 0, "scripts/kafka delayed: " .. err)
  local advertised, listener = out:match("^(%S+) (%S+)")
  local port = advertised:match(":(%d+)$")
  local log = H.tmp .. "/" .. H.unique("proxy") .. ".log"
  local cmd = H.q(H.root .. "/scripts/delay-proxy") .. " " .. port .. " " .. H.q(listener) .. " --delay-ms " ..
              delay_ms .. (rate and (" --rate " .. rate) or "") .. " >" .. H.q(log) .. " 2>&1 & echo $!"
  local c, pid = H.sh(cmd)
  assert(c == 0, "cannot start the proxy")
  proxy_pid = tonumber(pid:match("%d+"))
  assert(H.wait_until(function() return (H.slurp(log) or ""):find("delay-proxy:", 1, true) end, 10),
         "the proxy did not start: " .. (H.slurp(log) or ""))
  return advertised
end

local function stop_proxy()
  if proxy_pid then os.execute("kill " .. proxy_pid .. " 2>/dev/null") end
  proxy_pid = nil
end

-- The result of the newest run in the history of JOB under WORK, read with sqlite3.
local function last_result(work, job)
  local rows = H.sqlite(work .. "/state-store/" .. job .. ".db", "SELECT result FROM runs ORDER BY started_ms DESC LIMIT 1")
  return rows[1] and rows[1][1]
end

local function job_for(work, topic, brokers, extra)
  return H.job({ dir = work, name = "latency", brokers = brokers, topics = topic, props = extra })
end

-- Runs JOB and checks that every record of TOPIC arrived in this one run, as kcat reads them.
local function assert_all_arrive(job, work, topic)
  local code, _, err = H.run(job, work)
  assert.are.equal(0, code, err)
  assert.are.same({}, H.grep(err, "stopped short"))
  assert.are.equal("SUCCESSFUL", last_result(work, "latency"))
  assert.are.same(H.sorted(H.kcat_payloads(topic)), H.sorted(H.output_lines(work .. "/job-output/" .. topic)))
  assert.are.equal(H.offsets(topic)[topic .. ":0"].latest, H.stored_offsets(work, "latency")[topic .. ":0"])
end

describe("reading from a slow broker", function()
  after_each(stop_proxy)

  it("reads every record through a proxy that delays each direction by 300 ms", function()
    local topic = H.topic_with("latency", H.records("t", 0, 0, 1999))
    local work = H.workdir("latency")
    local brokers = start_proxy(300)
    assert_all_arrive(job_for(work, topic, brokers), work, topic)
  end)

  it("reads every record through a 300 ms proxy when the prefetch queue fills again and again", function()
    -- A small prefetch bound makes the queue fill many times in one partition: each refill must still arrive.
    local topic = H.topic_with("latency_fill", H.records("t", 0, 0, 2999))
    local work = H.workdir("latency")
    local brokers = start_proxy(300)
    assert_all_arrive(job_for(work, topic, brokers, { ["kafka.consumer.queued.min.messages"] = "500" }), work, topic)
  end)

  it("reads every record through a proxy that also limits the bandwidth to 200 kB/s", function()
    local lines = {}
    for i = 1, 4000 do lines[i] = string.format("%s-%06d", string.rep("x", 90), i) end
    local topic = H.topic_with("latency_rate", lines)
    local work = H.workdir("latency")
    local brokers = start_proxy(100, 200000)
    assert_all_arrive(job_for(work, topic, brokers), work, topic)
  end)

  it("reads past a large aborted transaction through a 300 ms proxy (read_committed)", function()
    local topic = H.unique("latency_txn")
    H.create_topic(topic, 1)
    local code, _, err = H.sh(H.q(H.root .. "/spec/support/txn_produce.py") .. " " .. H.q(H.bootstrap()) .. " " ..
      H.q(topic) .. " 100000 50 t")
    assert.are.equal(0, code, err)
    local work = H.workdir("latency")
    local brokers = start_proxy(300)
    assert_all_arrive(job_for(work, topic, brokers), work, topic)
    local want = {}
    for i = 0, 49 do want[#want + 1] = "t-committed-" .. i end
    assert.are.same(want, H.output_lines(work .. "/job-output/" .. topic))
  end)

  it("reads every record with fetch.min.bytes=1048576 and fetch.wait.max.ms=1000 on a small topic", function()
    local topic = H.topic_with("latency_wait", H.records("t", 0, 0, 999))
    local work = H.workdir("latency")
    local job = job_for(work, topic, H.bootstrap(), {
      ["kafka.consumer.fetch.min.bytes"] = "1048576",
      ["kafka.consumer.fetch.wait.max.ms"] = "1000",
    })
    assert_all_arrive(job, work, topic)
    -- And a second run, with nothing new, stays successful and pulls nothing.
    local code, _, err = H.run(job, work)
    assert.are.equal(0, code, err)
    assert.are.equal("SUCCESSFUL", last_result(work, "latency"))
  end)

  it("fails when kafka.fetch.timeout.ms passes before any record: nothing moved, exit 7 whatever "
    .. "job.fail.on.partial says, the partition and why in the error and the history, no offset stored", function()
    local topic = H.topic_with("latency_partial", H.records("t", 0, 0, 99))
    -- The broker holds each fetch for a second; the run waits at most 300 ms for a record.
    local slow = {
      ["kafka.consumer.fetch.min.bytes"] = "1048576",
      ["kafka.consumer.fetch.wait.max.ms"] = "1000",
      ["kafka.fetch.timeout.ms"] = "300",
    }
    for _, partial in ipairs({ false, true }) do
      local work = H.workdir("latency")
      slow["job.fail.on.partial"] = partial
      local code, _, err = H.run(job_for(work, topic, H.bootstrap(), slow), work)
      assert.are.equal(7, code, err)
      local why = "nothing moved: 1 partitions had records to read and not one was read, so nothing is committed and "
        .. "the offsets stay where they were: " .. topic .. ":0 (offsets 0 to 100): no record for 300 ms "
        .. "(kafka.fetch.timeout.ms) at offset 0 (kafka.brokers=" .. H.bootstrap() .. ")"
      assert.are.equal("kingest: " .. why, H.last_line(err))
      local rows = H.sqlite(work .. "/state-store/latency.db",
        "SELECT result, message FROM runs ORDER BY started_ms DESC LIMIT 1")
      assert.same({ { "FAILED", why } }, rows)
      assert.same({}, H.stored_offsets(work, "latency"))
      assert.same({}, H.files(work .. "/job-output"))
    end
  end)
end)
