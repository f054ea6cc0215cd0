/* fs_webhdfs.c: HDFS over WebHDFS (webhdfs://[USER@]HOST:PORT, PORT the NameNode's HTTP port; swebhdfs://HOST:PORT
 * over HTTPS) behind the kg_fs_t interface, over the engine's HTTP client (http.h).
 *
 * Every call is one or two REST requests to /webhdfs/v1<path>?op=...: with simple authentication,
 * &user.name=USER (the NameNode believes the name); with Kerberos (hadoop.security.authentication=kerberos), each
 * call to the NameNode authenticates with SPNEGO, libcurl's GSS-API taking the ticket of kerberos.principal from
 * kerberos.keytab by itself (MIT Kerberos's client keytab, into a ticket cache in memory of this process alone);
 * with a delegation token (a map of the Hadoop mode), &delegation=TOKEN and nothing else. The NameNode's answers
 * that name a DataNode carry a delegation token of its own for that DataNode. A stream spools its bytes into an unnamed
 * local temporary file, where truncate can take bytes back, and hands them to HDFS on sync or close: the first time
 * with CREATE (overwrite=false: never replaces a file), later with APPEND. Both are two requests: the NameNode names a
 * DataNode (noredirect=true, so the answer is JSON and not a 307), and the bytes go there in a request of their
 * own, never along a redirect. Bytes handed to HDFS cannot be taken back.
 *
 * Thread safety: the kg_fs_t is read-only after open and each request has its own connection, so tasks on
 * different threads share one file system; a stream belongs to one thread.
 *
 * Retries: a request that could not connect, timed out, got a 5xx, or got one of the exceptions a NameNode
 * gives while it restarts (an EOFException on a connection to its old self, RetriableException while it
 * starts) is tried again a few times with growing pauses. RENAME is not idempotent, so it is tried again only
 * when the NameNode cannot have done it: a refused connection or an answer saying the call failed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"
#include "hadoop_token.h"
#include "http.h"
#include "json.h"
#include "parse.h"

#include <pthread.h>

#define WEBHDFS_ATTEMPTS           4          /* tries of one request, by default */
#define WEBHDFS_RETRY_PAUSE_MS     250        /* pause before the second try; doubles for each next one */
#define WEBHDFS_CONNECT_TIMEOUT_MS 3000       /* to open a connection, by default */
#define WEBHDFS_TIMEOUT_MS         30000      /* for a whole metadata request, and for an upload without progress */
#define WEBHDFS_MAX_ANSWER         (64 << 20) /* bytes of an answer body (a LISTSTATUS of a large folder) */

/* One WebHDFS file system: what open parsed from the URI and the options; read-only afterwards. */
typedef struct {
  char *base;      /* "http://HOST:PORT/webhdfs/v1" (https for swebhdfs), owned */
  char *name;      /* "webhdfs://HOST:PORT", for messages, owned */
  char *user;      /* user.name, URL-escaped, owned (simple authentication) */
  int attempts;    /* tries of one request */
  long connect_ms; /* connect timeout, ms */
  long timeout_ms; /* a metadata request's timeout, and an upload's longest stall, ms */
  bool kerberos;   /* hadoop.security.authentication=kerberos (or auth=kerberos in the URI) */
  char *principal; /* kerberos.principal, owned; NULL with simple authentication */
  char *keytab;    /* kerberos.keytab, owned; NULL with simple authentication or a token */
  char *token;     /* a delegation token (a secret: never shown), owned: every call carries it instead of SPNEGO */
  char *ca_file;   /* webhdfs.ssl.ca.location, owned; NULL: the system's CAs */
} webhdfs_t;

/* ---- Kerberos of the process ---------------------------------------------------------------------------- */

/* MIT Kerberos reads the client keytab and the ticket cache from the environment: one Kerberos identity per
 * process, set by the first file system that opens with Kerberos; a later one must be the same. */
static pthread_mutex_t login_mutex = PTHREAD_MUTEX_INITIALIZER;
static char *login_principal, *login_keytab;
/* A delegation token every file system opened with Kerberos uses instead of SPNEGO (a map's; kg_fs_webhdfs_use_token).
 */
static char *process_token;

void kg_fs_webhdfs_use_token(const char *token) {
  pthread_mutex_lock(&login_mutex);
  free(process_token);
  process_token = token ? kg_xstrdup(token) : NULL;
  pthread_mutex_unlock(&login_mutex);
}

/* Points this process's Kerberos at KEYTAB for PRINCIPAL: KRB5_CLIENT_KTNAME, and a ticket cache in memory of its
 * own (never the user's default cache). KG_EINVAL when another principal or keytab got it first. */
static int login(const char *uri, const char *principal, const char *keytab, char *errbuf) {
  int rc = KG_OK;
  pthread_mutex_lock(&login_mutex);
  if (!login_principal) {
    char *cache = kg_xasprintf("MEMORY:kingest-%ld-%p", (long)getpid(), (void *)&login_mutex);
    setenv("KRB5_CLIENT_KTNAME", keytab, 1);
    setenv("KRB5CCNAME", cache, 1);
    free(cache);
    login_principal = kg_xstrdup(principal);
    login_keytab = kg_xstrdup(keytab);
  } else if (strcmp(login_principal, principal) || strcmp(login_keytab, keytab)) {
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: kerberos.principal=%s with kerberos.keytab=%s: this run already logged in to Kerberos as %s "
                 "with %s, and one run has one Kerberos identity",
                 uri, principal, keytab, login_principal, login_keytab);
  }
  pthread_mutex_unlock(&login_mutex);
  return rc;
}

/* Checks, before any request, that KEYTAB can be read and holds keys of PRINCIPAL, and that PRINCIPAL is its first
 * principal (the one MIT Kerberos logs in as from a client keytab). */
static int check_keytab(const char *uri, const char *principal, const char *keytab, char *errbuf) {
  char **names = NULL;
  size_t count = 0;
  char why[KG_ERRLEN];
  int rc = kg_keytab_principals(keytab, &names, &count, why);
  if (rc) {
    kg_keytab_principals_free(names, count);
    return kg_fail(errbuf, KG_EINVAL, "%s: kerberos.keytab=%s (for kerberos.principal=%s): %s", uri, keytab, principal,
                   why);
  }
  kg_buf_t held = {0};
  for (size_t i = 0; i < count; i++)
    kg_buf_appendf(&held, "%s%s", i ? ", " : "", names[i]);
  if (!count) {
    rc = kg_fail(errbuf, KG_EINVAL, "%s: kerberos.keytab=%s holds no keys (kerberos.principal=%s)", uri, keytab,
                 principal);
  } else if (!kg_keytab_principal_matches(principal, names[0])) {
    bool there = false;
    for (size_t i = 1; i < count; i++)
      there = there || kg_keytab_principal_matches(principal, names[i]);
    if (there)
      rc = kg_fail(errbuf, KG_EINVAL,
                   "%s: kerberos.keytab=%s holds %s: kerberos.principal=%s must be its first principal (Kerberos "
                   "logs in from a keytab as the first one)",
                   uri, keytab, held.data, principal);
    else
      rc = kg_fail(errbuf, KG_EINVAL, "%s: kerberos.keytab=%s has no keys of kerberos.principal=%s (it holds: %s)", uri,
                   keytab, principal, held.data);
  }
  kg_buf_free(&held);
  kg_keytab_principals_free(names, count);
  return rc;
}

