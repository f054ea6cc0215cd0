/* test_registry.c: the schema registry client against the real registry that scripts/registry runs (the ctest
 * fixture "registry" starts it; its URL is in $KINGEST_REGISTRY_DIR/url): both APIs, what is cached (schemas,
 * and topics without one), expiry and eviction, a registry that is down or does not answer (bounded time), one
 * that stumbles (spec/support/registry_proxy.py in front of it: rate limits with Retry-After, 5xx, a hang, a
 * refused client, a restart that lost its store), and the client's properties. Schemas are registered with
 * spec/support/avro_produce.py. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "props.h"
#include "avro_registry.h"
#include "test.h"

static char base_url[256];
static char run_id[32];
static char schema_path[64];
static const char *schema_text =
    "{\"type\":\"record\",\"name\":\"Event\",\"namespace\":\"kingest.test\",\"fields\":[{\"name\":\"id\",\"type\":"
    "\"long\"},{\"name\":\"name\",\"type\":\"string\"}]}";

/* Registers the test schema for TOPIC through the spec helper; returns its id as printed, or "" on failure. */
static void register_schema(const char *format, const char *url, const char *topic, char *id, size_t size) {
  const char *root = getenv("KINGEST_ROOT") ? getenv("KINGEST_ROOT") : ".";
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "python3 '%s/spec/support/avro_produce.py' register %s '%s' '%s' '%s'", root, format, url,
           topic, schema_path);
  id[0] = 0;
  FILE *p = popen(cmd, "r");
  if (!p) return;
  if (fgets(id, (int)size, p)) id[strcspn(id, "\n")] = 0;
  pclose(p);
}

static kg_registry_options_t options(const char *url, kg_registry_kind_t kind) {
  return (kg_registry_options_t){.url = url,
                                 .kind = kind,
                                 .subject_suffix = "-value",
                                 .cache_size = 100,
                                 .expire_ms = 600000,
                                 .retry_timeout_ms = 2000,
                                 .retry_pause_ms = KG_REGISTRY_RETRY_PAUSE_MS,
                                 .connect_timeout_ms = 2000,
                                 .request_timeout_ms = 5000};
}

