/* config_job.c: the job's own property rows, which land in kg_config_t: what the phases read (the job's identity,
 * the topics and where their offsets start, the output's paths and format, packing, limits, the error policy,
 * commit, tasks, locations), with the setters of the odd ones. The backends' rows are in the backends' files;
 * config_sections.c places these among them. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "parse.h"
#include "writer.h"

#define KG_FIELD(f) KG_FIELD_OF(kg_config_t, f)

/* The values of the enum and class rows, in the order of their C enums. */
static const char *const bootstrap_values[] = {"earliest", "latest", "skip", NULL};
static const char *const reset_values[] = {"earliest", "latest", "nearest", "skip", NULL};
static const char *const new_partition_values[] = {"earliest", "latest", "bootstrap", NULL};
static const char *const missing_values[] = {"warn", "fail", NULL};
static const char *const writers[] = {"SimpleDataWriterBuilder", "AvroDataWriterBuilder", "ParquetDataWriterBuilder",
                                      NULL};
static const char *const publishers[] = {"BaseDataPublisher", NULL};
static const char *const launchers[] = {"LOCAL", "MAPREDUCE", NULL}; /* kg_launcher_t */
static const char *const destinations[] = {"HDFS", "LOCAL", NULL};
static const char *const path_types[] = {"tablename", "namespace_table", "default", NULL};
static const char *const error_policies[] = {"skip", "fail", "quarantine", NULL};
static const char *const estimators[] = {"AVG_RECORD_TIME", "AVG_RECORD_SIZE", "CUSTOM", NULL};
static const char *const packers[] = {"SINGLE_LEVEL", "BI_LEVEL", NULL};
static const char *const limit_types[] = {"time", "rate", "count", NULL};
static const char *const time_units[] = {"milliseconds", "seconds", "minutes", "hours", "days", NULL};
static const char *const commit_policies[] = {"full", "successful", NULL};
static const char *const log_formats[] = {"text", "json", NULL};

/* The setters and computed defaults of the odd rows, defined below the table. */
static char *default_job_name(const kg_config_t *c, const void *options);
static char *default_threads(const kg_config_t *c, const void *options);
static int set_job_name(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                        kg_property_value_t *v, char *errbuf);
static char *default_output_format(const kg_config_t *c, const void *options);
static int set_output_format(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                             kg_property_value_t *v, char *errbuf);
static int set_skip_errors(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                           kg_property_value_t *v, char *errbuf);
static int set_limits(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                      kg_property_value_t *v, char *errbuf);

/* In the order of config_sections.c, which places the backends' rows among them. job.name comes first: the job's
 * identity is checked before the work dir that roots the paths. */
