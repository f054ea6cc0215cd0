/* source.h: the discover phase, Gobblin's KafkaSource: the broker's topics selected by topic.whitelist and
 * topic.blacklist, one work unit per partition with its low watermark (where the stored offset, the offset
 * policies and the evidence of new partitions and recreated logs say it starts) and its high watermark (the
 * latest offset now), and each unit's estimated size (docs/behaviour.md, sections 2 and 3). */
#ifndef KG_SOURCE_H
#define KG_SOURCE_H

#include "config.h"
#include "state.h"
#include "workunit.h"

/* What the discover phase found. */
typedef struct {
  kg_workunit_t *units; /* owned; free with kg_plan_clear */
  size_t nunits;
  int64_t offset_resets; /* partitions reset by reset.on.offset.out.of.range (kafka.offset.resets) */
  int64_t duration_ms;   /* how long it took (the WorkUnitsCreationTimer event) */
  size_t nunanswered;    /* selected partitions the brokers gave no offsets for (no leader, say): not pulled */
  char *unanswered;      /* the first of them, "topic:partition (error)" joined by ", "; owned, NULL when none */
} kg_plan_t;

/* Makes the work units of a run: asks the brokers for their topics and partition offsets (errors that may pass
 * are retried until kafka.metadata.timeout.ms), reads the stored offsets from STATE (NULL: a job that never ran),
 * and logs each unit and each decision worth a WARN. Reads only: nothing is stored. Returns KG_OK with *PLAN, or
 * an error (brokers unreachable, topic.missing.policy=fail, the CUSTOM estimator failing) with PLAN empty. */
int kg_source_plan(const kg_config_t *config, kg_state_t *state, kg_plan_t *plan, char *errbuf);
void kg_plan_clear(kg_plan_t *plan);

#endif