static void be32(uint32_t n, uint8_t out[4]) {
  out[0] = (uint8_t)(n >> 24), out[1] = (uint8_t)(n >> 16), out[2] = (uint8_t)(n >> 8), out[3] = (uint8_t)n;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_confluent(void) {
  char err[KG_ERRLEN] = "", url[512], topic[64], id_text[64];
  snprintf(url, sizeof url, "%s/apis/ccompat/v7/", base_url); /* a trailing '/' is dropped */
  snprintf(topic, sizeof topic, "confluent_%s", run_id);
  register_schema("confluent", url, topic, id_text, sizeof id_text);
  CHECK(id_text[0] != 0);
  kg_registry_options_t o = options(url, KG_REGISTRY_CONFLUENT);
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  uint8_t id[4];
  be32((uint32_t)atoi(id_text), id);
  char *schema = NULL;
  CHECK_INT(kg_registry_schema_by_id(r, id, 4, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 1);
  /* The second lookup is the cache's. */
  CHECK_INT(kg_registry_schema_by_id(r, id, 4, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 1);

  CHECK_INT(kg_registry_latest(r, topic, false, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 2);

  /* FRESH asks again. */
  CHECK_INT(kg_registry_latest(r, topic, true, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 3);

  /* An id the registry does not know is asked for until the retry timeout (2 s here): a registry that lost its
   * store, or a replica behind, is an outage; nothing of it is kept, the next lookup asks again. */
  be32(987654, id);
  int64_t t0 = now_ms();
  CHECK_INT(kg_registry_schema_by_id(r, id, 4, &schema, err), KG_EREGISTRY);
  CHECK(now_ms() - t0 >= 900);
  CHECK(schema == NULL);
  CHECK_CONTAINS(err, "/apis/ccompat/v7/schemas/ids/987654 does not know schema id 987654 (HTTP 404 (not found): ");
  CHECK_CONTAINS(err, "and still did not after 2 attempts in ");
  CHECK_CONTAINS(err, "(kafka.schema.registry.retry.timeout.ms=2000)");
  CHECK_INT(kg_registry_requests(r), 5);

  /* A topic with no schema is an answer: not tried again, and kept. An id of the wrong size. */
  CHECK_INT(kg_registry_latest(r, "no_such_topic", false, &schema, err), KG_ENOTFOUND);
  CHECK_CONTAINS(err, "does not know the latest schema of subject no_such_topic-value (topic no_such_topic): HTTP 404");
  CHECK_INT(kg_registry_latest(r, "no_such_topic", false, &schema, err), KG_ENOTFOUND);
  CHECK_INT(kg_registry_requests(r), 6);
  CHECK_INT(kg_registry_schema_by_id(r, id, 16, &schema, err), KG_EINVAL);
  CHECK_STR(err, "a schema id of Confluent's registry is 4 bytes, not 16");
  kg_registry_destroy(r);
}

static void test_linkedin(void) {
  char err[KG_ERRLEN] = "", url[512], topic[64], hex[64];
  snprintf(url, sizeof url, "%s/apis/registry/v2/groups/kingest_%s/artifacts", base_url, run_id);
  snprintf(topic, sizeof topic, "linkedin_%s", run_id);
  register_schema("linkedin", url, topic, hex, sizeof hex);
  CHECK_INT(strlen(hex), 32);
  kg_registry_options_t o = options(url, KG_REGISTRY_LINKEDIN);
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r || strlen(hex) != 32) {
    kg_registry_destroy(r);
    return;
  }
  uint8_t id[16];
  for (int i = 0; i < 16; i++)
    sscanf(hex + 2 * i, "%2hhx", &id[i]);
  char *schema = NULL;
  CHECK_INT(kg_registry_schema_by_id(r, id, 16, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_latest(r, topic, false, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 2);

  memset(id, 0xab, sizeof id);
  kg_registry_destroy(r);
  o.retry_timeout_ms = 0; /* one attempt */
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  CHECK_INT(kg_registry_schema_by_id(r, id, 16, &schema, err), KG_EREGISTRY);
  CHECK_CONTAINS(err, "/id=abababababababababababababababab does not know schema id abababababababababababababababab "
                      "(HTTP 404 (not found)");
  CHECK_CONTAINS(err, "still did not after 1 attempt in ");
  CHECK_INT(kg_registry_requests(r), 1);
  CHECK_INT(kg_registry_schema_by_id(r, id, 4, &schema, err), KG_EINVAL);
  kg_registry_destroy(r);
}

/* Entries go after expire_ms; past cache_size, the one written longest ago goes. The answers kept here are the
 * registry's that topics a and b have no schema. */
static void test_cache_limits(void) {
  char err[KG_ERRLEN] = "", url[512], a[64], b[64];
  snprintf(url, sizeof url, "%s/apis/ccompat/v7", base_url);
  snprintf(a, sizeof a, "cache_a_%s", run_id);
  snprintf(b, sizeof b, "cache_b_%s", run_id);
  kg_registry_options_t o = options(url, KG_REGISTRY_CONFLUENT);
  o.expire_ms = 300;
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  char *schema;
  CHECK_INT(kg_registry_latest(r, a, false, &schema, err), KG_ENOTFOUND);
  kg_registry_latest(r, a, false, &schema, err);
  CHECK_INT(kg_registry_requests(r), 1);
  usleep(400000);
  kg_registry_latest(r, a, false, &schema, err);
  CHECK_INT(kg_registry_requests(r), 2);
  kg_registry_destroy(r);

  o = options(url, KG_REGISTRY_CONFLUENT);
  o.cache_size = 1;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  kg_registry_latest(r, a, false, &schema, err);
  kg_registry_latest(r, b, false, &schema, err); /* a goes */
  kg_registry_latest(r, b, false, &schema, err);
  CHECK_INT(kg_registry_requests(r), 2);
  kg_registry_latest(r, a, false, &schema, err);
  CHECK_INT(kg_registry_requests(r), 3);
  kg_registry_destroy(r);

  o = options(url, KG_REGISTRY_CONFLUENT);
  o.expire_ms = 0; /* nothing kept */
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  kg_registry_latest(r, a, false, &schema, err);
  kg_registry_latest(r, a, false, &schema, err);
  CHECK_INT(kg_registry_requests(r), 2);
  kg_registry_destroy(r);
}

/* A loopback port bound and listening, whose connections are never answered; *FD is the socket. */
static int silent_port(int *fd) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) || listen(*fd, 16) ||
      getsockname(*fd, (struct sockaddr *)&a, &len))
    return -1;
  return ntohs(a.sin_port);
}

/* A registry that is down: tried again, 1 s then 2 s apart, until the retry timeout (2 s), then an error naming the
 * URL; nothing is kept, so the next call tries again. One that accepts connections and never answers: each attempt
 * bounded by the request timeout, the whole by the retry timeout. */
static void test_registry_down(void) {
  char err[KG_ERRLEN] = "", url[256];
  int fd;
  int port = silent_port(&fd);
  CHECK(port > 0);
  close(fd); /* now nothing listens there */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/apis/ccompat/v7", port);
  kg_registry_options_t o = options(url, KG_REGISTRY_CONFLUENT);
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  uint8_t id[4];
  be32(1, id);
  char *schema = NULL;
  int64_t t0 = now_ms();
  CHECK_INT(kg_registry_schema_by_id(r, id, 4, &schema, err), KG_EREGISTRY);
  int64_t took = now_ms() - t0;
  CHECK(took >= 1000 && took < 4000);
  CHECK_INT(kg_registry_requests(r), 2);
  char want[512];
  snprintf(want, sizeof want, "schema registry %s/schemas/ids/1 did not answer schema id 1: 2 attempts in ", url);
  CHECK_CONTAINS(err, want);
  CHECK_CONTAINS(err,
                 "(kafka.schema.registry.retry.timeout.ms=2000); the last got: Failed to connect to 127.0.0.1 port");
  CHECK_INT(kg_registry_latest(r, "t", false, &schema, err), KG_EREGISTRY);
  CHECK_INT(kg_registry_requests(r), 4);
  kg_registry_destroy(r);

  port = silent_port(&fd);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  o = options(url, KG_REGISTRY_LINKEDIN);
  o.request_timeout_ms = 300;
  o.retry_pause_ms = 100;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (r) {
    t0 = now_ms();
    CHECK_INT(kg_registry_latest(r, "t", false, &schema, err), KG_EREGISTRY);
    took = now_ms() - t0;
    CHECK(took >= 1900 && took < 5000);
    CHECK(kg_registry_requests(r) >= 3);
    CHECK_CONTAINS(err, "/latest_with_type=t did not answer the latest schema of topic t: ");
    CHECK_CONTAINS(err, "the last got: Operation timed out after");
  }
  kg_registry_destroy(r);
  close(fd);
}

/* spec/support/registry_proxy.py in front of the test registry: its pid, and its base URL in URL. */
static pid_t proxy_start(char *url, size_t size) {
  const char *root = getenv("KINGEST_ROOT") ? getenv("KINGEST_ROOT") : ".";
  char script[512], port_file[128];
  snprintf(script, sizeof script, "%s/spec/support/registry_proxy.py", root);
  snprintf(port_file, sizeof port_file, "/tmp/kg-test-registry-proxy-%ld.port", (long)getpid());
  remove(port_file);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    execlp("python3", "python3", script, base_url, "--port-file", port_file, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 200; i++) { /* up to 20 s */
    FILE *f = fopen(port_file, "r");
    int port = 0;
    if (f && fscanf(f, "%d", &port) == 1 && port > 0) {
      fclose(f);
      remove(port_file);
      snprintf(url, size, "http://127.0.0.1:%d", port);
      return pid;
    }
    if (f) fclose(f);
    usleep(100000);
  }
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  return -1;
}

/* Tells the proxy at URL what to do: QUERY goes to <url>/_proxy/<QUERY>. */
static void proxy_do(const char *url, const char *query) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "curl -sf -o /dev/null '%s/_proxy/%s'", url, query);
  CHECK_INT(system(cmd), 0);
}

/* The bench of test_stumbling: a fault proxy in front of the registry, and one schema id the registry knows. */
typedef struct {
  char proxy[128];  /* the proxy's URL */
  char url[512];    /* the registry's API through the proxy */
  char id_text[64]; /* the schema id, and as the client reads it */
  uint8_t id[4];
  char path[128]; /* the lookup's path, which the faults match */
} stumble_t;

/* Faults the registry recovers from: the client gets the schema, waiting what it is asked. */
static void stumble_recovered(const stumble_t *s) {
  char err[KG_ERRLEN] = "", q[256];
  kg_registry_options_t o = options(s->url, KG_REGISTRY_CONFLUENT);
  o.expire_ms = 0;        /* every lookup asks */
  o.retry_pause_ms = 200; /* pauses of 0.2, 0.4 s..., so that Retry-After shows */
  o.retry_timeout_ms = 60000;
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  char *schema = NULL;

  /* Rate limited once with Retry-After: 2: the client waits what it is asked, not its own pause. */
  snprintf(q, sizeof q, "fault?match=%s&status=429&retry_after=2&times=1", s->path);
  proxy_do(s->proxy, q);
  int64_t t0 = now_ms();
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_OK);
  CHECK(now_ms() - t0 >= 1900);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 2);

  /* Retry-After as an HTTP date, on a 503. */
  snprintf(q, sizeof q, "fault?match=%s&status=503&retry_after_date=2&times=1", s->path);
  proxy_do(s->proxy, q);
  t0 = now_ms();
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_OK);
  CHECK(now_ms() - t0 >= 900); /* the date has whole seconds: at least 1 of the 2 */
  free(schema);
  CHECK_INT(kg_registry_requests(r), 4);

  /* 408 and 500 in a row, then the answer. */
  snprintf(q, sizeof q, "fault?match=%s&status=408&times=1", s->path);
  proxy_do(s->proxy, q);
  snprintf(q, sizeof q, "fault?match=%s&status=500&times=1", s->path);
  proxy_do(s->proxy, q);
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_OK);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 7);

  /* A restart that lost its store, then caught up: 404 twice for an id it knows. */
  snprintf(q, sizeof q, "fault?match=%s&forget=1&times=2", s->path);
  proxy_do(s->proxy, q);
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_OK);
  CHECK_STR(schema, schema_text);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 10);

  /* A hang: the attempt times out, the next gets the answer. */
  kg_registry_destroy(r);
  o.request_timeout_ms = 500;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  snprintf(q, sizeof q, "fault?match=%s&hang=3&times=1", s->path);
  proxy_do(s->proxy, q);
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_OK);
  free(schema);
  CHECK_INT(kg_registry_requests(r), 2);
  kg_registry_destroy(r);
}

