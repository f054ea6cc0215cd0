/* avro_codec.c: Avro records from Kafka (avro_codec.h). */
#include "avro_codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ---- Shapes ---- */

/* One node of a shape. KIDS of a node are indexes of other nodes in SHAPE->kids, from FIRST: a record's fields,
 * a union's branches, an array's items or a map's values (one), a link's target (one). */
typedef struct {
  avro_type_t type;
  int64_t n;     /* fixed: its size; enum: its symbols; record, union: kids */
  int32_t first; /* first kid in kids[] */
  bool empty;    /* a datum of it may be no bytes at all: null, a fixed of size 0, a record of such fields only */
} node_t;

struct kg_avro_shape {
  node_t *nodes;
  size_t nnodes, cap;
  int32_t *kids;
  char **names; /* names[k]: the field name of kid k of a record (owned), NULL for other kids */
  size_t nkids, kids_cap;
  /* While compiling: the named schemas already given a node, so that recursion ends. */
  avro_schema_t *named;
  int32_t *named_node;
  size_t nnamed, named_cap;
};

static int32_t new_node(kg_avro_shape_t *s, avro_type_t type, int64_t n) {
  if (s->nnodes == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->nodes = kg_xrealloc(s->nodes, s->cap * sizeof *s->nodes);
  }
  s->nodes[s->nnodes] = (node_t){type, n, -1, false};
  return (int32_t)s->nnodes++;
}

/* Reserves N kid slots for node I; returns the first. */
static int32_t new_kids(kg_avro_shape_t *s, int32_t i, size_t n) {
  while (s->nkids + n > s->kids_cap) {
    s->kids_cap = s->kids_cap ? 2 * s->kids_cap : 16;
    s->kids = kg_xrealloc(s->kids, s->kids_cap * sizeof *s->kids);
    s->names = kg_xrealloc(s->names, s->kids_cap * sizeof *s->names);
  }
  int32_t first = (int32_t)s->nkids;
  for (size_t k = 0; k < n; k++)
    s->names[first + k] = NULL;
  s->nkids += n;
  s->nodes[i].first = first;
  return first;
}

/* The node of SCHEMA, compiled into S; -1 for a type the walker does not know. */
static int32_t compile(kg_avro_shape_t *s, avro_schema_t schema, int depth) {
  if (!schema || depth > 10000) return -1;
  avro_type_t t = avro_typeof(schema);
  if (t == AVRO_LINK) return compile(s, avro_schema_link_target(schema), depth + 1);
  if (t == AVRO_RECORD || t == AVRO_ENUM || t == AVRO_FIXED) {
    for (size_t i = 0; i < s->nnamed; i++)
      if (s->named[i] == schema) return s->named_node[i];
  }
  switch (t) {
  case AVRO_NULL:
  case AVRO_BOOLEAN:
  case AVRO_INT32:
  case AVRO_INT64:
  case AVRO_FLOAT:
  case AVRO_DOUBLE:
  case AVRO_STRING:
  case AVRO_BYTES: return new_node(s, t, 0);
  case AVRO_FIXED:
  case AVRO_ENUM:
  case AVRO_RECORD: {
    int64_t n = t == AVRO_FIXED  ? avro_schema_fixed_size(schema)
                : t == AVRO_ENUM ? avro_schema_enum_number_of_symbols(schema)
                                 : (int64_t)avro_schema_record_size(schema);
    int32_t i = new_node(s, t, n);
    if (s->nnamed == s->named_cap) {
      s->named_cap = s->named_cap ? 2 * s->named_cap : 8;
      s->named = kg_xrealloc(s->named, s->named_cap * sizeof *s->named);
      s->named_node = kg_xrealloc(s->named_node, s->named_cap * sizeof *s->named_node);
    }
    s->named[s->nnamed] = schema;
    s->named_node[s->nnamed++] = i;
    if (t != AVRO_RECORD) return i;
    int32_t first = new_kids(s, i, (size_t)n);
    for (int64_t f = 0; f < n; f++) {
      const char *name = avro_schema_record_field_name(schema, (int)f);
      s->names[first + f] = kg_xstrdup(name ? name : "?");
      int32_t k = compile(s, avro_schema_record_field_get_by_index(schema, (int)f), depth + 1);
      if (k < 0) return -1;
      s->kids[first + f] = k;
    }
    return i;
  }
  case AVRO_UNION: {
    int64_t n = (int64_t)avro_schema_union_size(schema);
    int32_t i = new_node(s, t, n);
    int32_t first = new_kids(s, i, (size_t)n);
    for (int64_t b = 0; b < n; b++) {
      int32_t k = compile(s, avro_schema_union_branch(schema, (int)b), depth + 1);
      if (k < 0) return -1;
      s->kids[first + b] = k;
    }
    return i;
  }
  case AVRO_ARRAY:
  case AVRO_MAP: {
    int32_t i = new_node(s, t, 1);
    int32_t first = new_kids(s, i, 1);
    int32_t k = compile(s, t == AVRO_MAP ? avro_schema_map_values(schema) : avro_schema_array_items(schema), depth + 1);
    if (k < 0) return -1;
    s->kids[first] = k;
    return i;
  }
  default: return -1;
  }
}

