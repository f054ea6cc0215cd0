/* ffi.c: every kg_ffi_* export, the C functions gobblin.runtime and gobblin.ffi call through ffi.C.
 *
 * The declarations are the FFI block of kg_ffi.h, copied verbatim into lua/gobblin/ffi.lua. Each export is
 * named kg_ffi_<concern>_<verb>; one that can fail returns 0 or a negative KG_E* and fills out-parameters,
 * and the Lua side checks it at once. Nothing here calls back into Lua. */
#include "kg_ffi.h"

#include "avro_codec.h"
#include "kafka_source.h"
#include "log.h"
#include "lua_bridge.h"
#include "kg_common.h"

/* Hands DATA (LEN bytes) to the batch's sink as an output of the record being processed (batch->next - 1).
 * Returns 0, or the sink's error (the task keeps its text): the script must stop the batch there. */
int kg_ffi_batch_emit(kg_batch_t *batch, const char *data, size_t len) {
  kg_sink_t *sink = batch->sink;
  int32_t i = batch->next - 1;
  return sink->emit(sink->ctx, i >= 0 && i < batch->count ? &batch->records[i] : NULL, batch->time, data, len);
}

/* Emits RECORD's payload from the fetch buffer, without a copy; a null payload as empty bytes. An Avro record's
 * datum alone, when its schema is the output's (anything else is re-encoded by the script): KG_EINVAL when not. */
int kg_ffi_batch_emit_value(kg_batch_t *batch, const kg_record_t *record) {
  if (record->datum_ptr) {
    if (record->schema != batch->output_schema) return KG_EINVAL;
    kg_sink_t *sink = batch->sink;
    if (!sink->emit_datum) return kg_ffi_batch_emit(batch, record->datum_ptr, record->datum_len);
    int32_t i = batch->next - 1;
    return sink->emit_datum(sink->ctx, i >= 0 && i < batch->count ? &batch->records[i] : NULL, batch->time,
                            record->datum_ptr, record->datum_len);
  }
  if (!record->value_ptr) return kg_ffi_batch_emit(batch, "", 0);
  return kg_ffi_batch_emit(batch, record->value_ptr, record->value_len);
}

/* Header INDEX of RECORD: *NAME (NUL-terminated), *VALUE (NULL for a null header) and *VALUE_LEN, valid while
 * the record view is. Returns 0, or -1 when the record has no such header. */
int kg_ffi_record_header(const kg_record_t *record, int32_t index, const char **name, const char **value,
                         size_t *value_len) {
  return kg_kafka_record_header(record, index, name, value, value_len) == KG_OK ? 0 : -1;
}

/* The JSON text of Avro schema INDEX of the task running on this thread: *TEXT and *LEN, valid for the task's
 * life. Returns 0, or -1 when there is no such schema. */
int kg_ffi_avro_schema(int32_t index, const char **text, size_t *len) {
  const char *t = kg_avro_schemas_text(kg_avro_thread_schemas(), index, len);
  if (!t) return -1;
  *text = t;
  return 0;
}

/* One line of the engine's log at LEVEL (KG_LOG_*; anything else is INFO). */
void kg_ffi_log_write(int level, const char *message) {
  if (level < KG_LOG_DEBUG || level > KG_LOG_ERROR) level = KG_LOG_INFO;
  kg_log((kg_log_level_t)level, "%s", message);
}

/* The engine's monotonic clock, in milliseconds. */
int64_t kg_ffi_clock_mono_ms(void) { return kg_mono_ms(); }

/* The bytes gobblin.json's next decode on this thread reads, when it is given no string: a record view's payload,
 * read where it is. */
void kg_ffi_json_source(const char *data, size_t len) { kg_lua_json_set_source(data, len); }

/* Hands the JSON text gobblin.json last staged on this thread (its encode_staged) to the batch's sink, as
 * kg_ffi_batch_emit does. Returns 0, the sink's error, or KG_EINVAL when nothing was staged. */
int kg_ffi_json_emit(kg_batch_t *batch) {
  const char *data;
  size_t len;
  if (!kg_lua_json_take_output(&data, &len)) return KG_EINVAL;
  return kg_ffi_batch_emit(batch, data, len);
}
