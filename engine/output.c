/* output.c: a task's outputs (output.h). */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "writer.h"

/* The writer of one file path, opened on the first record that goes there. */
typedef struct {
  char *file_path; /* FP, or FP/_errors for quarantined records; owned */
  const char *ext; /* file extension */
  bool quarantine; /* JSON lines of failed records, not the job's output format */
  char *staging;   /* the file in task staging; owned */
  const char *schema; /* Avro: the file's schema (borrowed), SCHEMA_LEN bytes; NULL: writer.avro.schema */
  size_t schema_len;
  kg_writer_t *writer;
} kg_output_t;

struct kg_outputs {
  const kg_task_spec_t *spec;
  kg_output_t *outputs;
  size_t noutputs;
  size_t current; /* index of the output of the partition being pulled */
  int write_rc;   /* the first write error, and its message */
  char write_error[KG_ERRLEN];
  /* A record's outputs are all or nothing: where things stood before the record being processed wrote its
   * first output, so that a failure later in its converters can take back what it wrote. */
  const kg_record_t *emitting; /* that record, NULL when no output was written since the batch began */
  size_t mark_output;          /* the output it writes to */
  int64_t mark_records;        /* that output's records and bytes before the record (0 when not open) */
  int64_t mark_bytes;
};

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

kg_outputs_t *kg_outputs_new(const kg_task_spec_t *spec) {
  kg_outputs_t *o = kg_xcalloc(1, sizeof *o);
  o->spec = spec;
  return o;
}

void kg_outputs_destroy(kg_outputs_t *run) {
  if (!run) return;
  for (size_t i = 0; i < run->noutputs; i++) {
    if (run->outputs[i].writer) kg_writer_abort(run->outputs[i].writer);
    free(run->outputs[i].file_path);
    free(run->outputs[i].staging);
  }
  free(run->outputs);
  free(run);
}

/* The output for FP (taken over) with extension EXT; returns its index in run->outputs. */
static size_t output_for(kg_outputs_t *run, char *fp, const char *ext, bool quarantine) {
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
  o->staging = kg_xasprintf("%s/task-staging/%s/part.%s.%s", run->spec->job_dir, fp, run->spec->task_id, ext);
  o->writer = NULL;
  o->schema = NULL;
  o->schema_len = 0;
  return run->noutputs++;
}

void kg_outputs_select(kg_outputs_t *run, const char *topic, const char *schema, size_t schema_len) {
  const kg_config_t *c = run->spec->config;
  run->current = output_for(run, kg_task_file_path(c, topic, run->spec->extract_id), c->output_format, false);
  kg_output_t *o = &run->outputs[run->current];
  if (!o->writer) {
    o->schema = schema;
    o->schema_len = schema_len;
  }
}

/* Appends one record to output IDX, opening its file on first use; CHECKED: a datum known to be of the file's
 * schema. */
