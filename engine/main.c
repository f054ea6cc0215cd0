/* main.c: the kingest command line: run, state, properties, help, version. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
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

/* Exit statuses (README, "Exit codes"). */
enum {
  KG_EXIT_OK = 0,      /* done: the run committed everything up to the high watermarks */
  KG_EXIT_FAILED = 1,  /* failed: a bad job, a task or the commit failed; nothing of it is committed (but see
                          job.commit.policy=successful) */
  KG_EXIT_USAGE = 2,   /* bad command line */
  KG_EXIT_LOCKED = 3,  /* another run of the job holds the lock: nothing was done */
  KG_EXIT_PARTIAL = 4, /* job.fail.on.partial=true and fetch errors stopped partitions short */
  KG_EXIT_BUDGET = 5,  /* more records failed in the script than the error budget allows: offsets did not move */
  KG_EXIT_STOPPED = 6, /* SIGTERM or SIGINT: what was completely written is committed, the rest waits */
};

#define KG_EXIT_TABLE                                                                                                  \
  "Exit status:\n"                                                                                                     \
  "  0  success: every partition was pulled to its high watermark and committed\n"                                     \
  "  1  failure: a bad job file, a failed task or commit; what failed is not committed\n"                              \
  "  2  bad usage of the command line\n"                                                                               \
  "  3  another run of the job holds its lock; nothing was done\n"                                                     \
  "  4  partial: fetch errors stopped partitions short (only with job.fail.on.partial=true; otherwise 0)\n"            \
  "  5  over the error budget: more records failed in the script than task.skip.error.records or\n"                    \
  "     decode.error.max.ratio allow; no offset of the failed task moved\n"                                            \
  "  6  stopped by SIGTERM or SIGINT: what was completely written is committed, the next run goes on from there\n"

static const char *usage_main =
    "Usage: kingest <command> [options]\n"
    "\n"
    "kingest pulls Kafka topics into files, with job logic written in Lua.\n"
    "\n"
    "Commands:\n"
    "  run JOB             Run a job once (JOB is a job.lua or a Gobblin .pull/.properties file)\n"
    "  plan JOB [--json]   Show the work units and tasks a run would make, changing nothing\n"
    "  state show JOB      Print every partition's stored offset and statistics\n"
    "  properties          List the job properties kingest reads, with their defaults\n"
    "  run-task JOB        Run the tasks of a Hadoop job's map (launcher.type=MAPREDUCE)\n"
    "  validate JOB        Check a job as a run would, without connecting to anything\n"
    "  test JOB            Feed records from stdin through the job's script and writer; print the output\n"
    "  help [COMMAND]      Show help for a command\n"
    "\n"
    "Options:\n"
    "  -h, --help          Show this help\n"
    "  -V, --version       Print the version\n"
    "\n"
    "Run 'kingest COMMAND --help' for a command's options.\n"
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
    "      --strict           Refuse to run when the job has properties kingest does not know or does not\n"
    "                         implement, instead of a WARN for each (the same as job.strict=true)\n"
    "  -h, --help             Show this help\n"
    "\n"
    "A property close to one kingest reads (topic.whitelst) is an error, with or without --strict.\n"
    "\n"
    "SIGTERM or SIGINT stops the run gracefully: no new batch is fetched, what was completely written is\n"
    "committed, and the run is recorded as STOPPED. A second signal ends the process at once (the commit\n"
    "journal keeps that safe: the next run finishes or discards what was under way).\n"
    "\n" KG_EXIT_TABLE;

