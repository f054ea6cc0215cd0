/* json.h: a small JSON reader for the engine's own documents (work units and task results handed between the
 * phases of a run, which may be separate processes), and exact number formatting for writing them.
 *
 * The reader takes RFC 8259 JSON: objects, arrays, strings (with \uXXXX escapes and surrogate pairs, decoded to
 * UTF-8; a string may hold NUL bytes), numbers, true, false and null. Integers that fit an int64 are kept
 * exactly. It does not aim at speed: these documents are small. */
#ifndef KG_JSON_H
#define KG_JSON_H

#include "kg_common.h"

typedef enum {
  KG_JSON_NULL = 0,
  KG_JSON_BOOL,
  KG_JSON_NUMBER,
  KG_JSON_STRING,
  KG_JSON_ARRAY,
  KG_JSON_OBJECT,
} kg_json_type_t;

typedef struct kg_json kg_json_t;
struct kg_json {
  kg_json_type_t type;
  bool boolean;
  double number;    /* KG_JSON_NUMBER */
  bool is_integer;  /* the number was written without fraction or exponent and fits an int64 */
  int64_t integer;  /* its exact value when is_integer */
  char *string;     /* KG_JSON_STRING: owned, NUL-terminated (may also hold NULs: see length) */
  size_t length;    /* bytes in string */
  kg_json_t *items; /* KG_JSON_ARRAY items, or KG_JSON_OBJECT values; owned */
  char **keys;      /* KG_JSON_OBJECT keys, one per item; owned */
  size_t count;
};

/* Parses the LEN bytes at TEXT as one JSON value (surrounded by white space only). Returns KG_OK with a new tree
 * in *OUT (free with kg_json_free), or KG_EINVAL with ERRBUF naming WHAT (a file name or a description) and the
 * byte offset of the problem. */
int kg_json_parse(const char *text, size_t len, const char *what, kg_json_t **out, char *errbuf);
void kg_json_free(kg_json_t *value);

/* The value of KEY in OBJ, or NULL (also when OBJ is not an object). */
const kg_json_t *kg_json_get(const kg_json_t *obj, const char *key);

/* Typed reads of OBJ's member KEY, for documents whose form is fixed: each returns KG_OK, or KG_EINVAL with
 * ERRBUF naming WHAT, the key and what was expected. kg_json_get_string's *OUT points into the tree. */
int kg_json_get_int(const kg_json_t *obj, const char *key, const char *what, int64_t *out, char *errbuf);
int kg_json_get_double(const kg_json_t *obj, const char *key, const char *what, double *out, char *errbuf);
int kg_json_get_bool(const kg_json_t *obj, const char *key, const char *what, bool *out, char *errbuf);
int kg_json_get_string(const kg_json_t *obj, const char *key, const char *what, const char **out, char *errbuf);
/* Like kg_json_get_int, but null is allowed: *PRESENT says whether a number was there. */
int kg_json_get_int_or_null(const kg_json_t *obj, const char *key, const char *what, bool *present, int64_t *out,
                            char *errbuf);

/* Appends D to OUT as a JSON number that reads back as exactly D (the shortest such form): integers without a
 * fraction, others with as many digits as they need. Infinite and NaN values, which JSON cannot hold, are
 * written as null. */
void kg_json_double(kg_buf_t *out, double d);

#endif