static const kg_property_t rows[] = {
    /* The job. */
    {.name = "job.name",
     .type = KG_PROP_STRING,
     .def_doc = "the job file's name",
     .empty_is_default = true,
     .computed = default_job_name,
     .set = set_job_name,
     .doc = "Names the job's state database, lock, metrics file, job and task ids; it may not contain `/`."},
    {.name = "job.group", .type = KG_PROP_STRING, .doc = "Group of the job (informational)."},
    {.name = "job.description", .type = KG_PROP_STRING, .doc = "Description of the job (informational)."},
    {.name = "job.strict",
     .type = KG_PROP_BOOL,
     .def = "false",
     .doc = "Refuse a job with properties kingest does not know or does not implement (see [Job files](#job-files)) "
            "instead of a WARN for each; `kingest run --strict` sets it."},
    {.name = "log.format",
     .type = KG_PROP_ENUM,
     .def = "text",
     .names = log_formats,
     KG_FIELD(log_format),
     .doc = "`text`: log lines as `2026-11-30 02:55:23.224 INFO Pulling topic test`; `json`: one JSON object per "
            "line (time, level, message, and job, job_id, task, topic, partition when the line is about them) for "
            "log shippers. `--log-format` on the command line wins over it."},

    /* The topics, and where their offsets start. */
    {.name = "topic.whitelist",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(topic_whitelist),
     .doc = "Comma-separated regular expressions matching whole topic names (POSIX extended syntax; Java's `\\d` and "
            "`\\D` work too, so Gobblin patterns carry over); empty for every topic."},
    {.name = "topic.blacklist",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(topic_blacklist),
     .doc = "Same; a blacklisted topic is never pulled, whatever the whitelist says."},
    {.name = "topics.move.to.latest.offset",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(move_to_latest),
     .doc = "Comma-separated topic names (not regexes), or `all`, that always start at the latest offset."},
    {.name = "bootstrap.with.offset",
     .type = KG_PROP_ENUM,
     .def = "latest",
     .names = bootstrap_values,
     KG_FIELD(bootstrap),
     .doc = "Where a partition with no stored offset starts: `earliest`, `latest`, or `skip` (not pulled, nothing "
            "stored)."},
    {.name = "reset.on.offset.out.of.range",
     .type = KG_PROP_ENUM,
     .def = "nearest",
     .names = reset_values,
     KG_FIELD(reset),
     .doc = "When the stored offset is outside the broker's range, or the partition's log was recreated (see [What a "
            "run does](#what-a-run-does)): `earliest`, `latest`, `nearest` (earliest when below the range, latest when "
            "above; earliest for a recreated log), or `skip` (not pulled, stored offset kept)."},
    {.name = "kafka.new.partition.offset",
     .type = KG_PROP_ENUM,
     .def = "earliest",
     .names = new_partition_values,
     KG_FIELD(new_partition),
     .doc = "Where a partition with no stored offset starts when the job already pulls its topic (the state has "
            "another partition of it): `earliest`, `latest`, or `bootstrap` (follow `bootstrap.with.offset`). Records "
            "written to a partition the job has never seen are new data; such partitions are named in a WARN."},
    {.name = "topic.missing.policy",
     .type = KG_PROP_ENUM,
     .def = "warn",
     .names = missing_values,
     KG_FIELD(missing_topics),
     .doc = "A `topic.whitelist` entry that is a plain name (letters, digits, `.`, `_`, `-`) of no topic on the "
            "broker, or a stored partition of a selected topic that the broker no longer has: `warn` (a WARN for "
            "each, with `did you mean` from the broker's topics; stored offsets are kept), or `fail` (the run, and "
            "`kingest plan`, fail before anything is pulled)."},

    /* The writer and the publisher chosen, and the launcher. */
    {.name = "writer.builder.class",
     .type = KG_PROP_CLASS,
     .def = "gobblin.writer.SimpleDataWriterBuilder",
     .names = writers,
     .doc = "`SimpleDataWriterBuilder`: the simple writer (`txt`, `json`) and the CSV writer (`csv`); "
            "`AvroDataWriterBuilder`: Avro object container files (`writer.output.format` `avro`, its default with "
            "this builder); `ParquetDataWriterBuilder`: Parquet files of Avro records (`parquet`, its default, "
            "[Parquet](#parquet))."},
    {.name = "data.publisher.type",
     .type = KG_PROP_CLASS,
     .def = "gobblin.publisher.BaseDataPublisher",
     .names = publishers,
     .doc = "`BaseDataPublisher`: moves task output to the final folder."},
    {.name = "launcher.type",
     .type = KG_PROP_ENUM,
     .def = "LOCAL",
     .names = launchers,
     KG_FIELD(launcher),
     .doc = "`LOCAL`: the tasks run on this machine's threads. `MAPREDUCE`: each task is a map of a map-only Hadoop "
            "Streaming job on YARN, writing to HDFS; this process plans, waits and commits ([Running on a Hadoop "
            "cluster](#running-on-a-hadoop-cluster))."},
    {.name = "writer.destination.type",
     .type = KG_PROP_ENUM,
     .def = "HDFS",
     .names = destinations,
     .doc = "`HDFS` or `LOCAL`, as Gobblin names them; the file system written to is `writer.fs.uri`'s."},
    {.name = "writer.output.format",
     .type = KG_PROP_STRING,
     .def_doc = "txt (avro with AvroDataWriterBuilder, parquet with ParquetDataWriterBuilder)",
     .computed = default_output_format,
     .set = set_output_format,
     .doc = "The output's format and file extension: `txt` or `json` (the simple writer), `csv` (CSV lines of the "
            "columns `writer.csv.columns`), `avro` (Avro object container files of the records' Avro binary "
            "datums, schema `writer.avro.schema`), or `parquet` (Parquet files of flat Avro records of that schema, "
            "[Parquet](#parquet))."},
    {.name = "writer.file.path.type",
     .type = KG_PROP_ENUM,
     .def = "default",
     .names = path_types,
     KG_FIELD(path_type),
     .doc = "Output sub-path: `tablename` (the topic), `namespace_table` (namespace with dots as slashes, then the "
            "topic), `default` (namespace/topic/`<yyyyMMddHHmmss>_append`)."},
    {.name = "writer.file.max.size",
     .type = KG_PROP_INT,
     .def_doc = "no limit",
     .min = 1,
     .max = INT64_MAX / 2,
     KG_FIELD(roll_bytes),
     .doc = "Bytes after which a task's output file is closed and the next record starts a new one (rolling): the "
            "files of a task's output are then named `part.<taskId>.<n>.<ext>`, n from 0. Checked between records, "
            "so a file ends at the first record boundary past the size (a compressed or Avro file counts the bytes "
            "written out, up to one 64,000-byte block behind)."},
    {.name = "writer.file.max.records",
     .type = KG_PROP_INT,
     .def_doc = "no limit",
     .min = 1,
     .max = INT64_MAX / 2,
     KG_FIELD(roll_records),
     .doc = "Records after which a task's output file is closed and the next record starts a new one (kingest's "
            "name: Gobblin has no such property); with `writer.file.max.size`, whichever comes first."},
    {.name = "extract.namespace",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(extract_namespace),
     .doc = "Used by `writer.file.path.type` `namespace_table` and `default`."},

    /* Records that fail in the script. */
    {.name = "decode.error.policy",
     .type = KG_PROP_ENUM,
     .def = "skip",
     .names = error_policies,
     KG_FIELD(decode_errors),
     .doc = "A record on which `decodeRecord` or a converter fails: `skip` (counted, first 5 per partition logged), "
            "`fail` (the task fails), `quarantine` (written with its error to `<FP>/_errors`). See "
            "[Scripting](#scripting)."},
    {.name = "task.skip.error.records",
     .type = KG_PROP_INT,
     .def_doc = "not set",
     .min = -1,
     .max = INT64_MAX,
     .set = set_skip_errors,
     .doc = "How many records that failed in the script (skipped or quarantined) a task may have before it fails; "
            "`-1` for no limit. Not set: a converter failure fails the task, as in Gobblin, and `decodeRecord` "
            "failures are bounded by `decode.error.max.ratio` only. See [the error budget](#the-error-budget)."},
    {.name = "decode.error.max.ratio",
     .type = KG_PROP_DOUBLE,
     .def = "0.1",
     .dmin = 0,
     .dmax = 1,
     KG_FIELD(error_max_ratio),
     .doc = "The largest share of a task's records that may fail in the script (skipped or quarantined); above it the "
            "task fails and no offset moves. `1` for no limit."},
    {.name = "script.batch.timeout.ms",
     .type = KG_PROP_INT,
     .def = "60000",
     .min = 10,
     .max = INT64_MAX,
     KG_FIELD(batch_timeout_ms),
     .doc = "Longest time one batch may spend in the script, or in the engine's reading of its Avro records; past "
            "it the batch is stopped and the run fails."},
    {.name = "progress.interval.ms",
     .type = KG_PROP_INT,
     .def = "5000",
     .min = 0,
     .max = INT64_MAX,
     KG_FIELD(progress_interval_ms),
     .doc = "When stderr is not a terminal, a progress line per running task this often; 0 for none."},

    /* Planning and packing. */
    {.name = "kafka.workunit.size.estimator.type",
     .type = KG_PROP_ENUM,
     .def = "AVG_RECORD_TIME",
     .names = estimators,
     KG_FIELD(estimator),
     .doc = "How work units are sized for packing: `AVG_RECORD_TIME` (range × the topic's geometric mean of stored "
            "ms per record), `AVG_RECORD_SIZE` (range × the partition's stored average record size, 1024 without "
            "history), `CUSTOM` (`estimateSize` in job.lua)."},
    {.name = "kafka.workunit.packer.type",
     .type = KG_PROP_ENUM,
     .def = "SINGLE_LEVEL",
     .names = packers,
     KG_FIELD(packer),
     .doc = "`SINGLE_LEVEL` or `BI_LEVEL`; see [Packing](#packing)."},
    {.name = "workunit.pre.grouping.size.factor",
     .type = KG_PROP_DOUBLE,
     .def = "3.0",
     .dmin = 0.1,
     .dmax = 1000,
     KG_FIELD(pre_grouping_factor),
     .doc = "`BI_LEVEL`: the first level makes groups of at most total/(factor × N)."},

    /* Extract limits: read together by set_limits, when enabled. */
    {.name = "extract.limit.enabled",
     .type = KG_PROP_BOOL,
     .def = "false",
     .set = set_limits,
     .doc = "Limit each task; see [Extract limits](#extract-limits)."},
    {.name = "extract.limit.type",
     .type = KG_PROP_ENUM,
     .names = limit_types,
     .part_of = "extract.limit.enabled",
     .doc = "`time`, `rate` or `count`; `pool` is refused with an error."},
    {.name = "extract.limit.time.limit",
     .alias = "extract.limit.timeLimit",
     .type = KG_PROP_DOUBLE,
     .part_of = "extract.limit.enabled",
     .doc = "The task's time budget, at least 1 second."},
    {.name = "extract.limit.time.limit.timeunit",
     .alias = "extract.limit.timeLimitTimeunit",
     .type = KG_PROP_ENUM,
     .def = "seconds",
     .names = time_units,
     .part_of = "extract.limit.enabled",
     .doc = "Unit of the time limit: `milliseconds`, `seconds`, `minutes`, `hours` or `days`."},
    {.name = "extract.limit.rate.limit",
     .alias = "extract.limit.rateLimit",
     .type = KG_PROP_DOUBLE,
     .part_of = "extract.limit.enabled",
     .doc = "Records per time unit per task, at least 1 per hour."},
    {.name = "extract.limit.rate.limit.timeunit",
     .alias = "extract.limit.rateLimitTimeunit",
     .type = KG_PROP_ENUM,
     .def = "seconds",
     .names = time_units,
     .part_of = "extract.limit.enabled",
     .doc = "Unit of the rate limit: `milliseconds`, `seconds`, `minutes`, `hours` or `days`."},
    {.name = "extract.limit.count.limit",
     .alias = "extract.limit.countLimit",
     .type = KG_PROP_INT,
     .min = 1,
     .max = INT64_MAX,
     .part_of = "extract.limit.enabled",
     .doc = "Records per task."},

    /* Commit. */
    {.name = "job.commit.policy",
     .type = KG_PROP_ENUM,
     .def = "full",
     .names = commit_policies,
     KG_FIELD(commit_policy),
     .doc = "`full`: publish only when every task succeeded; `successful`: publish and commit the tasks that "
            "succeeded (the run still exits non-zero)."},
    {.name = "job.fail.on.partial",
     .type = KG_PROP_BOOL,
     .def = "false",
     KG_FIELD(fail_on_partial),
     .doc = "A run that committed but whose fetch errors stopped partitions short of their high watermark, or that "
            "left out partitions the brokers gave no offsets for, exits with status 4 instead of 0 (it is `PARTIAL` "
            "in the history either way). A run in which partitions had records to read and not one moved fails with "
            "status 7 whatever this says."},

    /* Tasks. */
    {.name = "mr.job.max.mappers",
     .type = KG_PROP_INT,
     .def = "100",
     .min = 1,
     .max = 100000,
     KG_FIELD(max_mappers),
     .doc = "Number of tasks (N) the work units are packed into."},
    {.name = "taskexecutor.threadpool.size",
     .type = KG_PROP_INT,
     .def_doc = "twice the number of cores",
     .min = 1,
     .max = 1024,
     .computed = default_threads,
     KG_FIELD(threadpool_size),
     .doc = "Tasks run at once, each on its own thread with its own Kafka consumer and Lua state. Twice the cores by "
            "default: a task waits part of its time for its broker's answers, and another task uses that time."},
    {.name = "task.maxretries",
     .type = KG_PROP_STRING,
     .def = "0",
     .doc = "Accepted; failed tasks are not retried within a run."},

    /* Locations. */
    {.name = "state.store.dir",
     .type = KG_PROP_PATH,
     .def = "<work dir>/state-store",
     .empty_is_default = true,
     KG_FIELD(state_store_dir),
     .doc = "Folder of the job's state database."},
    {.name = "task.data.root.dir",
     .type = KG_PROP_PATH,
     .def = "<work dir>/task-data",
     .empty_is_default = true,
     KG_FIELD(task_data_root),
     .doc = "Root of task staging and task output."},
    {.name = "data.publisher.final.dir",
     .type = KG_PROP_PATH,
     .def = "<work dir>/job-output",
     .empty_is_default = true,
     KG_FIELD(final_dir),
     .doc = "Where published files go."},
    {.name = "parallel.runner.threads",
     .type = KG_PROP_INT,
     .def = "10",
     .min = 1,
     .max = 256,
     KG_FIELD(publish_threads),
     .doc = "Files the commit publishes at once (each a rename or an upload: on HDFS, closing a file waits for the "
            "NameNode)."},
    {.name = "job.lock.dir",
     .type = KG_PROP_PATH,
     .def = "<work dir>/locks",
     .empty_is_default = true,
     KG_FIELD(lock_dir),
     .doc = "Folder of the job lock files (`<job>.lock`); the lock of the job's state is beside its database, "
            "`<state.store.dir>/<job>.db.lock`."},
    {.name = "job.lock.enabled",
     .type = KG_PROP_BOOL,
     .def = "true",
     KG_FIELD(lock_enabled),
     .doc = "Refuse to start while another run of the same job holds the lock (either of the two). `false`: runs "
            "take no lock and may overlap."},

    /* Metrics: when every reporter reports, and Gobblin's switch. */
    {.name = "metrics.report.interval",
     .type = KG_PROP_INT,
     .def = "30000",
     .min = 100,
     .max = INT64_MAX,
     KG_FIELD(metrics_interval_ms),
     .doc = "Milliseconds between interim reports during a run: in the metrics file (records read and written, bytes "
            "written, per task), and in the Prometheus file and Pushgateway (the run's counts so far)."},
    {.name = "metrics.enabled",
     .type = KG_PROP_STRING,
     .def = "true",
     .doc = "Accepted for Gobblin compatibility; metrics are always counted."},
};