/* ---- URLs ---------------------------------------------------------------------------------------------- */

/* How a URL to the NameNode authenticates: "&user.name=USER" (simple), "&delegation=TOKEN", or nothing (SPNEGO). */
static void append_auth(kg_buf_t *b, const webhdfs_t *w) {
  if (w->token)
    kg_buf_appendf(b, "&delegation=%s", w->token);
  else if (!w->kerberos)
    kg_buf_appendf(b, "&user.name=%s", w->user);
}

/* The URL of operation OP on PATH, with EXTRA ("&name=value...", already escaped) appended. Owned by the caller. */
static char *op_url(const webhdfs_t *w, const char *path, const char *op, const char *extra) {
  kg_buf_t b = {0};
  kg_buf_appendf(&b, "%s", w->base);
  kg_buf_append_url_escaped(&b, path, true);
  kg_buf_appendf(&b, "?op=%s", op);
  append_auth(&b, w);
  kg_buf_appendf(&b, "%s", extra ? extra : "");
  return b.data;
}

/* ---- requests ------------------------------------------------------------------------------------------ */

/* A body to upload: bytes [OFFSET, OFFSET + LEN) of file FD. */
typedef struct {
  int fd;
  int64_t offset;
  int64_t len;
} upload_t;

/* How a request may be tried again. */
typedef enum {
  RETRY_IDEMPOTENT, /* any transport failure, 5xx or restart exception: doing it twice is doing it once */
  RETRY_UNDONE,     /* only when the operation cannot have happened: no connection, or a 5xx / restart exception */
  RETRY_UNSENT,     /* only when no connection was made (the caller judges every answer) */
} retry_t;

/* The exception of a RemoteException answer, or "". */
static void remote_exception(const kg_http_response_t *r, char *name, size_t name_size, char *message,
                             size_t message_size) {
  name[0] = message[0] = 0;
  kg_json_t *doc = NULL;
  char err[KG_ERRLEN];
  if (!r->body.len || kg_json_parse(r->body.data, r->body.len, "WebHDFS answer", &doc, err)) return;
  const kg_json_t *e = kg_json_get(doc, "RemoteException");
  const kg_json_t *ex = kg_json_get(e, "exception"), *msg = kg_json_get(e, "message");
  if (ex && ex->type == KG_JSON_STRING) snprintf(name, name_size, "%s", ex->string);
  if (msg && msg->type == KG_JSON_STRING) {
    /* The first line: the rest is the NameNode's stack trace. */
    size_t line = strcspn(msg->string, "\n");
    snprintf(message, message_size, "%.*s", (int)line, msg->string);
  }
  kg_json_free(doc);
}

/* True for an answer that says the operation failed without happening and may work when tried again: a 5xx, or
 * the exceptions of a NameNode that restarts (a DataNode's stale connection to it, its start-up safe mode). A
 * success carries no exception. */
static bool answer_is_transient(const kg_http_response_t *r) {
  if (r->status >= 500) return true;
  if (r->status < 400) return false;
  char name[128], message[16];
  remote_exception(r, name, sizeof name, message, sizeof message);
  return !strcmp(name, "EOFException") || !strcmp(name, "ConnectException") || !strcmp(name, "RetriableException") ||
         !strcmp(name, "StandbyException") || !strcmp(name, "SocketTimeoutException");
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) == -1) {
  }
}

/* The HTTP client's judge of one try, as the request's retry_t (ARG) allows. */
static kg_http_verdict_t judge(void *arg, const kg_http_response_t *r) {
  retry_t retry = *(const retry_t *)arg;
  if (r->failure == KG_HTTP_FAIL_NONE)
    return retry != RETRY_UNSENT && answer_is_transient(r) ? KG_HTTP_AGAIN : KG_HTTP_DONE;
  if (retry == RETRY_IDEMPOTENT) return KG_HTTP_AGAIN;
  return r->failure == KG_HTTP_FAIL_CONNECT ? KG_HTTP_AGAIN : KG_HTTP_DONE; /* the request never reached the server */
}

/* METHOD on URL (uploading UPLOAD when not NULL), tried again as RETRY allows, with pauses that double from
 * WEBHDFS_RETRY_PAUSE_MS. Never follows a redirect: WebHDFS's 307s lead to a DataNode, and an upload goes there as
 * a request of its own. Returns KG_OK when an answer came (any status: the caller judges it), or KG_EIO with the
 * transport failure of the last try in ERRBUF. */
static int request(const webhdfs_t *w, const char *method, const char *url, const upload_t *upload, retry_t retry,
                   kg_http_response_t *r, char *errbuf) {
  static const char *const plain[] = {"Accept: application/json", NULL};
  static const char *const octets[] = {"Accept: application/json", "Content-Type: application/octet-stream", NULL};
  kg_http_request_t req = {
      .method = method,
      .url = url,
      .headers = upload ? octets : plain,
      .answer = {.cap = WEBHDFS_MAX_ANSWER},
      .connect_timeout_ms = w->connect_ms,
      .retry = {.attempts = w->attempts, .pause_ms = WEBHDFS_RETRY_PAUSE_MS, .judge = judge, .judge_arg = &retry},
      .any_status = true,
      .service = "WebHDFS"};
  req.tls.ca_file = w->ca_file;
  /* SPNEGO with the NameNode only: a DataNode's URL carries the delegation token the NameNode put in it. */
  if (w->kerberos && !w->token && !strncmp(url, w->base, strlen(w->base))) req.auth.kind = KG_HTTP_AUTH_NEGOTIATE;
  if (upload) {
    req.body =
        (kg_http_body_t){.kind = KG_HTTP_BODY_FILE, .fd = upload->fd, .offset = upload->offset, .len = upload->len};
    /* A large file takes as long as it takes; a stalled one fails. The answer comes once the DataNode has closed the
     * file, which is within the same bound. */
    req.stall_ms = w->timeout_ms;
  } else {
    req.timeout_ms = w->timeout_ms;
  }
  char why[KG_ERRLEN];
  if (kg_http_perform(NULL, &req, r, why) == KG_OK) return KG_OK;
  if (!r->attempts) return kg_fail(errbuf, KG_EIO, "%s", why); /* libcurl cannot be loaded */
  if (r->failure == KG_HTTP_FAIL_TLS)
    return kg_fail(errbuf, KG_EIO, "WebHDFS at %s: TLS failed: %s (webhdfs.ssl.ca.location=%s)", w->name, r->error,
                   w->ca_file ? w->ca_file : "unset: the system's CAs");
  return kg_fail(errbuf, KG_EIO, "WebHDFS at %s did not answer: %s (%d attempt%s in %.1f s)", w->name, r->error,
                 r->attempts, r->attempts == 1 ? "" : "s", (double)r->elapsed_ms / 1000.0);
}

