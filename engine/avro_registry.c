/* avro_registry.c: the schema registry client (avro_registry.h): requests over the engine's HTTP client (http.h), with
 * the registry's own rules for trying again, and a cache of answers.
 *
 * The cache is a hash table of entries that are also on a list in the order they were written: the oldest is
 * at the head, so both expiry (every entry older than the limit is at the front) and eviction past the
 * maximum size (the head goes) look at the head only. A key is a byte string: 'i' and the id's bytes for a
 * schema by id, 't' and the topic's name for a topic's latest schema. */
#include "avro_registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "http.h"
#include "json.h"

/* Answers bigger than this are not schemas; the transfer stops. */
#define KG_REGISTRY_MAX_ANSWER (16 * 1024 * 1024)

typedef struct entry entry_t;
struct entry {
  entry_t *chain; /* next in the hash bucket */
  entry_t *older; /* toward the head of the write-order list */
  entry_t *newer; /* toward its tail */
  uint8_t *key;   /* owned */
  size_t key_len;
  uint64_t hash;
  char *schema;       /* owned; NULL when the registry does not know the key */
  char *error;        /* owned: why not, when SCHEMA is NULL */
  int64_t written_ms; /* monotonic clock */
};

struct kg_registry {
  pthread_mutex_t mutex;
  kg_registry_options_t options; /* strings owned */
  kg_http_t *http;               /* one handle, so the connection is reused */
  entry_t **buckets;             /* owned; NBUCKETS, a power of two */
  size_t nbuckets;
  size_t count;
  entry_t *oldest, *newest;
  int64_t requests;
  unsigned seed; /* of the pauses' random part */
};

static uint64_t hash_of(const uint8_t *key, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ key[i]) * 1099511628211ull;
  return h;
}

int kg_registry_new_with(const kg_registry_options_t *o, kg_registry_t **out, char *errbuf) {
  *out = NULL;
  if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)))
    return kg_fail(errbuf, KG_EINVAL, "schema registry URL '%s' is not an http:// or https:// URL",
                   o->url ? o->url : "");
  if (o->cache_size < 1 || o->retry_timeout_ms < 0 || o->expire_ms < 0 || o->retry_pause_ms < 1 ||
      o->connect_timeout_ms < 1 || o->request_timeout_ms < 1)
    return kg_fail(errbuf, KG_EINVAL, "schema registry options out of range");
  kg_http_t *http = NULL;
  if (kg_http_new(&http, errbuf)) return KG_EREGISTRY; /* ERRBUF says why */

  kg_registry_t *r = kg_xcalloc(1, sizeof *r);
  pthread_mutex_init(&r->mutex, NULL);
  r->options = *o;
  size_t len = strlen(o->url);
  while (len > 0 && o->url[len - 1] == '/')
    len--;
  r->options.url = kg_xstrndup(o->url, len);
  r->options.subject_suffix = kg_xstrdup(o->subject_suffix ? o->subject_suffix : "");
  r->options.ca_file = o->ca_file && *o->ca_file ? kg_xstrdup(o->ca_file) : NULL;
  r->options.user = o->user ? kg_xstrdup(o->user) : NULL;
  r->options.password = o->password ? kg_xstrdup(o->password) : NULL;
  r->options.token = o->token && *o->token ? kg_xstrdup(o->token) : NULL;
  r->options.credentials_from = o->credentials_from ? kg_xstrdup(o->credentials_from) : NULL;
  r->http = http;
  r->seed = (unsigned)kg_mono_ms() ^ (unsigned)(uintptr_t)r;
  /* Buckets for the cache's most entries (at most 64K buckets: chains stay short enough for a cache that big). */
  r->nbuckets = 16;
  while (r->nbuckets < (size_t)o->cache_size && r->nbuckets < 65536)
    r->nbuckets *= 2;
  r->buckets = kg_xcalloc(r->nbuckets, sizeof *r->buckets);
  *out = r;
  return KG_OK;
}

