/* http.c: the engine's one HTTP client (http.h), on libcurl loaded at first use.
 *
 * Most runs never speak HTTP (WebHDFS, a schema registry, a Pushgateway, YARN), and libcurl, with the TLS,
 * Kerberos, LDAP and SSH libraries it brings, costs every start of the process a few milliseconds to load and
 * its end as many to unload. So the engine does not link it: libcurl_load opens it (dlopen) on first use, once for
 * the process, and runs curl_global_init; the curl_* names below call through the table the load filled. This file
 * is the only one that speaks to libcurl.
 *
 * A request is made in tries: each try sets a libcurl handle up from nothing (curl_easy_reset keeps only the open
 * connections), signs the request when it has a signer, performs it and reads what came into the response; the
 * policy's judge then says whether the outcome stands or is worth another try, and the loop pauses as the backoff,
 * Retry-After and the deadline allow. */
#include "http.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "sha256.h"
#include "stop.h"

/* ---- libcurl, loaded at first use ----------------------------------------------------------------------- */

#ifndef KG_CURL_SONAME
#define KG_CURL_SONAME "libcurl.so.4"
#endif

/* curl.h makes these two macros that check their arguments' count: they become names of the table below. */
#undef curl_easy_setopt
#undef curl_easy_getinfo

/* The libcurl functions this file calls, bound by libcurl_load. */
typedef struct {
  CURL *(*easy_init)(void);
  CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL *curl);
  CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
  void (*easy_reset)(CURL *curl);
  void (*easy_cleanup)(CURL *curl);
  const char *(*easy_strerror)(CURLcode code);
  struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
  void (*slist_free_all)(struct curl_slist *list);
} libcurl_t;
static libcurl_t libcurl;

static pthread_once_t libcurl_once = PTHREAD_ONCE_INIT;
static char libcurl_error[KG_ERRLEN]; /* empty once libcurl is loaded and started */

/* The address of SYMBOL in HANDLE into *SLOT; false (with libcurl_error set) when it is missing. */
static bool bind_symbol(void *handle, const char *symbol, void **slot) {
  *slot = dlsym(handle, symbol);
  if (*slot) return true;
  snprintf(libcurl_error, sizeof libcurl_error, "%s has no %s: %s", KG_CURL_SONAME, symbol, dlerror());
  return false;
}

static void libcurl_load_once(void) {
  void *h = dlopen(KG_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(libcurl_error, sizeof libcurl_error, "cannot load %s (Debian's package libcurl4): %s", KG_CURL_SONAME,
             dlerror());
    return;
  }
  libcurl_t a;
  CURLcode (*global_init)(long flags) = NULL;
  if (!bind_symbol(h, "curl_global_init", (void **)&global_init) ||
      !bind_symbol(h, "curl_easy_init", (void **)&a.easy_init) ||
      !bind_symbol(h, "curl_easy_setopt", (void **)&a.easy_setopt) ||
      !bind_symbol(h, "curl_easy_perform", (void **)&a.easy_perform) ||
      !bind_symbol(h, "curl_easy_getinfo", (void **)&a.easy_getinfo) ||
      !bind_symbol(h, "curl_easy_reset", (void **)&a.easy_reset) ||
      !bind_symbol(h, "curl_easy_cleanup", (void **)&a.easy_cleanup) ||
      !bind_symbol(h, "curl_easy_strerror", (void **)&a.easy_strerror) ||
      !bind_symbol(h, "curl_slist_append", (void **)&a.slist_append) ||
      !bind_symbol(h, "curl_slist_free_all", (void **)&a.slist_free_all))
    return; /* the handle stays open: dlclose of a half-bound library buys nothing */
  CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) {
    snprintf(libcurl_error, sizeof libcurl_error, "libcurl failed to start: %s", a.easy_strerror(rc));
    return;
  }
  libcurl = a;
  libcurl_error[0] = '\0';
}

/* Loads libcurl and starts it, the first time; later calls return what the first found. Returns KG_OK, or KG_EIO
 * with ERRBUF naming the library and why it cannot be used (not installed, a symbol missing, or curl_global_init
 * failing). Thread-safe. */
