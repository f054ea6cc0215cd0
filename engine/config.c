/* config.c: the property registry, and turning a job's properties into a validated kg_config_t. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const kg_property_doc_t property_docs[] = {
    {"job.name", NULL, "Name of the job: names its state, lock, metrics and task ids. Default: the job file's name.",
     0},
    {"job.group", NULL, "Group of the job (informational).", 0},
    {"job.description", NULL, "Description of the job (informational).", 0},
    {"job.lock.enabled", "true", "Refuse to start while another run of the same job holds the lock.", 0},
    {"job.lock.dir", "<work dir>/locks", "Folder of the job lock files.", 0},
    {"job.strict", "false",
     "Refuse to run a job with properties kingest does not know or does not implement (kingest run --strict), "
     "instead of a WARN for each.",
     0},
    {"kafka.brokers", NULL, "Comma-separated host:port list of Kafka brokers. Required.", 0},
    {"topic.whitelist", ".*", "Comma-separated regexes (whole-name match) of the topics to pull.", 0},
    {"topic.blacklist", "", "Comma-separated regexes of topics never to pull; wins over the whitelist.", 0},
    {"bootstrap.with.offset", "latest", "Where a partition with no stored offset starts: earliest, latest, skip.", 0},
    {"reset.on.offset.out.of.range", "nearest",
     "What to do when the stored offset is outside the broker's range: earliest, latest, nearest, skip.", 0},
    {"topics.move.to.latest.offset", "", "Comma-separated topic names (or all) that always start at the latest offset.",
     0},
    {"kafka.new.partition.offset", "earliest",
     "Where a new partition of a topic the job already pulls starts: earliest, latest, or bootstrap (follow "
     "bootstrap.with.offset).",
     0},
    {"topic.missing.policy", "warn",
     "A topic.whitelist name that matches no topic on the broker, or a stored partition the broker no longer has: "
     "warn, or fail (the run fails before anything is pulled).",
     0},
    {"source.class", "gobblin.source.extractor.extract.kafka.KafkaSimpleSource",
     "KafkaSimpleSource (the record's payload as bytes).", 0},
    {"extract.namespace", "", "Namespace of the extract; used by writer.file.path.type=namespace_table and default.",
     0},
    {"writer.builder.class", "gobblin.writer.SimpleDataWriterBuilder", "SimpleDataWriterBuilder.", 0},
    {"writer.destination.type", "HDFS", "HDFS or LOCAL; standalone runs write to the local file system.", 0},
    {"writer.output.format", "txt", "Output file extension for the simple writer (txt, json, csv).", 0},
    {"writer.file.path.type", "default", "Output sub-path: tablename, namespace_table or default.", 0},
    {"writer.fs.uri", "file:///", "File system of the writer; file:/// in standalone mode.", 0},
    {"simple.writer.delimiter", "\\n", "Bytes written after each record; empty for none.", 0},
    {"simple.writer.prepend.size", "false", "Write each record's length as 8 big-endian bytes before it.", 0},
    {"data.publisher.type", "gobblin.publisher.BaseDataPublisher", "BaseDataPublisher.", 0},
    {"data.publisher.final.dir", "<work dir>/job-output", "Where published files go.", 0},
    {"task.data.root.dir", "<work dir>/task-data", "Root of task staging and task output.", 0},
    {"state.store.dir", "<work dir>/state-store", "Folder of the job's state database.", 0},
    {"state.store.fs.uri", "file:///", "File system of the state store; file:/// in standalone mode.", 0},
    {"fs.uri", "file:///", "Default file system; file:/// in standalone mode.", 0},
    {"mr.job.max.mappers", "100", "Number of tasks the work units are packed into.", 0},
    {"job.fail.on.partial", "false",
     "A run that committed but stopped short of some partitions' high watermarks (fetch errors) exits with status 4 "
     "instead of 0.",
     0},
    {"job.commit.policy", "full",
     "full: publish only when every task succeeded; successful: publish and commit the tasks that succeeded.", 0},
    {"extract.limit.enabled", "false", "Limit each task by time, rate or count (extract.limit.type).", 0},
    {"extract.limit.type", NULL, "time, rate or count; pool is refused.", 0},
    {"extract.limit.time.limit", NULL,
     "type=time: the task's time budget, shared fairly by its partitions (also extract.limit.timeLimit).", 0},
    {"extract.limit.time.limit.timeunit", "seconds", "Unit of the time limit (also extract.limit.timeLimitTimeunit).",
     0},
    {"extract.limit.rate.limit", NULL, "type=rate: records per time unit per task (also extract.limit.rateLimit).", 0},
    {"extract.limit.rate.limit.timeunit", "seconds", "Unit of the rate limit (also extract.limit.rateLimitTimeunit).",
     0},
    {"extract.limit.count.limit", NULL,
     "type=count: records per task, shared fairly by its partitions (also extract.limit.countLimit).", 0},
    {"extract.limit.timeLimit", NULL, "Gobblin's newer name of extract.limit.time.limit.", 0},
    {"extract.limit.timeLimitTimeunit", NULL, "Gobblin's newer name of extract.limit.time.limit.timeunit.", 0},
    {"extract.limit.rateLimit", NULL, "Gobblin's newer name of extract.limit.rate.limit.", 0},
    {"extract.limit.rateLimitTimeunit", NULL, "Gobblin's newer name of extract.limit.rate.limit.timeunit.", 0},
    {"extract.limit.countLimit", NULL, "Gobblin's newer name of extract.limit.count.limit.", 0},
    {"kafka.workunit.packer.type", "SINGLE_LEVEL",
     "SINGLE_LEVEL (worst-fit-decreasing; a topic's empty units merged) or BI_LEVEL (per-topic groups first).", 0},
    {"workunit.pre.grouping.size.factor", "3.0", "BI_LEVEL: first-level groups hold total/(factor x N).", 0},
    {"kafka.workunit.size.estimator.type", "AVG_RECORD_TIME",
     "How work units are sized for packing: AVG_RECORD_TIME, AVG_RECORD_SIZE, or CUSTOM (estimateSize in job.lua).", 0},
    {"taskexecutor.threadpool.size", "<cores>", "Tasks run at once in standalone mode.", 0},
    {"metrics.enabled", "true", "Accepted for Gobblin compatibility; kingest always counts its metrics.", 0},
    {"metrics.reporting.file.enabled", "false", "Write a metrics file for each run.", 0},
    {"metrics.log.dir", "<work dir>/metrics", "Folder of the metrics files.", 0},
    {"metrics.reporting.file.suffix", "", "Extension of the metrics file.", 0},
    {"metrics.report.interval", "30000",
     "Milliseconds between interim reports (records read and written per task) in the metrics file during a run.", 0},
    {"kafka.metadata.timeout.ms", "15000", "Longest wait for the brokers to answer a metadata or offset query.", 0},
    {"kafka.fetch.timeout.ms", "30000", "Longest wait for the next record of a partition's range.", 0},
    {"kafka.fetch.batch.size", "1000", "Records handed to the script per call.", 0},
    {"kafka.consumer.*", NULL,
     "Passed to librdkafka as the property after the prefix (e.g. kafka.consumer.security.protocol); the settings "
     "kingest relies on (enable.partition.eof, auto.offset.reset, enable.auto.commit, enable.auto.offset.store, "
     "offset.store.method, bootstrap.servers, metadata.broker.list, group.id, group.instance.id) are refused.",
     0},
    {"decode.error.policy", "skip",
     "A record whose decodeRecord or a converter fails: skip (counted), fail, or quarantine (written with its error to "
     "<FP>/_errors).",
     0},
    {"task.skip.error.records", NULL,
     "How many records that failed in the script (skipped or quarantined) a task may have; -1 unlimited. Not set: "
     "a converter failure fails the task (as in Gobblin), decodeRecord failures are bounded by decode.error.max.ratio "
     "only.",
     0},
    {"decode.error.max.ratio", "0.1",
     "Largest share of a task's records that may fail in the script (skipped or quarantined); above it the task "
     "fails and no offset moves. 1 for no limit.",
     0},
    {"progress.interval.ms", "5000", "Milliseconds between progress lines in a log (not a terminal); 0 for none.", 0},
    {"script.batch.timeout.ms", "60000",
     "Longest time one batch may spend in the script; a script past it is stopped and the run fails.", 0},
    {"task.maxretries", "0", "Retries of a failed task (accepted; not used).", 0},
    {"mr.job.root.dir", NULL, "Working folder of MapReduce runs.", 1},
    {"mr.job.lock.dir", NULL, "Lock folder of MapReduce runs.", 1},
    {"mr.include.task.counters", NULL, "MapReduce counters per task.", 1},
    {"mr.job.max.mappers.per.node", NULL, "MapReduce mapper spread.", 1},
    {"mapreduce.job.queuename", NULL, "MapReduce queue.", 1},
    {"mapreduce.map.memory.mb", NULL, "MapReduce mapper memory.", 1},
    {"mapreduce.map.java.opts", NULL, "MapReduce mapper JVM options.", 1},
    {"mapred.job.queue.name", NULL, "MapReduce queue.", 1},
    {"launcher.type", "LOCAL", "LOCAL (standalone) or MAPREDUCE.", 0},
};

const kg_property_doc_t *kg_config_property_docs(size_t *count) {
  *count = sizeof property_docs / sizeof property_docs[0];
  return property_docs;
}

static const kg_property_doc_t *doc_for(const char *name) {
  size_t n;
  const kg_property_doc_t *docs = kg_config_property_docs(&n);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(docs[i].name);
    if (len > 2 && !strcmp(docs[i].name + len - 2, ".*")) {
      if (!strncmp(name, docs[i].name, len - 1)) return &docs[i];
    } else if (!strcmp(name, docs[i].name)) {
      return &docs[i];
    }
  }
  return NULL;
}

/* Gobblin properties kingest does not read. The first row that matches a key decides: a row with a VALUE
 * matches that value only (compared case-insensitively), a row without matches any. A row without INSTEAD is
 * harmless to ignore: it changes nothing in a standalone run's output or its meaning. A row with INSTEAD would
 * change the output or the meaning of a Gobblin run; INSTEAD says what kingest does instead, in a WARN (an
 * error with job.strict). Any other unknown key gets a generic WARN. */
