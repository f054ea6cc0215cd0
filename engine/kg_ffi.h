/* kg_ffi.h: the C side of the LuaJIT FFI binding. lua/gobblin/ffi.lua declares the same block in its
 * ffi.cdef; a spec checks that the two stay identical. The block holds plain declarations only. */
#ifndef KG_FFI_H
#define KG_FFI_H

#include <stddef.h>
#include <stdint.h>

/* clang-format off: this block is copied verbatim into lua/gobblin/ffi.lua */
/* FFI-BEGIN */
typedef struct kg_record {
  const char *topic_ptr; /* NUL-terminated topic name, owned by the engine */
  const char *key_ptr;   /* NULL when the record has no key */
  size_t key_len;
  const char *value_ptr; /* NULL when the payload is null (a tombstone) */
  size_t value_len;
  double offset;    /* exact below 2^53 */
  double timestamp; /* milliseconds since the epoch, -1 when unknown */
  int32_t partition;
  const void *opaque;    /* the engine's message handle */
  const char *datum_ptr; /* Avro records: the datum after the framing header; NULL otherwise */
  size_t datum_len;
  int32_t schema;        /* Avro records: the index of the datum's schema (kg_ffi_avro_schema); -1 otherwise */
  int32_t reader_schema; /* Avro records: the index of the topic's latest schema, which rec:avro() resolves to */
} kg_record_t;

typedef struct kg_batch {
  kg_record_t *records; /* COUNT record views, valid during one call into Lua */
  int32_t count;
  int32_t next;          /* index of the next record to process; the script advances it */
  void *sink;            /* the engine's output for this batch */
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
/* FFI-END */
/* clang-format on */

/* What the engine behind batch->sink does with emitted bytes: RECORD is the record being processed, TIME what the
 * output is filed under (batch->time). EMIT_DATUM (NULL: EMIT) takes an Avro record's datum when its schema is
 * the output's: bytes the engine has checked. */
typedef int (*kg_emit_fn)(void *ctx, const kg_record_t *record, double time, const char *data, size_t len);
typedef struct {
  kg_emit_fn emit;
  void *ctx;
  kg_emit_fn emit_datum;
} kg_sink_t;

#endif