static int libcurl_load(char *errbuf) {
  pthread_once(&libcurl_once, libcurl_load_once);
  if (libcurl_error[0]) return kg_fail(errbuf, KG_EIO, "%s", libcurl_error);
  return KG_OK;
}

#define curl_easy_init      libcurl.easy_init
#define curl_easy_setopt    libcurl.easy_setopt
#define curl_easy_perform   libcurl.easy_perform
#define curl_easy_getinfo   libcurl.easy_getinfo
#define curl_easy_reset     libcurl.easy_reset
#define curl_easy_cleanup   libcurl.easy_cleanup
#define curl_easy_strerror  libcurl.easy_strerror
#define curl_slist_append   libcurl.slist_append
#define curl_slist_free_all libcurl.slist_free_all

struct kg_http {
  CURL *curl; /* owned */
};

int kg_http_new(kg_http_t **out, char *errbuf) {
  *out = NULL;
  int rc = libcurl_load(errbuf);
  if (rc) return rc;
  CURL *curl = curl_easy_init();
  if (!curl) return kg_fail(errbuf, KG_EIO, "libcurl failed to make a handle");
  kg_http_t *http = kg_xcalloc(1, sizeof *http);
  http->curl = curl;
  *out = http;
  return KG_OK;
}

void kg_http_destroy(kg_http_t *http) {
  if (!http) return;
  curl_easy_cleanup(http->curl);
  free(http);
}

/* ---- headers --------------------------------------------------------------------------------------------- */

void kg_http_headers_add(kg_http_headers_t *headers, const char *name, const char *value) {
  headers->lines = kg_xrealloc(headers->lines, (headers->count + 1) * sizeof *headers->lines);
  headers->lines[headers->count++] = kg_xasprintf("%s: %s", name, value);
}

void kg_http_headers_free(kg_http_headers_t *headers) {
  for (size_t i = 0; i < headers->count; i++)
    free(headers->lines[i]);
  free(headers->lines);
  headers->lines = NULL;
  headers->count = 0;
}

static void response_headers_free(kg_http_response_t *r) {
  for (size_t i = 0; i < r->nheaders; i++) {
    free(r->headers[i].name);
    free(r->headers[i].value);
  }
  free(r->headers);
  r->headers = NULL;
  r->nheaders = 0;
}

void kg_http_response_free(kg_http_response_t *r) {
  response_headers_free(r);
  kg_buf_free(&r->body);
  memset(r, 0, sizeof *r);
}

const char *kg_http_response_header(const kg_http_response_t *r, const char *name) {
  for (size_t i = 0; i < r->nheaders; i++)
    if (!strcasecmp(r->headers[i].name, name)) return r->headers[i].value;
  return NULL;
}

/* ---- what messages show ----------------------------------------------------------------------------------- */

/* True when a query parameter of this name (LEN bytes) carries a secret. */
static bool secret_parameter(const char *name, size_t len) {
  static const char *const exact[] = {"delegation", "pwd", "pass", "sig", "key", "apikey", "api_key", "code", NULL};
  static const char *const within[] = {"password", "passwd", "secret", "token", "signature", "credential", NULL};
  char lower[64];
  if (len >= sizeof lower) len = sizeof lower - 1;
  for (size_t i = 0; i < len; i++)
    lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
  lower[len] = 0;
  for (int i = 0; exact[i]; i++)
    if (!strcmp(lower, exact[i])) return true;
  for (int i = 0; within[i]; i++)
    if (strstr(lower, within[i])) return true;
  return false;
}

void kg_http_shown_url(const char *url, char *out, size_t size) {
  kg_buf_t b = {0};
  const char *host = strstr(url, "://");
  host = host ? host + 3 : url;
  size_t authority = strcspn(host, "/?#");
  const char *at = memchr(host, '@', authority);
  const char *p;
  if (at) {
    kg_buf_append(&b, url, (size_t)(host - url));
    kg_buf_append(&b, "***", 3);
    p = at;
  } else {
    p = url;
  }
  const char *query = strchr(p, '?');
  const char *fragment = strchr(p, '#');
  if (!query || (fragment && fragment < query)) {
    kg_buf_append(&b, p, strlen(p));
  } else {
    kg_buf_append(&b, p, (size_t)(query + 1 - p));
    for (const char *q = query + 1; *q && *q != '#';) {
      size_t plen = strcspn(q, "&#");
      const char *eq = memchr(q, '=', plen);
      if (eq && secret_parameter(q, (size_t)(eq - q))) {
        kg_buf_append(&b, q, (size_t)(eq + 1 - q));
        kg_buf_append(&b, "***", 3);
      } else {
        kg_buf_append(&b, q, plen);
      }
      q += plen;
      if (*q == '&') kg_buf_append(&b, q++, 1);
    }
    if (fragment) kg_buf_append(&b, fragment, strlen(fragment));
  }
  snprintf(out, size, "%s", b.data ? b.data : "");
  kg_buf_free(&b);
}

