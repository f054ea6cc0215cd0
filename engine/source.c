/* source.c: the discover phase (source.h). */
#include "source.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "estimator.h"
#include "kafka_fingerprint.h"
#include "kafka_source.h"
#include "log.h"
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

/* One selected partition through the steps of planning. */
typedef struct {
  kg_partition_offsets_t at;        /* topic (the broker's name) and partition; the broker's range, or its error */
  bool move_to_latest;              /* topics.move.to.latest.offset names its topic */
  const kg_partition_state_t *prev; /* its stored state, NULL when the job has none */
  bool peek;                        /* its last pulled record is read back (find_recreated) */
  char *recreated;                  /* evidence of a recreated log, owned; NULL when none */
} kg_planned_t;

/* What planning works from: the job, its topic filter, the brokers' client and topics (sorted by name), and the
 * stored partitions (sorted by topic, then partition). */
typedef struct {
  const kg_config_t *config;
  kg_topic_filter_t *filter;
  kg_kafka_t *kafka;
  kg_topic_meta_t *topics;
  size_t ntopics;
  kg_partition_state_t *stored;
  size_t nstored;
} kg_planning_t;

/* The partitions of the topics the filter selects, in the broker's order, each with its stored state; logs each
 * selected topic. Returns a new array (at least one element allocated) and its length in *N. */
static kg_planned_t *select_partitions(const kg_planning_t *p, size_t *n) {
  size_t count = 0;
  for (size_t i = 0; i < p->ntopics; i++)
    if (kg_topic_filter_match(p->filter, p->topics[i].name)) count += (size_t)p->topics[i].partition_count;
  kg_planned_t *parts = kg_xcalloc(count ? count : 1, sizeof *parts);
  size_t k = 0;
  for (size_t i = 0; i < p->ntopics; i++) {
    const kg_topic_meta_t *t = &p->topics[i];
    if (!kg_topic_filter_match(p->filter, t->name)) continue;
    KG_INFO("Discovered topic %s with %d partitions", t->name, t->partition_count);
    bool move = kg_topic_in_list(p->config->move_to_latest, t->name);
    for (int32_t j = 0; j < t->partition_count; j++, k++) {
      parts[k].at.topic = t->name;
      parts[k].at.partition = t->partitions[j];
      parts[k].move_to_latest = move;
      parts[k].prev = kg_state_find(p->stored, p->nstored, t->name, t->partitions[j]);
    }
  }
  *n = count;
  return parts;
}

/* The brokers' range of each of the N PARTS, in one bulk query (built from PARTS, its answers copied back). */
static int ask_offsets(kg_kafka_t *kafka, kg_planned_t *parts, size_t n, char *errbuf) {
  kg_partition_offsets_t *query = kg_xcalloc(n ? n : 1, sizeof *query);
  for (size_t i = 0; i < n; i++)
    query[i] = parts[i].at;
  int rc = kg_kafka_offsets_bulk(kafka, query, n, errbuf);
  for (size_t i = 0; i < n; i++)
    parts[i].at = query[i];
  free(query);
  return rc;
}

/* Evidence from the record read back at WAS's offset (NOW) that the log was recreated, as a new string; NULL when
 * there is none. */
static char *recreated_by_record(const kg_planned_t *part, const kg_fingerprint_t *was, const kg_fingerprint_t *now) {
  if (!now->set || now->offset != was->offset) {
    /* No record at that offset any more (compacted away, or not answered): nothing to compare. */
    KG_DEBUG("Partition %s:%d: the last record pulled (offset %lld) could not be read back", part->at.topic,
             part->at.partition, (long long)was->offset);
    return NULL;
  }
  if (kg_fingerprint_same(was, now)) return NULL;
  if (now->timestamp != was->timestamp)
    return kg_xasprintf("the record at offset %lld is not the last one pulled (timestamp %lld, not %lld)",
                        (long long)was->offset, (long long)now->timestamp, (long long)was->timestamp);
  return kg_xasprintf("the record at offset %lld is not the last one pulled (same timestamp, other key or value)",
                      (long long)was->offset);
}

/* Recreated logs. A stored partition whose last pulled record should still be in the log is read back there: a
 * different record at that offset means a new log, whose offsets merely overlap the stored one (a topic deleted
 * and created again, its offsets starting over). Sets each part's RECREATED where there is evidence. */
