/* task.h: one task: a group of work units pulled one after the other by its own Kafka consumer and Lua
 * state, into staging files that are moved to task output when the task succeeds. */
#ifndef KG_TASK_H
#define KG_TASK_H

#include <stdatomic.h>

#include "task_types.h"

/* lua_since_ms while the watchdog interrupts the running batch. */
#define KG_LUA_INTERRUPTING (-1)

/* What the job's watchdog and progress reporting see of a running task: atomics only, written by the task's thread
 * (and, for the interrupt handshake, by the watchdog). */
typedef struct {
  _Atomic int64_t lua_since_ms;         /* monotonic ms when the running batch call began; 0 outside Lua;
                                           KG_LUA_INTERRUPTING once the watchdog has claimed the batch */
  _Atomic(void *) lua;                  /* the task's kg_lua_t while it exists, for kg_lua_interrupt */
  atomic_bool interrupted;              /* the watchdog stopped a batch that ran too long */
  atomic_bool hook_set;                 /* the watchdog has set the interrupt hook of the batch it claimed */
  _Atomic int64_t interrupted_batch_ms; /* when the claimed batch began */
  atomic_int current_unit;              /* index in spec.units of the partition being pulled */
  _Atomic int64_t read;                 /* interim metrics: records read, written and bytes written so far */
  _Atomic int64_t written;
  _Atomic int64_t bytes;
  _Atomic int64_t unit_records;    /* progress: records of the current unit pulled so far */
  _Atomic int64_t unit_started_ms; /* progress: monotonic start of the current unit; 0 when not pulling */
} kg_task_live_t;

typedef struct {
  kg_task_spec_t spec;
  kg_task_result_t result;
  kg_task_live_t live;
} kg_task_t;

/* Runs the task described by task->spec; never aborts on input. Fills task->result, and task->live as it goes. */
void kg_task_run(kg_task_t *task);
void kg_task_clear(kg_task_t *task);

/* The record path of a task, apart from its Kafka consumer: its Lua state, its outputs, the Avro schemas and
 * the reader of framed payloads, and the error budget. kg_task_run drives it with the batches its consumer
 * fetches; `kingest test` (tryout.c) with records read from stdin. */
typedef struct kg_task_run kg_task_run_t;
typedef struct kg_outputs kg_outputs_t;

/* Opens the record path of TASK as its spec says: the Lua state (the job file runs), the outputs (nothing is
 * written before the first record), the Avro reader and output schema, the extract limits and the budget's
 * range (the sum of the units' ranges). The Avro schemas are this thread's until kg_task_close. *OUT is set also
 * on failure (a script that cannot be loaded, a registry URL refused), for kg_task_close. */
int kg_task_open(kg_task_t *task, kg_task_run_t **out, char *errbuf);
/* Frees what kg_task_open made; the outputs still open are removed (kg_outputs_finish keeps them). NULL is a
 * no-op. */
void kg_task_close(kg_task_run_t *run);
/* Work unit WU begins: its topic's schemas (the latest in the registry, when the job reads Avro) and output.
 * KG_OK, or the error that fails the task. */
int kg_task_begin_unit(kg_task_run_t *run, const kg_workunit_t *wu, char *errbuf);
/* Hands the N record views at RECORDS (of WU, in offset order, inside its range) to the job: Avro framing,
 * decodeRecord, the converters and the writer, counted in RES and the task's metrics. A record that fails
 * follows decode.error.policy and the budget; LOGGED counts the failures logged for the partition. Returns
 * KG_OK, or the error that fails the task (KG_EBUDGET over the error budget). */
int kg_task_records(kg_task_run_t *run, const kg_workunit_t *wu, kg_unit_result_t *res, kg_record_t *records, int n,
                    int *logged, char *errbuf);
/* Whether the records that failed so far are over the error budget when the task has read READ records (at its
 * end: what it read); KG_EBUDGET naming WHERE the last failure was, else KG_OK. */
int kg_task_check_budget(const kg_task_run_t *run, int64_t read, const char *where, char *errbuf);
/* The task's outputs (output.h). */
kg_outputs_t *kg_task_outputs(kg_task_run_t *run);
/* How many failed records of a partition are logged with their error (5 unless set). */
void kg_task_log_failures(kg_task_run_t *run, int limit);

#endif
