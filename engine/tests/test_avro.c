/* test_avro.c: the task's schema table (equal schemas share an index), the datum check (what it refuses, where,
 * and its work bounded by the datum's size), whether one schema holds another's datums, and the reading of framed
 * payloads: a header too short, a magic byte other than 0, a datum that is not one of its schema (the registry's
 * answer served by a one-schema HTTP responder of this file), and a registry that does not answer (bounded time,
 * KG_EREGISTRY). Reading with a real registry is in spec/integration/avro_spec.lua. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "avro_codec.h"
#include "log.h"
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
  char *text = kg_xasprintf("kafka.brokers=b:1\nkafka.deserializer.type=CONFLUENT_AVRO\nkafka.schema.registry.url=%s\n"
                            "kafka.schema.registry.retry.timeout.ms=2000\n",
                            url);
  kg_config_t *c = NULL;
  if (kg_test_config(text, "job.pull", &c, err)) fprintf(stderr, "%s\n", err);
  free(text);
  return c;
}

/* A datum of SCHEMA (JSON text) checked: the code, with the message in ERR and the nodes walked in *WORK. */
static int check(const char *schema, const char *data, size_t len, int64_t *work, char *err) {
  char perr[KG_ERRLEN];
  kg_avro_shape_t *shape = kg_avro_shape_parse(schema, strlen(schema), perr);
  if (!shape) {
    fprintf(stderr, "%s\n", perr);
    return 99;
  }
  int rc = kg_avro_check_datum(shape, data, len, work, err);
  CHECK(kg_avro_is_datum(shape, data, len) == (rc == KG_OK));
  kg_avro_shape_free(shape);
  return rc;
}

/* What the check refuses, naming the field; its work is bounded by the datum's bytes whatever counts they claim. */
static void test_datum_check(void) {
  char err[KG_ERRLEN] = "";
  int64_t work = 0;
  const char *rec = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
                    "{\"name\":\"user\",\"type\":{\"type\":\"record\",\"name\":\"U\",\"fields\":["
                    "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":\"string\"}}]}}]}";
  CHECK_INT(check(rec, "\002\004\002a\002b\000", 7, &work, err), KG_OK);
  CHECK_INT(work, 6); /* the record, id, user, tags and its two items */
  CHECK_INT(check(rec, "\002\004\002a\022b\000", 7, &work, err), KG_EINVAL);
  CHECK_STR(err, "it ends early: a string of 9 bytes at byte 5, 2 left at field user.tags[1]");
  CHECK_INT(check(rec, "\002\002\002a\000\000", 6, &work, err), KG_EINVAL);
  CHECK_STR(err, "1 bytes are left after the datum");
  CHECK_INT(check(rec, "\x02\x7e\x02", 3, &work, err), KG_EINVAL);
  CHECK_STR(err, "block count 63 at byte 2 is more than the 1 bytes left can hold at field user.tags[0]");
  const char *map = "{\"type\":\"map\",\"values\":[\"null\",\"int\"]}";
  CHECK_INT(check(map, "\002\002k\004\000", 5, &work, err), KG_EINVAL);
  CHECK_STR(err, "union branch index 2 is out of range (2 branches) at field [\"k\"]");

  /* Items that take no bytes: 2 KB of blocks of 2^24 nulls each claims 8.6 billion items. Refused at the first
   * block, naming the field, after walking a handful of nodes. */
  const char *nulls = "{\"type\":\"record\",\"name\":\"N\",\"fields\":[{\"name\":\"gaps\",\"type\":"
                      "{\"type\":\"array\",\"items\":\"null\"}}]}";
  char hostile[2048];
  size_t n = 0;
  while (n + 5 < sizeof hostile) { /* block count 2^24, zig-zag: 2^25 = 80 80 80 10 */
    memcpy(hostile + n, "\x80\x80\x80\x10", 4);
    n += 4;
  }
  hostile[n++] = 0;
  CHECK_INT(check(nulls, hostile, n, &work, err), KG_ERANGE);
  CHECK_CONTAINS(err, "a block of 16777216 items of a type that takes no bytes, more than the ");
  CHECK_CONTAINS(err, "at field gaps[0]");
  CHECK(work < 10);
  /* Blocks of 1000 nulls, each within the bound, together over it: refused once the datum's budget is spent. */
  n = 0;
  while (n + 3 < sizeof hostile) { /* block count 1000, zig-zag: 2000 = d0 0f */
    memcpy(hostile + n, "\xd0\x0f", 2);
    n += 2;
  }
  hostile[n++] = 0;
  CHECK_INT(check(nulls, hostile, n, &work, err), KG_ERANGE);
  CHECK_CONTAINS(err, "items of a type that takes no bytes");
  CHECK_CONTAINS(err, "at field gaps[");
  int64_t budget = KG_AVRO_EMPTY_ITEMS + KG_AVRO_EMPTY_ITEMS_PER_BYTE * (int64_t)n;
  CHECK(work <= budget + 1000);
  /* Within the budget, nulls are a datum like any other. */
  CHECK_INT(check(nulls, "\x80\x40\x00", 3, &work, err), KG_OK); /* 4096 nulls */
  CHECK_INT(work, 4096 + 2);

  /* A valid datum nested deeper than kingest reads is refused as such, not as "not a datum". */
  const char *list = "{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"next\",\"type\":[\"null\",\"L\"]}]}";
  char deep[600];
  memset(deep, 2, sizeof deep); /* 599 times branch 1 (another L), then branch 0 (null) */
  deep[sizeof deep - 1] = 0;
  CHECK_INT(check(list, deep, sizeof deep, &work, err), KG_ERANGE);
  CHECK_CONTAINS(err, "it is nested deeper than 512 levels at field ...");
  CHECK_CONTAINS(err, "next.next.next");
  CHECK_INT(check(list, deep + 500, 100, &work, err), KG_OK);
}

