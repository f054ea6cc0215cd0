/* fs_azure.c: Azure Blob Storage as an object store behind the kg_fs_t interface (fs.h), over the engine's HTTP
 * client (http.h) with Shared Key authentication (azure_auth.h).
 *
 * wasbs://CONTAINER@ACCOUNT.blob.core.windows.net (wasb:// for plain HTTP) names a container; abfss:// and abfs://
 * with ACCOUNT.dfs.core.windows.net name the same container of an account with a hierarchical namespace, which the
 * Blob API serves too (the requests go to ACCOUNT.blob.core.windows.net). A path /a/b is the blob "a/b"; folders are
 * the prefixes of names. fs.azure.blob.endpoint replaces https://ACCOUNT.blob.core.windows.net, for the emulator
 * (http://127.0.0.1:10000/devstoreaccount1) or a private endpoint.
 *
 * A file is published whole, under If-None-Match: *, so that nothing is ever overwritten: one Put Blob up to
 * fs.azure.write.request.size bytes, else Put Block for each block of that size (read from the local file with pread:
 * one block's worth of nothing in memory) and Put Block List. An upload in blocks has an id the commit journals: 16
 * hex digits, the start of each of its block ids (Azure wants every block id of a blob to be of one length), so that
 * an upload tried again by a later run puts its blocks beside the old ones and the commit of its list drops the rest.
 * Azure has no call that drops the uncommitted blocks of a blob that was never committed: they go when the blob is
 * committed, or after a week.
 *
 * Every blob written carries x-ms-meta-kingestupload, the id of its upload (the commit begins and journals one for
 * every file, small ones written with one Put Blob included; a write outside a commit makes one up), which head
 * gives back: Azure's ETag is the service's own and cannot be foreseen, so the commit knows its own blobs by this
 * mark (kg_fs_object_ops_t.marks_objects), and a request tried again after a lost answer that finds the blob
 * existing (409) knows it for its own write the same way.
 *
 * Retries: 500, 503 and the other 5xx, 408 and 429, and requests that got no answer, are tried again up to
 * fs.azure.io.retry.max.retries times, the pause doubling from fs.azure.io.retry.min.backoff.interval to
 * fs.azure.io.retry.max.backoff.interval; each try again is logged at DEBUG, and an error says how many tries it took.
 *
 * Thread safety: the kg_fs_t is read-only after open and each request has its own connection, so the commit's
 * threads share one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "azure_auth.h"
#include "base64.h"
#include "buf.h"
#include "fault.h"
#include "fs.h"
#include "http.h"
#include "log.h"
#include "parse.h"
#include "secret.h"

#define AZURE_CONNECT_TIMEOUT_MS 15000      /* to open a connection */
#define AZURE_TIMEOUT_MS         60000      /* a request without a body; an upload's longest stall */
#define AZURE_MAX_ANSWER         (64 << 20) /* bytes of an answer body (a listing page, a blob read) */
#define AZURE_MAX_BLOCKS         50000      /* blocks of one blob (Azure's limit) */
#define AZURE_UPLOAD_ID_LEN      16         /* hex digits of an upload id */

/* ---- properties ----------------------------------------------------------------------------------------- */

/* An account's key as the job gives it. */
typedef struct {
  char *host;  /* ACCOUNT.blob.core.windows.net: the key's property less fs.azure.account.key. */
  char *value; /* the key, base64 */
} account_key_t;

/* The options of the Azure rows. */
typedef struct {
  char *endpoint;         /* fs.azure.blob.endpoint; "" for the account's own */
  int64_t block_size;     /* fs.azure.write.request.size: bytes of a block, and the most of one Put Blob */
  int retries;            /* fs.azure.io.retry.max.retries: tries after the first */
  int64_t min_backoff_ms; /* fs.azure.io.retry.min.backoff.interval */
  int64_t max_backoff_ms; /* fs.azure.io.retry.max.backoff.interval */
  account_key_t *keys;    /* fs.azure.account.key.<host>, owned */
  size_t nkeys;
} azure_options_t;

#define FIELD(f) KG_FIELD_OF(azure_options_t, f)

/* The host of key property KEY (fs.azure.account.key.HOST), checked: ACCOUNT.blob.* or ACCOUNT.dfs.*, ACCOUNT being
 * 3 to 24 lower-case letters and digits. NULL when it is not one. */
static const char *key_host(const char *key) {
  static const char prefix[] = "fs.azure.account.key.";
  if (strncmp(key, prefix, sizeof prefix - 1)) return NULL;
  const char *host = key + sizeof prefix - 1, *dot = strchr(host, '.');
  size_t n = dot ? (size_t)(dot - host) : 0;
  if (n < 3 || n > 24 || (strncmp(dot, ".blob.", 6) && strncmp(dot, ".dfs.", 5))) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= '0' && host[i] <= '9'))) return NULL;
  return host;
}

