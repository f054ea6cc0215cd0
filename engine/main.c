/* main.c: the kingest command line: run, state, properties, help, version. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "job.h"
#include "kafka.h"
#include "lock.h"
#include "mapreduce.h"
#include "state.h"
#include "tryout.h"
#include "topics.h"

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
  "  78  the job is not valid (kingest validate says why); nothing was done\n"

static const char *usage_main =
    "Usage: kingest <command> [options]\n"
    "\n"
    "kingest pulls Kafka topics into files, with job logic written in Lua.\n"
    "\n"
    "Commands:\n"
    "  run JOB                   Run a job once (JOB is a job.lua or a Gobblin .pull/.properties file)\n"
    "  plan JOB [--json]         Show the work units and tasks a run would make, changing nothing\n"
    "  state show JOB            Print every partition's stored offset, lag and statistics\n"
    "  state history JOB         Past runs and state changes, newest first\n"
    "  state set-offset JOB TOPIC:PARTITION OFFSET\n"
    "                            Make the next run start a partition at OFFSET (a number, earliest, latest,\n"
    "                            @TIME, +N or -N)\n"
    "  state reset JOB [TOPIC[:PARTITION]]\n"
    "                            Forget stored partitions: the next run treats them as new\n"
    "  properties                List the job properties kingest reads, with their defaults\n"
    "  run-task JOB              Run the tasks of a Hadoop job's map (launcher.type=MAPREDUCE)\n"
    "  validate JOB              Check a job as a run would, without connecting to anything\n"
    "  test JOB < RECORDS        Feed records from stdin through the job's script and writer; print the output\n"
    "  version                   Print the version\n"
    "  help [COMMAND]            Show help for a command\n"
    "\n"
    "Options:\n"
    "  -h, --help                Show this help\n"
    "  -V, --version             Print the version\n"
    "\n"
    "Run 'kingest COMMAND --help' for a command's options. An option's value may follow it (--work-dir DIR) or be\n"
    "joined to it (--work-dir=DIR); \"--\" ends the options.\n"
    "\n" KG_EXIT_TABLE;

static const char *usage_run =
    "Usage: kingest run JOB [options]\n"
    "\n"
    "Runs the job once: discovers the topics, pulls every selected partition from its stored offset up to\n"
    "the latest offset, writes the records to files, publishes them and stores the new offsets.\n"
    "JOB is a Lua script returning a table of properties (job.lua), or a Gobblin properties file\n"
    "(.pull, .properties, .job, .conf) with ${env:VAR} substitution.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR     Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -l, --log-level LEVEL  debug, info (default), warn or error\n"
    "      --log-file FILE    Also append the log to FILE\n"
    "      --log-format FMT   text (default) or json: one JSON object per line (time, level, message, job,\n"
    "                         job_id, task, topic, partition), for log shippers (the same as log.format)\n"
    "      --strict           Refuse to run when the job has properties kingest does not know or does not\n"
    "                         implement, instead of a WARN for each (the same as job.strict=true)\n"
    "  -h, --help             Show this help\n"
    "\n"
    "A property close to one kingest reads (topic.whitelst) is an error, with or without --strict.\n"
    "\n"
    "SIGTERM or SIGINT stops the run gracefully: no new batch is fetched, what was completely written is\n"
    "committed, and the run is recorded as STOPPED. A second signal ends the process at once (the commit\n"
    "journal keeps that safe: the next run finishes or discards what was under way). In MapReduce mode the\n"
    "signal kills the Hadoop job (mr.hadoop.command job -kill), and nothing of it is committed.\n"
    "\n" KG_EXIT_TABLE;

static const char *usage_state =
    "Usage: kingest state COMMAND JOB [arguments] [options]\n"
    "\n"
    "Reads and repairs a job's stored state. JOB is the job file (its properties locate the state store and\n"
    "the brokers) or the job's name (then the state is under --state-store-dir or <work dir>/state-store).\n"
    "\n"
    "Commands:\n"
    "  show JOB [--json]              Every stored partition: next offset (where the next run starts), the\n"
    "                                 broker's earliest and latest offsets and the lag (when JOB is a job\n"
    "                                 file and the brokers answer), and the statistics of the last run\n"
    "  history JOB [--limit N] [--json]\n"
    "                                 Past runs (time, records, bytes, result) and state changes, newest first\n"
    "  set-offset JOB TOPIC:PARTITION OFFSET [--dry-run] [--force]\n"
    "                                 Make the next run start TOPIC:PARTITION at OFFSET: a whole number,\n"
    "                                 earliest or latest (the broker's), @TIME (the first record at or after\n"
    "                                 TIME, as Kafka's offsets-for-times: ISO 8601 such as @2026-11-30T14:05Z or\n"
    "                                 @2026-11-30, or epoch milliseconds), or +N / -N from the stored offset.\n"
    "                                 The offset must be in the broker's range (--force: not checked)\n"
    "  reset JOB [TOPIC[:PARTITION]] [--yes] [--dry-run]\n"
    "                                 Forget stored partitions (a topic's, or one; all of them only with\n"
    "                                 --yes): the next run treats them as new (bootstrap.with.offset)\n"
    "\n"
    "set-offset and reset take the job lock, so they refuse to run while the job runs, refuse while an\n"
    "interrupted commit waits to be finished, and log every change (also kept in the history). With --dry-run\n"
    "they print what they would change and change nothing.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR          Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -s, --state-store-dir DIR   State store folder (default: the job's state.store.dir,\n"
    "                              or <work dir>/state-store)\n"
    "  -j, --json                  show, history: print JSON\n"
    "  -n, --limit N               history: at most N rows (default 50; 0 for all)\n"
    "      --dry-run               set-offset, reset: print what would change, change nothing\n"
    "  -y, --yes                   reset: confirm forgetting every partition of the job\n"
    "      --force                 set-offset: do not check the offset against the broker's range\n"
    "  -l, --log-level LEVEL       debug, info (default; warn for show and history), warn or error\n"
    "      --log-file FILE         Also append the log to FILE\n"
    "      --log-format FMT        text (default) or json\n"
    "  -h, --help                  Show this help\n"
    "\n"
    "Exit status: 0 done; 1 failure; 2 bad usage; 3 the job is running.\n";

/* Option lines that several usages share, in the columns of plan, run-task, validate and test. */
#define USAGE_STRICT \
  "      --strict           Refuse properties kingest does not know or does not implement (job.strict=true)\n"
#define USAGE_LOG_AND_HELP                                         \
  "  -l, --log-level LEVEL  debug, info (default), warn or error\n" \
  "      --log-file FILE    Also append the log to FILE\n"            \
  "      --log-format FMT   text (default) or json\n"                 \
  "  -h, --help             Show this help\n"

static const char *usage_plan =
    "Usage: kingest plan JOB [options]\n"
    "\n"
    "A dry run: connects to the brokers, makes the work units (watermarks from the stored offsets and the\n"
    "broker's range), estimates their sizes, packs them into tasks and prints the tasks with their loads.\n"
    "Nothing is written: not the state, not the output, not the metrics, and no lock is taken.\n"
    "\n"
    "Options:\n"
    "  -j, --json             Print JSON instead of a table\n"
    "  -w, --work-dir DIR     Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -l, --log-level LEVEL  debug, info, warn (default) or error\n"
    "      --log-file FILE    Also append the log to FILE\n"
    "      --log-format FMT   text (default) or json\n"
    USAGE_STRICT
    "  -h, --help             Show this help\n";