int kg_registry_new(const kg_config_t *config, kg_registry_t **out, char *errbuf) {
  *out = NULL;
  const kg_registry_settings_t *s = kg_registry_settings(config);
  const char *url = s->url ? s->url : "";
  const char *origin = kg_props_origin(config->props, "kafka.schema.registry.url");
  if (!*url)
    return kg_fail(errbuf, KG_EINVAL, "%s: missing property kafka.schema.registry.url (the schema registry's URL)",
                   config->job_file);
  if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: invalid value '%s' for property kafka.schema.registry.url: expected an http:// or https:// URL",
                   origin ? origin : config->job_file, url);
  kg_registry_options_t o = {
      .url = url,
      .kind = s->kind,
      .subject_suffix = s->subject_suffix,
      .cache_size = s->cache_size,
      .expire_ms = s->cache_expire_min * 60000,
      .retry_timeout_ms = s->retry_timeout_ms,
      .retry_pause_ms = KG_REGISTRY_RETRY_PAUSE_MS,
      .connect_timeout_ms = KG_REGISTRY_CONNECT_TIMEOUT_MS,
      .request_timeout_ms = KG_REGISTRY_REQUEST_TIMEOUT_MS,
      .ca_file = s->ca_file,
      .token = s->token,
  };
  /* user:password, split at the first ':' (a password may hold more of them). */
  char *user = NULL;
  if (s->credentials == KG_REGISTRY_CREDENTIALS_USER_INFO) {
    const char *colon = strchr(s->user_info, ':');
    user = kg_xstrndup(s->user_info, (size_t)(colon - s->user_info)); /* the setter checked the ':' */
    o.user = user;
    o.password = colon + 1;
    o.credentials_from = "kafka.schema.registry.basic.auth.user.info";
  } else if (*s->token) {
    o.credentials_from = "kafka.schema.registry.bearer.auth.token";
  }
  int rc = kg_registry_new_with(&o, out, errbuf);
  free(user);
  return rc;
}

static void entry_free(entry_t *e) {
  free(e->key);
  free(e->schema);
  free(e->error);
  free(e);
}

/* Takes E off the hash table and the write-order list, and frees it. */
static void entry_remove(kg_registry_t *r, entry_t *e) {
  entry_t **p = &r->buckets[e->hash & (r->nbuckets - 1)];
  while (*p != e)
    p = &(*p)->chain;
  *p = e->chain;
  if (e->older)
    e->older->newer = e->newer;
  else
    r->oldest = e->newer;
  if (e->newer)
    e->newer->older = e->older;
  else
    r->newest = e->older;
  r->count--;
  entry_free(e);
}

void kg_registry_destroy(kg_registry_t *r) {
  if (!r) return;
  while (r->oldest)
    entry_remove(r, r->oldest);
  free(r->buckets);
  kg_http_destroy(r->http);
  free((char *)r->options.url);
  free((char *)r->options.subject_suffix);
  free((char *)r->options.ca_file);
  free((char *)r->options.user);
  if (r->options.password) memset((char *)r->options.password, 0, strlen(r->options.password));
  free((char *)r->options.password);
  if (r->options.token) memset((char *)r->options.token, 0, strlen(r->options.token));
  free((char *)r->options.token);
  free((char *)r->options.credentials_from);
  pthread_mutex_destroy(&r->mutex);
  free(r);
}

int64_t kg_registry_requests(kg_registry_t *r) {
  pthread_mutex_lock(&r->mutex);
  int64_t n = r->requests;
  pthread_mutex_unlock(&r->mutex);
  return n;
}

/* The live entry of KEY, or NULL; drops the entries that have expired first. */
static entry_t *cache_get(kg_registry_t *r, const uint8_t *key, size_t len) {
  int64_t now = kg_mono_ms();
  while (r->oldest && now - r->oldest->written_ms >= r->options.expire_ms)
    entry_remove(r, r->oldest);
  uint64_t h = hash_of(key, len);
  for (entry_t *e = r->buckets[h & (r->nbuckets - 1)]; e; e = e->chain)
    if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len)) return e;
  return NULL;
}

/* Keeps an answer: SCHEMA (copied), or ERROR (copied) when the registry does not know KEY. */
static void cache_put(kg_registry_t *r, const uint8_t *key, size_t len, const char *schema, const char *error) {
  if (r->options.expire_ms == 0) return;
  while (r->count >= (size_t)r->options.cache_size)
    entry_remove(r, r->oldest);
  entry_t *e = kg_xcalloc(1, sizeof *e);
  e->key = kg_xmalloc(len ? len : 1);
  memcpy(e->key, key, len);
  e->key_len = len;
  e->hash = hash_of(key, len);
  e->schema = schema ? kg_xstrdup(schema) : NULL;
  e->error = error ? kg_xstrdup(error) : NULL;
  e->written_ms = kg_mono_ms();
  entry_t **bucket = &r->buckets[e->hash & (r->nbuckets - 1)];
  e->chain = *bucket;
  *bucket = e;
  e->older = r->newest;
  if (r->newest)
    r->newest->newer = e;
  else
    r->oldest = e;
  r->newest = e;
  r->count++;
}

/* What an attempt got, as the rules for trying again take it. */
typedef enum {
  GOT_ANSWER,  /* 200: the body is the answer */
  GOT_UNKNOWN, /* 404: the registry does not know the key */
  GOT_OUTAGE,  /* no answer, 408, 429, 5xx: tried again */
  GOT_REFUSED, /* 401, 403: the registry refuses the client */
  GOT_ERROR,   /* another status: a request the registry will never answer */
  GOT_TLS,     /* the TLS handshake failed: a certificate not trusted, a name that does not match; not tried again */
} got_t;

