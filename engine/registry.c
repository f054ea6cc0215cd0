/* registry.c: the schema registry client (registry.h): requests with libcurl, retries, and a cache of answers.
 *
 * The cache is a hash table of entries that are also on a list in the order they were written: the oldest is
 * at the head, so both expiry (every entry older than the limit is at the front) and eviction past the
 * maximum size (the head goes) look at the head only. A key is a byte string: 'i' and the id's bytes for a
 * schema by id, 't' and the topic's name for a topic's latest schema. */
#include "registry.h"

#include "curl_api.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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
  CURL *curl;                    /* one handle, so the connection is reused */
  entry_t **buckets;             /* owned; NBUCKETS, a power of two */
  size_t nbuckets;
  size_t count;
  entry_t *oldest, *newest;
  int64_t requests;
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
  if (o->cache_size < 1 || o->attempts < 1 || o->expire_ms < 0 || o->retry_pause_ms < 0 || o->connect_timeout_ms < 1 ||
      o->request_timeout_ms < 1)
    return kg_fail(errbuf, KG_EINVAL, "schema registry options out of range");
  if (kg_curl_load(errbuf)) return KG_EREGISTRY; /* ERRBUF says why */
  CURL *curl = curl_easy_init();
  if (!curl) return kg_fail(errbuf, KG_EREGISTRY, "libcurl failed to make a handle");

  kg_registry_t *r = kg_xcalloc(1, sizeof *r);
  pthread_mutex_init(&r->mutex, NULL);
  r->options = *o;
  size_t len = strlen(o->url);
  while (len > 0 && o->url[len - 1] == '/')
    len--;
  r->options.url = kg_xstrndup(o->url, len);
  r->options.subject_suffix = kg_xstrdup(o->subject_suffix ? o->subject_suffix : "");
  r->curl = curl;
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
  const char *url = config->registry_url ? config->registry_url : "";
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
      .kind = config->registry_kind,
      .subject_suffix = config->registry_subject_suffix,
      .cache_size = config->registry_cache_size,
      .expire_ms = config->registry_cache_expire_min * 60000,
      .attempts = KG_REGISTRY_ATTEMPTS,
      .retry_pause_ms = KG_REGISTRY_RETRY_PAUSE_MS,
      .connect_timeout_ms = KG_REGISTRY_CONNECT_TIMEOUT_MS,
      .request_timeout_ms = KG_REGISTRY_REQUEST_TIMEOUT_MS,
  };
  return kg_registry_new_with(&o, out, errbuf);
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
  curl_easy_cleanup(r->curl);
  free((char *)r->options.url);
  free((char *)r->options.subject_suffix);
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

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
  kg_buf_t *body = userdata;
  if (body->len + size * n > KG_REGISTRY_MAX_ANSWER) return 0; /* stops the transfer: CURLE_WRITE_ERROR */
  kg_buf_append(body, data, size * n);
  return size * n;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) == -1) {
  }
}

/* GETs URL, trying again while the registry does not answer. Returns KG_OK with the answer's status in *STATUS
 * (any status but 5xx) and its body in BODY, or KG_EREGISTRY with ERRBUF saying what the last attempt got. */
static int http_get(kg_registry_t *r, const char *url, long *status, kg_buf_t *body, char *errbuf) {
  CURL *curl = r->curl;
  char curl_err[CURL_ERROR_SIZE];
  struct curl_slist *headers =
      curl_slist_append(NULL, "Accept: application/vnd.schemaregistry.v1+json, application/json, */*");
  int64_t started = kg_mono_ms();
  int rc = KG_EREGISTRY;
  for (int attempt = 1; attempt <= r->options.attempts; attempt++) {
    if (attempt > 1) sleep_ms(r->options.retry_pause_ms);
    curl_easy_reset(curl);
    curl_err[0] = 0;
    body->len = 0;
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for timeouts: tasks are threads */
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)r->options.connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)r->options.request_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 3L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "kingest/" KINGEST_VERSION);
    r->requests++;
    CURLcode cc = curl_easy_perform(curl);
    if (cc != CURLE_OK) {
      kg_fail(errbuf, KG_EREGISTRY, "%s", curl_err[0] ? curl_err : curl_easy_strerror(cc));
      continue;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    if (*status >= 500) {
      kg_fail(errbuf, KG_EREGISTRY, "HTTP %ld", *status);
      continue;
    }
    rc = KG_OK;
    break;
  }
  curl_slist_free_all(headers);
  if (rc != KG_OK) {
    char last[KG_ERRLEN];
    snprintf(last, sizeof last, "%s", errbuf);
    kg_fail(errbuf, KG_EREGISTRY,
            "schema registry %s did not answer: %d attempt%s in %.1f s, %lld ms apart; the "
            "last got: %s",
            url, r->options.attempts, r->options.attempts == 1 ? "" : "s", (double)(kg_mono_ms() - started) / 1000.0,
            (long long)r->options.retry_pause_ms, last);
  }
  return rc;
}