static const char *usage_run_task =
    "Usage: kingest run-task JOB [options]\n"
    "\n"
    "What each map of a MapReduce run executes (launcher.type=MAPREDUCE): reads task lines on stdin (as the\n"
    "driver wrote them, after Hadoop's byte offset), runs each task, writing under\n"
    "<mr.job.root.dir>/<job>/<jobId>/attempts/<attempt id> on HDFS, and prints its result on one line of\n"
    "stdout, starting \"kingest-result<TAB>\". While a task runs, progress goes to stderr as Hadoop\n"
    "Streaming's \"reporter:status:\" lines. The attempt id is $mapreduce_task_attempt_id.\n"
    "\n"
    "A task runs on the properties its line carries, as the driver resolved them (its environment, its\n"
    "${env:VAR}s), not on this map's own evaluation of JOB; the properties that evaluation gives otherwise\n"
    "are named (names only) in the log. JOB gives the task its code (decodeRecord, converters, partition...)\n"
    "and its secrets: a property whose name marks a secret (password, secret, token, credentials, key\n"
    "material: kafka.consumer.sasl.password, kafka.consumer.ssl.key.password, ...) never travels in the task\n"
    "line, and a task whose driver had one that this map's evaluation of JOB has not fails, naming it.\n"
    "\n"
    "A failed task is a result, not an error: the exit status is not 0 only when no result could be printed\n"
    "(a line that is not a task line, stdout that cannot be written).\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR     Work dir (default: $GOBBLIN_WORK_DIR, else the current folder)\n"
    USAGE_LOG_AND_HELP;

static const char *usage_validate =
    "Usage: kingest validate JOB [options]\n"
    "\n"
    "Checks the job as a run does before it starts, without connecting to Kafka, the schema registry or HDFS:\n"
    "the job file, every property (unknown and misspelt ones, invalid values), the job.lua's hooks\n"
    "(decodeRecord or source, converters, estimateSize, partition), the modules it requires as it loads, the\n"
    "topic patterns and the Kafka client's settings. Prints what the job is, then OK.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR     Work dir the default paths are under (default: $GOBBLIN_WORK_DIR, else the\n"
    "                         current folder); nothing is written there\n"
    USAGE_STRICT
    USAGE_LOG_AND_HELP
    "\n"
    "Exit status: 0 the job is valid; 64 bad usage; 66 the job file cannot be read; 78 the job is not valid.\n";

static const char *usage_test =
    "Usage: kingest test JOB [options] < RECORDS\n"
    "\n"
    "Feeds records read from stdin through the job as a task would (decodeRecord, the converters, the writer),\n"
    "with offsets 0, 1, 2, ..., and prints what would be written: the bytes of text output, one JSON line per\n"
    "Avro record. Each record that fails is logged on stderr with its offset and traceback; decode.error.policy\n"
    "and the error budget apply as in a run. The counts go to stderr. Nothing connects to Kafka, and neither the\n"
    "job's output nor its state is written (a job that reads Avro asks its schema registry for the schemas).\n"
    "\n"
    "Options:\n"
    "  -t, --topic TOPIC      The records' topic (default: topic.whitelist when it begins with a plain name)\n"
    "  -p, --partition N      The records' partition (default 0)\n"
    "  -f, --format FORMAT    lines (default): a record per line, without its newline; length-prefixed: a\n"
    "                         4-byte big-endian length, then that many bytes (0xFFFFFFFF: a null payload)\n"
    "  -k, --key-separator S  lines: the key is what comes before the first S, the payload what follows\n"
    "      --timestamp MS     The records' timestamp, ms since the epoch (default: now)\n"
    "  -w, --work-dir DIR     Work dir the output paths are shown under (default: $GOBBLIN_WORK_DIR, else the\n"
    "                         current folder); nothing is written there\n"
    USAGE_STRICT
    USAGE_LOG_AND_HELP
    "\n"
    "Exit status: 0 every record passed; 1 a record failed in the script, or a run would fail the task; 64 bad\n"
    "usage; 65 stdin is not in the format; 66 the job file cannot be read; 74 stdin or a temporary file cannot\n"
    "be read or written; 78 the job is not valid.\n";

static const char *usage_properties =
    "Usage: kingest properties\n"
    "       kingest properties --markdown\n"
    "\n"
    "Lists the job properties kingest reads, with their defaults and meaning.\n"
    "\n"
    "Options:\n"
    "      --markdown  Print them as the Markdown table of docs/properties.md\n"
    "  -h, --help      Show this help\n";

static const char *usage_version =
    "Usage: kingest version\n"
    "       kingest -V | --version\n"
    "\n"
    "Prints the version: kingest <version>.\n";
/* clang-format on */

/* Prints the error as one line on stderr, "kingest: MSG", and returns STATUS; a multi-line message (a traceback)
 * goes to the log first. In the JSON log format, one log line of level ERROR with the whole message and the exit
 * status. */
static int fail(int status, const char *msg) {
  const char *nl = strchr(msg, '\n'), *tb = strstr(msg, "\nstack traceback:\n");
  if (kg_log_get_format() == KG_LOG_FORMAT_JSON) {
    kg_log_say(KG_LOG_ERROR, "kingest: ", status, "%s", msg); /* the traceback in a field of its own */
  } else if (tb && tb == nl) {
    /* A script error: its traceback above, the message once, as the last line. */
    KG_ERROR("stack traceback of the error below (the script's frames first):%s", tb + 17);
    kg_log_say(KG_LOG_ERROR, "kingest: ", status, "%.*s", (int)(nl - msg), msg);
  } else if (nl) {
    KG_ERROR("%s", msg);
    kg_log_say(KG_LOG_ERROR, "kingest: ", status, "%.*s", (int)(nl - msg), msg);
  } else {
    kg_log_say(KG_LOG_ERROR, "kingest: ", status, "%s", msg);
  }
  return status;
}

/* A usage error: "kingest: <message>" and USAGE (may be NULL) on stderr, or in the JSON log format one log line
 * pointing to --help. Returns STATUS. */