static got_t got_of(const kg_http_response_t *resp) {
  if (resp->failure == KG_HTTP_FAIL_TLS) return GOT_TLS;
  if (resp->failure != KG_HTTP_FAIL_NONE) return GOT_OUTAGE;
  long s = resp->status;
  if (s == 200) return GOT_ANSWER;
  if (s == 404) return GOT_UNKNOWN;
  if (s == 408 || s == 429 || s >= 500) return GOT_OUTAGE;
  if (s == 401 || s == 403) return GOT_REFUSED;
  return GOT_ERROR;
}

/* The seconds an answer's Retry-After asks (-1 when none, or it asks for no wait: the backoff's pause then). */
static int64_t retry_after_of(const kg_http_response_t *resp) { return resp->status != 200 ? resp->retry_after_s : -1; }

/* A line saying what an attempt got, into LAST: the transport failure, or the status with its meaning, the wait
 * Retry-After asks, and a printable excerpt of the body. */
static void describe(const kg_http_response_t *resp, char *last, size_t last_size) {
  if (resp->failure != KG_HTTP_FAIL_NONE) {
    snprintf(last, last_size, "%s", resp->error);
    return;
  }
  const kg_buf_t *body = &resp->body;
  char text[256];
  size_t n = 0;
  for (size_t i = 0; i < body->len && n + 4 < sizeof text && i < 200; i++) /* a printable excerpt of the body */
    text[n++] = (unsigned char)body->data[i] < 32 ? ' ' : body->data[i];
  if (body->len > 200) text[n++] = '.', text[n++] = '.', text[n++] = '.';
  text[n] = 0;
  long s = resp->status;
  const char *meaning = s == 404   ? " (not found)"
                        : s == 401 ? " (unauthorized)"
                        : s == 403 ? " (forbidden)"
                        : s == 408 ? " (request timeout)"
                        : s == 429 ? " (too many requests)"
                                   : "";
  char after[48] = "";
  int64_t retry_after = retry_after_of(resp);
  if (retry_after >= 0) snprintf(after, sizeof after, ", Retry-After %lld s", (long long)retry_after);
  snprintf(last, last_size, "HTTP %ld%s%s%s%s", s, meaning, after, text[0] ? ": " : "", text);
}

/* The registry's rules for trying again (avro_registry.h), as the HTTP client's judge of each attempt. */
typedef struct {
  bool retry_unknown; /* a 404 is an outage */
  int refusals;       /* 401 and 403 so far */
} judging_t;

static kg_http_verdict_t judge(void *arg, const kg_http_response_t *resp) {
  judging_t *j = arg;
  switch (got_of(resp)) {
  case GOT_ANSWER:
  case GOT_TLS:
  case GOT_ERROR: return KG_HTTP_DONE;
  case GOT_UNKNOWN: return j->retry_unknown ? KG_HTTP_AGAIN : KG_HTTP_DONE;
  case GOT_REFUSED: return ++j->refusals > 1 ? KG_HTTP_DONE : KG_HTTP_AGAIN_PAUSED; /* asked once more, a pause later */
  case GOT_OUTAGE: break;
  }
  return KG_HTTP_AGAIN;
}

/* Who the client said it was, for a refusal's message: the user of basic authentication and where it came from (never
 * the password), a bearer token's property, or that it gave no credentials. */
static void credentials_shown(const kg_registry_options_t *o, const char *url, char *out, size_t size) {
  const char *from = o->credentials_from;
  if (o->user) {
    snprintf(out, size, "user %s, basic authentication from %s", o->user, from ? from : "the client's options");
  } else if (o->token) {
    snprintf(out, size, "a bearer token from %s", from ? from : "the client's options");
  } else {
    const char *authority = strstr(url, "://");
    authority = authority ? authority + 3 : url;
    size_t len = strcspn(authority, "/?#");
    const char *at = memchr(authority, '@', len);
    if (at) {
      size_t ulen = strcspn(authority, ":@");
      snprintf(out, size, "user %.*s, basic authentication from the URL", (int)ulen, authority);
    } else {
      snprintf(out, size,
               "no credentials given: kafka.schema.registry.basic.auth.user.info or "
               "kafka.schema.registry.bearer.auth.token");
    }
  }
}

/* GETs URL (WHAT names what it is asked for, SHOWN is URL as messages show it), trying again while the registry
 * cannot answer (avro_registry.h), and also while it does not know the key when RETRY_UNKNOWN. Returns KG_OK with the
 * answer in BODY; KG_ENOTFOUND with ERRBUF saying so when the registry does not know the key (and not
 * RETRY_UNKNOWN); else KG_EREGISTRY with ERRBUF naming the URL, what the last attempt got and the attempts made. */
