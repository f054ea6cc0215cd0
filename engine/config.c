/* config.c: the property table, and turning a job's properties into a validated kg_config_t.
 *
 * Each property is one row of `properties` below: its type, default, limits, accepted names, the field it
 * lands in and its doc. kg_config_new reads the rows in order with one loop (read_property); the few
 * properties a type cannot express have a setter next to the table, and the checks that span several keys
 * (unknown and misspelt keys, job.strict, the extract limits read together) are below it. `kingest
 * properties` prints the same rows, so the documented defaults are the ones the code uses.
 *
 * Adding a property: a row where its check belongs in the order below, a field in kg_config_t when the engine
 * reads the value (KG_FIELD), and docs/properties.md's table written again from `kingest properties --markdown`
 * by scripts/gen-properties (docs_spec checks they agree; test_props checks the row). A doc's links name a heading
 * of the manual (`[Avro](#avro)`); scripts/gen-properties points each at the page of docs/ that has it. */
#include "config.h"
#include "fs.h"
#include "json.h"
#include "partition.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <avro.h>

/* Where a row's value lands: the field of kg_config_t and its size. */
#define KG_FIELD(f) .offset = offsetof(kg_config_t, f), .size = sizeof(((kg_config_t *)0)->f)

static const char *origin_of(const kg_props_t *p, const char *key) {
  const char *o = kg_props_origin(p, key);
  return o ? o : "job";
}

