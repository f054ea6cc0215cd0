/* parquet_thrift.h: the Thrift compact protocol, written, for what a Parquet file's footer and page headers hold
 * (the structs of parquet-format's parquet.thrift that kingest writes: FileMetaData, SchemaElement, RowGroup,
 * ColumnChunk, ColumnMetaData, PageHeader, DataPageHeader, DictionaryPageHeader, Statistics, KeyValue,
 * ColumnOrder and the LogicalType union); and the RLE/bit-packed hybrid that encodes a page's levels.
 *
 * The compact protocol, as Thrift specifies it: a field is a header byte (the field id's delta from the previous
 * field of its struct, 1 to 15, in the high nibble, the field's type in the low one; or the type alone followed by
 * the id as a zig-zag varint), then its value; integers are zig-zag varints; binary and strings are a varint length
 * and the bytes; a list is a byte of its size (under 15) and element type, or 0xF followed by a varint size; a
 * struct ends with a 0 byte; a bool field carries its value in its type (1 true, 2 false).
 *
 * The encoder writes into a kg_buf_t and cannot fail: what it writes is what the caller's structs say, so the
 * caller fills what parquet.thrift requires. Fields whose value is absent (a NULL pointer, a has_ flag false) are
 * left out. */
#ifndef KG_PARQUET_THRIFT_H
#define KG_PARQUET_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* ---- The compact protocol ---- */

/* Element and field types of the compact protocol. */
enum {
  KG_THRIFT_TRUE = 1,
  KG_THRIFT_FALSE = 2,
  KG_THRIFT_BYTE = 3,
  KG_THRIFT_I16 = 4,
  KG_THRIFT_I32 = 5,
  KG_THRIFT_I64 = 6,
  KG_THRIFT_DOUBLE = 7,
  KG_THRIFT_BINARY = 8,
  KG_THRIFT_LIST = 9,
  KG_THRIFT_SET = 10,
  KG_THRIFT_MAP = 11,
  KG_THRIFT_STRUCT = 12,
};

/* Structs nested deeper than this are not written (the footer's deepest is 5). */
#define KG_THRIFT_MAX_DEPTH 16

/* A writer of one compact-protocol value: OUT is the caller's, appended to. Zeroed with OUT set, it is ready to
 * write the fields of a top-level struct (which the caller ends with kg_thrift_struct_end). */
typedef struct {
  kg_buf_t *out;
  int16_t last[KG_THRIFT_MAX_DEPTH]; /* the last field id written in each open struct */
  int depth;                         /* open structs, the top-level one being 0 */
} kg_thrift_t;

/* Appends V as an unsigned varint (7 bits a byte, low bits first) and as a zig-zag varint. */
void kg_thrift_varint(kg_buf_t *out, uint64_t v);
void kg_thrift_zigzag(kg_buf_t *out, int64_t v);

/* Field headers and values of the current struct. Field ids of a struct must be written in increasing order. */
void kg_thrift_field(kg_thrift_t *t, int16_t id, int type);
void kg_thrift_bool(kg_thrift_t *t, int16_t id, bool v);
void kg_thrift_byte(kg_thrift_t *t, int16_t id, int8_t v);
void kg_thrift_i32(kg_thrift_t *t, int16_t id, int32_t v);
void kg_thrift_i64(kg_thrift_t *t, int16_t id, int64_t v);
void kg_thrift_binary(kg_thrift_t *t, int16_t id, const void *p, size_t len);
void kg_thrift_string(kg_thrift_t *t, int16_t id, const char *s); /* NUL-terminated */
/* A struct field ID: its fields follow, then kg_thrift_struct_end. */
void kg_thrift_struct_begin(kg_thrift_t *t, int16_t id);
void kg_thrift_struct_end(kg_thrift_t *t);
/* An empty struct as field ID (the members of the LogicalType and ColumnOrder unions that carry nothing). */
void kg_thrift_empty_struct(kg_thrift_t *t, int16_t id);
/* A list field ID of N elements of ELEM_TYPE: the elements follow, each an element below (or, for structs, a
 * kg_thrift_elem_struct_begin ... kg_thrift_struct_end). */
