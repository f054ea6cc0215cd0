/* task.c: the extractor loop of one task.
 *
 * For each work unit, in order: start fetching at the low watermark, take batches of records, drop those
 * below the next expected offset or at/after the high watermark, hand the rest to Lua in one protected
 * call (decodeRecord), and write what comes back. A script error fails the record it happened on; the
 * batch call then resumes after it. */
#include "task.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"
#include "kafka.h"
#include "lua_bridge.h"
#include "writer.h"

/* The writer of one file path, opened on the first record that goes there. */
typedef struct {
  char *file_path; /* FP, or FP/_errors for quarantined records */
  const char *ext; /* file extension */
  bool quarantine; /* JSON lines of failed records, not the job's output format */
  char *staging;
  kg_writer_t *writer;
} kg_output_t;

typedef struct {
  kg_task_t *task;
  kg_output_t *outputs;
  size_t noutputs;
  size_t current; /* index of the output of the partition being pulled */
  int write_rc;
  char write_error[KG_ERRLEN];
  int64_t started_ms;      /* monotonic start of the task, for the rate limit */
  int64_t task_records;    /* records pulled by the task so far */
  /* A record's outputs are all or nothing: where things stood before the record being processed wrote its
   * first output, so that a failure later in its converters can take back what it wrote. */
  const kg_record_t *emitting; /* that record, NULL when no output was written since the batch call began */
  size_t mark_output;          /* the output it writes to */
  int64_t mark_records;        /* that output's records and bytes before the record (0 when not open) */
  int64_t mark_bytes;
  /* The error budget (task.skip.error.records, decode.error.max.ratio). */
  int64_t failed_decode;  /* records whose decodeRecord failed */
  int64_t failed_convert; /* records whose converter failed */
  int64_t range_total;    /* the most records the task can read: the sum of its ranges (or its count limit) */
} kg_task_run_t;

char *kg_task_file_path(const kg_config_t *c, const char *topic, const char *extract_id) {
  if (c->path_type == KG_PATH_TABLENAME) return kg_xstrdup(topic);
  char *ns = kg_xstrdup(c->extract_namespace);
  for (char *p = ns; *p; p++)
    if (*p == '.') *p = '/';
  char *fp;
  if (c->path_type == KG_PATH_NAMESPACE_TABLE)
    fp = *ns ? kg_xasprintf("%s/%s", ns, topic) : kg_xstrdup(topic);
  else
    fp = *ns ? kg_xasprintf("%s/%s/%s_append", ns, topic, extract_id) : kg_xasprintf("%s/%s_append", topic, extract_id);
  free(ns);
  return fp;
}

/* The output for FP (taken over) with extension EXT; returns its index in run->outputs. */
static size_t output_for(kg_task_run_t *run, char *fp, const char *ext, bool quarantine) {
  kg_task_t *t = run->task;
  for (size_t i = 0; i < run->noutputs; i++)
    if (!strcmp(run->outputs[i].file_path, fp)) {
      free(fp);
      return i;
    }
  run->outputs = kg_xrealloc(run->outputs, (run->noutputs + 1) * sizeof(kg_output_t));
  kg_output_t *o = &run->outputs[run->noutputs];
  o->file_path = fp;
  o->ext = ext;
  o->quarantine = quarantine;
  o->staging = kg_xasprintf("%s/task-staging/%s/part.%s.%s", t->spec.job_dir, fp, t->spec.task_id, ext);
  o->writer = NULL;
  return run->noutputs++;
}

/* Appends one record to output IDX, opening its file on first use. */
static int output_write(kg_task_run_t *run, size_t idx, const char *data, size_t len) {
  kg_output_t *o = &run->outputs[idx];
  const kg_config_t *c = run->task->spec.config;
  if (!o->writer) {
    kg_writer_options_t jsonl = {"\n", 1, false};
    kg_writer_options_t options = {c->delimiter, c->delimiter_len, c->prepend_size};
    int rc = o->quarantine
                 ? kg_writer_open(run->task->spec.fs, &kg_writer_simple, o->staging, &jsonl, &o->writer, run->write_error)
                 : kg_writer_open(run->task->spec.fs, run->task->spec.writer, o->staging, &options, &o->writer, run->write_error);
    if (rc) return rc;
  }
  return kg_writer_write(o->writer, data, len, run->write_error);
}

