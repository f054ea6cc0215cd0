/* hadoop_token.c: keytabs' principals, base64url, and Hadoop credentials files of one delegation token
 * (hadoop_token.h). */
#include "hadoop_token.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- keytabs ------------------------------------------------------------------------------------------- */

/* A reader of big-endian fields over LEN bytes; OK turns false at the first read past the end. */
typedef struct {
  const unsigned char *p;
  size_t len, at;
  bool ok;
} reader_t;

static bool take(reader_t *r, size_t n, const unsigned char **out) {
  if (!r->ok || !r->p || r->len - r->at < n) return r->ok = false;
  *out = r->p + r->at;
  r->at += n;
  return true;
}

static uint32_t be(reader_t *r, size_t n) {
  const unsigned char *b;
  if (!take(r, n, &b)) return 0;
  uint32_t v = 0;
  for (size_t i = 0; i < n; i++)
    v = v << 8 | b[i];
  return v;
}

/* A counted octet string of a keytab (a 16-bit length, then the bytes), appended to OUT. */
static void counted(reader_t *r, kg_buf_t *out) {
  uint32_t n = be(r, 2);
  const unsigned char *b;
  if (take(r, n, &b)) kg_buf_append(out, b, n);
}

void kg_keytab_principals_free(char **names, size_t count) {
  for (size_t i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

int kg_keytab_principals_parse(const void *data, size_t len, const char *what, char ***names, size_t *count,
                               char *errbuf) {
  *names = NULL;
  *count = 0;
  reader_t r = {.p = data, .len = len, .ok = true};
  uint32_t version = be(&r, 2);
  if (!r.ok || (version != 0x502 && version != 0x501))
    return kg_fail(errbuf, KG_EINVAL, "%s is not a Kerberos keytab (it does not start with 0x0502)", what);
  char **out = NULL;
  size_t n = 0;
  while (r.ok && r.at < len) {
    int32_t size = (int32_t)be(&r, 4);
    if (!r.ok) break;
    size_t entry_end = r.at + (size_t)(size < 0 ? -(int64_t)size : size);
    if (entry_end > len) {
      r.ok = false;
      break;
    }
    if (size > 0) { /* a negative size is a hole left by a removed entry */
      reader_t e = {.p = r.p, .len = entry_end, .at = r.at, .ok = true};
      uint32_t components = be(&e, 2);
      if (version == 0x501) components--; /* 0x501 counts the realm among the components */
      kg_buf_t realm = {0}, name = {0};
      counted(&e, &realm);
      for (uint32_t c = 0; e.ok && c < components; c++) {
        if (c) kg_buf_append(&name, "/", 1);
        counted(&e, &name);
      }
      if (!e.ok || !components) {
        kg_buf_free(&realm);
        kg_buf_free(&name);
        r.ok = false;
        break;
      }
      kg_buf_append(&name, "@", 1);
      kg_buf_append(&name, realm.data, realm.len);
      kg_buf_append(&name, "", 1);
      kg_buf_free(&realm);
      bool seen = false;
      for (size_t i = 0; i < n && !seen; i++)
        seen = !strcmp(out[i], name.data);
      if (seen) {
        kg_buf_free(&name);
      } else {
        out = kg_xrealloc(out, (n + 1) * sizeof *out);
        out[n++] = name.data;
      }
    }
    r.at = entry_end;
  }
  if (!r.ok) {
    kg_keytab_principals_free(out, n);
    return kg_fail(errbuf, KG_EINVAL, "%s is not a Kerberos keytab (an entry is cut short)", what);
  }
  *names = out;
  *count = n;
  return KG_OK;
}

int kg_keytab_principals(const char *path, char ***names, size_t *count, char *errbuf) {
  *names = NULL;
  *count = 0;
  size_t len = 0;
  int error = 0;
  char *data = kg_read_file(path, &len, &error);
  if (!data) return kg_fail(errbuf, KG_EIO, "cannot read %s: %s", path, strerror(error ? error : EIO));
  int rc = kg_keytab_principals_parse(data, len, path, names, count, errbuf);
  /* The keys are secrets: the copy in memory goes. */
  memset(data, 0, len);
  free(data);
  return rc;
}

int kg_keytab_principal_matches(const char *wanted, const char *name) {
  if (!strcmp(wanted, name)) return 1;
  if (strchr(wanted, '@')) return 0;
  size_t n = strlen(wanted);
  return !strncmp(wanted, name, n) && name[n] == '@';
}

/* ---- base64url ----------------------------------------------------------------------------------------- */

static int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-' || c == '+') return 62;
  if (c == '_' || c == '/') return 63;
  return -1;
}

int kg_base64url_decode(const char *text, kg_buf_t *out) {
  size_t n = strlen(text);
  while (n && text[n - 1] == '=')
    n--;
  if (n % 4 == 1) return KG_EINVAL;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = sextet(text[i]);
    if (v < 0) return KG_EINVAL;
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      unsigned char byte = (unsigned char)(acc >> bits);
      kg_buf_append(out, &byte, 1);
    }
  }
  return KG_OK;
}

