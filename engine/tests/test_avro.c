/* test_avro.c: the task's schema table (equal schemas share an index) and the reading of framed payloads up to
 * the registry: a header too short, a magic byte other than 0, and a registry that does not answer (bounded
 * time, KG_EREGISTRY). Reading with a real registry is in spec/integration/avro_spec.lua. */
#include <time.h>

#include "config.h"
#include "kg_avro.h"
#include "props.h"
#include "test.h"

static void test_schemas(void) {
  char err[KG_ERRLEN] = "";
  kg_avro_schemas_t *s = kg_avro_schemas_new();
  const char *a = "{\"type\":\"record\",\"name\":\"E\",\"fields\":[{\"name\":\"x\",\"type\":\"long\"}]}";
  const char *a_spaced = "{ \"type\": \"record\", \"name\": \"E\", \"doc\": \"d\",\n"
                         "  \"fields\": [ {\"name\": \"x\", \"type\": \"long\"} ] }";
  const char *b = "{\"type\":\"record\",\"name\":\"E\",\"fields\":[{\"name\":\"x\",\"type\":\"int\"}]}";
  int32_t ia = -1, ia2 = -1, ib = -1, ia3 = -1;
  CHECK_INT(kg_avro_schemas_add(s, a, strlen(a), &ia, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, a_spaced, strlen(a_spaced), &ia2, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, b, strlen(b), &ib, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, a, strlen(a), &ia3, err), KG_OK);
  CHECK_INT(ia, 0);
  CHECK_INT(ia2, ia); /* the same schema, whitespace and doc aside */
  CHECK_INT(ia3, ia);
  CHECK_INT(ib, 1);
  size_t len = 0;
  CHECK_STR(kg_avro_schemas_text(s, ia, &len), a); /* the first text met is the one kept */
  CHECK_INT(len, strlen(a));
  CHECK(kg_avro_schemas_text(s, 2, &len) == NULL);
  CHECK(kg_avro_schemas_text(s, -1, &len) == NULL);
  /* Datums are checked with the compiled shape: long 1 is one byte; an int cannot take 2^40. */
  CHECK(kg_avro_is_datum(kg_avro_schemas_shape(s, ia), "\x02", 1));
  CHECK(!kg_avro_is_datum(kg_avro_schemas_shape(s, ia), "\x02\x02", 2));
  CHECK(kg_avro_is_datum(kg_avro_schemas_shape(s, ia), "\x80\x80\x80\x80\x80\x01", 6));
  CHECK(!kg_avro_is_datum(kg_avro_schemas_shape(s, ib), "\x80\x80\x80\x80\x80\x01", 6));
  int32_t bad = -1;
  CHECK_INT(kg_avro_schemas_add(s, "{\"type\":\"lnog\"}", 15, &bad, err), KG_EINVAL);
  CHECK_CONTAINS(err, "not a valid Avro schema");
  CHECK_INT(bad, -1);
  kg_avro_schemas_destroy(s);
}

static kg_config_t *config(const char *url) {
  char err[KG_ERRLEN] = "";
  char *text = kg_xasprintf("kafka.brokers=b:1\nkafka.deserializer.type=CONFLUENT_AVRO\nkafka.schema.registry.url=%s\n",
                            url);
  kg_config_t *c = NULL;
  if (kg_test_config(text, "job.pull", &c, err)) fprintf(stderr, "%s\n", err);
  free(text);
  return c;
}

static void test_framing(void) {
  char err[KG_ERRLEN] = "";
  kg_config_t *c = config("http://127.0.0.1:9/apis/ccompat/v7"); /* nothing listens on port 9 */
  CHECK(c != NULL);
  if (!c) return;
  kg_avro_schemas_t *s = kg_avro_schemas_new();
  kg_avro_input_t *in = NULL;
  CHECK_INT(kg_avro_input_new(c, s, &in, err), KG_OK);
  int32_t index = -1;
  const char *datum = NULL;
  size_t datum_len = 0;
  CHECK_INT(kg_avro_input_frame(in, NULL, 0, &index, &datum, &datum_len, err), KG_EINVAL);
  CHECK_CONTAINS(err, "null payload");
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0", 3, &index, &datum, &datum_len, err), KG_EINVAL);
  CHECK_STR(err, "the payload of 3 bytes is too short for Confluent's header (a magic byte 0 and a 4-byte schema id)");
  CHECK_INT(kg_avro_input_frame(in, "\x07\0\0\0\x01\x02", 6, &index, &datum, &datum_len, err), KG_EINVAL);
  CHECK_STR(err, "the payload starts with byte 7, not the magic byte 0 of Confluent's framing");
  CHECK_INT(kg_avro_input_requests(in), 0); /* none of these asked the registry */
  /* A registry that does not answer: every attempt made, in bounded time, and an error that fails the task. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\x01\x02", 6, &index, &datum, &datum_len, err), KG_EREGISTRY);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK_CONTAINS(err, "http://127.0.0.1:9/apis/ccompat/v7");
  CHECK_INT(kg_avro_input_requests(in), KG_REGISTRY_ATTEMPTS);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK(secs < 30);
  /* Not remembered as an unknown id: the next record asks again. */
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\x01\x02", 6, &index, &datum, &datum_len, err), KG_EREGISTRY);
  CHECK_INT(kg_avro_input_requests(in), 2 * KG_REGISTRY_ATTEMPTS);
  int32_t latest = -1;
  CHECK_INT(kg_avro_input_latest(in, "t", &latest, err), KG_EREGISTRY);
  kg_avro_input_destroy(in);
  kg_avro_schemas_destroy(s);
  kg_config_destroy(c);

  /* LinkedIn's header is 17 bytes. */
  char *text = kg_xasprintf("kafka.brokers=b:1\nsource.class=KafkaAvroSource\nkafka.schema.registry.url=%s\n",
                            "http://127.0.0.1:9/x");
  c = NULL;
  CHECK_INT(kg_test_config(text, "job.pull", &c, err), KG_OK);
  free(text);
  if (!c) return;
  s = kg_avro_schemas_new();
  CHECK_INT(kg_avro_input_new(c, s, &in, err), KG_OK);
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16, &index, &datum, &datum_len, err),
            KG_EINVAL);
  CHECK_STR(err, "the payload of 16 bytes is too short for LinkedIn's header (a magic byte 0 and a 16-byte schema id)");
  kg_avro_input_destroy(in);
  kg_avro_schemas_destroy(s);
  kg_config_destroy(c);
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR + 1);
  test_schemas();
  test_framing();
  TEST_MAIN_END();
}