void kg_http_reason(const kg_http_response_t *r, char *out, size_t size) {
  if (!r->status) {
    snprintf(out, size, "%s", r->error);
    return;
  }
  size_t n = r->body.len < 512 ? r->body.len : 512;
  const char *b = r->body.len ? r->body.data : "";
  size_t line = strcspn(b, "\r\n");
  if (line < n) n = line;
  snprintf(out, size, "HTTP %ld%s%.*s", r->status, n ? ": " : "", (int)n, b);
}

/* ---- one try ------------------------------------------------------------------------------------------------ */

/* The state of one try, for libcurl's callbacks. */
typedef struct {
  const kg_http_request_t *req;
  kg_http_response_t *resp;
  int64_t sent;     /* body bytes handed to libcurl, from the body's start */
  int body_errno;   /* reading the body's file failed (-1: it is shorter than the body) */
  long status;      /* the status line of the answer being read */
  int64_t cap;      /* most bytes of a buffer answer */
  int64_t written;  /* bytes of a file answer written */
  bool too_big;     /* the answer passed its cap */
  int answer_errno; /* writing the answer's file failed */
} try_t;

static size_t on_read(char *buffer, size_t size, size_t n, void *arg) {
  try_t *t = arg;
  const kg_http_body_t *b = &t->req->body;
  int64_t left = b->len - t->sent;
  size_t want = size * n < (uint64_t)left ? size * n : (size_t)left;
  if (!want) return 0;
  if (b->kind == KG_HTTP_BODY_MEMORY) {
    memcpy(buffer, (const char *)b->data + t->sent, want);
    t->sent += (int64_t)want;
    return want;
  }
  ssize_t got;
  do
    got = pread(b->fd, buffer, want, (off_t)(b->offset + t->sent));
  while (got < 0 && errno == EINTR);
  if (got <= 0) { /* the file cannot be read, or is shorter than it was */
    t->body_errno = got < 0 ? errno : -1;
    return CURL_READFUNC_ABORT;
  }
  t->sent += got;
  return (size_t)got;
}

/* libcurl sends the body again from its start after an authentication round, or to where a redirect leads. */
static int on_seek(void *arg, curl_off_t offset, int origin) {
  try_t *t = arg;
  if (origin != SEEK_SET || offset < 0 || offset > t->req->body.len) return CURL_SEEKFUNC_CANTSEEK;
  t->sent = (int64_t)offset;
  return CURL_SEEKFUNC_OK;
}

/* Collects the answer's headers; a status line starts a new answer (after a 100, a redirect followed, an
 * authentication round), whose headers replace those before. */
static size_t on_header(char *data, size_t size, size_t n, void *arg) {
  try_t *t = arg;
  kg_http_response_t *r = t->resp;
  size_t len = size * n;
  if (len > 5 && !memcmp(data, "HTTP/", 5)) {
    response_headers_free(r);
    const char *space = memchr(data, ' ', len);
    t->status = space ? strtol(space + 1, NULL, 10) : 0;
    return len;
  }
  while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
    len--;
  const char *colon = memchr(data, ':', len);
  if (!colon || colon == data) return size * n; /* the blank line that ends them, or not a header */
  const char *value = colon + 1, *end = data + len;
  while (value < end && (*value == ' ' || *value == '\t'))
    value++;
  while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  r->headers = kg_xrealloc(r->headers, (r->nheaders + 1) * sizeof *r->headers);
  r->headers[r->nheaders].name = kg_xstrndup(data, (size_t)(colon - data));
  r->headers[r->nheaders].value = kg_xstrndup(value, (size_t)(end - value));
  r->nheaders++;
  return size * n;
}