static const struct {
  const char *name;
  const char *value;   /* NULL: any value */
  const char *instead; /* NULL: harmless */
} gobblin_ignored[] = {
    /* Harmless: Gobblin's own machinery, or a value that asks for what kingest does anyway. */
    {"job.runonce", "true", NULL},
    {"job.disabled", "false", NULL},
    {"job.commit.parallelize", NULL, NULL},
    {"gobblin.kafka.consumerClient.class", NULL, NULL},
    {"task.status.reportintervalinms", NULL, NULL},
    {"metrics.reporting.jmx.enabled", "false", NULL},
    {"metrics.reporting.kafka.enabled", "false", NULL},
    {"metrics.reporting.graphite.enabled", "false", NULL},
    {"metrics.reporting.influxdb.enabled", "false", NULL},
    {"job.history.store.enabled", "false", NULL},
    {"data.publisher.replace.final.dir", "false", NULL},
    {"extract.table.type", "append_only", NULL},
    /* Not implemented: the run's output or meaning differs from Gobblin's. */
    {"job.schedule", NULL, "kingest runs the job once per `kingest run`; schedule that with cron or a systemd timer"},
    {"job.runonce", NULL, "kingest runs the job once per `kingest run`; schedule that with cron or a systemd timer"},
    {"job.disabled", NULL, "kingest runs the job whenever `kingest run` starts it"},
    {"writer.codec.type", NULL, "files are written uncompressed"},
    {"writer.partitioner.class", NULL,
     "records are not partitioned: a task writes one file per topic, in writer.file.path.type's folder"},
    {"writer.file.max.size", NULL, "a task writes one file per topic, whatever its size"},
    {"writer.staging.dir", NULL, "staging files go under task.data.root.dir"},
    {"writer.output.dir", NULL, "task output goes under task.data.root.dir"},
    {"converter.classes", NULL,
     "records are written as the source gives them; converters are Lua functions (converters in a job.lua)"},
    {"kafka.deserializer.type", NULL,
     "records are the payload's bytes; decode them in a job.lua (decodeRecord, or source = "
     "\"gobblin.source.kafka_json\")"},
    {"kafka.schema.registry.url", NULL, "no schema registry is read; records are the payload's bytes"},
    {"kafka.schema.registry.class", NULL, "no schema registry is read; records are the payload's bytes"},
    {"fork.branches", NULL, "every record goes to one branch: one writer, one output"},
    {"fork.operator.class", NULL, "every record goes to one branch: one writer, one output"},
    {"qualitychecker.task.policies", NULL, "no quality check is made: every task's output is published"},
    {"qualitychecker.task.policy.types", NULL, "no quality check is made: every task's output is published"},
    {"qualitychecker.row.policies", NULL, "no quality check is made: every record is written"},
    {"qualitychecker.row.policy.types", NULL, "no quality check is made: every record is written"},
    {"data.publisher.replace.final.dir", NULL, "published files are added to the final folder; nothing is replaced"},
    {"extract.table.type", NULL, "the table type is APPEND_ONLY (writer.file.path.type=default ends in _append)"},
    {"metrics.reporting.jmx.enabled", NULL, "metrics go to the metrics file only (metrics.reporting.file.enabled)"},
    {"metrics.reporting.kafka.enabled", NULL, "metrics go to the metrics file only (metrics.reporting.file.enabled)"},
    {"metrics.reporting.graphite.enabled", NULL,
     "metrics go to the metrics file only (metrics.reporting.file.enabled)"},
    {"metrics.reporting.influxdb.enabled", NULL,
     "metrics go to the metrics file only (metrics.reporting.file.enabled)"},
    {"job.history.store.enabled", NULL, "the run history is kept in the job's state database (kingest state history)"},
};