/* What the setters made: the rows' fields are freed by kg_config_destroy. */
static void clear(void *options) {
  kg_config_t *c = options;
  free(c->job_name);
  free(c->output_format);
}

const kg_config_section_t kg_config_job_section = {
    .name = "job", .rows = rows, .nrows = sizeof rows / sizeof rows[0], .clear = clear};

/* The job file's name without its folder and extension. */
static char *default_job_name(const kg_config_t *c, const void *options) {
  (void)options;
  const char *base = strrchr(c->job_file, '/');
  base = base ? base + 1 : c->job_file;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? kg_xstrndup(base, (size_t)(dot - base)) : kg_xstrdup(base);
}

/* Twice the number of cores online (4 when unknown), at most the row's maximum. */
static char *default_threads(const kg_config_t *c, const void *options) {
  (void)c, (void)options;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t max = kg_config_property("taskexecutor.threadpool.size")->max;
  long long n = cores <= 0 ? 4 : 2 * (long long)cores;
  return kg_xasprintf("%lld", n > max ? (long long)max : n);
}

/* The job name names files, so it may not hold a folder separator or a control character. */
static int set_job_name(const kg_config_t *config, void *options, const kg_property_t *p, const char *key,
                        kg_property_value_t *v, char *errbuf) {
  (void)key;
  kg_config_t *c = options;
  c->job_name = v->s;
  for (const char *s = c->job_name; *s; s++)
    if (*s == '/' || *s == '\\' || (unsigned char)*s < 32)
      return kg_fail(errbuf, KG_EINVAL, "%s: invalid job.name '%s': it names files, so it may not contain '/'",
                     kg_config_origin(config, p->name), c->job_name);
  return KG_OK;
}

