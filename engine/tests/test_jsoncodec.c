/* test_jsoncodec.c: the scripts' JSON codec: below Lua, json.h's tape of a document, errors with their byte, strings
 * scanned eight bytes at a time wherever their special bytes fall, numbers read as strtod reads them and written so
 * that they read back exactly, documents written from the tape that parse to the same tape, Avro's bytes and
 * decimals written as JSON; and through Lua (gobblin.json's core in lua_bridge.c), documents decoded and encoded
 * back to the same text, [] and {} and the order of keys kept, whatever shapes the cache of shapes has seen.
 * Documents are parsed from heap copies of their exact length, so that a read past the end is a sanitizer report. */
#include <float.h>
#include <inttypes.h>
#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdlib.h>

#include "buf.h"
#include "json.h"
#include "test.h"

int kg_lua_open_json(lua_State *L); /* lua_bridge.c */

static kg_json_parser_t parser;

/* Parses TEXT (LEN bytes) from a copy of exactly that size. */
static int parse_n(const char *text, size_t len, int depth, char *err) {
  char *copy = kg_xmalloc(len ? len : 1);
  memcpy(copy, text, len);
  int rc = kg_json_parse_tape(&parser, copy, len, depth, err);
  free(copy); /* the tape's own strings point into it: callers read only types, counts and numbers */
  return rc;
}

static int parse(const char *text, char *err) { return parse_n(text, strlen(text), 1000, err); }

/* TEXT parsed and written back from the tape (or the error). */
static const char *written(const char *text) {
  static kg_buf_t out;
  out.len = 0;
  char *copy = kg_xstrdup(text);
  static char err[KG_ERRLEN];
  if (kg_json_parse_tape(&parser, copy, strlen(copy), 1000, err)) {
    free(copy);
    return err;
  }
  kg_json_write_tape(&out, &parser);
  free(copy);
  kg_buf_append(&out, "", 0);
  return out.data;
}

static void test_tape(void) {
  char err[KG_ERRLEN];
  const char *text = "{\"a\":[1,-2.5,true,false,null],\"b\":{\"c\":\"x\\ny\"},\"d\":[]}";
  char *copy = kg_xstrdup(text);
  CHECK_INT(kg_json_parse_tape(&parser, copy, strlen(copy), 1000, err), KG_OK);
  const kg_json_tok_t *t = parser.tape;
  CHECK_INT(parser.ntape, 14);
  CHECK_INT(t[0].type, KG_JSON_TOK_OBJECT);
  CHECK_INT(t[0].n, 3);
  CHECK_INT(t[1].type, KG_JSON_TOK_STRING);
  CHECK(t[1].n == 1 && !memcmp(kg_json_tok_string(&parser, &t[1]), "a", 1));
  CHECK_INT(t[2].type, KG_JSON_TOK_ARRAY);
  CHECK_INT(t[2].n, 5);
  CHECK(t[3].type == KG_JSON_TOK_NUMBER && t[3].v.d == 1);
  CHECK(t[4].type == KG_JSON_TOK_NUMBER && t[4].v.d == -2.5);
  CHECK_INT(t[5].type, KG_JSON_TOK_TRUE);
  CHECK_INT(t[6].type, KG_JSON_TOK_FALSE);
  CHECK_INT(t[7].type, KG_JSON_TOK_NULL);
  CHECK_INT(t[9].type, KG_JSON_TOK_OBJECT);
  CHECK_INT(t[9].n, 1);
  CHECK_INT(t[11].type, KG_JSON_TOK_ESCAPED_STRING);
  CHECK(t[11].n == 3 && !memcmp(kg_json_tok_string(&parser, &t[11]), "x\ny", 3));
  CHECK_INT(t[13].type, KG_JSON_TOK_ARRAY);
  CHECK_INT(t[13].n, 0);
  free(copy);
  CHECK_STR(written(text), text);

  /* 64-bit integers beyond 2^53. */
  copy = kg_xstrdup("[9007199254740993,-9223372036854775808,18446744073709551615,18446744073709551616]");
  CHECK_INT(kg_json_parse_tape(&parser, copy, strlen(copy), 1000, err), KG_OK);
  CHECK(parser.tape[1].type == KG_JSON_TOK_INT && parser.tape[1].v.i == 9007199254740993LL);
  CHECK(parser.tape[2].type == KG_JSON_TOK_INT && parser.tape[2].v.i == INT64_MIN);
  CHECK(parser.tape[3].type == KG_JSON_TOK_UINT && parser.tape[3].v.u == UINT64_MAX);
  CHECK(parser.tape[4].type == KG_JSON_TOK_NUMBER && parser.tape[4].v.d == 18446744073709551616.0);
  free(copy);
  CHECK_STR(written("[9007199254740993,-9223372036854775808,18446744073709551615]"),
            "[9007199254740993,-9223372036854775808,18446744073709551615]");
  /* A double above 2^53 is written with an exponent, so that it reads back as a double, not a 64-bit integer. */
  CHECK_STR(written("[11111111113330333.33333,9007199254740993.0,1e20]"),
            "[1.1111111113330334e+16,9007199254740992,1e+20]");
}

