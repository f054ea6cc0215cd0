-- gobblin: what job scripts use to shape their output.
--
-- A converter returns nil to drop a record, a value to pass one on, or gobblin.many{...} to pass several
-- on. A plain Lua table (or array) returned by a converter is always ONE record, so a record that is
-- itself an array cannot be mistaken for several.
local M = {}

local many_mt = { __name = "gobblin.many" }

-- Wraps the records of LIST (an array) so that a converter's caller passes each on.
function M.many(list)
  if type(list) ~= "table" then
    error("gobblin.many expects an array of records, got " .. type(list), 2)
  end
  return setmetatable({ records = list, n = #list }, many_mt)
end

-- True when V was made by gobblin.many.
function M.is_many(v)
  return type(v) == "table" and getmetatable(v) == many_mt
end

return M