kg_avro_shape_t *kg_avro_shape_new(avro_schema_t schema) {
  kg_avro_shape_t *s = kg_xcalloc(1, sizeof *s);
  int32_t root = compile(s, schema, 0);
  free(s->named);
  free(s->named_node);
  s->named = NULL;
  s->named_node = NULL;
  if (root != 0) { /* the root is compiled first, as node 0 */
    kg_avro_shape_free(s);
    return NULL;
  }
  /* Which nodes may take no bytes: null and fixed(0), then records all of whose fields may, until nothing changes
   * (a record that holds itself through its fields only has no finite datum; the depth bound ends its walk). */
  for (size_t i = 0; i < s->nnodes; i++)
    s->nodes[i].empty = s->nodes[i].type == AVRO_NULL || (s->nodes[i].type == AVRO_FIXED && s->nodes[i].n == 0) ||
                        s->nodes[i].type == AVRO_RECORD;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < s->nnodes; i++) {
      node_t *nd = &s->nodes[i];
      if (nd->type != AVRO_RECORD || !nd->empty) continue;
      for (int64_t f = 0; f < nd->n; f++)
        if (!s->nodes[s->kids[nd->first + f]].empty) {
          nd->empty = false;
          changed = true;
          break;
        }
    }
  }
  return s;
}

void kg_avro_shape_free(kg_avro_shape_t *s) {
  if (!s) return;
  for (size_t k = 0; k < s->nkids; k++)
    free(s->names[k]);
  free(s->names);
  free(s->nodes);
  free(s->kids);
  free(s->named);
  free(s->named_node);
  free(s);
}

kg_avro_shape_t *kg_avro_shape_parse(const char *text, size_t len, char *errbuf) {
  avro_schema_t schema = NULL;
  if (avro_schema_from_json_length(text, len, &schema)) {
    char reason[KG_ERRLEN / 2];
    snprintf(reason, sizeof reason, "%s", avro_strerror());
    size_t n = strlen(reason);
    while (n && (reason[n - 1] == '\n' || reason[n - 1] == ' '))
      reason[--n] = 0;
    kg_fail(errbuf, KG_EINVAL, "not a valid Avro schema: %s", n ? reason : "avro-c refused it");
    return NULL;
  }
  kg_avro_shape_t *s = kg_avro_shape_new(schema);
  avro_schema_decref(schema);
  if (!s) kg_fail(errbuf, KG_EINVAL, "not a valid Avro schema: it has a type kingest cannot read");
  return s;
}

/* Nesting of a datum (recursive schemas) that kingest reads; deeper is refused. */
#define KG_AVRO_MAX_DEPTH 512

/* One step of the path to where a datum went wrong: a record's field, an array's item, a map's key. */
typedef struct {
  const char *field;        /* a field's name, or NULL */
  int64_t item;             /* an item's number (from 0), or -1 */
  const unsigned char *key; /* a key's bytes (KEY_LEN of them), or NULL */
  int64_t key_len;
} step_t;

/* The state of one walk: the budget of items that take no bytes, and when TRACE, the path and what was wrong. */
typedef struct {
  const unsigned char *start; /* the datum's first byte, for offsets in messages */
  int64_t empty;              /* items of arrays that took no bytes, so far */
  int64_t empty_max;          /* the most the datum may have */
  int64_t work;               /* nodes walked */
  bool trace;                 /* the second walk, after a failure: say why, and where */
  bool beyond;                /* the datum is well formed but beyond what kingest reads (depth, empty items) */
  int depth;                  /* steps on PATH */
  step_t *path;               /* when TRACE: KG_AVRO_MAX_DEPTH + 2 of them */
  char *why;                  /* when TRACE: WHY_SIZE bytes */
} walk_t;

#define WHY_SIZE 256

/* Records (when tracing) why the walk fails; returns NULL, the walk's failure. */
static const unsigned char *fail_at(walk_t *w, bool beyond, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const unsigned char *fail_at(walk_t *w, bool beyond, const char *fmt, ...) {
  if (w->trace && !w->why[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why, WHY_SIZE, fmt, ap);
    va_end(ap);
    w->beyond = beyond;
  }
  return NULL;
}

/* Reads an Avro long (zig-zag varint of at most MAXLEN bytes) at *P before END: 1, 0 when it is cut short, -1 when it
 * is longer than MAXLEN bytes. */
static inline int read_varint(const unsigned char **p, const unsigned char *end, int maxlen, int64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < maxlen; i++) {
    if (*p >= end) return 0;
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return 1;
    }
  }
  return -1;
}

/* A varint of WHAT at *P, or the walk's failure. */
#define VARINT(what, maxlen, out)                                                                                      \
  do {                                                                                                                 \
    const unsigned char *at_ = p;                                                                                      \
    int got_ = read_varint(&p, end, maxlen, out);                                                                      \
    if (got_ == 0) return fail_at(w, false, "it ends early: %s at byte %td is cut short", what, at_ - w->start);       \
    if (got_ < 0) return fail_at(w, false, "%s at byte %td is longer than %d bytes", what, at_ - w->start, maxlen);    \
  } while (0)

