/* job.c: one run of a job as a sequence of phases: take the lock and recover (commit.c), discover the work units
 * (source.c), pack them into tasks and run them (executor.c, task.c), commit (commit.c), report (report.c). Each
 * phase has its own inputs and results; this file only hands them on. Also `kingest plan`, which runs the first
 * two phases and hands back what they made (cli_plan.c prints it). */
#include "job.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "commit.h"
#include "estimator.h"
#include "executor.h"
#include "fs.h"
#include "kafka_source.h"
#include "avro_codec.h"
#include "lock.h"
#include "log.h"
#include "lua_bridge.h"
#include "mapreduce.h"
#include "metrics.h"
#include "packer.h"
#include "report.h"
#include "source.h"
#include "state.h"
#include "stop.h"
#include "task.h"
#include "topics.h"
#include "writer.h"

/* One run: its identity and what its phases handed on. */
typedef struct {
  const kg_config_t *config;
  char *job_id; /* job_<job>_<epoch ms>; owned */
  int64_t start_ms;
  char *job_dir;       /* <task.data.root.dir>/<job>/<jobId>: this run's task data; owned */
  char extract_id[32]; /* yyyyMMddHHmmss of the start, for writer.file.path.type=default */
  kg_plan_t plan;      /* the discover phase's work units */
  kg_task_t *tasks;    /* the tasks they were packed into, with their results */
  size_t ntasks;
  kg_metrics_t metrics;          /* the job's own counters, and the tasks' merged at the end */
  kg_report_t report;            /* events and the metrics file */
  kg_fs_t *fs;                   /* the writer's file system (writer.fs.uri, else fs.uri): task data */
  kg_fs_t *pub_fs;               /* the final folder's (data.publisher.fs.uri): FS itself when they are the same */
  kg_publish_t publish;          /* what the commit moves files with */
  const kg_writer_ops_t *writer; /* the output format (writer.builder.class, writer.output.format) */
  char partial[KG_ERRLEN];       /* why a committed run is PARTIAL, for its history; "" when it is not */
} kg_job_t;

/* Packs the work units into tasks, runs them and merges what they did. Returns the first failed task's error
 * (KG_EBUDGET wins, so that its exit status shows) with its message in ERRBUF, and how many failed in *FAILED.
 * *ABANDONED is set when a stop signal ended the tasks' Hadoop job before it finished: no task has a result, and
 * nothing of the job may be committed. */
static int execute(kg_job_t *job, kg_state_t *state, size_t *failed, bool *abandoned, char *errbuf) {
  const kg_config_t *c = job->config;
  int64_t run_start = kg_mono_ms();
  kg_task_spec_t base = {.job_dir = job->job_dir, .extract_id = job->extract_id, .fs = job->fs, .writer = job->writer};
  job->tasks = kg_executor_make_tasks(c, job->plan.units, job->plan.nunits, &base, job->start_ms, &job->ntasks);
  kg_executor_t x = {.config = c,
                     .tasks = job->tasks,
                     .ntasks = job->ntasks,
                     .state = state,
                     .job_id = job->job_id,
                     .job_dir = job->job_dir,
                     .fs = job->fs,
                     .report = &job->report};
  /* A run with nothing to pull is not worth a Hadoop job (15 s or more): its tasks only carry the offsets on. */
  bool nothing = true;
  for (size_t i = 0; i < job->ntasks && nothing; i++)
    for (size_t u = 0; u < job->tasks[i].spec.nunits && nothing; u++)
      nothing = job->tasks[i].spec.units[u]->high <= job->tasks[i].spec.units[u]->low;
  if (c->launcher == KG_LAUNCHER_MAPREDUCE && nothing)
    KG_INFO("Nothing to pull: the %zu tasks run here rather than as a Hadoop job", job->ntasks);
  if (c->launcher == KG_LAUNCHER_MAPREDUCE && !nothing) {
    kg_mr_run_t mr = {.config = c,
                      .job_id = job->job_id,
                      .job_dir = job->job_dir,
                      .extract_id = job->extract_id,
                      .fs = job->fs,
                      .tasks = job->tasks,
                      .ntasks = job->ntasks};
    char mr_err[KG_ERRLEN];
    if (kg_mr_run(&mr, abandoned, mr_err) && !*abandoned) KG_ERROR("%s", mr_err);
  } else {
    kg_executor_run(&x);
  }
  char md[64];
  snprintf(md, sizeof md, "{\"durationMs\":%lld}", (long long)(kg_mono_ms() - run_start));
  kg_report_event(&job->report, "JobRunTimer", md);
  int task_rc = KG_OK;
  *failed = 0;
  if (*abandoned) return KG_OK;
  for (size_t i = 0; i < job->ntasks; i++) {
    const kg_task_t *t = &job->tasks[i];
    kg_metrics_merge(&job->metrics, &t->result.metrics);
    if (t->result.succeeded) continue;
    if (!*failed) kg_fail(errbuf, KG_EFAILED, "task %s failed: %s", t->spec.task_id, t->result.error);
    if (!*failed || t->result.rc == KG_EBUDGET) task_rc = t->result.rc ? t->result.rc : KG_EFAILED;
    (*failed)++;
  }
  kg_metrics_add(&job->metrics, KG_M_JOB_RECORDS_WRITTEN, kg_metrics_get(&job->metrics, KG_M_RECORDS_WRITTEN));
  if (*failed > 1) {
    size_t n = strlen(errbuf);
    snprintf(errbuf + n, KG_ERRLEN - n, " (and %zu more failed tasks)", *failed - 1);
  }
  return task_rc;
}