/* Appends LEN bytes to the response's buffer within CAP: the first CAP bytes kept when TRUNCATE, else the transfer
 * stops (0). */
static size_t to_buffer(try_t *t, const char *data, size_t len, int64_t cap, bool truncate) {
  kg_http_response_t *r = t->resp;
  if ((int64_t)(r->body.len + len) > cap) {
    if (!truncate) {
      t->too_big = true;
      return 0; /* stops the transfer: CURLE_WRITE_ERROR */
    }
    if ((int64_t)r->body.len < cap) kg_buf_append(&r->body, data, (size_t)(cap - (int64_t)r->body.len));
    r->truncated = true;
    return len;
  }
  kg_buf_append(&r->body, data, len);
  return len;
}

static size_t on_write(char *data, size_t size, size_t n, void *arg) {
  try_t *t = arg;
  const kg_http_answer_t *a = &t->req->answer;
  size_t len = size * n;
  t->resp->body_bytes += (int64_t)len;
  bool ok = t->status >= 200 && t->status < 300;
  if (a->kind == KG_HTTP_ANSWER_BUFFER) return to_buffer(t, data, len, t->cap, a->truncate);
  if (!ok) return to_buffer(t, data, len, KG_HTTP_ERROR_BODY_CAP, true);
  if (a->kind == KG_HTTP_ANSWER_DISCARD) return len;
  size_t keep = len;
  if (a->cap > 0 && t->written + (int64_t)len > a->cap) {
    if (!a->truncate) {
      t->too_big = true;
      return 0;
    }
    keep = (size_t)(a->cap - t->written);
    t->resp->truncated = true;
  }
  for (size_t done = 0; done < keep;) {
    ssize_t w = pwrite(a->fd, data + done, keep - done, (off_t)(a->offset + t->written));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      t->answer_errno = w < 0 ? errno : EIO;
      return 0;
    }
    done += (size_t)w;
    t->written += w;
  }
  return len;
}

static kg_http_failure_t failure_of(CURLcode cc, const try_t *t) {
  switch (cc) {
  case CURLE_OK: return KG_HTTP_FAIL_NONE;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY: return KG_HTTP_FAIL_CONNECT;
  case CURLE_OPERATION_TIMEDOUT: return KG_HTTP_FAIL_TIMEOUT;
  case CURLE_WRITE_ERROR:
    if (t->too_big) return KG_HTTP_FAIL_TOO_BIG;
    return t->answer_errno ? KG_HTTP_FAIL_BODY : KG_HTTP_FAIL_OTHER;
  case CURLE_ABORTED_BY_CALLBACK:
  case CURLE_READ_ERROR: return t->body_errno ? KG_HTTP_FAIL_BODY : KG_HTTP_FAIL_OTHER;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED:
  case CURLE_SSL_ENGINE_INITFAILED:
  case CURLE_USE_SSL_FAILED: return KG_HTTP_FAIL_TLS;
  default: return KG_HTTP_FAIL_OTHER;
  }
}