static int output_write(kg_outputs_t *run, size_t idx, const char *data, size_t len, bool checked) {
  kg_output_t *o = &run->outputs[idx];
  const kg_config_t *c = run->spec->config;
  if (!o->writer) {
    kg_writer_options_t jsonl = {.delimiter = "\n", .delimiter_len = 1};
    kg_writer_options_t options = {.delimiter = c->delimiter,
                                   .delimiter_len = c->delimiter_len,
                                   .prepend_size = c->prepend_size,
                                   .schema = o->schema ? o->schema : c->avro_schema,
                                   .schema_len = o->schema ? o->schema_len : c->avro_schema_len,
                                   .codec = c->codec,
                                   .deflate_level = c->deflate_level};
    int rc = o->quarantine
                 ? kg_writer_open(run->spec->fs, &kg_writer_simple, o->staging, &jsonl, &o->writer, run->write_error)
                 : kg_writer_open(run->spec->fs, run->spec->writer, o->staging, &options, &o->writer, run->write_error);
    if (rc) return rc;
  }
  return checked ? kg_writer_write_checked(o->writer, data, len, run->write_error)
                 : kg_writer_write(o->writer, data, len, run->write_error);
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

/* The N bytes at P as a JSON string of their base64, or null when P is NULL (a null key or payload). */
static void base64_or_null(kg_buf_t *out, const char *p, size_t n) {
  if (!p) {
    kg_buf_append(out, "null", 4);
    return;
  }
  kg_buf_append(out, "\"", 1);
  base64(out, (const unsigned char *)p, n);
  kg_buf_append(out, "\"", 1);
}

int kg_outputs_quarantine(kg_outputs_t *run, const kg_workunit_t *wu, const kg_record_t *r, const char *stage,
                          const char *error, char *errbuf) {
  char *fp = kg_task_file_path(run->spec->config, wu->topic, run->spec->extract_id);
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
  base64_or_null(&line, r->key_ptr, r->key_len);
  kg_buf_append(&line, ",\"value_base64\":", 16);
  base64_or_null(&line, r->value_ptr, r->value_len);
  kg_buf_append(&line, "}", 1);
  int rc = output_write(run, idx, line.data, line.len, false);
  kg_buf_free(&line);
  return rc ? kg_fail(errbuf, KG_EIO, "%s", run->write_error) : KG_OK;
}

static int emit(kg_outputs_t *run, const kg_record_t *record, const char *data, size_t len, bool checked) {
  if (run->write_rc) return run->write_rc;
  if (record != run->emitting) { /* the record's first output: a mark (a buffering writer may write out here) */
    kg_output_t *o = &run->outputs[run->current];
    run->emitting = record;
    run->mark_output = run->current;
    run->mark_records = run->mark_bytes = 0;
    if (o->writer &&
        (run->write_rc = kg_writer_mark(o->writer, &run->mark_records, &run->mark_bytes, run->write_error)))
      return run->write_rc;
  }
  run->write_rc = output_write(run, run->current, data, len, checked);
  kg_crash_point("write");
  return run->write_rc;
}

int kg_outputs_emit(void *ctx, const kg_record_t *record, const char *data, size_t len) {
  return emit(ctx, record, data, len, false);
}

int kg_outputs_emit_datum(void *ctx, const kg_record_t *record, const char *data, size_t len) {
  return emit(ctx, record, data, len, true);
}

void kg_outputs_batch_begin(kg_outputs_t *run) { run->emitting = NULL; }

int kg_outputs_take_back(kg_outputs_t *run, const kg_record_t *record, char *errbuf) {
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

int kg_outputs_error(const kg_outputs_t *run, char *errbuf) {
  return run->write_rc ? kg_fail(errbuf, run->write_rc, "%s", run->write_error) : KG_OK;
}

void kg_outputs_written(const kg_outputs_t *run, int64_t *records, int64_t *bytes) {
  *records = *bytes = 0;
  for (size_t i = 0; i < run->noutputs; i++) {
    const kg_output_t *o = &run->outputs[i];
    if (!o->writer || o->quarantine) continue;
    *records += kg_writer_records(o->writer);
    *bytes += kg_writer_bytes(o->writer);
  }
}

int kg_outputs_finish(kg_outputs_t *run, bool ok, kg_task_result_t *result, char *err) {
  const kg_task_spec_t *t = run->spec;
  int rc = ok ? KG_OK : KG_EINVAL;
  for (size_t i = 0; i < run->noutputs; i++) {
    kg_output_t *o = &run->outputs[i];
    if (!o->writer) continue;
    if (rc) {
      kg_writer_abort(o->writer);
      o->writer = NULL;
      continue;
    }
    rc = kg_writer_close(o->writer, NULL, NULL, err);
    o->writer = NULL;
    if (rc) continue;
    char *output = kg_xasprintf("%s/task-output/%s/part.%s.%s", t->job_dir, o->file_path, t->task_id, o->ext);
    rc = kg_fs_move(t->fs, o->staging, output, err);
    kg_crash_point("task-output");
    result->files = kg_xrealloc(result->files, (result->nfiles + 1) * sizeof(kg_task_file_t));
    kg_task_file_t *f = &result->files[result->nfiles++];
    f->file_path = kg_xstrdup(o->file_path);
    f->output = output;
    f->final = kg_xasprintf("%s/%s/part.%s.%s", t->config->final_dir, o->file_path, t->task_id, o->ext);
  }
  return ok ? rc : KG_OK;
}
