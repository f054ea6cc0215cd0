/* reporter_file.c: the file reporter: a metrics file per run, <metrics.log.dir>/<job>.metrics.<jobId>[.<suffix>],
 * JSON lines (metrics.reporting.file.enabled). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fs.h"
#include "log.h"
#include "report.h"
#include "secret.h"

/* Appends LEN bytes of DATA to the metrics file PATH in folder DIR (metrics.log.dir). The metrics files are
 * written by the file reporter to the local file system, whatever file system the writer uses. */
static int append_metrics(const char *dir, const char *path, const char *data, size_t len) {
  kg_fs_t *fs = kg_fs_local();
  kg_fs_stream_t *stream = NULL;
  char err[KG_ERRLEN];
  if (kg_fs_mkdirs(fs, dir, err) || kg_fs_create(fs, path, KG_FS_APPEND, &stream, err)) return KG_EIO;
  char *shown = NULL;
  if (kg_secret_any()) { /* a secret an error or a script's metric would quote is masked (secret.h) */
    shown = kg_xmalloc(len + 1);
    memcpy(shown, data, len);
    kg_secret_mask_bytes(shown, &len);
    data = shown;
  }
  int rc = kg_fs_stream_write(stream, data, len, err);
  free(shown);
  if (kg_fs_stream_close(stream, err) && !rc) rc = KG_EIO;
  return rc;
}

static char *metrics_path(const kg_report_t *report) {
  const kg_config_t *c = report->config;
  const kg_file_reporter_options_t *o = kg_file_reporter_options(c);
  return *o->suffix ? kg_xasprintf("%s/%s.metrics.%s.%s", o->dir, c->job_name, report->job_id, o->suffix)
                    : kg_xasprintf("%s/%s.metrics.%s", o->dir, c->job_name, report->job_id);
}

/* One interim line per task: records read and written and bytes written so far. */
static void file_interim(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks) {
  const kg_file_reporter_options_t *o = kg_file_reporter_options(report->config);
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
  if (append_metrics(o->dir, path, out.data, out.len))
    KG_WARN("cannot write the metrics file %s (metrics.log.dir)", path);
  free(path);
  kg_buf_free(&out);
}

/* A line per task and one for the job, then every event of the run, after any interim lines. */
static void file_final(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks,
                       const kg_metrics_t *job_metrics, bool succeeded) {
  const kg_file_reporter_options_t *o = kg_file_reporter_options(report->config);
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
  }
  kg_buf_appendf(&out, "{\"type\":\"metrics\",\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
  kg_json_string(&out, report->job_id);
  kg_buf_appendf(&out, ",\"state\":\"%s\"},\"counters\":", succeeded ? "SUCCESSFUL" : "FAILED");
  kg_metrics_json(job_metrics, &out);
  kg_buf_append(&out, "}\n", 2);
  if (report->events.len) kg_buf_append(&out, report->events.data, report->events.len);

  char *path = metrics_path(report);
  if (append_metrics(o->dir, path, out.data, out.len)) /* after any interim reports */
    KG_WARN("cannot write the metrics file %s (metrics.log.dir)", path);
  else
    KG_INFO("Wrote metrics to %s", path);
  free(path);
  kg_buf_free(&out);
}

static bool file_enabled(const kg_config_t *c) { return kg_file_reporter_options(c)->enabled; }

#define KG_FIELD(f) KG_FIELD_OF(kg_file_reporter_options_t, f)

static const kg_property_t rows[] = {
    {.name = "metrics.reporting.file.enabled",
     .type = KG_PROP_BOOL,
     .def = "false",
     KG_FIELD(enabled),
     .doc = "Write a metrics file for each run."},
    {.name = "metrics.log.dir",
     .type = KG_PROP_PATH,
     .def = "<work dir>/metrics",
     .empty_is_default = true,
     KG_FIELD(dir),
     .doc = "Folder of the metrics files."},
    {.name = "metrics.reporting.file.suffix",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(suffix),
     .doc = "Extension of the metrics file."},
};

const kg_config_section_t kg_reporter_file_section = {.name = "report.file",
                                                      .rows = rows,
                                                      .nrows = sizeof rows / sizeof rows[0],
                                                      .size = sizeof(kg_file_reporter_options_t)};

const kg_file_reporter_options_t *kg_file_reporter_options(const kg_config_t *config) {
  return kg_config_options(config, &kg_reporter_file_section);
}

const kg_reporter_t kg_reporter_file = {
    .name = "file",
    .section = &kg_reporter_file_section,
    .enabled = file_enabled,
    .interim = file_interim,
    .final = file_final,
};
