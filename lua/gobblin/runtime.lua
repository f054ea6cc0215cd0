-- gobblin.runtime: the record loop of one task. The engine calls `process` once per batch; it walks the
-- batch's record views, runs decodeRecord and the converter chain on each, and hands what comes out to
-- the writer through the FFI. Nothing here is protected: a script error unwinds to the engine's single
-- protected call, which reads the failing record from batch.next and calls `process` again to resume.
local ffi = require("ffi")
local gffi = require("gobblin.ffi")
local gobblin = require("gobblin")
local metrics = require("gobblin.metrics")

local C = gffi.C
local cast, ffi_string = ffi.cast, ffi.string
local type, error, tostring, select = type, error, tostring, select
local is_many = gobblin.is_many

local M = {}

-- Runs the job file and returns the table it returns. Errors carry the file name (and line).
function M.load_job(path)
  local chunk, err = loadfile(path)
  if not chunk then error(err, 0) end
  local job = chunk()
  if type(job) ~= "table" then
    error(path .. ": the job file must return a table of properties, got " .. type(job), 0)
  end
  return job
end

-- The decodeRecord a job uses: its own, the one of the source module it names (`source`), or
-- KafkaSimpleSource's.
function M.decoder(job)
  local decode = job.decodeRecord
  if decode ~= nil then
    if type(decode) ~= "function" then
      error("decodeRecord must be a function, got " .. type(decode), 0)
    end
    return decode
  end
  local source = job.source
  if source ~= nil then
    if type(source) ~= "string" then error("source must be a module name, got " .. type(source), 0) end
    local ok, mod = pcall(require, source)
    if not ok then error("source " .. source .. " cannot be loaded: " .. tostring(mod), 0) end
    if type(mod) ~= "table" or type(mod.decodeRecord) ~= "function" then
      error("source " .. source .. " has no decodeRecord function", 0)
    end
    return mod.decodeRecord
  end
  return require("gobblin.source.kafka_simple").decodeRecord
end

-- The converter chain of a job: an array of functions.
function M.converters(job)
  local list = job.converters
  if list == nil then return {} end
  if type(list) ~= "table" then error("converters must be an array of functions, got " .. type(list), 0) end
  local out = {}
  for i = 1, #list do
    if type(list[i]) ~= "function" then
      error("converters[" .. i .. "] must be a function, got " .. type(list[i]), 0)
    end
    out[i] = list[i]
  end
  for k in pairs(list) do
    if type(k) ~= "number" or k < 1 or k > #list or k % 1 ~= 0 then
      error("converters must be an array of functions; it has a key " .. tostring(k), 0)
    end
  end
  return out
end

local function log_function(level, prefix)
  return function(_, fmt, ...)
    local msg = select("#", ...) > 0 and string.format(fmt, ...) or tostring(fmt)
    C.kg_ffi_log(level, prefix() .. msg)
  end
end

local cjson_encode
local function encode_table(t)
  if not cjson_encode then
    local cjson = require("cjson").new()
    cjson.encode_sparse_array(true)
    cjson_encode = cjson.encode
  end
  return cjson_encode(t)
end

-- Builds the task's processor for the job file at PATH (nil: a properties job with the built-in source).
-- Returns a table: process(batch pointer), stage() (what ran when the last error happened: "decodeRecord"
-- or "converter N") and collect() (the script's metrics as name -> number).
function M.processor(path)
  local job = path and M.load_job(path) or {}
  local decode = M.decoder(job)
  local chain = M.converters(job)
  local nchain = #chain
  local emit, emit_value = C.kg_ffi_batch_emit, C.kg_ffi_batch_emit_value
  local registry = metrics.new(function() return tonumber(C.kg_ffi_mono_ms()) / 1000 end)
  local conv_in, conv_out = registry:counter("gobblin.converter.records.in"), registry:counter("gobblin.converter.records.out")
  if nchain == 0 then conv_in, conv_out = { inc = function() end }, { inc = function() end } end

  -- ctx: what a script sees of the record being processed, and of its task.
  local states = {}
  local ctx = { metrics = registry, job = job }
  local function where() return "[" .. tostring(ctx.topic) .. ":" .. tostring(ctx.partition) .. "] " end
  ctx.log = {
    debug = log_function(gffi.DEBUG, where), info = log_function(gffi.INFO, where),
    warn = log_function(gffi.WARN, where), error = log_function(gffi.ERROR, where),
  }
  ctx.logger = ctx.log
  local stage = 0 -- 0 decodeRecord, i converter i

  local function write(batch, out)
    local t = type(out)
    if t == "string" then
      emit(batch, out, #out)
    elseif t == "cdata" then
      emit_value(batch, out)
    elseif t == "table" then
      local s = encode_table(out)
      emit(batch, s, #s)
    else
      error("the record to write is a " .. t .. " (" .. tostring(out) .. "); expected a string, a table or the record view", 0)
    end
  end

  -- Runs converters FROM..nchain on VALUE and writes what comes out.
  local function convert(batch, value, from)
    for i = from, nchain do
      stage = i
      conv_in:inc()
      value = chain[i](value, ctx)
      if value == nil then return end
      if is_many(value) then
        local records = value.records
        for j = 1, value.n do
          conv_out:inc()
          local r = records[j]
          if r ~= nil then convert(batch, r, i + 1) end
        end
        return
      end
      conv_out:inc()
    end
    write(batch, value)
  end

  local function process(ptr)
    local batch = cast("kg_batch_t *", ptr)
    local records = batch.records
    local n = batch.count
    if n == 0 then return end
    local first = records[0]
    ctx.topic = ffi_string(first.topic_ptr)
    ctx.partition = first.partition
    local key = ctx.topic .. ":" .. ctx.partition
    local st = states[key]
    if not st then
      st = {}
      states[key] = st
    end
    ctx.state = st
    while batch.next < n do
      local i = batch.next
      batch.next = i + 1
      local rec = records[i]
      ctx.offset = rec.offset
      ctx.timestamp = rec.timestamp
      ctx.record = rec
      stage = 0
      local value = decode(rec, ctx)
      if value ~= nil then
        if is_many(value) then
          for j = 1, value.n do
            local r = value.records[j]
            if r ~= nil then convert(batch, r, 1) end
          end
        elseif nchain == 0 then
          write(batch, value)
        else
          convert(batch, value, 1)
        end
      end
    end
  end

  local function stage_name()
    return stage == 0 and "decodeRecord" or ("converter " .. stage)
  end

  return { process = process, stage = stage_name, collect = function() return registry:snapshot() end }
end

return M
