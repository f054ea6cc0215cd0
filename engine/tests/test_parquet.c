/* test_parquet.c: the Parquet writer's parts, read back by decoders of this test's own: the Thrift compact protocol
 * (every field of a page header and a footer, by id and type), the levels' RLE/bit-packed hybrid (exact bytes of
 * small cases, and long sequences decoded back), and whole files of the writer (the footer's row groups and
 * statistics, each page's header and its levels and values decoded, nulls and taking records back; what schemas it
 * refuses, naming the field). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"
#include "parquet_thrift.h"
#include "test.h"
#include "writer.h"

/* ---- A compact-protocol decoder ---- */

typedef struct tv tv_t;
struct tv {
  int type; /* KG_THRIFT_*: TRUE for either bool */
  int64_t i;
  bool b;
  const unsigned char *bin;
  size_t len;
  tv_t *items; /* list elements, or struct fields */
  int16_t *ids;
  size_t n;
};

static uint64_t rd_varint(const unsigned char **p, const unsigned char *end, bool *ok) {
  uint64_t v = 0;
  for (int s = 0; *p < end && s < 64; s += 7) {
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) return v;
  }
  *ok = false;
  return 0;
}

static int64_t rd_zigzag(const unsigned char **p, const unsigned char *end, bool *ok) {
  uint64_t v = rd_varint(p, end, ok);
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void rd_value(tv_t *v, int type, const unsigned char **p, const unsigned char *end, bool *ok);

static void rd_struct(tv_t *v, const unsigned char **p, const unsigned char *end, bool *ok) {
  v->type = KG_THRIFT_STRUCT;
  int16_t last = 0;
  while (*ok) {
    if (*p >= end) {
      *ok = false;
      return;
    }
    unsigned char h = *(*p)++;
    if (!h) return;
    int type = h & 0x0f;
    int16_t id = (h >> 4) ? (int16_t)(last + (h >> 4)) : (int16_t)rd_zigzag(p, end, ok);
    last = id;
    v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
    v->ids = realloc(v->ids, (v->n + 1) * sizeof *v->ids);
    memset(&v->items[v->n], 0, sizeof *v->items);
    v->ids[v->n] = id;
    tv_t *f = &v->items[v->n++];
    if (type == KG_THRIFT_TRUE || type == KG_THRIFT_FALSE) {
      f->type = KG_THRIFT_TRUE;
      f->b = type == KG_THRIFT_TRUE;
    } else {
      rd_value(f, type, p, end, ok);
    }
  }
}

static void rd_value(tv_t *v, int type, const unsigned char **p, const unsigned char *end, bool *ok) {
  v->type = type;
  switch (type) {
  case KG_THRIFT_BYTE:
    if (*p >= end)
      *ok = false;
    else
      v->i = (int8_t) * (*p)++;
    break;
  case KG_THRIFT_I16:
  case KG_THRIFT_I32:
  case KG_THRIFT_I64: v->i = rd_zigzag(p, end, ok); break;
  case KG_THRIFT_BINARY:
    v->len = rd_varint(p, end, ok);
    if (!*ok || v->len > (size_t)(end - *p)) {
      *ok = false;
      break;
    }
    v->bin = *p;
    *p += v->len;
    break;
  case KG_THRIFT_LIST: {
    if (*p >= end) {
      *ok = false;
      break;
    }
    unsigned char h = *(*p)++;
    int elem = h & 0x0f;
    size_t n = h >> 4;
    if (n == 15) n = rd_varint(p, end, ok);
    v->items = calloc(n ? n : 1, sizeof *v->items);
    v->n = n;
    for (size_t k = 0; k < n && *ok; k++)
      rd_value(&v->items[k], elem, p, end, ok);
    break;
  }
  case KG_THRIFT_STRUCT: rd_struct(v, p, end, ok); break;
  default: *ok = false;
  }
}

static void tv_free(tv_t *v) {
  for (size_t k = 0; k < v->n; k++)
    tv_free(&v->items[k]);
  free(v->items);
  free(v->ids);
}

/* Field ID of struct V, or NULL. */
static const tv_t *fld(const tv_t *v, int16_t id) {
  if (!v || v->type != KG_THRIFT_STRUCT) return NULL;
  for (size_t k = 0; k < v->n; k++)
    if (v->ids[k] == id) return &v->items[k];
  return NULL;
}

static int64_t fint(const tv_t *v, int16_t id) {
  const tv_t *f = fld(v, id);
  return f ? f->i : -999;
}

static bool fstr(const tv_t *v, int16_t id, const char *want) {
  const tv_t *f = fld(v, id);
  return f && f->type == KG_THRIFT_BINARY && f->len == strlen(want) && !memcmp(f->bin, want, f->len);
}

/* Decodes one struct from the LEN bytes at P; *USED gets the bytes it took. */
static bool decode(const void *p, size_t len, tv_t *out, size_t *used) {
  memset(out, 0, sizeof *out);
  const unsigned char *s = p, *q = p, *end = q + len;
  bool ok = true;
  rd_struct(out, &q, end, &ok);
  if (used) *used = (size_t)(q - s);
  return ok;
}

/* ---- The hybrid decoder ---- */

static size_t levels_decode(const unsigned char *p, size_t len, int bw, uint8_t *out, size_t max) {
  if (!len) return 0;
  const unsigned char *end = p + len;
  size_t n = 0;
  bool ok = true;
  while (p < end && ok) {
    uint64_t h = rd_varint(&p, end, &ok);
    if (h & 1) {
      size_t count = (size_t)(h >> 1) * 8;
      for (size_t k = 0; k < count; k++) {
        size_t bit = k * (size_t)bw;
        unsigned v = 0;
        for (int b = 0; b < bw; b++, bit++)
          if (p + bit / 8 < end && (p[bit / 8] >> (bit % 8) & 1)) v |= 1u << b;
        if (n < max) out[n] = (uint8_t)v;
        n++;
      }
      p += (h >> 1) * (uint64_t)bw;
    } else {
      size_t count = (size_t)(h >> 1);
      uint8_t v = p < end ? *p++ : 0;
      for (size_t k = 0; k < count; k++, n++)
        if (n < max) out[n] = v;
    }
  }
  return n;
}

static void test_thrift_basics(void) {
  kg_buf_t b = {0};
  kg_thrift_varint(&b, 300);
  CHECK_INT(b.len, 2);
  CHECK_INT((unsigned char)b.data[0], 0xac);
  CHECK_INT((unsigned char)b.data[1], 0x02);
  b.len = 0;
  kg_thrift_zigzag(&b, -1);
  kg_thrift_zigzag(&b, 1);
  kg_thrift_zigzag(&b, INT64_MIN);
  CHECK_INT((unsigned char)b.data[0], 1);
  CHECK_INT((unsigned char)b.data[1], 2);
  CHECK_INT(b.len, 12);
  /* Short and long field deltas, bools in the type nibble, a long list, nested structs. */
  b.len = 0;
  kg_thrift_t t = {.out = &b};
  kg_thrift_i32(&t, 1, -5);
  kg_thrift_bool(&t, 2, true);
  kg_thrift_bool(&t, 3, false);
  kg_thrift_i64(&t, 40, INT64_MAX);
  kg_thrift_list_begin(&t, 41, KG_THRIFT_I32, 20);
  for (int i = 0; i < 20; i++)
    kg_thrift_elem_i32(&t, i * 1000 - 7);
  kg_thrift_struct_begin(&t, 42);
  kg_thrift_string(&t, 7, "inner");
  kg_thrift_empty_struct(&t, 9);
  kg_thrift_struct_end(&t);
  kg_thrift_byte(&t, 43, -3);
  kg_thrift_struct_end(&t);
  CHECK_INT((unsigned char)b.data[0], 0x15); /* delta 1, i32 */
  CHECK_INT((unsigned char)b.data[2], 0x11); /* delta 1, true */
  CHECK_INT((unsigned char)b.data[3], 0x12); /* delta 1, false */
  CHECK_INT((unsigned char)b.data[4], 0x06); /* i64 with a long delta: the id follows */
  tv_t v;
  size_t used;
  CHECK(decode(b.data, b.len, &v, &used));
  CHECK_INT(used, b.len);
  CHECK_INT(fint(&v, 1), -5);
  CHECK(fld(&v, 2) && fld(&v, 2)->b);
  CHECK(fld(&v, 3) && !fld(&v, 3)->b);
  CHECK(fint(&v, 40) == INT64_MAX);
  const tv_t *list = fld(&v, 41);
  CHECK(list && list->n == 20);
  if (list && list->n == 20) CHECK_INT(list->items[19].i, 19 * 1000 - 7);
  CHECK(fstr(fld(&v, 42), 7, "inner"));
  CHECK(fld(fld(&v, 42), 9) && fld(fld(&v, 42), 9)->n == 0);
  CHECK_INT(fint(&v, 43), -3);
  tv_free(&v);
  kg_buf_free(&b);
}

static void test_page_header(void) {
  kg_buf_t b = {0};
  kg_pq_statistics_t s = {.min = "a", .min_len = 1, .max = "zz", .max_len = 2, .has_null_count = true, .null_count = 3};
  kg_pq_data_page_header_t d = {.num_values = 1000,
                                .encoding = KG_PQ_PLAIN,
                                .definition_level_encoding = KG_PQ_RLE,
                                .repetition_level_encoding = KG_PQ_RLE,
                                .statistics = &s};
  kg_pq_page_header_t h = {
      .type = KG_PQ_DATA_PAGE, .uncompressed_page_size = 123456, .compressed_page_size = 789, .data = &d};
  kg_pq_write_page_header(&b, &h);
  tv_t v;
  size_t used;
  CHECK(decode(b.data, b.len, &v, &used));
  CHECK_INT(used, b.len);
  CHECK_INT(fint(&v, 1), 0);
  CHECK_INT(fint(&v, 2), 123456);
  CHECK_INT(fint(&v, 3), 789);
  const tv_t *dh = fld(&v, 5);
  CHECK_INT(fint(dh, 1), 1000);
  CHECK_INT(fint(dh, 2), KG_PQ_PLAIN);
  CHECK_INT(fint(dh, 3), KG_PQ_RLE);
  CHECK_INT(fint(dh, 4), KG_PQ_RLE);
  CHECK_INT(fint(fld(dh, 5), 3), 3);
  CHECK(fstr(fld(dh, 5), 5, "zz"));
  CHECK(fstr(fld(dh, 5), 6, "a"));
  CHECK(!fld(fld(dh, 5), 1) && !fld(fld(dh, 5), 2)); /* the deprecated min and max are not written */
  tv_free(&v);
  b.len = 0;
  kg_pq_dictionary_page_header_t dict = {.num_values = 7, .encoding = KG_PQ_PLAIN};
  kg_pq_page_header_t hd = {
      .type = KG_PQ_DICTIONARY_PAGE, .uncompressed_page_size = 70, .compressed_page_size = 60, .dictionary = &dict};
  kg_pq_write_page_header(&b, &hd);
  CHECK(decode(b.data, b.len, &v, NULL));
  CHECK_INT(fint(&v, 1), 2);
  CHECK(!fld(&v, 5));
  CHECK_INT(fint(fld(&v, 7), 1), 7);
  CHECK_INT(fint(fld(&v, 7), 2), KG_PQ_PLAIN);
  tv_free(&v);
  kg_buf_free(&b);
}

static void test_file_meta(void) {
  kg_pq_schema_element_t schema[] = {
      {.name = "Event", .num_children = 4, .converted = KG_PQ_CONVERTED_NONE},
      {.name = "id",
       .has_type = true,
       .type = KG_PQ_INT64,
       .has_repetition = true,
       .repetition = KG_PQ_REQUIRED,
       .num_children = -1,
       .converted = KG_PQ_CONVERTED_NONE},
      {.name = "name",
       .has_type = true,
       .type = KG_PQ_BYTE_ARRAY,
       .has_repetition = true,
       .repetition = KG_PQ_OPTIONAL,
       .num_children = -1,
       .converted = KG_PQ_UTF8,
       .logical = {.kind = KG_PQ_LOGICAL_STRING}},
      {.name = "at",
       .has_type = true,
       .type = KG_PQ_INT64,
       .has_repetition = true,
       .num_children = -1,
       .converted = KG_PQ_TIMESTAMP_MICROS,
       .logical = {.kind = KG_PQ_LOGICAL_TIMESTAMP, .adjusted_to_utc = true, .unit = KG_PQ_MICROS}},
      {.name = "price",
       .has_type = true,
       .type = KG_PQ_FIXED_LEN_BYTE_ARRAY,
       .type_length = 16,
       .has_repetition = true,
       .num_children = -1,
       .converted = KG_PQ_DECIMAL,
       .scale = 2,
       .precision = 30,
       .logical = {.kind = KG_PQ_LOGICAL_DECIMAL, .scale = 2, .precision = 30}},
  };
  static const kg_pq_encoding_t enc[] = {KG_PQ_PLAIN, KG_PQ_RLE};
  const char *path[] = {"id"};
  kg_pq_statistics_t st = {.min = "\1\0\0\0\0\0\0\0", .min_len = 8, .max = "\2\0\0\0\0\0\0\0", .max_len = 8};
  kg_pq_column_chunk_t cc = {.file_offset = 4,
                             .meta = {.type = KG_PQ_INT64,
                                      .encodings = enc,
                                      .nencodings = 2,
                                      .path = path,
                                      .npath = 1,
                                      .codec = KG_PQ_ZSTD,
                                      .num_values = 2,
                                      .total_uncompressed_size = 40,
                                      .total_compressed_size = 30,
                                      .data_page_offset = 4,
                                      .dictionary_page_offset = -1,
                                      .statistics = &st}};
  kg_pq_row_group_t g = {.columns = &cc,
                         .ncolumns = 1,
                         .total_byte_size = 40,
                         .num_rows = 2,
                         .file_offset = 4,
                         .total_compressed_size = 30,
                         .ordinal = 0};
  kg_pq_key_value_t kv = {.key = "parquet.avro.schema", .value = "{}", .value_len = 2};
  kg_pq_file_meta_t m = {.version = 1,
                         .schema = schema,
                         .nschema = 5,
                         .num_rows = 2,
                         .row_groups = &g,
                         .nrow_groups = 1,
                         .key_value = &kv,
                         .nkey_value = 1,
                         .created_by = "kingest version 0.1.0",
                         .ncolumn_orders = 4};
  kg_buf_t b = {0};
  kg_pq_write_file_meta(&b, &m);
  tv_t v;
  size_t used;
  CHECK(decode(b.data, b.len, &v, &used));
  CHECK_INT(used, b.len);
  CHECK_INT(fint(&v, 1), 1);
  const tv_t *sc = fld(&v, 2);
  CHECK(sc && sc->n == 5);
  if (sc && sc->n == 5) {
    CHECK(fstr(&sc->items[0], 4, "Event"));
    CHECK(!fld(&sc->items[0], 1) && !fld(&sc->items[0], 3));
    CHECK_INT(fint(&sc->items[0], 5), 4);
    CHECK_INT(fint(&sc->items[1], 1), KG_PQ_INT64);
    CHECK_INT(fint(&sc->items[1], 3), KG_PQ_REQUIRED);
    CHECK(!fld(&sc->items[1], 6) && !fld(&sc->items[1], 10));
    CHECK_INT(fint(&sc->items[2], 3), KG_PQ_OPTIONAL);
    CHECK_INT(fint(&sc->items[2], 6), KG_PQ_UTF8);
    CHECK(fld(fld(&sc->items[2], 10), 1)); /* LogicalType.STRING */
    const tv_t *ts = fld(fld(&sc->items[3], 10), 8);
    CHECK(fld(ts, 1) && fld(ts, 1)->b);
    CHECK(fld(fld(ts, 2), 2)); /* TimeUnit.MICROS */
    CHECK_INT(fint(&sc->items[4], 2), 16);
    CHECK_INT(fint(&sc->items[4], 7), 2);
    CHECK_INT(fint(&sc->items[4], 8), 30);
    CHECK_INT(fint(fld(fld(&sc->items[4], 10), 5), 1), 2);
    CHECK_INT(fint(fld(fld(&sc->items[4], 10), 5), 2), 30);
  }
  CHECK_INT(fint(&v, 3), 2);
  const tv_t *rg = fld(&v, 4);
  CHECK(rg && rg->n == 1);
  if (rg && rg->n == 1) {
    const tv_t *cols = fld(&rg->items[0], 1);
    CHECK(cols && cols->n == 1);
    const tv_t *md = cols && cols->n ? fld(&cols->items[0], 3) : NULL;
    CHECK_INT(fint(&cols->items[0], 2), 4);
    CHECK_INT(fint(md, 1), KG_PQ_INT64);
    CHECK(fld(md, 2) && fld(md, 2)->n == 2 && fld(md, 2)->items[1].i == KG_PQ_RLE);
    CHECK(fld(md, 3) && fld(md, 3)->n == 1 && fld(md, 3)->items[0].len == 2);
    CHECK_INT(fint(md, 4), KG_PQ_ZSTD);
    CHECK_INT(fint(md, 5), 2);
    CHECK_INT(fint(md, 6), 40);
    CHECK_INT(fint(md, 7), 30);
    CHECK_INT(fint(md, 9), 4);
    CHECK(!fld(md, 11));
    CHECK(fld(fld(md, 12), 5) && fld(fld(md, 12), 5)->len == 8);
    CHECK(!fld(fld(md, 12), 3));
    CHECK_INT(fint(&rg->items[0], 2), 40);
    CHECK_INT(fint(&rg->items[0], 3), 2);
    CHECK_INT(fint(&rg->items[0], 5), 4);
    CHECK_INT(fint(&rg->items[0], 6), 30);
    CHECK_INT(fint(&rg->items[0], 7), 0);
  }
  const tv_t *kvs = fld(&v, 5);
  CHECK(kvs && kvs->n == 1 && fstr(&kvs->items[0], 1, "parquet.avro.schema") && fstr(&kvs->items[0], 2, "{}"));
  CHECK(fstr(&v, 6, "kingest version 0.1.0"));
  const tv_t *orders = fld(&v, 7);
  CHECK(orders && orders->n == 4 && fld(&orders->items[3], 1));
  tv_free(&v);
  kg_buf_free(&b);
}

/* Encodes N levels, checks the bytes against WANT (when given) and that they decode back. */
static void check_levels(const uint8_t *levels, size_t n, int bw, const unsigned char *want, size_t want_len) {
  kg_buf_t b = {0};
  kg_pq_levels_encode(&b, levels, n, bw);
  if (want) {
    CHECK_INT(b.len, want_len);
    CHECK(b.len == want_len && (!want_len || !memcmp(b.data, want, want_len)));
  }
  uint8_t *back = calloc(n + 64, 1);
  size_t got = levels_decode((const unsigned char *)b.data, b.len, bw, back, n + 64);
  CHECK(got >= n && got < n + 8); /* the last group's padding, at most 7 */
  CHECK(!memcmp(back, levels, n));
  free(back);
  kg_buf_free(&b);
}

static void test_levels(void) {
  uint8_t zeros[10] = {0};
  check_levels(zeros, 10, 1, (const unsigned char *)"\x14\x00", 2); /* RLE: 10 << 1, value 0 */
  uint8_t three[3] = {1, 0, 1};
  check_levels(three, 3, 1, (const unsigned char *)"\x03\x05", 2); /* one bit-packed group: 1 << 1 | 1, 0b101 */
  uint8_t mixed[20] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  /* A group of 8 bit-packed, then an RLE run of 12 ones. */
  check_levels(mixed, 20, 1, (const unsigned char *)"\x03\x0d\x18\x01", 4);
  check_levels(mixed, 0, 1, (const unsigned char *)"", 0);
  /* Random levels of widths 1 to 3, with runs mixed in, and a long alternating sequence (more than 63 groups). */
  srand(7);
  for (int bw = 1; bw <= 3; bw++)
    for (int round = 0; round < 20; round++) {
      size_t n = (size_t)(rand() % 3000);
      uint8_t *l = malloc(n + 1);
      for (size_t i = 0; i < n;) {
        size_t run = (size_t)(rand() % 3 == 0 ? rand() % 40 + 1 : 1);
        uint8_t v = (uint8_t)(rand() % (1 << bw));
        for (size_t k = 0; k < run && i < n; k++)
          l[i++] = v;
      }
      check_levels(l, n, bw, NULL, 0);
      free(l);
    }
  uint8_t alt[1000];
  for (size_t i = 0; i < sizeof alt; i++)
    alt[i] = (uint8_t)(i & 1);
  check_levels(alt, sizeof alt, 1, NULL, 0);
}

/* ---- Whole files ---- */

static const char schema[] =
    "{\"type\":\"record\",\"name\":\"Row\",\"namespace\":\"t\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\"},"
    "{\"name\":\"name\",\"type\":[\"null\",\"string\"]},"
    "{\"name\":\"ok\",\"type\":\"boolean\"},"
    "{\"name\":\"n\",\"type\":[\"int\",\"null\"]},"
    "{\"name\":\"color\",\"type\":{\"type\":\"enum\",\"name\":\"Color\",\"symbols\":[\"RED\",\"GREEN\"]}},"
    "{\"name\":\"other\",\"type\":[\"null\",\"Color\"]},"
    "{\"name\":\"f\",\"type\":\"float\"},"
    "{\"name\":\"d\",\"type\":[\"null\",\"double\"]},"
    "{\"name\":\"b\",\"type\":\"bytes\"},"
    "{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"Two\",\"size\":2}}]}";

static void put_long(kg_buf_t *b, int64_t v) { kg_thrift_zigzag(b, v); }

/* The datum of row I: name null when I % 3 == 0, n null when I % 5 == 0, d null when I is odd. */
static void row_datum(kg_buf_t *b, int64_t i) {
  b->len = 0;
  put_long(b, i * 1000 - 5);
  if (i % 3 == 0) {
    put_long(b, 0);
  } else {
    char s[32];
    int n = snprintf(s, sizeof s, "name-%lld", (long long)i);
    put_long(b, 1);
    put_long(b, n);
    kg_buf_append(b, s, (size_t)n);
  }
  unsigned char ok = (unsigned char)(i & 1);
  kg_buf_append(b, &ok, 1);
  if (i % 5 == 0) {
    put_long(b, 1);
  } else {
    put_long(b, 0);
    put_long(b, -i);
  }
  put_long(b, i % 2);
  put_long(b, 1);
  put_long(b, (i + 1) % 2);
  float f = (float)i / 2;
  kg_buf_append(b, &f, 4);
  if (i & 1) {
    put_long(b, 0);
  } else {
    double d = (double)i * 1.5;
    put_long(b, 1);
    kg_buf_append(b, &d, 8);
  }
  put_long(b, 3);
  kg_buf_append(b, "\0\1\2", 3);
  unsigned char x[2] = {(unsigned char)i, (unsigned char)(i >> 8)};
  kg_buf_append(b, x, 2);
}

static char *slurp(const char *path, size_t *len) {
  int e = 0;
  return kg_read_file(path, len, &e);
}

/* Reads the file at PATH: its footer into *META; KG_OK when the frame is right. */
static bool read_footer(const char *data, size_t len, tv_t *meta) {
  if (len < 12 || memcmp(data, "PAR1", 4) || memcmp(data + len - 4, "PAR1", 4)) return false;
  const unsigned char *e = (const unsigned char *)data + len - 8;
  size_t flen = (size_t)e[0] | (size_t)e[1] << 8 | (size_t)e[2] << 16 | (size_t)e[3] << 24;
  if (flen > len - 12) return false;
  size_t used;
  return decode(data + len - 8 - flen, flen, meta, &used) && used == flen;
}

static void test_file(void) {
  char dir[] = "/tmp/kg-parquet-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char *path = kg_xasprintf("%s/a.parquet", dir);
  kg_parquet_options_t own = {.block_size = 64 * 1024 * 1024, .page_size = 256};
  kg_writer_options_t o = {.codec = KG_CODEC_NULL, .schema = schema, .schema_len = sizeof schema - 1, .backend = &own};
  kg_writer_t *w = NULL;
  char err[KG_ERRLEN];
  CHECK_INT(kg_writer_open(kg_fs_local(), &kg_writer_parquet, path, &o, &w, err), KG_OK);
  if (!w) return;
  kg_buf_t d = {0};
  int64_t records, bytes;
  for (int64_t i = 0; i < 100; i++) {
    CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
    row_datum(&d, i);
    CHECK_INT(kg_writer_write(w, d.data, d.len, err), KG_OK);
  }
  /* A record taken back after a mark, and a record that is not a datum of the schema, leave nothing. */
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 100);
  row_datum(&d, 1000);
  CHECK_INT(kg_writer_write(w, d.data, d.len, err), KG_OK);
  CHECK_INT(kg_writer_write(w, d.data, d.len, err), KG_OK);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_truncate(w, records - 1, bytes, err), KG_EINVAL);
  row_datum(&d, 7);
  CHECK_INT(kg_writer_write(w, d.data, d.len - 1, err), KG_ERECORD);
  CHECK_CONTAINS(err, "it ends early at a fixed at field x");
  kg_buf_append(&d, "\0", 1);
  CHECK_INT(kg_writer_write(w, d.data, d.len, err), KG_ERECORD);
  CHECK_CONTAINS(err, "bytes are left after its last field");
  d.len = 0;
  put_long(&d, 1);
  put_long(&d, 7); /* name: a union index out of range */
  CHECK_INT(kg_writer_write(w, d.data, d.len, err), KG_ERECORD);
  CHECK_CONTAINS(err, "at field name");
  CHECK_INT(kg_writer_records(w), 100);
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 100);
  size_t len = 0;
  char *data = slurp(path, &len);
  CHECK_INT(bytes, (int64_t)len);
  tv_t meta;
  CHECK(data && read_footer(data, len, &meta));
  CHECK_INT(fint(&meta, 3), 100);
  CHECK(fstr(&meta, 6, "kingest version " KINGEST_VERSION));
  const tv_t *kv = fld(&meta, 5);
  CHECK(kv && kv->n == 1 && fstr(&kv->items[0], 2, schema));
  const tv_t *sc = fld(&meta, 2);
  CHECK(sc && sc->n == 11);
  if (sc && sc->n == 11) {
    CHECK(fstr(&sc->items[0], 4, "Row"));
    CHECK_INT(fint(&sc->items[2], 3), KG_PQ_OPTIONAL);
    CHECK_INT(fint(&sc->items[3], 1), KG_PQ_BOOLEAN);
    CHECK_INT(fint(&sc->items[5], 6), KG_PQ_ENUM);
    CHECK_INT(fint(&sc->items[6], 3), KG_PQ_OPTIONAL);
    CHECK_INT(fint(&sc->items[10], 1), KG_PQ_FIXED_LEN_BYTE_ARRAY);
    CHECK_INT(fint(&sc->items[10], 2), 2);
  }
  const tv_t *rg = fld(&meta, 4);
  CHECK(rg && rg->n == 1);
  const tv_t *cols = rg && rg->n ? fld(&rg->items[0], 1) : NULL;
  CHECK(cols && cols->n == 10);
  if (cols && cols->n == 10) {
    /* id: pages of 256 bytes or so (32 longs), every value back in order; the statistics. */
    const tv_t *md = fld(&cols->items[0], 3);
    CHECK_INT(fint(md, 5), 100);
    const tv_t *st = fld(md, 12);
    CHECK(fld(st, 6) && fld(st, 6)->len == 8);
    int64_t want_min = -5, want_max = 99 * 1000 - 5;
    CHECK(fld(st, 6) && !memcmp(fld(st, 6)->bin, &want_min, 8));
    CHECK(fld(st, 5) && !memcmp(fld(st, 5)->bin, &want_max, 8));
    CHECK_INT(fint(st, 3), 0);
    int64_t off = fint(md, 9), pages = 0, seen = 0;
    while (off < fint(md, 9) + fint(md, 7)) {
      tv_t h;
      size_t used;
      CHECK(decode(data + off, len - (size_t)off, &h, &used));
      int64_t n = fint(fld(&h, 5), 1);
      CHECK_INT(fint(&h, 2), n * 8);
      for (int64_t k = 0; k < n; k++) {
        int64_t v;
        memcpy(&v, data + off + (int64_t)used + 8 * k, 8);
        CHECK_INT(v, (seen + k) * 1000 - 5);
      }
      seen += n;
      pages++;
      off += (int64_t)used + fint(&h, 3);
      tv_free(&h);
    }
    CHECK_INT(seen, 100);
    CHECK(pages >= 3);
    /* name: levels 0 for i % 3 == 0, then the strings; null count 34, min "name-1", max "name-98". */
    md = fld(&cols->items[1], 3);
    st = fld(md, 12);
    CHECK_INT(fint(st, 3), 34);
    CHECK(fstr(st, 6, "name-1"));
    CHECK(fstr(st, 5, "name-98"));
    tv_t h;
    size_t used;
    off = fint(md, 9);
    CHECK(decode(data + off, len - (size_t)off, &h, &used));
    const unsigned char *page = (const unsigned char *)data + off + used;
    size_t llen = (size_t)page[0] | (size_t)page[1] << 8;
    uint8_t levels[512];
    int64_t n = fint(fld(&h, 5), 1);
    CHECK(n > 0 && n <= 100);
    size_t got = levels_decode(page + 4, llen, 1, levels, sizeof levels);
    CHECK(got >= (size_t)n);
    for (int64_t k = 0; k < n && k < 100; k++)
      CHECK_INT(levels[k], k % 3 != 0);
    const unsigned char *val = page + 4 + llen;
    CHECK_INT(val[0], 6); /* the first non-null: "name-1" */
    CHECK(!memcmp(val + 4, "name-1", 6));
    tv_free(&h);
    /* n's nulls; enums as their symbols; d's null count; fixed min and max. */
    CHECK_INT(fint(fld(fld(&cols->items[3], 3), 12), 3), 20);
    CHECK(fstr(fld(fld(&cols->items[4], 3), 12), 6, "GREEN"));
    CHECK(fstr(fld(fld(&cols->items[4], 3), 12), 5, "RED"));
    CHECK_INT(fint(fld(fld(&cols->items[7], 3), 12), 3), 50);
    const tv_t *fx = fld(fld(&cols->items[9], 3), 12);
    CHECK(fld(fx, 6) && fld(fx, 6)->len == 2 && !memcmp(fld(fx, 6)->bin, "\0\0", 2));
    CHECK(fld(fx, 5) && fld(fx, 5)->len == 2 && !memcmp(fld(fx, 5)->bin, "\x63\0", 2));
  }
  tv_free(&meta);
  free(data);
  kg_buf_free(&d);
  unlink(path);
  rmdir(dir);
  free(path);
}