/* Refused (401, 403): asked once more, then an error that says so, long before the retry timeout; never taken for
 * an unknown id, and not kept. */
static void stumble_refused(const stumble_t *s) {
  char err[KG_ERRLEN] = "", q[256];
  char *schema = NULL;
  for (int status = 401; status <= 403; status += 2) {
    kg_registry_options_t o = options(s->url, KG_REGISTRY_CONFLUENT);
    o.retry_timeout_ms = 60000;
    o.retry_pause_ms = 200;
    kg_registry_t *r = NULL;
    CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
    proxy_do(s->proxy, "clear");
    snprintf(q, sizeof q, "fault?match=%s&status=%d", s->path, status);
    proxy_do(s->proxy, q);
    int64_t t0 = now_ms();
    CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_EREGISTRY);
    CHECK(now_ms() - t0 < 30000);
    char want[1024];
    snprintf(want, sizeof want,
             "authentication refused by schema registry %s%s (no credentials given: "
             "kafka.schema.registry.basic.auth.user.info or kafka.schema.registry.bearer.auth.token): HTTP %d (%s)",
             s->url, s->path, status, status == 401 ? "unauthorized" : "forbidden");
    CHECK_CONTAINS(err, want);
    CHECK_CONTAINS(err, "2 attempts");
    CHECK_INT(kg_registry_requests(r), 2);
    proxy_do(s->proxy, "clear");
    CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_OK);
    free(schema);
    kg_registry_destroy(r);
  }
}