/* The row of gobblin_ignored for KEY=VALUE, or -1. */
static int ignored_row(const char *key, const char *value) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s", value ? value : "");
  const char *v = kg_strtrim(tmp);
  for (size_t i = 0; i < sizeof gobblin_ignored / sizeof gobblin_ignored[0]; i++)
    if (!strcmp(key, gobblin_ignored[i].name) &&
        (!gobblin_ignored[i].value || !strcasecmp(v, gobblin_ignored[i].value)))
      return (int)i;
  return -1;
}

/* librdkafka settings that kingest's reading relies on: kafka.consumer.<name> may not change them. */
static const struct {
  const char *name;
  const char *why;
} engine_consumer_settings[] = {
    {"enable.partition.eof",
     "kingest relies on enable.partition.eof=true to see where each partition ends (without it a run stops short "
     "of the end); remove it"},
    {"auto.offset.reset", "kingest decides where an out-of-range offset goes on: use reset.on.offset.out.of.range "
                          "(and bootstrap.with.offset for partitions without a stored offset)"},
    {"enable.auto.commit", "kingest stores offsets in its state database when a run commits; remove it"},
    {"auto.commit.enable", "kingest stores offsets in its state database when a run commits; remove it"},
    {"enable.auto.offset.store", "kingest stores offsets in its state database when a run commits; remove it"},
    {"offset.store.method", "kingest stores offsets in its state database when a run commits; remove it"},
    {"bootstrap.servers", "use kafka.brokers"},
    {"metadata.broker.list", "use kafka.brokers"},
    {"group.id", "kingest joins no consumer group: it assigns partitions itself and stores offsets in its state "
                 "database, not in the group; remove it"},
    {"group.instance.id", "kingest joins no consumer group: it assigns partitions itself and stores offsets in its "
                          "state database, not in the group; remove it"},
};

