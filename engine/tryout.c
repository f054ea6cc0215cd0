/* tryout.c: `kingest validate` and `kingest test` (tryout.h).
 *
 * Neither has a check or a record path of its own. validate is kg_job_check, the checks of a run that need no
 * broker, followed by a description of the job. test drives a task's record path (task.c's kg_task_open,
 * kg_task_records, kg_task_check_budget, with output.c's outputs and the job's writer) with records read from
 * stdin instead of fetched: what it prints is what that path wrote, read back from the files it wrote in a
 * temporary folder. Each record is handed over alone, so that what became of it (written, dropped, skipped,
 * quarantined, failed) is known record by record; a script sees no difference, batches being invisible to it. */
#include "tryout.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#include <avro.h>

#include "buf.h"
#include "executor.h"
#include "fs.h"
#include "job.h"
#include "kafka_source.h"
#include "log.h"
#include "lua_bridge.h"
#include "output.h"
#include "parse.h"
#include "partition.h"
#include "avro_registry.h"
#include "task.h"
#include "topics.h"
#include "workunit.h"

/* kg_codec_t's names, as writer.codec.type spells them. */
static const char *const codec_names[] = {"null", "deflate", "snappy", "gzip", "zstd"};

static void row(FILE *out, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void row(FILE *out, const char *name, const char *fmt, ...) {
  fprintf(out, "%-13s", name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(out, fmt, ap);
  va_end(ap);
  fputc('\n', out);
}

/* The extract id of writer.file.path.type=default for a run starting at MS: yyyyMMddHHmmss in UTC. */
static void extract_id(int64_t ms, char *out, size_t size) {
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(out, size, "%Y%m%d%H%M%S", &tm);
}

int kg_tryout_validate(const kg_config_t *c, FILE *out, char *errbuf) {
  const kg_writer_ops_t *writer = NULL;
  if (kg_job_check(c, &writer, errbuf)) return EX_CONFIG;
  kg_buf_t hooks = {0};
  if (kg_lua_job_describe(c->job_is_lua ? c->job_file : NULL, &hooks, errbuf)) {
    kg_buf_free(&hooks);
    return EX_CONFIG;
  }
  row(out, "job", "%s (%s)", c->job_name, c->job_file);
  row(out, "brokers", "%s (not contacted)", kg_kafka_options(c)->brokers);
  row(out, "topics", "%s%s%s%s", *c->topic_whitelist ? "topic.whitelist=" : "every topic (topic.whitelist is empty)",
      c->topic_whitelist, *c->topic_blacklist ? "; topic.blacklist=" : "", c->topic_blacklist);
  const kg_registry_settings_t *registry = kg_registry_settings(c);
  if (registry->framing == KG_FRAMING_NONE)
    row(out, "input", "the records' bytes");
  else
    row(out, "input", "Avro records in %s framing, schemas from %s (not contacted)",
        registry->framing == KG_FRAMING_CONFLUENT ? "Confluent's" : "LinkedIn's", registry->url);
  for (char *line = hooks.data; line && *line;) {
    char *nl = strchr(line, '\n'), *tab = strchr(line, '\t');
    if (!nl || !tab || tab > nl) break;
    *nl = *tab = '\0';
    row(out, line, "%s", tab + 1);
    line = nl + 1;
  }
  kg_buf_free(&hooks);
  char *fp = kg_task_file_path(c->path_type, c->extract_namespace, "<topic>", "<yyyyMMddHHmmss>");
  const kg_writer_settings_t *settings = kg_writer_settings(c);
  row(out, "writer", "%s, %s, codec %s: %s/%s%s/part.<taskId>.%s", writer->title, c->output_format,
      codec_names[settings->codec], c->final_dir, fp, kg_partitioner_of(c) ? "/<time folders>" : "", settings->ext);
  free(fp);
  if (writer == &kg_writer_csv) {
    const kg_csv_options_t *csv = kg_csv_options(c);
    kg_buf_t columns = {0};
    for (size_t i = 0; i < csv->ncolumns; i++)
      kg_buf_appendf(&columns, "%s%s", i ? "," : "", csv->columns[i]);
    char delimiter[8];
    snprintf(delimiter, sizeof delimiter, csv->delimiter == '\t' ? "\\t" : "%c", csv->delimiter);
    row(out, "columns", "%s (delimiter %s, lines end in %s, %s, extra fields %s)", columns.data, delimiter,
        csv->crlf ? "CRLF" : "LF", csv->header ? "a header line" : "no header line",
        csv->ignore_extra ? "left out" : "fail the record");
    kg_buf_free(&columns);
  }
  static const char *const policies[] = {"skip", "fail", "quarantine"};
  static const char *const fates[] = {"skipped", "", "quarantined"};
  const char *fate = fates[c->decode_errors];
  if (c->decode_errors == KG_ERRORS_FAIL)
    row(out, "on errors", "decode.error.policy=fail: a record that fails in the script fails its task");
  else if (!c->skip_error_limit_set)
    row(out, "on errors",
        "decode.error.policy=%s: a record that fails in decodeRecord is %s, up to decode.error.max.ratio=%g of a "
        "task's records; a converter failure fails the task, as task.skip.error.records is not set",
        policies[c->decode_errors], fate, c->error_max_ratio);
  else if (c->skip_error_limit < 0)
    row(out, "on errors",
        "decode.error.policy=%s: a record that fails in decodeRecord or a converter is %s, up to "
        "decode.error.max.ratio=%g of a task's records (task.skip.error.records=-1: no limit of its own)",
        policies[c->decode_errors], fate, c->error_max_ratio);
  else
    row(out, "on errors",
        "decode.error.policy=%s: a record that fails in decodeRecord or a converter is %s, up to "
        "task.skip.error.records=%lld records and decode.error.max.ratio=%g of a task's records",
        policies[c->decode_errors], fate, (long long)c->skip_error_limit, c->error_max_ratio);
  if (c->launcher == KG_LAUNCHER_MAPREDUCE) row(out, "launcher", "MAPREDUCE (HDFS and YARN not contacted)");
  fputs("OK\n", out);
  return fflush(out) ? EX_IOERR : EX_OK;
}

/* The first plain topic name of the whitelist, for kg_topic_filter_names. */
static void first_name(void *ctx, const char *name) {
  char **first = ctx;
  if (!*first) *first = kg_xstrdup(name);
}

int kg_tryout_default_topic(const kg_config_t *c, char **topic, char *errbuf) {
  *topic = NULL;
  kg_topic_filter_t *filter = NULL;
  int rc = kg_topic_filter_new(c->topic_whitelist, c->topic_blacklist, &filter, errbuf);
  if (rc) return rc;
  /* Only the first entry: a later plain name after a pattern is no more the job's topic than the pattern. */
  char first[256];
  size_t n = strcspn(c->topic_whitelist, ",");
  snprintf(first, sizeof first, "%.*s", (int)n, c->topic_whitelist);
  kg_strtrim(first);
  if (*first && kg_topic_is_name(first)) kg_topic_filter_names(filter, first_name, topic);
  kg_topic_filter_destroy(filter);
  if (!*topic)
    return kg_fail(errbuf, KG_EINVAL,
                   "pass --topic: the records need a topic, and topic.whitelist (%s) does not begin with a plain topic "
                   "name",
                   *c->topic_whitelist ? c->topic_whitelist : "empty: every topic");
  return KG_OK;
}

/* The records of the input, as views into its bytes. */
typedef struct {
  kg_buf_t bytes;
  kg_record_t *records;
  size_t count, cap;
} input_t;

static void add_record(input_t *in, const kg_tryout_options_t *o, const char *key, size_t key_len, const char *value,
                       size_t value_len) {
  if (in->count == in->cap) {
    in->cap = in->cap ? 2 * in->cap : 64;
    in->records = kg_xrealloc(in->records, in->cap * sizeof *in->records);
  }
  in->records[in->count] = (kg_record_t){.topic_ptr = o->topic,
                                         .key_ptr = key,
                                         .key_len = key_len,
                                         .value_ptr = value,
                                         .value_len = value_len,
                                         .offset = (double)in->count,
                                         .timestamp = (double)o->timestamp,
                                         .partition = o->partition,
                                         .schema = -1,
                                         .reader_schema = -1};
  in->count++;
}

/* Reads every record of O->in. Returns EX_OK, EX_IOERR or EX_DATAERR (ERRBUF says which record is cut short). */
static int read_input(const kg_tryout_options_t *o, input_t *in, char *errbuf) {
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, o->in)) > 0)
    kg_buf_append(&in->bytes, chunk, n);
  if (ferror(o->in)) return kg_fail(errbuf, EX_IOERR, "cannot read the records from stdin: %s", strerror(errno));
  const char *p = in->bytes.data ? in->bytes.data : "", *end = p + in->bytes.len;
  size_t seplen = o->key_separator ? strlen(o->key_separator) : 0;
  /* The views point into IN->bytes, which no longer grows. */
  while (p < end && o->format == KG_TRYOUT_LINES) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *line_end = nl ? nl : end;
    const char *sep = seplen ? memmem(p, (size_t)(line_end - p), o->key_separator, seplen) : NULL;
    if (sep)
      add_record(in, o, p, (size_t)(sep - p), sep + seplen, (size_t)(line_end - sep - seplen));
    else
      add_record(in, o, NULL, 0, p, (size_t)(line_end - p));
    p = nl ? nl + 1 : end;
  }
  while (p < end && o->format == KG_TRYOUT_LENGTH_PREFIXED) {
    size_t at = (size_t)(p - in->bytes.data);
    if (end - p < 4)
      return kg_fail(errbuf, EX_DATAERR,
                     "stdin: record %zu (at byte %zu) is cut short: its 4-byte length has %zu bytes (--format "
                     "length-prefixed: a 4-byte big-endian length, then that many bytes)",
                     in->count, at, (size_t)(end - p));
    const unsigned char *u = (const unsigned char *)p;
    uint32_t len = (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
    p += 4;
    if (len == 0xFFFFFFFFu) { /* -1: a null payload, as Kafka's own protocol writes one */
      add_record(in, o, NULL, 0, NULL, 0);
      continue;
    }
    if ((uint64_t)(end - p) < len)
      return kg_fail(errbuf, EX_DATAERR,
                     "stdin: record %zu (at byte %zu) is cut short: its length says %u bytes, and %zu follow "
                     "(--format length-prefixed: a 4-byte big-endian length, then that many bytes)",
                     in->count, at, len, (size_t)(end - p));
    add_record(in, o, NULL, 0, p, len);
    p += len;
  }
  return EX_OK;
}

