/* reporter_prom.c: the Prometheus reporter: the run's metrics in Prometheus's text exposition format (0.0.4),
 * written atomically to metrics.reporting.prometheus.file for node_exporter's textfile collector and PUT to a
 * Pushgateway (metrics.reporting.prometheus.pushgateway.url), when the run ends and every metrics.report.interval
 * during it. Every value is one run's: each report replaces the file and the job's group on the Pushgateway, so
 * the counts are gauges, not counters (docs/operations.md, "Prometheus", says why and lists the metrics). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "http.h"
#include "log.h"
#include "parse.h"
#include "report.h"
#include "secret.h"

/* ---- The text format. */

/* A text being written: its families' metric names so far (a script metric whose name would repeat one is left
 * out), and the value of the job label, or NULL when the Pushgateway's grouping key gives it. */
typedef struct {
  kg_buf_t out;
  const char *job;
  char **names;
  size_t nnames;
} prom_text_t;

static void text_free(prom_text_t *t) {
  kg_buf_free(&t->out);
  for (size_t i = 0; i < t->nnames; i++)
    free(t->names[i]);
  free(t->names);
}

static bool name_used(const prom_text_t *t, const char *name) {
  for (size_t i = 0; i < t->nnames; i++)
    if (!strcmp(t->names[i], name)) return true;
  return false;
}

static void use_name(prom_text_t *t, const char *name) {
  t->names = kg_xrealloc(t->names, (t->nnames + 1) * sizeof *t->names);
  t->names[t->nnames++] = kg_xstrdup(name);
}

/* A value as the format writes it: whole numbers without a fraction, others with as few digits as read back
 * exactly. */
static void append_value(kg_buf_t *out, double v) {
  if (isnan(v)) {
    kg_buf_append(out, "NaN", 3);
  } else if (isinf(v)) {
    kg_buf_append(out, v > 0 ? "+Inf" : "-Inf", 4);
  } else if (v > -9e15 && v < 9e15 && v == (double)(long long)v) { /* the range first: a larger cast is undefined */
    kg_buf_appendf(out, "%lld", (long long)v);
  } else {
    char b[40];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
    kg_buf_append(out, b, strlen(b));
  }
}

/* S escaped for a label value (QUOTES: \, " and newline) or a HELP line (\ and newline). */
static void append_escaped(kg_buf_t *out, const char *s, bool quotes) {
  for (; *s; s++) {
    if (*s == '\\')
      kg_buf_append(out, "\\\\", 2);
    else if (*s == '\n')
      kg_buf_append(out, "\\n", 2);
    else if (*s == '"' && quotes)
      kg_buf_append(out, "\\\"", 2);
    else
      kg_buf_append(out, s, 1);
  }
}

/* The HELP and TYPE lines of family NAME. */
static void family(prom_text_t *t, const char *name, const char *type, const char *help) {
  kg_buf_appendf(&t->out, "# HELP %s ", name);
  append_escaped(&t->out, help, false);
  kg_buf_appendf(&t->out, "\n# TYPE %s %s\n", name, type);
  use_name(t, name);
}

/* One sample of NAME: the job label, then the pairs of LABELS (name, value, ..., NULL; may be NULL). */
static void sample(prom_text_t *t, const char *name, const char *const *labels, double v) {
  kg_buf_append(&t->out, name, strlen(name));
  const char *sep = "{";
  if (t->job) {
    kg_buf_append(&t->out, "{job=\"", 6);
    append_escaped(&t->out, t->job, true);
    kg_buf_append(&t->out, "\"", 1);
    sep = ",";
  }
  for (size_t i = 0; labels && labels[i]; i += 2) {
    kg_buf_appendf(&t->out, "%s%s=\"", sep, labels[i]);
    append_escaped(&t->out, labels[i + 1], true);
    kg_buf_append(&t->out, "\"", 1);
    sep = ",";
  }
  if (*sep == ',') kg_buf_append(&t->out, "}", 1);
  kg_buf_append(&t->out, " ", 1);
  append_value(&t->out, v);
  kg_buf_append(&t->out, "\n", 1);
}

/* A family of one sample with the job label only. */
static void gauge(prom_text_t *t, const char *name, const char *help, double v) {
  family(t, name, "gauge", help);
  sample(t, name, NULL, v);
}

/* ---- What a report says. */

/* One partition of the run: its work unit and what the run did with it. */
typedef struct {
  const kg_workunit_t *wu;
  const kg_unit_result_t *r;
  bool has_next, has_latest;
  int64_t next;   /* the next offset the state store holds after the run */
  int64_t latest; /* the broker's latest offset after the run */
} prom_partition_t;

typedef struct {
  bool final;
  const kg_report_t *report;
  int64_t now_ms;
  size_t ntasks;
  int64_t read, written, bytes;         /* records read and written, bytes written */
  int64_t last_run_ms, last_success_ms; /* 0: none known */
  /* The final report's. */
  const char *result;
  bool succeeded;
  size_t tasks_failed;
  kg_run_counts_t counts;
  double failed, offset_resets;
  prom_partition_t *parts;
  size_t nparts;
  const kg_task_t *tasks;
  const kg_metrics_t *job_metrics;
  /* Over the job's whole history, this run included: counters that only grow (the final report's, when the
   * state store could be read). */
  bool has_totals;
  kg_run_counts_t totals;
  int64_t runs[4]; /* per result, as prom_results */
} prom_run_t;

static const char *const prom_results[] = {"SUCCESSFUL", "PARTIAL", "STOPPED", "FAILED"};

/* A counter family of one sample with the job label only. */
static void counter(prom_text_t *t, const char *name, const char *help, double v) {
  family(t, name, "counter", help);
  sample(t, name, NULL, v);
}