static int set_key(const kg_config_t *c, void *options, const kg_property_t *p, const char *key, kg_property_value_t *v,
                   char *errbuf) {
  (void)p;
  azure_options_t *o = options;
  const char *host = key_host(key);
  int rc = KG_OK;
  kg_buf_t bytes = {0};
  if (!host) {
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: property %s: expected fs.azure.account.key.ACCOUNT.blob.core.windows.net (or ACCOUNT.dfs...), "
                 "ACCOUNT being the storage account's name (3 to 24 lower-case letters and digits)",
                 kg_config_origin(c, key), key);
  } else if (!kg_base64_decode(&bytes, v->s) || !bytes.len) {
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: property %s: the account key is not base64 (give key1 or key2 as the portal shows it)",
                 kg_config_origin(c, key), key);
  }
  if (bytes.data) memset(bytes.data, 0, bytes.cap);
  kg_buf_free(&bytes);
  if (rc) {
    free(v->s);
    return rc;
  }
  kg_secret_note(v->s);
  o->keys = kg_xrealloc(o->keys, (o->nkeys + 1) * sizeof *o->keys);
  o->keys[o->nkeys++] = (account_key_t){.host = kg_xstrdup(host), .value = v->s};
  return KG_OK;
}

static int set_endpoint(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                        kg_property_value_t *v, char *errbuf) {
  (void)p;
  char *s = v->s;
  if (*s && strncmp(s, "http://", 7) && strncmp(s, "https://", 8)) {
    int rc = kg_fail(errbuf, KG_EINVAL,
                     "%s: property %s=%s: expected an http:// or https:// URL, as "
                     "http://127.0.0.1:10000/devstoreaccount1 for the emulator",
                     kg_config_origin(c, key), key, s);
    free(s);
    return rc;
  }
  size_t n = strlen(s);
  while (n && s[n - 1] == '/')
    s[--n] = 0;
  ((azure_options_t *)options)->endpoint = s;
  return KG_OK;
}

static const kg_property_t rows[] = {
    {.name = "fs.azure.account.key.*",
     .type = KG_PROP_STRING,
     .set = set_key,
     .secret = true,
     .doc = "The Shared Key of a storage account, as `fs.azure.account.key.ACCOUNT.blob.core.windows.net` (or "
            "`ACCOUNT.dfs.core.windows.net` for `abfss://`): key1 or key2 as the portal shows it (base64). Without "
            "one, `AZURE_STORAGE_KEY` when `AZURE_STORAGE_ACCOUNT` names the account ([Azure Blob "
            "Storage](#azure-blob-storage))."},
    {.name = "fs.azure.blob.endpoint",
     .type = KG_PROP_STRING,
     .set = set_endpoint,
     .def_doc = "the account's own, https://ACCOUNT.blob.core.windows.net",
     .doc = "The blob endpoint requests go to instead of the account's, as a connection string's `BlobEndpoint`: the "
            "emulator's `http://127.0.0.1:10000/devstoreaccount1`, a private endpoint."},
    {.name = "fs.azure.write.request.size",
     .type = KG_PROP_INT,
     .def = "8388608",
     .min = 16384,
     .max = 4000LL << 20,
     FIELD(block_size),
     .doc = "Bytes of a block of an upload to Azure Blob: a file up to this size is written with one Put Blob, a "
            "larger one in blocks of this size (at most 50,000) and a Put Block List."},
    {.name = "fs.azure.io.retry.max.retries",
     .type = KG_PROP_INT,
     .def = "5",
     .min = 0,
     .max = 100,
     FIELD(retries),
     .doc = "Tries again of an Azure request that got a 5xx (500, 503), a 408 or 429, or no answer."},
    {.name = "fs.azure.io.retry.min.backoff.interval",
     .type = KG_PROP_INT,
     .def = "500",
     .min = 1,
     .max = 600000,
     FIELD(min_backoff_ms),
     .doc = "Milliseconds before the first try again of an Azure request; the pause doubles for each next one."},
    {.name = "fs.azure.io.retry.max.backoff.interval",
     .type = KG_PROP_INT,
     .def = "10000",
     .min = 1,
     .max = 600000,
     FIELD(max_backoff_ms),
     .doc = "The longest pause between two tries of an Azure request, in milliseconds."},
};

static void clear_options(void *options) {
  azure_options_t *o = options;
  for (size_t i = 0; i < o->nkeys; i++) {
    free(o->keys[i].host);
    free(o->keys[i].value);
  }
  free(o->keys);
  free(o->endpoint); /* set_endpoint's */
}

const kg_config_section_t kg_fs_azure_section = {.name = "fs.azure",
                                                 .rows = rows,
                                                 .nrows = sizeof rows / sizeof rows[0],
                                                 .size = sizeof(azure_options_t),
                                                 .clear = clear_options};

/* ---- the file system ------------------------------------------------------------------------------------ */

/* One container: what open made of the URI and the options; read-only afterwards. */
typedef struct {
  char *account;       /* the storage account */
  char *container;     /* the container */
  char *endpoint;      /* "https://ACCOUNT.blob.core.windows.net", or fs.azure.blob.endpoint */
  kg_azure_key_t *key; /* NULL: none given (every request then fails saying so) */
  char *key_property;  /* the property that would give the key */
  int64_t block_size;  /* fs.azure.write.request.size */
  int retries;         /* fs.azure.io.retry.max.retries */
  int64_t min_backoff_ms, max_backoff_ms;
} azure_t;

/* "a/b" for path "/a/b": the blob name of a file system path. */
static const char *blob_of(const char *path) {
  while (*path == '/')
    path++;
  return path;
}

