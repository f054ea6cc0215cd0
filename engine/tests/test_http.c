/* test_http.c: the HTTP client (http.c) against a small HTTP server of the test's own (a thread on a loopback socket
 * that answers as each case scripts it and keeps what it was sent), and a TLS server (http_tls_server.py, with
 * certificates openssl makes): answers into buffers and files with caps, timeouts, retries (attempts, deadlines,
 * Retry-After, judges, a stop signal), redirects followed and refused, bodies from memory and file ranges, error
 * texts with their secrets masked, authentication (basic, bearer, negotiate, a toy signer), TLS; and SHA-256. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "sha256.h"
#include "stop.h"
#include "test.h"

/* ---- the test's server ------------------------------------------------------------------------------------ */

/* How the server answers one request. */
typedef struct {
  int status;
  const char *headers; /* more header lines, each ending in "\r\n" */
  const char *body;    /* NULL: none */
  int delay_ms;        /* before the answer */
  int hang_ms;         /* > 0: no answer at all; the connection is closed this long later */
  bool partial;        /* the body announced in full, half of it sent, the connection closed */
} reply_t;

/* What the server was sent. */
typedef struct {
  char method[16];
  char target[2048];
  char head[8192]; /* the header lines */
  char body[65536];
  size_t body_len;
  int64_t at_ms;
} seen_t;

static struct {
  int fd, port;
  pthread_t thread;
  pthread_mutex_t mutex;
  reply_t replies[16];
  int nreplies, next;
  seen_t seen[32];
  int nseen;
  atomic_bool stop;
  atomic_int busy; /* connections being served */
} srv = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static char base[64]; /* http://127.0.0.1:PORT */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
  for (int64_t until = now_ms() + ms; now_ms() < until && !atomic_load(&srv.stop);)
    usleep(10000);
}

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return;
    p += w, n -= (size_t)w;
  }
}

/* The value of header NAME in the header lines HEAD, into OUT; "" when there is none. */
static const char *header_of(const char *head, const char *name, char *out, size_t size) {
  out[0] = 0;
  for (const char *line = head; *line;) {
    size_t len = strcspn(line, "\r\n");
    size_t nlen = strlen(name);
    if (len > nlen && !strncasecmp(line, name, nlen) && line[nlen] == ':') {
      const char *v = line + nlen + 1;
      while (*v == ' ')
        v++;
      snprintf(out, size, "%.*s", (int)(line + len - v), v);
      return out;
    }
    line += len;
    while (*line == '\r' || *line == '\n')
      line++;
  }
  return out;
}

static void *connection(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[80000];
  size_t n = 0;
  char *end = NULL;
  while (n + 1 < sizeof buf && !(end = strstr(buf, "\r\n\r\n"))) {
    ssize_t got = recv(fd, buf + n, sizeof buf - 1 - n, 0);
    if (got <= 0) break;
    n += (size_t)got;
    buf[n] = 0;
  }
  if (!end) {
    close(fd);
    atomic_fetch_sub(&srv.busy, 1);
    return NULL;
  }
  seen_t s = {.at_ms = now_ms()};
  sscanf(buf, "%15s %2047s", s.method, s.target);
  const char *head = strstr(buf, "\r\n") + 2;
  snprintf(s.head, sizeof s.head, "%.*s", (int)(end + 2 - head), head);
  char cl[32];
  size_t want = (size_t)atol(header_of(s.head, "Content-Length", cl, sizeof cl));
  size_t have = n - (size_t)(end + 4 - buf);
  if (want > sizeof s.body) want = sizeof s.body;
  memcpy(s.body, end + 4, have < want ? have : want);
  while (have < want) {
    ssize_t got = recv(fd, s.body + have, want - have, 0);
    if (got <= 0) break;
    have += (size_t)got;
  }
  s.body_len = have < want ? have : want;
  pthread_mutex_lock(&srv.mutex);
  reply_t r = srv.replies[srv.next < srv.nreplies ? srv.next : srv.nreplies - 1];
  srv.next++;
  if (srv.nseen < 32) srv.seen[srv.nseen++] = s;
  pthread_mutex_unlock(&srv.mutex);
  if (r.delay_ms) sleep_ms(r.delay_ms);
  if (r.hang_ms) {
    sleep_ms(r.hang_ms);
  } else {
    const char *body = r.body ? r.body : "";
    size_t blen = strlen(body);
    char top[1024];
    int tlen = snprintf(top, sizeof top, "HTTP/1.1 %d Scripted\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
                        r.status, blen, r.headers ? r.headers : "");
    send_all(fd, top, (size_t)tlen);
    if (strcmp(s.method, "HEAD")) send_all(fd, body, r.partial ? blen / 2 : blen);
  }
  shutdown(fd, SHUT_RDWR);
  close(fd);
  atomic_fetch_sub(&srv.busy, 1);
  return NULL;
}

static void *server(void *arg) {
  (void)arg;
  while (!atomic_load(&srv.stop)) {
    struct pollfd p = {.fd = srv.fd, .events = POLLIN};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept(srv.fd, NULL, NULL);
    if (fd < 0) continue;
    atomic_fetch_add(&srv.busy, 1);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, connection, (void *)(intptr_t)fd)) {
      close(fd);
      atomic_fetch_sub(&srv.busy, 1);
    }
    pthread_attr_destroy(&attr);
  }
  return NULL;
}

