/* json.c: the parser, the writer and the UTF-8 of json.h.
 *
 * The parser is one loop over the text with a stack of the containers being read (no recursion, so the depth
 * bound is the only limit on nesting). Numbers take a fast path when they are exact: an integer of up to 19
 * digits is read as one, and a decimal whose digits fit 2^53 with a power of ten up to 10^22 is one correctly
 * rounded multiplication or division of two exact doubles; anything else goes to strtod in the C locale (a
 * script may change the process's locale; JSON's decimal point is always '.'). The tree of kg_json_parse is built
 * from the tape, its strings copied. The writer prints a double with the fewest decimals that read back as exactly
 * it, found the same way, and otherwise with the fewest significant digits that strtod reads back as exactly it. */
#include "json.h"

#include "buf.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The C locale, for strtod_l and snprintf under uselocale. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void c_locale_init(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }
static locale_t the_c_locale(void) {
  pthread_once(&c_locale_once, c_locale_init);
  return c_locale;
}

/* Exact powers of ten as doubles: 10^22 is the largest. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define KG_JSON_EXACT (9007199254740992.0) /* 2^53: every integer up to it is a double */

/* Character classes of string bytes: 0 copied as they are, 1 the closing quote, 2 a backslash, 3 a control
 * character (must be escaped). */
static const unsigned char string_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
};

typedef struct {
  kg_json_parser_t *p;
  const char *start, *end;
  char *errbuf;
} reader_t;

static int bad(reader_t *r, const char *at, const char *msg) {
  return kg_fail(r->errbuf, KG_EINVAL, "invalid JSON at byte %zu: %s", (size_t)(at - r->start) + 1, msg);
}

/* The next token of the tape. */
static inline kg_json_tok_t *push(kg_json_parser_t *p, kg_json_tok_type_t type) {
  if (p->ntape == p->tape_cap) {
    p->tape_cap = p->tape_cap ? 2 * p->tape_cap : 64;
    p->tape = kg_xrealloc(p->tape, p->tape_cap * sizeof *p->tape);
  }
  kg_json_tok_t *t = &p->tape[p->ntape++];
  t->type = type;
  t->n = 0;
  return t;
}

static char *strings_reserve(kg_json_parser_t *p, size_t n) {
  if (p->nstrings + n > p->strings_cap || !p->strings) {
    size_t cap = p->strings_cap ? p->strings_cap : 256;
    while (cap < p->nstrings + n)
      cap *= 2;
    p->strings = kg_xrealloc(p->strings, cap);
    p->strings_cap = cap;
  }
  return p->strings + p->nstrings;
}

/* Where the first byte at or after S that ends a run of plain string bytes is (a quote, a backslash or a control
 * character), or END. Eight bytes at a time while they are there: in each word, a byte equal to '"' or '\\' or
 * below 0x20 sets the high bit of its lane in MASK, and the lowest lane set is exact (a borrow only reaches the
 * lanes above a true one). */
static inline const char *plain_run(const char *s, const char *end) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (end - s >= 8) {
    uint64_t x;
    memcpy(&x, s, 8);
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t mask = (((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x)) & highs;
    if (mask) return s + (__builtin_ctzll(mask) >> 3);
    s += 8;
  }
  while (s < end && !string_class[(unsigned char)*s])
    s++;
  return s;
}

static int hex4(reader_t *r, const char *s, unsigned *out) {
  if (r->end - s < 4) return bad(r, s - 2, "a \\u escape needs four hex digits");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char c = (unsigned char)s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      v |= (c | 0x20) - 'a' + 10;
    else
      return bad(r, s - 2, "a \\u escape needs four hex digits");
  }
  *out = v;
  return KG_OK;
}

