/* writer_parquet.c: Parquet files (Gobblin's ParquetDataWriterBuilder) of flat Avro records, written by kingest
 * itself: there is no C Parquet library to link.
 *
 * A record is one Avro binary datum of the file's schema, a record whose fields are each a boolean, int, long,
 * float, double, string, bytes, enum or fixed, or a union of null and one of those. Each field is a column: the
 * required ones REQUIRED, the unions OPTIONAL; strings BYTE_ARRAY annotated STRING (UTF8), enums BYTE_ARRAY of
 * the symbol annotated ENUM, fixed FIXED_LEN_BYTE_ARRAY (kg_parquet_schema_check says what else is refused).
 *
 * The file is "PAR1", row groups, the footer (FileMetaData in the Thrift compact protocol, parquet_thrift.c), its
 * length as 4 little-endian bytes, "PAR1". A row group holds one column chunk per column, each of data pages
 * (DataPage v1): the definition levels of an OPTIONAL column (1 for a value, 0 for null) in the RLE/bit-packed
 * hybrid after their 4-byte length, then the values PLAIN; each page compressed by the codec as a whole.
 *
 * Records and marks (writer.h). write() decodes the datum into each column's pending page and changes nothing
 * else, so that what a record added can be taken back by lengths alone. A mark makes the pending values final:
 * it folds them into the column chunk's statistics (min, max, nulls), closes the pages that hold
 * writer.parquet.page.size bytes (compressed into the row group's buffer), and writes the row group out once it
 * holds writer.parquet.block.size bytes. BYTES therefore counts "PAR1", then each row group as it is written, and
 * the footer at close. */
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "buf.h"
#include "json.h"
#include "parquet_thrift.h"
#include "writer.h"

/* The Avro types of the columns. */
typedef enum { A_BOOLEAN, A_INT, A_LONG, A_FLOAT, A_DOUBLE, A_STRING, A_BYTES, A_ENUM, A_FIXED } avro_kind_t;

/* Longest min or max kept in a column chunk's statistics: a longer one is left out (null count kept). */
#define KG_PARQUET_MAX_STAT_BYTES 4096

/* One column and its pending data. */
typedef struct {
  char *name;       /* owned */
  avro_kind_t kind; /* the field's Avro type (the union's non-null branch) */
  bool optional;    /* a union of null and KIND */
  int null_branch;  /* its null's branch index (0 or 1) */
  int64_t fixed_size;
  char **symbols; /* enum: NSYMBOLS, owned */
  size_t nsymbols;
  kg_pq_type_t type;
  /* The pending page: its PLAIN values (booleans a byte each until the page is closed), and for an OPTIONAL
   * column a level a byte; NVALUES levels (or values) and NNULLS nulls. The c_ counts are where the last mark left
   * them: what came after is still to be made final, or taken back. */
  kg_buf_t values, levels;
  int64_t nvalues, nnulls;
  size_t c_values_len, c_levels_len;
  int64_t c_nvalues, c_nnulls;
  /* The row group's column chunk: its pages (headers and compressed data), their sizes with the headers, the values
   * (nulls included) and nulls in them and in the final part of the pending page. */
  kg_buf_t chunk;
  int64_t chunk_uncompressed;
  int64_t chunk_values, chunk_nulls;
  /* The chunk's min and max so far, in PLAIN form (HAS_STATS: a non-null value was seen); TOO_LONG: one was longer
   * than KG_PARQUET_MAX_STAT_BYTES, so that none is written. */
  bool has_stats, too_long;
  kg_buf_t min, max;
} column_t;

/* A column chunk written out, as the footer lists it. */
typedef struct {
  int64_t offset, uncompressed, compressed, values, nulls;
  bool has_stats;
  char *min, *max; /* owned, MIN_LEN and MAX_LEN bytes */
  size_t min_len, max_len;
} chunk_meta_t;

typedef struct {
  int64_t rows, offset, uncompressed, compressed;
  chunk_meta_t *chunks; /* one per column, owned */
} group_meta_t;

/* A column's pending lengths before a record. */
typedef struct {
  size_t values_len, levels_len;
  int64_t nnulls;
} saved_t;

typedef struct {
  kg_pq_codec_t codec;
  int level;          /* gzip's */
  int64_t block_size; /* writer.parquet.block.size */
  int64_t page_size;  /* writer.parquet.page.size */
  char *record_name;  /* the root's name: the Avro record's; owned */
  char *schema;       /* the Avro schema's text (SCHEMA_LEN bytes), owned: the footer's parquet.avro.schema */
  size_t schema_len;
  column_t *columns;
  size_t ncolumns;
  int64_t rows;           /* rows in the pending row group, final or not */
  int64_t c_rows;         /* of which final (at the last mark) */
  int64_t marked_records; /* the writer's records at the last mark */
  int64_t pos;            /* bytes in the file */
  group_meta_t *groups;   /* the row groups written out, NGROUPS of them */
  size_t ngroups;
  saved_t *saved;             /* during write: where each column stood before the record (NCOLUMNS) */
  kg_buf_t page, packed, out; /* a page's bytes, compressed, and its header: reused */
} pq_t;

/* ---- The schema ---- */

/* A named type met so far (enum, fixed), by full name: the JSON node that defines it. */
typedef struct {
  char *fullname;
  const kg_json_t *node;
  const char *ns;
} named_t;

typedef struct {
  named_t *named;
  size_t nnamed;
} names_t;

static void names_free(names_t *n) {
  for (size_t i = 0; i < n->nnamed; i++)
    free(n->named[i].fullname);
  free(n->named);
}