/* The URL of BLOB (NULL: the container itself) with QUERY ("restype=...", already escaped; NULL for none). */
static char *url_of(const azure_t *a, const char *blob, const char *query) {
  kg_buf_t b = {0};
  kg_buf_appendf(&b, "%s/%s", a->endpoint, a->container);
  if (blob) {
    kg_buf_append(&b, "/", 1);
    kg_buf_append_url_escaped(&b, blob, true);
  }
  if (query) kg_buf_appendf(&b, "?%s", query);
  return b.data;
}

/* The text of the first <TAG>...</TAG> in [P, END), XML entities decoded, as a new string; NULL when absent. *NEXT
 * (may be NULL) is past the element. */
static char *xml_text(const char *p, const char *end, const char *tag, const char **next) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  const char *s = p ? memmem(p, (size_t)(end - p), open, strlen(open)) : NULL;
  if (!s) return NULL;
  s += strlen(open);
  const char *e = memmem(s, (size_t)(end - s), close, strlen(close));
  if (!e) return NULL;
  if (next) *next = e + strlen(close);
  static const struct {
    const char *entity;
    char c;
  } entities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  kg_buf_t out = {0};
  for (const char *c = s; c < e; c++) {
    size_t i = 0, n = 0;
    for (; *c == '&' && i < sizeof entities / sizeof entities[0]; i++) {
      n = strlen(entities[i].entity);
      if ((size_t)(e - c) >= n && !strncmp(c, entities[i].entity, n)) break;
    }
    if (*c == '&' && i < sizeof entities / sizeof entities[0]) {
      kg_buf_append(&out, &entities[i].c, 1);
      c += n - 1;
    } else {
      kg_buf_append(&out, c, 1);
    }
  }
  return out.data ? out.data : kg_xstrdup("");
}

/* The reason of an Azure error answer: "HTTP STATUS CODE: MESSAGE" (the error code from x-ms-error-code or the
 * XML body, the message's first line). */
static void azure_reason(const kg_http_response_t *r, char *out, size_t size) {
  if (!r->status) {
    snprintf(out, size, "%s", r->error);
    return;
  }
  const char *end = r->body.data ? r->body.data + r->body.len : NULL;
  char *code = r->body.len ? xml_text(r->body.data, end, "Code", NULL) : NULL;
  char *message = r->body.len ? xml_text(r->body.data, end, "Message", NULL) : NULL;
  const char *header = kg_http_response_header(r, "x-ms-error-code");
  const char *c = header ? header : code ? code : "";
  size_t line = message ? strcspn(message, "\r\n") : 0;
  snprintf(out, size, "HTTP %ld%s%s%s%.*s", r->status, *c ? " " : "", c, line ? ": " : "", (int)line,
           message ? message : "");
  free(code);
  free(message);
}

/* The error code of an answer ("" when it gives none). Valid while R lives, or copied into OUT. */
static void error_code(const kg_http_response_t *r, char *out, size_t size) {
  const char *header = kg_http_response_header(r, "x-ms-error-code");
  if (header) {
    snprintf(out, size, "%s", header);
    return;
  }
  char *code = r->body.len ? xml_text(r->body.data, r->body.data + r->body.len, "Code", NULL) : NULL;
  snprintf(out, size, "%s", code ? code : "");
  free(code);
}

/* The start of every error about BLOB (NULL: the container): "Azure Blob account A, container C[, blob B]". */
static void where(const azure_t *a, const char *blob, char *out, size_t size) {
  snprintf(out, size, "Azure Blob account %s, container %s%s%s", a->account, a->container, blob ? ", blob " : "",
           blob ? blob : "");
}

/* A request's body: none, memory, or bytes of a file. */
typedef struct {
  const char *method;
  const char *blob;  /* NULL: the container */
  const char *query; /* escaped; NULL: none */
  const char *const *headers;
  kg_http_body_t body;
  kg_http_answer_kind_t answer;
} azure_req_t;

/* Makes Q, trying again on 5xx, 408, 429 and no answer, within the options' bounds. Returns KG_OK when an answer of
 * any status came (into R, which the caller judges and frees), or KG_EIO naming the container or blob, the URL and
 * what went wrong. */
static int perform(const azure_t *a, const azure_req_t *q, kg_http_response_t *r, char *errbuf) {
  char at[512];
  where(a, q->blob, at, sizeof at);
  if (!a->key)
    return kg_fail(errbuf, KG_EINVAL, "%s: no key: set %s (or AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY)", at,
                   a->key_property);
  char *url = url_of(a, q->blob, q->query);
  kg_http_request_t req = {
      .method = q->method,
      .url = url,
      .headers = q->headers,
      .body = q->body,
      .answer = {.kind = q->answer, .cap = AZURE_MAX_ANSWER},
      .connect_timeout_ms = AZURE_CONNECT_TIMEOUT_MS,
      .auth = {.sign = kg_azure_sign, .sign_arg = a->key, .sign_unhashed = true},
      .retry = {.attempts = a->retries + 1,
                .pause_ms = a->min_backoff_ms,
                .max_pause_ms = a->max_backoff_ms,
                .retry_after = true,
                .interruptible = true,
                .retry_on = KG_HTTP_RETRY_CONNECT | KG_HTTP_RETRY_TRANSPORT | KG_HTTP_RETRY_STATUS},
      .any_status = true,
      .reason = azure_reason,
      .service = "Azure Blob"};
  if (q->body.kind != KG_HTTP_BODY_NONE)
    req.stall_ms = AZURE_TIMEOUT_MS; /* an upload takes as long as it takes; a stalled one fails */
  else
    req.timeout_ms = AZURE_TIMEOUT_MS;
  char why[KG_ERRLEN];
  int rc = kg_http_perform(NULL, &req, r, why);
  free(url);
  if (rc == KG_OK && r->status >= 500)
    return kg_fail(errbuf, KG_EIO, "%s: %s", at, why[0] ? why : "the service failed");
  if (rc == KG_OK) return KG_OK;
  if (r->status >= 500) return kg_fail(errbuf, KG_EIO, "%s: %s", at, why);
  return kg_fail(errbuf, rc == KG_EINVAL ? KG_EINVAL : KG_EIO, "%s: %s", at, why);
}

