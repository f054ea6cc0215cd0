-- A one-to-many converter: each payload is an order with a list of items; the job writes one record per
-- item, carrying the order's id. gobblin.many marks the list as several records (a table returned as it is
-- would be one record, even an array).
--   KAFKA_BROKERS=host:port TOPIC=orders kingest run scripts/examples/one_to_many.lua
local gobblin = require("gobblin")
local converter = require("gobblin.converter")

return {
  ["job.name"] = "example_one_to_many",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "orders",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["writer.output.format"] = "json",

  source = "gobblin.source.kafka_json",
  converters = {
    function(order)
      local items = {}
      for i, item in ipairs(order.items or {}) do
        items[i] = { order_id = order.id, line = i, sku = item.sku, quantity = item.quantity }
      end
      return gobblin.many(items) -- an order without items yields no record
    end,
  },
}