/* The counters over every run of the job. The file and the Pushgateway group hold the last run's report, but these
 * add up the run history of the state store, so they only grow from one run to the next (until the state store
 * is deleted, which Prometheus sees as a counter reset): rate() and increase() over them are right. */
static void total_metrics(prom_text_t *t, const prom_run_t *run) {
  if (!run->has_totals) return;
  counter(t, "kingest_records_read_total", "Records read from Kafka by every run of the job", (double)run->totals.read);
  counter(t, "kingest_records_written_total",
          "Records written by every run of the job, as the run history counts them (a failed run's too, though its "
          "files were not published)",
          (double)run->totals.written);
  counter(t, "kingest_bytes_written_total", "Bytes written by every run of the job, as the run history counts them",
          (double)run->totals.bytes);
  counter(t, "kingest_records_skipped_total", "Records that failed in the script and were skipped, in every run",
          (double)run->totals.skipped);
  counter(t, "kingest_records_quarantined_total",
          "Records that failed in the script and went to <path>/_errors, in every run",
          (double)run->totals.quarantined);
  counter(t, "kingest_records_deleted_total",
          "Records deleted from Kafka before a run could read them (never read), in every run",
          (double)run->totals.deleted);
  counter(t, "kingest_records_tombstones_total",
          "Avro records with a null payload (deleted records: read, not written), in every run",
          (double)run->totals.tombstones);
  family(t, "kingest_runs_total", "counter", "Runs of the job that ended, by result");
  for (size_t i = 0; i < sizeof prom_results / sizeof prom_results[0]; i++) {
    const char *labels[] = {"result", prom_results[i], NULL};
    sample(t, "kingest_runs_total", labels, (double)run->runs[i]);
  }
}

static void run_metrics(prom_text_t *t, const prom_run_t *run) {
  gauge(t, "kingest_run_in_progress", "1 while the run goes on (an interim report), 0 once it has ended",
        run->final ? 0 : 1);
  gauge(t, "kingest_run_start_timestamp_seconds", "When the run started, in seconds since the epoch",
        (double)run->report->start_ms / 1000.0);
  gauge(t, "kingest_run_duration_seconds", "How long the run took (while it goes on: so far)",
        (double)(run->now_ms - run->report->start_ms) / 1000.0);
  if (run->final) {
    gauge(t, "kingest_run_success",
          "1 when the run succeeded (SUCCESSFUL, or PARTIAL unless job.fail.on.partial: the runs that exit 0), else 0",
          run->succeeded ? 1 : 0);
    family(t, "kingest_run_result", "gauge", "The run's result, as the run history records it: 1 for the one it had");
    for (size_t i = 0; i < sizeof prom_results / sizeof prom_results[0]; i++) {
      const char *labels[] = {"result", prom_results[i], NULL};
      sample(t, "kingest_run_result", labels, run->result && !strcmp(run->result, prom_results[i]) ? 1 : 0);
    }
  }
  if (run->last_run_ms)
    gauge(t, "kingest_last_run_timestamp_seconds",
          "When the last run of the job ended, in seconds since the epoch (while a run goes on: the one before it)",
          (double)run->last_run_ms / 1000.0);
  if (run->last_success_ms)
    gauge(t, "kingest_last_success_timestamp_seconds",
          "When the last successful run of the job ended, in seconds since the epoch (from the run history when this "
          "run did not succeed)",
          (double)run->last_success_ms / 1000.0);
  gauge(t, "kingest_run_tasks", "Tasks the run's work units were packed into", (double)run->ntasks);
  if (run->final) gauge(t, "kingest_run_tasks_failed", "Tasks of the run that failed", (double)run->tasks_failed);
  gauge(t, "kingest_run_records_read", "Records the run read from Kafka (while it goes on: so far)", (double)run->read);
  gauge(t, "kingest_run_records_written", "Records the run wrote to its output (while it goes on: so far)",
        (double)run->written);
  gauge(t, "kingest_run_bytes_written", "Bytes the run wrote to its output (while it goes on: so far)",
        (double)run->bytes);
  if (!run->final) return;
  gauge(t, "kingest_run_records_failed",
        "Records that failed in the script (decodeRecord or a converter): skipped, quarantined, or failing their task",
        run->failed);
  gauge(t, "kingest_run_records_skipped", "Records that failed in the script and were skipped",
        (double)run->counts.skipped);
  gauge(t, "kingest_run_records_quarantined", "Records that failed in the script and went to <path>/_errors",
        (double)run->counts.quarantined);
  gauge(t, "kingest_run_records_deleted", "Records deleted from Kafka before the run could read them (never read)",
        (double)run->counts.deleted);
  gauge(t, "kingest_run_records_tombstones", "Avro records with a null payload (deleted records: read, not written)",
        (double)run->counts.tombstones);
  gauge(t, "kingest_run_offset_resets",
        "Times a partition's offset was out of range (when the run planned, or records deleted while it read) and "
        "reset.on.offset.out.of.range applied",
        run->offset_resets);
}

/* The per-partition counts of a final report: one family per field of kg_unit_result_t. */
static const struct {
  const char *name;
  size_t offset;
  const char *help;
} partition_counts[] = {
    {"kingest_partition_records_read", offsetof(kg_unit_result_t, records), "Records the run read from the partition"},
    {"kingest_partition_records_written", offsetof(kg_unit_result_t, written),
     "Records the writer took from the partition's records (a script may drop or split records)"},
    {"kingest_partition_records_failed", offsetof(kg_unit_result_t, decode_errors),
     "Records of the partition that failed in the script: skipped, quarantined, or failing the task"},
    {"kingest_partition_records_skipped", offsetof(kg_unit_result_t, skipped),
     "Records of the partition that failed in the script and were skipped"},
    {"kingest_partition_records_quarantined", offsetof(kg_unit_result_t, quarantined),
     "Records of the partition that failed in the script and were quarantined"},
    {"kingest_partition_records_deleted", offsetof(kg_unit_result_t, deleted),
     "Records of the partition deleted before the run could read them (never read)"},
    {"kingest_partition_records_tombstones", offsetof(kg_unit_result_t, tombstones),
     "Avro records of the partition with a null payload (deleted records: read, not written)"},
    {"kingest_partition_bytes_read", offsetof(kg_unit_result_t, bytes),
     "Payload bytes the run read from the partition"},
};

