/* kafka_source.c: the Kafka source on librdkafka's simple (partition-assigned) consumer.
 *
 * kingest tracks offsets itself, so no consumer group is joined and nothing is committed to Kafka. A task
 * pulls its partitions one after the other: consume_start at the low watermark, consume_batch until the
 * high watermark, consume_stop.
 *
 * The prefetch queue is bounded (queued.min.messages, queued.max.messages.kbytes) so that memory stays small
 * whatever the backlog. Once the queue reaches a bound, librdkafka 2.0's fetcher stops and looks at the queue
 * again only when its broker thread next wakes up, up to a second later, so a reader that drains the queue
 * would wait most of that second, every time the queue fills: a reader slower than the fetcher (a script that
 * decodes and encodes) fills it again and again. So when the queue has been seen at a bound and is then found
 * empty, the engine restarts the partition's fetcher at the next offset, which fetches at once (nothing is
 * fetched twice or skipped: the queue is empty). Only then: a restart also throws away a fetch in flight, which
 * the fetcher of a queue at its bound no longer sends; and since the queue must fill again before the next
 * restart, every restart follows progress, however far or slow the broker (a proxy, a quota, a broker-side fetch
 * wait with fetch.min.bytes and fetch.wait.max.ms). A fetch in flight all the same can stop the fetcher again
 * just after a restart (see kg_kafka_fetch): the fetcher then gets one more restart, and only one. */
#include "kafka_source.h"

#include <ctype.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hadoop_token.h"
#include "log.h"
#include "parse.h"

/* Records held in a partition's prefetch queue. librdkafka keeps each in an operation of a few hundred bytes besides
 * its payload, so for small records this bound, not the 4 MB of payloads, is what a reader's memory comes to. A
 * queue that fills costs one restart of the fetcher (see above), so a smaller bound costs little speed. */
#ifndef KG_PREFETCH_RECORDS
#define KG_PREFETCH_RECORDS "10000"
#endif
#define KG_WAIT_SLICE_MS 25 /* one slice of a wait for records */
/* The records a batch holds stay in librdkafka's fetch buffers until the next fetch, on top of the prefetch queue,
 * so a batch is also bounded in bytes: as many records as KG_BATCH_BYTES holds at the partition's average record
 * size (1,000 records of 10 KB would hold 10 MB a task). The first batch of a partition, its size not known yet,
 * takes at most KG_FIRST_BATCH records. */
#define KG_BATCH_BYTES (1 << 20)
#define KG_FIRST_BATCH 64

/* The connection errors of one broker, as librdkafka's threads log them (see log_cb). */
#define KG_MAX_BROKERS 32
typedef struct {
  char name[160];   /* librdkafka's name of the broker: host:port/bootstrap for a kafka.brokers entry */
  char cause[384];  /* its last connection error, without librdkafka's "(after N ms in state ...)" */
  const char *kind; /* what the error says for certain (connection refused, ...), or NULL: it may pass */
  int count;        /* connection errors so far */
} kg_broker_error_t;

struct kg_kafka {
  rd_kafka_t *rk;
  int64_t metadata_timeout_ms;
  char *brokers;
  char login[512];     /* how the client logs in, for errors: "security.protocol=SASL_SSL, sasl.mechanism=PLAIN, ..." */
  int64_t created_ms;  /* monotonic */
  int nbootstrap;      /* distinct entries of kafka.brokers */
  bool reached;        /* a query was answered: from now on, a broker's connection errors may be a restart */
  atomic_bool refused; /* a login or TLS failure was noted (refusal): every operation fails with it */
  pthread_mutex_t lock; /* guards what follows, which librdkafka's broker threads write */
  kg_broker_error_t broker_errors[KG_MAX_BROKERS];
  int nbroker_errors;
  char refusal[640];    /* the first login or TLS failure: "broker host:port: what (librdkafka's reason)" */
  char cert_check[384]; /* the last broker certificate that failed the check, and why (verify_cb, SSLCERTVRFY) */
  /* The partition being fetched. */
  rd_kafka_topic_t *rkt;
  int32_t partition;
  char *topic;
  rd_kafka_message_t **msgs; /* the last batch, destroyed on the next fetch */
  int nmsgs;
  int msgs_cap;
  rd_kafka_queue_t *queue;   /* the partition's prefetch queue, to see how full it is */
  bool queue_filled;         /* the queue reached a bound since the fetcher (re)started: it may be stopped */
  int restarts;              /* restarts of the fetcher since the last record came (see kg_kafka_fetch) */
  int64_t queue_max_records; /* the bounds in force: queued.min.messages */
  int64_t queue_max_bytes;   /* and queued.max.messages.kbytes, in bytes */
  char *pending_error;       /* an error that followed records already handed over; reported by the next fetch */
  int pending_rc;
  int64_t next_offset; /* the offset after the last record handed over */
  double avg_len;      /* the partition's average payload bytes a record, as batches showed it; 0: none yet */
};

/* What a connection error of librdkafka says for certain, from its text (its FAIL log lines: "Connect to
 * ipv4#127.0.0.1:1 failed: Connection refused", "Failed to resolve 'nohost:9092': Name or service not known",
 * "SSL handshake failed: ...", "SASL authentication error: ..."), or NULL for one that may pass (a timeout, a
 * broker that closed the connection). */
static const char *error_kind(const char *cause) {
  static const struct {
    const char *text, *kind;
  } kinds[] = {{"Connection refused", "connection refused"},
               {"Failed to resolve", "the host name does not resolve"},
               {"No route to host", "no route to host"},
               {"Network is unreachable", "network unreachable"},
               {"certificate verify failed", "TLS certificate not trusted"},
               {"SSL handshake failed", "TLS handshake failed"},
               {"alert bad certificate", "the broker refused the client certificate"},
               {"alert certificate required", "the broker refused the client certificate"},
               {"alert certificate unknown", "the broker refused the client certificate"},
               {"alert unknown ca", "the broker refused the client certificate"},
               {"SSL routines", "TLS failed"},
               {"SASL authentication error", "authentication failed"},
               {"Authentication failed", "authentication failed"},
               {"SASL handshake failed", "the broker does not offer the SASL mechanism"},
               {"Failed to initialize SASL", "the SASL mechanism could not start"},
               {"Kerberos ticket refresh failed", "the Kerberos login failed"}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strstr(cause, kinds[i].text)) return kinds[i].kind;
  return NULL;
}

/* Whether a connection error of kind KIND (error_kind) is a login or TLS failure, which waiting does not cure and
 * which fails the operation at once, with KG_EAUTH. */
static bool refusal_kind(const char *kind) {
  return kind && strcmp(kind, "connection refused") && strcmp(kind, "the host name does not resolve") &&
         strcmp(kind, "no route to host") && strcmp(kind, "network unreachable");
}

/* A broker's name for the log: without the protocol and librdkafka's "/bootstrap" or "/<id>". */
static void broker_label(const char *name, char *out, size_t size);

/* Notes the login or TLS failure that librdkafka reported as TEXT ("sasl_ssl://host:port/bootstrap: SASL
 * authentication error: ..." as its error callback and its FAIL lines give it, or a Kerberos line without a broker)
 * with what it means (KIND, or NULL) as the client's refusal, unless one was noted already: the first cause is the
 * one to fix. Called from librdkafka's threads. */
static void note_refusal(kg_kafka_t *k, const char *text, const char *kind) {
  if (!strncmp(text, "[thrd:", 6) && strstr(text, "]: ")) text = strstr(text, "]: ") + 3;
  pthread_mutex_lock(&k->lock);
  if (!atomic_load(&k->refused)) {
    char label[160] = "";
    const char *sep = strstr(text, ": "), *cause = text;
    if (sep && sep - text < (ptrdiff_t)sizeof label && memchr(text, ':', (size_t)(sep - text)) &&
        !memchr(text, ' ', (size_t)(sep - text))) {
      char name[160];
      snprintf(name, sizeof name, "%.*s", (int)(sep - text), text);
      broker_label(name, label, sizeof label);
      cause = sep + 2;
    }
    const char *after = strstr(cause, " (after ");
    int clen = (int)(after ? (size_t)(after - cause) : strlen(cause));
    char *out = k->refusal;
    size_t size = sizeof k->refusal;
    int n = *label ? snprintf(out, size, "broker %s: ", label) : 0;
    if (n < 0 || (size_t)n >= size) n = 0;
    if (kind && *k->cert_check && strstr(kind, "certificate not trusted"))
      snprintf(out + n, size - (size_t)n, "%s (%.*s)", k->cert_check, clen, cause);
    else if (kind)
      snprintf(out + n, size - (size_t)n, "%s (%.*s)", kind, clen, cause);
    else
      snprintf(out + n, size - (size_t)n, "%.*s", clen, cause);
    atomic_store(&k->refused, true);
  }
  pthread_mutex_unlock(&k->lock);
}

