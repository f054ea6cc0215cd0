/* cli.c: the kingest command line's entry: main() hands each command to its file (cli_*.c) and answers help and
 * version itself. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "cli.h"
#include "fs_crashsim.h"

/* clang-format off */
const char *const kg_cli_usage_main =
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

const char *const kg_cli_usage_version =
    "Usage: kingest version\n"
    "       kingest -V | --version\n"
    "\n"
    "Prints the version: kingest <version>, then the librdkafka it carries (linked in) and that\n"
    "librdkafka's builtin.features (the compression codecs and security mechanisms it was built with).\n";
/* clang-format on */

/* Prints kingest's version, then librdkafka's: the one linked into this binary (rd_kafka_version_str) and its
 * builtin.features, read from a fresh configuration. */
static void kg_cli_version_print(FILE *out) {
  char features[512] = "?";
  size_t size = sizeof features;
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_get(conf, "builtin.features", features, &size) != RD_KAFKA_CONF_OK) strcpy(features, "?");
  rd_kafka_conf_destroy(conf);
  fprintf(out, "kingest %s\nlibrdkafka %s (builtin.features %s)\n", KINGEST_VERSION, rd_kafka_version_str(), features);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN); /* a file-size limit makes write() fail with EFBIG, reported as an error */
  kg_fs_crashsim_install(); /* KINGEST_POWERCUT, a test hook */
  if (argc < 2) {
    fputs(kg_cli_usage_main, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (kg_cli_is_help(cmd)) {
    fputs(kg_cli_usage_main, stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") && argc > 2) {
    bool help = argc == 3 && kg_cli_is_help(argv[2]);
    if (!help) fprintf(stderr, "kingest: version takes no arguments\n");
    fputs(kg_cli_usage_version, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  if ((!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) && argc > 2) {
    fprintf(stderr, "kingest: %s takes no arguments\n%s", cmd, kg_cli_usage_version);
    return 2;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    kg_cli_version_print(stdout);
    return 0;
  }
  if (!strcmp(cmd, "help")) {
    if (argc > 3) {
      fprintf(stderr, "kingest: help takes one command at most\n%s", kg_cli_usage_main);
      return 2;
    }
    const char *topic = argc > 2 ? argv[2] : "help";
    const char *usage = !strcmp(topic, "run")          ? kg_cli_usage_run
                        : !strcmp(topic, "plan")       ? kg_cli_usage_plan
                        : !strcmp(topic, "state")      ? kg_cli_usage_state
                        : !strcmp(topic, "properties") ? kg_cli_usage_properties
                        : !strcmp(topic, "run-task")   ? kg_cli_usage_run_task
                        : !strcmp(topic, "validate")   ? kg_cli_usage_validate
                        : !strcmp(topic, "test")       ? kg_cli_usage_test
                        : !strcmp(topic, "version")    ? kg_cli_usage_version
                        : !strcmp(topic, "help")       ? kg_cli_usage_main
                                                       : NULL;
    if (!usage) { /* help for a command that does not exist is a usage error, as the command itself is */
      fprintf(stderr, "kingest: unknown command %s\n%s", topic, kg_cli_usage_main);
      return 2;
    }
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "run")) return kg_cli_run(argc, argv);
  if (!strcmp(cmd, "plan")) return kg_cli_plan(argc, argv);
  if (!strcmp(cmd, "state")) return kg_cli_state(argc, argv);
  if (!strcmp(cmd, "properties")) return kg_cli_properties(argc, argv);
  if (!strcmp(cmd, "run-task")) return kg_cli_run_task(argc, argv);
  if (!strcmp(cmd, "validate")) return kg_cli_validate(argc, argv);
  if (!strcmp(cmd, "test")) return kg_cli_test(argc, argv);
  /* An option in the command's place (kingest --verbose) is named as such. */
  fprintf(stderr, "kingest: unknown %s %s\n%s", cmd[0] == '-' && cmd[1] ? "option" : "command", cmd, kg_cli_usage_main);
  return 2;
}
