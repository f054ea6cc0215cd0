/* test_props.c: the Gobblin properties reader and the job config built from it. */
#include <stdlib.h>

#include "config.h"
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
  kg_props_t *p = kg_props_new();
  int rc = kg_props_parse(p, text, strlen(text), "job.pull", err);
  if (rc) {
    kg_props_destroy(p);
    return rc;
  }
  return kg_config_new(p, "/jobs/quick.pull", false, "/tmp/kg-work", c, err);
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
    CHECK_STR(c->delimiter, "\n");
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
    CHECK_STR(c->delimiter, "|");
    CHECK(c->prepend_size);
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

  CHECK_INT(config_from("kafka.brokers=b:1\nwriter.builder.class=gobblin.writer.AvroDataWriterBuilder\n", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "writer.builder.class");

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

static void test_typos(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = NULL;
  char log[] = "/tmp/kg-test-typos.log";
  remove(log);
  kg_log_set_level(KG_LOG_WARN);
  kg_log_set_file(log);
  CHECK_INT(config_from("kafka.brokers=b:1\nkafka.broker=b:2\njob.nmae=x\nbootstrap.with.ofset=earliest\n"
                        "gobblin.custom.setting=1\nmy.own.thing=2\n",
                        &c, err),
            KG_OK);
  kg_log_set_file(NULL);
  kg_log_set_level(KG_LOG_ERROR);
  kg_config_destroy(c);
  FILE *f = fopen(log, "r");
  char text[4096] = "";
  if (f) {
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
  }
  CHECK_CONTAINS(text, "job.pull:2: unknown property kafka.broker (ignored); did you mean kafka.brokers?");
  CHECK_CONTAINS(text, "job.pull:3: unknown property job.nmae (ignored); did you mean job.name?");
  CHECK_CONTAINS(text, "did you mean bootstrap.with.offset?");
  CHECK_CONTAINS(text, "job.pull:6: unknown property my.own.thing (ignored)");
  CHECK(strstr(text, "gobblin.custom.setting") == NULL); /* Gobblin's own namespaces pass quietly */
  remove(log);
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
  test_typos();
  test_work_dir();
  TEST_MAIN_END();
}
