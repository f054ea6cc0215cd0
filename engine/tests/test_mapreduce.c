/* test_mapreduce.c: the maps' input of a MapReduce run: what a task line carries of the driver's properties (never a
 * secret), and the properties a map runs the task on (the driver's, with the map's own secrets). */
#include "buf.h"
#include "config.h"
#include "json.h"
#include "log.h"
#include "mapreduce.h"
#include "props.h"
#include "test.h"

static void test_is_secret(void) {
  const char *secret[] = {"kafka.consumer.sasl.password",
                          "kafka.consumer.ssl.key.password",
                          "kafka.consumer.sasl.oauthbearer.client.secret",
                          "kafka.consumer.ssl.keystore.password",
                          "kafka.consumer.ssl.key.pem",
                          "kafka.consumer.ssl_key",
                          "kafka.consumer.sasl.jaas.config",
                          "kafka.consumer.sasl.oauthbearer.config",
                          "schema.registry.basic.auth.user.info",
                          "kafka.schema.registry.userinfo",
                          "my.api-key",
                          "source.auth_token",
                          "custom.accessToken",
                          "aws.credentials",
                          "kafka.consumer.ssl.keystorePassword",
                          "DB_PASSWD",
                          NULL};
  for (const char **k = secret; *k; k++) {
    if (!kg_props_is_secret(*k, "x")) fprintf(stderr, "not taken for a secret: %s\n", *k);
    CHECK(kg_props_is_secret(*k, "x"));
  }
  const char *plain[] = {"kafka.brokers",
                         "kafka.consumer.sasl.username",
                         "kafka.consumer.sasl.mechanism",
                         "kafka.consumer.ssl.key.location",
                         "kafka.consumer.ssl.certificate.pem",
                         "kafka.consumer.ssl.keystore.location",
                         "kafka.consumer.sasl.kerberos.keytab",
                         "kafka.consumer.sasl.oauthbearer.token.endpoint.url",
                         "kafka.schema.registry.url",
                         "writer.partition.pattern",
                         "topic.whitelist",
                         NULL};
  for (const char **k = plain; *k; k++) {
    if (kg_props_is_secret(*k, "x")) fprintf(stderr, "taken for a secret: %s\n", *k);
    CHECK(!kg_props_is_secret(*k, "x"));
  }
  /* By its value: a URL with a password in it. */
  CHECK(kg_props_is_secret("kafka.schema.registry.url", "https://me:s3cret@registry.example.com/apis"));
  CHECK(kg_props_is_secret("metrics.reporting.prometheus.pushgateway.url", "http://a:b@gw:9091"));
  CHECK(!kg_props_is_secret("kafka.schema.registry.url", "https://registry.example.com:8081/apis"));
  CHECK(!kg_props_is_secret("kafka.schema.registry.url", "https://me@registry.example.com/"));
  CHECK(!kg_props_is_secret("writer.fs.uri", "webhdfs://nn:9870/a@b"));
  CHECK(!kg_props_is_secret("kafka.brokers", NULL));
}

/* A run of one task over one unit, for a config made of TEXT. */
typedef struct {
  kg_config_t *config;
  kg_workunit_t unit;
  kg_workunit_t *units[1];
  kg_task_t task;
  kg_mr_run_t run;
} fixture_t;

static int fixture(fixture_t *f, const char *text, char *err) {
  memset(f, 0, sizeof *f);
  int rc = kg_test_config(text, "/jobs/job.pull", &f->config, err);
  if (rc) return rc;
  f->unit = (kg_workunit_t){.topic = "events", .partition = 3, .low = 10, .high = 20, .earliest = 0, .latest = 20};
  f->units[0] = &f->unit;
  f->task.spec = (kg_task_spec_t){.index = 0, .task_id = "task_J_1_0", .units = f->units, .nunits = 1};
  f->run = (kg_mr_run_t){.config = f->config,
                         .job_id = "job_J_1",
                         .job_dir = "/mr/J/job_J_1",
                         .extract_id = "20261130000000",
                         .tasks = &f->task,
                         .ntasks = 1};
  return KG_OK;
}

static const char *const JOB = "job.name=J\n"
                               "kafka.brokers=broker-a:9092,broker-b:9092\n"
                               "topic.whitelist=events\n"
                               "kafka.consumer.security.protocol=SASL_SSL\n"
                               "kafka.consumer.sasl.username=ingest\n"
                               "kafka.consumer.sasl.password=hunter2-the-password\n"
                               "kafka.schema.registry.url=https://ingest:registry-pass@registry:8081\n"
                               "mr.streaming.args=-cmdenv TOKEN=streaming-token-value\n";

