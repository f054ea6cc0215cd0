/* test_props.c: the Gobblin properties reader and the job config built from it. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "kafka_source.h"
#include "log.h"
#include "avro_registry.h"
#include "report.h"
#include "writer.h"
#include "props.h"
#include "test.h"

static kg_props_t *parse(const char *text, int *rc, char *err) {
  kg_props_t *p = kg_props_new();
  *rc = kg_props_parse(p, text, strlen(text), "job.pull", err);
  return p;
}

static void test_syntax(void) {
  char err[KG_ERRLEN] = "";
  int rc;
  kg_props_t *p = parse("# comment\n! also a comment\n\n"
                        "a=1\n"
                        "b : two words \n"
                        "c three\n"
                        "  d=  spaced\n"
                        "e=line one \\\n    continued\n"
                        "f=tab\\there\n"
                        "g=\\u0041\\u00e9\n"
                        "key\\ with\\ space=x\n"
                        "h=\n"
                        "i\n"
                        "crlf=yes\r\n"
                        "a=override\n",
                        &rc, err);
  CHECK_INT(rc, KG_OK);
  CHECK_STR(kg_props_get(p, "a"), "override");
  CHECK_STR(kg_props_get(p, "b"), "two words ");
  CHECK_STR(kg_props_get(p, "c"), "three");
  CHECK_STR(kg_props_get(p, "d"), "spaced");
  CHECK_STR(kg_props_get(p, "e"), "line one continued");
  CHECK_STR(kg_props_get(p, "f"), "tab\there");
  CHECK_STR(kg_props_get(p, "g"), "A\xc3\xa9");
  CHECK_STR(kg_props_get(p, "key with space"), "x");
  CHECK_STR(kg_props_get(p, "h"), "");
  CHECK_STR(kg_props_get(p, "i"), "");
  CHECK_STR(kg_props_get(p, "crlf"), "yes");
  CHECK_STR(kg_props_origin(p, "e"), "job.pull:8");
  CHECK_STR(kg_props_key_at(p, 0), "a"); /* a set twice keeps its first place */
  kg_props_destroy(p);
}

