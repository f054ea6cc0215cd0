/* fuzz_record.c: libFuzzer target for the record path: random records (payloads, keys, nulls, sizes)
 * through the Lua bridge (KafkaSimpleSource, and a job that decodes JSON with gobblin.json or cjson and fans out
 * through converters, its tables written back by gobblin.json) and into the simple writer, with and without size
 * prefixes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lua_bridge.h"
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

/* LuaJIT's heap is not malloc memory, so LeakSanitizer cannot see what Lua objects point to: close the
 * states at exit, which frees what they hold (cjson's buffers among it). */
static void close_states(void) {
  kg_lua_destroy(simple);
  kg_lua_destroy(scripted);
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
  kg_writer_options_t options = {
      .delimiter = (flags & 4) ? "" : "\n", .delimiter_len = (flags & 4) ? 0 : 1, .prepend_size = (flags & 8) != 0};
  if (kg_writer_open(kg_fs_local(), &kg_writer_simple, writer_path, &options, &w, err)) abort();
  kg_sink_t sink = {emit, w, NULL};
  kg_batch_t batch = {.records = records, .count = n, .next = 0, .sink = &sink, .output_schema = -1, .time = -1};
  kg_lua_t *lua = (flags & 16) ? scripted : simple;
  while (batch.next < batch.count)
    if (kg_lua_process(lua, &batch, err) == KG_OK) break;
  if (kg_writer_close(w, NULL, NULL, err)) abort();
  unlink(writer_path);
  return 0;
}
