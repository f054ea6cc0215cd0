/* state.h: the job's state store: per-partition offsets and statistics, run history, and the commit
 * journal, in one SQLite database per job (<state.store.dir>/<job>.db). */
#ifndef KG_STATE_H
#define KG_STATE_H

#include <stdio.h>

#include "kafka_fingerprint.h"
#include "kg_common.h"

typedef struct kg_state kg_state_t;

typedef struct {
  char *topic; /* owned */
  int32_t partition;
  int64_t next_offset;      /* the first offset the next run pulls */
  bool has_stats;           /* false: keep the statistics already stored */
  double avg_record_millis; /* average milliseconds per record of the last run that pulled any */
  double avg_record_size;   /* average bytes per record, same run */
  int64_t records_pulled;   /* records of that run */
  int64_t updated_ms;       /* when this row was last committed */
  bool has_log_start;       /* false: not known (stored by an older kingest, or by state set-offset) */
  int64_t log_start;        /* the broker's earliest offset when the run that committed this row planned it */
  kg_fingerprint_t last;    /* the last record pulled from the partition (not set: none known) */
  bool update_last;         /* commit only: store LAST (clearing it when it is not set); false keeps it */
} kg_partition_state_t;

typedef struct {
  char *src; /* task output, owned */
  char *dst; /* final place, owned */
  /* For a final folder on an object store (fs.h), which publishes by a write, not a rename: */
  char *upload_id; /* the upload in parts begun for DST before the journal was written; NULL: one PutObject */
  int64_t size;    /* bytes of SRC (the object's when published); -1 when not recorded (a rename) */
  char *etag;      /* the ETag the object has when this commit wrote it; NULL when not known */
} kg_move_t;

/* The database path of JOB under DIR; a new string. */
char *kg_state_path(const char *dir, const char *job);

/* Opens (CREATE: creating DIR and the database) the state of JOB under DIR. KG_ENOTFOUND when it does not
 * exist and CREATE is false. */
int kg_state_open(const char *dir, const char *job, bool create, kg_state_t **out, char *errbuf);
/* Opens the state of JOB for reading only: nothing in it or around it is written. */
int kg_state_open_readonly(const char *dir, const char *job, kg_state_t **out, char *errbuf);
void kg_state_close(kg_state_t *state);

/* Every stored partition, sorted by topic and partition; free with kg_state_free_partitions. */
int kg_state_partitions(kg_state_t *state, kg_partition_state_t **out, size_t *count, char *errbuf);
void kg_state_free_partitions(kg_partition_state_t *parts, size_t count);
/* The entry of TOPIC:PARTITION in PARTS (sorted by topic, then partition, as kg_state_partitions returns
 * them), or NULL. */
const kg_partition_state_t *kg_state_find(const kg_partition_state_t *parts, size_t count, const char *topic,
                                          int32_t partition);

/* The commit, in three durable steps (see docs/running.md, "Commit protocol"):
 * begin records the file moves and the new partition states under JOB_ID in one transaction; the caller
 * then carries out the moves; finish applies the partition states and clears the journal in one
 * transaction. abort clears a journal whose moves were undone. */
int kg_state_commit_begin(kg_state_t *state, const char *job_id, const kg_move_t *moves, size_t nmoves,
                          const kg_partition_state_t *parts, size_t nparts, char *errbuf);
int kg_state_commit_finish(kg_state_t *state, const char *job_id, char *errbuf);
int kg_state_commit_abort(kg_state_t *state, const char *job_id, char *errbuf);
/* Records for move SEQ (its index) of JOB_ID's journal the upload now under way (UPLOAD_ID, NULL: none) and the
 * ETag its object has (NULL: not known yet): a recovery that starts an upload again, or a write whose ETag differs
 * from the one foreseen. */
int kg_state_move_update(kg_state_t *state, const char *job_id, size_t seq, const char *upload_id, const char *etag,
                         char *errbuf);
/* An unfinished commit: *JOB_ID is NULL when there is none. Caller frees the job id and the moves. */
int kg_state_pending(kg_state_t *state, char **job_id, kg_move_t **moves, size_t *nmoves, char *errbuf);
void kg_state_free_moves(kg_move_t *moves, size_t count);