/* Writes the simple writer's file at PATH to OUT, decompressed (CODEC: null, gzip or zstd). */
static int print_text(const char *path, kg_codec_t codec, FILE *out, char *errbuf) {
  if (codec == KG_CODEC_GZIP) {
    gzFile gz = gzopen(path, "rb");
    if (!gz) return kg_fail(errbuf, EX_IOERR, "cannot read %s: %s", path, strerror(errno));
    char buf[65536];
    int n;
    while ((n = gzread(gz, buf, sizeof buf)) > 0)
      fwrite(buf, 1, (size_t)n, out);
    int zerr = Z_OK;
    const char *why = n < 0 ? gzerror(gz, &zerr) : NULL;
    int rc = why ? kg_fail(errbuf, EX_IOERR, "cannot decompress %s: %s", path, why) : EX_OK;
    gzclose(gz);
    return rc;
  }
  size_t len = 0;
  int error = 0;
  char *data = kg_read_file(path, &len, &error);
  if (!data) return kg_fail(errbuf, EX_IOERR, "cannot read %s: %s", path, error > 0 ? strerror(error) : "read error");
  int rc = EX_OK;
  if (codec != KG_CODEC_ZSTD) {
    fwrite(data, 1, len, out);
  } else {
    ZSTD_DStream *z = ZSTD_createDStream();
    ZSTD_initDStream(z);
    ZSTD_inBuffer zin = {data, len, 0};
    char buf[65536];
    while (zin.pos < zin.size && rc == EX_OK) {
      ZSTD_outBuffer zout = {buf, sizeof buf, 0};
      size_t r = ZSTD_decompressStream(z, &zout, &zin);
      if (ZSTD_isError(r)) rc = kg_fail(errbuf, EX_IOERR, "cannot decompress %s: %s", path, ZSTD_getErrorName(r));
      fwrite(buf, 1, zout.pos, out);
    }
    ZSTD_freeDStream(z);
  }
  free(data);
  return rc;
}