static void base64(kg_buf_t *out, const unsigned char *p, size_t n) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    char q[4] = {tbl[v >> 18 & 63], tbl[v >> 12 & 63], i + 1 < n ? tbl[v >> 6 & 63] : '=',
                 i + 2 < n ? tbl[v & 63] : '='};
    kg_buf_append(out, q, 4);
  }
}

/* decode.error.policy=quarantine: the raw record and its error, as one JSON line in FP/_errors. */
static int quarantine(kg_task_run_t *run, const kg_workunit_t *wu, const kg_record_t *r, const char *stage,
                      const char *error) {
  kg_task_t *t = run->task;
  char *fp = kg_task_file_path(t->spec.config, wu->topic, t->spec.extract_id);
  size_t idx = output_for(run, kg_xasprintf("%s/_errors", fp), "jsonl", true);
  free(fp);
  kg_buf_t line = {0};
  kg_buf_append(&line, "{\"topic\":", 9);
  kg_json_string(&line, wu->topic);
  kg_buf_appendf(&line, ",\"partition\":%d,\"offset\":%.0f,\"timestamp\":%.0f,\"stage\":", r->partition, r->offset,
                 r->timestamp);
  kg_json_string(&line, stage);
  kg_buf_append(&line, ",\"error\":", 9);
  kg_json_string(&line, error);
  kg_buf_append(&line, ",\"key_base64\":", 14);
  if (r->key_ptr) {
    kg_buf_append(&line, "\"", 1);
    base64(&line, (const unsigned char *)r->key_ptr, r->key_len);
    kg_buf_append(&line, "\"", 1);
  } else {
    kg_buf_append(&line, "null", 4);
  }
  kg_buf_append(&line, ",\"value_base64\":", 16);
  if (r->value_ptr) {
    kg_buf_append(&line, "\"", 1);
    base64(&line, (const unsigned char *)r->value_ptr, r->value_len);
    kg_buf_append(&line, "\"", 1);
  } else {
    kg_buf_append(&line, "null", 4);
  }
  kg_buf_append(&line, "}", 1);
  int rc = output_write(run, idx, line.data, line.len);
  kg_buf_free(&line);
  return rc;
}

static int emit(void *ctx, const kg_record_t *record, const char *data, size_t len) {
  kg_task_run_t *run = ctx;
  if (run->write_rc) return run->write_rc;
  if (record != run->emitting) {
    const kg_output_t *o = &run->outputs[run->current];
    run->emitting = record;
    run->mark_output = run->current;
    run->mark_records = o->writer ? kg_writer_records(o->writer) : 0;
    run->mark_bytes = o->writer ? kg_writer_bytes(o->writer) : 0;
  }
  run->write_rc = output_write(run, run->current, data, len);
  kg_crash_point("write");
  return run->write_rc;
}

/* Takes back the outputs RECORD wrote before it failed, so that a record's outputs are all or nothing. */
static int take_back(kg_task_run_t *run, const kg_record_t *record, char *errbuf) {
  if (!record || record != run->emitting) return KG_OK; /* it wrote nothing */
  run->emitting = NULL;
  kg_output_t *o = &run->outputs[run->mark_output];
  if (!o->writer) return KG_OK;
  if (run->mark_records == 0) { /* the record opened the file: remove it, so no empty file is published */
    kg_writer_abort(o->writer);
    o->writer = NULL;
    return KG_OK;
  }
  return kg_writer_truncate(o->writer, run->mark_records, run->mark_bytes, errbuf);
}

/* The records and bytes the task's writers hold, quarantined records aside: what the task has written. */
static void written(const kg_task_run_t *run, int64_t *records, int64_t *bytes) {
  *records = *bytes = 0;
  for (size_t i = 0; i < run->noutputs; i++) {
    const kg_output_t *o = &run->outputs[i];
    if (!o->writer || o->quarantine) continue;
    *records += kg_writer_records(o->writer);
    *bytes += kg_writer_bytes(o->writer);
  }
}

/* The first line of TEXT into OUT (SIZE bytes). */
static void first_line(char *out, size_t size, const char *text) {
  size_t n = strcspn(text, "\n");
  snprintf(out, size, "%.*s", (int)n, text);
}

/* Whether the failures so far are over the budget, as a task error in ERRBUF (KG_EBUDGET), or KG_OK. READ is
 * what the ratio is taken of: the most records the task can read while it runs (so that a broken script fails
 * fast, and only when no later success could bring the ratio back under the bound), the records read at its
 * end. */