/* Row groups closed at the block size, only at marks; each codec's file frames right. */
static void test_groups_and_codecs(void) {
  static const kg_codec_t codecs[] = {KG_CODEC_NULL, KG_CODEC_SNAPPY, KG_CODEC_GZIP, KG_CODEC_ZSTD};
  static const int want[] = {KG_PQ_UNCOMPRESSED, KG_PQ_SNAPPY, KG_PQ_GZIP, KG_PQ_ZSTD};
  for (size_t c = 0; c < 4; c++) {
    char path[] = "/tmp/kg-parquet-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    kg_parquet_options_t own = {.block_size = 4000, .page_size = 1000};
    kg_writer_options_t o = {
        .codec = codecs[c], .deflate_level = 6, .schema = schema, .schema_len = sizeof schema - 1, .backend = &own};
    kg_writer_t *w = NULL;
    char err[KG_ERRLEN];
    CHECK_INT(kg_writer_open(kg_fs_local(), &kg_writer_parquet, path, &o, &w, err), KG_OK);
    if (!w) continue;
    kg_buf_t d = {0};
    int64_t records, bytes;
    for (int64_t i = 0; i < 1000; i++) {
      CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
      row_datum(&d, i);
      CHECK_INT(kg_writer_write(w, d.data, d.len, err), KG_OK);
      CHECK_INT(kg_writer_bytes(w), bytes); /* a write never writes out */
    }
    CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
    size_t len = 0;
    char *data = slurp(path, &len);
    CHECK_INT(bytes, (int64_t)len);
    tv_t meta;
    CHECK(data && read_footer(data, len, &meta));
    const tv_t *rg = fld(&meta, 4);
    CHECK(rg && rg->n > 3);
    int64_t rows = 0;
    for (size_t g = 0; rg && g < rg->n; g++) {
      rows += fint(&rg->items[g], 3);
      CHECK_INT(fint(fld(&fld(&rg->items[g], 1)->items[0], 3), 4), want[c]);
    }
    CHECK_INT(rows, 1000);
    tv_free(&meta);
    free(data);
    kg_buf_free(&d);
    unlink(path);
  }
}

