/* azure_auth.c: Azure Storage's Shared Key signer (azure_auth.h). */
#include "azure_auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base64.h"
#include "kg_common.h"
#include "sha256.h"

struct kg_azure_key {
  char *account;
  kg_buf_t secret; /* the key's bytes */
};

int kg_azure_key_new(const char *account, const char *key_base64, kg_azure_key_t **out, char *errbuf) {
  *out = NULL;
  kg_buf_t secret = {0};
  if (!kg_base64_decode(&secret, key_base64) || !secret.len) {
    kg_buf_free(&secret);
    return kg_fail(errbuf, KG_EINVAL,
                   "the key of Azure storage account %s is not base64 (the portal's key1 or key2, as it shows it)",
                   account);
  }
  kg_azure_key_t *k = kg_xcalloc(1, sizeof *k);
  k->account = kg_xstrdup(account);
  k->secret = secret;
  *out = k;
  return KG_OK;
}

void kg_azure_key_destroy(kg_azure_key_t *k) {
  if (!k) return;
  if (k->secret.data) memset(k->secret.data, 0, k->secret.cap);
  kg_buf_free(&k->secret);
  free(k->account);
  free(k);
}

const char *kg_azure_key_account(const kg_azure_key_t *k) { return k->account; }

void kg_azure_http_date(int64_t t, char out[32]) {
  static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  snprintf(out, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
           tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* A header line split: NAME (lower case) and its VALUE, trimmed, with each run of blanks made one space. */
typedef struct {
  char *name;
  char *value;
} header_t;

static bool split_header(const char *line, header_t *h) {
  const char *colon = strchr(line, ':');
  if (!colon) return false;
  size_t n = (size_t)(colon - line);
  while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
    n--;
  h->name = kg_xstrndup(line, n);
  for (char *c = h->name; *c; c++)
    *c = (char)tolower((unsigned char)*c);
  kg_buf_t v = {0};
  const char *p = colon + 1;
  while (*p == ' ' || *p == '\t')
    p++;
  for (; *p; p++) {
    if (*p == ' ' || *p == '\t') {
      while (p[1] == ' ' || p[1] == '\t')
        p++;
      if (!p[1]) break;
      kg_buf_append(&v, " ", 1);
    } else {
      kg_buf_append(&v, p, 1);
    }
  }
  h->value = v.data ? v.data : kg_xstrdup("");
  return true;
}

static int by_name(const void *a, const void *b) {
  const header_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

/* S's bytes [0, N) with each %XX decoded (and '+' kept: Azure's query values are percent-encoded). */
static char *url_decode(const char *s, size_t n) {
  char *out = kg_xmalloc(n + 1), *o = out;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2])) {
      char hex[3] = {s[i + 1], s[i + 2], 0};
      *o++ = (char)strtol(hex, NULL, 16);
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  *o = 0;
  return out;
}

void kg_azure_string_to_sign(const char *account, const char *method, const char *url, const char *const *headers,
                             int64_t content_length, kg_buf_t *out) {
  size_t count = 0;
  for (size_t i = 0; headers && headers[i]; i++)
    count++;
  header_t *hs = kg_xcalloc(count ? count : 1, sizeof *hs);
  size_t n = 0;
  for (size_t i = 0; i < count; i++)
    if (split_header(headers[i], &hs[n])) n++;

  /* The standard headers, in the order Azure signs them; Content-Length is the body's, empty for none. */
  static const char *const standard[] = {
      "content-encoding",  "content-language", "content-length", "content-md5",         "content-type", "date",
      "if-modified-since", "if-match",         "if-none-match",  "if-unmodified-since", "range"};
  kg_buf_appendf(out, "%s\n", method);
  for (size_t s = 0; s < sizeof standard / sizeof standard[0]; s++) {
    const char *value = "";
    char length[24];
    if (!strcmp(standard[s], "content-length")) {
      snprintf(length, sizeof length, "%lld", (long long)content_length);
      value = content_length > 0 ? length : "";
    } else {
      for (size_t i = 0; i < n; i++)
        if (!strcmp(hs[i].name, standard[s])) value = hs[i].value;
    }
    kg_buf_appendf(out, "%s\n", value);
  }

  /* The x-ms-* headers, by name. */
  qsort(hs, n, sizeof *hs, by_name);
  for (size_t i = 0; i < n; i++)
    if (!strncmp(hs[i].name, "x-ms-", 5)) kg_buf_appendf(out, "%s:%s\n", hs[i].name, hs[i].value);

  /* The resource: /ACCOUNT and the path as sent, then the query's parameters by name. */
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  p += strcspn(p, "/?");
  size_t path_len = strcspn(p, "?#");
  kg_buf_appendf(out, "/%s%.*s", account, (int)path_len, path_len ? p : "/");
  const char *query = p[path_len] == '?' ? p + path_len + 1 : NULL;
  header_t *params = NULL;
  size_t np = 0;
  for (const char *q = query; q && *q;) {
    size_t len = strcspn(q, "&#");
    if (len) {
      const char *eq = memchr(q, '=', len);
      size_t name_len = eq ? (size_t)(eq - q) : len;
      params = kg_xrealloc(params, (np + 1) * sizeof *params);
      params[np].name = url_decode(q, name_len);
      for (char *c = params[np].name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
      params[np].value = eq ? url_decode(eq + 1, len - name_len - 1) : kg_xstrdup("");
      np++;
    }
    q += len;
    if (*q != '&') break;
    q++;
  }
  if (np) qsort(params, np, sizeof *params, by_name);
  for (size_t i = 0; i < np; i++) {
    if (i && !strcmp(params[i].name, params[i - 1].name))
      kg_buf_appendf(out, ",%s", params[i].value); /* a parameter given twice: its values, sorted, by commas */
    else
      kg_buf_appendf(out, "\n%s:%s", params[i].name, params[i].value);
  }
  for (size_t i = 0; i < np; i++)
    free(params[i].name), free(params[i].value);
  free(params);
  for (size_t i = 0; i < n; i++)
    free(hs[i].name), free(hs[i].value);
  free(hs);
}

void kg_azure_signature(const kg_azure_key_t *k, const char *text, kg_buf_t *out) {
  uint8_t mac[KG_SHA256_SIZE];
  kg_hmac_sha256(k->secret.data, k->secret.len, text, strlen(text), mac);
  kg_base64_encode(out, mac, sizeof mac);
}

static bool has_header(const char *const *headers, const char *name) {
  size_t len = strlen(name);
  for (size_t i = 0; headers && headers[i]; i++)
    if (!strncasecmp(headers[i], name, len) && headers[i][len] == ':') return true;
  return false;
}

int kg_azure_sign(void *arg, const kg_http_signing_t *r, kg_http_headers_t *add, char *errbuf) {
  (void)errbuf;
  const kg_azure_key_t *k = arg;
  char date[32];
  kg_azure_http_date((int64_t)time(NULL), date);
  kg_http_headers_add(add, "x-ms-date", date);
  if (!has_header(r->headers, "x-ms-version")) kg_http_headers_add(add, "x-ms-version", KG_AZURE_API_VERSION);
  /* The request's own lines and those just added, signed together. */
  size_t n = 0;
  while (r->headers[n])
    n++;
  const char **all = kg_xcalloc(n + add->count + 1, sizeof *all);
  memcpy(all, r->headers, n * sizeof *all);
  for (size_t i = 0; i < add->count; i++)
    all[n + i] = add->lines[i];
  kg_buf_t text = {0}, auth = {0};
  kg_azure_string_to_sign(k->account, r->method, r->url, all, r->body_len, &text);
  kg_buf_appendf(&auth, "SharedKey %s:", k->account);
  kg_azure_signature(k, text.data, &auth);
  kg_http_headers_add(add, "Authorization", auth.data);
  kg_buf_free(&text);
  kg_buf_free(&auth);
  free(all);
  return KG_OK;
}
