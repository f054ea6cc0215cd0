/* cli_state_edit.c: `kingest state set-offset` and `kingest state reset`: edits of a job's stored offsets, under
 * its lock, checked against the brokers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kafka_source.h"
#include "log.h"
#include "parse.h"
#include "topics.h"

/* Takes the job's locks for an edit and checks there is no unfinished commit: the job lock when its folder is known
 * (a job file, a work dir), and always the lock beside the state database, which every run takes too (lock.h). */
static int lock_for_edit(const kg_job_ref_t *r, kg_state_t *state, kg_lock_t **lock, char *err) {
  *lock = NULL;
  long holder = 0;
  char *state_path = kg_state_path(r->state_dir, r->job_name);
  int locked = kg_lock_acquire_job(r->lock_dir, state_path, r->job_name, lock, &holder, err);
  free(state_path);
  if (locked == KG_ELOCKED)
    return kg_fail(err, KG_ELOCKED, "job %s is running (process %ld holds its lock): wait for it or stop it first",
                   r->job_name, holder);
  if (locked) return locked;
  char *pending = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  int rc = kg_state_pending(state, &pending, &moves, &nmoves, err);
  if (!rc && pending)
    rc = kg_fail(err, KG_EINVAL,
                 "job %s has an unfinished commit (%s): run the job once, it finishes the commit first, then edit "
                 "its state",
                 r->job_name, pending);
  free(pending);
  kg_state_free_moves(moves, nmoves);
  if (rc) {
    kg_lock_release(*lock);
    *lock = NULL;
  }
  return rc;
}

static bool parse_partition(const char *s, char **topic, int32_t *partition) {
  const char *colon = strrchr(s, ':');
  int64_t p;
  if (!colon || colon == s || !kg_parse_int64(colon + 1, &p) || p < 0 || p > INT32_MAX) return false;
  *topic = kg_xstrndup(s, (size_t)(colon - s));
  *partition = (int32_t)p;
  return true;
}

/* A time for set-offset's @TIME: epoch milliseconds, or ISO 8601: 2026-11-30, 2026-11-30T14:05[:09[.250]], with
 * Z or +hh:mm / -hh:mm (without a zone, local time; a space may replace the T). */
static bool parse_time_ms(const char *s, int64_t *out) {
  bool digits = *s != '\0';
  for (const char *p = s; *p; p++)
    digits = digits && *p >= '0' && *p <= '9';
  if (digits) return kg_parse_int64(s, out) && *out >= 0;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int used = 0, y, mo, d;
  if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 || used != 10) return false;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  const char *p = s + used;
  int64_t ms = 0;
  if (*p == 'T' || *p == ' ') {
    int h, mi, n = 0;
    if (sscanf(p + 1, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5) return false;
    tm.tm_hour = h;
    tm.tm_min = mi;
    p += 1 + n;
    if (*p == ':') {
      int sec;
      if (sscanf(p + 1, "%2d%n", &sec, &n) != 1 || n != 2) return false;
      tm.tm_sec = sec;
      p += 3;
      if (*p == '.') {
        int scale = 100;
        for (p++; *p >= '0' && *p <= '9'; p++) {
          ms += (*p - '0') * scale;
          scale /= 10;
        }
      }
    }
  }
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return false;
  time_t secs;
  if (*p == '\0') {
    tm.tm_isdst = -1;
    secs = mktime(&tm);
  } else if (*p == 'Z' && !p[1]) {
    secs = timegm(&tm);
  } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
    int oh, om;
    if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) return false;
    secs = timegm(&tm) - (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else {
    return false;
  }
  if (secs == (time_t)-1) return false;
  *out = (int64_t)secs * 1000 + ms;
  return true;
}

/* Checks that TOPIC:PARTITION is on the brokers KAFKA talks to, so that set-offset answers at once for one that
 * is not (a broker asked for its offsets would be retried until kafka.metadata.timeout.ms): a missing topic is
 * named with the nearest of the job's selected topics, else of the broker's; a missing partition with the topic's
 * partitions. A topic the job does not select is logged at WARN: its offset is stored, but no run pulls it. */