/* A short, printable excerpt of an answer's body, for error messages. */
static void excerpt(const kg_buf_t *body, char *out, size_t size) {
  size_t n = 0;
  for (size_t i = 0; i < body->len && n + 4 < size && i < 200; i++)
    out[n++] = (unsigned char)body->data[i] < 32 ? ' ' : body->data[i];
  if (body->len > 200 && n + 4 < size) out[n++] = '.', out[n++] = '.', out[n++] = '.';
  out[n] = 0;
}

/* Looks KEY up in the cache or at URL (WHAT names it in messages). JSON_SCHEMA: the answer is a JSON object whose
 * "schema" member is the schema's text (Confluent's API), else the body is the schema's text. */
static int lookup(kg_registry_t *r, const uint8_t *key, size_t key_len, const char *url, const char *what,
                  bool json_schema, char **schema, char *errbuf) {
  *schema = NULL;
  pthread_mutex_lock(&r->mutex);
  entry_t *e = cache_get(r, key, key_len);
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
  long status = 0;
  int rc = http_get(r, url, &status, &body, errbuf);
  if (rc == KG_OK && status != 200) {
    char text[256];
    excerpt(&body, text, sizeof text);
    /* The registry answered, and does not know the key: kept, so the next record with it costs no request. */
    rc = kg_fail(errbuf, KG_ENOTFOUND, "schema registry %s does not know %s: HTTP %ld%s%s", url, what, status,
                 text[0] ? ": " : "", text);
    cache_put(r, key, key_len, NULL, errbuf);
  } else if (rc == KG_OK && json_schema) {
    kg_json_t *doc = NULL;
    const char *text = NULL;
    char jerr[KG_ERRLEN];
    if (kg_json_parse(body.data ? body.data : "", body.len, "answer", &doc, jerr) ||
        kg_json_get_string(doc, "schema", "answer", &text, jerr)) {
      rc = kg_fail(errbuf, KG_EREGISTRY, "schema registry %s answered %s with no schema: %s", url, what, jerr);
    } else {
      *schema = kg_xstrdup(text);
      cache_put(r, key, key_len, text, NULL);
    }
    kg_json_free(doc);
  } else if (rc == KG_OK) {
    if (!body.len || memchr(body.data, 0, body.len)) {
      rc = kg_fail(errbuf, KG_EREGISTRY, "schema registry %s answered %s with %s", url, what,
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
  int rc = lookup(r, key, len + 1, url, url_what, r->options.kind == KG_REGISTRY_CONFLUENT, schema, errbuf);
  free(url);
  return rc;
}

int kg_registry_latest(kg_registry_t *r, const char *topic, char **schema, char *errbuf) {
  *schema = NULL;
  size_t tlen = strlen(topic);
  uint8_t *key = kg_xmalloc(tlen + 1);
  key[0] = 't';
  memcpy(key + 1, topic, tlen);
  char *url, *what;
  if (r->options.kind == KG_REGISTRY_CONFLUENT) {
    char *subject = kg_xasprintf("%s%s", topic, r->options.subject_suffix);
    char *escaped = curl_easy_escape(r->curl, subject, 0);
    url = kg_xasprintf("%s/subjects/%s/versions/latest", r->options.url, escaped ? escaped : subject);
    what = kg_xasprintf("the latest schema of subject %s (topic %s)", subject, topic);
    curl_free(escaped);
    free(subject);
  } else {
    char *escaped = curl_easy_escape(r->curl, topic, 0);
    url = kg_xasprintf("%s/latest_with_type=%s", r->options.url, escaped ? escaped : topic);
    what = kg_xasprintf("the latest schema of topic %s", topic);
    curl_free(escaped);
  }
  int rc = lookup(r, key, tlen + 1, url, what, r->options.kind == KG_REGISTRY_CONFLUENT, schema, errbuf);
  free(url);
  free(what);
  free(key);
  return rc;
}
