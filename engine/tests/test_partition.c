/* test_partition.c: time-partitioned paths: Joda patterns, time zones (with summer time, to the second around each
 * change, half-hour zones and a change of 30 minutes among them), prefix and suffix, and the errors of a bad pattern
 * or zone. Expected folders worked out by hand, and checked against date(1). */
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

/* The folders of the instants 5 minutes and 1 second before a change of ZONE's offset at CHANGE (seconds since the
 * epoch, UTC), at it, and 5 minutes after, as EXPECTED has them (worked out by hand, and as date(1) prints them). A
 * change applied a little early or late, or at the wrong second, puts one of them in the wrong folder. */
static void check_change(const char *zone, int64_t change, const char *const expected[4]) {
  const int64_t at[4] = {change - 300, change - 1, change, change + 300};
  for (int i = 0; i < 4; i++)
    check_path("yyyy/MM/dd/HH/mm/ss", zone, "", "", at[i] * 1000, expected[i]);
}

static void test_changes(void) {
  /* London: GMT to BST at 01:00 UTC, and back at 01:00 UTC (local 02:00 BST becomes 01:00 GMT). */
  check_change("Europe/London", 1774746000, /* 2026-03-29T01:00:00Z */
               (const char *const[]){"2026/03/29/00/55/00", "2026/03/29/00/59/59", "2026/03/29/02/00/00",
                                     "2026/03/29/02/05/00"});
  check_change("Europe/London", 1792890000, /* 2026-10-25T01:00:00Z */
               (const char *const[]){"2026/10/25/01/55/00", "2026/10/25/01/59/59", "2026/10/25/01/00/00",
                                     "2026/10/25/01/05/00"});
  /* Lord Howe Island: a change of 30 minutes, +11 to +10:30 at 15:00 UTC and back at 15:30 UTC. */
  check_change("Australia/Lord_Howe", 1775314800, /* 2026-04-04T15:00:00Z */
               (const char *const[]){"2026/04/05/01/55/00", "2026/04/05/01/59/59", "2026/04/05/01/30/00",
                                     "2026/04/05/01/35/00"});
  check_change("Australia/Lord_Howe", 1791041400, /* 2026-10-03T15:30:00Z */
               (const char *const[]){"2026/10/04/01/55/00", "2026/10/04/01/59/59", "2026/10/04/02/30/00",
                                     "2026/10/04/02/35/00"});
  /* St. John's: -3:30 to -2:30 at 05:30 UTC, and back at 04:30 UTC. */
  check_change("America/St_Johns", 1772947800, /* 2026-03-08T05:30:00Z */
               (const char *const[]){"2026/03/08/01/55/00", "2026/03/08/01/59/59", "2026/03/08/03/00/00",
                                     "2026/03/08/03/05/00"});
  check_change("America/St_Johns", 1793507400, /* 2026-11-01T04:30:00Z */
               (const char *const[]){"2026/11/01/01/55/00", "2026/11/01/01/59/59", "2026/11/01/01/00/00",
                                     "2026/11/01/01/05/00"});
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
  /* The same against date(1) for the zones of test_changes, over two days whose samples fall 5 minutes before each
   * change. */
  const int64_t more[] = {1774746000, 1792890000, 1775314800, 1791041400, 1772947800, 1793507400};
  const char *more_zones[] = {"Europe/London",       "Europe/London",    "Australia/Lord_Howe",
                              "Australia/Lord_Howe", "America/St_Johns", "America/St_Johns"};
  for (int z = 0; z < 6; z++)
    check_with_date(more_zones[z], more[z] - 86400 - 300);
  test_changes();

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
