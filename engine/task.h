/* task.h: one task: a group of work units pulled one after the other by its own Kafka consumer and Lua
 * state, into staging files that are moved to task output when the task succeeds. */
#ifndef KG_TASK_H
#define KG_TASK_H

#include <stdatomic.h>

#include "config.h"
#include "fingerprint.h"
#include "fs.h"
#include "metrics.h"
#include "workunit.h"
#include "writer.h"

/* lua_since_ms while the watchdog interrupts the running batch. */
#define KG_LUA_INTERRUPTING (-1)

/* What a task did with one work unit. */
typedef struct {
  int64_t actual_high; /* the next offset after what was pulled */
  int64_t records;     /* records pulled (read from Kafka within the range) */
  int64_t bytes;       /* payload bytes pulled */
  int64_t elapsed_ms;  /* from the start of the partition to its end */
  int64_t decode_errors; /* records that failed in the script (decodeRecord or a converter) */
  int64_t skipped;       /* of those, the ones skipped (decode.error.policy=skip) */
  int64_t quarantined;   /* and the ones written to <FP>/_errors (decode.error.policy=quarantine) */
  int64_t deleted;       /* records deleted under the reader and skipped by the reset policy (never read) */
  bool fetch_failed;   /* the fetch stopped with an error before the high watermark */
  bool premature_stop; /* an extract limit or a stop signal ended the unit before its high watermark */
  bool stopped;        /* a stop signal (SIGTERM, SIGINT) ended it */
  char stop_reason[160];
  kg_fingerprint_t last; /* the last record pulled (set when records > 0): tells a recreated log next run */
} kg_unit_result_t;

/* One output file of a task. */
typedef struct {
  char *file_path; /* FP: the sub-path under staging, task output and the final dir */
  char *output;    /* the file in task-output */
  char *final;     /* where the publisher puts it */
} kg_task_file_t;

typedef struct {
  /* Set by the job before the run. */
  int index;
  char *task_id; /* task_<job>_<epoch ms>_<index> */
  const kg_config_t *config;
  kg_workunit_t **units; /* borrowed, in the order they are pulled */
  size_t nunits;
  const char *job_dir;    /* <task.data.root.dir>/<job>/<jobId> */
  const char *extract_id; /* for writer.file.path.type=default */
  kg_fs_t *fs;            /* the writer's file system (writer.fs.uri), borrowed */
  const kg_writer_ops_t *writer; /* the job's output format (writer.builder.class, writer.output.format) */
  /* Results. */
  kg_unit_result_t *results; /* one per unit */
  kg_task_file_t *files;
  size_t nfiles;
  kg_metrics_t metrics;
  /* Shared with the job's watchdog thread. */
  _Atomic int64_t lua_since_ms;         /* monotonic ms when the running batch call began; 0 outside Lua;
                                           KG_LUA_INTERRUPTING once the watchdog has claimed the batch */
  _Atomic(void *) lua;                  /* the task's kg_lua_t while it exists, for kg_lua_interrupt */
  atomic_bool interrupted;              /* the watchdog stopped a batch that ran too long */
  atomic_bool hook_set;                 /* the watchdog has set the interrupt hook of the batch it claimed */
  _Atomic int64_t interrupted_batch_ms; /* when the claimed batch began */
  atomic_int current_unit;              /* index in units of the partition being pulled */
  _Atomic int64_t live_read;            /* interim metrics: records read, written and bytes written so far */
  _Atomic int64_t live_written;
  _Atomic int64_t live_bytes;
  _Atomic int64_t unit_records;    /* progress: records of the current unit pulled so far */
  _Atomic int64_t unit_started_ms; /* progress: monotonic start of the current unit; 0 when not pulling */
  bool succeeded;
  int rc;                     /* a failed task's error: KG_EBUDGET when more records failed than allowed */
  char error[KG_ERRLEN];
  char first_error[KG_ERRLEN]; /* where and how the first record failed in the script, "" when none did */
  int64_t elapsed_ms;
} kg_task_t;

/* Runs the task; never aborts on input. Sets succeeded, error, results, files and metrics. */
void kg_task_run(kg_task_t *task);
void kg_task_clear(kg_task_t *task);

/* The output sub-path (FP) of TOPIC under CONFIG's writer.file.path.type; a new string. */
char *kg_task_file_path(const kg_config_t *config, const char *topic, const char *extract_id);

#endif
