/* executor.h: the pack and execute phases in one process: the work units packed into tasks, and the tasks run on
 * a thread pool (taskexecutor.threadpool.size), each with its own Kafka consumer and Lua state, watched by one
 * thread that enforces script.batch.timeout.ms, shows progress and writes interim metrics. */
#ifndef KG_EXECUTOR_H
#define KG_EXECUTOR_H

#include "config.h"
#include "fs.h"
#include "report.h"
#include "state.h"
#include "task.h"

/* Packs UNITS (borrowed: they must outlive the tasks) into at most mr.job.max.mappers tasks
 * (kafka.workunit.packer.type) and logs each task's load and partitions. Every task's spec is BASE with its own index,
 * task id (task_<job>_<START_MS>_<n>) and units. Returns the tasks (free with kg_executor_free_tasks) and their number.
 */
kg_task_t *kg_executor_make_tasks(const kg_config_t *config, kg_workunit_t *units, size_t nunits,
                                  const kg_task_spec_t *base, int64_t start_ms, size_t *ntasks);
void kg_executor_free_tasks(kg_task_t *tasks, size_t ntasks);

/* What the executor needs besides the tasks: all borrowed. */
typedef struct {
  const kg_config_t *config;
  kg_task_t *tasks;
  size_t ntasks;
  /* A script that cannot be interrupted ends the process (see executor.c): the run is recorded as FAILED in
   * STATE under JOB_ID and its task data (JOB_DIR on FS) removed first. */
  kg_state_t *state;
  const char *job_id;
  const char *job_dir;
  kg_fs_t *fs;
  const kg_report_t *report; /* interim metrics every metrics.report.interval, when the metrics file is on */
  /* In a Hadoop map (kingest run-task): each progress line also goes to stderr as Hadoop Streaming's
   * `reporter:status:` line, which keeps the attempt alive past mapreduce.task.timeout, at least every
   * STATUS_EVERY_MS whatever progress.interval.ms says. */
  bool hadoop_status;
  int64_t status_every_ms;
} kg_executor_t;

/* Runs every task and returns when all have ended; each task's result says how it went. */
void kg_executor_run(const kg_executor_t *executor);

/* kg_executor_run's watchdog on its own, for tasks another caller runs (`kingest test`): a thread that
 * interrupts a batch running past script.batch.timeout.ms (and ends the process when it cannot), shows
 * progress and writes interim metrics, until kg_executor_unwatch. */
typedef struct kg_watchdog kg_watchdog_t;
kg_watchdog_t *kg_executor_watch(const kg_executor_t *executor);
void kg_executor_unwatch(kg_watchdog_t *watchdog);

#endif