/* One value of a tape written, and skipped, from its index: both end at the index after it. */
static void test_values(void) {
  char err[KG_ERRLEN];
  const char *text = "{\"a\":[1,-2.5,true,false,null],\"b\":{\"c\":\"x\\ny\"},\"d\":[],\"e\":-9223372036854775808}";
  char *copy = kg_xstrdup(text);
  CHECK_INT(kg_json_parse_tape(&parser, copy, strlen(copy), 1000, err), KG_OK);
  static const struct {
    size_t at, after;
    const char *json;
  } cases[] = {
      {0, 16, NULL},
      {2, 8, "[1,-2.5,true,false,null]"},
      {4, 5, "-2.5"},
      {9, 12, "{\"c\":\"x\\ny\"}"},
      {11, 12, "\"x\\ny\""},
      {13, 14, "[]"},
      {15, 16, "-9223372036854775808"},
  };
  kg_buf_t out = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    out.len = 0;
    CHECK_INT(kg_json_write_value(&out, &parser, cases[i].at), cases[i].after);
    CHECK_INT(kg_json_skip(&parser, cases[i].at), cases[i].after);
    kg_buf_append(&out, "", 0);
    CHECK_STR(out.data, cases[i].json ? cases[i].json : text);
  }
  out.len = 0;
  kg_json_write_number(&out, &parser.tape[15]);
  kg_buf_append(&out, "", 0);
  CHECK_STR(out.data, "-9223372036854775808");
  kg_buf_free(&out);
  free(copy);
}

static void test_errors(void) {
  static const struct {
    const char *text;
    const char *error;
  } cases[] = {
      {"", "invalid JSON at byte 1: no JSON value (the text is empty)"},
      {"{\"a\":1", "invalid JSON at byte 7: an object is not closed"},
      {"[1,2", "invalid JSON at byte 5: an array is not closed"},
      {"\"abcdefghijklmnop", "invalid JSON at byte 18: a string is not closed"},
      {"\"abcdefghij\\", "invalid JSON at byte 13: a string is not closed"},
      {"\"abcdefghij\\u00", "invalid JSON at byte 12: a \\u escape needs four hex digits"},
      {"\"abcdefghij\\ud800\\u", "invalid JSON at byte 12: a surrogate pair is missing its second half"},
      {"\"abcdefgh\x01\"", "invalid JSON at byte 10: a control character in a string must be escaped"},
      {"\"abc\\\"def\x1f\"", "invalid JSON at byte 10: a control character in a string must be escaped"},
      {"-", "invalid JSON at byte 1: a '-' must be followed by a digit"},
      {"1.", "invalid JSON at byte 3: a '.' must be followed by a digit"},
      {"1e+", "invalid JSON at byte 4: an exponent must have a digit"},
      {"1e309", "invalid JSON at byte 1: a number too large for a double"},
      {"[1] [2]", "invalid JSON at byte 5: text follows the value"},
      {"tr", "invalid JSON at byte 1: expected a value"},
      {"fals", "invalid JSON at byte 1: expected a value"},
  };
  char err[KG_ERRLEN];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK_INT(parse(cases[i].text, err), KG_EINVAL);
    CHECK_STR(err, cases[i].error);
  }
  /* The depth bound. */
  CHECK_INT(parse_n("[[[1]]]", 7, 3, err), KG_OK);
  CHECK_INT(parse_n("[[[[1]]]]", 9, 3, err), KG_EINVAL);
  CHECK_STR(err, "invalid JSON at byte 4: nested too deep");
}

