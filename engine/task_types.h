/* task_types.h: what a task is asked to do and what it did (its spec, its work units' results, its output files),
 * the types both the task (task.c) and its outputs (output.c) read, so that neither header needs the other. */
#ifndef KG_TASK_TYPES_H
#define KG_TASK_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "kafka_fingerprint.h"
#include "fs.h"
#include "metrics.h"
#include "workunit.h"
#include "writer.h"

/* What a task did with one work unit. */
typedef struct {
  int64_t actual_high;   /* the next offset after what was pulled */
  int64_t records;       /* records pulled (read from Kafka within the range) */
  int64_t bytes;         /* payload bytes pulled */
  int64_t elapsed_ms;    /* from the start of the partition to its end */
  int64_t decode_errors; /* records that failed in the script (decodeRecord or a converter) */
  int64_t skipped;       /* of those, the ones skipped (decode.error.policy=skip) */
  int64_t quarantined;   /* and the ones written to <FP>/_errors (decode.error.policy=quarantine) */
  int64_t deleted;       /* records deleted under the reader and skipped by the reset policy (never read) */
  int64_t tombstones;    /* Avro records with a null payload (deleted records), read and not written */
  int64_t written;       /* records the writer took from this partition's records (a script may filter and split) */
  bool fetch_failed;     /* the fetch stopped with an error before the high watermark */
  char fetch_error[KG_ERRLEN]; /* what stopped it, when fetch_failed: the client's error, naming the brokers */
  bool premature_stop;         /* an extract limit or a stop signal ended the unit before its high watermark */
  bool stopped;                /* a stop signal (SIGTERM, SIGINT) ended it */
  char stop_reason[160];
  kg_fingerprint_t last; /* the last record pulled (set when records > 0): tells a recreated log next run */
} kg_unit_result_t;

/* One output file of a task. */
typedef struct {
  char *file_path; /* FP: the sub-path under staging, task output and the final dir */
  char *output;    /* the file in task-output */
  char *final;     /* where the publisher puts it */
} kg_task_file_t;

/* What a task is asked to do: set by the job before the task runs, read-only while it runs. */
typedef struct {
  int index;
  char *task_id;             /* task_<job>_<epoch ms>_<index>; owned */
  const kg_config_t *config; /* borrowed from the job */
  kg_workunit_t **units;     /* the array is owned, the units borrowed from the job's plan; pulled in order */
  size_t nunits;
  const char *job_dir;           /* <task.data.root.dir>/<job>/<jobId>; borrowed */
  const char *extract_id;        /* for writer.file.path.type=default; borrowed */
  kg_fs_t *fs;                   /* the writer's file system (writer.fs.uri); borrowed */
  const kg_writer_ops_t *writer; /* the job's output format (writer.builder.class, writer.output.format) */
} kg_task_spec_t;

/* What a task did: written by the task's thread only, read by the job once the thread has been joined. Every
 * pointer is owned and freed by kg_task_clear. */
typedef struct {
  bool succeeded;
  int rc;                      /* a failed task's error: KG_EBUDGET when more records failed than allowed */
  char error[KG_ERRLEN];       /* a failed task's error message */
  char first_error[KG_ERRLEN]; /* where and how the first record failed in the script, "" when none did */
  int64_t elapsed_ms;
  kg_unit_result_t *units; /* one per spec unit, in the same order */
  kg_task_file_t *files;   /* the files in task output, to be published */
  size_t nfiles;
  kg_metrics_t metrics;
} kg_task_result_t;

#endif
