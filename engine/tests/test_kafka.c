/* test_kafka.c: the Kafka source's batch taker (kafka_source.c's take, through kg_kafka_take) and the fetcher restart
 * of kg_kafka_fetch, on librdkafka's mock cluster (rdkafka_mock.h: brokers inside this process, no broker of ours). The
 * edges of take: a queue holding only the barrier ops of a (re)start (not waited on), an empty queue waited on, records
 * that arrive during the wait (all of them taken, not only the first), records already queued (taken at once, not after
 * a wait for a full batch), a restart while the records of the fetch before it are still queued (none of those taken,
 * none lost), a partition at its end, a queue that several partitions feed. Then kg_kafka_fetch with a prefetch queue
 * of one record, so that its fetcher is restarted every time the queue runs dry, with and without fetches in flight at
 * the restarts; and, through librdkafka's debug log, the client settings that keep its fetcher's backoff short and its
 * destroy from waiting for a push of client metrics. Every check is on counts, offsets and log lines (every record
 * once, in order), none on a time. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "kafka_source.h"
#include "log.h"
#include "test.h"

/* Waits that end the test when something never comes: generous, never asserted. */
#define KG_TEST_PATIENCE_MS 60000

static rd_kafka_t *producer; /* its mock cluster is the cluster of every client of the test */
static rd_kafka_t *single;   /* a producer of one record a batch */
static rd_kafka_mock_cluster_t *cluster;
static const char *bootstraps;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set(rd_kafka_conf_t *conf, const char *name, const char *value) {
  char err[512];
  if (rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s=%s: %s\n", name, value, err);
    exit(1);
  }
}

static void setup_cluster(void) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "test.mock.num.brokers", "1");
  set(conf, "linger.ms", "1000"); /* a batch is sent by the flush that ends produce() */
  char err[512];
  producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!producer) {
    fprintf(stderr, "cannot make the mock cluster's producer: %s\n", err);
    exit(1);
  }
  cluster = rd_kafka_handle_mock_cluster(producer);
  bootstraps = rd_kafka_mock_cluster_bootstraps(cluster);
  conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstraps);
  set(conf, "batch.num.messages", "1");
  set(conf, "linger.ms", "0");
  set(conf, "max.in.flight", "1"); /* the batches stored in the order produced */
  single = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!single) {
    fprintf(stderr, "cannot make a producer: %s\n", err);
    exit(1);
  }
}

/* Creates TOPIC on the cluster and lets the producer know of it, so that what it produces to it goes straight to its
 * partitions (in one batch each when asked). */