static int check_budget(const kg_task_run_t *run, int64_t read, const char *where, char *errbuf) {
  const kg_config_t *c = run->task->spec.config;
  int64_t failed = run->failed_decode + run->failed_convert;
  if (c->skip_error_limit_set && c->skip_error_limit >= 0 && failed > c->skip_error_limit)
    return kg_fail(errbuf, KG_EBUDGET,
                   "more than %lld records failed in the script (task.skip.error.records=%lld); last at %s; first: %s",
                   (long long)c->skip_error_limit, (long long)c->skip_error_limit, where, run->task->result.first_error);
  if (!c->skip_error_limit_set && run->failed_convert > 0)
    return kg_fail(errbuf, KG_EBUDGET,
                   "a converter failed at %s, and a task whose converter fails is failed, as in Gobblin (set "
                   "task.skip.error.records to how many records may fail, or -1 for no limit); first failure: %s",
                   where, run->task->result.first_error);
  if (c->error_max_ratio < 1 && (double)failed > c->error_max_ratio * (double)read)
    return kg_fail(errbuf, KG_EBUDGET,
                   "%lld of the task's %lld records failed in the script, more than decode.error.max.ratio=%g of them; "
                   "last at %s; first: %s",
                   (long long)failed, (long long)read, c->error_max_ratio, where, run->task->result.first_error);
  return KG_OK;
}

/* Record BAD of WU failed in the script with LERR: takes back its outputs, applies decode.error.policy, counts
 * it and checks the error budget. Returns KG_OK to go on with the next record, or the error that fails the
 * task. LOGGED counts the failures logged for this partition. */
static int record_failed(kg_task_run_t *run, kg_lua_t *lua, const kg_workunit_t *wu, kg_unit_result_t *res,
                         const kg_record_t *bad, const char *lerr, int *logged, char *errbuf) {
  kg_task_t *t = run->task;
  const kg_config_t *c = t->spec.config;
  char stage[64];
  kg_lua_stage(lua, stage, sizeof stage);
  /* A module the script cannot find, or a record view used as a string, is a broken job, not a bad record:
   * skipping would skip every record and move the offsets past them, so the task fails whatever
   * decode.error.policy says. */
  if ((strstr(lerr, "module '") && strstr(lerr, "' not found")) || strstr(lerr, KG_RECORD_NOT_A_STRING))
    return kg_fail(errbuf, KG_ELUA, "%s failed for %s:%d at offset %.0f: %s", stage, wu->topic, wu->partition,
                   bad->offset, lerr);
  if (take_back(run, bad, run->write_error)) return kg_fail(errbuf, KG_EIO, "%s", run->write_error);
  res->decode_errors++;
  kg_metrics_add(&t->result.metrics, KG_M_DECODE_ERRORS, 1);
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_FAILED, 1);
  if (c->decode_errors == KG_ERRORS_FAIL)
    return kg_fail(errbuf, KG_ELUA, "%s failed for %s:%d at offset %.0f (decode.error.policy=fail): %s", stage,
                   wu->topic, wu->partition, bad->offset, lerr);
  if (c->decode_errors == KG_ERRORS_QUARANTINE) {
    res->quarantined++;
    kg_metrics_add(&t->result.metrics, KG_M_QUARANTINED, 1);
    if (quarantine(run, wu, bad, stage, lerr)) return kg_fail(errbuf, KG_EIO, "%s", run->write_error);
  } else {
    res->skipped++;
    kg_metrics_add(&t->result.metrics, KG_M_SCRIPT_SKIPPED, 1);
  }
  if (!t->result.first_error[0]) {
    char line[KG_ERRLEN / 2];
    first_line(line, sizeof line, lerr);
    snprintf(t->result.first_error, sizeof t->result.first_error, "%s:%d offset %.0f: %s failed: %s", wu->topic, wu->partition,
             bad->offset, stage, line);
  }
  if ((*logged)++ < 5)
    KG_WARN("%s record %s:%d at offset %.0f: %s failed: %s",
            c->decode_errors == KG_ERRORS_QUARANTINE ? "Quarantining" : "Skipping", wu->topic, wu->partition,
            bad->offset, stage, lerr);
  if (!strncmp(stage, "converter", 9))
    run->failed_convert++;
  else
    run->failed_decode++;
  char where[256];
  snprintf(where, sizeof where, "%s:%d offset %.0f", wu->topic, wu->partition, bad->offset);
  return check_budget(run, run->range_total, where, errbuf);
}

