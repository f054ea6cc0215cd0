/* mapreduce.h: launcher.type=MAPREDUCE: the execute phase as a map-only Hadoop Streaming job on YARN, one task per
 * map (docs/hadoop.md; docs/behaviour.md, section 11).
 *
 * The driver (kingest run) plans and packs as a standalone run does, writes one line per task to HDFS (the task's
 * id and work units, in the JSON of workunit.h, and the job's properties as the driver resolved them, secrets
 * left out), and runs `hadoop jar hadoop-streaming.jar` with NLineInputFormat (one line per map), no reduces and
 * no speculative attempts. Each map runs `kingest run-task JOB` on its line: the task runs on the driver's
 * properties (the map's own evaluation of the job file gives only its hooks and the secrets), writes under the
 * attempt's own folder on HDFS and prints its result (result.h) on one line of stdout, which becomes the Hadoop
 * job's output. Only when the job has _SUCCESS does the driver read those lines; the commit then publishes exactly
 * the files they name, so a failed or killed attempt's files never are. A stop signal kills the job (`hadoop job
 * -kill`), and nothing of it is published. */
#ifndef KG_MAPREDUCE_H
#define KG_MAPREDUCE_H

#include "buf.h"
#include "config.h"
#include "fs.h"
#include "task.h"

/* The Hadoop launcher's options: its section's rows (mapreduce.c), read with the job's. */
typedef struct {
  char *hadoop;        /* mr.hadoop.command */
  char *streaming_jar; /* mr.streaming.jar, NULL for the one under $HADOOP_HOME */
  char *kingest;       /* mr.kingest.path, NULL for this binary */
  int attempts;        /* mr.map.max.attempts */
  char *args;          /* mr.streaming.args */
} kg_mr_options_t;
extern const kg_config_section_t kg_mr_section;
const kg_mr_options_t *kg_mr_options(const kg_config_t *config);

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
 * with it. The failed tasks' errors and, when the Hadoop client fails, its last lines are logged at ERROR.
 * *STOPPED is set when a stop signal (kg_stop_signal) came before the job had finished: the job was then killed
 * (or never submitted), every task is failed, and nothing of it may be committed; a job that had finished all the
 * same (its output has _SUCCESS) is read as usual, with *STOPPED false. */
int kg_mr_run(const kg_mr_run_t *run, bool *stopped, char *errbuf);

/* Appends task T's line of the maps' input to OUT (with its newline): {"task", "index", "jobId", "jobDir",
 * "extractId", "properties": [[name, value, origin], ...], "secrets": [name, ...], "units": [...]}. "properties" are
 * the driver's, in their order, except the secrets (kg_props_is_secret: only their names go, in "secrets", never a
 * value or a hash of one) and mr.streaming.args (the driver's Hadoop command line, whose -cmdenv values reach the
 * maps as their environment). */
void kg_mr_task_line(kg_buf_t *out, const kg_mr_run_t *run, const kg_task_t *t);

/* The properties a map runs the task of LINE (a parsed task line) on: the driver's, with each secret the driver had
 * taken from OWN (the map's own evaluation of the job file; NULL when that failed). *OUT is new, the caller's.
 * DIFFER gets the names, comma-separated, of the properties OWN has otherwise than the driver (a different value,
 * or only one of them has it; secrets only OWN has are left out of *OUT and named too); MISSING the names of the
 * secrets the driver had and OWN has not, without which the task must not run. Names only, never values. KG_OK, or
 * KG_EINVAL when LINE's "properties" or "secrets" are not as kg_mr_task_line writes them. */
int kg_mr_task_props(const kg_json_t *line, const kg_props_t *own, kg_props_t **out, kg_buf_t *differ,
                     kg_buf_t *missing, char *errbuf);

/* What `kingest run-task JOB` is given: borrowed. */
typedef struct {
  const char *job_file;
  bool job_is_lua;
  const kg_props_t *own; /* the job file as this map evaluates it; NULL when that failed */
  const char *own_error; /* why it failed */
  const char *work_dir;  /* the map's work dir (its container's folder) */
  bool log_format_set;   /* --log-format was given: the job's log.format does not apply */
} kg_mr_map_t;

/* `kingest run-task JOB`, inside a map: reads task lines from stdin and runs each on the properties of its line
 * (kg_mr_task_props), printing its result line. A task that cannot run (a secret the map does not have, a file
 * system it cannot open) is a failed result, not an error. Returns KG_OK, or the error that leaves no result (a line
 * that is not a task line, stdout that cannot be written): the process then exits 1. */
int kg_mr_run_task(const kg_mr_map_t *map, char *errbuf);

#endif
