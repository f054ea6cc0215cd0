/* packer.c: single-level and bi-level packing of work units into tasks.
 *
 * Items are sets of work units. SINGLE_LEVEL makes one item per non-empty unit and one per topic for all
 * its empty units, then runs worst-fit-decreasing into N groups. BI_LEVEL first packs each topic's units
 * best-fit-decreasing into groups of capacity total/(factor x N), so that a task reads several partitions
 * of one topic into one file, then runs worst-fit-decreasing over those groups. */
#include "packer.h"

#include "buf.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KG_EPS 0.01

double kg_pack_item_load(double size, size_t npartitions) {
  return (size > KG_EPS ? size : KG_EPS) * log10((double)(npartitions > 2 ? npartitions : 2));
}

static int cmp_unit(const void *a, const void *b) {
  const kg_workunit_t *x = *(kg_workunit_t *const *)a, *y = *(kg_workunit_t *const *)b;
  int c = strcmp(x->topic, y->topic);
  return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static int cmp_unit_size_desc(const void *a, const void *b) {
  const kg_workunit_t *x = *(kg_workunit_t *const *)a, *y = *(kg_workunit_t *const *)b;
  if (x->est_size != y->est_size) return x->est_size < y->est_size ? 1 : -1;
  return cmp_unit(a, b);
}

/* Items by load, largest first; ties by their first unit, so that packing is deterministic. */
static int cmp_item_load_desc(const void *a, const void *b) {
  const kg_group_t *x = a, *y = b;
  if (x->load != y->load) return x->load < y->load ? 1 : -1;
  return cmp_unit(&x->units[0], &y->units[0]);
}

static void group_add(kg_group_t *g, kg_workunit_t *wu) {
  if ((g->count & (g->count - 1)) == 0) /* grow at powers of two: 0, 1, 2, 4, ... */
    g->units = kg_xrealloc(g->units, (g->count ? g->count * 2 : 1) * sizeof(kg_workunit_t *));
  g->units[g->count++] = wu;
  g->size += wu->est_size;
}

static bool lighter(const kg_group_t *groups, size_t a, size_t b) {
  return groups[a].load < groups[b].load || (groups[a].load == groups[b].load && a < b);
}

kg_group_t *kg_pack_worst_fit(kg_group_t *items, size_t nitems, int n, size_t *ngroups) {
  *ngroups = 0;
  if (nitems == 0 || n < 1) return NULL;
  qsort(items, nitems, sizeof *items, cmp_item_load_desc);
  size_t ng = (size_t)n < nitems ? (size_t)n : nitems;
  kg_group_t *groups = kg_xcalloc(ng, sizeof *groups);
  /* A min-heap of group indexes by load (ties: lower index first), so each item finds the lightest group in
   * O(log N): planning 100,000 work units into 1,000 tasks stays well under a second. */
  size_t *heap = kg_xmalloc(ng * sizeof *heap);
  for (size_t g = 0; g < ng; g++)
    heap[g] = g;
  for (size_t i = 0; i < nitems; i++) {
    kg_group_t *grp = &groups[heap[0]];
    for (size_t u = 0; u < items[i].count; u++)
      group_add(grp, items[i].units[u]);
    grp->load += items[i].load;
    free(items[i].units);
    items[i].units = NULL;
    /* Sift the root down. */
    size_t pos = 0;
    for (;;) {
      size_t l = 2 * pos + 1, r = l + 1, m = pos;
      if (l < ng && lighter(groups, heap[l], heap[m])) m = l;
      if (r < ng && lighter(groups, heap[r], heap[m])) m = r;
      if (m == pos) break;
      size_t tmp = heap[pos];
      heap[pos] = heap[m];
      heap[m] = tmp;
      pos = m;
    }
  }
  free(heap);
  size_t kept = 0;
  for (size_t g = 0; g < ng; g++) {
    if (groups[g].count == 0) continue;
    qsort(groups[g].units, groups[g].count, sizeof(kg_workunit_t *), cmp_unit);
    groups[kept++] = groups[g];
  }
  *ngroups = kept;
  return groups;
}

/* The units of TOPIC from SORTED[*pos], advancing *pos; returns how many. */
static size_t topic_run(kg_workunit_t **sorted, size_t count, size_t pos) {
  size_t end = pos;
  while (end < count && !strcmp(sorted[end]->topic, sorted[pos]->topic))
    end++;
  return end - pos;
}

kg_group_t *kg_pack_pre_group(kg_workunit_t *units, size_t count, double capacity, size_t *ngroups) {
  kg_workunit_t **sorted = kg_xmalloc((count ? count : 1) * sizeof *sorted);
  for (size_t i = 0; i < count; i++)
    sorted[i] = &units[i];
  qsort(sorted, count, sizeof *sorted, cmp_unit);
  kg_group_t *groups = NULL;
  size_t n = 0;
  for (size_t pos = 0; pos < count;) {
    size_t len = topic_run(sorted, count, pos);
    kg_workunit_t **topic = &sorted[pos];
    double total = 0;
    for (size_t i = 0; i < len; i++)
      total += topic[i]->est_size;
    size_t first = n;
    if (total <= capacity) {
      groups = kg_xrealloc(groups, (n + 1) * sizeof *groups);
      memset(&groups[n], 0, sizeof groups[n]);
      for (size_t i = 0; i < len; i++)
        group_add(&groups[n], topic[i]);
      n++;
    } else {
      /* Best-fit-decreasing: each unit into the fullest group of this topic it still fits in. */
      qsort(topic, len, sizeof *topic, cmp_unit_size_desc);
      for (size_t i = 0; i < len; i++) {
        size_t best = n;
        if (topic[i]->est_size <= capacity) {
          for (size_t g = first; g < n; g++)
            if (groups[g].size + topic[i]->est_size <= capacity && (best == n || groups[g].size > groups[best].size))
              best = g;
        }
        if (best == n) {
          groups = kg_xrealloc(groups, (n + 1) * sizeof *groups);
          memset(&groups[n], 0, sizeof groups[n]);
          n++;
        }
        group_add(&groups[best], topic[i]);
      }
    }
    pos += len;
  }
  for (size_t g = 0; g < n; g++) {
    qsort(groups[g].units, groups[g].count, sizeof(kg_workunit_t *), cmp_unit);
    groups[g].load = kg_pack_item_load(groups[g].size, groups[g].count);
  }
  free(sorted);
  *ngroups = n;
  return groups;
}

/* SINGLE_LEVEL's items: one per non-empty unit, one per topic for its empty units. */
static kg_group_t *single_level_items(kg_workunit_t *units, size_t count, size_t *nitems) {
  kg_workunit_t **sorted = kg_xmalloc((count ? count : 1) * sizeof *sorted);
  for (size_t i = 0; i < count; i++)
    sorted[i] = &units[i];
  qsort(sorted, count, sizeof *sorted, cmp_unit);
  kg_group_t *items = kg_xcalloc(count ? count : 1, sizeof *items);
  size_t n = 0;
  for (size_t pos = 0; pos < count;) {
    size_t len = topic_run(sorted, count, pos);
    kg_group_t *empties = NULL;
    for (size_t i = pos; i < pos + len; i++) {
      kg_workunit_t *wu = sorted[i];
      if (wu->high <= wu->low) {
        if (!empties) empties = &items[n++];
        group_add(empties, wu);
      } else {
        group_add(&items[n++], wu);
      }
    }
    pos += len;
  }
  for (size_t i = 0; i < n; i++)
    items[i].load = kg_pack_item_load(items[i].size, items[i].count);
  free(sorted);
  *nitems = n;
  return items;
}

kg_group_t *kg_pack(kg_workunit_t *units, size_t count, int n, kg_packer_type_t type, double factor, size_t *ngroups) {
  size_t nitems = 0;
  kg_group_t *items;
  if (type == KG_PACKER_BI_LEVEL) {
    double total = 0;
    for (size_t i = 0; i < count; i++)
      total += units[i].est_size;
    double capacity = total / (factor * (n > 0 ? n : 1));
    items = kg_pack_pre_group(units, count, capacity, &nitems);
  } else {
    items = single_level_items(units, count, &nitems);
  }
  kg_group_t *groups = kg_pack_worst_fit(items, nitems, n, ngroups);
  free(items);
  return groups;
}

void kg_groups_free(kg_group_t *groups, size_t ngroups) {
  for (size_t i = 0; i < ngroups; i++)
    free(groups[i].units);
  free(groups);
}

void kg_pack_log(const kg_group_t *groups, size_t ngroups, const char *const *names) {
  double min = 0, max = 0;
  for (size_t g = 0; g < ngroups; g++) {
    kg_buf_t parts = {0};
    for (size_t u = 0; u < groups[g].count && u < 20; u++)
      kg_buf_appendf(&parts, "%s%s:%d", u ? ", " : "", groups[g].units[u]->topic, groups[g].units[u]->partition);
    if (groups[g].count > 20) kg_buf_appendf(&parts, ", ... (%zu more)", groups[g].count - 20);
    KG_INFO("Task %s: %zu work units, estimated size %.2f, load %.2f: %s", names[g], groups[g].count, groups[g].size,
            groups[g].load, parts.data ? parts.data : "");
    kg_buf_free(&parts);
    if (g == 0 || groups[g].load < min) min = groups[g].load;
    if (g == 0 || groups[g].load > max) max = groups[g].load;
  }
  if (ngroups)
    KG_INFO("Min load of a task = %.2f; max load of a task = %.2f; spread = %.2f%%", min, max,
            max > 0 ? (max - min) / max * 100 : 0.0);
}