/* The values of the enum and class rows, in the order of their C enums. */
static const char *const bootstrap_values[] = {"earliest", "latest", "skip", NULL};
static const char *const reset_values[] = {"earliest", "latest", "nearest", "skip", NULL};
static const char *const new_partition_values[] = {"earliest", "latest", "bootstrap", NULL};
static const char *const missing_values[] = {"warn", "fail", NULL};
static const char *const sources[] = {"KafkaSimpleSource", "KafkaAvroSource", "KafkaDeserializerSource", NULL};
static const char *const deserializers[] = {"BYTE_ARRAY", "CONFLUENT_AVRO", NULL}; /* kg_deserializer_t */
static const char *const writers[] = {"SimpleDataWriterBuilder", "AvroDataWriterBuilder", NULL};
static const char *const publishers[] = {"BaseDataPublisher", NULL};
static const char *const launchers[] = {"LOCAL", "MAPREDUCE", NULL}; /* kg_launcher_t */
static const char *const destinations[] = {"HDFS", "LOCAL", NULL};
static const char *const formats[] = {"txt", "json", "csv", "avro", NULL};
static const char *const codecs[] = {"null", "deflate", "snappy", "gzip", "zstd", NULL}; /* kg_codec_t */
static const char *const path_types[] = {"tablename", "namespace_table", "default", NULL};
static const char *const error_policies[] = {"skip", "fail", "quarantine", NULL};
static const char *const estimators[] = {"AVG_RECORD_TIME", "AVG_RECORD_SIZE", "CUSTOM", NULL};
static const char *const packers[] = {"SINGLE_LEVEL", "BI_LEVEL", NULL};
static const char *const limit_types[] = {"time", "rate", "count", NULL};
static const char *const time_units[] = {"milliseconds", "seconds", "minutes", "hours", "days", NULL};
static const char *const commit_policies[] = {"full", "successful", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
static const char *const partitioners[] = {"TimeBasedWriterPartitioner", "TimeBasedAvroWriterPartitioner",
                                           "TimeBasedJsonWriterPartitioner", NULL};
static const char *const granularities[] = {"MINUTE", "HOUR", "DAY", "MONTH", "YEAR", NULL}; /* kg_granularity_t */
static const char *const registries[] = {"ConfluentKafkaSchemaRegistry", "KafkaAvroSchemaRegistry", NULL};
static const char *const line_ends[] = {"lf", "crlf", NULL};
static const char *const extra_fields[] = {"fail", "ignore", NULL};

/* The setters and computed defaults of the odd rows, defined below the table. */
static char *default_job_name(const kg_config_t *c);
static char *default_threads(const kg_config_t *c);
static int set_job_name(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static char *default_output_format(const kg_config_t *c);
static char *trimmed(const char *value, char *buf, size_t size);
static const char *simple_name(const char *cls);
static int set_output_format(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                             char *errbuf);
static int set_delimiter(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static char *default_codec(const kg_config_t *c);
static int set_codec(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static char *no_schema(const kg_config_t *c);
static char *default_deflate_level(const kg_config_t *c);
static int set_avro_schema(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                           char *errbuf);
static int set_skip_errors(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                           char *errbuf);
static int set_csv(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static int csv_columns_of_schema(kg_config_t *c, const char *key, char *errbuf);
static int set_limits(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static int set_registry_class(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                              char *errbuf);
static int set_prom_file(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static int set_pushgateway_url(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                               char *errbuf);
static int set_source(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);
static int set_partitioner(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                           char *errbuf);
static int set_brokers(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf);

/* Rows are read in this order, so when a job has several bad values, the first row's error is the one
 * reported. job.name comes first: the job's identity is checked before the work dir that roots the paths. */
static const kg_property_t properties[] = {
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

    /* Kafka. */
    {.name = "kafka.brokers",
     .type = KG_PROP_STRING,
     .required = "comma-separated host:port list",
     .set = set_brokers,
     .doc = "Comma-separated `host:port` list of the Kafka brokers: a host name, an IPv4 address or an IPv6 address in "
            "brackets (`[::1]:9092`), a port from 1 to 65535 (9092 when left out), and optionally librdkafka's "
            "`PLAINTEXT://`, `SSL://`, `SASL_PLAINTEXT://` or `SASL_SSL://` before it."},
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
    {.name = "kafka.metadata.timeout.ms",
     .type = KG_PROP_INT,
     .def = "15000",
     .min = 100,
     .max = 3600000,
     KG_FIELD(metadata_timeout_ms),
     .doc = "Longest wait for the brokers to answer a metadata or offset query. Errors that may pass (a leader moving "
            "or not yet elected, a topic just created, a broker not answering) are retried with a short backoff until "
            "this is used up; then the run fails, naming the last error, the brokers' last connection errors and the "
            "time spent, except that a partition still without offsets then (no leader) is skipped for the run, "
            "which is `PARTIAL`, when others were answered. Brokers that are all refused, not resolved or refuse the "
            "TLS handshake or the login fail the run in about a second, naming the cause."},
    {.name = "kafka.fetch.timeout.ms",
     .type = KG_PROP_INT,
     .def = "30000",
     .min = 100,
     .max = 3600000,
     KG_FIELD(fetch_timeout_ms),
     .doc = "Longest wait for the next record of a partition's range before moving on."},
    {.name = "kafka.fetch.batch.size",
     .type = KG_PROP_INT,
     .def = "1000",
     .min = 1,
     .max = 1000000,
     KG_FIELD(batch_size),
     .doc = "Records handed to the script per call, at most: a batch also holds no more than about 1 MB of payloads "
            "(at the partition's average record size), since its records stay in the Kafka client's buffers until "
            "the next one."},
    {.name = "kafka.consumer.*",
     .type = KG_PROP_STRING,
     .doc = "Passed to librdkafka as `<name>` (security settings, `fetch.wait.max.ms`, `isolation.level` and the "
            "like). The settings kingest relies on are refused with an error naming the property: "
            "`enable.partition.eof` (how a partition's end is seen), `auto.offset.reset` (use "
            "`reset.on.offset.out.of.range`), `enable.auto.commit`, `auto.commit.enable`, `enable.auto.offset.store`, "
            "`offset.store.method` (kingest stores offsets in its state database), `bootstrap.servers`, "
            "`metadata.broker.list` (use `kafka.brokers`), `group.id`, `group.instance.id` (kingest joins no consumer "
            "group)."},

    /* The schema registry (engine/registry.c), read by the Avro decoders of kafka.deserializer.type. */
    {.name = "kafka.schema.registry.url",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(registry_url),
     .doc = "Base URL (`http://` or `https://`) of the schema registry: Confluent's API (`.../apis/ccompat/v7` on "
            "an Apicurio registry), or for `KafkaAvroSchemaRegistry` the URL under which `/id=<md5 hex>` and "
            "`/latest_with_type=<topic>` answer. Needed by the Avro decoders ([Avro](#avro))."},
    {.name = "kafka.schema.registry.class",
     .type = KG_PROP_CLASS,
     .def_doc = "Confluent's",
     .names = registries,
     .set = set_registry_class,
     .doc = "The registry's API: `ConfluentKafkaSchemaRegistry` (schemas by 4-byte id at `/schemas/ids/<id>`, the "
            "latest at `/subjects/<topic><suffix>/versions/latest`) or `KafkaAvroSchemaRegistry` (LinkedIn's: by "
            "16-byte MD5 id at `/id=<hex>`, the latest at `/latest_with_type=<topic>`)."},
    {.name = "kafka.schema_registry.confluent.schema_name_suffix",
     .type = KG_PROP_STRING,
     .def = "-value",
     KG_FIELD(registry_subject_suffix),
     .doc = "Confluent's registry: a topic's latest schema is that of subject `<topic><suffix>`."},
    {.name = "kafka.schema.registry.max.cache.size",
     .type = KG_PROP_INT,
     .def = "1000",
     .min = 1,
     .max = 1000000,
     KG_FIELD(registry_cache_size),
     .doc = "Schemas (and topics the registry has no schema for) a registry client keeps (one per task); past it, "
            "the one kept longest goes."},
    {.name = "kafka.schema.registry.cache.expire.after.write.min",
     .type = KG_PROP_INT,
     .def = "10",
     .min = 0,
     .max = 525600,
     KG_FIELD(registry_cache_expire_min),
     .doc = "Minutes a schema, or the registry's answer that a topic has none, is kept before the registry is asked "
            "again; 0 keeps nothing. What a registry that cannot answer got is never kept "
            "(`kafka.schema.registry.retry.timeout.ms`)."},
    {.name = "kafka.schema.registry.retry.timeout.ms",
     .type = KG_PROP_INT,
     .def = "60000",
     .min = 0,
     .max = 86400000,
     KG_FIELD(registry_retry_timeout_ms),
     .doc = "How long a schema lookup tries again while the registry cannot give the schema: no connection, a "
            "timeout, HTTP 408, 429 (rate limited) or 5xx, or a 404 for a schema id that records carry (a replica "
            "behind, a registry restarted empty). Pauses double from 1 s to 8 s, or are what `Retry-After` asks; "
            "past this time the task fails, naming the URL, the status and the id, and no offset moves. HTTP 401 and "
            "403 are asked once more, then fail the task. 0: one attempt ([Avro](#avro))."},

    /* Source, writer and publisher. */
    {.name = "kafka.deserializer.type",
     .type = KG_PROP_ENUM,
     .def = "BYTE_ARRAY",
     .names = deserializers,
     KG_FIELD(deserializer),
     .doc = "`BYTE_ARRAY`: the payload's bytes; `CONFLUENT_AVRO`: Avro records in Confluent's framing (magic byte 0, "
            "4-byte schema id), decoded with the schemas of `kafka.schema.registry.url` ([Avro](#avro))."},
    {.name = "source.class",
     .type = KG_PROP_CLASS,
     .def = "gobblin.source.extractor.extract.kafka.KafkaSimpleSource",
     .names = sources,
     .set = set_source,
     .doc = "`KafkaSimpleSource`: the record's payload as bytes; `KafkaAvroSource`: Avro records in LinkedIn's "
            "framing (magic byte 0, 16-byte MD5 schema id) from a `KafkaAvroSchemaRegistry`; "
            "`KafkaDeserializerSource`: as `kafka.deserializer.type` says ([Avro](#avro))."},
    {.name = "writer.builder.class",
     .type = KG_PROP_CLASS,
     .def = "gobblin.writer.SimpleDataWriterBuilder",
     .names = writers,
     .doc = "`SimpleDataWriterBuilder`: the simple writer (`txt`, `json`) and the CSV writer (`csv`); "
            "`AvroDataWriterBuilder`: Avro object container files (`writer.output.format` `avro`, its default with "
            "this builder)."},
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
    {.name = "mr.hadoop.command",
     .type = KG_PROP_STRING,
     .def = "hadoop",
     KG_FIELD(mr_hadoop),
     .doc = "The command that runs Hadoop's `jar` subcommand (`hadoop jar JAR ARGS`), looked up in PATH."},
    {.name = "mr.streaming.jar",
     .type = KG_PROP_STRING,
     .def_doc = "hadoop-streaming-*.jar under $HADOOP_HOME/share/hadoop/tools/lib",
     KG_FIELD(mr_streaming_jar),
     .doc = "The Hadoop Streaming jar the job is submitted with."},
    {.name = "mr.kingest.path",
     .type = KG_PROP_STRING,
     .def_doc = "this kingest's own path",
     KG_FIELD(mr_kingest),
     .doc = "Where each node finds the kingest binary the maps run (installed there, with the libraries it "
            "needs)."},
    {.name = "mr.map.max.attempts",
     .type = KG_PROP_INT,
     .def = "4",
     .min = 1,
     .max = 100,
     KG_FIELD(mr_attempts),
     .doc = "Attempts YARN makes at each map (`mapreduce.map.maxattempts`); a failed or killed attempt's files are "
            "never published."},
    {.name = "mr.streaming.args",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(mr_args),
     .doc = "More arguments for Hadoop Streaming, split at spaces: generic options, placed before kingest's own "
            "(`-D mapreduce.job.priority=HIGH -libjars ...`), and `-cmdenv VAR=VALUE` pairs, which set a variable "
            "in the maps' environment (one a .pull file's `${env:VAR}` needs, say)."},
    {.name = "writer.destination.type",
     .type = KG_PROP_ENUM,
     .def = "HDFS",
     .names = destinations,
     .doc = "`HDFS` or `LOCAL`, as Gobblin names them; the file system written to is `writer.fs.uri`'s."},
    {.name = "writer.fs.uri",
     .type = KG_PROP_FS_URI,
     .def_doc = "fs.uri's",
     .doc = "File system of the task data (`task.data.root.dir`) and the final folder: `file:///`, or "
            "`webhdfs://HOST:PORT` (or `webhdfs://USER@HOST:PORT`) for HDFS through WebHDFS, PORT being the NameNode's "
            "HTTP port ([HDFS](#hdfs)); an `hdfs://` URI is refused with that hint."},
    {.name = "fs.uri",
     .type = KG_PROP_FS_URI,
     .def = "file:///",
     .doc = "Default file system, for `writer.fs.uri` and `data.publisher.fs.uri`."},
    {.name = "data.publisher.fs.uri",
     .type = KG_PROP_FS_URI,
     .def_doc = "writer.fs.uri's",
     .doc = "File system of the final folder. When it is the writer's, a file is published by a rename; when the "
            "writer's is local and this one is HDFS (`webhdfs://`), the commit uploads each file next to its final "
            "path (as `_<name>._COPYING_`) and renames it there, exactly once as well ([HDFS](#hdfs))."},
    {.name = "state.store.fs.uri",
     .type = KG_PROP_FS_URI,
     .def = "file:///",
     .doc = "File system of the state store: local (`file:///`), whatever the output's."},
    {.name = "writer.output.format",
     .type = KG_PROP_ENUM,
     .names = formats,
     .def_doc = "txt (avro with AvroDataWriterBuilder)",
     .computed = default_output_format,
     .set = set_output_format,
     .doc = "The output's format and file extension: `txt` or `json` (the simple writer), `csv` (CSV lines of the "
            "columns `writer.csv.columns`), or `avro` (Avro object container files of the records' Avro binary "
            "datums, schema `writer.avro.schema`)."},
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
    {.name = "writer.partitioner.class",
     .type = KG_PROP_STRING,
     .def_doc = "none",
     .computed = no_schema,
     .set = set_partitioner,
     .doc = "`TimeBasedWriterPartitioner` (or Gobblin's `TimeBasedAvroWriterPartitioner`, "
            "`TimeBasedJsonWriterPartitioner`): each record's output goes to a folder of its time under the "
            "topic's, `<FP>/<prefix>/<time>/<suffix>`; the time is the Kafka record's timestamp, or what the "
            "job.lua's `partition` hook returns ([Output files](#output-files))."},
    {.name = "writer.partition.pattern",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def_doc = "the granularity's",
     .doc = "Joda-Time pattern of the time folders, as `yyyy/MM/dd/HH`: letters y M d H h k K m s S D E a; text in "
            "single quotes (`'hour='HH`); other characters as they are."},
    {.name = "writer.partition.granularity",
     .type = KG_PROP_ENUM,
     .part_of = "writer.partitioner.class",
     .def = "HOUR",
     .names = granularities,
     .doc = "Without a pattern: `MINUTE` (`yyyy/MM/dd/HH/mm`), `HOUR` (`yyyy/MM/dd/HH`), `DAY`, `MONTH` or `YEAR`."},
    {.name = "writer.partition.timezone",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def = "America/Los_Angeles",
     .doc = "Time zone of the folders: an IANA name (Gobblin's default is America/Los_Angeles), `UTC`, or an offset "
            "such as `+05:30`."},
    {.name = "writer.partition.prefix",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def = "",
     .doc = "A folder (or folders) before the time's."},
    {.name = "writer.partition.suffix",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def = "",
     .doc = "A folder (or folders) after the time's."},
    {.name = "extract.namespace",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(extract_namespace),
     .doc = "Used by `writer.file.path.type` `namespace_table` and `default`."},
    /* A .pull file's \n is unescaped by the properties reader; a job.lua's string is taken as it is. */
    {.name = "simple.writer.delimiter",
     .type = KG_PROP_STRING,
     .def = "\n",
     .set = set_delimiter,
     .doc = "Bytes written after each record; empty for none."},
    {.name = "simple.writer.prepend.size",
     .type = KG_PROP_BOOL,
     .def = "false",
     KG_FIELD(prepend_size),
     .doc = "Write each record's length as 8 big-endian bytes before it."},
    /* The Avro writer, read after writer.output.format. */
    {.name = "writer.codec.type",
     .type = KG_PROP_ENUM,
     .names = codecs,
     .def_doc = "deflate for avro, null otherwise",
     .computed = default_codec,
     .set = set_codec,
     .doc = "Compression: of Avro blocks, `null`, `deflate` or `snappy` (the codecs of the Avro spec; Gobblin's "
            "`bzip2` and `xz` are refused); of text output (`txt`, `json`, `csv`), `null`, `gzip` or `zstd`, the "
            "whole file, whose name then ends in `.gz` or `.zst`."},
    {.name = "writer.deflate.level",
     .type = KG_PROP_INT,
     .def_doc = "9 for deflate, 3 for gzip",
     .computed = default_deflate_level,
     .min = 0,
     .max = 9,
     KG_FIELD(deflate_level),
     .doc = "Level of the `deflate` and `gzip` codecs; 9 is Gobblin's default for Avro, and 6 makes files of about "
            "the same size about 4.5 times faster; gzip's 3 keeps text output at the speed of a text pass-through "
            "([Performance](#performance))."},
    {.name = "writer.avro.schema",
     .alias = "schema",
     .type = KG_PROP_STRING,
     .def_doc = "none",
     .computed = no_schema,
     .set = set_avro_schema,
     .doc = "The output's Avro schema, as JSON text (`schema` in a job.lua): `avro` output needs it, or "
            "`writer.avro.schema.file`, unless it reads Avro records from a registry (then each topic's latest "
            "schema). Records are written with it ([Avro](#avro)); its text goes into each file's header byte for "
            "byte. Checked when the job starts, the error naming the schema's problem. With `csv` output, a record "
            "schema whose fields are the columns."},
    {.name = "writer.avro.schema.file",
     .type = KG_PROP_PATH,
     .part_of = "writer.avro.schema",
     .doc = "A file holding the records' Avro schema (instead of `writer.avro.schema`)."},
    /* The CSV writer, read after the Avro schema, whose fields may be its columns. */
    {.name = "writer.csv.columns",
     .type = KG_PROP_STRING,
     .def_doc = "the fields of writer.avro.schema",
     .computed = no_schema,
     .set = set_csv,
     .doc = "`csv` output: the columns of each line, comma-separated (`id,name,ts`; a list of strings in a "
            "job.lua), each the name of a record's field; without it, the fields of the record schema "
            "`writer.avro.schema` (`schema`), in order. A `csv` job with neither is refused "
            "([CSV](docs/behaviour.md#csv))."},
    {.name = "writer.csv.header",
     .type = KG_PROP_BOOL,
     .def = "false",
     .part_of = "writer.csv.columns",
     .doc = "`true`: each CSV file (each rolled file too) begins with a line of the column names."},
    {.name = "writer.csv.delimiter",
     .type = KG_PROP_STRING,
     .def = ",",
     .part_of = "writer.csv.columns",
     .doc = "The one character between the fields of a CSV line (a tab: `\\t` in a .pull file); not `\"`, CR or "
            "LF."},
    {.name = "writer.csv.line.end",
     .type = KG_PROP_ENUM,
     .def = "lf",
     .names = line_ends,
     .part_of = "writer.csv.columns",
     .doc = "How CSV lines end: `lf`, as Unix tools, Hive and Spark write them, or `crlf`, as RFC 4180 has it. A "
            "quoted field keeps its own CR and LF."},
    {.name = "writer.csv.extra.fields",
     .type = KG_PROP_ENUM,
     .def = "fail",
     .names = extra_fields,
     .part_of = "writer.csv.columns",
     .doc = "A record with a field that is not a column (an array with more items than columns): `fail`, it is a "
            "failed record (`decode.error.policy`) whose error names the field; `ignore`, the field is left out."},

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

    /* Metrics. */
    {.name = "metrics.reporting.file.enabled",
     .type = KG_PROP_BOOL,
     .def = "false",
     KG_FIELD(metrics_enabled),
     .doc = "Write a metrics file for each run."},
    {.name = "metrics.log.dir",
     .type = KG_PROP_PATH,
     .def = "<work dir>/metrics",
     .empty_is_default = true,
     KG_FIELD(metrics_dir),
     .doc = "Folder of the metrics files."},
    {.name = "metrics.reporting.file.suffix",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(metrics_suffix),
     .doc = "Extension of the metrics file."},
    {.name = "metrics.report.interval",
     .type = KG_PROP_INT,
     .def = "30000",
     .min = 100,
     .max = INT64_MAX,
     KG_FIELD(metrics_interval_ms),
     .doc = "Milliseconds between interim reports during a run: in the metrics file (records read and written, bytes "
            "written, per task), and in the Prometheus file and Pushgateway (the run's counts so far)."},
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
    {.name = "metrics.enabled",
     .type = KG_PROP_STRING,
     .def = "true",
     .doc = "Accepted for Gobblin compatibility; metrics are always counted."},

    /* MapReduce only: a standalone run accepts and ignores them. */
    {.name = "mr.job.root.dir",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "With `launcher.type=MAPREDUCE`, needed: the folder on the writer's HDFS (`writer.fs.uri`) under which "
            "each run keeps `<job>/<jobId>/`: the maps' input, the Hadoop job's output, and each map attempt's task "
            "data."},
    {.name = "mr.job.lock.dir", .mode = KG_MODE_MAPREDUCE, .doc = "Lock folder of MapReduce runs."},
    {.name = "mr.include.task.counters", .mode = KG_MODE_MAPREDUCE, .doc = "MapReduce counters per task."},
    {.name = "mr.job.max.mappers.per.node", .mode = KG_MODE_MAPREDUCE, .doc = "MapReduce mapper spread."},
    {.name = "mapreduce.job.queuename", .mode = KG_MODE_MAPREDUCE, .doc = "YARN queue: passed to the Hadoop job."},
    {.name = "mapreduce.map.memory.mb",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "Map container memory: passed to the Hadoop job."},
    {.name = "mapreduce.map.java.opts", .mode = KG_MODE_MAPREDUCE, .doc = "Map JVM options: passed to the Hadoop job."},
    {.name = "mapred.job.queue.name",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "YARN queue (old name): passed to the Hadoop job."},
};

const kg_property_t *kg_config_properties(size_t *count) {
  *count = sizeof properties / sizeof properties[0];
  return properties;
}

const kg_property_t *kg_config_property(const char *name) {
  for (size_t i = 0; i < sizeof properties / sizeof properties[0]; i++) {
    const kg_property_t *p = &properties[i];
    size_t len = strlen(p->name);
    if (len > 2 && !strcmp(p->name + len - 2, ".*")) {
      if (!strncmp(name, p->name, len - 1)) return p;
    } else if (!strcmp(name, p->name) || (p->alias && !strcmp(name, p->alias))) {
      return p;
    }
  }
  return NULL;
}

/* The job file's name without its folder and extension. */
static char *default_job_name(const kg_config_t *c) {
  const char *base = strrchr(c->job_file, '/');
  base = base ? base + 1 : c->job_file;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? kg_xstrndup(base, (size_t)(dot - base)) : kg_xstrdup(base);
}

/* Twice the number of cores online (4 when unknown), at most the row's maximum. */
static char *default_threads(const kg_config_t *c) {
  (void)c;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t max = kg_config_property("taskexecutor.threadpool.size")->max;
  long long n = cores <= 0 ? 4 : 2 * (long long)cores;
  return kg_xasprintf("%lld", n > max ? (long long)max : n);
}

/* The job name names files, so it may not hold a folder separator or a control character. */
static int set_job_name(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf) {
  (void)key;
  c->job_name = v->s;
  for (const char *s = c->job_name; *s; s++)
    if (*s == '/' || *s == '\\' || (unsigned char)*s < 32)
      return kg_fail(errbuf, KG_EINVAL, "%s: invalid job.name '%s': it names files, so it may not contain '/'",
                     origin_of(c->props, p->name), c->job_name);
  return KG_OK;
}

/* As in Gobblin, whose default format is AVRO: avro with AvroDataWriterBuilder, txt (the simple writer's)
 * otherwise. */
static char *default_output_format(const kg_config_t *c) {
  char tmp[256];
  const char *builder = c->props ? kg_props_get(c->props, "writer.builder.class") : NULL;
  return kg_xstrdup(
      builder && !strcmp(simple_name(trimmed(builder, tmp, sizeof tmp)), "AvroDataWriterBuilder") ? "avro" : "txt");
}

/* The format is kept as its lower-case name: it is the output files' extension. */
static int set_output_format(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                             char *errbuf) {
  (void)key, (void)errbuf;
  c->output_format = kg_xstrdup(p->names[v->e]);
  return KG_OK;
}

static bool is_avro(const kg_config_t *c) { return c->output_format && !strcmp(c->output_format, "avro"); }
static bool is_csv(const kg_config_t *c) { return c->output_format && !strcmp(c->output_format, "csv"); }

/* Gobblin's default codec, deflate, for Avro; text output is uncompressed. */
static char *default_codec(const kg_config_t *c) { return kg_xstrdup(is_avro(c) ? "deflate" : "null"); }

/* The codecs of Avro blocks and of text files differ; the file extension follows the text codec. */
static int set_codec(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf) {
  c->codec = (kg_codec_t)v->e;
  bool avro_codec = c->codec == KG_CODEC_NULL || c->codec == KG_CODEC_DEFLATE || c->codec == KG_CODEC_SNAPPY;
  bool text_codec = c->codec == KG_CODEC_NULL || c->codec == KG_CODEC_GZIP || c->codec == KG_CODEC_ZSTD;
  if (key && is_avro(c) && !avro_codec)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s=%s: Avro files compress their blocks with null, deflate or snappy (the codecs of the Avro "
                   "spec); %s compresses text output",
                   origin_of(c->props, key), key, p->names[v->e], p->names[v->e]);
  if (key && !is_avro(c) && !text_codec)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s=%s: writer.output.format=%s is compressed with gzip or zstd (or null for none); %s is a "
                   "codec of Avro blocks",
                   origin_of(c->props, key), key, p->names[v->e], c->output_format, p->names[v->e]);
  c->file_ext = kg_xasprintf("%s%s", c->output_format,
                             c->codec == KG_CODEC_GZIP   ? ".gz"
                             : c->codec == KG_CODEC_ZSTD ? ".zst"
                                                         : "");
  return KG_OK;
}

/* Gobblin's level for Avro's deflate; for gzip, 3: on the bench's records, files 1% larger than gzip's own
 * default of 6, written about 1.3 times faster, which keeps a gzip pass-through near the uncompressed one. */
static char *default_deflate_level(const kg_config_t *c) { return kg_xstrdup(c->codec == KG_CODEC_GZIP ? "3" : "9"); }

static char *no_schema(const kg_config_t *c) {
  (void)c;
  return kg_xstrdup("");
}

/* The bytes of file PATH: a new string of *LEN bytes, or NULL with the reason in WHY. */
static char *read_file(const char *path, size_t *len, char *why, size_t why_size) {
  int error = 0;
  char *data = kg_read_file(path, len, &error);
  if (!data) snprintf(why, why_size, "%s", error > 0 ? strerror(error) : "read error");
  return data;
}

/* writer.avro.schema, or writer.avro.schema.file, read together: the schema text, checked by avro-c. avro-c
 * keeps its error text in one global buffer: it is read right after the failing call, on the main thread. */
static int set_avro_schema(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                           char *errbuf) {
  const kg_property_t *file_row = kg_config_property("writer.avro.schema.file");
  const char *file = kg_props_get(c->props, file_row->name);
  const char *given = key ? key : file ? file_row->name : NULL;
  if (key && file) {
    free(v->s);
    return kg_fail(errbuf, KG_EINVAL, "%s: properties %s and %s are both set; set one of them",
                   origin_of(c->props, file_row->name), p->name, file_row->name);
  }
  bool csv = is_csv(c) && given; /* a record schema gives the CSV writer its columns */
  if (!is_avro(c) && !csv) {
    free(v->s);
    if (!given) return KG_OK;
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s is read by the Avro writer, and by the CSV writer for its columns, and writer.output.format "
                   "is %s",
                   origin_of(c->props, given), given, c->output_format);
  }
  if (!given) {
    free(v->s);
    if (c->avro_framing != KG_FRAMING_NONE) return KG_OK; /* each topic's latest schema, from the registry */
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: writer.output.format=avro needs the records' Avro schema: set writer.avro.schema (its JSON "
                   "text; `schema` in a job.lua) or writer.avro.schema.file (a file holding it), or read Avro records "
                   "from a schema registry (kafka.deserializer.type=CONFLUENT_AVRO)",
                   c->job_file);
  }
  size_t len = strlen(v->s);
  char *path = NULL;
  if (!key) {
    free(v->s);
    kg_property_value_t pv;
    int rc = kg_property_parse(file_row, file_row->name, origin_of(c->props, file_row->name), file, NULL, &pv, errbuf);
    if (rc) return rc;
    path = pv.s;
    char why[256];
    v->s = read_file(path, &len, why, sizeof why);
    if (!v->s) {
      rc = kg_fail(errbuf, KG_EINVAL, "%s: %s=%s: cannot read %s: %s", origin_of(c->props, file_row->name),
                   file_row->name, file, path, why);
      free(path);
      return rc;
    }
  }
  c->avro_schema = v->s;
  c->avro_schema_len = len;
  avro_schema_t schema = NULL;
  if (avro_schema_from_json_length(c->avro_schema, len, &schema)) {
    const char *reason = avro_strerror();
    int rc = path
                 ? kg_fail(errbuf, KG_EINVAL, "%s: %s=%s: invalid Avro schema in %s: %s",
                           origin_of(c->props, file_row->name), file_row->name, file, path, reason)
                 : kg_fail(errbuf, KG_EINVAL, "%s: %s: invalid Avro schema: %s", origin_of(c->props, key), key, reason);
    free(path);
    return rc;
  }
  avro_schema_decref(schema);
  int rc = csv ? csv_columns_of_schema(c, path ? file_row->name : key, errbuf) : KG_OK;
  free(path);
  if (csv) { /* the text was for the columns: the records are not Avro */
    free(c->avro_schema);
    c->avro_schema = NULL;
    c->avro_schema_len = 0;
  }
  return rc;
}

/* Adds column NAME (N bytes) to the CSV columns; KG_EINVAL naming WHAT (the property and its origin) for an empty
 * name or one given twice. */
static int add_column(kg_config_t *c, const char *name, size_t n, const char *what, char *errbuf) {
  if (!n) return kg_fail(errbuf, KG_EINVAL, "%s: a column name is empty", what);
  for (size_t i = 0; i < c->csv.ncolumns; i++)
    if (strlen(c->csv.columns[i]) == n && !memcmp(c->csv.columns[i], name, n))
      return kg_fail(errbuf, KG_EINVAL, "%s: column %.*s is given twice", what, (int)n, name);
  c->csv.columns = kg_xrealloc(c->csv.columns, (c->csv.ncolumns + 1) * sizeof *c->csv.columns);
  c->csv.columns[c->csv.ncolumns++] = kg_xstrndup(name, n);
  return KG_OK;
}

/* The CSV columns from the record schema in c->avro_schema, which KEY set: its fields' names, in order. */
static int csv_columns_of_schema(kg_config_t *c, const char *key, char *errbuf) {
  char what[512];
  snprintf(what, sizeof what, "%s: %s (the columns of writer.output.format=csv)", origin_of(c->props, key), key);
  kg_json_t *schema = NULL;
  char jerr[KG_ERRLEN];
  if (kg_json_parse(c->avro_schema, c->avro_schema_len, key, &schema, jerr))
    return kg_fail(errbuf, KG_EINVAL, "%s: %s", what, jerr);
  const kg_json_t *type = kg_json_get(schema, "type"), *fields = kg_json_get(schema, "fields");
  int rc = KG_OK;
  if (!type || type->type != KG_JSON_STRING || strcmp(type->string, "record") || !fields ||
      fields->type != KG_JSON_ARRAY || !fields->count)
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: the schema is not a record with fields, whose names would be the columns; set "
                 "writer.csv.columns instead",
                 what);
  for (size_t i = 0; !rc && i < fields->count; i++) {
    const kg_json_t *name = kg_json_get(&fields->items[i], "name");
    rc = name && name->type == KG_JSON_STRING ? add_column(c, name->string, name->length, what, errbuf)
                                              : kg_fail(errbuf, KG_EINVAL, "%s: field %zu has no name", what, i + 1);
  }
  kg_json_free(schema);
  return rc;
}

/* The value of part-of row NAME of the CSV writer: the job's, or the row's default, parsed. */
static int csv_row(const kg_config_t *c, const char *name, kg_property_value_t *out, char *errbuf) {
  const kg_property_t *row = kg_config_property(name);
  const char *given = kg_props_get(c->props, name);
  return kg_property_parse(row, name, origin_of(c->props, name), given ? given : row->def, NULL, out, errbuf);
}

/* writer.csv.columns and its writer.csv.* rows, for writer.output.format=csv: the columns (given, or the fields
 * of writer.avro.schema, which set_avro_schema has read), the header, the delimiter, the line end and what a field
 * that is no column does. Without csv output the rows are refused: they would change nothing. A csv job whose
 * columns cannot be known is refused too, as are the simple writer's framing properties, which CSV lines do not
 * take. */
static int set_csv(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf) {
  static const char *const rows[] = {"writer.csv.columns", "writer.csv.header", "writer.csv.delimiter",
                                     "writer.csv.line.end", "writer.csv.extra.fields"};
  char *list = v->s;
  int rc = KG_OK;
  if (!is_csv(c)) {
    for (size_t i = 0; !rc && i < sizeof rows / sizeof rows[0]; i++)
      if (kg_props_get(c->props, rows[i]))
        rc = kg_fail(errbuf, KG_EINVAL, "%s: %s is read by the CSV writer only, and writer.output.format is %s",
                     origin_of(c->props, rows[i]), rows[i], c->output_format);
    free(list);
    return rc;
  }
  if (key && *list && c->csv.ncolumns)
    rc = kg_fail(errbuf, KG_EINVAL, "%s: %s and writer.avro.schema both give the CSV columns; set one of them",
                 origin_of(c->props, key), p->name);
  char what[512];
  snprintf(what, sizeof what, "%s: %s=%s", origin_of(c->props, key ? key : p->name), p->name, list);
  for (const char *s = list; !rc && key && *list;) {
    size_t n = strcspn(s, ",");
    const char *b = s, *e = s + n;
    while (b < e && (*b == ' ' || *b == '	'))
      b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '	'))
      e--;
    rc = add_column(c, b, (size_t)(e - b), what, errbuf);
    if (!s[n]) break;
    s += n + 1;
  }
  free(list);
  if (!rc && !c->csv.ncolumns)
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: writer.output.format=csv needs its columns: set writer.csv.columns (as id,name,ts) or "
                 "writer.avro.schema (`schema` in a job.lua: a record schema, whose fields are the columns)",
                 c->job_file);
  kg_property_value_t header, delimiter, line_end, extra;
  if (!rc) rc = csv_row(c, "writer.csv.header", &header, errbuf);
  if (!rc) rc = csv_row(c, "writer.csv.line.end", &line_end, errbuf);
  if (!rc) rc = csv_row(c, "writer.csv.extra.fields", &extra, errbuf);
  if (!rc) rc = csv_row(c, "writer.csv.delimiter", &delimiter, errbuf);
  if (rc) return rc;
  c->csv.header = header.b;
  c->csv.crlf = line_end.e == 1;
  c->csv.ignore_extra = extra.e == 1;
  const char *d = delimiter.s;
  if (strlen(d) != 1 || *d == '"' || *d == '\r' || *d == '\n')
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: writer.csv.delimiter must be one character other than a double quote, CR or LF (a tab is \\t "
                 "in a .pull file)",
                 origin_of(c->props, "writer.csv.delimiter"));
  c->csv.delimiter = *d;
  free(delimiter.s);
  if (rc) return rc;
  /* The simple writer's framing: a CSV line ends as writer.csv.line.end says, and has no size before it. */
  if (c->prepend_size)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: simple.writer.prepend.size=true frames the simple writer's records; CSV lines have no size "
                   "before them",
                   origin_of(c->props, "simple.writer.prepend.size"));
  const char *given = kg_props_get(c->props, "simple.writer.delimiter");
  if (given && strcmp(given, c->csv.crlf ? "\r\n" : "\n"))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: simple.writer.delimiter is the simple writer's; a CSV line ends as writer.csv.line.end (lf or "
                   "crlf) says",
                   origin_of(c->props, "simple.writer.delimiter"));
  return KG_OK;
}