/* Where the datum of node I that starts at P ends (before END), or NULL when the bytes are not one. */
static const unsigned char *datum_end(const kg_avro_shape_t *s, int32_t i, const unsigned char *p,
                                      const unsigned char *end, int depth, walk_t *w) {
  if (!p) return NULL;
  if (depth > KG_AVRO_MAX_DEPTH) return fail_at(w, true, "it is nested deeper than %d levels", KG_AVRO_MAX_DEPTH);
  w->work++;
  const node_t *nd = &s->nodes[i];
  int64_t n;
  switch (nd->type) {
  case AVRO_NULL: return p;
  case AVRO_BOOLEAN:
    if (p >= end) return fail_at(w, false, "it ends early: a boolean at byte %td", p - w->start);
    return *p <= 1 ? p + 1 : fail_at(w, false, "boolean byte %u at byte %td is not 0 or 1", *p, p - w->start);
  case AVRO_INT32:
    VARINT("an int", 5, &n);
    return n >= INT32_MIN && n <= INT32_MAX ? p : fail_at(w, false, "int %lld is out of the int range", (long long)n);
  case AVRO_INT64: VARINT("a long", 10, &n); return p;
  case AVRO_FLOAT: return end - p >= 4 ? p + 4 : fail_at(w, false, "it ends early: a float at byte %td", p - w->start);
  case AVRO_DOUBLE:
    return end - p >= 8 ? p + 8 : fail_at(w, false, "it ends early: a double at byte %td", p - w->start);
  case AVRO_STRING:
  case AVRO_BYTES:
    VARINT("a length", 10, &n);
    if (n < 0) return fail_at(w, false, "negative length %lld at byte %td", (long long)n, p - w->start);
    return n <= end - p ? p + n
                        : fail_at(w, false, "it ends early: %s of %lld bytes at byte %td, %td left",
                                  nd->type == AVRO_STRING ? "a string" : "bytes", (long long)n, p - w->start, end - p);
  case AVRO_FIXED:
    return nd->n >= 0 && nd->n <= end - p
               ? p + nd->n
               : fail_at(w, false, "it ends early: a fixed of %lld bytes at byte %td", (long long)nd->n, p - w->start);
  case AVRO_ENUM:
    VARINT("an enum index", 10, &n);
    return n >= 0 && n < nd->n
               ? p
               : fail_at(w, false, "enum index %lld is out of range (%lld symbols)", (long long)n, (long long)nd->n);
  case AVRO_UNION:
    VARINT("a union branch index", 10, &n);
    if (n < 0 || n >= nd->n)
      return fail_at(w, false, "union branch index %lld is out of range (%lld branches)", (long long)n,
                     (long long)nd->n);
    return datum_end(s, s->kids[nd->first + n], p, end, depth + 1, w);
  case AVRO_RECORD:
    for (int64_t f = 0; p && f < nd->n; f++) {
      if (w->trace) w->path[w->depth++] = (step_t){.field = s->names[nd->first + f], .item = -1};
      p = datum_end(s, s->kids[nd->first + f], p, end, depth + 1, w);
      if (w->trace && p) w->depth--;
    }
    return p;
  case AVRO_ARRAY:
  case AVRO_MAP: {
    bool map = nd->type == AVRO_MAP;
    int32_t items = s->kids[nd->first];
    /* Items that may take no bytes cost work without bytes: the datum's budget of them bounds it. Any other item,
     * and a map's entry (its key), takes a byte at least. */
    bool empty = !map && s->nodes[items].empty;
    int64_t k = 0;
    if (w->trace) w->path[w->depth++] = (step_t){.item = 0};
    for (;;) {
      VARINT("a block count", 10, &n);
      if (n == 0) break;
      int64_t size = -1;
      if (n < 0) { /* a block that also gives its size in bytes */
        if (n == INT64_MIN) return fail_at(w, false, "block count %lld is out of range", (long long)n);
        VARINT("a block size", 10, &size);
        if (size < 0 || size > end - p)
          return fail_at(w, false, "block size %lld at byte %td is not within the %td bytes left", (long long)size,
                         p - w->start, end - p);
        n = -n;
      }
      if (!empty && n > end - p)
        return fail_at(w, false, "block count %lld at byte %td is more than the %td bytes left can hold", (long long)n,
                       p - w->start, end - p);
      if (empty && n > (end - p) + (w->empty_max - w->empty))
        return fail_at(w, true,
                       "a block of %lld items of a type that takes no bytes, more than the %lld such items kingest "
                       "reads in a datum of %td bytes",
                       (long long)n, (long long)w->empty_max, end - w->start);
      const unsigned char *start = p;
      for (int64_t b = 0; p && b < n; b++, k++) {
        if (w->trace) w->path[w->depth - 1].item = k, w->path[w->depth - 1].key = NULL;
        if (map) {
          int64_t klen;
          VARINT("a map key's length", 10, &klen);
          if (klen < 0 || klen > end - p)
            return fail_at(w, false, "map key length %lld at byte %td is not within the %td bytes left",
                           (long long)klen, p - w->start, end - p);
          if (w->trace) w->path[w->depth - 1].key = p, w->path[w->depth - 1].key_len = klen;
          p += klen;
        }
        const unsigned char *before = p;
        p = datum_end(s, items, p, end, depth + 1, w);
        if (empty && p == before && ++w->empty > w->empty_max)
          return fail_at(w, true,
                         "more than the %lld items of a type that takes no bytes kingest reads in a datum "
                         "of %td bytes",
                         (long long)w->empty_max, end - w->start);
      }
      if (!p) return NULL;
      if (size >= 0 && p - start != size)
        return fail_at(w, false, "a block said to be %lld bytes holds %td", (long long)size, p - start);
    }
    if (w->trace) w->depth--;
    return p;
  }
  default: return NULL;
  }
}

/* The path of W's failure, "user.tags[2]", into OUT (SIZE bytes); a long one keeps its last part. */
static void path_text(const walk_t *w, char *out, size_t size) {
  char full[4096];
  size_t n = 0;
  for (int d = 0; d < w->depth && n + 80 < sizeof full; d++) {
    const step_t *st = &w->path[d];
    if (st->field)
      n += (size_t)snprintf(full + n, sizeof full - n, "%s%s", n ? "." : "", st->field);
    else if (st->key) {
      full[n++] = '[', full[n++] = '"';
      for (int64_t c = 0; c < st->key_len && c < 40 && n + 8 < sizeof full; c++)
        full[n++] = st->key[c] < 32 || st->key[c] == '"' ? '?' : (char)st->key[c];
      n += (size_t)snprintf(full + n, sizeof full - n, "%s\"]", st->key_len > 40 ? "..." : "");
    } else
      n += (size_t)snprintf(full + n, sizeof full - n, "[%lld]", (long long)st->item);
  }
  full[n] = 0;
  if (n + 1 <= size)
    snprintf(out, size, "%s", full);
  else
    snprintf(out, size, "...%s", full + n - (size - 4));
}

