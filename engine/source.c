/* source.c: the discover phase (source.h). */
#include "source.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator.h"
#include "fingerprint.h"
#include "kafka.h"
#include "topics.h"

/* The first of PARTS (sorted by topic, then partition) whose topic is TOPIC, or NULL. */
static const kg_partition_state_t *stored_topic(const kg_partition_state_t *parts, size_t count, const char *topic) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(parts[mid].topic, topic) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && !strcmp(parts[lo].topic, topic) ? &parts[lo] : NULL;
}

/* The broker's topic named NAME in TOPICS (sorted by name), or NULL. */
static const kg_topic_meta_t *broker_topic(const kg_topic_meta_t *topics, size_t count, const char *name) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(topics[mid].name, name);
    if (c == 0) return &topics[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static bool has_partition(const kg_topic_meta_t *t, int32_t partition) {
  for (int32_t p = 0; p < t->partition_count; p++)
    if (t->partitions[p] == partition) return true;
  return false;
}

/* What the job asks for that the broker does not have, found before anything is pulled. */
typedef struct {
  const kg_topic_meta_t *topics;
  size_t ntopics;
  const char **names; /* the broker's topic names, for "did you mean" */
  size_t count;       /* problems found */
  char first[512];    /* the first, for the error of topic.missing.policy=fail */
} kg_missing_t;

static void missing(kg_missing_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void missing(kg_missing_t *m, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  KG_WARN("%s", text);
  if (m->count++ == 0) snprintf(m->first, sizeof m->first, "%s", text);
}

static void check_whitelist_name(void *ctx, const char *name) {
  kg_missing_t *m = ctx;
  if (broker_topic(m->topics, m->ntopics, name)) return;
  const char *near = kg_topic_nearest(name, m->names, m->ntopics);
  if (near)
    missing(m, "topic.whitelist entry '%s' matches no topic on the broker; did you mean '%s'?", name, near);
  else
    missing(m, "topic.whitelist entry '%s' matches no topic on the broker", name);
}

/* A whitelisted plain name that is no topic, and stored partitions of selected topics that the broker no longer
 * has (topic deleted, or fewer partitions), would otherwise end as "0 work units" and success: each is logged at
 * WARN (stored offsets are kept), and with topic.missing.policy=fail the run fails before anything is pulled. */
static int check_missing(const kg_config_t *c, const kg_topic_filter_t *filter, const kg_topic_meta_t *topics,
                         size_t ntopics, const kg_partition_state_t *stored, size_t nstored, char *errbuf) {
  kg_missing_t m = {.topics = topics, .ntopics = ntopics};
  m.names = kg_xcalloc(ntopics ? ntopics : 1, sizeof(char *));
  for (size_t i = 0; i < ntopics; i++)
    m.names[i] = topics[i].name;
  kg_topic_filter_names(filter, check_whitelist_name, &m);
  for (size_t i = 0; i < nstored;) {
    const char *topic = stored[i].topic;
    size_t end = i;
    while (end < nstored && !strcmp(stored[end].topic, topic))
      end++;
    if (kg_topic_filter_match(filter, topic)) {
      const kg_topic_meta_t *t = broker_topic(topics, ntopics, topic);
      kg_buf_t gone = {0};
      size_t ngone = 0;
      for (size_t j = i; j < end; j++) {
        if (t && has_partition(t, stored[j].partition)) continue;
        if (ngone++ < 10)
          kg_buf_appendf(&gone, "%s%s:%d at %lld", gone.len ? ", " : "", topic, stored[j].partition,
                         (long long)stored[j].next_offset);
      }
      if (ngone && !t)
        missing(&m, "Topic %s is not on the broker, but this job has stored offsets for it (%s%s); they are kept",
                topic, gone.data, ngone > 10 ? ", ..." : "");
      else if (ngone)
        missing(&m, "Stored partitions %s%s are not on the broker (topic %s has %d partitions); their offsets are kept",
                gone.data, ngone > 10 ? ", ..." : "", topic, t->partition_count);
      kg_buf_free(&gone);
    }
    i = end;
  }
  free(m.names);
  if (!m.count || c->missing_topics != KG_MISSING_FAIL) return KG_OK;
  char more[64] = "";
  if (m.count > 1) snprintf(more, sizeof more, " (and %zu more)", m.count - 1);
  return kg_fail(errbuf, KG_EINVAL, "%s%s (topic.missing.policy=fail)", m.first, more);
}

/* Evidence that PREV's partition now has another log than the one its offset was stored for (the topic was
 * deleted and created again, its offsets starting over): the broker's log start went backwards, or the last
 * record pulled is beyond the log's end. Writes it into WHY and returns true; false when there is none. The
 * strongest evidence, a different record at the offset of the last one pulled, needs a read (see plan). */
static bool recreated_by_range(const kg_partition_state_t *prev, int64_t earliest, int64_t latest, char *why,
                               size_t size) {
  if (prev->has_log_start && earliest < prev->log_start) {
    snprintf(why, size, "its log now starts at offset %lld, before %lld where it started at the last run",
             (long long)earliest, (long long)prev->log_start);
    return true;
  }
  if (prev->last.set && prev->last.offset >= latest) {
    snprintf(why, size, "the last record pulled, at offset %lld, is beyond the log's end %lld",
             (long long)prev->last.offset, (long long)latest);
    return true;
  }
  return false;
}

int kg_source_plan(const kg_config_t *c, kg_state_t *state, kg_plan_t *plan, char *errbuf) {
  memset(plan, 0, sizeof *plan);
  int64_t t0 = kg_mono_ms();
  kg_topic_filter_t *filter = NULL;
  int rc = kg_topic_filter_new(c->topic_whitelist, c->topic_blacklist, &filter, errbuf);
  if (rc) return rc;
  kg_kafka_t *kafka = NULL;
  kg_topic_meta_t *topics = NULL;
  size_t ntopics = 0;
  kg_partition_state_t *stored = NULL;
  size_t nstored = 0;
  if (state) rc = kg_state_partitions(state, &stored, &nstored, errbuf);
  if (!rc) rc = kg_kafka_new(c, &kafka, errbuf);
  if (!rc) rc = kg_kafka_list_topics(kafka, &topics, &ntopics, errbuf);
  if (!rc) rc = check_missing(c, filter, topics, ntopics, stored, nstored, errbuf);
  /* The selected partitions, then their offsets in one bulk query. */
  size_t nsel = 0;
  for (size_t i = 0; !rc && i < ntopics; i++)
    if (kg_topic_filter_match(filter, topics[i].name)) nsel += (size_t)topics[i].partition_count;
  size_t nalloc = nsel ? nsel : 1;
  const char **sel_topic = kg_xcalloc(nalloc, sizeof(char *));
  int32_t *sel_part = kg_xcalloc(nalloc, sizeof(int32_t));
  bool *sel_move = kg_xcalloc(nalloc, sizeof(bool));
  int64_t *sel_earliest = kg_xcalloc(nalloc, sizeof(int64_t));
  int64_t *sel_latest = kg_xcalloc(nalloc, sizeof(int64_t));
  const char **sel_error = kg_xcalloc(nalloc, sizeof(char *));
  char **sel_recreated = kg_xcalloc(nalloc, sizeof(char *)); /* evidence of a recreated log, or NULL */
  size_t k = 0;
  for (size_t i = 0; !rc && i < ntopics; i++) {
    kg_topic_meta_t *t = &topics[i];
    if (!kg_topic_filter_match(filter, t->name)) continue;
    KG_INFO("Discovered topic %s with %d partitions", t->name, t->partition_count);
    bool move = kg_topic_in_list(c->move_to_latest, t->name);
    for (int32_t p = 0; p < t->partition_count; p++, k++) {
      sel_topic[k] = t->name;
      sel_part[k] = t->partitions[p];
      sel_move[k] = move;
    }
  }
  if (!rc) rc = kg_kafka_offsets_bulk(kafka, sel_topic, sel_part, nsel, sel_earliest, sel_latest, sel_error, errbuf);

  /* Recreated logs. A stored partition whose last pulled record should still be in the log is read back there: a
   * different record at that offset means a new log, whose offsets merely overlap the stored one (a topic
   * deleted and created again, its offsets starting over). */
  size_t npeek = 0;
  size_t *peek_sel = kg_xcalloc(nalloc, sizeof(size_t));
  const char **peek_topic = kg_xcalloc(nalloc, sizeof(char *));
  int32_t *peek_part = kg_xcalloc(nalloc, sizeof(int32_t));
  int64_t *peek_offset = kg_xcalloc(nalloc, sizeof(int64_t));
  kg_fingerprint_t *peek_found = kg_xcalloc(nalloc, sizeof(kg_fingerprint_t));
  for (size_t s = 0; !rc && s < nsel; s++) {
    const kg_partition_state_t *prev = kg_state_find(stored, nstored, sel_topic[s], sel_part[s]);
    if (!prev || sel_error[s] || sel_move[s]) continue;
    char why[256];
    if (recreated_by_range(prev, sel_earliest[s], sel_latest[s], why, sizeof why)) {
      sel_recreated[s] = kg_xstrdup(why);
    } else if (prev->last.set && prev->last.offset >= sel_earliest[s] && prev->next_offset < sel_latest[s]) {
      /* Only where there is something to pull: an idle partition costs no read, and a recreated one is caught
       * on the first run that would pull from it. */
      peek_sel[npeek] = s;
      peek_topic[npeek] = sel_topic[s];
      peek_part[npeek] = sel_part[s];
      peek_offset[npeek++] = prev->last.offset;
    }
  }
  if (!rc && npeek) kg_kafka_peek(kafka, peek_topic, peek_part, peek_offset, npeek, peek_found);
  for (size_t j = 0; !rc && j < npeek; j++) {
    size_t s = peek_sel[j];
    const kg_fingerprint_t *was = &kg_state_find(stored, nstored, sel_topic[s], sel_part[s])->last;
    const kg_fingerprint_t *now = &peek_found[j];
    if (!now->set || now->offset != was->offset) {
      /* No record at that offset any more (compacted away, or not answered): nothing to compare. */
      KG_DEBUG("Partition %s:%d: the last record pulled (offset %lld) could not be read back", sel_topic[s],
               sel_part[s], (long long)was->offset);
    } else if (!kg_fingerprint_same(was, now)) {
      sel_recreated[s] =
          now->timestamp != was->timestamp
              ? kg_xasprintf("the record at offset %lld is not the last one pulled (timestamp %lld, not %lld)",
                             (long long)was->offset, (long long)now->timestamp, (long long)was->timestamp)
              : kg_xasprintf(
                    "the record at offset %lld is not the last one pulled (same timestamp, other key or value)",
                    (long long)was->offset);
    }
  }
  free(peek_sel);
  free(peek_topic);
  free(peek_part);
  free(peek_offset);
  free(peek_found);

  static const char *const resets[] = {"earliest", "latest", "nearest", "skip"};
  static const char *const bootstraps[] = {"earliest", "latest", "skip"};
  kg_offset_policy_t policy = {c->bootstrap, c->reset, c->new_partition};
  kg_buf_t fresh = {0}; /* new partitions of topics already pulled */
  size_t nfresh = 0;
  size_t cap = 0;
  for (size_t s = 0; !rc && s < nsel; s++) {
    const char *topic = sel_topic[s];
    int32_t part = sel_part[s];
    int64_t earliest = sel_earliest[s], latest = sel_latest[s];
    const kg_partition_state_t *prev = kg_state_find(stored, nstored, topic, part);
    if (sel_error[s]) {
      KG_WARN("cannot fetch the offsets of partition %s:%d: %s; skipping the partition this run%s", topic, part,
              sel_error[s], prev ? ", its stored offset is kept" : "");
      if (plan->nunanswered++ < 10) {
        char *was = plan->unanswered;
        plan->unanswered = kg_xasprintf("%s%s%s:%d (%s)", was ? was : "", was ? ", " : "", topic, part, sel_error[s]);
        free(was);
      }
      continue;
    }
    kg_partition_facts_t facts = {
        .move_to_latest = sel_move[s],
        .has_stored = prev != NULL,
        .stored = prev ? prev->next_offset : 0,
        .topic_known = prev != NULL || stored_topic(stored, nstored, topic) != NULL,
        .recreated = sel_recreated[s] != NULL,
        .earliest = earliest,
        .latest = latest,
    };
    kg_offset_decision_t d = kg_offset_plan(policy, &facts);
    if (!prev && facts.topic_known && !facts.move_to_latest && nfresh++ < 20)
      kg_buf_appendf(&fresh, "%s%s:%d", fresh.len ? ", " : "", topic, part);
    if (d.reason == KG_START_RESET) {
      plan->offset_resets++;
      if (d.pull)
        KG_WARN("Offset %lld of partition %s:%d is out of range [%lld, %lld]; reset.on.offset.out.of.range moves it to "
                "%lld",
                (long long)prev->next_offset, topic, part, (long long)earliest, (long long)latest, (long long)d.low);
      else
        KG_WARN("Offset %lld of partition %s:%d is out of range [%lld, %lld]; reset.on.offset.out.of.range=skip: not "
                "pulled, the stored offset is kept",
                (long long)prev->next_offset, topic, part, (long long)earliest, (long long)latest);
    }
    if (d.reason == KG_START_RECREATED) {
      plan->offset_resets++;
      char what[160];
      if (!d.pull)
        snprintf(what, sizeof what, "=skip: not pulled, the stored offset is kept (range [%lld, %lld])",
                 (long long)earliest, (long long)latest);
      else
        snprintf(what, sizeof what, "=%s starts it at its %s offset %lld of [%lld, %lld]%s", resets[c->reset],
                 d.low == earliest ? "earliest" : "latest", (long long)d.low, (long long)earliest, (long long)latest,
                 c->reset == KG_RESET_NEAREST ? " (for a recreated log nearest means earliest)" : "");
      KG_WARN("Partition %s:%d was recreated since offset %lld was stored: %s; reset.on.offset.out.of.range%s", topic,
              part, (long long)prev->next_offset, sel_recreated[s], what);
    }
    if (!d.pull) {
      if (d.reason == KG_START_BOOTSTRAP)
        KG_INFO("Partition %s:%d is new and bootstrap.with.offset=skip: not pulled", topic, part);
      continue;
    }
    if (plan->nunits == cap) {
      cap = cap ? cap * 2 : 64;
      plan->units = kg_xrealloc(plan->units, cap * sizeof(kg_workunit_t));
    }
    kg_workunit_t *wu = &plan->units[plan->nunits++];
    memset(wu, 0, sizeof *wu);
    wu->topic = kg_xstrdup(topic);
    wu->partition = part;
    wu->low = d.low;
    wu->high = latest;
    wu->earliest = earliest;
    wu->latest = latest;
    wu->has_stored = prev != NULL;
    wu->stored = prev ? prev->next_offset : -1;
    wu->reason = d.reason;
    KG_INFO("Created workunit for partition %s:%d: lowWatermark=%lld, highWatermark=%lld, range=%lld", topic, part,
            (long long)wu->low, (long long)wu->high, (long long)(wu->high - wu->low));
    if (d.reason != KG_START_PREVIOUS)
      KG_DEBUG("Partition %s:%d starts at %lld (%s)", topic, part, (long long)wu->low, kg_start_reason_name(d.reason));
  }
  /* Records written to a partition the job has never seen are new data: say where such partitions start. */
  if (nfresh) {
    const char *more = nfresh > 20 ? ", ..." : "";
    if (c->new_partition == KG_NEW_PARTITION_EARLIEST)
      KG_WARN("New partitions of topics this job already pulls start at their earliest offset: %s%s "
              "(kafka.new.partition.offset=earliest)",
              fresh.data, more);
    else if (c->new_partition == KG_NEW_PARTITION_LATEST)
      KG_WARN("New partitions of topics this job already pulls start at their latest offset: %s%s; records written "
              "to them before now are not pulled (kafka.new.partition.offset=latest)",
              fresh.data, more);
    else
      KG_WARN("New partitions of topics this job already pulls follow bootstrap.with.offset=%s: %s%s "
              "(kafka.new.partition.offset=bootstrap)",
              bootstraps[c->bootstrap], fresh.data, more);
  }
  kg_buf_free(&fresh);
  for (size_t s = 0; s < nsel; s++)
    free(sel_recreated[s]);
  free(sel_recreated);
  free(sel_topic);
  free(sel_part);
  free(sel_move);
  free(sel_earliest);
  free(sel_latest);
  free(sel_error);
  kg_estimator_options_t estimator = kg_estimator_of(c);
  if (!rc) rc = kg_estimate_sizes(&estimator, plan->units, plan->nunits, stored, nstored, errbuf);
  kg_kafka_free_topics(topics, ntopics);
  kg_kafka_destroy(kafka);
  kg_topic_filter_destroy(filter);
  kg_state_free_partitions(stored, nstored);
  plan->duration_ms = kg_mono_ms() - t0;
  if (rc) kg_plan_clear(plan);
  return rc;
}

void kg_plan_clear(kg_plan_t *plan) {
  for (size_t i = 0; i < plan->nunits; i++)
    kg_workunit_clear(&plan->units[i]);
  free(plan->units);
  free(plan->unanswered);
  memset(plan, 0, sizeof *plan);
}