/* As in Gobblin, whose default format is AVRO: avro with AvroDataWriterBuilder, parquet with
 * ParquetDataWriterBuilder, txt (the simple writer's) otherwise. */
static char *default_output_format(const kg_config_t *c, const void *options) {
  (void)options;
  char tmp[256];
  const char *builder = c->props ? kg_props_get(c->props, "writer.builder.class") : NULL;
  const char *name = builder ? kg_config_class_name(builder, tmp, sizeof tmp) : "";
  return kg_xstrdup(!strcmp(name, "AvroDataWriterBuilder")      ? "avro"
                    : !strcmp(name, "ParquetDataWriterBuilder") ? "parquet"
                                                                : "txt");
}

/* One of the formats of the writer registry (writer.c), matched case-insensitively and kept as the registry names
 * it: it is the output files' extension. */
static int set_output_format(const kg_config_t *config, void *options, const kg_property_t *p, const char *key,
                             kg_property_value_t *v, char *errbuf) {
  kg_config_t *c = options;
  const char *formats[32];
  kg_writer_formats(formats, sizeof formats / sizeof formats[0]);
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s", v->s);
  free(v->s);
  const char *name = key ? key : p->name;
  int e = kg_config_parse_enum(name, kg_config_origin(config, name), kg_strtrim(tmp), formats, errbuf);
  if (e < 0) return KG_EINVAL;
  c->output_format = kg_xstrdup(formats[e]);
  return KG_OK;
}