static char *full_name(const char *name, const char *ns) {
  if (strchr(name, '.') || !ns || !*ns) return kg_xstrdup(name);
  return kg_xasprintf("%s.%s", ns, name);
}

static const char *const supported =
    "Parquet output writes records whose fields are boolean, int, long, float, double, string, bytes, enum or "
    "fixed, or a union of null and one of those";

/* The column of type TYPE (a field's type, or a union's branch) into COL; KG_EINVAL naming PATH otherwise. */
static int column_type(names_t *names, const kg_json_t *type, const char *ns, const char *path, column_t *col,
                       char *errbuf) {
  const char *name = NULL;
  if (type->type == KG_JSON_STRING) {
    name = type->string;
  } else if (type->type == KG_JSON_OBJECT) {
    const kg_json_t *t = kg_json_get(type, "type");
    const kg_json_t *logical = kg_json_get(type, "logicalType");
    if (logical && logical->type == KG_JSON_STRING)
      return kg_fail(errbuf, KG_EINVAL, "field %s has logical type %s, which Parquet output does not write yet (%s)",
                     path, logical->string, supported);
    if (!t || t->type != KG_JSON_STRING)
      return kg_fail(errbuf, KG_EINVAL, "field %s: its type is nested (%s)", path, supported);
    name = t->string;
    if (!strcmp(name, "enum") || !strcmp(name, "fixed")) {
      const kg_json_t *n = kg_json_get(type, "name");
      const kg_json_t *tns = kg_json_get(type, "namespace");
      if (!n || n->type != KG_JSON_STRING)
        return kg_fail(errbuf, KG_EINVAL, "field %s: its %s has no name", path, name);
      const char *own_ns = tns && tns->type == KG_JSON_STRING ? tns->string : ns;
      names->named = kg_xrealloc(names->named, (names->nnamed + 1) * sizeof *names->named);
      names->named[names->nnamed++] = (named_t){full_name(n->string, own_ns), type, own_ns};
      if (!strcmp(name, "fixed")) {
        const kg_json_t *size = kg_json_get(type, "size");
        if (!size || !size->is_integer || size->integer < 0 || size->integer > INT32_MAX)
          return kg_fail(errbuf, KG_EINVAL, "field %s: its fixed has no valid size", path);
        col->kind = A_FIXED;
        col->type = KG_PQ_FIXED_LEN_BYTE_ARRAY;
        col->fixed_size = size->integer;
        return KG_OK;
      }
      const kg_json_t *symbols = kg_json_get(type, "symbols");
      if (!symbols || symbols->type != KG_JSON_ARRAY)
        return kg_fail(errbuf, KG_EINVAL, "field %s: its enum has no symbols", path);
      col->kind = A_ENUM;
      col->type = KG_PQ_BYTE_ARRAY;
      col->nsymbols = symbols->count;
      col->symbols = kg_xcalloc(symbols->count ? symbols->count : 1, sizeof *col->symbols);
      for (size_t i = 0; i < symbols->count; i++) {
        if (symbols->items[i].type != KG_JSON_STRING)
          return kg_fail(errbuf, KG_EINVAL, "field %s: its enum has a symbol that is not a string", path);
        col->symbols[i] = kg_xstrdup(symbols->items[i].string);
      }
      return KG_OK;
    }
  } else if (type->type == KG_JSON_ARRAY) {
    return kg_fail(errbuf, KG_EINVAL, "field %s: a union inside a union (%s)", path, supported);
  } else {
    return kg_fail(errbuf, KG_EINVAL, "field %s: its type is not a type name, an object or a union", path);
  }
  static const struct {
    const char *name;
    avro_kind_t kind;
    kg_pq_type_t type;
  } primitives[] = {{"boolean", A_BOOLEAN, KG_PQ_BOOLEAN}, {"int", A_INT, KG_PQ_INT32},
                    {"long", A_LONG, KG_PQ_INT64},         {"float", A_FLOAT, KG_PQ_FLOAT},
                    {"double", A_DOUBLE, KG_PQ_DOUBLE},    {"string", A_STRING, KG_PQ_BYTE_ARRAY},
                    {"bytes", A_BYTES, KG_PQ_BYTE_ARRAY}};
  for (size_t i = 0; i < sizeof primitives / sizeof primitives[0]; i++)
    if (!strcmp(name, primitives[i].name)) {
      col->kind = primitives[i].kind;
      col->type = primitives[i].type;
      return KG_OK;
    }
  if (!strcmp(name, "record") || !strcmp(name, "array") || !strcmp(name, "map"))
    return kg_fail(errbuf, KG_EINVAL, "field %s is a%s %s, which Parquet output does not write yet (%s)", path,
                   name[0] == 'a' ? "n" : "", name, supported);
  if (!strcmp(name, "null"))
    return kg_fail(errbuf, KG_EINVAL, "field %s is null alone, which Parquet cannot hold (%s)", path, supported);
  /* A reference to a named type defined before. */
  char *want = full_name(name, ns);
  for (size_t i = 0; i < names->nnamed; i++)
    if (!strcmp(names->named[i].fullname, want) || !strcmp(names->named[i].fullname, name)) {
      free(want);
      const kg_json_t *def = names->named[i].node;
      size_t keep = names->nnamed;
      int rc = column_type(names, def, names->named[i].ns, path, col, errbuf);
      for (size_t k = keep; k < names->nnamed; k++) /* defined once: the reference adds no name */
        free(names->named[k].fullname);
      names->nnamed = keep;
      return rc;
    }
  free(want);
  return kg_fail(errbuf, KG_EINVAL, "field %s has type %s, which Parquet output does not write yet (%s)", path, name,
                 supported);
}

