/* test_offsets.c: every offset decision of docs/behaviour.md, section 2, and topic selection. */
#include "test.h"
#include "kafka_fingerprint.h"
#include "offsets.h"
#include "topics.h"

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

/* kg_offset_plan: new partitions of known topics, recreated logs, and everything else as kg_offset_decide. */
static void test_plan(void) {
  static const struct {
    kg_bootstrap_t boot;
    kg_reset_t reset;
    kg_new_partition_t fresh;
    bool move, has, known, recreated;
    int64_t stored;
    bool pull;
    int64_t low;
    kg_start_reason_t reason;
  } cases[] = {
      /* A new partition of a topic the job pulls: kafka.new.partition.offset, whatever bootstrap says. */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, false, true, false, 0, true, 5,
       KG_START_NEW_PARTITION},
      {KG_BOOTSTRAP_SKIP, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, false, true, false, 0, true, 5,
       KG_START_NEW_PARTITION},
      {KG_BOOTSTRAP_EARLIEST, KG_RESET_NEAREST, KG_NEW_PARTITION_LATEST, false, false, true, false, 0, true, 20,
       KG_START_NEW_PARTITION},
      /* ... or bootstrap.with.offset with kafka.new.partition.offset=bootstrap. */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_BOOTSTRAP, false, false, true, false, 0, true, 20,
       KG_START_BOOTSTRAP},
      {KG_BOOTSTRAP_EARLIEST, KG_RESET_NEAREST, KG_NEW_PARTITION_BOOTSTRAP, false, false, true, false, 0, true, 5,
       KG_START_BOOTSTRAP},
      {KG_BOOTSTRAP_SKIP, KG_RESET_NEAREST, KG_NEW_PARTITION_BOOTSTRAP, false, false, true, false, 0, false, 20,
       KG_START_BOOTSTRAP},
      /* A topic the job never pulled: bootstrap.with.offset. */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, false, false, false, 0, true, 20,
       KG_START_BOOTSTRAP},
      {KG_BOOTSTRAP_SKIP, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, false, false, false, 0, false, 20,
       KG_START_BOOTSTRAP},
      /* move.to.latest wins over a new partition and over a recreated log. */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, true, false, true, false, 0, true, 20,
       KG_START_MOVE_TO_LATEST},
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, true, true, true, true, 12, true, 20,
       KG_START_MOVE_TO_LATEST},
      /* A recreated log, stored offset inside the new range: reset, nearest meaning earliest. */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, true, true, true, 12, true, 5,
       KG_START_RECREATED},
      {KG_BOOTSTRAP_LATEST, KG_RESET_EARLIEST, KG_NEW_PARTITION_EARLIEST, false, true, true, true, 12, true, 5,
       KG_START_RECREATED},
      {KG_BOOTSTRAP_LATEST, KG_RESET_LATEST, KG_NEW_PARTITION_EARLIEST, false, true, true, true, 12, true, 20,
       KG_START_RECREATED},
      {KG_BOOTSTRAP_LATEST, KG_RESET_SKIP, KG_NEW_PARTITION_EARLIEST, false, true, true, true, 12, false, 20,
       KG_START_RECREATED},
      /* ... and above it: still earliest with nearest (an out-of-range offset alone would go to latest). */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, true, true, true, 30, true, 5,
       KG_START_RECREATED},
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, true, true, false, 30, true, 20,
       KG_START_RESET},
      /* The same log: the stored offset, or the reset rules. */
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, true, true, false, 12, true, 12,
       KG_START_PREVIOUS},
      {KG_BOOTSTRAP_LATEST, KG_RESET_NEAREST, KG_NEW_PARTITION_EARLIEST, false, true, true, false, 2, true, 5,
       KG_START_RESET},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kg_offset_policy_t policy = {cases[i].boot, cases[i].reset, cases[i].fresh};
    kg_partition_facts_t f = {.move_to_latest = cases[i].move,
                              .has_stored = cases[i].has,
                              .stored = cases[i].stored,
                              .topic_known = cases[i].known,
                              .recreated = cases[i].recreated,
                              .earliest = 5,
                              .latest = 20};
    kg_offset_decision_t d = kg_offset_plan(policy, &f);
    CHECK_INT(d.pull, cases[i].pull);
    if (d.pull) CHECK_INT(d.low, cases[i].low);
    CHECK_INT(d.reason, cases[i].reason);
  }
}

static void test_names(void) {
  CHECK(kg_topic_is_name("events"));
  CHECK(kg_topic_is_name("events.click_2-b"));
  CHECK(!kg_topic_is_name("events\\..*"));
  CHECK(!kg_topic_is_name("a|b"));
  CHECK(!kg_topic_is_name("[ab]"));
  CHECK(!kg_topic_is_name(""));
  const char *names[] = {"events", "orders", "users_archive"};
  CHECK_STR(kg_topic_nearest("evnts", names, 3), "events");
  CHECK_STR(kg_topic_nearest("order", names, 3), "orders");
  CHECK_STR(kg_topic_nearest("users_archiv", names, 3), "users_archive");
  CHECK(kg_topic_nearest("payments", names, 3) == NULL);
  CHECK(kg_topic_nearest("ab", names, 3) == NULL);
  CHECK(kg_topic_nearest("x", names, 0) == NULL);
}

static void test_fingerprint(void) {
  kg_fingerprint_t a = kg_fingerprint_of(39, 1000, "k", 1, "v", 1);
  kg_fingerprint_t b = kg_fingerprint_of(39, 1000, "k", 1, "v", 1);
  CHECK(a.set);
  CHECK(kg_fingerprint_same(&a, &b));
  kg_fingerprint_t other[] = {
      kg_fingerprint_of(40, 1000, "k", 1, "v", 1),  kg_fingerprint_of(39, 1001, "k", 1, "v", 1),
      kg_fingerprint_of(39, 1000, "k", 1, "w", 1),  kg_fingerprint_of(39, 1000, NULL, 0, "v", 1),
      kg_fingerprint_of(39, 1000, "", 0, "v", 1),   kg_fingerprint_of(39, 1000, "kv", 2, "", 0),
      kg_fingerprint_of(39, 1000, "k", 1, NULL, 0),
  };
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    CHECK(!kg_fingerprint_same(&a, &other[i]));
  kg_fingerprint_t none = {0};
  CHECK(!kg_fingerprint_same(&none, &none));
  kg_record_t r = {.key_ptr = "k", .key_len = 1, .value_ptr = "v", .value_len = 1, .offset = 39, .timestamp = 1000};
  kg_fingerprint_t c = kg_fingerprint_record(&r);
  CHECK(kg_fingerprint_same(&a, &c));
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
  test_plan();
  test_names();
  test_fingerprint();
  test_filter();
  TEST_MAIN_END();
}