static void create_topic(const char *topic, int partitions) {
  CHECK_INT(rd_kafka_mock_topic_create(cluster, topic, partitions, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_t *producers[2] = {producer, single};
  for (int i = 0; i < 2; i++) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(producers[i], topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    CHECK_INT(rd_kafka_metadata(producers[i], 0, rkt, &md, KG_TEST_PATIENCE_MS), RD_KAFKA_RESP_ERR_NO_ERROR);
    if (md) {
      CHECK_INT(md->topic_cnt, 1);
      if (md->topic_cnt == 1) CHECK_INT(md->topics[0].partition_cnt, partitions);
      rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(rkt);
  }
}

/* Produces records FROM .. FROM + N - 1 of TOPIC:PARTITION, payloads "<topic>-<partition>-<n>": in one batch when
 * ONE_BATCH (a fetch then brings them all at once), else one batch each. They are in the partition when it returns. */
static void produce(const char *topic, int32_t partition, int from, int n, bool one_batch) {
  rd_kafka_t *rk = one_batch ? producer : single;
  for (int i = from; i < from + n; i++) {
    char payload[128];
    int len = snprintf(payload, sizeof payload, "%s-%d-%d", topic, partition, i);
    CHECK_INT(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                                RD_KAFKA_V_VALUE(payload, (size_t)len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  CHECK_INT(rd_kafka_flush(rk, KG_TEST_PATIENCE_MS), RD_KAFKA_RESP_ERR_NO_ERROR);
}

/* A simple consumer of the cluster, as the engine's (kafka_source.c) but made here; with EOF, partition ends are
 * events. */
static rd_kafka_t *consumer_new(bool eof) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", bootstraps);
  set(conf, "enable.partition.eof", eof ? "true" : "false");
  set(conf, "fetch.wait.max.ms", "10");
  set(conf, "auto.offset.reset", "error");
  char err[512];
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "cannot make a consumer: %s\n", err);
    exit(1);
  }
  return rk;
}

/* Waits until queue Q holds at least N ops (records, barriers, events). */
static void wait_length(rd_kafka_queue_t *q, size_t n) {
  int64_t deadline = now_ms() + KG_TEST_PATIENCE_MS;
  while (rd_kafka_queue_length(q) < n && now_ms() < deadline)
    sleep_ms(5);
  CHECK(rd_kafka_queue_length(q) >= n);
}

/* What takes have handed over so far: the records' offsets and payloads in order, and the partition-end events. */
typedef struct {
  int64_t offsets[512];
  int n;
  int64_t eof_at; /* the offset of the last partition-end event, -1 when none came */
  int eofs;
  int errors;
} taken_t;

/* Notes the GOT messages of MSGS in T (checking each record's payload against TOPIC:PARTITION and its offset), and
 * destroys them. */
static void note(taken_t *t, const char *topic, rd_kafka_message_t **msgs, ssize_t got) {
  for (ssize_t i = 0; i < got; i++) {
    rd_kafka_message_t *m = msgs[i];
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      t->eof_at = m->offset;
      t->eofs++;
    } else if (m->err) {
      fprintf(stderr, "a message with an error: %s\n", rd_kafka_message_errstr(m));
      t->errors++;
    } else {
      char want[128];
      snprintf(want, sizeof want, "%s-%d-%lld", topic, (int)m->partition, (long long)m->offset);
      CHECK(m->len == strlen(want) && !memcmp(m->payload, want, m->len));
      if (t->n < 512) t->offsets[t->n++] = m->offset;
    }
    rd_kafka_message_destroy(m);
  }
}

/* Checks that T holds the records FROM .. FROM + N - 1, each once, in order. */
static void check_offsets(const taken_t *t, int64_t from, int n) {
  CHECK_INT(t->n, n);
  int wrong = 0;
  for (int i = 0; i < t->n && i < n; i++)
    if (t->offsets[i] != from + i) {
      if (!wrong++)
        fprintf(stderr, "record %d of the takes is at offset %lld, not %lld\n", i, (long long)t->offsets[i],
                (long long)(from + i));
    }
  CHECK_INT(wrong, 0);
  CHECK_INT(t->errors, 0);
}

/* Takes from Q (RKT:PARTITION unless RKT is NULL) into T until it holds N records (and, with EOF, a partition end
 * after them), with waits of TIMEOUT_MS each. */
static void drain(taken_t *t, const char *topic, rd_kafka_queue_t *q, rd_kafka_topic_t *rkt, int32_t partition, int n,
                  bool eof) {
  rd_kafka_message_t *msgs[64];
  int64_t deadline = now_ms() + KG_TEST_PATIENCE_MS;
  while ((t->n < n || (eof && t->eofs == 0)) && now_ms() < deadline) {
    ssize_t got = kg_kafka_take(q, rkt, partition, 100, msgs, 64, NULL);
    CHECK(got >= 0);
    note(t, topic, msgs, got);
  }
}

/* A thread that produces records FROM .. FROM + N - 1 of partition 0 of TOPIC in one batch, a moment after it is
 * told to (go_on). */
typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  bool go;
  const char *topic;
  int from, n;
  pthread_t thread;
} later_t;

static void *produce_later(void *arg) {
  later_t *job = arg;
  pthread_mutex_lock(&job->mutex);
  while (!job->go)
    pthread_cond_wait(&job->cond, &job->mutex);
  pthread_mutex_unlock(&job->mutex);
  sleep_ms(300);
  produce(job->topic, 0, job->from, job->n, true);
  return NULL;
}

static void later_start(later_t *job, const char *topic, int from, int n) {
  *job = (later_t){
      .mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .topic = topic, .from = from, .n = n};
  CHECK_INT(pthread_create(&job->thread, NULL, produce_later, job), 0);
}

static void go_on(later_t *job) {
  pthread_mutex_lock(&job->mutex);
  job->go = true;
  pthread_cond_signal(&job->cond);
  pthread_mutex_unlock(&job->mutex);
}

/* A fresh (re)start leaves only its barrier op in the partition's queue: taken at once, no record, no wait. The empty
 * queue then is waited on, and a wait that sees nothing gives nothing. Records that come during a wait are all taken
 * by it: the first ends the wait, the rest came with it. */
static void test_barrier_empty_and_wait(void) {
  const char *topic = "take.wait";
  create_topic(topic, 1);
  rd_kafka_t *rk = consumer_new(false);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  CHECK_INT(rd_kafka_consume_start(rkt, 0, 0), 0);
  rd_kafka_queue_t *q = rd_kafka_queue_get_partition(rk, topic, 0);
  wait_length(q, 1); /* the start's barrier; an empty partition without end events sends nothing else */
  rd_kafka_message_t *msgs[100];
  bool waited = true;
  ssize_t got = kg_kafka_take(q, rkt, 0, KG_TEST_PATIENCE_MS, msgs, 100, &waited);
  CHECK_INT(got, 0);
  CHECK(!waited);
  CHECK_INT(rd_kafka_queue_length(q), 0);
  got = kg_kafka_take(q, rkt, 0, 200, msgs, 100, &waited);
  CHECK_INT(got, 0);
  CHECK(waited);

  later_t job;
  later_start(&job, topic, 0, 20);
  go_on(&job);
  got = kg_kafka_take(q, rkt, 0, KG_TEST_PATIENCE_MS, msgs, 100, &waited);
  CHECK(waited);
  CHECK_INT(got, 20); /* one fetch brought the batch: all of it, not only the record that ended the wait */
  taken_t t = {.eof_at = -1};
  note(&t, topic, msgs, got);
  drain(&t, topic, q, rkt, 0, 20, false);
  check_offsets(&t, 0, 20);
  pthread_join(job.thread, NULL);

  /* Records already queued are taken without a wait, as many as asked for; and when fewer are queued than asked
   * for, those are taken at once, not after a wait for more (which would have taken the 20 produced meanwhile). */
  produce(topic, 0, 20, 30, true);
  wait_length(q, 30);
  got = kg_kafka_take(q, rkt, 0, KG_TEST_PATIENCE_MS, msgs, 12, &waited);
  CHECK(!waited);
  CHECK_INT(got, 12);
  taken_t u = {.eof_at = -1};
  note(&u, topic, msgs, got);
  later_start(&job, topic, 50, 20);
  go_on(&job);
  got = kg_kafka_take(q, rkt, 0, 3000, msgs, 100, &waited);
  CHECK(!waited);
  CHECK_INT(got, 18);
  note(&u, topic, msgs, got);
  pthread_join(job.thread, NULL);
  drain(&u, topic, q, rkt, 0, 50, false);
  check_offsets(&u, 20, 50);

  rd_kafka_queue_destroy(q);
  rd_kafka_consume_stop(rkt, 0);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
}

/* A restart (consume_stop, consume_start at the next offset, as kg_kafka_fetch restarts its fetcher) while records of
 * the fetch before it are still queued: what the restart outdated is never taken, and every record after the restart
 * offset comes once, in order. The broker answers slowly, so that the fetch after the restart is still in flight as
 * the takes begin. */
static void test_restart_in_flight(void) {
  const char *topic = "take.restart";
  create_topic(topic, 1);
  produce(topic, 0, 0, 30, true);
  rd_kafka_t *rk = consumer_new(false);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  CHECK_INT(rd_kafka_consume_start(rkt, 0, 0), 0);
  rd_kafka_queue_t *q = rd_kafka_queue_get_partition(rk, topic, 0);
  wait_length(q, 31); /* the barrier and the 30 records */
  rd_kafka_message_t *msgs[64];
  taken_t t = {.eof_at = -1};
  bool waited = true;
  ssize_t got = kg_kafka_take(q, rkt, 0, KG_TEST_PATIENCE_MS, msgs, 10, &waited);
  CHECK(!waited);
  CHECK_INT(got, 10);
  note(&t, topic, msgs, got);
  CHECK_INT(rd_kafka_mock_broker_set_rtt(cluster, 1, 200), RD_KAFKA_RESP_ERR_NO_ERROR);
  CHECK_INT(rd_kafka_consume_stop(rkt, 0), 0);
  CHECK_INT(rd_kafka_consume_start(rkt, 0, 10), 0);
  CHECK(rd_kafka_queue_length(q) >= 20); /* records 10 .. 29 of the first fetch, outdated, are still queued */
  /* A queue that holds ops is not waited on, even when none of them is a record to hand over (then the caller asks
   * again: kg_kafka_fetch counts only a real wait as a sign that its fetcher stopped). */
  got = kg_kafka_take(q, rkt, 0, KG_TEST_PATIENCE_MS, msgs, 64, &waited);
  CHECK(!waited);
  note(&t, topic, msgs, got);
  drain(&t, topic, q, rkt, 0, 30, false);
  CHECK_INT(rd_kafka_mock_broker_set_rtt(cluster, 1, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
  /* Nothing more: the outdated copies of 10 .. 29 were dropped, not handed over. */
  got = kg_kafka_take(q, rkt, 0, 300, msgs, 64, NULL);
  note(&t, topic, msgs, got);
  check_offsets(&t, 0, 30);
  rd_kafka_queue_destroy(q);
  rd_kafka_consume_stop(rkt, 0);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
}

/* A partition at its end: its records, then one end event at the next offset; nothing after it until a record
 * comes. Started at its end, only the end event. */
static void test_partition_end(void) {
  const char *topic = "take.end";
  create_topic(topic, 1);
  produce(topic, 0, 0, 5, true);
  rd_kafka_t *rk = consumer_new(true);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  CHECK_INT(rd_kafka_consume_start(rkt, 0, 0), 0);
  rd_kafka_queue_t *q = rd_kafka_queue_get_partition(rk, topic, 0);
  taken_t t = {.eof_at = -1};
  drain(&t, topic, q, rkt, 0, 5, true);
  check_offsets(&t, 0, 5);
  CHECK_INT(t.eofs, 1);
  CHECK_INT(t.eof_at, 5);
  rd_kafka_message_t *msgs[64];
  bool waited = false;
  ssize_t got = kg_kafka_take(q, rkt, 0, 200, msgs, 64, &waited);
  CHECK_INT(got, 0);
  CHECK(waited);
  /* More records: they come, then the end again. */
  produce(topic, 0, 5, 3, true);
  taken_t u = {.eof_at = -1};
  drain(&u, topic, q, rkt, 0, 3, true);
  check_offsets(&u, 5, 3);
  CHECK_INT(u.eofs, 1);
  CHECK_INT(u.eof_at, 8);
  /* Restarted at the end. */
  CHECK_INT(rd_kafka_consume_stop(rkt, 0), 0);
  CHECK_INT(rd_kafka_consume_start(rkt, 0, 8), 0);
  taken_t v = {.eof_at = -1};
  drain(&v, topic, q, rkt, 0, 0, true);
  check_offsets(&v, 8, 0);
  CHECK_INT(v.eofs, 1);
  CHECK_INT(v.eof_at, 8);
  rd_kafka_queue_destroy(q);
  rd_kafka_consume_stop(rkt, 0);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
}

/* A queue that several partitions feed (as kg_kafka_peek reads them), taken without naming a partition: each
 * partition's records once, in order, and its end. */
static void test_shared_queue(void) {
  const char *topic = "take.queue";
  create_topic(topic, 3);
  for (int32_t p = 0; p < 3; p++)
    produce(topic, p, 0, 4, p != 1);
  rd_kafka_t *rk = consumer_new(true);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  for (int32_t p = 0; p < 3; p++)
    CHECK_INT(rd_kafka_consume_start_queue(rkt, p, 0, q), 0);
  int64_t next[3] = {0, 0, 0};
  int ends = 0, records = 0, wrong = 0;
  rd_kafka_message_t *msgs[256];
  int64_t deadline = now_ms() + KG_TEST_PATIENCE_MS;
  while ((records < 12 || ends < 3) && now_ms() < deadline) {
    ssize_t got = kg_kafka_take(q, NULL, -1, 100, msgs, 256, NULL);
    CHECK(got >= 0);
    for (ssize_t i = 0; i < got; i++) {
      rd_kafka_message_t *m = msgs[i];
      if (m->partition < 0 || m->partition > 2) {
        wrong++;
      } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        ends++;
        if (m->offset != 4) wrong++;
      } else if (m->err || m->offset != next[m->partition]++) {
        wrong++;
      } else {
        records++;
      }
      rd_kafka_message_destroy(m);
    }
  }
  CHECK_INT(records, 12);
  CHECK_INT(ends, 3);
  CHECK_INT(wrong, 0);
  for (int32_t p = 0; p < 3; p++) {
    CHECK_INT(next[p], 4);
    rd_kafka_consume_stop(rkt, p);
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
}

/* The restarts kg_kafka_fetch logged (at DEBUG) in LOG since byte FROM, each at an offset in 1 .. LAST, in order. */
static int restarts_in(const char *log, size_t from, int64_t last) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  fseek(f, (long)from, SEEK_SET);
  char line[2048];
  int n = 0;
  long long prev = 0;
  const char *mark = "ran dry after it filled: restarting its fetcher at offset ";
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, mark);
    if (!at) continue;
    long long offset = strtoll(at + strlen(mark), NULL, 10);
    CHECK(offset >= 1 && offset <= last && offset >= prev);
    prev = offset;
    n++;
  }
  fclose(f);
  return n;
}