static int set_delimiter(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                         char *errbuf) {
  (void)p, (void)key, (void)errbuf;
  c->delimiter = v->s;
  c->delimiter_len = strlen(v->s);
  return KG_OK;
}

/* Given at all, the limit bounds every script failure; not given, converter and decode failures differ. */
static int set_skip_errors(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                           char *errbuf) {
  (void)p, (void)key, (void)errbuf;
  c->skip_error_limit = v->i;
  c->skip_error_limit_set = true;
  return KG_OK;
}

/* Reads a string of at most SIZE - 1 bytes into BUF with the blanks around it removed. */
static char *trimmed(const char *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", value);
  return kg_strtrim(buf);
}

/* Makes PATH absolute against the current directory; returns a new string. */
static char *absolute(const char *path) {
  if (path[0] == '/') return kg_xstrdup(path);
  if (!strncmp(path, "file://", 7)) return absolute(path + 7);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return kg_xstrdup(path);
  return kg_xasprintf("%s/%s", cwd, path);
}

/* The class name's last dotted component, so that gobblin.x.Foo and org.apache.gobblin.x.Foo both match. */
static const char *simple_name(const char *cls) {
  const char *dot = strrchr(cls, '.');
  return dot ? dot + 1 : cls;
}

/* The class names the registry's API; the row's parse has checked it is one of REGISTRIES. */
static int set_registry_class(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                              char *errbuf) {
  (void)v, (void)errbuf;
  char tmp[256];
  const char *name = simple_name(trimmed(kg_props_get(c->props, key), tmp, sizeof tmp));
  for (int i = 0; p->names[i]; i++)
    if (!strcmp(name, p->names[i])) c->registry_kind = i ? KG_REGISTRY_LINKEDIN : KG_REGISTRY_CONFLUENT;
  return KG_OK;
}

