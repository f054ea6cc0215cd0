-- A custom size estimator: the packer balances tasks by estimated work-unit size. This job says a record
-- of a topic named "*_heavy" costs ten times as much as others, and otherwise trusts the average record
-- size the previous run stored (500 bytes when there is no history yet).
--   KAFKA_BROKERS=host:port TOPICS='clicks,clicks_heavy' kingest run scripts/examples/custom_estimator.lua
return {
  ["job.name"] = "example_custom_estimator",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPICS") or "clicks.*",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["mr.job.max.mappers"] = 2,
  ["kafka.workunit.size.estimator.type"] = "CUSTOM",

  -- workunit: topic, partition, low, high, range, earliest, latest.
  -- history: nil for a partition never pulled, else next_offset and, once records were pulled,
  -- avg_record_size, avg_record_millis, records_pulled.
  estimateSize = function(workunit, history)
    local size = history and history.avg_record_size or 500
    local weight = workunit.topic:match("_heavy$") and 10 or 1
    return workunit.range * size * weight
  end,
}
