/* avro_registry.h: a schema registry client, the way Gobblin's Kafka Avro decoders reach theirs: schemas by the id a
 * record carries, and a topic's latest schema, over HTTP, with a cache.
 *
 * Two APIs (kafka.schema.registry.class): Confluent's (a 4-byte id; GET <url>/schemas/ids/<id> and
 * <url>/subjects/<topic><suffix>/versions/latest, answering JSON with the schema's text in "schema") and
 * LinkedIn's, Gobblin's KafkaAvroSchemaRegistry (a 16-byte MD5 id; GET <url>/id=<32 hex digits> and
 * <url>/latest_with_type=<topic>, answering the schema's text itself).
 *
 * What the registry answers is cached: a schema, and a topic's latest schema or the answer that the topic has
 * none (HTTP 404), so that asking again costs no request. Entries go after a time (expire after write) and, past
 * the maximum size, the one written longest ago goes first.
 *
 * A registry that cannot answer is an outage, never a bad record: no connection, a timeout, HTTP 408 or 429 (rate
 * limited), a 5xx, and for a schema id also HTTP 404 (a replica not caught up, a registry restarted from an empty
 * store) are tried again, with a pause that doubles from 1 s (up to 8 s, a quarter more at random) or what the
 * answer's Retry-After asks (seconds or an HTTP date), until the retry timeout
 * (kafka.schema.registry.retry.timeout.ms) has passed since the first attempt; then the lookup fails, and nothing
 * of it is cached. HTTP 401 and 403 (the registry refuses the client) are asked once more, a pause later, then
 * fail; another status fails at once. Each request is bounded by connect and total timeouts, a retried one also by
 * the time left (at least 1 s), so a lookup returns within the retry timeout plus one request's timeout. A TLS
 * failure (a certificate the CA file does not vouch for, a name that does not match) fails at once, naming the CA.
 *
 * An https:// registry's certificate is checked against kafka.schema.registry.ssl.ca.location (the system's CAs
 * without it). The client authenticates with basic authentication (Confluent's basic.auth.user.info, user:password,
 * with basic.auth.credentials.source=USER_INFO; or the URL's user:password@) or a bearer token; a refusal names the
 * URL without its secrets, the user (never the password) and the registry's reason.
 *
 * A client may be shared by threads: calls are serialised by a mutex (tasks each make their own, so they do
 * not wait on each other). */
#ifndef KG_AVRO_REGISTRY_H
#define KG_AVRO_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "kg_common.h"

typedef struct kg_registry kg_registry_t;

typedef enum { KG_REGISTRY_CONFLUENT = 0, KG_REGISTRY_LINKEDIN } kg_registry_kind_t;
typedef enum { KG_DESERIALIZER_BYTE_ARRAY = 0, KG_DESERIALIZER_CONFLUENT_AVRO } kg_deserializer_t;
/* Where basic authentication's credentials come from (Confluent's basic.auth.credentials.source): the URL's
 * user:password@, or basic.auth.user.info. */
typedef enum { KG_REGISTRY_CREDENTIALS_URL = 0, KG_REGISTRY_CREDENTIALS_USER_INFO } kg_registry_credentials_t;
/* How a record's payload is framed: raw bytes, or an Avro datum after a magic byte and a schema id (avro_codec.h). */
typedef enum { KG_FRAMING_NONE = 0, KG_FRAMING_CONFLUENT, KG_FRAMING_LINKEDIN } kg_framing_t;

/* The job's registry settings: its section's rows (avro_registry.c), kafka.schema.registry.* and the two that say which
 * framing the records have, kafka.deserializer.type and source.class, checked against the registry's. */
typedef struct {
  char *url;                /* kafka.schema.registry.url, "" when not given */
  kg_registry_kind_t kind;  /* the API: kafka.schema.registry.class (Confluent's when not given), LinkedIn's for
                               KafkaAvroSource */
  char *subject_suffix;     /* kafka.schema_registry.confluent.schema_name_suffix */
  int64_t cache_size;       /* kafka.schema.registry.max.cache.size: entries */
  int64_t cache_expire_min; /* kafka.schema.registry.cache.expire.after.write.min: minutes, 0: none kept */
  int64_t retry_timeout_ms; /* kafka.schema.registry.retry.timeout.ms: how long a lookup tries again */
  char *ca_file;            /* kafka.schema.registry.ssl.ca.location, "" for the system's CAs */
  kg_registry_credentials_t credentials; /* kafka.schema.registry.basic.auth.credentials.source */
  char *user_info;                /* kafka.schema.registry.basic.auth.user.info (user:password), "" when not given */
  char *token;                    /* kafka.schema.registry.bearer.auth.token, "" when not given */
  kg_deserializer_t deserializer; /* kafka.deserializer.type */
  kg_framing_t framing;           /* from kafka.deserializer.type and source.class: what payloads hold */
} kg_registry_settings_t;
extern const kg_config_section_t kg_registry_section;
const kg_registry_settings_t *kg_registry_settings(const kg_config_t *config);

