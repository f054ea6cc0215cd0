/* sigv4.c: AWS Signature Version 4 (sigv4.h). */
#include "sigv4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sha256.h"

void kg_sigv4_date(long long now_s, char out[17]) {
  time_t t = (time_t)now_s;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* One header for the canonical request: its name lowercased, its value trimmed with inner runs of blanks made one. */
typedef struct {
  char *name;
  char *value;
} header_t;

static int header_cmp(const void *a, const void *b) {
  return strcmp(((const header_t *)a)->name, ((const header_t *)b)->name);
}

static int param_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *trimmed(const char *s, size_t len) {
  kg_buf_t b = {0};
  while (len && (*s == ' ' || *s == '\t'))
    s++, len--;
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
    len--;
  for (size_t i = 0; i < len; i++) {
    if ((s[i] == ' ' || s[i] == '\t') && i && (s[i - 1] == ' ' || s[i - 1] == '\t')) continue;
    kg_buf_append(&b, s[i] == '\t' ? " " : &s[i], 1);
  }
  kg_buf_append(&b, "", 0);
  return b.data ? b.data : kg_xstrdup("");
}

int kg_sigv4_sign(const char *method, const char *url, const char *const *headers, const char *payload,
                  const char *amz_date, const char *region, const char *service, const kg_sigv4_keys_t *keys,
                  bool content_sha256, kg_http_headers_t *add, char **canonical_out, char *errbuf) {
  if (canonical_out) *canonical_out = NULL;
  const char *authority = strstr(url, "://");
  if (!authority) return kg_fail(errbuf, KG_EINVAL, "cannot sign %s: not an absolute URL", url);
  authority += 3;
  size_t alen = strcspn(authority, "/?#");
  const char *path = authority + alen;
  size_t plen = strcspn(path, "?#");
  const char *query = path[plen] == '?' ? path + plen + 1 : "";
  size_t qlen = strcspn(query, "#");

  /* The headers signed: Host, the request's own, and the ones this adds (but Authorization). */
  size_t n = 0, cap = 4;
  for (const char *const *h = headers; h && *h; h++)
    cap++;
  header_t *hs = kg_xcalloc(cap, sizeof *hs);
  hs[n++] = (header_t){kg_xstrdup("host"), kg_xstrndup(authority, alen)};
  for (const char *const *h = headers; h && *h; h++) {
    const char *colon = strchr(*h, ':');
    if (!colon) continue;
    char *name = kg_xstrndup(*h, (size_t)(colon - *h));
    for (char *c = name; *c; c++)
      if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    hs[n++] = (header_t){name, trimmed(colon + 1, strlen(colon + 1))};
  }
  hs[n++] = (header_t){kg_xstrdup("x-amz-date"), kg_xstrdup(amz_date)};
  if (content_sha256) hs[n++] = (header_t){kg_xstrdup("x-amz-content-sha256"), kg_xstrdup(payload)};
  if (keys->session_token && *keys->session_token)
    hs[n++] = (header_t){kg_xstrdup("x-amz-security-token"), kg_xstrdup(keys->session_token)};
  qsort(hs, n, sizeof *hs, header_cmp);

  /* The query's parameters, sorted, each as k=v ("k=" for a parameter without a value). */
  char **params = NULL;
  size_t nparams = 0;
  for (size_t i = 0; i < qlen;) {
    size_t len = strcspn(query + i, "&");
    if (len > qlen - i) len = qlen - i;
    if (len) {
      params = kg_xrealloc(params, (nparams + 1) * sizeof *params);
      const char *eq = memchr(query + i, '=', len);
      params[nparams++] = eq ? kg_xstrndup(query + i, len) : kg_xasprintf("%.*s=", (int)len, query + i);
    }
    i += len + 1;
  }
  if (nparams) qsort(params, nparams, sizeof *params, param_cmp);

  kg_buf_t c = {0}, signed_names = {0};
  kg_buf_appendf(&c, "%s\n%.*s\n", method, plen ? (int)plen : 1, plen ? path : "/");
  for (size_t i = 0; i < nparams; i++)
    kg_buf_appendf(&c, "%s%s", i ? "&" : "", params[i]);
  kg_buf_append(&c, "\n", 1);
  for (size_t i = 0; i < n; i++) {
    if (i && !strcmp(hs[i].name, hs[i - 1].name)) { /* a header given twice: its values joined by commas */
      c.len--;
      kg_buf_appendf(&c, ",%s\n", hs[i].value);
      continue;
    }
    kg_buf_appendf(&c, "%s:%s\n", hs[i].name, hs[i].value);
    kg_buf_appendf(&signed_names, "%s%s", signed_names.len ? ";" : "", hs[i].name);
  }
  kg_buf_appendf(&c, "\n%s\n%s", signed_names.data, payload);

  char creq_hash[2 * KG_SHA256_SIZE + 1];
  kg_sha256_hex(c.data, c.len, creq_hash);
  char day[9];
  snprintf(day, sizeof day, "%.8s", amz_date);
  char *scope = kg_xasprintf("%s/%s/%s/aws4_request", day, region, service);
  char *to_sign = kg_xasprintf("AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope, creq_hash);
  char *k0 = kg_xasprintf("AWS4%s", keys->secret_key);
  uint8_t k[KG_SHA256_SIZE], sig[KG_SHA256_SIZE];
  kg_hmac_sha256(k0, strlen(k0), day, strlen(day), k);
  kg_hmac_sha256(k, sizeof k, region, strlen(region), k);
  kg_hmac_sha256(k, sizeof k, service, strlen(service), k);
  kg_hmac_sha256(k, sizeof k, "aws4_request", 12, k);
  kg_hmac_sha256(k, sizeof k, to_sign, strlen(to_sign), sig);
  char sig_hex[2 * KG_SHA256_SIZE + 1];
  kg_sha256_to_hex(sig, sig_hex);
  memset(k0, 0, strlen(k0));
  memset(k, 0, sizeof k);

  kg_http_headers_add(add, "x-amz-date", amz_date);
  if (content_sha256) kg_http_headers_add(add, "x-amz-content-sha256", payload);
  if (keys->session_token && *keys->session_token)
    kg_http_headers_add(add, "x-amz-security-token", keys->session_token);
  char *auth = kg_xasprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s", keys->access_key,
                            scope, signed_names.data, sig_hex);
  kg_http_headers_add(add, "Authorization", auth);
  free(auth);
  if (canonical_out) {
    *canonical_out = c.data;
    c.data = NULL;
  }
  kg_buf_free(&c);
  kg_buf_free(&signed_names);
  free(scope);
  free(to_sign);
  free(k0);
  for (size_t i = 0; i < n; i++) {
    free(hs[i].name);
    free(hs[i].value);
  }
  free(hs);
  for (size_t i = 0; i < nparams; i++)
    free(params[i]);
  free(params);
  return KG_OK;
}
