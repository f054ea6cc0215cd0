/* workunit.h: topic selection, the offset decisions of a partition, and work units with watermarks. */
#ifndef KG_WORKUNIT_H
#define KG_WORKUNIT_H

#include "buf.h"
#include "config.h"

typedef struct kg_topic_filter kg_topic_filter_t;

/* Compiles comma-separated whitelist and blacklist regexes (each must match the whole name). An empty
 * whitelist selects every topic. Returns KG_EINVAL naming the property and the bad pattern. */
int kg_topic_filter_new(const char *whitelist, const char *blacklist, kg_topic_filter_t **out, char *errbuf);
void kg_topic_filter_destroy(kg_topic_filter_t *filter);
/* True when TOPIC is to be pulled. Internal topics (__*) only when whitelisted by exact name. */
bool kg_topic_filter_match(const kg_topic_filter_t *filter, const char *topic);

/* True when TOPIC is named in LIST (comma-separated exact names, or "all"). */
bool kg_topic_in_list(const char *list, const char *topic);

typedef enum {
  KG_START_PREVIOUS = 0,   /* the stored offset, inside the broker's range */
  KG_START_BOOTSTRAP,      /* no stored offset: bootstrap.with.offset */
  KG_START_MOVE_TO_LATEST, /* topics.move.to.latest.offset */
  KG_START_RESET,          /* stored offset out of range: reset.on.offset.out.of.range */
  KG_START_NEW_PARTITION,  /* no stored offset, but the topic has stored partitions: kafka.new.partition.offset */
  KG_START_RECREATED,      /* the partition's log was recreated since the offset was stored: reset.on.offset... */
} kg_start_reason_t;

/* The decision for one partition. */
typedef struct {
  bool pull;   /* false: no work unit (bootstrap skip, reset skip) */
  int64_t low; /* the low watermark when pull */
  kg_start_reason_t reason;
} kg_offset_decision_t;

/* Decides where a partition starts, given its stored offset (HAS_STORED) and the broker's range
 * [EARLIEST, LATEST]. Pure: the rules of docs/behaviour.md, section 2. */
kg_offset_decision_t kg_offset_decide(kg_bootstrap_t bootstrap, kg_reset_t reset, bool move_to_latest, bool has_stored,
                                      int64_t stored, int64_t earliest, int64_t latest);

/* The policies that place a partition's start. */
typedef struct {
  kg_bootstrap_t bootstrap;         /* bootstrap.with.offset */
  kg_reset_t reset;                 /* reset.on.offset.out.of.range */
  kg_new_partition_t new_partition; /* kafka.new.partition.offset */
} kg_offset_policy_t;

/* What planning knows about a partition. */
typedef struct {
  bool move_to_latest; /* the topic is in topics.move.to.latest.offset */
  bool has_stored;     /* the state has an offset for the partition */
  int64_t stored;
  bool topic_known;         /* the state has an offset for another partition of the topic: the job already pulls it */
  bool recreated;           /* evidence that the partition's log was recreated since STORED was committed */
  int64_t earliest, latest; /* the broker's range */
} kg_partition_facts_t;

/* Decides where a partition starts at planning time. Pure: kg_offset_decide's rules, and before them:
 * - a partition without a stored offset of a topic the job already pulls is new data: it starts by
 *   kafka.new.partition.offset (earliest or latest, reason KG_START_NEW_PARTITION), or with bootstrap by
 *   bootstrap.with.offset;
 * - a partition whose log was recreated starts by reset.on.offset.out.of.range (reason KG_START_RECREATED),
 *   where nearest means earliest: every record of a new log is new data, wherever the stored offset lies.
 * topics.move.to.latest.offset wins over both. */
kg_offset_decision_t kg_offset_plan(kg_offset_policy_t policy, const kg_partition_facts_t *facts);

/* True when PATTERN (one topic.whitelist entry) is a plain topic name: only the characters a topic name may
 * have (letters, digits, '.', '_', '-'), so that it can only mean that one topic. */
bool kg_topic_is_name(const char *pattern);
/* The name among NAMES[0..N) closest to NAME, when within a third of its length (at least 1, at most 3) edits;
 * else NULL. For "did you mean". */
const char *kg_topic_nearest(const char *name, const char *const *names, size_t n);
/* Calls FN for each topic.whitelist entry of FILTER that is a plain topic name (kg_topic_is_name). */
void kg_topic_filter_names(const kg_topic_filter_t *filter, void (*fn)(void *ctx, const char *name), void *ctx);

/* One partition's share of a run. */
typedef struct {
  char *topic; /* owned */
  int32_t partition;
  int64_t low;      /* first offset to pull */
  int64_t high;     /* pull up to here, exclusive: the broker's latest at planning time */
  int64_t earliest; /* the broker's range at planning time */
  int64_t latest;
  bool has_stored;
  int64_t stored;
  kg_start_reason_t reason;
  double est_size; /* the size estimate the packer uses */
} kg_workunit_t;

void kg_workunit_clear(kg_workunit_t *wu);

/* The name of a start reason as `kingest plan` and the JSON form show it ("previous", "bootstrap",
 * "move-to-latest", "reset", "new-partition", "recreated"), and back: false for an unknown name. */
const char *kg_start_reason_name(kg_start_reason_t reason);
bool kg_start_reason_parse(const char *name, kg_start_reason_t *out);

/* Appends WU's JSON form to OUT: {"topic", "partition", "low", "high", "range", "earliest", "latest", "stored" (null
 * when none), "start", "estimatedSize"}. EXACT writes the size so that it reads back bit for bit (the form a work
 * unit travels in between the phases of a run); otherwise with 6 significant digits, as `kingest plan --json`
 * shows it. */
void kg_workunit_json(kg_buf_t *out, const kg_workunit_t *wu, bool exact);

typedef struct kg_json kg_json_t;
/* Reads a work unit back from its JSON form V into *WU (its topic a new string: kg_workunit_clear frees it).
 * KG_EINVAL names WHAT and the member that is missing or wrong; *WU is then cleared. */
int kg_workunit_from_json(const kg_json_t *v, const char *what, kg_workunit_t *wu, char *errbuf);

#endif