static int http_get(kg_registry_t *r, const char *url, const char *shown, const char *what, bool retry_unknown,
                    kg_buf_t *body, char *errbuf) {
  const kg_registry_options_t *o = &r->options;
  static const char *const headers[] = {"Accept: application/vnd.schemaregistry.v1+json, application/json, */*", NULL};
  judging_t judging = {.retry_unknown = retry_unknown};
  /* Tried again after what Retry-After asks, or the next pause of the backoff (doubling up to 8 times the first), a
   * quarter more at random so that tasks do not come back all at once; until the retry timeout, a request tried
   * again bounded by the time left too, but given at least a second. */
  kg_http_request_t req = {
      .url = url,
      .headers = headers,
      .answer = {.cap = KG_REGISTRY_MAX_ANSWER},
      .connect_timeout_ms = o->connect_timeout_ms,
      .timeout_ms = o->request_timeout_ms,
      .max_redirects = 3,
      .retry = {.deadline_ms = o->retry_timeout_ms > 0 ? o->retry_timeout_ms : KG_HTTP_DEADLINE_AT_START,
                .pause_ms = o->retry_pause_ms,
                .max_pause_ms = 8 * o->retry_pause_ms,
                .jitter_seed = &r->seed,
                .retry_after = true,
                .interruptible = true,
                .try_floor_ms = 1000,
                .judge = judge,
                .judge_arg = &judging},
      .tls = {.ca_file = o->ca_file},
      .auth = {.kind = o->user    ? KG_HTTP_AUTH_BASIC
                       : o->token ? KG_HTTP_AUTH_BEARER
                                  : KG_HTTP_AUTH_NONE,
               .user = o->user,
               .password = o->password,
               .token = o->token},
      .any_status = true,
      .service = "schema registry"};
  kg_http_response_t resp = {0};
  char why[KG_ERRLEN];
  kg_http_perform(r->http, &req, &resp, why); /* every outcome is judged below, by the last attempt */
  r->requests += resp.attempts;
  if (!resp.attempts) { /* nothing could be sent */
    kg_http_response_free(&resp);
    return kg_fail(errbuf, KG_EREGISTRY, "schema registry %s: %s", shown, why);
  }
  int rc;
  char last[KG_ERRLEN / 2];
  describe(&resp, last, sizeof last);
  int attempts = resp.attempts;
  double took = (double)resp.elapsed_ms / 1000.0;
  got_t got = got_of(&resp);
  int64_t retry_after = retry_after_of(&resp);
  if (got == GOT_ANSWER) {
    *body = resp.body;
    resp.body = (kg_buf_t){0};
    rc = KG_OK;
  } else if (got == GOT_UNKNOWN && !retry_unknown) {
    rc = kg_fail(errbuf, KG_ENOTFOUND, "schema registry %s does not know %s: %s", shown, what, last);
  } else if (got == GOT_ERROR) {
    rc = kg_fail(errbuf, KG_EREGISTRY,
                 "schema registry %s answered %s for %s, a request it will not answer (is "
                 "kafka.schema.registry.url the base URL of its API?)",
                 shown, last, what);
  } else if (resp.stop == KG_HTTP_STOP_SIGNAL) {
    rc = kg_fail(errbuf, KG_EREGISTRY,
                 "stopped by a signal while waiting to ask schema registry %s again for %s (%d attempt%s; the "
                 "last got: %s)",
                 shown, what, attempts, attempts == 1 ? "" : "s", last);
  } else if (got == GOT_REFUSED) {
    char who[512];
    credentials_shown(o, url, who, sizeof who);
    rc = kg_fail(errbuf, KG_EREGISTRY, "authentication refused by schema registry %s (%s): %s for %s, %d attempts",
                 shown, who, last, what, attempts);
  } else if (got == GOT_TLS) {
    rc = kg_fail(errbuf, KG_EREGISTRY,
                 "cannot speak TLS with schema registry %s (its certificate checked against %s%s): %s, for %s", shown,
                 o->ca_file ? "kafka.schema.registry.ssl.ca.location=" : "the system's CAs",
                 o->ca_file ? o->ca_file : "", last, what);
  } else { /* the next pause would have passed the retry timeout */
    char bound[160] = "";
    if (retry_after >= 0 && resp.elapsed_ms < o->retry_timeout_ms)
      snprintf(bound, sizeof bound, " (it asked for %lld s more, past the bound)", (long long)retry_after);
    if (got == GOT_UNKNOWN)
      rc = kg_fail(errbuf, KG_EREGISTRY,
                   "schema registry %s does not know %s (%s), and still did not after %d attempt%s in %.1f s "
                   "(kafka.schema.registry.retry.timeout.ms=%lld)%s: a registry that lost its schemas or a "
                   "replica behind, not a bad record",
                   shown, what, last, attempts, attempts == 1 ? "" : "s", took, (long long)o->retry_timeout_ms, bound);
    else
      rc = kg_fail(errbuf, KG_EREGISTRY,
                   "schema registry %s did not answer %s: %d attempt%s in %.1f s "
                   "(kafka.schema.registry.retry.timeout.ms=%lld)%s; the last got: %s",
                   shown, what, attempts, attempts == 1 ? "" : "s", took, (long long)o->retry_timeout_ms, bound, last);
  }
  kg_http_response_free(&resp);
  return rc;
}

