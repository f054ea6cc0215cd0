/* report.c: the report phase (report.h): events, the reporters of the registry, the accounting of records. */
#include "report.h"

#include "buf.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kg_report_init(kg_report_t *report, const kg_config_t *config, const char *job_id, int64_t start_ms) {
  memset(report, 0, sizeof *report);
  report->config = config;
  report->job_id = job_id;
  report->start_ms = start_ms;
}

void kg_report_begin(kg_report_t *report, kg_state_t *state) {
  report->state = state;
  if (!kg_report_enabled(report)) return;
  char err[KG_ERRLEN];
  if (kg_state_last_runs(state, report->job_id, !report->config->fail_on_partial, &report->prev_run_ms,
                         &report->prev_success_ms, err))
    KG_WARN("%s", err);
  else
    report->history_read = true;
}

bool kg_report_succeeded(const kg_config_t *config, const char *result) {
  return result && (!strcmp(result, "SUCCESSFUL") || (!strcmp(result, "PARTIAL") && !config->fail_on_partial));
}

void kg_report_clear(kg_report_t *report) { kg_buf_free(&report->events); }

void kg_report_event(kg_report_t *report, const char *name, const char *metadata_json) {
  kg_buf_appendf(&report->events, "{\"type\":\"event\",\"name\":\"%s\",\"time\":%lld,\"job\":", name,
                 (long long)kg_now_ms());
  kg_json_string(&report->events, report->job_id);
  kg_buf_appendf(&report->events, ",\"metadata\":%s}\n", metadata_json ? metadata_json : "{}");
}

/* The reporters, in the order they report. A reporter is a file and a row here. */
static const kg_reporter_t *const reporters[] = {&kg_reporter_file, &kg_reporter_prom};
#define KG_NREPORTERS (sizeof reporters / sizeof reporters[0])

const kg_config_section_t *kg_report_section_at(size_t i) {
  for (size_t r = 0; r < KG_NREPORTERS; r++)
    if (reporters[r]->section && i-- == 0) return reporters[r]->section;
  return NULL;
}

bool kg_report_enabled(const kg_report_t *report) {
  for (size_t i = 0; i < KG_NREPORTERS; i++)
    if (reporters[i]->enabled(report->config)) return true;
  return false;
}

void kg_report_interim(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks) {
  for (size_t i = 0; i < KG_NREPORTERS; i++)
    if (reporters[i]->enabled(report->config) && reporters[i]->interim) reporters[i]->interim(report, tasks, ntasks);
}

void kg_report_write(kg_report_t *report, const kg_task_t *tasks, size_t ntasks, const kg_metrics_t *job_metrics,
                     bool succeeded) {
  if (!kg_report_enabled(report)) return;
  /* The per-partition events, for every reporter. */
  for (size_t i = 0; i < ntasks; i++) {
    const kg_task_t *t = &tasks[i];
    for (size_t u = 0; u < t->spec.nunits; u++) {
      kg_workunit_t *wu = t->spec.units[u];
      const kg_unit_result_t *r = t->result.units ? &t->result.units[u] : NULL;
      if (!r) continue;
      kg_buf_t md = {0};
      kg_buf_append(&md, "{\"topic\":", 9);
      kg_json_string(&md, wu->topic);
      kg_buf_appendf(&md,
                     ",\"partition\":%d,\"lowWatermark\":%lld,\"expectedHighWatermark\":%lld,"
                     "\"actualHighWatermark\":%lld,\"numRecordsConsumed\":%lld,\"avgRecordMillis\":%.6f,"
                     "\"avgRecordSize\":%.2f,\"decodingErrors\":%lld,\"skipped\":%lld,\"quarantined\":%lld,"
                     "\"deletedBeforeRead\":%lld,\"tombstones\":%lld,\"task\":\"%s\"}",
                     wu->partition, (long long)wu->low, (long long)wu->high, (long long)r->actual_high,
                     (long long)r->records, r->records ? (double)r->elapsed_ms / (double)r->records : 0.0,
                     r->records ? (double)r->bytes / (double)r->records : 0.0, (long long)r->decode_errors,
                     (long long)r->skipped, (long long)r->quarantined, (long long)r->deleted, (long long)r->tombstones,
                     t->spec.task_id);
      kg_report_event(report, "KafkaExtractorTopicMetadata", md.data);
      kg_buf_free(&md);
      if (r->premature_stop) {
        kg_buf_t stop = {0};
        kg_buf_append(&stop, "{\"topic\":", 9);
        kg_json_string(&stop, wu->topic);
        kg_buf_appendf(&stop,
                       ",\"partition\":%d,\"expectedHighWatermark\":%lld,\"actualHighWatermark\":%lld,\"reason\":",
                       wu->partition, (long long)wu->high, (long long)r->actual_high);
        kg_json_string(&stop, r->stop_reason);
        kg_buf_append(&stop, "}", 1);
        kg_report_event(report, "PrematureExtractorStop", stop.data);
        kg_buf_free(&stop);
      }
    }
  }
  for (size_t i = 0; i < KG_NREPORTERS; i++)
    if (reporters[i]->enabled(report->config)) reporters[i]->final(report, tasks, ntasks, job_metrics, succeeded);
}