static int usage_error(int status, const char *usage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int usage_error(int status, const char *usage, const char *fmt, ...) {
  char msg[KG_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (kg_log_get_format() == KG_LOG_FORMAT_JSON) {
    kg_log_say(KG_LOG_ERROR, "kingest: ", status, "%s%s", msg, usage ? " (see --help)" : "");
  } else {
    fprintf(stderr, "kingest: %s\n%s", msg, usage ? usage : "");
  }
  return status;
}

static bool is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

/* The options of every command. A command takes the ones in its mask (OPT_BIT); each is given as --name VALUE,
 * --name=VALUE, or -x VALUE for those with a short name; "--" ends the options. */
typedef enum {
  OPT_WORK_DIR,
  OPT_STATE_DIR,
  OPT_LOG_LEVEL,
  OPT_LOG_FILE,
  OPT_LOG_FORMAT,
  OPT_LIMIT,
  OPT_JSON,
  OPT_STRICT,
  OPT_DRY_RUN,
  OPT_YES,
  OPT_FORCE,
  OPT_MARKDOWN,
  OPT_TOPIC,
  OPT_PARTITION,
  OPT_FORMAT,
  OPT_KEY_SEPARATOR,
  OPT_TIMESTAMP,
  OPT_COUNT
} kg_opt_id_t;

#define OPT_BIT(id) (1u << (id))

static const struct {
  char short_name; /* 0: none */
  const char *name;
  bool takes_value;
} options[OPT_COUNT] = {
    [OPT_WORK_DIR] = {'w', "--work-dir", true},   [OPT_STATE_DIR] = {'s', "--state-store-dir", true},
    [OPT_LOG_LEVEL] = {'l', "--log-level", true}, [OPT_LOG_FILE] = {0, "--log-file", true},
    [OPT_LOG_FORMAT] = {0, "--log-format", true}, [OPT_LIMIT] = {'n', "--limit", true},
    [OPT_JSON] = {'j', "--json", false},          [OPT_STRICT] = {0, "--strict", false},
    [OPT_DRY_RUN] = {0, "--dry-run", false},      [OPT_YES] = {'y', "--yes", false},
    [OPT_FORCE] = {0, "--force", false},          [OPT_MARKDOWN] = {0, "--markdown", false},
    [OPT_TOPIC] = {'t', "--topic", true},         [OPT_PARTITION] = {'p', "--partition", true},
    [OPT_FORMAT] = {'f', "--format", true},       [OPT_KEY_SEPARATOR] = {'k', "--key-separator", true},
    [OPT_TIMESTAMP] = {0, "--timestamp", true},
};

/* What a command takes. */
#define OPTS_LOG              (OPT_BIT(OPT_LOG_LEVEL) | OPT_BIT(OPT_LOG_FILE) | OPT_BIT(OPT_LOG_FORMAT))
#define OPTS_RUN              (OPT_BIT(OPT_WORK_DIR) | OPTS_LOG | OPT_BIT(OPT_STRICT))
#define OPTS_PLAN             (OPTS_RUN | OPT_BIT(OPT_JSON))
#define OPTS_RUN_TASK         (OPT_BIT(OPT_WORK_DIR) | OPTS_LOG)
#define OPTS_STATE            (OPT_BIT(OPT_WORK_DIR) | OPT_BIT(OPT_STATE_DIR) | OPTS_LOG)
#define OPTS_STATE_SHOW       (OPTS_STATE | OPT_BIT(OPT_JSON))
#define OPTS_STATE_HISTORY    (OPTS_STATE | OPT_BIT(OPT_JSON) | OPT_BIT(OPT_LIMIT))
#define OPTS_STATE_SET_OFFSET (OPTS_STATE | OPT_BIT(OPT_DRY_RUN) | OPT_BIT(OPT_FORCE))
#define OPTS_STATE_RESET      (OPTS_STATE | OPT_BIT(OPT_DRY_RUN) | OPT_BIT(OPT_YES))
#define OPTS_PROPERTIES       (OPT_BIT(OPT_MARKDOWN))
#define OPTS_VALIDATE         (OPT_BIT(OPT_WORK_DIR) | OPTS_LOG | OPT_BIT(OPT_STRICT))
#define OPTS_TEST                                                                                                      \
  (OPTS_VALIDATE | OPT_BIT(OPT_TOPIC) | OPT_BIT(OPT_PARTITION) | OPT_BIT(OPT_FORMAT) | OPT_BIT(OPT_KEY_SEPARATOR) |    \
   OPT_BIT(OPT_TIMESTAMP))

typedef struct {
  const char *values[OPT_COUNT]; /* an option's value; "" for a flag that is given */
  const char *positional[4];
  int npositional;
} kg_args_t;

static bool has(const kg_args_t *a, kg_opt_id_t id) { return a->values[id] != NULL; }
static const char *value(const kg_args_t *a, kg_opt_id_t id) { return a->values[id]; }

/* The option closest to a misspelled one, among those COMMAND takes, or NULL. */
static const char *closest_option(const char *name, unsigned mask) {
  const char *best = NULL;
  size_t best_d = 3;
  for (int i = 0; i < OPT_COUNT; i++) {
    if (!(mask & OPT_BIT(i))) continue;
    size_t d = kg_edit_distance(name, options[i].name, 2);
    if (d < best_d) {
      best_d = d;
      best = options[i].name;
    }
  }
  return best;
}

/* Parses the options COMMAND takes (MASK) from argv[FIRST...]. Returns 0, 1 for --help (usage printed), or 2 for
 * bad usage (message printed). --log-level, --log-file and --log-format take effect at once. */
static int parse_args(int argc, char **argv, int first, unsigned mask, kg_args_t *a, const char *usage) {
  memset(a, 0, sizeof *a);
  /* --log-format first, wherever it is, so that every error about the command line is in its format. */
  for (int i = first; i < argc && (mask & OPT_BIT(OPT_LOG_FORMAT)) && strcmp(argv[i], "--"); i++) {
    const char *f = !strncmp(argv[i], "--log-format=", 13)             ? argv[i] + 13
                    : !strcmp(argv[i], "--log-format") && i + 1 < argc ? argv[i + 1]
                                                                       : NULL;
    if (f && !strcmp(f, "json")) kg_log_set_format(KG_LOG_FORMAT_JSON);
    if (f && !strcmp(f, "text")) kg_log_set_format(KG_LOG_FORMAT_TEXT);
  }
  bool options_done = false;
  for (int i = first; i < argc; i++) {
    const char *arg = argv[i];
    /* "-", and "-N" (set-offset's relative offset), are arguments */
    if (options_done || arg[0] != '-' || !arg[1] || (arg[1] >= '0' && arg[1] <= '9')) {
      if (a->npositional == 4) {
        return usage_error(2, usage, "too many arguments");
      }
      a->positional[a->npositional++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      options_done = true;
      continue;
    }
    if (is_help(arg)) {
      fputs(usage, stdout);
      return 1;
    }
    /* --name, --name=value, -x */
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    int found = -1;
    for (int o = 0; o < OPT_COUNT && found < 0; o++) {
      if (!(mask & OPT_BIT(o))) continue;
      if ((strlen(options[o].name) == name_len && !strncmp(arg, options[o].name, name_len)) ||
          (options[o].short_name && arg[1] == options[o].short_name && !arg[2]))
        found = o;
    }
    if (found < 0) {
      char *name = kg_xstrndup(arg, name_len);
      const char *near = arg[1] == '-' ? closest_option(name, mask) : NULL;
      if (near)
        usage_error(2, usage, "unknown option %s; did you mean %s?", name, near);
      else
        usage_error(2, usage, "unknown option %s", name);
      free(name);
      return 2;
    }
    const char *v;
    if (!options[found].takes_value) {
      if (eq) {
        return usage_error(2, usage, "option %s takes no value", options[found].name);
      }
      v = "";
    } else if (eq) {
      v = eq + 1;
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return usage_error(2, usage, "option %s needs a value", options[found].name);
    }
    if (options[found].takes_value && !*v) return usage_error(2, usage, "option %s needs a value", options[found].name);
    a->values[found] = v;
  }
  const char *level = value(a, OPT_LOG_LEVEL);
  if (level) {
    static const char *levels[] = {"debug", "info", "warn", "error"};
    int found = -1;
    for (int i = 0; i < 4; i++)
      if (!strcasecmp(level, levels[i])) found = i;
    if (found < 0) {
      return usage_error(2, NULL, "invalid --log-level %s: allowed values are debug, info, warn, error", level);
    }
    kg_log_set_level((kg_log_level_t)found);
  }
  const char *format = value(a, OPT_LOG_FORMAT);
  if (format) {
    if (!strcmp(format, "json"))
      kg_log_set_format(KG_LOG_FORMAT_JSON);
    else if (!strcmp(format, "text"))
      kg_log_set_format(KG_LOG_FORMAT_TEXT);
    else {
      return usage_error(2, NULL, "invalid --log-format %s: allowed values are text, json", format);
    }
  }
  const char *log_file = value(a, OPT_LOG_FILE);
  if (log_file && kg_log_set_file(log_file)) {
    return usage_error(2, NULL, "cannot open log file %s: %s", log_file, strerror(errno));
  }
  return 0;
}

/* Loads and validates the job file. STRICT (--strict) sets job.strict=true, whatever the file says. The job's
 * log.format applies from here on (from before its properties are checked, so that their errors are in it too),
 * unless --log-format said otherwise. */
static int load_config(const char *job_file, const kg_args_t *a, kg_config_t **config, char *err) {
  kg_props_t *props = NULL;
  bool is_lua = false;
  int rc = kg_jobfile_load(job_file, &props, &is_lua, err);
  if (rc) return rc;
  const char *format = kg_props_get(props, "log.format");
  if (format && !has(a, OPT_LOG_FORMAT)) {
    char f[16];
    snprintf(f, sizeof f, "%s", format);
    if (!strcasecmp(kg_strtrim(f), "json")) kg_log_set_format(KG_LOG_FORMAT_JSON);
  }
  if (has(a, OPT_STRICT)) kg_props_set(props, "job.strict", "true", "--strict");
  rc = kg_config_new(props, job_file, is_lua, value(a, OPT_WORK_DIR), config, err);
  if (!rc && !has(a, OPT_LOG_FORMAT)) kg_log_set_format((kg_log_format_t)(*config)->log_format);
  if (!rc) kg_test_hooks_warn();
  return rc;
}

/* Loads JOB for run and plan: KG_EXIT_NOINPUT when the file cannot be read, KG_EXIT_CONFIG when the job is not
 * valid, as validate finds it (the message printed), else 0 with *CONFIG. */
static int load_job(const char *job, const kg_args_t *a, kg_config_t **config) {
  char err[KG_ERRLEN] = "";
  *config = NULL;
  FILE *f = fopen(job, "r");
  if (!f || (fgetc(f) == EOF && ferror(f))) {
    snprintf(err, sizeof err, "%s: cannot read job file: %s", job, strerror(errno));
    if (f) fclose(f);
    return fail(KG_EXIT_NOINPUT, err);
  }
  fclose(f);
  int rc = load_config(job, a, config, err);
  if (!rc) rc = kg_job_check(*config, NULL, err);
  if (!rc) return 0;
  kg_config_destroy(*config);
  *config = NULL;
  return fail(KG_EXIT_CONFIG, err);
}

static int cmd_run(int argc, char **argv) {
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, OPTS_RUN, &a, usage_run);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    return usage_error(2, usage_run, "run needs one job file");
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  if ((prc = load_job(a.positional[0], &a, &config))) return prc;
  kg_stop_install();
  kg_outcome_t outcome = KG_OUTCOME_SUCCESSFUL;
  int rc = kg_job_run(config, &outcome, err);
  bool fail_on_partial = config->fail_on_partial;
  kg_config_destroy(config);
  if (rc == KG_ELOCKED) return fail(KG_EXIT_LOCKED, err);
  if (rc == KG_EBUDGET) return fail(KG_EXIT_BUDGET, err);
  if (rc == KG_ESTALLED) return fail(KG_EXIT_STALLED, err);
  if (rc) return fail(KG_EXIT_FAILED, err);
  if (outcome == KG_OUTCOME_STOPPED) return KG_EXIT_STOPPED;
  if (outcome == KG_OUTCOME_PARTIAL && fail_on_partial) {
    char msg[KG_ERRLEN + 64];
    snprintf(msg, sizeof msg, "the run was partial (job.fail.on.partial=true): %s", err);
    return fail(KG_EXIT_PARTIAL, msg);
  }
  return KG_EXIT_OK;
}

static int cmd_run_task(int argc, char **argv) {
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, OPTS_RUN_TASK, &a, usage_run_task);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    return usage_error(2, usage_run_task, "run-task needs one job file");
  }
  char err[KG_ERRLEN] = "";
  /* A map's work dir is its container's folder: nothing of it outlives the attempt. */
  if (!has(&a, OPT_WORK_DIR)) {
    const char *env = getenv("GOBBLIN_WORK_DIR");
    a.values[OPT_WORK_DIR] = env && *env ? env : ".";
  }
  /* The job file as this map evaluates it gives the task its secrets only: the rest comes with the task line, as the
   * driver resolved it. That it cannot be evaluated here is not yet an error (a variable of the driver's). */
  kg_props_t *own = NULL;
  bool is_lua = false;
  char own_error[KG_ERRLEN] = "";
  if (kg_jobfile_load(a.positional[0], &own, &is_lua, own_error)) own = NULL;
  kg_stop_install();
  kg_mr_map_t map = {.job_file = a.positional[0],
                     .job_is_lua = is_lua,
                     .own = own,
                     .own_error = own_error,
                     .work_dir = value(&a, OPT_WORK_DIR),
                     .log_format_set = has(&a, OPT_LOG_FORMAT)};
  int rc = kg_mr_run_task(&map, err);
  kg_props_destroy(own);
  return rc ? fail(KG_EXIT_FAILED, err) : KG_EXIT_OK;
}

