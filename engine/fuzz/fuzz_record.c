/* fuzz_record.c: libFuzzer target for the record path: random records (payloads, keys, nulls, sizes)
 * through the Lua bridge (KafkaSimpleSource, and a job that decodes JSON with gobblin.json or cjson and fans out
 * through converters, its tables written back by gobblin.json) and into the simple writer, with and without size
 * prefixes; then the same records through a task's whole record path (task.c, as `kingest test` drives it:
 * decodeRecord, the converters, decode.error.policy, the outputs and their rolling, quarantine) with a job whose
 * fate for each record is known from its bytes, and every record is checked against it: records in = written +
 * dropped + failed (skipped or quarantined), the outputs and bytes each record adds, and the task's own counts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "job.h"
#include "log.h"
#include "lua_bridge.h"
#include "output.h"
#include "task.h"
#include "workunit.h"
#include "writer.h"

static kg_lua_t *simple, *scripted;
static char writer_path[256];

static const char *job =
    "local cjson = require('cjson.safe')\n"
    "local json = require('gobblin.json')\n"
    "local gobblin = require('gobblin')\n"
    "return {\n"
    "  decodeRecord = function(msg, ctx)\n"
    "    local v = msg:value()\n"
    "    if v == nil then return nil end\n"
    "    if #v > 0 and v:byte(1) == 33 then error('bang at ' .. ctx.offset) end\n"
    "    local ok, t = pcall(json.decode, msg)\n" /* the payload read in place, by gobblin.json */
    "    if ok and type(t) == 'table' then return t end\n"
    "    if #v % 2 == 0 then t = cjson.decode(v) end\n"
    "    if type(t) == 'table' then return t end\n"
    "    return v\n"
    "  end,\n"
    "  converters = {\n"
    "    function(r) if type(r) == 'table' and #r > 0 then return gobblin.many(r) end return r end,\n"
    "    function(r) if type(r) == 'string' and #r % 7 == 3 then return nil end return r end,\n"
    "  },\n"
    "}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the task layer ------------------------------------------------------------------------------------------ */

/* A job whose every decision shows in a record's bytes: a null value or one starting with '#' is dropped by
 * decodeRecord, one starting with '!' fails there; '*' fans out to the value and the value with '@' added (so that the
 * second fails after the first was written, and must be taken back); an output of length 3 modulo 7 is dropped by the
 * second converter; the third fails on an output ending with '@'. Failures are quarantined (or skipped, for the second
 * task), with no budget; files roll every 50 records. */
static const char *task_job =
    "local gobblin = require('gobblin')\n"
    "return {\n"
    "  ['job.name'] = 'FuzzTask',\n"
    "  ['kafka.brokers'] = '127.0.0.1:9',\n"
    "  ['topic.whitelist'] = 'fuzz',\n"
    "  ['writer.file.path.type'] = 'tablename',\n"
    "  ['writer.file.max.records'] = 50,\n"
    "  ['decode.error.policy'] = '%s',\n"
    "  ['decode.error.max.ratio'] = 1,\n"
    "  ['task.skip.error.records'] = -1,\n"
    "  decodeRecord = function(msg)\n"
    "    local v = msg:value()\n"
    "    if v == nil or v:byte(1) == 35 then return nil end\n"
    "    if v:byte(1) == 33 then error('bang') end\n"
    "    return v\n"
    "  end,\n"
    "  converters = {\n"
    "    function(r) if r:byte(1) == 42 then return gobblin.many({r, r .. '@'}) end return r end,\n"
    "    function(r) if #r %% 7 == 3 then return nil end return r end,\n"
    "    function(r) if r:byte(-1) == 64 then error('at') end return r end,\n"
    "  },\n"
    "}\n";

/* A task's record path, open for the whole fuzzing session (its outputs grow and roll across inputs). */
typedef struct {
  kg_config_t *config;
  kg_task_t task;
  kg_workunit_t wu;
  kg_task_run_t *run;
  kg_unit_result_t res;
  char job_dir[64];
  int64_t offset; /* the next record's */
  int logged;
} task_path_t;

static task_path_t quarantining, skipping;