void kg_report_failed_records(const kg_task_t *tasks, size_t ntasks) {
  int64_t skipped = 0, quarantined = 0, deleted = 0, read = 0, in_failed = 0;
  size_t nparts = 0;
  kg_buf_t parts = {0};
  const char *first = NULL;
  for (size_t i = 0; i < ntasks; i++) {
    const kg_task_t *t = &tasks[i];
    if (!t->result.units) continue;
    if (!first && t->result.first_error[0]) first = t->result.first_error;
    for (size_t u = 0; u < t->spec.nunits; u++) {
      const kg_unit_result_t *r = &t->result.units[u];
      /* A failed task's failed records were neither skipped nor quarantined (task.c): it publishes nothing. */
      int64_t lost = t->result.succeeded ? 0 : r->decode_errors;
      read += r->records;
      if (!r->skipped && !r->quarantined && !r->deleted && !lost) continue;
      int64_t s = r->skipped;
      skipped += s;
      quarantined += r->quarantined;
      deleted += r->deleted;
      in_failed += lost;
      if (nparts++ >= 20) continue;
      kg_buf_appendf(&parts, "%s%s:%d ", parts.len ? ", " : "", t->spec.units[u]->topic, t->spec.units[u]->partition);
      const char *sep = "";
      if (s) kg_buf_appendf(&parts, "%s%lld skipped", sep, (long long)s), sep = " ";
      if (r->quarantined) kg_buf_appendf(&parts, "%s%lld quarantined", sep, (long long)r->quarantined), sep = " ";
      if (lost) kg_buf_appendf(&parts, "%s%lld failed in a failed task", sep, (long long)lost), sep = " ";
      if (r->deleted) kg_buf_appendf(&parts, "%s%lld deleted before read", sep, (long long)r->deleted);
    }
  }
  char failed_tasks[160] = "";
  if (in_failed)
    snprintf(failed_tasks, sizeof failed_tasks,
             ", %lld in tasks that failed (those tasks publish nothing, quarantine included, and their offsets do "
             "not move)",
             (long long)in_failed);
  if (nparts)
    KG_WARN("Of %lld records read, %lld failed in the script: %lld were skipped, %lld were quarantined%s; %lld were "
            "deleted before they were read: %s%s%s%s",
            (long long)read, (long long)(skipped + quarantined + in_failed), (long long)skipped, (long long)quarantined,
            failed_tasks, (long long)deleted, parts.data, nparts > 20 ? ", ..." : "", first ? "; first failure: " : "",
            first ? first : "");
  kg_buf_free(&parts);
}

kg_run_counts_t kg_report_counts(const kg_metrics_t *job_metrics, const kg_task_t *tasks, size_t ntasks) {
  kg_run_counts_t n = {
      .read = (int64_t)kg_metrics_get(job_metrics, KG_M_RECORDS_READ),
      .written = (int64_t)kg_metrics_get(job_metrics, KG_M_RECORDS_WRITTEN),
      .bytes = (int64_t)kg_metrics_get(job_metrics, KG_M_BYTES_WRITTEN),
  };
  for (size_t i = 0; i < ntasks; i++)
    for (size_t u = 0; tasks[i].result.units && u < tasks[i].spec.nunits; u++) {
      const kg_unit_result_t *r = &tasks[i].result.units[u];
      n.skipped += r->skipped;
      n.quarantined += r->quarantined;
      n.deleted += r->deleted;
      n.tombstones += r->tombstones;
    }
  return n;
}