/* The SHA-256 of the request's body, as hex, into HEX; KG_EIO with ERRBUF when its file cannot be read. */
static int body_sha256(const kg_http_body_t *b, char hex[2 * KG_SHA256_SIZE + 1], char *errbuf) {
  if (b->kind != KG_HTTP_BODY_FILE) {
    kg_sha256_hex(b->kind == KG_HTTP_BODY_MEMORY && b->len ? b->data : "",
                  b->kind == KG_HTTP_BODY_NONE ? 0 : (size_t)b->len, hex);
    return KG_OK;
  }
  kg_sha256_t s;
  uint8_t digest[KG_SHA256_SIZE];
  char chunk[64 * 1024];
  kg_sha256_init(&s);
  for (int64_t done = 0; done < b->len;) {
    size_t want = b->len - done < (int64_t)sizeof chunk ? (size_t)(b->len - done) : sizeof chunk;
    ssize_t got = pread(b->fd, chunk, want, (off_t)(b->offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return kg_fail(errbuf, KG_EIO, "cannot read the request's body from its file: %s", strerror(errno));
    if (got == 0)
      return kg_fail(errbuf, KG_EIO, "the request's body file ends before its %lld bytes", (long long)b->len);
    kg_sha256_update(&s, chunk, (size_t)got);
    done += got;
  }
  kg_sha256_final(&s, digest);
  kg_sha256_to_hex(digest, hex);
  return KG_OK;
}

/* Resets R for a new try: the last try's outcome goes, the body's buffer stays allocated. */
static void response_reset(kg_http_response_t *r) {
  response_headers_free(r);
  r->status = 0;
  r->failure = KG_HTTP_FAIL_NONE;
  r->cause = "";
  r->error[0] = 0;
  r->sent = false;
  r->body.len = 0;
  if (r->body.data) r->body.data[0] = 0;
  r->truncated = false;
  r->body_bytes = 0;
  r->retry_after_s = -1;
}

static bool has_header(const char *const *headers, const char *name) {
  size_t len = strlen(name);
  for (size_t i = 0; headers && headers[i]; i++)
    if (!strncasecmp(headers[i], name, len) && (headers[i][len] == ':' || headers[i][len] == ';')) return true;
  return false;
}

/* Sets CURL up for REQ, afresh: the URL, METHOD and body (read through T), the answer's callbacks, the timeouts
 * (TIMEOUT_MS: this try's, 0 none), redirects; curl's error text into CURL_ERR. */
static void set_request(CURL *curl, const kg_http_request_t *req, const char *method, bool has_body, int64_t timeout_ms,
                        try_t *t, char *curl_err) {
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, req->url);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for timeouts: the engine has threads */
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "kingest/" KINGEST_VERSION);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  if (!strcmp(method, "HEAD")) {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(curl, CURLOPT_READDATA, t);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, t);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body.len);
    if (strcmp(method, "PUT")) curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "GET")) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  }
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
  if (req->connect_timeout_ms > 0) curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)req->connect_timeout_ms);
  if (timeout_ms > 0) curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  if (req->stall_ms > 0) {
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)((req->stall_ms + 999) / 1000));
  }
  if (req->max_redirects > 0) {
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, (long)req->max_redirects);
  }
}

/* Sets CURL's TLS options and authentication from REQ. */
static void set_security(CURL *curl, const kg_http_request_t *req) {
  const kg_http_tls_t *tls = &req->tls;
  if (tls->ca_file) curl_easy_setopt(curl, CURLOPT_CAINFO, tls->ca_file);
  if (tls->cert_file) curl_easy_setopt(curl, CURLOPT_SSLCERT, tls->cert_file);
  if (tls->key_file) curl_easy_setopt(curl, CURLOPT_SSLKEY, tls->key_file);
  if (tls->key_password) curl_easy_setopt(curl, CURLOPT_KEYPASSWD, tls->key_password);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, tls->insecure ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, tls->insecure ? 0L : 2L);
  switch (req->auth.kind) {
  case KG_HTTP_AUTH_NONE: break;
  case KG_HTTP_AUTH_BASIC:
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERNAME, req->auth.user ? req->auth.user : "");
    curl_easy_setopt(curl, CURLOPT_PASSWORD, req->auth.password ? req->auth.password : "");
    break;
  case KG_HTTP_AUTH_BEARER:
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
    curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, req->auth.token ? req->auth.token : "");
    break;
  case KG_HTTP_AUTH_NEGOTIATE:
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_NEGOTIATE);
    curl_easy_setopt(curl, CURLOPT_USERPWD, ":"); /* the name and key come from the ticket */
    break;
  }
}

/* Try ATTEMPT of REQ with CURL, within TIMEOUT_MS (0: none), into R; *WRITTEN: bytes of a file answer written.
 * BODY_HASH: the body's SHA-256, computed at the first try that signs (empty until then). */