/* How a client talks to its registry. Strings are copied by kg_registry_new_with. */
typedef struct {
  const char *url;            /* base URL, http:// or https://; a trailing '/' is dropped */
  kg_registry_kind_t kind;    /* the API */
  const char *subject_suffix; /* Confluent's: the latest schema of topic T is subject T + this */
  int64_t cache_size;         /* most entries kept, at least 1 */
  int64_t expire_ms;          /* how long an entry is kept; 0: nothing is kept */
  int64_t retry_timeout_ms;   /* a lookup tries again until this long after its first attempt; 0: never */
  int64_t retry_pause_ms;     /* the first pause before trying again; it doubles, up to 8 times this */
  int64_t connect_timeout_ms; /* per request: connecting */
  int64_t request_timeout_ms; /* per request: all of it */
  const char *ca_file;        /* PEM file of the CAs an https:// registry's certificate is checked against; NULL: the
                                 system's */
  const char *user;           /* basic authentication (with PASSWORD); NULL: none, or the URL's user:password@ */
  const char *password;
  const char *token; /* a bearer token; NULL: none. Not with USER */
  /* The properties the credentials came from, named in a refusal's message; NULL: the options' fields. */
  const char *credentials_from;
} kg_registry_options_t;

/* Gobblin's pause between tries (KafkaSchemaRegistry.GET_SCHEMA_BY_ID_MIN_INTERVAL_SECONDS) is the first one. */
#define KG_REGISTRY_RETRY_PAUSE_MS     1000
#define KG_REGISTRY_CONNECT_TIMEOUT_MS 5000
#define KG_REGISTRY_REQUEST_TIMEOUT_MS 10000

/* A client for the registry of CONFIG (kafka.schema.registry.url, .class, the cache properties,
 * kafka.schema.registry.retry.timeout.ms, the CA and the credentials; the pause and the request timeouts above).
 * Returns KG_OK with a new client in *OUT (free with kg_registry_destroy), or KG_EINVAL with ERRBUF naming the property
 * when the URL is missing or not http(s). */
int kg_registry_new(const kg_config_t *config, kg_registry_t **out, char *errbuf);

/* The same from explicit OPTIONS (tests set short timeouts). */
int kg_registry_new_with(const kg_registry_options_t *options, kg_registry_t **out, char *errbuf);

/* Frees REGISTRY and its cache; NULL is a no-op. */
void kg_registry_destroy(kg_registry_t *registry);

/* The schema whose id is the LEN bytes at ID (4 for Confluent's API, 16 for LinkedIn's), from the cache or the
 * registry. Returns KG_OK with the schema's text in *SCHEMA (a new string, the caller's to free); KG_EINVAL
 * when LEN is not the API's id length; KG_EREGISTRY when the registry did not give the schema: it did not answer,
 * did not know the id, or refused the client until the retry timeout, or answered something that is not a schema.
 * ERRBUF names the URL (its user information hidden), the status or the error, and the id. */
int kg_registry_schema_by_id(kg_registry_t *registry, const uint8_t *id, size_t len, char **schema, char *errbuf);

/* The latest schema of TOPIC, from the cache or the registry (FRESH: from the registry, the answer replacing what
 * the cache held). Returns as kg_registry_schema_by_id, except that the answer that the topic has no schema (HTTP
 * 404) is not tried again: KG_ENOTFOUND, cached as a schema is. */
int kg_registry_latest(kg_registry_t *registry, const char *topic, bool fresh, char **schema, char *errbuf);

/* Requests REGISTRY has sent (each attempt counts), for tests and metrics. */
int64_t kg_registry_requests(kg_registry_t *registry);

#endif
