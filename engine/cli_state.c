/* cli_state.c: `kingest state`: its subcommands, `show` (the stored partitions beside the brokers' offsets) and
 * `history` (past runs and changes); the editing ones, set-offset and reset, are in cli_state_edit.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "kafka_source.h"
#include "log.h"
#include "parse.h"

/* clang-format off */
const char *const kg_cli_usage_state =
    "Usage: kingest state COMMAND JOB [arguments] [options]\n"
    "\n"
    "Reads and repairs a job's stored state. JOB is the job file (its properties locate the state store and\n"
    "the brokers) or the job's name (then the state is under --state-store-dir or <work dir>/state-store).\n"
    "\n"
    "Commands:\n"
    "  show JOB [--json]              Every stored partition: next offset (where the next run starts), the\n"
    "                                 broker's earliest and latest offsets and the lag (when JOB is a job\n"
    "                                 file and the brokers answer), and the statistics of the last run\n"
    "  history JOB [--limit N] [--json]\n"
    "                                 Past runs (time, records, bytes, result) and state changes, newest first\n"
    "  set-offset JOB TOPIC:PARTITION OFFSET [--dry-run] [--force]\n"
    "                                 Make the next run start TOPIC:PARTITION at OFFSET: a whole number,\n"
    "                                 earliest or latest (the broker's), @TIME (the first record at or after\n"
    "                                 TIME, as Kafka's offsets-for-times: ISO 8601 such as @2026-11-30T14:05Z or\n"
    "                                 @2026-11-30, or epoch milliseconds), or +N / -N from the stored offset.\n"
    "                                 The offset must be in the broker's range (--force: not checked)\n"
    "  reset JOB [TOPIC[:PARTITION]] [--yes] [--dry-run]\n"
    "                                 Forget stored partitions (a topic's, or one; all of them only with\n"
    "                                 --yes): the next run treats them as new (bootstrap.with.offset)\n"
    "\n"
    "set-offset and reset take the job lock, so they refuse to run while the job runs, refuse while an\n"
    "interrupted commit waits to be finished, and log every change (also kept in the history). With --dry-run\n"
    "they print what they would change and change nothing.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR          Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -s, --state-store-dir DIR   State store folder (default: the job's state.store.dir,\n"
    "                              or <work dir>/state-store)\n"
    "  -j, --json                  show, history: print JSON\n"
    "  -n, --limit N               history: at most N rows (default 50; 0 for all)\n"
    "      --dry-run               set-offset, reset: print what would change, change nothing\n"
    "  -y, --yes                   reset: confirm forgetting every partition of the job\n"
    "      --force                 set-offset: do not check the offset against the broker's range\n"
    "  -l, --log-level LEVEL       debug, info (default; warn for show and history), warn or error\n"
    "      --log-file FILE         Also append the log to FILE\n"
    "      --log-format FMT        text (default) or json\n"
    "  -h, --help                  Show this help\n"
    "\n"
    "Exit status: 0 done; 1 failure; 2 bad usage; 3 the job is running.\n";
/* clang-format on */

static void format_time(int64_t ms, char *out, size_t n) {
  if (ms <= 0) {
    snprintf(out, n, "-");
    return;
  }
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  localtime_r(&secs, &tm);
  strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm);
}

static void job_ref_free(kg_job_ref_t *r) {
  free(r->job_name);
  free(r->state_dir);
  free(r->lock_dir);
  kg_config_destroy(r->config);
}

static int job_ref(const char *job, const kg_args_t *a, kg_job_ref_t *r, char *err) {
  memset(r, 0, sizeof *r);
  const char *state_dir = kg_cli_value(a, KG_OPT_STATE_DIR);
  if (access(job, F_OK) == 0) {
    int rc = kg_cli_load_config(job, a, &r->config, err);
    if (rc) return rc;
    r->job_name = kg_xstrdup(r->config->job_name);
    r->state_dir = kg_xstrdup(state_dir ? state_dir : r->config->state_store_dir);
    r->lock_dir = kg_xstrdup(r->config->lock_dir);
    return KG_OK;
  }
  const char *wd = kg_cli_value(a, KG_OPT_WORK_DIR) ? kg_cli_value(a, KG_OPT_WORK_DIR) : getenv("GOBBLIN_WORK_DIR");
  if (!state_dir && !wd)
    return kg_fail(err, KG_EINVAL,
                   "%s is not a job file, and there is no state store for a job name: pass "
                   "--state-store-dir or --work-dir, or set GOBBLIN_WORK_DIR",
                   job);
  r->job_name = kg_xstrdup(job);
  r->state_dir = state_dir ? kg_xstrdup(state_dir) : kg_config_default_path("state.store.dir", wd);
  r->lock_dir = wd ? kg_config_default_path("job.lock.dir", wd) : NULL;
  return KG_OK;
}

