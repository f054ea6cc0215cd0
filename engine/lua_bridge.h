/* lua_bridge.h: LuaJIT states for job files and tasks, and the protected once-per-batch call. */
#ifndef KG_LUA_BRIDGE_H
#define KG_LUA_BRIDGE_H

#include "kg_common.h"
#include "kg_ffi.h"
#include "metrics.h"

/* How a script error that used a record view as a string begins (gobblin.ffi raises it; the traceback adds
 * it to a string function's "got cdata"): the script is broken for every record, not for one. */
#define KG_RECORD_NOT_A_STRING "a record view is not a string: "

typedef struct lua_State lua_State;
typedef struct kg_lua kg_lua_t;

/* A new Lua state with the standard libraries and package.path set to lua/gobblin (KINGEST_LUA_PATH, or
 * the source tree's lua/) and the folder of JOB_FILE (may be NULL). */
lua_State *kg_lua_state_new(const char *job_file);

/* Calls the function on top of the stack with NARGS arguments below it, protected, with a traceback in
 * ERRBUF on failure. Returns KG_OK or KG_ELUA. Leaves NRESULTS results on success. */
int kg_lua_pcall(lua_State *L, int nargs, int nresults, char *errbuf);

/* A task's Lua state: loads JOB_FILE (a job.lua, or NULL for a properties job) and gobblin.runtime. */
int kg_lua_new(const char *job_file, kg_lua_t **out, char *errbuf);
void kg_lua_destroy(kg_lua_t *lua);

/* Runs the task's record loop over BATCH from batch->next on, in one protected call. On a script error
 * returns KG_ELUA with the message and traceback in ERRBUF; the failing record is batch->next - 1, and a
 * second call resumes after it. */
int kg_lua_process(kg_lua_t *lua, kg_batch_t *batch, char *errbuf);

/* Asks the state to stop the running call with an error; safe from another thread. */
void kg_lua_interrupt(kg_lua_t *lua);
/* Removes an interrupt request that did not fire. Call from the state's own thread, outside Lua. */
void kg_lua_clear_interrupt(kg_lua_t *lua);
/* What was running when the last script error happened: "decodeRecord" or "converter N". */
void kg_lua_stage(kg_lua_t *lua, char *out, size_t size);
/* Adds the script's own metrics (ctx.metrics counters, meters, histograms) to METRICS. */
int kg_lua_collect(kg_lua_t *lua, kg_metrics_t *metrics, char *errbuf);

#endif