/* Notes a connection error that librdkafka logged as BUF ("[thrd:NAME]: NAME: cause (after 0ms in state
 * CONNECT)") for the broker it names. */
static void note_broker_error(kg_kafka_t *k, const char *buf) {
  if (strncmp(buf, "[thrd:", 6)) return;
  const char *name = buf + 6, *end = strstr(name, "]: ");
  if (!end || end - name >= (int)sizeof k->broker_errors[0].name) return;
  size_t nlen = (size_t)(end - name);
  const char *cause = end + 3;
  if (!strncmp(cause, name, nlen) && !strncmp(cause + nlen, ": ", 2)) cause += nlen + 2;
  const char *after = strstr(cause, " (after ");
  size_t clen = after ? (size_t)(after - cause) : strlen(cause);
  pthread_mutex_lock(&k->lock);
  int i = 0;
  while (i < k->nbroker_errors &&
         (strlen(k->broker_errors[i].name) != nlen || strncmp(k->broker_errors[i].name, name, nlen)))
    i++;
  const char *kind = NULL;
  if (i < KG_MAX_BROKERS) {
    kg_broker_error_t *e = &k->broker_errors[i];
    if (i == k->nbroker_errors) {
      k->nbroker_errors++;
      snprintf(e->name, sizeof e->name, "%.*s", (int)nlen, name);
    }
    snprintf(e->cause, sizeof e->cause, "%.*s", (int)clen, cause);
    kind = e->kind = error_kind(e->cause);
    e->count++;
  } else {
    kind = error_kind(cause);
  }
  pthread_mutex_unlock(&k->lock);
  if (refusal_kind(kind)) note_refusal(k, end + 3, kind);
}

/* What OpenSSL's certificate check says (its X509_V_ERR_* codes, stable across OpenSSL releases), for a message. */
static const char *x509_reason(int x509_error) {
  switch (x509_error) {
  case 2: return "was issued by a CA whose certificate is not known (ssl.ca.location)";
  case 7: return "has a signature that does not verify";
  case 9: return "is not valid yet";
  case 10: return "has expired";
  case 18: return "is self-signed and not trusted (ssl.ca.location)";
  case 19: return "is in a chain that ends in a CA that is not trusted (ssl.ca.location)";
  case 20:
  case 21: return "was not issued by a trusted CA (ssl.ca.location)";
  case 23: return "was revoked";
  case 26: return "is not meant for a TLS server";
  case 27: return "is not trusted for this purpose";
  case 28: return "is rejected for this purpose";
  case 62:
    return "does not name the host the client connected to: hostname mismatch "
           "(ssl.endpoint.identification.algorithm)";
  case 64:
    return "does not name the IP address the client connected to: IP address mismatch "
           "(ssl.endpoint.identification.algorithm)";
  case 79: return "was issued by a certificate that is not a CA";
  default: return NULL;
  }
}

/* librdkafka's check of each certificate of a broker's chain: OpenSSL's verdict (X509_ERROR, 0 when it passed)
 * stays the verdict; a failure gets a reason in ERRSTR, which librdkafka logs with the certificate's subject and
 * issuer (SSLCERTVRFY, taken up by log_cb) before the handshake fails. Called from librdkafka's threads. */
static int verify_cb(rd_kafka_t *rk, const char *broker_name, int32_t broker_id, int *x509_error, int depth,
                     const char *buf, size_t size, char *errstr, size_t errstr_size, void *opaque) {
  (void)rk, (void)broker_name, (void)broker_id, (void)depth, (void)buf, (void)size, (void)opaque;
  if (*x509_error == 0) return 1;
  const char *why = x509_reason(*x509_error);
  if (why)
    snprintf(errstr, errstr_size, "%s", why);
  else
    snprintf(errstr, errstr_size, "failed OpenSSL's check with error %d", *x509_error);
  return 0;
}

/* librdkafka's log line on a certificate that failed verify_cb: "Certificate (subject=..., issuer=...) verification
 * callback failed: <reason>", kept as "the broker's certificate (subject=..., issuer=...): <reason>". */
static void note_cert_check(kg_kafka_t *k, const char *buf) {
  const char *p = strstr(buf, "Certificate (");
  if (!p) return;
  const char *close = strstr(p, ") verification callback failed: ");
  if (!close) return;
  pthread_mutex_lock(&k->lock);
  snprintf(k->cert_check, sizeof k->cert_check, "the broker's certificate (%.*s) %s", (int)(close - p - 13), p + 13,
           close + strlen(") verification callback failed: "));
  pthread_mutex_unlock(&k->lock);
}

/* librdkafka's error events, served by rd_kafka_poll (see poll_events): a failed login
 * (RD_KAFKA_RESP_ERR__AUTHENTICATION, which a failed Kerberos login also gives) or TLS failure (RD_KAFKA_RESP_ERR__SSL)
 * is the client's refusal; the others are logged at DEBUG, as librdkafka logs them without an error callback. */
static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  (void)rk;
  kg_kafka_t *k = opaque;
  KG_DEBUG("librdkafka error %s: %s", rd_kafka_err2name(err), reason);
  if (!k) return;
  if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) {
    const char *kind = error_kind(reason);
    note_refusal(k, reason, kind ? kind : err == RD_KAFKA_RESP_ERR__SSL ? "TLS failed" : "authentication failed");
  }
}

/* librdkafka's own log lines go to the engine's log at DEBUG: connection errors are reported once, as a
 * clear error, by the operation that needed the broker, with the cause they give (note_broker_error). */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  (void)level;
  kg_kafka_t *k = rd_kafka_opaque(rk);
  if (k && !strcmp(fac, "SSLCERTVRFY")) note_cert_check(k, buf);
  if (k && !strcmp(fac, "FAIL")) note_broker_error(k, buf);
  /* A Kerberos login (sasl.kerberos.kinit.cmd) that failed: no broker is to blame. */
  if (k && !strcmp(fac, "SASLREFRESH") && strstr(buf, "failed")) note_refusal(k, buf, "the Kerberos login failed");
  KG_DEBUG("librdkafka %s: %s", fac, buf);
}

/* Serves librdkafka's events (error_cb), then tells whether the client was refused (see note_refusal): then the
 * message into ERRBUF, naming the brokers, how the client logs in, the broker and the cause. */
static bool refused(kg_kafka_t *k, char *errbuf) {
  rd_kafka_poll(k->rk, 0);
  if (!atomic_load(&k->refused)) return false;
  pthread_mutex_lock(&k->lock);
  kg_fail(errbuf, KG_EAUTH, "authentication with Kafka at kafka.brokers=%s failed (%s): %s", k->brokers, k->login,
          k->refusal);
  pthread_mutex_unlock(&k->lock);
  return true;
}

/* A broker's name for the log: without the protocol and librdkafka's "/bootstrap" or "/<id>". */
static void broker_label(const char *name, char *out, size_t size) {
  const char *p = strstr(name, "://");
  p = p ? p + 3 : name;
  const char *slash = strrchr(p, '/');
  snprintf(out, size, "%.*s", (int)(slash ? slash - p : (ptrdiff_t)strlen(p)), p);
}

/* What the brokers' connection errors so far say: how many kafka.brokers entries failed for certain (see
 * error_kind) and how many for a reason that may pass, and the fewest connection attempts of those that failed for
 * certain. */
typedef struct {
  int definite, indefinite, fewest;
} kg_broker_tally_t;

static kg_broker_tally_t broker_tally(kg_kafka_t *k) {
  kg_broker_tally_t t = {0, 0, 0};
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->nbroker_errors; i++) {
    const kg_broker_error_t *e = &k->broker_errors[i];
    size_t len = strlen(e->name);
    if (len <= 10 || strcmp(e->name + len - 10, "/bootstrap")) continue;
    if (!e->kind) {
      t.indefinite++;
      continue;
    }
    t.definite++;
    if (!t.fewest || e->count < t.fewest) t.fewest = e->count;
  }
  pthread_mutex_unlock(&k->lock);
  return t;
}

/* The brokers' last connection errors, as "host:port: what (cause); ..." into OUT, or "" when none was logged. */
static void broker_errors(kg_kafka_t *k, char *out, size_t size) {
  *out = '\0';
  size_t used = 0;
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < k->nbroker_errors && used + 1 < size; i++) {
    const kg_broker_error_t *e = &k->broker_errors[i];
    char label[160];
    broker_label(e->name, label, sizeof label);
    const char *sep = used ? "; " : "";
    int n = e->kind ? snprintf(out + used, size - used, "%s%s: %s (%s)", sep, label, e->kind, e->cause)
                    : snprintf(out + used, size - used, "%s%s: %s", sep, label, e->cause);
    if (n < 0) break;
    used += (size_t)n < size - used ? (size_t)n : size - used - 1;
  }
  pthread_mutex_unlock(&k->lock);
}