static void columns_free(column_t *cols, size_t n) {
  for (size_t i = 0; i < n; i++) {
    column_t *c = &cols[i];
    free(c->name);
    for (size_t s = 0; s < c->nsymbols; s++)
      free(c->symbols[s]);
    free(c->symbols);
    kg_buf_free(&c->values);
    kg_buf_free(&c->levels);
    kg_buf_free(&c->chunk);
    kg_buf_free(&c->min);
    kg_buf_free(&c->max);
  }
  free(cols);
}

/* The columns of the Avro schema whose JSON text is the LEN bytes at TEXT: *COLS (NCOLS) and the record's name
 * (*RECORD_NAME, may be NULL), new; KG_EINVAL naming the field that cannot be written. */
static int compile_schema(const char *text, size_t len, column_t **cols, size_t *ncols, char **record_name,
                          char *errbuf) {
  *cols = NULL;
  *ncols = 0;
  kg_json_t *root = NULL;
  char jerr[KG_ERRLEN];
  if (kg_json_parse(text, len, "the Avro schema", &root, jerr)) return kg_fail(errbuf, KG_EINVAL, "%s", jerr);
  const kg_json_t *type = kg_json_get(root, "type");
  const kg_json_t *name = kg_json_get(root, "name");
  const kg_json_t *fields = kg_json_get(root, "fields");
  if (!type || type->type != KG_JSON_STRING || strcmp(type->string, "record") || !name ||
      name->type != KG_JSON_STRING || !fields || fields->type != KG_JSON_ARRAY) {
    kg_json_free(root);
    return kg_fail(errbuf, KG_EINVAL, "the schema is not a record: each row of a Parquet file is a record");
  }
  if (!fields->count) {
    int rc =
        kg_fail(errbuf, KG_EINVAL, "record %s has no fields: a Parquet file has one column at least", name->string);
    kg_json_free(root);
    return rc;
  }
  const kg_json_t *ns_node = kg_json_get(root, "namespace");
  const char *ns = ns_node && ns_node->type == KG_JSON_STRING ? ns_node->string : NULL;
  const char *dot = strrchr(name->string, '.');
  if (dot) ns = NULL; /* a full name carries its namespace: names within it resolve against that */
  char *rec_ns = dot ? kg_xstrndup(name->string, (size_t)(dot - name->string)) : NULL;
  if (rec_ns) ns = rec_ns;
  names_t names = {0};
  column_t *c = kg_xcalloc(fields->count, sizeof *c);
  int rc = KG_OK;
  size_t n = 0;
  for (size_t i = 0; i < fields->count && !rc; i++, n++) {
    const kg_json_t *f = &fields->items[i];
    const kg_json_t *fname = kg_json_get(f, "name");
    const kg_json_t *ftype = kg_json_get(f, "type");
    if (!fname || fname->type != KG_JSON_STRING || !ftype) {
      rc = kg_fail(errbuf, KG_EINVAL, "field %zu of record %s has no name or type", i + 1, name->string);
      break;
    }
    c[i].name = kg_xstrdup(fname->string);
    char *path = kg_xasprintf("%s.%s", dot ? dot + 1 : name->string, fname->string);
    if (ftype->type == KG_JSON_ARRAY) {
      size_t nulls = 0, other = 0;
      for (size_t b = 0; b < ftype->count; b++) {
        const kg_json_t *br = &ftype->items[b];
        bool is_null = br->type == KG_JSON_STRING && !strcmp(br->string, "null");
        if (is_null) {
          c[i].null_branch = (int)b;
          nulls++;
        } else {
          other++;
        }
      }
      if (nulls != 1 || other != 1) {
        rc =
            kg_fail(errbuf, KG_EINVAL,
                    "field %s is a union of %zu branches%s: Parquet holds a union of null and one other type only (%s)",
                    path, ftype->count, other > 1 ? " that are not null" : "", supported);
      } else {
        c[i].optional = true;
        rc = column_type(&names, &ftype->items[1 - c[i].null_branch], ns, path, &c[i], errbuf);
      }
    } else {
      rc = column_type(&names, ftype, ns, path, &c[i], errbuf);
    }
    free(path);
  }
  if (!rc && record_name) *record_name = kg_xstrdup(dot ? dot + 1 : name->string);
  size_t count = fields->count;
  names_free(&names);
  free(rec_ns);
  kg_json_free(root);
  if (rc) {
    columns_free(c, n);
    return rc;
  }
  *cols = c;
  *ncols = count;
  return KG_OK;
}

int kg_parquet_schema_check(const char *text, size_t len, char *errbuf) {
  column_t *cols;
  size_t n;
  int rc = compile_schema(text, len, &cols, &n, NULL, errbuf);
  if (!rc) columns_free(cols, n);
  return rc;
}

/* ---- Records into columns ---- */

static void put_le32(kg_buf_t *b, uint32_t v) {
  unsigned char p[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  kg_buf_append(b, p, 4);
}

static void put_le64(kg_buf_t *b, uint64_t v) {
  unsigned char p[8];
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
  kg_buf_append(b, p, 8);
}

static uint32_t get_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* An Avro long at *P before END, of at most MAXLEN bytes: false when it is cut short or too long. */
static bool read_long(const unsigned char **p, const unsigned char *end, int maxlen, int64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < maxlen && *p < end; i++) {
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return true;
    }
  }
  return false;
}

