/* json.c: the JSON reader of json.h, a recursive descent over the text with a depth bound, and exact numbers. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KG_JSON_MAX_DEPTH 64 /* deeper documents are refused rather than risking the stack */

typedef struct {
  const char *p, *start, *end;
  const char *what;
  char *errbuf;
  int depth;
} kg_json_reader_t;

static int bad(kg_json_reader_t *r, const char *msg) {
  return kg_fail(r->errbuf, KG_EINVAL, "%s: invalid JSON at byte %zu: %s", r->what, (size_t)(r->p - r->start), msg);
}

static void skip_space(kg_json_reader_t *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static bool literal(kg_json_reader_t *r, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n)) return false;
  r->p += n;
  return true;
}

static int hex4(kg_json_reader_t *r, unsigned *out) {
  if (r->end - r->p < 4) return bad(r, "a \\u escape needs four hex digits");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = *r->p++;
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return bad(r, "a \\u escape needs four hex digits");
  }
  *out = v;
  return KG_OK;
}

static void utf8(kg_buf_t *b, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xc0 | cp >> 6);
    u[1] = (char)(0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xe0 | cp >> 12);
    u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    u[2] = (char)(0x80 | (cp & 0x3f));
    n = 3;
  } else {
    u[0] = (char)(0xf0 | cp >> 18);
    u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    u[3] = (char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  kg_buf_append(b, u, n);
}

/* A string, after its opening quote, into *OUT (a new NUL-terminated buffer) and *LEN. */
static int string(kg_json_reader_t *r, char **out, size_t *len) {
  kg_buf_t b = {0};
  kg_buf_append(&b, "", 0);
  for (;;) {
    if (r->p >= r->end) {
      kg_buf_free(&b);
      return bad(r, "a string is not closed");
    }
    unsigned char c = (unsigned char)*r->p++;
    if (c == '"') break;
    if (c < 0x20) {
      r->p--;
      kg_buf_free(&b);
      return bad(r, "a control character in a string must be escaped");
    }
    if (c != '\\') {
      kg_buf_append(&b, &c, 1);
      continue;
    }
    if (r->p >= r->end) {
      kg_buf_free(&b);
      return bad(r, "a string is not closed");
    }
    char e = *r->p++;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k = strchr(from, e);
    if (e && k) {
      kg_buf_append(&b, &to[k - from], 1);
      continue;
    }
    unsigned cp;
    if (e != 'u' || hex4(r, &cp)) {
      kg_buf_free(&b);
      return e == 'u' ? KG_EINVAL : bad(r, "an unknown escape in a string");
    }
    if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low half must follow */
      unsigned lo;
      if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') {
        kg_buf_free(&b);
        return bad(r, "a surrogate pair is missing its second half");
      }
      r->p += 2;
      if (hex4(r, &lo) || lo < 0xdc00 || lo > 0xdfff) {
        kg_buf_free(&b);
        return bad(r, "a surrogate pair is missing its second half");
      }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
      kg_buf_free(&b);
      return bad(r, "a lone low surrogate");
    }
    utf8(&b, cp);
  }
  *out = b.data ? b.data : kg_xstrdup("");
  *len = b.len;
  return KG_OK;
}

static int number(kg_json_reader_t *r, kg_json_t *v) {
  const char *s = r->p;
  bool integral = true;
  if (r->p < r->end && *r->p == '-') r->p++;
  if (r->p >= r->end || *r->p < '0' || *r->p > '9') return bad(r, "a number needs a digit");
  if (*r->p == '0')
    r->p++;
  else
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
      r->p++;
  if (r->p < r->end && *r->p == '.') {
    integral = false;
    r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return bad(r, "a fraction needs a digit");
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
      r->p++;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    integral = false;
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return bad(r, "an exponent needs a digit");
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
      r->p++;
  }
  char tmp[64];
  size_t n = (size_t)(r->p - s);
  if (n >= sizeof tmp) return bad(r, "a number is too long");
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  v->type = KG_JSON_NUMBER;
  v->number = strtod(tmp, NULL);
  if (isinf(v->number)) {
    r->p = s;
    return bad(r, "a number is too large for a double");
  }
  if (integral) {
    errno = 0;
    long long i = strtoll(tmp, NULL, 10);
    if (errno == 0) {
      v->is_integer = true;
      v->integer = i;
    }
  }
  return KG_OK;
}

static int value(kg_json_reader_t *r, kg_json_t *v);

