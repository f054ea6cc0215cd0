-- gobblin.metrics: counters, meters and histograms a script creates through ctx.metrics, reported with
-- the engine's own metrics at the end of the task (Gobblin's "Task Level Metrics").
local M = {}

local Counter = {}
Counter.__index = Counter
-- N may be a Lua number or a number cdata (msg.value_len): both count as their value.
local function amount(n, what)
  if n == nil then return 1 end
  local v = tonumber(n)
  if not v then error(what .. " expects a number, got " .. type(n), 3) end
  return v
end

function Counter:inc(n) self.count = self.count + amount(n, "counter:inc") end
function Counter:dec(n) self.count = self.count - amount(n, "counter:dec") end

local Meter = {}
Meter.__index = Meter
function Meter:mark(n) self.count = self.count + amount(n, "meter:mark") end

local Histogram = {}
Histogram.__index = Histogram
-- Keeps every value up to a cap, then a uniform reservoir sample of that size (Vitter's algorithm R).
local RESERVOIR = 4096
function Histogram:update(v)
  v = tonumber(v)
  if not v then error("histogram update expects a number", 2) end
  local n = self.count + 1
  self.count = n
  self.sum = self.sum + v
  if v < self.min then self.min = v end
  if v > self.max then self.max = v end
  if n <= RESERVOIR then
    self.values[n] = v
  else
    local j = math.random(1, n)
    if j <= RESERVOIR then self.values[j] = v end
  end
end

local function percentile(sorted, p)
  if #sorted == 0 then return 0 end
  local i = math.max(1, math.ceil(p * #sorted))
  return sorted[i]
end

-- A registry: one per task.
function M.new(clock)
  local reg = { counters = {}, meters = {}, histograms = {}, clock = clock or os.time }
  local start = reg.clock()

  function reg:counter(name)
    local c = self.counters[name]
    if not c then
      c = setmetatable({ count = 0 }, Counter)
      self.counters[name] = c
    end
    return c
  end

  function reg:meter(name)
    local m = self.meters[name]
    if not m then
      m = setmetatable({ count = 0 }, Meter)
      self.meters[name] = m
    end
    return m
  end

  function reg:histogram(name)
    local h = self.histograms[name]
    if not h then
      h = setmetatable({ count = 0, sum = 0, min = math.huge, max = -math.huge, values = {} }, Histogram)
      self.histograms[name] = h
    end
    return h
  end

  -- Flat name -> number pairs: counters as they are, meters as .count and .meanRate (per second),
  -- histograms as .count .min .max .mean .p50 .p75 .p95 .p99.
  function reg:snapshot()
    local out = {}
    for name, c in pairs(self.counters) do out[name] = c.count end
    local elapsed = math.max(self.clock() - start, 1e-3)
    for name, m in pairs(self.meters) do
      out[name .. ".count"] = m.count
      out[name .. ".meanRate"] = m.count / elapsed
    end
    for name, h in pairs(self.histograms) do
      out[name .. ".count"] = h.count
      if h.count > 0 then
        local sorted = {}
        for i = 1, #h.values do sorted[i] = h.values[i] end
        table.sort(sorted)
        out[name .. ".min"] = h.min
        out[name .. ".max"] = h.max
        out[name .. ".mean"] = h.sum / h.count
        out[name .. ".p50"] = percentile(sorted, 0.50)
        out[name .. ".p75"] = percentile(sorted, 0.75)
        out[name .. ".p95"] = percentile(sorted, 0.95)
        out[name .. ".p99"] = percentile(sorted, 0.99)
      end
    end
    return out
  end

  return reg
end

return M