/* A string of LEN plain bytes with SPECIAL at AT (or none when AT >= LEN), inside quotes, read at every offset of
 * an eight-byte word. */
static void test_string_scan(void) {
  char err[KG_ERRLEN];
  for (size_t len = 0; len < 40; len++) {
    for (size_t at = 0; at <= len; at++) {
      for (int kind = 0; kind < 4; kind++) {
        char text[64];
        text[0] = '"';
        for (size_t i = 0; i < len; i++)
          text[1 + i] = (char)('a' + (i % 26));
        /* 0: none; 1: an escaped quote; 2: a control character (an error); 3: bytes above 0x7f (plain) */
        if (at < len && kind == 1) {
          text[1 + at] = '\\';
          if (at + 1 < len) text[2 + at] = '"';
        }
        if (at < len && kind == 2) text[1 + at] = '\t';
        if (at < len && kind == 3) text[1 + at] = (char)0xe9;
        text[1 + len] = '"';
        int rc = parse_n(text, len + 2, 10, err);
        bool lone_backslash = kind == 1 && at < len && at + 1 == len; /* \" at the end: the string is not closed */
        if (kind == 2 && at < len) {
          CHECK_INT(rc, KG_EINVAL);
          char want[96];
          snprintf(want, sizeof want, "invalid JSON at byte %zu: a control character in a string must be escaped",
                   at + 2);
          CHECK_STR(err, want);
        } else if (lone_backslash) {
          CHECK_INT(rc, KG_EINVAL);
        } else {
          CHECK_INT(rc, KG_OK);
          size_t want = len - (kind == 1 && at < len ? 1 : 0);
          CHECK_INT(parser.tape[0].n, want);
        }
      }
    }
  }
}

/* Reads S as strtod does. */
static void check_read(const char *s) {
  char err[KG_ERRLEN];
  if (parse(s, err) != KG_OK) {
    fprintf(stderr, "%s: %s\n", s, err);
    CHECK(0);
    return;
  }
  double want = strtod(s, NULL);
  const kg_json_tok_t *t = &parser.tape[0];
  double got = t->type == KG_JSON_TOK_NUMBER ? t->v.d : t->type == KG_JSON_TOK_INT ? (double)t->v.i : (double)t->v.u;
  if (memcmp(&got, &want, sizeof got)) {
    fprintf(stderr, "%s read as %.17g, strtod says %.17g\n", s, got, want);
    CHECK(0);
  }
}