static int commit(kg_job_t *job, kg_state_t *state, char *errbuf) {
  int64_t duration = 0;
  int rc =
      kg_commit(state, &job->publish, job->job_id, job->config->final_dir, job->tasks, job->ntasks, &duration, errbuf);
  if (!rc) {
    char md[64];
    snprintf(md, sizeof md, "{\"durationMs\":%lld}", (long long)duration);
    kg_report_event(&job->report, "JobCommitTimer", md);
  }
  return rc;
}

/* How a committed run ended: partitions a fetch error stopped short were committed up to where they got, and are
 * named with the error (which broker, why) so that a scheduler's log and the history show the run was partial and
 * why (the next run goes on from there), as are partitions the brokers gave no offsets for, which were not pulled
 * and keep their stored offsets; a stop signal that ended a partition early makes the run STOPPED (one that came
 * later changes nothing). JOB->partial gets the history's line for a PARTIAL run, "" otherwise. */
static kg_outcome_t outcome_of(kg_job_t *job) {
  kg_buf_t behind = {0};
  size_t nbehind = 0;
  bool stopped = false;
  for (size_t i = 0; i < job->ntasks; i++)
    for (size_t u = 0; u < job->tasks[i].spec.nunits; u++) {
      const kg_unit_result_t *r = &job->tasks[i].result.units[u];
      const kg_workunit_t *wu = job->tasks[i].spec.units[u];
      stopped |= r->stopped;
      if (!r->fetch_failed || r->actual_high >= wu->high) continue;
      if (nbehind++ < 10)
        kg_buf_appendf(&behind, "%s%s:%d at %lld of %lld%s%s", behind.len ? "; " : "", wu->topic, wu->partition,
                       (long long)r->actual_high, (long long)wu->high, r->fetch_error[0] ? ": " : "", r->fetch_error);
    }
  kg_outcome_t outcome = KG_OUTCOME_SUCCESSFUL;
  job->partial[0] = 0;
  if (nbehind) {
    KG_WARN("%zu partitions stopped short of their high watermark after fetch errors (the next run goes on from "
            "there): %s%s",
            nbehind, behind.data, nbehind > 10 ? "; ..." : "");
    snprintf(job->partial, sizeof job->partial,
             "%zu partitions stopped short of their high watermark after fetch errors (the next run goes on from "
             "there): %s%s",
             nbehind, behind.data, nbehind > 10 ? "; ..." : "");
    outcome = KG_OUTCOME_PARTIAL;
  }
  if (job->plan.nunanswered) {
    KG_WARN("%zu partitions were not pulled: the brokers gave no offsets for them within kafka.metadata.timeout.ms "
            "(they keep their stored offsets; the next run tries again): %s%s",
            job->plan.nunanswered, job->plan.unanswered, job->plan.nunanswered > 10 ? ", ..." : "");
    size_t used = strlen(job->partial);
    snprintf(job->partial + used, sizeof job->partial - used,
             "%s%zu partitions not pulled, the brokers gave no offsets: %s%s", used ? "; " : "", job->plan.nunanswered,
             job->plan.unanswered, job->plan.nunanswered > 10 ? ", ..." : "");
    outcome = KG_OUTCOME_PARTIAL;
  }
  kg_buf_free(&behind);
  if (stopped) job->partial[0] = 0;
  return stopped ? KG_OUTCOME_STOPPED : outcome;
}

