/* output.h: a task's outputs. One writer per output folder: the sub-path (FP) of the topic, or with a partitioner
 * (writer.partitioner.class) FP/<the record's time folder>, opened in task staging on the first record that goes
 * there, and rolled into further files by writer.file.max.size and writer.file.max.records; the quarantine file of
 * each FP (decode.error.policy=quarantine); the rule that a record's outputs are all or nothing; and, when the task
 * ends, the move of its finished files to task output (or their removal). */
#ifndef KG_OUTPUT_H
#define KG_OUTPUT_H

#include "kg_ffi.h"
#include "task.h"

/* The output sub-path (FP) of TOPIC under CONFIG's writer.file.path.type; a new string. */
char *kg_task_file_path(const kg_config_t *config, const char *topic, const char *extract_id);

typedef struct kg_outputs kg_outputs_t;

/* The outputs of the task described by SPEC (borrowed: it must outlive them). */
kg_outputs_t *kg_outputs_new(const kg_task_spec_t *spec);
/* Removes what is still open (a failed task's staging files) and frees O. NULL is a no-op. */
void kg_outputs_destroy(kg_outputs_t *outputs);

/* Makes TOPIC's output the one records go to (the partition being pulled). SCHEMA (SCHEMA_LEN bytes; NULL for
 * writer.avro.schema) is the Avro schema of its file when the file is opened here; the caller keeps it alive. */
void kg_outputs_select(kg_outputs_t *outputs, const char *topic, const char *schema, size_t schema_len);
/* A kg_emit_fn (CTX is the kg_outputs_t): writes one output of RECORD to the selected output. After a write error
 * every further call fails with it (kg_outputs_error says what it was). */
int kg_outputs_emit(void *ctx, const kg_record_t *record, double time, const char *data, size_t len);
/* The same for an Avro datum of the output's schema that the engine has checked (kg_avro.h): the writer does not
 * check it again. */
int kg_outputs_emit_datum(void *ctx, const kg_record_t *record, double time, const char *data, size_t len);
/* A new batch of record views begins: views are reused, so a record is known by its view within one batch only. */
void kg_outputs_batch_begin(kg_outputs_t *outputs);
/* Takes back the outputs RECORD wrote before it failed, so that a record's outputs are all or nothing. */
int kg_outputs_take_back(kg_outputs_t *outputs, const kg_record_t *record, char *errbuf);
/* decode.error.policy=quarantine: writes RECORD of WU, raw, with the STAGE that failed and its ERROR (the message
 * in "error", a script's traceback in "traceback"), as one JSON line to FP/_errors. */
int kg_outputs_quarantine(kg_outputs_t *outputs, const kg_workunit_t *wu, const kg_record_t *record, const char *stage,
                          const char *error, char *errbuf);
/* The first write error, as a code (KG_OK when none) with its message in ERRBUF. */
int kg_outputs_error(const kg_outputs_t *outputs, char *errbuf);
/* The records and bytes the writers hold, quarantined records aside: what the task has written so far. */
void kg_outputs_written(const kg_outputs_t *outputs, int64_t *records, int64_t *bytes);

/* Ends the outputs: when OK, closes each file and moves it to task output, adding it to RESULT's files (each with
 * where the publisher puts it); otherwise removes them. Returns KG_OK or the first error (the remaining files are
 * then removed). */
int kg_outputs_finish(kg_outputs_t *outputs, bool ok, kg_task_result_t *result, char *errbuf);

#endif
