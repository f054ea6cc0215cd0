/* writer_csv.c: CSV output (writer.output.format=csv), as RFC 4180 has it: one line per record, the fields of the
 * job's columns (writer.csv.columns, or the fields of writer.avro.schema) in their order, separated by
 * writer.csv.delimiter; a field that holds the delimiter, a double quote, CR or LF is quoted, its quotes doubled.
 * Lines end in LF, or CRLF (writer.csv.line.end); a header line of the column names opens each file when
 * writer.csv.header is true (each rolled file too).
 *
 * A record is what the rest of the engine hands any text writer: a table the script returned, encoded as JSON; a
 * JSON payload as it is (KafkaSimpleSource); an Avro record as JSON (gobblin.runtime). Its values are read, not
 * its text: an object's members go to the columns of their names, an array's items to the columns in order.
 * Values: a string as its bytes (an empty string as "", so that it differs from null); a number in the shortest
 * form that reads back as the same number (integers of up to 64 bits exactly); true, false; null, and a column
 * the record does not have, as an empty field; an object or array as its JSON text. A record that is no object
 * or array (a string that is not JSON, a bare number), or that has a field that is no column (unless
 * writer.csv.extra.fields=ignore), is refused with KG_ERECORD: it fails as a record does in the script, and the
 * file stays as it was.
 *
 * Each line goes to the simple writer's file handling (writer_simple.c), which this backend runs under its own
 * state: the whole file compressed by gzip or zstd, or not, with the same marks and truncation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "writer.h"

/* JSON nesting a record may have, as gobblin.json's decode allows. */
#define CSV_MAX_DEPTH 1000

typedef struct {
  void *simple;   /* the simple writer's state: the file, compression, marks; owned */
  char **columns; /* NCOLUMNS names, owned */
  size_t ncolumns;
  size_t *slots; /* hash of the column names: SLOT_MASK + 1 entries, each a column index + 1 (0: empty) */
  size_t slot_mask;
  char delimiter;
  bool ignore_extra;
  kg_json_parser_t parser; /* reused from record to record */
  size_t *values;          /* per column, the tape index of its value in the record being written, or SIZE_MAX */
  kg_buf_t row;            /* the line being made, reused */
  kg_buf_t field;          /* a nested value's JSON text, reused */
} csv_t;

/* Runs a call of the simple writer on W with the simple writer's own state in W->impl. */
#define AS_SIMPLE(w, c, call)                                                                                          \
  do {                                                                                                                 \
    (w)->impl = (c)->simple;                                                                                           \
    rc = (call);                                                                                                       \
    (w)->impl = (c);                                                                                                   \
  } while (0)

static size_t hash(const char *s, size_t n) {
  size_t h = 14695981039346656037ULL & SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * (1099511628211ULL & SIZE_MAX);
  return h;
}

/* The index of the column named by the N bytes at NAME, or SIZE_MAX. */
static size_t column_of(const csv_t *c, const char *name, size_t n) {
  for (size_t i = hash(name, n) & c->slot_mask;; i = (i + 1) & c->slot_mask) {
    size_t slot = c->slots[i];
    if (!slot) return SIZE_MAX;
    const char *col = c->columns[slot - 1];
    if (strlen(col) == n && !memcmp(col, name, n)) return slot - 1;
  }
}

/* Appends the N bytes at S to OUT as one CSV field: as they are, or quoted when they hold the delimiter, a quote,
 * CR or LF (quotes doubled); the empty string quoted (""), so that it is not read as a missing value. */
static void put_field(kg_buf_t *out, char delimiter, const char *s, size_t n) {
  bool quote = n == 0;
  for (size_t i = 0; i < n && !quote; i++)
    quote = s[i] == delimiter || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
  if (!quote) {
    kg_buf_append(out, s, n);
    return;
  }
  kg_buf_append(out, "\"", 1);
  for (const char *p = s, *end = s + n; p < end;) {
    const char *q = memchr(p, '"', (size_t)(end - p));
    size_t run = q ? (size_t)(q - p) + 1 : (size_t)(end - p);
    kg_buf_append(out, p, run);
    if (q) kg_buf_append(out, "\"", 1);
    p += run;
  }
  kg_buf_append(out, "\"", 1);
}