/* A loopback port that was free and is closed again: nothing listens there. */
static int closed_port(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

static int server_start(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  srv.fd = socket(AF_INET, SOCK_STREAM, 0);
  if (srv.fd < 0 || bind(srv.fd, (struct sockaddr *)&a, sizeof a) || listen(srv.fd, 64) ||
      getsockname(srv.fd, (struct sockaddr *)&a, &len))
    return -1;
  srv.port = ntohs(a.sin_port);
  snprintf(base, sizeof base, "http://127.0.0.1:%d", srv.port);
  return pthread_create(&srv.thread, NULL, server, NULL);
}

static void server_stop(void) {
  atomic_store(&srv.stop, true);
  pthread_join(srv.thread, NULL);
  while (atomic_load(&srv.busy) > 0)
    usleep(10000);
  close(srv.fd);
}

/* The server answers the next requests with REPLIES in order, the last one again and again; what it was sent so
 * far is forgotten. */
static void serve(int n, const reply_t *replies) {
  pthread_mutex_lock(&srv.mutex);
  memcpy(srv.replies, replies, (size_t)n * sizeof *replies);
  srv.nreplies = n;
  srv.next = 0;
  srv.nseen = 0;
  pthread_mutex_unlock(&srv.mutex);
}

static int seen_count(void) {
  pthread_mutex_lock(&srv.mutex);
  int n = srv.nseen;
  pthread_mutex_unlock(&srv.mutex);
  return n;
}

static char *url_of(const char *path) {
  static char urls[4][1024];
  static int next;
  char *u = urls[next++ % 4];
  snprintf(u, sizeof urls[0], "%s%s", base, path);
  return u;
}

/* A temporary file holding TEXT; its descriptor, open for reading and writing. */
static int temp_file(const char *text) {
  char name[] = "/tmp/kg-test-http-XXXXXX";
  int fd = mkstemp(name);
  unlink(name);
  if (text && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) return -1;
  return fd;
}

static const char *file_text(int fd, char *out, size_t size) {
  ssize_t n = pread(fd, out, size - 1, 0);
  out[n > 0 ? n : 0] = 0;
  return out;
}

/* ---- SHA-256 ------------------------------------------------------------------------------------------------ */

static void test_sha256(void) {
  char hex[65];
  kg_sha256_hex("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  kg_sha256_hex("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: a second block of padding */
  kg_sha256_hex(two, strlen(two), hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* A million 'a's, in pieces of sizes that do not divide a block. */
  char a[997];
  memset(a, 'a', sizeof a);
  kg_sha256_t s;
  uint8_t d[KG_SHA256_SIZE];
  kg_sha256_init(&s);
  size_t left = 1000000;
  while (left) {
    size_t n = left < sizeof a ? left : sizeof a;
    kg_sha256_update(&s, a, n);
    left -= n;
  }
  kg_sha256_final(&s, d);
  kg_sha256_to_hex(d, hex);
  CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* ---- requests and answers ------------------------------------------------------------------------------------ */

static void test_get(void) {
  char err[KG_ERRLEN] = "", v[256];
  serve(1, (reply_t[]){{.status = 200, .headers = "ETag: \"abc123\"\r\nX-Empty:\r\n", .body = "hello"}});
  const char *headers[] = {"Accept: application/json", "If-None-Match: *", NULL};
  kg_http_request_t req = {.url = url_of("/a/b?x=1"), .headers = headers, .timeout_ms = 5000};
  kg_http_response_t resp = {0};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.status, 200);
  CHECK_STR(resp.body.data, "hello");
  CHECK_INT(resp.body_bytes, 5);
  CHECK_INT(resp.attempts, 1);
  CHECK_STR(kg_http_response_header(&resp, "etag"), "\"abc123\"");
  CHECK_STR(kg_http_response_header(&resp, "X-Empty"), "");
  CHECK(kg_http_response_header(&resp, "Location") == NULL);
  CHECK_INT(seen_count(), 1);
  CHECK_STR(srv.seen[0].method, "GET");
  CHECK_STR(srv.seen[0].target, "/a/b?x=1");
  CHECK_STR(header_of(srv.seen[0].head, "User-Agent", v, sizeof v), "kingest/" KINGEST_VERSION);
  CHECK_STR(header_of(srv.seen[0].head, "If-None-Match", v, sizeof v), "*");
  CHECK_STR(header_of(srv.seen[0].head, "Accept", v, sizeof v), "application/json");
  kg_http_response_free(&resp);

  /* HEAD: the headers, no body awaited. A handle that keeps its connection serves several requests. */
  serve(1, (reply_t[]){{.status = 200, .headers = "ETag: \"e\"\r\n", .body = "not sent"}});
  kg_http_t *http = NULL;
  CHECK_INT(kg_http_new(&http, err), KG_OK);
  req = (kg_http_request_t){.method = "HEAD", .url = url_of("/head"), .timeout_ms = 5000};
  for (int i = 0; i < 2; i++) {
    CHECK_INT(kg_http_perform(http, &req, &resp, err), KG_OK);
    CHECK_INT(resp.status, 200);
    CHECK_INT(resp.body.len, 0);
    CHECK_STR(kg_http_response_header(&resp, "ETag"), "\"e\"");
  }
  CHECK_STR(srv.seen[1].method, "HEAD");
  kg_http_response_free(&resp);
  kg_http_destroy(http);
  kg_http_destroy(NULL);

  /* A header line with a line break is refused before anything is sent. */
  serve(1, (reply_t[]){{.status = 200}});
  const char *bad[] = {"X-Evil: a\r\nX-Injected: b", NULL};
  req = (kg_http_request_t){.url = url_of("/x"), .headers = bad};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EINVAL);
  CHECK_CONTAINS(err, "the header line 'X-Evil: a' has a line break");
  CHECK_INT(seen_count(), 0);
  kg_http_response_free(&resp);
}

static void test_caps(void) {
  /* Static: the server's connection thread may still be sending it after the client stopped reading at its cap. */
  static char big[10001];
  char err[KG_ERRLEN] = "";
  memset(big, 'x', 10000);
  big[10000] = 0;
  serve(1, (reply_t[]){{.status = 200, .body = big}});
  kg_http_request_t req = {.url = url_of("/big"), .answer = {.cap = 1000}, .timeout_ms = 5000};
  kg_http_response_t resp = {0};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.status, 0);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_TOO_BIG);
  char want[256];
  snprintf(want, sizeof want, "GET %s/big: the answer is larger than 1000 bytes, the most this request takes", base);
  CHECK_STR(err, want);

  /* Truncated: the first bytes kept, the rest read, the answer complete. */
  req.answer.truncate = true;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.status, 200);
  CHECK_INT(resp.body.len, 1000);
  CHECK(resp.truncated);
  CHECK_INT(resp.body_bytes, 10000);

  /* Under the cap: all of it. */
  req.answer = (kg_http_answer_t){.cap = 10000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.body.len, 10000);
  CHECK(!resp.truncated);
  kg_http_response_free(&resp);
}