/* Faults that do not pass: rate limited for good, a Retry-After past the bound, a status never answered. */
static void stumble_failed(const stumble_t *s) {
  char err[KG_ERRLEN] = "", q[256];
  char *schema = NULL;
  /* Rate limited for good: the lookup fails at the retry timeout, naming the URL, the status and the id. */
  kg_registry_options_t o = options(s->url, KG_REGISTRY_CONFLUENT);
  o.retry_timeout_ms = 2500;
  o.retry_pause_ms = 200;
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  snprintf(q, sizeof q, "fault?match=%s&status=429", s->path);
  proxy_do(s->proxy, q);
  int64_t t0 = now_ms();
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_EREGISTRY);
  int64_t took = now_ms() - t0;
  CHECK(took >= 1000 && took < 10000);
  char want[1024];
  snprintf(want, sizeof want, "schema registry %s%s did not answer schema id %s: ", s->url, s->path, s->id_text);
  CHECK_CONTAINS(err, want);
  CHECK_CONTAINS(err, "(kafka.schema.registry.retry.timeout.ms=2500); the last got: HTTP 429 (too many requests)");
  /* Retry-After past the bound: no use waiting for it. */
  proxy_do(s->proxy, "clear");
  snprintf(q, sizeof q, "fault?match=%s&status=429&retry_after=3600", s->path);
  proxy_do(s->proxy, q);
  int64_t before = kg_registry_requests(r);
  t0 = now_ms();
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_EREGISTRY);
  CHECK(now_ms() - t0 < 2000);
  CHECK_INT(kg_registry_requests(r) - before, 1);
  CHECK_CONTAINS(err, "(it asked for 3600 s more, past the bound)");
  CHECK_CONTAINS(err, "Retry-After 3600 s");

  /* Another status is a request the registry will never answer: at once. */
  proxy_do(s->proxy, "clear");
  snprintf(q, sizeof q, "fault?match=%s&status=400", s->path);
  proxy_do(s->proxy, q);
  before = kg_registry_requests(r);
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_EREGISTRY);
  CHECK_INT(kg_registry_requests(r) - before, 1);
  CHECK_CONTAINS(err, "answered HTTP 400");
  kg_registry_destroy(r);
}