void kg_thrift_list_begin(kg_thrift_t *t, int16_t id, int elem_type, size_t n);
void kg_thrift_elem_i32(kg_thrift_t *t, int32_t v);
void kg_thrift_elem_binary(kg_thrift_t *t, const void *p, size_t len);
void kg_thrift_elem_struct_begin(kg_thrift_t *t);

/* ---- Parquet's enums (parquet.thrift) ---- */

typedef enum {
  KG_PQ_BOOLEAN = 0,
  KG_PQ_INT32 = 1,
  KG_PQ_INT64 = 2,
  KG_PQ_INT96 = 3,
  KG_PQ_FLOAT = 4,
  KG_PQ_DOUBLE = 5,
  KG_PQ_BYTE_ARRAY = 6,
  KG_PQ_FIXED_LEN_BYTE_ARRAY = 7,
} kg_pq_type_t;

typedef enum { KG_PQ_REQUIRED = 0, KG_PQ_OPTIONAL = 1, KG_PQ_REPEATED = 2 } kg_pq_repetition_t;

/* ConvertedType, and -1 for none. */
typedef enum {
  KG_PQ_CONVERTED_NONE = -1,
  KG_PQ_UTF8 = 0,
  KG_PQ_MAP = 1,
  KG_PQ_MAP_KEY_VALUE = 2,
  KG_PQ_LIST = 3,
  KG_PQ_ENUM = 4,
  KG_PQ_DECIMAL = 5,
  KG_PQ_DATE = 6,
  KG_PQ_TIME_MILLIS = 7,
  KG_PQ_TIME_MICROS = 8,
  KG_PQ_TIMESTAMP_MILLIS = 9,
  KG_PQ_TIMESTAMP_MICROS = 10,
} kg_pq_converted_t;

typedef enum {
  KG_PQ_PLAIN = 0,
  KG_PQ_PLAIN_DICTIONARY = 2,
  KG_PQ_RLE = 3,
  KG_PQ_BIT_PACKED = 4,
  KG_PQ_RLE_DICTIONARY = 8,
} kg_pq_encoding_t;

typedef enum {
  KG_PQ_UNCOMPRESSED = 0,
  KG_PQ_SNAPPY = 1,
  KG_PQ_GZIP = 2,
  KG_PQ_ZSTD = 6,
} kg_pq_codec_t;

typedef enum { KG_PQ_DATA_PAGE = 0, KG_PQ_DICTIONARY_PAGE = 2 } kg_pq_page_type_t;

/* The member of the LogicalType union a column carries (its field id in the union), or none. */
typedef enum {
  KG_PQ_LOGICAL_NONE = 0,
  KG_PQ_LOGICAL_STRING = 1,
  KG_PQ_LOGICAL_MAP = 2,
  KG_PQ_LOGICAL_LIST = 3,
  KG_PQ_LOGICAL_ENUM = 4,
  KG_PQ_LOGICAL_DECIMAL = 5,
  KG_PQ_LOGICAL_DATE = 6,
  KG_PQ_LOGICAL_TIME = 7,
  KG_PQ_LOGICAL_TIMESTAMP = 8,
  KG_PQ_LOGICAL_INTEGER = 10,
  KG_PQ_LOGICAL_UUID = 14,
} kg_pq_logical_kind_t;

/* TimeUnit's members, for TIME and TIMESTAMP. */
typedef enum { KG_PQ_MILLIS = 1, KG_PQ_MICROS = 2, KG_PQ_NANOS = 3 } kg_pq_time_unit_t;

typedef struct {
  kg_pq_logical_kind_t kind;
  int32_t scale, precision; /* DECIMAL */
  bool adjusted_to_utc;     /* TIME, TIMESTAMP */
  kg_pq_time_unit_t unit;   /* TIME, TIMESTAMP */
  int8_t bit_width;         /* INTEGER: 8, 16, 32 or 64 */
  bool is_signed;           /* INTEGER */
} kg_pq_logical_t;

/* ---- The structs kingest writes (borrowed pointers throughout) ---- */

/* Statistics: min_value and max_value (fields 5 and 6: in the column's own order; NULL when absent), null_count
 * (when HAS_NULL_COUNT). The deprecated min and max (fields 1 and 2) are never written. */