/* The server's reason in the error text: the first line of the body, or a service's own formatter. */
static void hadoop_style(const kg_http_response_t *r, char *out, size_t size) {
  snprintf(out, size, "%s (Formatted, HTTP %ld)", r->body.len > 8 ? r->body.data + 8 : "?", r->status);
}

static void test_status_errors(void) {
  char err[KG_ERRLEN] = "", want[512];
  serve(1, (reply_t[]){{.status = 404, .body = "no such thing\nat line two"}});
  kg_http_request_t req = {.method = "DELETE", .url = url_of("/gone"), .timeout_ms = 5000};
  kg_http_response_t resp = {0};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  snprintf(want, sizeof want, "DELETE %s/gone: HTTP 404: no such thing", base);
  CHECK_STR(err, want);
  CHECK_INT(resp.status, 404);
  CHECK_STR(resp.body.data, "no such thing\nat line two");
  char reason[256];
  kg_http_reason(&resp, reason, sizeof reason);
  CHECK_STR(reason, "HTTP 404: no such thing");
  req.reason = hadoop_style;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  snprintf(want, sizeof want, "DELETE %s/gone: thing\nat line two (Formatted, HTTP 404)", base);
  CHECK_STR(err, want);
  /* any_status: every answer is the caller's to judge. */
  req.any_status = true;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.status, 404);
  /* No body: the status alone. */
  serve(1, (reply_t[]){{.status = 503}});
  req = (kg_http_request_t){.url = url_of("/busy")};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  snprintf(want, sizeof want, "GET %s/busy: HTTP 503", base);
  CHECK_STR(err, want);
  CHECK_INT(resp.attempts, 1); /* no policy: one try */
  kg_http_response_free(&resp);
}

static void test_masking(void) {
  char out[512], err[KG_ERRLEN];
  kg_http_shown_url("http://kingest:s3cr3t@host:1/p?user.name=bob&op=CREATE", out, sizeof out);
  CHECK_STR(out, "http://***@host:1/p?user.name=bob&op=CREATE");
  kg_http_shown_url("https://dn:9864/webhdfs/v1/a?op=CREATE&delegation=HAAEa2luZw&namenoderpcaddress=nn:8020", out,
                    sizeof out);
  CHECK_STR(out, "https://dn:9864/webhdfs/v1/a?op=CREATE&delegation=***&namenoderpcaddress=nn:8020");
  kg_http_shown_url("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abcd&X-Amz-Security-Token=t"
                    "&uploadId=7",
                    out, sizeof out);
  CHECK_STR(out, "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Security-Token=***"
                 "&uploadId=7");
  kg_http_shown_url("https://acct.blob.core.windows.net/c/b?sv=2022&sig=SAS%3D&password=pw&access_token=at#frag", out,
                    sizeof out);
  CHECK_STR(out, "https://acct.blob.core.windows.net/c/b?sv=2022&sig=***&password=***&access_token=***#frag");
  kg_http_shown_url("http://host/p#a?token=x", out, sizeof out); /* a fragment is no query */
  CHECK_STR(out, "http://host/p#a?token=x");
  kg_http_shown_url("http://host/p?flag&token", out, sizeof out); /* parameters without a value */
  CHECK_STR(out, "http://host/p?flag&token");
  kg_http_shown_url("http://user@host/p", out, sizeof out);
  CHECK_STR(out, "http://***@host/p");

  /* In the error of a request that could not connect: the secrets masked, the rest as it was. */
  char url[512];
  snprintf(url, sizeof url, "http://kingest:s3cr3t@127.0.0.1:%d/x?user.name=bob&delegation=TOKEN123&op=OPEN",
           closed_port());
  kg_http_request_t req = {.method = "PUT", .url = url, .connect_timeout_ms = 2000};
  kg_http_response_t resp = {0};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_CONTAINS(err, "PUT http://***@127.0.0.1:");
  CHECK_CONTAINS(err, "/x?user.name=bob&delegation=***&op=OPEN: Failed to connect to 127.0.0.1 port");
  CHECK(!strstr(err, "s3cr3t") && !strstr(err, "TOKEN123"));
  CHECK_INT(resp.failure, KG_HTTP_FAIL_CONNECT);
  CHECK(!resp.sent);
  CHECK_STR(resp.cause, "Couldn't connect to server");
  kg_http_response_free(&resp);
}

