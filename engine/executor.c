/* executor.c: packing work units into tasks and running them on a thread pool with a watchdog (executor.h). */
#include "executor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "lua_bridge.h"
#include "packer.h"

kg_task_t *kg_executor_make_tasks(const kg_config_t *c, kg_workunit_t *units, size_t nunits, const kg_task_spec_t *base,
                                  int64_t start_ms, size_t *ntasks) {
  size_t ngroups = 0;
  kg_group_t *groups = kg_pack(units, nunits, c->max_mappers, c->packer, c->pre_grouping_factor, &ngroups);
  kg_task_t *tasks = kg_xcalloc(ngroups ? ngroups : 1, sizeof(kg_task_t));
  const char **names = kg_xcalloc(ngroups ? ngroups : 1, sizeof(char *));
  for (size_t g = 0; g < ngroups; g++) {
    kg_task_t *t = &tasks[g];
    t->spec = *base;
    t->spec.index = (int)g;
    t->spec.task_id = kg_xasprintf("task_%s_%lld_%zu", c->job_name, (long long)start_ms, g);
    t->spec.config = c;
    names[g] = t->spec.task_id;
  }
  kg_pack_log(groups, ngroups, names);
  free(names);
  for (size_t g = 0; g < ngroups; g++) {
    tasks[g].spec.units = groups[g].units; /* the task takes the array */
    groups[g].units = NULL;
    tasks[g].spec.nunits = groups[g].count;
  }
  kg_groups_free(groups, ngroups);
  *ntasks = ngroups;
  return tasks;
}

void kg_executor_free_tasks(kg_task_t *tasks, size_t ntasks) {
  for (size_t i = 0; i < ntasks; i++)
    kg_task_clear(&tasks[i]);
  free(tasks);
}

typedef struct {
  const kg_executor_t *executor;
  pthread_mutex_t mutex;
  size_t next;
} kg_pool_t;

static void *worker(void *arg) {
  kg_pool_t *pool = arg;
  for (;;) {
    pthread_mutex_lock(&pool->mutex);
    size_t i = pool->next++;
    pthread_mutex_unlock(&pool->mutex);
    if (i >= pool->executor->ntasks) return NULL;
    kg_task_run(&pool->executor->tasks[i]);
  }
}

/* The watchdog: a script call that runs past script.batch.timeout.ms is first interrupted through a Lua
 * hook. Compiled code never looks at hooks, so a call still running KG_WATCHDOG_GRACE_MS later (a JIT-compiled
 * endless loop) cannot be stopped from outside its thread: the run then ends the process, publishing
 * nothing and moving no offset, after recording the failure. */
#define KG_WATCHDOG_GRACE_MS 3000

struct kg_watchdog {
  const kg_executor_t *x;
  atomic_bool done;
  bool terminal; /* stderr is a terminal: live progress lines instead of log lines */
  pthread_t thread;
  bool started;
  /* The watchdog looks every 50 ms, and wakes at once when the tasks are done: the end of the run does not wait
   * for its next look. */
  pthread_mutex_t mutex;
  pthread_cond_t wake; /* on CLOCK_MONOTONIC */
};

static void stop_run(kg_watchdog_t *w, kg_task_t *t, int64_t elapsed) {
  const kg_executor_t *x = w->x;
  kg_workunit_t *wu = t->spec.units[atomic_load(&t->live.current_unit)];
  char *msg = kg_xasprintf(
      "task %s: the script has run for %lld ms on one batch of %s:%d and cannot be interrupted "
      "(script.batch.timeout.ms=%lld); the run is stopped: nothing is published and no offset moves",
      t->spec.task_id, (long long)elapsed, wu->topic, wu->partition, (long long)x->config->batch_timeout_ms);
  KG_ERROR("%s", msg);
  char err[KG_ERRLEN];
  kg_run_counts_t none = {0};
  if (x->state && kg_state_run_end(x->state, x->job_id, kg_now_ms(), &none, "FAILED", msg, err)) KG_WARN("%s", err);
  if (kg_fs_remove_tree(x->fs, x->job_dir, err)) KG_WARN("%s", err);
  kg_log_say(KG_LOG_ERROR, "kingest: ", 1, "%s", msg);
  _exit(1);
}

/* One progress line of task T: its partition, records pulled of the range, rate and time left. */
static bool progress_line(kg_task_t *t, int64_t now, kg_buf_t *out) {
  int64_t started = atomic_load(&t->live.unit_started_ms);
  if (!started) return false;
  kg_workunit_t *wu = t->spec.units[atomic_load(&t->live.current_unit)];
  int64_t done = atomic_load(&t->live.unit_records), range = wu->high - wu->low;
  double secs = (double)(now - started) / 1000.0;
  double rate = secs > 0 ? (double)done / secs : 0;
  kg_buf_appendf(out, "%s %s:%d %lld/%lld records (%.0f%%), %.0f records/s", t->spec.task_id, wu->topic, wu->partition,
                 (long long)done, (long long)range, range > 0 ? 100.0 * (double)done / (double)range : 100.0, rate);
  if (rate > 0 && done < range) kg_buf_appendf(out, ", about %.0fs left", (double)(range - done) / rate);
  return true;
}