static void find_recreated(kg_kafka_t *kafka, kg_planned_t *parts, size_t n) {
  size_t npeek = 0;
  for (size_t s = 0; s < n; s++) {
    kg_planned_t *part = &parts[s];
    const kg_partition_state_t *prev = part->prev;
    if (!prev || part->at.error || part->move_to_latest) continue;
    char why[256];
    if (recreated_by_range(prev, part->at.earliest, part->at.latest, why, sizeof why)) {
      part->recreated = kg_xstrdup(why);
    } else if (prev->last.set && prev->last.offset >= part->at.earliest && prev->next_offset < part->at.latest) {
      /* Only where there is something to pull: an idle partition costs no read, and a recreated one is caught
       * on the first run that would pull from it. */
      part->peek = true;
      npeek++;
    }
  }
  if (!npeek) return;
  kg_peek_t *peeks = kg_xcalloc(npeek, sizeof *peeks);
  for (size_t s = 0, j = 0; s < n; s++)
    if (parts[s].peek)
      peeks[j++] = (kg_peek_t){
          .topic = parts[s].at.topic, .partition = parts[s].at.partition, .offset = parts[s].prev->last.offset};
  kg_kafka_peek(kafka, peeks, npeek);
  for (size_t s = 0, j = 0; s < n; s++)
    if (parts[s].peek) parts[s].recreated = recreated_by_record(&parts[s], &parts[s].prev->last, &peeks[j++].found);
  free(peeks);
}

/* A partition the brokers gave no offsets for: skipped this run, and named in the plan (the first 10). */
static void note_unanswered(kg_plan_t *plan, const kg_planned_t *part) {
  const char *topic = part->at.topic;
  int32_t partition = part->at.partition;
  KG_WARN("cannot fetch the offsets of partition %s:%d: %s; skipping the partition this run%s", topic, partition,
          part->at.error, part->prev ? ", its stored offset is kept" : "");
  if (plan->nunanswered++ < 10) {
    char *was = plan->unanswered;
    plan->unanswered =
        kg_xasprintf("%s%s%s:%d (%s)", was ? was : "", was ? ", " : "", topic, partition, part->at.error);
    free(was);
  }
}

/* The WARN of a partition that reset.on.offset.out.of.range moves (or skips): out of range, or recreated. */
static void warn_reset(const kg_config_t *c, const kg_planned_t *part, kg_offset_decision_t d) {
  static const char *const resets[] = {"earliest", "latest", "nearest", "skip"};
  const char *topic = part->at.topic;
  int32_t partition = part->at.partition;
  long long stored = (long long)part->prev->next_offset, earliest = (long long)part->at.earliest,
            latest = (long long)part->at.latest;
  if (d.reason == KG_START_RESET) {
    if (d.pull)
      KG_WARN("Offset %lld of partition %s:%d is out of range [%lld, %lld]; reset.on.offset.out.of.range moves it to "
              "%lld",
              stored, topic, partition, earliest, latest, (long long)d.low);
    else
      KG_WARN("Offset %lld of partition %s:%d is out of range [%lld, %lld]; reset.on.offset.out.of.range=skip: not "
              "pulled, the stored offset is kept",
              stored, topic, partition, earliest, latest);
    return;
  }
  char what[160];
  if (!d.pull)
    snprintf(what, sizeof what, "=skip: not pulled, the stored offset is kept (range [%lld, %lld])", earliest, latest);
  else
    snprintf(what, sizeof what, "=%s starts it at its %s offset %lld of [%lld, %lld]%s", resets[c->reset],
             d.low == part->at.earliest ? "earliest" : "latest", (long long)d.low, earliest, latest,
             c->reset == KG_RESET_NEAREST ? " (for a recreated log nearest means earliest)" : "");
  KG_WARN("Partition %s:%d was recreated since offset %lld was stored: %s; reset.on.offset.out.of.range%s", topic,
          partition, stored, part->recreated, what);
}

/* Appends PART's work unit, starting where D says, to PLAN (*CAP: the units allocated), and logs it. */
static void add_unit(kg_plan_t *plan, size_t *cap, const kg_planned_t *part, kg_offset_decision_t d) {
  if (plan->nunits == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    plan->units = kg_xrealloc(plan->units, *cap * sizeof(kg_workunit_t));
  }
  kg_workunit_t *wu = &plan->units[plan->nunits++];
  memset(wu, 0, sizeof *wu);
  wu->topic = kg_xstrdup(part->at.topic);
  wu->partition = part->at.partition;
  wu->low = d.low;
  wu->high = part->at.latest;
  wu->earliest = part->at.earliest;
  wu->latest = part->at.latest;
  wu->has_stored = part->prev != NULL;
  wu->stored = part->prev ? part->prev->next_offset : -1;
  wu->reason = d.reason;
  KG_INFO("Created workunit for partition %s:%d: lowWatermark=%lld, highWatermark=%lld, range=%lld", wu->topic,
          wu->partition, (long long)wu->low, (long long)wu->high, (long long)(wu->high - wu->low));
  if (d.reason != KG_START_PREVIOUS)
    KG_DEBUG("Partition %s:%d starts at %lld (%s)", wu->topic, wu->partition, (long long)wu->low,
             kg_start_reason_name(d.reason));
}

/* Records written to a partition the job has never seen are new data: says where such partitions (FRESH, the first
 * 20 of NFRESH) start. */