/* ---- tries ------------------------------------------------------------------------------------------------ */

typedef struct {
  int calls;
  int refusals;
} judge_t;

/* Tries a 401 once more past any deadline (a judge that bounds its own tries), 5xx within the policy. */
static kg_http_verdict_t refusing_judge(void *arg, const kg_http_response_t *r) {
  judge_t *j = arg;
  j->calls++;
  if (r->status == 401) return ++j->refusals > 1 ? KG_HTTP_DONE : KG_HTTP_AGAIN_PAUSED;
  if (r->status >= 500) return KG_HTTP_AGAIN;
  return KG_HTTP_DONE;
}

static void test_retries(void) {
  char err[KG_ERRLEN] = "", want[512];
  kg_http_response_t resp = {0};

  /* Refused connections: tried as often as the policy allows, and said. */
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/x", closed_port());
  kg_http_request_t req = {.url = url, .retry = {.attempts = 3, .pause_ms = 20, .retry_on = KG_HTTP_RETRY_CONNECT}};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 3);
  CHECK_INT(resp.stop, KG_HTTP_STOP_ATTEMPTS);
  CHECK_CONTAINS(err, "Failed to connect to 127.0.0.1 port");
  CHECK_CONTAINS(err, " (3 attempts in ");
  CHECK_CONTAINS(err, " s, as many as allowed)");
  /* Without RETRY_CONNECT: once. */
  req.retry.retry_on = KG_HTTP_RETRY_STATUS;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 1);

  /* 503 with Retry-After: 1, then the answer: the pause is what the server asked, not the backoff's 10 ms. */
  serve(2,
        (reply_t[]){{.status = 503, .headers = "Retry-After: 1\r\n", .body = "busy"}, {.status = 200, .body = "ok"}});
  req = (kg_http_request_t){
      .url = url_of("/r"),
      .retry = {.attempts = 3, .pause_ms = 10, .retry_after = true, .retry_on = KG_HTTP_RETRY_STATUS}};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.attempts, 2);
  CHECK_STR(resp.body.data, "ok");
  CHECK_INT(seen_count(), 2);
  CHECK(srv.seen[1].at_ms - srv.seen[0].at_ms >= 900);
  /* Without retry_after, the backoff's pause. */
  serve(2, (reply_t[]){{.status = 429, .headers = "Retry-After: 5\r\n"}, {.status = 200, .body = "ok"}});
  req.retry.retry_after = false;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.attempts, 2);
  CHECK(srv.seen[1].at_ms - srv.seen[0].at_ms < 4000);

  /* A Retry-After past the deadline: no use waiting, the request fails at once and says so. */
  serve(1, (reply_t[]){{.status = 429, .headers = "Retry-After: 3600\r\n", .body = "slow down"}});
  req.retry =
      (kg_http_retry_t){.pause_ms = 10, .retry_after = true, .deadline_ms = 2000, .retry_on = KG_HTTP_RETRY_STATUS};
  int64_t t0 = now_ms();
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK(now_ms() - t0 < 1500);
  CHECK_INT(resp.attempts, 1);
  CHECK_INT(resp.stop, KG_HTTP_STOP_DEADLINE);
  CHECK_INT(resp.retry_after_s, 3600);
  snprintf(want, sizeof want, "GET %s/r: HTTP 429: slow down (1 attempt in ", base);
  CHECK_CONTAINS(err, want);
  CHECK_CONTAINS(err, "; the server asked to wait 3600 s, past the bound of 2.0 s)");

  /* 5xx for good within a deadline: the backoff until the next pause would pass it. */
  serve(1, (reply_t[]){{.status = 500, .body = "broken"}});
  req.retry =
      (kg_http_retry_t){.pause_ms = 100, .max_pause_ms = 200, .deadline_ms = 700, .retry_on = KG_HTTP_RETRY_STATUS};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK(resp.attempts >= 3);
  CHECK_INT(resp.stop, KG_HTTP_STOP_DEADLINE);
  CHECK(resp.elapsed_ms < 700 && resp.elapsed_ms + resp.next_wait_ms >= 700);
  CHECK_CONTAINS(err, "HTTP 500: broken (");
  CHECK_CONTAINS(err, " s later, would pass the bound of 0.7 s)");

  /* A judge of the caller's: AGAIN_PAUSED tries again even with a deadline at the start, where AGAIN does not. */
  judge_t j = {0};
  serve(1, (reply_t[]){{.status = 401, .body = "who are you"}});
  req.retry = (kg_http_retry_t){
      .pause_ms = 10, .deadline_ms = KG_HTTP_DEADLINE_AT_START, .judge = refusing_judge, .judge_arg = &j};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 2);
  CHECK_INT(j.calls, 2);
  CHECK_INT(resp.stop, KG_HTTP_STOP_DONE);
  CHECK_CONTAINS(err, "HTTP 401: who are you (2 attempts in ");
  j = (judge_t){0};
  serve(1, (reply_t[]){{.status = 502}});
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 1);
  CHECK_INT(resp.stop, KG_HTTP_STOP_DEADLINE);

  /* Jitter: pauses of 100 ms and a quarter more at most, from the caller's seed. */
  unsigned seed = 42;
  serve(3, (reply_t[]){{.status = 503}, {.status = 503}, {.status = 200}});
  req.retry = (kg_http_retry_t){.attempts = 5, .pause_ms = 100, .jitter_seed = &seed, .retry_on = KG_HTTP_RETRY_STATUS};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.attempts, 3);
  CHECK(seed != 42);
  CHECK(srv.seen[2].at_ms - srv.seen[0].at_ms >= 300); /* 100 + 200 at least */

  /* The timeout of a try after the first shrinks to the time left before the deadline, to no less than the floor. */
  serve(2, (reply_t[]){{.status = 503}, {.status = 200, .body = "late", .delay_ms = 1500}});
  req = (kg_http_request_t){.url = url_of("/floor"),
                            .timeout_ms = 5000,
                            .retry = {.pause_ms = 10,
                                      .deadline_ms = 300,
                                      .try_floor_ms = 500,
                                      .retry_on = KG_HTTP_RETRY_STATUS | KG_HTTP_RETRY_TRANSPORT}};
  t0 = now_ms();
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK(now_ms() - t0 < 1400);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_TIMEOUT);
  CHECK_INT(resp.attempts, 2);
  kg_http_response_free(&resp);
}