/* A run in which partitions had records to read and not one moved (no record read, none skipped, no offset
 * advanced: every partition stopped where it started, after fetch errors say) has done nothing a commit could
 * keep: it fails, whatever job.fail.on.partial says, so that a broker the tasks cannot read from is not taken for
 * a quiet topic. A stop signal that ended a partition is not this (the run is STOPPED). KG_ESTALLED naming the
 * partitions and what stopped each, or KG_OK. */
static int check_moved(const kg_job_t *job, char *errbuf) {
  size_t waiting = 0;
  for (size_t i = 0; i < job->ntasks; i++)
    for (size_t u = 0; u < job->tasks[i].spec.nunits; u++) {
      const kg_unit_result_t *r = &job->tasks[i].result.units[u];
      const kg_workunit_t *wu = job->tasks[i].spec.units[u];
      if (r->stopped || r->records > 0 || r->deleted > 0 || r->actual_high > wu->low) return KG_OK;
      if (wu->high > wu->low) waiting++;
    }
  if (!waiting) return KG_OK;
  kg_buf_t why = {0};
  size_t named = 0;
  for (size_t i = 0; i < job->ntasks; i++)
    for (size_t u = 0; u < job->tasks[i].spec.nunits; u++) {
      const kg_unit_result_t *r = &job->tasks[i].result.units[u];
      const kg_workunit_t *wu = job->tasks[i].spec.units[u];
      if (wu->high <= wu->low || named++ >= 5) continue;
      const char *cause = r->fetch_failed && r->fetch_error[0]     ? r->fetch_error
                          : r->premature_stop && r->stop_reason[0] ? r->stop_reason
                                                                   : "no record was read";
      kg_buf_appendf(&why, "%s%s:%d (offsets %lld to %lld): %s", why.len ? "; " : "", wu->topic, wu->partition,
                     (long long)wu->low, (long long)wu->high, cause);
    }
  kg_fail(errbuf, KG_ESTALLED,
          "nothing moved: %zu partitions had records to read and not one was read, so nothing is committed and the "
          "offsets stay where they were: %s%s",
          waiting, why.data, waiting > 5 ? "; ..." : "");
  kg_buf_free(&why);
  return KG_ESTALLED;
}

/* The folder of the runs' task data: task.data.root.dir, or mr.job.root.dir for a run on Hadoop. */
static const char *job_root(const kg_config_t *c) {
  const char *mr_root = kg_props_get(c->props, "mr.job.root.dir");
  return c->launcher == KG_LAUNCHER_MAPREDUCE && mr_root && *mr_root ? mr_root : c->task_data_root;
}