static void partition_metrics(prom_text_t *t, const prom_run_t *run) {
  if (!run->nparts) return;
  char(*numbers)[16] = kg_xcalloc(run->nparts, sizeof *numbers);
  for (size_t i = 0; i < run->nparts; i++)
    snprintf(numbers[i], sizeof numbers[i], "%d", run->parts[i].wu->partition);
#define PART_LABELS(i)                                                                                                 \
  { "topic", run->parts[i].wu->topic, "partition", numbers[i], NULL }
  for (size_t f = 0; f < sizeof partition_counts / sizeof partition_counts[0]; f++) {
    family(t, partition_counts[f].name, "gauge", partition_counts[f].help);
    for (size_t i = 0; i < run->nparts; i++) {
      const char *labels[] = PART_LABELS(i);
      int64_t v;
      memcpy(&v, (const char *)run->parts[i].r + partition_counts[f].offset, sizeof v);
      sample(t, partition_counts[f].name, labels, (double)v);
    }
  }
  bool any_next = false, any_lag = false;
  for (size_t i = 0; i < run->nparts; i++) {
    any_next |= run->parts[i].has_next;
    any_lag |= run->parts[i].has_next && run->parts[i].has_latest;
  }
  if (any_next) {
    family(t, "kingest_partition_next_offset", "gauge",
           "The offset the next run starts from: the partition's next offset in the state store after the run");
    for (size_t i = 0; i < run->nparts; i++)
      if (run->parts[i].has_next) {
        const char *labels[] = PART_LABELS(i);
        sample(t, "kingest_partition_next_offset", labels, (double)run->parts[i].next);
      }
  }
  if (any_lag) {
    family(t, "kingest_partition_latest_offset", "gauge",
           "The partition's latest offset (high watermark) on the broker when the run ended");
    for (size_t i = 0; i < run->nparts; i++)
      if (run->parts[i].has_next && run->parts[i].has_latest) {
        const char *labels[] = PART_LABELS(i);
        sample(t, "kingest_partition_latest_offset", labels, (double)run->parts[i].latest);
      }
    family(t, "kingest_partition_lag_records", "gauge",
           "Records waiting for the next run: the latest offset when the run ended minus the next offset");
    for (size_t i = 0; i < run->nparts; i++)
      if (run->parts[i].has_next && run->parts[i].has_latest) {
        const char *labels[] = PART_LABELS(i);
        int64_t lag = run->parts[i].latest - run->parts[i].next;
        sample(t, "kingest_partition_lag_records", labels, (double)(lag > 0 ? lag : 0));
      }
  }
#undef PART_LABELS
  free(numbers);
}

/* ---- The script's own metrics (ctx.metrics), as the tasks' snapshots flattened them: counters by name, meters as
 * <name>.count and <name>.meanRate, histograms as <name>.count, .min, .max, .mean and, per task only, .p50 .p75
 * .p95 .p99. */