static void test_refused_schemas(void) {
  static const struct {
    const char *schema, *says;
  } cases[] = {
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":{\"type\":\"record\",\"name\":\"S\","
       "\"fields\":[{\"name\":\"x\",\"type\":\"int\"}]}}]}",
       "field R.a is a record, which Parquet output does not write yet"},
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"},{\"name\":\"tags\",\"type\":"
       "{\"type\":\"array\",\"items\":\"string\"}}]}",
       "field R.tags is an array"},
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"m\",\"type\":[\"null\",{\"type\":\"map\","
       "\"values\":\"long\"}]}]}",
       "field R.m is a map"},
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"at\",\"type\":{\"type\":\"long\",\"logicalType\":"
       "\"timestamp-millis\"}}]}",
       "field R.at has logical type timestamp-millis"},
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":[\"int\",\"string\"]}]}",
       "field R.u is a union of 2 branches that are not null"},
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":[\"null\",\"int\",\"string\"]}]}",
       "field R.u is a union of 3 branches"},
      {"\"string\"", "the schema is not a record"},
      {"{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}", "record R has no fields"},
  };
  char err[KG_ERRLEN];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK_INT(kg_parquet_schema_check(cases[i].schema, strlen(cases[i].schema), err), KG_EINVAL);
    CHECK_CONTAINS(err, cases[i].says);
  }
  CHECK_INT(kg_parquet_schema_check(schema, sizeof schema - 1, err), KG_OK);
  /* What is written is said with the refusal. */
  CHECK_INT(kg_parquet_schema_check(cases[0].schema, strlen(cases[0].schema), err), KG_EINVAL);
  CHECK_CONTAINS(err, "boolean, int, long, float, double, string, bytes, enum or fixed, or a union of null and one");
}

int main(void) {
  test_thrift_basics();
  test_page_header();
  test_file_meta();
  test_levels();
  test_file();
  test_groups_and_codecs();
  test_refused_schemas();
  printf("%d checks, %d failures\n", kg_test_checks, kg_test_failures);
  return kg_test_failures != 0;
}