static void report_progress(kg_watchdog_t *w, int64_t now) {
  kg_buf_t text = {0};
  if (w->x->hadoop_status) {
    for (size_t i = 0; i < w->x->ntasks; i++) {
      text.len = 0;
      kg_task_t *t = &w->x->tasks[i];
      if (!progress_line(t, now, &text))
        kg_buf_appendf(&text, "%s: %lld records read, %lld written", t->spec.task_id,
                       (long long)atomic_load(&t->live.read), (long long)atomic_load(&t->live.written));
      kg_log_line_raw("reporter:status:", text.data);
    }
    kg_buf_free(&text);
    return;
  }
  if (w->terminal) {
    for (size_t i = 0; i < w->x->ntasks; i++)
      if (progress_line(&w->x->tasks[i], now, &text)) kg_buf_append(&text, "\n", 1);
    kg_log_set_status(text.data);
  } else {
    for (size_t i = 0; i < w->x->ntasks; i++) {
      text.len = 0;
      if (progress_line(&w->x->tasks[i], now, &text)) KG_INFO("Progress: %s", text.data);
    }
  }
  kg_buf_free(&text);
}

static void *watchdog(void *arg) {
  kg_watchdog_t *w = arg;
  const int64_t limit = w->x->config->batch_timeout_ms;
  int64_t every = w->terminal ? 500 : w->x->config->progress_interval_ms;
  if (w->x->hadoop_status && (every <= 0 || every > w->x->status_every_ms)) every = w->x->status_every_ms;
  int64_t last_progress = kg_mono_ms(), last_metrics = last_progress;
  /* A map's first status comes a second after its start: until then YARN shows it as NEW. */
  if (w->x->hadoop_status) last_progress -= every - 1000;
  while (!atomic_load(&w->done)) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 50 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mutex);
    while (!atomic_load(&w->done) && pthread_cond_timedwait(&w->wake, &w->mutex, &until) == 0) {
    }
    pthread_mutex_unlock(&w->mutex);
    if (atomic_load(&w->done)) break;
    int64_t now = kg_mono_ms();
    for (size_t i = 0; i < w->x->ntasks; i++) {
      kg_task_t *t = &w->x->tasks[i];
      int64_t since = atomic_load(&t->live.lua_since_ms);
      if (since == KG_LUA_INTERRUPTING) {
        int64_t began = atomic_load(&t->live.interrupted_batch_ms);
        if (now - began > limit + KG_WATCHDOG_GRACE_MS) stop_run(w, t, now - began);
        continue;
      }
      if (!since || now - since <= limit) continue;
      /* Claim the batch: if the task finished it in the meantime, its exchange of lua_since_ms wins and
       * nothing is interrupted; otherwise the task sees KG_LUA_INTERRUPTING when the batch returns. */
      if (!atomic_compare_exchange_strong(&t->live.lua_since_ms, &since, KG_LUA_INTERRUPTING)) continue;
      atomic_store(&t->live.interrupted_batch_ms, since);
      atomic_store(&t->live.interrupted, true);
      KG_WARN("Task %s: the script has run for %lld ms on one batch (script.batch.timeout.ms=%lld); stopping it",
              t->spec.task_id, (long long)(now - since), (long long)limit);
      void *lua = atomic_load(&t->live.lua);
      if (lua) kg_lua_interrupt(lua);
      atomic_store(&t->live.hook_set, true);
    }
    if (every > 0 && now - last_progress >= every) {
      report_progress(w, now);
      last_progress = now;
    }
    const kg_config_t *c = w->x->config;
    if (w->x->report && kg_report_enabled(w->x->report) && now - last_metrics >= c->metrics_interval_ms) {
      kg_report_interim(w->x->report, w->x->tasks, w->x->ntasks);
      last_metrics = now;
    }
  }
  return NULL;
}

kg_watchdog_t *kg_executor_watch(const kg_executor_t *x) {
  const char *term = getenv("TERM");
  kg_watchdog_t *dog = kg_xcalloc(1, sizeof *dog);
  dog->x = x;
  dog->terminal = isatty(STDERR_FILENO) && term && strcmp(term, "dumb") != 0;
  pthread_mutex_init(&dog->mutex, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&dog->wake, &attr);
  pthread_condattr_destroy(&attr);
  dog->started = pthread_create(&dog->thread, NULL, watchdog, dog) == 0;
  if (!dog->started) KG_WARN("cannot start the watchdog thread: script.batch.timeout.ms is not enforced");
  return dog;
}

void kg_executor_unwatch(kg_watchdog_t *dog) {
  pthread_mutex_lock(&dog->mutex);
  atomic_store(&dog->done, true);
  pthread_cond_signal(&dog->wake);
  pthread_mutex_unlock(&dog->mutex);
  if (dog->started) pthread_join(dog->thread, NULL);
  pthread_cond_destroy(&dog->wake);
  pthread_mutex_destroy(&dog->mutex);
  if (dog->terminal) kg_log_set_status(NULL);
  free(dog);
}

void kg_executor_run(const kg_executor_t *x) {
  const kg_config_t *c = x->config;
  size_t nunits = 0;
  for (size_t i = 0; i < x->ntasks; i++)
    nunits += x->tasks[i].spec.nunits;
  KG_INFO("Running %zu work units as %zu tasks on %d threads", nunits, x->ntasks,
          c->threadpool_size < (int)x->ntasks ? c->threadpool_size : (int)x->ntasks);
  kg_pool_t pool = {.executor = x, .next = 0};
  pthread_mutex_init(&pool.mutex, NULL);
  size_t nthreads = (size_t)c->threadpool_size < x->ntasks ? (size_t)c->threadpool_size : x->ntasks;
  pthread_t *threads = kg_xcalloc(nthreads ? nthreads : 1, sizeof(pthread_t));
  kg_watchdog_t *dog = kg_executor_watch(x);
  size_t started = 0;
  for (; started < nthreads; started++)
    if (pthread_create(&threads[started], NULL, worker, &pool) != 0) break;
  if (started == 0) worker(&pool); /* no thread could start: run them here */
  for (size_t i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  kg_executor_unwatch(dog);
  free(threads);
  pthread_mutex_destroy(&pool.mutex);
}