/* A client that has not reached any broker yet gives up early when every kafka.brokers entry has failed for a
 * reason that will not pass by waiting (refused, not resolved, a TLS or authentication failure): after
 * KG_GIVE_UP_ATTEMPTS connection attempts of each, or KG_GIVE_UP_MS after the client was made, whichever comes
 * first. librdkafka tries again about once a second, so a refused connection is reported in about a second.
 * To see those errors in time, a query waits at most KG_PROBE_MS at first, and again only while every entry that
 * failed failed so (librdkafka tries one entry at a time), for KG_PROBE_FOR_MS at most. A broker that accepts the
 * connection but answers slowly (a far broker, a proxy) gets no such error, and the queries that follow wait as
 * long as the metadata timeout allows. */
#define KG_GIVE_UP_ATTEMPTS 3
#define KG_GIVE_UP_MS       1000
#define KG_PROBE_MS         250
#define KG_PROBE_FOR_MS     4000
/* The least time the latest offsets' query is given after the earliest's (kg_kafka_offsets_bulk). */
#define KG_LATEST_TRY_MS 1000

/* Whether the brokers cannot be reached, for certain (see above): then the message into ERRBUF. */
static bool unreachable(kg_kafka_t *k, char *errbuf) {
  if (k->reached) return false;
  kg_broker_tally_t t = broker_tally(k);
  if (k->nbootstrap <= 0 || t.indefinite || t.definite < k->nbootstrap) return false;
  int64_t ms = kg_mono_ms() - k->created_ms;
  if (t.fewest < KG_GIVE_UP_ATTEMPTS && ms < KG_GIVE_UP_MS) return false;
  char causes[KG_ERRLEN / 2];
  broker_errors(k, causes, sizeof causes);
  kg_fail(errbuf, KG_EKAFKA, "cannot reach Kafka at kafka.brokers=%s: %s (%d connection attempt%s in %lld ms)",
          k->brokers, causes, t.fewest, t.fewest == 1 ? "" : "s", (long long)ms);
  return true;
}

/* How long attempt ATTEMPT (from 1) of a query may wait, LEFT ms being left of its time (see KG_PROBE_MS). Until a
 * broker answered, attempts also wait KG_PROBE_MS, doubling from one to the next, at most: a login or TLS failure
 * (refused) comes while a query waits for a broker that can take it, and is seen only when that wait ends. */
static int query_wait(kg_kafka_t *k, int64_t left, int attempt) {
  if (left <= 0) return 1;
  bool probing = false;
  if (!k->reached && kg_mono_ms() - k->created_ms < KG_PROBE_FOR_MS) {
    kg_broker_tally_t t = broker_tally(k);
    probing = attempt == 1 || (t.definite > 0 && !t.indefinite);
  }
  if (probing && left > KG_PROBE_MS) return KG_PROBE_MS;
  if (!k->reached) {
    int64_t slice = (int64_t)KG_PROBE_MS << (attempt < 16 ? attempt - 1 : 15);
    if (left > slice) return (int)slice;
  }
  return left > INT32_MAX ? INT32_MAX : (int)left;
}

static int set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errbuf) {
  char err[512];
  if (rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK)
    return kg_fail(errbuf, KG_EINVAL, "Kafka client property %s=%s: %s", name, value, err);
  return KG_OK;
}

/* The client configuration of CONFIG: the engine's settings, then kafka.consumer.<name> for each such property
 * (a value librdkafka refuses names the property and where the job gave it). *OUT is the caller's. */
static int make_conf(const kg_config_t *config, rd_kafka_conf_t **out, char *errbuf) {
  const kg_kafka_options_t *o = kg_kafka_options(config);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  char num[32];
  int rc = set(conf, "bootstrap.servers", o->brokers, errbuf);
  if (!rc) rc = set(conf, "client.id", "kingest", errbuf);
  if (!rc) rc = set(conf, "enable.partition.eof", "true", errbuf);
  /* Bounded prefetch per partition being read: at most KG_PREFETCH_RECORDS records or 4 MB (four fetches of
   * fetch.message.max.bytes, 1 MB: enough to keep a fetch going while the reader drains the rest). */
  if (!rc) rc = set(conf, "queued.max.messages.kbytes", "4096", errbuf);
  if (!rc) rc = set(conf, "queued.min.messages", KG_PREFETCH_RECORDS, errbuf);
  /* Short: a partition's consume_stop waits for its in-flight fetch, and a task stops once per partition. */
  if (!rc) rc = set(conf, "fetch.wait.max.ms", "10", errbuf);
  /* Each time the fetcher finds the queue at a bound, it backs off for fetch.queue.backoff.ms (1 s by default), and a
   * restart of the fetcher (see the top of this file) does not end that backoff: short, so that a fetcher looks again
   * soon after the reader took records, and a restarted one fetches at once. */
  if (!rc) rc = set(conf, "fetch.queue.backoff.ms", "10", errbuf);
  /* No client metrics pushed to the cluster (KIP-714): kingest reports its own, and with the push on,
   * rd_kafka_destroy waits up to a second for a last push that a broker without a metrics subscription never
   * answers, once for every client a run makes. */
  if (!rc) rc = set(conf, "enable.metrics.push", "false", errbuf);
  snprintf(num, sizeof num, "%lld", (long long)o->metadata_timeout_ms);
  if (!rc) rc = set(conf, "socket.timeout.ms", num, errbuf);
  if (!rc) rc = set(conf, "enable.auto.commit", "false", errbuf);
  if (!rc) rc = set(conf, "enable.auto.offset.store", "false", errbuf);
  /* Offsets outside the broker's range are an error for the engine to handle, never silently reset. */
  if (!rc) rc = set(conf, "auto.offset.reset", "error", errbuf);
  /* kafka.consumer.<name> passes any librdkafka property through (security settings and the like). */
  for (size_t i = 0; !rc && i < kg_props_count(config->props); i++) {
    const char *key = kg_props_key_at(config->props, i);
    if (strncmp(key, "kafka.consumer.", 15)) continue;
    const char *value = kg_props_value_at(config->props, i), *origin = kg_props_origin(config->props, key);
    char why[512];
    if (rd_kafka_conf_set(conf, key + 15, value, why, sizeof why) != RD_KAFKA_CONF_OK)
      rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: the Kafka client refuses it: %s",
                   origin ? origin : config->job_file, key, kg_props_shown(config->props, key), why);
  }
  if (rc) {
    rd_kafka_conf_destroy(conf);
    conf = NULL;
  }
  *out = conf;
  return rc;
}

int kg_kafka_check_config(const kg_config_t *config, char *errbuf) {
  rd_kafka_conf_t *conf = NULL;
  int rc = make_conf(config, &conf, errbuf);
  if (conf) rd_kafka_conf_destroy(conf);
  return rc;
}

/* How CONF logs in, for the errors of a failed login: security.protocol, and the settings that say who the client is
 * (never a password or a key), into OUT. */
static void describe_login(rd_kafka_conf_t *conf, char *out, size_t size) {
  static const char *const names[] = {"security.protocol",       "sasl.mechanisms",      "sasl.username",
                                      "sasl.kerberos.principal", "sasl.kerberos.keytab", "ssl.certificate.location",
                                      "ssl.ca.location"};
  size_t used = 0;
  *out = '\0';
  char protocol[32] = "plaintext", mechanism[64] = "";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char value[256];
    size_t vsize = sizeof value;
    if (rd_kafka_conf_get(conf, names[i], value, &vsize) != RD_KAFKA_CONF_OK || !*value) continue;
    if (i == 0) snprintf(protocol, sizeof protocol, "%.31s", value);
    bool sasl = !strncmp(protocol, "sasl", 4), tls = strstr(protocol, "ssl") != NULL;
    if (i == 1) snprintf(mechanism, sizeof mechanism, "%.63s", value);
    /* Only what the protocol uses: the mechanism and its settings with SASL, the certificates with TLS. */
    if ((i >= 1 && i <= 4 && !sasl) || (i >= 5 && !tls)) continue;
    if ((i == 2 && strcasecmp(mechanism, "PLAIN") && strncasecmp(mechanism, "SCRAM", 5)) ||
        ((i == 3 || i == 4) && strcasecmp(mechanism, "GSSAPI")))
      continue;
    if (i == 0)
      for (char *c = value; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    int n = snprintf(out + used, size - used, "%s%s=%s", used ? ", " : "", i == 1 ? "sasl.mechanism" : names[i], value);
    if (n < 0 || (size_t)n >= size - used) break;
    used += (size_t)n;
  }
}

/* With SASL's GSSAPI and a keytab: that the keytab can be read and holds a key of the principal kinit logs in as
 * (librdkafka only reports that kinit exited 1, with kinit's reason on stderr), else KG_EAUTH naming both, before
 * any broker is asked. */
