/* cli.h: what the files of the command line (cli_*.c) share: exit statuses, the options and their parsing, the
 * error lines a command ends with, loading the job a command names, and each command's entry point and usage.
 * Internal to the kingest binary: the engine (kgcore) never includes it. */
#ifndef KG_CLI_H
#define KG_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "kg_common.h"
#include "lock.h"
#include "state.h"
#include "tryout.h"

/* Exit statuses (docs/operations.md, "Exit codes"). */
enum {
  KG_EXIT_OK = 0,      /* done: the run committed everything up to the high watermarks */
  KG_EXIT_FAILED = 1,  /* failed: a bad job, a task or the commit failed; nothing of it is committed (but see
                          job.commit.policy=successful) */
  KG_EXIT_USAGE = 2,   /* bad command line */
  KG_EXIT_LOCKED = 3,  /* another run of the job holds the lock: nothing was done */
  KG_EXIT_PARTIAL = 4, /* job.fail.on.partial=true and fetch errors stopped partitions short */
  KG_EXIT_BUDGET = 5,  /* more records failed in the script than the error budget allows: offsets did not move */
  KG_EXIT_STOPPED = 6, /* SIGTERM or SIGINT: what was completely written is committed, the rest waits */
  KG_EXIT_STALLED = 7, /* partitions had records to read and not one moved: nothing is committed */
  KG_EXIT_NOINPUT = EX_NOINPUT, /* 66: the job file cannot be read; nothing was done */
  KG_EXIT_AUTH = EX_NOPERM,     /* 77: the brokers refused the login or the TLS handshake; nothing was done */
  KG_EXIT_CONFIG = EX_CONFIG,   /* 78: the job is not valid (kingest validate says why); nothing was done */
};

/* The usages are laid out as they print, one line of output to a line of source. */
/* clang-format off */
#define KG_EXIT_TABLE                                                                                                  \
  "Exit status:\n"                                                                                                     \
  "  0  success: every partition was pulled to its high watermark and committed\n"                                     \
  "  1  failure: a failed task or commit, brokers or a file system that cannot be reached; what failed is not\n"       \
  "     committed\n"                                                                                                   \
  "  2  bad usage of the command line\n"                                                                               \
  "  3  another run of the job holds its lock; nothing was done\n"                                                     \
  "  4  partial: fetch errors stopped partitions short, or the brokers gave no offsets for some, which were not\n"     \
  "     pulled (only with job.fail.on.partial=true; otherwise 0)\n"                                                    \
  "  5  over the error budget: more records failed in the script than task.skip.error.records or\n"                    \
  "     decode.error.max.ratio allow; no offset of the failed task moved\n"                                            \
  "  6  stopped by SIGTERM or SIGINT: what was completely written is committed, the next run goes on from there\n"     \
  "  7  nothing moved: partitions had records to read and not one record was read (every partition stopped where\n"    \
  "     it started, after fetch errors); nothing is committed, the offsets stay where they were\n"    \
  "  66  the job file cannot be read; nothing was done\n"                                                              \
  "  77  the Kafka brokers refused kingest's login or TLS handshake (or the Kerberos login failed); nothing was\n"    \
  "      published, no offset moved\n"                                                                                \
  "  78  the job is not valid (kingest validate says why); nothing was done\n"

/* Option lines that several usages share, in the columns of plan, run-task, validate and test. */
#define KG_USAGE_STRICT \
  "      --strict           Refuse properties kingest does not know or does not implement (job.strict=true)\n"
#define KG_USAGE_LOG_AND_HELP                                         \
  "  -l, --log-level LEVEL  debug, info (default), warn or error\n" \
  "      --log-file FILE    Also append the log to FILE\n"            \
  "      --log-format FMT   text (default) or json\n"                 \
  "  -h, --help             Show this help\n"
/* clang-format on */

/* Each command's usage (its --help), in the file of the command. */
extern const char *const kg_cli_usage_main;
extern const char *const kg_cli_usage_version;
extern const char *const kg_cli_usage_run;
extern const char *const kg_cli_usage_run_task;
extern const char *const kg_cli_usage_plan;
extern const char *const kg_cli_usage_state;
extern const char *const kg_cli_usage_properties;
extern const char *const kg_cli_usage_validate;
extern const char *const kg_cli_usage_test;

/* Each command: ARGV as main has it (argv[1] is the command); returns the exit status. */
int kg_cli_run(int argc, char **argv);        /* cli_run.c */
int kg_cli_run_task(int argc, char **argv);   /* cli_run.c */
int kg_cli_plan(int argc, char **argv);       /* cli_plan.c */
int kg_cli_state(int argc, char **argv);      /* cli_state.c */
int kg_cli_properties(int argc, char **argv); /* cli_properties.c */
int kg_cli_validate(int argc, char **argv);   /* cli_tryout.c */
int kg_cli_test(int argc, char **argv);       /* cli_tryout.c */

/* Prints the error as one line on stderr, "kingest: MSG", and returns STATUS; a multi-line message (a traceback)
 * goes to the log first. In the JSON log format, one log line of level ERROR with the whole message and the exit
 * status. */
int kg_cli_fail(int status, const char *msg);
/* A usage error: "kingest: <message>" and USAGE (may be NULL) on stderr, or in the JSON log format one log line
 * pointing to --help. Returns STATUS. */