static int check_partition(const kg_job_ref_t *r, kg_kafka_t *kafka, const char *topic, int32_t partition, char *err) {
  kg_topic_meta_t *topics = NULL;
  size_t ntopics = 0;
  int rc = kg_kafka_list_topics(kafka, &topics, &ntopics, err);
  if (rc) return rc;
  kg_topic_filter_t *filter = NULL;
  char ferr[KG_ERRLEN];
  if (kg_topic_filter_new(r->config->topic_whitelist, r->config->topic_blacklist, &filter, ferr)) filter = NULL;
  const kg_topic_meta_t *found = NULL;
  const char **selected = kg_xcalloc(ntopics ? ntopics : 1, sizeof(char *)),
             **all = kg_xcalloc(ntopics ? ntopics : 1, sizeof(char *));
  size_t nselected = 0;
  for (size_t i = 0; i < ntopics; i++) {
    all[i] = topics[i].name;
    if (!strcmp(topics[i].name, topic)) found = &topics[i];
    if (filter && kg_topic_filter_match(filter, topics[i].name)) selected[nselected++] = topics[i].name;
  }
  if (!found) {
    const char *near = kg_topic_nearest(topic, selected, nselected);
    bool of_job = near != NULL;
    if (!near) near = kg_topic_nearest(topic, all, ntopics);
    if (near)
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s is not on the broker (kafka.brokers=%s); did you mean %s%s?", topic,
                   kg_kafka_options(r->config)->brokers, near, of_job ? ", which the job pulls" : "");
    else
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s is not on the broker (kafka.brokers=%s, %zu topic%s%s)", topic,
                   kg_kafka_options(r->config)->brokers, ntopics, ntopics == 1 ? "" : "s",
                   nselected ? "" : ", none of them selected by the job");
  } else {
    bool has = false;
    for (int32_t p = 0; p < found->partition_count && !has; p++)
      has = found->partitions[p] == partition;
    if (!has && found->partition_count > 0 &&
        found->partitions[found->partition_count - 1] == found->partition_count - 1)
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s has no partition %d: its partitions are 0 to %d", topic, partition,
                   found->partition_count - 1);
    else if (!has)
      rc = kg_fail(err, KG_ENOTFOUND, "topic %s has no partition %d (it has %d partitions)", topic, partition,
                   found->partition_count);
    else if (filter && !kg_topic_filter_match(filter, topic))
      KG_WARN("Topic %s is not selected by job %s (topic.whitelist, topic.blacklist): the offset is stored, but no run "
              "pulls the topic",
              topic, r->job_name);
  }
  free(selected);
  free(all);
  kg_topic_filter_destroy(filter);
  kg_kafka_free_topics(topics, ntopics);
  return rc;
}

/* The offset set-offset is asked for, from SPEC: N, earliest, latest, @TIME, +N or -N (from the stored offset,
 * HAD_OLD/OLD). Checks it against the broker's range unless FORCE; *RANGE_CHECKED tells whether it was. */
