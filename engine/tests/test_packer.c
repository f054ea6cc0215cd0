/* test_packer.c: the packers on hand-worked cases and on random inputs checked against their invariants
 * and a straightforward reference worst-fit-decreasing. */
#include <math.h>
#include <stdlib.h>

#include "log.h"
#include "packer.h"
#include "test.h"

static kg_workunit_t wu(const char *topic, int32_t p, int64_t range, double size) {
  kg_workunit_t u = {0};
  u.topic = (char *)topic;
  u.partition = p;
  u.low = 0;
  u.high = range;
  u.est_size = size;
  return u;
}

/* Which group holds unit U, or -1; counts how many groups hold it into *TIMES. */
static int group_of(const kg_group_t *groups, size_t ng, const kg_workunit_t *u, int *times) {
  int found = -1;
  *times = 0;
  for (size_t g = 0; g < ng; g++)
    for (size_t i = 0; i < groups[g].count; i++)
      if (groups[g].units[i] == u) {
        found = (int)g;
        (*times)++;
      }
  return found;
}

static void test_item_load(void) {
  CHECK(fabs(kg_pack_item_load(100, 1) - 100 * log10(2)) < 1e-9);
  CHECK(fabs(kg_pack_item_load(100, 10) - 100) < 1e-9);
  CHECK(fabs(kg_pack_item_load(0, 1) - 0.01 * log10(2)) < 1e-12);
}

static void test_single_level_by_hand(void) {
  /* Sizes 10, 8, 5, 4, 3 into 2 groups, largest first into the lightest: 10 | 8, then 5 joins 8 (13),
   * 4 joins 10 (14), 3 joins the 13: {10, 4} and {8, 5, 3}.
   * Loads scale every single-partition item by log10(2), which keeps the order. */
  kg_workunit_t u[] = {wu("a", 0, 10, 10), wu("a", 1, 8, 8), wu("b", 0, 5, 5), wu("b", 1, 4, 4), wu("c", 0, 3, 3)};
  size_t ng = 0;
  kg_group_t *g = kg_pack(u, 5, 2, KG_PACKER_SINGLE_LEVEL, 3, &ng);
  CHECK_INT(ng, 2);
  int t;
  CHECK_INT(group_of(g, ng, &u[0], &t), group_of(g, ng, &u[3], &t));
  CHECK_INT(group_of(g, ng, &u[1], &t), group_of(g, ng, &u[4], &t));
  CHECK_INT(group_of(g, ng, &u[1], &t), group_of(g, ng, &u[2], &t));
  CHECK(group_of(g, ng, &u[0], &t) != group_of(g, ng, &u[1], &t));
  kg_groups_free(g, ng);

  /* A topic's empty units travel together as one item. */
  kg_workunit_t e[] = {wu("a", 0, 0, 0), wu("a", 1, 0, 0), wu("a", 2, 0, 0), wu("b", 0, 9, 9), wu("b", 1, 0, 0)};
  g = kg_pack(e, 5, 4, KG_PACKER_SINGLE_LEVEL, 3, &ng);
  CHECK_INT(ng, 3); /* {a0,a1,a2}, {b0}, {b1} */
  int a0 = group_of(g, ng, &e[0], &t);
  CHECK_INT(a0, group_of(g, ng, &e[1], &t));
  CHECK_INT(a0, group_of(g, ng, &e[2], &t));
  CHECK(group_of(g, ng, &e[3], &t) != group_of(g, ng, &e[4], &t));
  kg_groups_free(g, ng);

  /* More groups than units: one per unit, none empty. */
  g = kg_pack(u, 2, 8, KG_PACKER_SINGLE_LEVEL, 3, &ng);
  CHECK_INT(ng, 2);
  kg_groups_free(g, ng);
  g = kg_pack(u, 0, 8, KG_PACKER_SINGLE_LEVEL, 3, &ng);
  CHECK_INT(ng, 0);
}

static void test_bi_level_by_hand(void) {
  /* Total 60, N = 2, factor 3: capacity 10. Topic a (6, 5, 4, 3 = 18) best-fit-decreasing: {6, 4} and
   * {5, 3}. Topic b (2, 1 = 3) is below the capacity: one group. Topic c holds 39 in one unit: its own. */
  kg_workunit_t u[] = {wu("a", 0, 6, 6), wu("a", 1, 5, 5), wu("a", 2, 4, 4),  wu("a", 3, 3, 3),
                       wu("b", 0, 2, 2), wu("b", 1, 1, 1), wu("c", 0, 39, 39)};
  size_t np = 0;
  kg_group_t *pre = kg_pack_pre_group(u, 7, 10, &np);
  CHECK_INT(np, 4);
  int found[7] = {0};
  for (size_t g = 0; g < np; g++) {
    double size = 0;
    for (size_t i = 0; i < pre[g].count; i++) {
      found[pre[g].units[i] - u]++;
      size += pre[g].units[i]->est_size;
      CHECK_STR(pre[g].units[i]->topic, pre[g].units[0]->topic);
    }
    if (!strcmp(pre[g].units[0]->topic, "a")) CHECK(size == 10 || size == 8);
    if (!strcmp(pre[g].units[0]->topic, "a") && size == 10)
      CHECK((pre[g].units[0] == &u[0] && pre[g].units[1] == &u[2]));
    if (!strcmp(pre[g].units[0]->topic, "b")) CHECK_INT(pre[g].count, 2);
  }
  for (int i = 0; i < 7; i++)
    CHECK_INT(found[i], 1);
  kg_groups_free(pre, np);

  size_t ng = 0;
  kg_group_t *g = kg_pack(u, 7, 2, KG_PACKER_BI_LEVEL, 3, &ng);
  CHECK_INT(ng, 2);
  int t;
  /* c alone is the heaviest item and takes one task; a's two groups and b land in the other. */
  int gc = group_of(g, ng, &u[6], &t);
  CHECK_INT(g[gc].count, 1);
  kg_groups_free(g, ng);
}