int kg_cli_usage_error(int status, const char *usage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* -h or --help. */
bool kg_cli_is_help(const char *arg);

/* The options of every command. A command takes the ones in its mask (KG_OPT_BIT); each is given as --name VALUE,
 * --name=VALUE, or -x VALUE for those with a short name; "--" ends the options. */
typedef enum {
  KG_OPT_WORK_DIR,
  KG_OPT_STATE_DIR,
  KG_OPT_LOG_LEVEL,
  KG_OPT_LOG_FILE,
  KG_OPT_LOG_FORMAT,
  KG_OPT_LIMIT,
  KG_OPT_JSON,
  KG_OPT_STRICT,
  KG_OPT_DRY_RUN,
  KG_OPT_YES,
  KG_OPT_FORCE,
  KG_OPT_MARKDOWN,
  KG_OPT_TOPIC,
  KG_OPT_PARTITION,
  KG_OPT_FORMAT,
  KG_OPT_KEY_SEPARATOR,
  KG_OPT_TIMESTAMP,
  KG_OPT_COUNT
} kg_opt_id_t;

#define KG_OPT_BIT(id) (1u << (id))

/* What a command takes. */
#define KG_OPTS_LOG              (KG_OPT_BIT(KG_OPT_LOG_LEVEL) | KG_OPT_BIT(KG_OPT_LOG_FILE) | KG_OPT_BIT(KG_OPT_LOG_FORMAT))
#define KG_OPTS_RUN              (KG_OPT_BIT(KG_OPT_WORK_DIR) | KG_OPTS_LOG | KG_OPT_BIT(KG_OPT_STRICT))
#define KG_OPTS_PLAN             (KG_OPTS_RUN | KG_OPT_BIT(KG_OPT_JSON))
#define KG_OPTS_RUN_TASK         (KG_OPT_BIT(KG_OPT_WORK_DIR) | KG_OPTS_LOG)
#define KG_OPTS_STATE            (KG_OPT_BIT(KG_OPT_WORK_DIR) | KG_OPT_BIT(KG_OPT_STATE_DIR) | KG_OPTS_LOG)
#define KG_OPTS_STATE_SHOW       (KG_OPTS_STATE | KG_OPT_BIT(KG_OPT_JSON))
#define KG_OPTS_STATE_HISTORY    (KG_OPTS_STATE | KG_OPT_BIT(KG_OPT_JSON) | KG_OPT_BIT(KG_OPT_LIMIT))
#define KG_OPTS_STATE_SET_OFFSET (KG_OPTS_STATE | KG_OPT_BIT(KG_OPT_DRY_RUN) | KG_OPT_BIT(KG_OPT_FORCE))
#define KG_OPTS_STATE_RESET      (KG_OPTS_STATE | KG_OPT_BIT(KG_OPT_DRY_RUN) | KG_OPT_BIT(KG_OPT_YES))
#define KG_OPTS_PROPERTIES       (KG_OPT_BIT(KG_OPT_MARKDOWN))
#define KG_OPTS_VALIDATE         (KG_OPT_BIT(KG_OPT_WORK_DIR) | KG_OPTS_LOG | KG_OPT_BIT(KG_OPT_STRICT))
#define KG_OPTS_TEST                                                                                                   \
  (KG_OPTS_VALIDATE | KG_OPT_BIT(KG_OPT_TOPIC) | KG_OPT_BIT(KG_OPT_PARTITION) | KG_OPT_BIT(KG_OPT_FORMAT) |            \
   KG_OPT_BIT(KG_OPT_KEY_SEPARATOR) | KG_OPT_BIT(KG_OPT_TIMESTAMP))

typedef struct {
  const char *values[KG_OPT_COUNT]; /* an option's value; "" for a flag that is given */
  const char *positional[4];
  int npositional;
} kg_args_t;

static inline bool kg_cli_has(const kg_args_t *a, kg_opt_id_t id) { return a->values[id] != NULL; }
static inline const char *kg_cli_value(const kg_args_t *a, kg_opt_id_t id) { return a->values[id]; }

/* Parses the options COMMAND takes (MASK) from argv[FIRST...]. Returns 0, 1 for --help (usage printed), or 2 for
 * bad usage (message printed). --log-level, --log-file and --log-format take effect at once. */
int kg_cli_parse_args(int argc, char **argv, int first, unsigned mask, kg_args_t *a, const char *usage);

/* Loads and validates the job file. STRICT (--strict) sets job.strict=true, whatever the file says. The job's
 * log.format applies from here on (from before its properties are checked, so that their errors are in it too),
 * unless --log-format said otherwise. */
int kg_cli_load_config(const char *job_file, const kg_args_t *a, kg_config_t **config, char *err);
/* Loads JOB for run and plan: KG_EXIT_NOINPUT when the file cannot be read, KG_EXIT_CONFIG when the job is not
 * valid, as validate finds it (the message printed), else 0 with *CONFIG. */
int kg_cli_load_job(const char *job, const kg_args_t *a, kg_config_t **config);

/* The state editor (cli_state.c, cli_state_edit.c). */
/* Where a job's state lives, from a job file or a job name. */
typedef struct {
  char *job_name;
  char *state_dir;
  char *lock_dir;
  kg_config_t *config; /* when JOB is a job file */
} kg_job_ref_t;

/* set-offset and reset: the exit status. STATE and LOCK are opened or taken here; the caller closes and releases
 * them. */
int kg_cli_state_set_offset(const kg_args_t *a, const kg_job_ref_t *r, kg_state_t **state, kg_lock_t **lock, char *err);
int kg_cli_state_reset(const kg_args_t *a, const kg_job_ref_t *r, kg_state_t **state, kg_lock_t **lock, char *err);
/* Writes ENTRIES (kg_state_history) as `kingest state history` prints them: a table, a line each. */
void kg_cli_history_table(FILE *out, const kg_history_entry_t *entries, size_t n);

#endif