static const char *usage_state =
    "Usage: kingest state COMMAND JOB [arguments] [options]\n"
    "\n"
    "Reads and repairs a job's stored state. JOB is the job file (its properties locate the state store and\n"
    "the brokers) or the job's name (then the state is under --state-store-dir or <work dir>/state-store).\n"
    "\n"
    "Commands:\n"
    "  show JOB                       Every stored partition: next offset (where the next run starts), the\n"
    "                                 broker's earliest and latest offsets and the lag (when JOB is a job\n"
    "                                 file and the brokers answer), and the statistics of the last run\n"
    "  history JOB [--limit N]        Past runs (time, records, bytes, result) and state changes, newest first\n"
    "  set-offset JOB TOPIC:PARTITION OFFSET\n"
    "                                 Make the next run start TOPIC:PARTITION at OFFSET\n"
    "  reset JOB [TOPIC[:PARTITION]]  Forget stored partitions (all, a topic's, or one): the next run treats\n"
    "                                 them as new (bootstrap.with.offset)\n"
    "\n"
    "set-offset and reset take the job lock, so they refuse to run while the job runs, refuse while an\n"
    "interrupted commit waits to be finished, and log every change (also kept in the history).\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR          Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -s, --state-store-dir DIR   State store folder (default: the job's state.store.dir,\n"
    "                              or <work dir>/state-store)\n"
    "  -n, --limit N               history: at most N rows (default 50; 0 for all)\n"
    "  -h, --help                  Show this help\n"
    "\n"
    "Exit status: 0 done; 1 failure; 2 bad usage; 3 the job is running.\n";

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
    "      --strict           Refuse properties kingest does not know or does not implement (job.strict=true)\n"
    "  -h, --help             Show this help\n";

static const char *usage_run_task =
    "Usage: kingest run-task JOB [options]\n"
    "\n"
    "What each map of a MapReduce run executes (launcher.type=MAPREDUCE): reads task lines on stdin (as the\n"
    "driver wrote them, after Hadoop's byte offset), runs each task with the job's properties, writing under\n"
    "<mr.job.root.dir>/<job>/<jobId>/attempts/<attempt id> on HDFS, and prints its result on one line of\n"
    "stdout, starting \"kingest-result<TAB>\". While a task runs, progress goes to stderr as Hadoop\n"
    "Streaming's \"reporter:status:\" lines. The attempt id is $mapreduce_task_attempt_id. A failed task is\n"
    "a result, not an error: the exit status is not 0 only when no result could be printed.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR     Work dir (default: $GOBBLIN_WORK_DIR, else the current folder)\n"
    "  -l, --log-level LEVEL  debug, info (default), warn or error\n"
    "  -h, --help             Show this help\n";

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
    "      --strict           Refuse properties kingest does not know or does not implement (job.strict=true)\n"
    "  -l, --log-level LEVEL  debug, info (default), warn or error\n"
    "  -h, --help             Show this help\n"
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
    "      --strict           Refuse properties kingest does not know or does not implement (job.strict=true)\n"
    "  -l, --log-level LEVEL  debug, info (default), warn or error\n"
    "  -h, --help             Show this help\n"
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
    "      --markdown  Print them as the Markdown table of README.md's \"Job properties\"\n"
    "  -h, --help      Show this help\n";

/* Prints the error as one line on stderr; a multi-line message (a traceback) goes to the log first. */
static int fail(int status, const char *msg) {
  const char *nl = strchr(msg, '\n');
  if (nl) {
    KG_ERROR("%s", msg);
    fprintf(stderr, "kingest: %.*s\n", (int)(nl - msg), msg);
  } else {
    fprintf(stderr, "kingest: %s\n", msg);
  }
  return status;
}

static bool is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

typedef struct {
  const char *work_dir;
  const char *state_dir;
  const char *log_level;
  const char *log_file;
  const char *limit;
  bool json;
  bool strict; /* --strict: run and plan only */
  const char *positional[4];
  int npositional;
} kg_args_t;