/* A documented property within two edits of NAME (a likely typo), or NULL; with STANDALONE_ONLY, only those
 * a standalone run reads. One that differs only in case is the likeliest. */
static const char *nearest_property(const char *name, bool standalone_only) {
  size_t n;
  const kg_property_doc_t *docs = kg_config_property_docs(&n);
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < n; i++) {
    if (strchr(docs[i].name, '*') || (standalone_only && docs[i].mode == 1)) continue;
    if (!strcasecmp(name, docs[i].name)) return docs[i].name;
    size_t d = kg_edit_distance(name, docs[i].name, 2);
    if (d < best_d) {
      best_d = d;
      best = docs[i].name;
    }
  }
  return best;
}

/* A row of gobblin_ignored within two edits of NAME (and not NAME itself), or NULL. */
static const char *nearest_ignored(const char *name) {
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < sizeof gobblin_ignored / sizeof gobblin_ignored[0]; i++) {
    size_t d = kg_edit_distance(name, gobblin_ignored[i].name, 2);
    if (d > 0 && d < best_d) {
      best_d = d;
      best = gobblin_ignored[i].name;
    }
  }
  return best;
}

/* NAME with its first two components within two edits of kafka.consumer (kafka.consumr.fetch.wait.max.ms):
 * the name meant, as a new string, or NULL. */
static char *near_consumer_key(const char *name) {
  const char *dot = strchr(name, '.');
  const char *rest = dot ? strchr(dot + 1, '.') : NULL;
  if (!rest || !rest[1] || (size_t)(rest - name) >= 64 || !strncmp(name, "kafka.consumer.", 15)) return NULL;
  char head[64];
  snprintf(head, sizeof head, "%.*s", (int)(rest - name), name);
  return kg_edit_distance(head, "kafka.consumer", 2) <= 2 ? kg_xasprintf("kafka.consumer%s", rest) : NULL;
}

/* The namespaces of MapReduce and Hadoop properties, which change nothing in a standalone run. */
static bool is_mapreduce_name(const char *name) {
  return !strncmp(name, "mapreduce.", 10) || !strncmp(name, "mapred.", 7) || !strncmp(name, "mr.", 3);
}

int kg_config_parse_enum(const char *property, const char *origin, const char *value, const char *const *allowed,
                         char *errbuf) {
  for (int i = 0; allowed[i]; i++)
    if (!strcasecmp(value, allowed[i])) return i;
  char list[256] = "";
  for (int i = 0; allowed[i]; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, allowed[i], sizeof list - strlen(list) - 1);
  }
  kg_fail(errbuf, KG_EINVAL, "%s%sinvalid value '%s' for property %s: allowed values are %s", origin ? origin : "",
          origin ? ": " : "", value, property, list);
  return -1;
}

void kg_config_destroy(kg_config_t *c) {
  if (!c) return;
  kg_props_destroy(c->props);
  char **strings[] = {&c->job_file,    &c->job_name,          &c->job_group,       &c->job_description,
                      &c->brokers,     &c->topic_whitelist,   &c->topic_blacklist, &c->move_to_latest,
                      &c->work_dir,    &c->state_store_dir,   &c->task_data_root,  &c->final_dir,
                      &c->lock_dir,    &c->extract_namespace, &c->output_format,   &c->delimiter,
                      &c->metrics_dir, &c->metrics_suffix,    &c->source};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    free(*strings[i]);
  free(c);
}

/* Reads an optional string property, with a default (may be NULL). Returns a new string or NULL. */
static char *str_prop(const kg_props_t *p, const char *key, const char *def) {
  const char *v = kg_props_get(p, key);
  if (v) return kg_xstrdup(v);
  return def ? kg_xstrdup(def) : NULL;
}

static const char *origin_of(const kg_props_t *p, const char *key) {
  const char *o = kg_props_origin(p, key);
  return o ? o : "job";
}

static int int_prop(const kg_props_t *p, const char *key, int64_t def, int64_t min, int64_t max, int64_t *out,
                    char *errbuf) {
  const char *v = kg_props_get(p, key);
  if (!v) {
    *out = def;
    return KG_OK;
  }
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", v);
  int64_t n;
  if (!kg_parse_int64(kg_strtrim(tmp), &n) || n < min || n > max)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: invalid value '%s' for property %s: expected a whole number from %lld to %lld",
                   origin_of(p, key), v, key, (long long)min, (long long)max);
  *out = n;
  return KG_OK;
}

static int double_prop(const kg_props_t *p, const char *key, double def, double min, double max, double *out,
                       char *errbuf) {
  const char *v = kg_props_get(p, key);
  if (!v) {
    *out = def;
    return KG_OK;
  }
  char *end;
  double d = strtod(v, &end);
  while (*end == ' ' || *end == '\t')
    end++;
  if (end == v || *end || !(d >= min && d <= max))
    return kg_fail(errbuf, KG_EINVAL, "%s: invalid value '%s' for property %s: expected a number from %g to %g",
                   origin_of(p, key), v, key, min, max);
  *out = d;
  return KG_OK;
}