/* Which schema holds which one's datums with nothing lost. */
static void test_holds(void) {
  kg_avro_schemas_t *s = kg_avro_schemas_new();
  char err[KG_ERRLEN];
  const char *v1 = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                   "{\"name\":\"id\",\"type\":\"int\"},{\"name\":\"kind\",\"type\":{\"type\":\"enum\","
                   "\"name\":\"K\",\"symbols\":[\"A\",\"B\"]}}]}";
  /* v1 with a field added (with a default), id made a long, an enum symbol added */
  const char *v2 = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                   "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"kind\",\"type\":{\"type\":\"enum\","
                   "\"name\":\"K\",\"symbols\":[\"A\",\"B\",\"C\"]}},"
                   "{\"name\":\"country\",\"type\":\"string\",\"default\":\"?\"}]}";
  /* v2 without kind, and country renamed to land (alias country) */
  const char *v3 = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                   "{\"name\":\"id\",\"type\":\"long\"},"
                   "{\"name\":\"land\",\"aliases\":[\"country\"],\"type\":[\"null\",\"string\"],\"default\":null}]}";
  /* a field without a default that the others lack */
  const char *v4 = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                   "{\"name\":\"id\",\"type\":\"double\"},{\"name\":\"must\",\"type\":\"int\"}]}";
  int32_t i1, i2, i3, i4;
  CHECK_INT(kg_avro_schemas_add(s, v1, strlen(v1), &i1, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, v2, strlen(v2), &i2, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, v3, strlen(v3), &i3, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, v4, strlen(v4), &i4, err), KG_OK);
  const char *why;
  CHECK(kg_avro_schemas_holds(s, i1, i1, &why));
  CHECK(kg_avro_schemas_holds(s, i1, i2, &why));  /* older into newer: defaults filled, int into long */
  CHECK(!kg_avro_schemas_holds(s, i2, i1, &why)); /* newer into older: a long into an int */
  CHECK_STR(why, "the writer's long does not resolve to the reader's int at field id");
  CHECK(!kg_avro_schemas_holds(s, i2, i3, &why)); /* kind would go */
  CHECK_STR(why, "the reader's record t.E has no such field at field kind");
  CHECK(!kg_avro_schemas_holds(s, i1, i3, &why));
  CHECK(!kg_avro_schemas_holds(s, i3, i2, &why)); /* a writer's alias means nothing to the reader */
  CHECK_STR(why, "the reader's record t.E has no such field at field land");
  CHECK(!kg_avro_schemas_holds(s, i1, i4, &why));
  CHECK_STR(why, "the reader's record t.E has no such field at field kind");
  const char *v5 = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                   "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"kind\",\"type\":{\"type\":\"enum\","
                   "\"name\":\"K\",\"symbols\":[\"A\"]}},{\"name\":\"land\",\"aliases\":[\"country\"],"
                   "\"type\":\"string\"}]}";
  int32_t i5;
  CHECK_INT(kg_avro_schemas_add(s, v5, strlen(v5), &i5, err), KG_OK);
  CHECK(!kg_avro_schemas_holds(s, i2, i5, &why)); /* B is not a symbol of v5's K */
  CHECK_STR(why, "symbol B of enum t.K is not the reader's at field kind");
  CHECK(kg_avro_schemas_holds(s, i2, i3, &why) == false);
  /* The reader's alias matches the writer's field: country into land; a string into a union with a string. */
  const char *v6 = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                   "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"country\",\"type\":\"string\"}]}";
  int32_t i6;
  CHECK_INT(kg_avro_schemas_add(s, v6, strlen(v6), &i6, err), KG_OK);
  CHECK(kg_avro_schemas_holds(s, i6, i3, &why));
  CHECK(!kg_avro_schemas_holds(s, i3, i6, &why)); /* land is not country for a reader without the alias */
  /* long into double may lose digits */
  const char *d = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                  "{\"name\":\"id\",\"type\":\"double\"}]}";
  const char *l = "{\"type\":\"record\",\"name\":\"E\",\"namespace\":\"t\",\"fields\":["
                  "{\"name\":\"id\",\"type\":\"long\"}]}";
  int32_t id, il;
  CHECK_INT(kg_avro_schemas_add(s, d, strlen(d), &id, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, l, strlen(l), &il, err), KG_OK);
  CHECK(!kg_avro_schemas_holds(s, il, id, &why));
  CHECK_STR(why, "long to double does not keep every value at field id");
  CHECK(kg_avro_schemas_holds(s, id, id, &why));
  CHECK(!kg_avro_schemas_holds(s, id, i4, &why)); /* must has no default */
  CHECK_STR(why, "the writer has no such field and the reader's has no default at field must");
  /* Recursive schemas end. */
  const char *list = "{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
                     "{\"name\":\"next\",\"type\":[\"null\",\"L\"]}]}";
  const char *list2 = "{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"v\",\"type\":\"long\"},"
                      "{\"name\":\"next\",\"type\":[\"null\",\"L\"]},{\"name\":\"w\",\"type\":\"int\","
                      "\"default\":0}]}";
  int32_t il1, il2;
  CHECK_INT(kg_avro_schemas_add(s, list, strlen(list), &il1, err), KG_OK);
  CHECK_INT(kg_avro_schemas_add(s, list2, strlen(list2), &il2, err), KG_OK);
  CHECK(kg_avro_schemas_holds(s, il1, il2, &why));
  CHECK(!kg_avro_schemas_holds(s, il2, il1, &why));
  CHECK_STR(why, "the writer's long does not resolve to the reader's int at field v");
  kg_avro_schemas_destroy(s);
}

