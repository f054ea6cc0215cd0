-- A Lua extractor: JSON payloads in, Avro files out. The job declares the output schema; the converter
-- gobblin.converter.json_to_avro parses each payload and fits it to the schema (fields the schema lacks are
-- dropped, missing ones take their default; a value of the wrong type fails the record, naming the field).
-- Records that fail are quarantined to <topic>/_errors, up to 1000 per task and a tenth of its records.
--   KAFKA_BROKERS=host:port TOPIC=clicks kingest run scripts/examples/json_to_avro.lua
local converter = require("gobblin.converter")

return {
  ["job.name"] = "example_json_to_avro",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "clicks",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["writer.output.format"] = "avro",
  ["writer.codec.type"] = "snappy",
  ["decode.error.policy"] = "quarantine",
  ["task.skip.error.records"] = 1000,

  schema = [[{"type": "record", "name": "Click", "namespace": "example", "fields": [
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "referrer", "type": ["null", "string"], "default": null}]}]],

  converters = { converter.json_to_avro() },
}