static int cmd_plan(int argc, char **argv) {
  kg_log_set_level(KG_LOG_WARN); /* the plan is the output; --log-level info shows the planning steps */
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, OPTS_PLAN, &a, usage_plan);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    return usage_error(2, usage_plan, "plan needs one job file");
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  if ((prc = load_job(a.positional[0], &a, &config))) return prc;
  int rc = kg_job_plan(config, has(&a, OPT_JSON), stdout, err);
  kg_config_destroy(config);
  return rc ? fail(1, err) : 0;
}

/* validate and test: loads JOB as load_config does: EX_NOINPUT when the file cannot be read, EX_CONFIG when the
 * job is not valid (the message printed). The work dir roots the default paths only: nothing is written there. */
static int load_for_tryout(const char *job, kg_args_t *a, kg_config_t **config) {
  char err[KG_ERRLEN] = "";
  FILE *f = fopen(job, "r");
  if (!f || (fgetc(f) == EOF && ferror(f))) {
    snprintf(err, sizeof err, "%s: cannot read job file: %s", job, strerror(errno));
    if (f) fclose(f);
    return fail(EX_NOINPUT, err);
  }
  fclose(f);
  const char *work_dir = value(a, OPT_WORK_DIR) ? value(a, OPT_WORK_DIR) : getenv("GOBBLIN_WORK_DIR");
  char cwd[PATH_MAX];
  if ((!work_dir || !*work_dir) && getcwd(cwd, sizeof cwd)) work_dir = cwd;
  a->values[OPT_WORK_DIR] = work_dir;
  int rc = load_config(job, a, config, err);
  a->values[OPT_WORK_DIR] = NULL; /* cwd's buffer ends here */
  if (rc) return fail(EX_CONFIG, err);
  return 0;
}

static int cmd_validate(int argc, char **argv) {
  kg_args_t a;
  int rc = parse_args(argc, argv, 2, OPTS_VALIDATE, &a, usage_validate);
  if (rc) return rc == 1 ? 0 : EX_USAGE;
  if (a.npositional != 1) {
    return usage_error(EX_USAGE, usage_validate, "validate needs one job file");
  }
  kg_config_t *config = NULL;
  if ((rc = load_for_tryout(a.positional[0], &a, &config))) return rc;
  char err[KG_ERRLEN] = "";
  rc = kg_tryout_validate(config, stdout, err);
  kg_config_destroy(config);
  return rc ? fail(rc, err) : 0;
}

static int cmd_test(int argc, char **argv) {
  kg_args_t a;
  int rc = parse_args(argc, argv, 2, OPTS_TEST, &a, usage_test);
  if (rc) return rc == 1 ? 0 : EX_USAGE;
  if (a.npositional != 1) {
    return usage_error(EX_USAGE, usage_test, "test needs one job file");
  }
  const char *v[5] = {value(&a, OPT_TOPIC), value(&a, OPT_PARTITION), value(&a, OPT_FORMAT),
                      value(&a, OPT_KEY_SEPARATOR), value(&a, OPT_TIMESTAMP)};
  kg_tryout_options_t o = {.topic = v[0], .in = stdin, .out = stdout, .err = stderr, .timestamp = kg_now_ms()};
  int64_t n;
  if (v[1] && (!kg_parse_int64(v[1], &n) || n < 0 || n > INT32_MAX)) {
    return usage_error(EX_USAGE, NULL, "invalid --partition %s: expected a whole number from 0 to %d", v[1], INT32_MAX);
  }
  o.partition = v[1] ? (int32_t)n : 0;
  if (v[2] && strcmp(v[2], "lines") && strcmp(v[2], "length-prefixed")) {
    return usage_error(EX_USAGE, NULL, "invalid --format %s: expected lines or length-prefixed", v[2]);
  }
  o.format = v[2] && !strcmp(v[2], "length-prefixed") ? KG_TRYOUT_LENGTH_PREFIXED : KG_TRYOUT_LINES;
  if (v[3] && (!*v[3] || o.format != KG_TRYOUT_LINES)) {
    return usage_error(EX_USAGE, NULL, "--key-separator %s: %s", *v[3] ? "is for --format lines" : "needs a separator",
                       "a record's key is what comes before it on its line");
  }
  o.key_separator = v[3];
  if (v[4] && (!kg_parse_int64(v[4], &o.timestamp) || o.timestamp < 0)) {
    return usage_error(EX_USAGE, NULL, "invalid --timestamp %s: expected milliseconds since the epoch", v[4]);
  }
  kg_config_t *config = NULL;
  if ((rc = load_for_tryout(a.positional[0], &a, &config))) return rc;
  char err[KG_ERRLEN] = "";
  char *topic = NULL;
  if (!o.topic && kg_tryout_default_topic(config, &topic, err)) {
    kg_config_destroy(config);
    return usage_error(EX_USAGE, usage_test, "%s", err);
  }
  if (!o.topic) o.topic = topic;
  rc = kg_tryout_test(config, &o, err);
  free(topic);
  kg_config_destroy(config);
  return rc > 1 ? fail(rc, err) : rc;
}