/* Looks KEY up in the cache (unless FRESH) or at URL (WHAT names it in messages). JSON_SCHEMA: the answer is a JSON
 * object whose "schema" member is the schema's text (Confluent's API), else the body is the schema's text.
 * RETRY_UNKNOWN: the registry's answer that it does not know KEY is an outage (a schema id); else it is an answer,
 * and cached (a topic's latest). */
static int lookup(kg_registry_t *r, const uint8_t *key, size_t key_len, const char *url, const char *what,
                  bool json_schema, bool retry_unknown, bool fresh, char **schema, char *errbuf) {
  *schema = NULL;
  char shown[1024];
  kg_http_shown_url(url, shown, sizeof shown);
  pthread_mutex_lock(&r->mutex);
  entry_t *e = cache_get(r, key, key_len);
  if (e && fresh) {
    entry_remove(r, e);
    e = NULL;
  }
  if (e) {
    int rc = KG_OK;
    if (e->schema)
      *schema = kg_xstrdup(e->schema);
    else
      rc = kg_fail(errbuf, KG_ENOTFOUND, "%s", e->error);
    pthread_mutex_unlock(&r->mutex);
    return rc;
  }
  kg_buf_t body = {0};
  int rc = http_get(r, url, shown, what, retry_unknown, &body, errbuf);
  if (rc == KG_ENOTFOUND) {
    cache_put(r, key, key_len, NULL, errbuf); /* the next unit asks no more */
  } else if (rc == KG_OK && json_schema) {
    kg_json_t *doc = NULL;
    const char *text = NULL;
    char jerr[KG_ERRLEN];
    if (kg_json_parse(body.data ? body.data : "", body.len, "answer", &doc, jerr) ||
        kg_json_get_string(doc, "schema", "answer", &text, jerr)) {
      rc = kg_fail(errbuf, KG_EREGISTRY, "schema registry %s answered %s with no schema: %s", shown, what, jerr);
    } else {
      *schema = kg_xstrdup(text);
      cache_put(r, key, key_len, text, NULL);
    }
    kg_json_free(doc);
  } else if (rc == KG_OK) {
    if (!body.len || memchr(body.data, 0, body.len)) {
      rc = kg_fail(errbuf, KG_EREGISTRY, "schema registry %s answered %s with %s", shown, what,
                   body.len ? "binary data" : "nothing");
    } else {
      *schema = kg_xstrdup(body.data);
      cache_put(r, key, key_len, body.data, NULL);
    }
  }
  pthread_mutex_unlock(&r->mutex);
  kg_buf_free(&body);
  return rc;
}

int kg_registry_schema_by_id(kg_registry_t *r, const uint8_t *id, size_t len, char **schema, char *errbuf) {
  *schema = NULL;
  size_t want = r->options.kind == KG_REGISTRY_CONFLUENT ? 4 : 16;
  if (len != want)
    return kg_fail(errbuf, KG_EINVAL, "a schema id of %s's registry is %zu bytes, not %zu",
                   r->options.kind == KG_REGISTRY_CONFLUENT ? "Confluent" : "LinkedIn", want, len);
  uint8_t key[17] = {'i'};
  memcpy(key + 1, id, len);
  char url_what[64], *url;
  if (r->options.kind == KG_REGISTRY_CONFLUENT) {
    /* Confluent's ids are signed 32-bit big-endian numbers. */
    int32_t n = (int32_t)((uint32_t)id[0] << 24 | (uint32_t)id[1] << 16 | (uint32_t)id[2] << 8 | id[3]);
    url = kg_xasprintf("%s/schemas/ids/%ld", r->options.url, (long)n);
    snprintf(url_what, sizeof url_what, "schema id %ld", (long)n);
  } else {
    char hex[33];
    for (size_t i = 0; i < 16; i++)
      snprintf(hex + 2 * i, 3, "%02x", id[i]);
    url = kg_xasprintf("%s/id=%s", r->options.url, hex);
    snprintf(url_what, sizeof url_what, "schema id %s", hex);
  }
  int rc =
      lookup(r, key, len + 1, url, url_what, r->options.kind == KG_REGISTRY_CONFLUENT, true, false, schema, errbuf);
  free(url);
  return rc;
}