/* Operator edits (kingest state set-offset / reset), each recorded in state_changes. */
/* Sets the next offset of TOPIC:PARTITION (adding the partition when it has none); *HAD_OLD and *OLD_OFFSET tell
 * what it was. */
int kg_state_set_offset(kg_state_t *state, const char *topic, int32_t partition, int64_t offset, bool *had_old,
                        int64_t *old_offset, char *errbuf);
/* Forgets the stored partitions of TOPIC (NULL: every topic) and PARTITION (-1: every partition), so that the
 * next run treats them as new; *REMOVED lists them (free with kg_state_free_partitions). */
int kg_state_reset(kg_state_t *state, const char *topic, int32_t partition, kg_partition_state_t **removed,
                   size_t *count, char *errbuf);
/* Run history. */
int kg_state_run_begin(kg_state_t *state, const char *job_id, int64_t started_ms, char *errbuf);
/* What a run did with the records it read. Each record read was skipped, quarantined, a tombstone of an Avro topic,
 * or handed to the writer (as none, one or several records: a script may filter and split). */
typedef struct {
  int64_t read;        /* records read from Kafka */
  int64_t written;     /* records written to the output */
  int64_t bytes;       /* bytes written to the output */
  int64_t skipped;     /* records that failed in the script and were skipped */
  int64_t quarantined; /* records that failed in the script and went to <FP>/_errors */
  int64_t deleted;     /* records deleted under the reader before it got to them (never read) */
  int64_t tombstones;  /* Avro records with a null payload: deleted records, read and not written */
} kg_run_counts_t;

int kg_state_run_end(kg_state_t *state, const char *job_id, int64_t ended_ms, const kg_run_counts_t *counts,
                     const char *result, const char *message, char *errbuf);
/* When the last run other than JOB_ID ended (*LAST_RUN_MS), and the last that succeeded: result SUCCESSFUL, or
 * PARTIAL too when PARTIAL_SUCCEEDS (*LAST_SUCCESS_MS); epoch ms, 0 when there is none. */
int kg_state_last_runs(kg_state_t *state, const char *job_id, bool partial_succeeds, int64_t *last_run_ms,
                       int64_t *last_success_ms, char *errbuf);
/* What every finished run other than JOB_ID did, added up (*TOTALS), and how many runs ended with each result
 * (RESULTS[i] for the NRESULTS names in RESULT_NAMES). */
int kg_state_run_totals(kg_state_t *state, const char *job_id, kg_run_counts_t *totals, const char *const *result_names,
                        size_t nresults, int64_t *results, char *errbuf);
/* Records the runs other than JOB_ID still marked RUNNING as DIED (killed, or the machine stopped), saying
 * whether their commit was completed. Only for a run that holds the job lock: no other run is alive then. */
int kg_state_runs_died(kg_state_t *state, const char *job_id, char *errbuf);

/* One entry of a job's history: a run, or an operator's change of its state. A count or offset is -1 when it is not
 * known (a run that has not ended, a count the kingest that recorded the run did not keep, a change's offset that
 * was none). */
typedef struct {
  bool is_run;
  int64_t time_ms; /* a run's start, a change's time: epoch ms */
  /* A run. */
  char *job_id;           /* owned */
  int64_t ended_ms;       /* -1: the run has not ended */
  char *result;           /* owned; NULL: none recorded */
  char *message;          /* owned; NULL: none */
  kg_run_counts_t counts; /* TOMBSTONES is 0, not -1, for a run recorded before they were counted */
  /* An operator's change (kingest state set-offset, reset). */
  char *command; /* owned: the subcommand, "set-offset" or "reset" */
  char *topic;   /* owned */
  int32_t partition;
  int64_t old_offset, new_offset;
} kg_history_entry_t;

/* The runs and the operator changes, newest first (at most LIMIT, 0 for all), in a new array of *COUNT entries
 * (free with kg_state_free_history); `kingest state history` prints them. */
int kg_state_history(kg_state_t *state, int limit, kg_history_entry_t **out, size_t *count, char *errbuf);
void kg_state_free_history(kg_history_entry_t *entries, size_t count);

#endif