int kg_avro_check_datum(const kg_avro_shape_t *s, const void *data, size_t len, int64_t *work, char *errbuf) {
  const unsigned char *p = data;
  walk_t w = {.start = p, .empty_max = KG_AVRO_EMPTY_ITEMS + KG_AVRO_EMPTY_ITEMS_PER_BYTE * (int64_t)len};
  if (!s) return kg_fail(errbuf, KG_EINVAL, "no schema");
  const unsigned char *end = datum_end(s, 0, p, p + len, 0, &w);
  if (work) *work = w.work;
  if (end == p + len) return KG_OK;
  /* Walked again, with the path, to say what is wrong and where: only for a datum that fails. */
  step_t *path = kg_xcalloc(KG_AVRO_MAX_DEPTH + 2, sizeof *path);
  char why[WHY_SIZE] = "";
  walk_t t = {.start = p, .empty_max = w.empty_max, .trace = true, .path = path, .why = why};
  end = datum_end(s, 0, p, p + len, 0, &t);
  if (end && end != p + len) snprintf(why, sizeof why, "%td bytes are left after the datum", (p + len) - end);
  if (!why[0]) snprintf(why, sizeof why, "it is not one datum of the schema");
  char where[160];
  path_text(&t, where, sizeof where);
  free(path);
  return kg_fail(errbuf, t.beyond ? KG_ERANGE : KG_EINVAL, "%s%s%s", why, where[0] ? " at field " : "", where);
}

bool kg_avro_is_datum(const kg_avro_shape_t *s, const void *data, size_t len) {
  const unsigned char *p = data;
  walk_t w = {.start = p, .empty_max = KG_AVRO_EMPTY_ITEMS + KG_AVRO_EMPTY_ITEMS_PER_BYTE * (int64_t)len};
  return s && datum_end(s, 0, p, p + len, 0, &w) == p + len;
}

/* ---- The task's schemas ---- */

typedef struct {
  char *text;
  size_t len;
  avro_schema_t schema;
  kg_avro_shape_t *shape;
  struct model *model; /* its JSON, for kg_avro_schemas_holds; made when first asked for */
} schema_entry_t;

/* An answer of kg_avro_schemas_holds, kept: schemas do not change. */
typedef struct {
  int32_t writer, reader;
  bool holds;
  char *why; /* owned */
} pair_t;

struct kg_avro_schemas {
  schema_entry_t *entries;
  size_t n, cap;
  pair_t *pairs;
  size_t npairs;
};

kg_avro_schemas_t *kg_avro_schemas_new(void) { return kg_xcalloc(1, sizeof(kg_avro_schemas_t)); }

static void model_free(struct model *m);

void kg_avro_schemas_destroy(kg_avro_schemas_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    free(s->entries[i].text);
    avro_schema_decref(s->entries[i].schema);
    kg_avro_shape_free(s->entries[i].shape);
    model_free(s->entries[i].model);
  }
  free(s->entries);
  for (size_t i = 0; i < s->npairs; i++)
    free(s->pairs[i].why);
  free(s->pairs);
  free(s);
}

int kg_avro_schemas_add(kg_avro_schemas_t *s, const char *text, size_t len, int32_t *index, char *errbuf) {
  for (size_t i = 0; i < s->n; i++) /* the same text: no parse */
    if (s->entries[i].len == len && !memcmp(s->entries[i].text, text, len)) {
      *index = (int32_t)i;
      return KG_OK;
    }
  avro_schema_t schema = NULL;
  if (avro_schema_from_json_length(text, len, &schema)) {
    kg_avro_shape_t *none = kg_avro_shape_parse(text, len, errbuf); /* for the reason */
    kg_avro_shape_free(none);
    return KG_EINVAL;
  }
  for (size_t i = 0; i < s->n; i++)
    if (avro_schema_equal(s->entries[i].schema, schema)) {
      avro_schema_decref(schema);
      *index = (int32_t)i;
      return KG_OK;
    }
  kg_avro_shape_t *shape = kg_avro_shape_new(schema);
  if (!shape) {
    avro_schema_decref(schema);
    return kg_fail(errbuf, KG_EINVAL, "not a valid Avro schema: it has a type kingest cannot read");
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->entries = kg_xrealloc(s->entries, s->cap * sizeof *s->entries);
  }
  s->entries[s->n] = (schema_entry_t){kg_xstrndup(text, len), len, schema, shape, NULL};
  *index = (int32_t)s->n++;
  return KG_OK;
}

const char *kg_avro_schemas_text(const kg_avro_schemas_t *s, int32_t index, size_t *len) {
  if (!s || index < 0 || (size_t)index >= s->n) return NULL;
  *len = s->entries[index].len;
  return s->entries[index].text;
}

const kg_avro_shape_t *kg_avro_schemas_shape(const kg_avro_schemas_t *s, int32_t index) {
  if (!s || index < 0 || (size_t)index >= s->n) return NULL;
  return s->entries[index].shape;
}

/* ---- Whether one schema holds the datums of another ----
 *
 * Worked out on the schemas' JSON, as Avro's resolution rules match a writer's schema to a reader's (fields by name
 * or the reader's aliases, named types by unqualified name or alias, the first union branch of the same type, else
 * the first the type promotes to), with what avro-c does not keep: defaults and aliases. The text was accepted by
 * avro-c, so whatever this reading does not understand is taken as not held: the cost of being wrong that way is
 * a file more, never a field lost. */

