/* output.h: a task's outputs. One writer per output folder: the sub-path (FP) of the topic, or with a partitioner
 * (writer.partitioner.class) FP/<the record's time folder>, opened in task staging on the first record that goes
 * there, and rolled into further files by writer.file.max.size and writer.file.max.records; the quarantine file of
 * each FP (decode.error.policy=quarantine); the rule that a record's outputs are all or nothing; and, when the task
 * ends, the move of its finished files to task output (or their removal). */
#ifndef KG_OUTPUT_H
#define KG_OUTPUT_H

#include "kg_ffi.h"
#include "task_types.h"

/* The output sub-path (FP) of TOPIC for writer.file.path.type TYPE, with extract.namespace EXTRACT_NAMESPACE and
 * (for the default type) EXTRACT_ID; a new string. */
char *kg_task_file_path(kg_path_type_t type, const char *extract_namespace, const char *topic, const char *extract_id);

typedef struct kg_outputs kg_outputs_t;

/* The outputs of the task described by SPEC (borrowed: it must outlive them). */
kg_outputs_t *kg_outputs_new(const kg_task_spec_t *spec);
/* Removes what is still open (a failed task's staging files) and frees O. NULL is a no-op. */
void kg_outputs_destroy(kg_outputs_t *outputs);

/* Makes TOPIC's output the one records go to (the partition being pulled). SCHEMA (SCHEMA_LEN bytes; NULL for
 * writer.avro.schema) is the Avro schema of its file when the file is opened here; the caller keeps it alive. */
void kg_outputs_select(kg_outputs_t *outputs, const char *topic, const char *schema, size_t schema_len);
/* Makes SCHEMA (SCHEMA_LEN bytes, kept alive by the caller) the Avro schema of what is written from now on: an output
 * whose file has another schema closes it before the next record and starts a new one with this schema (named as a
 * rolled file, part.<taskId>.<n>.avro), published with the rest. */
void kg_outputs_use_schema(kg_outputs_t *outputs, const char *schema, size_t schema_len);
/* A kg_emit_fn (CTX is the kg_outputs_t): writes one output of RECORD to the selected output. After a write error
 * every further call fails with it (kg_outputs_error says what it was). KG_ERECORD when the writer refused this
 * output (it does not fit the format): the record is to fail (kg_outputs_refused says why), the outputs go on. */
int kg_outputs_emit(void *ctx, const kg_record_t *record, double time, const char *data, size_t len);
/* The same for an Avro datum of the output's schema that the engine has checked (avro_codec.h): the writer does not
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
/* Whether the writer refused an output (KG_ERECORD) since the batch began, or since the last call: the reason in
 * ERRBUF (KG_ERRLEN bytes), once. */
bool kg_outputs_refused(kg_outputs_t *outputs, char *errbuf);
/* The first write error, as a code (KG_OK when none) with its message in ERRBUF. */
int kg_outputs_error(const kg_outputs_t *outputs, char *errbuf);
/* The records and bytes of the task's output files, the quarantine files (FP/_errors) aside. While the task runs:
 * what the writers hold so far, a compressed or Avro file's last block not yet (writer.h). After kg_outputs_finish:
 * what the files handed to task output hold, byte for byte the files the commit publishes; 0 and 0 when the files
 * were removed (a failed task, a failed finish). */
void kg_outputs_written(const kg_outputs_t *outputs, int64_t *records, int64_t *bytes);

/* Ends the outputs: when OK, closes each file and moves it to task output, adding it to RESULT's files (each with
 * where the publisher puts it); otherwise removes them. Returns KG_OK or the first error (the remaining files are
 * then removed). */
int kg_outputs_finish(kg_outputs_t *outputs, bool ok, kg_task_result_t *result, char *errbuf);

#endif