static int resolve_offset(const kg_job_ref_t *r, const char *topic, int32_t partition, const char *spec, bool had_old,
                          int64_t old, bool force, int64_t *offset, bool *range_checked, char *err) {
  *range_checked = false;
  bool relative = spec[0] == '+' || spec[0] == '-';
  bool needs_broker = !strcmp(spec, "earliest") || !strcmp(spec, "latest") || spec[0] == '@';
  int64_t n = 0;
  if (relative) {
    if (!kg_parse_int64(spec + 1, &n) || n < 0)
      return kg_fail(err, KG_EINVAL, "invalid offset '%s': expected +N or -N with a whole number N", spec);
    if (!had_old)
      return kg_fail(
          err, KG_EINVAL,
          "%s:%d has no stored offset in job %s, so '%s' has nothing to count from: give an absolute offset, "
          "earliest, latest or @TIME",
          topic, partition, r->job_name, spec);
    *offset = spec[0] == '+' ? old + n : old - n;
    if (*offset < 0)
      return kg_fail(err, KG_EINVAL, "offset %s from the stored %lld would be %lld, below 0", spec, (long long)old,
                     (long long)*offset);
  } else if (!needs_broker) {
    if (!kg_parse_int64(spec, offset) || *offset < 0)
      return kg_fail(err, KG_EINVAL,
                     "invalid offset '%s': expected a whole number >= 0, earliest, latest, @TIME (ISO 8601 or epoch "
                     "ms), +N or -N",
                     spec);
  }
  int64_t time_ms = 0;
  if (spec[0] == '@' && !parse_time_ms(spec + 1, &time_ms))
    return kg_fail(err, KG_EINVAL,
                   "invalid time '%s': expected @ and epoch milliseconds (@1796000000000) or ISO 8601 "
                   "(@2026-11-30T14:05:00Z, @2026-11-30T14:05+01:00, @2026-11-30)",
                   spec);
  if (!r->config) {
    if (needs_broker)
      return kg_fail(err, KG_EINVAL,
                     "offset '%s' needs the brokers: give the job file instead of the job name %s, so that kingest "
                     "knows them",
                     spec, r->job_name);
    return KG_OK; /* a job name: no brokers to check against */
  }
  if (force && !needs_broker) return KG_OK;
  kg_kafka_t *kafka = NULL;
  int64_t earliest = 0, latest = 0;
  kg_partition_offsets_t part = {.topic = topic, .partition = partition};
  char kerr[KG_ERRLEN] = "";
  int rc = kg_kafka_new(r->config, &kafka, kerr);
  if (!rc && (rc = check_partition(r, kafka, topic, partition, kerr)) == KG_ENOTFOUND) {
    kg_kafka_destroy(kafka);
    return kg_fail(err, KG_EINVAL, "cannot set the offset of %s:%d: %s%s", topic, partition, kerr,
                   needs_broker ? "" : " (--force sets it unchecked)");
  }
  if (!rc) rc = kg_kafka_offsets_bulk(kafka, &part, 1, kerr);
  if (!rc && part.error) rc = kg_fail(kerr, KG_EKAFKA, "%s", part.error);
  earliest = part.earliest;
  latest = part.latest;
  if (!rc && spec[0] == '@') {
    int64_t at = -1;
    rc = kg_kafka_offset_for_time(kafka, topic, partition, time_ms, &at, kerr);
    if (!rc) {
      if (at < 0)
        KG_INFO("No record of %s:%d is as recent as %s: taking the latest offset", topic, partition, spec + 1);
      *offset = at < 0 ? latest : at;
    }
  }
  kg_kafka_destroy(kafka);
  if (rc)
    return kg_fail(err, rc, "cannot check offset %s of %s:%d against the broker's range: %s%s", spec, topic, partition,
                   kerr, needs_broker ? "" : " (--force sets it unchecked)");
  if (!strcmp(spec, "earliest")) *offset = earliest;
  if (!strcmp(spec, "latest")) *offset = latest;
  *range_checked = true;
  if (!force && (*offset < earliest || *offset > latest))
    return kg_fail(err, KG_ERANGE,
                   "offset %lld is outside the range of %s:%d on the broker: [%lld, %lld] (earliest, latest); "
                   "--force sets it anyway",
                   (long long)*offset, topic, partition, (long long)earliest, (long long)latest);
  return KG_OK;
}

int kg_cli_state_set_offset(const kg_args_t *a, const kg_job_ref_t *r, kg_state_t **state, kg_lock_t **lock,
                            char *err) {
  char *topic = NULL;
  int32_t partition = 0;
  if (!parse_partition(a->positional[1], &topic, &partition)) {
    return kg_cli_usage_error(2, NULL, "invalid partition '%s': expected TOPIC:PARTITION, e.g. events:3",
                              a->positional[1]);
  }
  /* The offset's form first: a bad one is a usage error, before anything is opened. */
  const char *spec = a->positional[2];
  int64_t num;
  bool digit1 = spec[0] && spec[1] >= '0' && spec[1] <= '9';
  bool form_ok = !strcmp(spec, "earliest") || !strcmp(spec, "latest") ||
                 (spec[0] == '@' && parse_time_ms(spec + 1, &num)) ||
                 ((spec[0] == '+' || spec[0] == '-') && digit1 && kg_parse_int64(spec + 1, &num) && num >= 0) ||
                 (spec[0] >= '0' && spec[0] <= '9' && kg_parse_int64(spec, &num) && num >= 0);
  if (!form_ok) {
    free(topic);
    if (spec[0] == '@')
      return kg_cli_usage_error(2, NULL,
                                "invalid time '%s': expected @ and epoch milliseconds (@1796000000000) or ISO 8601 "
                                "(@2026-11-30T14:05:00Z, @2026-11-30T14:05+01:00, @2026-11-30)",
                                spec);
    return kg_cli_usage_error(2, NULL,
                              "invalid offset '%s': expected a whole number >= 0, earliest, latest, @TIME (ISO 8601 or "
                              "epoch ms), +N or -N",
                              spec);
  }
  bool dry = kg_cli_has(a, KG_OPT_DRY_RUN);
  int rc = dry ? kg_state_open_readonly(r->state_dir, r->job_name, state, err)
               : kg_state_open(r->state_dir, r->job_name, true, state, err);
  if (!rc && !dry) rc = lock_for_edit(r, *state, lock, err);
  /* The stored offset, for +N / -N and to say what changes. */
  bool had = false;
  int64_t old = 0, offset = 0;
  kg_partition_state_t *parts = NULL;
  size_t n = 0;
  if (!rc) rc = kg_state_partitions(*state, &parts, &n, err);
  const kg_partition_state_t *stored = rc ? NULL : kg_state_find(parts, n, topic, partition);
  if (stored) {
    had = true;
    old = stored->next_offset;
  }
  kg_state_free_partitions(parts, n);
  bool checked = false;
  if (!rc)
    rc = resolve_offset(r, topic, partition, a->positional[2], had, old, kg_cli_has(a, KG_OPT_FORCE), &offset, &checked,
                        err);
  if (!rc && !checked && !kg_cli_has(a, KG_OPT_FORCE))
    KG_WARN("Offset %lld of %s:%d is not checked against the broker's range: %s is a job name, not a job file",
            (long long)offset, topic, partition, r->job_name);
  if (!rc && dry) {
    if (had)
      printf("Would set the offset of %s:%d in job %s from %lld to %lld\n", topic, partition, r->job_name,
             (long long)old, (long long)offset);
    else
      printf("Would set the offset of %s:%d in job %s to %lld (it has none)\n", topic, partition, r->job_name,
             (long long)offset);
  } else if (!rc) {
    rc = kg_state_set_offset(*state, topic, partition, offset, &had, &old, err);
    if (!rc && had)
      KG_INFO("Set the offset of %s:%d in job %s from %lld to %lld", topic, partition, r->job_name, (long long)old,
              (long long)offset);
    else if (!rc)
      KG_INFO("Set the offset of %s:%d in job %s to %lld (it had none)", topic, partition, r->job_name,
              (long long)offset);
  }
  free(topic);
  return rc ? kg_cli_fail(rc == KG_ELOCKED ? 3 : rc == KG_EAUTH ? KG_EXIT_AUTH : 1, err) : 0;
}

