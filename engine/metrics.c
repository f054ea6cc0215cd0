/* metrics.c: named counters and their JSON form. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"

void kg_metrics_add(kg_metrics_t *m, const char *name, double delta) {
  for (size_t i = 0; i < m->count; i++)
    if (!strcmp(m->names[i], name)) {
      m->values[i] += delta;
      return;
    }
  if (m->count == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 16;
    m->names = kg_xrealloc(m->names, m->cap * sizeof(char *));
    m->values = kg_xrealloc(m->values, m->cap * sizeof(double));
  }
  m->names[m->count] = kg_xstrdup(name);
  m->values[m->count++] = delta;
}

bool kg_metrics_is_engine(const char *name) {
  static const char *const engine[] = {
      KG_M_RECORDS_READ,   KG_M_RECORDS_FAILED,  KG_M_EXTRACT_TIME,      KG_M_DECODE_ERRORS,      KG_M_CONVERTER_IN,
      KG_M_CONVERTER_OUT,  KG_M_RECORDS_WRITTEN, KG_M_BYTES_WRITTEN,     KG_M_OFFSET_RESETS,      KG_M_QUARANTINED,
      KG_M_SCRIPT_SKIPPED, KG_M_RECORDS_SKIPPED, KG_M_REGISTRY_REQUESTS, KG_M_JOB_RECORDS_WRITTEN};
  for (size_t i = 0; i < sizeof engine / sizeof engine[0]; i++)
    if (!strcmp(name, engine[i])) return true;
  return false;
}

double kg_metrics_get(const kg_metrics_t *m, const char *name) {
  for (size_t i = 0; i < m->count; i++)
    if (!strcmp(m->names[i], name)) return m->values[i];
  return 0;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* A histogram's percentile (name.p50, .p75, .p95, .p99): cannot be combined from per-task values. */
static bool is_percentile(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && dot[1] == 'p' && dot[2] >= '0' && dot[2] <= '9';
}

static bool find_value(const kg_metrics_t *m, const char *name, double *out) {
  for (size_t i = 0; i < m->count; i++)
    if (!strcmp(m->names[i], name)) {
      *out = m->values[i];
      return true;
    }
  return false;
}

static void set_value(kg_metrics_t *m, const char *name, double v) {
  double old;
  if (find_value(m, name, &old))
    kg_metrics_add(m, name, v - old);
  else
    kg_metrics_add(m, name, v);
}

void kg_metrics_merge(kg_metrics_t *into, const kg_metrics_t *from) {
  /* Counts and rates add up; a histogram's min and max combine as such, its mean is weighted by the
   * counts, and its percentiles are left to the per-task lines. Means use the counts from before this merge. */
  kg_metrics_t before = {0};
  kg_metrics_merge_sum(&before, into);
  for (size_t i = 0; i < from->count; i++) {
    const char *name = from->names[i];
    double v = from->values[i], old = 0;
    bool had = find_value(&before, name, &old);
    if (is_percentile(name)) continue;
    if (ends_with(name, ".min") && had) {
      set_value(into, name, v < old ? v : old);
    } else if (ends_with(name, ".max") && had) {
      set_value(into, name, v > old ? v : old);
    } else if (ends_with(name, ".mean") && had) {
      char *count = kg_xasprintf("%.*s.count", (int)(strlen(name) - 5), name);
      double c_old = 0, c_new = 0;
      find_value(&before, count, &c_old);
      find_value(from, count, &c_new);
      set_value(into, name, c_old + c_new > 0 ? (old * c_old + v * c_new) / (c_old + c_new) : v);
      free(count);
    } else {
      kg_metrics_add(into, name, v);
    }
  }
  kg_metrics_free(&before);
}

void kg_metrics_merge_sum(kg_metrics_t *into, const kg_metrics_t *from) {
  for (size_t i = 0; i < from->count; i++)
    kg_metrics_add(into, from->names[i], from->values[i]);
}

void kg_metrics_free(kg_metrics_t *m) {
  for (size_t i = 0; i < m->count; i++)
    free(m->names[i]);
  free(m->names);
  free(m->values);
  memset(m, 0, sizeof *m);
}

void kg_metrics_json(const kg_metrics_t *m, kg_buf_t *out) {
  kg_buf_append(out, "{", 1);
  for (size_t i = 0; i < m->count; i++) {
    if (i) kg_buf_append(out, ",", 1);
    kg_json_string(out, m->names[i]);
    double v = m->values[i];
    if (v < 9e15 && v > -9e15 && v == (double)(long long)v) /* the range first: a larger cast is undefined */
      kg_buf_appendf(out, ":%lld", (long long)v);
    else
      kg_buf_appendf(out, ":%.6g", v);
  }
  kg_buf_append(out, "}", 1);
}

void kg_metrics_json_exact(const kg_metrics_t *m, kg_buf_t *out) {
  kg_buf_append(out, "{", 1);
  for (size_t i = 0; i < m->count; i++) {
    if (i) kg_buf_append(out, ",", 1);
    kg_json_string(out, m->names[i]);
    kg_buf_append(out, ":", 1);
    kg_json_double(out, m->values[i]);
  }
  kg_buf_append(out, "}", 1);
}

int kg_metrics_from_json(kg_metrics_t *m, const kg_json_t *obj, const char *what, char *errbuf) {
  if (!obj || obj->type != KG_JSON_OBJECT) return kg_fail(errbuf, KG_EINVAL, "%s: metrics must be an object", what);
  for (size_t i = 0; i < obj->count; i++) {
    if (obj->items[i].type != KG_JSON_NUMBER)
      return kg_fail(errbuf, KG_EINVAL, "%s: metric \"%s\" must be a number", what, obj->keys[i]);
    kg_metrics_add(m, obj->keys[i], obj->items[i].number);
  }
  return KG_OK;
}