/* KG_EIO naming the request and the answer's status, code and message (a 2xx is not an error: KG_OK). */
static int answer_error(const azure_t *a, const azure_req_t *q, const kg_http_response_t *r, char *errbuf) {
  if (r->status >= 200 && r->status < 300) return KG_OK;
  char at[512], reason[768], code[128];
  where(a, q->blob, at, sizeof at);
  azure_reason(r, reason, sizeof reason);
  error_code(r, code, sizeof code);
  const char *hint = "";
  if (!strcmp(code, "AuthenticationFailed") || !strcmp(code, "AuthorizationFailure") || r->status == 403)
    hint = ": the account's key is refused (check fs.azure.account.key.<account>..., and the machine's clock)";
  else if (!strcmp(code, "ContainerNotFound"))
    hint = ": the container does not exist (kingest does not create it)";
  return kg_fail(errbuf, KG_EIO, "%s: %s %s: %s%s", at, q->method, q->blob ? "blob" : "container", reason, hint);
}

/* Sends Q and fails unless its answer is a 2xx. */
static int call(const azure_t *a, const azure_req_t *q, kg_http_response_t *r, char *errbuf) {
  int rc = perform(a, q, r, errbuf);
  return rc ? rc : answer_error(a, q, r, errbuf);
}

/* A new upload id: AZURE_UPLOAD_ID_LEN hex digits. */
static char *new_upload_id(void) {
  unsigned char bytes[AZURE_UPLOAD_ID_LEN / 2];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0)
      got += (size_t)n;
    else if (errno != EINTR)
      break;
  }
  if (got < sizeof bytes) { /* no entropy source: time and pid still make clashes unlikely */
    uint64_t t = (uint64_t)kg_now_ms() ^ ((uint64_t)getpid() << 40);
    memcpy(bytes, &t, sizeof bytes < sizeof t ? sizeof bytes : sizeof t);
  }
  char *id = kg_xmalloc(AZURE_UPLOAD_ID_LEN + 1);
  for (size_t i = 0; i < sizeof bytes; i++)
    snprintf(id + 2 * i, 3, "%02x", bytes[i]);
  return id;
}

/* The block id of block I of upload ID, base64 (all of one length). */
static void block_id(const char *upload_id, size_t i, kg_buf_t *out) {
  char raw[64];
  snprintf(raw, sizeof raw, "%.*s-%06zu", AZURE_UPLOAD_ID_LEN, upload_id, i);
  kg_base64_encode(out, raw, strlen(raw));
}

/* The ETag of answer R without its quotes, as a new string (NULL without one). */
static char *etag_of(const kg_http_response_t *r) {
  const char *e = kg_http_response_header(r, "ETag");
  if (!e) return NULL;
  size_t n = strlen(e);
  if (n >= 2 && e[0] == '"' && e[n - 1] == '"') return kg_xstrndup(e + 1, n - 2);
  return kg_xstrdup(e);
}

/* ---- the object-store calls ----------------------------------------------------------------------------- */

static int az_upload_begin(kg_fs_t *fs, const char *path, char **upload_id, char *errbuf) {
  (void)fs, (void)path, (void)errbuf;
  *upload_id = new_upload_id(); /* Azure's blocks need no call to begin: the id is the blocks' own */
  return KG_OK;
}

static int az_head(kg_fs_t *fs, const char *path, kg_fs_object_t *out, char *errbuf) {
  const azure_t *a = fs->data;
  *out = (kg_fs_object_t){.size = -1};
  azure_req_t q = {.method = "HEAD", .blob = blob_of(path)};
  kg_http_response_t r = {0};
  int rc = perform(a, &q, &r, errbuf);
  if (!rc && r.status == 404) {
    /* HEAD has no body: the code is in the header. A missing container is an error, a missing blob is not. */
    char code[128];
    error_code(&r, code, sizeof code);
    if (strcmp(code, "ContainerNotFound")) {
      kg_http_response_free(&r);
      return KG_OK;
    }
  }
  if (!rc) rc = answer_error(a, &q, &r, errbuf);
  if (!rc) {
    const char *len = kg_http_response_header(&r, "Content-Length");
    out->path = kg_xstrdup(path);
    out->size = len ? strtoll(len, NULL, 10) : 0;
    out->etag = etag_of(&r);
    const char *mark = kg_http_response_header(&r, "x-ms-meta-kingestupload");
    if (mark) out->upload_id = kg_xstrdup(mark);
  }
  kg_http_response_free(&r);
  return rc;
}