int kg_registry_latest(kg_registry_t *r, const char *topic, bool fresh, char **schema, char *errbuf) {
  *schema = NULL;
  size_t tlen = strlen(topic);
  uint8_t *key = kg_xmalloc(tlen + 1);
  key[0] = 't';
  memcpy(key + 1, topic, tlen);
  char *url, *what;
  if (r->options.kind == KG_REGISTRY_CONFLUENT) {
    char *subject = kg_xasprintf("%s%s", topic, r->options.subject_suffix);
    kg_buf_t u = {0};
    kg_buf_appendf(&u, "%s/subjects/", r->options.url);
    kg_buf_append_url_escaped(&u, subject, false);
    kg_buf_appendf(&u, "/versions/latest");
    url = u.data;
    what = kg_xasprintf("the latest schema of subject %s (topic %s)", subject, topic);
    free(subject);
  } else {
    kg_buf_t u = {0};
    kg_buf_appendf(&u, "%s/latest_with_type=", r->options.url);
    kg_buf_append_url_escaped(&u, topic, false);
    url = u.data;
    what = kg_xasprintf("the latest schema of topic %s", topic);
  }
  int rc = lookup(r, key, tlen + 1, url, what, r->options.kind == KG_REGISTRY_CONFLUENT, false, fresh, schema, errbuf);
  free(url);
  free(what);
  free(key);
  return rc;
}

/* ---- the registry's properties ------------------------------------------------------------------------------- */

/* The class names the registry's API; the row's parse has checked it is one of REGISTRIES (V->e its index). */
static int set_registry_class(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                              kg_property_value_t *v, char *errbuf) {
  (void)c, (void)p, (void)key, (void)errbuf;
  ((kg_registry_settings_t *)options)->kind = v->e ? KG_REGISTRY_LINKEDIN : KG_REGISTRY_CONFLUENT;
  return KG_OK;
}

/* source.class, with kafka.deserializer.type and kafka.schema.registry.class (read before it): what the payloads
 * hold, and the registry API that serves their schemas. The two Avro framings both start with byte 0, so a job
 * that mixes the properties of one with those of the other is refused rather than read one way. */
static int set_source(const kg_config_t *config, void *options, const kg_property_t *p, const char *key,
                      kg_property_value_t *v, char *errbuf) {
  (void)v;
  kg_registry_settings_t *c = options;
  char tmp[256], tmp2[256];
  const char *source = kg_config_class_name(key ? kg_props_get(config->props, key) : p->def, tmp, sizeof tmp);
  const char *rkey = "kafka.schema.registry.class";
  const char *rclass = kg_props_get(config->props, rkey);
  const char *rname = rclass ? kg_config_class_name(rclass, tmp2, sizeof tmp2) : NULL;
  const char *where = kg_config_origin(config, key ? key : "kafka.deserializer.type");
  c->framing = KG_FRAMING_NONE;
  if (!strcmp(source, "KafkaAvroSource")) {
    if (c->deserializer == KG_DESERIALIZER_CONFLUENT_AVRO)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: source.class=%s reads LinkedIn's framing (a 16-byte MD5 schema id), and "
                     "kafka.deserializer.type=CONFLUENT_AVRO Confluent's (a 4-byte id): keep the one the topic's "
                     "records are written in",
                     where, source);
    if (rname && c->kind != KG_REGISTRY_LINKEDIN)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: source.class=%s reads LinkedIn's framing, whose schemas come from a KafkaAvroSchemaRegistry, "
                     "but %s=%s",
                     kg_config_origin(config, rkey), source, rkey, rclass);
    c->kind = KG_REGISTRY_LINKEDIN;
    c->framing = KG_FRAMING_LINKEDIN;
  } else if (c->deserializer == KG_DESERIALIZER_CONFLUENT_AVRO) {
    if (c->kind != KG_REGISTRY_CONFLUENT)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: kafka.deserializer.type=CONFLUENT_AVRO reads Confluent's framing (a 4-byte schema id) with "
                     "schemas from a ConfluentKafkaSchemaRegistry, but %s=%s; for LinkedIn's framing (a 16-byte MD5 "
                     "id) set source.class=KafkaAvroSource",
                     kg_config_origin(config, rkey), rkey, rclass);
    c->framing = KG_FRAMING_CONFLUENT;
  }
  if (c->framing != KG_FRAMING_NONE && !*c->url)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s needs kafka.schema.registry.url, the registry that serves the records' "
                   "schemas",
                   where,
                   c->framing == KG_FRAMING_LINKEDIN ? "source.class=KafkaAvroSource"
                                                     : "kafka.deserializer.type=CONFLUENT_AVRO");
  return KG_OK;
}

/* kafka.schema.registry.ssl.ca.location: empty for the system's CAs, else a file that can be read, made absolute. */
static int set_ca(const kg_config_t *c, void *options, const kg_property_t *p, const char *key, kg_property_value_t *v,
                  char *errbuf) {
  (void)p;
  char *value = v->s;
  kg_registry_settings_t *o = options;
  if (!*value) {
    o->ca_file = value;
    return KG_OK;
  }
  o->ca_file = kg_config_absolute(value);
  free(value);
  if (access(o->ca_file, R_OK))
    return kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: the CA file cannot be read: %s", kg_config_origin(c, key),
                   key, o->ca_file, strerror(errno));
  return KG_OK;
}