static bool find(const kg_metrics_t *m, const char *base, const char *suffix, double *v) {
  size_t n = strlen(base);
  for (size_t i = 0; i < m->count; i++)
    if (!strncmp(m->names[i], base, n) && !strcmp(m->names[i] + n, suffix)) {
      if (v) *v = m->values[i];
      return true;
    }
  return false;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* The Prometheus name of script metric NAME: kingest_script_ and NAME in lower snake case (a run of characters
 * other than letters and digits becomes one _, and so does a lower-case letter or digit followed by an upper-case
 * one). NULL when NAME has no letter or digit. */
static char *script_name(const char *name) {
  kg_buf_t b = {0};
  kg_buf_append(&b, "kingest_script_", 15);
  bool underscore = true, lower = false;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    if (!isalnum(*p) || *p > 127) {
      if (!underscore) kg_buf_append(&b, "_", 1);
      underscore = true, lower = false;
      continue;
    }
    if (isupper(*p) && lower) kg_buf_append(&b, "_", 1);
    char c = (char)tolower(*p);
    kg_buf_append(&b, &c, 1);
    underscore = false;
    lower = !isupper(*p);
  }
  while (b.len > 15 && b.data[b.len - 1] == '_')
    b.data[--b.len] = 0;
  if (b.len == 15) {
    kg_buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* Whether the names NAME followed by each of SUFFIXES (NULL-terminated) are all still free; else, with WARN, a WARN
 * naming the script metric ORIGINAL (the file's text warns, the Pushgateway's copy of it does not repeat it). */
static bool names_free(const prom_text_t *t, const char *original, const char *name, const char *const *suffixes,
                       bool warn) {
  for (size_t i = 0; suffixes[i]; i++) {
    char *full = kg_xasprintf("%s%s", name, suffixes[i]);
    bool used = name_used(t, full);
    if (used && warn)
      KG_WARN("Script metric \"%s\" is left out of the Prometheus metrics: its name there, %s, is taken by another "
              "metric",
              original, full);
    free(full);
    if (used) return false;
  }
  return true;
}

static void script_counter(prom_text_t *t, const char *original, const char *name, double v) {
  char *help = kg_xasprintf("Script counter \"%s\" (ctx.metrics): the run's count, summed over its tasks", original);
  gauge(t, name, help, v);
  free(help);
}

static void script_meter(prom_text_t *t, const kg_metrics_t *m, const char *original, const char *name) {
  double count = 0, rate = 0;
  find(m, original, ".count", &count);
  find(m, original, ".meanRate", &rate);
  char *help =
      kg_xasprintf("Script meter \"%s\" (ctx.metrics): events marked in the run, summed over its tasks", original);
  gauge(t, name, help, count);
  free(help);
  char *rate_name = kg_xasprintf("%s_mean_rate", name);
  help = kg_xasprintf("Script meter \"%s\" (ctx.metrics): events per second over each task's life, summed over the "
                      "tasks",
                      original);
  gauge(t, rate_name, help, rate);
  free(help);
  free(rate_name);
}

/* A histogram as a summary per task, labelled with the task's index in the run: its quantiles exist per task only
 * (they cannot be combined). Then its smallest and largest values, per task, as gauges. */
static void script_histogram(prom_text_t *t, const prom_run_t *run, const char *original, const char *name) {
  static const struct {
    const char *suffix, *quantile;
  } quantiles[] = {{".p50", "0.5"}, {".p75", "0.75"}, {".p95", "0.95"}, {".p99", "0.99"}};
  char *help = kg_xasprintf("Script histogram \"%s\" (ctx.metrics), per task: quantiles of the values (of a sample "
                            "of up to 4096), their sum (count times mean) and count",
                            original);
  family(t, name, "summary", help);
  free(help);
  char *sum_name = kg_xasprintf("%s_sum", name), *count_name = kg_xasprintf("%s_count", name);
  for (size_t k = 0; k < run->ntasks; k++) {
    const kg_metrics_t *tm = &run->tasks[k].result.metrics;
    double count = 0, mean = 0, v = 0;
    if (!find(tm, original, ".count", &count)) continue;
    char index[16];
    snprintf(index, sizeof index, "%d", run->tasks[k].spec.index);
    for (size_t q = 0; q < sizeof quantiles / sizeof quantiles[0]; q++)
      if (find(tm, original, quantiles[q].suffix, &v)) {
        const char *labels[] = {"task", index, "quantile", quantiles[q].quantile, NULL};
        sample(t, name, labels, v);
      }
    find(tm, original, ".mean", &mean);
    const char *labels[] = {"task", index, NULL};
    sample(t, sum_name, labels, count * mean);
    sample(t, count_name, labels, count);
  }
  use_name(t, sum_name);
  use_name(t, count_name);
  free(sum_name);
  free(count_name);
  static const struct { const char *suffix, *what; } extremes[] = {{".min", "smallest"}, {".max", "largest"}};
  for (size_t e = 0; e < sizeof extremes / sizeof extremes[0]; e++) {
    char *extreme_name = kg_xasprintf("%s_%s", name, extremes[e].suffix + 1);
    bool any = false;
    for (size_t k = 0; k < run->ntasks; k++) {
      double v;
      if (!find(&run->tasks[k].result.metrics, original, extremes[e].suffix, &v)) continue;
      if (!any) {
        help =
            kg_xasprintf("Script histogram \"%s\" (ctx.metrics): the %s value, per task", original, extremes[e].what);
        family(t, extreme_name, "gauge", help);
        free(help);
        any = true;
      }
      char index[16];
      snprintf(index, sizeof index, "%d", run->tasks[k].spec.index);
      const char *labels[] = {"task", index, NULL};
      sample(t, extreme_name, labels, v);
    }
    free(extreme_name);
  }
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void script_metrics(prom_text_t *t, const prom_run_t *run, bool warn) {
  const kg_metrics_t *m = run->job_metrics;
  if (!m) return;
  /* The script's names, sorted, and which of them a meter or a histogram has claimed. */
  const char **names = kg_xcalloc(m->count + 1, sizeof *names);
  size_t n = 0;
  for (size_t i = 0; i < m->count; i++)
    if (!kg_metrics_is_engine(m->names[i])) names[n++] = m->names[i];
  qsort(names, n, sizeof *names, compare_names);
  enum { COUNTER = 0, METER, HISTOGRAM, PART };
  int *kind = kg_xcalloc(n + 1, sizeof *kind);
  char **bases = kg_xcalloc(n + 1, sizeof *bases);
  for (size_t i = 0; i < n; i++)
    if (ends_with(names[i], ".meanRate")) {
      char *base = kg_xstrndup(names[i], strlen(names[i]) - 9);
      if (find(m, base, ".count", NULL)) {
        kind[i] = METER;
        bases[i] = base;
      } else {
        free(base);
      }
    }
  for (size_t i = 0; i < n; i++)
    if (kind[i] == METER)
      for (size_t j = 0; j < n; j++)
        if (j != i && !strncmp(names[j], bases[i], strlen(bases[i])) && !strcmp(names[j] + strlen(bases[i]), ".count"))
          kind[j] = PART;
  /* A histogram: <name>.count with its .min .max .mean (none of them while it has no value). */
  for (size_t i = 0; i < n; i++)
    if (kind[i] == COUNTER && ends_with(names[i], ".count")) {
      kind[i] = HISTOGRAM;
      bases[i] = kg_xstrndup(names[i], strlen(names[i]) - 6);
      for (size_t j = 0; j < n; j++) {
        size_t k = strlen(bases[i]);
        if (j != i && kind[j] == COUNTER && !strncmp(names[j], bases[i], k) &&
            (!strcmp(names[j] + k, ".min") || !strcmp(names[j] + k, ".max") || !strcmp(names[j] + k, ".mean")))
          kind[j] = PART;
      }
    }

  static const char *const plain[] = {"", NULL};
  static const char *const meter_names[] = {"", "_mean_rate", NULL};
  static const char *const histogram_names[] = {"", "_sum", "_count", "_min", "_max", NULL};
  for (int pass = COUNTER; pass <= HISTOGRAM; pass++)
    for (size_t i = 0; i < n; i++) {
      if (kind[i] != pass) continue;
      const char *original = pass == COUNTER ? names[i] : bases[i];
      char *name = script_name(original);
      if (!name) {
        if (warn)
          KG_WARN("Script metric \"%s\" is left out of the Prometheus metrics: its name has no letter or digit",
                  original);
        continue;
      }
      const char *const *suffixes = pass == COUNTER ? plain : pass == METER ? meter_names : histogram_names;
      if (!names_free(t, original, name, suffixes, warn)) {
        free(name);
        continue;
      }
      if (pass == COUNTER)
        script_counter(t, original, name, kg_metrics_get(m, names[i]));
      else if (pass == METER)
        script_meter(t, m, original, name);
      else
        script_histogram(t, run, original, name);
      free(name);
    }
  for (size_t i = 0; i < n; i++)
    free(bases[i]);
  free(bases);
  free(kind);
  free(names);
}

/* The text of RUN; JOB_LABEL: with the job label (the file), else without (the Pushgateway's grouping key gives
 * it). A secret a label or a script's metric would quote is masked (secret.h). */
static void render(prom_text_t *t, const prom_run_t *run, bool job_label) {
  memset(t, 0, sizeof *t);
  t->job = job_label ? run->report->config->job_name : NULL;
  run_metrics(t, run);
  if (run->final) {
    total_metrics(t, run);
    partition_metrics(t, run);
    script_metrics(t, run, job_label);
  }
  if (t->out.data) kg_secret_mask_bytes(t->out.data, &t->out.len);
}

/* ---- Where the text goes. */

/* Replaces the file at PATH with DATA: a temporary file in the same folder (a name node_exporter skips, as it
 * reads *.prom only), synced, renamed over PATH, and the folder synced. */
static int write_atomically(const char *path, const char *data, size_t len, char *errbuf) {
  const char *slash = strrchr(path, '/');
  char *dir = slash == path ? kg_xstrdup("/") : kg_xstrndup(path, (size_t)(slash - path));
  char *tmp = kg_xasprintf("%s/.%s.%ld.tmp", slash == path ? "" : dir, slash + 1, (long)getpid());
  int rc = KG_OK;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = kg_fail(errbuf, KG_EIO, "cannot create %s: %s", tmp, strerror(errno));
  } else {
    for (size_t done = 0; !rc && done < len;) {
      ssize_t w = write(fd, data + done, len - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) rc = kg_fail(errbuf, KG_EIO, "cannot write %s: %s", tmp, strerror(errno));
      if (w > 0) done += (size_t)w;
    }
    if (!rc && fsync(fd)) rc = kg_fail(errbuf, KG_EIO, "cannot sync %s: %s", tmp, strerror(errno));
    if (close(fd) && !rc) rc = kg_fail(errbuf, KG_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path))
      rc = kg_fail(errbuf, KG_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc) unlink(tmp);
  }
  if (!rc) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      if (fsync(dfd)) rc = kg_fail(errbuf, KG_EIO, "cannot sync the folder %s: %s", dir, strerror(errno));
      close(dfd);
    }
  }
  free(tmp);
  free(dir);
  return rc;
}

