/* offsets.h: the offset decision: where a partition starts (its low watermark), from its stored offset, the
 * broker's range and the offset policies; the reasons a start can have, and their names. */
#ifndef KG_OFFSETS_H
#define KG_OFFSETS_H

#include "config.h"

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

/* The name of a start reason as `kingest plan` and the JSON form show it ("previous", "bootstrap",
 * "move-to-latest", "reset", "new-partition", "recreated"), and back: false for an unknown name. */
const char *kg_start_reason_name(kg_start_reason_t reason);
bool kg_start_reason_parse(const char *name, kg_start_reason_t *out);

#endif
