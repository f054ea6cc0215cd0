/* packer.c: worst-fit-decreasing packing of work units into tasks. */
#include "packer.h"

#include <stdlib.h>
#include <string.h>

static int by_size_desc(const void *a, const void *b) {
  const kg_workunit_t *x = *(kg_workunit_t *const *)a, *y = *(kg_workunit_t *const *)b;
  if (x->est_size != y->est_size) return x->est_size < y->est_size ? 1 : -1;
  int c = strcmp(x->topic, y->topic);
  return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static int by_topic_partition(const void *a, const void *b) {
  const kg_workunit_t *x = *(kg_workunit_t *const *)a, *y = *(kg_workunit_t *const *)b;
  int c = strcmp(x->topic, y->topic);
  return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

kg_group_t *kg_pack_worst_fit(kg_workunit_t *units, size_t count, int n, size_t *ngroups) {
  *ngroups = 0;
  if (count == 0 || n < 1) return NULL;
  size_t ng = (size_t)n < count ? (size_t)n : count;
  kg_workunit_t **sorted = kg_xmalloc(count * sizeof *sorted);
  for (size_t i = 0; i < count; i++) sorted[i] = &units[i];
  qsort(sorted, count, sizeof *sorted, by_size_desc);
  kg_group_t *groups = kg_xcalloc(ng, sizeof *groups);
  for (size_t i = 0; i < ng; i++) groups[i].units = kg_xmalloc(count * sizeof(kg_workunit_t *));
  for (size_t i = 0; i < count; i++) {
    size_t lightest = 0;
    for (size_t g = 1; g < ng; g++)
      if (groups[g].load < groups[lightest].load) lightest = g;
    kg_group_t *grp = &groups[lightest];
    grp->units[grp->count++] = sorted[i];
    grp->load += sorted[i]->est_size > 0.01 ? sorted[i]->est_size : 0.01;
  }
  free(sorted);
  size_t kept = 0;
  for (size_t g = 0; g < ng; g++) {
    if (groups[g].count == 0) {
      free(groups[g].units);
      continue;
    }
    qsort(groups[g].units, groups[g].count, sizeof(kg_workunit_t *), by_topic_partition);
    groups[kept++] = groups[g];
  }
  *ngroups = kept;
  return groups;
}

void kg_groups_free(kg_group_t *groups, size_t ngroups) {
  for (size_t i = 0; i < ngroups; i++) free(groups[i].units);
  free(groups);
}
