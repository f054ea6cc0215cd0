/* tryout.h: trying a job without a broker. `kingest validate` makes every check a run makes of its job before
 * it reaches a broker (kg_job_check) and prints what the job is; `kingest test` feeds records read from stdin
 * through the job's record path (task.c's, with its Lua state, error policy, budget and writer) and prints
 * what would be written. Neither reaches Kafka, writes the job's output or state, or takes its lock. Their exit
 * statuses are sysexits.h's (docs/scripting.md, "Trying a job without a broker"). */
#ifndef KG_TRYOUT_H
#define KG_TRYOUT_H

#include <stdio.h>
#include <sysexits.h>

#include "config.h"

/* `kingest validate`: checks CONFIG (which has passed kg_config_new) as a run would before it starts, without
 * connecting to anything, and prints a summary to OUT: the job, its topic selection, input, hooks (decodeRecord
 * or source, converters, estimateSize, partition, each with where it is defined), writer and error policy,
 * then "OK". Returns EX_OK, or EX_CONFIG with the run's error in ERRBUF. */
int kg_tryout_validate(const kg_config_t *config, FILE *out, char *errbuf);

/* How `kingest test` reads its records. */
typedef enum {
  KG_TRYOUT_LINES = 0,       /* one record a line, without its newline */
  KG_TRYOUT_LENGTH_PREFIXED, /* a 4-byte big-endian length, then that many bytes; 0xFFFFFFFF: a null payload */
} kg_tryout_format_t;

typedef struct {
  const char *topic; /* the records' topic (kg_tryout_default_topic when the user names none) */
  int32_t partition;
  kg_tryout_format_t format;
  const char *key_separator; /* lines: the key is what comes before the first KEY_SEPARATOR; NULL: no key */
  int64_t timestamp;         /* the records' timestamp, ms since the epoch */
  FILE *in;                  /* the records */
  FILE *out;                 /* what the writer wrote: the bytes of text output, a JSON line per Avro record */
  FILE *err;                 /* the summary */
} kg_tryout_options_t;

/* The topic records are tried as when the user names none: the first entry of topic.whitelist when it is a plain
 * topic name. KG_OK with *TOPIC a new string, or KG_EINVAL saying why there is none. */
int kg_tryout_default_topic(const kg_config_t *config, char **topic, char *errbuf);

/* `kingest test`: checks CONFIG as kg_tryout_validate does, reads every record of OPTIONS->in, then feeds them one
 * by one, with offsets 0, 1, 2, ..., to a task's record path whose one work unit is that range of
 * OPTIONS->topic:partition, and whose outputs go to a temporary folder that is removed at the end. Failed
 * records are logged (every one, with its error and traceback), decode.error.policy and the error budget apply
 * as in a run; a task failure stops there, as it stops a task. Then the output files are printed to
 * OPTIONS->out (text output decompressed; Avro records as avro-c's JSON of what the file holds), and the counts
 * to OPTIONS->err: records read, written (wrote at least one output), dropped (wrote none: a filter), skipped,
 * quarantined, failed (failed the task) and not processed after a task failure. Returns EX_OK when no record
 * failed in the script and the task would succeed, 1 when one did or it would not, EX_CONFIG for a bad job,
 * EX_DATAERR for input not in OPTIONS->format, EX_IOERR when the input or the temporary folder cannot be read or
 * written; with the error in ERRBUF for those three. */
int kg_tryout_test(const kg_config_t *config, const kg_tryout_options_t *options, char *errbuf);

#endif
