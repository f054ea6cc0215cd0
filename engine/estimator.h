/* estimator.h: work-unit size estimators (kafka.workunit.size.estimator.type). */
#ifndef KG_ESTIMATOR_H
#define KG_ESTIMATOR_H

#include "config.h"
#include "state.h"
#include "workunit.h"

/* What the estimator reads of the job: kafka.workunit.size.estimator.type, and for CUSTOM the job file (borrowed)
 * and whether it is a job.lua. */
typedef struct {
  kg_estimator_t type;
  const char *job_file;
  bool job_is_lua;
} kg_estimator_options_t;

/* CONFIG's estimator options (its strings borrowed from CONFIG). */
kg_estimator_options_t kg_estimator_of(const kg_config_t *config);

/* Sets est_size of each of the N UNITS from the stored statistics of earlier runs (STORED, NSTORED):
 * AVG_RECORD_TIME (range x per-topic geometric mean of the average ms per record), AVG_RECORD_SIZE (range x
 * the partition's average record size, default 1024), or CUSTOM (the job.lua's estimateSize function).
 * Fails only for CUSTOM, with a message naming the partition, or the job when it has no estimateSize (with N 0,
 * that check alone). */
int kg_estimate_sizes(const kg_estimator_options_t *options, kg_workunit_t *units, size_t n,
                      const kg_partition_state_t *stored, size_t nstored, char *errbuf);

/* The per-topic record-time estimate of AVG_RECORD_TIME, exposed for tests: geometric mean of MILLIS (N
 * values, each at least 0.01); 0 when N is 0. */
double kg_geometric_mean(const double *millis, size_t n);

#endif
