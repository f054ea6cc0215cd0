/* workunit.h: topic selection, the offset decisions of a partition, and work units with watermarks. */
#ifndef KG_WORKUNIT_H
#define KG_WORKUNIT_H

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
} kg_start_reason_t;

/* The decision for one partition. */
typedef struct {
  bool pull;   /* false: no work unit (bootstrap skip, reset skip) */
  int64_t low; /* the low watermark when pull */
  kg_start_reason_t reason;
} kg_offset_decision_t;

/* Decides where a partition starts, given its stored offset (HAS_STORED) and the broker's range
 * [EARLIEST, LATEST]. Pure: the rules of BEHAVIOUR.md section 2. */
kg_offset_decision_t kg_offset_decide(kg_bootstrap_t bootstrap, kg_reset_t reset, bool move_to_latest, bool has_stored,
                                      int64_t stored, int64_t earliest, int64_t latest);

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

#endif
