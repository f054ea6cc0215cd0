/* bench_plan.c: how long planning takes on synthetic input, without a broker: topic selection, stored
 * offset lookup, offset decisions, size estimation and packing, for P partitions (one work unit each).
 * Prints one line per step and case. Used by scripts/bench-plan; not a test (nothing is asserted). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "estimator.h"
#include "log.h"
#include "packer.h"
#include "state.h"
#include "topics.h"
#include "workunit.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(size_t topics, size_t per_topic, int n, kg_packer_type_t packer, kg_estimator_t estimator) {
  size_t count = topics * per_topic;
  char **names = kg_xcalloc(topics, sizeof(char *));
  for (size_t t = 0; t < topics; t++)
    names[t] = kg_xasprintf("events.topic-%05zu", t);
  /* Stored state for 9 of 10 partitions, sorted as the store returns it. */
  kg_partition_state_t *stored = kg_xcalloc(count, sizeof *stored);
  size_t nstored = 0;
  srand(7);
  for (size_t t = 0; t < topics; t++)
    for (size_t p = 0; p < per_topic; p++) {
      if (p % 10 == 9) continue;
      kg_partition_state_t *s = &stored[nstored++];
      s->topic = names[t];
      s->partition = (int32_t)p;
      s->next_offset = 1000 + (int64_t)(rand() % 1000);
      s->has_stats = true;
      s->records_pulled = 100 + rand() % 10000;
      s->avg_record_millis = 0.001 + (double)(rand() % 1000) / 100.0;
      s->avg_record_size = 50 + rand() % 2000;
    }
  double t0 = now_s();
  char err[KG_ERRLEN];
  kg_topic_filter_t *filter = NULL;
  kg_topic_filter_new("events\\..*", "events\\.topic-0000[0-4]", &filter, err);
  kg_workunit_t *units = kg_xcalloc(count, sizeof *units);
  size_t n_units = 0;
  for (size_t t = 0; t < topics; t++) {
    if (!kg_topic_filter_match(filter, names[t])) continue;
    for (size_t p = 0; p < per_topic; p++) {
      const kg_partition_state_t *prev = kg_state_find(stored, nstored, names[t], (int32_t)p);
      int64_t earliest = 500, latest = 2000 + (int64_t)(rand() % 100000);
      kg_offset_decision_t d = kg_offset_decide(KG_BOOTSTRAP_EARLIEST, KG_RESET_NEAREST, false, prev != NULL,
                                                prev ? prev->next_offset : 0, earliest, latest);
      if (!d.pull) continue;
      kg_workunit_t *wu = &units[n_units++];
      wu->topic = names[t];
      wu->partition = (int32_t)p;
      wu->low = d.low;
      wu->high = latest;
    }
  }
  double t1 = now_s();
  kg_estimator_options_t c = {.type = estimator};
  kg_estimate_sizes(&c, units, n_units, stored, nstored, err);
  double t2 = now_s();
  size_t ngroups = 0;
  kg_group_t *groups = kg_pack(units, n_units, n, packer, 3.0, &ngroups);
  double t3 = now_s();
  double min = 0, max = 0;
  for (size_t g = 0; g < ngroups; g++) {
    if (g == 0 || groups[g].load < min) min = groups[g].load;
    if (g == 0 || groups[g].load > max) max = groups[g].load;
  }
  printf("%8zu partitions %5zu topics N=%-5d %-12s %-15s  work units %8.3f s  estimate %8.3f s  pack %8.3f s  "
         "total %8.3f s  tasks %5zu  spread %6.2f%%\n",
         count, topics, n, packer == KG_PACKER_BI_LEVEL ? "BI_LEVEL" : "SINGLE_LEVEL",
         estimator == KG_ESTIMATOR_AVG_RECORD_SIZE ? "AVG_RECORD_SIZE" : "AVG_RECORD_TIME", t1 - t0, t2 - t1, t3 - t2,
         t3 - t0, ngroups, max > 0 ? (max - min) / max * 100 : 0.0);
  kg_groups_free(groups, ngroups);
  kg_topic_filter_destroy(filter);
  free(units);
  free(stored);
  for (size_t t = 0; t < topics; t++)
    free(names[t]);
  free(names);
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  for (int packer = 0; packer < 2; packer++) {
    run(100, 100, 100, (kg_packer_type_t)packer, KG_ESTIMATOR_AVG_RECORD_TIME);  /* 10,000 partitions */
    run(1000, 100, 100, (kg_packer_type_t)packer, KG_ESTIMATOR_AVG_RECORD_TIME); /* 100,000 work units */
    run(1000, 100, 1000, (kg_packer_type_t)packer, KG_ESTIMATOR_AVG_RECORD_SIZE);
    run(10, 10000, 100, (kg_packer_type_t)packer, KG_ESTIMATOR_AVG_RECORD_TIME); /* few wide topics */
  }
  return 0;
}
