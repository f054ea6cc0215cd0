/* limit.c: the extract limits of a task (limit.h). */
#include "limit.h"

#include <time.h>

void kg_limits_init(kg_limits_t *l, const kg_config_t *c, kg_workunit_t *const *units, size_t n, int64_t started_ms) {
  l->config = c;
  l->started_ms = started_ms;
  l->deadline_ms = c->limit_enabled && c->limit_type == KG_LIMIT_TIME ? started_ms + c->limit_time_ms : 0;
  l->records_left = c->limit_enabled && c->limit_type == KG_LIMIT_COUNT ? c->limit_count : -1;
  l->pending = 0;
  for (size_t i = 0; i < n; i++)
    l->pending += units[i]->high > units[i]->low;
}

kg_allowance_t kg_limits_allow(kg_limits_t *l, const kg_workunit_t *wu) {
  kg_allowance_t allow = {0, -1};
  if (wu->high <= wu->low) return allow;
  if (l->deadline_ms) {
    int64_t now = kg_mono_ms();
    allow.deadline_ms = now + (l->deadline_ms > now ? (l->deadline_ms - now) / (int64_t)l->pending : 0);
    if (allow.deadline_ms <= now) allow.deadline_ms = now; /* nothing left: stops at once */
  }
  if (l->records_left >= 0)
    allow.records = l->records_left / (int64_t)l->pending + (l->records_left % (int64_t)l->pending ? 1 : 0);
  l->pending--;
  return allow;
}

void kg_limits_used(kg_limits_t *l, int64_t records) {
  if (l->records_left >= 0) l->records_left -= records;
}

int64_t kg_limits_most(const kg_limits_t *l, int64_t range) {
  return l->records_left >= 0 && l->records_left < range ? l->records_left : range;
}

int64_t kg_limits_batch(const kg_allowance_t *allow, int64_t want, int64_t pulled, int64_t unit_start_ms) {
  if (allow->records >= 0 && allow->records - pulled < want) want = allow->records - pulled;
  if (allow->deadline_ms) {
    int64_t now = kg_mono_ms();
    double fit =
        pulled ? (double)(allow->deadline_ms - now) * (double)pulled / (double)(now - unit_start_ms + 1) + 1 : 1;
    if (fit < (double)want) want = fit < 1 ? 1 : (int64_t)fit;
  }
  return want;
}

void kg_limits_throttle(const kg_limits_t *l, int64_t task_records) {
  const kg_config_t *c = l->config;
  if (!c->limit_enabled || c->limit_type != KG_LIMIT_RATE) return;
  double due_ms = (double)task_records / c->limit_rate_per_s * 1000.0;
  int64_t ahead = (int64_t)due_ms - (kg_mono_ms() - l->started_ms);
  if (ahead > 0) {
    struct timespec ts = {ahead / 1000, (ahead % 1000) * 1000000};
    nanosleep(&ts, NULL);
  }
}