static void test_numbers(void) {
  static const char *cases[] = {"0",
                                "-0",
                                "0.5",
                                "1e22",
                                "1e23",
                                "9007199254740993.5",
                                "2.2250738585072011e-308",
                                "4.9e-324",
                                "1.7976931348623157e308",
                                "0.1e-22",
                                "123456789e-30",
                                "1e-22",
                                "100000000000000000000000000e-5",
                                "0.000000000000000000000000000000001"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_read(cases[i]);
  srand(22);
  for (int i = 0; i < 100000; i++) {
    char s[64];
    int n = 0;
    if (rand() % 2) s[n++] = '-';
    int digits = 1 + rand() % 20;
    s[n++] = (char)('1' + rand() % 9);
    int point = rand() % (digits + 1);
    for (int d = 1; d < digits; d++) {
      if (d == point) s[n++] = '.';
      s[n++] = (char)('0' + rand() % 10);
    }
    n += snprintf(s + n, sizeof s - (size_t)n, "e%d", rand() % 60 - 30);
    check_read(s);
  }

  /* Written so that they read back exactly, and with no more digits than %.17g needs. */
  kg_buf_t out = {0};
  union {
    double d;
    uint64_t u;
  } x;
  for (int i = 0; i < 200000; i++) {
    if (i % 3 == 0) {
      x.u = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
      if (!isfinite(x.d)) continue;
    } else if (i % 3 == 1) {
      x.d = (double)(rand() % 2000001 - 1000000) / pow(10, rand() % 12);
    } else {
      x.d = (double)rand() / RAND_MAX * pow(10, rand() % 600 - 300);
    }
    out.len = 0;
    CHECK(kg_json_write_double(&out, x.d));
    double back = strtod(out.data, NULL);
    if (memcmp(&back, &x.d, sizeof back)) {
      fprintf(stderr, "%.17g written as %s\n", x.d, out.data);
      CHECK(0);
    }
    char g17[40];
    snprintf(g17, sizeof g17, "%.17g", x.d);
    size_t digits = 0, g17digits = 0;
    for (const char *p = out.data; *p && *p != 'e'; p++)
      digits += *p >= '0' && *p <= '9';
    for (const char *p = g17; *p && *p != 'e'; p++)
      g17digits += *p >= '0' && *p <= '9';
    /* Leading zeros of a small number written without an exponent are not digits %.17g would count. */
    if (!strchr(out.data, 'e') && fabs(x.d) < 1) digits = strlen(out.data) - strspn(out.data, "-0.");
    CHECK(digits <= g17digits);
  }
  out.len = 0;
  CHECK(!kg_json_write_double(&out, NAN));
  CHECK(!kg_json_write_double(&out, INFINITY));
  CHECK_INT(out.len, 0);
  CHECK(kg_json_write_double(&out, -0.0));
  CHECK_STR(out.data, "-0");
  out.len = 0;
  kg_json_write_integer(&out, (uint64_t)1 << 63, true);
  CHECK_STR(out.data, "-9223372036854775808");
  kg_buf_free(&out);
}

static void test_write_string(void) {
  kg_buf_t out = {0};
  kg_json_write_string(&out, "a\"b\\c/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9", 16);
  CHECK_STR(out.data, "\"a\\\"b\\\\c/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\"");
  out.len = 0;
  kg_json_write_string(&out, "", 0);
  CHECK_STR(out.data, "\"\"");
  out.len = 0;
  kg_json_write_string(&out, "a\0b", 3);
  CHECK_STR(out.data, "\"a\\u0000b\"");
  kg_buf_free(&out);
  /* Every byte written reads back as itself. */
  char all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (char)i;
  kg_buf_t text = {0};
  kg_json_write_string(&text, all, 256);
  char err[KG_ERRLEN];
  CHECK_INT(kg_json_parse_tape(&parser, text.data, text.len, 10, err), KG_OK);
  CHECK(parser.tape[0].n == 256 && !memcmp(kg_json_tok_string(&parser, &parser.tape[0]), all, 256));
  kg_buf_free(&text);
}

static void test_write_bytes(void) {
  kg_buf_t out = {0};
  kg_json_write_bytes(&out, "a\x00\x7f\x80\xff\"\\\n\x1f", 9);
  CHECK_STR(out.data, "\"a\\u0000\x7f\xc2\x80\xc3\xbf\\\"\\\\\\n\\u001f\"");
  out.len = 0;
  kg_json_write_bytes(&out, "", 0);
  CHECK_STR(out.data, "\"\"");
  /* Every byte: the text parses as one string of 256 characters, the Nth the code point N. */
  char all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (char)i;
  out.len = 0;
  kg_json_write_bytes(&out, all, 256);
  char err[KG_ERRLEN];
  CHECK_INT(kg_json_parse_tape(&parser, out.data, out.len, 10, err), KG_OK);
  const unsigned char *u = (const unsigned char *)kg_json_tok_string(&parser, &parser.tape[0]);
  size_t n = parser.tape[0].n, at = 0;
  int chars = 0;
  bool same = true;
  while (at < n) {
    unsigned cp = u[at] < 0x80 ? u[at] : (unsigned)(u[at] & 0x1f) << 6 | (u[at + 1] & 0x3f);
    same = same && cp == (unsigned)chars && (u[at] < 0x80 || (u[at] & 0xe0) == 0xc0);
    at += u[at] < 0x80 ? 1 : 2;
    chars++;
  }
  CHECK(same);
  CHECK_INT(chars, 256);
  CHECK_INT(n, 128 + 2 * 128);
  kg_buf_free(&out);
}

static void test_utf8_valid(void) {
  static const struct {
    const char *s;
    bool valid;
  } cases[] = {
      {"", true},
      {"plain", true},
      {"\xc3\xa9", true},
      {"\xe2\x82\xac", true},
      {"\xf0\x9f\x98\x80", true},
      {"\xf4\x8f\xbf\xbf", true},
      {"\xef\xbf\xbf", true},
      {"\x7f", true},
      {"\x80", false},
      {"\xc3", false},
      {"\xc3\x28", false},
      {"\xc0\x80", false},
      {"\xe0\x80\x80", false},
      {"\xed\xa0\x80", false},
      {"\xf4\x90\x80\x80", false},
      {"\xf8\x88\x80\x80\x80", false},
      {"\xff", false},
      {"a\xe2\x82", false},
      {"\xf0\x9f\x98", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (kg_utf8_valid(cases[i].s, strlen(cases[i].s)) != cases[i].valid) {
      fprintf(stderr, "utf8 case %zu\n", i);
      CHECK(false);
    }
  CHECK(kg_utf8_valid("a\0b", 3));
}

static void test_write_decimal(void) {
  static const struct {
    const char *bytes;
    size_t n;
    long scale;
    const char *text;
  } cases[] = {
      {"", 0, 0, "0"},
      {"", 0, 2, "0.00"},
      {"\x00", 1, 3, "0.000"},
      {"\x01", 1, 0, "1"},
      {"\x7f", 1, 2, "1.27"},
      {"\x4b\x3b\x4c\xa8\x5a\x86\xc4\x7a\x09\x8a\x22\x3f\xff\xff\xff\xff", 16, 2,
       "999999999999999999999999999999999999.99"},
      {"\xb4\xc4\xb3\x57\xa5\x79\x3b\x85\xf6\x75\xdd\xc0\x00\x00\x00\x01", 16, 10,
       "-9999999999999999999999999999.9999999999"},
      {"\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
       "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
       32, 0, "-57896044618658097711785492504343953926634992332820282019728792003956564819968"},
      {"\x7f\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
       "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
       32, 5, "578960446186580977117854925043439539266349923328202820197287920039565648.19967"},
      {"\xff", 1, 3, "-0.001"},
      {"\x80", 1, 0, "-128"},
      {"\x00\xff", 2, 1, "25.5"},
      {"\x02\x9d\x42\xb6\x4e\x76\x71\x42\x44\xcb", 10, 4, "1234567890123456789.0123"},
      {"\x0d\xe0\xb6\xb3\xa7\x64\x00\x00", 8, 18, "1.000000000000000000"},
      {"\xff\xff\xff\xfb", 4, 2, "-0.05"},
  };
  kg_buf_t out = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    out.len = 0;
    CHECK(kg_json_write_decimal(&out, (const unsigned char *)cases[i].bytes, cases[i].n, cases[i].scale));
    CHECK_STR(out.data, cases[i].text);
  }
  /* Random values of 1 to 8 bytes, against printf. */
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = 1 + x % 8;
    unsigned char b[8];
    uint64_t u = 0;
    for (size_t k = 0; k < n; k++) {
      b[k] = (unsigned char)(x >> (8 * k + 3));
      u = u << 8 | b[k];
    }
    bool negative = b[0] & 0x80;
    uint64_t mask = n == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * n)) - 1;
    uint64_t mag = negative ? (~u + 1) & mask : u; /* what N bytes of two's complement hold */
    long scale = (long)((x >> 20) % 23);
    char want[64], digits[32];
    snprintf(digits, sizeof digits, "%0*" PRIu64, (int)scale + 1, mag);
    size_t nd = strlen(digits);
    snprintf(want, sizeof want, "%s%.*s%s%s", negative ? "-" : "", (int)(nd - (size_t)scale), digits, scale ? "." : "",
             digits + nd - scale);
    out.len = 0;
    CHECK(kg_json_write_decimal(&out, b, n, scale));
    if (strcmp(out.data, want)) {
      CHECK_STR(out.data, want);
      break;
    }
  }
  /* Bounds: nothing written. */
  static unsigned char big[KG_JSON_DECIMAL_MAX_BYTES + 1];
  big[0] = 0x80;
  out.len = 0;
  CHECK(kg_json_write_decimal(&out, big, KG_JSON_DECIMAL_MAX_BYTES, 0));
  CHECK_INT(out.len, 1 + 2466); /* -2^8191, the largest: its sign and 2,466 digits */
  CHECK(!strncmp(out.data, "-5453740678097079647", 20));
  out.len = 0;
  CHECK(!kg_json_write_decimal(&out, big, KG_JSON_DECIMAL_MAX_BYTES + 1, 0));
  CHECK(!kg_json_write_decimal(&out, big, 1, -1));
  CHECK(!kg_json_write_decimal(&out, big, 1, KG_JSON_DECIMAL_MAX_SCALE + 1));
  CHECK(kg_json_write_decimal(&out, (const unsigned char *)"\x05", 1, KG_JSON_DECIMAL_MAX_SCALE));
  CHECK_INT(out.len, 2 + KG_JSON_DECIMAL_MAX_SCALE);
  kg_buf_free(&out);
}

