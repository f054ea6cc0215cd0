-- gobblin.source.kafka_json: decodeRecord parses each payload as JSON into a Lua table (written back as
-- JSON, or shaped by converters). A null payload is dropped; a payload that is not JSON is a decoding
-- error, handled by decode.error.policy. The tables keep gobblin.json's markers, so that a record is written
-- back as it came: [] as [], {} as {}, each object's keys in their order.
local converter = require("gobblin.converter")

local M = {}

M.decodeRecord = converter.bytes_to_json()

return M