/* The URL of the job's group on the Pushgateway: <url>/metrics/job/<job.name, URL-escaped>. */
static char *group_url(const kg_config_t *c) {
  kg_buf_t url = {0};
  kg_buf_appendf(&url, "%s/metrics/job/", kg_prom_reporter_options(c)->pushgateway_url);
  kg_buf_append_url_escaped(&url, c->job_name, false);
  return url.data;
}

/* PUTs BODY to URL with O's timeout (connecting included), CA file and credentials; an answer other than 2xx is an
 * error, said as its status and the first line of its first 512 bytes, and for 401 and 403 the user (never the
 * password); a TLS failure names the CA file. */
static int push(const kg_prom_reporter_options_t *o, const char *url, const char *body, size_t len, char *errbuf) {
  static const char *const headers[] = {"Content-Type: text/plain; version=0.0.4; charset=utf-8", NULL};
  bool basic = *o->pushgateway_user;
  kg_http_request_t req = {.method = "PUT",
                           .url = url,
                           .headers = headers,
                           .body = {.kind = KG_HTTP_BODY_MEMORY, .data = body ? body : "", .len = (int64_t)len},
                           .answer = {.cap = 512, .truncate = true},
                           .connect_timeout_ms = o->pushgateway_timeout_ms,
                           .timeout_ms = o->pushgateway_timeout_ms,
                           .tls = {.ca_file = *o->pushgateway_ca_file ? o->pushgateway_ca_file : NULL},
                           .auth = {.kind = basic ? KG_HTTP_AUTH_BASIC : KG_HTTP_AUTH_NONE,
                                    .user = o->pushgateway_user,
                                    .password = o->pushgateway_password},
                           .any_status = true,
                           .service = "Pushgateway"};
  kg_http_response_t resp = {0};
  int rc = kg_http_perform(NULL, &req, &resp, errbuf);
  if (!rc && (resp.status < 200 || resp.status > 299)) {
    char reason[KG_ERRLEN / 2];
    kg_http_reason(&resp, reason, sizeof reason);
    if (resp.status == 401 || resp.status == 403)
      rc = kg_fail(errbuf, KG_EIO, "%s (%s%s%s)", reason, basic ? "user " : "", basic ? o->pushgateway_user : "",
                   basic ? ", from metrics.reporting.prometheus.pushgateway.basic.auth.user.info"
                         : "no credentials given: metrics.reporting.prometheus.pushgateway.basic.auth.user.info");
    else
      rc = kg_fail(errbuf, KG_EIO, "%s", reason);
  } else if (rc && resp.failure == KG_HTTP_FAIL_TLS) {
    rc = kg_fail(errbuf, KG_EIO, "%s (the Pushgateway's certificate checked against %s%s)", resp.error,
                 *o->pushgateway_ca_file ? "metrics.reporting.prometheus.pushgateway.ssl.ca.location="
                                         : "the system's CAs",
                 o->pushgateway_ca_file);
  } else if (rc && resp.attempts) {
    rc = kg_fail(errbuf, KG_EIO, "%s", resp.error);
  }
  kg_http_response_free(&resp);
  return rc;
}

