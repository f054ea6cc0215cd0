-- Bytes to JSON: each payload is JSON text; the job parses it, adds where the record came from, and
-- writes one JSON object per line.
--   KAFKA_BROKERS=host:port TOPIC=events kingest run scripts/examples/bytes_to_json.lua
local converter = require("gobblin.converter")

return {
  ["job.name"] = "example_bytes_to_json",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "events",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["writer.output.format"] = "json",
  -- A payload that is not JSON fails converter 1 and is skipped and counted, up to 1,000 per task and a third
  -- of its records; past that the run fails and no offset moves.
  ["task.skip.error.records"] = 1000,
  ["decode.error.max.ratio"] = 0.34,

  converters = {
    converter.bytes_to_json(),
    function(event, ctx)
      event._kafka = { topic = ctx.topic, partition = ctx.partition, offset = ctx.offset }
      return event
    end,
    converter.json_to_bytes(),
  },
}