static void warn_new_partitions(const kg_config_t *c, const kg_buf_t *fresh, size_t nfresh) {
  static const char *const bootstraps[] = {"earliest", "latest", "skip"};
  if (!nfresh) return;
  const char *more = nfresh > 20 ? ", ..." : "";
  if (c->new_partition == KG_NEW_PARTITION_EARLIEST)
    KG_WARN("New partitions of topics this job already pulls start at their earliest offset: %s%s "
            "(kafka.new.partition.offset=earliest)",
            fresh->data, more);
  else if (c->new_partition == KG_NEW_PARTITION_LATEST)
    KG_WARN("New partitions of topics this job already pulls start at their latest offset: %s%s; records written "
            "to them before now are not pulled (kafka.new.partition.offset=latest)",
            fresh->data, more);
  else
    KG_WARN("New partitions of topics this job already pulls follow bootstrap.with.offset=%s: %s%s "
            "(kafka.new.partition.offset=bootstrap)",
            bootstraps[c->bootstrap], fresh->data, more);
}

/* Decides where each of the N PARTS starts (kg_offset_plan) and makes PLAN's work units, with the WARNs of the
 * decisions: partitions not answered, offsets reset, logs recreated, new partitions. */
static void decide_starts(const kg_planning_t *p, const kg_planned_t *parts, size_t n, kg_plan_t *plan) {
  const kg_config_t *c = p->config;
  kg_offset_policy_t policy = {c->bootstrap, c->reset, c->new_partition};
  kg_buf_t fresh = {0}; /* new partitions of topics already pulled */
  size_t nfresh = 0;
  size_t cap = 0;
  for (size_t s = 0; s < n; s++) {
    const kg_planned_t *part = &parts[s];
    const kg_partition_state_t *prev = part->prev;
    if (part->at.error) {
      note_unanswered(plan, part);
      continue;
    }
    kg_partition_facts_t facts = {
        .move_to_latest = part->move_to_latest,
        .has_stored = prev != NULL,
        .stored = prev ? prev->next_offset : 0,
        .topic_known = prev != NULL || stored_topic(p->stored, p->nstored, part->at.topic) != NULL,
        .recreated = part->recreated != NULL,
        .earliest = part->at.earliest,
        .latest = part->at.latest,
    };
    kg_offset_decision_t d = kg_offset_plan(policy, &facts);
    if (!prev && facts.topic_known && !facts.move_to_latest && nfresh++ < 20)
      kg_buf_appendf(&fresh, "%s%s:%d", fresh.len ? ", " : "", part->at.topic, part->at.partition);
    if (d.reason == KG_START_RESET || d.reason == KG_START_RECREATED) {
      plan->offset_resets++;
      warn_reset(c, part, d);
    }
    if (!d.pull) {
      if (d.reason == KG_START_BOOTSTRAP)
        KG_INFO("Partition %s:%d is new and bootstrap.with.offset=skip: not pulled", part->at.topic,
                part->at.partition);
      continue;
    }
    add_unit(plan, &cap, part, d);
  }
  warn_new_partitions(c, &fresh, nfresh);
  kg_buf_free(&fresh);
}

/* The steps of planning on what P reads: the partitions selected, their offsets asked, recreated logs found, each
 * partition's start decided, and the units' sizes estimated. */
static int plan_partitions(const kg_planning_t *p, kg_plan_t *plan, char *errbuf) {
  size_t n = 0;
  kg_planned_t *parts = select_partitions(p, &n);
  int rc = ask_offsets(p->kafka, parts, n, errbuf);
  if (!rc) find_recreated(p->kafka, parts, n);
  if (!rc) decide_starts(p, parts, n, plan);
  for (size_t s = 0; s < n; s++)
    free(parts[s].recreated);
  free(parts);
  kg_estimator_options_t estimator = kg_estimator_of(p->config);
  if (!rc) rc = kg_estimate_sizes(&estimator, plan->units, plan->nunits, p->stored, p->nstored, errbuf);
  return rc;
}

int kg_source_plan(const kg_config_t *c, kg_state_t *state, kg_plan_t *plan, char *errbuf) {
  memset(plan, 0, sizeof *plan);
  int64_t t0 = kg_mono_ms();
  kg_planning_t p = {.config = c};
  int rc = kg_topic_filter_new(c->topic_whitelist, c->topic_blacklist, &p.filter, errbuf);
  if (rc) return rc;
  if (state) rc = kg_state_partitions(state, &p.stored, &p.nstored, errbuf);
  if (!rc) rc = kg_kafka_new(c, &p.kafka, errbuf);
  if (!rc) rc = kg_kafka_list_topics(p.kafka, &p.topics, &p.ntopics, errbuf);
  if (!rc) rc = check_missing(c, p.filter, p.topics, p.ntopics, p.stored, p.nstored, errbuf);
  if (!rc) rc = plan_partitions(&p, plan, errbuf);
  kg_kafka_free_topics(p.topics, p.ntopics);
  kg_kafka_destroy(p.kafka);
  kg_topic_filter_destroy(p.filter);
  kg_state_free_partitions(p.stored, p.nstored);
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