static void test_timeouts(void) {
  char err[KG_ERRLEN] = "";
  kg_http_response_t resp = {0};
  /* A server that never answers: the try's timeout. */
  serve(1, (reply_t[]){{.status = 200, .hang_ms = 2500}});
  kg_http_request_t req = {.url = url_of("/hang"), .timeout_ms = 400};
  int64_t t0 = now_ms();
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK(now_ms() - t0 < 2000);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_TIMEOUT);
  CHECK(resp.sent);
  CHECK_CONTAINS(err, "Operation timed out after");
  /* RETRY_CONNECT does not try again what may have reached the server; RETRY_TRANSPORT does. */
  req.retry = (kg_http_retry_t){.attempts = 2, .pause_ms = 10, .retry_on = KG_HTTP_RETRY_CONNECT};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 1);
  req.retry.retry_on = KG_HTTP_RETRY_TRANSPORT;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 2);
  /* A stall: no byte for a second fails the try, with no total timeout. */
  serve(1, (reply_t[]){{.status = 200, .hang_ms = 4000}});
  req = (kg_http_request_t){.url = url_of("/stall"), .stall_ms = 1000};
  t0 = now_ms();
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK(now_ms() - t0 < 3500);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_TIMEOUT);
  CHECK_CONTAINS(err, "Operation too slow");
  /* A connection closed in the middle of the body. */
  serve(1, (reply_t[]){{.status = 200, .body = "0123456789", .partial = true}});
  req = (kg_http_request_t){.url = url_of("/partial"), .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_OTHER);
  CHECK_CONTAINS(err, "transfer closed with 5 bytes remaining");
  kg_http_response_free(&resp);
}