static void one_try(CURL *curl, const kg_http_request_t *req, int attempt, int64_t timeout_ms, char *body_hash,
                    kg_http_response_t *r, int64_t *written) {
  response_reset(r);
  *written = 0;
  kg_http_headers_t signed_headers = {0};
  if (req->auth.sign) {
    char why[KG_ERRLEN] = "";
    int rc = body_hash[0] || req->auth.sign_unhashed ? KG_OK : body_sha256(&req->body, body_hash, why);
    if (!rc) {
      static const char *const none[] = {NULL};
      kg_http_signing_t s = {.method = req->method ? req->method : "GET",
                             .url = req->url,
                             .headers = req->headers ? req->headers : none,
                             .body_sha256 = body_hash,
                             .body_len = req->body.kind == KG_HTTP_BODY_NONE ? 0 : req->body.len,
                             .attempt = attempt};
      rc = req->auth.sign(req->auth.sign_arg, &s, &signed_headers, why);
    }
    if (rc) {
      r->failure = KG_HTTP_FAIL_SIGNER;
      snprintf(r->error, sizeof r->error, "cannot sign the request: %s", why);
      kg_http_headers_free(&signed_headers);
      return;
    }
  }
  try_t t = {.req = req, .resp = r, .cap = req->answer.cap > 0 ? req->answer.cap : KG_HTTP_DEFAULT_CAP};
  const char *method = req->method ? req->method : "GET";
  bool has_body = req->body.kind != KG_HTTP_BODY_NONE;
  char curl_err[CURL_ERROR_SIZE] = "";
  struct curl_slist *list = NULL;
  for (size_t i = 0; req->headers && req->headers[i]; i++)
    list = curl_slist_append(list, req->headers[i]);
  for (size_t i = 0; i < signed_headers.count; i++)
    list = curl_slist_append(list, signed_headers.lines[i]);
  if (has_body && !has_header(req->headers, "Expect")) list = curl_slist_append(list, "Expect:");

  set_request(curl, req, method, has_body, timeout_ms, &t, curl_err);
  set_security(curl, req);
  if (list) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);

  CURLcode cc = curl_easy_perform(curl);
  long request_size = 0;
  curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request_size);
  r->sent = request_size > 0;
  r->failure = failure_of(cc, &t);
  if (cc == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r->status);
    /* Both forms of Retry-After, seconds and an HTTP date (made seconds from now); 0 when there is none. */
    curl_off_t wait = 0;
    if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &wait) == CURLE_OK && wait > 0) r->retry_after_s = (int64_t)wait;
  } else {
    r->cause = curl_easy_strerror(cc);
    if (r->failure == KG_HTTP_FAIL_TOO_BIG)
      snprintf(r->error, sizeof r->error, "the answer is larger than %lld bytes, the most this request takes",
               (long long)(req->answer.kind == KG_HTTP_ANSWER_BUFFER ? t.cap : req->answer.cap));
    else if (r->failure == KG_HTTP_FAIL_BODY && t.answer_errno)
      snprintf(r->error, sizeof r->error, "cannot write the answer to its file: %s", strerror(t.answer_errno));
    else if (r->failure == KG_HTTP_FAIL_BODY && t.body_errno > 0)
      snprintf(r->error, sizeof r->error, "cannot read the request's body from its file: %s", strerror(t.body_errno));
    else if (r->failure == KG_HTTP_FAIL_BODY)
      snprintf(r->error, sizeof r->error, "the request's body file ends before its %lld bytes",
               (long long)req->body.len);
    else
      snprintf(r->error, sizeof r->error, "%s", curl_err[0] ? curl_err : r->cause);
  }
  *written = t.written;
  curl_slist_free_all(list);
  kg_http_headers_free(&signed_headers);
}

/* ---- tries ---------------------------------------------------------------------------------------------- */

static kg_http_verdict_t default_judge(const kg_http_retry_t *p, const kg_http_response_t *r) {
  switch (r->failure) {
  case KG_HTTP_FAIL_NONE: {
    long s = r->status;
    return (p->retry_on & KG_HTTP_RETRY_STATUS) && (s == 408 || s == 429 || s >= 500) ? KG_HTTP_AGAIN : KG_HTTP_DONE;
  }
  case KG_HTTP_FAIL_CONNECT:
  case KG_HTTP_FAIL_TIMEOUT:
  case KG_HTTP_FAIL_OTHER:
    if (p->retry_on & KG_HTTP_RETRY_TRANSPORT) return KG_HTTP_AGAIN;
    return (p->retry_on & KG_HTTP_RETRY_CONNECT) && !r->sent ? KG_HTTP_AGAIN : KG_HTTP_DONE;
  default: return KG_HTTP_DONE; /* a certificate, a cap, a file or a signer: another try changes nothing */
  }
}

