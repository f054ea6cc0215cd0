/* test_bridge.c: the Lua bridge from the C side: one protected call per batch, resuming after a failing
 * record, batch boundaries, empty, binary and huge payloads, null keys, the script's metrics, a write the
 * sink refuses, and the job state: properties, the start-of-run check, and how often a job file runs. */
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "lua_bridge.h"
#include "test.h"

typedef struct {
  kg_buf_t all; /* every emitted record, each followed by '\n' */
  int count;
  size_t last_len;
  int fail_at; /* when > 0: the emit of that number (1 for the first) and every later one fail with KG_EIO */
  int emits;   /* emits asked for, failed ones included */
} kg_collect_t;

static int collect(void *ctx, const kg_record_t *record, double time, const char *data, size_t len) {
  kg_collect_t *c = ctx;
  if (c->fail_at > 0 && ++c->emits >= c->fail_at) return KG_EIO;
  kg_buf_append(&c->all, data, len);
  kg_buf_append(&c->all, "\n", 1);
  c->count++;
  c->last_len = len;
  return 0;
}

static char *job_file(const char *text) {
  char tmpl[] = "/tmp/kg-bridge-XXXXXX.lua";
  int fd = mkstemps(tmpl, 4);
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) abort();
  close(fd);
  return kg_xstrdup(tmpl);
}

static void set_record(kg_record_t *r, const char *value, size_t len, const char *key, double offset) {
  memset(r, 0, sizeof *r);
  r->topic_ptr = "t";
  r->value_ptr = value;
  r->value_len = len;
  r->key_ptr = key;
  r->key_len = key ? strlen(key) : 0;
  r->offset = offset;
  r->timestamp = -1;
}

/* Runs N records through LUA the way the task does; returns the failing indexes as a string "1,3". */
static void run(kg_lua_t *lua, kg_record_t *records, int n, kg_collect_t *out, kg_buf_t *failed) {
  kg_sink_t sink = {collect, out, NULL};
  kg_batch_t batch = {.records = records, .count = n, .next = 0, .sink = &sink, .output_schema = -1, .time = -1};
  while (batch.next < batch.count) {
    char err[KG_ERRLEN];
    if (kg_lua_process(lua, &batch, err) == KG_OK) break;
    kg_buf_appendf(failed, "%s%d", failed->len ? "," : "", batch.next - 1);
  }
}

static void test_passthrough(void) {
  char err[KG_ERRLEN];
  kg_lua_t *lua = NULL;
  CHECK_INT(kg_lua_new(NULL, &lua, err), KG_OK);
  kg_record_t r[4];
  size_t huge_len = 8u << 20;
  char *huge = kg_xmalloc(huge_len);
  memset(huge, 'h', huge_len);
  set_record(&r[0], "a\0b", 3, NULL, 0); /* NUL inside, null key */
  set_record(&r[1], "", 0, "k", 1);      /* empty payload */
  set_record(&r[2], NULL, 0, NULL, 2);   /* null payload */
  set_record(&r[3], huge, huge_len, NULL, 3);
  kg_collect_t out = {0};
  kg_buf_t failed = {0};
  run(lua, r, 4, &out, &failed);
  CHECK_INT(out.count, 4);
  CHECK_INT(failed.len, 0);
  CHECK_INT(out.all.len, 3 + 1 + 0 + 1 + 0 + 1 + huge_len + 1);
  CHECK(memcmp(out.all.data, "a\0b\n\n\n", 6) == 0);
  CHECK_INT(out.last_len, huge_len);
  kg_buf_free(&out.all);
  free(huge);
  kg_lua_destroy(lua);
}