/* Given at all, the limit bounds every script failure; not given, converter and decode failures differ. */
static int set_skip_errors(const kg_config_t *config, void *options, const kg_property_t *p, const char *key,
                           kg_property_value_t *v, char *errbuf) {
  (void)config, (void)p, (void)key, (void)errbuf;
  kg_config_t *c = options;
  c->skip_error_limit = v->i;
  c->skip_error_limit_set = true;
  return KG_OK;
}

/* Milliseconds in one Java TimeUnit (seconds, minutes, ...), or 0 for an unknown unit; *SINGULAR (may be NULL)
 * is set to the unit's singular name. */
static double unit_ms(const char *unit, const char **singular) {
  static const struct {
    const char *name, *singular;
    double ms;
  } units[] = {{"milliseconds", "millisecond", 1},
               {"seconds", "second", 1000},
               {"minutes", "minute", 60000},
               {"hours", "hour", 3600000},
               {"days", "day", 86400000}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcasecmp(unit, units[i].name)) {
      if (singular) *singular = units[i].singular;
      return units[i].ms;
    }
  return 0;
}

/* The bounds of the limits, per second: a limit that lets no record through, or lets one batch through and
 * then holds the run (and its lock) for days, is refused. The time limit's lower bound is 1 s because starting
 * to fetch a partition alone can take longer than a few milliseconds; the upper bounds keep the milliseconds
 * the engine computes within an int64. */
