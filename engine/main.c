/* main.c: the kingest command line: run, state, properties, help, version. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "job.h"
#include "state.h"

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
    "  help [COMMAND]      Show help for a command\n"
    "\n"
    "Options:\n"
    "  -h, --help          Show this help\n"
    "  -V, --version       Print the version\n"
    "\n"
    "Run 'kingest COMMAND --help' for a command's options.\n";

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
    "  -h, --help             Show this help\n"
    "\n"
    "Exit status: 0 when the run succeeded and committed; 1 on failure; 2 for bad usage;\n"
    "3 when another run of the same job holds the lock.\n";

static const char *usage_state =
    "Usage: kingest state show JOB [options]\n"
    "\n"
    "Prints every partition the job has stored: its next offset (where the next run starts), the records\n"
    "of the last run that pulled any, and the average record time and size.\n"
    "JOB is the job file (its properties locate the state store) or the job's name.\n"
    "\n"
    "Options:\n"
    "  -w, --work-dir DIR          Work dir (default: $GOBBLIN_WORK_DIR)\n"
    "  -s, --state-store-dir DIR   State store folder (default: the job's state.store.dir,\n"
    "                              or <work dir>/state-store)\n"
    "  -h, --help                  Show this help\n";

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
    "  -h, --help             Show this help\n";

static const char *usage_properties =
    "Usage: kingest properties\n"
    "\n"
    "Lists the job properties kingest reads, with their defaults and meaning.\n";

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
  bool json;
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
    } else if (!strcmp(arg, "--log-file")) {
      target = &a->log_file;
    } else if (!strcmp(arg, "-j") || !strcmp(arg, "--json")) {
      a->json = true;
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

static int load_config(const char *job_file, const char *work_dir, kg_config_t **config, char *err) {
  kg_props_t *props = NULL;
  bool is_lua = false;
  int rc = kg_jobfile_load(job_file, &props, &is_lua, err);
  if (rc) return rc;
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
  if (load_config(a.positional[0], a.work_dir, &config, err)) return fail(1, err);
  int rc = kg_job_run(config, err);
  kg_config_destroy(config);
  if (rc == KG_ELOCKED) return fail(3, err);
  if (rc) return fail(1, err);
  return 0;
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
  if (load_config(a.positional[0], a.work_dir, &config, err)) return fail(1, err);
  int rc = kg_job_plan(config, a.json, stdout, err);
  kg_config_destroy(config);
  return rc ? fail(1, err) : 0;
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

static int cmd_state(int argc, char **argv) {
  if (argc < 3 || is_help(argv[2])) {
    fputs(usage_state, argc < 3 ? stderr : stdout);
    return argc < 3 ? 2 : 0;
  }
  if (strcmp(argv[2], "show")) {
    fprintf(stderr, "kingest: unknown state command %s\n%s", argv[2], usage_state);
    return 2;
  }
  kg_args_t a;
  int prc = parse_args(argc, argv, 3, &a, usage_state);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    fprintf(stderr, "kingest: state show needs a job file or a job name\n%s", usage_state);
    return 2;
  }
  char err[KG_ERRLEN] = "";
  char *job_name = NULL, *state_dir = NULL;
  const char *job = a.positional[0];
  if (access(job, F_OK) == 0) {
    kg_config_t *config = NULL;
    if (load_config(job, a.work_dir, &config, err)) return fail(1, err);
    job_name = kg_xstrdup(config->job_name);
    state_dir = kg_xstrdup(a.state_dir ? a.state_dir : config->state_store_dir);
    kg_config_destroy(config);
  } else {
    const char *wd = a.work_dir ? a.work_dir : getenv("GOBBLIN_WORK_DIR");
    if (!a.state_dir && !wd)
      return fail(1, "no state store: pass --state-store-dir or --work-dir, or set GOBBLIN_WORK_DIR");
    job_name = kg_xstrdup(job);
    state_dir = a.state_dir ? kg_xstrdup(a.state_dir) : kg_xasprintf("%s/state-store", wd);
  }
  kg_state_t *state = NULL;
  int rc = kg_state_open(state_dir, job_name, false, &state, err);
  kg_partition_state_t *parts = NULL;
  size_t n = 0;
  if (!rc) rc = kg_state_partitions(state, &parts, &n, err);
  if (!rc) {
    char *path = kg_state_path(state_dir, job_name);
    printf("Job %s, state %s: %zu partitions\n", job_name, path, n);
    free(path);
    printf("%-32s %9s %14s %12s %14s %14s  %s\n", "TOPIC", "PARTITION", "NEXT_OFFSET", "RECORDS", "AVG_RECORD_MS",
           "AVG_RECORD_B", "UPDATED");
    for (size_t i = 0; i < n; i++) {
      char when[32];
      format_time(parts[i].updated_ms, when, sizeof when);
      if (parts[i].has_stats)
        printf("%-32s %9d %14lld %12lld %14.4f %14.1f  %s\n", parts[i].topic, parts[i].partition,
               (long long)parts[i].next_offset, (long long)parts[i].records_pulled, parts[i].avg_record_millis,
               parts[i].avg_record_size, when);
      else
        printf("%-32s %9d %14lld %12s %14s %14s  %s\n", parts[i].topic, parts[i].partition,
               (long long)parts[i].next_offset, "-", "-", "-", when);
    }
  }
  kg_state_free_partitions(parts, n);
  kg_state_close(state);
  free(job_name);
  free(state_dir);
  return rc ? fail(1, err) : 0;
}

static int cmd_properties(int argc, char **argv) {
  if (argc > 2) {
    bool help = is_help(argv[2]);
    fputs(usage_properties, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  size_t n;
  const kg_property_doc_t *docs = kg_config_property_docs(&n);
  for (size_t i = 0; i < n; i++) {
    printf("%s%s\n    %s\n    default: %s\n", docs[i].name, docs[i].mode == 1 ? " (MapReduce only)" : "", docs[i].doc,
           docs[i].default_value ? docs[i].default_value : "(none)");
  }
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
    const char *usage = !strcmp(topic, "run")          ? usage_run
                        : !strcmp(topic, "plan")       ? usage_plan
                        : !strcmp(topic, "state")      ? usage_state
                        : !strcmp(topic, "properties") ? usage_properties
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
  /* An option in the command's place (kingest --verbose) is named as such. */
  fprintf(stderr, "kingest: unknown %s %s\n%s", cmd[0] == '-' && cmd[1] ? "option" : "command", cmd, usage_main);
  return 2;
}
