/* test_secret.c: secrets: ${file:PATH} in property values, which properties are secrets, the mask of noted values in
 * error texts and log lines, and the property rows that hold secrets. */
#include <sys/stat.h>
#include <unistd.h>

#include "avro_registry.h"
#include "config.h"
#include "log.h"
#include "props.h"
#include "report.h"
#include "secret.h"
#include "test.h"

static char dir[] = "/tmp/kg-secret-XXXXXX";

/* Writes LEN bytes of TEXT to DIR/NAME with MODE; returns the path (static, until the next call). */
static const char *file_with(const char *name, const char *text, size_t len, mode_t mode) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fwrite(text, 1, len, f);
  fclose(f);
  chmod(path, mode);
  return path;
}

static kg_props_t *parse(const char *text, int *rc, char *err) {
  kg_props_t *p = kg_props_new();
  *rc = kg_props_parse(p, text, strlen(text), "job.pull", err);
  return p;
}

/* The text of the log file PATH. */
static char *slurp(const char *path) {
  size_t len = 0;
  int error = 0;
  char *text = kg_read_file(path, &len, &error);
  return text ? text : kg_xstrdup("");
}

static void test_file_reference(void) {
  char err[KG_ERRLEN] = "", text[1024];
  int rc;
  const char *pw = file_with("pw", "Pa55:word\n", 10, 0600);
  snprintf(text, sizeof text,
           "kafka.consumer.sasl.password=${file:%s}\n"
           "kafka.consumer.sasl.username=${file:%s}\n"
           "copied=prefix-${kafka.consumer.sasl.username}\n"
           "plain=x\n",
           pw, pw);
  kg_props_t *p = parse(text, &rc, err);
  CHECK_INT(rc, KG_OK);
  CHECK_STR(kg_props_get(p, "kafka.consumer.sasl.password"), "Pa55:word"); /* one newline off */
  /* A value from a file is a secret whatever its name, and so is one made with it. */
  CHECK(kg_props_secret(p, "kafka.consumer.sasl.password"));
  CHECK(kg_props_secret(p, "kafka.consumer.sasl.username"));
  CHECK(kg_props_secret(p, "copied"));
  CHECK_STR(kg_props_get(p, "copied"), "prefix-Pa55:word");
  CHECK(!kg_props_secret(p, "plain"));
  CHECK(!kg_props_secret(p, "missing"));
  CHECK_STR(kg_props_shown(p, "kafka.consumer.sasl.username"), KG_SECRET_MASK);
  CHECK_STR(kg_props_shown(p, "plain"), "x");
  CHECK(kg_props_shown(p, "missing") == NULL);
  /* Set again, the value is what it is set to. */
  kg_props_set(p, "kafka.consumer.sasl.username", "alice", NULL);
  CHECK(!kg_props_secret(p, "kafka.consumer.sasl.username"));
  kg_props_set_secret(p, "other", "x", NULL);
  CHECK(kg_props_secret(p, "other"));
  kg_props_destroy(p);

  /* Only one newline goes, \r\n included; the rest of the text is as the file has it. */
  const char *two = file_with("two", "a b\r\n\n", 6, 0600);
  snprintf(text, sizeof text, "k=${file:%s}\n", two);
  p = parse(text, &rc, err);
  CHECK_INT(rc, KG_OK);
  CHECK_STR(kg_props_get(p, "k"), "a b\r\n");
  kg_props_destroy(p);
  const char *crlf = file_with("crlf", "tok\r\n", 5, 0600);
  snprintf(text, sizeof text, "k=${file:%s}\n", crlf);
  p = parse(text, &rc, err);
  CHECK_STR(kg_props_get(p, "k"), "tok");
  kg_props_destroy(p);
  const char *empty = file_with("empty", "", 0, 0600);
  snprintf(text, sizeof text, "k=[${file:%s}]\n", empty);
  p = parse(text, &rc, err);
  CHECK_STR(kg_props_get(p, "k"), "[]");
  kg_props_destroy(p);
}