/* The interim pushes run on a thread of their own, one at a time, so that a Pushgateway that does not answer holds
 * up neither the watchdog (which calls the interim hook) nor the tasks: an interim report that finds the last push
 * still going skips its push. The final report waits for it (within the timeout), so that it cannot land after the
 * final push. Only the watchdog's thread starts pushes, and the job's thread joins the last after the watchdog has
 * been joined. */
static struct {
  pthread_t thread;
  bool started;     /* a push thread was started and not yet joined */
  atomic_bool done; /* it has finished */
  char *url;
  kg_buf_t body;
  const kg_prom_reporter_options_t *options; /* the run's config's, which outlives the push */
  bool warned; /* an interim report of this run has failed and said so: the next ones stay quiet */
} interim_push;

static void *interim_push_thread(void *arg) {
  (void)arg;
  char err[KG_ERRLEN];
  if (push(interim_push.options, interim_push.url, interim_push.body.data, interim_push.body.len, err) &&
      !interim_push.warned) {
    interim_push.warned = true;
    char shown[1024];
    kg_http_shown_url(interim_push.url, shown, sizeof shown);
    KG_WARN("cannot push the interim metrics to the Pushgateway at %s (metrics.reporting.prometheus.pushgateway.url): "
            "%s; the run goes on (later interim failures are not logged)",
            shown, err);
  }
  atomic_store(&interim_push.done, true);
  return NULL;
}

static void interim_push_join(void) {
  if (!interim_push.started) return;
  pthread_join(interim_push.thread, NULL);
  interim_push.started = false;
  free(interim_push.url);
  interim_push.url = NULL;
  kg_buf_free(&interim_push.body);
}

static bool interim_file_warned;

static void prom_interim(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks) {
  const kg_config_t *c = report->config;
  const kg_prom_reporter_options_t *o = kg_prom_reporter_options(c);
  prom_run_t run = {.report = report,
                    .now_ms = kg_now_ms(),
                    .ntasks = ntasks,
                    .last_run_ms = report->prev_run_ms,
                    .last_success_ms = report->prev_success_ms};
  for (size_t i = 0; i < ntasks; i++) {
    run.read += atomic_load((_Atomic int64_t *)&tasks[i].live.read);
    run.written += atomic_load((_Atomic int64_t *)&tasks[i].live.written);
    run.bytes += atomic_load((_Atomic int64_t *)&tasks[i].live.bytes);
  }
  char err[KG_ERRLEN];
  if (*o->file) {
    prom_text_t t;
    render(&t, &run, true);
    if (write_atomically(o->file, t.out.data, t.out.len, err) && !interim_file_warned) {
      interim_file_warned = true;
      KG_WARN("cannot write the interim metrics to the Prometheus file %s (metrics.reporting.prometheus.file): %s; "
              "the run goes on (later interim failures are not logged)",
              o->file, err);
    }
    text_free(&t);
  }
  if (*o->pushgateway_url) {
    if (interim_push.started && !atomic_load(&interim_push.done)) return; /* the last one is still going */
    interim_push_join();
    prom_text_t t;
    render(&t, &run, false);
    interim_push.url = group_url(c);
    interim_push.body = t.out;
    t.out = (kg_buf_t){0};
    text_free(&t);
    interim_push.options = o;
    atomic_store(&interim_push.done, false);
    if (pthread_create(&interim_push.thread, NULL, interim_push_thread, NULL) == 0) {
      interim_push.started = true;
    } else {
      free(interim_push.url);
      interim_push.url = NULL;
      kg_buf_free(&interim_push.body);
    }
  }
}

static int compare_parts(const void *a, const void *b) {
  const prom_partition_t *x = a, *y = b;
  int c = strcmp(x->wu->topic, y->wu->topic);
  return c ? c : (x->wu->partition > y->wu->partition) - (x->wu->partition < y->wu->partition);
}

/* The broker's latest offset of each partition of RUN, for the lag; a WARN when the brokers do not tell. */
static void latest_offsets(const kg_report_t *report, prom_run_t *run) {
  if (!run->nparts || !report->source_offsets) return;
  const char **topics = kg_xcalloc(run->nparts, sizeof *topics);
  int32_t *partitions = kg_xcalloc(run->nparts, sizeof *partitions);
  int64_t *earliest = kg_xcalloc(run->nparts, sizeof *earliest), *latest = kg_xcalloc(run->nparts, sizeof *latest);
  const char **errors = kg_xcalloc(run->nparts, sizeof *errors);
  for (size_t i = 0; i < run->nparts; i++) {
    topics[i] = run->parts[i].wu->topic;
    partitions[i] = run->parts[i].wu->partition;
  }
  char err[KG_ERRLEN];
  int rc = report->source_offsets(report->config, topics, partitions, run->nparts, earliest, latest, errors, err);
  if (rc)
    KG_WARN("cannot read the partitions' latest offsets for the Prometheus metrics (kingest_partition_lag_records is "
            "left out): %s",
            err);
  for (size_t i = 0; !rc && i < run->nparts; i++) {
    run->parts[i].has_latest = !errors[i];
    run->parts[i].latest = latest[i];
  }
  free(topics);
  free(partitions);
  free(earliest);
  free(latest);
  free(errors);
}

