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

-- The keys of a job table that the runtime reads: the job's code. Every other key is a property, which the
-- engine flattens into dotted names (M.properties); this is the one list of them.
M.HOOKS = { "decodeRecord", "converters", "estimateSize", "source", "partition" }
local is_hook = {}
for _, name in ipairs(M.HOOKS) do is_hook[name] = true end

-- The sources kingest provides (lua/gobblin/source/*.lua), for `source`.
M.SOURCES = { "gobblin.source.kafka_json", "gobblin.source.kafka_csv", "gobblin.source.kafka_simple" }

-- Edit distance between A and B (at most LIMIT + 1: the count stops there).
local function edit_distance(a, b, limit)
  if math.abs(#a - #b) > limit then return limit + 1 end
  local row = {}
  for j = 0, #b do row[j] = j end
  for i = 1, #a do
    local diag, best = row[0], i
    row[0] = i
    for j = 1, #b do
      local up = row[j]
      local v = diag + (a:byte(i) == b:byte(j) and 0 or 1)
      if up + 1 < v then v = up + 1 end
      if row[j - 1] + 1 < v then v = row[j - 1] + 1 end
      row[j] = v
      diag = up
      if v < best then best = v end
    end
    if best > limit then return limit + 1 end
  end
  return row[#b]
end

-- The name of CANDIDATES that NAME likely misspells (case, `_` and `-` aside, two edits at most), or nil.
local function nearest(name, candidates)
  local function norm(s) return (s:lower():gsub("[_%-]", "")) end
  local n, best, best_d = norm(name), nil, 3
  for _, c in ipairs(candidates) do
    local d = edit_distance(n, norm(c), 2)
    if d < best_d then best, best_d = c, d end
  end
  return best
end
M.nearest = nearest

local HOOK_LIST = "decodeRecord, converters, estimateSize, source and partition"

-- Refuses functions the runtime would never call: any function-valued key of table T other than the hooks
-- (at any depth), and any list of functions. NAME is T's dotted name (nil for the job table).
local function check_code(t, name, path)
  for k, v in pairs(t) do
    local key = type(k) == "string" and k or nil
    local full = key and (name and name .. "." .. key or key) or
      string.format("%s[%s]", name or "the job table", tostring(k))
    if name == nil and key and is_hook[key] then
      -- code the runtime reads; M.decoder, M.converters and the estimator check it
    elseif type(v) == "function" or (type(v) == "table" and type(v[1]) == "function") then
      local near = key and nearest(key, M.HOOKS)
      local hint = ""
      if near then hint = name and ("; did you mean " .. near .. ", at the top of the job table?") or ("; did you mean " .. near .. "?") end
      error(string.format("%s: %s is %s, but kingest calls only the job table's %s%s", path, full,
        type(v) == "function" and "a function" or "a list of functions", HOOK_LIST, hint), 0)
    elseif type(v) == "table" then
      check_code(v, full, path)
    elseif name == nil and key and not key:find(".", 1, true) and nearest(key, M.HOOKS) then
      -- sourse = "gobblin.source.kafka_json" would be an unknown property, and the job would run without it
      error(string.format("%s: %s is not a property kingest reads, nor one of the %s it calls; did you mean %s?",
        path, key, HOOK_LIST, nearest(key, M.HOOKS)), 0)
    end
  end
end

-- Runs the job file and returns the table it returns, checked: its code is what the runtime calls (see
-- check_code; decodeRecord, source, converters and estimateSize of the right types, source loadable).
-- Errors carry the file name (and line).
function M.load_job(path)
  local chunk, err = loadfile(path)
  if not chunk then error(err, 0) end
  local job = chunk()
  if type(job) ~= "table" then
    error(path .. ": the job file must return a table of properties, got " .. type(job), 0)
  end
  check_code(job, nil, path)
  for _, check in ipairs({ M.decoder, M.converters }) do
    local ok, msg = pcall(check, job)
    if not ok then error(path .. ": " .. tostring(msg), 0) end
  end
  if job.estimateSize ~= nil and type(job.estimateSize) ~= "function" then
    error(path .. ": estimateSize must be a function, got " .. type(job.estimateSize), 0)
  end
  if job.partition ~= nil then
    if type(job.partition) ~= "function" then
      error(path .. ": partition must be a function, got " .. type(job.partition), 0)
    end
    local cls = job["writer.partitioner.class"]
    if cls == nil and type(job.writer) == "table" and type(job.writer.partitioner) == "table" then
      cls = job.writer.partitioner.class
    end
    if cls == nil or cls == "" then
      error(path .. ": partition gives each record's time folder, but the job sets no writer.partitioner.class " ..
        "(TimeBasedWriterPartitioner)", 0)
    end
  end
  return job
end

-- The properties of a job table: a shallow copy without the hooks, for the engine to flatten.
function M.properties(job)
  local props = {}
  for k, v in pairs(job) do
    if not is_hook[k] then props[k] = v end
  end
  return props
end

-- The properties of the job file at PATH, checked as load_job does, and the job table itself.
function M.load_properties(path)
  local job = M.load_job(path)
  return M.properties(job), job
end

-- The decodeRecord a job uses: its own, the one of the source module it names (`source`), or
-- KafkaSimpleSource's.
function M.decoder(job)
  local decode = job.decodeRecord
  if decode ~= nil then
    if type(decode) ~= "function" then
      error("decodeRecord must be a function, got " .. type(decode), 0)
    end
    if job.source ~= nil then
      error("decodeRecord and source are both set, and only one of them can decode the records: keep one " ..
        "(a converter can do what comes after the source's decodeRecord)", 0)
    end
    return decode
  end
  local source = job.source
  if source ~= nil then
    if type(source) ~= "string" then
      error("source must be a module name such as \"gobblin.source.kafka_json\", got " .. type(source) ..
        (type(source) == "table" and " (Gobblin's source.class is written [\"source.class\"] = ...)" or ""), 0)
    end
    local ok, mod = pcall(require, source)
    if not ok then
      local msg = tostring(mod)
      if msg:find("module '" .. source .. "' not found", 1, true) then
        local near = nearest(source, M.SOURCES)
        for _, s in ipairs(M.SOURCES) do
          if source == s:match("[^.]+$") then near = s end
        end
        error(string.format("source %s cannot be loaded (%skingest provides %s): %s", source,
          near and ("did you mean " .. near .. "? ") or "", table.concat(M.SOURCES, ", "), msg), 0)
      end
      error("source " .. source .. " cannot be loaded: " .. msg, 0)
    end
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

-- Where function F is defined: "file:line"; for a function a library function made (a converter of
-- gobblin.converter), that function's name, as "gobblin.converter.bytes_to_json()".
local function defined_at(f)
  local info = debug.getinfo(f, "S")
  for name, mod in pairs(package.loaded) do
    if type(name) == "string" and name:match("^gobblin") and type(mod) == "table" then
      for key, g in pairs(mod) do
        local gi = type(g) == "function" and debug.getinfo(g, "S")
        if gi and gi.source == info.source and info.linedefined > gi.linedefined and
          info.lastlinedefined <= gi.lastlinedefined then
          return name .. "." .. tostring(key) .. "()"
        end
      end
    end
  end
  local src = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
  return (src:match("/(gobblin/.*)$") or src) .. ":" .. tostring(info.linedefined)
end

-- The job's code as `kingest validate` shows it: a list of {name, what}, one per hook (decoding, the converter
-- chain, estimateSize, partition), each function with where it is defined. JOB is a table load_job returned,
-- or {} for a properties job.
function M.describe(job)
  local out = {}
  if job.decodeRecord ~= nil then
    out[#out + 1] = { "decodeRecord", defined_at(job.decodeRecord) }
  elseif job.source ~= nil then
    out[#out + 1] = { "source", job.source .. " (decodeRecord: " .. defined_at(M.decoder(job)) .. ")" }
  else
    out[#out + 1] = { "decodeRecord", "none: KafkaSimpleSource, the record as it is" }
  end
  local chain = M.converters(job)
  local where = {}
  for i, f in ipairs(chain) do where[i] = defined_at(f) end
  out[#out + 1] = { "converters", #chain == 0 and "none" or (#chain .. ": " .. table.concat(where, ", ")) }
  if job.estimateSize ~= nil then out[#out + 1] = { "estimateSize", defined_at(job.estimateSize) } end
  if job.partition ~= nil then out[#out + 1] = { "partition", defined_at(job.partition) } end
  return out
end

local function log_function(level, prefix)
  return function(_, fmt, ...)
    local msg = select("#", ...) > 0 and string.format(fmt, ...) or tostring(fmt)
    C.kg_ffi_log_write(level, prefix() .. msg)
  end
end

local json = require("gobblin.json")
local encode_staged = json.encode_staged

-- Builds the task's processor for the job file at PATH (nil: a properties job with the built-in source).
-- Returns a table: process(batch pointer), stage() (what ran when the last error happened: "decodeRecord",
-- "converter N", "partition hook", or the engine's decoding of an Avro record, "Avro resolution" or "Avro
-- decoding"), collect() (the script's metrics as name -> number), passthrough (true when process would write each
-- payload as it is), decodes (true when the job decodes records itself: its decodeRecord or source) and transforms
-- (true when it decodes them or has converters: what it writes is its own, not the records as read).
function M.processor(path)
  return M.job_processor(path and M.load_job(path) or {})
end

-- The processor of JOB, a job table that load_job returned (or {} for a properties job), without running
-- the job file again.
function M.job_processor(job)
  local decode = M.decoder(job)
  local chain = M.converters(job)
  local nchain = #chain
  -- What runs: 0 decodeRecord, i converter i, or one of the engine's own steps.
  local stage = 0
  local STAGE_AVRO, STAGE_PARTITION = -1, -2 -- the engine's decoding of an Avro record; the partition hook

  -- The Avro record view REC decoded, resolved to schema READER: the engine's step, named so when it fails.
  local loaded = package.loaded
  local function read_avro(rec, reader)
    local was = stage
    stage = STAGE_AVRO
    local avro = loaded["gobblin.avro"] -- what a failure of this record met, not of an earlier one
    if avro and avro.failure then avro.failure = nil end
    local v = gffi.decoder(rec.schema, reader)(rec.datum_ptr, rec.datum_len)
    stage = was
    return v
  end
  if job.decodeRecord == nil and job.source == nil and nchain > 0 then
    -- The built-in source: converters get an Avro record decoded (without converters, the record view goes to
    -- the writer, which copies an Avro datum whose schema is the output's as it is).
    local simple = decode
    decode = function(rec, c)
      if rec.datum_ptr ~= nil then return read_avro(rec, rec.reader_schema) end
      return simple(rec, c)
    end
  end
  local emit, emit_value, emit_json = C.kg_ffi_batch_emit, C.kg_ffi_batch_emit_value, C.kg_ffi_json_emit
  local registry = metrics.new(function() return tonumber(C.kg_ffi_clock_mono_ms()) / 1000 end)
  local conv_in, conv_out = registry:counter("gobblin.converter.records.in"), registry:counter("gobblin.converter.records.out")
  if nchain == 0 then conv_in, conv_out = { inc = function() end }, { inc = function() end } end

  -- ctx: what a script sees of the record being processed, and of its task.
  local states = {}
  local ctx = { metrics = registry, job = job }
  -- ctx.output_schema: the output's Avro schema (nil when the output is not Avro), parsed when first asked for,
  -- so that a job that never looks at it does not depend on it.
  -- ctx.record: the record view, made when asked for (a view stored in ctx for every record would be an
  -- allocation per record that LuaJIT could not leave out).
  local output_index = -1
  local current_records, current = nil, -1
  setmetatable(ctx, {
    __index = function(_, key)
      if key == "record" then return current >= 0 and current_records[current] or nil end
      if key == "output_schema" and output_index >= 0 then return gffi.schema(output_index) end
    end,
  })
  local function where() return "[" .. tostring(ctx.topic) .. ":" .. tostring(ctx.partition) .. "] " end
  ctx.log = {
    debug = log_function(gffi.DEBUG, where), info = log_function(gffi.INFO, where),
    warn = log_function(gffi.WARN, where), error = log_function(gffi.ERROR, where),
  }
  ctx.logger = ctx.log

  -- A failed write (a full disk, a file too large) stops the batch at this record: nothing after it would
  -- reach the output, and the engine fails the task with the writer's own error, not as a script failure.
  local function write_failed(rc)
    error(string.format("the writer failed (error %d) on the output of %s:%s offset %.0f; the batch stops here", rc,
      tostring(ctx.topic), tostring(ctx.partition), ctx.offset), 0)
  end

  -- Avro output (batch.output_schema >= 0): the encoder of the output's schema, kept per schema index.
  local encoders = {}
  local function encoder(index)
    local enc = encoders[index]
    if not enc then
      enc = gffi.schema(index):encoder()
      encoders[index] = enc
    end
    return enc
  end

  -- Encodes VALUE with output schema INDEX and writes it; a value that does not fit names the field.
  local function write_avro(batch, index, value)
    local ok, p, n = pcall(encoder(index), value)
    if not ok then
      error("the record does not fit the output's Avro schema " .. tostring(gffi.schema(index).name) .. ": " ..
        tostring(p), 0)
    end
    return emit(batch, p, n)
  end

  -- An Avro record view: its datum as it is when its schema is the output's; otherwise resolved to the
  -- output's schema and encoded again, or, for output that is not Avro, written as JSON (gobblin.json: fields in
  -- the schema's order, bytes, fixed and decimals as gobblin.avro's markers say).
  local function write_avro_record(batch, rec)
    local out_schema = batch.output_schema
    if rec.schema == out_schema then return emit_value(batch, rec) end
    if out_schema >= 0 then
      local p, n = encoder(out_schema)(read_avro(rec, out_schema))
      return emit(batch, p, n)
    end
    encode_staged(read_avro(rec, rec.reader_schema))
    return emit_json(batch)
  end

  -- partition: the time (ms since the epoch) a record's output is filed under; the record's timestamp without it.
  -- While it runs (and when what it returned is refused), the stage is the partition hook's.
  local partition = job.partition
  -- What the last converter returns goes to the writer at once: when that converter is one whose results hold only
  -- the keys of their order (converter.project) and no partition function sees them first, the encoder need not
  -- look for other keys.
  local closed = nchain > 0 and not partition and require("gobblin.converter").closed[chain[nchain]] or false
  local function file_time(batch, out)
    local was = stage
    stage = STAGE_PARTITION
    local ms = partition(out, ctx)
    if type(ms) ~= "number" or ms ~= ms or ms < 0 or ms >= 2 ^ 53 then
      error("partition returned " .. (type(ms) == "number" and tostring(ms) or type(ms)) ..
        "; it must return the record's time in milliseconds since the epoch (a number >= 0)", 0)
    end
    stage = was
    batch.time = ms
  end

  local function write(batch, out)
    local t = type(out)
    local rc
    if partition then file_time(batch, out) end
    if t == "string" then
      rc = emit(batch, out, #out)
    elseif t == "cdata" and out.datum_ptr ~= nil then
      rc = write_avro_record(batch, out)
    elseif t == "cdata" then
      rc = emit_value(batch, out)
    elseif batch.output_schema >= 0 and (t == "table" or t == "number" or t == "boolean") then
      rc = write_avro(batch, batch.output_schema, out)
    elseif t == "table" then
      encode_staged(out, closed) -- the JSON text goes to the writer without a Lua string made of it
      rc = emit_json(batch)
    else
      error("the record to write is a " .. t .. " (" .. tostring(out) .. "); expected a string, a table or the record view", 0)
    end
    if rc ~= 0 then write_failed(rc) end
  end

  -- Runs converters I..nchain on VALUE and writes what comes out. One converter per call, by a tail call to the
  -- next: a loop of a few turns per record is what LuaJIT compiles worst.
  local convert
  convert = function(batch, value, i)
    if i > nchain then return write(batch, value) end
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
    return convert(batch, value, i + 1)
  end

  local function process(ptr)
    local batch = cast("kg_batch_t *", ptr)
    local records = batch.records
    local n = batch.count
    if n == 0 then return end
    local first = records[0]
    output_index = batch.output_schema
    current_records = records
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
      current = i
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
    current = -1
  end

  local function stage_name()
    if stage == STAGE_AVRO then
      local avro = loaded["gobblin.avro"]
      return avro and avro.failure == "resolution" and "Avro resolution" or "Avro decoding"
    end
    if stage == STAGE_PARTITION then return "partition hook" end
    return stage == 0 and "decodeRecord" or ("converter " .. stage)
  end

  -- passthrough: each record's payload goes to the writer as it is (KafkaSimpleSource, no converter, no
  -- partition hook), so the engine may write a batch's records itself without calling process.
  local passthrough = decode == require("gobblin.source.kafka_simple").decodeRecord and nchain == 0 and not partition
  return { process = process, stage = stage_name, collect = function() return registry:snapshot() end,
    passthrough = passthrough, decodes = job.decodeRecord ~= nil or job.source ~= nil,
    transforms = job.decodeRecord ~= nil or job.source ~= nil or nchain > 0 }
end

return M
