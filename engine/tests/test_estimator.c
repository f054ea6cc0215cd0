/* test_estimator.c: the size estimators' arithmetic and fallbacks (docs/behaviour.md, section 3). */
#include <math.h>
#include <unistd.h>

#include "estimator.h"
#include "test.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-9 * (fabs((double)(b)) + 1))

static kg_workunit_t unit(const char *topic, int32_t p, int64_t low, int64_t high) {
  kg_workunit_t wu = {0};
  wu.topic = (char *)topic;
  wu.partition = p;
  wu.low = low;
  wu.high = high;
  return wu;
}

static kg_partition_state_t stat(const char *topic, int32_t p, double millis, double size) {
  kg_partition_state_t s = {0};
  s.topic = (char *)topic;
  s.partition = p;
  s.has_stats = true;
  s.records_pulled = 10;
  s.avg_record_millis = millis;
  s.avg_record_size = size;
  return s;
}

/* A job.lua holding TEXT; returns its path (the caller frees it). */
static char *job_file(const char *text) {
  char tmpl[] = "/tmp/kg-estimator-XXXXXX.lua";
  int fd = mkstemps(tmpl, 4);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) abort();
  close(fd);
  return kg_xstrdup(tmpl);
}

/* CUSTOM: the job's estimateSize, called through the Lua bridge with each unit and its partition's history. */
static void test_custom(kg_workunit_t *units, const kg_partition_state_t *stored) {
  char err[KG_ERRLEN];
  kg_estimator_options_t c = {.type = KG_ESTIMATOR_CUSTOM, .job_is_lua = true};
  c.job_file = job_file("return { estimateSize = function(wu, history)\n"
                        "  if wu.topic == 'c' then return 0 end\n"
                        "  local per = history and history.avg_record_size or 7\n"
                        "  return wu.range * per + wu.partition / 10\n"
                        "end }\n");
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_OK);
  CHECK(NEAR(units[0].est_size, 10 * 100.0));
  CHECK(NEAR(units[1].est_size, 5 * 300.0 + 0.1));
  CHECK(NEAR(units[2].est_size, 100 * 7.0)); /* b never pulled: history is nil */
  CHECK(NEAR(units[3].est_size, 0));
  unlink(c.job_file);
  free((char *)c.job_file);

  c.job_file = job_file("return { ['job.name'] = 'x' }\n");
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_EINVAL);
  CHECK_CONTAINS(err, ": kafka.workunit.size.estimator.type=CUSTOM needs an estimateSize function in the job table");
  CHECK_CONTAINS(err, c.job_file);
  unlink(c.job_file);
  free((char *)c.job_file);

  c.job_file =
      job_file("return { estimateSize = function(wu) if wu.partition == 1 then return -1 end return 1 end }\n");
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_ELUA);
  CHECK_STR(err, "estimateSize returned -1 for partition a:1; expected a number >= 0");
  unlink(c.job_file);
  free((char *)c.job_file);

  c.job_file = job_file("return { estimateSize = function(wu) return wu.topic == 'b' and 'big' or 1 end }\n");
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_ELUA);
  CHECK_STR(err, "estimateSize returned string for partition b:0; expected a number >= 0");
  unlink(c.job_file);
  free((char *)c.job_file);

  c.job_file = job_file("return { estimateSize = function(wu) error('no size for ' .. wu.topic) end }\n");
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_ELUA);
  CHECK_CONTAINS(err, "estimateSize failed for partition a:0: ");
  CHECK_CONTAINS(err, "no size for a");
  CHECK_CONTAINS(err, "stack traceback:");
  unlink(c.job_file);
  free((char *)c.job_file);
}

int main(void) {
  char err[KG_ERRLEN];
  /* The seed's example: partitions at 2 and 8 ms per record give 4 for the topic. */
  double v[] = {2, 8};
  CHECK(NEAR(kg_geometric_mean(v, 2), 4));
  double small[] = {0.0001, 1};
  CHECK(NEAR(kg_geometric_mean(small, 2), 0.1)); /* values below 0.01 count as 0.01 */

  kg_estimator_options_t c = {.type = KG_ESTIMATOR_AVG_RECORD_TIME};
  kg_workunit_t units[] = {unit("a", 0, 0, 10), unit("a", 1, 5, 10), unit("b", 0, 0, 100), unit("c", 0, 0, 3)};
  kg_partition_state_t stored[] = {stat("a", 0, 2, 100), stat("a", 1, 8, 300), stat("c", 0, 1, 50)};
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_OK);
  CHECK(NEAR(units[0].est_size, 10 * 4.0));
  CHECK(NEAR(units[1].est_size, 5 * 4.0));
  /* b has no history: the geometric mean over the topics that have some, sqrt(4 * 1) = 2. */
  CHECK(NEAR(units[2].est_size, 100 * 2.0));
  CHECK(NEAR(units[3].est_size, 3 * 1.0));
  /* No history at all: 1.0 per record. */
  CHECK_INT(kg_estimate_sizes(&c, units, 4, NULL, 0, err), KG_OK);
  CHECK(NEAR(units[2].est_size, 100));

  c.type = KG_ESTIMATOR_AVG_RECORD_SIZE;
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_OK);
  CHECK(NEAR(units[0].est_size, 10 * 100.0));
  CHECK(NEAR(units[1].est_size, 5 * 300.0));
  CHECK(NEAR(units[2].est_size, 100 * 1024.0)); /* the default */
  CHECK(NEAR(units[3].est_size, 3 * 50.0));

  c.type = KG_ESTIMATOR_CUSTOM;
  c.job_is_lua = false;
  c.job_file = "job.pull";
  CHECK_INT(kg_estimate_sizes(&c, units, 4, stored, 3, err), KG_EINVAL);
  CHECK_CONTAINS(err, "estimateSize");
  test_custom(units, stored);
  TEST_MAIN_END();
}
