/* kg_avro.c: Avro records from Kafka (kg_avro.h). */
#include "kg_avro.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Shapes ---- */

/* One node of a shape. KIDS of a node are indexes of other nodes in SHAPE->kids, from FIRST: a record's fields,
 * a union's branches, an array's items or a map's values (one), a link's target (one). */
typedef struct {
  avro_type_t type;
  int64_t n;     /* fixed: its size; enum: its symbols; record, union: kids */
  int32_t first; /* first kid in kids[] */
} node_t;

struct kg_avro_shape {
  node_t *nodes;
  size_t nnodes, cap;
  int32_t *kids;
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
  s->nodes[s->nnodes] = (node_t){type, n, -1};
  return (int32_t)s->nnodes++;
}

/* Reserves N kid slots for node I; returns the first. */
static int32_t new_kids(kg_avro_shape_t *s, int32_t i, size_t n) {
  while (s->nkids + n > s->kids_cap) {
    s->kids_cap = s->kids_cap ? 2 * s->kids_cap : 16;
    s->kids = kg_xrealloc(s->kids, s->kids_cap * sizeof *s->kids);
  }
  int32_t first = (int32_t)s->nkids;
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
  return s;
}

void kg_avro_shape_free(kg_avro_shape_t *s) {
  if (!s) return;
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

/* Reads an Avro long (zig-zag varint of at most MAXLEN bytes) at *P before END; false when it is cut short. */
static inline bool read_varint(const unsigned char **p, const unsigned char *end, int maxlen, int64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < maxlen; i++) {
    if (*p >= end) return false;
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return true;
    }
  }
  return false;
}

#define KG_AVRO_MAX_DEPTH 512       /* nesting of a datum (recursive schemas); deeper is refused */
#define KG_AVRO_MAX_ITEMS (1 << 24) /* items of one array or map block beyond the bytes that can hold them */

/* Where the datum of node I that starts at P ends (before END), or NULL when the bytes are not one. */
static const unsigned char *datum_end(const kg_avro_shape_t *s, int32_t i, const unsigned char *p,
                                      const unsigned char *end, int depth) {
  if (!p || depth > KG_AVRO_MAX_DEPTH) return NULL;
  const node_t *nd = &s->nodes[i];
  int64_t n;
  switch (nd->type) {
  case AVRO_NULL: return p;
  case AVRO_BOOLEAN: return p < end && *p <= 1 ? p + 1 : NULL;
  case AVRO_INT32: return read_varint(&p, end, 5, &n) && n >= INT32_MIN && n <= INT32_MAX ? p : NULL;
  case AVRO_INT64: return read_varint(&p, end, 10, &n) ? p : NULL;
  case AVRO_FLOAT: return end - p >= 4 ? p + 4 : NULL;
  case AVRO_DOUBLE: return end - p >= 8 ? p + 8 : NULL;
  case AVRO_STRING:
  case AVRO_BYTES: return read_varint(&p, end, 10, &n) && n >= 0 && n <= end - p ? p + n : NULL;
  case AVRO_FIXED: return nd->n >= 0 && nd->n <= end - p ? p + nd->n : NULL;
  case AVRO_ENUM: return read_varint(&p, end, 10, &n) && n >= 0 && n < nd->n ? p : NULL;
  case AVRO_UNION:
    if (!read_varint(&p, end, 10, &n) || n < 0 || n >= nd->n) return NULL;
    return datum_end(s, s->kids[nd->first + n], p, end, depth + 1);
  case AVRO_RECORD:
    for (int64_t f = 0; p && f < nd->n; f++)
      p = datum_end(s, s->kids[nd->first + f], p, end, depth + 1);
    return p;
  case AVRO_ARRAY:
  case AVRO_MAP: {
    bool map = nd->type == AVRO_MAP;
    int32_t items = s->kids[nd->first];
    for (;;) {
      if (!read_varint(&p, end, 10, &n)) return NULL;
      if (n == 0) return p;
      int64_t size = -1;
      if (n < 0) { /* a block that also gives its size in bytes */
        if (n == INT64_MIN || !read_varint(&p, end, 10, &size) || size < 0 || size > end - p) return NULL;
        n = -n;
      }
      if (n > (end - p) + KG_AVRO_MAX_ITEMS) return NULL;
      const unsigned char *start = p;
      for (int64_t k = 0; p && k < n; k++) {
        if (map) {
          int64_t klen;
          if (!read_varint(&p, end, 10, &klen) || klen < 0 || klen > end - p) return NULL;
          p += klen;
        }
        p = datum_end(s, items, p, end, depth + 1);
      }
      if (!p || (size >= 0 && p - start != size)) return NULL;
    }
  }
  default: return NULL;
  }
}

bool kg_avro_is_datum(const kg_avro_shape_t *s, const void *data, size_t len) {
  const unsigned char *p = data;
  return s && datum_end(s, 0, p, p + len, 0) == p + len;
}