/* Parses options shared by the commands. Returns 0, 1 for --help, or 2 for bad usage (message printed). */
static int parse_args(int argc, char **argv, int first, kg_args_t *a, const char *usage) {
  memset(a, 0, sizeof *a);
  for (int i = first; i < argc; i++) {
    const char *arg = argv[i];
    const char **target = NULL;
    if (is_help(arg)) {
      fputs(usage, stdout);
      return 1;
    } else if (!strcmp(arg, "-w") || !strcmp(arg, "--work-dir")) {
      target = &a->work_dir;
    } else if (!strcmp(arg, "-s") || !strcmp(arg, "--state-store-dir")) {
      target = &a->state_dir;
    } else if (!strcmp(arg, "-l") || !strcmp(arg, "--log-level")) {
      target = &a->log_level;
    } else if (!strcmp(arg, "-n") || !strcmp(arg, "--limit")) {
      target = &a->limit;
    } else if (!strcmp(arg, "--log-file")) {
      target = &a->log_file;
    } else if (!strcmp(arg, "-j") || !strcmp(arg, "--json")) {
      a->json = true;
      continue;
    } else if (!strcmp(arg, "--strict") && (usage == usage_run || usage == usage_plan)) {
      a->strict = true;
      continue;
    } else if (!strncmp(arg, "--work-dir=", 11)) {
      a->work_dir = arg + 11;
      continue;
    } else if (arg[0] == '-' && arg[1]) {
      fprintf(stderr, "kingest: unknown option %s\n%s", arg, usage);
      return 2;
    } else {
      if (a->npositional == 4) {
        fprintf(stderr, "kingest: too many arguments\n%s", usage);
        return 2;
      }
      a->positional[a->npositional++] = arg;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "kingest: option %s needs a value\n%s", arg, usage);
      return 2;
    }
    *target = argv[++i];
  }
  if (a->log_level) {
    static const char *levels[] = {"debug", "info", "warn", "error"};
    int found = -1;
    for (int i = 0; i < 4; i++)
      if (!strcasecmp(a->log_level, levels[i])) found = i;
    if (found < 0) {
      fprintf(stderr, "kingest: invalid --log-level %s: allowed values are debug, info, warn, error\n", a->log_level);
      return 2;
    }
    kg_log_set_level((kg_log_level_t)found);
  }
  if (a->log_file && kg_log_set_file(a->log_file)) {
    fprintf(stderr, "kingest: cannot open log file %s\n", a->log_file);
    return 2;
  }
  return 0;
}

/* Loads and validates the job file. STRICT (--strict) sets job.strict=true, whatever the file says. */
static int load_config(const char *job_file, const char *work_dir, bool strict, kg_config_t **config, char *err) {
  kg_props_t *props = NULL;
  bool is_lua = false;
  int rc = kg_jobfile_load(job_file, &props, &is_lua, err);
  if (rc) return rc;
  if (strict) kg_props_set(props, "job.strict", "true", "--strict");
  return kg_config_new(props, job_file, is_lua, work_dir, config, err);
}

static int cmd_run(int argc, char **argv) {
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, &a, usage_run);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    fprintf(stderr, "kingest: run needs one job file\n%s", usage_run);
    return 2;
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  if (load_config(a.positional[0], a.work_dir, a.strict, &config, err)) return fail(KG_EXIT_FAILED, err);
  kg_stop_install();
  kg_outcome_t outcome = KG_OUTCOME_SUCCESSFUL;
  int rc = kg_job_run(config, &outcome, err);
  bool fail_on_partial = config->fail_on_partial;
  kg_config_destroy(config);
  if (rc == KG_ELOCKED) return fail(KG_EXIT_LOCKED, err);
  if (rc == KG_EBUDGET) return fail(KG_EXIT_BUDGET, err);
  if (rc) return fail(KG_EXIT_FAILED, err);
  if (outcome == KG_OUTCOME_STOPPED) return KG_EXIT_STOPPED;
  if (outcome == KG_OUTCOME_PARTIAL && fail_on_partial) {
    fprintf(stderr, "kingest: the run was partial: fetch errors stopped partitions short of their high watermark "
                    "(job.fail.on.partial=true)\n");
    return KG_EXIT_PARTIAL;
  }
  return KG_EXIT_OK;
}

static int cmd_run_task(int argc, char **argv) {
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, &a, usage_run_task);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    fprintf(stderr, "kingest: run-task needs one job file\n%s", usage_run_task);
    return 2;
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  /* A map's work dir is its container's folder: nothing of it outlives the attempt. */
  const char *work_dir = a.work_dir ? a.work_dir : getenv("GOBBLIN_WORK_DIR");
  if (!work_dir || !*work_dir) work_dir = ".";
  if (load_config(a.positional[0], work_dir, false, &config, err)) return fail(KG_EXIT_FAILED, err);
  kg_stop_install();
  int rc = kg_mr_run_task(config, err);
  kg_config_destroy(config);
  return rc ? fail(KG_EXIT_FAILED, err) : KG_EXIT_OK;
}