static void test_redirects(void) {
  char err[KG_ERRLEN] = "";
  static char loc[256]; /* static: a connection thread may read it after this test returns */
  kg_http_response_t resp = {0};
  snprintf(loc, sizeof loc, "Location: %s/elsewhere\r\n", base);
  int fd = temp_file("streamed body");

  /* Refused (the default): the 307 is the answer, with its Location; nothing goes where it points. */
  serve(2, (reply_t[]){{.status = 307, .headers = loc, .body = "go there"}, {.status = 201, .body = "made"}});
  kg_http_request_t req = {.method = "PUT",
                           .url = url_of("/here"),
                           .body = {.kind = KG_HTTP_BODY_FILE, .fd = fd, .len = 13},
                           .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.status, 307);
  char want[256];
  snprintf(want, sizeof want, "%s/elsewhere", base);
  CHECK_STR(kg_http_response_header(&resp, "Location"), want);
  usleep(100000);
  CHECK_INT(seen_count(), 1);
  CHECK_STR(srv.seen[0].target, "/here");

  /* Followed when the request asks: the body is sent again to where the redirect leads, from its start. */
  serve(2, (reply_t[]){{.status = 307, .headers = loc, .body = "go there"}, {.status = 201, .body = "made"}});
  req.max_redirects = 3;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.status, 201);
  CHECK_STR(resp.body.data, "made");
  CHECK(kg_http_response_header(&resp, "Location") == NULL); /* the last answer's headers only */
  CHECK_INT(seen_count(), 2);
  CHECK_STR(srv.seen[1].target, "/elsewhere");
  CHECK_STR(srv.seen[1].method, "PUT");
  CHECK_STR(srv.seen[1].body, "streamed body");

  /* Never to a protocol other than http and https, nor more often than allowed. */
  serve(1, (reply_t[]){{.status = 302, .headers = "Location: file:///etc/hostname\r\n"}});
  req = (kg_http_request_t){.url = url_of("/file"), .max_redirects = 3, .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.status, 0);
  CHECK_CONTAINS(err, "file");
  serve(1, (reply_t[]){{.status = 302, .headers = loc}});
  req = (kg_http_request_t){.url = url_of("/loop"), .max_redirects = 2, .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_CONTAINS(err, "Maximum (2) redirects followed");
  req = (kg_http_request_t){.url = "ftp://127.0.0.1/x", .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_CONTAINS(err, "GET ftp://127.0.0.1/x: ");
  CHECK_CONTAINS(err, "ftp");
  close(fd);
  kg_http_response_free(&resp);
}

/* ---- bodies ------------------------------------------------------------------------------------------------ */

static void test_bodies(void) {
  char err[KG_ERRLEN] = "", v[64];
  kg_http_response_t resp = {0};
  int fd = temp_file("0123456789abcdef");
  off_t before = lseek(fd, 5, SEEK_SET);

  /* A range of a file: bytes [4, 10), by pread (the file's position stays where it was). */
  serve(1, (reply_t[]){{.status = 200, .body = "got it"}});
  const char *headers[] = {"Content-Type: application/octet-stream", NULL};
  kg_http_request_t req = {.method = "POST",
                           .url = url_of("/upload"),
                           .headers = headers,
                           .body = {.kind = KG_HTTP_BODY_FILE, .fd = fd, .offset = 4, .len = 6},
                           .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(srv.seen[0].method, "POST");
  CHECK_STR(srv.seen[0].body, "456789");
  CHECK_STR(header_of(srv.seen[0].head, "Content-Length", v, sizeof v), "6");
  CHECK_STR(header_of(srv.seen[0].head, "Content-Type", v, sizeof v), "application/octet-stream");
  CHECK_STR(header_of(srv.seen[0].head, "Expect", v, sizeof v), ""); /* no 100-continue round trip */
  CHECK_INT(lseek(fd, 0, SEEK_CUR), before);

  /* From memory, with PUT; an empty body is a Content-Length of 0. */
  serve(1, (reply_t[]){{.status = 204}});
  req = (kg_http_request_t){.method = "PUT",
                            .url = url_of("/mem"),
                            .body = {.kind = KG_HTTP_BODY_MEMORY, .data = "metric 1\n", .len = 9},
                            .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.status, 204);
  CHECK_STR(srv.seen[0].method, "PUT");
  CHECK_STR(srv.seen[0].body, "metric 1\n");
  serve(1, (reply_t[]){{.status = 201}});
  req.body = (kg_http_body_t){.kind = KG_HTTP_BODY_FILE, .fd = fd, .len = 0};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(header_of(srv.seen[0].head, "Content-Length", v, sizeof v), "0");

  /* A file shorter than the body it should hold: the try fails before the body is complete. */
  serve(1, (reply_t[]){{.status = 200}});
  req.body = (kg_http_body_t){.kind = KG_HTTP_BODY_FILE, .fd = fd, .offset = 10, .len = 100};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_BODY);
  CHECK_CONTAINS(err, "the request's body file ends before its 100 bytes");
  close(fd);
  kg_http_response_free(&resp);
}

static void test_file_answers(void) {
  char err[KG_ERRLEN] = "", text[256];
  kg_http_response_t resp = {0};
  int fd = temp_file("abc");
  /* A 2xx answer goes to the file from the offset on. */
  serve(1, (reply_t[]){{.status = 200, .body = "hello"}});
  kg_http_request_t req = {
      .url = url_of("/get"), .answer = {.kind = KG_HTTP_ANSWER_FILE, .fd = fd, .offset = 3}, .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(file_text(fd, text, sizeof text), "abchello");
  CHECK_INT(resp.body.len, 0);
  CHECK_INT(resp.body_bytes, 5);
  /* An error answer's body is the reason, not the file's content. */
  serve(1, (reply_t[]){{.status = 404, .body = "NoSuchKey"}});
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_STR(file_text(fd, text, sizeof text), "abchello");
  CHECK_STR(resp.body.data, "NoSuchKey");
  CHECK_CONTAINS(err, "HTTP 404: NoSuchKey");
  /* A try broken midway is tried again from the offset, and what it wrote past the last try's end is cut. */
  serve(2, (reply_t[]){{.status = 200, .body = "0123456789012345678901234567890123456789", .partial = true},
                       {.status = 200, .body = "done"}});
  req.retry = (kg_http_retry_t){.attempts = 2, .pause_ms = 10, .retry_on = KG_HTTP_RETRY_TRANSPORT};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.attempts, 2);
  CHECK_STR(file_text(fd, text, sizeof text), "abcdone");
  /* Past a file answer's cap. */
  serve(1, (reply_t[]){{.status = 200, .body = "0123456789"}});
  req.retry = (kg_http_retry_t){0};
  req.answer.cap = 4;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_TOO_BIG);
  CHECK_CONTAINS(err, "larger than 4 bytes");
  /* Discarded: only the status and the headers. */
  serve(1, (reply_t[]){{.status = 200, .headers = "ETag: \"d\"\r\n", .body = "dropped"}});
  req.answer = (kg_http_answer_t){.kind = KG_HTTP_ANSWER_DISCARD};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(resp.body.len, 0);
  CHECK_INT(resp.body_bytes, 7);
  CHECK_STR(kg_http_response_header(&resp, "ETag"), "\"d\"");
  close(fd);
  kg_http_response_free(&resp);
}