static int bool_prop(const kg_props_t *p, const char *key, bool def, bool *out, char *errbuf) {
  const char *v = kg_props_get(p, key);
  if (!v) {
    *out = def;
    return KG_OK;
  }
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", v);
  if (!kg_parse_bool(kg_strtrim(tmp), out))
    return kg_fail(errbuf, KG_EINVAL, "%s: invalid value '%s' for property %s: allowed values are true, false",
                   origin_of(p, key), v, key);
  return KG_OK;
}

static int enum_prop(const kg_props_t *p, const char *key, int def, const char *const *allowed, int *out,
                     char *errbuf) {
  const char *v = kg_props_get(p, key);
  if (!v) {
    *out = def;
    return KG_OK;
  }
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s", v);
  int i = kg_config_parse_enum(key, origin_of(p, key), kg_strtrim(tmp), allowed, errbuf);
  if (i < 0) return KG_EINVAL;
  *out = i;
  return KG_OK;
}

/* A property with two accepted names (the seed's dotted one and Gobblin's newer camel-case one): the
 * name in use, or NULL. Both set to different values is an error. */
static int either_name(const kg_props_t *p, const char *a, const char *b, const char **out, char *errbuf) {
  const char *va = kg_props_get(p, a), *vb = kg_props_get(p, b);
  *out = va ? a : vb ? b : NULL;
  if (va && vb && strcmp(va, vb))
    return kg_fail(errbuf, KG_EINVAL, "%s: properties %s=%s and %s=%s disagree; set one of them", origin_of(p, b), a,
                   va, b, vb);
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

static int limit_props(kg_config_t *c, char *errbuf) {
  const kg_props_t *p = c->props;
  int rc = bool_prop(p, "extract.limit.enabled", false, &c->limit_enabled, errbuf);
  if (rc || !c->limit_enabled) return rc;
  const char *type = kg_props_get(p, "extract.limit.type");
  if (!type)
    return kg_fail(errbuf, KG_EINVAL, "%s: extract.limit.enabled=true needs extract.limit.type (time, rate or count)",
                   origin_of(p, "extract.limit.enabled"));
  if (!strcasecmp(type, "pool"))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: extract.limit.type=pool is not supported (Gobblin refuses it at run time too); use time, rate "
                   "or count",
                   origin_of(p, "extract.limit.type"));
  static const char *const types[] = {"time", "rate", "count", NULL};
  int e;
  if ((rc = enum_prop(p, "extract.limit.type", 0, types, &e, errbuf))) return rc;
  c->limit_type = (kg_limit_type_t)e;
  static const char *names[][4] = {{"extract.limit.time.limit", "extract.limit.timeLimit",
                                    "extract.limit.time.limit.timeunit", "extract.limit.timeLimitTimeunit"},
                                   {"extract.limit.rate.limit", "extract.limit.rateLimit",
                                    "extract.limit.rate.limit.timeunit", "extract.limit.rateLimitTimeunit"},
                                   {"extract.limit.count.limit", "extract.limit.countLimit", NULL, NULL}};
  const char *key = NULL, *unit_key = NULL;
  if ((rc = either_name(p, names[e][0], names[e][1], &key, errbuf))) return rc;
  if (!key)
    return kg_fail(errbuf, KG_EINVAL, "%s: extract.limit.type=%s needs %s", origin_of(p, "extract.limit.type"), type,
                   names[e][0]);
  if (names[e][2] && (rc = either_name(p, names[e][2], names[e][3], &unit_key, errbuf))) return rc;
  double ms = 1000;
  const char *unit = "second";
  if (unit_key) {
    ms = unit_ms(kg_props_get(p, unit_key), &unit);
    if (ms == 0)
      return kg_fail(
          errbuf, KG_EINVAL,
          "%s: invalid value '%s' for property %s: allowed values are milliseconds, seconds, minutes, hours, days",
          origin_of(p, unit_key), kg_props_get(p, unit_key), unit_key);
  }
  const char *v = kg_props_get(p, key);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", v);
  if (c->limit_type == KG_LIMIT_COUNT) {
    if (!kg_parse_int64(kg_strtrim(tmp), &c->limit_count) || c->limit_count < 1)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a whole number of records, at least 1 (a lower "
                     "count lets no record through)",
                     origin_of(p, key), v, key);
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
                     origin_of(p, key), v, key, unit, KG_LIMIT_MIN_TIME_MS / ms, KG_LIMIT_MAX_TIME_MS / ms);
    c->limit_time_ms = (int64_t)(d * ms);
  } else {
    double per_s = d / ms * 1000.0;
    if (!number || !(per_s >= KG_LIMIT_MIN_RATE_PER_S && per_s <= KG_LIMIT_MAX_RATE_PER_S))
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a number of records per %s from %g to %g; a "
                     "rate limit must let at least 1 record per hour through",
                     origin_of(p, key), v, key, unit, KG_LIMIT_MIN_RATE_PER_S * ms / 1000.0,
                     KG_LIMIT_MAX_RATE_PER_S * ms / 1000.0);
    c->limit_rate_per_s = per_s;
  }
  return KG_OK;
}

