/* estimator.c: how big each work unit is expected to be, for the packer.
 *
 * AVG_RECORD_TIME: per topic, the geometric mean of its partitions' average milliseconds per record of
 * earlier runs; a topic without history gets the geometric mean over the topics that have some; no
 * history at all gives 1.0. AVG_RECORD_SIZE: the partition's average record size, 1024 bytes without
 * history. CUSTOM: a Lua function of the job file, estimateSize(workunit, history). */
#include "estimator.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua_bridge.h"

#define KG_MIN_RECORD_MILLIS 0.01
#define KG_DEFAULT_RECORD_SIZE 1024.0

double kg_geometric_mean(const double *millis, size_t n) {
  if (n == 0) return 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += log(millis[i] < KG_MIN_RECORD_MILLIS ? KG_MIN_RECORD_MILLIS : millis[i]);
  return exp(sum / (double)n);
}

static double range_of(const kg_workunit_t *wu) { return (double)(wu->high - wu->low); }

/* Geometric mean of the stored ms/record of TOPIC's partitions; 0 when it has no history. */
static double topic_millis(const char *topic, const kg_partition_state_t *stored, size_t nstored) {
  double *v = kg_xmalloc((nstored ? nstored : 1) * sizeof(double));
  size_t n = 0;
  for (size_t i = 0; i < nstored; i++)
    if (stored[i].has_stats && stored[i].records_pulled > 0 && !strcmp(stored[i].topic, topic))
      v[n++] = stored[i].avg_record_millis;
  double g = kg_geometric_mean(v, n);
  free(v);
  return g;
}

static void estimate_by_time(kg_workunit_t *units, size_t n, const kg_partition_state_t *stored, size_t nstored) {
  /* Every topic with history, once, for the fallback. */
  double *means = kg_xmalloc((nstored ? nstored : 1) * sizeof(double));
  size_t nmeans = 0;
  for (size_t i = 0; i < nstored; i++) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(stored[j].topic, stored[i].topic);
    if (seen) continue;
    double g = topic_millis(stored[i].topic, stored, nstored);
    if (g > 0) means[nmeans++] = g;
  }
  double fallback = nmeans ? kg_geometric_mean(means, nmeans) : 1.0;
  free(means);
  const char *topic = NULL;
  double millis = fallback;
  for (size_t i = 0; i < n; i++) {
    if (!topic || strcmp(topic, units[i].topic)) {
      topic = units[i].topic;
      double g = topic_millis(topic, stored, nstored);
      millis = g > 0 ? g : fallback;
    }
    units[i].est_size = range_of(&units[i]) * millis;
  }
}

static void estimate_by_size(kg_workunit_t *units, size_t n, const kg_partition_state_t *stored, size_t nstored) {
  for (size_t i = 0; i < n; i++) {
    const kg_partition_state_t *p = kg_state_find(stored, nstored, units[i].topic, units[i].partition);
    double size = p && p->has_stats && p->records_pulled > 0 && p->avg_record_size > 0 ? p->avg_record_size
                                                                                        : KG_DEFAULT_RECORD_SIZE;
    units[i].est_size = range_of(&units[i]) * size;
  }
}

static void set_number(lua_State *L, const char *name, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, name);
}

static int estimate_custom(const kg_config_t *c, kg_workunit_t *units, size_t n, const kg_partition_state_t *stored,
                           size_t nstored, char *errbuf) {
  if (!c->job_is_lua)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: kafka.workunit.size.estimator.type=CUSTOM needs a job.lua with an estimateSize function",
                   c->job_file);
  lua_State *L = kg_lua_state_new(c->job_file);
  if (!L) return kg_fail(errbuf, KG_ENOMEM, "cannot create a Lua state");
  lua_getglobal(L, "require");
  lua_pushstring(L, "gobblin.runtime");
  int rc = kg_lua_pcall(L, 1, 1, errbuf);
  if (!rc) {
    lua_getfield(L, -1, "load_job");
    lua_pushstring(L, c->job_file);
    rc = kg_lua_pcall(L, 1, 1, errbuf);
  }
  if (!rc) {
    lua_getfield(L, -1, "estimateSize");
    if (!lua_isfunction(L, -1))
      rc = kg_fail(errbuf, KG_EINVAL,
                   "%s: kafka.workunit.size.estimator.type=CUSTOM needs an estimateSize function in the job table",
                   c->job_file);
  }
  int fn = lua_gettop(L);
  for (size_t i = 0; !rc && i < n; i++) {
    kg_workunit_t *wu = &units[i];
    lua_pushvalue(L, fn);
    lua_newtable(L);
    lua_pushstring(L, wu->topic);
    lua_setfield(L, -2, "topic");
    set_number(L, "partition", wu->partition);
    set_number(L, "low", (double)wu->low);
    set_number(L, "high", (double)wu->high);
    set_number(L, "range", (double)(wu->high - wu->low));
    set_number(L, "earliest", (double)wu->earliest);
    set_number(L, "latest", (double)wu->latest);
    const kg_partition_state_t *p = kg_state_find(stored, nstored, wu->topic, wu->partition);
    if (p) {
      lua_newtable(L);
      set_number(L, "next_offset", (double)p->next_offset);
      if (p->has_stats) {
        set_number(L, "avg_record_millis", p->avg_record_millis);
        set_number(L, "avg_record_size", p->avg_record_size);
        set_number(L, "records_pulled", (double)p->records_pulled);
      }
    } else {
      lua_pushnil(L);
    }
    char err[KG_ERRLEN];
    if (kg_lua_pcall(L, 2, 1, err)) {
      rc = kg_fail(errbuf, KG_ELUA, "estimateSize failed for partition %s:%d: %s", wu->topic, wu->partition, err);
      break;
    }
    if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0 || isnan(lua_tonumber(L, -1)))
      rc = kg_fail(errbuf, KG_ELUA, "estimateSize returned %s for partition %s:%d; expected a number >= 0",
                   lua_isnumber(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1), wu->topic, wu->partition);
    else
      wu->est_size = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  lua_close(L);
  return rc;
}

int kg_estimate_sizes(const kg_config_t *c, kg_workunit_t *units, size_t n, const kg_partition_state_t *stored,
                      size_t nstored, char *errbuf) {
  switch (c->estimator) {
  case KG_ESTIMATOR_AVG_RECORD_TIME: estimate_by_time(units, n, stored, nstored); return KG_OK;
  case KG_ESTIMATOR_AVG_RECORD_SIZE: estimate_by_size(units, n, stored, nstored); return KG_OK;
  case KG_ESTIMATOR_CUSTOM: return estimate_custom(c, units, n, stored, nstored, errbuf);
  }
  return KG_OK;
}