/* A named type of a schema: its full name, its definition, the namespace of what it holds. */
typedef struct {
  char *name;           /* owned */
  char *ns;             /* owned; NULL: none */
  const kg_json_t *def; /* in the model's tree */
} named_t;

struct model {
  kg_json_t *json; /* the schema's tree */
  named_t *names;
  size_t nnames;
};

/* A type as the walk sees it. */
typedef struct {
  const char *type;     /* "null" ... "string", "record", "enum", "fixed", "array", "map", "union"; NULL: unknown */
  const kg_json_t *def; /* the object (record, enum, fixed, array, map) or the array (union) */
  const char *name;     /* named types: the full name */
  const char *ns;       /* the namespace of what it holds */
} view_t;

static void model_free(struct model *m) {
  if (!m) return;
  kg_json_free(m->json);
  for (size_t i = 0; i < m->nnames; i++)
    free(m->names[i].name), free(m->names[i].ns);
  free(m->names);
  free(m);
}

static bool is_primitive(const char *t) {
  static const char *const p[] = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
    if (!strcmp(t, p[i])) return true;
  return false;
}

static const char *json_string(const kg_json_t *obj, const char *key) {
  const kg_json_t *v = kg_json_get(obj, key);
  return v && v->type == KG_JSON_STRING ? v->string : NULL;
}

/* Registers the named types of V (in namespace NS) in M. */
static void model_names(struct model *m, const kg_json_t *v, const char *ns, int depth) {
  if (!v || depth > 1000) return;
  if (v->type == KG_JSON_ARRAY) {
    for (size_t i = 0; i < v->count; i++)
      model_names(m, &v->items[i], ns, depth + 1);
    return;
  }
  if (v->type != KG_JSON_OBJECT) return;
  const char *t = json_string(v, "type");
  if (!t) {
    model_names(m, kg_json_get(v, "type"), ns, depth + 1);
    return;
  }
  if (!strcmp(t, "array")) return model_names(m, kg_json_get(v, "items"), ns, depth + 1);
  if (!strcmp(t, "map")) return model_names(m, kg_json_get(v, "values"), ns, depth + 1);
  bool record = !strcmp(t, "record") || !strcmp(t, "error");
  if (!record && strcmp(t, "enum") && strcmp(t, "fixed")) return;
  const char *name = json_string(v, "name");
  if (!name) return;
  const kg_json_t *nsv = kg_json_get(v, "namespace");
  char *full, *own;
  const char *dot = strrchr(name, '.');
  if (dot) {
    full = kg_xstrdup(name);
    own = kg_xstrndup(name, (size_t)(dot - name));
  } else {
    const char *n = nsv && nsv->type == KG_JSON_STRING ? nsv->string : nsv ? NULL : ns;
    own = n && *n ? kg_xstrdup(n) : NULL;
    full = own ? kg_xasprintf("%s.%s", own, name) : kg_xstrdup(name);
  }
  m->names = kg_xrealloc(m->names, (m->nnames + 1) * sizeof *m->names);
  m->names[m->nnames++] = (named_t){full, own, v};
  if (!record) return;
  const kg_json_t *fields = kg_json_get(v, "fields");
  for (size_t i = 0; fields && fields->type == KG_JSON_ARRAY && i < fields->count; i++)
    model_names(m, kg_json_get(&fields->items[i], "type"), own, depth + 1);
}

/* The view of type V of M in namespace NS. */
static view_t view_of(const struct model *m, const kg_json_t *v, const char *ns) {
  view_t out = {0};
  if (!v) return out;
  if (v->type == KG_JSON_ARRAY) return (view_t){"union", v, NULL, ns};
  const char *t = v->type == KG_JSON_STRING ? v->string : v->type == KG_JSON_OBJECT ? json_string(v, "type") : NULL;
  if (!t) return out;
  if (is_primitive(t)) return (view_t){t, v, NULL, ns};
  if (v->type == KG_JSON_OBJECT && (!strcmp(t, "array") || !strcmp(t, "map"))) return (view_t){t, v, NULL, ns};
  const named_t *found = NULL;
  if (v->type == KG_JSON_OBJECT &&
      (!strcmp(t, "record") || !strcmp(t, "error") || !strcmp(t, "enum") || !strcmp(t, "fixed"))) {
    for (size_t i = 0; i < m->nnames && !found; i++)
      if (m->names[i].def == v) found = &m->names[i];
  } else { /* a reference to a named type */
    char *qualified = ns && !strchr(t, '.') ? kg_xasprintf("%s.%s", ns, t) : NULL;
    for (size_t i = 0; i < m->nnames && !found; i++)
      if (qualified && !strcmp(m->names[i].name, qualified)) found = &m->names[i];
    for (size_t i = 0; i < m->nnames && !found; i++)
      if (!strcmp(m->names[i].name, t)) found = &m->names[i];
    free(qualified);
  }
  if (!found) return out;
  const char *ft = json_string(found->def, "type");
  return (view_t){!strcmp(ft, "error") ? "record" : ft, found->def, found->name, found->ns};
}

static const char *unqualified(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot ? dot + 1 : name;
}

/* Whether the writer's named type W and the reader's R match by name: the same unqualified name, or one of R's
 * aliases. */