static void prom_final(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks,
                       const kg_metrics_t *job_metrics, bool succeeded) {
  (void)succeeded;
  const kg_config_t *c = report->config;
  const kg_prom_reporter_options_t *o = kg_prom_reporter_options(c);
  interim_push_join(); /* bounded by the push's timeout */
  interim_push.warned = interim_file_warned = false;
  char err[KG_ERRLEN];
  prom_run_t run = {.final = true,
                    .report = report,
                    .now_ms = report->end_ms ? report->end_ms : kg_now_ms(),
                    .ntasks = ntasks,
                    .result = report->result,
                    .succeeded = kg_report_succeeded(c, report->result),
                    .counts = kg_report_counts(job_metrics, tasks, ntasks),
                    .failed = kg_metrics_get(job_metrics, KG_M_RECORDS_FAILED),
                    .offset_resets = kg_metrics_get(job_metrics, KG_M_OFFSET_RESETS),
                    .tasks = tasks,
                    .job_metrics = job_metrics};
  run.read = run.counts.read;
  run.written = run.counts.written;
  run.bytes = run.counts.bytes;
  for (size_t i = 0; i < ntasks; i++)
    run.tasks_failed += !tasks[i].result.succeeded;

  /* The state store: the committed offsets, and the history when this run did not succeed. A run that failed
   * before it opened the store reads it read-only. */
  kg_state_t *state = report->state, *own = NULL;
  if (!state && kg_state_open_readonly(c->state_store_dir, c->job_name, &own, err) == KG_OK) state = own;
  run.last_run_ms = run.now_ms;
  if (run.succeeded) {
    run.last_success_ms = run.now_ms;
  } else if (report->history_read) {
    run.last_success_ms = report->prev_success_ms;
  } else if (state) {
    int64_t prev_run;
    if (kg_state_last_runs(state, report->job_id, !c->fail_on_partial, &prev_run, &run.last_success_ms, err))
      KG_WARN("%s", err);
  }
  /* The history's totals, and this run's counts (its row is finished after the report). */
  if (state) {
    if (kg_state_run_totals(state, report->job_id, &run.totals, prom_results, 4, run.runs, err)) {
      KG_WARN("%s (the kingest_*_total counters are left out)", err);
    } else {
      run.has_totals = true;
      run.totals.read += run.counts.read;
      run.totals.written += run.counts.written;
      run.totals.bytes += run.counts.bytes;
      run.totals.skipped += run.counts.skipped;
      run.totals.quarantined += run.counts.quarantined;
      run.totals.deleted += run.counts.deleted;
      run.totals.tombstones += run.counts.tombstones;
      for (size_t i = 0; i < 4; i++)
        if (report->result && !strcmp(report->result, prom_results[i])) run.runs[i]++;
    }
  }

  for (size_t i = 0; i < ntasks; i++)
    run.nparts += tasks[i].result.units ? tasks[i].spec.nunits : 0;
  run.parts = kg_xcalloc(run.nparts + 1, sizeof *run.parts);
  run.nparts = 0;
  for (size_t i = 0; i < ntasks; i++)
    for (size_t u = 0; tasks[i].result.units && u < tasks[i].spec.nunits; u++)
      run.parts[run.nparts++] = (prom_partition_t){.wu = tasks[i].spec.units[u], .r = &tasks[i].result.units[u]};
  qsort(run.parts, run.nparts, sizeof *run.parts, compare_parts);
  kg_partition_state_t *stored = NULL;
  size_t nstored = 0;
  if (state && run.nparts) {
    if (kg_state_partitions(state, &stored, &nstored, err)) {
      KG_WARN("%s", err);
    } else {
      for (size_t i = 0; i < run.nparts; i++) {
        const kg_workunit_t *wu = run.parts[i].wu;
        const kg_partition_state_t *p = kg_state_find(stored, nstored, wu->topic, wu->partition);
        run.parts[i].has_next = p != NULL;
        run.parts[i].next = p ? p->next_offset : 0;
      }
    }
  }
  kg_state_free_partitions(stored, nstored);
  kg_state_close(own);
  bool any_next = false;
  for (size_t i = 0; i < run.nparts; i++)
    any_next |= run.parts[i].has_next;
  if (any_next) latest_offsets(report, &run);

  if (*o->file) {
    prom_text_t t;
    render(&t, &run, true);
    if (write_atomically(o->file, t.out.data, t.out.len, err))
      KG_WARN("cannot write the Prometheus file %s (metrics.reporting.prometheus.file): %s", o->file, err);
    else
      KG_INFO("Wrote the Prometheus metrics to %s", o->file);
    text_free(&t);
  }
  if (*o->pushgateway_url) {
    prom_text_t t;
    render(&t, &run, false);
    char *url = group_url(c), shown[1024];
    kg_http_shown_url(url, shown, sizeof shown);
    if (push(o, url, t.out.data, t.out.len, err))
      KG_WARN("cannot push the metrics to the Pushgateway at %s (metrics.reporting.prometheus.pushgateway.url): %s",
              shown, err);
    else
      KG_INFO("Pushed the Prometheus metrics to %s", shown);
    free(url);
    text_free(&t);
  }
  free(run.parts);
}

static bool prom_enabled(const kg_config_t *c) {
  const kg_prom_reporter_options_t *o = kg_prom_reporter_options(c);
  return (o->file && *o->file) || (o->pushgateway_url && *o->pushgateway_url);
}

/* ---- the Prometheus reporter's properties -------------------------------------------------------------------- */