static size_t size_of(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n > 0 ? (size_t)n : 0;
}

/* kg_kafka_fetch over N records produced one batch each, with a prefetch queue of one record and fetches of a few
 * hundred bytes: the queue is at its bound after every fetch, so the fetcher is restarted each time it runs dry. With
 * RTT_MS, the broker answers slowly, so that restarts meet fetches in flight. Every record once, in order, then the
 * partition's end; and restarts did happen. */
static void test_fetch_restarts(const char *topic, int n, int rtt_ms, const char *log) {
  create_topic(topic, 1);
  produce(topic, 0, 0, n, false);
  char text[1024], err[KG_ERRLEN] = "";
  snprintf(text, sizeof text,
           "kafka.brokers=%s\nkafka.consumer.queued.min.messages=1\nkafka.consumer.fetch.message.max.bytes=300\n",
           bootstraps);
  kg_config_t *config = NULL;
  CHECK_INT(kg_test_config(text, "/jobs/fetch.pull", &config, err), KG_OK);
  kg_kafka_t *k = NULL;
  if (config) CHECK_INT(kg_kafka_new(config, &k, err), KG_OK);
  if (!k) {
    fprintf(stderr, "%s\n", err);
    kg_config_destroy(config);
    return;
  }
  if (rtt_ms) CHECK_INT(rd_kafka_mock_broker_set_rtt(cluster, 1, rtt_ms), RD_KAFKA_RESP_ERR_NO_ERROR);
  size_t from = size_of(log);
  CHECK_INT(kg_kafka_fetch_start(k, topic, 0, 0, err), KG_OK);
  kg_record_t records[7];
  int64_t expected = 0, eof = -1;
  int wrong = 0, calls = 0;
  int64_t deadline = now_ms() + KG_TEST_PATIENCE_MS;
  while (eof < n && now_ms() < deadline) {
    int got = kg_kafka_fetch(k, records, 7, 1000, &eof, err);
    calls++;
    CHECK(got >= 0 && got <= 7);
    for (int i = 0; i < got; i++) {
      char want[128];
      snprintf(want, sizeof want, "%s-0-%lld", topic, (long long)expected);
      if ((int64_t)records[i].offset != expected || records[i].value_len != strlen(want) ||
          memcmp(records[i].value_ptr, want, records[i].value_len))
        wrong++;
      expected = (int64_t)records[i].offset + 1;
    }
  }
  CHECK_INT(expected, n);
  CHECK_INT(eof, n);
  CHECK_INT(wrong, 0);
  int restarts = restarts_in(log, from, n);
  CHECK(restarts >= 1);
  printf("%s: %d records in %d fetches, %d restarts of the fetcher\n", topic, n, calls, restarts);
  if (rtt_ms) CHECK_INT(rd_kafka_mock_broker_set_rtt(cluster, 1, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
  kg_kafka_fetch_stop(k);
  kg_kafka_destroy(k);
  kg_config_destroy(config);
}

/* The lines of LOG since byte FROM that hold MARK; *VALUES gets the number after MARK of each (up to MAX). */
static int lines_with(const char *log, size_t from, const char *mark, long long *values, int max) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  fseek(f, (long)from, SEEK_SET);
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, mark);
    if (!at) continue;
    if (n < max) values[n] = strtoll(at + strlen(mark), NULL, 10);
    n++;
  }
  fclose(f);
  return n;
}