static bool names_match(const view_t *w, const view_t *r) {
  if (!strcmp(unqualified(w->name), unqualified(r->name))) return true;
  const kg_json_t *aliases = kg_json_get(r->def, "aliases");
  for (size_t i = 0; aliases && aliases->type == KG_JSON_ARRAY && i < aliases->count; i++)
    if (aliases->items[i].type == KG_JSON_STRING &&
        !strcmp(unqualified(aliases->items[i].string), unqualified(w->name)))
      return true;
  return false;
}

/* Whether the writer's type W (not a union) resolves to the reader's R (not a union) at the top: the same type
 * (named ones by name, fixed ones of one size), or, unless EXACT, one W promotes to. */
static bool types_match(const view_t *w, const view_t *r, bool exact) {
  if (!w->type || !r->type) return false;
  if (!strcmp(w->type, r->type)) {
    if (!w->name) return true;
    if (!r->name || !names_match(w, r)) return false;
    if (!strcmp(w->type, "fixed")) {
      const kg_json_t *ws = kg_json_get(w->def, "size"), *rs = kg_json_get(r->def, "size");
      return ws && rs && ws->type == KG_JSON_NUMBER && rs->type == KG_JSON_NUMBER && ws->number == rs->number;
    }
    return true;
  }
  if (exact) return false;
  static const char *const promotions[][2] = {{"int", "long"},     {"int", "float"},   {"int", "double"},
                                              {"long", "float"},   {"long", "double"}, {"float", "double"},
                                              {"string", "bytes"}, {"bytes", "string"}};
  for (size_t i = 0; i < sizeof promotions / sizeof promotions[0]; i++)
    if (!strcmp(w->type, promotions[i][0]) && !strcmp(r->type, promotions[i][1])) return true;
  return false;
}

/* The branch of the reader's union R that the writer's W resolves to: the first of the same type, else the first W
 * promotes to; a view with no type when none. */
static view_t union_branch(const struct model *rm, const view_t *r, const view_t *w) {
  for (int exact = 1; exact >= 0; exact--)
    for (size_t i = 0; i < r->def->count; i++) {
      view_t b = view_of(rm, &r->def->items[i], r->ns);
      if (b.type && strcmp(b.type, "union") && types_match(w, &b, exact)) return b;
    }
  return (view_t){0};
}

/* The walk of kg_avro_schemas_holds: writer records and reader records being compared (recursive schemas end
 * there), and why the first loss was found. */
typedef struct {
  const struct model *wm, *rm;
  const kg_json_t *open[64][2];
  int nopen;
  char *why;
  size_t why_size;
} holds_t;