static void format_time(int64_t ms, char *out, size_t n) {
  if (ms <= 0) {
    snprintf(out, n, "-");
    return;
  }
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  localtime_r(&secs, &tm);
  strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Where a job's state lives, from a job file or a job name. */
typedef struct {
  char *job_name;
  char *state_dir;
  char *lock_dir;
  kg_config_t *config; /* when JOB is a job file */
} kg_job_ref_t;

static void job_ref_free(kg_job_ref_t *r) {
  free(r->job_name);
  free(r->state_dir);
  free(r->lock_dir);
  kg_config_destroy(r->config);
}

static int job_ref(const char *job, const kg_args_t *a, kg_job_ref_t *r, char *err) {
  memset(r, 0, sizeof *r);
  const char *state_dir = value(a, OPT_STATE_DIR);
  if (access(job, F_OK) == 0) {
    int rc = load_config(job, a, &r->config, err);
    if (rc) return rc;
    r->job_name = kg_xstrdup(r->config->job_name);
    r->state_dir = kg_xstrdup(state_dir ? state_dir : r->config->state_store_dir);
    r->lock_dir = kg_xstrdup(r->config->lock_dir);
    return KG_OK;
  }
  const char *wd = value(a, OPT_WORK_DIR) ? value(a, OPT_WORK_DIR) : getenv("GOBBLIN_WORK_DIR");
  if (!state_dir && !wd)
    return kg_fail(err, KG_EINVAL,
                   "%s is not a job file, and there is no state store for a job name: pass "
                   "--state-store-dir or --work-dir, or set GOBBLIN_WORK_DIR",
                   job);
  r->job_name = kg_xstrdup(job);
  r->state_dir = state_dir ? kg_xstrdup(state_dir) : kg_config_default_path("state.store.dir", wd);
  r->lock_dir = wd ? kg_config_default_path("job.lock.dir", wd) : NULL;
  return KG_OK;
}

/* The brokers' view of N stored partitions, when the job file names the brokers and they answer. */
typedef struct {
  bool known;            /* the brokers answered */
  char error[KG_ERRLEN]; /* why not, when the job file names them */
  int64_t *earliest, *latest;
  const char **errors; /* per partition, NULL when answered */
} kg_broker_view_t;

static void broker_view(const kg_job_ref_t *r, const char *const *topics, const int32_t *ids, size_t n,
                        kg_broker_view_t *v) {
  memset(v, 0, sizeof *v);
  v->earliest = kg_xcalloc(n ? n : 1, sizeof(int64_t));
  v->latest = kg_xcalloc(n ? n : 1, sizeof(int64_t));
  v->errors = kg_xcalloc(n ? n : 1, sizeof(char *));
  if (!r->config || !n) return;
  kg_partition_offsets_t *parts = kg_xcalloc(n, sizeof *parts);
  for (size_t i = 0; i < n; i++) {
    parts[i].topic = topics[i];
    parts[i].partition = ids[i];
  }
  kg_kafka_t *kafka = NULL;
  v->known =
      kg_kafka_new(r->config, &kafka, v->error) == KG_OK && kg_kafka_offsets_bulk(kafka, parts, n, v->error) == KG_OK;
  kg_kafka_destroy(kafka);
  for (size_t i = 0; i < n; i++) {
    v->earliest[i] = parts[i].earliest;
    v->latest[i] = parts[i].latest;
    v->errors[i] = parts[i].error;
  }
  free(parts);
}

static void broker_view_free(kg_broker_view_t *v) {
  free(v->earliest);
  free(v->latest);
  free(v->errors);
}

static void print_partitions(const kg_job_ref_t *r, kg_partition_state_t *parts, size_t n, bool json) {
  const char **topics = kg_xcalloc(n ? n : 1, sizeof(char *));
  int32_t *ids = kg_xcalloc(n ? n : 1, sizeof(int32_t));
  for (size_t i = 0; i < n; i++) {
    topics[i] = parts[i].topic;
    ids[i] = parts[i].partition;
  }
  kg_broker_view_t v;
  broker_view(r, topics, ids, n, &v);
  char *path = kg_state_path(r->state_dir, r->job_name);
  if (json) {
    kg_buf_t out = {0};
    kg_buf_appendf(&out, "%s", "{\"job\":");
    kg_json_string(&out, r->job_name);
    kg_buf_appendf(&out, "%s", ",\"state\":");
    kg_json_string(&out, path);
    kg_buf_appendf(&out, "%s", ",\"brokers_error\":");
    if (r->config && n && !v.known)
      kg_json_string(&out, v.error);
    else
      kg_buf_appendf(&out, "%s", "null");
    kg_buf_appendf(&out, "%s", ",\"partitions\":[");
    for (size_t i = 0; i < n; i++) {
      const kg_partition_state_t *p = &parts[i];
      kg_buf_appendf(&out, "%s", i ? ",\n  {\"topic\":" : "\n  {\"topic\":");
      kg_json_string(&out, p->topic);
      kg_buf_appendf(&out, ",\"partition\":%d,\"next_offset\":%lld", p->partition, (long long)p->next_offset);
      if (v.known && !v.errors[i]) {
        bool out_of_range = p->next_offset < v.earliest[i] || p->next_offset > v.latest[i];
        kg_buf_appendf(&out, ",\"earliest\":%lld,\"latest\":%lld,", (long long)v.earliest[i], (long long)v.latest[i]);
        if (out_of_range)
          kg_buf_appendf(&out, "%s", "\"lag\":null,\"out_of_range\":true");
        else
          kg_buf_appendf(&out, "\"lag\":%lld,\"out_of_range\":false", (long long)(v.latest[i] - p->next_offset));
      } else {
        kg_buf_appendf(&out, "%s", ",\"earliest\":null,\"latest\":null,\"lag\":null,\"out_of_range\":null");
      }
      if (p->has_stats)
        kg_buf_appendf(&out, ",\"records\":%lld,\"avg_record_millis\":%.6g,\"avg_record_size\":%.6g",
                       (long long)p->records_pulled, p->avg_record_millis, p->avg_record_size);
      else
        kg_buf_appendf(&out, "%s", ",\"records\":null,\"avg_record_millis\":null,\"avg_record_size\":null");
      kg_buf_appendf(&out, ",\"updated_ms\":%lld}", (long long)p->updated_ms);
    }
    kg_buf_appendf(&out, "%s", n ? "\n]}\n" : "]}\n");
    fwrite(out.data, 1, out.len, stdout);
    kg_buf_free(&out);
  } else {
    printf("Job %s, state %s: %zu partitions\n", r->job_name, path, n);
    if (r->config && n && !v.known) printf("(the brokers' offsets are not shown: %s)\n", v.error);
    printf("%-32s %9s %14s %14s %14s %12s %12s %12s %12s  %s\n", "TOPIC", "PARTITION", "NEXT_OFFSET", "EARLIEST",
           "LATEST", "LAG", "RECORDS", "AVG_REC_MS", "AVG_REC_B", "UPDATED");
    for (size_t i = 0; i < n; i++) {
      char when[32], e[24] = "-", l[24] = "-", lag[32] = "-", rec[24] = "-", ms[24] = "-", b[24] = "-";
      format_time(parts[i].updated_ms, when, sizeof when);
      if (v.known && !v.errors[i]) {
        snprintf(e, sizeof e, "%lld", (long long)v.earliest[i]);
        snprintf(l, sizeof l, "%lld", (long long)v.latest[i]);
        if (parts[i].next_offset < v.earliest[i] || parts[i].next_offset > v.latest[i])
          snprintf(lag, sizeof lag, "out-of-range");
        else
          snprintf(lag, sizeof lag, "%lld", (long long)(v.latest[i] - parts[i].next_offset));
      } else if (v.known) {
        snprintf(e, sizeof e, "?");
        snprintf(l, sizeof l, "?");
      }
      if (parts[i].has_stats) {
        snprintf(rec, sizeof rec, "%lld", (long long)parts[i].records_pulled);
        snprintf(ms, sizeof ms, "%.4f", parts[i].avg_record_millis);
        snprintf(b, sizeof b, "%.1f", parts[i].avg_record_size);
      }
      printf("%-32s %9d %14lld %14s %14s %12s %12s %12s %12s  %s\n", parts[i].topic, parts[i].partition,
             (long long)parts[i].next_offset, e, l, lag, rec, ms, b, when);
    }
  }
  free(path);
  broker_view_free(&v);
  free(topics);
  free(ids);
}

/* Takes the job's locks for an edit and checks there is no unfinished commit: the job lock when its folder is known
 * (a job file, a work dir), and always the lock beside the state database, which every run takes too (lock.h). */
static int lock_for_edit(const kg_job_ref_t *r, kg_state_t *state, kg_lock_t **lock, char *err) {
  *lock = NULL;
  long holder = 0;
  char *state_path = kg_state_path(r->state_dir, r->job_name);
  int locked = kg_lock_acquire_job(r->lock_dir, state_path, r->job_name, lock, &holder, err);
  free(state_path);
  if (locked == KG_ELOCKED)
    return kg_fail(err, KG_ELOCKED, "job %s is running (process %ld holds its lock): wait for it or stop it first",
                   r->job_name, holder);
  if (locked) return locked;
  char *pending = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  int rc = kg_state_pending(state, &pending, &moves, &nmoves, err);
  if (!rc && pending)
    rc = kg_fail(err, KG_EINVAL,
                 "job %s has an unfinished commit (%s): run the job once, it finishes the commit first, then edit "
                 "its state",
                 r->job_name, pending);
  free(pending);
  kg_state_free_moves(moves, nmoves);
  if (rc) {
    kg_lock_release(*lock);
    *lock = NULL;
  }
  return rc;
}

static bool parse_partition(const char *s, char **topic, int32_t *partition) {
  const char *colon = strrchr(s, ':');
  int64_t p;
  if (!colon || colon == s || !kg_parse_int64(colon + 1, &p) || p < 0 || p > INT32_MAX) return false;
  *topic = kg_xstrndup(s, (size_t)(colon - s));
  *partition = (int32_t)p;
  return true;
}

/* A time for set-offset's @TIME: epoch milliseconds, or ISO 8601: 2026-11-30, 2026-11-30T14:05[:09[.250]], with
 * Z or +hh:mm / -hh:mm (without a zone, local time; a space may replace the T). */
static bool parse_time_ms(const char *s, int64_t *out) {
  bool digits = *s != '\0';
  for (const char *p = s; *p; p++)
    digits = digits && *p >= '0' && *p <= '9';
  if (digits) return kg_parse_int64(s, out) && *out >= 0;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int used = 0, y, mo, d;
  if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 || used != 10) return false;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  const char *p = s + used;
  int64_t ms = 0;
  if (*p == 'T' || *p == ' ') {
    int h, mi, n = 0;
    if (sscanf(p + 1, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5) return false;
    tm.tm_hour = h;
    tm.tm_min = mi;
    p += 1 + n;
    if (*p == ':') {
      int sec;
      if (sscanf(p + 1, "%2d%n", &sec, &n) != 1 || n != 2) return false;
      tm.tm_sec = sec;
      p += 3;
      if (*p == '.') {
        int scale = 100;
        for (p++; *p >= '0' && *p <= '9'; p++) {
          ms += (*p - '0') * scale;
          scale /= 10;
        }
      }
    }
  }
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return false;
  time_t secs;
  if (*p == '\0') {
    tm.tm_isdst = -1;
    secs = mktime(&tm);
  } else if (*p == 'Z' && !p[1]) {
    secs = timegm(&tm);
  } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
    int oh, om;
    if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) return false;
    secs = timegm(&tm) - (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else {
    return false;
  }
  if (secs == (time_t)-1) return false;
  *out = (int64_t)secs * 1000 + ms;
  return true;
}

/* Checks that TOPIC:PARTITION is on the brokers KAFKA talks to, so that set-offset answers at once for one that
 * is not (a broker asked for its offsets would be retried until kafka.metadata.timeout.ms): a missing topic is
 * named with the nearest of the job's selected topics, else of the broker's; a missing partition with the topic's
 * partitions. A topic the job does not select is logged at WARN: its offset is stored, but no run pulls it. */
static int check_partition(const kg_job_ref_t *r, kg_kafka_t *kafka, const char *topic, int32_t partition, char *err) {
  kg_topic_meta_t *topics = NULL;
  size_t ntopics = 0;
  int rc = kg_kafka_list_topics(kafka, &topics, &ntopics, err);
  if (rc) return rc;
  kg_topic_filter_t *filter = NULL;
  char ferr[KG_ERRLEN];
  if (kg_topic_filter_new(r->config->topic_whitelist, r->config->topic_blacklist, &filter, ferr)) filter = NULL;
  const kg_topic_meta_t *found = NULL;
  const char **selected = kg_xcalloc(ntopics ? ntopics : 1, sizeof(char *)),
             **all = kg_xcalloc(ntopics ? ntopics : 1, sizeof(char *));
  size_t nselected = 0;
  for (size_t i = 0; i < ntopics; i++) {
    all[i] = topics[i].name;
    if (!strcmp(topics[i].name, topic)) found = &topics[i];
    if (filter && kg_topic_filter_match(filter, topics[i].name)) selected[nselected++] = topics[i].name;
  }
  if (!found) {
    const char *near = kg_topic_nearest(topic, selected, nselected);
    bool of_job = near != NULL;
    if (!near) near = kg_topic_nearest(topic, all, ntopics);
    if (near)
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s is not on the broker (kafka.brokers=%s); did you mean %s%s?", topic,
                   kg_kafka_options(r->config)->brokers, near, of_job ? ", which the job pulls" : "");
    else
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s is not on the broker (kafka.brokers=%s, %zu topic%s%s)", topic,
                   kg_kafka_options(r->config)->brokers, ntopics, ntopics == 1 ? "" : "s",
                   nselected ? "" : ", none of them selected by the job");
  } else {
    bool has = false;
    for (int32_t p = 0; p < found->partition_count && !has; p++)
      has = found->partitions[p] == partition;
    if (!has && found->partition_count > 0 &&
        found->partitions[found->partition_count - 1] == found->partition_count - 1)
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s has no partition %d: its partitions are 0 to %d", topic, partition,
                   found->partition_count - 1);
    else if (!has)
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s has no partition %d (it has %d partitions)", topic, partition,
                   found->partition_count);
    else if (filter && !kg_topic_filter_match(filter, topic))
      KG_WARN("Topic %s is not selected by job %s (topic.whitelist, topic.blacklist): the offset is stored, but no run "
              "pulls the topic",
              topic, r->job_name);
  }
  free(selected);
  free(all);
  kg_topic_filter_destroy(filter);
  kg_kafka_free_topics(topics, ntopics);
  return rc;
}