/* The brokers' view of N stored partitions, when the job file names the brokers and they answer. */
typedef struct {
  bool known;            /* the brokers answered */
  char error[KG_ERRLEN]; /* why not, when the job file names them */
  int64_t *earliest, *latest;
  const char **errors; /* per partition, NULL when answered */
} kg_broker_view_t;

static void broker_view(const kg_job_ref_t *r, const char *const *topics, const int32_t *ids, size_t n,
                        kg_broker_view_t *v) {
  memset(v, 0, sizeof *v);
  v->earliest = kg_xcalloc(n ? n : 1, sizeof(int64_t));
  v->latest = kg_xcalloc(n ? n : 1, sizeof(int64_t));
  v->errors = kg_xcalloc(n ? n : 1, sizeof(char *));
  if (!r->config || !n) return;
  kg_partition_offsets_t *parts = kg_xcalloc(n, sizeof *parts);
  for (size_t i = 0; i < n; i++) {
    parts[i].topic = topics[i];
    parts[i].partition = ids[i];
  }
  kg_kafka_t *kafka = NULL;
  v->known =
      kg_kafka_new(r->config, &kafka, v->error) == KG_OK && kg_kafka_offsets_bulk(kafka, parts, n, v->error) == KG_OK;
  kg_kafka_destroy(kafka);
  for (size_t i = 0; i < n; i++) {
    v->earliest[i] = parts[i].earliest;
    v->latest[i] = parts[i].latest;
    v->errors[i] = parts[i].error;
  }
  free(parts);
}

static void broker_view_free(kg_broker_view_t *v) {
  free(v->earliest);
  free(v->latest);
  free(v->errors);
}

