/* test_partition.c: time-partitioned paths: Joda patterns, time zones (with summer time), prefix and suffix,
 * and the errors of a bad pattern or zone. Expected folders worked out by hand, and checked against date(1). */
#include <stdlib.h>
#include <unistd.h>

#include "partition.h"
#include "test.h"

static void check_path(const char *pattern, const char *zone, const char *prefix, const char *suffix, int64_t ms,
                       const char *expected) {
  char err[KG_ERRLEN] = "", out[256];
  kg_partitioner_t *p = NULL;
  CHECK_INT(kg_partitioner_new(pattern, zone, prefix, suffix, &p, err), KG_OK);
  if (!p) {
    fprintf(stderr, "%s\n", err);
    return;
  }
  kg_partitioner_path(p, ms, out, sizeof out);
  CHECK_STR(out, expected);
  kg_partitioner_free(p);
}

/* date(1) as an independent check of ZONE's offsets: every 20 minutes over the two days from START (seconds),
 * formatted by one `TZ=ZONE date -f -` and by one partitioner. */
static void check_with_date(const char *zone, int64_t start) {
  char path[] = "/tmp/kg-partition-XXXXXX";
  int fd = mkstemp(path);
  FILE *in = fdopen(fd, "w");
  for (int64_t t = start; t < start + 2 * 86400; t += 1200)
    fprintf(in, "@%lld\n", (long long)t);
  fclose(in);
  char cmd[512], err[KG_ERRLEN], got[64], out[64];
  snprintf(cmd, sizeof cmd, "TZ=%s date -f %s +%%Y/%%m/%%d/%%H/%%M", zone, path);
  FILE *f = popen(cmd, "r");
  kg_partitioner_t *p = NULL;
  CHECK_INT(kg_partitioner_new("yyyy/MM/dd/HH/mm", zone, "", "", &p, err), KG_OK);
  int n = 0;
  for (int64_t t = start; f && p && t < start + 2 * 86400; t += 1200, n++) {
    if (!fgets(got, sizeof got, f)) break;
    got[strcspn(got, "\n")] = 0;
    kg_partitioner_path(p, t * 1000, out, sizeof out);
    CHECK_STR(out, got);
  }
  CHECK_INT(n, 144);
  if (f) pclose(f);
  kg_partitioner_free(p);
  unlink(path);
}

int main(void) {
  const int64_t winter = 1796050800000LL; /* 2026-11-30T15:00:00Z */
  const int64_t summer = 1782907200000LL; /* 2026-07-01T12:00:00Z */
  check_path("yyyy/MM/dd/HH", "UTC", "", "", winter, "2026/11/30/15");
  check_path("yyyy/MM/dd/HH", "America/Los_Angeles", "", "", winter, "2026/11/30/07"); /* PST, -8 */
  check_path("yyyy/MM/dd/HH", "America/Los_Angeles", "", "", summer, "2026/07/01/05"); /* PDT, -7 */
  check_path("yyyy/MM/dd/HH", "Asia/Kolkata", "", "", winter, "2026/11/30/20");
  check_path("yyyy/MM/dd/HH/mm", "+05:30", "", "", winter, "2026/11/30/20/30");
  check_path("yyyy/MM/dd/HH", "-03", "", "", winter, "2026/11/30/12");
  check_path("'year='yyyy/'month='MM/'day='dd", "UTC", "", "", winter, "year=2026/month=11/day=30");
  check_path("yyyy-MM-dd/HH", "UTC", "daily", "final", winter, "daily/2026-11-30/15/final");
  check_path("yy/M/d/H", "UTC", "", "", 1767236400000LL, "26/1/1/3"); /* 2026-01-01T03:00:00Z */
  check_path("yyyy/MMM/EEE/a/hh", "UTC", "", "", winter, "2026/Nov/Mon/PM/03");
  check_path("yyyy/DDD/HH.mm.ss.SSS", "UTC", "", "", winter + 1234, "2026/334/15.00.01.234");
  check_path("yyyy/MM/dd", "UTC", "", "", -1, "1969/12/31");
  check_path("yyyy/MM/dd/HH", "America/Los_Angeles", "", "", 0, "1969/12/31/16");
  /* The granularities' patterns. */
  check_path(kg_granularity_pattern(KG_GRANULARITY_HOUR), "UTC", "", "", winter, "2026/11/30/15");
  check_path(kg_granularity_pattern(KG_GRANULARITY_MINUTE), "UTC", "", "", winter, "2026/11/30/15/00");
  check_path(kg_granularity_pattern(KG_GRANULARITY_DAY), "UTC", "", "", winter, "2026/11/30");
  check_path(kg_granularity_pattern(KG_GRANULARITY_MONTH), "UTC", "", "", winter, "2026/11");
  check_path(kg_granularity_pattern(KG_GRANULARITY_YEAR), "UTC", "", "", winter, "2026");
  /* Around the summer-time changes of 2026 in Los Angeles and Paris, every 20 minutes over two days, as date(1)
   * has them. */
  const int64_t changes[] = {1773021600 - 86400, 1793581200 - 86400, 1774746000 - 86400, 1792890000 - 86400};
  const char *zones[] = {"America/Los_Angeles", "America/Los_Angeles", "Europe/Paris", "Europe/Paris"};
  for (int z = 0; z < 4; z++)
    check_with_date(zones[z], changes[z]);

  char err[KG_ERRLEN];
  kg_partitioner_t *p = NULL;
  CHECK_INT(kg_partitioner_new("yyyy/MM/dd/QQ", "UTC", "", "", &p, err), KG_EINVAL);
  CHECK_STR(err, "pattern 'yyyy/MM/dd/QQ': unknown letter 'Q' at position 12 (the letters are y M d H h k K m s S D E "
                 "a, as in Joda-Time; put other text in single quotes)");
  CHECK_INT(kg_partitioner_new("yyyy/'MM", "UTC", "", "", &p, err), KG_EINVAL);
  CHECK_CONTAINS(err, "the quote at position 6 is not closed");
  CHECK_INT(kg_partitioner_new("'static'", "UTC", "", "", &p, err), KG_EINVAL);
  CHECK_CONTAINS(err, "has no time field");
  CHECK_INT(kg_partitioner_new("yyyy/../HH", "UTC", "", "", &p, err), KG_EINVAL);
  CHECK_CONTAINS(err, "'..'");
  CHECK_INT(kg_partitioner_new("yyyy", "UTC", "/abs", "", &p, err), KG_EINVAL);
  CHECK_INT(kg_partitioner_new("yyyy", "Mars/Olympus_Mons", "", "", &p, err), KG_EINVAL);
  CHECK_CONTAINS(err, "unknown time zone 'Mars/Olympus_Mons'");
  CHECK_INT(kg_partitioner_new("yyyy", "../../etc/passwd", "", "", &p, err), KG_EINVAL);
  CHECK(p == NULL);
  TEST_MAIN_END();
}
