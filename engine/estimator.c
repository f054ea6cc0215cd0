/* estimator.c: how big each work unit is expected to be, for the packer.
 *
 * AVG_RECORD_TIME: per topic, the geometric mean of its partitions' average milliseconds per record of
 * earlier runs; a topic without history gets the geometric mean over the topics that have some; no
 * history at all gives 1.0. AVG_RECORD_SIZE: the partition's average record size, 1024 bytes without
 * history. CUSTOM: a Lua function of the job file, estimateSize(workunit, history), called by the Lua bridge
 * in the job state. */
#include "estimator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua_bridge.h"

#define KG_MIN_RECORD_MILLIS   0.01
#define KG_DEFAULT_RECORD_SIZE 1024.0

double kg_geometric_mean(const double *millis, size_t n) {
  if (n == 0) return 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += log(millis[i] < KG_MIN_RECORD_MILLIS ? KG_MIN_RECORD_MILLIS : millis[i]);
  return exp(sum / (double)n);
}

static double range_of(const kg_workunit_t *wu) { return (double)(wu->high - wu->low); }

/* Per topic with history, the geometric mean of its partitions' stored ms per record. STORED is sorted by
 * topic, so each topic is one run of entries. */
typedef struct {
  const char *topic;
  double millis;
} kg_topic_estimate_t;

static kg_topic_estimate_t *topic_estimates(const kg_partition_state_t *stored, size_t nstored, size_t *count) {
  kg_topic_estimate_t *out = kg_xmalloc((nstored ? nstored : 1) * sizeof *out);
  double *v = kg_xmalloc((nstored ? nstored : 1) * sizeof(double));
  size_t n = 0;
  for (size_t i = 0; i < nstored;) {
    size_t j = i, k = 0;
    for (; j < nstored && !strcmp(stored[j].topic, stored[i].topic); j++)
      if (stored[j].has_stats && stored[j].records_pulled > 0) v[k++] = stored[j].avg_record_millis;
    if (k) {
      out[n].topic = stored[i].topic;
      out[n++].millis = kg_geometric_mean(v, k);
    }
    i = j;
  }
  free(v);
  *count = n;
  return out;
}

static double topic_millis(const kg_topic_estimate_t *est, size_t n, const char *topic, double fallback) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(est[mid].topic, topic);
    if (c == 0) return est[mid].millis;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return fallback;
}

static void estimate_by_time(kg_workunit_t *units, size_t n, const kg_partition_state_t *stored, size_t nstored) {
  size_t nest = 0;
  kg_topic_estimate_t *est = topic_estimates(stored, nstored, &nest);
  double *means = kg_xmalloc((nest ? nest : 1) * sizeof(double));
  for (size_t i = 0; i < nest; i++)
    means[i] = est[i].millis;
  double fallback = nest ? kg_geometric_mean(means, nest) : 1.0;
  free(means);
  const char *topic = NULL;
  double millis = fallback;
  for (size_t i = 0; i < n; i++) {
    if (!topic || strcmp(topic, units[i].topic)) {
      topic = units[i].topic;
      millis = topic_millis(est, nest, topic, fallback);
    }
    units[i].est_size = range_of(&units[i]) * millis;
  }
  free(est);
}

static void estimate_by_size(kg_workunit_t *units, size_t n, const kg_partition_state_t *stored, size_t nstored) {
  for (size_t i = 0; i < n; i++) {
    const kg_partition_state_t *p = kg_state_find(stored, nstored, units[i].topic, units[i].partition);
    double size = p && p->has_stats && p->records_pulled > 0 && p->avg_record_size > 0 ? p->avg_record_size
                                                                                       : KG_DEFAULT_RECORD_SIZE;
    units[i].est_size = range_of(&units[i]) * size;
  }
}

static int estimate_custom(const kg_estimator_options_t *c, kg_workunit_t *units, size_t n,
                           const kg_partition_state_t *stored, size_t nstored, char *errbuf) {
  if (!c->job_is_lua)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: kafka.workunit.size.estimator.type=CUSTOM needs a job.lua with an estimateSize function",
                   c->job_file);
  kg_lua_estimate_t *given = kg_xcalloc(n ? n : 1, sizeof *given);
  double *sizes = kg_xmalloc((n ? n : 1) * sizeof *sizes);
  for (size_t i = 0; i < n; i++) {
    const kg_workunit_t *wu = &units[i];
    given[i] = (kg_lua_estimate_t){.topic = wu->topic,
                                   .partition = wu->partition,
                                   .low = wu->low,
                                   .high = wu->high,
                                   .earliest = wu->earliest,
                                   .latest = wu->latest};
    const kg_partition_state_t *p = kg_state_find(stored, nstored, wu->topic, wu->partition);
    if (p) {
      given[i].has_history = true;
      given[i].next_offset = p->next_offset;
      given[i].has_stats = p->has_stats;
      given[i].avg_record_millis = p->avg_record_millis;
      given[i].avg_record_size = p->avg_record_size;
      given[i].records_pulled = p->records_pulled;
    }
    sizes[i] = wu->est_size;
  }
  int rc = kg_lua_job_estimate(c->job_file, given, n, sizes, errbuf);
  for (size_t i = 0; i < n; i++)
    units[i].est_size = sizes[i];
  free(given);
  free(sizes);
  return rc;
}

kg_estimator_options_t kg_estimator_of(const kg_config_t *c) {
  return (kg_estimator_options_t){.type = c->estimator, .job_file = c->job_file, .job_is_lua = c->job_is_lua};
}

int kg_estimate_sizes(const kg_estimator_options_t *c, kg_workunit_t *units, size_t n,
                      const kg_partition_state_t *stored, size_t nstored, char *errbuf) {
  switch (c->type) {
  case KG_ESTIMATOR_AVG_RECORD_TIME: estimate_by_time(units, n, stored, nstored); return KG_OK;
  case KG_ESTIMATOR_AVG_RECORD_SIZE: estimate_by_size(units, n, stored, nstored); return KG_OK;
  case KG_ESTIMATOR_CUSTOM: return estimate_custom(c, units, n, stored, nstored, errbuf);
  }
  return KG_OK;
}
