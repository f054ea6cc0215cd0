-- A filtering converter: the payloads are JSON log events; only those at level ERROR or FATAL are kept,
-- and only their time, service and message fields.
--   KAFKA_BROKERS=host:port TOPIC=logs kingest run scripts/examples/filter.lua
local converter = require("gobblin.converter")

local wanted = { ERROR = true, FATAL = true }

return {
  ["job.name"] = "example_filter",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "logs",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["writer.output.format"] = "json",

  source = "gobblin.source.kafka_json",
  converters = {
    converter.filter(function(event, ctx)
      local keep = wanted[event.level] == true
      if not keep then ctx.metrics:counter("events.filtered.out"):inc() end
      return keep
    end),
    converter.project({ "time", "service", "message" }),
  },
}