/* The text of an HTML error page's title ("Error 401 Authentication required" gives "Authentication required"),
 * into OUT; "" when there is none. */
static void html_title(const kg_http_response_t *r, char *out, size_t size) {
  out[0] = 0;
  const char *body = r->body.len ? r->body.data : "";
  const char *t = strstr(body, "<title>"), *end = t ? strstr(t, "</title>") : NULL;
  if (!end) return;
  t += strlen("<title>");
  if (!strncmp(t, "Error ", 6)) {
    t += 6;
    t += strspn(t, "0123456789");
    t += strspn(t, " ");
  }
  snprintf(out, size, "%.*s", (int)(end - t), t);
}

/* The reason an answer gives for failing: "MESSAGE (EXCEPTION, HTTP STATUS)", or the start of a body that is not
 * a RemoteException; for an authentication the NameNode refused (401, 403), how kingest authenticated. */
static void answer_reason(const webhdfs_t *w, const kg_http_response_t *r, char *out, size_t size) {
  char name[128], message[768];
  remote_exception(r, name, sizeof name, message, sizeof message);
  bool auth = r->status == 401 || r->status == 403;
  if (!message[0] && auth) html_title(r, message, sizeof message);
  kg_buf_t b = {0};
  const char *negotiate = kg_http_response_header(r, "WWW-Authenticate");
  if (r->status == 401 && !w->kerberos && negotiate && !strncasecmp(negotiate, "Negotiate", 9)) {
    kg_buf_appendf(&b,
                   "the NameNode asks for Kerberos (HTTP 401%s%s, WWW-Authenticate: Negotiate): it is a secured "
                   "HDFS, which refuses simple authentication (user.name=%s); set "
                   "hadoop.security.authentication=kerberos with kerberos.principal and kerberos.keytab",
                   message[0] ? ": " : "", message, w->user);
  } else if (r->status == 401 && w->kerberos && !w->token) {
    kg_buf_appendf(&b,
                   "the NameNode refused the Kerberos (SPNEGO) authentication of kerberos.principal=%s (HTTP 401%s%s): "
                   "no ticket could be had with kerberos.keytab=%s (its keys may be old, or the KDC of the Kerberos "
                   "configuration unreachable), or the NameNode's HTTP principal is of another realm",
                   w->principal, message[0] ? ": " : "", message, w->keytab);
  } else {
    if (message[0]) {
      kg_buf_appendf(&b, "%s (%s, HTTP %ld)", message, name[0] ? name : "RemoteException", r->status);
    } else if (r->status == 401) {
      kg_buf_appendf(&b, "the server asks for authentication (HTTP 401)");
    } else {
      size_t n = r->body.len < 200 ? r->body.len : 200;
      const char *body = r->body.len ? r->body.data : "";
      n = strcspn(body, "\r\n") < n ? strcspn(body, "\r\n") : n;
      kg_buf_appendf(&b, "HTTP %ld%s%.*s", r->status, n ? ": " : "", (int)n, body);
    }
    if (auth && w->token)
      kg_buf_appendf(&b, " (authenticated with the Hadoop job's delegation token of kerberos.principal=%s)",
                     w->principal ? w->principal : "?");
    else if (auth && w->kerberos)
      kg_buf_appendf(&b, " (authenticated with Kerberos as kerberos.principal=%s, kerberos.keytab=%s)", w->principal,
                     w->keytab);
  }
  snprintf(out, size, "%s", b.data ? b.data : "");
  kg_buf_free(&b);
}

static bool exception_is(const kg_http_response_t *r, const char *exception) {
  char name[128], message[16];
  remote_exception(r, name, sizeof name, message, sizeof message);
  return !strcmp(name, exception);
}

/* Parses the answer body as JSON; KG_EIO naming WHAT when it is not. */
static int answer_json(const webhdfs_t *w, const kg_http_response_t *r, const char *what, kg_json_t **doc,
                       char *errbuf) {
  char err[KG_ERRLEN];
  if (kg_json_parse(r->body.len ? r->body.data : "", r->body.len, "answer", doc, err))
    return kg_fail(errbuf, KG_EIO, "%s: WebHDFS at %s answered HTTP %ld with something that is not JSON: %s", what,
                   w->name, r->status, err);
  return KG_OK;
}

/* The boolean of a {"boolean": B} answer; false when the answer is something else. */
static bool answer_boolean(const kg_http_response_t *r) {
  kg_json_t *doc = NULL;
  char err[KG_ERRLEN];
  bool b = false;
  if (r->body.len && !kg_json_parse(r->body.data, r->body.len, "answer", &doc, err)) {
    const kg_json_t *v = kg_json_get(doc, "boolean");
    b = v && v->type == KG_JSON_BOOL && v->boolean;
  }
  kg_json_free(doc);
  return b;
}

/* ---- uploads --------------------------------------------------------------------------------------------- */

/* Sends bytes [OFFSET, OFFSET + LEN) of FD to PATH: a new file (CREATE, never overwriting) when APPEND is false,
 * else the end of the file (APPEND). The NameNode names the DataNode; the bytes go there. On failure the reason
 * goes to ERRBUF, and *EXISTS tells whether CREATE failed because PATH exists (then nothing was made). */
static int upload(const webhdfs_t *w, const char *path, bool append, int fd, int64_t offset, int64_t len, bool *exists,
                  char *errbuf) {
  const char *op = append ? "APPEND" : "CREATE", *method = append ? "POST" : "PUT";
  *exists = false;
  kg_http_response_t r = {0};
  upload_t body = {.fd = fd, .offset = offset, .len = len};
  char *url = op_url(w, path, op, append ? "&noredirect=true" : "&noredirect=true&overwrite=false");
  int rc = KG_OK;
  for (int attempt = 1;; attempt++) {
    /* Step 1: where to send the bytes. Nothing happens on HDFS yet, so it may be asked again. */
    if ((rc = request(w, method, url, NULL, RETRY_IDEMPOTENT, &r, errbuf))) break;
    kg_json_t *doc = NULL;
    const char *location = NULL;
    if (r.status != 200) {
      char why[KG_ERRLEN];
      answer_reason(w, &r, why, sizeof why);
      rc = kg_fail(errbuf, KG_EIO, "%s", why);
      break;
    }
    if ((rc = answer_json(w, &r, op, &doc, errbuf))) break;
    const kg_json_t *loc = kg_json_get(doc, "Location");
    if (loc && loc->type == KG_JSON_STRING) location = loc->string;
    if (!location) {
      kg_json_free(doc);
      rc = kg_fail(errbuf, KG_EIO, "WebHDFS at %s answered %s without a DataNode's Location", w->name, op);
      break;
    }
    /* Step 2: the bytes, to the DataNode, which makes the file on the NameNode and closes it. */
    char *target = kg_xstrdup(location);
    kg_json_free(doc);
    rc = request(w, method, target, &body, RETRY_UNSENT, &r, errbuf);
    free(target);
    if (rc) break;
    if (r.status == (append ? 200 : 201)) break;
    char why[KG_ERRLEN];
    answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "%s", why);
    if (!append && exception_is(&r, "FileAlreadyExistsException")) {
      *exists = true;
      break;
    }
    /* A refused CREATE may leave an empty file behind (the NameNode made it before a block was refused, as under
     * a space quota); take it away, so that the path is free again and a retry does not find it. */
    if (!append) {
      char *del = op_url(w, path, "DELETE", "&recursive=false");
      kg_http_response_t d = {0};
      char ignored[KG_ERRLEN];
      request(w, "DELETE", del, NULL, RETRY_IDEMPOTENT, &d, ignored);
      kg_http_response_free(&d);
      free(del);
    }
    if (!answer_is_transient(&r) || attempt >= w->attempts) break;
    sleep_ms(WEBHDFS_RETRY_PAUSE_MS << (attempt - 1));
  }
  kg_http_response_free(&r);
  free(url);
  return rc;
}