static int check_keytab(rd_kafka_conf_t *conf, const char *brokers, const char *login, char *errbuf) {
  char protocol[32] = "", mechanism[32] = "", keytab[1024] = "", principal[512] = "";
  size_t n = sizeof protocol;
  if (rd_kafka_conf_get(conf, "security.protocol", protocol, &n) != RD_KAFKA_CONF_OK ||
      strncasecmp(protocol, "sasl", 4))
    return KG_OK;
  n = sizeof mechanism;
  if (rd_kafka_conf_get(conf, "sasl.mechanisms", mechanism, &n) != RD_KAFKA_CONF_OK || strcasecmp(mechanism, "GSSAPI"))
    return KG_OK;
  n = sizeof keytab;
  if (rd_kafka_conf_get(conf, "sasl.kerberos.keytab", keytab, &n) != RD_KAFKA_CONF_OK || !*keytab) return KG_OK;
  n = sizeof principal;
  if (rd_kafka_conf_get(conf, "sasl.kerberos.principal", principal, &n) != RD_KAFKA_CONF_OK) *principal = 0;
  char **names = NULL, why[KG_ERRLEN];
  size_t count = 0;
  kg_buf_t held = {0};
  int rc = kg_keytab_principals(keytab, &names, &count, why);
  bool found = false;
  for (size_t i = 0; !rc && i < count; i++) {
    found = found || kg_keytab_principal_matches(principal, names[i]);
    kg_buf_appendf(&held, "%s%s", i ? ", " : "", names[i]);
  }
  if (rc)
    rc = kg_fail(errbuf, KG_EAUTH,
                 "authentication with Kafka at kafka.brokers=%s failed (%s): the Kerberos login cannot work: "
                 "kafka.consumer.sasl.kerberos.keytab=%s: %s",
                 brokers, login, keytab, why);
  else if (!found)
    rc = kg_fail(errbuf, KG_EAUTH,
                 "authentication with Kafka at kafka.brokers=%s failed (%s): the Kerberos login cannot work: "
                 "kafka.consumer.sasl.kerberos.keytab=%s has no keys of kafka.consumer.sasl.kerberos.principal=%s "
                 "(it holds: %s)",
                 brokers, login, keytab, principal, held.data ? held.data : "no keys");
  kg_buf_free(&held);
  kg_keytab_principals_free(names, count);
  return rc;
}

/* The client's own TLS files as kafka.consumer.* names them, into OUT ("" when it has none): the key with the
 * property of its password, when one is set. */
static void tls_files(const rd_kafka_conf_t *conf, char *out, size_t cap) {
  static const char *const names[] = {"ssl.key.location", "ssl.certificate.location", "ssl.keystore.location",
                                      "ssl.ca.location", NULL};
  size_t used = 0;
  *out = 0;
  for (int i = 0; names[i]; i++) {
    char value[1024];
    size_t size = sizeof value;
    if (rd_kafka_conf_get(conf, names[i], value, &size) != RD_KAFKA_CONF_OK || !*value) continue;
    const char *password = !strcmp(names[i], "ssl.key.location")        ? "ssl.key.password"
                           : !strcmp(names[i], "ssl.keystore.location") ? "ssl.keystore.password"
                                                                        : NULL;
    size_t pw_size = 0; /* asked with no buffer: the length of the value (with its NUL), never the value */
    bool has_password =
        password && rd_kafka_conf_get(conf, password, NULL, &pw_size) == RD_KAFKA_CONF_OK && pw_size > 1;
    int n = snprintf(out + used, cap - used, "%skafka.consumer.%s=%s%s%s", used ? ", " : "", names[i], value,
                     has_password ? " with kafka.consumer." : "", has_password ? password : "");
    if (n < 0 || (size_t)n >= cap - used) break;
    used += (size_t)n;
  }
}

/* The distinct entries of a kafka.brokers list: librdkafka makes one bootstrap broker of each. */
static int count_entries(const char *brokers) {
  char *copy = kg_xstrdup(brokers), *save = NULL;
  const char *seen[KG_MAX_BROKERS];
  int n = 0;
  for (char *e = strtok_r(copy, ", \t", &save); e && n < KG_MAX_BROKERS; e = strtok_r(NULL, ", \t", &save)) {
    bool dup = false;
    for (int i = 0; i < n && !dup; i++)
      dup = !strcmp(seen[i], e);
    if (!dup) seen[n++] = e;
  }
  free(copy);
  return n;
}

int kg_kafka_new(const kg_config_t *config, kg_kafka_t **out, char *errbuf) {
  *out = NULL;
  const kg_kafka_options_t *o = kg_kafka_options(config);
  rd_kafka_conf_t *conf = NULL;
  int rc = make_conf(config, &conf, errbuf);
  if (rc) return rc;
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  /* Without TLS support in librdkafka there is no certificate to check: the callback is refused, which is fine. */
  rd_kafka_conf_set_ssl_cert_verify_cb(conf, verify_cb);
  /* The bounds in force, after any kafka.consumer.* override. */
  int64_t max_records = 0, max_kbytes = 0;
  char value[64];
  size_t value_size = sizeof value;
  if (rd_kafka_conf_get(conf, "queued.min.messages", value, &value_size) == RD_KAFKA_CONF_OK)
    kg_parse_int64(value, &max_records);
  value_size = sizeof value;
  if (rd_kafka_conf_get(conf, "queued.max.messages.kbytes", value, &value_size) == RD_KAFKA_CONF_OK)
    kg_parse_int64(value, &max_kbytes);
  kg_kafka_t *k = kg_xcalloc(1, sizeof *k);
  pthread_mutex_init(&k->lock, NULL);
  k->created_ms = kg_mono_ms();
  k->nbootstrap = count_entries(o->brokers);
  atomic_init(&k->refused, false);
  describe_login(conf, k->login, sizeof k->login);
  if ((rc = check_keytab(conf, o->brokers, k->login, errbuf))) {
    rd_kafka_conf_destroy(conf);
    pthread_mutex_destroy(&k->lock);
    free(k);
    return rc;
  }
  rd_kafka_conf_set_opaque(conf, k); /* for log_cb, from the client's first connection on */
  char err[512], files[KG_ERRLEN / 2];
  tls_files(conf, files, sizeof files);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    pthread_mutex_destroy(&k->lock);
    free(k);
    /* OpenSSL's reasons ("PEM lib", "bad decrypt") name no file: the client's own TLS files, when it has any. */
    bool tls = *files && (strstr(err, "ssl") || strstr(err, "SSL") || strstr(err, "PEM"));
    return kg_fail(errbuf, KG_EKAFKA, "cannot create a Kafka client for kafka.brokers=%s: %s%s%s%s", o->brokers, err,
                   tls ? " (its TLS files: " : "", tls ? files : "", tls ? ")" : "");
  }
  k->rk = rk;
  k->metadata_timeout_ms = o->metadata_timeout_ms;
  k->brokers = kg_xstrdup(o->brokers);
  k->partition = -1;
  k->queue_max_records = max_records > 0 ? max_records : 1;
  k->queue_max_bytes = max_kbytes > 0 ? max_kbytes * 1024 : 1;
  *out = k;
  return KG_OK;
}

static void release_batch(kg_kafka_t *k) {
  for (int i = 0; i < k->nmsgs; i++)
    rd_kafka_message_destroy(k->msgs[i]);
  k->nmsgs = 0;
}

void kg_kafka_destroy(kg_kafka_t *k) {
  if (!k) return;
  kg_kafka_fetch_stop(k);
  free(k->msgs);
  rd_kafka_destroy(k->rk);
  pthread_mutex_destroy(&k->lock);
  free(k->brokers);
  free(k);
}

static int cmp_topic(const void *a, const void *b) {
  return strcmp(((const kg_topic_meta_t *)a)->name, ((const kg_topic_meta_t *)b)->name);
}

static int cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Errors a query may meet while the cluster settles (a leader moving or not yet elected, a topic just created,
 * a broker restarting or slow to answer): worth asking again until kafka.metadata.timeout.ms is used up. */
static bool retriable(rd_kafka_resp_err_t err) {
  switch (err) {
  case RD_KAFKA_RESP_ERR__TRANSPORT:
  case RD_KAFKA_RESP_ERR__RESOLVE:
  case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
  case RD_KAFKA_RESP_ERR__TIMED_OUT:
  case RD_KAFKA_RESP_ERR__IN_PROGRESS: /* an offsets request the leader had not answered when the wait ran out */
  case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
  case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
  case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
  case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
  case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
  case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE:
  case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
  case RD_KAFKA_RESP_ERR_NOT_CONTROLLER:
  case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
  case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
  case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
  case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE: return true;
  default: return false;
  }
}

/* Fault injection for the tests: KINGEST_KAFKA_FAULT=<query>:<ERROR_NAME>:<n>[:<topic>:<partition>] makes the first N
 * answers to QUERY (metadata, offsets) the librdkafka error ERROR_NAME (as rd_kafka_get_err_descs names it, e.g.
 * NOT_LEADER_FOR_PARTITION), for the whole query and, for offsets, every partition in it: what a broker in the
 * middle of a leader change answers. With a topic and partition (offsets only), that partition alone gets the error
 * (and the query with it, as librdkafka answers): a partition without a leader among healthy ones. Planning runs on
 * one thread, so the count needs no lock. *TOPIC (of *TOPIC_LEN bytes) and *PARTITION are the partition, or NULL. */