/* Writes each record of the Avro file at PATH to OUT as a line of JSON (avro-c's encoding of its value); *RECORDS
 * gets how many. */
static int print_avro(const char *path, FILE *out, int64_t *records, char *errbuf) {
  *records = 0;
  avro_file_reader_t reader;
  if (avro_file_reader(path, &reader))
    return kg_fail(errbuf, EX_IOERR, "cannot read the Avro file %s: %s", path, avro_strerror());
  avro_schema_t schema = avro_file_reader_get_writer_schema(reader);
  avro_value_iface_t *iface = avro_generic_class_from_schema(schema);
  avro_value_t value;
  int rc = EX_OK;
  if (!iface || avro_generic_value_new(iface, &value)) {
    rc = kg_fail(errbuf, EX_IOERR, "cannot read the Avro file %s: %s", path, avro_strerror());
  } else {
    int r;
    while ((r = avro_file_reader_read_value(reader, &value)) == 0) {
      char *json = NULL;
      if (avro_value_to_json(&value, 1, &json)) {
        rc = kg_fail(errbuf, EX_IOERR, "cannot show record %lld of %s as JSON: %s", (long long)*records, path,
                     avro_strerror());
        break;
      }
      fprintf(out, "%s\n", json);
      free(json);
      (*records)++;
      avro_value_reset(&value);
    }
    if (rc == EX_OK && r != EOF)
      rc = kg_fail(errbuf, EX_IOERR, "cannot read record %lld of the Avro file %s: %s", (long long)*records, path,
                   avro_strerror());
    avro_value_decref(&value);
  }
  if (iface) avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  avro_file_reader_close(reader);
  return rc;
}