/* The file systems and the writer the job's properties name. */
static int open_outputs(kg_job_t *job, char *errbuf) {
  const kg_config_t *c = job->config;
  const char *fs_property = NULL;
  const char *fs_uri = kg_fs_writer_uri(c, &fs_property);
  const char *pub_uri = kg_props_get(c->props, "data.publisher.fs.uri");
  int rc = kg_fs_open_config(fs_uri, fs_property, c, &job->fs, errbuf);
  if (rc) return rc;
  if (job->fs->object)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s=%s: task output cannot be staged on an object store (%s:// has no rename and no appends); "
                   "keep task.data.root.dir local (writer.fs.uri=file:///) and put the final folder there with "
                   "data.publisher.fs.uri=%s",
                   fs_property, fs_uri, job->fs->scheme, fs_uri);
  if (!pub_uri || !*pub_uri || !strcmp(pub_uri, fs_uri)) {
    job->pub_fs = job->fs;
  } else {
    if ((rc = kg_fs_open_config(pub_uri, "data.publisher.fs.uri", c, &job->pub_fs, errbuf))) return rc;
    if (job->pub_fs->object && strcmp(job->fs->scheme, "file"))
      return kg_fail(errbuf, KG_EINVAL,
                     "data.publisher.fs.uri=%s and %s=%s: the commit writes objects from local task data; use a "
                     "local writer.fs.uri (file:///) with an object store's data.publisher.fs.uri",
                     pub_uri, fs_property, fs_uri);
    if (job->pub_fs->object && c->launcher == KG_LAUNCHER_MAPREDUCE)
      return kg_fail(errbuf, KG_EINVAL,
                     "data.publisher.fs.uri=%s: a run on Hadoop (launcher.type=MAPREDUCE) publishes by renames on "
                     "HDFS; an object store's final folder is for a run on this machine (launcher.type=LOCAL)",
                     pub_uri);
    /* Across file systems the commit uploads from task output: that reads local files. */
    if (strcmp(job->fs->scheme, "file") || !strcmp(job->pub_fs->scheme, "file"))
      return kg_fail(errbuf, KG_EINVAL,
                     "data.publisher.fs.uri=%s and %s=%s: publishing across file systems goes from local task data "
                     "to HDFS only; use one file system for both, or a local writer.fs.uri with a webhdfs:// "
                     "data.publisher.fs.uri",
                     pub_uri, fs_property, fs_uri);
  }
  job->publish = (kg_publish_t){.src = job->fs,
                                .dst = job->pub_fs,
                                .threads = c->publish_threads,
                                .final_dir = c->final_dir,
                                .job_name = c->job_name};
  return kg_writer_find(kg_props_get(c->props, "writer.builder.class"), c->output_format, &job->writer, errbuf);
}

/* Takes the lock, checks what can be checked before a record moves, opens the state, finishes an interrupted
 * commit and cleans up after dead runs. *LOCK and *STATE are the caller's to release, also on failure. */
static int prepare(kg_job_t *job, kg_lock_t **lock, kg_state_t **state, char *errbuf) {
  const kg_config_t *c = job->config;
  int rc;
  /* The work dir, and the local task data, which hold what a run read, are made readable by their owner only (the
   * state store's folder by kg_state_open and the locks). */
  if (c->work_dir && *c->work_dir && (rc = kg_fs_local_mkdirs_mode(c->work_dir, 0700, errbuf)))
    return kg_fail(errbuf, rc, "the work dir %s cannot be created: %s", c->work_dir, strerror(errno));
  if (!strcmp(job->fs->scheme, "file") && (rc = kg_fs_local_mkdirs_mode(c->task_data_root, 0700, errbuf)))
    return kg_fail(errbuf, rc, "task.data.root.dir: %s cannot be created: %s", c->task_data_root, strerror(errno));
  if (c->lock_enabled) {
    /* The job lock and the lock beside the state database, which every edit of the state takes (lock.h). */
    long holder = 0;
    char *state_path = kg_state_path(c->state_store_dir, c->job_name);
    rc = kg_lock_acquire_job(c->lock_dir, state_path, c->job_name, lock, &holder, errbuf);
    free(state_path);
    if (rc == KG_ELOCKED) {
      kg_fail(errbuf, KG_ELOCKED, "Previous instance of job %s is still running, skipping this run", c->job_name);
      KG_INFO("%s (lock held by process %ld)", errbuf, holder);
    }
    if (rc) return rc;
  }
  if ((rc = kg_fs_check_writable(job->pub_fs, c->final_dir, "data.publisher.final.dir", errbuf))) return rc;
  /* Task data on a file system with modes of its own (HDFS) is made its owner's only too, when it is made. */
  char why[KG_ERRLEN];
  if (strcmp(job->fs->scheme, "file") && (rc = kg_fs_mkdirs_private(job->fs, c->task_data_root, why)))
    return kg_fail(errbuf, rc, "task.data.root.dir: %s", why);
  if ((rc = kg_fs_check_writable(job->fs, c->task_data_root, "task.data.root.dir", errbuf))) return rc;
  if (!kg_publish_crosses(&job->publish) &&
      (rc = kg_fs_check_same_fs(job->fs, c->task_data_root, "task.data.root.dir", c->final_dir,
                                "data.publisher.final.dir", errbuf)))
    return rc;
  if (c->launcher == KG_LAUNCHER_MAPREDUCE && (rc = kg_mr_check(c, job->fs, job->pub_fs, true, errbuf))) return rc;
  if ((rc = kg_state_open(c->state_store_dir, c->job_name, true, state, errbuf))) return rc;
  if ((rc = kg_lua_job_check(c->job_is_lua ? c->job_file : NULL, errbuf))) return rc;
  if ((rc = kg_commit_recover(*state, &job->publish, errbuf))) return rc;
  if (*lock) {
    kg_commit_remove_dead_runs(c, job->fs, job_root(c), job->job_id);
    if ((rc = kg_state_runs_died(*state, job->job_id, errbuf))) return rc;
  }
  return KG_OK;
}

