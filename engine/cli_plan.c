/* cli_plan.c: `kingest plan`, a dry run that prints the work units and the tasks a run would make. */
#include <stdio.h>

#include "buf.h"
#include "cli.h"
#include "job.h"
#include "json.h"
#include "log.h"

/* clang-format off */
const char *const kg_cli_usage_plan =
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
    KG_USAGE_STRICT
    "  -h, --help             Show this help\n";
/* clang-format on */

/* Writes P, the plan of the job C, to OUT: a table, or JSON. KG_EIO when OUT cannot be written. */
static int print_plan(const kg_config_t *c, const kg_job_plan_t *p, bool json, FILE *out, char *errbuf) {
  const kg_plan_t *plan = &p->plan;
  const kg_group_t *groups = p->groups;
  size_t ngroups = p->ngroups;
  static const char *packers[] = {"SINGLE_LEVEL", "BI_LEVEL"};
  static const char *estimators[] = {"AVG_RECORD_TIME", "AVG_RECORD_SIZE", "CUSTOM"};
  double min = 0, max = 0, total = 0;
  int64_t records = 0;
  for (size_t g = 0; g < ngroups; g++) {
    if (g == 0 || groups[g].load < min) min = groups[g].load;
    if (g == 0 || groups[g].load > max) max = groups[g].load;
  }
  for (size_t i = 0; i < plan->nunits; i++) {
    total += plan->units[i].est_size;
    records += plan->units[i].high - plan->units[i].low;
  }
  double spread = max > 0 ? (max - min) / max * 100 : 0;
  kg_buf_t o = {0};
  if (json) {
    kg_buf_append(&o, "{\"job\":", 7);
    kg_json_string(&o, c->job_name);
    kg_buf_appendf(&o,
                   ",\"packer\":\"%s\",\"estimator\":\"%s\",\"maxMappers\":%d,\"workUnits\":%zu,\"records\":%lld,"
                   "\"estimatedSize\":%.6g,\"minLoad\":%.6g,\"maxLoad\":%.6g,\"spreadPercent\":%.2f,\"tasks\":[",
                   packers[c->packer], estimators[c->estimator], c->max_mappers, plan->nunits, (long long)records,
                   total, min, max, spread);
    for (size_t g = 0; g < ngroups; g++) {
      kg_buf_appendf(&o, "%s{\"index\":%zu,\"load\":%.6g,\"estimatedSize\":%.6g,\"workUnits\":[", g ? "," : "", g,
                     groups[g].load, groups[g].size);
      for (size_t u = 0; u < groups[g].count; u++) {
        if (u) kg_buf_append(&o, ",", 1);
        kg_workunit_json(&o, groups[g].units[u], false);
      }
      kg_buf_append(&o, "]}", 2);
    }
    kg_buf_append(&o, "]}\n", 3);
  } else {
    kg_buf_appendf(&o, "Job %s: %zu work units, %lld records, in %zu tasks (%s, %s, mr.job.max.mappers=%d)\n",
                   c->job_name, plan->nunits, (long long)records, ngroups, packers[c->packer], estimators[c->estimator],
                   c->max_mappers);
    for (size_t g = 0; g < ngroups; g++) {
      kg_buf_appendf(&o, "\nTask %zu: load %.2f, estimated size %.2f, %zu work units\n", g, groups[g].load,
                     groups[g].size, groups[g].count);
      kg_buf_appendf(&o, "  %-32s %9s %14s %14s %12s %14s  %s\n", "TOPIC", "PARTITION", "LOW", "HIGH", "RANGE",
                     "EST_SIZE", "START");
      for (size_t u = 0; u < groups[g].count; u++) {
        const kg_workunit_t *wu = groups[g].units[u];
        kg_buf_appendf(&o, "  %-32s %9d %14lld %14lld %12lld %14.2f  %s\n", wu->topic, wu->partition,
                       (long long)wu->low, (long long)wu->high, (long long)(wu->high - wu->low), wu->est_size,
                       kg_start_reason_name(wu->reason));
      }
    }
    kg_buf_appendf(&o, "\nMin load %.2f, max load %.2f, spread %.2f%%\n", min, max, spread);
  }
  int rc = KG_OK;
  if (fwrite(o.data ? o.data : "", 1, o.len, out) != o.len) rc = kg_fail(errbuf, KG_EIO, "cannot write the plan");
  kg_buf_free(&o);
  return rc;
}

int kg_cli_plan(int argc, char **argv) {
  kg_log_set_level(KG_LOG_WARN); /* the plan is the output; --log-level info shows the planning steps */
  kg_args_t a;
  int prc = kg_cli_parse_args(argc, argv, 2, KG_OPTS_PLAN, &a, kg_cli_usage_plan);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional != 1) {
    return kg_cli_usage_error(2, kg_cli_usage_plan, "plan needs one job file");
  }
  char err[KG_ERRLEN] = "";
  kg_config_t *config = NULL;
  if ((prc = kg_cli_load_job(a.positional[0], &a, &config))) return prc;
  kg_job_plan_t plan;
  int rc = kg_job_plan(config, &plan, err);
  if (!rc) {
    rc = print_plan(config, &plan, kg_cli_has(&a, KG_OPT_JSON), stdout, err);
    kg_job_plan_clear(&plan);
  }
  kg_config_destroy(config);
  return rc ? kg_cli_fail(rc == KG_EAUTH ? KG_EXIT_AUTH : 1, err) : 0;
}