/* ---- streams --------------------------------------------------------------------------------------------- */

typedef struct {
  kg_fs_stream_t base;
  const webhdfs_t *w;
  char *path;
  kg_fs_mode_t mode;
  int fd;           /* the unnamed spool file: bytes [handed, handed + in_fd) of the stream */
  int64_t in_fd;    /* bytes in it */
  kg_buf_t pending; /* the bytes after those, [handed + in_fd, size): writes go to the file a buffer at a time */
  int64_t size;     /* bytes written, minus those taken back */
  int64_t handed;   /* bytes already on HDFS (sync), which cannot be taken back */
  bool made;        /* the file exists on HDFS (this stream made it, or appends to it) */
  bool ours;        /* this stream made the file (abort removes it) */
} webhdfs_stream_t;

/* Bytes collected before a write to the spool file: one system call per buffer, not per record. */
#define SPOOL_BUFFER (256 * 1024)

static void stream_free(webhdfs_stream_t *s) {
  if (s->fd >= 0) close(s->fd);
  kg_buf_free(&s->pending);
  free(s->path);
  free(s);
}

/* Writes the pending bytes to the spool file. */
static int spool(webhdfs_stream_t *s, char *errbuf) {
  const char *p = s->pending.data;
  size_t left = s->pending.len;
  while (left) {
    ssize_t n = pwrite(s->fd, p, left, (off_t)s->in_fd);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return kg_fail(errbuf, KG_EIO, "cannot spool to a local temporary file: %s", strerror(errno));
    p += n;
    left -= (size_t)n;
    s->in_fd += n;
  }
  s->pending.len = 0;
  return KG_OK;
}

static int stream_write(kg_fs_stream_t *stream, const void *data, size_t len, char *errbuf) {
  webhdfs_stream_t *s = (webhdfs_stream_t *)stream;
  kg_buf_append(&s->pending, data, len);
  s->size += (int64_t)len;
  return s->pending.len >= SPOOL_BUFFER ? spool(s, errbuf) : KG_OK;
}

static int stream_truncate(kg_fs_stream_t *stream, int64_t size, char *errbuf) {
  webhdfs_stream_t *s = (webhdfs_stream_t *)stream;
  if (size > s->size)
    return kg_fail(errbuf, KG_EIO, "cannot truncate to %lld bytes: only %lld were written", (long long)size,
                   (long long)s->size);
  if (size < s->handed)
    return kg_fail(errbuf, KG_EIO,
                   "cannot take back bytes already synced to HDFS (%lld bytes there, truncating to %lld)",
                   (long long)s->handed, (long long)size);
  if (size >= s->handed + s->in_fd) { /* within the pending bytes */
    s->pending.len = (size_t)(size - s->handed - s->in_fd);
  } else {
    if (ftruncate(s->fd, (off_t)(size - s->handed)) != 0)
      return kg_fail(errbuf, KG_EIO, "cannot truncate the local temporary file: %s", strerror(errno));
    s->in_fd = size - s->handed;
    s->pending.len = 0;
  }
  s->size = size;
  return KG_OK;
}

/* Hands the spooled bytes to HDFS: CREATE the first time (also for an empty file), APPEND later. */
static int stream_hand(webhdfs_stream_t *s, char *errbuf) {
  if (s->made && s->size == s->handed) return KG_OK;
  int src = spool(s, errbuf);
  if (src) return src;
  bool exists = false;
  int rc = upload(s->w, s->path, s->made, s->fd, 0, s->size - s->handed, &exists, errbuf);
  if (rc && exists && s->mode == KG_FS_APPEND && !s->made) {
    /* Appending to a file that was made since create looked: append to it. */
    s->made = true;
    rc = upload(s->w, s->path, true, s->fd, 0, s->size - s->handed, &exists, errbuf);
  } else if (rc && exists) {
    return kg_fail(errbuf, KG_EIO, "File exists");
  }
  if (rc) return rc;
  if (!s->made) s->ours = true;
  s->made = true;
  s->handed = s->size;
  s->in_fd = 0;
  if (ftruncate(s->fd, 0) != 0)
    return kg_fail(errbuf, KG_EIO, "cannot empty the local temporary file: %s", strerror(errno));
  return KG_OK;
}

/* Durable: HDFS answers an upload once the DataNode has closed the file, the NameNode having logged it. */
static int stream_sync(kg_fs_stream_t *stream, char *errbuf) { return stream_hand((webhdfs_stream_t *)stream, errbuf); }

static int stream_close(kg_fs_stream_t *stream, char *errbuf) {
  webhdfs_stream_t *s = (webhdfs_stream_t *)stream;
  int rc = stream_hand(s, errbuf);
  stream_free(s);
  return rc;
}

static void stream_abort(kg_fs_stream_t *stream) {
  webhdfs_stream_t *s = (webhdfs_stream_t *)stream;
  if (s->ours) { /* synced before: the file is on HDFS */
    char *url = op_url(s->w, s->path, "DELETE", "&recursive=false");
    kg_http_response_t r = {0};
    char ignored[KG_ERRLEN];
    request(s->w, "DELETE", url, NULL, RETRY_IDEMPOTENT, &r, ignored);
    kg_http_response_free(&r);
    free(url);
  }
  stream_free(s);
}

static const kg_fs_stream_ops_t stream_ops = {stream_write, stream_truncate, stream_sync, stream_close, stream_abort};

/* ---- the file system --------------------------------------------------------------------------------------- */

static const webhdfs_t *state(kg_fs_t *fs) { return fs->data; }

/* GETFILESTATUS: *FOUND, and *IS_DIR when found. KG_EIO with the reason alone in ERRBUF otherwise. */
static int file_status(const webhdfs_t *w, const char *path, bool *found, bool *is_dir, char *errbuf) {
  *found = false;
  if (is_dir) *is_dir = false;
  char *url = op_url(w, path, "GETFILESTATUS", NULL);
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = request(w, "GET", url, NULL, RETRY_IDEMPOTENT, &r, errbuf);
  if (rc) {
    /* the reason is in ERRBUF */
  } else if (r.status == 200) {
    *found = true;
    if (is_dir) *is_dir = strstr(r.body.len ? r.body.data : "", "\"type\":\"DIRECTORY\"") != NULL;
  } else if (r.status != 404) {
    answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "%s", why);
  }
  kg_http_response_free(&r);
  free(url);
  return rc;
}

