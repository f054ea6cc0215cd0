/* cli_tryout.c: `kingest validate` and `kingest test`, a job's checks and its record path without a broker
 * (tryout.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "parse.h"
#include "tryout.h"

/* clang-format off */
const char *const kg_cli_usage_validate =
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
    KG_USAGE_STRICT
    KG_USAGE_LOG_AND_HELP
    "\n"
    "Exit status: 0 the job is valid; 64 bad usage; 66 the job file cannot be read; 78 the job is not valid.\n";

const char *const kg_cli_usage_test =
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
    KG_USAGE_STRICT
    KG_USAGE_LOG_AND_HELP
    "\n"
    "Exit status: 0 every record passed; 1 a record failed in the script, or a run would fail the task; 64 bad\n"
    "usage; 65 stdin is not in the format; 66 the job file cannot be read; 74 stdin or a temporary file cannot\n"
    "be read or written; 78 the job is not valid.\n";
/* clang-format on */

/* validate and test: loads JOB as load_config does: EX_NOINPUT when the file cannot be read, EX_CONFIG when the
 * job is not valid (the message printed). The work dir roots the default paths only: nothing is written there. */
static int load_for_tryout(const char *job, kg_args_t *a, kg_config_t **config) {
  char err[KG_ERRLEN] = "";
  FILE *f = fopen(job, "r");
  if (!f || (fgetc(f) == EOF && ferror(f))) {
    snprintf(err, sizeof err, "%s: cannot read job file: %s", job, strerror(errno));
    if (f) fclose(f);
    return kg_cli_fail(EX_NOINPUT, err);
  }
  fclose(f);
  const char *work_dir =
      kg_cli_value(a, KG_OPT_WORK_DIR) ? kg_cli_value(a, KG_OPT_WORK_DIR) : getenv("GOBBLIN_WORK_DIR");
  char cwd[PATH_MAX];
  if ((!work_dir || !*work_dir) && getcwd(cwd, sizeof cwd)) work_dir = cwd;
  a->values[KG_OPT_WORK_DIR] = work_dir;
  int rc = kg_cli_load_config(job, a, config, err);
  a->values[KG_OPT_WORK_DIR] = NULL; /* cwd's buffer ends here */
  if (rc) return kg_cli_fail(EX_CONFIG, err);
  return 0;
}

int kg_cli_validate(int argc, char **argv) {
  kg_args_t a;
  int rc = kg_cli_parse_args(argc, argv, 2, KG_OPTS_VALIDATE, &a, kg_cli_usage_validate);
  if (rc) return rc == 1 ? 0 : EX_USAGE;
  if (a.npositional != 1) {
    return kg_cli_usage_error(EX_USAGE, kg_cli_usage_validate, "validate needs one job file");
  }
  kg_config_t *config = NULL;
  if ((rc = load_for_tryout(a.positional[0], &a, &config))) return rc;
  char err[KG_ERRLEN] = "";
  rc = kg_tryout_validate(config, stdout, err);
  kg_config_destroy(config);
  return rc ? kg_cli_fail(rc, err) : 0;
}

int kg_cli_test(int argc, char **argv) {
  kg_args_t a;
  int rc = kg_cli_parse_args(argc, argv, 2, KG_OPTS_TEST, &a, kg_cli_usage_test);
  if (rc) return rc == 1 ? 0 : EX_USAGE;
  if (a.npositional != 1) {
    return kg_cli_usage_error(EX_USAGE, kg_cli_usage_test, "test needs one job file");
  }
  const char *v[5] = {kg_cli_value(&a, KG_OPT_TOPIC), kg_cli_value(&a, KG_OPT_PARTITION),
                      kg_cli_value(&a, KG_OPT_FORMAT), kg_cli_value(&a, KG_OPT_KEY_SEPARATOR),
                      kg_cli_value(&a, KG_OPT_TIMESTAMP)};
  kg_tryout_options_t o = {.topic = v[0], .in = stdin, .out = stdout, .err = stderr, .timestamp = kg_now_ms()};
  int64_t n;
  if (v[1] && (!kg_parse_int64(v[1], &n) || n < 0 || n > INT32_MAX)) {
    return kg_cli_usage_error(EX_USAGE, NULL, "invalid --partition %s: expected a whole number from 0 to %d", v[1],
                              INT32_MAX);
  }
  o.partition = v[1] ? (int32_t)n : 0;
  if (v[2] && strcmp(v[2], "lines") && strcmp(v[2], "length-prefixed")) {
    return kg_cli_usage_error(EX_USAGE, NULL, "invalid --format %s: expected lines or length-prefixed", v[2]);
  }
  o.format = v[2] && !strcmp(v[2], "length-prefixed") ? KG_TRYOUT_LENGTH_PREFIXED : KG_TRYOUT_LINES;
  if (v[3] && (!*v[3] || o.format != KG_TRYOUT_LINES)) {
    return kg_cli_usage_error(EX_USAGE, NULL, "--key-separator %s: %s",
                              *v[3] ? "is for --format lines" : "needs a separator",
                              "a record's key is what comes before it on its line");
  }
  o.key_separator = v[3];
  if (v[4] && (!kg_parse_int64(v[4], &o.timestamp) || o.timestamp < 0)) {
    return kg_cli_usage_error(EX_USAGE, NULL, "invalid --timestamp %s: expected milliseconds since the epoch", v[4]);
  }
  kg_config_t *config = NULL;
  if ((rc = load_for_tryout(a.positional[0], &a, &config))) return rc;
  char err[KG_ERRLEN] = "";
  char *topic = NULL;
  if (!o.topic && kg_tryout_default_topic(config, &topic, err)) {
    kg_config_destroy(config);
    return kg_cli_usage_error(EX_USAGE, kg_cli_usage_test, "%s", err);
  }
  if (!o.topic) o.topic = topic;
  rc = kg_tryout_test(config, &o, err);
  free(topic);
  kg_config_destroy(config);
  return rc > 1 ? kg_cli_fail(rc, err) : rc;
}