/* A Lua state with gobblin.json's core as the global "core", and rt(text): the text of
 * core.encode(core.decode(text)). */
static lua_State *json_state_new(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  lua_pushcfunction(L, kg_lua_open_json);
  lua_call(L, 0, 1);
  lua_setglobal(L, "core");
  if (luaL_dostring(L, "function rt(s) return core.encode(core.decode(s)) end")) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    abort();
  }
  return L;
}

/* The result of Lua's rt(TEXT), or its error; valid until the next call. */
static const char *round_trip(lua_State *L, const char *text) {
  lua_settop(L, 0);
  lua_getglobal(L, "rt");
  lua_pushstring(L, text);
  lua_pcall(L, 1, 1, 0);
  return lua_tostring(L, -1);
}

/* Appends a random JSON value to OUT, compact as the encoder writes it: objects with keys drawn from a small set (so
 * that shapes repeat across documents and at other places), some beyond the key cache's length, arrays, and empty
 * ones of both. */
static uint64_t rnd_state = 7;
static unsigned rnd(unsigned n) {
  rnd_state ^= rnd_state << 13, rnd_state ^= rnd_state >> 7, rnd_state ^= rnd_state << 17;
  return (unsigned)(rnd_state % n);
}
static void random_value(kg_buf_t *out, int depth) {
  static const char *const keys[] = {"id",   "a",     "zz",     "user",
                                     "",     "ts",    "k\\\"q", "a_key_longer_than_thirty_bytes_for_sure",
                                     "tags", "attrs", "b",      "score"};
  unsigned r = rnd(depth > 3 ? 4 : 7);
  switch (r) {
  case 0: kg_buf_appendf(out, "%d", (int)rnd(2001) - 1000); return;
  case 1: kg_buf_appendf(out, "\"s%u\"", rnd(50)); return;
  case 2: kg_buf_append(out, rnd(2) ? "true" : "null", 4); return;
  case 3: kg_buf_append(out, "false", 5); return;
  case 4: {
    unsigned n = rnd(4);
    kg_json_put(out, '[');
    for (unsigned i = 0; i < n; i++) {
      if (i) kg_json_put(out, ',');
      random_value(out, depth + 1);
    }
    kg_json_put(out, ']');
    return;
  }
  default: {
    unsigned n = rnd(6), used = 0;
    kg_json_put(out, '{');
    for (unsigned i = 0; i < n; i++) {
      unsigned k = rnd(sizeof keys / sizeof keys[0]);
      if (used & 1u << k) continue; /* each key once */
      if (used) kg_json_put(out, ',');
      used |= 1u << k;
      kg_buf_appendf(out, "\"%s\":", keys[k]);
      random_value(out, depth + 1);
    }
    kg_json_put(out, '}');
    return;
  }
  }
}

