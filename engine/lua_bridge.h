/* lua_bridge.h: every Lua state of the engine: the job state (a job.lua's properties, the start-of-run check,
 * the CUSTOM estimator) and the tasks' states with their protected once-per-batch call.
 *
 * This is the one part of the engine that includes lua.h and creates a lua_State; the rest asks it. A job.lua
 * runs once in the job state, which lives in the main thread until the process ends, and once more in each
 * task's own state (tasks run in parallel threads, so they share none). */
#ifndef KG_LUA_BRIDGE_H
#define KG_LUA_BRIDGE_H

#include "buf.h"
#include "kg_common.h"
#include "kg_ffi.h"
#include "metrics.h"
#include "props.h"

/* How a script error that used a record view as a string begins (gobblin.ffi raises it; the traceback adds
 * it to a string function's "got cdata"): the script is broken for every record, not for one. */
#define KG_RECORD_NOT_A_STRING "a record view is not a string: "

/* The job state. Main thread only. Each function below runs the job file at JOB_FILE in a new job state the
 * first time that file is asked for (gobblin.runtime's load_properties: the file runs and its code is checked),
 * and uses that state again after, so the file's top level runs once in the main thread however many of them
 * are called. A failed load is not kept. The state is closed at exit. */

/* Adds the properties of the job.lua at JOB_FILE to PROPS, with JOB_FILE as their origin: strings, numbers
 * and booleans as they are, nested tables without array items as dotted names ({kafka = {brokers = ...}} is
 * kafka.brokers), an array of strings or numbers as a comma-separated list; the job's code (the hooks
 * gobblin.runtime lists) is not a property. Returns KG_OK; KG_ELUA when the script fails or its code is
 * wrong (the message names the file, and the line where it has one); KG_EINVAL for a value that cannot be a
 * property, naming the file and the property; KG_ENOMEM. Properties set before a KG_EINVAL stay in PROPS. */
int kg_lua_job_properties(const char *job_file, kg_props_t *props, char *errbuf);

/* Fails as kg_lua_new would for JOB_FILE (NULL: a properties job), so that a task cannot fail to load what
 * the run started with: builds a task's processor in the job state, over the job table already loaded, and
 * throws it away. For NULL, in a state of its own (no job file runs). Returns KG_OK, KG_ELUA or KG_ENOMEM. */
int kg_lua_job_check(const char *job_file, char *errbuf);

/* The job's code as `kingest validate` shows it, one line per hook appended to OUT, "name<TAB>what" (decodeRecord
 * or source, the converters, estimateSize, partition, with where each function is defined), for the job.lua at
 * JOB_FILE (NULL: a properties job). Returns KG_OK, KG_ELUA or KG_ENOMEM. */
int kg_lua_job_describe(const char *job_file, kg_buf_t *out, char *errbuf);

/* What estimateSize is given of one work unit: the unit (workunit's topic, partition, low, high, range = high - low,
 * earliest and latest) and its partition's stored state (history: nil unless HAS_HISTORY; next_offset, and
 * avg_record_millis, avg_record_size and records_pulled when the row HAS_STATS). */
typedef struct {
  const char *topic;
  int32_t partition;
  int64_t low, high, earliest, latest;
  bool has_history, has_stats;
  int64_t next_offset, records_pulled;
  double avg_record_millis, avg_record_size;
} kg_lua_estimate_t;

/* kafka.workunit.size.estimator.type=CUSTOM: SIZES[i] = the job's estimateSize(workunit, history) for each of
 * the N UNITS. Returns KG_OK; KG_EINVAL when the job table has no estimateSize function; KG_ELUA when the job
 * cannot be loaded, or when estimateSize fails or returns anything but a number >= 0 (naming the partition; the
 * sizes of the units before it are set). */
int kg_lua_job_estimate(const char *job_file, const kg_lua_estimate_t *units, size_t n, double *sizes, char *errbuf);

/* A task's state. */
typedef struct kg_lua kg_lua_t;

/* A new task state: the standard libraries, package.path set to lua/gobblin (KINGEST_LUA_PATH, else the
 * installed library beside the executable, else the source tree's lua/) and the folder of JOB_FILE, and
 * gobblin.runtime's processor of JOB_FILE (a job.lua, run here; NULL for a properties job). *OUT is the
 * caller's, freed with kg_lua_destroy. Returns KG_OK, KG_ELUA with the script's error and traceback, or
 * KG_ENOMEM. */
int kg_lua_new(const char *job_file, kg_lua_t **out, char *errbuf);
void kg_lua_destroy(kg_lua_t *lua); /* NULL is a no-op */
/* Whether the job decodes the records itself (its decodeRecord, or a source module's): it then gets every record,
 * an Avro tombstone (a null payload) included. False for NULL. */
bool kg_lua_decodes(const kg_lua_t *lua);
/* Whether the job decodes the records itself or has converters: what it writes is then its own making, not the
 * records as read (which the engine resolves to the output's schema). False for NULL. */
bool kg_lua_transforms(const kg_lua_t *lua);

/* Runs the task's record loop over BATCH from batch->next on, in one protected call. On a script error
 * returns KG_ELUA with the message and traceback in ERRBUF; the failing record is batch->next - 1, and a
 * second call resumes after it. A write the sink refused also ends the call with KG_ELUA, at the record
 * that wrote: the sink holds the real error. */
int kg_lua_process(kg_lua_t *lua, kg_batch_t *batch, char *errbuf);

/* Asks the state to stop the running call with an error; safe from another thread. */
void kg_lua_interrupt(kg_lua_t *lua);
/* Removes an interrupt request that did not fire. Call from the state's own thread, outside Lua. */
void kg_lua_clear_interrupt(kg_lua_t *lua);
/* What was running when the last script error happened: "decodeRecord" or "converter N". */
void kg_lua_stage(kg_lua_t *lua, char *out, size_t size);
/* Adds the script's own metrics (ctx.metrics counters, meters, histograms) to METRICS. */
int kg_lua_collect(kg_lua_t *lua, kg_metrics_t *metrics, char *errbuf);

/* gobblin.json's hand-offs with the FFI (ffi.c): the bytes the next decode on this thread reads when it is given
 * none (a record's payload straight from the fetch buffer, without a Lua string made of it); and, taken once, the
 * JSON text its last encode_staged on this thread wrote into the codec's buffer (false when there is none). */
void kg_lua_json_set_source(const char *data, size_t len);
bool kg_lua_json_take_output(const char **data, size_t *len);

#endif