/* A registry of one schema on a loopback port: GET .../schemas/ids/7 answers it, anything else 404. */
typedef struct {
  int fd;
  int port;
  const char *schema_json; /* the answer's body */
  pthread_t thread;
} responder_t;

static void *respond(void *arg) {
  responder_t *r = arg;
  for (;;) {
    int c = accept(r->fd, NULL, NULL);
    if (c < 0) return NULL;
    char req[4096];
    size_t n = 0;
    ssize_t got;
    while (n + 1 < sizeof req && (got = read(c, req + n, sizeof req - 1 - n)) > 0) {
      n += (size_t)got;
      req[n] = 0;
      if (strstr(req, "\r\n\r\n")) break;
    }
    req[n] = 0;
    if (!strncmp(req, "GET /quit", 9)) {
      close(c);
      return NULL;
    }
    bool known = strstr(req, "GET /schemas/ids/7 ") != NULL;
    char *answer = known ? kg_xasprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                                        "Connection: close\r\n\r\n%s",
                                        strlen(r->schema_json), r->schema_json)
                         : kg_xasprintf("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    if (write(c, answer, strlen(answer)) < 0) {
    }
    free(answer);
    close(c);
  }
}

static int responder_start(responder_t *r, const char *schema_json) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  r->schema_json = schema_json;
  r->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (r->fd < 0 || bind(r->fd, (struct sockaddr *)&a, sizeof a) || listen(r->fd, 16) ||
      getsockname(r->fd, (struct sockaddr *)&a, &len))
    return -1;
  r->port = ntohs(a.sin_port);
  return pthread_create(&r->thread, NULL, respond, r);
}