static rd_kafka_resp_err_t injected_fault(const char *query, const char **topic, size_t *topic_len,
                                          int32_t *partition) {
  static int used[2];
  const char *spec = getenv("KINGEST_KAFKA_FAULT");
  if (topic) *topic = NULL;
  size_t qlen = strlen(query);
  if (!spec || strncmp(spec, query, qlen) || spec[qlen] != ':') return RD_KAFKA_RESP_ERR_NO_ERROR;
  const char *name = spec + qlen + 1, *colon = strchr(name, ':');
  if (!colon) return RD_KAFKA_RESP_ERR_NO_ERROR;
  int *count = &used[!strcmp(query, "offsets")];
  if (*count >= atoi(colon + 1)) return RD_KAFKA_RESP_ERR_NO_ERROR;
  const char *where = strchr(colon + 1, ':'), *pcolon = where ? strrchr(where + 1, ':') : NULL;
  if (topic && where && pcolon) {
    *topic = where + 1;
    *topic_len = (size_t)(pcolon - where - 1);
    *partition = (int32_t)atoi(pcolon + 1);
  }
  const struct rd_kafka_err_desc *descs;
  size_t n;
  rd_kafka_get_err_descs(&descs, &n);
  for (size_t i = 0; i < n; i++)
    if (descs[i].name && strlen(descs[i].name) == (size_t)(colon - name) &&
        !strncmp(descs[i].name, name, (size_t)(colon - name))) {
      (*count)++;
      return descs[i].code;
    }
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Sleeps before attempt ATTEMPT + 1 (100 ms, doubling up to 1 s), never past DEADLINE (monotonic ms). */
static void backoff(int attempt, int64_t deadline) {
  int64_t ms = 100LL << (attempt < 4 ? attempt : 4);
  if (ms > 1000) ms = 1000;
  int64_t left = deadline - kg_mono_ms();
  if (ms > left) ms = left;
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The end of an error message: how long the query was tried. */
static void tried_for(char *out, size_t size, int attempts, int64_t started) {
  long long ms = (long long)(kg_mono_ms() - started);
  if (attempts > 1)
    snprintf(out, size, "retried for %lld ms", ms);
  else
    snprintf(out, size, "after %lld ms", ms);
}

int kg_kafka_list_topics(kg_kafka_t *k, kg_topic_meta_t **topics, size_t *count, char *errbuf) {
  *topics = NULL;
  *count = 0;
  const struct rd_kafka_metadata *md = NULL;
  int64_t started = kg_mono_ms(), deadline = started + k->metadata_timeout_ms;
  rd_kafka_resp_err_t err;
  int attempts = 0;
  for (;;) {
    int64_t left = deadline - kg_mono_ms();
    attempts++;
    int wait = query_wait(k, left, attempts);
    int64_t asked = kg_mono_ms();
    err = injected_fault("metadata", NULL, NULL, NULL);
    if (!err) err = rd_kafka_metadata(k->rk, 1, NULL, &md, wait);
    if (!err) k->reached = true;
    if (err && refused(k, errbuf)) return KG_EAUTH;
    if (!err || !retriable(err) || kg_mono_ms() >= deadline) break;
    if (unreachable(k, errbuf)) return KG_EKAFKA;
    KG_DEBUG("Metadata query to kafka.brokers=%s failed (%s); retrying", k->brokers, rd_kafka_err2str(err));
    if (kg_mono_ms() - asked < wait) backoff(attempts, deadline); /* a query that waited its time needs no pause */
  }
  if (err) {
    char how[64], causes[KG_ERRLEN / 2];
    tried_for(how, sizeof how, attempts, started);
    broker_errors(k, causes, sizeof causes);
    return kg_fail(errbuf, KG_EKAFKA,
                   "cannot reach Kafka at kafka.brokers=%s: %s%s%s (%s, kafka.metadata.timeout.ms=%lld)", k->brokers,
                   rd_kafka_err2str(err), *causes ? "; the brokers' last connection errors: " : "", causes, how,
                   (long long)k->metadata_timeout_ms);
  }
  kg_topic_meta_t *out = kg_xcalloc((size_t)md->topic_cnt, sizeof *out);
  size_t n = 0;
  for (int i = 0; i < md->topic_cnt; i++) {
    const struct rd_kafka_metadata_topic *t = &md->topics[i];
    if (t->err) {
      KG_WARN("Topic %s: metadata error: %s", t->topic, rd_kafka_err2str(t->err));
      if (t->partition_cnt == 0) continue;
    }
    out[n].name = kg_xstrdup(t->topic);
    out[n].partition_count = t->partition_cnt;
    out[n].partitions = kg_xcalloc((size_t)t->partition_cnt, sizeof(int32_t));
    for (int p = 0; p < t->partition_cnt; p++)
      out[n].partitions[p] = t->partitions[p].id;
    qsort(out[n].partitions, (size_t)t->partition_cnt, sizeof(int32_t), cmp_int32);
    n++;
  }
  rd_kafka_metadata_destroy(md);
  qsort(out, n, sizeof *out, cmp_topic);
  *topics = out;
  *count = n;
  return KG_OK;
}

void kg_kafka_free_topics(kg_topic_meta_t *topics, size_t count) {
  for (size_t i = 0; i < count; i++) {
    free(topics[i].name);
    free(topics[i].partitions);
  }
  free(topics);
}

int kg_kafka_offsets(kg_kafka_t *k, const char *topic, int32_t partition, int64_t *earliest, int64_t *latest,
                     char *errbuf) {
  rd_kafka_resp_err_t err =
      rd_kafka_query_watermark_offsets(k->rk, topic, partition, earliest, latest, (int)k->metadata_timeout_ms);
  if (err)
    return kg_fail(errbuf, KG_EKAFKA, "cannot fetch the offsets of partition %s:%d: %s", topic, partition,
                   rd_kafka_err2str(err));
  return KG_OK;
}

/* One ListOffsets query for every partition of PARTS: WHICH is RD_KAFKA_OFFSET_BEGINNING (answered into each
 * EARLIEST) or RD_KAFKA_OFFSET_END or a time (answered into each LATEST), which offsets_for_times sends as the special
 * timestamps -2 and -1 or as the time. librdkafka answers a partition error (its
 * leader moved, say) with that error for the whole query as well as for the partition, so the partitions with a
 * retriable error are asked again, alone, until DEADLINE (monotonic ms). A partition still failing then with an error
 * of its own (no leader, say), while others were answered, gets that error in its ERROR (the run skips it); when
 * none was answered, or the error cannot pass, the query fails with it. Partitions that already have an ERROR are
 * not asked. */
static int list_offsets(kg_kafka_t *k, kg_partition_offsets_t *parts, size_t n, int64_t which, int64_t started,
                        int64_t deadline, char *errbuf) {
  rd_kafka_resp_err_t *perr = kg_xcalloc(n, sizeof *perr);
  size_t *pending = kg_xcalloc(n, sizeof *pending);
  size_t npending = 0;
  for (size_t i = 0; i < n; i++)
    if (!parts[i].error) pending[npending++] = i;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  int attempts = 0;
  while (npending > 0) {
    attempts++;
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new((int)npending);
    for (size_t j = 0; j < npending; j++)
      rd_kafka_topic_partition_list_add(list, parts[pending[j]].topic, parts[pending[j]].partition)->offset = which;
    int64_t left = deadline - kg_mono_ms();
    int wait = query_wait(k, left, attempts);
    int64_t asked = kg_mono_ms();
    const char *fault_topic = NULL;
    size_t fault_topic_len = 0;
    int32_t fault_partition = -1;
    err = injected_fault("offsets", &fault_topic, &fault_topic_len, &fault_partition);
    if (err && !fault_topic) {
      for (int j = 0; j < list->cnt; j++)
        list->elems[j].err = err;
    } else {
      rd_kafka_resp_err_t fault = err;
      err = rd_kafka_offsets_for_times(k->rk, list, wait);
      for (int j = 0; fault && j < list->cnt; j++) {
        rd_kafka_topic_partition_t *tp = &list->elems[j];
        if (tp->partition != fault_partition || strlen(tp->topic) != fault_topic_len ||
            strncmp(tp->topic, fault_topic, fault_topic_len))
          continue;
        tp->err = err = fault;
        tp->offset = RD_KAFKA_OFFSET_INVALID;
      }
    }
    /* The list keeps the order it was built in. */
    size_t still = 0;
    for (size_t j = 0; j < npending; j++) {
      size_t i = pending[j];
      rd_kafka_topic_partition_t *tp = &list->elems[j];
      perr[i] = tp->err ? tp->err : err && err != RD_KAFKA_RESP_ERR__PARTIAL && tp->offset < 0 ? err : 0;
      if (which == RD_KAFKA_OFFSET_BEGINNING)
        parts[i].earliest = tp->offset;
      else
        parts[i].latest = tp->offset;
      if (perr[i] && retriable(perr[i])) pending[still++] = i;
    }
    bool whole = err && still == npending; /* nothing answered: perhaps no broker at all */
    rd_kafka_topic_partition_list_destroy(list);
    npending = still;
    if (npending && refused(k, errbuf)) {
      free(perr);
      free(pending);
      return KG_EAUTH;
    }
    if (npending == 0 || kg_mono_ms() >= deadline) break;
    if (whole && unreachable(k, errbuf)) {
      free(perr);
      free(pending);
      return KG_EKAFKA;
    }
    KG_DEBUG("Offsets of %zu partitions not answered yet (%s); retrying", npending, rd_kafka_err2str(perr[pending[0]]));
    if (kg_mono_ms() - asked < wait) backoff(attempts, deadline);
  }
  size_t answered = 0;
  for (size_t i = 0; i < n; i++)
    if (!parts[i].error && !perr[i]) answered++;
  if (answered) k->reached = true;
  int rc = KG_OK;
  for (size_t i = 0; i < n && !rc; i++) {
    if (parts[i].error) continue;
    if (!perr[i]) {
      if ((which == RD_KAFKA_OFFSET_BEGINNING ? parts[i].earliest : parts[i].latest) < 0)
        parts[i].error = "no offset returned";
      continue;
    }
    if (answered && retriable(perr[i]) && perr[i] != RD_KAFKA_RESP_ERR__TRANSPORT &&
        perr[i] != RD_KAFKA_RESP_ERR__TIMED_OUT && perr[i] != RD_KAFKA_RESP_ERR__IN_PROGRESS &&
        perr[i] != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
      parts[i].error = rd_kafka_err2str(perr[i]); /* a static string */
      continue;
    }
    char how[64], causes[KG_ERRLEN / 2] = "";
    tried_for(how, sizeof how, attempts, started);
    if (!answered) broker_errors(k, causes, sizeof causes);
    const char *sep = *causes ? "; the brokers' last connection errors: " : "";
    if (n == 1 || perr[i] != err)
      rc = kg_fail(errbuf, KG_EKAFKA, "cannot fetch the offsets of partition %s:%d from kafka.brokers=%s: %s%s%s (%s)",
                   parts[i].topic, parts[i].partition, k->brokers, rd_kafka_err2str(perr[i]), sep, causes, how);
    else
      rc = kg_fail(errbuf, KG_EKAFKA, "cannot fetch partition offsets from kafka.brokers=%s: %s%s%s (%s; first %s:%d)",
                   k->brokers, rd_kafka_err2str(perr[i]), sep, causes, how, parts[i].topic, parts[i].partition);
  }
  free(perr);
  free(pending);
  return rc;
}

int kg_kafka_offsets_bulk(kg_kafka_t *k, kg_partition_offsets_t *parts, size_t n, char *errbuf) {
  for (size_t i = 0; i < n; i++)
    parts[i].error = NULL;
  if (n == 0) return KG_OK;
  int64_t started = kg_mono_ms(), deadline = started + k->metadata_timeout_ms;
  int rc = list_offsets(k, parts, n, RD_KAFKA_OFFSET_BEGINNING, started, deadline, errbuf);
  if (rc) return rc;
  /* The latest offsets are asked with a try of their own even when a partition without a leader kept the earliest
   * query retrying to the deadline: the partitions that just answered get up to a second more, not a 1 ms wait. */
  int64_t own = kg_mono_ms() + (k->metadata_timeout_ms < KG_LATEST_TRY_MS ? k->metadata_timeout_ms : KG_LATEST_TRY_MS);
  return list_offsets(k, parts, n, RD_KAFKA_OFFSET_END, started, deadline > own ? deadline : own, errbuf);
}

int kg_kafka_offset_for_time(kg_kafka_t *k, const char *topic, int32_t partition, int64_t time_ms, int64_t *offset,
                             char *errbuf) {
  kg_partition_offsets_t part = {.topic = topic, .partition = partition};
  int64_t started = kg_mono_ms(), deadline = started + k->metadata_timeout_ms;
  /* A time after the partition's last record answers -1 ("no offset returned"): no record at or after it. */
  int rc = list_offsets(k, &part, 1, time_ms, started, deadline, errbuf);
  *offset = part.latest;
  return rc;
}

/* Up to MAX messages from queue Q (when RKT is NULL) or from partition PARTITION of RKT, whose queue is Q (NULL when
 * not known). consume_batch returns when it has MAX messages or when its timeout passes, whichever comes first, so a
 * reader that asked it for a full batch would sit idle beside the records it has until more came. So records
 * already queued are taken without a wait; an empty queue is waited on, up to TIMEOUT_MS, for one message, and then
 * whatever came with it is taken. *WAITED (when not NULL) tells whether the queue was waited on. */
static ssize_t take(rd_kafka_queue_t *q, rd_kafka_topic_t *rkt, int32_t partition, int timeout_ms,
                    rd_kafka_message_t **msgs, size_t max, bool *waited) {
#define KG_CONSUME(t, m, n)                                                                                            \
  (rkt ? rd_kafka_consume_batch(rkt, partition, (t), (m), (n)) : rd_kafka_consume_batch_queue(q, (t), (m), (n)))
  bool empty = !q || rd_kafka_queue_length(q) == 0;
  if (waited) *waited = empty;
  if (!empty) return KG_CONSUME(0, msgs, max);
  ssize_t got = KG_CONSUME(timeout_ms, msgs, 1);
  if (got == 1 && max > 1) {
    ssize_t more = KG_CONSUME(0, msgs + 1, max - 1);
    if (more > 0) got += more;
  }
  return got;
#undef KG_CONSUME
}

ssize_t kg_kafka_take(rd_kafka_queue_t *q, rd_kafka_topic_t *rkt, int32_t partition, int timeout_ms,
                      rd_kafka_message_t **msgs, size_t max, bool *waited) {
  return take(q, rkt, partition, timeout_ms, msgs, max, waited);
}

/* Partitions read at once by kg_kafka_peek: each has a fetcher whose first answer may bring up to a fetch's worth of
 * records, so the batch bounds what planning holds in memory. */
#define KG_PEEK_BATCH 64

int kg_kafka_peek(kg_kafka_t *k, kg_peek_t *peeks, size_t n) {
  int64_t deadline = kg_mono_ms() + k->metadata_timeout_ms;
  size_t unanswered = 0;
  for (size_t from = 0; from < n; from += KG_PEEK_BATCH) {
    size_t m = n - from < KG_PEEK_BATCH ? n - from : KG_PEEK_BATCH;
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_topic_t *rkts[KG_PEEK_BATCH] = {0};
    bool waiting[KG_PEEK_BATCH] = {0};
    size_t nwaiting = 0;
    for (size_t j = 0; j < m; j++) {
      kg_peek_t *peek = &peeks[from + j];
      peek->found.set = false;
      rkts[j] = rd_kafka_topic_new(k->rk, peek->topic, NULL);
      if (rkts[j] && rd_kafka_consume_start_queue(rkts[j], peek->partition, peek->offset, q) == 0) {
        waiting[j] = true;
        nwaiting++;
      }
    }
    rd_kafka_message_t *msgs[256];
    while (nwaiting > 0) {
      int64_t left = deadline - kg_mono_ms();
      if (left <= 0) break;
      char why[KG_ERRLEN];
      if (refused(k, why)) {
        KG_WARN("%s", why);
        break;
      }
      ssize_t got = take(q, NULL, -1, (int)(left < 100 ? left : 100), msgs, 256, NULL);
      for (ssize_t g = 0; g < got; g++) {
        rd_kafka_message_t *msg = msgs[g];
        const char *topic = msg->rkt ? rd_kafka_topic_name(msg->rkt) : "";
        for (size_t j = 0; j < m; j++) {
          kg_peek_t *peek = &peeks[from + j];
          if (!waiting[j] || peek->partition != msg->partition || strcmp(peek->topic, topic)) continue;
          /* The first answer decides: a record, or the end of the partition or an error (nothing to compare). */
          waiting[j] = false;
          nwaiting--;
          if (!msg->err) {
            rd_kafka_timestamp_type_t tstype;
            peek->found = kg_fingerprint_of(msg->offset, rd_kafka_message_timestamp(msg, &tstype), msg->key,
                                            msg->key_len, msg->payload, msg->len);
          }
          break;
        }
        rd_kafka_message_destroy(msg);
      }
    }
    unanswered += nwaiting;
    for (size_t j = 0; j < m; j++) {
      if (!rkts[j]) continue;
      rd_kafka_consume_stop(rkts[j], peeks[from + j].partition);
      rd_kafka_topic_destroy(rkts[j]);
    }
    rd_kafka_queue_destroy(q);
  }
  if (unanswered)
    KG_WARN("%zu partitions did not answer within kafka.metadata.timeout.ms=%lld when their last pulled record was "
            "read back; they are not checked for a recreated topic this run",
            unanswered, (long long)k->metadata_timeout_ms);
  return KG_OK;
}

int kg_kafka_fetch_start(kg_kafka_t *k, const char *topic, int32_t partition, int64_t offset, char *errbuf) {
  kg_kafka_fetch_stop(k);
  k->rkt = rd_kafka_topic_new(k->rk, topic, NULL);
  if (!k->rkt)
    return kg_fail(errbuf, KG_EKAFKA, "cannot open topic %s: %s", topic, rd_kafka_err2str(rd_kafka_last_error()));
  if (rd_kafka_consume_start(k->rkt, partition, offset) == -1) {
    int rc = kg_fail(errbuf, KG_EKAFKA, "cannot start reading %s:%d at offset %lld: %s", topic, partition,
                     (long long)offset, rd_kafka_err2str(rd_kafka_last_error()));
    rd_kafka_topic_destroy(k->rkt);
    k->rkt = NULL;
    return rc;
  }
  k->topic = kg_xstrdup(topic);
  k->partition = partition;
  k->next_offset = offset;
  k->queue = rd_kafka_queue_get_partition(k->rk, topic, partition);
  k->queue_filled = false;
  k->restarts = 0;
  k->avg_len = 0;
  return KG_OK;
}

/* Notes whether the prefetch queue was at one of its bounds before the batch of GOT messages was taken from it
 * (REMAINING are still in it): then the fetcher may have stopped. The byte bound is estimated from the batch's
 * average size, with a margin: a wrong guess costs one restart after the queue filled, never progress. */
static void note_queue_level(kg_kafka_t *k, size_t got, size_t remaining, size_t batch_bytes) {
  size_t before = got + remaining;
  if ((int64_t)before >= k->queue_max_records) {
    k->queue_filled = true;
  } else if (got > 0) {
    double estimate = (double)batch_bytes / (double)got * (double)before;
    if (estimate >= 0.8 * (double)k->queue_max_bytes) k->queue_filled = true;
  }
}

int kg_kafka_fetch(kg_kafka_t *k, kg_record_t *records, int max, int timeout_ms, int64_t *eof_offset, char *errbuf) {
  release_batch(k);
  *eof_offset = -1;
  if (k->pending_error) {
    int rc = kg_fail(errbuf, k->pending_rc, "%s", k->pending_error);
    free(k->pending_error);
    k->pending_error = NULL;
    return rc;
  }
  if (k->avg_len <= 0) {
    if (max > KG_FIRST_BATCH) max = KG_FIRST_BATCH;
  } else if ((double)max * k->avg_len > KG_BATCH_BYTES) {
    max = (int)(KG_BATCH_BYTES / k->avg_len);
    if (max < 1) max = 1;
  }
  if (max > k->msgs_cap) {
    k->msgs = kg_xrealloc(k->msgs, (size_t)max * sizeof *k->msgs);
    k->msgs_cap = max;
  }
  /* The wait for records (see take) is taken in short slices, so that the end of a partition (an EOF event after
   * offsets that hold no record, such as transaction markers) does not cost the whole timeout. */
  int64_t deadline = kg_mono_ms() + timeout_ms;
  ssize_t got;
  for (;;) {
    if (k->queue_filled && k->queue && rd_kafka_queue_length(k->queue) == 0) {
      /* The queue filled and has run dry: the fetcher has stopped. Restart it where the reader is, so it fetches
       * now (see the top of this file). */
      KG_DEBUG("The prefetch queue of %s:%d ran dry after it filled: restarting its fetcher at offset %lld", k->topic,
               k->partition, (long long)k->next_offset);
      rd_kafka_consume_stop(k->rkt, k->partition);
      if (rd_kafka_consume_start(k->rkt, k->partition, k->next_offset) == -1)
        return kg_fail(errbuf, KG_EKAFKA, "cannot restart reading %s:%d at offset %lld: %s", k->topic, k->partition,
                       (long long)k->next_offset, rd_kafka_err2str(rd_kafka_last_error()));
      k->queue_filled = false;
      k->restarts++;
    }
    int64_t left = deadline - kg_mono_ms();
    int slice = left > KG_WAIT_SLICE_MS ? KG_WAIT_SLICE_MS : left > 0 ? (int)left : 0;
    bool waited;
    got = take(k->queue, k->rkt, k->partition, slice, k->msgs, (size_t)max, &waited);
    if (got == 0 && k->restarts == 1 && waited && slice == KG_WAIT_SLICE_MS) {
      /* Nothing for a whole slice since the restart. When a fetch was still in flight as the fetcher was
       * restarted, its answer (outdated, dropped by consume_batch) may have come just before the fetcher saw the
       * restart: the fetcher found the queue at its bound again and stopped, without a wake-up to come for up to a
       * second. Restart once more. Only once: on a far broker a slice without records is no sign of anything, and
       * a restart throws the fetch in flight away; the next restart needs the queue to fill again. */
      k->queue_filled = true;
    }
    if (got != 0 || deadline - kg_mono_ms() <= 0) break;
    if (refused(k, errbuf)) return KG_EAUTH;
  }
  if (got > 0) {
    k->restarts = 0;
    size_t batch_bytes = 0;
    for (ssize_t i = 0; i < got; i++)
      batch_bytes += k->msgs[i]->len;
    double avg = (double)batch_bytes / (double)got + 1; /* + 1: never 0, for empty payloads */
    k->avg_len = k->avg_len > 0 ? (k->avg_len + avg) / 2 : avg;
    if (k->queue) note_queue_level(k, (size_t)got, rd_kafka_queue_length(k->queue), batch_bytes);
  }
  if (got < 0)
    return kg_fail(errbuf, KG_EKAFKA, "fetch from %s:%d failed: %s", k->topic, k->partition,
                   rd_kafka_err2str(rd_kafka_last_error()));
  k->nmsgs = (int)got;
  int n = 0;
  for (int i = 0; i < k->nmsgs; i++) {
    rd_kafka_message_t *m = k->msgs[i];
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      *eof_offset = m->offset;
      continue;
    }
    if (m->err) {
      bool range = m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE || m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET;
      int rc = kg_fail(errbuf, range ? KG_ERANGE : KG_EKAFKA, "fetch from %s:%d at offset %lld failed: %s", k->topic,
                       k->partition, (long long)m->offset, rd_kafka_message_errstr(m));
      if (n == 0) return rc;
      k->pending_error = kg_xstrdup(errbuf); /* hand over the records before the error first */
      k->pending_rc = rc;
      return n;
    }
    kg_record_t *r = &records[n++];
    r->topic_ptr = k->topic;
    r->key_ptr = m->key;
    r->key_len = m->key_len;
    r->value_ptr = m->payload;
    r->value_len = m->len;
    r->offset = (double)m->offset;
    rd_kafka_timestamp_type_t tstype;
    int64_t ts = rd_kafka_message_timestamp(m, &tstype);
    r->timestamp = (double)ts;
    r->partition = m->partition;
    r->opaque = m;       /* headers are parsed only when the script asks for them (kg_kafka_record_header) */
    r->datum_ptr = NULL; /* the task's Avro framing sets these */
    r->datum_len = 0;
    r->schema = r->reader_schema = -1;
    k->next_offset = m->offset + 1;
  }
  return n;
}

void kg_kafka_fetch_stop(kg_kafka_t *k) {
  release_batch(k);
  if (k->queue) {
    rd_kafka_queue_destroy(k->queue);
    k->queue = NULL;
  }
  if (k->rkt) {
    rd_kafka_consume_stop(k->rkt, k->partition);
    rd_kafka_topic_destroy(k->rkt);
    k->rkt = NULL;
  }
  free(k->topic);
  k->topic = NULL;
  k->partition = -1;
  free(k->pending_error);
  k->pending_error = NULL;
}

int kg_kafka_record_header(const kg_record_t *record, int32_t index, const char **name, const char **value,
                           size_t *value_len) {
  rd_kafka_headers_t *hdrs = NULL;
  if (!record->opaque || rd_kafka_message_headers((rd_kafka_message_t *)record->opaque, &hdrs)) return KG_ENOTFOUND;
  const void *v = NULL;
  size_t n = 0;
  if (rd_kafka_header_get_all(hdrs, (size_t)index, name, &v, &n)) return KG_ENOTFOUND;
  *value = v;
  *value_len = n;
  return KG_OK;
}

/* ---- the Kafka source's properties ------------------------------------------------------------------------- */

/* librdkafka settings that kingest's reading relies on: kafka.consumer.<name> may not change them. */
static const struct {
  const char *name;
  const char *why;
} engine_consumer_settings[] = {
    {"enable.partition.eof",
     "kingest relies on enable.partition.eof=true to see where each partition ends (without it a run stops short "
     "of the end); remove it"},
    {"auto.offset.reset", "kingest decides where an out-of-range offset goes on: use reset.on.offset.out.of.range "
                          "(and bootstrap.with.offset for partitions without a stored offset)"},
    {"enable.auto.commit", "kingest stores offsets in its state database when a run commits; remove it"},
    {"auto.commit.enable", "kingest stores offsets in its state database when a run commits; remove it"},
    {"enable.auto.offset.store", "kingest stores offsets in its state database when a run commits; remove it"},
    {"offset.store.method", "kingest stores offsets in its state database when a run commits; remove it"},
    {"bootstrap.servers", "use kafka.brokers"},
    {"metadata.broker.list", "use kafka.brokers"},
    {"group.id", "kingest joins no consumer group: it assigns partitions itself and stores offsets in its state "
                 "database, not in the group; remove it"},
    {"group.instance.id", "kingest joins no consumer group: it assigns partitions itself and stores offsets in its "
                          "state database, not in the group; remove it"},
};

/* kafka.consumer.<name>, for each such key: refused when it would change a setting above (the values librdkafka
 * takes are checked by kg_kafka_check_config). */
static int check_consumer_key(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                              kg_property_value_t *v, char *errbuf) {
  (void)options, (void)p;
  int rc = KG_OK;
  for (size_t j = 0; j < sizeof engine_consumer_settings / sizeof engine_consumer_settings[0] && !rc; j++)
    if (!strcmp(key + strlen("kafka.consumer."), engine_consumer_settings[j].name))
      rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s cannot be set: %s", kg_config_origin(c, key), key, v->s,
                   engine_consumer_settings[j].why);
  free(v->s);
  return rc;
}

