/* output.c: a task's outputs (output.h). */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fault.h"
#include "fs.h"
#include "partition.h"
#include "writer.h"

/* The files of one output folder: the writer of the file being written, opened on the first record that goes
 * there, and the files already closed by rolling (writer.file.max.size, writer.file.max.records), which wait in
 * task staging for the task's end. */
typedef struct {
  char *file_path; /* the folder under staging, task output and the final dir: FP, FP/<time folder>, or
                      FP/_errors for quarantined records; owned */
  const char *ext; /* file extension */
  bool quarantine; /* JSON lines of failed records, not the job's output format */
  bool rolls;      /* rolling is on: file names carry their number */
  int number;      /* the number of the file being written (rolling) */
  char *name;      /* its name, part.<taskId>[.<number>].<ext>; owned */
  char *staging;   /* its path in task staging; owned */
  kg_writer_t *writer;
  char **closed; /* names of the files closed by rolling, in staging; owned */
  size_t nclosed;
  int64_t closed_records, closed_bytes; /* what they hold */
  const char *schema; /* Avro: the files' schema (borrowed), SCHEMA_LEN bytes; NULL: writer.avro.schema */
  size_t schema_len;
} kg_output_t;

/* Where an output stood before the record being processed wrote to it: what taking the record back returns to. */
typedef struct {
  size_t output;
  int64_t records, bytes; /* 0, 0 when the record opened the file */
} mark_t;

struct kg_outputs {
  const kg_task_spec_t *spec;
  const kg_partitioner_t *partitioner; /* the job's (writer.partitioner.class), NULL for none */
  const char *ext;                     /* the output files' extension (writer.h: kg_writer_settings) */
  kg_output_t *outputs;
  size_t noutputs;
  char *topic_fp;     /* the FP of the topic being pulled; owned */
  size_t current;     /* index of that topic's output (without partitions) */
  const char *schema; /* and its Avro schema (see kg_outputs_select) */
  size_t schema_len;
  size_t last_partition; /* the output the last partitioned record went to, and its folder */
  char last_folder[512];
  int write_rc; /* the first write error, and its message */
  char write_error[KG_ERRLEN];
  char refused[KG_ERRLEN]; /* why the writer refused the last record it refused (KG_ERECORD), "" when none since */
  /* A record's outputs are all or nothing: the outputs the record being processed has written to, with where
   * each stood before, so that a failure later in its converters can take back what it wrote. */
  const kg_record_t *emitting; /* that record, NULL when no output was written since the batch began */
  mark_t *marks;
  size_t nmarks, marks_cap;
  bool finished;  /* kg_outputs_finish has run: what it handed over is what the counts say */
  bool published; /* and it handed every file over (false: the task's files were removed) */
};

char *kg_task_file_path(kg_path_type_t type, const char *extract_namespace, const char *topic, const char *extract_id) {
  if (type == KG_PATH_TABLENAME) return kg_xstrdup(topic);
  char *ns = kg_xstrdup(extract_namespace);
  for (char *p = ns; *p; p++)
    if (*p == '.') *p = '/';
  char *fp;
  if (type == KG_PATH_NAMESPACE_TABLE)
    fp = *ns ? kg_xasprintf("%s/%s", ns, topic) : kg_xstrdup(topic);
  else
    fp = *ns ? kg_xasprintf("%s/%s/%s_append", ns, topic, extract_id) : kg_xasprintf("%s/%s_append", topic, extract_id);
  free(ns);
  return fp;
}

kg_outputs_t *kg_outputs_new(const kg_task_spec_t *spec) {
  kg_outputs_t *o = kg_xcalloc(1, sizeof *o);
  o->spec = spec;
  o->partitioner = kg_partitioner_of(spec->config);
  o->ext = kg_writer_settings(spec->config)->ext;
  return o;
}

/* The path of file NAME of output O in the task's AREA (task-staging, task-output). */
static char *area_path(const kg_outputs_t *run, const char *area, const kg_output_t *o, const char *name) {
  return kg_xasprintf("%s/%s/%s/%s", run->spec->job_dir, area, o->file_path, name);
}

/* Removes the files output O closed by rolling (a failed task's). */
static void remove_closed(kg_outputs_t *run, kg_output_t *o) {
  for (size_t i = 0; i < o->nclosed; i++) {
    char *path = area_path(run, "task-staging", o, o->closed[i]);
    kg_fs_remove_tree(run->spec->fs, path, NULL);
    free(path);
    free(o->closed[i]);
  }
  free(o->closed);
  o->closed = NULL;
  o->nclosed = 0;
}