/* Appends the value at tape index AT as the field of its column. */
static void put_value(csv_t *c, size_t at) {
  const kg_json_parser_t *p = &c->parser;
  const kg_json_tok_t *t = &p->tape[at];
  switch (t->type) {
  case KG_JSON_TOK_NULL: return; /* an empty field */
  case KG_JSON_TOK_FALSE: kg_buf_append(&c->row, "false", 5); return;
  case KG_JSON_TOK_TRUE: kg_buf_append(&c->row, "true", 4); return;
  case KG_JSON_TOK_NUMBER:
  case KG_JSON_TOK_INT:
  case KG_JSON_TOK_UINT: kg_json_write_number(&c->row, t); return;
  case KG_JSON_TOK_STRING:
  case KG_JSON_TOK_ESCAPED_STRING: put_field(&c->row, c->delimiter, kg_json_tok_string(p, t), t->n); return;
  default:
    c->field.len = 0;
    kg_json_write_value(&c->field, p, at);
    put_field(&c->row, c->delimiter, c->field.data, c->field.len);
  }
}

/* The record refused: KG_ERECORD, "cannot write <what> as a line of CSV file <path>: <why>". */
static int refuse(const kg_writer_t *w, char *errbuf, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(const kg_writer_t *w, char *errbuf, const char *fmt, ...) {
  char why[KG_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return kg_fail(errbuf, KG_ERECORD, "cannot write the record as a line of CSV file %s: %s", w->path, why);
}

/* The columns as the error messages list them: "id,name,ts" (the first 20). */
static void list_columns(const csv_t *c, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < c->ncolumns && i < 20 && used < size; i++)
    used += (size_t)snprintf(out + used, size - used, "%s%s", i ? "," : "", c->columns[i]);
  if (c->ncolumns > 20 && used < size) snprintf(out + used, size - used, ",...");
}

/* Makes the line of the record in DATA into C->row; KG_ERECORD when it is not one. */
static int make_row(kg_writer_t *w, csv_t *c, const char *data, size_t len, char *errbuf) {
  char why[KG_ERRLEN], cols[512];
  if (kg_json_parse_tape(&c->parser, data, len, CSV_MAX_DEPTH, why))
    return refuse(w, errbuf,
                  "it is not a JSON object or array (the CSV writer takes a table, a JSON payload or an Avro record): "
                  "%s",
                  why);
  const kg_json_parser_t *p = &c->parser;
  const kg_json_tok_t *root = &p->tape[0];
  if (root->type != KG_JSON_TOK_OBJECT && root->type != KG_JSON_TOK_ARRAY) {
    static const char *const names[] = {"null", "false", "true", "number", "number", "number", "string", "string"};
    return refuse(w, errbuf,
                  "it is a JSON %s, not an object or array (the CSV writer takes a table, a JSON payload or an Avro "
                  "record)",
                  root->type < sizeof names / sizeof names[0] ? names[root->type] : "value");
  }
  for (size_t i = 0; i < c->ncolumns; i++)
    c->values[i] = SIZE_MAX;
  size_t at = 1;
  for (uint32_t i = 0; i < root->n; i++) {
    size_t col;
    if (root->type == KG_JSON_TOK_OBJECT) {
      const kg_json_tok_t *k = &p->tape[at++];
      col = column_of(c, kg_json_tok_string(p, k), k->n);
      if (col == SIZE_MAX && !c->ignore_extra) {
        list_columns(c, cols, sizeof cols);
        return refuse(w, errbuf,
                      "its field \"%.*s\" is not one of the columns (%s); writer.csv.extra.fields=ignore leaves such "
                      "fields out",
                      (int)(k->n > 200 ? 200 : k->n), kg_json_tok_string(p, k), cols);
      }
    } else {
      col = i < c->ncolumns ? i : SIZE_MAX;
      if (col == SIZE_MAX && !c->ignore_extra) {
        list_columns(c, cols, sizeof cols);
        return refuse(w, errbuf,
                      "it is an array of %u items, and there are %zu columns (%s); writer.csv.extra.fields=ignore "
                      "leaves the items past them out",
                      root->n, c->ncolumns, cols);
      }
    }
    if (col != SIZE_MAX) c->values[col] = at; /* a key given twice: its last value, as a decoder keeps it */
    at = kg_json_skip(p, at);
  }
  c->row.len = 0;
  for (size_t i = 0; i < c->ncolumns; i++) {
    if (i) kg_buf_append(&c->row, &c->delimiter, 1);
    if (c->values[i] != SIZE_MAX) put_value(c, c->values[i]);
  }
  return KG_OK;
}

static void csv_release(kg_writer_t *w) {
  csv_t *c = w->impl;
  if (!c) return;
  w->impl = c->simple;
  kg_writer_simple.release(w);
  for (size_t i = 0; i < c->ncolumns; i++)
    free(c->columns[i]);
  free(c->columns);
  free(c->slots);
  free(c->values);
  kg_json_parser_free(&c->parser);
  kg_buf_free(&c->row);
  kg_buf_free(&c->field);
  free(c);
  w->impl = NULL;
}

static int csv_open(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf) {
  const kg_csv_options_t *o = &options->csv;
  if (!o->ncolumns) return kg_fail(errbuf, KG_EINVAL, "cannot write CSV file %s: no columns", w->path);
  kg_writer_options_t simple = {.delimiter = o->crlf ? "\r\n" : "\n",
                                .delimiter_len = o->crlf ? 2 : 1,
                                .codec = options->codec,
                                .deflate_level = options->deflate_level,
                                .block_bytes = options->block_bytes};
  int rc = kg_writer_simple.open(w, &simple, bytes, errbuf);
  if (rc) {
    kg_writer_simple.release(w);
    return rc;
  }
  csv_t *c = kg_xcalloc(1, sizeof *c);
  c->simple = w->impl;
  w->impl = c;
  c->delimiter = o->delimiter;
  c->ignore_extra = o->ignore_extra;
  c->ncolumns = o->ncolumns;
  c->columns = kg_xcalloc(o->ncolumns, sizeof *c->columns);
  c->values = kg_xcalloc(o->ncolumns, sizeof *c->values);
  size_t cap = 8;
  while (cap < 2 * o->ncolumns)
    cap *= 2;
  c->slots = kg_xcalloc(cap, sizeof *c->slots);
  c->slot_mask = cap - 1;
  for (size_t i = 0; i < o->ncolumns; i++) {
    c->columns[i] = kg_xstrdup(o->columns[i]);
    size_t n = strlen(c->columns[i]), h = hash(c->columns[i], n) & c->slot_mask;
    while (c->slots[h])
      h = (h + 1) & c->slot_mask;
    c->slots[h] = i + 1;
  }
  if (!o->header) return KG_OK;
  for (size_t i = 0; i < c->ncolumns; i++) {
    if (i) kg_buf_append(&c->row, &c->delimiter, 1);
    put_field(&c->row, c->delimiter, c->columns[i], strlen(c->columns[i]));
  }
  /* The header goes first, before the first mark: no record's taking back reaches it. */
  int64_t added = 0;
  AS_SIMPLE(w, c, kg_writer_simple.write(w, c->row.data, c->row.len, &added, errbuf));
  *bytes += added;
  return rc;
}

static int csv_write(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf) {
  csv_t *c = w->impl;
  int rc = make_row(w, c, data ? data : "", len, errbuf);
  if (rc) return rc;
  AS_SIMPLE(w, c, kg_writer_simple.write(w, c->row.data ? c->row.data : "", c->row.len, bytes, errbuf));
  return rc;
}

static int csv_mark(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  csv_t *c = w->impl;
  int rc;
  AS_SIMPLE(w, c, kg_writer_simple.mark(w, bytes, errbuf));
  return rc;
}

static int csv_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  csv_t *c = w->impl;
  int rc;
  AS_SIMPLE(w, c, kg_writer_simple.truncate(w, records, bytes, errbuf));
  return rc;
}

static int csv_finish(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  csv_t *c = w->impl;
  int rc;
  AS_SIMPLE(w, c, kg_writer_simple.finish(w, bytes, errbuf));
  return rc;
}

const kg_writer_ops_t kg_writer_csv = {
    .name = "csv",
    .open = csv_open,
    .write = csv_write,
    .mark = csv_mark,
    .truncate = csv_truncate,
    .finish = csv_finish,
    .release = csv_release,
};