static void test_task_line(void) {
  char err[KG_ERRLEN] = "";
  fixture_t f;
  CHECK_INT(fixture(&f, JOB, err), KG_OK);
  kg_buf_t line = {0};
  kg_mr_task_line(&line, &f.run, &f.task);
  CHECK(line.len > 0 && line.data[line.len - 1] == '\n');
  /* No secret's value, nor the driver's Hadoop command line, is in the line. */
  CHECK(!strstr(line.data, "hunter2"));
  CHECK(!strstr(line.data, "registry-pass"));
  CHECK(!strstr(line.data, "streaming-token-value"));
  CHECK(!strstr(line.data, "mr.streaming.args"));
  kg_json_t *doc = NULL;
  CHECK_INT(kg_json_parse(line.data, line.len, "the line", &doc, err), KG_OK);
  const kg_json_t *props = kg_json_get(doc, "properties"), *secrets = kg_json_get(doc, "secrets");
  CHECK(props && props->type == KG_JSON_ARRAY && props->count == 5);
  CHECK(secrets && secrets->type == KG_JSON_ARRAY && secrets->count == 2);
  if (props && props->count == 5 && secrets && secrets->count == 2) {
    /* In the driver's order, each with where the driver got it. */
    CHECK_STR(props->items[1].items[0].string, "kafka.brokers");
    CHECK_STR(props->items[1].items[1].string, "broker-a:9092,broker-b:9092");
    CHECK_STR(props->items[1].items[2].string, "job.pull:2");
    CHECK_STR(props->items[4].items[0].string, "kafka.consumer.sasl.username");
    CHECK_STR(secrets->items[0].string, "kafka.consumer.sasl.password");
    CHECK_STR(secrets->items[1].string, "kafka.schema.registry.url");
  }
  const kg_json_t *units = kg_json_get(doc, "units");
  CHECK(units && units->type == KG_JSON_ARRAY && units->count == 1);

  /* A map whose own evaluation has the secrets, another broker and a property of its own: it runs on the driver's
   * brokers with its own secrets, and names what differs, never a value. */
  kg_props_t *own = kg_props_new();
  kg_props_set(own, "job.name", "J", "job.pull:1");
  kg_props_set(own, "kafka.brokers", "localhost:9092", "job.pull:2");
  kg_props_set(own, "topic.whitelist", "events", "job.pull:3");
  kg_props_set(own, "kafka.consumer.security.protocol", "SASL_SSL", "job.pull:4");
  kg_props_set(own, "kafka.consumer.sasl.username", "ingest", "job.pull:5");
  kg_props_set(own, "kafka.consumer.sasl.password", "hunter2-the-password", "job.pull:6");
  kg_props_set(own, "kafka.schema.registry.url", "https://ingest:registry-pass@registry:8081", "job.pull:7");
  kg_props_set(own, "extract.namespace", "here", "job.pull:8");
  kg_props_set(own, "mr.streaming.args", "-cmdenv TOKEN=other", "job.pull:9");
  kg_props_t *out = NULL;
  kg_buf_t differ = {0}, missing = {0};
  CHECK_INT(kg_mr_task_props(doc, own, &out, &differ, &missing, err), KG_OK);
  CHECK_STR(kg_props_get(out, "kafka.brokers"), "broker-a:9092,broker-b:9092");
  CHECK_STR(kg_props_origin(out, "kafka.brokers"), "job.pull:2");
  CHECK_STR(kg_props_get(out, "kafka.consumer.sasl.password"), "hunter2-the-password");
  CHECK_STR(kg_props_get(out, "kafka.schema.registry.url"), "https://ingest:registry-pass@registry:8081");
  CHECK(!kg_props_has(out, "extract.namespace"));
  CHECK(!kg_props_has(out, "mr.streaming.args"));
  CHECK_STR(differ.data, "kafka.brokers, extract.namespace");
  CHECK_INT(missing.len, 0);
  kg_props_destroy(out);

  /* A map without the secrets: they are missing, by name; one evaluation that failed has none either. */
  kg_props_t *bare = kg_props_new();
  kg_props_set(bare, "job.name", "J", "job.pull:1");
  kg_props_set(bare, "kafka.brokers", "broker-a:9092,broker-b:9092", "job.pull:2");
  differ.len = 0;
  out = NULL;
  CHECK_INT(kg_mr_task_props(doc, bare, &out, &differ, &missing, err), KG_OK);
  CHECK_STR(missing.data, "kafka.consumer.sasl.password, kafka.schema.registry.url");
  CHECK(!kg_props_has(out, "kafka.consumer.sasl.password"));
  CHECK_CONTAINS(differ.data, "topic.whitelist");
  kg_props_destroy(out);
  missing.len = 0;
  differ.len = 0;
  CHECK_INT(kg_mr_task_props(doc, NULL, &out, &differ, &missing, err), KG_OK);
  CHECK_STR(missing.data, "kafka.consumer.sasl.password, kafka.schema.registry.url");
  CHECK_INT(differ.len, 0);
  CHECK_STR(kg_props_get(out, "topic.whitelist"), "events");
  kg_props_destroy(out);

  /* A line without properties is refused. */
  kg_json_t *old = NULL;
  const char *text = "{\"task\":\"t\",\"units\":[]}";
  CHECK_INT(kg_json_parse(text, strlen(text), "old", &old, err), KG_OK);
  CHECK_INT(kg_mr_task_props(old, own, &out, &differ, &missing, err), KG_EINVAL);
  CHECK_CONTAINS(err, "no \"properties\"");
  CHECK(out == NULL);
  kg_json_free(old);

  kg_buf_free(&differ);
  kg_buf_free(&missing);
  kg_props_destroy(own);
  kg_props_destroy(bare);
  kg_json_free(doc);
  kg_buf_free(&line);
  kg_config_destroy(f.config);
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  test_is_secret();
  test_task_line();
  TEST_MAIN_END();
}