/* A straightforward worst-fit-decreasing over single-unit items, to compare with. */
static void reference_wfd(kg_workunit_t *u, size_t n, int ngroups, int *assign) {
  size_t *order = kg_xmalloc(n * sizeof *order);
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  for (size_t i = 0; i < n; i++) /* selection sort: by load desc, then topic, partition */
    for (size_t j = i + 1; j < n; j++) {
      kg_workunit_t *a = &u[order[i]], *b = &u[order[j]];
      double la = kg_pack_item_load(a->est_size, 1), lb = kg_pack_item_load(b->est_size, 1);
      int c = strcmp(a->topic, b->topic);
      bool swap = lb > la || (lb == la && (c > 0 || (c == 0 && b->partition < a->partition)));
      if (swap) {
        size_t tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
      }
    }
  double *load = kg_xcalloc((size_t)ngroups, sizeof(double));
  for (size_t k = 0; k < n; k++) {
    int best = 0;
    for (int g = 1; g < ngroups; g++)
      if (load[g] < load[best]) best = g;
    assign[order[k]] = best;
    load[best] += kg_pack_item_load(u[order[k]].est_size, 1);
  }
  free(load);
  free(order);
}

static void test_random(void) {
  static const char *topics[] = {"t0", "t1", "t2", "t3", "t4"};
  srand(12345);
  for (int round = 0; round < 300; round++) {
    size_t n = (size_t)(rand() % 60) + 1;
    int ngroups = rand() % 12 + 1;
    kg_workunit_t *u = kg_xcalloc(n, sizeof *u);
    for (size_t i = 0; i < n; i++) {
      int64_t range = rand() % 4 == 0 ? 0 : rand() % 10000 + 1; /* some empty */
      u[i] = wu(topics[rand() % 5], (int32_t)i, range, (double)range * (rand() % 5 + 1) / 3.0);
    }
    for (int type = 0; type < 2; type++) {
      size_t ng = 0;
      kg_group_t *g = kg_pack(u, n, ngroups, (kg_packer_type_t)type, 3, &ng);
      CHECK(ng >= 1 && ng <= (size_t)ngroups);
      for (size_t k = 0; k < ng; k++)
        CHECK(g[k].count > 0); /* no group empty */
      for (size_t i = 0; i < n; i++) {
        int times;
        group_of(g, ng, &u[i], &times);
        CHECK_INT(times, 1); /* every unit in exactly one group */
      }
      kg_groups_free(g, ng);
    }
    /* Bi-level first-level groups hold one topic each, and stay within capacity unless alone. */
    double total = 0;
    for (size_t i = 0; i < n; i++)
      total += u[i].est_size;
    double capacity = total / (3.0 * ngroups);
    size_t np = 0;
    kg_group_t *pre = kg_pack_pre_group(u, n, capacity, &np);
    for (size_t k = 0; k < np; k++) {
      for (size_t i = 0; i < pre[k].count; i++)
        CHECK_STR(pre[k].units[i]->topic, pre[k].units[0]->topic);
      CHECK(pre[k].count == 1 || pre[k].size <= capacity + 1e-9);
    }
    kg_groups_free(pre, np);
    /* Without empty units, single-level equals the reference worst-fit-decreasing. */
    for (size_t i = 0; i < n; i++)
      if (u[i].high == 0) {
        u[i].high = 1;
        u[i].est_size = 0.5;
      }
    int *assign = kg_xcalloc(n, sizeof(int));
    reference_wfd(u, n, ngroups, assign);
    size_t ng = 0;
    kg_group_t *g = kg_pack(u, n, ngroups, KG_PACKER_SINGLE_LEVEL, 3, &ng);
    /* Same partition of units into groups (group numbering may differ after empty groups are dropped). */
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++) {
        int ti, tj;
        bool same = group_of(g, ng, &u[i], &ti) == group_of(g, ng, &u[j], &tj);
        CHECK_INT(same, assign[i] == assign[j]);
      }
    kg_groups_free(g, ng);
    free(assign);
    free(u);
  }
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  test_item_load();
  test_single_level_by_hand();
  test_bi_level_by_hand();
  test_random();
  TEST_MAIN_END();
}
