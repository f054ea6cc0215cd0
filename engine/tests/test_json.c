/* test_json.c: the tree of the JSON parser, exact numbers, the one way every JSON the engine writes escapes its
 * strings (the log's JSON lines included), UTF-8, and the JSON forms of work units, unit results and metrics, each
 * written and read back. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "result.h"
#include "test.h"
#include "workunit.h"

static kg_json_t *parse(const char *text, char *err) {
  kg_json_t *v = NULL;
  if (kg_json_parse(text, strlen(text), "test", &v, err) != KG_OK) return NULL;
  return v;
}

static void test_reader(void) {
  char err[KG_ERRLEN];
  kg_json_t *v =
      parse(" {\"a\": [1, -2, 3.5, 1e3, true, false, null, \"x\\\"y\\\\z\\n\"], \"b\": {}, \"c\": []} ", err);
  CHECK(v != NULL);
  const kg_json_t *a = kg_json_get(v, "a");
  CHECK(a && a->type == KG_JSON_ARRAY && a->count == 8);
  CHECK(a->items[0].is_integer && a->items[0].integer == 1);
  CHECK(a->items[1].is_integer && a->items[1].integer == -2);
  CHECK(!a->items[2].is_integer && a->items[2].number == 3.5);
  CHECK(!a->items[3].is_integer && a->items[3].number == 1000);
  CHECK(a->items[4].type == KG_JSON_BOOL && a->items[4].boolean);
  CHECK(a->items[5].type == KG_JSON_BOOL && !a->items[5].boolean);
  CHECK(a->items[6].type == KG_JSON_NULL);
  CHECK_STR(a->items[7].string, "x\"y\\z\n");
  CHECK(kg_json_get(v, "b")->type == KG_JSON_OBJECT && kg_json_get(v, "b")->count == 0);
  CHECK(kg_json_get(v, "c")->type == KG_JSON_ARRAY && kg_json_get(v, "c")->count == 0);
  CHECK(kg_json_get(v, "missing") == NULL);
  kg_json_free(v);

  /* Integers beyond a double's 53 bits stay exact; unicode escapes become UTF-8, surrogate pairs included, and
   * a string may hold NUL. */
  v = parse("{\"big\": 9223372036854775807, \"small\": -9223372036854775808, \"u\": \"\\u00e9\\ud83d\\ude00\\u0000!\"}",
            err);
  CHECK(v != NULL);
  int64_t n = 0;
  CHECK_INT(kg_json_get_int(v, "big", "test", &n, err), KG_OK);
  CHECK(n == INT64_MAX);
  CHECK_INT(kg_json_get_int(v, "small", "test", &n, err), KG_OK);
  CHECK(n == INT64_MIN);
  const kg_json_t *u = kg_json_get(v, "u");
  CHECK_INT(u->length, 8);
  CHECK(memcmp(u->string, "\xc3\xa9\xf0\x9f\x98\x80\0!", 8) == 0);
  kg_json_free(v);

  /* Typed reads say what was wrong. */
  v = parse("{\"s\": \"x\", \"f\": 1.5, \"n\": null}", err);
  CHECK_INT(kg_json_get_int(v, "s", "doc.json", &n, err), KG_EINVAL);
  CHECK_STR(err, "doc.json: \"s\" must be a whole number");
  CHECK_INT(kg_json_get_int(v, "f", "doc.json", &n, err), KG_EINVAL);
  bool present = true;
  CHECK_INT(kg_json_get_int_or_null(v, "n", "doc.json", &present, &n, err), KG_OK);
  CHECK(!present);
  CHECK_INT(kg_json_get_int_or_null(v, "gone", "doc.json", &present, &n, err), KG_EINVAL);
  const char *s = NULL;
  CHECK_INT(kg_json_get_string(v, "f", "doc.json", &s, err), KG_EINVAL);
  CHECK_STR(err, "doc.json: \"f\" must be a string");
  kg_json_free(v);

  /* Bad documents: each refused with the byte where it went wrong. */
  static const struct {
    const char *text;
    const char *error;
  } bad[] = {
      {"", "doc: invalid JSON at byte 1: no JSON value (the text is empty)"},
      {"{\"a\" 1}", "doc: invalid JSON at byte 6: expected ':' after an object key"},
      {"[1, 2", "doc: invalid JSON at byte 6: an array is not closed"},
      {"{\"a\": 1,}", "doc: invalid JSON at byte 9: an object key must be a string"},
      {"[01]", "doc: invalid JSON at byte 3: a number must not start with 0 followed by digits"},
      {"\"abc", "doc: invalid JSON at byte 5: a string is not closed"},
      {"\"a\tb\"", "doc: invalid JSON at byte 3: a control character in a string must be escaped"},
      {"\"\\x\"", "doc: invalid JSON at byte 2: an unknown escape in a string"},
      {"\"\\ud800x\"", "doc: invalid JSON at byte 2: a surrogate pair is missing its second half"},
      {"tru", "doc: invalid JSON at byte 1: expected a value"},
      {"1 2", "doc: invalid JSON at byte 3: text follows the value"},
      {"-", "doc: invalid JSON at byte 1: a '-' must be followed by a digit"},
      {"1.", "doc: invalid JSON at byte 3: a '.' must be followed by a digit"},
      {"[1e999]", "doc: invalid JSON at byte 2: a number too large for a double"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kg_json_t *x = (kg_json_t *)1;
    CHECK_INT(kg_json_parse(bad[i].text, strlen(bad[i].text), "doc", &x, err), KG_EINVAL);
    CHECK(x == NULL);
    CHECK_STR(err, bad[i].error);
  }
  /* Nesting is bounded, so a hostile document cannot exhaust the stack. */
  char deep[400];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = '\0';
  kg_json_t *x = NULL;
  CHECK_INT(kg_json_parse(deep, strlen(deep), "doc", &x, err), KG_EINVAL);
  CHECK_CONTAINS(err, "nested too deep");
}

