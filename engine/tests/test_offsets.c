/* test_offsets.c: every offset decision of BEHAVIOUR.md section 2, and topic selection. */
#include "test.h"
#include "workunit.h"

#define DECIDE(boot, reset, move, has, stored, e, l) kg_offset_decide(boot, reset, move, has, stored, e, l)

static void test_bootstrap(void) {
  kg_offset_decision_t d = DECIDE(KG_BOOTSTRAP_EARLIEST, KG_RESET_NEAREST, false, false, 0, 5, 20);
  CHECK(d.pull);
  CHECK_INT(d.low, 5);
  CHECK_INT(d.reason, KG_START_BOOTSTRAP);
  d = DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, false, false, 0, 5, 20);
  CHECK(d.pull);
  CHECK_INT(d.low, 20);
  d = DECIDE(KG_BOOTSTRAP_SKIP, KG_RESET_NEAREST, false, false, 0, 5, 20);
  CHECK(!d.pull);
  CHECK_INT(d.reason, KG_START_BOOTSTRAP);
}

static void test_previous(void) {
  for (int stored = 5; stored <= 20; stored += 15) { /* both ends of the range are inside it */
    kg_offset_decision_t d = DECIDE(KG_BOOTSTRAP_EARLIEST, KG_RESET_EARLIEST, false, true, stored, 5, 20);
    CHECK(d.pull);
    CHECK_INT(d.low, stored);
    CHECK_INT(d.reason, KG_START_PREVIOUS);
  }
  kg_offset_decision_t d = DECIDE(KG_BOOTSTRAP_EARLIEST, KG_RESET_EARLIEST, false, true, 12, 5, 20);
  CHECK_INT(d.low, 12);
}

static void test_reset(void) {
  /* Below the range. */
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_EARLIEST, false, true, 2, 5, 20).low, 5);
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_LATEST, false, true, 2, 5, 20).low, 20);
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, false, true, 2, 5, 20).low, 5);
  CHECK(!DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_SKIP, false, true, 2, 5, 20).pull);
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, false, true, 2, 5, 20).reason, KG_START_RESET);
  /* Above the range: nearest is latest (Gobblin's code would pick earliest). */
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_EARLIEST, false, true, 30, 5, 20).low, 5);
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_LATEST, false, true, 30, 5, 20).low, 20);
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, false, true, 30, 5, 20).low, 20);
  CHECK(!DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_SKIP, false, true, 30, 5, 20).pull);
  CHECK_INT(DECIDE(KG_BOOTSTRAP_LATEST, KG_RESET_SKIP, false, true, 30, 5, 20).reason, KG_START_RESET);
}

static void test_move_to_latest(void) {
  /* Wins over a stored offset and over bootstrap skip. */
  kg_offset_decision_t d = DECIDE(KG_BOOTSTRAP_SKIP, KG_RESET_SKIP, true, true, 7, 5, 20);
  CHECK(d.pull);
  CHECK_INT(d.low, 20);
  CHECK_INT(d.reason, KG_START_MOVE_TO_LATEST);
  d = DECIDE(KG_BOOTSTRAP_SKIP, KG_RESET_SKIP, true, false, 0, 5, 20);
  CHECK(d.pull);
  CHECK_INT(d.low, 20);
  CHECK(kg_topic_in_list("a, b ,c", "b"));
  CHECK(!kg_topic_in_list("a,b", "ab"));
  CHECK(!kg_topic_in_list("a.*", "ab")); /* names, not regexes */
  CHECK(kg_topic_in_list("all", "anything"));
  CHECK(kg_topic_in_list("ALL", "anything"));
  CHECK(!kg_topic_in_list("", "x"));
}

static void test_filter(void) {
  char err[KG_ERRLEN];
  kg_topic_filter_t *f = NULL;
  CHECK_INT(kg_topic_filter_new("", "", &f, err), KG_OK);
  CHECK(kg_topic_filter_match(f, "anything"));
  CHECK(!kg_topic_filter_match(f, "__consumer_offsets"));
  kg_topic_filter_destroy(f);

  CHECK_INT(kg_topic_filter_new("events\\..*, logs", "events\\.debug.*", &f, err), KG_OK);
  CHECK(kg_topic_filter_match(f, "events.click"));
  CHECK(kg_topic_filter_match(f, "logs"));
  CHECK(!kg_topic_filter_match(f, "logs2")); /* whole-name match */
  CHECK(!kg_topic_filter_match(f, "xevents.click"));
  CHECK(!kg_topic_filter_match(f, "events.debug1")); /* blacklist wins */
  kg_topic_filter_destroy(f);

  CHECK_INT(kg_topic_filter_new("__consumer_offsets,.*", "", &f, err), KG_OK);
  CHECK(kg_topic_filter_match(f, "__consumer_offsets"));
  CHECK(!kg_topic_filter_match(f, "__transaction_state")); /* internal: only by exact name */
  kg_topic_filter_destroy(f);

  /* Java's \d and \D, which POSIX regcomp alone reads as the letters d and D. */
  CHECK_INT(kg_topic_filter_new("events_.*,[\\d_]+x", "events_\\d+\\D.*", &f, err), KG_OK);
  CHECK(kg_topic_filter_match(f, "events_42"));
  CHECK(!kg_topic_filter_match(f, "events_42b")); /* blacklisted: \D is a non-digit */
  CHECK(kg_topic_filter_match(f, "4_2x"));        /* \d inside brackets */
  CHECK(!kg_topic_filter_match(f, "d_x"));
  kg_topic_filter_destroy(f);

  CHECK_INT(kg_topic_filter_new("a(", "", &f, err), KG_EINVAL);
  CHECK_CONTAINS(err, "topic.whitelist");
  CHECK_CONTAINS(err, "a(");
  CHECK_INT(kg_topic_filter_new("", "[z", &f, err), KG_EINVAL);
  CHECK_CONTAINS(err, "topic.blacklist");
}

int main(void) {
  test_bootstrap();
  test_previous();
  test_reset();
  test_move_to_latest();
  test_filter();
  TEST_MAIN_END();
}
