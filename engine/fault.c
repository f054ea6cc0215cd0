/* fault.c: the test hooks production code passes: crash points (KINGEST_CRASH_AT), injected failures
 * (KINGEST_FAULT), and the warning that a test hook is set. */
#include "fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kg_common.h"
#include "log.h"

/* Fault injection: KINGEST_CRASH_AT=<point>[:<n>] kills the process with SIGKILL at the n-th time (default
 * the first) it passes the named point. Read once; off when unset. */
static const char *crash_point;
static long crash_hit = 1;
static atomic_long crash_count;
static pthread_once_t crash_once = PTHREAD_ONCE_INIT;

static void crash_init(void) {
  const char *spec = getenv("KINGEST_CRASH_AT");
  if (!spec || !*spec) return;
  char *copy = kg_xstrdup(spec);
  char *colon = strchr(copy, ':');
  if (colon) {
    *colon = '\0';
    crash_hit = strtol(colon + 1, NULL, 10);
    if (crash_hit < 1) crash_hit = 1;
  }
  crash_point = copy;
}

void kg_crash_point(const char *name) {
  pthread_once(&crash_once, crash_init);
  if (!crash_point || strcmp(crash_point, name)) return;
  if (atomic_fetch_add(&crash_count, 1) + 1 == crash_hit) {
    kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_CRASH_AT=%s:%ld: killing the process", name, crash_hit);
    kill(getpid(), SIGKILL);
  }
}

void kg_test_hooks_warn(void) {
  static const struct {
    const char *name, *what;
  } hooks[] = {
      {"KINGEST_CRASH_AT", "the process kills itself (SIGKILL) at a crash point"},
      {"KINGEST_FAULT", "steps of the commit fail on purpose"},
      {"KINGEST_POWERCUT", "the local file system is behind a simulated power loss"},
      {"KINGEST_KAFKA_FAULT", "Kafka queries of the planning fail on purpose"},
      {"KINGEST_MAP_CRASH_AT", "the first attempt of each Hadoop map kills itself at a crash point"},
      {"KINGEST_S3_CLOCK_SKEW", "requests to S3 are signed with a clock this many seconds off"},
  };
  static atomic_bool warned;
  if (atomic_exchange(&warned, true)) return;
  for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
    const char *value = getenv(hooks[i].name);
    if (value && *value)
      KG_WARN("Test hook %s=%s is set: %s; not for production use (docs/testing.md)", hooks[i].name, value,
              hooks[i].what);
  }
}

/* KINGEST_FAULT: up to 16 points, each with the hit that fails and a count of hits so far. */
enum { FAULT_MAX = 16 };
static struct {
  char point[64];
  long hit;
  atomic_long count;
} faults[FAULT_MAX];
static size_t nfaults;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static _Thread_local const char *fault_scope;

static void fault_init(void) {
  const char *spec = getenv("KINGEST_FAULT");
  if (!spec || !*spec) return;
  char *copy = kg_xstrdup(spec), *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item && nfaults < FAULT_MAX; item = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(item, ':');
    long hit = 1;
    if (colon) {
      *colon = '\0';
      hit = strtol(colon + 1, NULL, 10);
      if (hit < 1) hit = 1;
    }
    snprintf(faults[nfaults].point, sizeof faults[nfaults].point, "%s", item);
    faults[nfaults++].hit = hit;
  }
  free(copy);
}

void kg_fault_scope(const char *scope) { fault_scope = scope; }

bool kg_fault(const char *point) {
  pthread_once(&fault_once, fault_init);
  if (!nfaults) return false;
  char name[64];
  snprintf(name, sizeof name, "%s%s%s", fault_scope ? fault_scope : "", fault_scope ? "." : "", point);
  for (size_t i = 0; i < nfaults; i++) {
    if (strcmp(faults[i].point, name)) continue;
    if (atomic_fetch_add(&faults[i].count, 1) + 1 != faults[i].hit) return false;
    kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_FAULT=%s:%ld: failing here", name, faults[i].hit);
    return true;
  }
  return false;
}