/* The offset set-offset is asked for, from SPEC: N, earliest, latest, @TIME, +N or -N (from the stored offset,
 * HAD_OLD/OLD). Checks it against the broker's range unless FORCE; *RANGE_CHECKED tells whether it was. */
static int resolve_offset(const kg_job_ref_t *r, const char *topic, int32_t partition, const char *spec, bool had_old,
                          int64_t old, bool force, int64_t *offset, bool *range_checked, char *err) {
  *range_checked = false;
  bool relative = spec[0] == '+' || spec[0] == '-';
  bool needs_broker = !strcmp(spec, "earliest") || !strcmp(spec, "latest") || spec[0] == '@';
  int64_t n = 0;
  if (relative) {
    if (!kg_parse_int64(spec + 1, &n) || n < 0)
      return kg_fail(err, KG_EINVAL, "invalid offset '%s': expected +N or -N with a whole number N", spec);
    if (!had_old)
      return kg_fail(
          err, KG_EINVAL,
          "%s:%d has no stored offset in job %s, so '%s' has nothing to count from: give an absolute offset, "
          "earliest, latest or @TIME",
          topic, partition, r->job_name, spec);
    *offset = spec[0] == '+' ? old + n : old - n;
    if (*offset < 0)
      return kg_fail(err, KG_EINVAL, "offset %s from the stored %lld would be %lld, below 0", spec, (long long)old,
                     (long long)*offset);
  } else if (!needs_broker) {
    if (!kg_parse_int64(spec, offset) || *offset < 0)
      return kg_fail(err, KG_EINVAL,
                     "invalid offset '%s': expected a whole number >= 0, earliest, latest, @TIME (ISO 8601 or epoch "
                     "ms), +N or -N",
                     spec);
  }
  int64_t time_ms = 0;
  if (spec[0] == '@' && !parse_time_ms(spec + 1, &time_ms))
    return kg_fail(err, KG_EINVAL,
                   "invalid time '%s': expected @ and epoch milliseconds (@1796000000000) or ISO 8601 "
                   "(@2026-11-30T14:05:00Z, @2026-11-30T14:05+01:00, @2026-11-30)",
                   spec);
  if (!r->config) {
    if (needs_broker)
      return kg_fail(err, KG_EINVAL,
                     "offset '%s' needs the brokers: give the job file instead of the job name %s, so that kingest "
                     "knows them",
                     spec, r->job_name);
    return KG_OK; /* a job name: no brokers to check against */
  }
  if (force && !needs_broker) return KG_OK;
  kg_kafka_t *kafka = NULL;
  int64_t earliest = 0, latest = 0;
  kg_partition_offsets_t part = {.topic = topic, .partition = partition};
  char kerr[KG_ERRLEN] = "";
  int rc = kg_kafka_new(r->config, &kafka, kerr);
  if (!rc && (rc = check_partition(r, kafka, topic, partition, kerr)) == KG_ENOTFOUND) {
    kg_kafka_destroy(kafka);
    return kg_fail(err, KG_EINVAL, "cannot set the offset of %s:%d: %s%s", topic, partition, kerr,
                   needs_broker ? "" : " (--force sets it unchecked)");
  }
  if (!rc) rc = kg_kafka_offsets_bulk(kafka, &part, 1, kerr);
  if (!rc && part.error) rc = kg_fail(kerr, KG_EKAFKA, "%s", part.error);
  earliest = part.earliest;
  latest = part.latest;
  if (!rc && spec[0] == '@') {
    int64_t at = -1;
    rc = kg_kafka_offset_for_time(kafka, topic, partition, time_ms, &at, kerr);
    if (!rc) {
      if (at < 0)
        KG_INFO("No record of %s:%d is as recent as %s: taking the latest offset", topic, partition, spec + 1);
      *offset = at < 0 ? latest : at;
    }
  }
  kg_kafka_destroy(kafka);
  if (rc)
    return kg_fail(err, rc, "cannot check offset %s of %s:%d against the broker's range: %s%s", spec, topic, partition,
                   kerr, needs_broker ? "" : " (--force sets it unchecked)");
  if (!strcmp(spec, "earliest")) *offset = earliest;
  if (!strcmp(spec, "latest")) *offset = latest;
  *range_checked = true;
  if (!force && (*offset < earliest || *offset > latest))
    return kg_fail(err, KG_ERANGE,
                   "offset %lld is outside the range of %s:%d on the broker: [%lld, %lld] (earliest, latest); "
                   "--force sets it anyway",
                   (long long)*offset, topic, partition, (long long)earliest, (long long)latest);
  return KG_OK;
}

