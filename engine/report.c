/* report.c: the metrics file and the accounting of records (report.h). */
#include "report.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

void kg_report_init(kg_report_t *report, const kg_config_t *config, const char *job_id) {
  memset(report, 0, sizeof *report);
  report->config = config;
  report->job_id = job_id;
}

void kg_report_clear(kg_report_t *report) { kg_buf_free(&report->events); }

void kg_report_event(kg_report_t *report, const char *name, const char *metadata_json) {
  kg_buf_appendf(&report->events, "{\"type\":\"event\",\"name\":\"%s\",\"time\":%lld,\"job\":", name,
                 (long long)kg_now_ms());
  kg_json_string(&report->events, report->job_id);
  kg_buf_appendf(&report->events, ",\"metadata\":%s}\n", metadata_json ? metadata_json : "{}");
}

/* Appends LEN bytes of DATA to the metrics file PATH in folder DIR (metrics.log.dir). The metrics files are
 * written by the file reporter to the local file system, whatever file system the writer uses. */
static int append_metrics(const char *dir, const char *path, const char *data, size_t len) {
  kg_fs_t *fs = kg_fs_local();
  kg_fs_stream_t *stream = NULL;
  char err[KG_ERRLEN];
  if (kg_fs_mkdirs(fs, dir, err) || kg_fs_create(fs, path, KG_FS_APPEND, &stream, err)) return KG_EIO;
  int rc = kg_fs_stream_write(stream, data, len, err);
  if (kg_fs_stream_close(stream, err) && !rc) rc = KG_EIO;
  return rc;
}

static char *metrics_path(const kg_report_t *report) {
  const kg_config_t *c = report->config;
  return *c->metrics_suffix
             ? kg_xasprintf("%s/%s.metrics.%s.%s", c->metrics_dir, c->job_name, report->job_id, c->metrics_suffix)
             : kg_xasprintf("%s/%s.metrics.%s", c->metrics_dir, c->job_name, report->job_id);
}

void kg_report_interim(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks) {
  const kg_config_t *c = report->config;
  kg_buf_t out = {0};
  for (size_t i = 0; i < ntasks; i++) {
    const kg_task_t *t = &tasks[i];
    kg_buf_appendf(
        &out, "{\"type\":\"metrics\",\"interim\":true,\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
    kg_json_string(&out, report->job_id);
    kg_buf_append(&out, ",\"task\":", 8);
    kg_json_string(&out, t->spec.task_id);
    kg_buf_appendf(&out, "},\"counters\":{\"%s\":%lld,\"%s\":%lld,\"%s\":%lld}}\n", KG_M_RECORDS_READ,
                   (long long)atomic_load((_Atomic int64_t *)&t->live.read), KG_M_RECORDS_WRITTEN,
                   (long long)atomic_load((_Atomic int64_t *)&t->live.written), KG_M_BYTES_WRITTEN,
                   (long long)atomic_load((_Atomic int64_t *)&t->live.bytes));
  }
  char *path = metrics_path(report);
  if (append_metrics(c->metrics_dir, path, out.data, out.len))
    KG_WARN("cannot write the metrics file %s (metrics.log.dir)", path);
  free(path);
  kg_buf_free(&out);
}

void kg_report_write(kg_report_t *report, const kg_task_t *tasks, size_t ntasks, const kg_metrics_t *job_metrics,
                     bool succeeded) {
  const kg_config_t *c = report->config;
  kg_buf_t out = {0};
  for (size_t i = 0; i < ntasks; i++) {
    const kg_task_t *t = &tasks[i];
    kg_buf_appendf(&out, "{\"type\":\"metrics\",\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
    kg_json_string(&out, report->job_id);
    kg_buf_append(&out, ",\"task\":", 8);
    kg_json_string(&out, t->spec.task_id);
    kg_buf_appendf(&out, ",\"state\":\"%s\"},\"counters\":", t->result.succeeded ? "SUCCESSFUL" : "FAILED");
    kg_metrics_json(&t->result.metrics, &out);
    kg_buf_append(&out, "}\n", 2);
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
                     "\"deletedBeforeRead\":%lld,\"task\":\"%s\"}",
                     wu->partition, (long long)wu->low, (long long)wu->high, (long long)r->actual_high,
                     (long long)r->records, r->records ? (double)r->elapsed_ms / (double)r->records : 0.0,
                     r->records ? (double)r->bytes / (double)r->records : 0.0, (long long)r->decode_errors,
                     (long long)r->skipped, (long long)r->quarantined, (long long)r->deleted, t->spec.task_id);
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
  kg_buf_appendf(&out, "{\"type\":\"metrics\",\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
  kg_json_string(&out, report->job_id);
  kg_buf_appendf(&out, ",\"state\":\"%s\"},\"counters\":", succeeded ? "SUCCESSFUL" : "FAILED");
  kg_metrics_json(job_metrics, &out);
  kg_buf_append(&out, "}\n", 2);
  if (report->events.len) kg_buf_append(&out, report->events.data, report->events.len);

  char *path = metrics_path(report);
  if (append_metrics(c->metrics_dir, path, out.data, out.len)) /* after any interim reports */
    KG_WARN("cannot write the metrics file %s (metrics.log.dir)", path);
  else
    KG_INFO("Wrote metrics to %s", path);
  free(path);
  kg_buf_free(&out);
}

void kg_report_failed_records(const kg_task_t *tasks, size_t ntasks) {
  int64_t skipped = 0, quarantined = 0, deleted = 0, read = 0;
  size_t nparts = 0;
  kg_buf_t parts = {0};
  const char *first = NULL;
  for (size_t i = 0; i < ntasks; i++) {
    const kg_task_t *t = &tasks[i];
    if (!t->result.units) continue;
    if (!first && t->result.first_error[0]) first = t->result.first_error;
    for (size_t u = 0; u < t->spec.nunits; u++) {
      const kg_unit_result_t *r = &t->result.units[u];
      read += r->records;
      if (!r->skipped && !r->quarantined && !r->deleted) continue;
      int64_t s = r->skipped;
      skipped += s;
      quarantined += r->quarantined;
      deleted += r->deleted;
      if (nparts++ >= 20) continue;
      kg_buf_appendf(&parts, "%s%s:%d ", parts.len ? ", " : "", t->spec.units[u]->topic, t->spec.units[u]->partition);
      const char *sep = "";
      if (s) kg_buf_appendf(&parts, "%s%lld skipped", sep, (long long)s), sep = " ";
      if (r->quarantined) kg_buf_appendf(&parts, "%s%lld quarantined", sep, (long long)r->quarantined), sep = " ";
      if (r->deleted) kg_buf_appendf(&parts, "%s%lld deleted before read", sep, (long long)r->deleted);
    }
  }
  if (nparts)
    KG_WARN("Of %lld records read, %lld failed in the script and were skipped, %lld were quarantined; %lld were "
            "deleted before they were read: %s%s%s%s",
            (long long)read, (long long)skipped, (long long)quarantined, (long long)deleted, parts.data,
            nparts > 20 ? ", ..." : "", first ? "; first failure: " : "", first ? first : "");
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
    }
  return n;
}