/* Why ENTRY (LEN bytes) of kafka.brokers is not [protocol://]host[:port], or NULL when it is. */
static const char *broker_entry_error(const char *entry, size_t len) {
  static const char *const protocols[] = {"plaintext://", "ssl://", "sasl_plaintext://", "sasl_ssl://"};
  const char *sep = memmem(entry, len, "://", 3);
  if (sep) {
    bool known = false;
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0] && !known; i++)
      known =
          (size_t)(sep + 3 - entry) == strlen(protocols[i]) && !strncasecmp(entry, protocols[i], strlen(protocols[i]));
    if (!known) return "unknown protocol: expected PLAINTEXT://, SSL://, SASL_PLAINTEXT:// or SASL_SSL://";
    len -= (size_t)(sep + 3 - entry);
    entry = sep + 3;
  }
  const char *end = entry + len, *port = NULL, *host_end;
  if (len && entry[0] == '[') {
    const char *close = memchr(entry, ']', len);
    if (!close || close == entry + 1) return "an IPv6 address needs its closing bracket: [::1]:9092";
    bool zone = false; /* after %: an interface name, as fe80::1%eth0 */
    for (const char *q = entry + 1; q < close; q++) {
      zone |= *q == '%';
      if (!strchr("0123456789abcdefABCDEF:.%", *q) && !(zone && (isalnum((unsigned char)*q) || *q == '_' || *q == '-')))
        return "not an IPv6 address inside the brackets";
    }
    host_end = close + 1;
    if (host_end < end && *host_end != ':') return "expected :port after the IPv6 address";
    if (host_end < end) port = host_end + 1;
  } else {
    const char *colon = memchr(entry, ':', len);
    if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
      return "an IPv6 address goes in brackets, with the port after them: [::1]:9092";
    host_end = colon ? colon : end;
    if (host_end == entry) return "no host before the port";
    for (const char *q = entry; q < host_end; q++)
      if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '-' ||
            *q == '.' || *q == '_'))
        return "a host name has letters, digits, '-', '.' and '_' only";
    if (colon) port = colon + 1;
  }
  if (port) {
    if (port == end) return "no port after the colon";
    long value = 0;
    for (const char *q = port; q < end; q++) {
      if (*q < '0' || *q > '9') return "invalid port: expected a number from 1 to 65535";
      if ((value = value * 10 + (*q - '0')) > 65535) break;
    }
    if (value < 1 || value > 65535) return "invalid port: expected a number from 1 to 65535";
  }
  return NULL;
}