/* After a 409 or 412 on a blob written under If-None-Match: * by a request tried more than once: true in *OURS when
 * the blob there is this upload's (an earlier try of the request made it, and its answer was lost). */
static int written_by(kg_fs_t *fs, const char *path, const char *upload_id, bool *ours, char *errbuf) {
  kg_fs_object_t there;
  int rc = az_head(fs, path, &there, errbuf);
  *ours = !rc && there.upload_id && !strcmp(there.upload_id, upload_id);
  kg_fs_object_clear(&there);
  return rc;
}

static int az_put_new(kg_fs_t *fs, const char *local_path, const char *path, const char *upload_id, kg_fs_object_t *out,
                      bool *exists, char *errbuf) {
  const azure_t *a = fs->data;
  const char *blob = blob_of(path);
  *exists = false;
  *out = (kg_fs_object_t){.size = -1};
  char at[512];
  where(a, blob, at, sizeof at);
  int fd = open(local_path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) {
    int e = errno;
    if (fd >= 0) close(fd);
    return kg_fail(errbuf, KG_EIO, "%s: cannot read %s: %s", at, local_path, strerror(e));
  }
  int64_t size = (int64_t)st.st_size;
  char *own_id = upload_id ? NULL : new_upload_id();
  const char *id = upload_id ? upload_id : own_id;
  char meta[64];
  snprintf(meta, sizeof meta, "x-ms-meta-kingestupload: %s", id);
  kg_http_response_t r = {0};
  int rc = KG_OK, attempts = 0;
  long status = 0;
  char code[128] = "";
  if (size <= a->block_size) {
    const char *const headers[] = {"x-ms-blob-type: BlockBlob", "If-None-Match: *",
                                   "Content-Type: application/octet-stream", meta, NULL};
    azure_req_t q = {.method = "PUT",
                     .blob = blob,
                     .headers = headers,
                     .body = {.kind = KG_HTTP_BODY_FILE, .fd = fd, .len = size},
                     .answer = KG_HTTP_ANSWER_DISCARD};
    rc = perform(a, &q, &r, errbuf);
    if (!rc) {
      status = r.status, attempts = r.attempts;
      error_code(&r, code, sizeof code);
      if (status != 409 && status != 412) rc = answer_error(a, &q, &r, errbuf);
    }
  } else {
    int64_t nblocks = size ? (size + a->block_size - 1) / a->block_size : 0;
    if (nblocks > AZURE_MAX_BLOCKS)
      rc = kg_fail(errbuf, KG_EINVAL,
                   "%s: %s is %lld bytes: more than %d blocks of fs.azure.write.request.size=%lld; raise it", at,
                   local_path, (long long)size, AZURE_MAX_BLOCKS, (long long)a->block_size);
    kg_buf_t list = {0};
    kg_buf_appendf(&list, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
    for (int64_t i = 0; !rc && i < nblocks; i++) {
      kg_buf_t bid = {0}, query = {0};
      block_id(id, (size_t)i, &bid);
      kg_buf_appendf(&query, "comp=block&blockid=");
      kg_buf_append_url_escaped(&query, bid.data, false);
      int64_t off = i * a->block_size, len = size - off < a->block_size ? size - off : a->block_size;
      static const char *const headers[] = {"Content-Type: application/octet-stream", NULL};
      azure_req_t q = {.method = "PUT",
                       .blob = blob,
                       .query = query.data,
                       .headers = headers,
                       .body = {.kind = KG_HTTP_BODY_FILE, .fd = fd, .offset = off, .len = len},
                       .answer = KG_HTTP_ANSWER_DISCARD};
      kg_http_response_free(&r);
      rc = call(a, &q, &r, errbuf);
      if (!rc) kg_crash_point("block"); /* a block sent, its blob not committed */
      kg_buf_appendf(&list, "<Latest>%s</Latest>", bid.data);
      kg_buf_free(&bid);
      kg_buf_free(&query);
    }
    kg_buf_appendf(&list, "</BlockList>");
    if (!rc) {
      const char *const headers[] = {"If-None-Match: *", "Content-Type: application/xml", meta, NULL};
      azure_req_t q = {.method = "PUT",
                       .blob = blob,
                       .query = "comp=blocklist",
                       .headers = headers,
                       .body = {.kind = KG_HTTP_BODY_MEMORY, .data = list.data, .len = (int64_t)list.len},
                       .answer = KG_HTTP_ANSWER_BUFFER};
      kg_http_response_free(&r);
      rc = perform(a, &q, &r, errbuf);
      if (!rc) {
        status = r.status, attempts = r.attempts;
        error_code(&r, code, sizeof code);
        if (status != 409 && status != 412) rc = answer_error(a, &q, &r, errbuf);
      }
    }
    kg_buf_free(&list);
  }
  close(fd);
  if (!rc && (status == 409 || status == 412)) {
    bool ours = false;
    if (attempts > 1) rc = written_by(fs, path, id, &ours, errbuf);
    if (!rc && !ours) {
      *exists = true;
      rc = kg_fail(errbuf, KG_EIO,
                   "%s: PUT blob: HTTP %ld %s: a blob is there already, which kingest never overwrites (If-None-Match: "
                   "*)",
                   at, status, code[0] ? code : "BlobAlreadyExists");
    }
    if (!rc) {
      kg_fs_object_t now;
      rc = az_head(fs, path, &now, errbuf);
      if (!rc) *out = now;
    }
  } else if (!rc) {
    out->path = kg_xstrdup(path);
    out->size = size;
    out->etag = etag_of(&r);
  }
  kg_http_response_free(&r);
  free(own_id);
  return rc;
}

/* One page of a listing of the container: blobs under PREFIX (escaped in the query), after MARKER; DELIMITER "/" or
 * NULL. Appends each blob to *OUT and, with a delimiter, each folder's name (less PREFIX, with its "/") as a path of
 * size -1; *MARKER becomes the next page's marker (NULL after the last). */
static int list_page(const azure_t *a, const char *prefix, const char *delimiter, char **marker, kg_fs_object_t **out,
                     size_t *count, char *errbuf) {
  kg_buf_t query = {0};
  kg_buf_appendf(&query, "restype=container&comp=list&prefix=");
  kg_buf_append_url_escaped(&query, prefix, false);
  if (delimiter) kg_buf_appendf(&query, "&delimiter=%%2F");
  if (*marker) {
    kg_buf_appendf(&query, "&marker=");
    kg_buf_append_url_escaped(&query, *marker, false);
  }
  azure_req_t q = {.method = "GET", .query = query.data};
  kg_http_response_t r = {0};
  int rc = call(a, &q, &r, errbuf);
  free(*marker);
  *marker = NULL;
  if (!rc) {
    const char *p = r.body.data ? r.body.data : "", *end = p + r.body.len;
    const char *blobs = strstr(p, "<Blobs>");
    for (const char *at = blobs; at && at < end;) {
      const char *b = memmem(at, (size_t)(end - at), "<Blob>", 6),
                 *f = memmem(at, (size_t)(end - at), "<BlobPrefix>", 12);
      if (!b && !f) break;
      bool folder = f && (!b || f < b);
      const char *start = folder ? f : b;
      const char *close = memmem(start, (size_t)(end - start), folder ? "</BlobPrefix>" : "</Blob>", folder ? 13 : 7);
      if (!close) break;
      char *name = xml_text(start, close, "Name", NULL);
      if (name) {
        *out = kg_xrealloc(*out, (*count + 1) * sizeof **out);
        kg_fs_object_t *o = &(*out)[(*count)++];
        *o = (kg_fs_object_t){.size = -1};
        o->path = kg_xasprintf("/%s", name);
        if (!folder) {
          char *len = xml_text(start, close, "Content-Length", NULL), *etag = xml_text(start, close, "Etag", NULL);
          o->size = len ? strtoll(len, NULL, 10) : 0;
          if (etag) {
            size_t n = strlen(etag);
            o->etag = n >= 2 && etag[0] == '"' && etag[n - 1] == '"' ? kg_xstrndup(etag + 1, n - 2) : kg_xstrdup(etag);
          }
          free(len);
          free(etag);
        }
        free(name);
      }
      at = close;
    }
    char *next = xml_text(p, end, "NextMarker", NULL);
    if (next && *next)
      *marker = next;
    else
      free(next);
  }
  kg_http_response_free(&r);
  kg_buf_free(&query);
  return rc;
}

/* Every blob under PREFIX (the blob name's start), as list_page says, all pages. */
static int list_all(const azure_t *a, const char *prefix, const char *delimiter, kg_fs_object_t **out, size_t *count,
                    char *errbuf) {
  *out = NULL;
  *count = 0;
  char *marker = NULL;
  int rc;
  do {
    rc = list_page(a, prefix, delimiter, &marker, out, count, errbuf);
  } while (!rc && marker);
  free(marker);
  if (rc) {
    kg_fs_objects_free(*out, *count);
    *out = NULL;
    *count = 0;
  }
  return rc;
}

static int az_list(kg_fs_t *fs, const char *prefix, kg_fs_object_t **out, size_t *count, char *errbuf) {
  return list_all(fs->data, blob_of(prefix), NULL, out, count, errbuf);
}

/* Azure keeps a blob's uncommitted blocks until the blob is committed (when those not in its list are dropped) or for
 * a week, and has no call that drops them sooner: an abort leaves them, invisible to every reader, and an upload to
 * the same path commits over them. For the same reason there is no list_uploads: an upload begins with no request,
 * so a run killed before its journal has sent no block, and blocks sent under a journal go when the recovery's new
 * upload is committed. */
static int az_abort_upload(kg_fs_t *fs, const char *path, const char *upload_id, char *errbuf) {
  (void)fs, (void)errbuf;
  KG_DEBUG("Azure Blob: the uncommitted blocks of upload %s of %s stay until the blob is committed or for a week",
           upload_id, path);
  return KG_OK;
}

static int az_remove(kg_fs_t *fs, const char *path, char *errbuf) {
  const azure_t *a = fs->data;
  static const char *const headers[] = {"x-ms-delete-snapshots: include", NULL};
  azure_req_t q = {.method = "DELETE", .blob = blob_of(path), .headers = headers};
  kg_http_response_t r = {0};
  int rc = perform(a, &q, &r, errbuf);
  if (!rc && r.status == 404) {
    char code[128];
    error_code(&r, code, sizeof code);
    if (!strcmp(code, "BlobNotFound")) r.status = 202;
  }
  if (!rc) rc = answer_error(a, &q, &r, errbuf);
  kg_http_response_free(&r);
  return rc;
}

static const kg_fs_object_ops_t object_ops = {
    .multipart_threshold = 0, /* set per file system: see open */
};

/* ---- the kg_fs_t functions ------------------------------------------------------------------------------ */

static int az_mkdirs(kg_fs_t *fs, const char *path, char *errbuf) {
  (void)fs, (void)path, (void)errbuf;
  return KG_OK; /* folders are the prefixes of names */
}

static int az_create(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf) {
  (void)fs, (void)path, (void)mode;
  *out = NULL;
  return kg_fail(errbuf, KG_EINVAL,
                 "Azure Blob cannot hold files being written (blobs are written whole, when published): keep "
                 "task.data.root.dir on the local disk or HDFS");
}

static int az_exists(kg_fs_t *fs, const char *path, bool *exists, char *errbuf) {
  kg_fs_object_t o;
  int rc = az_head(fs, path, &o, errbuf);
  *exists = !rc && o.size >= 0;
  kg_fs_object_clear(&o);
  if (rc || *exists) return rc;
  /* A folder: some name starts with PATH/. */
  kg_buf_t prefix = {0};
  kg_buf_appendf(&prefix, "%s/", blob_of(path));
  kg_fs_object_t *objects = NULL;
  size_t count = 0;
  char *marker = NULL;
  rc = list_page(fs->data, prefix.data, "/", &marker, &objects, &count, errbuf);
  *exists = !rc && count > 0;
  free(marker);
  kg_fs_objects_free(objects, count);
  kg_buf_free(&prefix);
  return rc;
}

static int az_list_names(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf) {
  *names = NULL;
  *count = 0;
  kg_buf_t prefix = {0};
  const char *blob = blob_of(path);
  kg_buf_appendf(&prefix, "%s%s", blob, *blob ? "/" : "");
  kg_fs_object_t *objects = NULL;
  size_t n = 0;
  int rc = list_all(fs->data, prefix.data, "/", &objects, &n, errbuf);
  if (!rc && n) *names = kg_xcalloc(n, sizeof **names);
  for (size_t i = 0; !rc && i < n; i++) {
    const char *name = objects[i].path + 1 + prefix.len;
    size_t len = strlen(name);
    if (len && name[len - 1] == '/') len--;
    (*names)[(*count)++] = kg_xstrndup(name, len);
  }
  kg_fs_objects_free(objects, n);
  kg_buf_free(&prefix);
  return rc;
}

static int az_remove_tree(kg_fs_t *fs, const char *path, char *errbuf) {
  kg_buf_t prefix = {0};
  kg_buf_appendf(&prefix, "%s/", blob_of(path));
  kg_fs_object_t *objects = NULL;
  size_t n = 0;
  int rc = list_all(fs->data, prefix.data, NULL, &objects, &n, errbuf);
  for (size_t i = 0; !rc && i < n; i++)
    rc = az_remove(fs, objects[i].path, errbuf);
  if (!rc && *blob_of(path)) rc = az_remove(fs, path, errbuf);
  kg_fs_objects_free(objects, n);
  kg_buf_free(&prefix);
  return rc;
}

static int az_sync(kg_fs_t *fs, const char *path, char *errbuf) {
  (void)fs, (void)path, (void)errbuf;
  return KG_OK; /* a blob is durable once its Put Blob or Put Block List is answered */
}

/* The container must exist and the key be taken: Get Container Properties. */
static int az_check_writable(kg_fs_t *fs, const char *path, const char *property, char *errbuf) {
  const azure_t *a = fs->data;
  azure_req_t q = {.method = "GET", .query = "restype=container"};
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = call(a, &q, &r, why);
  kg_http_response_free(&r);
  (void)path;
  if (rc) return kg_fail(errbuf, rc, "%s: %s", property, why);
  return KG_OK;
}

static int az_same_volume(kg_fs_t *fs, const char *a, const char *b, bool *same, char *errbuf) {
  (void)fs, (void)a, (void)b, (void)errbuf;
  *same = true; /* one container; nothing is renamed in it anyway */
  return KG_OK;
}

static int az_put(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf) {
  kg_fs_object_t o;
  bool exists = false;
  int rc = az_put_new(fs, local_path, path, NULL, &o, &exists, errbuf);
  if (rc && exists) snprintf(errbuf, KG_ERRLEN, "File exists");
  kg_fs_object_clear(&o);
  return rc;
}

static int az_read(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf) {
  azure_req_t q = {.method = "GET", .blob = blob_of(path)};
  kg_http_response_t r = {0};
  int rc = call(fs->data, &q, &r, errbuf);
  if (!rc) kg_buf_append(out, r.body.data ? r.body.data : "", r.body.len);
  kg_http_response_free(&r);
  return rc;
}

static void az_close(kg_fs_t *fs) {
  azure_t *a = fs->data;
  if (a) {
    free(a->account);
    free(a->container);
    free(a->endpoint);
    free(a->key_property);
    kg_azure_key_destroy(a->key);
    free(a);
  }
  free((void *)fs->object);
  free(fs);
}

/* Parses URI: SCHEME://CONTAINER@ACCOUNT.(blob|dfs).SUFFIX[/], into *CONTAINER, *ACCOUNT and *HOST (the key's host,
 * ACCOUNT.blob.SUFFIX or ACCOUNT.dfs.SUFFIX) and *BLOB_HOST (ACCOUNT.blob.SUFFIX); *TLS for wasbs and abfss. */
static int parse_uri(const char *uri, char **container, char **account, char **host, char **blob_host, bool *tls,
                     char *errbuf) {
  static const char *const schemes[] = {"wasbs", "wasb", "abfss", "abfs"};
  const char *sep = strstr(uri, "://");
  size_t sn = sep ? (size_t)(sep - uri) : 0;
  bool known = false;
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
    if (sn == strlen(schemes[i]) && !strncmp(uri, schemes[i], sn)) known = true;
  const char *rest = sep ? sep + 3 : "";
  const char *at = strchr(rest, '@');
  const char *slash = strchr(rest, '/');
  const char *end = slash ? slash : rest + strlen(rest);
  const char *dot = at ? strchr(at + 1, '.') : NULL;
  bool blob = dot && !strncmp(dot, ".blob.", 6), dfs = dot && !strncmp(dot, ".dfs.", 5);
  if (!known || !at || at > end || at == rest || !dot || dot > end || (!blob && !dfs) || (slash && slash[1]))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: expected wasbs://CONTAINER@ACCOUNT.blob.core.windows.net (or abfss://CONTAINER@ACCOUNT.dfs."
                   "core.windows.net), with the folder in the path property (data.publisher.final.dir)",
                   uri);
  *tls = uri[sn - 1] == 's';
  *container = kg_xstrndup(rest, (size_t)(at - rest));
  *account = kg_xstrndup(at + 1, (size_t)(dot - at - 1));
  *host = kg_xstrndup(at + 1, (size_t)(end - at - 1));
  const char *suffix = dot + (blob ? 6 : 5);
  *blob_host = kg_xasprintf("%s.blob.%.*s", *account, (int)(end - suffix), suffix);
  return KG_OK;
}