/* ---- authentication ---------------------------------------------------------------------------------------- */

typedef struct {
  int calls;
  bool refuse;
} signer_t;

/* A toy signer: a header with the method, the URL's length, the header count and the body's hash. */
static int toy_signer(void *arg, const kg_http_signing_t *s, kg_http_headers_t *add, char *errbuf) {
  signer_t *t = arg;
  t->calls++;
  if (t->refuse) return kg_fail(errbuf, KG_EINVAL, "no key for %s", s->method);
  size_t n = 0;
  while (s->headers[n])
    n++;
  char value[256], attempt[16];
  snprintf(value, sizeof value, "%s %zu %zu %s", s->method, strlen(s->url), n, s->body_sha256);
  kg_http_headers_add(add, "X-Toy-Signature", value);
  snprintf(attempt, sizeof attempt, "%d", s->attempt);
  kg_http_headers_add(add, "X-Toy-Attempt", attempt);
  return KG_OK;
}

static void test_signer(void) {
  char err[KG_ERRLEN] = "", v[256], want[256], hex[65];
  kg_http_response_t resp = {0};
  signer_t t = {0};
  const char *headers[] = {"If-None-Match: *", NULL};
  serve(1, (reply_t[]){{.status = 200}});
  kg_http_request_t req = {.method = "PUT",
                           .url = url_of("/signed"),
                           .headers = headers,
                           .body = {.kind = KG_HTTP_BODY_MEMORY, .data = "abc", .len = 3},
                           .auth = {.sign = toy_signer, .sign_arg = &t},
                           .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  snprintf(want, sizeof want, "PUT %zu 1 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
           strlen(req.url));
  CHECK_STR(header_of(srv.seen[0].head, "X-Toy-Signature", v, sizeof v), want);
  CHECK_STR(header_of(srv.seen[0].head, "If-None-Match", v, sizeof v), "*");

  /* A file range's hash; each try signed again. */
  int fd = temp_file("xxabcxx");
  serve(2, (reply_t[]){{.status = 500}, {.status = 200}});
  req.body = (kg_http_body_t){.kind = KG_HTTP_BODY_FILE, .fd = fd, .offset = 2, .len = 3};
  req.retry = (kg_http_retry_t){.attempts = 2, .pause_ms = 10, .retry_on = KG_HTTP_RETRY_STATUS};
  t.calls = 0;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_INT(t.calls, 2);
  CHECK_STR(header_of(srv.seen[1].head, "X-Toy-Signature", v, sizeof v), want);
  CHECK_STR(header_of(srv.seen[1].head, "X-Toy-Attempt", v, sizeof v), "2");
  /* No body: the hash of nothing. */
  serve(1, (reply_t[]){{.status = 200}});
  req = (kg_http_request_t){.url = url_of("/get"), .auth = {.sign = toy_signer, .sign_arg = &t}};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  kg_sha256_hex("", 0, hex);
  snprintf(want, sizeof want, "GET %zu 0 %s", strlen(req.url), hex);
  CHECK_STR(header_of(srv.seen[0].head, "X-Toy-Signature", v, sizeof v), want);
  /* A signer that refuses: nothing is sent. */
  serve(1, (reply_t[]){{.status = 200}});
  t.refuse = true;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_SIGNER);
  CHECK_CONTAINS(err, ": cannot sign the request: no key for GET");
  CHECK_INT(seen_count(), 0);
  close(fd);
  kg_http_response_free(&resp);
}

