/* parquet_thrift.c: the Thrift compact protocol for Parquet's footer and page headers, and the levels' hybrid
 * encoding (parquet_thrift.h). Field ids are parquet.thrift's. */
#include "parquet_thrift.h"

#include <string.h>

/* ---- The compact protocol ---- */

void kg_thrift_varint(kg_buf_t *out, uint64_t v) {
  unsigned char b[10];
  size_t n = 0;
  do {
    b[n] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  kg_buf_append(out, b, n);
}

void kg_thrift_zigzag(kg_buf_t *out, int64_t v) { kg_thrift_varint(out, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static void put_byte(kg_buf_t *out, unsigned b) {
  unsigned char c = (unsigned char)b;
  kg_buf_append(out, &c, 1);
}

void kg_thrift_field(kg_thrift_t *t, int16_t id, int type) {
  int delta = id - t->last[t->depth];
  if (delta > 0 && delta <= 15) {
    put_byte(t->out, (unsigned)(delta << 4 | type));
  } else {
    put_byte(t->out, (unsigned)type);
    kg_thrift_zigzag(t->out, id);
  }
  t->last[t->depth] = id;
}

void kg_thrift_bool(kg_thrift_t *t, int16_t id, bool v) {
  kg_thrift_field(t, id, v ? KG_THRIFT_TRUE : KG_THRIFT_FALSE);
}

void kg_thrift_byte(kg_thrift_t *t, int16_t id, int8_t v) {
  kg_thrift_field(t, id, KG_THRIFT_BYTE);
  put_byte(t->out, (unsigned)(uint8_t)v);
}

void kg_thrift_i32(kg_thrift_t *t, int16_t id, int32_t v) {
  kg_thrift_field(t, id, KG_THRIFT_I32);
  kg_thrift_zigzag(t->out, v);
}

void kg_thrift_i64(kg_thrift_t *t, int16_t id, int64_t v) {
  kg_thrift_field(t, id, KG_THRIFT_I64);
  kg_thrift_zigzag(t->out, v);
}

void kg_thrift_binary(kg_thrift_t *t, int16_t id, const void *p, size_t len) {
  kg_thrift_field(t, id, KG_THRIFT_BINARY);
  kg_thrift_elem_binary(t, p, len);
}

void kg_thrift_string(kg_thrift_t *t, int16_t id, const char *s) { kg_thrift_binary(t, id, s, strlen(s)); }

/* Opens a struct whose header (field or list element) is written. */
static void push(kg_thrift_t *t) {
  if (t->depth + 1 < KG_THRIFT_MAX_DEPTH) t->depth++;
  t->last[t->depth] = 0;
}

void kg_thrift_struct_begin(kg_thrift_t *t, int16_t id) {
  kg_thrift_field(t, id, KG_THRIFT_STRUCT);
  push(t);
}

void kg_thrift_struct_end(kg_thrift_t *t) {
  put_byte(t->out, 0);
  if (t->depth > 0) t->depth--;
}

void kg_thrift_empty_struct(kg_thrift_t *t, int16_t id) {
  kg_thrift_struct_begin(t, id);
  kg_thrift_struct_end(t);
}

void kg_thrift_list_begin(kg_thrift_t *t, int16_t id, int elem_type, size_t n) {
  kg_thrift_field(t, id, KG_THRIFT_LIST);
  if (n < 15) {
    put_byte(t->out, (unsigned)(n << 4 | (size_t)elem_type));
  } else {
    put_byte(t->out, (unsigned)(0xf0 | elem_type));
    kg_thrift_varint(t->out, n);
  }
}

void kg_thrift_elem_i32(kg_thrift_t *t, int32_t v) { kg_thrift_zigzag(t->out, v); }

void kg_thrift_elem_binary(kg_thrift_t *t, const void *p, size_t len) {
  kg_thrift_varint(t->out, len);
  kg_buf_append(t->out, p, len);
}

void kg_thrift_elem_struct_begin(kg_thrift_t *t) { push(t); }

/* ---- Parquet's structs ---- */

static void write_statistics(kg_thrift_t *t, int16_t id, const kg_pq_statistics_t *s) {
  kg_thrift_struct_begin(t, id);
  if (s->has_null_count) kg_thrift_i64(t, 3, s->null_count);
  if (s->max) kg_thrift_binary(t, 5, s->max, s->max_len);
  if (s->min) kg_thrift_binary(t, 6, s->min, s->min_len);
  kg_thrift_struct_end(t);
}

/* TimeUnit: a union of empty structs. */
static void write_time_unit(kg_thrift_t *t, int16_t id, kg_pq_time_unit_t unit) {
  kg_thrift_struct_begin(t, id);
  kg_thrift_empty_struct(t, (int16_t)unit);
  kg_thrift_struct_end(t);
}

static void write_logical(kg_thrift_t *t, int16_t id, const kg_pq_logical_t *l) {
  kg_thrift_struct_begin(t, id);
  kg_thrift_struct_begin(t, (int16_t)l->kind);
  switch (l->kind) {
  case KG_PQ_LOGICAL_DECIMAL:
    kg_thrift_i32(t, 1, l->scale);
    kg_thrift_i32(t, 2, l->precision);
    break;
  case KG_PQ_LOGICAL_TIME:
  case KG_PQ_LOGICAL_TIMESTAMP:
    kg_thrift_bool(t, 1, l->adjusted_to_utc);
    write_time_unit(t, 2, l->unit);
    break;
  case KG_PQ_LOGICAL_INTEGER:
    kg_thrift_byte(t, 1, l->bit_width);
    kg_thrift_bool(t, 2, l->is_signed);
    break;
  default: break; /* STRING, MAP, LIST, ENUM, DATE, UUID: empty structs */
  }
  kg_thrift_struct_end(t);
  kg_thrift_struct_end(t);
}

static void write_schema_element(kg_thrift_t *t, const kg_pq_schema_element_t *e) {
  kg_thrift_elem_struct_begin(t);
  if (e->has_type) kg_thrift_i32(t, 1, (int32_t)e->type);
  if (e->type_length > 0) kg_thrift_i32(t, 2, e->type_length);
  if (e->has_repetition) kg_thrift_i32(t, 3, (int32_t)e->repetition);
  kg_thrift_string(t, 4, e->name);
  if (e->num_children >= 0) kg_thrift_i32(t, 5, e->num_children);
  if (e->converted != KG_PQ_CONVERTED_NONE) kg_thrift_i32(t, 6, (int32_t)e->converted);
  if (e->converted == KG_PQ_DECIMAL) {
    kg_thrift_i32(t, 7, e->scale);
    kg_thrift_i32(t, 8, e->precision);
  }
  if (e->logical.kind != KG_PQ_LOGICAL_NONE) write_logical(t, 10, &e->logical);
  kg_thrift_struct_end(t);
}

static void write_column_meta(kg_thrift_t *t, int16_t id, const kg_pq_column_meta_t *m) {
  kg_thrift_struct_begin(t, id);
  kg_thrift_i32(t, 1, (int32_t)m->type);
  kg_thrift_list_begin(t, 2, KG_THRIFT_I32, m->nencodings);
  for (size_t i = 0; i < m->nencodings; i++)
    kg_thrift_elem_i32(t, (int32_t)m->encodings[i]);
  kg_thrift_list_begin(t, 3, KG_THRIFT_BINARY, m->npath);
  for (size_t i = 0; i < m->npath; i++)
    kg_thrift_elem_binary(t, m->path[i], strlen(m->path[i]));
  kg_thrift_i32(t, 4, (int32_t)m->codec);
  kg_thrift_i64(t, 5, m->num_values);
  kg_thrift_i64(t, 6, m->total_uncompressed_size);
  kg_thrift_i64(t, 7, m->total_compressed_size);
  kg_thrift_i64(t, 9, m->data_page_offset);
  if (m->dictionary_page_offset >= 0) kg_thrift_i64(t, 11, m->dictionary_page_offset);
  if (m->statistics) write_statistics(t, 12, m->statistics);
  kg_thrift_struct_end(t);
}

static void write_row_group(kg_thrift_t *t, const kg_pq_row_group_t *g) {
  kg_thrift_elem_struct_begin(t);
  kg_thrift_list_begin(t, 1, KG_THRIFT_STRUCT, g->ncolumns);
  for (size_t i = 0; i < g->ncolumns; i++) {
    kg_thrift_elem_struct_begin(t);
    kg_thrift_i64(t, 2, g->columns[i].file_offset);
    write_column_meta(t, 3, &g->columns[i].meta);
    kg_thrift_struct_end(t);
  }
  kg_thrift_i64(t, 2, g->total_byte_size);
  kg_thrift_i64(t, 3, g->num_rows);
  kg_thrift_i64(t, 5, g->file_offset);
  kg_thrift_i64(t, 6, g->total_compressed_size);
  kg_thrift_field(t, 7, KG_THRIFT_I16);
  kg_thrift_zigzag(t->out, g->ordinal);
  kg_thrift_struct_end(t);
}

void kg_pq_write_file_meta(kg_buf_t *out, const kg_pq_file_meta_t *m) {
  kg_thrift_t t = {.out = out};
  kg_thrift_i32(&t, 1, m->version);
  kg_thrift_list_begin(&t, 2, KG_THRIFT_STRUCT, m->nschema);
  for (size_t i = 0; i < m->nschema; i++)
    write_schema_element(&t, &m->schema[i]);
  kg_thrift_i64(&t, 3, m->num_rows);
  kg_thrift_list_begin(&t, 4, KG_THRIFT_STRUCT, m->nrow_groups);
  for (size_t i = 0; i < m->nrow_groups; i++)
    write_row_group(&t, &m->row_groups[i]);
  if (m->nkey_value) {
    kg_thrift_list_begin(&t, 5, KG_THRIFT_STRUCT, m->nkey_value);
    for (size_t i = 0; i < m->nkey_value; i++) {
      kg_thrift_elem_struct_begin(&t);
      kg_thrift_string(&t, 1, m->key_value[i].key);
      if (m->key_value[i].value) kg_thrift_binary(&t, 2, m->key_value[i].value, m->key_value[i].value_len);
      kg_thrift_struct_end(&t);
    }
  }
  if (m->created_by) kg_thrift_string(&t, 6, m->created_by);
  if (m->ncolumn_orders) {
    kg_thrift_list_begin(&t, 7, KG_THRIFT_STRUCT, m->ncolumn_orders);
    for (size_t i = 0; i < m->ncolumn_orders; i++) { /* ColumnOrder { 1: TypeDefinedOrder TYPE_ORDER } */
      kg_thrift_elem_struct_begin(&t);
      kg_thrift_empty_struct(&t, 1);
      kg_thrift_struct_end(&t);
    }
  }
  kg_thrift_struct_end(&t);
}

void kg_pq_write_page_header(kg_buf_t *out, const kg_pq_page_header_t *h) {
  kg_thrift_t t = {.out = out};
  kg_thrift_i32(&t, 1, (int32_t)h->type);
  kg_thrift_i32(&t, 2, h->uncompressed_page_size);
  kg_thrift_i32(&t, 3, h->compressed_page_size);
  if (h->data) {
    kg_thrift_struct_begin(&t, 5);
    kg_thrift_i32(&t, 1, h->data->num_values);
    kg_thrift_i32(&t, 2, (int32_t)h->data->encoding);
    kg_thrift_i32(&t, 3, (int32_t)h->data->definition_level_encoding);
    kg_thrift_i32(&t, 4, (int32_t)h->data->repetition_level_encoding);
    if (h->data->statistics) write_statistics(&t, 5, h->data->statistics);
    kg_thrift_struct_end(&t);
  }
  if (h->dictionary) {
    kg_thrift_struct_begin(&t, 7);
    kg_thrift_i32(&t, 1, h->dictionary->num_values);
    kg_thrift_i32(&t, 2, (int32_t)h->dictionary->encoding);
    kg_thrift_struct_end(&t);
  }
  kg_thrift_struct_end(&t);
}

/* ---- Levels ---- */

/* The length of the run of equal levels at LEVELS[I], before N. */
static size_t run_at(const uint8_t *levels, size_t i, size_t n) {
  size_t j = i + 1;
  while (j < n && levels[j] == levels[i])
    j++;
  return j - i;
}

void kg_pq_levels_encode(kg_buf_t *out, const uint8_t *levels, size_t n, int bit_width) {
  size_t i = 0;
  while (i < n) {
    size_t run = run_at(levels, i, n);
    if (run >= 8) {
      kg_thrift_varint(out, (uint64_t)run << 1);
      put_byte(out, levels[i]);
      i += run;
      continue;
    }
    /* Groups of 8 until a run of 8 or more starts at a group's start, or the levels end. */
    size_t groups = 0, j = i;
    do {
      groups++;
      j += 8;
    } while (j < n && groups < 63 && run_at(levels, j, n) < 8);
    kg_thrift_varint(out, (uint64_t)groups << 1 | 1);
    size_t nbytes = groups * (size_t)bit_width; /* 8 levels of BIT_WIDTH bits: BIT_WIDTH bytes */
    unsigned char *p = (unsigned char *)kg_buf_reserve(out, nbytes);
    memset(p, 0, nbytes);
    for (size_t k = 0; k < groups * 8; k++) {
      unsigned v = i + k < n ? levels[i + k] : 0;
      size_t bit = k * (size_t)bit_width;
      for (int b = 0; b < bit_width; b++, bit++)
        if (v >> b & 1) p[bit / 8] |= (unsigned char)(1u << (bit % 8));
    }
    out->len += nbytes;
    out->data[out->len] = '\0';
    i = j < n ? j : n;
  }
}
