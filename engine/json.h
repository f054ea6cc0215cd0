/* json.h: the engine's JSON: one parser, one writer with one way of escaping strings, and the UTF-8 encoder that
 * the parser's \uXXXX escapes and the properties reader's share.
 *
 * The parser takes RFC 8259 JSON (one value, white space around it allowed) into a tape of tokens: strings with
 * their escapes decoded to UTF-8 (\uXXXX, surrogate pairs joined; a lone surrogate is an error), numbers as exact
 * as they can be (see kg_json_tok_t), true, false, null, and arrays and objects nested up to a depth bound. Bytes of
 * strings are taken as they are (they are not checked to be UTF-8). An error names the byte where the text stops
 * being JSON. gobblin.json's codec (lua_bridge.c) and the CSV writer read the tape itself; the engine's own
 * documents (work units, task results and metrics handed between the phases of a run, the schema registry's,
 * WebHDFS's and YARN's answers, Avro schemas) are read as a tree built from it (kg_json_parse).
 *
 * The writer escapes every string the same way, whatever it writes (the log's JSON lines, the metrics file,
 * events, work units, task results, plans, state, quarantined records, gobblin.json's encode): '"' and '\' after a
 * backslash, the control characters backspace, form feed, newline, carriage return and tab as \b \f \n \r \t,
 * every other byte below 0x20 as \u00XX (lowercase hex digits), and every other byte as it is. */
#ifndef KG_JSON_H
#define KG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "kg_common.h"

/* ---- The tape ---- */

typedef enum {
  KG_JSON_TOK_NULL,
  KG_JSON_TOK_FALSE,
  KG_JSON_TOK_TRUE,
  KG_JSON_TOK_NUMBER, /* a double: every number but the integers below (integers up to 2^53 in size are exact) */
  KG_JSON_TOK_INT,    /* an integer beyond 2^53 in size that fits an int64_t, kept exactly */
  KG_JSON_TOK_UINT,   /* an integer above INT64_MAX that fits a uint64_t, kept exactly */
  KG_JSON_TOK_STRING, /* bytes in the text itself (no escape in them) */
  KG_JSON_TOK_ESCAPED_STRING, /* bytes decoded from escapes, in the parser's own buffer (kg_json_tok_string) */
  KG_JSON_TOK_ARRAY,          /* followed by its N items */
  KG_JSON_TOK_OBJECT,         /* followed by its N members, each a key (a string token) and a value */
} kg_json_tok_type_t;

/* One token of the tape, in document order: a container comes before what it holds. */
typedef struct {
  uint32_t type; /* kg_json_tok_type_t */
  uint32_t n;    /* strings: their length in bytes; arrays and objects: their items or members; KG_JSON_TOK_NUMBER:
                    1 when it was written as an integer (no fraction, no exponent), else 0 */
  union {
    double d;   /* KG_JSON_TOK_NUMBER */
    int64_t i;  /* KG_JSON_TOK_INT */
    uint64_t u; /* KG_JSON_TOK_UINT */
    size_t off; /* strings: where their bytes start, in the text or in the parser's buffer */
  } v;
} kg_json_tok_t;

/* A parser, reused from document to document (its buffers grow to the largest). Zeroed, it is ready. */
typedef struct {
  kg_json_tok_t *tape;
  size_t ntape, tape_cap;
  char *strings; /* decoded escaped strings */
  size_t nstrings, strings_cap;
  size_t *open; /* the tape index of each container being read */
  size_t open_cap;
  const char *text; /* the document being parsed (borrowed) */
} kg_json_parser_t;

/* Parses the LEN bytes at TEXT into P's tape, containers nested at most MAX_DEPTH deep. Returns KG_OK, or
 * KG_EINVAL with ERRBUF saying "invalid JSON at byte N: ..." (N counted from 1). TEXT must stay alive while the
 * tape is read. */
int kg_json_parse_tape(kg_json_parser_t *p, const char *text, size_t len, int max_depth, char *errbuf);

/* The bytes of string token T of P's last parse. */
static inline const char *kg_json_tok_string(const kg_json_parser_t *p, const kg_json_tok_t *t) {
  return (t->type == KG_JSON_TOK_STRING ? p->text : p->strings) + t->v.off;
}

/* Frees P's buffers and zeroes it. */
void kg_json_parser_free(kg_json_parser_t *p);

/* ---- The tree, for the engine's own documents ---- */

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

/* Parses the LEN bytes at TEXT as one JSON value, nested at most 64 deep. Returns KG_OK with a new tree in *OUT
 * (free with kg_json_free), or KG_EINVAL with *OUT NULL and ERRBUF saying "WHAT: invalid JSON at byte N: ...", WHAT
 * being a file name or a description. */