/* Makes PATH absolute against the current directory; returns a new string. */
static char *absolute(const char *path) {
  if (path[0] == '/') return kg_xstrdup(path);
  if (!strncmp(path, "file://", 7)) return absolute(path + 7);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return kg_xstrdup(path);
  return kg_xasprintf("%s/%s", cwd, path);
}

/* A path property: absolute, defaulting to <work dir>/SUB. A file:// prefix is accepted. */
static char *path_prop(const kg_config_t *c, const char *key, const char *sub) {
  const char *v = kg_props_get(c->props, key);
  if (v && *v) return absolute(v);
  return kg_xasprintf("%s/%s", c->work_dir, sub);
}

/* The class name's last dotted component, so that gobblin.x.Foo and org.apache.gobblin.x.Foo both match. */
static const char *simple_name(const char *cls) {
  const char *dot = strrchr(cls, '.');
  return dot ? dot + 1 : cls;
}

static int check_class(const kg_props_t *p, const char *key, const char *const *accepted, char *errbuf) {
  const char *v = kg_props_get(p, key);
  if (!v) return KG_OK;
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", v);
  const char *name = simple_name(kg_strtrim(tmp));
  for (int i = 0; accepted[i]; i++)
    if (!strcmp(name, accepted[i])) return KG_OK;
  char list[256] = "";
  for (int i = 0; accepted[i]; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, accepted[i], sizeof list - strlen(list) - 1);
  }
  return kg_fail(errbuf, KG_EINVAL, "%s: unknown class '%s' for property %s: kingest provides %s", origin_of(p, key), v,
                 key, list);
}

/* A file system URI must be the local one in standalone mode. */
static int check_local_fs(const kg_props_t *p, const char *key, char *errbuf) {
  const char *v = kg_props_get(p, key);
  if (!v || !*v || !strncmp(v, "file:", 5)) return KG_OK;
  return kg_fail(errbuf, KG_EINVAL,
                 "%s: property %s=%s: standalone runs write to the local file system (file:///); "
                 "HDFS is used by the MapReduce launcher",
                 origin_of(p, key), key, v);
}

/* Decodes the delimiter: the properties reader has already unescaped \n and \t; a Lua string is as is. */
static void set_delimiter(kg_config_t *c) {
  const char *v = kg_props_get(c->props, "simple.writer.delimiter");
  if (!v) v = "\n";
  c->delimiter = kg_xstrdup(v);
  c->delimiter_len = strlen(v);
}

/* Checks every key of P that kingest does not read. An error: a kafka.consumer.<name> that would change a
 * librdkafka setting the engine relies on; a near-miss of a property kingest reads (a typo: the run would go
 * on with the default); with job.strict=true, any key that would otherwise get a WARN. Otherwise logs one
 * WARN per unknown or unimplemented key, and one INFO line naming the MapReduce-only ones. */
static int check_keys(const kg_props_t *p, char *errbuf) {
  bool strict;
  int rc = bool_prop(p, "job.strict", false, &strict, errbuf);
  if (rc) return rc;
  kg_buf_t mr = {0}, typos = {0}, warned = {0};
  size_t nwarned = 0;
  for (size_t i = 0; i < kg_props_count(p) && rc == KG_OK; i++) {
    const char *key = kg_props_key_at(p, i), *value = kg_props_value_at(p, i);
    const char *near = NULL;
    const kg_property_doc_t *doc;
    char *consumer = NULL, *warning = NULL;
    int row;
    if (!strncmp(key, "kafka.consumer.", 15)) {
      for (size_t j = 0; j < sizeof engine_consumer_settings / sizeof engine_consumer_settings[0]; j++)
        if (!strcmp(key + 15, engine_consumer_settings[j].name))
          rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s cannot be set: %s", origin_of(p, key), key, value,
                       engine_consumer_settings[j].why);
    } else if ((doc = doc_for(key))) {
      if (doc->mode == 1) kg_buf_appendf(&mr, "%s%s", mr.len ? ", " : "", key);
    } else if ((row = ignored_row(key, value)) >= 0) {
      if (gobblin_ignored[row].instead)
        warning = kg_xasprintf("%s: %s=%s is not implemented: %s", origin_of(p, key), key, value,
                               gobblin_ignored[row].instead);
    } else if ((near = nearest_property(key, is_mapreduce_name(key))) || (consumer = near_consumer_key(key))) {
      /* mr.job.max.maper would otherwise pass as MapReduce-only, and the run would use 100 tasks. */
      kg_buf_appendf(&typos, "%s%s: unknown property %s; did you mean %s?", typos.len ? "; " : "", origin_of(p, key),
                     key, near ? near : consumer);
    } else if (is_mapreduce_name(key)) {
      kg_buf_appendf(&mr, "%s%s", mr.len ? ", " : "", key);
    } else if ((near = nearest_ignored(key))) {
      warning = kg_xasprintf("%s: unknown property %s%s; did you mean %s?", origin_of(p, key), key,
                             strict ? "" : " (ignored)", near);
    } else {
      warning = kg_xasprintf("%s: unknown property %s%s", origin_of(p, key), key, strict ? "" : " (ignored)");
    }
    if (warning && strict) {
      KG_ERROR("%s", warning);
      kg_buf_appendf(&warned, "%s%s: %s", warned.len ? ", " : "", origin_of(p, key), key);
      nwarned++;
    } else if (warning) {
      KG_WARN("%s", warning);
    }
    free(warning);
    free(consumer);
  }
  if (rc == KG_OK && typos.len) rc = kg_fail(errbuf, KG_EINVAL, "%s", typos.data);
  if (rc == KG_OK && nwarned)
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: job.strict=true refuses %zu propert%s that kingest does not know or implement (each is "
                 "logged above): %s",
                 origin_of(p, "job.strict"), nwarned, nwarned == 1 ? "y" : "ies", warned.data);
  if (rc == KG_OK && mr.len) KG_INFO("Ignoring properties that only apply in MapReduce mode: %s", mr.data);
  kg_buf_free(&mr);
  kg_buf_free(&typos);
  kg_buf_free(&warned);
  return rc;
}