/* metrics.reporting.prometheus.file: empty for none, else made absolute; a name ending in / is refused. */
static int set_prom_file(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                         char *errbuf) {
  (void)p;
  char *value = v->s;
  size_t n = strlen(value);
  if (n && value[n - 1] == '/') {
    kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s names a folder: give the file, such as %skingest.prom",
            origin_of(c->props, key), key, value, value);
    free(value);
    return KG_EINVAL;
  }
  c->prom_file = n ? absolute(value) : kg_xstrdup("");
  free(value);
  return KG_OK;
}

/* Why ENTRY (LEN bytes) of kafka.brokers is not [protocol://]host[:port], or NULL when it is. */
static const char *broker_entry_error(const char *entry, size_t len) {
  static const char *const protocols[] = {"plaintext://", "ssl://", "sasl_plaintext://", "sasl_ssl://"};
  const char *sep = memmem(entry, len, "://", 3);
  if (sep) {
    bool known = false;
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0] && !known; i++)
      known =
          (size_t)(sep + 3 - entry) == strlen(protocols[i]) && !strncasecmp(entry, protocols[i], strlen(protocols[i]));
    if (!known) return "unknown protocol: expected PLAINTEXT://, SSL://, SASL_PLAINTEXT:// or SASL_SSL://";
    len -= (size_t)(sep + 3 - entry);
    entry = sep + 3;
  }
  const char *end = entry + len, *port = NULL, *host_end;
  if (len && entry[0] == '[') {
    const char *close = memchr(entry, ']', len);
    if (!close || close == entry + 1) return "an IPv6 address needs its closing bracket: [::1]:9092";
    bool zone = false; /* after %: an interface name, as fe80::1%eth0 */
    for (const char *q = entry + 1; q < close; q++) {
      zone |= *q == '%';
      if (!strchr("0123456789abcdefABCDEF:.%", *q) && !(zone && (isalnum((unsigned char)*q) || *q == '_' || *q == '-')))
        return "not an IPv6 address inside the brackets";
    }
    host_end = close + 1;
    if (host_end < end && *host_end != ':') return "expected :port after the IPv6 address";
    if (host_end < end) port = host_end + 1;
  } else {
    const char *colon = memchr(entry, ':', len);
    if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
      return "an IPv6 address goes in brackets, with the port after them: [::1]:9092";
    host_end = colon ? colon : end;
    if (host_end == entry) return "no host before the port";
    for (const char *q = entry; q < host_end; q++)
      if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '-' ||
            *q == '.' || *q == '_'))
        return "a host name has letters, digits, '-', '.' and '_' only";
    if (colon) port = colon + 1;
  }
  if (port) {
    if (port == end) return "no port after the colon";
    long value = 0;
    for (const char *q = port; q < end; q++) {
      if (*q < '0' || *q > '9') return "invalid port: expected a number from 1 to 65535";
      if ((value = value * 10 + (*q - '0')) > 65535) break;
    }
    if (value < 1 || value > 65535) return "invalid port: expected a number from 1 to 65535";
  }
  return NULL;
}