static int cmd_plan(int argc, char **argv) {
  kg_log_set_level(KG_LOG_WARN); /* the plan is the output; --log-level info shows the planning steps */
  kg_args_t a;
  int prc = parse_args(argc, argv, 2, &a, usage_plan);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    fprintf(stderr, "kingest: plan needs one job file\n%s", usage_plan);
    return 2;
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  if (load_config(a.positional[0], a.work_dir, a.strict, &config, err)) return fail(1, err);
  int rc = kg_job_plan(config, a.json, stdout, err);
  kg_config_destroy(config);
  return rc ? fail(1, err) : 0;
}

/* validate and test: takes the options of NAMES (a NULL-terminated list of "short|long" or "|long"; a trailing '='
 * for one that takes a value, given as the next argument or as --long=VALUE) out of ARGV[2..], into VALUES ("" for
 * a flag), and puts the other arguments in *REST for parse_args. Returns 0, or EX_USAGE with the usage printed. */
static int take_options(int argc, char **argv, const char *const *names, const char **values, char ***rest,
                        int *nrest, const char *usage) {
  *rest = kg_xcalloc((size_t)argc + 1, sizeof(char *));
  *nrest = 0;
  (*rest)[(*nrest)++] = argv[0];
  (*rest)[(*nrest)++] = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    int found = -1;
    const char *inline_value = NULL;
    for (int k = 0; names[k] && found < 0; k++) {
      const char *bar = strchr(names[k], '|');
      size_t slen = (size_t)(bar - names[k]), llen = strcspn(bar + 1, "=");
      bool takes = bar[1 + llen] == '=';
      if (slen && arg[0] == '-' && strlen(arg + 1) == slen && !strncmp(arg + 1, names[k], slen)) found = k;
      if (!strncmp(arg, "--", 2) && !strncmp(arg + 2, bar + 1, llen) && (arg[2 + llen] == '\0' ||
                                                                       (takes && arg[2 + llen] == '='))) {
        found = k;
        if (arg[2 + llen] == '=') inline_value = arg + 3 + llen;
      }
      if (found >= 0 && !takes) values[k] = "";
      else if (found >= 0 && inline_value) values[k] = inline_value;
      else if (found >= 0 && i + 1 < argc) values[k] = argv[++i];
      else if (found >= 0) {
        fprintf(stderr, "kingest: option %s needs a value\n%s", arg, usage);
        return EX_USAGE;
      }
    }
    if (found < 0) (*rest)[(*nrest)++] = argv[i];
  }
  return 0;
}

/* validate and test: loads JOB as load_config does: EX_NOINPUT when the file cannot be read, EX_CONFIG when the
 * job is not valid (the message printed). The work dir roots the default paths only: nothing is written there. */
static int load_for_tryout(const char *job, const kg_args_t *a, bool strict, kg_config_t **config) {
  char err[KG_ERRLEN] = "";
  FILE *f = fopen(job, "r");
  if (!f || (fgetc(f) == EOF && ferror(f))) {
    snprintf(err, sizeof err, "%s: cannot read job file: %s", job, strerror(errno));
    if (f) fclose(f);
    return fail(EX_NOINPUT, err);
  }
  fclose(f);
  const char *work_dir = a->work_dir ? a->work_dir : getenv("GOBBLIN_WORK_DIR");
  char cwd[PATH_MAX];
  if ((!work_dir || !*work_dir) && getcwd(cwd, sizeof cwd)) work_dir = cwd;
  if (load_config(job, work_dir, strict, config, err)) return fail(EX_CONFIG, err);
  return 0;
}

static int cmd_validate(int argc, char **argv) {
  static const char *const names[] = {"|strict", NULL};
  const char *values[1] = {NULL};
  char **rest = NULL;
  int nrest = 0;
  kg_args_t a;
  int rc = take_options(argc, argv, names, values, &rest, &nrest, usage_validate);
  if (!rc) rc = parse_args(nrest, rest, 2, &a, usage_validate);
  free(rest);
  if (rc) return rc == 1 ? 0 : EX_USAGE;
  if (a.npositional != 1) {
    fprintf(stderr, "kingest: validate needs one job file\n%s", usage_validate);
    return EX_USAGE;
  }
  kg_config_t *config = NULL;
  if ((rc = load_for_tryout(a.positional[0], &a, values[0] != NULL, &config))) return rc;
  char err[KG_ERRLEN] = "";
  rc = kg_tryout_validate(config, stdout, err);
  kg_config_destroy(config);
  return rc ? fail(rc, err) : 0;
}

