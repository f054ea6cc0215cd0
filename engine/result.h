/* result.h: the JSON form of what a task did with each work unit, so that task execution and the commit can run
 * in separate processes (and on other machines) and still agree on every count and offset. */
#ifndef KG_RESULT_H
#define KG_RESULT_H

#include "buf.h"
#include "json.h"
#include "task.h"

/* Appends the JSON form of R, the result of work unit WU, to OUT: {"topic", "partition", "actualHigh",
 * "records", "bytes", "elapsedMs", "decodeErrors", "skipped", "quarantined", "deletedBeforeRead", "fetchFailed",
 * "prematureStop", "stopped", "stopReason", "fetchError" (what stopped a failed fetch, or ""), "last": null or
 * {"offset", "timestamp", "hash"}}. */
void kg_unit_result_json(kg_buf_t *out, const kg_workunit_t *wu, const kg_unit_result_t *r);

/* Reads a unit result back from V into *R, checking that it is the result of work unit WU (same topic and
 * partition). KG_EINVAL names WHAT and the member that is missing or wrong. */
int kg_unit_result_from_json(const kg_json_t *v, const kg_workunit_t *wu, const char *what, kg_unit_result_t *r,
                             char *errbuf);

/* Appends the JSON form of what task T did to OUT: {"task", "succeeded", "rc", "error", "firstError",
 * "elapsedMs", "units": [unit results, in the order of t->spec.units], "files": [{"filePath", "output", "final"}],
 * "metrics": {name: number}}. Every number reads back exactly. */
void kg_task_result_json(kg_buf_t *out, const kg_task_t *task);

/* Reads a task's result back from V into task->result (which must be empty), checking that it is the result of
 * the task task->spec describes (same task id, and a result for each of its units, in order). KG_EINVAL names WHAT
 * and what is missing or wrong; task->result is then empty again. */
int kg_task_result_from_json(const kg_json_t *v, kg_task_t *task, const char *what, char *errbuf);

#endif