/* An array or object, after its opening bracket. */
static int container(kg_json_reader_t *r, kg_json_t *v, bool object) {
  if (++r->depth > KG_JSON_MAX_DEPTH) return bad(r, "nested too deep");
  v->type = object ? KG_JSON_OBJECT : KG_JSON_ARRAY;
  const char close = object ? '}' : ']';
  size_t cap = 0;
  skip_space(r);
  if (r->p < r->end && *r->p == close) {
    r->p++;
    r->depth--;
    return KG_OK;
  }
  for (;;) {
    if (v->count == cap) {
      cap = cap ? cap * 2 : 8;
      v->items = kg_xrealloc(v->items, cap * sizeof *v->items);
      if (object) v->keys = kg_xrealloc(v->keys, cap * sizeof *v->keys);
    }
    kg_json_t *item = &v->items[v->count];
    memset(item, 0, sizeof *item);
    skip_space(r);
    if (object) {
      if (r->p >= r->end || *r->p != '"') return bad(r, "an object key must be a string");
      r->p++;
      size_t klen;
      if (string(r, &v->keys[v->count], &klen)) return KG_EINVAL;
      v->count++; /* counted once its key exists, so that kg_json_free finds both */
      skip_space(r);
      if (r->p >= r->end || *r->p != ':') return bad(r, "a ':' must follow an object key");
      r->p++;
    } else {
      v->count++;
    }
    if (value(r, item)) return KG_EINVAL;
    skip_space(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == close) {
      r->p++;
      r->depth--;
      return KG_OK;
    }
    return bad(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int value(kg_json_reader_t *r, kg_json_t *v) {
  skip_space(r);
  if (r->p >= r->end) return bad(r, "a value is missing");
  switch (*r->p) {
  case '{': r->p++; return container(r, v, true);
  case '[': r->p++; return container(r, v, false);
  case '"':
    r->p++;
    v->type = KG_JSON_STRING;
    return string(r, &v->string, &v->length);
  case 't':
  case 'f':
    v->type = KG_JSON_BOOL;
    v->boolean = *r->p == 't';
    if (literal(r, v->boolean ? "true" : "false")) return KG_OK;
    return bad(r, "not a value");
  case 'n':
    if (literal(r, "null")) return KG_OK;
    return bad(r, "not a value");
  default: return number(r, v);
  }
}

static void clear(kg_json_t *v) {
  for (size_t i = 0; i < v->count; i++) {
    clear(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
}

void kg_json_free(kg_json_t *v) {
  if (!v) return;
  clear(v);
  free(v);
}

int kg_json_parse(const char *text, size_t len, const char *what, kg_json_t **out, char *errbuf) {
  kg_json_reader_t r = {.p = text, .start = text, .end = text + len, .what = what, .errbuf = errbuf};
  kg_json_t *v = kg_xcalloc(1, sizeof *v);
  int rc = value(&r, v);
  if (!rc) {
    skip_space(&r);
    if (r.p != r.end) rc = bad(&r, "text follows the value");
  }
  if (rc) {
    kg_json_free(v);
    v = NULL;
  }
  *out = v;
  return rc;
}

const kg_json_t *kg_json_get(const kg_json_t *obj, const char *key) {
  if (!obj || obj->type != KG_JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->count; i++)
    if (!strcmp(obj->keys[i], key)) return &obj->items[i];
  return NULL;
}

static int wrong(const char *what, const char *key, const char *expected, char *errbuf) {
  return kg_fail(errbuf, KG_EINVAL, "%s: \"%s\" must be %s", what, key, expected);
}

int kg_json_get_int(const kg_json_t *obj, const char *key, const char *what, int64_t *out, char *errbuf) {
  const kg_json_t *v = kg_json_get(obj, key);
  if (!v || v->type != KG_JSON_NUMBER || !v->is_integer) return wrong(what, key, "a whole number", errbuf);
  *out = v->integer;
  return KG_OK;
}

int kg_json_get_int_or_null(const kg_json_t *obj, const char *key, const char *what, bool *present, int64_t *out,
                            char *errbuf) {
  const kg_json_t *v = kg_json_get(obj, key);
  *present = false;
  if (v && v->type == KG_JSON_NULL) return KG_OK;
  *present = true;
  return kg_json_get_int(obj, key, what, out, errbuf);
}

int kg_json_get_double(const kg_json_t *obj, const char *key, const char *what, double *out, char *errbuf) {
  const kg_json_t *v = kg_json_get(obj, key);
  if (!v || v->type != KG_JSON_NUMBER) return wrong(what, key, "a number", errbuf);
  *out = v->number;
  return KG_OK;
}

int kg_json_get_bool(const kg_json_t *obj, const char *key, const char *what, bool *out, char *errbuf) {
  const kg_json_t *v = kg_json_get(obj, key);
  if (!v || v->type != KG_JSON_BOOL) return wrong(what, key, "true or false", errbuf);
  *out = v->boolean;
  return KG_OK;
}

int kg_json_get_string(const kg_json_t *obj, const char *key, const char *what, const char **out, char *errbuf) {
  const kg_json_t *v = kg_json_get(obj, key);
  if (!v || v->type != KG_JSON_STRING) return wrong(what, key, "a string", errbuf);
  *out = v->string;
  return KG_OK;
}

void kg_json_double(kg_buf_t *out, double d) {
  if (!isfinite(d)) {
    kg_buf_append(out, "null", 4);
    return;
  }
  if (fabs(d) < 9e15 && d == (double)(long long)d) { /* the range first: the cast of a larger value is undefined */
    kg_buf_appendf(out, "%lld", (long long)d);
    return;
  }
  char tmp[32];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(tmp, sizeof tmp, "%.*g", digits, d);
    if (strtod(tmp, NULL) == d) break;
  }
  kg_buf_appendf(out, "%s", tmp);
}
