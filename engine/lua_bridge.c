/* lua_bridge.c: LuaJIT states and the protected batch call into gobblin.runtime.
 *
 * Each task owns one state, so tasks run in parallel threads without sharing a Lua lock. The engine makes
 * one lua_pcall per batch; the script pulls records from the batch's FFI array and pushes output back
 * through the kg_ffi_* functions (kg_ffi.h), so no C-to-Lua callback happens per record. */
#include "lua_bridge.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kg_lua {
  lua_State *L;
  int process_ref; /* registry references of the processor's functions (gobblin.runtime) */
  int stage_ref;
  int collect_ref;
};

static const char *lua_dir(void) {
  const char *dir = getenv("KINGEST_LUA_PATH");
  return dir && *dir ? dir : KINGEST_LUA_DIR;
}

/* os.exit in a job script: the engine decides how a run ends (a script that ended the process would leave the
 * run RUNNING and report an exit status that means something else), so it is an error like any other. */
static int no_exit(lua_State *L) {
  return luaL_error(L, "os.exit is not allowed in a job script: raise an error instead (error(\"...\")), which "
                       "decode.error.policy handles");
}

lua_State *kg_lua_state_new(const char *job_file) {
  lua_State *L = luaL_newstate();
  if (!L) return NULL;
  luaL_openlibs(L);
  lua_getglobal(L, "os");
  lua_pushcfunction(L, no_exit);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
  kg_buf_t path = {0};
  kg_buf_appendf(&path, "%s/?.lua;%s/?/init.lua;", lua_dir(), lua_dir());
  if (job_file) {
    const char *slash = strrchr(job_file, '/');
    if (slash)
      kg_buf_appendf(&path, "%.*s/?.lua;", (int)(slash - job_file), job_file);
    else
      kg_buf_appendf(&path, "./?.lua;");
  }
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  kg_buf_appendf(&path, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  lua_pushstring(L, path.data);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  kg_buf_free(&path);
  if (job_file) {
    lua_pushstring(L, job_file);
    lua_setfield(L, LUA_REGISTRYINDEX, "kingest.job_file");
  }
  return L;
}

/* LuaJIT shortens a chunk name longer than LUA_IDSIZE to "..." and its tail, so an error in a job file under
 * a long path would not say which file: put the job file's whole path back. */
static const char *full_job_file(lua_State *L, const char *msg) {
  lua_getfield(L, LUA_REGISTRYINDEX, "kingest.job_file");
  const char *path = lua_tostring(L, -1); /* stays alive: the registry holds it */
  lua_pop(L, 1);
  if (!path || !*path || strncmp(msg, "...", 3)) return msg;
  size_t len = strlen(path);
  for (size_t k = len - 1 < LUA_IDSIZE ? len - 1 : LUA_IDSIZE; k > 0; k--)
    if (!strncmp(msg + 3, path + len - k, k) && msg[3 + k] == ':') return lua_pushfstring(L, "%s%s", path, msg + 3 + k);
  return msg;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  msg = full_job_file(L, msg);
  /* A string function given a record view (string.find(rec, ...)) says only "got cdata". */
  if (strstr(msg, "(string expected, got cdata)"))
    msg = lua_pushfstring(L, "%s: " KG_RECORD_NOT_A_STRING "call rec:value() for the payload", msg);
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int kg_lua_pcall(lua_State *L, int nargs, int nresults, char *errbuf) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  int rc = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  if (rc) {
    kg_fail(errbuf, KG_ELUA, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
    lua_pop(L, 1);
    return KG_ELUA;
  }
  return KG_OK;
}

int kg_lua_new(const char *job_file, kg_lua_t **out, char *errbuf) {
  *out = NULL;
  lua_State *L = kg_lua_state_new(job_file);
  if (!L) return kg_fail(errbuf, KG_ENOMEM, "cannot create a Lua state");
  lua_getglobal(L, "require");
  lua_pushstring(L, "gobblin.runtime");
  if (kg_lua_pcall(L, 1, 1, errbuf)) {
    lua_close(L);
    return KG_ELUA;
  }
  lua_getfield(L, -1, "processor");
  if (job_file)
    lua_pushstring(L, job_file);
  else
    lua_pushnil(L);
  if (kg_lua_pcall(L, 1, 1, errbuf)) {
    lua_close(L);
    return KG_ELUA;
  }
  kg_lua_t *lua = kg_xcalloc(1, sizeof *lua);
  lua->L = L;
  lua_getfield(L, -1, "process");
  lua->process_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "stage");
  lua->stage_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "collect");
  lua->collect_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 2); /* the processor and the runtime module */
  *out = lua;
  return KG_OK;
}

void kg_lua_destroy(kg_lua_t *lua) {
  if (!lua) return;
  lua_close(lua->L);
  free(lua);
}

int kg_lua_process(kg_lua_t *lua, kg_batch_t *batch, char *errbuf) {
  lua_rawgeti(lua->L, LUA_REGISTRYINDEX, lua->process_ref);
  lua_pushlightuserdata(lua->L, batch);
  return kg_lua_pcall(lua->L, 1, 0, errbuf);
}

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "stopped: the batch ran past script.batch.timeout.ms");
}

void kg_lua_interrupt(kg_lua_t *lua) {
  /* lua_sethook is the one call LuaJIT allows from another thread (or a signal handler). The hook fires
   * at the next call, return or instruction count in interpreted code; a JIT-compiled loop never checks
   * it, which is why the watchdog has a second, harder stage. */
  lua_sethook(lua->L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

void kg_lua_clear_interrupt(kg_lua_t *lua) {
  if (lua_gethook(lua->L)) lua_sethook(lua->L, NULL, 0, 0);
}

void kg_lua_stage(kg_lua_t *lua, char *out, size_t size) {
  char err[KG_ERRLEN];
  snprintf(out, size, "script");
  lua_rawgeti(lua->L, LUA_REGISTRYINDEX, lua->stage_ref);
  if (kg_lua_pcall(lua->L, 0, 1, err) == KG_OK) {
    if (lua_isstring(lua->L, -1)) snprintf(out, size, "%s", lua_tostring(lua->L, -1));
    lua_pop(lua->L, 1);
  }
}

int kg_lua_collect(kg_lua_t *lua, kg_metrics_t *metrics, char *errbuf) {
  lua_State *L = lua->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, lua->collect_ref);
  int rc = kg_lua_pcall(L, 0, 1, errbuf);
  if (rc) return rc;
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TNUMBER)
        kg_metrics_add(metrics, lua_tostring(L, -2), lua_tonumber(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return KG_OK;
}

/* The FFI exports. batch->sink is a kg_sink_t set up by the task. */

int kg_ffi_batch_emit(kg_batch_t *batch, const char *data, size_t len) {
  kg_sink_t *sink = batch->sink;
  int32_t i = batch->next - 1;
  return sink->emit(sink->ctx, i >= 0 && i < batch->count ? &batch->records[i] : NULL, data, len);
}

int kg_ffi_batch_emit_value(kg_batch_t *batch, const kg_record_t *record) {
  if (!record->value_ptr) return kg_ffi_batch_emit(batch, "", 0);
  return kg_ffi_batch_emit(batch, record->value_ptr, record->value_len);
}

int64_t kg_ffi_mono_ms(void) { return kg_mono_ms(); }

void kg_ffi_log(int level, const char *message) {
  if (level < KG_LOG_DEBUG || level > KG_LOG_ERROR) level = KG_LOG_INFO;
  kg_log((kg_log_level_t)level, "%s", message);
}
