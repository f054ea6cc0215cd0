-- A CSV-to-JSON extractor: each payload is one CSV line "id,product,quantity,price"; decodeRecord turns it
-- into a table with typed fields, written as JSON. A line that is not valid CSV, or whose numbers are not
-- numbers, goes to <output>/_errors with its error (decode.error.policy=quarantine).
--   KAFKA_BROKERS=host:port TOPIC=orders_csv kingest run scripts/examples/csv_to_json.lua
local csv = require("gobblin.source.kafka_csv")

local parse = csv.decoder({ columns = { "id", "product", "quantity", "price" } })

return {
  ["job.name"] = "example_csv_to_json",
  ["kafka.brokers"] = os.getenv("KAFKA_BROKERS") or "localhost:9092",
  ["topic.whitelist"] = os.getenv("TOPIC") or "orders_csv",
  ["bootstrap.with.offset"] = "earliest",
  ["writer.file.path.type"] = "tablename",
  ["writer.output.format"] = "json",
  ["decode.error.policy"] = "quarantine",
  -- Up to half of a task's lines may be bad; past that the run fails and no offset moves.
  ["decode.error.max.ratio"] = 0.5,

  decodeRecord = function(msg, ctx)
    local row = parse(msg)
    if row == nil then return nil end
    local quantity, price = tonumber(row.quantity), tonumber(row.price)
    if not quantity or not price then
      error("quantity and price must be numbers, got " .. tostring(row.quantity) .. " and " .. tostring(row.price))
    end
    ctx.metrics:counter("orders.parsed"):inc()
    return { id = tonumber(row.id) or row.id, product = row.product, quantity = quantity, price = price,
             total = quantity * price }
  end,
}