/* metrics.reporting.prometheus.file: empty for none, else made absolute; a name ending in / is refused. */
static int set_prom_file(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                         kg_property_value_t *v, char *errbuf) {
  (void)p;
  char *value = v->s;
  size_t n = strlen(value);
  if (n && value[n - 1] == '/') {
    kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s names a folder: give the file, such as %skingest.prom",
            kg_config_origin(c, key), key, value, value);
    free(value);
    return KG_EINVAL;
  }
  ((kg_prom_reporter_options_t *)options)->file = n ? kg_config_absolute(value) : kg_xstrdup("");
  free(value);
  return KG_OK;
}

/* metrics.reporting.prometheus.pushgateway.url: empty for none, else an http:// or https:// URL (its trailing / left
 * off, so that the push path can follow it). */
static int set_pushgateway_url(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                               kg_property_value_t *v, char *errbuf) {
  (void)p;
  char *value = v->s;
  const char *url = kg_strtrim(value);
  if (*url && strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8)) {
    kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: expected the Pushgateway's http:// or https:// URL",
            kg_config_origin(c, key), key, url);
    free(value);
    return KG_EINVAL;
  }
  size_t n = strlen(url);
  while (n && url[n - 1] == '/')
    n--;
  ((kg_prom_reporter_options_t *)options)->pushgateway_url = kg_xasprintf("%.*s", (int)n, url);
  free(value);
  return KG_OK;
}

/* metrics.reporting.prometheus.pushgateway.ssl.ca.location: empty for the system's CAs, else a file that can be read,
 * made absolute. */
static int set_pushgateway_ca(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                              kg_property_value_t *v, char *errbuf) {
  (void)p;
  kg_prom_reporter_options_t *o = options;
  char *value = v->s;
  o->pushgateway_ca_file = *value ? kg_config_absolute(value) : kg_xstrdup("");
  free(value);
  if (*o->pushgateway_ca_file && access(o->pushgateway_ca_file, R_OK))
    return kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: the CA file cannot be read: %s", kg_config_origin(c, key),
                   key, o->pushgateway_ca_file, strerror(errno));
  return KG_OK;
}

/* metrics.reporting.prometheus.pushgateway.basic.auth.user.info: user:password (split at the first ':'), or empty. */
static int set_pushgateway_user_info(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                                     kg_property_value_t *v, char *errbuf) {
  (void)p;
  kg_prom_reporter_options_t *o = options;
  char *value = v->s;
  const char *colon = strchr(value, ':');
  o->pushgateway_user = kg_xstrndup(value, colon ? (size_t)(colon - value) : 0);
  o->pushgateway_password = kg_xstrdup(colon ? colon + 1 : "");
  int rc = KG_OK;
  if (*value && !colon)
    rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s is not user:password", kg_config_origin(c, key), key);
  memset(value, 0, strlen(value));
  free(value);
  return rc;
}

static void clear(void *options) {
  kg_prom_reporter_options_t *o = options;
  free(o->file);
  free(o->pushgateway_url);
  free(o->pushgateway_ca_file);
  free(o->pushgateway_user);
  if (o->pushgateway_password) memset(o->pushgateway_password, 0, strlen(o->pushgateway_password));
  free(o->pushgateway_password);
}

#define KG_FIELD(f) KG_FIELD_OF(kg_prom_reporter_options_t, f)

static const kg_property_t rows[] = {
    {.name = "metrics.reporting.prometheus.file",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_prom_file,
     .doc = "File the run's metrics go to in Prometheus's text format, for node_exporter's textfile collector (a "
            "`*.prom` file in its folder, which must exist): replaced atomically when the run ends and every "
            "`metrics.report.interval` during it. Empty: none ([Prometheus](#prometheus))."},
    {.name = "metrics.reporting.prometheus.pushgateway.url",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_pushgateway_url,
     .doc = "Base URL (`http://` or `https://`) of a Prometheus Pushgateway: the same metrics are PUT to "
            "`<url>/metrics/job/<job.name>` at the same times, replacing the job's group. Empty: none."},
    {.name = "metrics.reporting.prometheus.pushgateway.timeout.ms",
     .type = KG_PROP_INT,
     .def = "5000",
     .min = 100,
     .max = 600000,
     KG_FIELD(pushgateway_timeout_ms),
     .doc = "Longest a push to the Pushgateway may take, connecting included; one that takes longer is given up with "
            "a WARN and the run goes on."},
    {.name = "metrics.reporting.prometheus.pushgateway.ssl.ca.location",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_pushgateway_ca,
     .doc = "PEM file of the certificate authorities an `https://` Pushgateway's certificate is checked against; "
            "empty: the system's ([Security](security.md#the-schema-registry-and-the-pushgateway))."},
    {.name = "metrics.reporting.prometheus.pushgateway.basic.auth.user.info",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_pushgateway_user_info,
     .secret = true,
     .doc = "Basic authentication with the Pushgateway (its `--web.config.file`'s `basic_auth_users`): "
            "`user:password`, split at the first `:`. A secret: never printed; give it with `${file:PATH}`."},
};

const kg_config_section_t kg_reporter_prom_section = {.name = "report.prometheus",
                                                      .rows = rows,
                                                      .nrows = sizeof rows / sizeof rows[0],
                                                      .size = sizeof(kg_prom_reporter_options_t),
                                                      .clear = clear};

const kg_prom_reporter_options_t *kg_prom_reporter_options(const kg_config_t *config) {
  return kg_config_options(config, &kg_reporter_prom_section);
}

const kg_reporter_t kg_reporter_prom = {
    .name = "prometheus",
    .section = &kg_reporter_prom_section,
    .enabled = prom_enabled,
    .interim = prom_interim,
    .final = prom_final,
};