/* Pulls one work unit. Returns KG_OK (the unit is done, perhaps short of its high watermark after a fetch
 * error), or an error that fails the task (script policy, write failure). */
/* What the extract limit allows one work unit: a deadline (monotonic ms, 0 for none) and a number of
 * records (-1 for no limit). */
typedef struct {
  int64_t deadline_ms;
  int64_t records;
} kg_allowance_t;

/* Sleeps until the task's record rate is back under extract.limit.rate (records per second). */
static void throttle(kg_task_run_t *run, int64_t task_records) {
  const kg_config_t *c = run->task->spec.config;
  if (!c->limit_enabled || c->limit_type != KG_LIMIT_RATE) return;
  double due_ms = (double)task_records / c->limit_rate_per_s * 1000.0;
  int64_t ahead = (int64_t)due_ms - (kg_mono_ms() - run->started_ms);
  if (ahead > 0) {
    struct timespec ts = {ahead / 1000, (ahead % 1000) * 1000000};
    nanosleep(&ts, NULL);
  }
}

static void stop_early(kg_unit_result_t *res, const kg_workunit_t *wu, int64_t next, const char *why) {
  res->premature_stop = true;
  snprintf(res->stop_reason, sizeof res->stop_reason, "%s", why);
  KG_INFO("Stopping partition %s:%d early at offset %lld of %lld: %s", wu->topic, wu->partition, (long long)next,
          (long long)wu->high, why);
}