/* Reports the run: task data removed, the WARN for records that did not arrive, the metrics file, the history,
 * and the last log line. RC is the run's result, OUTCOME how a successful one ended. */
static void report(kg_job_t *job, kg_state_t *state, bool recorded, int rc, kg_outcome_t outcome, const char *error) {
  if (rc == KG_ELOCKED) return; /* another run's: nothing of this one to report */
  char err[KG_ERRLEN];
  /* A commit of this run that stays journaled (a move failed and could not be undone, or may have happened) is
   * finished by the next run from the task output: that must stay. */
  char *pending = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  /* A journal that cannot be read may hold this run's commit: the task data stays then too. */
  int pending_rc = state ? kg_state_pending(state, &pending, &moves, &nmoves, err) : KG_OK;
  bool keep = state && (pending_rc || (pending && !strcmp(pending, job->job_id)));
  free(pending);
  kg_state_free_moves(moves, nmoves);
  if (keep)
    KG_WARN("Keeping the task data in %s: the next run finishes this run's commit from it", job->job_dir);
  else if (job->fs && kg_fs_remove_tree(job->fs, job->job_dir, err))
    KG_WARN("%s", err);
  kg_report_failed_records(job->tasks, job->ntasks);
  static const char *outcomes[] = {"SUCCESSFUL", "PARTIAL", "STOPPED"};
  job->report.result = rc ? "FAILED" : outcomes[outcome];
  job->report.end_ms = kg_now_ms();
  kg_report_write(&job->report, job->tasks, job->ntasks, &job->metrics, rc == KG_OK);
  char stopped[96] = "";
  if (rc == KG_OK && outcome == KG_OUTCOME_STOPPED)
    snprintf(stopped, sizeof stopped, "stopped by %s; the next run goes on from here",
             kg_stop_signal() == SIGINT ? "SIGINT" : "SIGTERM");
  if (state && recorded) {
    kg_run_counts_t counts = kg_report_counts(&job->metrics, job->tasks, job->ntasks);
    if (kg_state_run_end(state, job->job_id, job->report.end_ms, &counts, rc ? "FAILED" : outcomes[outcome],
                         rc                              ? error
                         : outcome == KG_OUTCOME_PARTIAL ? job->partial
                                                         : stopped,
                         err))
      KG_WARN("%s", err);
  }
  char tombstones[80] = ""; /* Avro topics' deleted records: named only where there were some */
  int64_t ntombstones = (int64_t)kg_metrics_get(&job->metrics, KG_M_TOMBSTONES);
  if (ntombstones)
    snprintf(tombstones, sizeof tombstones, "; %lld tombstones (deleted records)", (long long)ntombstones);
  if (rc == KG_OK)
    KG_INFO("Job %s %s in %lldms: %lld records, %lld bytes written%s", job->job_id,
            outcome == KG_OUTCOME_STOPPED ? "stopped" : "completed", (long long)(kg_now_ms() - job->start_ms),
            (long long)kg_metrics_get(&job->metrics, KG_M_RECORDS_WRITTEN),
            (long long)kg_metrics_get(&job->metrics, KG_M_BYTES_WRITTEN), tombstones);
}

/* The report's view of the source: the brokers' earliest and latest offsets of N partitions (kg_kafka_offsets_bulk),
 * on a client of its own. */