/* What became of the records. */
typedef struct {
  int64_t read, written, outputs, dropped, skipped, quarantined, failed, unprocessed, tombstones;
} counts_t;

/* Feeds IN's records to the record path of TASK (one work unit, WU); fills N and *TASK_ERROR (a run would fail the
 * task: the message is in TASK_ERR). */
static void feed(kg_task_run_t *run, const kg_workunit_t *wu, const input_t *in, counts_t *n, bool *task_failed,
                 char *task_err) {
  kg_unit_result_t res = {0};
  int logged = 0;
  n->read = (int64_t)in->count;
  int rc = kg_task_begin_unit(run, wu, task_err);
  size_t i = 0;
  for (; !rc && i < in->count; i++) {
    int64_t skipped = res.skipped, quarantined = res.quarantined, tombstones = res.tombstones, before, after, bytes;
    kg_outputs_written(kg_task_outputs(run), &before, &bytes);
    rc = kg_task_records(run, wu, &res, &in->records[i], 1, &logged, task_err);
    kg_outputs_written(kg_task_outputs(run), &after, &bytes);
    if (res.tombstones > tombstones)
      n->tombstones++;
    else if (res.skipped > skipped)
      n->skipped++;
    else if (res.quarantined > quarantined)
      n->quarantined++;
    else if (rc)
      n->failed++;
    else if (after > before)
      n->written++;
    else
      n->dropped++;
  }
  n->unprocessed = (int64_t)(in->count - i);
  /* At the end the ratio is taken of the records read, as at the end of a task. */
  if (!rc) rc = kg_task_check_budget(run, (int64_t)in->count, "the end of the task", task_err);
  kg_outputs_written(kg_task_outputs(run), &n->outputs, &(int64_t){0});
  *task_failed = rc != KG_OK;
}

/* A line of the test's report on O->err, "kingest test: ..."; on stderr it goes as the log does, so that with
 * --log-format json it is a JSON line of LEVEL. */