/* kafka.brokers: every comma-separated entry [protocol://]host[:port], spaces around it allowed (librdkafka reads a
 * bad port such as 9092x as 9092, and a run would then wait for a broker that was never meant). */
static int set_brokers(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf) {
  (void)p;
  char *value = v->s;
  size_t entries = 0;
  for (const char *e = value; *e;) {
    e += strspn(e, ", \t");
    if (!*e) break;
    size_t len = strcspn(e, ",");
    while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
      len--;
    const char *why = broker_entry_error(e, len);
    if (why) {
      kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: entry '%.*s' is not host:port: %s", origin_of(c->props, key), key,
              value, (int)len, e, why);
      free(value);
      return KG_EINVAL;
    }
    entries++;
    e += len;
  }
  if (!entries) {
    kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s names no broker: expected a comma-separated host:port list",
            origin_of(c->props, key), key, value);
    free(value);
    return KG_EINVAL;
  }
  c->brokers = value;
  return KG_OK;
}

/* metrics.reporting.prometheus.pushgateway.url: empty for none, else an http:// or https:// URL (its trailing / left
 * off, so that the push path can follow it). */
static int set_pushgateway_url(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                               char *errbuf) {
  (void)p;
  char *value = v->s;
  const char *url = kg_strtrim(value);
  if (*url && strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8)) {
    kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: expected the Pushgateway's http:// or https:// URL",
            origin_of(c->props, key), key, url);
    free(value);
    return KG_EINVAL;
  }
  size_t n = strlen(url);
  while (n && url[n - 1] == '/')
    n--;
  c->pushgateway_url = kg_xasprintf("%.*s", (int)n, url);
  free(value);
  return KG_OK;
}