/* Whole numbers are those written without a fraction or exponent that fit an int64, read exactly. */
static void test_integers(void) {
  char err[KG_ERRLEN];
  kg_json_t *v = parse("[1.0, 1e0, -0, 9007199254740992, 9007199254740993, -9007199254740993, 18446744073709551615, "
                       "100000000000000000000, 12]",
                       err);
  CHECK(v && v->type == KG_JSON_ARRAY && v->count == 9);
  if (!v || v->count != 9) return;
  static const bool whole[] = {false, false, true, true, true, true, false, false, true};
  static const int64_t values[] = {0, 0, 0, 9007199254740992LL, 9007199254740993LL, -9007199254740993LL, 0, 0, 12};
  for (size_t i = 0; i < 9; i++) {
    CHECK(v->items[i].type == KG_JSON_NUMBER);
    CHECK_INT(v->items[i].is_integer, whole[i]);
    if (whole[i]) CHECK(v->items[i].integer == values[i]);
  }
  CHECK(v->items[0].number == 1 && v->items[1].number == 1);
  CHECK(v->items[6].number == 18446744073709551615.0 && v->items[7].number == 1e20);
  kg_json_free(v);
}

/* A string with every kind of byte the escaping treats apart, and its one escaped form. */
static const char special[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9";
#define SPECIAL_ESCAPED "q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9"

/* Every JSON the engine writes escapes a string the same way: the documents (work units, results, metrics, events,
 * plans, state, quarantined records: kg_json_string), the metrics file, and the log's JSON lines. */
static void test_escaping(void) {
  kg_buf_t b = {0};
  kg_json_string(&b, special);
  CHECK_STR(b.data, "\"" SPECIAL_ESCAPED "\"");
  b.len = 0;
  kg_json_write_string(&b, "a\0b", 3);
  CHECK_STR(b.data, "\"a\\u0000b\"");
  b.len = 0;
  kg_metrics_t m = {0};
  kg_metrics_add(&m, special, 2);
  kg_metrics_json(&m, &b);
  CHECK_STR(b.data, "{\"" SPECIAL_ESCAPED "\":2}");
  kg_metrics_free(&m);
  b.len = 0;
  kg_workunit_t wu = {.topic = (char *)special, .partition = 1, .high = 2, .latest = 2};
  kg_workunit_json(&b, &wu, true);
  CHECK_CONTAINS(b.data, "{\"topic\":\"" SPECIAL_ESCAPED "\",\"partition\":1,");
  kg_buf_free(&b);

  /* The log's JSON lines: the message and the job's fields. A message too long for a line is cut before a whole
   * character or escape, and the line is still one JSON object. */
  char path[64];
  snprintf(path, sizeof path, "/tmp/kg-test-json-%d.log", (int)getpid());
  remove(path);
  CHECK_INT(kg_log_set_file(path), KG_OK);
  kg_log_set_format(KG_LOG_FORMAT_JSON);
  kg_log_set_level(KG_LOG_INFO);
  kg_log_set_job(special, "job_1");
  kg_log(KG_LOG_WARN, "%s", special);
  char *longer = kg_xmalloc(6001);
  for (int i = 0; i < 6000; i++)
    longer[i] = i % 2 ? '\x01' : 'x';
  longer[6000] = '\0';
  kg_log(KG_LOG_WARN, "%s", longer);
  free(longer);
  kg_log_set_job(NULL, NULL);
  kg_log_set_file(NULL);
  kg_log_set_format(KG_LOG_FORMAT_TEXT);
  kg_log_set_level(KG_LOG_ERROR);
  size_t len = 0;
  int error = 0;
  char *log = kg_read_file(path, &len, &error);
  remove(path);
  CHECK(log != NULL);
  if (!log) return;
  CHECK_CONTAINS(log, ",\"level\":\"WARN\",\"message\":\"" SPECIAL_ESCAPED "\",\"job\":\"" SPECIAL_ESCAPED
                      "\",\"job_id\":\"job_1\"}\n");
  char *second = strchr(log, '\n') + 1, *end = strchr(second, '\n');
  CHECK(end != NULL);
  if (end) {
    char err[KG_ERRLEN];
    kg_json_t *v = NULL;
    CHECK_INT(kg_json_parse(second, (size_t)(end - second), "log line", &v, err), KG_OK);
    const kg_json_t *msg = kg_json_get(v, "message");
    CHECK(msg && msg->type == KG_JSON_STRING && msg->length > 1000 && msg->length < 6000);
    for (size_t i = 0; msg && i < msg->length; i++)
      CHECK_INT(msg->string[i], i % 2 ? '\x01' : 'x');
    kg_json_free(v);
  }
  free(log);
}

/* The escaper with too little room stops before a character whose bytes or escape do not fit. */
static void test_escape_room(void) {
  static const struct {
    const char *s;
    size_t cap;
    const char *want;
  } cases[] = {
      {"abc", 0, ""},
      {"abc", 2, "ab"},
      {"abc", 3, "abc"},
      {"a\n", 2, "a"},
      {"a\n", 3, "a\\n"},
      {"a\x01", 6, "a"},
      {"a\x01", 7, "a\\u0001"},
      {"a\xc3\xa9", 2, "a"},
      {"a\xc3\xa9", 3, "a\xc3\xa9"},
      {"a\xf0\x9f\x98\x80", 4, "a"},
      {"a\xf0\x9f\x98\x80", 5, "a\xf0\x9f\x98\x80"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[16];
    size_t n = kg_json_escape(out, cases[i].cap, cases[i].s, strlen(cases[i].s));
    out[n] = '\0';
    CHECK_STR(out, cases[i].want);
  }
}

/* The UTF-8 encoder at each boundary of its sizes, and its output valid UTF-8. */
static void test_utf8(void) {
  static const struct {
    uint32_t cp;
    const char *bytes;
  } cases[] = {
      {0x41, "A"},
      {0x7f, "\x7f"},
      {0x80, "\xc2\x80"},
      {0x7ff, "\xdf\xbf"},
      {0x800, "\xe0\xa0\x80"},
      {0xffff, "\xef\xbf\xbf"},
      {0x10000, "\xf0\x90\x80\x80"},
      {0x10ffff, "\xf4\x8f\xbf\xbf"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[5];
    size_t n = kg_utf8_encode(out, cases[i].cp);
    out[n] = '\0';
    CHECK_STR(out, cases[i].bytes);
    CHECK(kg_utf8_valid(out, n));
  }
  char out[4];
  CHECK_INT(kg_utf8_encode(out, 0xd800), 3); /* a surrogate has the form of its size, and is not valid UTF-8 */
  CHECK(!kg_utf8_valid(out, 3));
  CHECK(!kg_utf8_valid("\xc0\x80", 2));         /* overlong */
  CHECK(!kg_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
  CHECK(!kg_utf8_valid("\xe0\xa0", 2));         /* cut short */
}

static void test_doubles(void) {
  /* Every double written by kg_json_double reads back as the same bits. */
  char err[KG_ERRLEN];
  double values[] = {0, -0.0, 1, -1, 0.1, 1.0 / 3, 2.5e-300, 1.7976931348623157e308, 123456789.125, 9e15, 1e16};
  srand(7);
  for (size_t i = 0; i < sizeof values / sizeof values[0] + 1000; i++) {
    double d = i < sizeof values / sizeof values[0] ? values[i] : (rand() - RAND_MAX / 2) * pow(10, rand() % 40 - 20);
    kg_buf_t b = {0};
    kg_json_double(&b, d);
    kg_json_t *v = NULL;
    CHECK_INT(kg_json_parse(b.data, b.len, "double", &v, err), KG_OK);
    if (v) CHECK(v->number == d);
    kg_json_free(v);
    kg_buf_free(&b);
  }
  kg_buf_t b = {0};
  kg_json_double(&b, NAN);
  CHECK_STR(b.data, "null");
  kg_buf_free(&b);
}

static void test_workunit(void) {
  char err[KG_ERRLEN];
  kg_workunit_t wu = {.topic = "events \"eu\"",
                      .partition = 7,
                      .low = 10,
                      .high = 5000000000LL,
                      .earliest = 3,
                      .latest = 5000000000LL,
                      .has_stored = true,
                      .stored = 10,
                      .reason = KG_START_RECREATED,
                      .est_size = 1.0 / 3};
  kg_buf_t b = {0};
  kg_workunit_json(&b, &wu, true);
  kg_json_t *v = NULL;
  CHECK_INT(kg_json_parse(b.data, b.len, "unit", &v, err), KG_OK);
  kg_workunit_t back;
  CHECK_INT(kg_workunit_from_json(v, "unit", &back, err), KG_OK);
  CHECK_STR(back.topic, wu.topic);
  CHECK_INT(back.partition, 7);
  CHECK_INT(back.low, 10);
  CHECK_INT(back.high, 5000000000LL);
  CHECK_INT(back.earliest, 3);
  CHECK_INT(back.latest, 5000000000LL);
  CHECK(back.has_stored && back.stored == 10);
  CHECK_INT(back.reason, KG_START_RECREATED);
  CHECK(back.est_size == wu.est_size);
  kg_workunit_clear(&back);
  kg_json_free(v);

  /* The plan's form: the same members, the size with 6 digits; no stored offset is null. */
  b.len = 0;
  wu.has_stored = false;
  wu.reason = KG_START_BOOTSTRAP;
  kg_workunit_json(&b, &wu, false);
  CHECK_STR(b.data,
            "{\"topic\":\"events \\\"eu\\\"\",\"partition\":7,\"low\":10,\"high\":5000000000,\"range\":4999999990,"
            "\"earliest\":3,\"latest\":5000000000,\"stored\":null,\"start\":\"bootstrap\","
            "\"estimatedSize\":0.333333}");
  CHECK_INT(kg_json_parse(b.data, b.len, "unit", &v, err), KG_OK);
  CHECK_INT(kg_workunit_from_json(v, "unit", &back, err), KG_OK);
  CHECK(!back.has_stored);
  kg_workunit_clear(&back);
  kg_json_free(v);
  kg_buf_free(&b);

  /* Each reason name reads back; a broken unit is refused, naming the member. */
  for (int r = KG_START_PREVIOUS; r <= KG_START_RECREATED; r++) {
    kg_start_reason_t back_r;
    CHECK(kg_start_reason_parse(kg_start_reason_name((kg_start_reason_t)r), &back_r) && (int)back_r == r);
  }
  const char *broken = "{\"topic\":\"t\",\"partition\":0,\"low\":1,\"high\":\"2\",\"earliest\":0,\"latest\":2,"
                       "\"stored\":null,\"start\":\"previous\",\"estimatedSize\":1}";
  CHECK_INT(kg_json_parse(broken, strlen(broken), "unit", &v, err), KG_OK);
  CHECK_INT(kg_workunit_from_json(v, "units.json", &back, err), KG_EINVAL);
  CHECK_STR(err, "units.json: \"high\" must be a whole number");
  CHECK(back.topic == NULL);
  kg_json_free(v);
}

static void test_unit_result(void) {
  char err[KG_ERRLEN];
  kg_workunit_t wu = {.topic = "t", .partition = 2};
  kg_unit_result_t r = {.actual_high = 120,
                        .records = 100,
                        .bytes = 9000,
                        .elapsed_ms = 33,
                        .decode_errors = 4,
                        .skipped = 3,
                        .quarantined = 1,
                        .deleted = 20,
                        .tombstones = 4,
                        .written = 150,
                        .fetch_failed = true,
                        .premature_stop = true,
                        .stopped = true};
  snprintf(r.stop_reason, sizeof r.stop_reason, "stopped by \"SIGTERM\"");
  snprintf(r.fetch_error, sizeof r.fetch_error, "no record for 300 ms (kafka.brokers=localhost:9092)");
  r.last = kg_fingerprint_of(119, 1700000000000LL, "k", 1, "value", 5);
  kg_buf_t b = {0};
  kg_unit_result_json(&b, &wu, &r);
  kg_json_t *v = NULL;
  CHECK_INT(kg_json_parse(b.data, b.len, "result", &v, err), KG_OK);
  kg_unit_result_t back;
  CHECK_INT(kg_unit_result_from_json(v, &wu, "result", &back, err), KG_OK);
  CHECK_INT(back.actual_high, 120);
  CHECK_INT(back.records, 100);
  CHECK_INT(back.bytes, 9000);
  CHECK_INT(back.elapsed_ms, 33);
  CHECK_INT(back.decode_errors, 4);
  CHECK_INT(back.skipped, 3);
  CHECK_INT(back.quarantined, 1);
  CHECK_INT(back.deleted, 20);
  CHECK_INT(back.tombstones, 4);
  CHECK_INT(back.written, 150);
  CHECK(back.fetch_failed && back.premature_stop && back.stopped);
  CHECK_STR(back.stop_reason, r.stop_reason);
  CHECK_STR(back.fetch_error, r.fetch_error);
  CHECK(kg_fingerprint_same(&back.last, &r.last));
  kg_json_free(v);

  /* Without a last record; and the result of another partition is refused. */
  b.len = 0;
  memset(&r, 0, sizeof r);
  kg_unit_result_json(&b, &wu, &r);
  CHECK_INT(kg_json_parse(b.data, b.len, "result", &v, err), KG_OK);
  CHECK_INT(kg_unit_result_from_json(v, &wu, "result", &back, err), KG_OK);
  CHECK(!back.last.set);
  kg_workunit_t other = {.topic = "t", .partition = 3};
  CHECK_INT(kg_unit_result_from_json(v, &other, "results.json", &back, err), KG_EINVAL);
  CHECK_STR(err, "results.json: the result of t:2 where t:3 was expected");
  kg_json_free(v);
  kg_buf_free(&b);
}

static void test_metrics(void) {
  char err[KG_ERRLEN];
  kg_metrics_t m = {0};
  kg_metrics_add(&m, KG_M_RECORDS_READ, 1000000);
  kg_metrics_add(&m, "script.meter.meanRate", 1234.5678901234);
  kg_metrics_add(&m, "odd \"name\"", -0.25);
  kg_buf_t b = {0};
  kg_metrics_json_exact(&m, &b);
  kg_json_t *v = NULL;
  CHECK_INT(kg_json_parse(b.data, b.len, "metrics", &v, err), KG_OK);
  kg_metrics_t back = {0};
  CHECK_INT(kg_metrics_from_json(&back, v, "metrics", err), KG_OK);
  CHECK_INT(back.count, 3);
  for (size_t i = 0; i < m.count; i++)
    CHECK(kg_metrics_get(&back, m.names[i]) == m.values[i]);
  kg_json_free(v);
  kg_buf_free(&b);
  kg_metrics_free(&back);
  kg_metrics_free(&m);
  CHECK_INT(kg_json_parse("{\"a\": \"1\"}", 10, "metrics", &v, err), KG_OK);
  CHECK_INT(kg_metrics_from_json(&back, v, "m.json", err), KG_EINVAL);
  CHECK_STR(err, "m.json: metric \"a\" must be a number");
  kg_json_free(v);
  kg_metrics_free(&back);
}

static void test_task_result(void) {
  char err[KG_ERRLEN];
  kg_workunit_t a = {.topic = "a", .partition = 0}, b = {.topic = "b", .partition = 5};
  kg_workunit_t *units[] = {&a, &b};
  kg_task_t t = {0};
  t.spec.task_id = "task_job_1_0";
  t.spec.units = units;
  t.spec.nunits = 2;
  t.result.succeeded = false;
  t.result.rc = KG_EBUDGET;
  snprintf(t.result.error, sizeof t.result.error, "over \"budget\"");
  snprintf(t.result.first_error, sizeof t.result.first_error, "a:0 offset 3: decodeRecord failed: x");
  t.result.elapsed_ms = 77;
  kg_unit_result_t results[2] = {{.actual_high = 10, .records = 10}, {.actual_high = 3, .records = 2, .deleted = 1}};
  t.result.units = results;
  kg_task_file_t files[1] = {{"a", "/d/task-output/a/part.x.txt", "/out/a/part.x.txt"}};
  t.result.files = files;
  t.result.nfiles = 1;
  kg_metrics_add(&t.result.metrics, KG_M_RECORDS_READ, 12);
  kg_metrics_add(&t.result.metrics, "x.meanRate", 0.1);
  kg_buf_t buf = {0};
  kg_task_result_json(&buf, &t);
  kg_json_t *v = NULL;
  CHECK_INT(kg_json_parse(buf.data, buf.len, "result", &v, err), KG_OK);
  kg_task_t back = {0};
  back.spec = t.spec;
  CHECK_INT(kg_task_result_from_json(v, &back, "result", err), KG_OK);
  CHECK(!back.result.succeeded);
  CHECK_INT(back.result.rc, KG_EBUDGET);
  CHECK_STR(back.result.error, t.result.error);
  CHECK_STR(back.result.first_error, t.result.first_error);
  CHECK_INT(back.result.elapsed_ms, 77);
  CHECK_INT(back.result.units[0].actual_high, 10);
  CHECK_INT(back.result.units[1].deleted, 1);
  CHECK_INT(back.result.nfiles, 1);
  CHECK_STR(back.result.files[0].final, "/out/a/part.x.txt");
  CHECK(kg_metrics_get(&back.result.metrics, "x.meanRate") == 0.1);
  CHECK(kg_metrics_get(&back.result.metrics, KG_M_RECORDS_READ) == 12);
  /* Written again, it is the same document. */
  kg_buf_t again = {0};
  kg_task_result_json(&again, &back);
  CHECK_STR(again.data, buf.data);
  kg_buf_free(&again);
  back.spec.task_id = NULL;
  back.spec.units = NULL;
  kg_task_clear(&back);
  /* Another task's result, or one with too few units, is refused. */
  kg_task_t other = {0};
  other.spec = t.spec;
  other.spec.task_id = "task_job_1_1";
  CHECK_INT(kg_task_result_from_json(v, &other, "r.json", err), KG_EINVAL);
  CHECK_STR(err, "r.json: the result of task task_job_1_0 where task_job_1_1 was expected");
  other.spec.task_id = t.spec.task_id;
  other.spec.nunits = 1;
  CHECK_INT(kg_task_result_from_json(v, &other, "r.json", err), KG_EINVAL);
  CHECK_CONTAINS(err, "\"units\" must be an array of the 1 results");
  CHECK(other.result.units == NULL);
  kg_json_free(v);
  kg_buf_free(&buf);
  kg_metrics_free(&t.result.metrics);
}

int main(void) {
  test_reader();
  test_integers();
  test_escaping();
  test_escape_room();
  test_utf8();
  test_doubles();
  test_workunit();
  test_unit_result();
  test_metrics();
  test_task_result();
  TEST_MAIN_END();
}