/* ---- The task's schemas ---- */

typedef struct {
  char *text;
  size_t len;
  avro_schema_t schema;
  kg_avro_shape_t *shape;
} schema_entry_t;

struct kg_avro_schemas {
  schema_entry_t *entries;
  size_t n, cap;
};

kg_avro_schemas_t *kg_avro_schemas_new(void) { return kg_xcalloc(1, sizeof(kg_avro_schemas_t)); }

void kg_avro_schemas_destroy(kg_avro_schemas_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    free(s->entries[i].text);
    avro_schema_decref(s->entries[i].schema);
    kg_avro_shape_free(s->entries[i].shape);
  }
  free(s->entries);
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
  s->entries[s->n] = (schema_entry_t){kg_xstrndup(text, len), len, schema, shape};
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

static _Thread_local const kg_avro_schemas_t *thread_schemas;
void kg_avro_set_thread_schemas(const kg_avro_schemas_t *schemas) { thread_schemas = schemas; }
const kg_avro_schemas_t *kg_avro_thread_schemas(void) { return thread_schemas; }

/* ---- Framed payloads ---- */

#define KG_AVRO_MAX_ID 16

typedef struct {
  uint8_t id[KG_AVRO_MAX_ID];
  int32_t index; /* the schema's; -1: the registry does not know the id */
  char *error;   /* why, when INDEX is -1 */
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
};

int kg_avro_input_new(const kg_config_t *c, kg_avro_schemas_t *schemas, kg_avro_input_t **out, char *errbuf) {
  *out = NULL;
  if (c->avro_framing == KG_FRAMING_NONE) return kg_fail(errbuf, KG_EINVAL, "the job reads no Avro framing");
  kg_avro_input_t *in = kg_xcalloc(1, sizeof *in);
  in->framing = c->avro_framing;
  in->id_len = c->avro_framing == KG_FRAMING_CONFLUENT ? 4 : 16;
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
  for (size_t i = 0; i < in->nids; i++)
    free(in->ids[i].error);
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

/* The entry of ID: from the task's table, or asked of the registry. KG_EREGISTRY when it did not answer. */
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
  int rc = kg_registry_schema_by_id(in->registry, id, in->id_len, &text, rerr);
  if (rc && rc != KG_ENOTFOUND) return kg_fail(errbuf, rc, "%s", rerr);
  id_entry_t e = {.index = -1};
  memcpy(e.id, id, in->id_len);
  if (rc == KG_ENOTFOUND) {
    e.error = kg_xstrdup(rerr);
  } else {
    char serr[KG_ERRLEN];
    if (kg_avro_schemas_add(in->schemas, text, strlen(text), &e.index, serr)) {
      char idt[40];
      id_text(in, id, idt, sizeof idt);
      e.error = kg_xasprintf("the registry's schema %s is %s", idt, serr);
      e.index = -1;
    }
    free(text);
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
  id_entry_t *e;
  int rc = id_entry(in, (const uint8_t *)value + 1, &e, errbuf);
  if (rc) return rc;
  char idt[40];
  if (e->index < 0) {
    id_text(in, e->id, idt, sizeof idt);
    return kg_fail(errbuf, KG_EINVAL, "schema id %s: %s", idt, e->error);
  }
  *index = e->index;
  *datum = value + 1 + in->id_len;
  *datum_len = len - 1 - in->id_len;
  if (!kg_avro_is_datum(kg_avro_schemas_shape(in->schemas, e->index), *datum, *datum_len)) {
    id_text(in, e->id, idt, sizeof idt);
    return kg_fail(errbuf, KG_EINVAL, "the %zu bytes after the header are not one Avro datum of schema %s", *datum_len,
                   idt);
  }
  return KG_OK;
}

int kg_avro_input_latest(kg_avro_input_t *in, const char *topic, int32_t *index, char *errbuf) {
  for (size_t i = 0; i < in->ntopics; i++)
    if (!strcmp(in->topics[i].topic, topic)) {
      *index = in->topics[i].index;
      return KG_OK;
    }
  char *text = NULL;
  int rc = kg_registry_latest(in->registry, topic, &text, errbuf);
  if (rc) return rc;
  char serr[KG_ERRLEN];
  rc = kg_avro_schemas_add(in->schemas, text, strlen(text), index, serr);
  free(text);
  if (rc) return kg_fail(errbuf, KG_EREGISTRY, "the latest schema of topic %s in the registry is %s", topic, serr);
  in->topics = kg_xrealloc(in->topics, (in->ntopics + 1) * sizeof *in->topics);
  in->topics[in->ntopics++] = (topic_entry_t){kg_xstrdup(topic), *index};
  return KG_OK;
}

int64_t kg_avro_input_requests(const kg_avro_input_t *in) { return kg_registry_requests(in->registry); }