int kg_json_parse(const char *text, size_t len, const char *what, kg_json_t **out, char *errbuf);
void kg_json_free(kg_json_t *value); /* NULL is a no-op */

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

/* ---- The writer ---- */

/* Appends the byte C to OUT. */
static inline void kg_json_put(kg_buf_t *out, char c) {
  char *w = kg_buf_reserve(out, 1);
  w[0] = c;
  w[1] = '\0';
  out->len++;
}

/* The string escaper: writes the N bytes at S, escaped as the inside of a JSON string (see the top of this file),
 * to OUT, which has room for CAP bytes, and returns how many it wrote. 6 * N bytes are always enough; with less,
 * it stops before the first character whose bytes or escape do not fit (never inside a UTF-8 sequence). It calls
 * nothing but memcpy, so that a signal handler may use it. */
size_t kg_json_escape(char *out, size_t cap, const char *s, size_t n);

/* Appends the N bytes at S to OUT as a JSON string: quoted, escaped by kg_json_escape. */
void kg_json_write_string(kg_buf_t *out, const char *s, size_t n);

/* Appends the NUL-terminated S to OUT as a JSON string, as kg_json_write_string does. */
void kg_json_string(kg_buf_t *out, const char *s);

/* Appends the N bytes at S to OUT as Avro's JSON encoding of bytes (and fixed) writes them: a JSON string of N
 * characters, each byte the code point of its value (U+0000 to U+00FF), so that bytes 0x80 to 0xFF become two bytes of
 * UTF-8; bytes below 0x80 are escaped as kg_json_escape escapes them. The text is valid UTF-8 whatever the bytes
 * are. */
void kg_json_write_bytes(kg_buf_t *out, const char *s, size_t n);

/* Decimals (Avro's decimal logical type) that kg_json_write_decimal writes: their bytes and their scale. */
#define KG_JSON_DECIMAL_MAX_BYTES 1024 /* up to 2,466 digits */
#define KG_JSON_DECIMAL_MAX_SCALE 4096

/* Appends the decimal whose unscaled value is the N bytes at S (a big-endian two's-complement integer, as Avro's
 * decimal holds it; no bytes is 0) and whose scale is SCALE to OUT as an exact JSON number in plain notation: the
 * integer's digits with a decimal point SCALE digits from the right ("-1234.50", "0.05", "7" for scale 0), never
 * through a double. Returns false, appending nothing, when N is above KG_JSON_DECIMAL_MAX_BYTES or SCALE is negative
 * or above KG_JSON_DECIMAL_MAX_SCALE. */
bool kg_json_write_decimal(kg_buf_t *out, const unsigned char *s, size_t n, long scale);

/* Appends D to OUT as the shortest JSON number that reads back as exactly D ("-0" for negative zero). Returns
 * false, appending nothing, for an infinity or NaN, which JSON cannot hold. */
bool kg_json_write_double(kg_buf_t *out, double d);

/* Appends D as kg_json_write_double does, and null for an infinity or NaN: the form of the engine's documents. */
void kg_json_double(kg_buf_t *out, double d);

/* Appends V (NEGATIVE: -V, V up to 2^63) to OUT in decimal. */
void kg_json_write_integer(kg_buf_t *out, uint64_t v, bool negative);

/* Appends the number of token T (KG_JSON_TOK_NUMBER, _INT or _UINT of a parse) to OUT as the shortest text that
 * reads back as exactly it. */
void kg_json_write_number(kg_buf_t *out, const kg_json_tok_t *t);

/* Appends the value at tape index AT of P's last parse (and what it holds) to OUT as JSON text, written by the
 * pieces above; returns the tape index after it. */
size_t kg_json_write_value(kg_buf_t *out, const kg_json_parser_t *p, size_t at);

/* The tape index after the value at AT of P's last parse (and what it holds). */
size_t kg_json_skip(const kg_json_parser_t *p, size_t at);

/* Appends the value of P's last parse to OUT as JSON text (kg_json_write_value: which is how the tests check that
 * what is written reads back the same). */
void kg_json_write_tape(kg_buf_t *out, const kg_json_parser_t *p);

/* ---- UTF-8 ---- */

/* Writes the UTF-8 encoding of code point CP (up to U+10FFFF; a surrogate is encoded as any other code point of
 * its size) to OUT, which has room for 4 bytes, and returns how many bytes it wrote (1 to 4). */
size_t kg_utf8_encode(char *out, uint32_t cp);

/* Whether the N bytes at S are UTF-8 (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF). */
bool kg_utf8_valid(const char *s, size_t n);

#endif