static int check_path(const webhdfs_t *w, const char *path, char *errbuf) {
  if (path && path[0] == '/') return KG_OK;
  return kg_fail(errbuf, KG_EIO, "%s: not an absolute path (paths on %s start with '/')", path ? path : "(null)",
                 w->name);
}

/* MKDIRS, with EXTRA (more query parameters) when not NULL. */
static int mkdirs_with(kg_fs_t *fs, const char *path, const char *extra, char *errbuf) {
  const webhdfs_t *w = state(fs);
  if (check_path(w, path, errbuf)) return KG_EIO;
  char *url = op_url(w, path, "MKDIRS", extra);
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = request(w, "PUT", url, NULL, RETRY_IDEMPOTENT, &r, why);
  if (rc) {
    kg_fail(errbuf, KG_EIO, "cannot create folder %s: %s", path, why);
  } else if (r.status != 200 || !answer_boolean(&r)) {
    answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "cannot create folder %s on %s: %s", path, w->name, why);
  }
  kg_http_response_free(&r);
  free(url);
  if (rc) errno = EIO;
  return rc;
}

static int webhdfs_mkdirs(kg_fs_t *fs, const char *path, char *errbuf) { return mkdirs_with(fs, path, NULL, errbuf); }

/* The folders made get mode 700 (HDFS gives it to each folder the call makes); a folder that exists keeps its own:
 * it is not asked for at all. */
static int webhdfs_mkdirs_private(kg_fs_t *fs, const char *path, char *errbuf) {
  const webhdfs_t *w = state(fs);
  bool found = false, is_dir = false;
  if (check_path(w, path, errbuf) || file_status(w, path, &found, &is_dir, errbuf)) return KG_EIO;
  return found ? KG_OK : mkdirs_with(fs, path, "&permission=700", errbuf);
}

static int webhdfs_create(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf) {
  const webhdfs_t *w = state(fs);
  *out = NULL;
  if (check_path(w, path, errbuf)) return KG_EIO;
  /* CREATE with overwrite=false at the first sync or close is what keeps a file from being replaced; this look
   * only makes the usual case fail here, as a local create does, and finds an unreachable HDFS early. */
  bool found = false, is_dir = false;
  if (file_status(w, path, &found, &is_dir, errbuf)) return KG_EIO;
  if (found && is_dir) return kg_fail(errbuf, KG_EIO, "Is a directory");
  if (found && mode == KG_FS_CREATE_NEW) return kg_fail(errbuf, KG_EIO, "File exists");
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  /* Unnamed: nothing to clean up after a crash. */
  int fd = open(tmp, O_TMPFILE | O_RDWR, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    char *name = kg_xasprintf("%s/kingest-webhdfs.XXXXXX", tmp);
    fd = mkstemp(name);
    if (fd >= 0) unlink(name);
    free(name);
  }
  if (fd < 0) return kg_fail(errbuf, KG_EIO, "cannot make a local temporary file in %s: %s", tmp, strerror(errno));
  webhdfs_stream_t *s = kg_xcalloc(1, sizeof *s);
  s->base.ops = &stream_ops;
  s->w = w;
  s->path = kg_xstrdup(path);
  s->mode = mode;
  s->fd = fd;
  s->made = found; /* appending to a file that is there */
  *out = &s->base;
  return KG_OK;
}

static int webhdfs_rename(kg_fs_t *fs, const char *src, const char *dst, char *errbuf) {
  const webhdfs_t *w = state(fs);
  if (check_path(w, src, errbuf) || check_path(w, dst, errbuf)) return KG_EIO;
  /* renameoptions=NONE: the rename that never replaces, and that says why it failed (plain RENAME answers
   * {"boolean": false} for every failure, and moves SRC into DST when DST is a folder). */
  kg_buf_t extra = {0};
  kg_buf_appendf(&extra, "&renameoptions=NONE&destination=");
  kg_buf_append_url_escaped(&extra, dst, true);
  char *url = op_url(w, src, "RENAME", extra.data);
  kg_buf_free(&extra);
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = request(w, "PUT", url, NULL, RETRY_UNDONE, &r, why);
  if (rc) {
    kg_fail(errbuf, KG_EIO, "cannot move %s to %s: %s", src, dst, why);
  } else if (r.status != 200) {
    /* HDFS says "must both be directories" for a file renamed onto a folder: that is "there is a DST" too. */
    bool dst_found = false;
    char ignored[KG_ERRLEN];
    if (exception_is(&r, "FileAlreadyExistsException") ||
        (exception_is(&r, "IOException") && !file_status(w, dst, &dst_found, NULL, ignored) && dst_found))
      snprintf(why, sizeof why, "File exists");
    else
      answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "cannot move %s to %s on %s: %s", src, dst, w->name, why);
  }
  kg_http_response_free(&r);
  free(url);
  return rc;
}

static int webhdfs_exists(kg_fs_t *fs, const char *path, bool *exists, char *errbuf) {
  const webhdfs_t *w = state(fs);
  *exists = false;
  if (check_path(w, path, errbuf)) return KG_EIO;
  char why[KG_ERRLEN];
  if (file_status(w, path, exists, NULL, why))
    return kg_fail(errbuf, KG_EIO, "cannot look for %s on %s: %s", path, w->name, why);
  return KG_OK;
}

static int webhdfs_list(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf) {
  const webhdfs_t *w = state(fs);
  *names = NULL;
  *count = 0;
  if (check_path(w, path, errbuf)) return KG_EIO;
  char *url = op_url(w, path, "LISTSTATUS", NULL);
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  kg_json_t *doc = NULL;
  int rc = request(w, "GET", url, NULL, RETRY_IDEMPOTENT, &r, why);
  if (rc) {
    kg_fail(errbuf, KG_EIO, "cannot list %s: %s", path, why);
  } else if (r.status == 404) {
    /* a missing folder has no names */
  } else if (r.status != 200) {
    answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "cannot list %s on %s: %s", path, w->name, why);
  } else if (!(rc = answer_json(w, &r, path, &doc, errbuf))) {
    const kg_json_t *list = kg_json_get(kg_json_get(doc, "FileStatuses"), "FileStatus");
    if (!list || list->type != KG_JSON_ARRAY) {
      rc = kg_fail(errbuf, KG_EIO, "cannot list %s on %s: the answer has no FileStatuses", path, w->name);
    } else {
      char **out = kg_xcalloc(list->count ? list->count : 1, sizeof *out);
      size_t n = 0;
      for (size_t i = 0; i < list->count; i++) {
        const kg_json_t *name = kg_json_get(&list->items[i], "pathSuffix");
        /* A file listed by its own path answers one status with an empty suffix: a file has no names. */
        if (name && name->type == KG_JSON_STRING && name->string[0]) out[n++] = kg_xstrdup(name->string);
      }
      *names = out;
      *count = n;
    }
  }
  kg_json_free(doc);
  kg_http_response_free(&r);
  free(url);
  return rc;
}

