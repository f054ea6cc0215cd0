/* metrics.c: named counters and their JSON form. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

double kg_metrics_get(const kg_metrics_t *m, const char *name) {
  for (size_t i = 0; i < m->count; i++)
    if (!strcmp(m->names[i], name)) return m->values[i];
  return 0;
}

void kg_metrics_merge(kg_metrics_t *into, const kg_metrics_t *from) {
  for (size_t i = 0; i < from->count; i++) kg_metrics_add(into, from->names[i], from->values[i]);
}

void kg_metrics_free(kg_metrics_t *m) {
  for (size_t i = 0; i < m->count; i++) free(m->names[i]);
  free(m->names);
  free(m->values);
  memset(m, 0, sizeof *m);
}

void kg_json_string(kg_buf_t *out, const char *s) {
  kg_buf_append(out, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      kg_buf_append(out, "\\", 1);
      kg_buf_append(out, p, 1);
    } else if (*p < 0x20) {
      kg_buf_appendf(out, "\\u%04x", *p);
    } else {
      kg_buf_append(out, p, 1);
    }
  }
  kg_buf_append(out, "\"", 1);
}

void kg_metrics_json(const kg_metrics_t *m, kg_buf_t *out) {
  kg_buf_append(out, "{", 1);
  for (size_t i = 0; i < m->count; i++) {
    if (i) kg_buf_append(out, ",", 1);
    kg_json_string(out, m->names[i]);
    double v = m->values[i];
    if (v == (double)(long long)v && v < 9e15 && v > -9e15)
      kg_buf_appendf(out, ":%lld", (long long)v);
    else
      kg_buf_appendf(out, ":%.6g", v);
  }
  kg_buf_append(out, "}", 1);
}