/* kafka.brokers: every comma-separated entry [protocol://]host[:port], spaces around it allowed (librdkafka reads a
 * bad port such as 9092x as 9092, and a run would then wait for a broker that was never meant). */
static int set_brokers(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                       kg_property_value_t *v, char *errbuf) {
  (void)p;
  char *value = v->s;
  size_t entries = 0;
  for (const char *e = value; *e;) {
    e += strspn(e, ", \t");
    if (!*e) break;
    size_t len = strcspn(e, ",");
    while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
      len--;
    const char *why = broker_entry_error(e, len);
    if (why) {
      kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: entry '%.*s' is not host:port: %s", kg_config_origin(c, key), key,
              value, (int)len, e, why);
      free(value);
      return KG_EINVAL;
    }
    entries++;
    e += len;
  }
  if (!entries) {
    kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s names no broker: expected a comma-separated host:port list",
            kg_config_origin(c, key), key, value);
    free(value);
    return KG_EINVAL;
  }
  ((kg_kafka_options_t *)options)->brokers = value;
  return KG_OK;
}

#define KG_FIELD(f) KG_FIELD_OF(kg_kafka_options_t, f)

/* kafka.brokers is read before the topic rows, the others after them (config_sections.c). */
static const kg_property_t rows[] = {
    {.name = "kafka.brokers",
     .type = KG_PROP_STRING,
     .required = "comma-separated host:port list",
     .set = set_brokers,
     .doc = "Comma-separated `host:port` list of the Kafka brokers: a host name, an IPv4 address or an IPv6 address in "
            "brackets (`[::1]:9092`), a port from 1 to 65535 (9092 when left out), and optionally librdkafka's "
            "`PLAINTEXT://`, `SSL://`, `SASL_PLAINTEXT://` or `SASL_SSL://` before it."},
    {.name = "kafka.metadata.timeout.ms",
     .type = KG_PROP_INT,
     .def = "15000",
     .min = 100,
     .max = 3600000,
     KG_FIELD(metadata_timeout_ms),
     .doc = "Longest wait for the brokers to answer a metadata or offset query. Errors that may pass (a leader moving "
            "or not yet elected, a topic just created, a broker not answering) are retried with a short backoff until "
            "this is used up; then the run fails, naming the last error, the brokers' last connection errors and the "
            "time spent, except that a partition still without offsets then (no leader) is skipped for the run, "
            "which is `PARTIAL`, when others were answered. Brokers that are all refused or not resolved fail the run "
            "in about a second, naming the cause; a refused login or TLS handshake fails it as soon as the Kafka "
            "client reports it, with exit status 77."},
    {.name = "kafka.fetch.timeout.ms",
     .type = KG_PROP_INT,
     .def = "30000",
     .min = 100,
     .max = 3600000,
     KG_FIELD(fetch_timeout_ms),
     .doc = "Longest wait for the next record of a partition's range before moving on."},
    {.name = "kafka.fetch.batch.size",
     .type = KG_PROP_INT,
     .def = "1000",
     .min = 1,
     .max = 1000000,
     KG_FIELD(batch_size),
     .doc = "Records handed to the script per call, at most: a batch also holds no more than about 1 MB of payloads "
            "(at the partition's average record size), since its records stay in the Kafka client's buffers until "
            "the next one."},
    {.name = "kafka.consumer.*",
     .type = KG_PROP_STRING,
     .set = check_consumer_key,
     .doc = "Passed to librdkafka as `<name>` (security settings, `fetch.wait.max.ms`, `isolation.level` and the "
            "like). The settings kingest relies on are refused with an error naming the property: "
            "`enable.partition.eof` (how a partition's end is seen), `auto.offset.reset` (use "
            "`reset.on.offset.out.of.range`), `enable.auto.commit`, `auto.commit.enable`, `enable.auto.offset.store`, "
            "`offset.store.method` (kingest stores offsets in its state database), `bootstrap.servers`, "
            "`metadata.broker.list` (use `kafka.brokers`), `group.id`, `group.instance.id` (kingest joins no consumer "
            "group)."},
};

/* What set_brokers made: the rows' fields are freed by kg_config_destroy. */
static void clear(void *options) { free(((kg_kafka_options_t *)options)->brokers); }

const kg_config_section_t kg_kafka_section = {.name = "kafka",
                                              .rows = rows,
                                              .nrows = sizeof rows / sizeof rows[0],
                                              .size = sizeof(kg_kafka_options_t),
                                              .clear = clear};

const kg_kafka_options_t *kg_kafka_options(const kg_config_t *config) {
  return kg_config_options(config, &kg_kafka_section);
}