static void print_partitions(const kg_job_ref_t *r, kg_partition_state_t *parts, size_t n, bool json) {
  const char **topics = kg_xcalloc(n ? n : 1, sizeof(char *));
  int32_t *ids = kg_xcalloc(n ? n : 1, sizeof(int32_t));
  for (size_t i = 0; i < n; i++) {
    topics[i] = parts[i].topic;
    ids[i] = parts[i].partition;
  }
  kg_broker_view_t v;
  broker_view(r, topics, ids, n, &v);
  char *path = kg_state_path(r->state_dir, r->job_name);
  if (json) {
    kg_buf_t out = {0};
    kg_buf_appendf(&out, "%s", "{\"job\":");
    kg_json_string(&out, r->job_name);
    kg_buf_appendf(&out, "%s", ",\"state\":");
    kg_json_string(&out, path);
    kg_buf_appendf(&out, "%s", ",\"brokers_error\":");
    if (r->config && n && !v.known)
      kg_json_string(&out, v.error);
    else
      kg_buf_appendf(&out, "%s", "null");
    kg_buf_appendf(&out, "%s", ",\"partitions\":[");
    for (size_t i = 0; i < n; i++) {
      const kg_partition_state_t *p = &parts[i];
      kg_buf_appendf(&out, "%s", i ? ",\n  {\"topic\":" : "\n  {\"topic\":");
      kg_json_string(&out, p->topic);
      kg_buf_appendf(&out, ",\"partition\":%d,\"next_offset\":%lld", p->partition, (long long)p->next_offset);
      if (v.known && !v.errors[i]) {
        bool out_of_range = p->next_offset < v.earliest[i] || p->next_offset > v.latest[i];
        kg_buf_appendf(&out, ",\"earliest\":%lld,\"latest\":%lld,", (long long)v.earliest[i], (long long)v.latest[i]);
        if (out_of_range)
          kg_buf_appendf(&out, "%s", "\"lag\":null,\"out_of_range\":true");
        else
          kg_buf_appendf(&out, "\"lag\":%lld,\"out_of_range\":false", (long long)(v.latest[i] - p->next_offset));
      } else {
        kg_buf_appendf(&out, "%s", ",\"earliest\":null,\"latest\":null,\"lag\":null,\"out_of_range\":null");
      }
      if (p->has_stats)
        kg_buf_appendf(&out, ",\"records\":%lld,\"avg_record_millis\":%.6g,\"avg_record_size\":%.6g",
                       (long long)p->records_pulled, p->avg_record_millis, p->avg_record_size);
      else
        kg_buf_appendf(&out, "%s", ",\"records\":null,\"avg_record_millis\":null,\"avg_record_size\":null");
      kg_buf_appendf(&out, ",\"updated_ms\":%lld}", (long long)p->updated_ms);
    }
    kg_buf_appendf(&out, "%s", n ? "\n]}\n" : "]}\n");
    fwrite(out.data, 1, out.len, stdout);
    kg_buf_free(&out);
  } else {
    printf("Job %s, state %s: %zu partitions\n", r->job_name, path, n);
    if (r->config && n && !v.known) printf("(the brokers' offsets are not shown: %s)\n", v.error);
    printf("%-32s %9s %14s %14s %14s %12s %12s %12s %12s  %s\n", "TOPIC", "PARTITION", "NEXT_OFFSET", "EARLIEST",
           "LATEST", "LAG", "RECORDS", "AVG_REC_MS", "AVG_REC_B", "UPDATED");
    for (size_t i = 0; i < n; i++) {
      char when[32], e[24] = "-", l[24] = "-", lag[32] = "-", rec[24] = "-", ms[24] = "-", b[24] = "-";
      format_time(parts[i].updated_ms, when, sizeof when);
      if (v.known && !v.errors[i]) {
        snprintf(e, sizeof e, "%lld", (long long)v.earliest[i]);
        snprintf(l, sizeof l, "%lld", (long long)v.latest[i]);
        if (parts[i].next_offset < v.earliest[i] || parts[i].next_offset > v.latest[i])
          snprintf(lag, sizeof lag, "out-of-range");
        else
          snprintf(lag, sizeof lag, "%lld", (long long)(v.latest[i] - parts[i].next_offset));
      } else if (v.known) {
        snprintf(e, sizeof e, "?");
        snprintf(l, sizeof l, "?");
      }
      if (parts[i].has_stats) {
        snprintf(rec, sizeof rec, "%lld", (long long)parts[i].records_pulled);
        snprintf(ms, sizeof ms, "%.4f", parts[i].avg_record_millis);
        snprintf(b, sizeof b, "%.1f", parts[i].avg_record_size);
      }
      printf("%-32s %9d %14lld %14s %14s %12s %12s %12s %12s  %s\n", parts[i].topic, parts[i].partition,
             (long long)parts[i].next_offset, e, l, lag, rec, ms, b, when);
    }
  }
  free(path);
  broker_view_free(&v);
  free(topics);
  free(ids);
}

/* The count N as the history table shows it: "-" when it is not known. */
static const char *count_text(int64_t n, char *buf, size_t size) {
  if (n < 0) return "-";
  snprintf(buf, size, "%lld", (long long)n);
  return buf;
}

