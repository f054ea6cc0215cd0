/* mapreduce.h: launcher.type=MAPREDUCE: the execute phase as a map-only Hadoop Streaming job on YARN, one task per
 * map (README, "Running on a Hadoop cluster"; docs/behaviour.md, section 11).
 *
 * The driver (kingest run) plans and packs as a standalone run does, writes one line per task to HDFS (the task's
 * id and work units, in the JSON of workunit.h), and runs `hadoop jar hadoop-streaming.jar` with NLineInputFormat
 * (one line per map), no reduces and no speculative attempts. Each map runs `kingest run-task JOB` on its line:
 * the task writes under the attempt's own folder on HDFS and prints its result (result.h) on one line of stdout,
 * which becomes the Hadoop job's output. Only when the job has _SUCCESS does the driver read those lines; the
 * commit then publishes exactly the files they name, so a failed or killed attempt's files never are. */
#ifndef KG_MAPREDUCE_H
#define KG_MAPREDUCE_H

#include "config.h"
#include "fs.h"
#include "task.h"

/* The marker that starts a result line on a map's stdout (a script's print() may write there too). */
#define KG_MR_RESULT_MARK "kingest-result\t"

/* What the driver needs to run the tasks as a Hadoop job: all borrowed. */
typedef struct {
  const kg_config_t *config;
  const char *job_id;
  const char *job_dir;    /* <mr.job.root.dir>/<job>/<jobId> on FS: input, output and the attempts' task data */
  const char *extract_id; /* for writer.file.path.type=default */
  kg_fs_t *fs;            /* the writer's file system: HDFS */
  kg_task_t *tasks;
  size_t ntasks;
} kg_mr_run_t;

/* Checks what a MapReduce run needs before anything else happens: mr.job.root.dir set and (with REACH) writable on
 * FS (which must be HDFS, as the final folder's), the Hadoop command and the streaming jar found. Without REACH
 * the file system is not asked anything (`kingest validate`). KG_EINVAL (or KG_EIO) with an error naming the
 * property and what was tried. */
int kg_mr_check(const kg_config_t *config, kg_fs_t *fs, kg_fs_t *pub_fs, bool reach, char *errbuf);

/* Runs the tasks as a Hadoop job and fills each task's result from its map's result line. KG_OK when the job
 * succeeded (a task may still have failed: its result says so); otherwise the error, and every task is failed
 * with it. */
int kg_mr_run(const kg_mr_run_t *run, char *errbuf);

/* `kingest run-task JOB`, inside a map: reads task lines from stdin and runs each, printing its result line.
 * Returns the process's exit status. */
int kg_mr_run_task(const kg_config_t *config, char *errbuf);

#endif