static int state_set_offset(const kg_args_t *a, const kg_job_ref_t *r, kg_state_t **state, kg_lock_t **lock,
                            char *err) {
  char *topic = NULL;
  int32_t partition = 0;
  if (!parse_partition(a->positional[1], &topic, &partition)) {
    return usage_error(2, NULL, "invalid partition '%s': expected TOPIC:PARTITION, e.g. events:3", a->positional[1]);
  }
  /* The offset's form first: a bad one is a usage error, before anything is opened. */
  const char *spec = a->positional[2];
  int64_t num;
  bool digit1 = spec[0] && spec[1] >= '0' && spec[1] <= '9';
  bool form_ok = !strcmp(spec, "earliest") || !strcmp(spec, "latest") ||
                 (spec[0] == '@' && parse_time_ms(spec + 1, &num)) ||
                 ((spec[0] == '+' || spec[0] == '-') && digit1 && kg_parse_int64(spec + 1, &num) && num >= 0) ||
                 (spec[0] >= '0' && spec[0] <= '9' && kg_parse_int64(spec, &num) && num >= 0);
  if (!form_ok) {
    free(topic);
    if (spec[0] == '@')
      return usage_error(2, NULL,
                         "invalid time '%s': expected @ and epoch milliseconds (@1796000000000) or ISO 8601 "
                         "(@2026-11-30T14:05:00Z, @2026-11-30T14:05+01:00, @2026-11-30)",
                         spec);
    return usage_error(2, NULL,
                       "invalid offset '%s': expected a whole number >= 0, earliest, latest, @TIME (ISO 8601 or "
                       "epoch ms), +N or -N",
                       spec);
  }
  bool dry = has(a, OPT_DRY_RUN);
  int rc = dry ? kg_state_open_readonly(r->state_dir, r->job_name, state, err)
               : kg_state_open(r->state_dir, r->job_name, true, state, err);
  if (!rc && !dry) rc = lock_for_edit(r, *state, lock, err);
  /* The stored offset, for +N / -N and to say what changes. */
  bool had = false;
  int64_t old = 0, offset = 0;
  kg_partition_state_t *parts = NULL;
  size_t n = 0;
  if (!rc) rc = kg_state_partitions(*state, &parts, &n, err);
  const kg_partition_state_t *stored = rc ? NULL : kg_state_find(parts, n, topic, partition);
  if (stored) {
    had = true;
    old = stored->next_offset;
  }
  kg_state_free_partitions(parts, n);
  bool checked = false;
  if (!rc)
    rc = resolve_offset(r, topic, partition, a->positional[2], had, old, has(a, OPT_FORCE), &offset, &checked, err);
  if (!rc && !checked && !has(a, OPT_FORCE))
    KG_WARN("Offset %lld of %s:%d is not checked against the broker's range: %s is a job name, not a job file",
            (long long)offset, topic, partition, r->job_name);
  if (!rc && dry) {
    if (had)
      printf("Would set the offset of %s:%d in job %s from %lld to %lld\n", topic, partition, r->job_name,
             (long long)old, (long long)offset);
    else
      printf("Would set the offset of %s:%d in job %s to %lld (it has none)\n", topic, partition, r->job_name,
             (long long)offset);
  } else if (!rc) {
    rc = kg_state_set_offset(*state, topic, partition, offset, &had, &old, err);
    if (!rc && had)
      KG_INFO("Set the offset of %s:%d in job %s from %lld to %lld", topic, partition, r->job_name, (long long)old,
              (long long)offset);
    else if (!rc)
      KG_INFO("Set the offset of %s:%d in job %s to %lld (it had none)", topic, partition, r->job_name,
              (long long)offset);
  }
  free(topic);
  return rc ? fail(rc == KG_ELOCKED ? 3 : 1, err) : 0;
}

