/* test_jsoncodec.c: the scripts' JSON codec below Lua: the tape of a document, errors with their byte, strings
 * scanned eight bytes at a time wherever their special bytes fall, numbers read as strtod reads them and written so
 * that they read back exactly, and documents written from the tape that parse to the same tape. Documents are
 * parsed from heap copies of their exact length, so that a read past the end is a sanitizer report. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "jsoncodec.h"
#include "test.h"

static kg_jc_parser_t parser;

/* Parses TEXT (LEN bytes) from a copy of exactly that size. */
static int parse_n(const char *text, size_t len, int depth, char *err) {
  char *copy = kg_xmalloc(len ? len : 1);
  memcpy(copy, text, len);
  int rc = kg_jc_parse(&parser, copy, len, depth, err);
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
  if (kg_jc_parse(&parser, copy, strlen(copy), 1000, err)) {
    free(copy);
    return err;
  }
  kg_jc_write_tape(&out, &parser);
  free(copy);
  kg_buf_append(&out, "", 0);
  return out.data;
}

static void test_tape(void) {
  char err[KG_ERRLEN];
  const char *text = "{\"a\":[1,-2.5,true,false,null],\"b\":{\"c\":\"x\\ny\"},\"d\":[]}";
  char *copy = kg_xstrdup(text);
  CHECK_INT(kg_jc_parse(&parser, copy, strlen(copy), 1000, err), KG_OK);
  const kg_jc_tok_t *t = parser.tape;
  CHECK_INT(parser.ntape, 14);
  CHECK_INT(t[0].type, KG_JC_OBJECT);
  CHECK_INT(t[0].n, 3);
  CHECK_INT(t[1].type, KG_JC_STRING);
  CHECK(t[1].n == 1 && !memcmp(kg_jc_string(&parser, &t[1]), "a", 1));
  CHECK_INT(t[2].type, KG_JC_ARRAY);
  CHECK_INT(t[2].n, 5);
  CHECK(t[3].type == KG_JC_NUMBER && t[3].v.d == 1);
  CHECK(t[4].type == KG_JC_NUMBER && t[4].v.d == -2.5);
  CHECK_INT(t[5].type, KG_JC_TRUE);
  CHECK_INT(t[6].type, KG_JC_FALSE);
  CHECK_INT(t[7].type, KG_JC_NULL);
  CHECK_INT(t[9].type, KG_JC_OBJECT);
  CHECK_INT(t[9].n, 1);
  CHECK_INT(t[11].type, KG_JC_ESCAPED_STRING);
  CHECK(t[11].n == 3 && !memcmp(kg_jc_string(&parser, &t[11]), "x\ny", 3));
  CHECK_INT(t[13].type, KG_JC_ARRAY);
  CHECK_INT(t[13].n, 0);
  free(copy);
  CHECK_STR(written(text), text);

  /* 64-bit integers beyond 2^53. */
  copy = kg_xstrdup("[9007199254740993,-9223372036854775808,18446744073709551615,18446744073709551616]");
  CHECK_INT(kg_jc_parse(&parser, copy, strlen(copy), 1000, err), KG_OK);
  CHECK(parser.tape[1].type == KG_JC_INT && parser.tape[1].v.i == 9007199254740993LL);
  CHECK(parser.tape[2].type == KG_JC_INT && parser.tape[2].v.i == INT64_MIN);
  CHECK(parser.tape[3].type == KG_JC_UINT && parser.tape[3].v.u == UINT64_MAX);
  CHECK(parser.tape[4].type == KG_JC_NUMBER && parser.tape[4].v.d == 18446744073709551616.0);
  free(copy);
  CHECK_STR(written("[9007199254740993,-9223372036854775808,18446744073709551615]"),
            "[9007199254740993,-9223372036854775808,18446744073709551615]");
  /* A double above 2^53 is written with an exponent, so that it reads back as a double, not a 64-bit integer. */
  CHECK_STR(written("[11111111113330333.33333,9007199254740993.0,1e20]"),
            "[1.1111111113330334e+16,9007199254740992,1e+20]");
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
  const kg_jc_tok_t *t = &parser.tape[0];
  double got = t->type == KG_JC_NUMBER ? t->v.d : t->type == KG_JC_INT ? (double)t->v.i : (double)t->v.u;
  if (memcmp(&got, &want, sizeof got)) {
    fprintf(stderr, "%s read as %.17g, strtod says %.17g\n", s, got, want);
    CHECK(0);
  }
}

static void test_numbers(void) {
  static const char *cases[] = {"0", "-0", "0.5", "1e22", "1e23", "9007199254740993.5", "2.2250738585072011e-308",
                                "4.9e-324", "1.7976931348623157e308", "0.1e-22", "123456789e-30", "1e-22",
                                "100000000000000000000000000e-5", "0.000000000000000000000000000000001"};
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
    CHECK(kg_jc_write_double(&out, x.d));
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
  CHECK(!kg_jc_write_double(&out, NAN));
  CHECK(!kg_jc_write_double(&out, INFINITY));
  CHECK_INT(out.len, 0);
  CHECK(kg_jc_write_double(&out, -0.0));
  CHECK_STR(out.data, "-0");
  out.len = 0;
  kg_jc_write_integer(&out, (uint64_t)1 << 63, true);
  CHECK_STR(out.data, "-9223372036854775808");
  kg_buf_free(&out);
}

static void test_write_string(void) {
  kg_buf_t out = {0};
  kg_jc_write_string(&out, "a\"b\\c/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9", 16);
  CHECK_STR(out.data, "\"a\\\"b\\\\c/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\"");
  out.len = 0;
  kg_jc_write_string(&out, "", 0);
  CHECK_STR(out.data, "\"\"");
  out.len = 0;
  kg_jc_write_string(&out, "a\0b", 3);
  CHECK_STR(out.data, "\"a\\u0000b\"");
  kg_buf_free(&out);
  /* Every byte written reads back as itself. */
  char all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (char)i;
  kg_buf_t text = {0};
  kg_jc_write_string(&text, all, 256);
  char err[KG_ERRLEN];
  CHECK_INT(kg_jc_parse(&parser, text.data, text.len, 10, err), KG_OK);
  CHECK(parser.tape[0].n == 256 && !memcmp(kg_jc_string(&parser, &parser.tape[0]), all, 256));
  kg_buf_free(&text);
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
  test_errors();
  test_string_scan();
  test_numbers();
  test_write_string();
  test_round_trip();
  kg_jc_parser_free(&parser);
  printf("%d checks, %d failures\n", kg_test_checks, kg_test_failures);
  return kg_test_failures ? 1 : 0;
}
