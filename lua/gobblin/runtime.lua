-- gobblin.runtime: the record loop of one task. The engine calls the function that `processor` returns
-- once per batch; it walks the batch's record views, decodes each, and hands the result to the writer.
local ffi = require("ffi")
local gffi = require("gobblin.ffi")

local C = gffi.C
local cast = ffi.cast
local type, error, tostring = type, error, tostring

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

-- The decodeRecord a job uses: its own, or the one of the source library it names.
function M.decoder(job)
  local decode = job.decodeRecord
  if decode ~= nil then
    if type(decode) ~= "function" then
      error("decodeRecord must be a function, got " .. type(decode), 0)
    end
    return decode
  end
  return require("gobblin.source.kafka_simple").decodeRecord
end

local cjson
local function encode_table(t)
  cjson = cjson or require("cjson")
  return cjson.encode(t)
end

-- Returns the batch function for the job file at PATH (nil: a properties job with the built-in source).
function M.processor(path)
  local job = path and M.load_job(path) or {}
  local decode = M.decoder(job)
  local emit, emit_value = C.kg_ffi_batch_emit, C.kg_ffi_batch_emit_value

  local function write(batch, out)
    local t = type(out)
    if t == "string" then
      emit(batch, out, #out)
    elseif t == "cdata" then
      emit_value(batch, out)
    elseif t == "table" then
      local s = encode_table(out)
      emit(batch, s, #s)
    elseif t ~= "nil" then
      error("decodeRecord returned a " .. t .. " (" .. tostring(out) .. "); expected a string, a table, the record or nil", 0)
    end
  end

  return function(ptr)
    local batch = cast("kg_batch_t *", ptr)
    local records = batch.records
    local n = batch.count
    while batch.next < n do
      local i = batch.next
      batch.next = i + 1
      write(batch, decode(records[i]))
    end
  end
end

return M
