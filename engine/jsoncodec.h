/* jsoncodec.h: the JSON codec of scripts (gobblin.json), the part that does not touch Lua: a parser that turns a
 * document into a tape of tokens, and the pieces of the writer (strings, numbers). lua_bridge.c builds Lua values
 * from the tape and walks Lua values to write them; json.c is the engine's own reader of its documents.
 *
 * The parser takes RFC 8259 JSON (one value, white space around it allowed): strings with their escapes decoded
 * to UTF-8 (\uXXXX, surrogate pairs joined; a lone surrogate is an error), numbers as exact as they can be (see
 * kg_jc_tok_t), true, false, null, and arrays and objects nested up to a depth bound. Bytes of strings are taken as
 * they are (they are not checked to be UTF-8). An error names the byte where the text stops being JSON. */
#ifndef KG_JSONCODEC_H
#define KG_JSONCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kg_common.h"

typedef enum {
  KG_JC_NULL,
  KG_JC_FALSE,
  KG_JC_TRUE,
  KG_JC_NUMBER, /* a double: every number but the integers below (integers up to 2^53 in size are exact doubles) */
  KG_JC_INT,    /* an integer beyond 2^53 in size that fits an int64_t, kept exactly */
  KG_JC_UINT,   /* an integer above INT64_MAX that fits a uint64_t, kept exactly */
  KG_JC_STRING, /* bytes in the text itself (no escape in them) */
  KG_JC_ESCAPED_STRING, /* bytes decoded from escapes, in the parser's own buffer (kg_jc_string) */
  KG_JC_ARRAY,          /* followed by its N items */
  KG_JC_OBJECT,         /* followed by its N members, each a key (a string token) and a value */
} kg_jc_type_t;

/* One token of the tape, in document order: a container comes before what it holds. */
typedef struct {
  uint32_t type; /* kg_jc_type_t */
  uint32_t n;    /* strings: their length in bytes; arrays and objects: their items or members */
  union {
    double d;   /* KG_JC_NUMBER */
    int64_t i;  /* KG_JC_INT */
    uint64_t u; /* KG_JC_UINT */
    size_t off; /* strings: where their bytes start, in the text or in the parser's buffer */
  } v;
} kg_jc_tok_t;

/* A parser, reused from document to document (its buffers grow to the largest). */
typedef struct {
  kg_jc_tok_t *tape;
  size_t ntape, tape_cap;
  char *strings; /* decoded escaped strings */
  size_t nstrings, strings_cap;
  size_t *open; /* the tape index of each container being read */
  size_t open_cap;
  const char *text; /* the document being parsed (borrowed) */
} kg_jc_parser_t;

/* Parses the LEN bytes at TEXT into P's tape, containers nested at most MAX_DEPTH deep. Returns KG_OK, or
 * KG_EINVAL with ERRBUF saying "invalid JSON at byte N: ..." (N counted from 1). TEXT must stay alive while the
 * tape is read. */
int kg_jc_parse(kg_jc_parser_t *p, const char *text, size_t len, int max_depth, char *errbuf);

/* The bytes of string token T of P's last parse. */
static inline const char *kg_jc_string(const kg_jc_parser_t *p, const kg_jc_tok_t *t) {
  return (t->type == KG_JC_STRING ? p->text : p->strings) + t->v.off;
}

void kg_jc_parser_free(kg_jc_parser_t *p);

/* The bytes the next parse on this thread reads when it is given none (kg_ffi_json_source): a record's payload
 * straight from the fetch buffer, without a Lua string made of it. kg_jc_take_source hands them over once. */
void kg_jc_set_source(const char *data, size_t len);
bool kg_jc_take_source(const char **data, size_t *len);

/* The JSON text the next kg_ffi_json_emit on this thread writes: encoded by gobblin.json straight into a buffer
 * of the encoder's, handed to the writer without a Lua string made of it. Taken once. */
void kg_jc_set_output(const char *data, size_t len);
bool kg_jc_take_output(const char **data, size_t *len);

/* Appends the byte C to OUT. */
static inline void kg_jc_put(kg_buf_t *out, char c) {
  char *w = kg_buf_reserve(out, 1);
  w[0] = c;
  w[1] = '\0';
  out->len++;
}

/* Appends the N bytes at S to OUT as a JSON string: quoted, with '"', '\' and control characters escaped. */
void kg_jc_write_string(kg_buf_t *out, const char *s, size_t n);

/* Appends the N bytes at S to OUT as Avro's JSON encoding of bytes (and fixed) writes them: a JSON string of N
 * characters, each byte the code point of its value (U+0000 to U+00FF), so that bytes 0x80 to 0xFF become two bytes of
 * UTF-8; '"', '\' and control characters are escaped as kg_jc_write_string escapes them. The text is valid UTF-8
 * whatever the bytes are. */
void kg_jc_write_bytes(kg_buf_t *out, const char *s, size_t n);

/* Whether the N bytes at S are UTF-8 (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF). */
bool kg_jc_utf8_valid(const char *s, size_t n);

/* Decimals (Avro's decimal logical type) that kg_jc_write_decimal writes: their bytes and their scale. */
#define KG_JC_DECIMAL_MAX_BYTES 1024 /* up to 2,466 digits */
#define KG_JC_DECIMAL_MAX_SCALE 4096

/* Appends the decimal whose unscaled value is the N bytes at S (a big-endian two's-complement integer, as Avro's
 * decimal holds it; no bytes is 0) and whose scale is SCALE to OUT as an exact JSON number in plain notation: the
 * integer's digits with a decimal point SCALE digits from the right ("-1234.50", "0.05", "7" for scale 0), never
 * through a double. Returns false, appending nothing, when N is above KG_JC_DECIMAL_MAX_BYTES or SCALE is negative or
 * above KG_JC_DECIMAL_MAX_SCALE. */
bool kg_jc_write_decimal(kg_buf_t *out, const unsigned char *s, size_t n, long scale);

/* Appends D to OUT as the shortest JSON number that reads back as exactly D ("-0" for negative zero). Returns
 * false, appending nothing, for an infinity or NaN, which JSON cannot hold. */
bool kg_jc_write_double(kg_buf_t *out, double d);

/* Appends V (NEGATIVE: -V, V up to 2^63) to OUT in decimal. */
void kg_jc_write_integer(kg_buf_t *out, uint64_t v, bool negative);

/* Appends the value of P's last parse to OUT as JSON text, written by the pieces above (which is how the tests
 * check that what is written reads back the same). */
void kg_jc_write_tape(kg_buf_t *out, const kg_jc_parser_t *p);

#endif