/* Sleeps MS milliseconds; when INTERRUPTIBLE, in slices, so that a stop signal ends the wait: false when one did. */
static bool pause_ms(int64_t ms, bool interruptible) {
  if (!interruptible) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) == -1) {
    }
    return true;
  }
  int64_t until = kg_mono_ms() + ms;
  for (;;) {
    if (kg_stop_signal()) return false;
    int64_t left = until - kg_mono_ms();
    if (left <= 0) return true;
    if (left > 100) left = 100;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = left * 1000000};
    nanosleep(&ts, NULL);
  }
}

/* KG_EINVAL with ERRBUF when REQ cannot be sent as it is. */
static int check_request(const kg_http_request_t *req, const char *method, const char *shown, char *errbuf) {
  if (!req->url || !*req->url) return kg_fail(errbuf, KG_EINVAL, "%s: a request without a URL", method);
  for (size_t i = 0; req->headers && req->headers[i]; i++)
    if (strpbrk(req->headers[i], "\r\n"))
      return kg_fail(errbuf, KG_EINVAL, "%s %s: the header line '%.*s' has a line break", method, shown,
                     (int)strcspn(req->headers[i], "\r\n"), req->headers[i]);
  if (req->body.kind != KG_HTTP_BODY_NONE && req->body.len < 0)
    return kg_fail(errbuf, KG_EINVAL, "%s %s: a body of %lld bytes", method, shown, (long long)req->body.len);
  if (req->body.kind == KG_HTTP_BODY_FILE && req->body.fd < 0)
    return kg_fail(errbuf, KG_EINVAL, "%s %s: a file body without a file", method, shown);
  if (req->answer.kind == KG_HTTP_ANSWER_FILE && req->answer.fd < 0)
    return kg_fail(errbuf, KG_EINVAL, "%s %s: a file answer without a file", method, shown);
  return KG_OK;
}

void kg_http_tries_said(const kg_http_retry_t *retry, const kg_http_response_t *r, char *out, size_t size) {
  out[0] = 0;
  if (r->attempts <= 1 && r->stop == KG_HTTP_STOP_DONE) return;
  char tail[160] = "";
  double bound = (double)(retry->deadline_ms > 0 ? retry->deadline_ms : 0) / 1000.0;
  if (r->stop == KG_HTTP_STOP_ATTEMPTS)
    snprintf(tail, sizeof tail, ", as many as allowed");
  else if (r->stop == KG_HTTP_STOP_DEADLINE && r->retry_after_s >= 0 && r->next_wait_ms == r->retry_after_s * 1000)
    snprintf(tail, sizeof tail, "; the server asked to wait %lld s, past the bound of %.1f s",
             (long long)r->retry_after_s, bound);
  else if (r->stop == KG_HTTP_STOP_DEADLINE)
    snprintf(tail, sizeof tail, "; the next, %.1f s later, would pass the bound of %.1f s",
             (double)r->next_wait_ms / 1000.0, bound);
  else if (r->stop == KG_HTTP_STOP_SIGNAL)
    snprintf(tail, sizeof tail, "; stopped by a signal");
  snprintf(out, size, " (%d attempt%s in %.1f s%s)", r->attempts, r->attempts == 1 ? "" : "s",
           (double)r->elapsed_ms / 1000.0, tail);
}