void kg_outputs_destroy(kg_outputs_t *run) {
  if (!run) return;
  for (size_t i = 0; i < run->noutputs; i++) {
    kg_output_t *o = &run->outputs[i];
    if (o->writer) kg_writer_abort(o->writer);
    remove_closed(run, o);
    free(o->file_path);
    free(o->name);
    free(o->staging);
  }
  free(run->outputs);
  free(run->topic_fp);
  free(run->marks);
  free(run);
}

/* Names output O's next file. */
static void name_file(kg_outputs_t *run, kg_output_t *o) {
  free(o->name);
  free(o->staging);
  o->name = o->rolls ? kg_xasprintf("part.%s.%d.%s", run->spec->task_id, o->number, o->ext)
                     : kg_xasprintf("part.%s.%s", run->spec->task_id, o->ext);
  o->staging = area_path(run, "task-staging", o, o->name);
}

/* The output for folder FP (taken over) with extension EXT; returns its index in run->outputs. */
static size_t output_for(kg_outputs_t *run, char *fp, const char *ext, bool quarantine) {
  for (size_t i = 0; i < run->noutputs; i++)
    if (!strcmp(run->outputs[i].file_path, fp)) {
      free(fp);
      return i;
    }
  const kg_config_t *c = run->spec->config;
  run->outputs = kg_xrealloc(run->outputs, (run->noutputs + 1) * sizeof(kg_output_t));
  kg_output_t *o = &run->outputs[run->noutputs];
  memset(o, 0, sizeof *o);
  o->file_path = fp;
  o->ext = ext;
  o->quarantine = quarantine;
  o->rolls = !quarantine && (c->roll_bytes > 0 || c->roll_records > 0);
  o->schema = run->schema;
  o->schema_len = run->schema_len;
  name_file(run, o);
  return run->noutputs++;
}

void kg_outputs_select(kg_outputs_t *run, const char *topic, const char *schema, size_t schema_len) {
  const kg_config_t *c = run->spec->config;
  free(run->topic_fp);
  run->topic_fp = kg_task_file_path(c->path_type, c->extract_namespace, topic, run->spec->extract_id);
  run->schema = schema;
  run->schema_len = schema_len;
  run->last_folder[0] = 0;
  if (!run->partitioner) {
    run->current = output_for(run, kg_xstrdup(run->topic_fp), run->ext, false);
    kg_output_t *o = &run->outputs[run->current];
    if (!o->writer && !o->nclosed) {
      o->schema = schema;
      o->schema_len = schema_len;
    }
  }
}

void kg_outputs_use_schema(kg_outputs_t *run, const char *schema, size_t schema_len) {
  run->schema = schema;
  run->schema_len = schema_len;
}

/* The output a record's output filed under TIME (ms since the epoch; negative: RECORD's timestamp, or now when
 * it has none) goes to: the topic's, or with a partitioner the one of the time's folder. */
static size_t output_of(kg_outputs_t *run, const kg_record_t *record, double time) {
  if (!run->partitioner) return run->current;
  int64_t ms = time >= 0 ? (int64_t)time : record && record->timestamp >= 0 ? (int64_t)record->timestamp : kg_now_ms();
  char folder[sizeof run->last_folder];
  kg_partitioner_path(run->partitioner, ms, folder, sizeof folder);
  if (run->last_folder[0] && !strcmp(folder, run->last_folder)) return run->last_partition;
  snprintf(run->last_folder, sizeof run->last_folder, "%s", folder);
  run->last_partition = output_for(run, kg_xasprintf("%s/%s", run->topic_fp, folder), run->ext, false);
  return run->last_partition;
}

/* Opens output O's file when it has none. */
static int open_file(kg_outputs_t *run, kg_output_t *o) {
  if (o->writer) return KG_OK;
  static const kg_simple_options_t lines = {.delimiter = "\n", .delimiter_len = 1};
  const kg_writer_options_t jsonl = {.backend = &lines};
  const kg_writer_options_t options =
      kg_writer_options_of(run->spec->config, run->spec->writer, o->schema, o->schema_len);
  return o->quarantine
             ? kg_writer_open(run->spec->fs, &kg_writer_simple, o->staging, &jsonl, &o->writer, run->write_error)
             : kg_writer_open(run->spec->fs, run->spec->writer, o->staging, &options, &o->writer, run->write_error);
}

/* Closes output O's file so that the next record starts the next one, numbered (part.<taskId>.<n>.<ext>); the
 * closed file waits in staging for the task's end. Called between records only. */