/* kafka.schema.registry.basic.auth.user.info: user:password, or empty. */
static int set_user_info(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                         kg_property_value_t *v, char *errbuf) {
  (void)p;
  kg_registry_settings_t *o = options;
  o->user_info = v->s;
  if (*o->user_info && !strchr(o->user_info, ':'))
    return kg_fail(errbuf, KG_EINVAL, "%s: property %s is not user:password", kg_config_origin(c, key), key);
  return KG_OK;
}

/* The default of kafka.schema.registry.basic.auth.credentials.source: USER_INFO when the user info is given. */
static char *default_credentials(const kg_config_t *c, const void *options) {
  (void)c;
  const char *user_info = ((const kg_registry_settings_t *)options)->user_info;
  return kg_xstrdup(user_info && *user_info ? "USER_INFO" : "URL");
}

/* kafka.schema.registry.basic.auth.credentials.source, checked against the user info (read before it) and the URL. */
static int set_credentials(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                           kg_property_value_t *v, char *errbuf) {
  (void)p;
  kg_registry_settings_t *o = options;
  o->credentials = v->e ? KG_REGISTRY_CREDENTIALS_USER_INFO : KG_REGISTRY_CREDENTIALS_URL;
  const char *where = kg_config_origin(c, key ? key : "kafka.schema.registry.basic.auth.user.info");
  if (o->credentials == KG_REGISTRY_CREDENTIALS_USER_INFO && !*o->user_info)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: kafka.schema.registry.basic.auth.credentials.source=USER_INFO needs "
                   "kafka.schema.registry.basic.auth.user.info (user:password)",
                   where);
  if (o->credentials == KG_REGISTRY_CREDENTIALS_URL && *o->user_info)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: kafka.schema.registry.basic.auth.user.info is given, but "
                   "kafka.schema.registry.basic.auth.credentials.source=URL takes the credentials from the URL: set "
                   "it to USER_INFO, or leave it out",
                   where);
  return KG_OK;
}

/* kafka.schema.registry.bearer.auth.token: not with basic authentication. */
static int set_token(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                     kg_property_value_t *v, char *errbuf) {
  (void)p;
  kg_registry_settings_t *o = options;
  o->token = v->s;
  if (*o->token && o->credentials == KG_REGISTRY_CREDENTIALS_USER_INFO)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: kafka.schema.registry.bearer.auth.token and kafka.schema.registry.basic.auth.user.info are "
                   "both given: a registry client authenticates one way; keep one",
                   kg_config_origin(c, key));
  return KG_OK;
}

static const char *const registries[] = {"ConfluentKafkaSchemaRegistry", "KafkaAvroSchemaRegistry", NULL};
static const char *const credential_sources[] = {"URL", "USER_INFO", NULL};        /* kg_registry_credentials_t */
static const char *const deserializers[] = {"BYTE_ARRAY", "CONFLUENT_AVRO", NULL}; /* kg_deserializer_t */
static const char *const sources[] = {"KafkaSimpleSource", "KafkaAvroSource", "KafkaDeserializerSource", NULL};

#define KG_FIELD(f) KG_FIELD_OF(kg_registry_settings_t, f)

/* The registry's own rows, then the two that say which framing (and so which registry API) the records have: read
 * last, by set_source, which checks them against the registry's. */