static void test_file_errors(void) {
  char err[KG_ERRLEN] = "", text[1024], want[1024];
  int rc;
  snprintf(text, sizeof text, "a=1\nkafka.consumer.sasl.password=${file:%s/none}\n", dir);
  kg_props_t *p = parse(text, &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  snprintf(want, sizeof want,
           "job.pull:2: property kafka.consumer.sasl.password refers to file %s/none, which cannot be read: No such "
           "file or directory",
           dir);
  CHECK_STR(err, want);
  kg_props_destroy(p);

  /* Unreadable: the path and the reason, never the text. */
  const char *locked = file_with("locked", "Hidden-Text-1", 13, 0000);
  snprintf(text, sizeof text, "k=${file:%s}\n", locked);
  p = parse(text, &rc, err);
  if (geteuid() != 0) { /* root reads any file */
    CHECK_INT(rc, KG_EINVAL);
    CHECK_CONTAINS(err, "refers to file");
    CHECK_CONTAINS(err, "Permission denied");
  }
  CHECK(!strstr(err, "Hidden-Text-1"));
  kg_props_destroy(p);

  snprintf(text, sizeof text, "k=${file:%s}\n", dir);
  p = parse(text, &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  snprintf(want, sizeof want, "job.pull:1: property k refers to %s, which is not a file", dir);
  CHECK_STR(err, want);
  kg_props_destroy(p);

  const char *nul = file_with("nul", "ab\0cd", 5, 0600);
  snprintf(text, sizeof text, "k=${file:%s}\n", nul);
  p = parse(text, &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  CHECK_CONTAINS(err, "holds a NUL byte");
  kg_props_destroy(p);

  p = parse("k=${file:}\n", &rc, err);
  CHECK_INT(rc, KG_EINVAL);
  CHECK_STR(err, "job.pull:1: property k: ${file:} names no file");
  kg_props_destroy(p);
}

/* A file its group or others may read: a WARN naming it and its mode; none for one only its owner reads. */
static void test_file_mode_warning(void) {
  char err[KG_ERRLEN] = "", text[1024], log[256];
  int rc;
  snprintf(log, sizeof log, "%s/log", dir);
  char open_file[256];
  snprintf(open_file, sizeof open_file, "%s", file_with("open", "Mode-Secret-2\n", 14, 0644));
  snprintf(text, sizeof text, "my.password=${file:%s}\n", open_file);
  kg_log_set_level(KG_LOG_WARN);
  CHECK_INT(kg_log_set_file(log), KG_OK);
  kg_props_t *p = parse(text, &rc, err);
  CHECK_INT(rc, KG_OK);
  kg_props_destroy(p);
  const char *closed = file_with("closed", "Mode-Secret-3\n", 14, 0600);
  snprintf(text, sizeof text, "my.password=${file:%s}\n", closed);
  p = parse(text, &rc, err);
  CHECK_INT(rc, KG_OK);
  kg_props_destroy(p);
  kg_log_set_file(NULL);
  kg_log_set_level(KG_LOG_ERROR);
  char *said = slurp(log);
  char want[512];
  snprintf(want, sizeof want,
           "WARN job.pull:1: property my.password reads a secret from %s, which its group or others may read (mode "
           "0644): chmod 600 it\n",
           open_file);
  CHECK_CONTAINS(said, want);
  CHECK(!strstr(said, "/closed"));
  CHECK(!strstr(said, "Mode-Secret"));
  free(said);
}

static void test_names(void) {
  const char *secret[] = {"ssl.key.password",
                          "kafka.consumer.ssl.keystore.password",
                          "kafka.consumer.sasl.oauthbearer.client.secret",
                          "kafka.consumer.sasl.oauthbearer.config",
                          "kafka.consumer.sasl.jaas.config",
                          "kafka.consumer.sasl.password",
                          "fs.s3a.secret.key",
                          "fs.s3a.session.token",
                          "fs.s3a.access.key",
                          "kafka.schema.registry.basic.auth.user.info",
                          "kafka.schema.registry.bearer.auth.token",
                          "metrics.reporting.prometheus.pushgateway.basic.auth.user.info",
                          "gcp.credentials",
                          "ssl.keystore.key",
                          NULL};
  for (const char **k = secret; *k; k++) {
    if (!kg_props_is_secret(*k, "x")) fprintf(stderr, "not taken for a secret: %s\n", *k);
    CHECK(kg_props_is_secret(*k, "x"));
  }
  const char *plain[] = {"ssl.key.location",
                         "ssl.ca.location",
                         "kafka.consumer.ssl.keystore.location",
                         "kafka.schema.registry.ssl.ca.location",
                         "kafka.schema.registry.basic.auth.credentials.source",
                         "bearer.auth.credentials.source",
                         "hadoop.security.credential.provider.path",
                         "ssl.keystore.type",
                         "kafka.consumer.sasl.username",
                         "kafka.consumer.sasl.oauthbearer.token.endpoint.url",
                         "kafka.consumer.sasl.kerberos.keytab",
                         NULL};
  for (const char **k = plain; *k; k++) {
    if (kg_props_is_secret(*k, "x")) fprintf(stderr, "taken for a secret: %s\n", *k);
    CHECK(!kg_props_is_secret(*k, "x"));
  }
  /* A URL with a password is a secret whatever the name, a pointer's included. */
  CHECK(kg_props_is_secret("kafka.consumer.sasl.oauthbearer.token.endpoint.url", "https://a:b@idp/token"));
}

/* Every row the properties table marks secret is one by its name, and every row whose name is one is marked. */
static void test_rows(void) {
  size_t n = 0;
  const kg_property_t *const *rows = kg_config_properties(&n);
  size_t marked = 0;
  for (size_t i = 0; i < n; i++) {
    bool by_name = kg_props_is_secret(rows[i]->name, NULL);
    if (by_name != rows[i]->secret)
      fprintf(stderr, "row %s: secret %d, by its name %d\n", rows[i]->name, rows[i]->secret, by_name);
    CHECK(by_name == rows[i]->secret);
    marked += rows[i]->secret;
  }
  CHECK(marked >= 3);
}

static void test_mask(void) {
  kg_secret_forget_all();
  char text[128];
  snprintf(text, sizeof text, "abc");
  CHECK_INT(kg_secret_mask(text), 0);
  kg_secret_note("abc"); /* too short to look for */
  kg_secret_note("hunter22");
  kg_secret_note("hunter2233"); /* the longest first: no tail of it is left */
  kg_secret_note("q\"uote");
  snprintf(text, sizeof text, "abc hunter22, hunter2233 and hunter22hunter22.");
  CHECK_INT(kg_secret_mask(text), 4);
  CHECK_STR(text, "abc ****, **** and ********.");
  snprintf(text, sizeof text, "{\"v\":\"q\\\"uote\"}"); /* as JSON writes it */
  kg_secret_mask(text);
  CHECK_STR(text, "{\"v\":\"****\"}");
  char bytes[] = {'h', 'u', 'n', 't', 'e', 'r', '2', '2', 0, 'x'};
  size_t len = sizeof bytes;
  CHECK_INT(kg_secret_mask_bytes(bytes, &len), 1);
  CHECK_INT(len, 6);
  CHECK(!memcmp(bytes, "****\0x", 6));

  /* In every error text, and every log line. */
  char err[KG_ERRLEN];
  kg_fail(err, KG_EINVAL, "refused value '%s'", "hunter22");
  CHECK_STR(err, "refused value '****'");
  char log[256];
  snprintf(log, sizeof log, "%s/mask.log", dir);
  kg_log_set_level(KG_LOG_DEBUG);
  kg_log_set_file(log);
  KG_DEBUG("librdkafka CONF: sasl.password=%s", "hunter22");
  kg_log_set_format(KG_LOG_FORMAT_JSON);
  KG_INFO("a value: %s", "q\"uote");
  kg_log_set_format(KG_LOG_FORMAT_TEXT);
  kg_log_set_file(NULL);
  kg_log_set_level(KG_LOG_ERROR);
  char *said = slurp(log);
  CHECK_CONTAINS(said, "DEBUG librdkafka CONF: sasl.password=****\n");
  CHECK_CONTAINS(said, "\"message\":\"a value: ****\"");
  CHECK(!strstr(said, "hunter22"));
  CHECK(!strstr(said, "uote"));
  free(said);
  kg_secret_forget_all();
  CHECK(!kg_secret_any());
}

/* Resolving a job file notes its secrets: a refused value's error masks it. */
static void test_noted_by_resolve(void) {
  kg_secret_forget_all();
  char err[KG_ERRLEN], text[512];
  int rc;
  const char *pw = file_with("noted", "From-File-4\n", 12, 0600);
  setenv("KG_TEST_SECRET", "From-Env-5", 1);
  snprintf(text, sizeof text, "a.name=${file:%s}\nkafka.consumer.sasl.password=${env:KG_TEST_SECRET}\nplain=Plain-6\n",
           pw);
  kg_props_t *p = parse(text, &rc, err);
  CHECK_INT(rc, KG_OK);
  kg_fail(err, KG_EINVAL, "%s %s %s", kg_props_get(p, "a.name"), kg_props_get(p, "kafka.consumer.sasl.password"),
          kg_props_get(p, "plain"));
  CHECK_STR(err, "**** **** Plain-6");
  kg_props_destroy(p);
  kg_secret_forget_all();
}

/* The registry's credentials: user:password and the source, one way to authenticate. */
static void test_registry_credentials(void) {
  char err[KG_ERRLEN];
  kg_config_t *c = NULL;
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "kafka.schema.registry.basic.auth.user.info=alice:pw:with:colons\n",
                           "x.pull", &c, err),
            KG_OK);
  if (c) {
    const kg_registry_settings_t *s = kg_registry_settings(c);
    CHECK_INT(s->credentials, KG_REGISTRY_CREDENTIALS_USER_INFO);
    CHECK_STR(s->user_info, "alice:pw:with:colons");
  }
  kg_config_destroy(c);
  c = NULL;
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "kafka.schema.registry.basic.auth.user.info=alice\n",
                           "x.pull", &c, err),
            KG_EINVAL);
  CHECK_STR(err, "job.pull:3: property kafka.schema.registry.basic.auth.user.info is not user:password");
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "kafka.schema.registry.basic.auth.credentials.source=USER_INFO\n",
                           "x.pull", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "basic.auth.credentials.source=USER_INFO needs kafka.schema.registry.basic.auth.user.info");
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "kafka.schema.registry.basic.auth.credentials.source=URL\n"
                           "kafka.schema.registry.basic.auth.user.info=a:b\n",
                           "x.pull", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "credentials.source=URL takes the credentials from the URL");
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "kafka.schema.registry.basic.auth.user.info=a:b\n"
                           "kafka.schema.registry.bearer.auth.token=t0ken\n",
                           "x.pull", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "authenticates one way");
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "kafka.schema.registry.ssl.ca.location=/nonexistent/ca.pem\n",
                           "x.pull", &c, err),
            KG_EINVAL);
  CHECK_STR(err, "job.pull:3: property kafka.schema.registry.ssl.ca.location=/nonexistent/ca.pem: the CA file cannot "
                 "be read: No such file or directory");
  CHECK_INT(kg_test_config("kafka.brokers=k:9092\ntopic.whitelist=t\n"
                           "metrics.reporting.prometheus.pushgateway.basic.auth.user.info=gw:pw:2\n",
                           "x.pull", &c, err),
            KG_OK);
  if (c) {
    const kg_prom_reporter_options_t *o = kg_prom_reporter_options(c);
    CHECK_STR(o->pushgateway_user, "gw");
    CHECK_STR(o->pushgateway_password, "pw:2");
  }
  kg_config_destroy(c);
  kg_secret_forget_all();
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  if (!mkdtemp(dir)) return 1;
  test_file_reference();
  test_file_errors();
  test_file_mode_warning();
  test_names();
  test_rows();
  test_mask();
  test_noted_by_resolve();
  test_registry_credentials();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
  TEST_MAIN_END();
}
