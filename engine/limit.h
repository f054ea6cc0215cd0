/* limit.h: the extract limits of a task (extract.limit.*): a time or count budget shared fairly between the
 * task's partitions, and a rate. Each partition with records gets an equal share of what is left when it starts,
 * so one slow partition cannot starve the ones after it, and what one leaves unused goes to the rest
 * (docs/behaviour.md, section 4). */
#ifndef KG_LIMIT_H
#define KG_LIMIT_H

#include "config.h"
#include "workunit.h"

/* What the limits allow one work unit. */
typedef struct {
  int64_t deadline_ms; /* monotonic ms when it must stop; 0 for none */
  int64_t records;     /* how many records it may pull; -1 for no limit */
} kg_allowance_t;

/* A task's limits as it runs. */
typedef struct {
  const kg_config_t *config;
  int64_t started_ms;   /* monotonic start of the task, for the rate */
  int64_t deadline_ms;  /* the task's time limit, 0 for none */
  int64_t records_left; /* the task's count limit still unused, -1 for none */
  size_t pending;       /* units with records to pull not started yet */
} kg_limits_t;

/* Starts the limits of a task of N UNITS at STARTED_MS. */
void kg_limits_init(kg_limits_t *limits, const kg_config_t *config, kg_workunit_t *const *units, size_t n,
                    int64_t started_ms);
/* The share of the next unit, WU (units are taken in order); call kg_limits_used when it is done. */
kg_allowance_t kg_limits_allow(kg_limits_t *limits, const kg_workunit_t *wu);
/* The unit just done pulled RECORDS. */
void kg_limits_used(kg_limits_t *limits, int64_t records);
/* The most records the task can pull: RANGE (the sum of its ranges), or its count limit when lower. */
int64_t kg_limits_most(const kg_limits_t *limits, int64_t range);

/* How many records the next batch of a unit may hold: WANT (what its range still needs), cut to what its count
 * share has left after PULLED, and, under a deadline, to what the script can take before it at the pace it has
 * kept since the unit started at UNIT_START_MS (one record to begin with): the deadline is checked between
 * batches, and a whole batch of a slow script would otherwise run far past it. */
int64_t kg_limits_batch(const kg_allowance_t *allow, int64_t want, int64_t pulled, int64_t unit_start_ms);

/* Sleeps until the task's record rate (TASK_RECORDS since it started) is back under extract.limit.rate. */
void kg_limits_throttle(const kg_limits_t *limits, int64_t task_records);

#endif