size_t kg_utf8_encode(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* The rest of a string whose bytes from BEGIN to S hold no escape, S being at its first backslash: decoded into
 * the parser's buffer. *PP is left after the closing quote. */
static int escaped_string(reader_t *r, const char *begin, const char *s, const char **pp, kg_json_tok_t *t) {
  kg_json_parser_t *p = r->p;
  size_t off = p->nstrings;
  size_t n = (size_t)(s - begin);
  char *w = strings_reserve(p, n);
  if (n) memcpy(w, begin, n);
  p->nstrings += n;
  for (;;) {
    const char *run = s;
    s = plain_run(s, r->end);
    if (s > run) {
      memcpy(strings_reserve(p, (size_t)(s - run)), run, (size_t)(s - run));
      p->nstrings += (size_t)(s - run);
    }
    if (s >= r->end) return bad(r, r->end, "a string is not closed");
    unsigned char c = (unsigned char)*s;
    if (c == '"') break;
    if (c < 0x20) return bad(r, s, "a control character in a string must be escaped");
    /* A backslash. */
    if (s + 1 >= r->end) return bad(r, r->end, "a string is not closed");
    char e = s[1];
    char one = 0;
    switch (e) {
    case '"': one = '"'; break;
    case '\\': one = '\\'; break;
    case '/': one = '/'; break;
    case 'b': one = '\b'; break;
    case 'f': one = '\f'; break;
    case 'n': one = '\n'; break;
    case 'r': one = '\r'; break;
    case 't': one = '\t'; break;
    case 'u': break;
    default: return bad(r, s, "an unknown escape in a string");
    }
    if (e != 'u') {
      *strings_reserve(p, 1) = one;
      p->nstrings++;
      s += 2;
      continue;
    }
    unsigned cp;
    if (hex4(r, s + 2, &cp)) return KG_EINVAL;
    const char *at = s;
    s += 6;
    if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low half must follow */
      unsigned lo;
      if (r->end - s < 6 || s[0] != '\\' || s[1] != 'u' || hex4(r, s + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
        return bad(r, at, "a surrogate pair is missing its second half");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      s += 6;
    } else if (cp >= 0xdc00 && cp < 0xe000) {
      return bad(r, at, "a lone low surrogate");
    }
    p->nstrings += kg_utf8_encode(strings_reserve(p, 4), cp);
  }
  if (p->nstrings - off > UINT32_MAX) return bad(r, begin, "a string is longer than 4 GB");
  t->type = KG_JSON_TOK_ESCAPED_STRING;
  t->n = (uint32_t)(p->nstrings - off);
  t->v.off = off;
  *pp = s + 1;
  return KG_OK;
}

/* A string from *PP (just after its opening quote) into token T. */
static inline int string(reader_t *r, const char **pp, kg_json_tok_t *t) {
  const char *begin = *pp;
  const char *s = plain_run(begin, r->end);
  if (s < r->end && *s == '"') {
    if ((size_t)(s - begin) > UINT32_MAX) return bad(r, begin, "a string is longer than 4 GB");
    t->type = KG_JSON_TOK_STRING;
    t->n = (uint32_t)(s - begin);
    t->v.off = (size_t)(begin - r->p->text);
    *pp = s + 1;
    return KG_OK;
  }
  if (s >= r->end) return bad(r, r->end, "a string is not closed");
  if ((unsigned char)*s < 0x20) return bad(r, s, "a control character in a string must be escaped");
  return escaped_string(r, begin, s, pp, t);
}

static bool digit(char c) { return c >= '0' && c <= '9'; }

/* A number from *PP into token T. */
static int number(reader_t *r, const char **pp, kg_json_tok_t *t) {
  const char *s = *pp, *start = s, *end = r->end;
  bool negative = false;
  if (*s == '-') {
    negative = true;
    s++;
  }
  if (s >= end || !digit(*s)) return bad(r, start, negative ? "a '-' must be followed by a digit" : "expected a value");
  uint64_t m = 0;    /* the digits read, while they fit */
  int digits = 0;    /* significant digits in M (leading zeros are not) */
  bool exact = true; /* M holds every significant digit */
  int exp10 = 0;     /* the number is M * 10^exp10 (when exact) */
  if (*s == '0') {
    s++;
    if (s < end && digit(*s)) return bad(r, s, "a number must not start with 0 followed by digits");
  } else {
    for (; s < end && digit(*s); s++) {
      if (digits < 19) {
        m = m * 10 + (uint64_t)(*s - '0');
        digits++;
      } else if (digits == 19 && m <= (UINT64_MAX - (uint64_t)(*s - '0')) / 10) {
        m = m * 10 + (uint64_t)(*s - '0'); /* a 20th digit that fits a uint64_t */
        digits++;
      } else {
        exact = false;
        digits++;
      }
    }
  }
  bool integral = true;
  if (s < end && *s == '.') {
    integral = false;
    s++;
    if (s >= end || !digit(*s)) return bad(r, s, "a '.' must be followed by a digit");
    for (; s < end && digit(*s); s++) {
      if (m == 0 && *s == '0') {
        exp10--;
      } else if (digits < 19) {
        m = m * 10 + (uint64_t)(*s - '0');
        digits++;
        exp10--;
      } else if (*s != '0') {
        exact = false;
      }
    }
  }
  if (s < end && (*s == 'e' || *s == 'E')) {
    integral = false;
    s++;
    bool eneg = false;
    if (s < end && (*s == '+' || *s == '-')) eneg = *s++ == '-';
    if (s >= end || !digit(*s)) return bad(r, s, "an exponent must have a digit");
    int e = 0;
    for (; s < end && digit(*s); s++)
      if (e < 100000) e = e * 10 + (*s - '0');
    exp10 += eneg ? -e : e;
  }
  *pp = s;
  t->type = KG_JSON_TOK_NUMBER;
  if (integral && exact) {
    if (m <= (uint64_t)KG_JSON_EXACT) {
      t->n = 1;
      t->v.d = negative ? -(double)m : (double)m;
      return KG_OK;
    }
    if (negative && m <= (uint64_t)1 << 63) {
      t->type = KG_JSON_TOK_INT;
      t->v.i = (int64_t)(0 - m);
      return KG_OK;
    }
    if (!negative) {
      t->type = m <= (uint64_t)INT64_MAX ? KG_JSON_TOK_INT : KG_JSON_TOK_UINT;
      t->v.u = m;
      return KG_OK;
    }
  }
  if (exact && m <= (uint64_t)KG_JSON_EXACT && exp10 >= -22 && exp10 <= 22) {
    double d = (double)m;
    d = exp10 < 0 ? d / pow10_exact[-exp10] : d * pow10_exact[exp10];
    t->v.d = negative ? -d : d;
    return KG_OK;
  }
  char tmp[64], *copy = tmp;
  size_t n = (size_t)(s - start);
  if (n >= sizeof tmp) copy = kg_xmalloc(n + 1);
  memcpy(copy, start, n);
  copy[n] = '\0';
  double d = strtod_l(copy, NULL, the_c_locale());
  if (copy != tmp) free(copy);
  if (isinf(d)) return bad(r, start, "a number too large for a double");
  t->v.d = d;
  return KG_OK;
}

static inline const char *skip_space(const char *s, const char *end) {
  while (s < end && (unsigned char)*s <= ' ' && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
    s++;
  return s;
}

int kg_json_parse_tape(kg_json_parser_t *p, const char *text, size_t len, int max_depth, char *errbuf) {
  reader_t rd = {p, text, text + len, errbuf};
  reader_t *r = &rd;
  const char *s = text, *end = text + len;
  p->text = text;
  p->ntape = 0;
  p->nstrings = 0;
  size_t depth = 0; /* containers open */
  kg_json_tok_t *t;
  if (max_depth < 1) max_depth = 1;
  if (p->open_cap < (size_t)max_depth) {
    free(p->open);
    p->open = kg_xmalloc((size_t)max_depth * sizeof *p->open);
    p->open_cap = (size_t)max_depth;
  }

value:
  s = skip_space(s, end);
  if (s >= end) return bad(r, s, depth ? "a value is missing" : "no JSON value (the text is empty)");
  switch (*s) {
  case '"':
    s++;
    if (string(r, &s, push(p, KG_JSON_TOK_STRING))) return KG_EINVAL;
    break;
  case '{':
  case '[': {
    bool object = *s == '{';
    if (depth == (size_t)max_depth) return bad(r, s, "nested too deep");
    p->open[depth++] = p->ntape;
    push(p, object ? KG_JSON_TOK_OBJECT : KG_JSON_TOK_ARRAY);
    s = skip_space(s + 1, end);
    if (s < end && *s == (object ? '}' : ']')) {
      s++;
      depth--;
      break;
    }
    if (!object) goto value;
    goto key;
  }
  case 't':
    if (end - s < 4 || memcmp(s, "true", 4)) return bad(r, s, "expected a value");
    push(p, KG_JSON_TOK_TRUE);
    s += 4;
    break;
  case 'f':
    if (end - s < 5 || memcmp(s, "false", 5)) return bad(r, s, "expected a value");
    push(p, KG_JSON_TOK_FALSE);
    s += 5;
    break;
  case 'n':
    if (end - s < 4 || memcmp(s, "null", 4)) return bad(r, s, "expected a value");
    push(p, KG_JSON_TOK_NULL);
    s += 4;
    break;
  default:
    if (number(r, &s, push(p, KG_JSON_TOK_NUMBER))) return KG_EINVAL;
    break;
  }

next: /* after a value: the next item of the container it is in, its end, or the end of the text */
  if (!depth) {
    s = skip_space(s, end);
    if (s != end) return bad(r, s, "text follows the value");
    return KG_OK;
  }
  t = &p->tape[p->open[depth - 1]];
  if (t->n == UINT32_MAX) return bad(r, s, "a container holds more than 4 billion items");
  t->n++;
  s = skip_space(s, end);
  if (t->type == KG_JSON_TOK_ARRAY) {
    if (s < end && *s == ',') {
      s++;
      goto value;
    }
    if (s < end && *s == ']') {
      s++;
      depth--;
      goto next;
    }
    return bad(r, s, s < end ? "expected ',' or ']' after an array item" : "an array is not closed");
  }
  if (s < end && *s == ',') {
    s = skip_space(s + 1, end);
    goto key;
  }
  if (s < end && *s == '}') {
    s++;
    depth--;
    goto next;
  }
  return bad(r, s, s < end ? "expected ',' or '}' after an object member" : "an object is not closed");

key: /* at an object key, white space skipped */
  if (s >= end) return bad(r, s, "an object is not closed");
  if (*s != '"') return bad(r, s, "an object key must be a string");
  s++;
  if (string(r, &s, push(p, KG_JSON_TOK_STRING))) return KG_EINVAL;
  s = skip_space(s, end);
  if (s >= end || *s != ':') return bad(r, s, "expected ':' after an object key");
  s++;
  goto value;
}

void kg_json_parser_free(kg_json_parser_t *p) {
  free(p->tape);
  free(p->strings);
  free(p->open);
  memset(p, 0, sizeof *p);
}

/* How string bytes are written: 0 as they are, 'u' as \u00XX, else the letter of a two-byte escape. */
static const char escape_class[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f',  'r', 'u', 'u', 'u', 'u', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 0,    0,   '"', 0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,    0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,    0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\', 0,   0,   0,
};

/* kg_json_escape; ROOMY (a constant where it is inlined): CAP is known to be enough, so that the writers of strings
 * it is inlined into make no test of the room (a call, and the tests, cost gobblin.json's encode a tenth more). */
static inline __attribute__((always_inline)) size_t escape(char *out, size_t cap, const char *s, size_t n, bool roomy) {
  static const char hex[] = "0123456789abcdef";
  char *w = out, *wend = out + cap;
  const char *end = s + n;
  while (s < end) {
    const char *run = s;
    while (s < end && !escape_class[(unsigned char)*s])
      s++;
    size_t k = (size_t)(s - run);
    if (!roomy && k > (size_t)(wend - w)) { /* the room ends in this run: cut it before a character's first byte */
      k = (size_t)(wend - w);
      while (k && ((unsigned char)run[k] & 0xc0) == 0x80)
        k--;
      memcpy(w, run, k);
      return (size_t)(w + k - out);
    }
    memcpy(w, run, k);
    w += k;
    if (s == end) break;
    unsigned char c = (unsigned char)*s++;
    char e = escape_class[c];
    if (e != 'u') {
      if (!roomy && wend - w < 2) break;
      w[0] = '\\';
      w[1] = e;
      w += 2;
    } else {
      if (!roomy && wend - w < 6) break;
      memcpy(w, "\\u00", 4);
      w[4] = hex[c >> 4];
      w[5] = hex[c & 15];
      w += 6;
    }
  }
  return (size_t)(w - out);
}

size_t kg_json_escape(char *out, size_t cap, const char *s, size_t n) { return escape(out, cap, s, n, false); }

void kg_json_write_string(kg_buf_t *out, const char *s, size_t n) {
  /* At most 6 bytes for each byte, and the quotes. */
  char *w = kg_buf_reserve(out, n * 6 + 2), *start = w;
  *w++ = '"';
  w += escape(w, n * 6, s, n, true);
  *w++ = '"';
  out->len += (size_t)(w - start);
  *w = '\0';
}

void kg_json_string(kg_buf_t *out, const char *s) { kg_json_write_string(out, s, strlen(s)); }

void kg_json_write_bytes(kg_buf_t *out, const char *s, size_t n) {
  /* At most 6 bytes for each byte, and the quotes. */
  char *w = kg_buf_reserve(out, n * 6 + 2), *start = w;
  *w++ = '"';
  const char *end = s + n;
  while (s < end) {
    const char *run = s; /* bytes below 0x80, escaped as a string's */
    while (s < end && (unsigned char)*s < 0x80)
      s++;
    w += escape(w, (size_t)(s - run) * 6, run, (size_t)(s - run), true);
    for (; s < end && (unsigned char)*s >= 0x80; s++) /* U+0080 to U+00FF */
      w += kg_utf8_encode(w, (unsigned char)*s);
  }
  *w++ = '"';
  out->len += (size_t)(w - start);
  *w = '\0';
}

bool kg_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s, *end = u + n;
  while (u < end) {
    if (*u < 0x80) {
      u++;
      continue;
    }
    size_t len;
    unsigned cp, min;
    if ((*u & 0xe0) == 0xc0) {
      len = 2, cp = *u & 0x1f, min = 0x80;
    } else if ((*u & 0xf0) == 0xe0) {
      len = 3, cp = *u & 0x0f, min = 0x800;
    } else if ((*u & 0xf8) == 0xf0) {
      len = 4, cp = *u & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if ((size_t)(end - u) < len) return false;
    for (size_t i = 1; i < len; i++) {
      if ((u[i] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (u[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return false;
    u += len;
  }
  return true;
}

bool kg_json_write_decimal(kg_buf_t *out, const unsigned char *s, size_t n, long scale) {
  if (n > KG_JSON_DECIMAL_MAX_BYTES || scale < 0 || scale > KG_JSON_DECIMAL_MAX_SCALE) return false;
  bool negative = n && (s[0] & 0x80);
  /* The magnitude as 32-bit limbs, most significant first: the bytes, negated (inverted, plus one) when the value
   * is negative. */
  uint32_t limbs[(KG_JSON_DECIMAL_MAX_BYTES + 3) / 4];
  size_t nl = (n + 3) / 4;
  memset(limbs, 0, nl * sizeof *limbs);
  for (size_t i = 0; i < n; i++) {
    size_t from_end = n - 1 - i; /* the byte's place from the least significant */
    unsigned char b = negative ? (unsigned char)~s[i] : s[i];
    limbs[nl - 1 - from_end / 4] |= (uint32_t)b << (8 * (from_end % 4));
  }
  if (negative)
    for (size_t i = nl; i-- > 0;)
      if (++limbs[i]) break; /* a carry goes on to the next limb up */
  /* Groups of nine digits, least significant first, by dividing the magnitude by 10^9 until it is 0. */
  uint32_t groups[(KG_JSON_DECIMAL_MAX_BYTES * 8 * 30103 / 100000 + 9) / 9 + 1];
  size_t ng = 0, first = 0; /* FIRST: the first limb that is not 0 */
  while (first < nl && !limbs[first])
    first++;
  while (first < nl) {
    uint64_t rem = 0;
    for (size_t i = first; i < nl; i++) {
      uint64_t cur = rem << 32 | limbs[i];
      limbs[i] = (uint32_t)(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    groups[ng++] = (uint32_t)rem;
    while (first < nl && !limbs[first])
      first++;
  }
  /* The digits, most significant first, without leading zeros ("0" for zero). */
  char digits[sizeof groups / sizeof groups[0] * 9 + 1];
  size_t nd = 0;
  if (!ng) digits[nd++] = '0';
  for (size_t g = ng; g-- > 0;) {
    char nine[10];
    snprintf(nine, sizeof nine, g == ng - 1 ? "%u" : "%09u", groups[g]);
    size_t k = strlen(nine);
    memcpy(digits + nd, nine, k);
    nd += k;
  }
  size_t sc = (size_t)scale;
  char *w = kg_buf_reserve(out, nd + sc + 3), *start = w;
  if (negative) *w++ = '-';
  if (sc == 0) {
    memcpy(w, digits, nd);
    w += nd;
  } else if (nd > sc) {
    memcpy(w, digits, nd - sc);
    w += nd - sc;
    *w++ = '.';
    memcpy(w, digits + nd - sc, sc);
    w += sc;
  } else {
    *w++ = '0';
    *w++ = '.';
    memset(w, '0', sc - nd);
    w += sc - nd;
    memcpy(w, digits, nd);
    w += nd;
  }
  out->len += (size_t)(w - start);
  *w = '\0';
  return true;
}

/* Writes V in decimal ending just before END; returns where the digits start. */
static char *digits_before(char *end, uint64_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
  char *w = end;
  while (v >= 100) {
    unsigned k = (unsigned)(v % 100) * 2;
    v /= 100;
    w -= 2;
    w[0] = pairs[k];
    w[1] = pairs[k + 1];
  }
  if (v >= 10) {
    w -= 2;
    w[0] = pairs[v * 2];
    w[1] = pairs[v * 2 + 1];
  } else {
    *--w = (char)('0' + v);
  }
  return w;
}

void kg_json_write_integer(kg_buf_t *out, uint64_t v, bool negative) {
  char tmp[24], *end = tmp + sizeof tmp;
  char *w = digits_before(end, v);
  if (negative) *--w = '-';
  size_t n = (size_t)(end - w);
  memcpy(kg_buf_reserve(out, n), w, n);
  out->len += n;
  out->data[out->len] = '\0';
}

bool kg_json_write_double(kg_buf_t *out, double d) {
  if (!isfinite(d)) return false;
  double a = fabs(d);
  bool negative = signbit(d);
  if (a <= KG_JSON_EXACT && a == floor(a)) {
    kg_json_write_integer(out, (uint64_t)a, negative);
    return true;
  }
  /* The fewest decimals K for which an integer M has M / 10^K == D: both exact, so that division is the value
   * strtod gives the decimal M * 10^-K. */
  if (a < KG_JSON_EXACT && a >= 1e-7) {
    for (int k = 1; k <= 22; k++) {
      double scaled = a * pow10_exact[k];
      if (scaled >= KG_JSON_EXACT) break;
      double mi = nearbyint(scaled);
      if (mi / pow10_exact[k] != a) continue;
      char tmp[48], *end = tmp + sizeof tmp;
      char *w = digits_before(end, (uint64_t)mi);
      while (end - w <= k) /* at least one digit before the point */
        *--w = '0';
      size_t n = (size_t)(end - w), whole = n - (size_t)k;
      char *o = kg_buf_reserve(out, n + 2);
      if (negative) *o++ = '-';
      memcpy(o, w, whole);
      o[whole] = '.';
      memcpy(o + whole + 1, w + whole, (size_t)k);
      out->len += n + 1 + (negative ? 1 : 0);
      out->data[out->len] = '\0';
      return true;
    }
  }
  /* Significant digits: a decimal of at most 15 of them that reads as a normal double is what %.15g gives back,
   * so the first of 15, 16 and 17 that reads back is the shortest; a subnormal double (below DBL_MIN) has fewer
   * digits of its own, found by bisection (a precision that reads back makes every larger one read back). A
   * double above 2^53 is written with an exponent: as plain digits it would read back as a 64-bit integer. */
  char tmp[40];
  locale_t old = uselocale(the_c_locale());
  bool big = a > KG_JSON_EXACT;
  int lo = 15, hi = 17;
  if (a < DBL_MIN || big) lo = 1;
  while (lo < hi) {
    int mid = lo == 15 ? 15 : (lo + hi) / 2;
    snprintf(tmp, sizeof tmp, big ? "%.*e" : "%.*g", big ? mid - 1 : mid, d);
    if (strtod_l(tmp, NULL, c_locale) == d)
      hi = mid;
    else
      lo = mid + 1;
  }
  snprintf(tmp, sizeof tmp, big ? "%.*e" : "%.*g", big ? lo - 1 : lo, d);
  uselocale(old);
  size_t n = strlen(tmp);
  memcpy(kg_buf_reserve(out, n), tmp, n);
  out->len += n;
  out->data[out->len] = '\0';
  return true;
}

void kg_json_double(kg_buf_t *out, double d) {
  if (!kg_json_write_double(out, d)) kg_buf_append(out, "null", 4);
}

void kg_json_write_number(kg_buf_t *out, const kg_json_tok_t *t) {
  if (t->type == KG_JSON_TOK_INT)
    kg_json_write_integer(out, t->v.i < 0 ? 0 - t->v.u : t->v.u, t->v.i < 0);
  else if (t->type == KG_JSON_TOK_UINT)
    kg_json_write_integer(out, t->v.u, false);
  else
    kg_json_write_double(out, t->v.d); /* finite: the parser refuses a number a double cannot hold */
}

size_t kg_json_write_value(kg_buf_t *out, const kg_json_parser_t *p, size_t at) {
  const kg_json_tok_t *t = &p->tape[at++];
  switch (t->type) {
  case KG_JSON_TOK_NULL: kg_buf_append(out, "null", 4); break;
  case KG_JSON_TOK_FALSE: kg_buf_append(out, "false", 5); break;
  case KG_JSON_TOK_TRUE: kg_buf_append(out, "true", 4); break;
  case KG_JSON_TOK_NUMBER:
  case KG_JSON_TOK_INT:
  case KG_JSON_TOK_UINT: kg_json_write_number(out, t); break;
  case KG_JSON_TOK_STRING:
  case KG_JSON_TOK_ESCAPED_STRING: kg_json_write_string(out, kg_json_tok_string(p, t), t->n); break;
  case KG_JSON_TOK_ARRAY:
  case KG_JSON_TOK_OBJECT:
    kg_json_put(out, t->type == KG_JSON_TOK_ARRAY ? '[' : '{');
    for (uint32_t i = 0; i < t->n; i++) {
      if (i) kg_json_put(out, ',');
      if (t->type == KG_JSON_TOK_OBJECT) {
        const kg_json_tok_t *k = &p->tape[at++];
        kg_json_write_string(out, kg_json_tok_string(p, k), k->n);
        kg_json_put(out, ':');
      }
      at = kg_json_write_value(out, p, at);
    }
    kg_json_put(out, t->type == KG_JSON_TOK_ARRAY ? ']' : '}');
    break;
  }
  return at;
}

size_t kg_json_skip(const kg_json_parser_t *p, size_t at) {
  const kg_json_tok_t *t = &p->tape[at++];
  if (t->type != KG_JSON_TOK_ARRAY && t->type != KG_JSON_TOK_OBJECT) return at;
  for (uint32_t i = 0; i < t->n; i++) {
    if (t->type == KG_JSON_TOK_OBJECT) at++; /* the key */
    at = kg_json_skip(p, at);
  }
  return at;
}

void kg_json_write_tape(kg_buf_t *out, const kg_json_parser_t *p) {
  if (p->ntape) kg_json_write_value(out, p, 0);
}

/* ---- The tree ---- */

#define KG_JSON_DOC_MAX_DEPTH 64 /* the engine's documents are shallow: deeper ones are refused */

static char *copy_bytes(const char *s, size_t n) {
  char *c = kg_xmalloc(n + 1);
  if (n) memcpy(c, s, n);
  c[n] = '\0';
  return c;
}

/* Fills V with the value at tape index *POS of P, moving *POS past it. */
static void tree_of(const kg_json_parser_t *p, size_t *pos, kg_json_t *v) {
  const kg_json_tok_t *t = &p->tape[(*pos)++];
  switch (t->type) {
  case KG_JSON_TOK_NULL: v->type = KG_JSON_NULL; return;
  case KG_JSON_TOK_FALSE:
  case KG_JSON_TOK_TRUE:
    v->type = KG_JSON_BOOL;
    v->boolean = t->type == KG_JSON_TOK_TRUE;
    return;
  case KG_JSON_TOK_NUMBER:
    v->type = KG_JSON_NUMBER;
    v->number = t->v.d;
    v->is_integer = t->n == 1; /* and within 2^53 */
    if (v->is_integer) v->integer = (int64_t)t->v.d;
    return;
  case KG_JSON_TOK_INT:
    v->type = KG_JSON_NUMBER;
    v->number = (double)t->v.i;
    v->is_integer = true;
    v->integer = t->v.i;
    return;
  case KG_JSON_TOK_UINT:
    v->type = KG_JSON_NUMBER;
    v->number = (double)t->v.u;
    return;
  case KG_JSON_TOK_STRING:
  case KG_JSON_TOK_ESCAPED_STRING:
    v->type = KG_JSON_STRING;
    v->string = copy_bytes(kg_json_tok_string(p, t), t->n);
    v->length = t->n;
    return;
  case KG_JSON_TOK_ARRAY:
  case KG_JSON_TOK_OBJECT: {
    bool object = t->type == KG_JSON_TOK_OBJECT;
    v->type = object ? KG_JSON_OBJECT : KG_JSON_ARRAY;
    v->count = t->n;
    if (!t->n) return;
    v->items = kg_xcalloc(t->n, sizeof *v->items);
    if (object) v->keys = kg_xcalloc(t->n, sizeof *v->keys);
    for (uint32_t i = 0; i < t->n; i++) {
      if (object) {
        const kg_json_tok_t *k = &p->tape[(*pos)++];
        v->keys[i] = copy_bytes(kg_json_tok_string(p, k), k->n);
      }
      tree_of(p, pos, &v->items[i]);
    }
    return;
  }
  }
}

int kg_json_parse(const char *text, size_t len, const char *what, kg_json_t **out, char *errbuf) {
  kg_json_parser_t p = {0};
  char err[KG_ERRLEN];
  *out = NULL;
  if (kg_json_parse_tape(&p, text, len, KG_JSON_DOC_MAX_DEPTH, err)) {
    kg_json_parser_free(&p);
    return kg_fail(errbuf, KG_EINVAL, "%s: %s", what, err);
  }
  kg_json_t *v = kg_xcalloc(1, sizeof *v);
  size_t pos = 0;
  tree_of(&p, &pos, v);
  kg_json_parser_free(&p);
  *out = v;
  return KG_OK;
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