static int pull_unit(kg_task_run_t *run, kg_kafka_t *kafka, kg_lua_t *lua, kg_record_t *records, kg_workunit_t *wu,
                     kg_allowance_t allow, kg_unit_result_t *res, char *errbuf) {
  kg_task_t *t = run->task;
  const kg_config_t *c = t->spec.config;
  int64_t start = kg_mono_ms();
  int64_t next = wu->low;
  res->actual_high = wu->low;
  KG_INFO("Pulling partition %s:%d from offset %lld to %lld, range=%lld", wu->topic, wu->partition, (long long)wu->low,
          (long long)wu->high, (long long)(wu->high - wu->low));
  if (wu->high <= wu->low) goto finished;

  run->current = output_for(run, kg_task_file_path(c, wu->topic, t->spec.extract_id), c->output_format, false);
  char ferr[KG_ERRLEN];
  if (kg_kafka_fetch_start(kafka, wu->topic, wu->partition, wu->low, ferr)) {
    KG_WARN("%s; moving on to the next partition", ferr);
    res->fetch_failed = true;
    goto finished;
  }
  kg_sink_t sink = {emit, run};
  int64_t last_progress = kg_mono_ms();
  int logged_errors = 0;
  while (next < wu->high) {
    if (kg_stop_signal()) {
      stop_early(res, wu, next, kg_stop_signal() == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM");
      res->stopped = true;
      break;
    }
    if (allow.deadline_ms && kg_mono_ms() >= allow.deadline_ms) {
      stop_early(res, wu, next, "extract.limit.type=time: the partition's share of the task's time is used up");
      break;
    }
    if (allow.records >= 0 && res->records >= allow.records) {
      stop_early(res, wu, next, "extract.limit.type=count: the partition's share of the task's records is pulled");
      break;
    }
    int64_t eof_offset = -1;
    /* Ask for no more than the range still needs, so the last batch returns as soon as it is complete. */
    int64_t want = wu->high - next;
    if (allow.records >= 0 && allow.records - res->records < want) want = allow.records - res->records;
    /* The deadline is checked between batches, so a batch is no bigger than what the script can take before it
     * at the pace it has kept on this partition (one record to begin with): a whole batch of a slow script
     * would otherwise run far past the partition's share. */
    if (allow.deadline_ms) {
      int64_t now = kg_mono_ms();
      double fit =
          res->records ? (double)(allow.deadline_ms - now) * (double)res->records / (double)(now - start + 1) + 1 : 1;
      if (fit < (double)want) want = fit < 1 ? 1 : (int64_t)fit;
    }
    int n = kg_kafka_fetch(kafka, records, want < c->batch_size ? (int)want : c->batch_size, 500, &eof_offset, ferr);
    if (n == KG_ERANGE) {
      /* Records were deleted under the reader (retention, delete-records): the reset policy decides where
       * to go on, and the range that can no longer be read is logged and counted. */
      int64_t earliest, latest;
      char oerr[KG_ERRLEN];
      if (kg_kafka_offsets(kafka, wu->topic, wu->partition, &earliest, &latest, oerr)) {
        KG_WARN("%s; %s; partition %s:%d stops at offset %lld", ferr, oerr, wu->topic, wu->partition, (long long)next);
        res->fetch_failed = true;
        break;
      }
      kg_offset_decision_t d = kg_offset_decide(c->bootstrap, c->reset, false, true, next, earliest, latest);
      static const char *policies[] = {"earliest", "latest", "nearest", "skip"};
      kg_metrics_add(&t->result.metrics, KG_M_OFFSET_RESETS, 1);
      if (d.reason != KG_START_RESET || !d.pull) {
        KG_WARN("Offset %lld of partition %s:%d went out of range [%lld, %lld] while it was read; %s: the partition "
                "stops here and keeps this offset",
                (long long)next, wu->topic, wu->partition, (long long)earliest, (long long)latest,
                d.reason == KG_START_RESET ? "reset.on.offset.out.of.range=skip" : "the broker answered oddly");
        res->fetch_failed = d.reason != KG_START_RESET;
        break;
      }
      int64_t to = d.low < wu->high ? d.low : wu->high;
      int64_t skipped = to > next ? to - next : 0;
      KG_WARN("Records %lld to %lld of partition %s:%d were deleted before they were read (the range is now [%lld, "
              "%lld]); reset.on.offset.out.of.range=%s goes on at %lld: %lld records skipped",
              (long long)next, (long long)(to - 1), wu->topic, wu->partition, (long long)earliest, (long long)latest,
              policies[c->reset], (long long)to, (long long)skipped);
      kg_metrics_add(&t->result.metrics, KG_M_RECORDS_SKIPPED, (double)skipped);
      res->deleted += skipped;
      next = to;
      if (next >= wu->high) break;
      if (kg_kafka_fetch_start(kafka, wu->topic, wu->partition, next, ferr)) {
        KG_WARN("%s; moving on to the next partition", ferr);
        res->fetch_failed = true;
        break;
      }
      continue;
    }
    if (n < 0) {
      KG_WARN("%s; partition %s:%d stops at offset %lld", ferr, wu->topic, wu->partition, (long long)next);
      res->fetch_failed = true;
      break;
    }
    /* Keep the records inside [next, high). A record at or past high means the range has been read. */
    int keep = 0;
    bool past_high = false;
    for (int i = 0; i < n; i++) {
      int64_t off = (int64_t)records[i].offset;
      if (off >= wu->high) past_high = true;
      if (off < next || off >= wu->high) continue;
      records[keep++] = records[i];
    }
    if (n > 0) kg_crash_point("fetch");
    if (allow.records >= 0 && keep > allow.records - res->records) keep = (int)(allow.records - res->records);
    if (keep > 0) {
      last_progress = kg_mono_ms();
      for (int i = 0; i < keep; i++)
        res->bytes += (int64_t)records[i].value_len;
      res->records += keep;
      atomic_store(&t->live.unit_records, res->records);
      kg_metrics_add(&t->result.metrics, KG_M_RECORDS_READ, keep);
      kg_batch_t batch = {.records = records, .count = keep, .next = 0, .sink = &sink};
      while (batch.next < batch.count) {
        char lerr[KG_ERRLEN];
        run->emitting = NULL; /* record views are reused: a pointer names a record within one batch only */
        atomic_store(&t->live.lua_since_ms, kg_mono_ms());
        int rc = kg_lua_process(lua, &batch, lerr);
        if (atomic_exchange(&t->live.lua_since_ms, 0) == KG_LUA_INTERRUPTING) {
          /* The watchdog claimed this batch: wait until its hook is set, then remove it if it did not fire. */
          while (!atomic_load(&t->live.hook_set))
            sched_yield();
          kg_lua_clear_interrupt(lua);
        }
        if (run->write_rc) return kg_fail(errbuf, run->write_rc, "%s", run->write_error);
        /* A batch the watchdog had to stop (script.batch.timeout.ms) is a broken script, not a bad record. */
        if (atomic_load(&t->live.interrupted))
          return kg_fail(errbuf, KG_ELUA,
                         "the script ran for more than %lld ms on one batch of %s:%d (offsets %.0f to %.0f) and was "
                         "stopped (script.batch.timeout.ms)",
                         (long long)c->batch_timeout_ms, wu->topic, wu->partition, records[0].offset,
                         records[keep - 1].offset);
        if (rc == KG_OK) break;
        rc = record_failed(run, lua, wu, res, &records[batch.next - 1], lerr, &logged_errors, errbuf);
        if (rc) return rc;
      }
      next = (int64_t)records[keep - 1].offset + 1;
      res->last = kg_fingerprint_record(&records[keep - 1]);
      run->task_records += keep;
      atomic_store(&t->live.read, run->task_records);
      int64_t records_written, bytes_written;
      written(run, &records_written, &bytes_written);
      atomic_store(&t->live.written, records_written);
      atomic_store(&t->live.bytes, bytes_written);
      throttle(run, run->task_records);
    }
    if (past_high && !(allow.records >= 0 && res->records >= allow.records)) next = wu->high;
    if (eof_offset >= 0) {
      /* Every record below the partition's end has come: offsets that did not are gone (deleted,
       * compacted, transaction markers). */
      int64_t end = eof_offset < wu->high ? eof_offset : wu->high;
      if (end > next) next = end;
      if (next < wu->high) break;
    }
    if (keep == 0 && kg_mono_ms() - last_progress > c->fetch_timeout_ms) {
      KG_WARN("No record from %s:%d for %lld ms (kafka.fetch.timeout.ms) at offset %lld, expected up to %lld; "
              "moving on to the next partition",
              wu->topic, wu->partition, (long long)c->fetch_timeout_ms, (long long)next, (long long)wu->high);
      res->fetch_failed = true;
      break;
    }
  }
  kg_kafka_fetch_stop(kafka);
  res->actual_high = next;
finished:
  res->elapsed_ms = kg_mono_ms() - start;
  KG_INFO("Finished pulling partition %s:%d", wu->topic, wu->partition);
  return KG_OK;
}

void kg_task_run(kg_task_t *t) {
  int64_t start = kg_mono_ms();
  kg_task_run_t run = {.task = t};
  t->result.units = kg_xcalloc(t->spec.nunits ? t->spec.nunits : 1, sizeof(kg_unit_result_t));
  t->result.succeeded = false;
  kg_kafka_t *kafka = NULL;
  kg_lua_t *lua = NULL;
  kg_record_t *records = kg_xcalloc((size_t)t->spec.config->batch_size, sizeof(kg_record_t));
  char *err = t->result.error;
  int rc = kg_lua_new(t->spec.config->job_is_lua ? t->spec.config->job_file : NULL, &lua, err);
  atomic_store(&t->live.lua, (void *)lua);
  if (!rc) rc = kg_kafka_new(t->spec.config, &kafka, err);

  const char *topic = NULL;
  int64_t extracted = 0;
  /* Time and count limits are shared fairly: each partition with records to pull gets an equal share of
   * what is left, so one slow partition cannot starve the ones after it, and what one leaves unused goes
   * to the rest. */
  run.started_ms = start;
  const kg_config_t *c = t->spec.config;
  int64_t task_deadline = c->limit_enabled && c->limit_type == KG_LIMIT_TIME ? start + c->limit_time_ms : 0;
  int64_t records_left = c->limit_enabled && c->limit_type == KG_LIMIT_COUNT ? c->limit_count : -1;
  size_t pending = 0;
  for (size_t i = 0; i < t->spec.nunits; i++) {
    pending += t->spec.units[i]->high > t->spec.units[i]->low;
    run.range_total += t->spec.units[i]->high - t->spec.units[i]->low;
  }
  if (records_left >= 0 && records_left < run.range_total) run.range_total = records_left;
  for (size_t i = 0; !rc && i < t->spec.nunits; i++) {
    kg_workunit_t *wu = t->spec.units[i];
    kg_allowance_t allow = {0, -1};
    if (wu->high > wu->low) {
      if (task_deadline) {
        int64_t now = kg_mono_ms();
        allow.deadline_ms = now + (task_deadline > now ? (task_deadline - now) / (int64_t)pending : 0);
        if (allow.deadline_ms <= now) allow.deadline_ms = now; /* nothing left: stops at once */
      }
      if (records_left >= 0)
        allow.records = records_left / (int64_t)pending + (records_left % (int64_t)pending ? 1 : 0);
      pending--;
    }
    if (!topic || strcmp(topic, wu->topic)) {
      if (topic) KG_INFO("Finished pulling topic %s", topic);
      topic = wu->topic;
      KG_INFO("Pulling topic %s", topic);
    }
    atomic_store(&t->live.current_unit, (int)i);
    atomic_store(&t->live.unit_records, 0);
    atomic_store(&t->live.unit_started_ms, kg_mono_ms());
    rc = pull_unit(&run, kafka, lua, records, wu, allow, &t->result.units[i], err);
    extracted += t->result.units[i].records;
    if (records_left >= 0) records_left -= t->result.units[i].records;
  }
  atomic_store(&t->live.unit_started_ms, 0);
  /* The ratio over what was really read: less than the ranges when a limit, a fetch error or a stop ended
   * the task early. */
  if (!rc) rc = check_budget(&run, extracted, "the end of the task", err);
  if (!rc && topic) KG_INFO("Finished pulling topic %s", topic);
  kg_metrics_add(&t->result.metrics, KG_M_EXTRACT_TIME, (double)(kg_mono_ms() - start));
  /* Counted per batch, so a task that read nothing would lack the counter: report it as 0 like the others. */
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_READ, 0);
  int64_t records_written, bytes_written;
  written(&run, &records_written, &bytes_written);
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_WRITTEN, (double)records_written);
  kg_metrics_add(&t->result.metrics, KG_M_BYTES_WRITTEN, (double)bytes_written);
  if (lua) {
    char cerr[KG_ERRLEN];
    if (kg_lua_collect(lua, &t->result.metrics, cerr)) KG_WARN("cannot collect the script's metrics: %s", cerr);
  }
  if (!rc) {
    KG_INFO("Extracted %lld data records", (long long)extracted);
    for (size_t i = 0; i < t->spec.nunits; i++)
      KG_INFO("Actual high watermark for partition %s:%d=%lld, expected=%lld", t->spec.units[i]->topic,
              t->spec.units[i]->partition, (long long)t->result.units[i].actual_high, (long long)t->spec.units[i]->high);
  }

  /* Close the staging files and move them to task output; on failure remove them. */
  for (size_t i = 0; i < run.noutputs; i++) {
    kg_output_t *o = &run.outputs[i];
    if (!o->writer) continue;
    if (rc) {
      kg_writer_abort(o->writer);
      o->writer = NULL;
      continue;
    }
    rc = kg_writer_close(o->writer, NULL, NULL, err);
    o->writer = NULL;
    if (rc) continue;
    char *output = kg_xasprintf("%s/task-output/%s/part.%s.%s", t->spec.job_dir, o->file_path, t->spec.task_id, o->ext);
    rc = kg_fs_move(t->spec.fs, o->staging, output, err);
    kg_crash_point("task-output");
    t->result.files = kg_xrealloc(t->result.files, (t->result.nfiles + 1) * sizeof(kg_task_file_t));
    kg_task_file_t *f = &t->result.files[t->result.nfiles++];
    f->file_path = kg_xstrdup(o->file_path);
    f->output = output;
    f->final = kg_xasprintf("%s/%s/part.%s.%s", t->spec.config->final_dir, o->file_path, t->spec.task_id, o->ext);
  }
  for (size_t i = 0; i < run.noutputs; i++) {
    if (run.outputs[i].writer) kg_writer_abort(run.outputs[i].writer);
    free(run.outputs[i].file_path);
    free(run.outputs[i].staging);
  }
  free(run.outputs);
  free(records);
  kg_kafka_destroy(kafka);
  atomic_store(&t->live.lua, NULL);
  kg_lua_destroy(lua);
  t->result.elapsed_ms = kg_mono_ms() - start;
  t->result.succeeded = rc == KG_OK;
  t->result.rc = rc;
  if (t->result.succeeded) {
    KG_INFO("Task %s completed in %lldms with state SUCCESSFUL", t->spec.task_id, (long long)t->result.elapsed_ms);
  } else {
    KG_ERROR("Task %s failed: %s", t->spec.task_id, t->result.error);
    KG_INFO("Task %s completed in %lldms with state FAILED", t->spec.task_id, (long long)t->result.elapsed_ms);
  }
}

void kg_task_clear(kg_task_t *t) {
  free(t->spec.task_id);
  free(t->spec.units);
  free(t->result.units);
  for (size_t i = 0; i < t->result.nfiles; i++) {
    free(t->result.files[i].file_path);
    free(t->result.files[i].output);
    free(t->result.files[i].final);
  }
  free(t->result.files);
  kg_metrics_free(&t->result.metrics);
}