static void task_path_open(task_path_t *t, const char *policy) {
  char err[KG_ERRLEN];
  char task_job_file[64];
  snprintf(task_job_file, sizeof task_job_file, "/tmp/kg-fuzz-task-XXXXXX.lua");
  int fd = mkstemps(task_job_file, 4);
  char *text = kg_xasprintf(task_job, policy);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) abort();
  close(fd);
  free(text);
  kg_props_t *props = NULL;
  bool is_lua = false;
  const kg_writer_ops_t *writer = NULL;
  snprintf(t->job_dir, sizeof t->job_dir, "/tmp/kg-fuzz-task-XXXXXX");
  if (!mkdtemp(t->job_dir) || kg_jobfile_load(task_job_file, &props, &is_lua, err) ||
      kg_config_new(props, task_job_file, is_lua, t->job_dir, &t->config, err) ||
      kg_job_check(t->config, &writer, err)) {
    fprintf(stderr, "fuzz_record: the task's job: %s\n", err);
    abort();
  }
  t->wu = (kg_workunit_t){.topic = kg_xstrdup("fuzz"),
                          .partition = 0,
                          .low = 0,
                          .high = INT64_MAX / 2,
                          .earliest = 0,
                          .latest = INT64_MAX / 2};
  t->task.spec = (kg_task_spec_t){.task_id = kg_xstrdup("task_FuzzTask_1_0"),
                                  .config = t->config,
                                  .units = kg_xmalloc(sizeof(kg_workunit_t *)),
                                  .nunits = 1,
                                  .job_dir = t->job_dir,
                                  .extract_id = "1",
                                  .fs = kg_fs_local(),
                                  .writer = writer};
  t->task.spec.units[0] = &t->wu;
  if (kg_task_open(&t->task, &t->run, err) || kg_task_begin_unit(t->run, &t->wu, err)) {
    fprintf(stderr, "fuzz_record: the task: %s\n", err);
    abort();
  }
  unlink(task_job_file);
  kg_task_log_failures(t->run, 0);
}

static void task_path_close(task_path_t *t) {
  char err[KG_ERRLEN];
  if (kg_outputs_finish(kg_task_outputs(t->run), true, &t->task.result, err)) {
    fprintf(stderr, "fuzz_record: closing the task's outputs: %s\n", err);
    abort();
  }
  kg_task_close(t->run);
  kg_fs_remove_tree(kg_fs_local(), t->job_dir, err);
  kg_task_clear(&t->task);
  kg_workunit_clear(&t->wu);
  kg_config_destroy(t->config);
}

/* What the job does with a value (NULL: a null value): the outputs it writes and their bytes (each with its
 * newline), or it drops it, or fails on it. */
typedef struct {
  bool failed, dropped;
  int64_t outputs, bytes;
} fate_t;

static fate_t fate_of(const char *v, size_t len) {
  fate_t f = {0};
  if (!v || (len > 0 && v[0] == '#')) {
    f.dropped = true;
    return f;
  }
  if (len > 0 && v[0] == '!') {
    f.failed = true;
    return f;
  }
  /* The converters' outputs: their lengths, and whether each ends with '@'. */
  size_t items[2] = {len, len + 1};
  bool at[2] = {len > 0 && v[len - 1] == '@', true};
  size_t nitems = len > 0 && v[0] == '*' ? 2 : 1;
  for (size_t i = 0; i < nitems; i++) {
    if (items[i] % 7 == 3) continue;
    if (at[i]) f.failed = true; /* what the record wrote before is taken back */
    f.outputs++;
    f.bytes += (int64_t)items[i] + 1;
  }
  if (f.failed)
    f.outputs = f.bytes = 0;
  else if (!f.outputs)
    f.dropped = true;
  return f;
}

#define EXPECT(cond, ...)                                                                                              \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      fprintf(stderr, "fuzz_record: task layer: " __VA_ARGS__);                                                        \
      fputc('\n', stderr);                                                                                             \
      abort();                                                                                                         \
    }                                                                                                                  \
  } while (0)

/* Hands RECORDS to task T one at a time and checks what became of each against its fate, then the sum. */
static void task_path_feed(task_path_t *t, const kg_record_t *records, int n, bool quarantine) {
  char err[KG_ERRLEN];
  int64_t written = 0, dropped = 0, failed = 0;
  int64_t failed_before = t->res.skipped + t->res.quarantined;
  for (int i = 0; i < n; i++) {
    kg_record_t r = records[i];
    r.topic_ptr = "fuzz";
    r.partition = 0;
    r.offset = t->offset++;
    fate_t f = fate_of(r.value_ptr, r.value_len);
    int64_t out0, bytes0, out1, bytes1, skipped0 = t->res.skipped, quarantined0 = t->res.quarantined;
    kg_outputs_written(kg_task_outputs(t->run), &out0, &bytes0);
    int rc = kg_task_records(t->run, &t->wu, &t->res, &r, 1, &t->logged, err);
    EXPECT(rc == KG_OK, "record %d failed the task: %s", i, err);
    kg_outputs_written(kg_task_outputs(t->run), &out1, &bytes1);
    int64_t skipped = t->res.skipped - skipped0, quarantined = t->res.quarantined - quarantined0;
    EXPECT(out1 - out0 == f.outputs && bytes1 - bytes0 == f.bytes,
           "record %d (%zu bytes): %lld outputs of %lld bytes written, expected %lld of %lld", i, r.value_len,
           (long long)(out1 - out0), (long long)(bytes1 - bytes0), (long long)f.outputs, (long long)f.bytes);
    EXPECT(skipped + quarantined == (f.failed ? 1 : 0) && (quarantine ? skipped : quarantined) == 0,
           "record %d (%zu bytes): skipped %lld, quarantined %lld, expected to %s", i, r.value_len, (long long)skipped,
           (long long)quarantined, f.failed ? "fail" : "pass");
    if (f.failed)
      failed++;
    else if (f.dropped)
      dropped++;
    else
      written++;
  }
  EXPECT(written + dropped + failed == n, "%d records in, %lld written + %lld dropped + %lld failed", n,
         (long long)written, (long long)dropped, (long long)failed);
  EXPECT(t->res.skipped + t->res.quarantined - failed_before == failed, "the task counted %lld failures, expected %lld",
         (long long)(t->res.skipped + t->res.quarantined - failed_before), (long long)failed);
}