int kg_cli_state_reset(const kg_args_t *a, const kg_job_ref_t *r, kg_state_t **state, kg_lock_t **lock, char *err) {
  char *topic = NULL;
  int32_t partition = -1;
  if (a->npositional == 2 && !parse_partition(a->positional[1], &topic, &partition)) {
    topic = kg_xstrdup(a->positional[1]);
    partition = -1;
  }
  bool dry = kg_cli_has(a, KG_OPT_DRY_RUN);
  int rc = dry ? kg_state_open_readonly(r->state_dir, r->job_name, state, err)
               : kg_state_open(r->state_dir, r->job_name, false, state, err);
  /* What it would forget. */
  kg_partition_state_t *parts = NULL;
  size_t n = 0, matching = 0;
  if (!rc) rc = kg_state_partitions(*state, &parts, &n, err);
  for (size_t i = 0; !rc && i < n; i++) {
    if (topic && (strcmp(parts[i].topic, topic) || (partition >= 0 && parts[i].partition != partition))) continue;
    matching++;
    if (dry)
      printf("Would forget %s:%d in job %s (offset %lld)\n", parts[i].topic, parts[i].partition, r->job_name,
             (long long)parts[i].next_offset);
  }
  kg_state_free_partitions(parts, n);
  if (!rc && dry && matching == 0) printf("Nothing to reset in job %s\n", r->job_name);
  if (!rc && !dry && !topic && matching > 0 && !kg_cli_has(a, KG_OPT_YES)) {
    free(topic);
    return kg_cli_usage_error(
        2, NULL,
        "state reset without a topic forgets every stored partition of job %s (%zu): pass --yes to do "
        "it, or --dry-run to list them",
        r->job_name, matching);
  }
  if (!rc && !dry) rc = lock_for_edit(r, *state, lock, err);
  kg_partition_state_t *removed = NULL;
  size_t nremoved = 0;
  if (!rc && !dry) rc = kg_state_reset(*state, topic, partition, &removed, &nremoved, err);
  for (size_t i = 0; !rc && i < nremoved; i++)
    KG_INFO("Reset %s:%d in job %s: forgot offset %lld; the next run treats it as new", removed[i].topic,
            removed[i].partition, r->job_name, (long long)removed[i].next_offset);
  if (!rc && !dry && nremoved == 0) KG_INFO("Nothing to reset in job %s", r->job_name);
  kg_state_free_partitions(removed, nremoved);
  free(topic);
  return rc ? kg_cli_fail(rc == KG_ELOCKED ? 3 : 1, err) : 0;
}
