-- gobblin.source.kafka_csv: decodeRecord parses each payload as one CSV line (RFC 4180 quoting: fields in
-- double quotes may hold commas, and "" stands for a quote).
--
--   local csv = require("gobblin.source.kafka_csv")
--   decodeRecord = csv.decoder{ columns = { "id", "name", "price" }, separator = "," }
--
-- With columns, a record becomes a table keyed by column name; without, an array of strings. A line with
-- more fields than columns is an error; missing trailing fields are nil.
local M = {}

local sub, find, byte = string.sub, string.find, string.byte
local QUOTE = byte('"')

-- Splits LINE into an array of fields. Returns nil and a message for an unterminated quote.
function M.parse(line, separator)
  separator = separator or ","
  local fields, n = {}, 0
  local pos, len = 1, #line
  if sub(line, -2) == "\r\n" then len = len - 2 elseif sub(line, -1) == "\n" then len = len - 1 end
  while true do
    n = n + 1
    if pos <= len and byte(line, pos) == QUOTE then
      local buf, i = {}, pos + 1
      while true do
        local q = find(line, '"', i, true)
        if not q or q > len then return nil, "unterminated quoted field " .. n end
        buf[#buf + 1] = sub(line, i, q - 1)
        if byte(line, q + 1) == QUOTE and q + 1 <= len then
          buf[#buf + 1] = '"'
          i = q + 2
        else
          pos = q + 1
          break
        end
      end
      fields[n] = table.concat(buf)
      if pos > len then break end
      if sub(line, pos, pos + #separator - 1) ~= separator then
        return nil, "unexpected character after quoted field " .. n
      end
      pos = pos + #separator
    else
      local s = find(line, separator, pos, true)
      if not s or s > len then
        fields[n] = sub(line, pos, len)
        break
      end
      fields[n] = sub(line, pos, s - 1)
      pos = s + #separator
    end
  end
  return fields
end

-- A decodeRecord for OPTS (columns, separator).
function M.decoder(opts)
  opts = opts or {}
  local columns, separator = opts.columns, opts.separator or ","
  return function(msg)
    local line = type(msg) == "string" and msg or msg:value()
    if line == nil then return nil end
    local fields, err = M.parse(line, separator)
    if not fields then error("invalid CSV: " .. err, 0) end
    if not columns then return fields end
    if #fields > #columns then
      error(string.format("invalid CSV: %d fields, expected at most %d (%s)", #fields, #columns,
        table.concat(columns, ",")), 0)
    end
    local out = {}
    for i = 1, #columns do out[columns[i]] = fields[i] end
    return out
  end
end

M.decodeRecord = M.decoder()

return M