/* The engine's client as librdkafka 2.x runs it, seen through librdkafka's own debug log: a fetcher that finds the
 * prefetch queue at its bound backs off for 10 ms (fetch.queue.backoff.ms), not librdkafka's default of a second,
 * which a restart of the fetcher does not end; and destroying the client does not wait for a last push of client
 * metrics (enable.metrics.push), which a cluster without a metrics subscription never answers. */
static void test_client_backoffs(const char *log) {
  const char *topic = "fetch.backoff";
  create_topic(topic, 1);
  produce(topic, 0, 0, 12, false);
  char text[1024], err[KG_ERRLEN] = "";
  snprintf(text, sizeof text,
           "kafka.brokers=%s\nkafka.consumer.queued.min.messages=1\nkafka.consumer.fetch.message.max.bytes=300\n"
           "kafka.consumer.debug=fetch,telemetry\n",
           bootstraps);
  kg_config_t *config = NULL;
  CHECK_INT(kg_test_config(text, "/jobs/backoff.pull", &config, err), KG_OK);
  kg_kafka_t *k = NULL;
  if (config) CHECK_INT(kg_kafka_new(config, &k, err), KG_OK);
  if (!k) {
    fprintf(stderr, "%s\n", err);
    kg_config_destroy(config);
    return;
  }
  size_t from = size_of(log);
  CHECK_INT(kg_kafka_fetch_start(k, topic, 0, 0, err), KG_OK);
  kg_record_t records[7];
  int64_t expected = 0, eof = -1;
  int64_t deadline = now_ms() + KG_TEST_PATIENCE_MS;
  while (eof < 12 && now_ms() < deadline) {
    int got = kg_kafka_fetch(k, records, 7, 1000, &eof, err);
    CHECK(got >= 0 && got <= 7);
    for (int i = 0; i < got; i++) {
      CHECK_INT(records[i].offset, expected);
      expected = (int64_t)records[i].offset + 1;
    }
    sleep_ms(20); /* a slow reader: the fetcher finds the queue at its bound */
  }
  CHECK_INT(expected, 12);
  kg_kafka_fetch_stop(k);
  kg_kafka_destroy(k);
  kg_config_destroy(config);
  long long backoffs[64];
  int n = lines_with(log, from, "fetch.backoff [0]: Fetch backoff for ", backoffs, 64);
  CHECK(n >= 1); /* the queue of one record was at its bound after every fetch */
  for (int i = 0; i < n && i < 64; i++)
    CHECK_INT(backoffs[i], 10);
  CHECK_INT(lines_with(log, from, "Awaiting termination of telemetry", backoffs, 64), 0);
}

int main(void) {
  setup_cluster();
  test_barrier_empty_and_wait();
  test_restart_in_flight();
  test_partition_end();
  test_shared_queue();
  char log[] = "/tmp/kg-test-kafka-XXXXXX";
  int fd = mkstemp(log);
  if (fd >= 0) close(fd);
  CHECK_INT(kg_log_set_file(log), KG_OK);
  kg_log_set_level(KG_LOG_DEBUG);
  test_fetch_restarts("fetch.restarts", 24, 0, log);
  test_fetch_restarts("fetch.inflight", 12, 20, log);
  test_client_backoffs(log);
  kg_log_set_level(KG_LOG_INFO);
  kg_log_set_file(NULL);
  unlink(log);
  rd_kafka_destroy(single);
  rd_kafka_destroy(producer);
  TEST_MAIN_END();
}
