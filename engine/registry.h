/* registry.h: a schema registry client, the way Gobblin's Kafka Avro decoders reach theirs: schemas by the id a
 * record carries, and a topic's latest schema, over HTTP, with a cache.
 *
 * Two APIs (kafka.schema.registry.class): Confluent's (a 4-byte id; GET <url>/schemas/ids/<id> and
 * <url>/subjects/<topic><suffix>/versions/latest, answering JSON with the schema's text in "schema") and
 * LinkedIn's, Gobblin's KafkaAvroSchemaRegistry (a 16-byte MD5 id; GET <url>/id=<32 hex digits> and
 * <url>/latest_with_type=<topic>, answering the schema's text itself).
 *
 * What the registry answers is cached: a schema, and also its answer that it does not know an id or topic
 * (HTTP 404, or another 4xx), so that a record with an unknown id does not cost a request each time. Entries go
 * after a time (expire after write) and, past the maximum size, the one written longest ago goes first. A
 * registry that does not answer (no connection, a timeout, an HTTP 5xx) is tried again, a fixed number of
 * times with a pause between; that failure is not cached. Each request is bounded by connect and total
 * timeouts, so a call returns within attempts x timeout + (attempts - 1) x pause.
 *
 * A client may be shared by threads: calls are serialised by a mutex (tasks each make their own, so they do
 * not wait on each other). */
#ifndef KG_REGISTRY_H
#define KG_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "kg_common.h"

typedef struct kg_registry kg_registry_t;

/* How a client talks to its registry. Strings are copied by kg_registry_new_with. */
typedef struct {
  const char *url;            /* base URL, http:// or https://; a trailing '/' is dropped */
  kg_registry_kind_t kind;    /* the API */
  const char *subject_suffix; /* Confluent's: the latest schema of topic T is subject T + this */
  int64_t cache_size;         /* most entries kept, at least 1 */
  int64_t expire_ms;          /* how long an entry is kept; 0: nothing is kept */
  int attempts;               /* requests made before a registry that does not answer is an error */
  int64_t retry_pause_ms;     /* pause between them */
  int64_t connect_timeout_ms; /* per request: connecting */
  int64_t request_timeout_ms; /* per request: all of it */
} kg_registry_options_t;

/* Gobblin's: 3 tries 1 s apart (KafkaSchemaRegistry.GET_SCHEMA_BY_ID_MAX_TIRES and _MIN_INTERVAL_SECONDS). */
#define KG_REGISTRY_ATTEMPTS           3
#define KG_REGISTRY_RETRY_PAUSE_MS     1000
#define KG_REGISTRY_CONNECT_TIMEOUT_MS 5000
#define KG_REGISTRY_REQUEST_TIMEOUT_MS 10000

/* A client for the registry of CONFIG (kafka.schema.registry.url, .class, the cache properties; the retries and
 * timeouts above). Returns KG_OK with a new client in *OUT (free with kg_registry_destroy), or KG_EINVAL with
 * ERRBUF naming the property when the URL is missing or not http(s). */
int kg_registry_new(const kg_config_t *config, kg_registry_t **out, char *errbuf);

/* The same from explicit OPTIONS (tests set short timeouts). */
int kg_registry_new_with(const kg_registry_options_t *options, kg_registry_t **out, char *errbuf);

/* Frees REGISTRY and its cache; NULL is a no-op. */
void kg_registry_destroy(kg_registry_t *registry);

/* The schema whose id is the LEN bytes at ID (4 for Confluent's API, 16 for LinkedIn's), from the cache or the
 * registry. Returns KG_OK with the schema's text in *SCHEMA (a new string, the caller's to free); KG_EINVAL
 * when LEN is not the API's id length; KG_ENOTFOUND when the registry does not know the id (also when that
 * answer comes from the cache); KG_EREGISTRY when the registry did not answer after every attempt, or answered
 * something that is not a schema. ERRBUF names the URL and what happened. */
int kg_registry_schema_by_id(kg_registry_t *registry, const uint8_t *id, size_t len, char **schema, char *errbuf);

/* The latest schema of TOPIC; returns as kg_registry_schema_by_id. */
int kg_registry_latest(kg_registry_t *registry, const char *topic, char **schema, char *errbuf);

/* Requests REGISTRY has sent (each attempt counts), for tests and metrics. */
int64_t kg_registry_requests(kg_registry_t *registry);

#endif
