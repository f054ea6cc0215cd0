-- spec.support.batch: drives gobblin.runtime the way the engine does, over the engine's own kg_ffi_*
-- functions (libkingest_ffi.so), without a broker: build a batch of record views, run `process` with the
-- engine's resume-after-error loop, and collect what reaches the writer.
local ffi = require("ffi")
local gffi = require("gobblin.ffi")

-- Kept referenced: a library namespace that is collected unloads the library, and with it the kg_ffi_*
-- symbols ffi.C finds through the global load.
local lib = ffi.load(assert(os.getenv("KINGEST_FFI_LIB"), "KINGEST_FFI_LIB is not set"), true)
pcall(ffi.cdef, [[
typedef int (*kg_emit_fn)(void *ctx, const kg_record_t *record, double time, const char *data, size_t len);
typedef struct { kg_emit_fn emit; void *ctx; kg_emit_fn emit_datum; } kg_sink_t;
]])

local B = { lib = lib }

-- A job file holding TEXT; returns its path.
function B.job_file(text)
  local path = os.tmpname() .. ".lua"
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

-- Runs the records of SPECS (array of { value=, key=, topic=, partition=, offset=, timestamp= }) through
-- PROCESSOR in one batch. Returns the written byte strings, the errors (each { index = 0-based record,
-- message = text, stage = name }), and the batch. With OPTS.fail_at = n, the sink refuses the n-th write and
-- every later one with OPTS.rc (default -2, KG_EIO), as a full disk does; the engine does not resume a batch
-- after a refused write, and neither does this.
function B.run(processor, specs, opts)
  opts = opts or {}
  local n = #specs
  local records = ffi.new("kg_record_t[?]", math.max(n, 1))
  local keep = {} -- strings must outlive the batch
  for i, s in ipairs(specs) do
    local r = records[i - 1]
    local topic = s.topic or "t"
    keep[#keep + 1] = topic
    r.topic_ptr = topic
    if s.value ~= nil then
      keep[#keep + 1] = s.value
      r.value_ptr = s.value
      r.value_len = #s.value
    end
    if s.key ~= nil then
      keep[#keep + 1] = s.key
      r.key_ptr = s.key
      r.key_len = #s.key
    end
    r.partition = s.partition or 0
    r.offset = s.offset or (i - 1)
    r.timestamp = s.timestamp or -1
  end
  local written = {}
  local writes, refused = 0, false
  local cb = ffi.cast("kg_emit_fn", function(_, _, _, data, len)
    writes = writes + 1
    if opts.fail_at and writes >= opts.fail_at then
      refused = true
      return opts.rc or -2
    end
    written[#written + 1] = ffi.string(data, len)
    return 0
  end)
  local sink = ffi.new("kg_sink_t", { cb, nil })
  local batch = ffi.new("kg_batch_t", { records, n, 0, sink, -1, -1 })
  local errors = {}
  while batch.next < batch.count do
    local ok, err = pcall(processor.process, batch)
    if ok then break end
    errors[#errors + 1] = { index = batch.next - 1, message = tostring(err), stage = processor.stage() }
    if refused then break end
  end
  cb:free()
  return written, errors, batch
end

return B