int kg_fs_azure_open(const char *uri, const void *options, kg_fs_t **out, char *errbuf) {
  *out = NULL;
  const azure_options_t *o = options;
  char *container = NULL, *account = NULL, *host = NULL, *blob_host = NULL;
  bool tls = true;
  int rc = parse_uri(uri, &container, &account, &host, &blob_host, &tls, errbuf);
  if (rc) return rc;
  azure_t *a = kg_xcalloc(1, sizeof *a);
  a->account = account;
  a->container = container;
  a->block_size = o ? o->block_size : 8 << 20;
  a->retries = o ? o->retries : 5;
  a->min_backoff_ms = o ? o->min_backoff_ms : 500;
  a->max_backoff_ms = o ? o->max_backoff_ms : 10000;
  a->endpoint = o && o->endpoint && *o->endpoint ? kg_xstrdup(o->endpoint)
                                                 : kg_xasprintf("%s://%s", tls ? "https" : "http", blob_host);
  a->key_property = kg_xasprintf("fs.azure.account.key.%s", host);
  /* The key: of the URI's host, else of the account's blob host, else the environment's. */
  const char *key = NULL;
  for (size_t i = 0; o && i < o->nkeys && !key; i++)
    if (!strcmp(o->keys[i].host, host)) key = o->keys[i].value;
  for (size_t i = 0; o && i < o->nkeys && !key; i++)
    if (!strcmp(o->keys[i].host, blob_host)) key = o->keys[i].value;
  const char *env_account = getenv("AZURE_STORAGE_ACCOUNT"), *env_key = getenv("AZURE_STORAGE_KEY");
  if (!key && env_account && env_key && *env_key && !strcmp(env_account, account)) {
    key = env_key;
    kg_secret_note(env_key);
  }
  if (key) rc = kg_azure_key_new(account, key, &a->key, errbuf);
  free(host);
  free(blob_host);
  kg_fs_t *fs = kg_xcalloc(1, sizeof *fs);
  kg_fs_object_ops_t *ops = kg_xmalloc(sizeof *ops);
  *ops = object_ops;
  ops->multipart_threshold = a->block_size + 1;
  ops->part_size = a->block_size;
  ops->concurrency = 1;
  ops->marks_objects = true; /* x-ms-meta-kingestupload */
  ops->expected_etag = NULL; /* Azure's ETags are the service's own, not a digest of the bytes */
  ops->upload_begin = az_upload_begin;
  ops->put_new = az_put_new;
  ops->head = az_head;
  ops->list = az_list;
  ops->list_uploads = NULL; /* see az_abort_upload */
  ops->abort_upload = az_abort_upload;
  ops->remove = az_remove;
  *fs = (kg_fs_t){.scheme = "wasbs",
                  .mkdirs = az_mkdirs,
                  .create = az_create,
                  .rename = NULL,
                  .exists = az_exists,
                  .list = az_list_names,
                  .remove_tree = az_remove_tree,
                  .sync = az_sync,
                  .check_writable = az_check_writable,
                  .same_volume = az_same_volume,
                  .put = az_put,
                  .read = az_read,
                  .close = az_close,
                  .object = ops,
                  .data = a};
  if (rc) {
    az_close(fs);
    return rc;
  }
  *out = fs;
  return KG_OK;
}