static int webhdfs_remove_tree(kg_fs_t *fs, const char *path, char *errbuf) {
  const webhdfs_t *w = state(fs);
  if (check_path(w, path, errbuf)) return KG_EIO;
  char *url = op_url(w, path, "DELETE", "&recursive=true");
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = request(w, "DELETE", url, NULL, RETRY_IDEMPOTENT, &r, why);
  if (rc) {
    kg_fail(errbuf, KG_EIO, "cannot remove %s: %s", path, why);
  } else if (r.status != 200 && r.status != 404) { /* {"boolean": false}: nothing was there */
    answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "cannot remove %s on %s: %s", path, w->name, why);
  }
  kg_http_response_free(&r);
  free(url);
  return rc;
}

/* Nothing to do: HDFS has no fsync of a folder, and needs none. A file is durable once its upload is answered
 * (the DataNode has closed it and the NameNode logged the close in its edit log), and a rename or a new folder
 * once the NameNode has answered it (it logs the change before answering). */
static int webhdfs_sync(kg_fs_t *fs, const char *path, char *errbuf) { return KG_OK; }

/* No probe file: a run killed between making one and removing it would leave it in the final folder for readers
 * to find (HDFS has no unnamed files). MKDIRS is refused in safe mode even for a folder that exists, and
 * CHECKACCESS asks the NameNode whether the user may make files in the folder; a quota is met by the first write
 * or rename that passes it, which fails the run with the NameNode's message. */
static int webhdfs_check_writable(kg_fs_t *fs, const char *path, const char *property, char *errbuf) {
  const webhdfs_t *w = state(fs);
  char why[KG_ERRLEN];
  if (webhdfs_mkdirs(fs, path, why)) return kg_fail(errbuf, KG_EIO, "%s: %s", property, why);
  char *url = op_url(w, path, "CHECKACCESS", "&fsaction=-wx");
  kg_http_response_t r = {0};
  int rc = request(w, "GET", url, NULL, RETRY_IDEMPOTENT, &r, why);
  if (rc) {
    kg_fail(errbuf, KG_EIO, "%s: cannot check that %s on %s is writable: %s", property, path, w->name, why);
  } else if (r.status != 200) {
    answer_reason(w, &r, why, sizeof why);
    rc = kg_fail(errbuf, KG_EIO, "%s: %s on %s is not writable: %s", property, path, w->name, why);
  }
  kg_http_response_free(&r);
  free(url);
  return rc;
}

/* One upload of the whole file: CREATE with overwrite=false, so that a file there is never replaced. */
static int webhdfs_put(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf) {
  const webhdfs_t *w = state(fs);
  if (check_path(w, path, errbuf)) return KG_EIO;
  int fd = open(local_path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return kg_fail(errbuf, KG_EIO, "%s", strerror(e));
  }
  bool exists = false;
  int rc = upload(w, path, false, fd, 0, (int64_t)st.st_size, &exists, errbuf);
  close(fd);
  if (rc && exists) kg_fail(errbuf, KG_EIO, "File exists");
  return rc;
}

/* OPEN in two requests, as CREATE: where the bytes are, then the bytes. */
static int webhdfs_read(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf) {
  const webhdfs_t *w = state(fs);
  if (check_path(w, path, errbuf)) return KG_EIO;
  char *url = op_url(w, path, "OPEN", "&noredirect=true");
  kg_http_response_t r = {0};
  kg_json_t *doc = NULL;
  char why[KG_ERRLEN];
  int rc = request(w, "GET", url, NULL, RETRY_IDEMPOTENT, &r, why);
  if (!rc && r.status != 200) {
    answer_reason(w, &r, why, sizeof why);
    rc = KG_EIO;
  }
  if (!rc) rc = answer_json(w, &r, "OPEN", &doc, why);
  const kg_json_t *loc = doc ? kg_json_get(doc, "Location") : NULL;
  if (!rc && (!loc || loc->type != KG_JSON_STRING))
    rc = kg_fail(why, KG_EIO, "WebHDFS at %s answered OPEN without a DataNode's Location", w->name);
  if (!rc) {
    char *target = kg_xstrdup(loc->string);
    rc = request(w, "GET", target, NULL, RETRY_IDEMPOTENT, &r, why);
    free(target);
    if (!rc && r.status != 200) {
      answer_reason(w, &r, why, sizeof why);
      rc = KG_EIO;
    }
  }
  if (rc)
    kg_fail(errbuf, KG_EIO, "cannot read %s on %s: %s", path, w->name, why);
  else
    kg_buf_append(out, r.body.data ? r.body.data : "", r.body.len);
  kg_json_free(doc);
  kg_http_response_free(&r);
  free(url);
  return rc;
}

/* One HDFS namespace: a rename goes from any folder to any other. */
static int webhdfs_same_volume(kg_fs_t *fs, const char *a, const char *b, bool *same, char *errbuf) {
  *same = true;
  return KG_OK;
}

static void webhdfs_free(webhdfs_t *w) {
  free(w->base);
  free(w->name);
  free(w->user);
  free(w->principal);
  free(w->keytab);
  free(w->token);
  free(w->ca_file);
  free(w);
}

static void webhdfs_close(kg_fs_t *fs) {
  webhdfs_free(fs->data);
  free(fs);
}

/* ---- delegation tokens ----------------------------------------------------------------------------------- */

bool kg_fs_webhdfs_kerberos(const kg_fs_t *fs) {
  return fs && fs->data && (!strcmp(fs->scheme, "webhdfs") || !strcmp(fs->scheme, "swebhdfs")) &&
         ((const webhdfs_t *)fs->data)->kerberos;
}

const char *kg_fs_webhdfs_principal(const kg_fs_t *fs) {
  return kg_fs_webhdfs_kerberos(fs) ? ((const webhdfs_t *)fs->data)->principal : NULL;
}