static int cmd_test(int argc, char **argv) {
  static const char *const names[] = {"t|topic=",  "p|partition=", "f|format=", "k|key-separator=",
                                      "|timestamp=", "|strict",      NULL};
  const char *v[6] = {NULL};
  char **rest = NULL;
  int nrest = 0;
  kg_args_t a;
  int rc = take_options(argc, argv, names, v, &rest, &nrest, usage_test);
  if (!rc) rc = parse_args(nrest, rest, 2, &a, usage_test);
  free(rest);
  if (rc) return rc == 1 ? 0 : EX_USAGE;
  if (a.npositional != 1) {
    fprintf(stderr, "kingest: test needs one job file\n%s", usage_test);
    return EX_USAGE;
  }
  kg_tryout_options_t o = {.topic = v[0], .in = stdin, .out = stdout, .err = stderr, .timestamp = kg_now_ms()};
  int64_t n;
  if (v[1] && (!kg_parse_int64(v[1], &n) || n < 0 || n > INT32_MAX)) {
    fprintf(stderr, "kingest: invalid --partition %s: expected a whole number from 0 to %d\n", v[1], INT32_MAX);
    return EX_USAGE;
  }
  o.partition = v[1] ? (int32_t)n : 0;
  if (v[2] && strcmp(v[2], "lines") && strcmp(v[2], "length-prefixed")) {
    fprintf(stderr, "kingest: invalid --format %s: expected lines or length-prefixed\n", v[2]);
    return EX_USAGE;
  }
  o.format = v[2] && !strcmp(v[2], "length-prefixed") ? KG_TRYOUT_LENGTH_PREFIXED : KG_TRYOUT_LINES;
  if (v[3] && (!*v[3] || o.format != KG_TRYOUT_LINES)) {
    fprintf(stderr, "kingest: --key-separator %s: %s\n", *v[3] ? "is for --format lines" : "needs a separator",
            "a record's key is what comes before it on its line");
    return EX_USAGE;
  }
  o.key_separator = v[3];
  if (v[4] && (!kg_parse_int64(v[4], &o.timestamp) || o.timestamp < 0)) {
    fprintf(stderr, "kingest: invalid --timestamp %s: expected milliseconds since the epoch\n", v[4]);
    return EX_USAGE;
  }
  kg_config_t *config = NULL;
  if ((rc = load_for_tryout(a.positional[0], &a, v[5] != NULL, &config))) return rc;
  char err[KG_ERRLEN] = "";
  char *topic = NULL;
  if (!o.topic && kg_tryout_default_topic(config, &topic, err)) {
    kg_config_destroy(config);
    fprintf(stderr, "kingest: %s\n%s", err, usage_test);
    return EX_USAGE;
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
  if (access(job, F_OK) == 0) {
    int rc = load_config(job, a->work_dir, false, &r->config, err);
    if (rc) return rc;
    r->job_name = kg_xstrdup(r->config->job_name);
    r->state_dir = kg_xstrdup(a->state_dir ? a->state_dir : r->config->state_store_dir);
    r->lock_dir = kg_xstrdup(r->config->lock_dir);
    return KG_OK;
  }
  const char *wd = a->work_dir ? a->work_dir : getenv("GOBBLIN_WORK_DIR");
  if (!a->state_dir && !wd)
    return kg_fail(err, KG_EINVAL,
                   "%s is not a job file, and there is no state store for a job name: pass "
                   "--state-store-dir or --work-dir, or set GOBBLIN_WORK_DIR",
                   job);
  r->job_name = kg_xstrdup(job);
  r->state_dir = a->state_dir ? kg_xstrdup(a->state_dir) : kg_config_default_path("state.store.dir", wd);
  r->lock_dir = wd ? kg_config_default_path("job.lock.dir", wd) : NULL;
  return KG_OK;
}

static void print_partitions(const kg_job_ref_t *r, kg_partition_state_t *parts, size_t n) {
  /* The brokers' view, when the job file names them and they answer. */
  int64_t *earliest = kg_xcalloc(n ? n : 1, sizeof(int64_t)), *latest = kg_xcalloc(n ? n : 1, sizeof(int64_t));
  const char **errors = kg_xcalloc(n ? n : 1, sizeof(char *));
  const char **topics = kg_xcalloc(n ? n : 1, sizeof(char *));
  int32_t *ids = kg_xcalloc(n ? n : 1, sizeof(int32_t));
  bool broker = false;
  char err[KG_ERRLEN] = "";
  if (r->config && n) {
    for (size_t i = 0; i < n; i++) {
      topics[i] = parts[i].topic;
      ids[i] = parts[i].partition;
    }
    kg_kafka_t *kafka = NULL;
    broker = kg_kafka_new(r->config, &kafka, err) == KG_OK &&
             kg_kafka_offsets_bulk(kafka, topics, ids, n, earliest, latest, errors, err) == KG_OK;
    kg_kafka_destroy(kafka);
  }
  char *path = kg_state_path(r->state_dir, r->job_name);
  printf("Job %s, state %s: %zu partitions\n", r->job_name, path, n);
  free(path);
  if (r->config && n && !broker) printf("(the brokers' offsets are not shown: %s)\n", err);
  printf("%-32s %9s %14s %14s %14s %12s %12s %12s %12s  %s\n", "TOPIC", "PARTITION", "NEXT_OFFSET", "EARLIEST",
         "LATEST", "LAG", "RECORDS", "AVG_REC_MS", "AVG_REC_B", "UPDATED");
  for (size_t i = 0; i < n; i++) {
    char when[32], e[24] = "-", l[24] = "-", lag[32] = "-", rec[24] = "-", ms[24] = "-", b[24] = "-";
    format_time(parts[i].updated_ms, when, sizeof when);
    if (broker && !errors[i]) {
      snprintf(e, sizeof e, "%lld", (long long)earliest[i]);
      snprintf(l, sizeof l, "%lld", (long long)latest[i]);
      if (parts[i].next_offset < earliest[i] || parts[i].next_offset > latest[i])
        snprintf(lag, sizeof lag, "out-of-range");
      else
        snprintf(lag, sizeof lag, "%lld", (long long)(latest[i] - parts[i].next_offset));
    } else if (broker) {
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
  free(earliest);
  free(latest);
  free(errors);
  free(topics);
  free(ids);
}

/* Takes the job lock for an edit and checks there is no unfinished commit. */
static int lock_for_edit(const kg_job_ref_t *r, kg_state_t *state, kg_lock_t **lock, char *err) {
  *lock = NULL;
  if (r->lock_dir) {
    long holder = 0;
    int rc = kg_lock_acquire(r->lock_dir, r->job_name, lock, &holder, err);
    if (rc == KG_ELOCKED)
      return kg_fail(err, KG_ELOCKED, "job %s is running (process %ld holds its lock): wait for it or stop it first",
                     r->job_name, holder);
    if (rc) return rc;
  }
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

static int cmd_state(int argc, char **argv) {
  if (argc < 3 || is_help(argv[2])) {
    fputs(usage_state, argc < 3 ? stderr : stdout);
    return argc < 3 ? 2 : 0;
  }
  const char *sub = argv[2];
  int nargs;
  if (!strcmp(sub, "show") || !strcmp(sub, "history"))
    nargs = 1;
  else if (!strcmp(sub, "set-offset"))
    nargs = 3;
  else if (!strcmp(sub, "reset"))
    nargs = -1; /* 1 or 2 */
  else {
    fprintf(stderr, "kingest: unknown state command %s\n%s", sub, usage_state);
    return 2;
  }
  kg_args_t a;
  int prc = parse_args(argc, argv, 3, &a, usage_state);
  if (prc) return prc == 1 ? 0 : 2;
  if ((nargs > 0 && a.npositional != nargs) || (nargs < 0 && (a.npositional < 1 || a.npositional > 2))) {
    fprintf(stderr, "kingest: state %s: wrong number of arguments\n%s", sub, usage_state);
    return 2;
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
  if (!strcmp(sub, "show") || !strcmp(sub, "history")) {
    int rc = kg_state_open_readonly(r.state_dir, r.job_name, &state, err);
    if (!rc && !strcmp(sub, "show")) {
      kg_partition_state_t *parts = NULL;
      size_t n = 0;
      rc = kg_state_partitions(state, &parts, &n, err);
      if (!rc) print_partitions(&r, parts, n);
      kg_state_free_partitions(parts, n);
    } else if (!rc) {
      int64_t limit = 50;
      if (a.limit && (!kg_parse_int64(a.limit, &limit) || limit < 0)) {
        fprintf(stderr, "kingest: invalid --limit %s: expected a whole number >= 0\n", a.limit);
        status = 2;
      } else {
        rc = kg_state_history(state, stdout, (int)limit, err);
      }
    }
    if (rc) status = fail(1, err);
  } else if (!strcmp(sub, "set-offset")) {
    char *topic = NULL;
    int32_t partition = 0;
    int64_t offset;
    if (!parse_partition(a.positional[1], &topic, &partition)) {
      fprintf(stderr, "kingest: invalid partition '%s': expected TOPIC:PARTITION, e.g. events:3\n", a.positional[1]);
      status = 2;
    } else if (!kg_parse_int64(a.positional[2], &offset) || offset < 0) {
      fprintf(stderr, "kingest: invalid offset '%s': expected a whole number >= 0\n", a.positional[2]);
      status = 2;
    } else {
      int rc = kg_state_open(r.state_dir, r.job_name, true, &state, err);
      if (!rc) rc = lock_for_edit(&r, state, &lock, err);
      bool had = false;
      int64_t old = 0;
      if (!rc) rc = kg_state_set_offset(state, topic, partition, offset, &had, &old, err);
      if (!rc && had)
        KG_INFO("Set the offset of %s:%d in job %s from %lld to %lld", topic, partition, r.job_name, (long long)old,
                (long long)offset);
      else if (!rc)
        KG_INFO("Set the offset of %s:%d in job %s to %lld (it had none)", topic, partition, r.job_name,
                (long long)offset);
      if (rc) status = fail(rc == KG_ELOCKED ? 3 : 1, err);
    }
    free(topic);
  } else { /* reset */
    char *topic = NULL;
    int32_t partition = -1;
    if (a.npositional == 2 && !parse_partition(a.positional[1], &topic, &partition)) {
      topic = kg_xstrdup(a.positional[1]);
      partition = -1;
    }
    int rc = kg_state_open(r.state_dir, r.job_name, false, &state, err);
    if (!rc) rc = lock_for_edit(&r, state, &lock, err);
    kg_partition_state_t *removed = NULL;
    size_t n = 0;
    if (!rc) rc = kg_state_reset(state, topic, partition, &removed, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
      KG_INFO("Reset %s:%d in job %s: forgot offset %lld; the next run treats it as new", removed[i].topic,
              removed[i].partition, r.job_name, (long long)removed[i].next_offset);
    if (!rc && n == 0) KG_INFO("Nothing to reset in job %s", r.job_name);
    kg_state_free_partitions(removed, n);
    if (rc) status = fail(rc == KG_ELOCKED ? 3 : 1, err);
    free(topic);
  }
  kg_lock_release(lock);
  kg_state_close(state);
  job_ref_free(&r);
  return status;
}

static int cmd_properties(int argc, char **argv) {
  bool markdown = argc == 3 && !strcmp(argv[2], "--markdown");
  if (argc > 2 && !markdown) {
    bool help = is_help(argv[2]);
    fputs(usage_properties, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  kg_config_print_properties(stdout, markdown);
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
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("kingest %s\n", KINGEST_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "help")) {
    const char *topic = argc > 2 ? argv[2] : "help";
    const char *usage = !strcmp(topic, "run")                                 ? usage_run
                        : !strcmp(topic, "plan")                              ? usage_plan
                        : !strcmp(topic, "state")                             ? usage_state
                        : !strcmp(topic, "properties")                        ? usage_properties
                        : !strcmp(topic, "run-task")                          ? usage_run_task
                        : !strcmp(topic, "validate")                          ? usage_validate
                        : !strcmp(topic, "test")                              ? usage_test
                        : !strcmp(topic, "help") || !strcmp(topic, "version") ? usage_main
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