typedef struct {
  const void *min, *max;
  size_t min_len, max_len;
  bool has_null_count;
  int64_t null_count;
} kg_pq_statistics_t;

typedef struct {
  const char *key;
  const char *value; /* NULL: absent */
  size_t value_len;
} kg_pq_key_value_t;

typedef struct {
  const char *name;
  bool has_type; /* false for a group (the root) */
  kg_pq_type_t type;
  int32_t type_length; /* FIXED_LEN_BYTE_ARRAY; 0: absent */
  bool has_repetition; /* false for the root */
  kg_pq_repetition_t repetition;
  int32_t num_children; /* groups; -1: absent */
  kg_pq_converted_t converted;
  int32_t scale, precision; /* with converted DECIMAL */
  kg_pq_logical_t logical;  /* kind NONE: absent */
} kg_pq_schema_element_t;

typedef struct {
  kg_pq_type_t type;
  const kg_pq_encoding_t *encodings;
  size_t nencodings;
  const char *const *path; /* path_in_schema: NPATH names */
  size_t npath;
  kg_pq_codec_t codec;
  int64_t num_values;
  int64_t total_uncompressed_size, total_compressed_size; /* page headers included */
  int64_t data_page_offset;
  int64_t dictionary_page_offset;       /* -1: absent */
  const kg_pq_statistics_t *statistics; /* NULL: absent */
} kg_pq_column_meta_t;

typedef struct {
  int64_t file_offset;
  kg_pq_column_meta_t meta;
} kg_pq_column_chunk_t;

typedef struct {
  const kg_pq_column_chunk_t *columns;
  size_t ncolumns;
  int64_t total_byte_size;
  int64_t num_rows;
  int64_t file_offset;
  int64_t total_compressed_size;
  int16_t ordinal;
} kg_pq_row_group_t;

typedef struct {
  int32_t version;
  const kg_pq_schema_element_t *schema; /* depth first, the root first */
  size_t nschema;
  int64_t num_rows;
  const kg_pq_row_group_t *row_groups;
  size_t nrow_groups;
  const kg_pq_key_value_t *key_value;
  size_t nkey_value;
  const char *created_by;
  size_t ncolumn_orders; /* columns given TYPE_ORDER (each leaf's min and max in its type's order); 0: absent */
} kg_pq_file_meta_t;

typedef struct {
  int32_t num_values;
  kg_pq_encoding_t encoding;
  kg_pq_encoding_t definition_level_encoding;
  kg_pq_encoding_t repetition_level_encoding;
  const kg_pq_statistics_t *statistics; /* NULL: absent */
} kg_pq_data_page_header_t;

typedef struct {
  int32_t num_values;
  kg_pq_encoding_t encoding;
} kg_pq_dictionary_page_header_t;

typedef struct {
  kg_pq_page_type_t type;
  int32_t uncompressed_page_size, compressed_page_size;
  const kg_pq_data_page_header_t *data;             /* with DATA_PAGE */
  const kg_pq_dictionary_page_header_t *dictionary; /* with DICTIONARY_PAGE */
} kg_pq_page_header_t;

/* Append the struct, as one top-level compact-protocol struct, to OUT. */
void kg_pq_write_page_header(kg_buf_t *out, const kg_pq_page_header_t *h);
void kg_pq_write_file_meta(kg_buf_t *out, const kg_pq_file_meta_t *m);

/* ---- Levels ---- */

/* Appends the N levels at LEVELS (each below 2^BIT_WIDTH; BIT_WIDTH 1 to 8) to OUT in the RLE/bit-packed hybrid of
 * Parquet's spec, without the 4-byte length a data page puts before it: a run of 8 or more equal levels is an RLE
 * run (its count shifted left once, then the level in one byte); the others go in bit-packed runs of groups of 8
 * (the count of groups shifted left once with the low bit set, at most 63 groups a run), levels packed from the
 * low bit up; only the last group of all is padded with zeros. */
void kg_pq_levels_encode(kg_buf_t *out, const uint8_t *levels, size_t n, int bit_width);

#endif