int kg_config_new(kg_props_t *props, const char *job_file, bool job_is_lua, const char *work_dir, kg_config_t **out,
                  char *errbuf) {
  kg_config_t *c = kg_xcalloc(1, sizeof *c);
  c->props = props;
  c->job_file = kg_xstrdup(job_file);
  c->job_is_lua = job_is_lua;
  int rc = KG_OK;
  int64_t n;
  int e;

  /* Keys first: a misspelt one would otherwise fail later as a missing property, or not at all. */
  if ((rc = check_keys(props, errbuf))) goto done;

  /* Job identity. */
  const char *name = kg_props_get(props, "job.name");
  if (name && *name) {
    c->job_name = kg_xstrdup(name);
  } else {
    const char *base = strrchr(job_file, '/');
    base = base ? base + 1 : job_file;
    const char *dot = strrchr(base, '.');
    c->job_name = dot && dot != base ? kg_xstrndup(base, (size_t)(dot - base)) : kg_xstrdup(base);
  }
  for (const char *s = c->job_name; *s; s++)
    if (*s == '/' || *s == '\\' || (unsigned char)*s < 32) {
      rc = kg_fail(errbuf, KG_EINVAL, "%s: invalid job.name '%s': it names files, so it may not contain '/'",
                   origin_of(props, "job.name"), c->job_name);
      goto done;
    }
  c->job_group = str_prop(props, "job.group", "");
  c->job_description = str_prop(props, "job.description", "");

  /* The work dir roots every default path. */
  const char *wd = work_dir && *work_dir ? work_dir : getenv("GOBBLIN_WORK_DIR");
  if (!wd || !*wd) {
    rc = kg_fail(errbuf, KG_EINVAL, "no work dir: set GOBBLIN_WORK_DIR or pass --work-dir");
    goto done;
  }
  c->work_dir = absolute(wd);

  /* Kafka. */
  const char *brokers = kg_props_get(props, "kafka.brokers");
  if (!brokers || !*brokers) {
    rc = kg_fail(errbuf, KG_EINVAL, "%s: missing required property kafka.brokers (comma-separated host:port list)",
                 job_file);
    goto done;
  }
  c->brokers = kg_xstrdup(brokers);
  c->topic_whitelist = str_prop(props, "topic.whitelist", "");
  c->topic_blacklist = str_prop(props, "topic.blacklist", "");
  c->move_to_latest = str_prop(props, "topics.move.to.latest.offset", "");
  static const char *const bootstrap_values[] = {"earliest", "latest", "skip", NULL};
  static const char *const reset_values[] = {"earliest", "latest", "nearest", "skip", NULL};
  if ((rc = enum_prop(props, "bootstrap.with.offset", KG_BOOTSTRAP_LATEST, bootstrap_values, &e, errbuf))) goto done;
  c->bootstrap = (kg_bootstrap_t)e;
  if ((rc = enum_prop(props, "reset.on.offset.out.of.range", KG_RESET_NEAREST, reset_values, &e, errbuf))) goto done;
  c->reset = (kg_reset_t)e;
  static const char *const new_partition_values[] = {"earliest", "latest", "bootstrap", NULL};
  if ((rc = enum_prop(props, "kafka.new.partition.offset", KG_NEW_PARTITION_EARLIEST, new_partition_values, &e,
                      errbuf)))
    goto done;
  c->new_partition = (kg_new_partition_t)e;
  static const char *const missing_values[] = {"warn", "fail", NULL};
  if ((rc = enum_prop(props, "topic.missing.policy", KG_MISSING_WARN, missing_values, &e, errbuf))) goto done;
  c->missing_topics = (kg_missing_policy_t)e;
  if ((rc = int_prop(props, "kafka.metadata.timeout.ms", 15000, 100, 3600000, &c->metadata_timeout_ms, errbuf)))
    goto done;
  if ((rc = int_prop(props, "kafka.fetch.timeout.ms", 30000, 100, 3600000, &c->fetch_timeout_ms, errbuf))) goto done;
  if ((rc = int_prop(props, "kafka.fetch.batch.size", 1000, 1, 1000000, &n, errbuf))) goto done;
  c->batch_size = (int)n;

  /* Source, writer, publisher classes. */
  static const char *const sources[] = {"KafkaSimpleSource", NULL};
  static const char *const writers[] = {"SimpleDataWriterBuilder", NULL};
  static const char *const publishers[] = {"BaseDataPublisher", NULL};
  if ((rc = check_class(props, "source.class", sources, errbuf))) goto done;
  if ((rc = check_class(props, "writer.builder.class", writers, errbuf))) goto done;
  if ((rc = check_class(props, "data.publisher.type", publishers, errbuf))) goto done;
  c->source = kg_xstrdup("kafka_simple");

  static const char *const launchers[] = {"LOCAL", NULL};
  if ((rc = enum_prop(props, "launcher.type", 0, launchers, &e, errbuf))) goto done;
  static const char *const destinations[] = {"HDFS", "LOCAL", NULL};
  if ((rc = enum_prop(props, "writer.destination.type", 0, destinations, &e, errbuf))) goto done;
  if ((rc = check_local_fs(props, "writer.fs.uri", errbuf))) goto done;
  if ((rc = check_local_fs(props, "fs.uri", errbuf))) goto done;
  if ((rc = check_local_fs(props, "state.store.fs.uri", errbuf))) goto done;

  static const char *const formats[] = {"txt", "json", "csv", NULL};
  if ((rc = enum_prop(props, "writer.output.format", 0, formats, &e, errbuf))) goto done;
  c->output_format = kg_xstrdup(formats[e]);
  static const char *const path_types[] = {"tablename", "namespace_table", "default", NULL};
  if ((rc = enum_prop(props, "writer.file.path.type", KG_PATH_DEFAULT, path_types, &e, errbuf))) goto done;
  c->path_type = (kg_path_type_t)e;
  c->extract_namespace = str_prop(props, "extract.namespace", "");
  set_delimiter(c);
  if ((rc = bool_prop(props, "simple.writer.prepend.size", false, &c->prepend_size, errbuf))) goto done;

  static const char *const policies[] = {"skip", "fail", "quarantine", NULL};
  if ((rc = enum_prop(props, "decode.error.policy", KG_ERRORS_SKIP, policies, &e, errbuf))) goto done;
  c->decode_errors = (kg_error_policy_t)e;
  c->skip_error_limit_set = kg_props_get(props, "task.skip.error.records") != NULL;
  if ((rc = int_prop(props, "task.skip.error.records", -1, -1, INT64_MAX, &c->skip_error_limit, errbuf))) goto done;
  if ((rc = double_prop(props, "decode.error.max.ratio", 0.1, 0, 1, &c->error_max_ratio, errbuf))) goto done;
  if ((rc = int_prop(props, "script.batch.timeout.ms", 60000, 10, INT64_MAX, &c->batch_timeout_ms, errbuf))) goto done;
  if ((rc = int_prop(props, "progress.interval.ms", 5000, 0, INT64_MAX, &c->progress_interval_ms, errbuf))) goto done;

  static const char *const estimators[] = {"AVG_RECORD_TIME", "AVG_RECORD_SIZE", "CUSTOM", NULL};
  if ((rc = enum_prop(props, "kafka.workunit.size.estimator.type", 0, estimators, &e, errbuf))) goto done;
  c->estimator = (kg_estimator_t)e;
  static const char *const packers[] = {"SINGLE_LEVEL", "BI_LEVEL", NULL};
  if ((rc = enum_prop(props, "kafka.workunit.packer.type", 0, packers, &e, errbuf))) goto done;
  c->packer = e;
  if ((rc = double_prop(props, "workunit.pre.grouping.size.factor", 3.0, 0.1, 1000, &c->pre_grouping_factor, errbuf)))
    goto done;

  if ((rc = limit_props(c, errbuf))) goto done;
  static const char *const commit_policies[] = {"full", "successful", NULL};
  if ((rc = enum_prop(props, "job.commit.policy", 0, commit_policies, &e, errbuf))) goto done;
  c->commit_policy = (kg_commit_policy_t)e;
  if ((rc = bool_prop(props, "job.fail.on.partial", false, &c->fail_on_partial, errbuf))) goto done;

  /* Tasks. */
  if ((rc = int_prop(props, "mr.job.max.mappers", 100, 1, 100000, &n, errbuf))) goto done;
  c->max_mappers = (int)n;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if ((rc = int_prop(props, "taskexecutor.threadpool.size", cores > 0 ? cores : 2, 1, 1024, &n, errbuf))) goto done;
  c->threadpool_size = (int)n;

  /* Locations. */
  c->state_store_dir = path_prop(c, "state.store.dir", "state-store");
  c->task_data_root = path_prop(c, "task.data.root.dir", "task-data");
  c->final_dir = path_prop(c, "data.publisher.final.dir", "job-output");
  c->lock_dir = path_prop(c, "job.lock.dir", "locks");
  if ((rc = bool_prop(props, "job.lock.enabled", true, &c->lock_enabled, errbuf))) goto done;

  /* Metrics. */
  if ((rc = bool_prop(props, "metrics.reporting.file.enabled", false, &c->metrics_enabled, errbuf))) goto done;
  c->metrics_dir = path_prop(c, "metrics.log.dir", "metrics");
  c->metrics_suffix = str_prop(props, "metrics.reporting.file.suffix", "");
  if ((rc = int_prop(props, "metrics.report.interval", 30000, 100, INT64_MAX, &c->metrics_interval_ms, errbuf)))
    goto done;

done:
  if (rc) {
    kg_config_destroy(c);
    c = NULL;
  }
  *out = c;
  return rc;
}