int kg_fs_webhdfs_get_token(kg_fs_t *fs, const char *renewer, char **token, char *errbuf) {
  *token = NULL;
  if (!kg_fs_webhdfs_kerberos(fs)) return kg_fail(errbuf, KG_EINVAL, "not a WebHDFS file system with Kerberos");
  const webhdfs_t *w = state(fs);
  kg_buf_t extra = {0};
  kg_buf_appendf(&extra, "&renewer=");
  kg_buf_append_url_escaped(&extra, renewer, false);
  char *url = op_url(w, "/", "GETDELEGATIONTOKEN", extra.data);
  kg_buf_free(&extra);
  kg_http_response_t r = {0};
  kg_json_t *doc = NULL;
  char why[KG_ERRLEN];
  int rc = request(w, "GET", url, NULL, RETRY_IDEMPOTENT, &r, why);
  if (!rc && r.status != 200) {
    answer_reason(w, &r, why, sizeof why);
    rc = KG_EIO;
  }
  if (!rc) rc = answer_json(w, &r, "GETDELEGATIONTOKEN", &doc, why);
  const kg_json_t *t = doc ? kg_json_get(kg_json_get(doc, "Token"), "urlString") : NULL;
  if (!rc && (!t || t->type != KG_JSON_STRING || !t->string[0]))
    rc = kg_fail(why, KG_EIO, "the answer has no Token.urlString");
  /* The NameNode names its RPC address as the token's service; a renewer of a WebHDFS token (YARN's
   * ResourceManager) reaches the service over HTTP, so it is set to the web server's HOST:PORT, the address this
   * file system speaks to (what Hadoop's own WebHDFS client does). */
  const char *hostport = strstr(w->name, "://");
  if (!rc && kg_hadoop_token_set_service(t->string, hostport ? hostport + 3 : w->name, token))
    rc = kg_fail(why, KG_EIO, "the answer's Token.urlString is not a Hadoop token");
  if (rc) kg_fail(errbuf, KG_EIO, "cannot get a delegation token (renewer %s) from %s: %s", renewer, w->name, why);
  kg_json_free(doc);
  kg_http_response_free(&r);
  free(url);
  return rc;
}

int kg_fs_webhdfs_cancel_token(kg_fs_t *fs, const char *token, char *errbuf) {
  if (!kg_fs_webhdfs_kerberos(fs)) return kg_fail(errbuf, KG_EINVAL, "not a WebHDFS file system with Kerberos");
  const webhdfs_t *w = state(fs);
  kg_buf_t extra = {0};
  kg_buf_appendf(&extra, "&token=%s", token);
  char *url = op_url(w, "/", "CANCELDELEGATIONTOKEN", extra.data);
  kg_buf_free(&extra);
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = request(w, "PUT", url, NULL, RETRY_UNSENT, &r, why);
  if (!rc && r.status != 200) {
    answer_reason(w, &r, why, sizeof why);
    rc = KG_EIO;
  }
  if (rc) kg_fail(errbuf, KG_EIO, "cannot cancel the delegation token on %s: %s", w->name, why);
  kg_http_response_free(&r);
  free(url);
  return rc;
}

/* ---- open ------------------------------------------------------------------------------------------------ */

/* Decodes %XX escapes of the N bytes at S into a new string. */
static char *unescape(const char *s, size_t n) {
  char *out = kg_xmalloc(n + 1), *o = out;
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2]) &&
        sscanf(s + i + 1, "%2x", &v) == 1) {
      *o++ = (char)v;
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  *o = 0;
  return out;
}

static bool parse_long(const char *s, long min, long max, long *out) {
  int64_t v;
  if (!kg_parse_int64(s, &v) || v < min || v > max) return false;
  *out = (long)v;
  return true;
}

/* Applies one parameter KEY=VALUE of URI's query to W (user.name into *USER). */
static int query_parameter(webhdfs_t *w, const char *uri, const char *key, const char *value, char **user,
                           char *errbuf) {
  if (!strcmp(key, "user.name")) {
    free(*user);
    *user = kg_xstrdup(value);
  } else if (!strcmp(key, "auth")) {
    if (!strcasecmp(value, "kerberos"))
      w->kerberos = true;
    else if (!strcasecmp(value, "simple"))
      w->kerberos = false;
    else
      return kg_fail(errbuf, KG_EINVAL, "%s: auth=%s: unknown authentication (kingest has: simple, kerberos)", uri,
                     value);
  } else if (!strcmp(key, "connect.timeout.ms")) {
    if (!parse_long(value, 1, 600000, &w->connect_ms))
      return kg_fail(errbuf, KG_EINVAL, "%s: connect.timeout.ms=%s: expected milliseconds from 1 to 600000", uri,
                     value);
  } else if (!strcmp(key, "timeout.ms")) {
    if (!parse_long(value, 1000, 3600000, &w->timeout_ms))
      return kg_fail(errbuf, KG_EINVAL, "%s: timeout.ms=%s: expected milliseconds from 1000 to 3600000", uri, value);
  } else if (!strcmp(key, "attempts")) {
    long a = 0;
    if (!parse_long(value, 1, 20, &a))
      return kg_fail(errbuf, KG_EINVAL, "%s: attempts=%s: expected a number from 1 to 20", uri, value);
    w->attempts = (int)a;
  } else {
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: unknown parameter '%s' (kingest has: user.name, auth, "
                   "connect.timeout.ms, timeout.ms, attempts)",
                   uri, key);
  }
  return KG_OK;
}

/* The name of the user kingest runs as ($USER, else the password database's), into *USER (a new string), for a URI
 * that names none. */
static int local_user(const char *uri, char **user, char *errbuf) {
  const char *env = getenv("USER");
  struct passwd pw, *found = NULL;
  char buf[1024];
  if (env && *env)
    *user = kg_xstrdup(env);
  else if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found)
    *user = kg_xstrdup(found->pw_name);
  else
    return kg_fail(errbuf, KG_EINVAL, "%s: no user name (set $USER, or give webhdfs://USER@HOST:PORT)", uri);
  return KG_OK;
}

/* The file system whose backend data is W (taken). */
static kg_fs_t *webhdfs_fs(webhdfs_t *w, bool tls) {
  kg_fs_t *fs = kg_xcalloc(1, sizeof *fs);
  fs->scheme = tls ? "swebhdfs" : "webhdfs";
  fs->mkdirs = webhdfs_mkdirs;
  fs->mkdirs_private = webhdfs_mkdirs_private;
  fs->create = webhdfs_create;
  fs->rename = webhdfs_rename;
  fs->exists = webhdfs_exists;
  fs->list = webhdfs_list;
  fs->remove_tree = webhdfs_remove_tree;
  fs->sync = webhdfs_sync;
  fs->check_writable = webhdfs_check_writable;
  fs->same_volume = webhdfs_same_volume;
  fs->put = webhdfs_put;
  fs->read = webhdfs_read;
  fs->close = webhdfs_close;
  fs->data = w;
  return fs;
}

int kg_fs_webhdfs_open(const char *uri, kg_fs_t **out, char *errbuf) {
  return kg_fs_webhdfs_open_with(uri, NULL, out, errbuf);
}

