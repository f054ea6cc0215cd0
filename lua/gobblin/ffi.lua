-- gobblin.ffi: the one ffi.cdef of the engine's C functions (engine/kg_ffi.h) and the record view type.
local ffi = require("ffi")

ffi.cdef [[
typedef struct kg_record {
  const char *topic_ptr; /* NUL-terminated topic name, owned by the engine */
  const char *key_ptr;   /* NULL when the record has no key */
  size_t key_len;
  const char *value_ptr; /* NULL when the payload is null (a tombstone) */
  size_t value_len;
  double offset;    /* exact below 2^53 */
  double timestamp; /* milliseconds since the epoch, -1 when unknown */
  int32_t partition;
  const void *opaque; /* the engine's message handle */
  const char *datum_ptr; /* Avro records: the datum after the framing header; NULL otherwise */
  size_t datum_len;
  int32_t schema;        /* Avro records: the index of the datum's schema (kg_ffi_avro_schema); -1 otherwise */
  int32_t reader_schema; /* Avro records: the index of the topic's latest schema, which rec:avro() resolves to */
} kg_record_t;

typedef struct kg_batch {
  kg_record_t *records; /* COUNT record views, valid during one call into Lua */
  int32_t count;
  int32_t next; /* index of the next record to process; the script advances it */
  void *sink;   /* the engine's output for this batch */
  int32_t output_schema; /* the index of the output's Avro schema; -1 when the output is not Avro */
  double time;           /* what the next output is filed under (writer.partitioner.class): ms since the epoch,
                            or -1 for the record's timestamp; the script sets it */
} kg_batch_t;

int kg_ffi_batch_emit(kg_batch_t *batch, const char *data, size_t len);
int kg_ffi_batch_emit_value(kg_batch_t *batch, const kg_record_t *record);
int kg_ffi_record_header(const kg_record_t *record, int32_t index, const char **name, const char **value,
                         size_t *value_len);
int kg_ffi_avro_schema(int32_t index, const char **text, size_t *len);
void kg_ffi_log_write(int level, const char *message);
int64_t kg_ffi_clock_mono_ms(void);
void kg_ffi_json_source(const char *data, size_t len);
int kg_ffi_json_emit(kg_batch_t *batch);
]]

local M = {}
local C = ffi.C
local ffi_string = ffi.string

local name_out = ffi.new("const char *[1]")
local value_out = ffi.new("const char *[1]")
local len_out = ffi.new("size_t[1]")

-- Methods of a record view. Strings are made only when asked for.
local record_methods = {}

function record_methods.value(self)
  if self.value_ptr == nil then return nil end
  return ffi_string(self.value_ptr, self.value_len)
end

function record_methods.key(self)
  if self.key_ptr == nil then return nil end
  return ffi_string(self.key_ptr, self.key_len)
end

function record_methods.topic(self)
  return ffi_string(self.topic_ptr)
end

-- Headers as an array of {name, value} pairs (value nil for a null header), in broker order. The engine parses
-- a record's headers only when they are asked for.
function record_methods.headers(self)
  local out = {}
  if self.opaque == nil then return out end -- a view without a Kafka message (one a test made) has none
  local i = 0
  while C.kg_ffi_record_header(self, i, name_out, value_out, len_out) == 0 do
    local v = nil
    if value_out[0] ~= nil then v = ffi_string(value_out[0], len_out[0]) end
    out[#out + 1] = { ffi_string(name_out[0]), v }
    i = i + 1
  end
  return out
end

-- Avro records (kafka.deserializer.type=CONFLUENT_AVRO, source.class=KafkaAvroSource): the engine has read the
-- framing and checked the datum; schemas are reached by their index in the task (kg_ffi_avro_schema).
local text_out = ffi.new("const char *[1]")
local schemas = {}  -- index -> gobblin.avro schema
local decoders = {} -- writer index -> reader index -> decoder

-- The schema of index I in this task, parsed once.
function M.schema(i)
  local s = schemas[i]
  if s == nil then
    if i < 0 or C.kg_ffi_avro_schema(i, text_out, len_out) ~= 0 then
      error("no Avro schema " .. tostring(i) .. " in this task", 2)
    end
    s = require("gobblin.avro").schema(ffi_string(text_out[0], len_out[0]))
    schemas[i] = s
  end
  return s
end

-- The decoder of datums of schema W into values of schema R (W itself when R is negative or equal).
function M.decoder(w, r)
  local by_reader = decoders[w]
  if not by_reader then
    by_reader = {}
    decoders[w] = by_reader
  end
  local d = by_reader[r]
  if not d then
    local ws = M.schema(w)
    d = ws:decoder((r >= 0 and r ~= w) and M.schema(r) or nil)
    by_reader[r] = d
  end
  return d
end

local NOT_AVRO = "the record is not Avro: set kafka.deserializer.type=CONFLUENT_AVRO (Confluent's framing) or " ..
  "source.class=KafkaAvroSource (LinkedIn's) with kafka.schema.registry.url"

-- The record's Avro datum, decoded, resolved to its topic's latest schema: records as tables (see gobblin.avro).
function record_methods.avro(self)
  if self.datum_ptr == nil then error("rec:avro(): " .. NOT_AVRO, 2) end
  return M.decoder(self.schema, self.reader_schema)(self.datum_ptr, self.datum_len)
end

-- The record's Avro datum as bytes (nil when the record is not Avro).
function record_methods.datum(self)
  if self.datum_ptr == nil then return nil end
  return ffi_string(self.datum_ptr, self.datum_len)
end

-- The record's Avro schema (a gobblin.avro schema; nil when the record is not Avro).
function record_methods.avro_schema(self)
  if self.datum_ptr == nil then return nil end
  return M.schema(self.schema)
end

-- A record view used as a string (rec:upper(), rec .. "x", #rec) is a clear error, not a nil call or a
-- wrong length. The methods above are found in record_methods itself, so rec:value() stays one table
-- lookup; only a name it lacks reaches the erroring __index.
local NOT_A_STRING = "a record view is not a string: "
local HINT = "; call rec:value() for the payload (a converter gets the record view when the job has no source " ..
  "and no decodeRecord, or when decodeRecord returns it)"

setmetatable(record_methods, {
  __index = function(_, name)
    error(NOT_A_STRING .. "it has no method or field '" .. tostring(name) .. "'" .. HINT, 2)
  end,
})

M.record_t = ffi.metatype("kg_record_t", {
  __index = record_methods,
  __concat = function()
    error(NOT_A_STRING .. "it cannot be concatenated with .." .. HINT, 2)
  end,
  __len = function()
    error(NOT_A_STRING .. "#rec is not its length (rec.value_len is)" .. HINT, 2)
  end,
})
M.C = C

-- Log levels, as the engine numbers them.
M.DEBUG, M.INFO, M.WARN, M.ERROR = 0, 1, 2, 3

return M
