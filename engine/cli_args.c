/* cli_args.c: the command line's options (one table for every command) and their parsing, the error lines a
 * command ends with, and loading the job file a command names. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "fault.h"
#include "job.h"
#include "log.h"
#include "parse.h"
#include "suggest.h"

int kg_cli_fail(int status, const char *msg) {
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

int kg_cli_usage_error(int status, const char *usage, const char *fmt, ...) {
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

bool kg_cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

/* The options of every command, by id: the short name, the long name, and whether a value follows. */
static const struct {
  char short_name; /* 0: none */
  const char *name;
  bool takes_value;
} options[KG_OPT_COUNT] = {
    [KG_OPT_WORK_DIR] = {'w', "--work-dir", true},   [KG_OPT_STATE_DIR] = {'s', "--state-store-dir", true},
    [KG_OPT_LOG_LEVEL] = {'l', "--log-level", true}, [KG_OPT_LOG_FILE] = {0, "--log-file", true},
    [KG_OPT_LOG_FORMAT] = {0, "--log-format", true}, [KG_OPT_LIMIT] = {'n', "--limit", true},
    [KG_OPT_JSON] = {'j', "--json", false},          [KG_OPT_STRICT] = {0, "--strict", false},
    [KG_OPT_DRY_RUN] = {0, "--dry-run", false},      [KG_OPT_YES] = {'y', "--yes", false},
    [KG_OPT_FORCE] = {0, "--force", false},          [KG_OPT_MARKDOWN] = {0, "--markdown", false},
    [KG_OPT_TOPIC] = {'t', "--topic", true},         [KG_OPT_PARTITION] = {'p', "--partition", true},
    [KG_OPT_FORMAT] = {'f', "--format", true},       [KG_OPT_KEY_SEPARATOR] = {'k', "--key-separator", true},
    [KG_OPT_TIMESTAMP] = {0, "--timestamp", true},
};

/* The option closest to a misspelled one, among those COMMAND takes, or NULL. */
static const char *closest_option(const char *name, unsigned mask) {
  const char *best = NULL;
  size_t best_d = 3;
  for (int i = 0; i < KG_OPT_COUNT; i++) {
    if (!(mask & KG_OPT_BIT(i))) continue;
    size_t d = kg_edit_distance(name, options[i].name, 2);
    if (d < best_d) {
      best_d = d;
      best = options[i].name;
    }
  }
  return best;
}

int kg_cli_parse_args(int argc, char **argv, int first, unsigned mask, kg_args_t *a, const char *usage) {
  memset(a, 0, sizeof *a);
  /* --log-format first, wherever it is, so that every error about the command line is in its format. */
  for (int i = first; i < argc && (mask & KG_OPT_BIT(KG_OPT_LOG_FORMAT)) && strcmp(argv[i], "--"); i++) {
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
        return kg_cli_usage_error(2, usage, "too many arguments");
      }
      a->positional[a->npositional++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      options_done = true;
      continue;
    }
    if (kg_cli_is_help(arg)) {
      fputs(usage, stdout);
      return 1;
    }
    /* --name, --name=value, -x */
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    int found = -1;
    for (int o = 0; o < KG_OPT_COUNT && found < 0; o++) {
      if (!(mask & KG_OPT_BIT(o))) continue;
      if ((strlen(options[o].name) == name_len && !strncmp(arg, options[o].name, name_len)) ||
          (options[o].short_name && arg[1] == options[o].short_name && !arg[2]))
        found = o;
    }
    if (found < 0) {
      char *name = kg_xstrndup(arg, name_len);
      const char *near = arg[1] == '-' ? closest_option(name, mask) : NULL;
      if (near)
        kg_cli_usage_error(2, usage, "unknown option %s; did you mean %s?", name, near);
      else
        kg_cli_usage_error(2, usage, "unknown option %s", name);
      free(name);
      return 2;
    }
    const char *v;
    if (!options[found].takes_value) {
      if (eq) {
        return kg_cli_usage_error(2, usage, "option %s takes no value", options[found].name);
      }
      v = "";
    } else if (eq) {
      v = eq + 1;
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return kg_cli_usage_error(2, usage, "option %s needs a value", options[found].name);
    }
    if (options[found].takes_value && !*v)
      return kg_cli_usage_error(2, usage, "option %s needs a value", options[found].name);
    a->values[found] = v;
  }
  const char *level = kg_cli_value(a, KG_OPT_LOG_LEVEL);
  if (level) {
    static const char *levels[] = {"debug", "info", "warn", "error"};
    int found = -1;
    for (int i = 0; i < 4; i++)
      if (!strcasecmp(level, levels[i])) found = i;
    if (found < 0) {
      return kg_cli_usage_error(2, NULL, "invalid --log-level %s: allowed values are debug, info, warn, error", level);
    }
    kg_log_set_level((kg_log_level_t)found);
  }
  const char *format = kg_cli_value(a, KG_OPT_LOG_FORMAT);
  if (format) {
    if (!strcmp(format, "json"))
      kg_log_set_format(KG_LOG_FORMAT_JSON);
    else if (!strcmp(format, "text"))
      kg_log_set_format(KG_LOG_FORMAT_TEXT);
    else {
      return kg_cli_usage_error(2, NULL, "invalid --log-format %s: allowed values are text, json", format);
    }
  }
  const char *log_file = kg_cli_value(a, KG_OPT_LOG_FILE);
  if (log_file && kg_log_set_file(log_file)) {
    return kg_cli_usage_error(2, NULL, "cannot open log file %s: %s", log_file, strerror(errno));
  }
  return 0;
}

int kg_cli_load_config(const char *job_file, const kg_args_t *a, kg_config_t **config, char *err) {
  kg_props_t *props = NULL;
  bool is_lua = false;
  int rc = kg_jobfile_load(job_file, &props, &is_lua, err);
  if (rc) return rc;
  const char *format = kg_props_get(props, "log.format");
  if (format && !kg_cli_has(a, KG_OPT_LOG_FORMAT)) {
    char f[16];
    snprintf(f, sizeof f, "%s", format);
    if (!strcasecmp(kg_strtrim(f), "json")) kg_log_set_format(KG_LOG_FORMAT_JSON);
  }
  if (kg_cli_has(a, KG_OPT_STRICT)) kg_props_set(props, "job.strict", "true", "--strict");
  rc = kg_config_new(props, job_file, is_lua, kg_cli_value(a, KG_OPT_WORK_DIR), config, err);
  if (!rc && !kg_cli_has(a, KG_OPT_LOG_FORMAT)) kg_log_set_format((kg_log_format_t)(*config)->log_format);
  if (!rc) kg_test_hooks_warn();
  return rc;
}

int kg_cli_load_job(const char *job, const kg_args_t *a, kg_config_t **config) {
  char err[KG_ERRLEN] = "";
  *config = NULL;
  FILE *f = fopen(job, "r");
  if (!f || (fgetc(f) == EOF && ferror(f))) {
    snprintf(err, sizeof err, "%s: cannot read job file: %s", job, strerror(errno));
    if (f) fclose(f);
    return kg_cli_fail(KG_EXIT_NOINPUT, err);
  }
  fclose(f);
  int rc = kg_cli_load_config(job, a, config, err);
  if (!rc) rc = kg_job_check(*config, NULL, err);
  if (!rc) return 0;
  kg_config_destroy(*config);
  *config = NULL;
  return kg_cli_fail(KG_EXIT_CONFIG, err);
}
