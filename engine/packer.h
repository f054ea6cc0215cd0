/* packer.h: packing work units into at most N groups (tasks) by estimated size (docs/behaviour.md, section 3). */
#ifndef KG_PACKER_H
#define KG_PACKER_H

#include "workunit.h"

typedef enum { KG_PACKER_SINGLE_LEVEL = 0, KG_PACKER_BI_LEVEL } kg_packer_type_t;

/* A set of work units packed together. */
typedef struct {
  kg_workunit_t **units; /* borrowed pointers; the array is the group's */
  size_t count;
  double size; /* sum of the units' est_size */
  double load; /* what the packer balances: the sum of its items' loads */
} kg_group_t;

/* The load of an item of SIZE over NPARTITIONS partitions: max(size, 0.01) x log10(max(npartitions, 2)),
 * so that an item over many partitions weighs its per-partition overhead. */
double kg_pack_item_load(double size, size_t npartitions);

/* Worst-fit-decreasing: ITEMS sorted by load, largest first, each into the lightest of N groups; empty
 * groups dropped. Takes the items' unit arrays over. Returns the groups (count in *NGROUPS). */
kg_group_t *kg_pack_worst_fit(kg_group_t *items, size_t nitems, int n, size_t *ngroups);

/* BI_LEVEL's first level, per topic: best-fit-decreasing into groups of CAPACITY (a topic whose total is
 * below it is one group; a unit above it is a group of its own). Returns the groups (count in *NGROUPS). */
kg_group_t *kg_pack_pre_group(kg_workunit_t *units, size_t count, double capacity, size_t *ngroups);

/* Packs COUNT units into at most N groups with TYPE (FACTOR is workunit.pre.grouping.size.factor for
 * BI_LEVEL). SINGLE_LEVEL first merges each topic's empty units into one item. Within a group, units are
 * sorted by topic and partition. Returns the groups (count in *NGROUPS). */
kg_group_t *kg_pack(kg_workunit_t *units, size_t count, int n, kg_packer_type_t type, double factor, size_t *ngroups);
void kg_groups_free(kg_group_t *groups, size_t ngroups);

/* Logs each group's load and partitions, then the min and max load and their spread in percent. */
void kg_pack_log(const kg_group_t *groups, size_t ngroups, const char *const *names);

#endif