static int next_file(kg_outputs_t *run, kg_output_t *o) {
  if (!o->rolls) { /* the first file keeps its name: the next ones are numbered from 1 */
    o->rolls = true;
    o->number = 0;
  }
  int64_t records = 0, bytes = 0;
  int rc = kg_writer_close(o->writer, &records, &bytes, run->write_error);
  o->writer = NULL;
  if (rc) return rc;
  o->closed = kg_xrealloc(o->closed, (o->nclosed + 1) * sizeof *o->closed);
  o->closed[o->nclosed++] = kg_xstrdup(o->name);
  o->closed_records += records;
  o->closed_bytes += bytes;
  o->number++;
  name_file(run, o);
  return KG_OK;
}

/* Closes output O's file when it holds what the roll properties allow (writer.file.max.records, .size). */
static int roll(kg_outputs_t *run, kg_output_t *o) {
  const kg_config_t *c = run->spec->config;
  if (!o->rolls || !o->writer) return KG_OK;
  if (!((c->roll_records > 0 && kg_writer_records(o->writer) >= c->roll_records) ||
        (c->roll_bytes > 0 && kg_writer_bytes(o->writer) >= c->roll_bytes)))
    return KG_OK;
  return next_file(run, o);
}

/* Appends one record to output IDX, opening its file on first use; CHECKED: a datum known to be of the file's
 * schema. */
static int output_write(kg_outputs_t *run, size_t idx, const char *data, size_t len, bool checked) {
  kg_output_t *o = &run->outputs[idx];
  int rc = open_file(run, o);
  if (rc) return rc;
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
  const kg_config_t *c = run->spec->config;
  char *fp = kg_task_file_path(c->path_type, c->extract_namespace, wu->topic, run->spec->extract_id);
  size_t idx = output_for(run, kg_xasprintf("%s/_errors", fp), "jsonl", true);
  free(fp);
  kg_buf_t line = {0};
  kg_buf_append(&line, "{\"topic\":", 9);
  kg_json_string(&line, wu->topic);
  kg_buf_appendf(&line, ",\"partition\":%d,\"offset\":%.0f,\"timestamp\":%.0f,\"stage\":", r->partition, r->offset,
                 r->timestamp);
  kg_json_string(&line, stage);
  /* The message, and a script error's traceback (lua_bridge.c) in a field of its own, without its header. */
  static const char header[] = "\nstack traceback:\n";
  const char *tb = strstr(error, header);
  char *message = tb ? kg_xstrndup(error, (size_t)(tb - error)) : NULL;
  kg_buf_append(&line, ",\"error\":", 9);
  kg_json_string(&line, message ? message : error);
  kg_buf_append(&line, ",\"traceback\":", 13);
  if (tb)
    kg_json_string(&line, tb + sizeof header - 1);
  else
    kg_buf_append(&line, "null", 4);
  free(message);
  kg_buf_append(&line, ",\"key_base64\":", 14);
  base64_or_null(&line, r->key_ptr, r->key_len);
  kg_buf_append(&line, ",\"value_base64\":", 16);
  base64_or_null(&line, r->value_ptr, r->value_len);
  kg_buf_append(&line, "}", 1);
  int rc = output_write(run, idx, line.data, line.len, false);
  kg_buf_free(&line);
  return rc ? kg_fail(errbuf, KG_EIO, "%s", run->write_error) : KG_OK;
}

/* Before RECORD's first write to output IDX: rolls the output when it is full, and marks where it stands. */
static int first_write(kg_outputs_t *run, const kg_record_t *record, size_t idx) {
  if (record != run->emitting) {
    run->emitting = record;
    run->nmarks = 0;
  }
  for (size_t i = 0; i < run->nmarks; i++)
    if (run->marks[i].output == idx) return KG_OK; /* not the record's first write there */
  kg_output_t *o = &run->outputs[idx];
  int rc = KG_OK;
  if (!o->quarantine && o->schema != run->schema) { /* records of another schema from here: a file of their own */
    if (o->writer) rc = next_file(run, o);
    o->schema = run->schema;
    o->schema_len = run->schema_len;
  }
  if (!rc) rc = roll(run, o);
  if (rc) return rc;
  mark_t m = {idx, 0, 0};
  /* A mark: a buffering writer may write its buffer out here. */
  if (o->writer && (rc = kg_writer_mark(o->writer, &m.records, &m.bytes, run->write_error))) return rc;
  if (run->nmarks == run->marks_cap) {
    run->marks_cap = run->marks_cap ? 2 * run->marks_cap : 4;
    run->marks = kg_xrealloc(run->marks, run->marks_cap * sizeof *run->marks);
  }
  run->marks[run->nmarks++] = m;
  return KG_OK;
}

static int emit(kg_outputs_t *run, const kg_record_t *record, double time, const char *data, size_t len, bool checked) {
  if (run->write_rc) return run->write_rc;
  size_t idx = output_of(run, record, time);
  if ((run->write_rc = first_write(run, record, idx))) return run->write_rc;
  int rc = output_write(run, idx, data, len, checked);
  if (rc == KG_ERECORD) { /* this record does not fit the format: it fails, the outputs go on */
    snprintf(run->refused, sizeof run->refused, "%s", run->write_error);
    run->write_error[0] = '\0';
    return rc;
  }
  run->write_rc = rc;
  kg_crash_point("write");
  return run->write_rc;
}