static void responder_stop(responder_t *r) {
  int c = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {
      .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons((uint16_t)r->port)};
  if (c >= 0 && !connect(c, (struct sockaddr *)&a, sizeof a) && write(c, "GET /quit HTTP/1.1\r\n\r\n", 23) > 0)
    pthread_join(r->thread, NULL);
  if (c >= 0) close(c);
  close(r->fd);
}

/* After the header, the engine checks the datum against the id's schema: bytes that are not one datum of it are
 * a bad record, named so, and never reach the script or the writer. */
static void test_frame_checks_datum(void) {
  char err[KG_ERRLEN] = "";
  responder_t r;
  CHECK_INT(responder_start(&r, "{\"schema\":\"{\\\"type\\\":\\\"record\\\",\\\"name\\\":\\\"E\\\","
                                "\\\"fields\\\":[{\\\"name\\\":\\\"id\\\",\\\"type\\\":\\\"long\\\"},"
                                "{\\\"name\\\":\\\"name\\\",\\\"type\\\":\\\"string\\\"}]}\"}"),
            0);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", r.port);
  kg_config_t *c = config(url);
  kg_avro_schemas_t *s = kg_avro_schemas_new();
  kg_avro_input_t *in = NULL;
  CHECK_INT(kg_avro_input_new(c, s, &in, err), KG_OK);
  int32_t index = -1;
  const char *datum = NULL;
  size_t datum_len = 0;
  /* schema id 7: long 1, string "ab" */
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\007\002\004ab", 9, &index, &datum, &datum_len, err), KG_OK);
  CHECK_INT(datum_len, 4);
  CHECK(index >= 0);
  /* the string claims 3 bytes, 2 follow */
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\007\002\006ab", 9, &index, &datum, &datum_len, err), KG_EINVAL);
  CHECK_STR(err, "the 4 bytes after the header are not one Avro datum of schema 7: it ends early: a string of 3 bytes "
                 "at byte 2, 2 left at field name");
  /* a byte more than the datum */
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\007\002\004abc", 10, &index, &datum, &datum_len, err), KG_EINVAL);
  CHECK_STR(err, "the 5 bytes after the header are not one Avro datum of schema 7: 1 bytes are left after the datum");
  CHECK_INT(kg_avro_input_requests(in), 1); /* the id was asked for once */
  kg_avro_input_destroy(in);
  kg_avro_schemas_destroy(s);
  kg_config_destroy(c);
  responder_stop(&r);
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
  /* A registry that does not answer: tried again until kafka.schema.registry.retry.timeout.ms, in bounded time, and
   * an error that fails the task. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\x01\x02", 6, &index, &datum, &datum_len, err), KG_EREGISTRY);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK_CONTAINS(err, "http://127.0.0.1:9/apis/ccompat/v7");
  CHECK_CONTAINS(err, "(kafka.schema.registry.retry.timeout.ms=2000)");
  int64_t asked = kg_avro_input_requests(in);
  CHECK(asked >= 2);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK(secs < 30);
  /* Not remembered: the next record asks again. */
  CHECK_INT(kg_avro_input_frame(in, "\0\0\0\0\x01\x02", 6, &index, &datum, &datum_len, err), KG_EREGISTRY);
  CHECK(kg_avro_input_requests(in) >= 2 * asked);
  int32_t latest = -1;
  CHECK_INT(kg_avro_input_latest(in, "t", false, &latest, err), KG_EREGISTRY);
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
  test_datum_check();
  test_holds();
  test_frame_checks_datum();
  test_framing();
  TEST_MAIN_END();
}