/* source.class, with kafka.deserializer.type and kafka.schema.registry.class (read before it): what the payloads
 * hold, and the registry API that serves their schemas. The two Avro framings both start with byte 0, so a job
 * that mixes the properties of one with those of the other is refused rather than read one way. */
static int set_source(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v, char *errbuf) {
  (void)p, (void)v;
  char tmp[256], tmp2[256];
  const char *source = simple_name(trimmed(key ? kg_props_get(c->props, key) : p->def, tmp, sizeof tmp));
  const char *rkey = "kafka.schema.registry.class";
  const char *rclass = kg_props_get(c->props, rkey);
  const char *rname = rclass ? simple_name(trimmed(rclass, tmp2, sizeof tmp2)) : NULL;
  const char *where = origin_of(c->props, key ? key : "kafka.deserializer.type");
  c->avro_framing = KG_FRAMING_NONE;
  if (!strcmp(source, "KafkaAvroSource")) {
    if (c->deserializer == KG_DESERIALIZER_CONFLUENT_AVRO)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: source.class=%s reads LinkedIn's framing (a 16-byte MD5 schema id), and "
                     "kafka.deserializer.type=CONFLUENT_AVRO Confluent's (a 4-byte id): keep the one the topic's "
                     "records are written in",
                     where, source);
    if (rname && c->registry_kind != KG_REGISTRY_LINKEDIN)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: source.class=%s reads LinkedIn's framing, whose schemas come from a KafkaAvroSchemaRegistry, "
                     "but %s=%s",
                     origin_of(c->props, rkey), source, rkey, rclass);
    c->registry_kind = KG_REGISTRY_LINKEDIN;
    c->avro_framing = KG_FRAMING_LINKEDIN;
  } else if (c->deserializer == KG_DESERIALIZER_CONFLUENT_AVRO) {
    if (c->registry_kind != KG_REGISTRY_CONFLUENT)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: kafka.deserializer.type=CONFLUENT_AVRO reads Confluent's framing (a 4-byte schema id) with "
                     "schemas from a ConfluentKafkaSchemaRegistry, but %s=%s; for LinkedIn's framing (a 16-byte MD5 "
                     "id) set source.class=KafkaAvroSource",
                     origin_of(c->props, rkey), rkey, rclass);
    c->avro_framing = KG_FRAMING_CONFLUENT;
  }
  if (c->avro_framing != KG_FRAMING_NONE && !*c->registry_url)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s needs kafka.schema.registry.url, the registry that serves the records' "
                   "schemas",
                   where,
                   c->avro_framing == KG_FRAMING_LINKEDIN ? "source.class=KafkaAvroSource"
                                                          : "kafka.deserializer.type=CONFLUENT_AVRO");
  return KG_OK;
}

/* The value of part-of row NAME of the partitioner: the job's, or the row's default. */
static const char *partition_value(const kg_config_t *c, const char *name) {
  const char *v = kg_props_get(c->props, name);
  return v ? v : kg_config_property(name)->def;
}

/* writer.partitioner.class and its writer.partition.* rows: a partitioner made once, here (it reads the time zone
 * through the C library's TZ, before any thread starts). Its rows without the class are refused: they would
 * change nothing. */
static int set_partitioner(kg_config_t *c, const kg_property_t *p, const char *key, kg_property_value_t *v,
                           char *errbuf) {
  static const char *const rows[] = {"writer.partition.pattern", "writer.partition.granularity",
                                     "writer.partition.timezone", "writer.partition.prefix", "writer.partition.suffix"};
  char tmp[256];
  const char *cls = simple_name(trimmed(v->s, tmp, sizeof tmp));
  bool none = !*cls;
  free(v->s);
  if (none) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
      if (kg_props_get(c->props, rows[i]))
        return kg_fail(errbuf, KG_EINVAL,
                       "%s: %s is read by writer.partitioner.class=TimeBasedWriterPartitioner, which the job does not "
                       "set",
                       origin_of(c->props, rows[i]), rows[i]);
    return KG_OK;
  }
  bool known = false;
  for (int i = 0; partitioners[i]; i++)
    known = known || !strcmp(cls, partitioners[i]);
  if (!known)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: unknown class '%s' for property %s: kingest provides TimeBasedWriterPartitioner (also named "
                   "TimeBasedAvroWriterPartitioner and TimeBasedJsonWriterPartitioner)",
                   origin_of(c->props, key), kg_props_get(c->props, key), key);
  const kg_property_t *grow = kg_config_property("writer.partition.granularity");
  kg_property_value_t g;
  const char *gkey = kg_props_get(c->props, grow->name) ? grow->name : NULL;
  int rc = kg_property_parse(grow, grow->name, origin_of(c->props, gkey ? gkey : key), partition_value(c, grow->name),
                             NULL, &g, errbuf);
  if (rc) return rc;
  const char *pattern = kg_props_get(c->props, "writer.partition.pattern");
  const char *where = origin_of(c->props, pattern ? "writer.partition.pattern" : key);
  if (pattern && !*pattern) return kg_fail(errbuf, KG_EINVAL, "%s: writer.partition.pattern is empty", where);
  char perr[KG_ERRLEN];
  rc =
      kg_partitioner_new(pattern ? pattern : kg_granularity_pattern((kg_granularity_t)g.e),
                         partition_value(c, "writer.partition.timezone"), partition_value(c, "writer.partition.prefix"),
                         partition_value(c, "writer.partition.suffix"), &c->partitioner, perr);
  if (rc) {
    const char *row = strstr(perr, "time zone") ? "writer.partition.timezone"
                      : strstr(perr, "prefix")  ? "writer.partition.prefix"
                                                : "writer.partition.pattern";
    return kg_fail(errbuf, rc, "%s: %s: %s", origin_of(c->props, kg_props_get(c->props, row) ? row : key), row, perr);
  }
  return KG_OK;
}

/* Gobblin properties kingest does not read. The first row that matches a key decides: a row with a VALUE
 * matches that value only (compared case-insensitively), a row without matches any. A row without INSTEAD is
 * harmless to ignore: it changes nothing in a standalone run's output or its meaning. A row with INSTEAD would
 * change the output or the meaning of a Gobblin run; INSTEAD says what kingest does instead, in a WARN (an
 * error with job.strict). Any other unknown key gets a generic WARN. */
#define KG_METRICS_INSTEAD                                                                                             \
  "metrics go to the metrics file (metrics.reporting.file.enabled) and to Prometheus "                                 \
  "(metrics.reporting.prometheus.file, metrics.reporting.prometheus.pushgateway.url)"
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
    {"writer.staging.dir", NULL, "staging files go under task.data.root.dir"},
    {"writer.output.dir", NULL, "task output goes under task.data.root.dir"},
    {"converter.classes", NULL,
     "records are written as the source gives them; converters are Lua functions (converters in a job.lua)"},
    {"fork.branches", NULL, "every record goes to one branch: one writer, one output"},
    {"fork.operator.class", NULL, "every record goes to one branch: one writer, one output"},
    {"qualitychecker.task.policies", NULL, "no quality check is made: every task's output is published"},
    {"qualitychecker.task.policy.types", NULL, "no quality check is made: every task's output is published"},
    {"qualitychecker.row.policies", NULL, "no quality check is made: every record is written"},
    {"qualitychecker.row.policy.types", NULL, "no quality check is made: every record is written"},
    {"data.publisher.replace.final.dir", NULL, "published files are added to the final folder; nothing is replaced"},
    {"extract.table.type", NULL, "the table type is APPEND_ONLY (writer.file.path.type=default ends in _append)"},
    {"metrics.reporting.jmx.enabled", NULL, KG_METRICS_INSTEAD},
    {"metrics.reporting.kafka.enabled", NULL, KG_METRICS_INSTEAD},
    {"metrics.reporting.graphite.enabled", NULL, KG_METRICS_INSTEAD},
    {"metrics.reporting.influxdb.enabled", NULL, KG_METRICS_INSTEAD},
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

/* A property of the table (by name or alias) within two edits of NAME (a likely typo), or NULL; with
 * STANDALONE_ONLY, only those a standalone run reads. One that differs only in case is the likeliest. */