int kg_http_perform(kg_http_t *http, const kg_http_request_t *req, kg_http_response_t *r, char *errbuf) {
  const char *method = req->method ? req->method : "GET";
  char shown[1024];
  kg_http_shown_url(req->url ? req->url : "", shown, sizeof shown);
  response_reset(r);
  r->attempts = 0;
  r->elapsed_ms = 0;
  r->stop = KG_HTTP_STOP_DONE;
  r->next_wait_ms = 0;
  int rc = check_request(req, method, shown, errbuf);
  if (!rc) rc = libcurl_load(errbuf);
  CURL *curl = NULL;
  if (!rc) {
    curl = http ? http->curl : curl_easy_init();
    if (!curl) rc = kg_fail(errbuf, KG_EIO, "libcurl failed to make a handle");
  }
  if (rc) {
    r->failure = KG_HTTP_FAIL_OTHER;
    snprintf(r->error, sizeof r->error, "%s", errbuf);
    return rc;
  }
  const kg_http_retry_t *p = &req->retry;
  int64_t started = kg_mono_ms(), pause = p->pause_ms > 0 ? p->pause_ms : 1, written = 0, most_written = 0;
  bool has_deadline = p->deadline_ms != 0;
  int64_t deadline = started + (p->deadline_ms > 0 ? p->deadline_ms : 0);
  char body_hash[2 * KG_SHA256_SIZE + 1] = "";
  for (int attempt = 1;; attempt++) {
    int64_t timeout = req->timeout_ms;
    if (attempt > 1 && p->try_floor_ms > 0 && has_deadline) {
      int64_t left = deadline - kg_mono_ms();
      if (timeout <= 0 || left < timeout) timeout = left > p->try_floor_ms ? left : p->try_floor_ms;
    }
    one_try(curl, req, attempt, timeout, body_hash, r, &written);
    if (written > most_written) most_written = written;
    r->attempts = attempt;
    kg_http_verdict_t verdict = p->judge ? p->judge(p->judge_arg, r) : default_judge(p, r);
    if (verdict == KG_HTTP_DONE) {
      r->stop = KG_HTTP_STOP_DONE;
      break;
    }
    if (p->attempts > 0 && attempt >= p->attempts) {
      r->stop = KG_HTTP_STOP_ATTEMPTS;
      break;
    }
    /* The pause: the backoff's, a quarter more at random when asked, or what Retry-After asks. */
    int64_t wait = pause;
    if (p->jitter_seed) wait += (int64_t)((uint64_t)rand_r(p->jitter_seed) % (uint64_t)(pause / 4 + 1));
    if (verdict == KG_HTTP_AGAIN && p->retry_after && r->retry_after_s >= 0) wait = r->retry_after_s * 1000;
    pause = p->max_pause_ms > 0 && pause * 2 > p->max_pause_ms ? p->max_pause_ms : pause * 2;
    int64_t now = kg_mono_ms();
    if (verdict == KG_HTTP_AGAIN && has_deadline && now + wait >= deadline) {
      r->stop = KG_HTTP_STOP_DEADLINE;
      r->next_wait_ms = wait;
      r->elapsed_ms = now - started;
      break;
    }
    /* The server's reason when it has its own error shape (S3's "HTTP 503 SlowDown: ..."), else the status. */
    char what[KG_ERRLEN];
    if (r->status && req->reason)
      req->reason(r, what, sizeof what);
    else if (r->status)
      snprintf(what, sizeof what, "HTTP %ld", r->status);
    else
      snprintf(what, sizeof what, "%s", r->cause);
    char of[32] = "";
    if (p->attempts > 0) snprintf(of, sizeof of, " of %d", p->attempts);
    KG_DEBUG("%s %s %s: %s; trying again in %lld ms (attempt %d%s)", req->service ? req->service : "HTTP", method,
             shown, what, (long long)wait, attempt + 1, of);
    if (!pause_ms(wait, p->interruptible)) {
      r->stop = KG_HTTP_STOP_SIGNAL;
      break;
    }
  }
  if (r->stop != KG_HTTP_STOP_DEADLINE) r->elapsed_ms = kg_mono_ms() - started;
  /* An earlier try may have written more of a file answer than the last: those bytes are not the answer. */
  if (req->answer.kind == KG_HTTP_ANSWER_FILE && most_written > written) {
    struct stat st;
    if (fstat(req->answer.fd, &st) == 0 && S_ISREG(st.st_mode) &&
        ftruncate(req->answer.fd, (off_t)(req->answer.offset + written)) != 0)
      KG_DEBUG("%s %s: cannot cut the answer's file: %s", method, shown, strerror(errno));
  }
  if (!http) curl_easy_cleanup(curl);
  char tries[256];
  kg_http_tries_said(&req->retry, r, tries, sizeof tries);
  if (!r->status) return kg_fail(errbuf, KG_EIO, "%s %s: %s%s", method, shown, r->error, tries);
  if (req->any_status || r->status < 400) return KG_OK;
  char reason[KG_ERRLEN];
  if (req->reason)
    req->reason(r, reason, sizeof reason);
  else
    kg_http_reason(r, reason, sizeof reason);
  return kg_fail(errbuf, KG_EIO, "%s %s: %s%s", method, shown, reason, tries);
}