/* The URL's user information never reaches a message. */
static void stumble_secret_hidden(const stumble_t *s) {
  char err[KG_ERRLEN] = "", q[256], url[512];
  char *schema = NULL;
  proxy_do(s->proxy, "clear");
  snprintf(q, sizeof q, "fault?match=%s&status=401", s->path);
  proxy_do(s->proxy, q);
  snprintf(url, sizeof url, "http://kingest:s3cr3t@%s/apis/ccompat/v7", s->proxy + strlen("http://"));
  kg_registry_options_t o = options(url, KG_REGISTRY_CONFLUENT);
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  CHECK_INT(kg_registry_schema_by_id(r, s->id, 4, &schema, err), KG_EREGISTRY);
  CHECK_CONTAINS(err, "authentication refused by schema registry http://***@127.0.0.1:");
  CHECK_CONTAINS(err, " (user kingest, basic authentication from the URL): HTTP 401 (unauthorized)");
  CHECK(!strstr(err, "s3cr3t"));
  kg_registry_destroy(r);
}

/* A registry that stumbles: what each way costs and ends in. Every fault is on one schema id that the registry
 * knows; the client must get its schema once the registry can give it, and fail the lookup (never take it for an
 * unknown id) when it cannot within the retry timeout. */
static void test_stumbling(void) {
  stumble_t s = {0};
  pid_t pid = proxy_start(s.proxy, sizeof s.proxy);
  CHECK(pid > 0);
  if (pid <= 0) return;
  snprintf(s.url, sizeof s.url, "%s/apis/ccompat/v7", s.proxy);
  char topic[64], direct[512];
  snprintf(topic, sizeof topic, "stumble_%s", run_id);
  snprintf(direct, sizeof direct, "%s/apis/ccompat/v7", base_url);
  register_schema("confluent", direct, topic, s.id_text, sizeof s.id_text);
  be32((uint32_t)atoi(s.id_text), s.id);
  snprintf(s.path, sizeof s.path, "/schemas/ids/%s", s.id_text);
  stumble_recovered(&s);
  stumble_refused(&s);
  stumble_failed(&s);
  stumble_secret_hidden(&s);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* Tasks share nothing, but a client may be shared: threads looking up a known id and topics without a schema at
 * once. */
typedef struct {
  kg_registry_t *r;
  uint32_t known;
  int ok, notfound;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  char err[KG_ERRLEN];
  for (int i = 0; i < 200; i++) {
    uint8_t id[4];
    be32(w->known, id);
    char *schema = NULL, topic[64];
    snprintf(topic, sizeof topic, "none_%d_%s", i % 7, run_id);
    int rc = i % 2 ? kg_registry_schema_by_id(w->r, id, 4, &schema, err)
                   : kg_registry_latest(w->r, topic, false, &schema, err);
    if (rc == KG_OK && schema && !strcmp(schema, schema_text)) w->ok++;
    if (rc == KG_ENOTFOUND) w->notfound++;
    free(schema);
  }
  return NULL;
}

static void test_threads(void) {
  char err[KG_ERRLEN] = "", url[512], topic[64], id_text[64];
  snprintf(url, sizeof url, "%s/apis/ccompat/v7", base_url);
  snprintf(topic, sizeof topic, "threads_%s", run_id);
  register_schema("confluent", url, topic, id_text, sizeof id_text);
  kg_registry_options_t o = options(url, KG_REGISTRY_CONFLUENT);
  kg_registry_t *r = NULL;
  CHECK_INT(kg_registry_new_with(&o, &r, err), KG_OK);
  if (!r) return;
  worker_t w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){.r = r, .known = (uint32_t)atoi(id_text)};
    pthread_create(&t[i], NULL, worker, &w[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT(w[i].ok, 100);
    CHECK_INT(w[i].notfound, 100);
  }
  CHECK_INT(kg_registry_requests(r), 8); /* one known id, 7 topics without a schema */
  kg_registry_destroy(r);
}

static int config_from(const char *text, kg_config_t **c, char *err) {
  return kg_test_config(text, "/jobs/avro.pull", c, err);
}

/* The client from a job's properties. */
static void test_from_config(void) {
  char err[KG_ERRLEN] = "", text[1024];
  kg_config_t *c = NULL;
  kg_registry_t *r = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\n", &c, err), KG_OK);
  if (c) CHECK_INT(kg_registry_new(c, &r, err), KG_EINVAL);
  CHECK_STR(err, "/jobs/avro.pull: missing property kafka.schema.registry.url (the schema registry's URL)");
  kg_config_destroy(c);

  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.schema.registry.url=localhost:8081\n", &c, err), KG_OK);
  if (c) CHECK_INT(kg_registry_new(c, &r, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: invalid value 'localhost:8081' for property kafka.schema.registry.url: expected an "
                 "http:// or https:// URL");
  kg_config_destroy(c);

  char topic[64], hex[64], url[512];
  snprintf(url, sizeof url, "%s/apis/registry/v2/groups/config_%s/artifacts", base_url, run_id);
  snprintf(topic, sizeof topic, "config_%s", run_id);
  register_schema("linkedin", url, topic, hex, sizeof hex);
  snprintf(text, sizeof text,
           "kafka.brokers=b:1\nkafka.schema.registry.url=%s\n"
           "kafka.schema.registry.class=org.apache.gobblin.metrics.kafka.KafkaAvroSchemaRegistry\n",
           url);
  CHECK_INT(config_from(text, &c, err), KG_OK);
  if (c) CHECK_INT(kg_registry_new(c, &r, err), KG_OK);
  if (r) {
    char *schema = NULL;
    CHECK_INT(kg_registry_latest(r, topic, false, &schema, err), KG_OK);
    CHECK_STR(schema, schema_text);
    free(schema);
  }
  kg_registry_destroy(r);
  kg_config_destroy(c);
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  const char *dir = getenv("KINGEST_REGISTRY_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/url", dir ? dir : ".registry");
  FILE *f = fopen(path, "r");
  if (!f || !fgets(base_url, sizeof base_url, f)) {
    fprintf(stderr, "no registry URL in %s (scripts/registry start)\n", path);
    return 1;
  }
  fclose(f);
  base_url[strcspn(base_url, "\n")] = 0;
  snprintf(run_id, sizeof run_id, "%ld_%ld", (long)getpid(), (long)time(NULL) % 100000);
  snprintf(schema_path, sizeof schema_path, "/tmp/kg-test-registry-%ld.avsc", (long)getpid());
  f = fopen(schema_path, "w");
  fputs(schema_text, f);
  fclose(f);

  test_confluent();
  test_linkedin();
  test_cache_limits();
  test_registry_down();
  test_stumbling();
  test_threads();
  test_from_config();
  remove(schema_path);
  TEST_MAIN_END();
}