static const char *nearest_property(const char *name, bool standalone_only) {
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < sizeof properties / sizeof properties[0]; i++) {
    const kg_property_t *p = &properties[i];
    if (strchr(p->name, '*') || (standalone_only && p->mode == KG_MODE_MAPREDUCE)) continue;
    for (int k = 0; k < 2; k++) {
      const char *candidate = k ? p->alias : p->name;
      if (!candidate) continue;
      if (!strcasecmp(name, candidate)) return candidate;
      size_t d = kg_edit_distance(name, candidate, 2);
      if (d < best_d) {
        best_d = d;
        best = candidate;
      }
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

int kg_property_parse(const kg_property_t *p, const char *key, const char *origin, const char *value,
                      const char *work_dir, kg_property_value_t *out, char *errbuf) {
  char tmp[512];
  char *end;
  memset(out, 0, sizeof *out);
  switch (p->type) {
  case KG_PROP_STRING: out->s = kg_xstrdup(value); return KG_OK;
  case KG_PROP_PATH:
    if (work_dir && !strncmp(value, "<work dir>", 10))
      out->s = kg_xasprintf("%s%s", work_dir, value + 10);
    else
      out->s = absolute(value);
    return KG_OK;
  case KG_PROP_BOOL:
    if (!kg_parse_bool(trimmed(value, tmp, 64), &out->b))
      return kg_fail(errbuf, KG_EINVAL, "%s: invalid value '%s' for property %s: allowed values are true, false",
                     origin, value, key);
    return KG_OK;
  case KG_PROP_INT:
    if (!kg_parse_int64(trimmed(value, tmp, 64), &out->i) || out->i < p->min || out->i > p->max)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a whole number from %lld to %lld", origin, value,
                     key, (long long)p->min, (long long)p->max);
    return KG_OK;
  case KG_PROP_DOUBLE:
    out->d = strtod(value, &end);
    while (*end == ' ' || *end == '\t')
      end++;
    if (end == value || *end || !(out->d >= p->dmin && out->d <= p->dmax))
      return kg_fail(errbuf, KG_EINVAL, "%s: invalid value '%s' for property %s: expected a number from %g to %g",
                     origin, value, key, p->dmin, p->dmax);
    return KG_OK;
  case KG_PROP_ENUM:
    out->e = kg_config_parse_enum(key, origin, trimmed(value, tmp, 256), p->names, errbuf);
    return out->e < 0 ? KG_EINVAL : KG_OK;
  case KG_PROP_CLASS: {
    const char *name = simple_name(trimmed(value, tmp, sizeof tmp));
    for (int i = 0; p->names[i]; i++)
      if (!strcmp(name, p->names[i])) return KG_OK;
    char list[256] = "";
    for (int i = 0; p->names[i]; i++) {
      strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
      strncat(list, p->names[i], sizeof list - strlen(list) - 1);
    }
    return kg_fail(errbuf, KG_EINVAL, "%s: unknown class '%s' for property %s: kingest provides %s", origin, value, key,
                   list);
  }
  case KG_PROP_FS_URI: {
    if (!*value || !strncmp(value, "file:", 5)) return KG_OK;
    if (!strcmp(p->name, "state.store.fs.uri"))
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: property %s=%s: the state store is a local SQLite database (file:///); the output may go to "
                     "HDFS (writer.fs.uri)",
                     origin, key, value);
    /* The backend's own check of the URI (no request is made). */
    kg_fs_t *fs = NULL;
    char why[KG_ERRLEN];
    int rc = kg_fs_open(value, key, &fs, why);
    kg_fs_close(fs);
    if (rc) return kg_fail(errbuf, rc, "%s: %s", origin, why);
    return KG_OK;
  }
  }
  return kg_fail(errbuf, KG_EINVAL, "%s: property %s has no type", origin, key);
}

/* Stores V in the field of P (a string without a field is freed). */
static void store(kg_config_t *c, const kg_property_t *p, kg_property_value_t *v) {
  char *field = (char *)c + p->offset;
  int n;
  switch (p->type) {
  case KG_PROP_STRING:
  case KG_PROP_PATH:
    if (p->size == sizeof v->s)
      memcpy(field, &v->s, sizeof v->s);
    else
      free(v->s);
    break;
  case KG_PROP_BOOL:
    if (p->size == sizeof v->b) memcpy(field, &v->b, sizeof v->b);
    break;
  case KG_PROP_INT:
    n = (int)v->i; /* an int field's row has bounds within an int */
    if (p->size == sizeof n) memcpy(field, &n, sizeof n);
    if (p->size == sizeof v->i) memcpy(field, &v->i, sizeof v->i);
    break;
  case KG_PROP_DOUBLE:
    if (p->size == sizeof v->d) memcpy(field, &v->d, sizeof v->d);
    break;
  case KG_PROP_ENUM: /* an int, or an enum type of its size */
    if (p->size == sizeof v->e) memcpy(field, &v->e, sizeof v->e);
    break;
  case KG_PROP_CLASS:
  case KG_PROP_FS_URI: break;
  }
}

/* A property with two accepted names (the seed's dotted one and Gobblin's newer camel-case one): the
 * name in use, or NULL. Both set to different values is an error. */
static int either_name(const kg_props_t *p, const char *a, const char *b, const char **out, char *errbuf) {
  const char *va = kg_props_get(p, a), *vb = b ? kg_props_get(p, b) : NULL;
  *out = va ? a : vb ? b : NULL;
  if (va && vb && strcmp(va, vb))
    return kg_fail(errbuf, KG_EINVAL, "%s: properties %s=%s and %s=%s disagree; set one of them", origin_of(p, b), a,
                   va, b, vb);
  return KG_OK;
}

/* Reads row P into C: the job's value (by either name) or the default, parsed by the row's type, then stored in
 * its field or handed to its setter. */
static int read_property(kg_config_t *c, const kg_property_t *p, char *errbuf) {
  if (p->mode == KG_MODE_MAPREDUCE || p->part_of) return KG_OK;
  const char *key = NULL;
  int rc = either_name(c->props, p->name, p->alias, &key, errbuf);
  if (rc) return rc;
  const char *value = key ? kg_props_get(c->props, key) : NULL;
  if (p->required && (!value || !*value))
    return kg_fail(errbuf, KG_EINVAL, "%s: missing required property %s (%s)", c->job_file, p->name, p->required);
  if (value && !*value && p->empty_is_default) key = value = NULL;
  char *computed = NULL;
  if (!value) value = p->def ? p->def : p->computed ? (computed = p->computed(c)) : NULL;
  if (!value) return KG_OK; /* not given, no default */
  kg_property_value_t v;
  rc = kg_property_parse(p, key ? key : p->name, origin_of(c->props, key ? key : p->name), value,
                         key ? NULL : c->work_dir, &v, errbuf);
  free(computed);
  if (rc) return rc;
  if (p->set) return p->set(c, p, key, &v, errbuf);
  store(c, p, &v);
  return KG_OK;
}

char *kg_config_default_path(const char *name, const char *work_dir) {
  const kg_property_t *p = kg_config_property(name);
  if (!p || p->type != KG_PROP_PATH || !p->def || strncmp(p->def, "<work dir>", 10)) return NULL;
  kg_property_value_t v;
  char errbuf[KG_ERRLEN];
  return kg_property_parse(p, p->name, "default", p->def, work_dir, &v, errbuf) ? NULL : v.s;
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
static int set_limits(kg_config_t *c, const kg_property_t *enabled, const char *enabled_key, kg_property_value_t *v,
                      char *errbuf) {
  (void)enabled_key;
  const kg_props_t *p = c->props;
  c->limit_enabled = v->b;
  if (!c->limit_enabled) return KG_OK;
  const kg_property_t *type_row = kg_config_property("extract.limit.type");
  const char *type = kg_props_get(p, type_row->name);
  if (!type)
    return kg_fail(errbuf, KG_EINVAL, "%s: extract.limit.enabled=true needs extract.limit.type (time, rate or count)",
                   origin_of(p, enabled->name));
  if (!strcasecmp(type, "pool"))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: extract.limit.type=pool is not supported (Gobblin refuses it at run time too); use time, rate "
                   "or count",
                   origin_of(p, type_row->name));
  kg_property_value_t e;
  int rc = kg_property_parse(type_row, type_row->name, origin_of(p, type_row->name), type, NULL, &e, errbuf);
  if (rc) return rc;
  c->limit_type = (kg_limit_type_t)e.e;
  static const char *const rows[][2] = {{"extract.limit.time.limit", "extract.limit.time.limit.timeunit"},
                                        {"extract.limit.rate.limit", "extract.limit.rate.limit.timeunit"},
                                        {"extract.limit.count.limit", NULL}};
  const kg_property_t *limit = kg_config_property(rows[e.e][0]);
  const kg_property_t *unit_row = rows[e.e][1] ? kg_config_property(rows[e.e][1]) : NULL;
  const char *key = NULL, *unit_key = NULL;
  if ((rc = either_name(p, limit->name, limit->alias, &key, errbuf))) return rc;
  if (!key)
    return kg_fail(errbuf, KG_EINVAL, "%s: extract.limit.type=%s needs %s", origin_of(p, type_row->name), type,
                   limit->name);
  if (unit_row && (rc = either_name(p, unit_row->name, unit_row->alias, &unit_key, errbuf))) return rc;
  const char *unit = "second";
  double ms = unit_row ? unit_ms(unit_key ? kg_props_get(p, unit_key) : unit_row->def, &unit) : 1000;
  if (ms == 0)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: invalid value '%s' for property %s: allowed values are milliseconds, seconds, minutes, hours, "
                   "days",
                   origin_of(p, unit_key), kg_props_get(p, unit_key), unit_key);
  const char *value = kg_props_get(p, key);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s", value);
  if (c->limit_type == KG_LIMIT_COUNT) {
    if (!kg_parse_int64(kg_strtrim(tmp), &c->limit_count) || c->limit_count < limit->min)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a whole number of records, at least 1 (a lower "
                     "count lets no record through)",
                     origin_of(p, key), value, key);
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
                     origin_of(p, key), value, key, unit, KG_LIMIT_MIN_TIME_MS / ms, KG_LIMIT_MAX_TIME_MS / ms);
    c->limit_time_ms = (int64_t)(d * ms);
  } else {
    double per_s = d / ms * 1000.0;
    if (!number || !(per_s >= KG_LIMIT_MIN_RATE_PER_S && per_s <= KG_LIMIT_MAX_RATE_PER_S))
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a number of records per %s from %g to %g; a "
                     "rate limit must let at least 1 record per hour through",
                     origin_of(p, key), value, key, unit, KG_LIMIT_MIN_RATE_PER_S * ms / 1000.0,
                     KG_LIMIT_MAX_RATE_PER_S * ms / 1000.0);
    c->limit_rate_per_s = per_s;
  }
  return KG_OK;
}

