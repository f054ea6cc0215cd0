/* packer.h: packing work units into at most N groups (tasks) by estimated size. */
#ifndef KG_PACKER_H
#define KG_PACKER_H

#include "workunit.h"

typedef struct {
  kg_workunit_t **units; /* borrowed pointers, owned array */
  size_t count;
  double load;
} kg_group_t;

/* Worst-fit-decreasing: units sorted by est_size, largest first, each into the currently lightest of N
 * groups; empty groups dropped. Within a group units are sorted by topic and partition, so that a task
 * pulls a topic's partitions together. Returns the number of groups in *NGROUPS. */
kg_group_t *kg_pack_worst_fit(kg_workunit_t *units, size_t count, int n, size_t *ngroups);
void kg_groups_free(kg_group_t *groups, size_t ngroups);

#endif