static const kg_property_t rows[] = {
    {.name = "kafka.schema.registry.url",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(url),
     .doc = "Base URL (`http://` or `https://`) of the schema registry: Confluent's API (`.../apis/ccompat/v7` on "
            "an Apicurio registry), or for `KafkaAvroSchemaRegistry` the URL under which `/id=<md5 hex>` and "
            "`/latest_with_type=<topic>` answer. Needed by the Avro decoders ([Avro](#avro))."},
    {.name = "kafka.schema.registry.ssl.ca.location",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_ca,
     .doc = "PEM file of the certificate authorities an `https://` registry's certificate is checked against; empty: "
            "the system's. A certificate it does not vouch for, or a name that does not match, fails the lookup at "
            "once, naming this file ([Security](security.md#the-schema-registry-and-the-pushgateway))."},
    {.name = "kafka.schema.registry.basic.auth.user.info",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_user_info,
     .secret = true,
     .doc = "Basic authentication with the registry, as Confluent's clients write it: `user:password` (split at the "
            "first `:`). A secret: never printed; give it with `${file:PATH}` or `${env:VAR}`."},
    {.name = "kafka.schema.registry.basic.auth.credentials.source",
     .type = KG_PROP_ENUM,
     .def_doc = "USER_INFO when kafka.schema.registry.basic.auth.user.info is given, else URL",
     .computed = default_credentials,
     .names = credential_sources,
     .set = set_credentials,
     .doc = "Where basic authentication's credentials come from: `USER_INFO` "
            "(`kafka.schema.registry.basic.auth.user.info`) or `URL` (the `user:password@` of "
            "`kafka.schema.registry.url`, if any)."},
    {.name = "kafka.schema.registry.bearer.auth.token",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_token,
     .secret = true,
     .doc = "A bearer token sent to the registry (`Authorization: Bearer ...`), instead of basic authentication. A "
            "secret: never printed."},
    {.name = "kafka.schema.registry.class",
     .type = KG_PROP_CLASS,
     .def_doc = "Confluent's",
     .names = registries,
     .set = set_registry_class,
     .doc = "The registry's API: `ConfluentKafkaSchemaRegistry` (schemas by 4-byte id at `/schemas/ids/<id>`, the "
            "latest at `/subjects/<topic><suffix>/versions/latest`) or `KafkaAvroSchemaRegistry` (LinkedIn's: by "
            "16-byte MD5 id at `/id=<hex>`, the latest at `/latest_with_type=<topic>`)."},
    {.name = "kafka.schema_registry.confluent.schema_name_suffix",
     .type = KG_PROP_STRING,
     .def = "-value",
     KG_FIELD(subject_suffix),
     .doc = "Confluent's registry: a topic's latest schema is that of subject `<topic><suffix>`."},
    {.name = "kafka.schema.registry.max.cache.size",
     .type = KG_PROP_INT,
     .def = "1000",
     .min = 1,
     .max = 1000000,
     KG_FIELD(cache_size),
     .doc = "Schemas (and topics the registry has no schema for) a registry client keeps (one per task); past it, "
            "the one kept longest goes."},
    {.name = "kafka.schema.registry.cache.expire.after.write.min",
     .type = KG_PROP_INT,
     .def = "10",
     .min = 0,
     .max = 525600,
     KG_FIELD(cache_expire_min),
     .doc = "Minutes a schema, or the registry's answer that a topic has none, is kept before the registry is asked "
            "again; 0 keeps nothing. What a registry that cannot answer got is never kept "
            "(`kafka.schema.registry.retry.timeout.ms`)."},
    {.name = "kafka.schema.registry.retry.timeout.ms",
     .type = KG_PROP_INT,
     .def = "60000",
     .min = 0,
     .max = 86400000,
     KG_FIELD(retry_timeout_ms),
     .doc = "How long a schema lookup tries again while the registry cannot give the schema: no connection, a "
            "timeout, HTTP 408, 429 (rate limited) or 5xx, or a 404 for a schema id that records carry (a replica "
            "behind, a registry restarted empty). Pauses double from 1 s to 8 s, or are what `Retry-After` asks; "
            "past this time the task fails, naming the URL, the status and the id, and no offset moves. HTTP 401 and "
            "403 are asked once more, then fail the task. 0: one attempt ([Avro](#avro))."},
    {.name = "kafka.deserializer.type",
     .type = KG_PROP_ENUM,
     .def = "BYTE_ARRAY",
     .names = deserializers,
     KG_FIELD(deserializer),
     .doc = "`BYTE_ARRAY`: the payload's bytes; `CONFLUENT_AVRO`: Avro records in Confluent's framing (magic byte 0, "
            "4-byte schema id), decoded with the schemas of `kafka.schema.registry.url` ([Avro](#avro))."},
    {.name = "source.class",
     .type = KG_PROP_CLASS,
     .def = "gobblin.source.extractor.extract.kafka.KafkaSimpleSource",
     .names = sources,
     .set = set_source,
     .doc = "`KafkaSimpleSource`: the record's payload as bytes; `KafkaAvroSource`: Avro records in LinkedIn's "
            "framing (magic byte 0, 16-byte MD5 schema id) from a `KafkaAvroSchemaRegistry`; "
            "`KafkaDeserializerSource`: as `kafka.deserializer.type` says ([Avro](#avro))."},
};

/* What the setters made. */
static void clear(void *options) {
  kg_registry_settings_t *o = options;
  free(o->ca_file);
  if (o->user_info) memset(o->user_info, 0, strlen(o->user_info));
  free(o->user_info);
  if (o->token) memset(o->token, 0, strlen(o->token));
  free(o->token);
}

const kg_config_section_t kg_registry_section = {.name = "registry",
                                                 .rows = rows,
                                                 .nrows = sizeof rows / sizeof rows[0],
                                                 .size = sizeof(kg_registry_settings_t),
                                                 .clear = clear};

const kg_registry_settings_t *kg_registry_settings(const kg_config_t *config) {
  return kg_config_options(config, &kg_registry_section);
}
