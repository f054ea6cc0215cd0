/* kafka_source.h: the Kafka source: topic discovery, partition offsets, and a per-partition record fetcher. */
#ifndef KG_KAFKA_SOURCE_H
#define KG_KAFKA_SOURCE_H

#include <sys/types.h>

#include "config.h"
#include "kafka_fingerprint.h"
#include "kg_ffi.h"

typedef struct kg_kafka kg_kafka_t;

/* The Kafka source's options: its section's rows (kafka_source.c), read with the job's. The passthrough keys
 * (kafka.consumer.<name>) are read from the job's properties by kg_kafka_new. */
typedef struct {
  char *brokers;               /* kafka.brokers: [protocol://]host[:port] entries, comma-separated */
  int64_t metadata_timeout_ms; /* kafka.metadata.timeout.ms: broker discovery and offset queries */
  int64_t fetch_timeout_ms;    /* kafka.fetch.timeout.ms: longest wait for the next record of a range */
  int batch_size;              /* kafka.fetch.batch.size: records handed to the script per call */
} kg_kafka_options_t;
extern const kg_config_section_t kg_kafka_section;
const kg_kafka_options_t *kg_kafka_options(const kg_config_t *config);

typedef struct {
  char *name;
  int32_t partition_count;
  int32_t *partitions; /* ids, sorted */
} kg_topic_meta_t;

/* A client for CONFIG's brokers. Returns KG_OK, KG_EINVAL for a kafka.consumer.<name> the client refuses
 * (kg_kafka_check_config), or KG_EKAFKA with a message naming kafka.brokers. */
int kg_kafka_new(const kg_config_t *config, kg_kafka_t **out, char *errbuf);
/* Checks the client configuration kg_kafka_new would make, without making a client (no thread, no connection):
 * KG_EINVAL naming a kafka.consumer.<name> property librdkafka refuses (an unknown name, a bad value) and where
 * the job set it. Settings that only conflict with each other are found when the client is made. */
int kg_kafka_check_config(const kg_config_t *config, char *errbuf);
void kg_kafka_destroy(kg_kafka_t *kafka);

/* Every topic on the cluster, sorted by name. The array and its contents are the caller's, freed with
 * kg_kafka_free_topics. Errors that may pass are retried until the metadata timeout is used up; then it fails
 * with a message naming the brokers, the last error, the brokers' last connection errors and the time spent.
 * Before any broker answered, brokers that all fail for a reason waiting does not cure (refused, not resolved, TLS,
 * authentication) fail it in about a second, naming each broker's cause. */
int kg_kafka_list_topics(kg_kafka_t *kafka, kg_topic_meta_t **topics, size_t *count, char *errbuf);
void kg_kafka_free_topics(kg_topic_meta_t *topics, size_t count);

/* The earliest and latest (next to be written) offsets of TOPIC:PARTITION. */
int kg_kafka_offsets(kg_kafka_t *kafka, const char *topic, int32_t partition, int64_t *earliest, int64_t *latest,
                     char *errbuf);

/* One partition of kg_kafka_offsets_bulk: which partition is asked, and what the brokers answered. */
typedef struct {
  const char *topic; /* in; not owned */
  int32_t partition; /* in */
  int64_t earliest;  /* out: the log's first offset */
  int64_t latest;    /* out: the next offset to be written */
  const char *error; /* out: why the broker gave no offset for it (a static string), NULL on success */
} kg_partition_offsets_t;

/* The earliest and latest offsets of the N partitions PARTS at once (two ListOffsets round trips per broker, not
 * two per partition): each element's TOPIC and PARTITION in; its EARLIEST and LATEST out, or its ERROR for a
 * partition the broker gave no offset for. Errors the cluster may recover from (a leader moving, a topic just
 * created, a broker not answering) are retried with a short backoff until kafka.metadata.timeout.ms is used up; a
 * partition still failing then with an error of its own (no leader) while others were answered gets it in ERROR; an
 * error that remains for every partition, or one that cannot be retried, fails the query with a message naming the
 * partition, the error and the time spent. Unreachable brokers fail it early, as kg_kafka_list_topics. */
int kg_kafka_offsets_bulk(kg_kafka_t *kafka, kg_partition_offsets_t *parts, size_t n, char *errbuf);

/* Kafka's offsets-for-times: the first offset of TOPIC:PARTITION whose record's timestamp is TIME_MS or later, as
 * *OFFSET; -1 when no record is that recent. */
int kg_kafka_offset_for_time(kg_kafka_t *kafka, const char *topic, int32_t partition, int64_t time_ms, int64_t *offset,
                             char *errbuf);

/* One partition of kg_kafka_peek: where to read, and the record found there. */
typedef struct {
  const char *topic;      /* in; not owned */
  int32_t partition;      /* in */
  int64_t offset;         /* in: the record is the first at or after it */
  kg_fingerprint_t found; /* out: not set when the partition answered with its end, an error, or not at all */
} kg_peek_t;

/* Reads back one record of each of the N partitions PEEKS: the first record at or after each one's OFFSET, as its
 * FOUND (not set when the partition answered with its end, an error, or not at all within the metadata timeout,
 * which is logged). The fetchers of a batch of partitions run at once. */
int kg_kafka_peek(kg_kafka_t *kafka, kg_peek_t *peeks, size_t n);

/* Fetching one partition at a time: start at OFFSET, then take batches of record views until the range
 * is done. Views stay valid until the next kg_kafka_fetch or kg_kafka_fetch_stop. */
int kg_kafka_fetch_start(kg_kafka_t *kafka, const char *topic, int32_t partition, int64_t offset, char *errbuf);
/* Fills up to MAX views into RECORDS (which must hold MAX) and returns how many, 0 on timeout, or a
 * negative KG_E* with ERRBUF set. *EOF_OFFSET is the partition's end when the broker says it was reached
 * (offsets below it that came as no record are gone: deleted, compacted, or transaction markers), else -1. */
int kg_kafka_fetch(kg_kafka_t *kafka, kg_record_t *records, int max, int timeout_ms, int64_t *eof_offset, char *errbuf);
void kg_kafka_fetch_stop(kg_kafka_t *kafka);

/* Header INDEX of a record view that kg_kafka_fetch filled: *NAME, *VALUE (NULL for a null header) and
 * *VALUE_LEN point into the message and stay valid as long as the view does. Returns KG_OK, or KG_ENOTFOUND
 * when the record has no such header (or is not a fetched message). For kg_ffi_record_header. */
int kg_kafka_record_header(const kg_record_t *record, int32_t index, const char **name, const char **value,
                           size_t *value_len);

/* The batch taker under kg_kafka_fetch and kg_kafka_peek (kafka_source.c's take), reachable for its own test
 * (engine/tests/test_kafka.c, which drives it on a client and queues of its own); the engine calls it only through
 * those two. Up to MAX messages from queue Q (when RKT is NULL), or from partition PARTITION of RKT (Q then that
 * partition's queue, NULL when not known): messages already queued are taken without a wait; an empty queue is waited
 * on, up to TIMEOUT_MS, for one message, and then whatever came with it is taken. Returns how many were put in MSGS
 * (the caller's, each destroyed with rd_kafka_message_destroy), or -1 as consume_batch does. *WAITED (when not NULL)
 * tells whether the queue was waited on. */
struct rd_kafka_queue_s;
struct rd_kafka_topic_s;
struct rd_kafka_message_s;
ssize_t kg_kafka_take(struct rd_kafka_queue_s *q, struct rd_kafka_topic_s *rkt, int32_t partition, int timeout_ms,
                      struct rd_kafka_message_s **msgs, size_t max, bool *waited);

#endif