void kg_cli_history_table(FILE *out, const kg_history_entry_t *entries, size_t n) {
  fprintf(out, "%-19s  %-10s  %-44s %10s %10s %12s %10s %11s %10s %10s  %-10s  %s\n", "TIME", "WHAT",
          "JOB ID / PARTITION", "READ", "WRITTEN", "BYTES", "SKIPPED", "QUARANTINED", "DELETED", "TOMBSTONES", "RESULT",
          "DETAILS");
  for (size_t i = 0; i < n; i++) {
    const kg_history_entry_t *e = &entries[i];
    time_t secs = (time_t)(e->time_ms / 1000);
    struct tm tm;
    localtime_r(&secs, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    /* Read, written, bytes, skipped, quarantined, deleted, tombstones: "-" for a change. */
    const int64_t counts[7] = {e->counts.read,        e->counts.written, e->counts.bytes,     e->counts.skipped,
                               e->counts.quarantined, e->counts.deleted, e->counts.tombstones};
    char numbers[7][24];
    const char *c[7];
    for (int k = 0; k < 7; k++)
      c[k] = e->is_run ? count_text(counts[k], numbers[k], sizeof numbers[k]) : "-";
    /* The details: a run's time and message, a change's offsets. */
    kg_buf_t details = {0};
    char *what = NULL;
    if (e->is_run) {
      what = kg_xstrdup(e->job_id ? e->job_id : "");
      if (e->ended_ms >= 0) kg_buf_appendf(&details, "%lld ms", (long long)(e->ended_ms - e->time_ms));
      if (e->message && *e->message) kg_buf_appendf(&details, "%s%s", e->ended_ms >= 0 ? ": " : "", e->message);
    } else {
      what = kg_xasprintf("%s:%d", e->topic ? e->topic : "", e->partition);
      kg_buf_appendf(&details, "offset ");
      if (e->old_offset >= 0)
        kg_buf_appendf(&details, "%lld", (long long)e->old_offset);
      else
        kg_buf_appendf(&details, "none");
      kg_buf_appendf(&details, " -> ");
      if (e->new_offset >= 0)
        kg_buf_appendf(&details, "%lld", (long long)e->new_offset);
      else
        kg_buf_appendf(&details, "none");
    }
    char first[256]; /* the first line of the details */
    snprintf(first, sizeof first, "%s", details.data ? details.data : "");
    char *nl = strchr(first, '\n');
    if (nl) *nl = '\0';
    const char *result = e->is_run ? (e->result ? e->result : "") : "CHANGED";
    fprintf(out, "%-19s  %-10s  %-44s %10s %10s %12s %10s %11s %10s %10s  %-10s  %s\n", when,
            e->is_run ? "run" : e->command, what, c[0], c[1], c[2], c[3], c[4], c[5], c[6], result, first);
    free(what);
    kg_buf_free(&details);
  }
}

/* Appends N to OUT as a JSON number, or null when it is not known (-1). */
static void json_count(kg_buf_t *out, int64_t n) {
  if (n < 0)
    kg_buf_append(out, "null", 4);
  else
    kg_buf_appendf(out, "%lld", (long long)n);
}

/* Appends S to OUT as a JSON string, or null. */
static void json_text(kg_buf_t *out, const char *s) {
  if (s)
    kg_json_string(out, s);
  else
    kg_buf_append(out, "null", 4);
}

/* ENTRIES as a JSON array, newest first: runs as {"kind":"run","time_ms","job_id","ended_ms","result",
 * "records_read","records_written","bytes_written","skipped","quarantined","deleted","message","tombstones"},
 * operator changes as {"kind":"change","time_ms","command","topic","partition","old_offset","new_offset"} (null
 * where not known). */
static void history_json(kg_buf_t *out, const kg_history_entry_t *entries, size_t n) {
  kg_buf_append(out, "[", 1);
  for (size_t i = 0; i < n; i++) {
    const kg_history_entry_t *e = &entries[i];
    kg_buf_append(out, i == 0 ? "\n  {" : ",\n  {", i == 0 ? 4 : 5);
    kg_buf_append(out, "\"kind\":", 7);
    kg_json_string(out, e->is_run ? "run" : "change");
    kg_buf_appendf(out, ",\"time_ms\":%lld", (long long)e->time_ms);
    if (e->is_run) {
      kg_buf_appendf(out, "%s", ",\"job_id\":");
      json_text(out, e->job_id);
      kg_buf_appendf(out, "%s", ",\"ended_ms\":");
      json_count(out, e->ended_ms);
      kg_buf_appendf(out, "%s", ",\"result\":");
      json_text(out, e->result);
      const char *const names[] = {"records_read", "records_written", "bytes_written",
                                   "skipped",      "quarantined",     "deleted"};
      const int64_t counts[] = {e->counts.read,    e->counts.written,     e->counts.bytes,
                                e->counts.skipped, e->counts.quarantined, e->counts.deleted};
      for (int k = 0; k < 6; k++) {
        kg_buf_appendf(out, ",\"%s\":", names[k]);
        json_count(out, counts[k]);
      }
      kg_buf_appendf(out, "%s", ",\"message\":");
      json_text(out, e->message);
      kg_buf_append(out, ",\"tombstones\":", 14);
      json_count(out, e->counts.tombstones);
    } else {
      kg_buf_appendf(out, "%s", ",\"command\":");
      json_text(out, e->command);
      kg_buf_appendf(out, "%s", ",\"topic\":");
      json_text(out, e->topic);
      kg_buf_appendf(out, ",\"partition\":%d", e->partition);
      kg_buf_appendf(out, "%s", ",\"old_offset\":");
      json_count(out, e->old_offset);
      kg_buf_appendf(out, "%s", ",\"new_offset\":");
      json_count(out, e->new_offset);
    }
    kg_buf_append(out, "}", 1);
  }
  kg_buf_append(out, n == 0 ? "]\n" : "\n]\n", n == 0 ? 2 : 3);
}

int kg_cli_state(int argc, char **argv) {
  if (argc < 3 || kg_cli_is_help(argv[2])) {
    fputs(kg_cli_usage_state, argc < 3 ? stderr : stdout);
    return argc < 3 ? 2 : 0;
  }
  const char *sub = argv[2];
  int min_args, max_args;
  unsigned mask;
  if (!strcmp(sub, "show")) {
    min_args = max_args = 1;
    mask = KG_OPTS_STATE_SHOW;
  } else if (!strcmp(sub, "history")) {
    min_args = max_args = 1;
    mask = KG_OPTS_STATE_HISTORY;
  } else if (!strcmp(sub, "set-offset")) {
    min_args = max_args = 3;
    mask = KG_OPTS_STATE_SET_OFFSET;
  } else if (!strcmp(sub, "reset")) {
    min_args = 1;
    max_args = 2;
    mask = KG_OPTS_STATE_RESET;
  } else {
    fprintf(stderr, "kingest: unknown state command %s\n%s", sub, kg_cli_usage_state);
    return 2;
  }
  if (!strcmp(sub, "show") || !strcmp(sub, "history")) kg_log_set_level(KG_LOG_WARN); /* the state is the output */
  kg_args_t a;
  int prc = kg_cli_parse_args(argc, argv, 3, mask, &a, kg_cli_usage_state);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional < min_args || a.npositional > max_args) {
    return kg_cli_usage_error(2, kg_cli_usage_state, "state %s: wrong number of arguments", sub);
  }
  int64_t limit = 50;
  if (kg_cli_value(&a, KG_OPT_LIMIT) &&
      (!kg_parse_int64(kg_cli_value(&a, KG_OPT_LIMIT), &limit) || limit < 0 || limit > INT32_MAX)) {
    return kg_cli_usage_error(2, NULL, "invalid --limit %s: expected a whole number >= 0",
                              kg_cli_value(&a, KG_OPT_LIMIT));
  }
  char err[KG_ERRLEN] = "";
  kg_job_ref_t r;
  if (job_ref(a.positional[0], &a, &r, err)) {
    job_ref_free(&r);
    return kg_cli_fail(1, err);
  }
  int status = 0;
  kg_state_t *state = NULL;
  kg_lock_t *lock = NULL;
  bool json = kg_cli_has(&a, KG_OPT_JSON);
  if (!strcmp(sub, "show") || !strcmp(sub, "history")) {
    int rc = kg_state_open_readonly(r.state_dir, r.job_name, &state, err);
    if (!rc && !strcmp(sub, "show")) {
      kg_partition_state_t *parts = NULL;
      size_t n = 0;
      rc = kg_state_partitions(state, &parts, &n, err);
      if (!rc) print_partitions(&r, parts, n, json);
      kg_state_free_partitions(parts, n);
    } else if (!rc) {
      kg_history_entry_t *entries = NULL;
      size_t n = 0;
      rc = kg_state_history(state, (int)limit, &entries, &n, err);
      if (!rc && json) {
        kg_buf_t out = {0};
        history_json(&out, entries, n);
        fwrite(out.data, 1, out.len, stdout);
        kg_buf_free(&out);
      } else if (!rc) {
        kg_cli_history_table(stdout, entries, n);
      }
      kg_state_free_history(entries, n);
    }
    if (rc) status = kg_cli_fail(1, err);
  } else if (!strcmp(sub, "set-offset")) {
    status = kg_cli_state_set_offset(&a, &r, &state, &lock, err);
  } else {
    status = kg_cli_state_reset(&a, &r, &state, &lock, err);
  }
  kg_lock_release(lock);
  kg_state_close(state);
  job_ref_free(&r);
  return status;
}