/* Decodes the value of column C at *P into its pending page; NULL on success, else what is wrong. */
static const char *decode_value(column_t *c, const unsigned char **pp, const unsigned char *end) {
  const unsigned char *p = *pp;
  int64_t n;
  switch (c->kind) {
  case A_BOOLEAN:
    if (p >= end) return "it ends early at a boolean";
    if (*p > 1) return "a boolean byte is not 0 or 1";
    kg_buf_append(&c->values, p, 1);
    p++;
    break;
  case A_INT:
    if (!read_long(&p, end, 5, &n)) return "an int is cut short or longer than 5 bytes";
    if (n < INT32_MIN || n > INT32_MAX) return "an int is out of the int range";
    put_le32(&c->values, (uint32_t)(int32_t)n);
    break;
  case A_LONG:
    if (!read_long(&p, end, 10, &n)) return "a long is cut short or longer than 10 bytes";
    put_le64(&c->values, (uint64_t)n);
    break;
  case A_FLOAT:
    if (end - p < 4) return "it ends early at a float";
    kg_buf_append(&c->values, p, 4); /* both little-endian IEEE 754 */
    p += 4;
    break;
  case A_DOUBLE:
    if (end - p < 8) return "it ends early at a double";
    kg_buf_append(&c->values, p, 8);
    p += 8;
    break;
  case A_STRING:
  case A_BYTES:
    if (!read_long(&p, end, 10, &n)) return "a length is cut short or longer than 10 bytes";
    if (n < 0) return "a length is negative";
    if (n > end - p) return "it ends early: a length runs past the datum";
    if (n > INT32_MAX) return "a value is longer than a Parquet value can be (2 GB)";
    put_le32(&c->values, (uint32_t)n);
    kg_buf_append(&c->values, p, (size_t)n);
    p += n;
    break;
  case A_ENUM:
    if (!read_long(&p, end, 10, &n)) return "an enum index is cut short or longer than 10 bytes";
    if (n < 0 || (uint64_t)n >= c->nsymbols) return "an enum index is out of range";
    put_le32(&c->values, (uint32_t)strlen(c->symbols[n]));
    kg_buf_append(&c->values, c->symbols[n], strlen(c->symbols[n]));
    break;
  case A_FIXED:
    if (end - p < c->fixed_size) return "it ends early at a fixed";
    kg_buf_append(&c->values, p, (size_t)c->fixed_size);
    p += c->fixed_size;
    break;
  }
  *pp = p;
  return NULL;
}

/* Takes every column's pending page back to the lengths it had after the last mark. */
static void take_back(pq_t *a) {
  for (size_t i = 0; i < a->ncolumns; i++) {
    column_t *c = &a->columns[i];
    c->values.len = c->c_values_len;
    c->levels.len = c->c_levels_len;
    c->nvalues = c->c_nvalues;
    c->nnulls = c->c_nnulls;
  }
  a->rows = a->c_rows;
}

/* ---- Statistics ---- */

static int cmp_bytes(const void *a, size_t alen, const void *b, size_t blen) {
  int r = memcmp(a, b, alen < blen ? alen : blen);
  return r ? r : (alen > blen) - (alen < blen);
}

/* -1, 0 or 1 as the PLAIN value A (ALEN bytes) is below, equal to or above B in C's type's order. */
static int cmp_value(const column_t *c, const unsigned char *a, size_t alen, const unsigned char *b, size_t blen) {
  switch (c->type) {
  case KG_PQ_BOOLEAN: return (*a > *b) - (*a < *b);
  case KG_PQ_INT32: {
    int32_t x = (int32_t)get_le32(a), y = (int32_t)get_le32(b);
    return (x > y) - (x < y);
  }
  case KG_PQ_INT64: {
    int64_t x = (int64_t)get_le64(a), y = (int64_t)get_le64(b);
    return (x > y) - (x < y);
  }
  case KG_PQ_FLOAT: {
    float x, y;
    memcpy(&x, a, 4), memcpy(&y, b, 4);
    return (x > y) - (x < y);
  }
  case KG_PQ_DOUBLE: {
    double x, y;
    memcpy(&x, a, 8), memcpy(&y, b, 8);
    return (x > y) - (x < y);
  }
  default: return cmp_bytes(a, alen, b, blen); /* unsigned bytes, as the spec orders BYTE_ARRAY and FIXED */
  }
}

static void set_buf(kg_buf_t *b, const void *p, size_t len) {
  b->len = 0;
  kg_buf_append(b, p, len);
}

/* Folds one non-null PLAIN value into C's chunk statistics; NaN is left out (no order holds it). */
static void stats_add(column_t *c, const unsigned char *v, size_t len) {
  if (c->type == KG_PQ_FLOAT || c->type == KG_PQ_DOUBLE) {
    double d;
    if (c->type == KG_PQ_FLOAT) {
      float f;
      memcpy(&f, v, 4);
      d = f;
    } else {
      memcpy(&d, v, 8);
    }
    if (d != d) return;
  }
  if (len > KG_PARQUET_MAX_STAT_BYTES) c->too_long = true;
  if (c->too_long) return;
  if (!c->has_stats) {
    set_buf(&c->min, v, len);
    set_buf(&c->max, v, len);
    c->has_stats = true;
    return;
  }
  if (cmp_value(c, v, len, (const unsigned char *)c->min.data, c->min.len) < 0) set_buf(&c->min, v, len);
  if (cmp_value(c, v, len, (const unsigned char *)c->max.data, c->max.len) > 0) set_buf(&c->max, v, len);
}

