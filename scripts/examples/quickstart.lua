-- The seed's quick-start job, as a job.lua: pull every topic of the local broker into text files.
-- The broker address comes from KAFKA_BROKERS (scripts/quickstart sets it), else localhost:9092.
return {
  ["job.name"] = "GobblinKafkaQuickStart",
  ["job.group"] = "GobblinKafka",
  ["job.description"] = "Gobblin quick start job for Kafka",
  ["job.lock.enabled"] = false,

  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("QUICKSTART_TOPICS") or "test",

  ["source.class"] = "gobblin.source.extractor.extract.kafka.KafkaSimpleSource",
  ["extract.namespace"] = "gobblin.extract.kafka",

  ["writer.builder.class"] = "gobblin.writer.SimpleDataWriterBuilder",
  ["writer.file.path.type"] = "tablename",
  ["writer.destination.type"] = "HDFS",
  ["writer.output.format"] = "txt",

  ["data.publisher.type"] = "gobblin.publisher.BaseDataPublisher",

  ["mr.job.max.mappers"] = 1,

  ["metrics.reporting.file.enabled"] = true,
  ["metrics.log.dir"] = (os.getenv("GOBBLIN_WORK_DIR") or ".") .. "/metrics",
  ["metrics.reporting.file.suffix"] = "txt",

  ["bootstrap.with.offset"] = "earliest",
}