static void test_resume_and_boundaries(void) {
  char err[KG_ERRLEN];
  char *path = job_file("return { decodeRecord = function(msg, ctx)\n"
                        "  local v = msg:value()\n"
                        "  if v:sub(1, 3) == 'bad' then error('bad record ' .. v) end\n"
                        "  ctx.state.seen = (ctx.state.seen or 0) + 1\n"
                        "  ctx.metrics:counter('seen'):inc()\n"
                        "  return v .. '/' .. (msg:key() or 'nil') .. '/' .. ctx.state.seen\n"
                        "end }\n");
  kg_lua_t *lua = NULL;
  CHECK_INT(kg_lua_new(path, &lua, err), KG_OK);
  kg_record_t r[5];
  set_record(&r[0], "bad0", 4, NULL, 10);
  set_record(&r[1], "x", 1, "k1", 11);
  set_record(&r[2], "bad2", 4, NULL, 12);
  set_record(&r[3], "bad3", 4, NULL, 13);
  set_record(&r[4], "y", 1, NULL, 14);
  kg_collect_t out = {0};
  kg_buf_t failed = {0};
  run(lua, r, 5, &out, &failed); /* failures at both ends of a run of records, and back to back */
  CHECK_STR(failed.data, "0,2,3");
  CHECK_STR(out.all.data, "x/k1/1\ny/nil/2\n");
  /* A batch of one record, then an empty batch: state carries over between calls. */
  kg_buf_free(&out.all);
  kg_buf_free(&failed);
  run(lua, &r[1], 1, &out, &failed);
  run(lua, r, 0, &out, &failed);
  CHECK_STR(out.all.data, "x/k1/3\n");
  kg_metrics_t m = {0};
  CHECK_INT(kg_lua_collect(lua, &m, err), KG_OK);
  CHECK_INT((long long)kg_metrics_get(&m, "seen"), 3);
  char stage[64];
  kg_lua_stage(lua, stage, sizeof stage);
  CHECK_STR(stage, "decodeRecord");
  kg_metrics_free(&m);
  kg_buf_free(&out.all);
  kg_lua_destroy(lua);
  unlink(path);
  free(path);
}

static void test_load_errors(void) {
  char err[KG_ERRLEN];
  kg_lua_t *lua = NULL;
  char *path = job_file("return {\n  decodeRecord = function(msg)\n    return msg\n  end\n  oops\n}\n");
  CHECK_INT(kg_lua_new(path, &lua, err), KG_ELUA);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, ":5:");
  unlink(path);
  free(path);
  path = job_file("return { converters = { 'nope' } }\n");
  CHECK_INT(kg_lua_new(path, &lua, err), KG_ELUA);
  CHECK_CONTAINS(err, "converters[1] must be a function, got string");
  unlink(path);
  free(path);
}

/* A write the sink refuses (a full disk) stops the batch at the record that wrote, with an error that says so,
 * whatever produced the output: the payload passed through, a string, a table, a part of a gobblin.many. */
static void test_failing_emit(void) {
  char err[KG_ERRLEN];
  char *path = job_file("local gobblin = require('gobblin')\n"
                        "return { decodeRecord = function(msg, ctx)\n"
                        "  ctx.metrics:counter('decoded'):inc()\n"
                        "  local v = msg:value()\n"
                        "  if v == 'view' then return msg end\n"
                        "  if v == 'table' then return { v = v } end\n"
                        "  if v == 'many' then return gobblin.many({ 'm1', 'm2', 'm3' }) end\n"
                        "  return v\n"
                        "end }\n");
  const char *values[] = {"view", "string", "table", "many"};
  /* Which emit fails, and the record (batch->next) and output count where the batch must stop. */
  struct {
    int fail_at, next, written;
  } cases[] = {{1, 1, 0}, {2, 2, 1}, {3, 3, 2}, {4, 4, 3}, {5, 4, 4}, {6, 4, 5}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    kg_lua_t *lua = NULL;
    CHECK_INT(kg_lua_new(path, &lua, err), KG_OK);
    kg_record_t r[5];
    for (int i = 0; i < 4; i++)
      set_record(&r[i], values[i], strlen(values[i]), NULL, 20 + i);
    set_record(&r[4], "after", 5, NULL, 24);
    kg_collect_t out = {.fail_at = cases[k].fail_at};
    kg_sink_t sink = {collect, &out, NULL};
    kg_batch_t batch = {.records = r, .count = 5, .next = 0, .sink = &sink, .output_schema = -1, .time = -1};
    CHECK_INT(kg_lua_process(lua, &batch, err), KG_ELUA);
    CHECK_INT(batch.next, cases[k].next);
    CHECK_INT(out.count, cases[k].written);
    CHECK_INT(out.emits, cases[k].fail_at); /* nothing was offered to the sink after the failure */
    char want[128];
    snprintf(want, sizeof want, "the writer failed (error %d) on the output of t:0 offset %d; the batch stops here",
             KG_EIO, 20 + cases[k].next - 1);
    CHECK_CONTAINS(err, want);
    kg_metrics_t m = {0};
    CHECK_INT(kg_lua_collect(lua, &m, err), KG_OK);
    CHECK_INT((long long)kg_metrics_get(&m, "decoded"), cases[k].next); /* no record after it was decoded */
    kg_metrics_free(&m);
    kg_buf_free(&out.all);
    kg_lua_destroy(lua);
  }
  unlink(path);
  free(path);
}