int kg_fs_webhdfs_open_with(const char *uri, const kg_webhdfs_options_t *options, kg_fs_t **out, char *errbuf) {
  *out = NULL;
  bool tls = !strncmp(uri, "swebhdfs://", 11);
  if (!tls && strncmp(uri, "webhdfs://", 10))
    return kg_fail(errbuf, KG_EINVAL, "%s: not a webhdfs:// or swebhdfs:// URI", uri);
  const char *scheme = tls ? "swebhdfs" : "webhdfs";
  const char *authority = uri + strlen(scheme) + 3;
  size_t alen = strcspn(authority, "/?#");
  const char *rest = authority + alen;
  char *user = NULL;
  const char *at = memchr(authority, '@', alen);
  const char *hostport = authority;
  if (at) {
    user = unescape(authority, (size_t)(at - authority));
    hostport = at + 1;
  }
  size_t hlen = (size_t)(authority + alen - hostport);
  const char *colon = memchr(hostport, ':', hlen);
  int rc = KG_OK;
  webhdfs_t *w = kg_xcalloc(1, sizeof *w);
  w->kerberos = options && options->auth == KG_WEBHDFS_AUTH_KERBEROS;
  w->attempts = WEBHDFS_ATTEMPTS;
  w->connect_ms = WEBHDFS_CONNECT_TIMEOUT_MS;
  w->timeout_ms = WEBHDFS_TIMEOUT_MS;
  long port = 0;
  if (!hlen || !colon || colon == hostport) {
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: expected %s://[USER@]HOST:PORT, PORT being the NameNode's %s port "
                 "(%s, %s by default)",
                 uri, scheme, tls ? "HTTPS" : "HTTP", tls ? "dfs.namenode.https-address" : "dfs.namenode.http-address",
                 tls ? "9871" : "9870");
  } else {
    char *p = kg_xstrndup(colon + 1, (size_t)(hostport + hlen - colon - 1));
    if (!parse_long(p, 1, 65535, &port))
      rc = kg_fail(errbuf, KG_EINVAL, "%s: the port '%s' is not a number from 1 to 65535", uri, p);
    free(p);
  }
  /* The path part must be empty: paths come from the properties that name folders. */
  if (!rc && *rest == '/' && rest[1] && rest[1] != '?')
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: a file system URI names no path (give folders as absolute paths in their "
                 "own properties)",
                 uri);
  if (!rc && *rest == '/') rest++;
  if (!rc && *rest == '#') rc = kg_fail(errbuf, KG_EINVAL, "%s: a file system URI has no fragment", uri);
  /* The query: user.name, auth (simple only), and the client's timeouts and tries. */
  if (!rc && *rest == '?') {
    const char *q = rest + 1;
    while (*q && !rc) {
      size_t plen = strcspn(q, "&");
      const char *eq = memchr(q, '=', plen);
      char *key = unescape(q, eq ? (size_t)(eq - q) : plen);
      char *value = eq ? unescape(eq + 1, (size_t)(q + plen - eq - 1)) : kg_xstrdup("");
      rc = query_parameter(w, uri, key, value, &user, errbuf);
      free(key);
      free(value);
      q += plen;
      if (*q == '&') q++;
    }
  }
  if (!rc && (!user || !*user)) {
    free(user);
    user = NULL;
    rc = local_user(uri, &user, errbuf);
  }
  /* Kerberos: the principal and its keytab, checked before any request; or the token handed to this process. A
   * check of the URI alone (no options: a property's value being read) makes no such checks. */
  if (!rc && w->kerberos && options) {
    pthread_mutex_lock(&login_mutex);
    if (process_token) w->token = kg_xstrdup(process_token);
    pthread_mutex_unlock(&login_mutex);
    if (!options->principal || !*options->principal)
      rc = kg_fail(errbuf, KG_EINVAL, "%s: hadoop.security.authentication=kerberos needs kerberos.principal", uri);
    else
      w->principal = kg_xstrdup(options->principal);
    if (!rc && !w->token) {
      if (!options->keytab || !*options->keytab)
        rc = kg_fail(errbuf, KG_EINVAL,
                     "%s: hadoop.security.authentication=kerberos needs kerberos.keytab (the keytab of "
                     "kerberos.principal=%s)",
                     uri, w->principal);
      else
        w->keytab = kg_xstrdup(options->keytab);
      if (!rc) rc = check_keytab(uri, w->principal, w->keytab, errbuf);
      if (!rc) rc = login(uri, w->principal, w->keytab, errbuf);
    }
  }
  if (!rc && options && options->ca_file && *options->ca_file) {
    if (access(options->ca_file, R_OK) != 0)
      rc = kg_fail(errbuf, KG_EINVAL, "%s: webhdfs.ssl.ca.location=%s: cannot read it: %s", uri, options->ca_file,
                   strerror(errno));
    else
      w->ca_file = kg_xstrdup(options->ca_file);
  }
  if (rc) {
    free(user);
    webhdfs_free(w);
    return rc;
  }
  char *host = kg_xstrndup(hostport, (size_t)(colon - hostport));
  w->base = kg_xasprintf("%s://%s:%ld/webhdfs/v1", tls ? "https" : "http", host, port);
  w->name = kg_xasprintf("%s://%s:%ld", scheme, host, port);
  kg_buf_t u = {0};
  kg_buf_append_url_escaped(&u, user, false);
  w->user = u.data;
  free(host);
  free(user);
  *out = webhdfs_fs(w, tls);
  return KG_OK;
}

/* ---- the properties ------------------------------------------------------------------------------------ */

#define KG_FIELD(f) KG_FIELD_OF(kg_webhdfs_options_t, f)

static const char *const auth_names[] = {"simple", "kerberos", NULL};

/* WebHDFS's own rows: how it authenticates, and the CAs of swebhdfs://. Hadoop's and Gobblin's names. */
static const kg_property_t rows[] = {
    {.name = "hadoop.security.authentication",
     .type = KG_PROP_ENUM,
     .def = "simple",
     .names = auth_names,
     KG_FIELD(auth),
     .doc = "How kingest authenticates to HDFS (`webhdfs://`, `swebhdfs://`): `simple`, the user name "
            "(`user.name`), or `kerberos`, SPNEGO with the tickets of `kerberos.principal` from `kerberos.keytab` "
            "([HDFS with Kerberos](#hdfs-with-kerberos)); `auth=` in the URI says it for that URI."},
    {.name = "kerberos.principal",
     .alias = "keytab.user",
     .type = KG_PROP_STRING,
     .def_doc = "none",
     KG_FIELD(principal),
     .doc =
         "With `hadoop.security.authentication=kerberos`: the Kerberos principal kingest logs in as (`kingest@REALM`, "
         "or `kingest`: the realm is then the keytab's)."},
    {.name = "kerberos.keytab",
     .alias = "keytab.location",
     .type = KG_PROP_PATH,
     .def_doc = "none",
     KG_FIELD(keytab),
     .doc = "With `hadoop.security.authentication=kerberos`: the keytab holding the keys of `kerberos.principal`, "
            "its first principal; checked before anything is read or written."},
    {.name = "webhdfs.ssl.ca.location",
     .type = KG_PROP_PATH,
     .def_doc = "the system's CAs",
     KG_FIELD(ca_file),
     .doc = "The CA certificates (a PEM file) that a `swebhdfs://` NameNode's and DataNodes' certificates are "
            "checked against."},
};

const kg_config_section_t kg_webhdfs_section = {
    .name = "fs.webhdfs", .rows = rows, .nrows = sizeof rows / sizeof rows[0], .size = sizeof(kg_webhdfs_options_t)};

const kg_webhdfs_options_t *kg_webhdfs_options(const kg_config_t *config) {
  return config ? kg_config_options(config, &kg_webhdfs_section) : NULL;
}
