-- The seed's quick start, against the real broker: two messages end up in job-output/<topic>, with the
-- seed's log lines; a second run pulls nothing and a third pulls exactly the one new record.
local H = require("support.harness")

describe("the quick start", function()
  local topic, work, job

  setup(function()
    topic = H.unique("test")
    work = H.workdir("quickstart")
    H.create_topic(topic, 1)
    H.produce(topic, { "This is a message", "This is a another message" })
    job = H.job_pull(work, table.concat({
      "job.name=GobblinKafkaQuickStart",
      "job.group=GobblinKafka",
      "job.description=Gobblin quick start job for Kafka",
      "job.lock.enabled=false",
      "",
      "kafka.brokers=" .. H.bootstrap(),
      "topic.whitelist=" .. topic,
      "",
      "source.class=gobblin.source.extractor.extract.kafka.KafkaSimpleSource",
      "extract.namespace=gobblin.extract.kafka",
      "",
      "writer.builder.class=gobblin.writer.SimpleDataWriterBuilder",
      "writer.file.path.type=tablename",
      "writer.destination.type=HDFS",
      "writer.output.format=txt",
      "",
      "data.publisher.type=gobblin.publisher.BaseDataPublisher",
      "",
      "mr.job.max.mappers=1",
      "",
      "metrics.reporting.file.enabled=true",
      "metrics.log.dir=${env:GOBBLIN_WORK_DIR}/metrics",
      "metrics.reporting.file.suffix=txt",
      "",
      "bootstrap.with.offset=earliest",
    }, "\n") .. "\n", "kafka-quickstart.pull")
  end)

  it("pulls both messages into job-output/<topic> and logs the seed's lines", function()
    local code, _, err = H.kingest({ "run", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.same({ "This is a message", "This is a another message" }, H.output_lines(work .. "/job-output/" .. topic))
    for _, line in ipairs({
      "INFO Pulling topic " .. topic,
      "INFO Pulling partition " .. topic .. ":0 from offset 0 to 2, range=2",
      "INFO Finished pulling partition " .. topic .. ":0",
      "INFO Finished pulling topic " .. topic,
      "INFO Extracted 2 data records",
      "INFO Actual high watermark for partition " .. topic .. ":0=2, expected=2",
    }) do
      assert.truthy(err:find(line, 1, true), "missing log line: " .. line .. "\n" .. err)
    end
    assert.truthy(err:match("INFO Task task_GobblinKafkaQuickStart_%d+_0 completed in %d+ms with state SUCCESSFUL"), err)
    -- The output file follows Gobblin's naming, and the metrics file is there with the counts.
    local files = H.files(work .. "/job-output/" .. topic)
    assert.are.equal(1, #files)
    assert.matches("^part%.task_GobblinKafkaQuickStart_%d+_0%.txt$", files[1])
    local metrics = H.files(work .. "/metrics")
    assert.are.equal(1, #metrics)
    assert.matches("^GobblinKafkaQuickStart%.metrics%.job_GobblinKafkaQuickStart_%d+%.txt$", metrics[1])
    local text = H.slurp(work .. "/metrics/" .. metrics[1])
    assert.matches('"gobblin.extractor.records.read":2', text, 1, true)
    assert.matches('"gobblin.writer.records.written":2', text, 1, true)
    assert.matches('"gobblin.writer.bytes.written":44', text, 1, true)
    -- Staging and task output are cleaned up.
    assert.same({}, H.files(work .. "/task-data"))
    assert.same({ [topic .. ":0"] = 2 }, H.stored_offsets(work, "GobblinKafkaQuickStart"))
  end)

  it("pulls nothing on a second run", function()
    local code, _, err = H.kingest({ "run", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.truthy(err:find("Pulling partition " .. topic .. ":0 from offset 2 to 2, range=0", 1, true), err)
    assert.truthy(err:find("Extracted 0 data records", 1, true), err)
    assert.are.equal(1, #H.files(work .. "/job-output/" .. topic))
  end)

  it("pulls exactly the one new record on a third run", function()
    H.produce(topic, { "This is a third message" })
    local code, _, err = H.kingest({ "run", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.truthy(err:find("Extracted 1 data records", 1, true), err)
    assert.same({ "This is a message", "This is a another message", "This is a third message" },
      H.output_lines(work .. "/job-output/" .. topic))
    assert.same(H.kcat_payloads(topic), H.output_lines(work .. "/job-output/" .. topic))
    assert.same({ [topic .. ":0"] = 3 }, H.stored_offsets(work, "GobblinKafkaQuickStart"))
  end)

  it("shows the stored offset with `kingest state show`", function()
    local code, out, err = H.kingest({ "state", "show", job }, { GOBBLIN_WORK_DIR = work })
    assert.are.equal(0, code, err)
    assert.matches(topic .. "%s+0%s+3%s", out)
    code, out = H.kingest({ "state", "show", "GobblinKafkaQuickStart", "--work-dir", work })
    assert.are.equal(0, code)
    assert.matches(topic .. "%s+0%s+3%s", out)
  end)
end)