void kg_base64url_encode(const void *data, size_t len, kg_buf_t *out) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const unsigned char *p = data;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    acc = acc << 8 | p[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      kg_buf_append(out, &alphabet[(acc >> bits) & 63], 1);
    }
  }
  if (bits) kg_buf_append(out, &alphabet[(acc << (6 - bits)) & 63], 1);
}

/* ---- Hadoop's Writable encoding ------------------------------------------------------------------------ */

/* WritableUtils.writeVLong. */
static void put_vint(kg_buf_t *out, int64_t v) {
  unsigned char b[9];
  if (v >= -112 && v <= 127) {
    b[0] = (unsigned char)(int8_t)v;
    kg_buf_append(out, b, 1);
    return;
  }
  int len = -112;
  if (v < 0) {
    v ^= -1;
    len = -120;
  }
  for (int64_t t = v; t; t >>= 8)
    len--;
  b[0] = (unsigned char)(int8_t)len;
  int bytes = len < -120 ? -(len + 120) : -(len + 112);
  for (int i = 0; i < bytes; i++)
    b[1 + i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
  kg_buf_append(out, b, (size_t)bytes + 1);
}

/* WritableUtils.readVLong; fails R past the end. */
static int64_t get_vint(reader_t *r) {
  const unsigned char *b;
  if (!take(r, 1, &b)) return 0;
  int8_t first = (int8_t)b[0];
  if (first >= -112) return first;
  bool negative = first < -120;
  int bytes = negative ? -(first + 120) : -(first + 112);
  if (!take(r, (size_t)bytes, &b)) return 0;
  int64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v = (int64_t)((uint64_t)v << 8 | b[i]);
  return negative ? v ^ -1 : v;
}

/* A byte string of Writable form (a vint length, then the bytes): where it starts and its length, in *AT and
 * *LEN. */
static bool get_bytes(reader_t *r, const unsigned char **at, size_t *len) {
  int64_t n = get_vint(r);
  if (!r->ok || n < 0) return r->ok = false;
  *len = (size_t)n;
  return take(r, (size_t)n, at);
}

/* The four fields of a Token's Writable form (identifier, password, kind, service): the span they take, from *AT
 * for *LEN bytes, and the kind and the service. */
static bool get_token(reader_t *r, const unsigned char **start, size_t *len, const unsigned char **kind,
                      size_t *kind_len, const unsigned char **service, size_t *service_len) {
  const unsigned char *b;
  size_t n;
  if (!r->p) return r->ok = false; /* no bytes at all */
  *start = r->p + r->at;
  size_t from = r->at;
  if (!get_bytes(r, &b, &n) || !get_bytes(r, &b, &n) || !get_bytes(r, kind, kind_len) ||
      !get_bytes(r, service, service_len))
    return false;
  *len = r->at - from;
  return true;
}

int kg_hadoop_token_describe(const char *token, char **kind, char **service) {
  *kind = *service = NULL;
  kg_buf_t raw = {0};
  int rc = kg_base64url_decode(token, &raw);
  reader_t r = {.p = (const unsigned char *)raw.data, .len = raw.len, .ok = true};
  const unsigned char *start, *k, *s;
  size_t len, klen, slen;
  if (!rc && get_token(&r, &start, &len, &k, &klen, &s, &slen) && r.at == raw.len) {
    *kind = kg_xstrndup((const char *)k, klen);
    *service = kg_xstrndup((const char *)s, slen);
  } else {
    rc = KG_EINVAL;
  }
  kg_buf_free(&raw);
  return rc;
}

int kg_hadoop_token_set_service(const char *token, const char *service, char **out) {
  *out = NULL;
  kg_buf_t raw = {0};
  int rc = kg_base64url_decode(token, &raw);
  reader_t r = {.p = (const unsigned char *)raw.data, .len = raw.len, .ok = true};
  const unsigned char *start, *k, *s;
  size_t len, klen, slen;
  if (!rc && get_token(&r, &start, &len, &k, &klen, &s, &slen) && r.at == raw.len) {
    /* The identifier, the password and the kind as they are; then the new service. */
    kg_buf_t bytes = {0}, text = {0};
    kg_buf_append(&bytes, raw.data, (size_t)(k + klen - start));
    put_vint(&bytes, (int64_t)strlen(service));
    kg_buf_append(&bytes, service, strlen(service));
    kg_base64url_encode(bytes.data, bytes.len, &text);
    memset(bytes.data, 0, bytes.len);
    kg_buf_free(&bytes);
    *out = kg_xstrndup(text.data, text.len);
    memset(text.data, 0, text.len);
    kg_buf_free(&text);
  } else {
    rc = KG_EINVAL;
  }
  if (raw.data) memset(raw.data, 0, raw.len);
  kg_buf_free(&raw);
  return rc;
}

int kg_hadoop_creds_build(const char *alias, const char *token, kg_buf_t *out, char *errbuf) {
  kg_buf_t raw = {0};
  int rc = kg_base64url_decode(token, &raw);
  reader_t r = {.p = (const unsigned char *)raw.data, .len = raw.len, .ok = true};
  const unsigned char *start, *k, *s;
  size_t len, klen, slen;
  if (rc || !get_token(&r, &start, &len, &k, &klen, &s, &slen) || r.at != raw.len) {
    kg_buf_free(&raw);
    return kg_fail(errbuf, KG_EINVAL, "the delegation token is not a Hadoop token in its URL-safe form");
  }
  kg_buf_append(out, "HDTS", 4);
  kg_buf_append(out, "\0", 1); /* the Writable form */
  put_vint(out, 1);            /* one token */
  put_vint(out, (int64_t)strlen(alias));
  kg_buf_append(out, alias, strlen(alias));
  kg_buf_append(out, raw.data, raw.len);
  put_vint(out, 0); /* no secret keys */
  memset(raw.data, 0, raw.len);
  kg_buf_free(&raw);
  return KG_OK;
}

int kg_hadoop_creds_find(const void *data, size_t len, const char *what, const char *alias, char **token, char **kind,
                         char *errbuf) {
  *token = NULL;
  if (kind) *kind = NULL;
  reader_t r = {.p = data, .len = len, .ok = true};
  const unsigned char *b;
  if (!take(&r, 5, &b) || memcmp(b, "HDTS", 4))
    return kg_fail(errbuf, KG_EINVAL, "%s is not a Hadoop credentials file (it does not start with HDTS)", what);
  if (b[4] != 0)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s is a Hadoop credentials file of form %u, which kingest does not read (it reads the Writable "
                   "form, 0)",
                   what, b[4]);
  int64_t tokens = get_vint(&r);
  for (int64_t i = 0; r.ok && i < tokens; i++) {
    const unsigned char *a, *start, *k, *s;
    size_t alen, tlen, klen, slen;
    if (!get_bytes(&r, &a, &alen) || !get_token(&r, &start, &tlen, &k, &klen, &s, &slen)) break;
    if (alen == strlen(alias) && !memcmp(a, alias, alen)) {
      kg_buf_t text = {0};
      kg_base64url_encode(start, tlen, &text);
      kg_buf_append(&text, "", 1);
      *token = text.data;
      if (kind) *kind = kg_xstrndup((const char *)k, klen);
      return KG_OK;
    }
  }
  if (!r.ok || tokens < 0) return kg_fail(errbuf, KG_EINVAL, "%s is not a Hadoop credentials file (cut short)", what);
  return kg_fail(errbuf, KG_ENOTFOUND, "%s holds no token of alias %s", what, alias);
}