int kg_outputs_emit(void *ctx, const kg_record_t *record, double time, const char *data, size_t len) {
  return emit(ctx, record, time, data, len, false);
}

int kg_outputs_emit_datum(void *ctx, const kg_record_t *record, double time, const char *data, size_t len) {
  return emit(ctx, record, time, data, len, true);
}

void kg_outputs_batch_begin(kg_outputs_t *run) {
  run->emitting = NULL;
  run->nmarks = 0;
  run->refused[0] = '\0';
}

bool kg_outputs_refused(kg_outputs_t *run, char *errbuf) {
  if (!run->refused[0]) return false;
  snprintf(errbuf, KG_ERRLEN, "%s", run->refused);
  run->refused[0] = '\0';
  return true;
}

int kg_outputs_take_back(kg_outputs_t *run, const kg_record_t *record, char *errbuf) {
  if (!record || record != run->emitting) return KG_OK; /* it wrote nothing */
  run->emitting = NULL;
  int rc = KG_OK;
  for (size_t i = 0; i < run->nmarks; i++) {
    kg_output_t *o = &run->outputs[run->marks[i].output];
    if (!o->writer) continue;
    if (run->marks[i].records == 0) { /* the record opened the file: remove it, so no empty file is published */
      kg_writer_abort(o->writer);
      o->writer = NULL;
    } else if (!rc) {
      rc = kg_writer_truncate(o->writer, run->marks[i].records, run->marks[i].bytes, errbuf);
    }
  }
  run->nmarks = 0;
  return rc;
}

int kg_outputs_error(const kg_outputs_t *run, char *errbuf) {
  return run->write_rc ? kg_fail(errbuf, run->write_rc, "%s", run->write_error) : KG_OK;
}

void kg_outputs_written(const kg_outputs_t *run, int64_t *records, int64_t *bytes) {
  *records = *bytes = 0;
  if (run->finished && !run->published) return; /* the task's files were removed: nothing of it is published */
  for (size_t i = 0; i < run->noutputs; i++) {
    const kg_output_t *o = &run->outputs[i];
    if (o->quarantine) continue;
    *records += o->closed_records;
    *bytes += o->closed_bytes;
    if (!o->writer) continue;
    *records += kg_writer_records(o->writer);
    *bytes += kg_writer_bytes(o->writer);
  }
}

/* Moves file NAME of output O from staging to task output and adds it to RESULT's files. */
static int hand_over(kg_outputs_t *run, kg_output_t *o, const char *name, kg_task_result_t *result, char *err) {
  const kg_task_spec_t *t = run->spec;
  char *staging = area_path(run, "task-staging", o, name);
  char *output = area_path(run, "task-output", o, name);
  int rc = kg_fs_move(t->fs, staging, output, err);
  free(staging);
  kg_crash_point("task-output");
  result->files = kg_xrealloc(result->files, (result->nfiles + 1) * sizeof(kg_task_file_t));
  kg_task_file_t *f = &result->files[result->nfiles++];
  f->file_path = kg_xstrdup(o->file_path);
  f->output = output;
  f->final = kg_xasprintf("%s/%s/%s", t->config->final_dir, o->file_path, name);
  return rc;
}

int kg_outputs_finish(kg_outputs_t *run, bool ok, kg_task_result_t *result, char *err) {
  int rc = ok ? KG_OK : KG_EFAILED;
  for (size_t i = 0; i < run->noutputs; i++) {
    kg_output_t *o = &run->outputs[i];
    if (rc) {
      if (o->writer) kg_writer_abort(o->writer);
      o->writer = NULL;
      remove_closed(run, o);
      continue;
    }
    for (size_t k = 0; !rc && k < o->nclosed; k++)
      rc = hand_over(run, o, o->closed[k], result, err);
    if (!rc) remove_closed(run, o); /* nothing left there: the names only */
    if (rc || !o->writer) continue;
    /* The file's last counts come with its close: what the format puts last, and a buffering writer's last block
     * (writer.h), are in the file only now. */
    int64_t records = 0, bytes = 0;
    rc = kg_writer_close(o->writer, &records, &bytes, err);
    o->writer = NULL;
    if (rc) continue;
    o->closed_records += records;
    o->closed_bytes += bytes;
    rc = hand_over(run, o, o->name, result, err);
  }
  run->finished = true;
  run->published = ok && rc == KG_OK;
  return ok ? rc : KG_OK;
}