static void test_lua_round_trip(void) {
  lua_State *L = json_state_new();
  static const char *docs[] = {
      "{\"id\":1,\"tags\":[],\"attrs\":{}}",
      "{\"z\":1,\"a\":2,\"m\":{\"q\":1,\"b\":[1,{}]}}",
      "{\"a\":2,\"z\":1}", /* the same keys in the other order, at the same places */
      "[{\"x\":1,\"y\":2},{\"y\":3,\"x\":4},{\"x\":5,\"y\":6},{}]",
      "[[],{},[[]],[{}],{\"\":{}}]",
      "{\"\":1,\"a_key_longer_than_thirty_bytes_for_sure\":2,\"b\":3}",
      "{\"k\\\"q\\u0001\":[true,false,null],\"s\":\"x\\ny\"}",
      "{\"a\":{\"a\":{\"a\":1,\"b\":[]},\"b\":{}},\"b\":{\"a\":{},\"b\":2}}", /* one shape within itself */
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
    CHECK_STR(round_trip(L, docs[i]), docs[i]);
  /* The markers as scripts use them, through Lua. */
  static const struct {
    const char *chunk, *text;
  } marked[] = {
      {"return core.encode({ tags = core.empty_array })", "{\"tags\":[]}"},
      {"return core.encode(setmetatable({}, core.array_mt))", "[]"},
      {"return core.encode(setmetatable({}, core.object_mt))", "{}"},
      {"return core.encode(setmetatable({ b = 1, a = 2, c = 3 }, core.order({ 'c', 'a' })))",
       "{\"c\":3,\"a\":2,\"b\":1}"},
      {"local t = core.decode('{\"z\":[],\"y\":{}}'); t.x = 1; t.y = nil; return core.encode(t)", "{\"z\":[],\"x\":1}"},
      {"return tostring(getmetatable(core.decode('{\"p\":1,\"q\":2}')) == core.order({ 'p', 'q' }))", "true"},
  };
  for (size_t i = 0; i < sizeof marked / sizeof marked[0]; i++) {
    lua_settop(L, 0);
    if (luaL_dostring(L, marked[i].chunk)) fprintf(stderr, "%s\n", lua_tostring(L, -1));
    CHECK_STR(lua_tostring(L, -1), marked[i].text);
  }
  /* An object of more keys than the key cache holds, keys beyond it included, twice (the second time from the
   * cache). */
  kg_buf_t doc = {0};
  for (int pass = 0; pass < 2; pass++) {
    doc.len = 0;
    kg_json_put(&doc, '{');
    for (int k = 0; k < 600; k++)
      kg_buf_appendf(&doc, "%s\"k%d\":%d", k ? "," : "", (k * 7919) % 600, k);
    kg_json_put(&doc, '}');
    CHECK_STR(round_trip(L, doc.data), doc.data);
  }
  /* Random documents through one state, so that its caches of keys and shapes meet every case. */
  bool all = true;
  for (int i = 0; i < 20000 && all; i++) {
    doc.len = 0;
    random_value(&doc, 0);
    kg_buf_append(&doc, "", 0);
    const char *got = round_trip(L, doc.data);
    all = got && !strcmp(got, doc.data);
    if (!all) CHECK_STR(got, doc.data);
  }
  CHECK(all);
  kg_buf_free(&doc);
  lua_close(L);
}

static void test_round_trip(void) {
  static const char *docs[] = {
      "{\"id\":1,\"user\":\"user-000001\",\"event\":\"page_view\",\"ts\":1700000000001,\"score\":0.143}",
      "[[],[[]],{},{\"\":\"\"},[null,true,false],-0,0.30000000000000004,5e-324,1e+300]",
      "{\"s\":\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\"}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    char *first = kg_xstrdup(written(docs[i]));
    CHECK_STR(written(first), first);
    free(first);
  }
}

int main(void) {
  test_tape();
  test_values();
  test_errors();
  test_string_scan();
  test_numbers();
  test_write_string();
  test_round_trip();
  test_write_bytes();
  test_utf8_valid();
  test_write_decimal();
  test_lua_round_trip();
  kg_json_parser_free(&parser);
  printf("%d checks, %d failures\n", kg_test_checks, kg_test_failures);
  return kg_test_failures ? 1 : 0;
}