/* Counts the lines of PATH: how often a job file's top level appended one. */
static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0;
  for (int ch; (ch = fgetc(f)) != EOF;)
    n += ch == '\n';
  fclose(f);
  return n;
}

/* The job state runs the job file once for its properties, the start-of-run check and estimateSize; each
 * task's state runs it once more. */
static void test_job_state(void) {
  char err[KG_ERRLEN];
  char runs[] = "/tmp/kg-bridge-runs-XXXXXX";
  int fd = mkstemp(runs);
  close(fd);
  kg_buf_t text = {0};
  kg_buf_appendf(&text,
                 "do local f = assert(io.open('%s', 'a')); f:write('ran\\n'); f:close() end\n"
                 "return {\n"
                 "  ['job.name'] = 'bridge',\n"
                 "  kafka = { brokers = 'localhost:9092' },\n"
                 "  ['topic.whitelist'] = { 'a', 'b' },\n"
                 "  ['mr.job.max.mappers'] = 4,\n"
                 "  decodeRecord = function(msg) return msg end,\n"
                 "  estimateSize = function(wu) return wu.range * 2 end,\n"
                 "}\n",
                 runs);
  char *path = job_file(text.data);
  kg_props_t *props = kg_props_new();
  CHECK_INT(kg_lua_job_properties(path, props, err), KG_OK);
  CHECK_STR(kg_props_get(props, "job.name"), "bridge");
  CHECK_STR(kg_props_get(props, "kafka.brokers"), "localhost:9092");
  CHECK_STR(kg_props_get(props, "topic.whitelist"), "a,b");
  CHECK_STR(kg_props_get(props, "mr.job.max.mappers"), "4");
  CHECK(kg_props_get(props, "decodeRecord") == NULL);
  CHECK(kg_props_get(props, "estimateSize") == NULL);
  CHECK_INT(count_lines(runs), 1);
  CHECK_INT(kg_lua_job_check(path, err), KG_OK);
  CHECK_INT(kg_lua_job_check(NULL, err), KG_OK); /* a properties job: no job file runs */
  kg_lua_estimate_t wu = {.topic = "a", .partition = 0, .low = 5, .high = 10};
  double size = -1;
  CHECK_INT(kg_lua_job_estimate(path, &wu, 1, &size, err), KG_OK);
  CHECK(size == 10);
  kg_props_t *again = kg_props_new();
  CHECK_INT(kg_lua_job_properties(path, again, err), KG_OK);
  CHECK_STR(kg_props_get(again, "kafka.brokers"), "localhost:9092");
  CHECK_INT(count_lines(runs), 1); /* all of it in the one job state */
  kg_lua_t *task1 = NULL, *task2 = NULL;
  CHECK_INT(kg_lua_new(path, &task1, err), KG_OK);
  CHECK_INT(kg_lua_new(path, &task2, err), KG_OK);
  CHECK_INT(count_lines(runs), 3); /* and once in each task's state */
  kg_lua_destroy(task1);
  kg_lua_destroy(task2);
  kg_props_destroy(props);
  kg_props_destroy(again);
  unlink(path);
  free(path);
  kg_buf_free(&text);

  /* A value that cannot be a property, and a job that cannot be loaded, fail with the file named. */
  path = job_file("return { ['job.name'] = 'x', nested = { deep = { 1, {} } } }\n");
  props = kg_props_new();
  CHECK_INT(kg_lua_job_properties(path, props, err), KG_EINVAL);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, ": property nested.deep: list item 2 is a table, expected a string or number");
  kg_props_destroy(props);
  unlink(path);
  free(path);
  path = job_file("return { converters = { 'nope' } }\n");
  props = kg_props_new();
  CHECK_INT(kg_lua_job_properties(path, props, err), KG_ELUA);
  CHECK_CONTAINS(err, "converters[1] must be a function, got string");
  CHECK_INT(kg_lua_job_check(path, err), KG_ELUA); /* a failed load is not kept */
  CHECK_CONTAINS(err, "converters[1] must be a function, got string");
  kg_props_destroy(props);
  unlink(path);
  free(path);
  unlink(runs);
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  test_passthrough();
  test_resume_and_boundaries();
  test_load_errors();
  test_failing_emit();
  test_job_state();
  TEST_MAIN_END();
}