static void report(const kg_tryout_options_t *o, kg_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(const kg_tryout_options_t *o, kg_log_level_t level, const char *fmt, ...) {
  char line[2 * KG_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (o->err == stderr)
    kg_log_say(level, "kingest test: ", -1, "%s", line);
  else
    fprintf(o->err, "kingest test: %s\n", line);
}

/* Prints the files the outputs closed into RESULT: the job's output to O->out, quarantine files by name. */
static int print_files(const kg_config_t *c, const kg_task_spec_t *spec, const kg_task_result_t *result,
                       const kg_tryout_options_t *o, char *errbuf) {
  int rc = EX_OK;
  for (size_t i = 0; i < result->nfiles && rc == EX_OK; i++) {
    const kg_task_file_t *f = &result->files[i];
    size_t fplen = strlen(f->file_path);
    if (fplen >= 8 && !strcmp(f->file_path + fplen - 8, "/_errors")) {
      report(o, KG_LOG_INFO, "quarantine file %s", f->final);
      continue;
    }
    if (spec->writer == &kg_writer_parquet) { /* binary columns: not printed as they are */
      report(o, KG_LOG_INFO, "output file %s (Parquet: its rows are not printed)", f->final);
      continue;
    }
    report(o, KG_LOG_INFO, "output file %s", f->final);
    int64_t records = 0;
    rc = spec->writer == &kg_writer_avro ? print_avro(f->output, o->out, &records, errbuf)
                                         : print_text(f->output, kg_writer_settings(c)->codec, o->out, errbuf);
  }
  if (rc == EX_OK && fflush(o->out)) rc = kg_fail(errbuf, EX_IOERR, "cannot write to stdout: %s", strerror(errno));
  return rc;
}

int kg_tryout_test(const kg_config_t *c, const kg_tryout_options_t *o, char *errbuf) {
  const kg_writer_ops_t *writer = NULL;
  if (kg_job_check(c, &writer, errbuf)) return EX_CONFIG;
  input_t in = {0};
  int status = read_input(o, &in, errbuf);
  if (status != EX_OK) {
    kg_buf_free(&in.bytes);
    free(in.records);
    return status;
  }

  /* The task a run would make of these records: one work unit, their offsets, writing under a folder of its own. */
  const char *tmp = getenv("TMPDIR");
  char *job_dir = kg_xasprintf("%s/kingest-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(job_dir)) {
    status = kg_fail(errbuf, EX_IOERR, "cannot create a temporary folder %s: %s", job_dir, strerror(errno));
    free(job_dir);
    kg_buf_free(&in.bytes);
    free(in.records);
    return status;
  }
  int64_t now = kg_now_ms();
  char eid[32];
  extract_id(now, eid, sizeof eid);
  kg_workunit_t wu = {.topic = kg_xstrdup(o->topic),
                      .partition = o->partition,
                      .low = 0,
                      .high = (int64_t)in.count,
                      .earliest = 0,
                      .latest = (int64_t)in.count};
  kg_task_t task = {0};
  task.spec = (kg_task_spec_t){.task_id = kg_xasprintf("task_%s_%lld_0", c->job_name, (long long)now),
                               .config = c,
                               .units = kg_xmalloc(sizeof(kg_workunit_t *)),
                               .nunits = 1,
                               .job_dir = job_dir,
                               .extract_id = eid,
                               .fs = kg_fs_local(),
                               .writer = writer};
  task.spec.units[0] = &wu;

  char task_err[KG_ERRLEN] = "";
  counts_t n = {0};
  bool task_failed = false;
  kg_task_run_t *run = NULL;
  if (kg_task_open(&task, &run, errbuf)) {
    status = EX_CONFIG; /* what kg_job_check passed, but a task's own state refused */
  } else {
    kg_task_log_failures(run, INT_MAX);
    /* script.batch.timeout.ms, as in a run: the executor's watchdog over this one task. */
    kg_executor_t x = {.config = c, .tasks = &task, .ntasks = 1, .job_dir = job_dir, .fs = kg_fs_local()};
    kg_watchdog_t *dog = kg_executor_watch(&x);
    feed(run, &wu, &in, &n, &task_failed, task_err);
    kg_executor_unwatch(dog);
    /* Closed and kept whatever happened: what was written before a failure is shown too. */
    if (kg_outputs_finish(kg_task_outputs(run), true, &task.result, errbuf)) status = EX_IOERR;
  }
  kg_task_close(run);
  if (status == EX_OK && task_failed)
    report(o, KG_LOG_WARN, "a run would fail the task here, publish none of its output and move no offset: %s",
           task_err);
  if (status == EX_OK) status = print_files(c, &task.spec, &task.result, o, errbuf);
  if (status == EX_OK) {
    char tombstones[64] = ""; /* Avro tombstones: named only where there are some */
    if (n.tombstones) snprintf(tombstones, sizeof tombstones, ", %lld tombstones", (long long)n.tombstones);
    report(o, KG_LOG_INFO,
           "%lld record%s read: %lld written (%lld output%s), %lld dropped, %lld skipped, %lld quarantined, %lld "
           "failed, %lld not processed%s",
           (long long)n.read, n.read == 1 ? "" : "s", (long long)n.written, (long long)n.outputs,
           n.outputs == 1 ? "" : "s", (long long)n.dropped, (long long)n.skipped, (long long)n.quarantined,
           (long long)n.failed, (long long)n.unprocessed, tombstones);
    status = task_failed || n.skipped || n.quarantined || n.failed ? 1 : EX_OK;
  }
  char rerr[KG_ERRLEN];
  if (kg_fs_remove_tree(kg_fs_local(), job_dir, rerr)) KG_WARN("%s", rerr);
  kg_task_clear(&task);
  kg_workunit_clear(&wu);
  free(job_dir);
  kg_buf_free(&in.bytes);
  free(in.records);
  return status;
}