static int state_reset(const kg_args_t *a, const kg_job_ref_t *r, kg_state_t **state, kg_lock_t **lock, char *err) {
  char *topic = NULL;
  int32_t partition = -1;
  if (a->npositional == 2 && !parse_partition(a->positional[1], &topic, &partition)) {
    topic = kg_xstrdup(a->positional[1]);
    partition = -1;
  }
  bool dry = has(a, OPT_DRY_RUN);
  int rc = dry ? kg_state_open_readonly(r->state_dir, r->job_name, state, err)
               : kg_state_open(r->state_dir, r->job_name, false, state, err);
  /* What it would forget. */
  kg_partition_state_t *parts = NULL;
  size_t n = 0, matching = 0;
  if (!rc) rc = kg_state_partitions(*state, &parts, &n, err);
  for (size_t i = 0; !rc && i < n; i++) {
    if (topic && (strcmp(parts[i].topic, topic) || (partition >= 0 && parts[i].partition != partition))) continue;
    matching++;
    if (dry)
      printf("Would forget %s:%d in job %s (offset %lld)\n", parts[i].topic, parts[i].partition, r->job_name,
             (long long)parts[i].next_offset);
  }
  kg_state_free_partitions(parts, n);
  if (!rc && dry && matching == 0) printf("Nothing to reset in job %s\n", r->job_name);
  if (!rc && !dry && !topic && matching > 0 && !has(a, OPT_YES)) {
    free(topic);
    return usage_error(2, NULL,
                       "state reset without a topic forgets every stored partition of job %s (%zu): pass --yes to do "
                       "it, or --dry-run to list them",
                       r->job_name, matching);
  }
  if (!rc && !dry) rc = lock_for_edit(r, *state, lock, err);
  kg_partition_state_t *removed = NULL;
  size_t nremoved = 0;
  if (!rc && !dry) rc = kg_state_reset(*state, topic, partition, &removed, &nremoved, err);
  for (size_t i = 0; !rc && i < nremoved; i++)
    KG_INFO("Reset %s:%d in job %s: forgot offset %lld; the next run treats it as new", removed[i].topic,
            removed[i].partition, r->job_name, (long long)removed[i].next_offset);
  if (!rc && !dry && nremoved == 0) KG_INFO("Nothing to reset in job %s", r->job_name);
  kg_state_free_partitions(removed, nremoved);
  free(topic);
  return rc ? fail(rc == KG_ELOCKED ? 3 : 1, err) : 0;
}

static int cmd_state(int argc, char **argv) {
  if (argc < 3 || is_help(argv[2])) {
    fputs(usage_state, argc < 3 ? stderr : stdout);
    return argc < 3 ? 2 : 0;
  }
  const char *sub = argv[2];
  int min_args, max_args;
  unsigned mask;
  if (!strcmp(sub, "show")) {
    min_args = max_args = 1;
    mask = OPTS_STATE_SHOW;
  } else if (!strcmp(sub, "history")) {
    min_args = max_args = 1;
    mask = OPTS_STATE_HISTORY;
  } else if (!strcmp(sub, "set-offset")) {
    min_args = max_args = 3;
    mask = OPTS_STATE_SET_OFFSET;
  } else if (!strcmp(sub, "reset")) {
    min_args = 1;
    max_args = 2;
    mask = OPTS_STATE_RESET;
  } else {
    fprintf(stderr, "kingest: unknown state command %s\n%s", sub, usage_state);
    return 2;
  }
  if (!strcmp(sub, "show") || !strcmp(sub, "history")) kg_log_set_level(KG_LOG_WARN); /* the state is the output */
  kg_args_t a;
  int prc = parse_args(argc, argv, 3, mask, &a, usage_state);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional < min_args || a.npositional > max_args) {
    return usage_error(2, usage_state, "state %s: wrong number of arguments", sub);
  }
  int64_t limit = 50;
  if (value(&a, OPT_LIMIT) && (!kg_parse_int64(value(&a, OPT_LIMIT), &limit) || limit < 0 || limit > INT32_MAX)) {
    return usage_error(2, NULL, "invalid --limit %s: expected a whole number >= 0", value(&a, OPT_LIMIT));
  }
  char err[KG_ERRLEN] = "";
  kg_job_ref_t r;
  if (job_ref(a.positional[0], &a, &r, err)) {
    job_ref_free(&r);
    return fail(1, err);
  }
  int status = 0;
  kg_state_t *state = NULL;
  kg_lock_t *lock = NULL;
  bool json = has(&a, OPT_JSON);
  if (!strcmp(sub, "show") || !strcmp(sub, "history")) {
    int rc = kg_state_open_readonly(r.state_dir, r.job_name, &state, err);
    if (!rc && !strcmp(sub, "show")) {
      kg_partition_state_t *parts = NULL;
      size_t n = 0;
      rc = kg_state_partitions(state, &parts, &n, err);
      if (!rc) print_partitions(&r, parts, n, json);
      kg_state_free_partitions(parts, n);
    } else if (!rc && json) {
      kg_buf_t out = {0};
      rc = kg_state_history_json(state, &out, (int)limit, err);
      if (!rc) fwrite(out.data, 1, out.len, stdout);
      kg_buf_free(&out);
    } else if (!rc) {
      rc = kg_state_history(state, stdout, (int)limit, err);
    }
    if (rc) status = fail(1, err);
  } else if (!strcmp(sub, "set-offset")) {
    status = state_set_offset(&a, &r, &state, &lock, err);
  } else {
    status = state_reset(&a, &r, &state, &lock, err);
  }
  kg_lock_release(lock);
  kg_state_close(state);
  job_ref_free(&r);
  return status;
}

static int cmd_properties(int argc, char **argv) {
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, OPTS_PROPERTIES, &a, usage_properties);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional) {
    fprintf(stderr, "kingest: properties takes no arguments\n%s", usage_properties);
    return 2;
  }
  kg_config_print_properties(stdout, has(&a, OPT_MARKDOWN));
  return 0;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN); /* a file-size limit makes write() fail with EFBIG, reported as an error */
  if (argc < 2) {
    fputs(usage_main, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (is_help(cmd)) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") && argc > 2) {
    bool help = argc == 3 && is_help(argv[2]);
    if (!help) fprintf(stderr, "kingest: version takes no arguments\n");
    fputs(usage_version, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  if ((!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) && argc > 2) {
    fprintf(stderr, "kingest: %s takes no arguments\n%s", cmd, usage_version);
    return 2;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("kingest %s\n", KINGEST_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "help")) {
    if (argc > 3) {
      fprintf(stderr, "kingest: help takes one command at most\n%s", usage_main);
      return 2;
    }
    const char *topic = argc > 2 ? argv[2] : "help";
    const char *usage = !strcmp(topic, "run")          ? usage_run
                        : !strcmp(topic, "plan")       ? usage_plan
                        : !strcmp(topic, "state")      ? usage_state
                        : !strcmp(topic, "properties") ? usage_properties
                        : !strcmp(topic, "run-task")   ? usage_run_task
                        : !strcmp(topic, "validate")   ? usage_validate
                        : !strcmp(topic, "test")       ? usage_test
                        : !strcmp(topic, "version")    ? usage_version
                        : !strcmp(topic, "help")       ? usage_main
                                                       : NULL;
    if (!usage) { /* help for a command that does not exist is a usage error, as the command itself is */
      fprintf(stderr, "kingest: unknown command %s\n%s", topic, usage_main);
      return 2;
    }
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "run")) return cmd_run(argc, argv);
  if (!strcmp(cmd, "plan")) return cmd_plan(argc, argv);
  if (!strcmp(cmd, "state")) return cmd_state(argc, argv);
  if (!strcmp(cmd, "properties")) return cmd_properties(argc, argv);
  if (!strcmp(cmd, "run-task")) return cmd_run_task(argc, argv);
  if (!strcmp(cmd, "validate")) return cmd_validate(argc, argv);
  if (!strcmp(cmd, "test")) return cmd_test(argc, argv);
  /* An option in the command's place (kingest --verbose) is named as such. */
  fprintf(stderr, "kingest: unknown %s %s\n%s", cmd[0] == '-' && cmd[1] ? "option" : "command", cmd, usage_main);
  return 2;
}