static int source_offsets(const kg_config_t *config, const char *const *topics, const int32_t *partitions, size_t n,
                          int64_t *earliest, int64_t *latest, const char **errors, char *errbuf) {
  kg_partition_offsets_t *parts = kg_xcalloc(n ? n : 1, sizeof *parts);
  for (size_t i = 0; i < n; i++) {
    parts[i].topic = topics[i];
    parts[i].partition = partitions[i];
  }
  kg_kafka_t *kafka = NULL;
  int rc = kg_kafka_new(config, &kafka, errbuf);
  if (!rc) rc = kg_kafka_offsets_bulk(kafka, parts, n, errbuf);
  kg_kafka_destroy(kafka);
  for (size_t i = 0; i < n; i++) {
    earliest[i] = parts[i].earliest;
    latest[i] = parts[i].latest;
    errors[i] = parts[i].error;
  }
  free(parts);
  return rc;
}

int kg_job_run(const kg_config_t *c, kg_outcome_t *outcome, char *errbuf) {
  kg_job_t job = {.config = c};
  *outcome = KG_OUTCOME_SUCCESSFUL;
  job.start_ms = kg_now_ms();
  job.job_id = kg_xasprintf("job_%s_%lld", c->job_name, (long long)job.start_ms);
  kg_log_set_job(c->job_name, job.job_id);
  time_t secs = (time_t)(job.start_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(job.extract_id, sizeof job.extract_id, "%Y%m%d%H%M%S", &tm);
  job.job_dir = kg_xasprintf("%s/%s/%s", job_root(c), c->job_name, job.job_id);
  kg_report_init(&job.report, c, job.job_id, job.start_ms);
  job.report.source_offsets = source_offsets;
  kg_lock_t *lock = NULL;
  kg_state_t *state = NULL;
  bool recorded = false, abandoned = false;
  size_t failed = 0;

  KG_INFO("Starting job %s (%s) from %s", c->job_name, job.job_id, c->job_file);
  int rc = open_outputs(&job, errbuf);
  if (!rc) rc = prepare(&job, &lock, &state, errbuf);
  if (!rc) rc = kg_state_run_begin(state, job.job_id, job.start_ms, errbuf);
  recorded = rc == KG_OK;
  if (recorded) kg_report_begin(&job.report, state);

  /* Discover. */
  if (!rc) rc = kg_source_plan(c, state, &job.plan, errbuf);
  if (!rc) {
    char md[128];
    snprintf(md, sizeof md, "{\"workUnitsCreated\":%zu,\"durationMs\":%lld}", job.plan.nunits,
             (long long)job.plan.duration_ms);
    kg_report_event(&job.report, "WorkUnitsCreationTimer", md);
    if (job.plan.offset_resets) kg_metrics_add(&job.metrics, KG_M_OFFSET_RESETS, (double)job.plan.offset_resets);
    snprintf(md, sizeof md, "{\"workUnits\":%zu}", job.plan.nunits);
    kg_report_event(&job.report, "WorkUnitsCreated", md);
  }
  if (!rc && kg_stop_signal()) { /* nothing was pulled yet: nothing to commit */
    *outcome = KG_OUTCOME_STOPPED;
  } else if (!rc) {
    /* Pack and execute, then commit. */
    int task_rc = execute(&job, state, &failed, &abandoned, errbuf);
    if (abandoned) {
      /* The Hadoop job was killed on a stop signal: none of it is published, no offset moves. */
      *outcome = KG_OUTCOME_STOPPED;
    } else if (failed && c->commit_policy == KG_COMMIT_FULL) {
      rc = task_rc;
      KG_ERROR("%zu of %zu tasks failed; job.commit.policy=full: nothing is published and no offset moves", failed,
               job.ntasks);
      /* What the tasks that succeeded wrote is not published either: the run wrote nothing. */
      const char *written[] = {KG_M_RECORDS_WRITTEN, KG_M_BYTES_WRITTEN, KG_M_JOB_RECORDS_WRITTEN};
      for (size_t i = 0; i < sizeof written / sizeof written[0]; i++)
        kg_metrics_add(&job.metrics, written[i], -kg_metrics_get(&job.metrics, written[i]));
    } else if (failed) {
      KG_ERROR("%zu of %zu tasks failed; job.commit.policy=successful: committing the %zu tasks that succeeded", failed,
               job.ntasks, job.ntasks - failed);
      char cerr[KG_ERRLEN];
      rc = commit(&job, state, cerr);
      if (rc)
        snprintf(errbuf, KG_ERRLEN, "%s", cerr);
      else
        rc = task_rc; /* the run still failed: some of it did not arrive */
    } else if (!(rc = check_moved(&job, errbuf))) {
      rc = commit(&job, state, errbuf);
      if (!rc) *outcome = outcome_of(&job);
      if (!rc && *outcome == KG_OUTCOME_PARTIAL) snprintf(errbuf, KG_ERRLEN, "%s", job.partial);
    }
  }

  report(&job, state, recorded, rc, *outcome, errbuf);
  kg_state_close(state);
  kg_lock_release(lock);
  kg_executor_free_tasks(job.tasks, job.ntasks);
  kg_plan_clear(&job.plan);
  kg_metrics_free(&job.metrics);
  kg_report_clear(&job.report);
  if (job.pub_fs != job.fs) kg_fs_close(job.pub_fs);
  kg_fs_close(job.fs);
  free(job.job_dir);
  free(job.job_id);
  return rc;
}

/* Compiles topic.whitelist and topic.blacklist as planning does, each alone so that an error names the one it
 * is about and where the job set it. */
static int check_topics(const kg_config_t *c, char *errbuf) {
  const char *names[] = {"topic.whitelist", "topic.blacklist"}, *lists[] = {c->topic_whitelist, c->topic_blacklist};
  for (int i = 0; i < 2; i++) {
    kg_topic_filter_t *filter = NULL;
    char why[KG_ERRLEN];
    int rc = kg_topic_filter_new(i ? "" : lists[i], i ? lists[i] : "", &filter, why);
    kg_topic_filter_destroy(filter);
    const char *origin = kg_props_origin(c->props, names[i]);
    if (rc) return kg_fail(errbuf, rc, "%s: %s", origin ? origin : c->job_file, why);
  }
  return KG_OK;
}

int kg_job_check(const kg_config_t *c, const kg_writer_ops_t **writer, char *errbuf) {
  kg_job_t job = {.config = c};
  int rc = open_outputs(&job, errbuf);
  if (!rc && c->launcher == KG_LAUNCHER_MAPREDUCE) rc = kg_mr_check(c, job.fs, job.pub_fs, false, errbuf);
  if (!rc) rc = kg_lua_job_check(c->job_is_lua ? c->job_file : NULL, errbuf);
  if (!rc) rc = check_topics(c, errbuf);
  if (!rc) rc = kg_kafka_check_config(c, errbuf);
  kg_estimator_options_t estimator = kg_estimator_of(c);
  if (!rc) rc = kg_estimate_sizes(&estimator, NULL, 0, NULL, 0, errbuf); /* no units: CUSTOM's estimateSize is there */
  if (!rc && kg_registry_settings(c)->framing != KG_FRAMING_NONE) {
    kg_avro_schemas_t *schemas = kg_avro_schemas_new();
    kg_avro_input_t *input = NULL;
    rc = kg_avro_input_new(c, schemas, &input, errbuf); /* a registry client: nothing is asked of it */
    kg_avro_input_destroy(input);
    kg_avro_schemas_destroy(schemas);
  }
  if (writer) *writer = rc ? NULL : job.writer;
  if (job.pub_fs != job.fs) kg_fs_close(job.pub_fs);
  kg_fs_close(job.fs);
  return rc;
}

int kg_job_plan(const kg_config_t *c, kg_job_plan_t *out, char *errbuf) {
  memset(out, 0, sizeof *out);
  kg_state_t *state = NULL;
  int rc = kg_state_open_readonly(c->state_store_dir, c->job_name, &state, errbuf);
  if (rc == KG_ENOTFOUND) rc = KG_OK; /* a job that never ran: every partition is new */
  if (!rc) rc = kg_source_plan(c, state, &out->plan, errbuf);
  kg_state_close(state);
  if (rc) return rc;
  out->groups =
      kg_pack(out->plan.units, out->plan.nunits, c->max_mappers, c->packer, c->pre_grouping_factor, &out->ngroups);
  return KG_OK;
}

void kg_job_plan_clear(kg_job_plan_t *p) {
  kg_groups_free(p->groups, p->ngroups);
  kg_plan_clear(&p->plan);
  memset(p, 0, sizeof *p);
}