const char *kg_config_writer_fs(const kg_config_t *c, const char **property) {
  const char *uri = kg_props_get(c->props, "writer.fs.uri");
  *property = "writer.fs.uri";
  if (!uri || !*uri) {
    uri = kg_props_get(c->props, "fs.uri");
    *property = "fs.uri";
  }
  return uri && *uri ? uri : "file:///";
}

void kg_config_destroy(kg_config_t *c) {
  if (!c) return;
  kg_props_destroy(c->props);
  char **strings[] = {&c->job_file,         &c->job_name,
                      &c->brokers,          &c->topic_whitelist,
                      &c->topic_blacklist,  &c->move_to_latest,
                      &c->work_dir,         &c->state_store_dir,
                      &c->task_data_root,   &c->final_dir,
                      &c->lock_dir,         &c->extract_namespace,
                      &c->output_format,    &c->file_ext,
                      &c->delimiter,        &c->metrics_dir,
                      &c->metrics_suffix,   &c->prom_file,
                      &c->pushgateway_url,  &c->mr_hadoop,
                      &c->mr_streaming_jar, &c->mr_kingest,
                      &c->mr_args,          &c->avro_schema,
                      &c->registry_url,     &c->registry_subject_suffix};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    free(*strings[i]);
  for (size_t i = 0; i < c->csv.ncolumns; i++)
    free(c->csv.columns[i]);
  free(c->csv.columns);
  kg_partitioner_free(c->partitioner);
  free(c);
}

/* Checks every key of P that kingest does not read. An error: a kafka.consumer.<name> that would change a
 * librdkafka setting the engine relies on; a near-miss of a property kingest reads (a typo: the run would go
 * on with the default); with job.strict=true, any key that would otherwise get a WARN. Otherwise logs one
 * WARN per unknown or unimplemented key, and one INFO line naming the MapReduce-only ones. */
static int check_keys(const kg_props_t *p, char *errbuf) {
  const kg_property_t *strict_row = kg_config_property("job.strict");
  const char *strict_value = kg_props_get(p, strict_row->name);
  kg_property_value_t strict;
  int rc = kg_property_parse(strict_row, strict_row->name, origin_of(p, strict_row->name),
                             strict_value ? strict_value : strict_row->def, NULL, &strict, errbuf);
  if (rc) return rc;
  kg_buf_t mr = {0}, typos = {0}, warned = {0};
  size_t nwarned = 0;
  for (size_t i = 0; i < kg_props_count(p) && rc == KG_OK; i++) {
    const char *key = kg_props_key_at(p, i), *value = kg_props_value_at(p, i);
    const char *near = NULL;
    const kg_property_t *known;
    char *consumer = NULL, *warning = NULL;
    int row;
    if (!strncmp(key, "kafka.consumer.", 15)) {
      for (size_t j = 0; j < sizeof engine_consumer_settings / sizeof engine_consumer_settings[0]; j++)
        if (!strcmp(key + 15, engine_consumer_settings[j].name))
          rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s cannot be set: %s", origin_of(p, key), key, value,
                       engine_consumer_settings[j].why);
    } else if ((known = kg_config_property(key))) {
      if (known->mode == KG_MODE_MAPREDUCE) kg_buf_appendf(&mr, "%s%s", mr.len ? ", " : "", key);
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
                             strict.b ? "" : " (ignored)", near);
    } else {
      warning = kg_xasprintf("%s: unknown property %s%s", origin_of(p, key), key, strict.b ? "" : " (ignored)");
    }
    if (warning && strict.b) {
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
  const char *launcher = kg_props_get(p, "launcher.type");
  if (rc == KG_OK && mr.len && !(launcher && !strcasecmp(launcher, "MAPREDUCE")))
    KG_INFO("Ignoring properties that only apply in MapReduce mode: %s", mr.data);
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
  size_t n = sizeof properties / sizeof properties[0];

  /* Keys first: a misspelt one would otherwise fail later as a missing property, or not at all. */
  if ((rc = check_keys(props, errbuf))) goto done;

  /* The job's identity (row 0, job.name), then the work dir that roots every default path, then the rest. */
  if ((rc = read_property(c, &properties[0], errbuf))) goto done;
  const char *wd = work_dir && *work_dir ? work_dir : getenv("GOBBLIN_WORK_DIR");
  if (!wd || !*wd) {
    rc = kg_fail(errbuf, KG_EINVAL, "no work dir: set GOBBLIN_WORK_DIR or pass --work-dir");
    goto done;
  }
  c->work_dir = absolute(wd);
  for (size_t i = 1; i < n && rc == KG_OK; i++)
    rc = read_property(c, &properties[i], errbuf);

done:
  if (rc) {
    kg_config_destroy(c);
    c = NULL;
  }
  *out = c;
  return rc;
}

/* Prints DOC without its Markdown: `code` as code, [text](#anchor) as text. */
static void print_plain(FILE *out, const char *doc) {
  for (const char *s = doc; *s; s++) {
    const char *close = *s == '[' ? strstr(s, "](") : NULL;
    const char *end = close ? strchr(close, ')') : NULL;
    if (end) {
      fprintf(out, "%.*s", (int)(close - s - 1), s + 1);
      s = end;
    } else if (*s != '`') {
      fputc(*s, out);
    }
  }
}

/* Prints a default value as text: control characters as C escapes (the delimiter's newline is \n). */
static void print_value(FILE *out, const char *value) {
  for (const char *s = value; *s; s++) {
    if (*s == '\n')
      fputs("\\n", out);
    else if (*s == '\t')
      fputs("\\t", out);
    else if ((unsigned char)*s < 32)
      fprintf(out, "\\x%02x", (unsigned char)*s);
    else
      fputc(*s, out);
  }
}

/* The bounds of a number row as a sentence, CODE quoting the numbers (Markdown) or not. */
static void print_range(FILE *out, const kg_property_t *p, const char *q) {
  if (p->type == KG_PROP_INT && p->max == INT64_MAX)
    fprintf(out, " At least %s%lld%s.", q, (long long)p->min, q);
  else if (p->type == KG_PROP_INT)
    fprintf(out, " From %s%lld%s to %s%lld%s.", q, (long long)p->min, q, q, (long long)p->max, q);
  else if (p->type == KG_PROP_DOUBLE && p->dmax > p->dmin)
    fprintf(out, " From %s%g%s to %s%g%s.", q, p->dmin, q, q, p->dmax, q);
}

/* A row's name as written in the docs: the keys under a ".*" row are kafka.consumer.<name>. */
static void print_name(FILE *out, const char *name, const char *q) {
  size_t len = strlen(name);
  if (len > 2 && !strcmp(name + len - 2, ".*"))
    fprintf(out, "%s%.*s.<name>%s", q, (int)(len - 2), name, q);
  else
    fprintf(out, "%s%s%s", q, name, q);
}

void kg_config_print_properties(FILE *out, bool markdown) {
  if (markdown) fputs("| Property | Default | Meaning |\n|---|---|---|\n", out);
  for (size_t i = 0; i < sizeof properties / sizeof properties[0]; i++) {
    const kg_property_t *p = &properties[i];
    const char *q = markdown ? "`" : "";
    if (markdown) {
      fputs("| ", out);
      print_name(out, p->name, q);
    } else {
      fputs(p->name, out);
    }
    if (p->alias) {
      fputs(" (also ", out);
      print_name(out, p->alias, q);
      fputs(")", out);
    }
    if (markdown) {
      fputs(" |", out);
      if (p->required) {
        fputs(" required", out);
      } else if (p->def && !*p->def) {
        fputs(" empty", out);
      } else if (p->def) {
        fputs(" `", out);
        print_value(out, p->def);
        fputs("`", out);
      } else if (p->def_doc) {
        fprintf(out, " %s", p->def_doc);
      }
      fprintf(out, " | %s%s", p->mode == KG_MODE_MAPREDUCE ? "MapReduce only (a standalone run ignores it): " : "",
              p->doc);
      print_range(out, p, q);
      fputs(" |\n", out);
    } else {
      fprintf(out, "%s\n    ", p->mode == KG_MODE_MAPREDUCE ? " (MapReduce only)" : "");
      print_plain(out, p->doc);
      print_range(out, p, q);
      fputs("\n    default: ", out);
      if (p->def)
        print_value(out, p->def);
      else
        fputs(p->def_doc && !p->required ? p->def_doc : "(none)", out);
      fputs("\n", out);
    }
  }
}
