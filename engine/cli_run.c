/* cli_run.c: `kingest run`, a job run once, and `kingest run-task`, what each map of a Hadoop run executes. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "job.h"
#include "mapreduce.h"
#include "stop.h"

/* clang-format off */
const char *const kg_cli_usage_run =
    "Usage: kingest run JOB [options]\n"
    "\n"
    "Runs the job once: discovers the topics, pulls every selected partition from its stored offset up to\n"
    "the latest offset, writes the records to files, publishes them and stores the new offsets.\n"
    "JOB is a Lua script returning a table of properties (job.lua), or a Gobblin properties file\n"
    "(.pull, .properties, .job, .conf) with ${env:VAR} substitution.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR     Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -l, --log-level LEVEL  debug, info (default), warn or error\n"
    "      --log-file FILE    Also append the log to FILE\n"
    "      --log-format FMT   text (default) or json: one JSON object per line (time, level, message, job,\n"
    "                         job_id, task, topic, partition), for log shippers (the same as log.format)\n"
    "      --strict           Refuse to run when the job has properties kingest does not know or does not\n"
    "                         implement, instead of a WARN for each (the same as job.strict=true)\n"
    "  -h, --help             Show this help\n"
    "\n"
    "A property close to one kingest reads (topic.whitelst) is an error, with or without --strict.\n"
    "\n"
    "SIGTERM or SIGINT stops the run gracefully: no new batch is fetched, what was completely written is\n"
    "committed, and the run is recorded as STOPPED. A second signal ends the process at once (the commit\n"
    "journal keeps that safe: the next run finishes or discards what was under way). In MapReduce mode the\n"
    "signal kills the Hadoop job (mr.hadoop.command job -kill), and nothing of it is committed.\n"
    "\n" KG_EXIT_TABLE;

const char *const kg_cli_usage_run_task =
    "Usage: kingest run-task JOB [options]\n"
    "\n"
    "What each map of a MapReduce run executes (launcher.type=MAPREDUCE): reads task lines on stdin (as the\n"
    "driver wrote them, after Hadoop's byte offset), runs each task, writing under\n"
    "<mr.job.root.dir>/<job>/<jobId>/attempts/<attempt id> on HDFS, and prints its result on one line of\n"
    "stdout, starting \"kingest-result<TAB>\". While a task runs, progress goes to stderr as Hadoop\n"
    "Streaming's \"reporter:status:\" lines. The attempt id is $mapreduce_task_attempt_id.\n"
    "\n"
    "A task runs on the properties its line carries, as the driver resolved them (its environment, its\n"
    "${env:VAR}s), not on this map's own evaluation of JOB; the properties that evaluation gives otherwise\n"
    "are named (names only) in the log. JOB gives the task its code (decodeRecord, converters, partition...)\n"
    "and its secrets: a property whose name marks a secret (password, secret, token, credentials, key\n"
    "material: kafka.consumer.sasl.password, kafka.consumer.ssl.key.password, ...) never travels in the task\n"
    "line, and a task whose driver had one that this map's evaluation of JOB has not fails, naming it.\n"
    "\n"
    "A failed task is a result, not an error: the exit status is not 0 only when no result could be printed\n"
    "(a line that is not a task line, stdout that cannot be written).\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR     Work dir (default: $GOBBLIN_WORK_DIR, else the current folder)\n"
    KG_USAGE_LOG_AND_HELP;
/* clang-format on */

int kg_cli_run(int argc, char **argv) {
  kg_args_t a;
  int prc = kg_cli_parse_args(argc, argv, 2, KG_OPTS_RUN, &a, kg_cli_usage_run);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    return kg_cli_usage_error(2, kg_cli_usage_run, "run needs one job file");
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  if ((prc = kg_cli_load_job(a.positional[0], &a, &config))) return prc;
  kg_stop_install();
  kg_outcome_t outcome = KG_OUTCOME_SUCCESSFUL;
  int rc = kg_job_run(config, &outcome, err);
  bool fail_on_partial = config->fail_on_partial;
  kg_config_destroy(config);
  if (rc == KG_ELOCKED) return kg_cli_fail(KG_EXIT_LOCKED, err);
  if (rc == KG_EBUDGET) return kg_cli_fail(KG_EXIT_BUDGET, err);
  if (rc == KG_ESTALLED) return kg_cli_fail(KG_EXIT_STALLED, err);
  if (rc == KG_EAUTH) return kg_cli_fail(KG_EXIT_AUTH, err);
  if (rc) return kg_cli_fail(KG_EXIT_FAILED, err);
  if (outcome == KG_OUTCOME_STOPPED) return KG_EXIT_STOPPED;
  if (outcome == KG_OUTCOME_PARTIAL && fail_on_partial) {
    char msg[KG_ERRLEN + 64];
    snprintf(msg, sizeof msg, "the run was partial (job.fail.on.partial=true): %s", err);
    return kg_cli_fail(KG_EXIT_PARTIAL, msg);
  }
  return KG_EXIT_OK;
}

int kg_cli_run_task(int argc, char **argv) {
  kg_args_t a;
  int prc = kg_cli_parse_args(argc, argv, 2, KG_OPTS_RUN_TASK, &a, kg_cli_usage_run_task);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    return kg_cli_usage_error(2, kg_cli_usage_run_task, "run-task needs one job file");
  }
  char err[KG_ERRLEN] = "";
  /* A map's work dir is its container's folder: nothing of it outlives the attempt. */
  if (!kg_cli_has(&a, KG_OPT_WORK_DIR)) {
    const char *env = getenv("GOBBLIN_WORK_DIR");
    a.values[KG_OPT_WORK_DIR] = env && *env ? env : ".";
  }
  /* The job file as this map evaluates it gives the task its secrets only: the rest comes with the task line, as the
   * driver resolved it. That it cannot be evaluated here is not yet an error (a variable of the driver's). */
  kg_props_t *own = NULL;
  bool is_lua = false;
  char own_error[KG_ERRLEN] = "";
  if (kg_jobfile_load(a.positional[0], &own, &is_lua, own_error)) own = NULL;
  kg_stop_install();
  kg_mr_map_t map = {.job_file = a.positional[0],
                     .job_is_lua = is_lua,
                     .own = own,
                     .own_error = own_error,
                     .work_dir = kg_cli_value(&a, KG_OPT_WORK_DIR),
                     .log_format_set = kg_cli_has(&a, KG_OPT_LOG_FORMAT)};
  int rc = kg_mr_run_task(&map, err);
  kg_props_destroy(own);
  return rc ? kg_cli_fail(KG_EXIT_FAILED, err) : KG_EXIT_OK;
}