/* Makes C's pending values final: folds those after the last mark into the statistics. */
static void column_commit(column_t *c) {
  const unsigned char *base = (const unsigned char *)(c->values.data ? c->values.data : "");
  const unsigned char *p = base + c->c_values_len, *end = base + c->values.len;
  while (p < end) {
    size_t len;
    switch (c->type) {
    case KG_PQ_BOOLEAN: len = 1; break;
    case KG_PQ_INT32:
    case KG_PQ_FLOAT: len = 4; break;
    case KG_PQ_INT64:
    case KG_PQ_DOUBLE: len = 8; break;
    case KG_PQ_FIXED_LEN_BYTE_ARRAY: len = (size_t)c->fixed_size; break;
    default:
      len = get_le32(p);
      p += 4;
      break;
    }
    stats_add(c, p, len);
    p += len;
  }
  c->c_values_len = c->values.len;
  c->c_levels_len = c->levels.len;
  c->c_nvalues = c->nvalues;
  c->c_nnulls = c->nnulls;
}

/* ---- Pages and row groups ---- */

/* Compresses the LEN bytes at SRC into A->packed by A's codec; KG_EIO naming the codec. */
static int compress_page(kg_writer_t *w, pq_t *a, const char *src, size_t len, char *errbuf) {
  kg_buf_t *out = &a->packed;
  out->len = 0;
  if (a->codec == KG_PQ_UNCOMPRESSED) {
    kg_buf_append(out, src, len);
    return KG_OK;
  }
  if (a->codec == KG_PQ_SNAPPY) {
    size_t n = snappy_max_compressed_length(len);
    char *dst = kg_buf_reserve(out, n);
    if (snappy_compress(src, len, dst, &n) != SNAPPY_OK)
      return kg_writer_io_error(w, "snappy compression failed", errbuf);
    out->len = n;
    return KG_OK;
  }
  if (a->codec == KG_PQ_ZSTD) {
    size_t n = ZSTD_compressBound(len);
    char *dst = kg_buf_reserve(out, n);
    size_t got = ZSTD_compress(dst, n, src, len, ZSTD_CLEVEL_DEFAULT);
    if (ZSTD_isError(got)) return kg_writer_io_error(w, "zstd compression failed", errbuf);
    out->len = got;
    return KG_OK;
  }
  /* GZIP: a gzip member (RFC 1952), zlib with window bits 15 + 16. */
  z_stream z = {0};
  if (deflateInit2(&z, a->level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return kg_writer_io_error(w, "gzip compression could not start", errbuf);
  uLong bound = deflateBound(&z, (uLong)len);
  char *dst = kg_buf_reserve(out, bound);
  z.next_in = (Bytef *)src;
  z.avail_in = (uInt)len;
  z.next_out = (Bytef *)dst;
  z.avail_out = (uInt)bound;
  int zrc = deflate(&z, Z_FINISH);
  out->len = bound - z.avail_out;
  deflateEnd(&z);
  return zrc == Z_STREAM_END ? KG_OK : kg_writer_io_error(w, "gzip compression failed", errbuf);
}

/* Closes C's pending page (all final): its levels and values, compressed, with its header, onto the chunk. */
static int close_page(kg_writer_t *w, pq_t *a, column_t *c, char *errbuf) {
  if (!c->nvalues) return KG_OK;
  kg_buf_t *page = &a->page;
  page->len = 0;
  if (c->optional) {
    kg_buf_t levels = {0};
    kg_pq_levels_encode(&levels, (const uint8_t *)c->levels.data, c->levels.len, 1);
    put_le32(page, (uint32_t)levels.len);
    kg_buf_append(page, levels.data, levels.len);
    kg_buf_free(&levels);
  }
  if (c->type == KG_PQ_BOOLEAN) { /* PLAIN booleans: a bit each, from the low bit up */
    size_t n = c->values.len, nbytes = (n + 7) / 8;
    unsigned char *p = (unsigned char *)kg_buf_reserve(page, nbytes);
    memset(p, 0, nbytes);
    for (size_t i = 0; i < n; i++)
      if (c->values.data[i]) p[i / 8] |= (unsigned char)(1u << (i % 8));
    page->len += nbytes;
  } else {
    kg_buf_append(page, c->values.data ? c->values.data : "", c->values.len);
  }
  if (page->len > INT32_MAX)
    return kg_writer_io_error(w, "a Parquet page would be larger than 2 GB (writer.parquet.page.size)", errbuf);
  int rc = compress_page(w, a, page->data ? page->data : "", page->len, errbuf);
  if (rc) return rc;
  if (a->packed.len > INT32_MAX) return kg_writer_io_error(w, "a compressed Parquet page is larger than 2 GB", errbuf);
  kg_pq_data_page_header_t data = {.num_values = (int32_t)c->nvalues,
                                   .encoding = KG_PQ_PLAIN,
                                   .definition_level_encoding = KG_PQ_RLE,
                                   .repetition_level_encoding = KG_PQ_RLE};
  kg_pq_page_header_t header = {.type = KG_PQ_DATA_PAGE,
                                .uncompressed_page_size = (int32_t)page->len,
                                .compressed_page_size = (int32_t)a->packed.len,
                                .data = &data};
  a->out.len = 0;
  kg_pq_write_page_header(&a->out, &header);
  kg_buf_append(&c->chunk, a->out.data, a->out.len);
  kg_buf_append(&c->chunk, a->packed.data ? a->packed.data : "", a->packed.len);
  c->chunk_uncompressed += (int64_t)(a->out.len + page->len);
  c->chunk_values += c->nvalues;
  c->chunk_nulls += c->nnulls;
  c->values.len = c->levels.len = 0;
  c->nvalues = c->nnulls = 0;
  c->c_values_len = c->c_levels_len = 0;
  c->c_nvalues = c->c_nnulls = 0;
  /* A page's buffers are not kept at the size of a large value for the life of the file. */
  if (c->values.cap > 2 * (size_t)a->page_size + 65536) kg_buf_free(&c->values);
  return KG_OK;
}

/* The bytes the pending row group holds (compressed pages, and the pending pages as they are). */
static int64_t group_bytes(const pq_t *a) {
  int64_t n = 0;
  for (size_t i = 0; i < a->ncolumns; i++)
    n += (int64_t)(a->columns[i].chunk.len + a->columns[i].values.len + a->columns[i].levels.len / 8);
  return n;
}

static char *copy_bytes(const kg_buf_t *b) {
  char *p = kg_xmalloc(b->len ? b->len : 1);
  if (b->len) memcpy(p, b->data, b->len);
  return p;
}

/* A zero min of C's floating-point statistics is written -0.0, and a zero max +0.0, as the spec asks: a reader
 * that filters by them then keeps every zero, whichever sign the values had. */
static void signed_zeros(column_t *c) {
  if (c->type == KG_PQ_FLOAT) {
    float lo, hi;
    memcpy(&lo, c->min.data, 4), memcpy(&hi, c->max.data, 4);
    if (lo == 0) lo = -0.0f;
    if (hi == 0) hi = 0.0f;
    memcpy(c->min.data, &lo, 4), memcpy(c->max.data, &hi, 4);
  } else {
    double lo, hi;
    memcpy(&lo, c->min.data, 8), memcpy(&hi, c->max.data, 8);
    if (lo == 0) lo = -0.0;
    if (hi == 0) hi = 0.0;
    memcpy(c->min.data, &lo, 8), memcpy(c->max.data, &hi, 8);
  }
}

/* Writes the pending row group out (its rows all final); *BYTES gets its size. */
static int flush_group(kg_writer_t *w, pq_t *a, int64_t *bytes, char *errbuf) {
  if (!a->rows) return KG_OK;
  for (size_t i = 0; i < a->ncolumns; i++) {
    int rc = close_page(w, a, &a->columns[i], errbuf);
    if (rc) return rc;
  }
  group_meta_t g = {.rows = a->rows, .offset = a->pos, .chunks = kg_xcalloc(a->ncolumns, sizeof(chunk_meta_t))};
  char why[KG_ERRLEN];
  int rc = KG_OK;
  for (size_t i = 0; i < a->ncolumns; i++) {
    column_t *c = &a->columns[i];
    chunk_meta_t *m = &g.chunks[i];
    *m = (chunk_meta_t){.offset = a->pos,
                        .uncompressed = c->chunk_uncompressed,
                        .compressed = (int64_t)c->chunk.len,
                        .values = c->chunk_values,
                        .nulls = c->chunk_nulls,
                        .has_stats = c->has_stats && !c->too_long};
    if (m->has_stats && (c->type == KG_PQ_FLOAT || c->type == KG_PQ_DOUBLE)) signed_zeros(c);
    if (m->has_stats) {
      m->min = copy_bytes(&c->min), m->min_len = c->min.len;
      m->max = copy_bytes(&c->max), m->max_len = c->max.len;
    }
    if (!rc && kg_fs_stream_write(w->stream, c->chunk.data, c->chunk.len, why)) rc = kg_writer_io_error(w, why, errbuf);
    a->pos += (int64_t)c->chunk.len;
    *bytes += (int64_t)c->chunk.len;
    g.uncompressed += c->chunk_uncompressed;
    g.compressed += (int64_t)c->chunk.len;
    c->chunk.len = 0;
    c->chunk_uncompressed = c->chunk_values = c->chunk_nulls = 0;
    c->has_stats = c->too_long = false;
    if (c->chunk.cap > 2 * (size_t)a->block_size) kg_buf_free(&c->chunk);
  }
  a->groups = kg_xrealloc(a->groups, (a->ngroups + 1) * sizeof *a->groups);
  a->groups[a->ngroups++] = g;
  a->rows = a->c_rows = 0;
  return rc;
}

/* Makes every pending row final, closes the pages that are full and, at the block size, writes the row group. */
static int commit(kg_writer_t *w, pq_t *a, int64_t *bytes, char *errbuf) {
  for (size_t i = 0; i < a->ncolumns; i++) {
    column_t *c = &a->columns[i];
    column_commit(c);
    /* A page's count of values is an int32 of its header: a page of nulls (a bit of levels each) closes long
     * before it, at the latest. */
    if ((int64_t)(c->values.len + c->levels.len / 8) >= a->page_size || c->nvalues >= INT32_MAX / 2) {
      int rc = close_page(w, a, c, errbuf);
      if (rc) return rc;
    }
  }
  a->c_rows = a->rows;
  a->marked_records = w->records;
  return group_bytes(a) >= a->block_size ? flush_group(w, a, bytes, errbuf) : KG_OK;
}

/* ---- The footer ---- */

static int write_footer(kg_writer_t *w, pq_t *a, int64_t *bytes, char *errbuf) {
  size_t nc = a->ncolumns;
  kg_pq_schema_element_t *schema = kg_xcalloc(nc + 1, sizeof *schema);
  schema[0] =
      (kg_pq_schema_element_t){.name = a->record_name, .num_children = (int32_t)nc, .converted = KG_PQ_CONVERTED_NONE};
  for (size_t i = 0; i < nc; i++) {
    const column_t *c = &a->columns[i];
    kg_pq_schema_element_t *e = &schema[i + 1];
    *e = (kg_pq_schema_element_t){.name = c->name,
                                  .has_type = true,
                                  .type = c->type,
                                  .type_length = c->type == KG_PQ_FIXED_LEN_BYTE_ARRAY ? (int32_t)c->fixed_size : 0,
                                  .has_repetition = true,
                                  .repetition = c->optional ? KG_PQ_OPTIONAL : KG_PQ_REQUIRED,
                                  .num_children = -1,
                                  .converted = KG_PQ_CONVERTED_NONE};
    if (c->kind == A_STRING) e->converted = KG_PQ_UTF8, e->logical.kind = KG_PQ_LOGICAL_STRING;
    if (c->kind == A_ENUM) e->converted = KG_PQ_ENUM, e->logical.kind = KG_PQ_LOGICAL_ENUM;
  }
  static const kg_pq_encoding_t encodings[] = {KG_PQ_PLAIN, KG_PQ_RLE};
  const char **paths = kg_xcalloc(nc, sizeof *paths);
  kg_pq_row_group_t *groups = kg_xcalloc(a->ngroups ? a->ngroups : 1, sizeof *groups);
  kg_pq_column_chunk_t *chunks = kg_xcalloc(a->ngroups * nc + 1, sizeof *chunks);
  kg_pq_statistics_t *stats = kg_xcalloc(a->ngroups * nc + 1, sizeof *stats);
  int64_t rows = 0;
  for (size_t i = 0; i < nc; i++)
    paths[i] = a->columns[i].name;
  for (size_t g = 0; g < a->ngroups; g++) {
    const group_meta_t *gm = &a->groups[g];
    for (size_t i = 0; i < nc; i++) {
      const chunk_meta_t *m = &gm->chunks[i];
      kg_pq_statistics_t *s = &stats[g * nc + i];
      *s = (kg_pq_statistics_t){.has_null_count = true, .null_count = m->nulls};
      if (m->has_stats) s->min = m->min, s->min_len = m->min_len, s->max = m->max, s->max_len = m->max_len;
      chunks[g * nc + i] = (kg_pq_column_chunk_t){.file_offset = m->offset,
                                                  .meta = {.type = a->columns[i].type,
                                                           .encodings = encodings,
                                                           .nencodings = sizeof encodings / sizeof encodings[0],
                                                           .path = &paths[i],
                                                           .npath = 1,
                                                           .codec = a->codec,
                                                           .num_values = m->values,
                                                           .total_uncompressed_size = m->uncompressed,
                                                           .total_compressed_size = m->compressed,
                                                           .data_page_offset = m->offset,
                                                           .dictionary_page_offset = -1,
                                                           .statistics = s}};
    }
    groups[g] = (kg_pq_row_group_t){.columns = &chunks[g * nc],
                                    .ncolumns = nc,
                                    .total_byte_size = gm->uncompressed,
                                    .num_rows = gm->rows,
                                    .file_offset = gm->offset,
                                    .total_compressed_size = gm->compressed,
                                    .ordinal = (int16_t)(g < INT16_MAX ? g : INT16_MAX)};
    rows += gm->rows;
  }
  kg_pq_key_value_t kv = {.key = "parquet.avro.schema", .value = a->schema, .value_len = a->schema_len};
  kg_pq_file_meta_t meta = {.version = 1,
                            .schema = schema,
                            .nschema = nc + 1,
                            .num_rows = rows,
                            .row_groups = groups,
                            .nrow_groups = a->ngroups,
                            .key_value = &kv,
                            .nkey_value = 1,
                            .created_by = "kingest version " KINGEST_VERSION,
                            .ncolumn_orders = nc};
  kg_buf_t footer = {0};
  kg_pq_write_file_meta(&footer, &meta);
  int rc = KG_OK;
  if (footer.len > UINT32_MAX) {
    rc = kg_writer_io_error(w, "the Parquet footer would be larger than 4 GB", errbuf);
  } else {
    put_le32(&footer, (uint32_t)(footer.len));
    kg_buf_append(&footer, "PAR1", 4);
    char why[KG_ERRLEN];
    if (kg_fs_stream_write(w->stream, footer.data, footer.len, why)) rc = kg_writer_io_error(w, why, errbuf);
    a->pos += (int64_t)footer.len;
    *bytes += (int64_t)footer.len;
  }
  kg_buf_free(&footer);
  free(schema);
  free(paths);
  free(groups);
  free(chunks);
  free(stats);
  return rc;
}

/* ---- The writer ---- */

static int pq_open(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf) {
  const kg_parquet_options_t *own = options->backend;
  const char *schema = options->schema;
  size_t schema_len = options->schema_len;
  pq_t *a = kg_xcalloc(1, sizeof *a);
  w->impl = a;
  a->codec = options->codec == KG_CODEC_SNAPPY ? KG_PQ_SNAPPY
             : options->codec == KG_CODEC_GZIP ? KG_PQ_GZIP
             : options->codec == KG_CODEC_ZSTD ? KG_PQ_ZSTD
                                               : KG_PQ_UNCOMPRESSED;
  a->level = options->deflate_level;
  a->block_size = own && own->block_size > 0 ? own->block_size : KG_PARQUET_BLOCK_SIZE;
  a->page_size = own && own->page_size > 0 ? own->page_size : KG_PARQUET_PAGE_SIZE;
  if (!schema || !schema_len) return kg_fail(errbuf, KG_EINVAL, "cannot write Parquet file %s: no schema", w->path);
  char serr[KG_ERRLEN];
  if (compile_schema(schema, schema_len, &a->columns, &a->ncolumns, &a->record_name, serr))
    return kg_fail(errbuf, KG_EINVAL, "cannot write Parquet file %s: %s", w->path, serr);
  a->saved = kg_xcalloc(a->ncolumns, sizeof *a->saved);
  a->schema = kg_xstrndup(schema, schema_len);
  a->schema_len = schema_len;
  char why[KG_ERRLEN];
  if (kg_fs_stream_write(w->stream, "PAR1", 4, why)) return kg_writer_io_error(w, why, errbuf);
  a->pos = *bytes = 4;
  return KG_OK;
}

static int pq_write(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf) {
  pq_t *a = w->impl;
  const unsigned char *p = (const unsigned char *)data, *end = p + len;
  /* Where each column stood, so that a record that is not a datum of the schema leaves nothing behind. */
  for (size_t k = 0; k < a->ncolumns; k++)
    a->saved[k] = (saved_t){a->columns[k].values.len, a->columns[k].levels.len, a->columns[k].nnulls};
  const char *why = NULL;
  size_t i = 0;
  for (; i < a->ncolumns; i++) {
    column_t *c = &a->columns[i];
    if (c->optional) {
      int64_t branch;
      if (!read_long(&p, end, 10, &branch)) {
        why = "a union branch index is cut short or longer than 10 bytes";
        break;
      }
      if (branch != 0 && branch != 1) {
        why = "a union branch index is out of range (2 branches)";
        break;
      }
      uint8_t level = branch != c->null_branch;
      kg_buf_append(&c->levels, &level, 1);
      if (!level) {
        c->nnulls++;
        continue;
      }
    }
    if ((why = decode_value(c, &p, end))) break;
  }
  if (!why && p != end) why = "bytes are left after its last field";
  if (why) {
    for (size_t k = 0; k < a->ncolumns; k++) {
      column_t *c = &a->columns[k];
      c->values.len = a->saved[k].values_len;
      c->levels.len = a->saved[k].levels_len;
      c->nnulls = a->saved[k].nnulls;
    }
    const char *field = i < a->ncolumns ? a->columns[i].name : NULL;
    return kg_fail(errbuf, KG_ERECORD,
                   "cannot write Parquet file %s: a record of %zu bytes is not one Avro datum of the file's schema: "
                   "%s%s%s",
                   w->path, len, why, field ? " at field " : "", field ? field : "");
  }
  for (size_t k = 0; k < a->ncolumns; k++)
    a->columns[k].nvalues++;
  a->rows++;
  *bytes = 0; /* in the file when its row group is written out */
  return KG_OK;
}

static int pq_mark(kg_writer_t *w, int64_t *bytes, char *errbuf) { return commit(w, w->impl, bytes, errbuf); }

/* Back to the last mark: only the rows after it, which are still in the pending pages. */
static int pq_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  pq_t *a = w->impl;
  if (bytes != w->bytes || records != a->marked_records)
    return kg_fail(errbuf, KG_EINVAL,
                   "cannot take output file %s back to %lld records in %lld bytes: the Parquet writer can only take "
                   "back the records after its last mark (%lld records, %lld bytes)",
                   w->path, (long long)records, (long long)bytes, (long long)a->marked_records, (long long)w->bytes);
  take_back(a);
  return KG_OK;
}

static int pq_finish(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  pq_t *a = w->impl;
  for (size_t i = 0; i < a->ncolumns; i++)
    column_commit(&a->columns[i]);
  a->c_rows = a->rows;
  int rc = flush_group(w, a, bytes, errbuf);
  return rc ? rc : write_footer(w, a, bytes, errbuf);
}

static void pq_release(kg_writer_t *w) {
  pq_t *a = w->impl;
  if (a) {
    columns_free(a->columns, a->ncolumns);
    for (size_t g = 0; g < a->ngroups; g++) {
      for (size_t i = 0; i < a->ncolumns; i++)
        free(a->groups[g].chunks[i].min), free(a->groups[g].chunks[i].max);
      free(a->groups[g].chunks);
    }
    free(a->groups);
    free(a->record_name);
    free(a->schema);
    free(a->saved);
    kg_buf_free(&a->page);
    kg_buf_free(&a->packed);
    kg_buf_free(&a->out);
  }
  free(a);
  w->impl = NULL;
}

const kg_writer_ops_t kg_writer_parquet = {
    .name = "parquet",
    .title = "the Parquet writer",
    .section = &kg_writer_parquet_section,
    .avro_datums = true,
    .open = pq_open,
    .write = pq_write,
    .mark = pq_mark,
    .truncate = pq_truncate,
    .finish = pq_finish,
    .release = pq_release,
};

/* ---- The Parquet writer's properties ---------------------------------------------------------------------- */

#define KG_FIELD(f) KG_FIELD_OF(kg_parquet_options_t, f)

static const kg_property_t rows[] = {
    {.name = "writer.parquet.block.size",
     .type = KG_PROP_INT,
     .def = "134217728",
     .min = 1,
     .max = INT64_MAX / 4,
     KG_FIELD(block_size),
     .doc = "Bytes of a row group (compressed pages, and the open pages as they are) at which it is written out, "
            "checked between records; parquet-mr's default, 128 MiB. Each open Parquet file holds up to this much in "
            "memory ([Parquet](#parquet))."},
    {.name = "writer.parquet.page.size",
     .type = KG_PROP_INT,
     .def = "1048576",
     .min = 1,
     .max = INT32_MAX / 2,
     KG_FIELD(page_size),
     .doc = "Bytes of a column's data page (its values and levels, before compression) at which it is closed, "
            "checked between records; Gobblin's and parquet-mr's default, 1 MiB."},
};

const kg_config_section_t kg_writer_parquet_section = {.name = "writer.parquet",
                                                       .rows = rows,
                                                       .nrows = sizeof rows / sizeof rows[0],
                                                       .size = sizeof(kg_parquet_options_t)};
