/* test_bridge.c: the Lua bridge from the C side: one protected call per batch, resuming after a failing
 * record, batch boundaries, empty, binary and huge payloads, null keys, and the script's metrics. */
#include <stdlib.h>
#include <unistd.h>

#include "lua_bridge.h"
#include "test.h"

typedef struct {
  kg_buf_t all; /* every emitted record, each followed by '\n' */
  int count;
  size_t last_len;
} kg_collect_t;

static int collect(void *ctx, const kg_record_t *record, const char *data, size_t len) {
  kg_collect_t *c = ctx;
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
  kg_sink_t sink = {collect, out};
  kg_batch_t batch = {.records = records, .count = n, .next = 0, .sink = &sink};
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

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  test_passthrough();
  test_resume_and_boundaries();
  test_load_errors();
  TEST_MAIN_END();
}