static bool lost(holds_t *h, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool lost(holds_t *h, const char *path, const char *fmt, ...) {
  char text[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  snprintf(h->why, h->why_size, "%s%s%s", text, *path ? " at field " : "", path);
  return false;
}

static bool holds(holds_t *h, view_t w, view_t r, const char *path, int depth) {
  if (!w.type || !r.type || depth > 200) return lost(h, path, "a type kingest does not compare");
  if (!strcmp(w.type, "union")) {
    for (size_t i = 0; i < w.def->count; i++) {
      view_t b = view_of(h->wm, &w.def->items[i], w.ns);
      if (!holds(h, b, r, path, depth + 1)) return false;
    }
    return true;
  }
  if (!strcmp(r.type, "union")) {
    view_t b = union_branch(h->rm, &r, &w);
    if (!b.type) return lost(h, path, "the writer's %s has no branch in the reader's union", w.name ? w.name : w.type);
    return holds(h, w, b, path, depth + 1);
  }
  if (!types_match(&w, &r, false))
    return lost(h, path, "the writer's %s does not resolve to the reader's %s", w.name ? w.name : w.type,
                r.name ? r.name : r.type);
  if (strcmp(w.type, r.type)) { /* a promotion: only some keep every value */
    if (!strcmp(r.type, "float") || (!strcmp(w.type, "long") && !strcmp(r.type, "double")))
      return lost(h, path, "%s to %s does not keep every value", w.type, r.type);
    return true;
  }
  if (!strcmp(w.type, "array") || !strcmp(w.type, "map")) {
    const char *key = !strcmp(w.type, "array") ? "items" : "values";
    char sub[512];
    snprintf(sub, sizeof sub, "%s[]", path);
    return holds(h, view_of(h->wm, kg_json_get(w.def, key), w.ns), view_of(h->rm, kg_json_get(r.def, key), r.ns), sub,
                 depth + 1);
  }
  if (!strcmp(w.type, "enum")) {
    const kg_json_t *ws = kg_json_get(w.def, "symbols"), *rs = kg_json_get(r.def, "symbols");
    for (size_t i = 0; ws && ws->type == KG_JSON_ARRAY && i < ws->count; i++) {
      bool found = false;
      for (size_t j = 0; rs && rs->type == KG_JSON_ARRAY && j < rs->count && !found; j++)
        found = ws->items[i].type == KG_JSON_STRING && rs->items[j].type == KG_JSON_STRING &&
                !strcmp(ws->items[i].string, rs->items[j].string);
      if (!found)
        return lost(h, path, "symbol %s of enum %s is not the reader's",
                    ws->items[i].type == KG_JSON_STRING ? ws->items[i].string : "?", w.name);
    }
    return true;
  }
  if (strcmp(w.type, "record")) return true; /* a primitive, or fixed: types_match has compared them */
  for (int i = 0; i < h->nopen; i++)
    if (h->open[i][0] == w.def && h->open[i][1] == r.def) return true; /* being compared, further up */
  if (h->nopen == 64) return lost(h, path, "records nested too deep to compare");
  h->open[h->nopen][0] = w.def, h->open[h->nopen][1] = r.def;
  h->nopen++;
  const kg_json_t *wf = kg_json_get(w.def, "fields"), *rf = kg_json_get(r.def, "fields");
  bool ok = wf && rf && wf->type == KG_JSON_ARRAY && rf->type == KG_JSON_ARRAY;
  if (!ok) lost(h, path, "a record without fields");
  bool *matched = ok ? kg_xcalloc(rf->count + 1, sizeof *matched) : NULL;
  for (size_t i = 0; ok && i < wf->count; i++) {
    const char *name = json_string(&wf->items[i], "name");
    size_t found = rf->count;
    for (size_t j = 0; name && j < rf->count && found == rf->count; j++) {
      const char *rn = json_string(&rf->items[j], "name");
      if (rn && !strcmp(rn, name) && !matched[j]) found = j;
    }
    for (size_t j = 0; name && j < rf->count && found == rf->count; j++) {
      const kg_json_t *aliases = kg_json_get(&rf->items[j], "aliases");
      for (size_t a = 0; aliases && aliases->type == KG_JSON_ARRAY && a < aliases->count; a++)
        if (aliases->items[a].type == KG_JSON_STRING && !strcmp(aliases->items[a].string, name) && !matched[j])
          found = j;
    }
    char sub[512];
    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", name ? name : "?");
    if (found == rf->count) {
      ok = lost(h, sub, "the reader's record %s has no such field", r.name);
      break;
    }
    matched[found] = true;
    ok = holds(h, view_of(h->wm, kg_json_get(&wf->items[i], "type"), w.ns),
               view_of(h->rm, kg_json_get(&rf->items[found], "type"), r.ns), sub, depth + 1);
  }
  for (size_t j = 0; ok && j < rf->count; j++)
    if (!matched[j] && !kg_json_get(&rf->items[j], "default")) {
      const char *rn = json_string(&rf->items[j], "name");
      char sub[512];
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", rn ? rn : "?");
      ok = lost(h, sub, "the writer has no such field and the reader's has no default");
    }
  free(matched);
  h->nopen--;
  return ok;
}

/* The model of entry E, made when first asked for; NULL when its text does not parse (it did for avro-c). */
static struct model *model_of(schema_entry_t *e) {
  if (e->model) return e->model;
  struct model *m = kg_xcalloc(1, sizeof *m);
  char err[KG_ERRLEN];
  if (kg_json_parse(e->text, e->len, "schema", &m->json, err)) {
    free(m);
    return NULL;
  }
  model_names(m, m->json, NULL, 0);
  return e->model = m;
}

bool kg_avro_schemas_holds(kg_avro_schemas_t *s, int32_t writer, int32_t reader, const char **why) {
  static const char *none = "";
  *why = none;
  if (writer == reader) return true;
  for (size_t i = 0; i < s->npairs; i++)
    if (s->pairs[i].writer == writer && s->pairs[i].reader == reader) {
      *why = s->pairs[i].why;
      return s->pairs[i].holds;
    }
  if (writer < 0 || reader < 0 || (size_t)writer >= s->n || (size_t)reader >= s->n) {
    *why = "no such schema";
    return false;
  }
  char text[512] = "";
  holds_t h = {
      .wm = model_of(&s->entries[writer]), .rm = model_of(&s->entries[reader]), .why = text, .why_size = sizeof text};
  bool ok = h.wm && h.rm;
  if (!ok)
    snprintf(text, sizeof text, "a schema kingest cannot compare");
  else
    ok = holds(&h, view_of(h.wm, h.wm->json, NULL), view_of(h.rm, h.rm->json, NULL), "", 0);
  s->pairs = kg_xrealloc(s->pairs, (s->npairs + 1) * sizeof *s->pairs);
  s->pairs[s->npairs++] = (pair_t){writer, reader, ok, kg_xstrdup(ok ? "" : text)};
  *why = s->pairs[s->npairs - 1].why;
  return ok;
}

static _Thread_local const kg_avro_schemas_t *thread_schemas;
void kg_avro_set_thread_schemas(const kg_avro_schemas_t *schemas) { thread_schemas = schemas; }
const kg_avro_schemas_t *kg_avro_thread_schemas(void) { return thread_schemas; }

/* ---- Framed payloads ---- */

#define KG_AVRO_MAX_ID 16

typedef struct {
  uint8_t id[KG_AVRO_MAX_ID];
  int32_t index; /* the schema's */
} id_entry_t;

typedef struct {
  char *topic;
  int32_t index;
} topic_entry_t;

struct kg_avro_input {
  kg_framing_t framing;
  size_t id_len;
  kg_registry_t *registry;
  kg_avro_schemas_t *schemas;
  id_entry_t *ids; /* the ids met, most recent last */
  size_t nids, ids_cap;
  size_t last; /* the entry of the last id met: consecutive records mostly share it */
  topic_entry_t *topics;
  size_t ntopics;
  int64_t asked; /* lookups this reader did not have the answer of: the registry client's cache or the registry */
};

int kg_avro_input_new(const kg_config_t *c, kg_avro_schemas_t *schemas, kg_avro_input_t **out, char *errbuf) {
  *out = NULL;
  kg_framing_t framing = kg_registry_settings(c)->framing;
  if (framing == KG_FRAMING_NONE) return kg_fail(errbuf, KG_EINVAL, "the job reads no Avro framing");
  kg_avro_input_t *in = kg_xcalloc(1, sizeof *in);
  in->framing = framing;
  in->id_len = framing == KG_FRAMING_CONFLUENT ? 4 : 16;
  in->schemas = schemas;
  int rc = kg_registry_new(c, &in->registry, errbuf);
  if (rc) {
    free(in);
    return rc;
  }
  *out = in;
  return KG_OK;
}

void kg_avro_input_destroy(kg_avro_input_t *in) {
  if (!in) return;
  kg_registry_destroy(in->registry);
  free(in->ids);
  for (size_t i = 0; i < in->ntopics; i++)
    free(in->topics[i].topic);
  free(in->topics);
  free(in);
}

/* The id's text: a number (Confluent's) or 32 hex digits (LinkedIn's), into OUT (at least 40 bytes). */
static void id_text(const kg_avro_input_t *in, const uint8_t *id, char *out, size_t size) {
  if (in->id_len == 4) {
    snprintf(out, size, "%u", (unsigned)id[0] << 24 | (unsigned)id[1] << 16 | (unsigned)id[2] << 8 | id[3]);
    return;
  }
  for (size_t i = 0; i < in->id_len && 2 * i + 2 < size; i++)
    snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* The entry of ID: from the task's table, or asked of the registry. KG_EREGISTRY when the registry did not give
 * the schema, or gave one kingest cannot read: an error that is not the record's. */
static int id_entry(kg_avro_input_t *in, const uint8_t *id, id_entry_t **out, char *errbuf) {
  if (in->nids && !memcmp(in->ids[in->last].id, id, in->id_len)) {
    *out = &in->ids[in->last];
    return KG_OK;
  }
  for (size_t i = 0; i < in->nids; i++)
    if (!memcmp(in->ids[i].id, id, in->id_len)) {
      in->last = i;
      *out = &in->ids[i];
      return KG_OK;
    }
  char *text = NULL;
  char rerr[KG_ERRLEN];
  in->asked++;
  int rc = kg_registry_schema_by_id(in->registry, id, in->id_len, &text, rerr);
  if (rc) return kg_fail(errbuf, KG_EREGISTRY, "%s", rerr);
  id_entry_t e = {.index = -1};
  memcpy(e.id, id, in->id_len);
  char serr[KG_ERRLEN];
  rc = kg_avro_schemas_add(in->schemas, text, strlen(text), &e.index, serr);
  free(text);
  if (rc) {
    char idt[40];
    id_text(in, id, idt, sizeof idt);
    return kg_fail(errbuf, KG_EREGISTRY, "the registry's schema %s is %s", idt, serr);
  }
  if (in->nids == in->ids_cap) {
    in->ids_cap = in->ids_cap ? 2 * in->ids_cap : 8;
    in->ids = kg_xrealloc(in->ids, in->ids_cap * sizeof *in->ids);
  }
  in->ids[in->nids] = e;
  in->last = in->nids++;
  *out = &in->ids[in->last];
  return KG_OK;
}

int kg_avro_input_frame(kg_avro_input_t *in, const char *value, size_t len, int32_t *index, const char **datum,
                        size_t *datum_len, char *errbuf) {
  const char *framing = in->framing == KG_FRAMING_CONFLUENT ? "Confluent's" : "LinkedIn's";
  if (!value) return kg_fail(errbuf, KG_EINVAL, "the record has a null payload, which is no Avro record");
  if (len < 1 + in->id_len)
    return kg_fail(errbuf, KG_EINVAL,
                   "the payload of %zu bytes is too short for %s header (a magic byte 0 and a %zu-byte schema id)", len,
                   framing, in->id_len);
  if (value[0] != 0)
    return kg_fail(errbuf, KG_EINVAL, "the payload starts with byte %u, not the magic byte 0 of %s framing",
                   (unsigned char)value[0], framing);
  id_entry_t *e = NULL;
  int rc = id_entry(in, (const uint8_t *)value + 1, &e, errbuf);
  if (rc) return rc;
  char idt[40];
  *index = e->index;
  *datum = value + 1 + in->id_len;
  *datum_len = len - 1 - in->id_len;
  char why[KG_ERRLEN];
  rc = kg_avro_check_datum(kg_avro_schemas_shape(in->schemas, e->index), *datum, *datum_len, NULL, why);
  if (rc == KG_OK) return KG_OK;
  id_text(in, e->id, idt, sizeof idt);
  if (rc == KG_ERANGE)
    return kg_fail(errbuf, KG_EINVAL, "the datum of schema %s (%zu bytes) is one kingest does not read: %s", idt,
                   *datum_len, why);
  return kg_fail(errbuf, KG_EINVAL, "the %zu bytes after the header are not one Avro datum of schema %s: %s",
                 *datum_len, idt, why);
}

int kg_avro_input_latest(kg_avro_input_t *in, const char *topic, bool fresh, int32_t *index, char *errbuf) {
  topic_entry_t *known = NULL;
  for (size_t i = 0; i < in->ntopics; i++)
    if (!strcmp(in->topics[i].topic, topic)) known = &in->topics[i];
  if (known && !fresh) {
    *index = known->index;
    return KG_OK;
  }
  char *text = NULL;
  in->asked++;
  int rc = kg_registry_latest(in->registry, topic, fresh, &text, errbuf);
  if (rc) return rc;
  char serr[KG_ERRLEN];
  rc = kg_avro_schemas_add(in->schemas, text, strlen(text), index, serr);
  free(text);
  if (rc) return kg_fail(errbuf, KG_EREGISTRY, "the latest schema of topic %s in the registry is %s", topic, serr);
  if (known) {
    known->index = *index;
  } else {
    in->topics = kg_xrealloc(in->topics, (in->ntopics + 1) * sizeof *in->topics);
    in->topics[in->ntopics++] = (topic_entry_t){kg_xstrdup(topic), *index};
  }
  return KG_OK;
}

int64_t kg_avro_input_requests(const kg_avro_input_t *in) { return kg_registry_requests(in->registry); }

int64_t kg_avro_input_asked(const kg_avro_input_t *in) { return in->asked; }