static void test_auth(void) {
  char err[KG_ERRLEN] = "", v[256];
  kg_http_response_t resp = {0};
  serve(1, (reply_t[]){{.status = 200}});
  kg_http_request_t req = {.url = url_of("/basic"),
                           .auth = {.kind = KG_HTTP_AUTH_BASIC, .user = "kingest", .password = "s3cr3t"},
                           .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(header_of(srv.seen[0].head, "Authorization", v, sizeof v), "Basic a2luZ2VzdDpzM2NyM3Q=");
  serve(1, (reply_t[]){{.status = 200}});
  req.auth = (kg_http_auth_t){.kind = KG_HTTP_AUTH_BEARER, .token = "tok.123"};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(header_of(srv.seen[0].head, "Authorization", v, sizeof v), "Bearer tok.123");
  /* Credentials in the URL are basic authentication, and never shown. */
  serve(1, (reply_t[]){{.status = 403, .body = "denied"}});
  char url[256];
  snprintf(url, sizeof url, "http://kingest:s3cr3t@127.0.0.1:%d/userinfo", srv.port);
  req = (kg_http_request_t){.url = url, .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_STR(header_of(srv.seen[0].head, "Authorization", v, sizeof v), "Basic a2luZ2VzdDpzM2NyM3Q=");
  CHECK_CONTAINS(err, "GET http://***@127.0.0.1:");
  CHECK_CONTAINS(err, "/userinfo: HTTP 403: denied");
  CHECK(!strstr(err, "s3cr3t"));
  /* Negotiate: nothing until the server asks; without a Kerberos ticket, its 401 is the answer. */
  setenv("KRB5CCNAME", "FILE:/nonexistent/kingest-test-ccache", 1);
  unsetenv("KRB5_CLIENT_KTNAME");
  serve(1,
        (reply_t[]){{.status = 401, .headers = "WWW-Authenticate: Negotiate\r\n", .body = "Authentication required"}});
  req = (kg_http_request_t){.url = url_of("/spnego"), .auth = {.kind = KG_HTTP_AUTH_NEGOTIATE}, .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.status, 401);
  CHECK_STR(header_of(srv.seen[0].head, "Authorization", v, sizeof v), "");
  CHECK_CONTAINS(err, "HTTP 401: Authentication required");
  kg_http_response_free(&resp);
}

/* ---- TLS ------------------------------------------------------------------------------------------------ */

static void test_tls(const char *script) {
  char dir[] = "/tmp/kg-test-http-tls-XXXXXX", cmd[4096], err[KG_ERRLEN] = "";
  if (!mkdtemp(dir)) return;
  /* A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
  snprintf(cmd, sizeof cmd,
           "(cd %s && K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes' && "
           "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj /CN=kingest-test-ca && "
           "openssl req $K -keyout server.key -out server.csr -subj /CN=127.0.0.1 && "
           "printf 'subjectAltName=IP:127.0.0.1\\n' > san && "
           "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san "
           "-out server.pem && "
           "openssl req $K -keyout client.key -out client.csr -subj /CN=kingest-client && "
           "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem) "
           ">/dev/null 2>&1",
           dir);
  CHECK_INT(system(cmd), 0);
  int out[2];
  if (pipe(out)) return;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    if (!freopen("/dev/null", "w", stderr)) _exit(127);
    execlp("python3", "python3", script, dir, (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  char line[32] = "";
  FILE *f = fdopen(out[0], "r");
  if (!fgets(line, sizeof line, f)) line[0] = 0;
  int port = atoi(line);
  CHECK(port > 0);
  char url[128], ca[256], cert[256], key[256];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/who", port);
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(cert, sizeof cert, "%s/client.pem", dir);
  snprintf(key, sizeof key, "%s/client.key", dir);
  kg_http_response_t resp = {0};
  /* Verified by default: a server whose CA is not trusted fails, naming it. */
  kg_http_request_t req = {.url = url, .timeout_ms = 5000};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.failure, KG_HTTP_FAIL_TLS);
  CHECK_CONTAINS(err, "certificate");
  /* With the CA file. */
  req.tls.ca_file = ca;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(resp.body.data, "client: none");
  /* With a client certificate and key. */
  req.tls.cert_file = cert;
  req.tls.key_file = key;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(resp.body.data, "client: kingest-client");
  /* Not verified, when asked. */
  req.tls = (kg_http_tls_t){.insecure = true};
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_OK);
  CHECK_STR(resp.body.data, "client: none");
  kg_http_response_free(&resp);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  fclose(f);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_INT(system(cmd), 0);
}

/* Last: a stop signal ends the pauses of an interruptible policy (and stays set for the rest of the process). */
static void test_stop_signal(void) {
  char err[KG_ERRLEN] = "";
  kg_http_response_t resp = {0};
  serve(1, (reply_t[]){{.status = 503}});
  kg_http_request_t req = {
      .url = url_of("/stop"),
      .timeout_ms = 5000,
      .retry = {.attempts = 3, .pause_ms = 10, .interruptible = true, .retry_on = KG_HTTP_RETRY_STATUS}};
  kg_stop_install();
  raise(SIGTERM);
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 1);
  CHECK_INT(resp.stop, KG_HTTP_STOP_SIGNAL);
  CHECK_CONTAINS(err, "HTTP 503 (1 attempt in ");
  CHECK_CONTAINS(err, "; stopped by a signal)");
  req.retry.interruptible = false;
  CHECK_INT(kg_http_perform(NULL, &req, &resp, err), KG_EIO);
  CHECK_INT(resp.attempts, 3);
  kg_http_response_free(&resp);
}

int main(int argc, char **argv) {
  kg_log_set_level(KG_LOG_ERROR);
  if (server_start()) {
    fprintf(stderr, "cannot start the test's HTTP server\n");
    return 1;
  }
  test_sha256();
  test_get();
  test_caps();
  test_status_errors();
  test_masking();
  test_retries();
  test_timeouts();
  test_redirects();
  test_bodies();
  test_file_answers();
  test_signer();
  test_auth();
  if (argc > 1) test_tls(argv[1]);
  test_stop_signal();
  server_stop();
  TEST_MAIN_END();
}