#define KG_LIMIT_MIN_TIME_MS    1000.0
#define KG_LIMIT_MAX_TIME_MS    1e15
#define KG_LIMIT_MIN_RATE_PER_S (1.0 / 3600.0)
#define KG_LIMIT_MAX_RATE_PER_S 1e15

/* extract.limit.enabled and, when it is true, the rows of its type: the limit (by either name) and its unit. */
static int set_limits(const kg_config_t *config, void *options, const kg_property_t *enabled, const char *enabled_key,
                      kg_property_value_t *v, char *errbuf) {
  (void)enabled_key;
  kg_config_t *c = options;
  const kg_props_t *p = config->props;
  c->limit_enabled = v->b;
  if (!c->limit_enabled) return KG_OK;
  const kg_property_t *type_row = kg_config_property("extract.limit.type");
  const char *type = kg_props_get(p, type_row->name);
  if (!type)
    return kg_fail(errbuf, KG_EINVAL, "%s: extract.limit.enabled=true needs extract.limit.type (time, rate or count)",
                   kg_config_origin(config, enabled->name));
  if (!strcasecmp(type, "pool"))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: extract.limit.type=pool is not supported (Gobblin refuses it at run time too); use time, rate "
                   "or count",
                   kg_config_origin(config, type_row->name));
  kg_property_value_t e;
  int rc =
      kg_property_parse(type_row, type_row->name, kg_config_origin(config, type_row->name), type, NULL, &e, errbuf);
  if (rc) return rc;
  c->limit_type = (kg_limit_type_t)e.e;
  static const char *const rows[][2] = {{"extract.limit.time.limit", "extract.limit.time.limit.timeunit"},
                                        {"extract.limit.rate.limit", "extract.limit.rate.limit.timeunit"},
                                        {"extract.limit.count.limit", NULL}};
  const kg_property_t *limit = kg_config_property(rows[e.e][0]);
  const kg_property_t *unit_row = rows[e.e][1] ? kg_config_property(rows[e.e][1]) : NULL;
  const char *key = NULL, *unit_key = NULL;
  if ((rc = kg_config_given(config, limit, &key, errbuf))) return rc;
  if (!key)
    return kg_fail(errbuf, KG_EINVAL, "%s: extract.limit.type=%s needs %s", kg_config_origin(config, type_row->name),
                   type, limit->name);
  if (unit_row && (rc = kg_config_given(config, unit_row, &unit_key, errbuf))) return rc;
  const char *unit = "second";
  double ms = unit_row ? unit_ms(unit_key ? kg_props_get(p, unit_key) : unit_row->def, &unit) : 1000;
  if (ms == 0)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: invalid value '%s' for property %s: allowed values are milliseconds, seconds, minutes, hours, "
                   "days",
                   kg_config_origin(config, unit_key), kg_props_get(p, unit_key), unit_key);
  const char *value = kg_props_get(p, key);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", value);
  if (c->limit_type == KG_LIMIT_COUNT) {
    if (!kg_parse_int64(kg_strtrim(tmp), &c->limit_count) || c->limit_count < limit->min)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a whole number of records, at least 1 (a lower "
                     "count lets no record through)",
                     kg_config_origin(config, key), value, key);
    return KG_OK;
  }
  char *end;
  double d = strtod(kg_strtrim(tmp), &end);
  bool number = end != tmp && !*end;
  if (c->limit_type == KG_LIMIT_TIME) {
    if (!number || !(d * ms >= KG_LIMIT_MIN_TIME_MS && d * ms <= KG_LIMIT_MAX_TIME_MS))
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a number of %ss from %g to %g; a time limit "
                     "must allow at least 1 second, since starting to fetch a partition alone can take longer",
                     kg_config_origin(config, key), value, key, unit, KG_LIMIT_MIN_TIME_MS / ms,
                     KG_LIMIT_MAX_TIME_MS / ms);
    c->limit_time_ms = (int64_t)(d * ms);
  } else {
    double per_s = d / ms * 1000.0;
    if (!number || !(per_s >= KG_LIMIT_MIN_RATE_PER_S && per_s <= KG_LIMIT_MAX_RATE_PER_S))
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a number of records per %s from %g to %g; a "
                     "rate limit must let at least 1 record per hour through",
                     kg_config_origin(config, key), value, key, unit, KG_LIMIT_MIN_RATE_PER_S * ms / 1000.0,
                     KG_LIMIT_MAX_RATE_PER_S * ms / 1000.0);
    c->limit_rate_per_s = per_s;
  }
  return KG_OK;
}