/* LuaJIT's heap is not malloc memory, so LeakSanitizer cannot see what Lua objects point to: close the
 * states at exit, which frees what they hold (cjson's buffers among it). */
static void close_states(void) {
  kg_lua_destroy(simple);
  kg_lua_destroy(scripted);
  task_path_close(&quarantining);
  task_path_close(&skipping);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  kg_log_set_level(KG_LOG_ERROR + 1);
  char err[KG_ERRLEN];
  char path[] = "/tmp/kg-fuzz-job-XXXXXX.lua";
  int fd = mkstemps(path, 4);
  if (fd < 0 || write(fd, job, strlen(job)) != (ssize_t)strlen(job)) abort();
  close(fd);
  if (kg_lua_new(NULL, &simple, err) || kg_lua_new(path, &scripted, err)) {
    fprintf(stderr, "fuzz_record: %s\n", err);
    abort();
  }
  unlink(path);
  task_path_open(&quarantining, "quarantine");
  task_path_open(&skipping, "skip");
  atexit(close_states);
  snprintf(writer_path, sizeof writer_path, "/tmp/kg-fuzz-out-%d.txt", (int)getpid());
  /* Warm up: the runtime makes its JSON encoder on first use and keeps it; do that before the fuzzer starts
   * counting allocations per input. */
  static const uint8_t warm[] = {0x10, 7, '{', '"', 'a', '"', ':', '1', '}', 5, '[', '1', ',', '2', ']'};
  LLVMFuzzerTestOneInput(warm, sizeof warm);
  return 0;
}

static int emit(void *ctx, const kg_record_t *record, double time, const char *data, size_t len) {
  char err[KG_ERRLEN];
  return kg_writer_write(ctx, data, len, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t flags = data[0];
  data++;
  size--;
  /* Records: a length byte, then that many bytes (or what is left); flag bits choose keys and nulls. */
  kg_record_t records[64];
  int n = 0;
  size_t pos = 0;
  while (pos < size && n < 64) {
    size_t len = data[pos++];
    if (len > size - pos) len = size - pos;
    kg_record_t *r = &records[n];
    memset(r, 0, sizeof *r);
    r->topic_ptr = "fuzz";
    r->partition = n % 3;
    r->offset = n;
    r->timestamp = -1;
    bool null_value = (flags & 1) && len == 0;
    r->value_ptr = null_value ? NULL : (const char *)data + pos;
    r->value_len = null_value ? 0 : len;
    if ((flags & 2) && len > 1) {
      r->key_ptr = (const char *)data + pos;
      r->key_len = len / 2;
    }
    pos += len;
    n++;
  }
  char err[KG_ERRLEN];
  kg_writer_t *w = NULL;
  unlink(writer_path);
  kg_simple_options_t simple_options = {
      .delimiter = (flags & 4) ? "" : "\n", .delimiter_len = (flags & 4) ? 0 : 1, .prepend_size = (flags & 8) != 0};
  kg_writer_options_t options = {.backend = &simple_options};
  if (kg_writer_open(kg_fs_local(), &kg_writer_simple, writer_path, &options, &w, err)) abort();
  kg_sink_t sink = {emit, w, NULL};
  kg_batch_t batch = {.records = records, .count = n, .next = 0, .sink = &sink, .output_schema = -1, .time = -1};
  kg_lua_t *lua = (flags & 16) ? scripted : simple;
  while (batch.next < batch.count)
    if (kg_lua_process(lua, &batch, err) == KG_OK) break;
  if (kg_writer_close(w, NULL, NULL, err)) abort();
  unlink(writer_path);
  if (flags & 32)
    task_path_feed(&skipping, records, n, false);
  else
    task_path_feed(&quarantining, records, n, true);
  return 0;
}