static void test_substitution(void) {
  char err[KG_ERRLEN] = "";
  int rc;
  setenv("KG_TEST_DIR", "/data/work", 1);
  kg_props_t *p =
      parse("metrics.log.dir=${env:KG_TEST_DIR}/metrics\nname=job1\nout=${name}-${env:KG_TEST_DIR}\n", &rc, err);
  CHECK_INT(rc, KG_OK);
  CHECK_STR(kg_props_get(p, "metrics.log.dir"), "/data/work/metrics");
  CHECK_STR(kg_props_get(p, "out"), "job1-/data/work");
  kg_props_destroy(p);

  unsetenv("KG_TEST_UNSET");
  p = parse("a=1\n\nmetrics.log.dir=${env:KG_TEST_UNSET}/metrics\n", &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:3");
  CHECK_CONTAINS(err, "metrics.log.dir");
  CHECK_CONTAINS(err, "KG_TEST_UNSET");
  kg_props_destroy(p);

  p = parse("a=${b}\nb=${a}\n", &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  CHECK_CONTAINS(err, "cycle");
  kg_props_destroy(p);

  p = parse("a=${nope}\n", &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  CHECK_CONTAINS(err, "${nope}");
  kg_props_destroy(p);

  p = parse("a=\\u12\n", &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:1");
  kg_props_destroy(p);
}

static int config_from(const char *text, kg_config_t **c, char *err) {
  return kg_test_config(text, "/jobs/quick.pull", c, err);
}

static void test_config(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  CHECK_INT(config_from("kafka.brokers=localhost:9092\n", &c, err), KG_OK);
  if (c) {
    CHECK_STR(c->job_name, "quick");
    CHECK_INT(c->bootstrap, KG_BOOTSTRAP_LATEST);
    CHECK_INT(c->reset, KG_RESET_NEAREST);
    CHECK_INT(c->path_type, KG_PATH_DEFAULT);
    CHECK_STR(c->final_dir, "/tmp/kg-work/job-output");
    CHECK_STR(c->state_store_dir, "/tmp/kg-work/state-store");
    CHECK_STR(c->task_data_root, "/tmp/kg-work/task-data");
    CHECK_STR(kg_simple_options(c)->delimiter, "\n");
    CHECK(c->lock_enabled);
    CHECK_INT(c->max_mappers, 100);
  }
  kg_config_destroy(c);

  CHECK_INT(config_from("job.name=J\nkafka.brokers=b:1\nbootstrap.with.offset=EARLIEST\n"
                        "reset.on.offset.out.of.range=skip\nwriter.file.path.type=tablename\n"
                        "simple.writer.delimiter=|\nsimple.writer.prepend.size=true\nmr.job.max.mappers=4\n"
                        "data.publisher.final.dir=/out\njob.lock.enabled=false\n"
                        "source.class=org.apache.gobblin.source.extractor.extract.kafka.KafkaSimpleSource\n",
                        &c, err),
            KG_OK);
  if (c) {
    CHECK_STR(c->job_name, "J");
    CHECK_INT(c->bootstrap, KG_BOOTSTRAP_EARLIEST);
    CHECK_INT(c->reset, KG_RESET_SKIP);
    CHECK_INT(c->path_type, KG_PATH_TABLENAME);
    CHECK_STR(kg_simple_options(c)->delimiter, "|");
    CHECK(kg_simple_options(c)->prepend_size);
    CHECK_INT(c->max_mappers, 4);
    CHECK_STR(c->final_dir, "/out");
    CHECK(!c->lock_enabled);
  }
  kg_config_destroy(c);

  CHECK_INT(config_from("job.name=J\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "missing required property kafka.brokers");

  CHECK_INT(config_from("kafka.brokers=b:1\nbootstrap.with.offset=oldest\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:2");
  CHECK_CONTAINS(err, "'oldest'");
  CHECK_CONTAINS(err, "bootstrap.with.offset");
  CHECK_CONTAINS(err, "earliest, latest, skip");

  CHECK_INT(config_from("kafka.brokers=b:1\nreset.on.offset.out.of.range=closest\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "earliest, latest, nearest, skip");

  CHECK_INT(
      config_from("kafka.brokers=b:1\nsource.class=gobblin.source.extractor.extract.kafka.MyFancySource\n", &c, err),
      KG_EINVAL);
  CHECK_CONTAINS(err, "unknown class");
  CHECK_CONTAINS(err, "MyFancySource");
  CHECK_CONTAINS(err, "source.class");

  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.builder.class=gobblin.writer.OrcDataWriterBuilder\n", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "writer.builder.class");
  CHECK_CONTAINS(err, "SimpleDataWriterBuilder, AvroDataWriterBuilder, ParquetDataWriterBuilder");
  /* The Parquet builder's default format is parquet, which needs the records' Avro schema. */
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.builder.class=gobblin.writer.ParquetDataWriterBuilder\n", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "writer.output.format=parquet needs the records' Avro schema");

  CHECK_INT(config_from("kafka.brokers=b:1\nmr.job.max.mappers=zero\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "mr.job.max.mappers");

  CHECK_INT(config_from("kafka.brokers=b:1\njob.lock.enabled=maybe\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "true, false");

  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.fs.uri=hdfs://nn:9000\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "writer.fs.uri");

  /* MapReduce-only properties are accepted in standalone mode. */
  CHECK_INT(config_from("kafka.brokers=b:1\nmr.job.root.dir=/gobblin-kafka/working\nfs.uri=file:///\n", &c, err),
            KG_OK);
  kg_config_destroy(c);
}

/* Builds a config from TEXT with the log at LEVEL captured in LOG (LOGLEN bytes). */
static int config_logged(const char *text, kg_config_t **c, char *err, kg_log_level_t level, char *log, size_t loglen) {
  const char *path = "/tmp/kg-test-props.log";
  remove(path);
  kg_log_set_level(level);
  kg_log_set_file(path);
  int rc = config_from(text, c, err);
  kg_log_set_file(NULL);
  kg_log_set_level(KG_LOG_ERROR);
  log[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f) {
    log[fread(log, 1, loglen - 1, f)] = '\0';
    fclose(f);
  }
  remove(path);
  return rc;
}

/* A near-miss of a property kingest reads is an error naming every one, whatever job.strict says: the run
 * would otherwise go on with the default (topic.whitelist: every topic). */
/* kafka.brokers: every entry [protocol://]host[:port], checked when the job loads (librdkafka would read 9092x as
 * 9092). */
static void test_brokers(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  static const char *const good[] = {"localhost:9092",
                                     "localhost",
                                     "10.0.0.1:9092,10.0.0.2:9093",
                                     "a:1 , b:2 ",
                                     "[::1]:9092",
                                     "[fe80::1%eth0]:9092",
                                     "SASL_SSL://kafka-1.example.com:9093",
                                     "plaintext://k_1:65535",
                                     "a:1,"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "kafka.brokers=%s\n", good[i]);
    CHECK_INT(config_from(text, &c, err), KG_OK);
    if (c) CHECK_STR(kg_kafka_options(c)->brokers, good[i]);
    kg_config_destroy(c);
  }
  static const struct {
    const char *value, *why;
  } bad[] = {{"localhost:9092x", "entry 'localhost:9092x' is not host:port: invalid port"},
             {"a:1,localhost:0", "entry 'localhost:0' is not host:port: invalid port"},
             {"h:65536", "invalid port: expected a number from 1 to 65535"},
             {"h:", "no port after the colon"},
             {":9092", "no host before the port"},
             {"::1:9092", "an IPv6 address goes in brackets, with the port after them: [::1]:9092"},
             {"[::1:9092", "an IPv6 address needs its closing bracket"},
             {"[::1]9092", "expected :port after the IPv6 address"},
             {"[::g]:9092", "not an IPv6 address inside the brackets"},
             {"http://h:9092", "unknown protocol"},
             {"ho st:9092", "a host name has letters, digits"},
             {"h:9092/", "invalid port"},
             {" , ", "names no broker"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "kafka.brokers=%s\n", bad[i].value);
    CHECK_INT(config_from(text, &c, err), KG_EINVAL);
    CHECK_CONTAINS(err, "job.pull:1: property kafka.brokers=");
    CHECK_CONTAINS(err, bad[i].why);
    kg_config_destroy(c);
  }
}

static void test_typos(void) {
  char err[KG_ERRLEN] = "", log[4096];
  kg_config_t *c = NULL;
  CHECK_INT(config_logged("kafka.brokers=b:1\nkafka.broker=b:2\njob.nmae=x\nbootstrap.with.ofset=earliest\n"
                          "my.own.thing=2\n",
                          &c, err, KG_LOG_WARN, log, sizeof log),
            KG_EINVAL);
  CHECK(c == NULL);
  CHECK_STR(err, "job.pull:2: unknown property kafka.broker; did you mean kafka.brokers?; "
                 "job.pull:3: unknown property job.nmae; did you mean job.name?; "
                 "job.pull:4: unknown property bootstrap.with.ofset; did you mean bootstrap.with.offset?");

  CHECK_INT(config_from("kafka.brokers=b:1\ntopic.whitelst=events\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: unknown property topic.whitelst; did you mean topic.whitelist?");
  CHECK_INT(config_from("kafka.brokers=b:1\nextract.limit.countlimit=5\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: unknown property extract.limit.countlimit; did you mean extract.limit.countLimit?");
  CHECK_INT(config_from("kafka.brokers=b:1\njob.strict=false\nkafka.consumr.fetch.wait.max.ms=5\n", &c, err),
            KG_EINVAL);
  CHECK_STR(err, "job.pull:3: unknown property kafka.consumr.fetch.wait.max.ms; did you mean "
                 "kafka.consumer.fetch.wait.max.ms?");
  /* In the MapReduce namespaces too, a near-miss of a property a standalone run reads is an error; one of a
   * MapReduce-only property is not (the key is MapReduce-only either way). */
  CHECK_INT(config_from("kafka.brokers=b:1\nmr.job.max.maper=4\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: unknown property mr.job.max.maper; did you mean mr.job.max.mappers?");
  CHECK_INT(config_from("kafka.brokers=b:1\nmr.job.root.dirs=/w\nmapreduce.job.reduces=0\n", &c, err), KG_OK);
  kg_config_destroy(c);
  c = NULL;
  /* Without kafka.brokers, the typo is what the user needs to hear about. */
  CHECK_INT(config_from("kafka.broker=b:1\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:1: unknown property kafka.broker; did you mean kafka.brokers?");
}

/* Keys kingest does not read: harmless ones pass quietly, Gobblin features kingest lacks get a WARN saying
 * what it does instead, any other key a generic WARN; job.strict (or --strict, which sets it) makes all of
 * those one error. MapReduce-only keys keep their INFO line. */
static void test_unknown_keys(void) {
  char err[KG_ERRLEN] = "", log[8192];
  kg_config_t *c = NULL;
  const char *job = "kafka.brokers=b:1\n"
                    "job.runonce=true\n"
                    "job.disabled=false\n"
                    "metrics.reporting.jmx.enabled=false\n"
                    "gobblin.kafka.consumerClient.class=org.apache.gobblin.kafka.client.Kafka09ConsumerClient$Factory\n"
                    "writer.staging.dir=/tmp/staging\n"
                    "writer.output.dir=/tmp/out\n"
                    "converter.classes=gobblin.converter.avro.JsonIntermediateToAvroConverter\n"
                    "metrics.reporting.kafka.enabled=true\n"
                    "fork.branches=2\n"
                    "qualitychecker.task.policies=gobblin.policies.count.RowCountPolicy\n"
                    "metrics.reporting.graphite.enabled=true\n"
                    "job.schedule=0 0/5 * * * ?\n"
                    "data.publisher.replace.final.dir=true\n"
                    "gobblin.custom.setting=1\n"
                    "writer.staging.dirr=/tmp/staging\n"
                    "mr.job.root.dir=/gobblin/working\n";
  CHECK_INT(config_logged(job, &c, err, KG_LOG_INFO, log, sizeof log), KG_OK);
  kg_config_destroy(c);
  c = NULL;
  CHECK(strstr(log, "job.runonce") == NULL);
  CHECK(strstr(log, "job.disabled") == NULL);
  CHECK(strstr(log, "metrics.reporting.jmx.enabled") == NULL);
  CHECK(strstr(log, "gobblin.kafka.consumerClient.class") == NULL);
  CHECK_CONTAINS(log, "WARN job.pull:6: writer.staging.dir=/tmp/staging is not implemented: staging files go under "
                      "task.data.root.dir\n");
  CHECK_CONTAINS(log, "WARN job.pull:7: writer.output.dir=/tmp/out is not implemented: task output goes under "
                      "task.data.root.dir\n");
  CHECK_CONTAINS(log, "WARN job.pull:8: converter.classes=gobblin.converter.avro.JsonIntermediateToAvroConverter is "
                      "not implemented: records are written as the source gives them; converters are Lua functions "
                      "(converters in a job.lua)\n");
  CHECK_CONTAINS(log,
                 "WARN job.pull:9: metrics.reporting.kafka.enabled=true is not implemented: metrics go to the "
                 "metrics file (metrics.reporting.file.enabled) and to Prometheus (metrics.reporting.prometheus.file, "
                 "metrics.reporting.prometheus.pushgateway.url)\n");
  CHECK_CONTAINS(log, "WARN job.pull:10: fork.branches=2 is not implemented: every record goes to one branch: one "
                      "writer, one output\n");
  CHECK_CONTAINS(log, "WARN job.pull:11: qualitychecker.task.policies=gobblin.policies.count.RowCountPolicy is not "
                      "implemented: no quality check is made: every task's output is published\n");
  CHECK_CONTAINS(log, "WARN job.pull:12: metrics.reporting.graphite.enabled=true is not implemented: metrics go to "
                      "the metrics file (metrics.reporting.file.enabled) and to Prometheus "
                      "(metrics.reporting.prometheus.file, metrics.reporting.prometheus.pushgateway.url)\n");
  CHECK_CONTAINS(log, "WARN job.pull:13: job.schedule=0 0/5 * * * ? is not implemented: kingest runs the job once per "
                      "`kingest run`; schedule that with cron or a systemd timer\n");
  CHECK_CONTAINS(log, "WARN job.pull:14: data.publisher.replace.final.dir=true is not implemented: published files "
                      "are added to the final folder; nothing is replaced\n");
  CHECK_CONTAINS(log, "WARN job.pull:15: unknown property gobblin.custom.setting (ignored)\n");
  CHECK_CONTAINS(
      log, "WARN job.pull:16: unknown property writer.staging.dirr (ignored); did you mean writer.staging.dir?\n");
  CHECK_CONTAINS(log, "INFO Ignoring properties that only apply in MapReduce mode: mr.job.root.dir\n");
  size_t warns = 0;
  for (const char *s = log; (s = strstr(s, " WARN ")); s++)
    warns++;
  CHECK_INT(warns, 11);

  /* job.strict=true: the same keys are one error, naming each; nothing is logged at WARN. */
  char *strict = kg_xasprintf("%sjob.strict=true\n", job);
  CHECK_INT(config_logged(strict, &c, err, KG_LOG_INFO, log, sizeof log), KG_EINVAL);
  free(strict);
  CHECK(c == NULL);
  CHECK_STR(err,
            "job.pull:18: job.strict=true refuses 11 properties that kingest does not know or implement (each is "
            "logged above): job.pull:6: writer.staging.dir, job.pull:7: writer.output.dir, job.pull:8: "
            "converter.classes, job.pull:9: metrics.reporting.kafka.enabled, job.pull:10: fork.branches, job.pull:11: "
            "qualitychecker.task.policies, job.pull:12: metrics.reporting.graphite.enabled, job.pull:13: job.schedule, "
            "job.pull:14: data.publisher.replace.final.dir, job.pull:15: gobblin.custom.setting, job.pull:16: "
            "writer.staging.dirr");
  CHECK_CONTAINS(log, "ERROR job.pull:6: writer.staging.dir=/tmp/staging is not implemented: staging files go under "
                      "task.data.root.dir\n");
  CHECK_CONTAINS(log, "ERROR job.pull:16: unknown property writer.staging.dirr; did you mean writer.staging.dir?\n");
  CHECK_CONTAINS(log, "ERROR job.pull:15: unknown property gobblin.custom.setting\n");
  CHECK(strstr(log, " WARN ") == NULL);

  CHECK_INT(config_from("kafka.brokers=b:1\njob.strict=true\nmy.own.thing=2\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: job.strict=true refuses 1 property that kingest does not know or implement (each is "
                 "logged above): job.pull:3: my.own.thing");

  /* The values that are harmless are the ones kingest acts on anyway; others are not implemented. */
  CHECK_INT(config_logged("kafka.brokers=b:1\njob.disabled=TRUE\nmetrics.reporting.jmx.enabled=true\n"
                          "job.runonce=false\nextract.table.type=snapshot_only\nextract.table.type2=x\n",
                          &c, err, KG_LOG_WARN, log, sizeof log),
            KG_OK);
  kg_config_destroy(c);
  c = NULL;
  CHECK_CONTAINS(log, "WARN job.pull:2: job.disabled=TRUE is not implemented: kingest runs the job whenever `kingest "
                      "run` starts it\n");
  CHECK_CONTAINS(log,
                 "WARN job.pull:3: metrics.reporting.jmx.enabled=true is not implemented: metrics go to the "
                 "metrics file (metrics.reporting.file.enabled) and to Prometheus (metrics.reporting.prometheus.file, "
                 "metrics.reporting.prometheus.pushgateway.url)\n");
  CHECK_CONTAINS(log, "WARN job.pull:4: job.runonce=false is not implemented: kingest runs the job once per `kingest "
                      "run`; schedule that with cron or a systemd timer\n");
  CHECK_CONTAINS(log, "WARN job.pull:5: extract.table.type=snapshot_only is not implemented: the table type is "
                      "APPEND_ONLY (writer.file.path.type=default ends in _append)\n");
  CHECK_CONTAINS(log, "WARN job.pull:6: unknown property extract.table.type2 (ignored); did you mean "
                      "extract.table.type?\n");
  CHECK_INT(config_from("kafka.brokers=b:1\njob.strict=yes please\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: invalid value 'yes please' for property job.strict: allowed values are true, false");

  /* Strict with nothing to refuse: harmless and MapReduce-only keys pass. */
  CHECK_INT(config_logged("kafka.brokers=b:1\njob.strict=true\njob.runonce=true\nmapreduce.map.memory.mb=2048\n"
                          "kafka.consumer.fetch.wait.max.ms=50\n",
                          &c, err, KG_LOG_INFO, log, sizeof log),
            KG_OK);
  CHECK(strstr(log, " WARN ") == NULL);
  CHECK_CONTAINS(log, "INFO Ignoring properties that only apply in MapReduce mode: mapreduce.map.memory.mb\n");
  kg_config_destroy(c);
}

/* kafka.consumer.<name> may tune librdkafka, not change what the engine relies on. */
static void test_consumer_keys(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  static const struct {
    const char *name, *value, *why;
  } refused[] = {
      {"enable.partition.eof", "false", "kingest relies on enable.partition.eof=true to see where each partition ends"},
      {"auto.offset.reset", "earliest",
       "kingest decides where an out-of-range offset goes on: use reset.on.offset.out.of.range"},
      {"enable.auto.commit", "true", "kingest stores offsets in its state database when a run commits"},
      {"auto.commit.enable", "true", "kingest stores offsets in its state database when a run commits"},
      {"enable.auto.offset.store", "true", "kingest stores offsets in its state database when a run commits"},
      {"offset.store.method", "broker", "kingest stores offsets in its state database when a run commits"},
      {"bootstrap.servers", "other:9092", "use kafka.brokers"},
      {"metadata.broker.list", "other:9092", "use kafka.brokers"},
      {"group.id", "mygroup", "kingest joins no consumer group"},
      {"group.instance.id", "i1", "kingest joins no consumer group"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    char *text = kg_xasprintf("kafka.brokers=b:1\nkafka.consumer.%s=%s\n", refused[i].name, refused[i].value);
    CHECK_INT(config_from(text, &c, err), KG_EINVAL);
    char *want = kg_xasprintf("job.pull:2: property kafka.consumer.%s=%s cannot be set: %s", refused[i].name,
                              refused[i].value, refused[i].why);
    CHECK_CONTAINS(err, want);
    free(want);
    free(text);
  }
  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.consumer.enable.partition.eof=false\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: property kafka.consumer.enable.partition.eof=false cannot be set: kingest relies on "
                 "enable.partition.eof=true to see where each partition ends (without it a run stops short of the "
                 "end); remove it");
  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.consumer.auto.offset.reset=earliest\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: property kafka.consumer.auto.offset.reset=earliest cannot be set: kingest decides where "
                 "an out-of-range offset goes on: use reset.on.offset.out.of.range (and bootstrap.with.offset for "
                 "partitions without a stored offset)");

  /* Tuning and security settings pass. */
  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.consumer.fetch.wait.max.ms=50\nkafka.consumer.fetch.min.bytes=1\n"
                        "kafka.consumer.isolation.level=read_committed\nkafka.consumer.queued.min.messages=1000\n"
                        "kafka.consumer.queued.max.messages.kbytes=1024\nkafka.consumer.security.protocol=SSL\n"
                        "kafka.consumer.debug=fetch\nkafka.consumer.client.id=me\njob.strict=true\n",
                        &c, err),
            KG_OK);
  kg_config_destroy(c);
}

/* Extract limits that let no record through are refused, naming the property, the value and the range. */
static void test_limits(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  const char *count = "kafka.brokers=b:1\nextract.limit.enabled=true\nextract.limit.type=count\n";
  const char *time = "kafka.brokers=b:1\nextract.limit.enabled=true\nextract.limit.type=time\n";
  const char *rate = "kafka.brokers=b:1\nextract.limit.enabled=true\nextract.limit.type=rate\n";
  static const struct {
    const char *text, *error;
  } bad[] = {
      {"extract.limit.count.limit=0.5\n",
       "job.pull:4: invalid value '0.5' for property extract.limit.count.limit: expected a whole number of records, "
       "at least 1 (a lower count lets no record through)"},
      {"extract.limit.countLimit=0\n",
       "job.pull:4: invalid value '0' for property extract.limit.countLimit: expected a whole number of records, at "
       "least 1 (a lower count lets no record through)"},
      {"extract.limit.count.limit=-3\n", "job.pull:4: invalid value '-3' for property extract.limit.count.limit"},
      {"extract.limit.count.limit=1.5\n", "job.pull:4: invalid value '1.5' for property extract.limit.count.limit"},
      {"extract.limit.time.limit=1\nextract.limit.time.limit.timeunit=milliseconds\n",
       "job.pull:4: invalid value '1' for property extract.limit.time.limit: expected a number of milliseconds from "
       "1000 to 1e+15; a time limit must allow at least 1 second, since starting to fetch a partition alone can take "
       "longer"},
      {"extract.limit.time.limit=0.5\n",
       "job.pull:4: invalid value '0.5' for property extract.limit.time.limit: expected a number of seconds from 1 to "
       "1e+12; a time limit must allow at least 1 second"},
      {"extract.limit.timeLimit=0\nextract.limit.timeLimitTimeunit=minutes\n",
       "job.pull:4: invalid value '0' for property extract.limit.timeLimit: expected a number of minutes from "
       "0.0166667 to 1.66667e+10"},
      {"extract.limit.time.limit=1e300\nextract.limit.time.limit.timeunit=days\n",
       "job.pull:4: invalid value '1e300' for property extract.limit.time.limit: expected a number of days from "
       "1.15741e-05 to 1.15741e+07"},
      {"extract.limit.time.limit=soon\n", "job.pull:4: invalid value 'soon' for property extract.limit.time.limit"},
      {"extract.limit.rate.limit=0\n",
       "job.pull:4: invalid value '0' for property extract.limit.rate.limit: expected a number of records per second "
       "from 0.000277778 to 1e+15; a rate limit must let at least 1 record per hour through"},
      {"extract.limit.rateLimit=-1\n", "job.pull:4: invalid value '-1' for property extract.limit.rateLimit"},
      {"extract.limit.rate.limit=1\nextract.limit.rate.limit.timeunit=days\n",
       "job.pull:4: invalid value '1' for property extract.limit.rate.limit: expected a number of records per day "
       "from 24 to 8.64e+19"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *head = strstr(bad[i].text, "count") ? count : strstr(bad[i].text, "rate") ? rate : time;
    char *text = kg_xasprintf("%s%s", head, bad[i].text);
    CHECK_INT(config_from(text, &c, err), KG_EINVAL);
    CHECK_CONTAINS(err, bad[i].error);
    free(text);
  }
  static const struct {
    const char *text;
    int64_t time_ms, count;
    double rate;
  } good[] = {
      {"extract.limit.count.limit=1\n", 0, 1, 0},
      {"extract.limit.countLimit= 250 \n", 0, 250, 0},
      {"extract.limit.time.limit=1\n", 1000, 0, 0},
      {"extract.limit.time.limit=1000\nextract.limit.time.limit.timeunit=MILLISECONDS\n", 1000, 0, 0},
      {"extract.limit.timeLimit=2.5\nextract.limit.timeLimitTimeunit=minutes\n", 150000, 0, 0},
      {"extract.limit.rate.limit=1\nextract.limit.rate.limit.timeunit=hours\n", 0, 0, 1.0 / 3600.0},
      {"extract.limit.rate.limit=0.5\n", 0, 0, 0.5},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    const char *head = strstr(good[i].text, "count") ? count : strstr(good[i].text, "rate") ? rate : time;
    char *text = kg_xasprintf("%s%s", head, good[i].text);
    CHECK_INT(config_from(text, &c, err), KG_OK);
    if (c) {
      CHECK_INT(c->limit_time_ms, good[i].time_ms);
      CHECK_INT(c->limit_count, good[i].count);
      CHECK(c->limit_rate_per_s == good[i].rate);
    }
    kg_config_destroy(c);
    c = NULL;
    free(text);
  }
}

/* The Avro writer's properties: the format the builder implies, the codec and its level, the schema given as
 * text or as a file, kept byte for byte, and checked by avro-c with an error naming the property and the
 * reason. */
static void test_avro_config(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  const char *schema = "{\"type\": \"record\", \"name\": \"Event\", \"doc\": \"an event\", \"fields\": [\n"
                       "  {\"name\": \"at\", \"type\": {\"type\": \"long\", \"logicalType\": \"timestamp-millis\"}},\n"
                       "  {\"name\": \"name\", \"type\": \"string\", \"default\": \"\"}]}";

  /* AvroDataWriterBuilder alone: avro, deflate at 9, as Gobblin's defaults. */
  char *text = kg_xasprintf("kafka.brokers=b:1\nwriter.builder.class=gobblin.writer.AvroDataWriterBuilder\n"
                            "writer.avro.schema=%s\n",
                            schema);
  for (char *nl = strchr(text, '\n'); nl; nl = strchr(nl + 1, '\n')) /* the schema on one properties line */
    if (nl[1] == ' ') *nl = ' ';
  CHECK_INT(config_from(text, &c, err), KG_OK);
  if (c) {
    CHECK_STR(c->output_format, "avro");
    CHECK_INT(kg_writer_settings(c)->codec, KG_CODEC_DEFLATE);
    CHECK_INT(kg_writer_settings(c)->deflate_level, 9);
    CHECK_INT(kg_avro_file_options(c)->schema_len, strlen(schema));
    CHECK(kg_avro_file_options(c)->schema &&
          strstr(text, kg_avro_file_options(c)->schema) != NULL); /* byte for byte, logicalType and doc kept */
  }
  kg_config_destroy(c);
  c = NULL;
  free(text);

  /* writer.output.format=AVRO (any case) with a codec and level; the schema from a file, kept byte for byte. */
  char path[] = "/tmp/kg-schema-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(schema, f);
  fclose(f);
  text = kg_xasprintf("kafka.brokers=b:1\nwriter.output.format=AVRO\nwriter.codec.type=snappy\n"
                      "writer.deflate.level=6\nwriter.avro.schema.file=%s\n",
                      path);
  CHECK_INT(config_from(text, &c, err), KG_OK);
  if (c) {
    CHECK_STR(c->output_format, "avro");
    CHECK_INT(kg_writer_settings(c)->codec, KG_CODEC_SNAPPY);
    CHECK_INT(kg_writer_settings(c)->deflate_level, 6);
    CHECK_STR(kg_avro_file_options(c)->schema, schema);
  }
  kg_config_destroy(c);
  c = NULL;
  free(text);

  /* An invalid schema: the error names the property and avro-c's reason. */
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\n"
                        "writer.avro.schema={\"type\": \"record\", \"name\": \"E\", \"fields\": [{\"name\": \"x\"}]}\n",
                        &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:3: writer.avro.schema: invalid Avro schema: ");
  CHECK_CONTAINS(err, "type");
  CHECK_INT(
      config_from("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema={\"type\": \"recrd\"}\n", &c, err),
      KG_EINVAL);
  CHECK_CONTAINS(err, "writer.avro.schema: invalid Avro schema: ");
  CHECK_CONTAINS(err, "recrd");
  f = fopen(path, "w");
  fputs("{\"type\": \"record\", \"name\": \"E\", \"fields\": [", f);
  fclose(f);
  text = kg_xasprintf("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema.file=%s\n", path);
  CHECK_INT(config_from(text, &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:3: writer.avro.schema.file=");
  CHECK_CONTAINS(err, "invalid Avro schema in ");
  CHECK_CONTAINS(err, path);
  free(text);
  unlink(path);
  text = kg_xasprintf("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema.file=%s\n", path);
  CHECK_INT(config_from(text, &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "cannot read ");
  CHECK_CONTAINS(err, strerror(ENOENT));
  free(text);

  /* No schema, or two. */
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "writer.output.format=avro needs the records' Avro schema: set writer.avro.schema");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema=\"string\"\n"
                        "writer.avro.schema.file=/tmp/s.avsc\n",
                        &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:4: properties writer.avro.schema and writer.avro.schema.file are both set");
  kg_config_destroy(c);
}

/* The codecs: Avro's three; text output is uncompressed, or gzip or zstd, and takes no schema. */
static void test_codec_config(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema=\"bytes\"\n"
                        "writer.codec.type=bzip2\n",
                        &c, err),
            KG_EINVAL);
  CHECK_STR(err, "job.pull:4: invalid value 'bzip2' for property writer.codec.type: allowed values are null, deflate, "
                 "snappy, gzip, zstd, uncompressed");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema=\"bytes\"\n"
                        "writer.deflate.level=10\n",
                        &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "writer.deflate.level: expected a whole number from 0 to 9");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.codec.type=deflate\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: writer.codec.type=deflate: writer.output.format=txt is compressed with gzip or zstd (or "
                 "null for none); deflate is a codec of Avro blocks");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\nwriter.avro.schema=\"bytes\"\n"
                        "writer.codec.type=gzip\n",
                        &c, err),
            KG_EINVAL);
  CHECK_STR(err,
            "job.pull:4: writer.codec.type=gzip: Avro files compress their blocks with null, deflate or snappy (the "
            "codecs of the Avro spec); gzip compresses text output");
  /* Text codecs: the extension follows; gzip's level defaults to 3, Avro deflate's to 9. */
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=json\nwriter.codec.type=gzip\n", &c, err), KG_OK);
  if (c) {
    CHECK_STR(kg_writer_settings(c)->ext, "json.gz");
    CHECK_INT(kg_writer_settings(c)->deflate_level, 3);
  }
  kg_config_destroy(c);
  c = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.codec.type=ZSTD\n", &c, err), KG_OK);
  if (c) CHECK_STR(kg_writer_settings(c)->ext, "txt.zst");
  kg_config_destroy(c);
  c = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.codec.type=gzip\nwriter.deflate.level=1\n", &c, err), KG_OK);
  if (c) CHECK_INT(kg_writer_settings(c)->deflate_level, 1);
  kg_config_destroy(c);
  c = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.codec.type=lz4\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "invalid value 'lz4' for property writer.codec.type");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=json\nwriter.avro.schema=\"bytes\"\n", &c, err),
            KG_EINVAL);
  CHECK_STR(err,
            "job.pull:3: writer.avro.schema is read by the Avro writer, and by the CSV writer for its columns, and "
            "writer.output.format is json");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.codec.typ=null\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "did you mean writer.codec.type?");
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.codec.type=NULL\n", &c, err), KG_OK);
  if (c) {
    CHECK_STR(c->output_format, "txt");
    CHECK_INT(kg_writer_settings(c)->codec, KG_CODEC_NULL);
    CHECK(kg_avro_file_options(c)->schema == NULL);
  }
  kg_config_destroy(c);
}

/* The CSV writer's properties: the columns given (trimmed) or a record schema's fields; the settings; what is
 * refused. */
static void test_csv_config(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=csv\nwriter.csv.columns= id, name ,ts\n"
                        "writer.csv.header=true\nwriter.csv.delimiter=\\t\nwriter.csv.line.end=CRLF\n"
                        "writer.codec.type=gzip\n",
                        &c, err),
            KG_OK);
  if (c) {
    CHECK_INT(kg_csv_options(c)->ncolumns, 3);
    if (kg_csv_options(c)->ncolumns == 3) {
      CHECK_STR(kg_csv_options(c)->columns[0], "id");
      CHECK_STR(kg_csv_options(c)->columns[1], "name");
      CHECK_STR(kg_csv_options(c)->columns[2], "ts");
    }
    CHECK(kg_csv_options(c)->header);
    CHECK(kg_csv_options(c)->crlf);
    CHECK_INT(kg_csv_options(c)->delimiter, '\t');
    CHECK(!kg_csv_options(c)->ignore_extra);
    CHECK_STR(kg_writer_settings(c)->ext, "csv.gz");
    CHECK(kg_avro_file_options(c)->schema == NULL);
  }
  kg_config_destroy(c);
  c = NULL;
  CHECK_INT(config_from(
                "kafka.brokers=b:1\nwriter.output.format=csv\nwriter.csv.extra.fields=ignore\n"
                "writer.avro.schema={\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"b\",\"type\":\"int\"},"
                "{\"name\":\"a\",\"type\":\"string\"}]}\n",
                &c, err),
            KG_OK);
  if (c) {
    CHECK_INT(kg_csv_options(c)->ncolumns, 2);
    if (kg_csv_options(c)->ncolumns == 2) {
      CHECK_STR(kg_csv_options(c)->columns[0], "b");
      CHECK_STR(kg_csv_options(c)->columns[1], "a");
    }
    CHECK(kg_csv_options(c)->ignore_extra);
    CHECK_INT(kg_csv_options(c)->delimiter, ',');
    CHECK(!kg_csv_options(c)->crlf);
    CHECK(!kg_csv_options(c)->header);
    CHECK(kg_avro_file_options(c)->schema == NULL); /* the schema named the columns; the records are not Avro */
  }
  kg_config_destroy(c);
  c = NULL;
  const struct {
    const char *text, *says;
  } bad_csv[] = {
      {"writer.output.format=csv\n", "quick.pull: writer.output.format=csv needs its columns: set writer.csv.columns"},
      {"writer.output.format=csv\nwriter.csv.columns=a,b\nwriter.avro.schema={\"type\":\"record\",\"name\":\"R\","
       "\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}\n",
       "writer.csv.columns and writer.avro.schema both give the CSV columns"},
      {"writer.output.format=csv\nwriter.avro.schema=\"long\"\n", "the schema is not a record with fields"},
      {"writer.output.format=csv\nwriter.csv.columns=a, ,b\n", "writer.csv.columns=a, ,b: a column name is empty"},
      {"writer.output.format=csv\nwriter.csv.columns=a,b,a\n", "column a is given twice"},
      {"writer.output.format=csv\nwriter.csv.columns=a\nwriter.csv.delimiter=\n", "writer.csv.delimiter must be one"},
      {"writer.output.format=csv\nwriter.csv.columns=a\nwriter.csv.line.end=cr\n", "writer.csv.line.end"},
      {"writer.output.format=csv\nwriter.csv.columns=a\nwriter.csv.extra.fields=drop\n", "writer.csv.extra.fields"},
      {"writer.output.format=csv\nwriter.csv.columns=a\nsimple.writer.prepend.size=true\n",
       "simple.writer.prepend.size=true frames the simple writer's records"},
      {"writer.output.format=csv\nwriter.csv.columns=a\nsimple.writer.delimiter=|\n",
       "simple.writer.delimiter is the simple writer's"},
      {"writer.output.format=json\nwriter.csv.columns=a\n",
       "writer.csv.columns is read by the CSV writer only, and writer.output.format is json"},
      {"writer.csv.line.end=crlf\n",
       "writer.csv.line.end is read by the CSV writer only, and writer.output.format is txt"},
  };
  for (size_t i = 0; i < sizeof bad_csv / sizeof bad_csv[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "kafka.brokers=b:1\n%s", bad_csv[i].text);
    CHECK_INT(config_from(text, &c, err), KG_EINVAL);
    CHECK_CONTAINS(err, bad_csv[i].says);
    kg_config_destroy(c);
    c = NULL;
  }
}

/* Which Avro framing a job reads: configured by kafka.deserializer.type or source.class, with a registry whose
 * API matches; mixed properties are refused. */
static void test_avro_framing(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  const char *url = "kafka.schema.registry.url=http://localhost:1/apis/ccompat/v7\n";
  char *text = kg_xasprintf("kafka.brokers=b:1\nkafka.deserializer.type=confluent_avro\n%s", url);
  CHECK_INT(config_from(text, &c, err), KG_OK);
  if (c) {
    CHECK_INT(kg_registry_settings(c)->framing, KG_FRAMING_CONFLUENT);
    CHECK_INT(kg_registry_settings(c)->kind, KG_REGISTRY_CONFLUENT);
  }
  kg_config_destroy(c);
  c = NULL;
  free(text);
  /* Avro output without a schema: each topic's latest, from the registry. */
  text = kg_xasprintf("kafka.brokers=b:1\nkafka.deserializer.type=CONFLUENT_AVRO\nwriter.output.format=avro\n%s", url);
  CHECK_INT(config_from(text, &c, err), KG_OK);
  if (c) CHECK(kg_avro_file_options(c)->schema == NULL);
  kg_config_destroy(c);
  c = NULL;
  free(text);
  /* LinkedIn's: KafkaAvroSource, whose registry class defaults to KafkaAvroSchemaRegistry. */
  text =
      kg_xasprintf("kafka.brokers=b:1\nsource.class=gobblin.source.extractor.extract.kafka.KafkaAvroSource\n%s", url);
  CHECK_INT(config_from(text, &c, err), KG_OK);
  if (c) {
    CHECK_INT(kg_registry_settings(c)->framing, KG_FRAMING_LINKEDIN);
    CHECK_INT(kg_registry_settings(c)->kind, KG_REGISTRY_LINKEDIN);
  }
  kg_config_destroy(c);
  c = NULL;
  free(text);
  /* The default: the payload's bytes. */
  CHECK_INT(config_from("kafka.brokers=b:1\n", &c, err), KG_OK);
  if (c) CHECK_INT(kg_registry_settings(c)->framing, KG_FRAMING_NONE);
  kg_config_destroy(c);
  c = NULL;

  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.deserializer.type=CONFLUENT_AVRO\n", &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "kafka.deserializer.type=CONFLUENT_AVRO needs kafka.schema.registry.url");
  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.deserializer.type=JSON\n", &c, err), KG_EINVAL);
  CHECK_STR(err, "job.pull:2: invalid value 'JSON' for property kafka.deserializer.type: allowed values are "
                 "BYTE_ARRAY, CONFLUENT_AVRO");
  text = kg_xasprintf("kafka.brokers=b:1\nkafka.deserializer.type=CONFLUENT_AVRO\n%s"
                      "kafka.schema.registry.class=gobblin.kafka.schemareg.KafkaAvroSchemaRegistry\n",
                      url);
  CHECK_INT(config_from(text, &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:4: kafka.deserializer.type=CONFLUENT_AVRO reads Confluent's framing");
  CHECK_CONTAINS(err, "set source.class=KafkaAvroSource");
  free(text);
  text =
      kg_xasprintf("kafka.brokers=b:1\nsource.class=KafkaAvroSource\nkafka.deserializer.type=CONFLUENT_AVRO\n%s", url);
  CHECK_INT(config_from(text, &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:2: source.class=KafkaAvroSource reads LinkedIn's framing");
  free(text);
  text = kg_xasprintf("kafka.brokers=b:1\nsource.class=KafkaAvroSource\n%s"
                      "kafka.schema.registry.class=ConfluentKafkaSchemaRegistry\n",
                      url);
  CHECK_INT(config_from(text, &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "whose schemas come from a KafkaAvroSchemaRegistry");
  free(text);
  /* `schema` (a job.lua's key) is writer.avro.schema. */
  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.output.format=avro\nschema=\"long\"\n", &c, err), KG_OK);
  if (c) CHECK_STR(kg_avro_file_options(c)->schema, "\"long\"");
  kg_config_destroy(c);
  c = NULL;
}

/* A check on one row of the property table: a failure names the row. */
/* COND is evaluated once: it may have effects (a parse that allocates). */
#define CHECK_ROW(p, cond)                                                                                             \
  do {                                                                                                                 \
    bool _ok = (cond);                                                                                                 \
    if (!_ok) fprintf(stderr, "property %s:\n", (p)->name);                                                            \
    CHECK(_ok);                                                                                                        \
  } while (0)

/* Every row of the property table is well formed: a one-line doc, a default that parses with the row's own type
 * (the same code as a user's value), the enum names in the doc, a field of the type's size, and one row for
 * each name. */
static void test_property_table(void) {
  size_t n;
  const kg_property_t *const *rows = kg_config_properties(&n);
  CHECK(n > 50);
  CHECK_STR(rows[0]->name, "job.name"); /* read before the work dir is resolved */
  kg_config_t scratch = {.job_file = "/jobs/quick.pull"};
  for (size_t i = 0; i < n; i++) {
    const kg_property_t *p = rows[i];
    const kg_config_section_t *section = kg_config_section_of(p);
    CHECK_ROW(p, section != NULL);
    if (!section) continue;
    bool own = section == &kg_config_job_section; /* the job's rows land in kg_config_t */
    size_t size = own ? sizeof(kg_config_t) : section->size;
    void *options = own ? (void *)&scratch : calloc(1, size ? size : 1);
    char err[KG_ERRLEN] = "";
    CHECK_ROW(p, p->doc && *p->doc && !strchr(p->doc, '\n') && !strchr(p->doc, '|'));
    CHECK_ROW(p, kg_config_property(p->name) == p);
    if (p->alias) CHECK_ROW(p, kg_config_property(p->alias) == p);
    for (size_t j = 0; j < i; j++) {
      CHECK_ROW(p, strcmp(rows[j]->name, p->name) && (!rows[j]->alias || strcmp(rows[j]->alias, p->name)));
      if (p->alias)
        CHECK_ROW(p, strcmp(rows[j]->name, p->alias) && (!rows[j]->alias || strcmp(rows[j]->alias, p->alias)));
    }

    /* The default: a constant, computed, or none (and then the docs say what no value means, or nothing). */
    CHECK_ROW(p, !(p->def && p->computed));
    CHECK_ROW(p, !p->computed || p->def_doc);
    CHECK_ROW(p, !p->required || (!p->def && !p->computed));
    char *computed = p->computed ? p->computed(&scratch, options) : NULL;
    const char *def = p->def ? p->def : computed;
    if (def) {
      kg_property_value_t v;
      CHECK_ROW(p, kg_property_parse(p, p->name, "default", def, "/work", &v, err) == KG_OK);
      if (p->type == KG_PROP_STRING || p->type == KG_PROP_PATH) free(v.s);
    }
    free(computed);

    /* Names and bounds. */
    if (p->type == KG_PROP_ENUM || p->type == KG_PROP_CLASS) {
      CHECK_ROW(p, p->names && p->names[0]);
      for (int k = 0; p->names && p->names[k]; k++)
        CHECK_ROW(p, strstr(p->doc, p->names[k]) != NULL);
    } else {
      CHECK_ROW(p, p->names == NULL);
    }
    if (p->type == KG_PROP_INT) CHECK_ROW(p, p->min <= p->max);
    if (p->type == KG_PROP_DOUBLE && !p->part_of) CHECK_ROW(p, p->dmin < p->dmax);

    /* The field: its size fits the type; an int field's bounds fit an int. */
    if (p->size) {
      CHECK_ROW(p, !p->set && p->offset + p->size <= size);
      switch (p->type) {
      case KG_PROP_STRING:
      case KG_PROP_PATH: CHECK_ROW(p, p->size == sizeof(char *)); break;
      case KG_PROP_BOOL: CHECK_ROW(p, p->size == sizeof(bool)); break;
      case KG_PROP_INT:
        CHECK_ROW(p, p->size == sizeof(int64_t) || (p->size == sizeof(int) && p->min >= INT_MIN && p->max <= INT_MAX));
        break;
      case KG_PROP_DOUBLE: CHECK_ROW(p, p->size == sizeof(double)); break;
      case KG_PROP_ENUM: CHECK_ROW(p, p->size == sizeof(int)); break;
      default: CHECK_ROW(p, false); break;
      }
    }
    if (p->part_of) {
      const kg_property_t *reader = kg_config_property(p->part_of);
      size_t at = 0;
      while (at < i && rows[at] != reader)
        at++;
      CHECK_ROW(p, reader && reader->set && at < i);
      CHECK_ROW(p, kg_config_section_of(reader) == section); /* its setter reads it with its own options */
    }
    if (p->mode == KG_MODE_MAPREDUCE) CHECK_ROW(p, !p->size && !p->set && !p->def);
    if (!own) free(options);
  }

  /* Names resolve: aliases to their row, keys under kafka.consumer.* to that row, others to nothing. */
  CHECK_STR(kg_config_property("extract.limit.timeLimit")->name, "extract.limit.time.limit");
  CHECK_STR(kg_config_property("extract.limit.countLimit")->name, "extract.limit.count.limit");
  CHECK_STR(kg_config_property("extract.limit.rateLimitTimeunit")->name, "extract.limit.rate.limit.timeunit");
  CHECK_STR(kg_config_property("kafka.consumer.fetch.wait.max.ms")->name, "kafka.consumer.*");
  CHECK(kg_config_property("kafka.consumer") == NULL);
  CHECK(kg_config_property("topic.whitelst") == NULL);

  /* Paths under the work dir, for a job known only by name. */
  char *path = kg_config_default_path("state.store.dir", "/srv/work");
  CHECK_STR(path, "/srv/work/state-store");
  free(path);
  path = kg_config_default_path("job.lock.dir", "rel");
  CHECK_STR(path, "rel/locks");
  free(path);
  CHECK(kg_config_default_path("kafka.brokers", "/srv/work") == NULL);
}

/* A job that gives nothing but kafka.brokers gets every row's default in its field: the documented defaults are
 * the ones the engine uses. */
static void test_defaults_land(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  CHECK_INT(config_from("kafka.brokers=b:1\n", &c, err), KG_OK);
  if (!c) return;
  size_t n;
  const kg_property_t *const *rows = kg_config_properties(&n);
  for (size_t i = 0; i < n; i++) {
    const kg_property_t *p = rows[i];
    if (!p->size || !p->def) continue;
    kg_property_value_t v;
    CHECK_ROW(p, kg_property_parse(p, p->name, "default", p->def, c->work_dir, &v, err) == KG_OK);
    const char *field = (const char *)kg_config_options(c, kg_config_section_of(p)) + p->offset;
    if (p->type == KG_PROP_STRING || p->type == KG_PROP_PATH) {
      char *s;
      memcpy(&s, field, sizeof s);
      CHECK_ROW(p, s && !strcmp(s, v.s));
      free(v.s);
    } else if (p->type == KG_PROP_INT && p->size == sizeof(int)) {
      int x;
      memcpy(&x, field, sizeof x);
      CHECK_ROW(p, x == v.i);
    } else {
      CHECK_ROW(p, !memcmp(field, &v, p->size));
    }
  }
  /* The odd rows, landed by their setters. */
  CHECK_STR(c->output_format, "txt");
  CHECK_INT(kg_simple_options(c)->delimiter_len, 1);
  CHECK(!c->skip_error_limit_set);
  CHECK(!c->limit_enabled);
  CHECK_STR(c->job_name, "quick");
  CHECK(c->threadpool_size >= 1 && c->threadpool_size <= 1024);
  CHECK_INT(kg_kafka_options(c)->batch_size, 1000);
  CHECK_INT(c->metrics_interval_ms, 30000);
  CHECK_INT(kg_kafka_options(c)->fetch_timeout_ms, 30000);
  CHECK_INT(kg_kafka_options(c)->metadata_timeout_ms, 15000);
  CHECK_INT(c->batch_timeout_ms, 60000);
  CHECK_INT(c->progress_interval_ms, 5000);
  CHECK(c->error_max_ratio == 0.1);
  CHECK(c->pre_grouping_factor == 3.0);
  CHECK_STR(c->lock_dir, "/tmp/kg-work/locks");
  CHECK_STR(kg_file_reporter_options(c)->dir, "/tmp/kg-work/metrics");
  kg_config_destroy(c);

  /* An empty path or job name means the default. */
  CHECK_INT(config_from("kafka.brokers=b:1\njob.name=\nmetrics.log.dir=\n", &c, err), KG_OK);
  if (c) {
    CHECK_STR(c->job_name, "quick");
    CHECK_STR(kg_file_reporter_options(c)->dir, "/tmp/kg-work/metrics");
  }
  kg_config_destroy(c);
}

/* `kingest properties` and its Markdown table list every row, with its default. */
static void test_print_properties(void) {
  char out[65536];
  for (int markdown = 0; markdown < 2; markdown++) {
    FILE *f = tmpfile();
    kg_config_print_properties(f, markdown);
    rewind(f);
    out[fread(out, 1, sizeof out - 1, f)] = '\0';
    fclose(f);
    size_t n;
    const kg_property_t *const *rows = kg_config_properties(&n);
    for (size_t i = 0; i < n; i++)
      if (!strchr(rows[i]->name, '*')) CHECK_CONTAINS(out, rows[i]->name);
    if (markdown) {
      CHECK(!strncmp(out, "| Property | Default | Meaning |\n|---|---|---|\n", 46));
      CHECK_CONTAINS(out, "\n| `kafka.brokers` | required | ");
      CHECK_CONTAINS(out, "\n| `kafka.consumer.<name>` | | ");
      CHECK_CONTAINS(out, "\n| `extract.limit.count.limit` (also `extract.limit.countLimit`) | | ");
      CHECK_CONTAINS(out, "\n| `simple.writer.delimiter` | `\\n` | ");
      CHECK_CONTAINS(out, "\n| `kafka.fetch.batch.size` | `1000` | Records handed to the script per call, at most: ");
      CHECK_CONTAINS(out, " until the next one. From `1` to `1000000`. |\n");
    } else {
      CHECK_CONTAINS(out, "\nkafka.brokers\n    Comma-separated host:port list of the Kafka brokers: ");
      CHECK_CONTAINS(out, " or SASL_SSL:// before it.\n    default: (none)\n");
      CHECK_CONTAINS(out, "\nmr.job.root.dir (MapReduce only)\n");
      CHECK_CONTAINS(out, "\nbootstrap.with.offset\n");
      CHECK_CONTAINS(out, "\n    default: latest\n");
      CHECK(strchr(out, '`') == NULL);
    }
  }
}

static void test_work_dir(void) {
  char err[KG_ERRLEN] = "";
  kg_props_t *p = kg_props_new();
  kg_props_set(p, "kafka.brokers", "b:1", NULL);
  unsetenv("GOBBLIN_WORK_DIR");
  kg_config_t *c = NULL;
  CHECK_INT(kg_config_new(p, "x.pull", false, NULL, &c, err), KG_EINVAL);
  CHECK_CONTAINS(err, "GOBBLIN_WORK_DIR");
  p = kg_props_new();
  kg_props_set(p, "kafka.brokers", "b:1", NULL);
  setenv("GOBBLIN_WORK_DIR", "/srv/gobblin", 1);
  CHECK_INT(kg_config_new(p, "x.pull", false, NULL, &c, err), KG_OK);
  if (c) CHECK_STR(c->final_dir, "/srv/gobblin/job-output");
  kg_config_destroy(c);
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  test_syntax();
  test_substitution();
  test_config();
  test_brokers();
  test_typos();
  test_unknown_keys();
  test_avro_config();
  test_codec_config();
  test_csv_config();
  test_avro_framing();
  test_consumer_keys();
  test_limits();
  test_work_dir();
  test_property_table();
  test_defaults_land();
  test_print_properties();
  TEST_MAIN_END();
}
