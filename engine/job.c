/* job.c: the job run: lock, plan, run tasks on a thread pool, commit, report. */
#include "job.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "estimator.h"
#include "fs.h"
#include "kafka.h"
#include "lock.h"
#include "lua_bridge.h"
#include "metrics.h"
#include "packer.h"
#include "state.h"
#include "task.h"
#include "writer.h"

typedef struct {
  const kg_config_t *config;
  char *job_id;
  int64_t start_ms;
  char *job_dir;
  char extract_id[32];
  kg_workunit_t *units;
  size_t nunits;
  kg_task_t *tasks;
  size_t ntasks;
  kg_metrics_t metrics; /* the job's own counters, and the tasks' merged at the end */
  kg_buf_t events;      /* JSON lines for the metrics file */
  kg_fs_t *fs;          /* the writer's file system (writer.fs.uri, else fs.uri): task data and final folder */
  const kg_writer_ops_t *writer; /* the output format (writer.builder.class, writer.output.format) */
} kg_job_t;

static void event(kg_job_t *job, const char *name, const char *metadata_json) {
  kg_buf_appendf(&job->events, "{\"type\":\"event\",\"name\":\"%s\",\"time\":%lld,\"job\":", name,
                 (long long)kg_now_ms());
  kg_json_string(&job->events, job->job_id);
  kg_buf_appendf(&job->events, ",\"metadata\":%s}\n", metadata_json ? metadata_json : "{}");
}

int kg_job_recover(kg_state_t *state, kg_fs_t *fs, char *errbuf) {
  char *job_id = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  int rc = kg_state_pending(state, &job_id, &moves, &nmoves, errbuf);
  if (rc || !job_id) return rc;
  KG_WARN("Finishing the interrupted commit of %s (%zu files)", job_id, nmoves);
  for (size_t i = 0; i < nmoves && !rc; i++) {
    bool src = false, dst = false;
    if ((rc = kg_fs_exists(fs, moves[i].src, &src, errbuf))) break;
    if (src) {
      rc = kg_fs_move(fs, moves[i].src, moves[i].dst, errbuf);
      kg_crash_point("recover");
    } else if (!(rc = kg_fs_exists(fs, moves[i].dst, &dst, errbuf)) && !dst) {
      rc = kg_fail(errbuf, KG_EIO, "cannot finish the commit of %s: neither %s nor %s exists", job_id, moves[i].src,
                   moves[i].dst);
    }
  }
  if (!rc) rc = kg_state_commit_finish(state, job_id, errbuf);
  if (!rc) KG_INFO("Finished the interrupted commit of %s", job_id);
  free(job_id);
  kg_state_free_moves(moves, nmoves);
  return rc;
}

/* Removes what earlier runs of the job left in task.data.root.dir when they died (a killed run never cleans
 * up). Their files were never published: a commit publishes from task output only, and an interrupted
 * commit has just been finished. Only called while holding the job lock, so no other run is using them. */
static void remove_dead_runs_task_data(const kg_config_t *c, kg_fs_t *fs, const char *job_id) {
  char *root = kg_xasprintf("%s/%s", c->task_data_root, c->job_name);
  char *prefix = kg_xasprintf("job_%s_", c->job_name);
  char **names = NULL;
  size_t count = 0;
  char err[KG_ERRLEN];
  if (kg_fs_list(fs, root, &names, &count, err)) KG_DEBUG("%s", err);
  for (size_t i = 0; i < count; i++) {
    if (strncmp(names[i], prefix, strlen(prefix)) || !strcmp(names[i], job_id)) continue;
    char *dir = kg_xasprintf("%s/%s", root, names[i]);
    if (kg_fs_remove_tree(fs, dir, err))
      KG_WARN("%s", err);
    else
      KG_INFO("Removed the task data of an earlier run that did not finish: %s", dir);
    free(dir);
  }
  kg_fs_list_free(names, count);
  free(prefix);
  free(root);
}

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

/* Discovers the partitions to pull and makes their work units. */
static int plan(kg_job_t *job, kg_state_t *state, char *errbuf) {
  const kg_config_t *c = job->config;
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
      kg_metrics_add(&job->metrics, KG_M_OFFSET_RESETS, 1);
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
      kg_metrics_add(&job->metrics, KG_M_OFFSET_RESETS, 1);
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
    if (job->nunits == cap) {
      cap = cap ? cap * 2 : 64;
      job->units = kg_xrealloc(job->units, cap * sizeof(kg_workunit_t));
    }
    kg_workunit_t *wu = &job->units[job->nunits++];
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
  if (!rc) rc = kg_estimate_sizes(c, job->units, job->nunits, stored, nstored, errbuf);
  kg_kafka_free_topics(topics, ntopics);
  kg_kafka_destroy(kafka);
  kg_topic_filter_destroy(filter);
  kg_state_free_partitions(stored, nstored);
  if (!rc) {
    char md[128];
    snprintf(md, sizeof md, "{\"workUnitsCreated\":%zu,\"durationMs\":%lld}", job->nunits,
             (long long)(kg_mono_ms() - t0));
    event(job, "WorkUnitsCreationTimer", md);
  }
  return rc;
}

typedef struct {
  kg_job_t *job;
  pthread_mutex_t mutex;
  size_t next;
} kg_pool_t;

static void *worker(void *arg) {
  kg_pool_t *pool = arg;
  for (;;) {
    pthread_mutex_lock(&pool->mutex);
    size_t i = pool->next++;
    pthread_mutex_unlock(&pool->mutex);
    if (i >= pool->job->ntasks) return NULL;
    kg_task_run(&pool->job->tasks[i]);
  }
}

/* The watchdog: a script call that runs past script.batch.timeout.ms is first interrupted through a Lua
 * hook. Compiled code never looks at hooks, so a call still running KG_WATCHDOG_GRACE_MS later (a JIT-compiled
 * endless loop) cannot be stopped from outside its thread: the run then ends the process, publishing
 * nothing and moving no offset, after recording the failure. */
#define KG_WATCHDOG_GRACE_MS 3000

typedef struct {
  kg_job_t *job;
  kg_state_t *state;
  atomic_bool done;
  bool terminal; /* stderr is a terminal: live progress lines instead of log lines */
} kg_watchdog_t;

static void stop_run(kg_watchdog_t *w, kg_task_t *t, int64_t elapsed) {
  kg_job_t *job = w->job;
  kg_workunit_t *wu = t->spec.units[atomic_load(&t->live.current_unit)];
  char *msg =
      kg_xasprintf("task %s: the script has run for %lld ms on one batch of %s:%d and cannot be interrupted "
                   "(script.batch.timeout.ms=%lld); the run is stopped: nothing is published and no offset moves",
                   t->spec.task_id, (long long)elapsed, wu->topic, wu->partition, (long long)job->config->batch_timeout_ms);
  KG_ERROR("%s", msg);
  char err[KG_ERRLEN];
  kg_run_counts_t none = {0};
  if (kg_state_run_end(w->state, job->job_id, kg_now_ms(), &none, "FAILED", msg, err)) KG_WARN("%s", err);
  if (kg_fs_remove_tree(job->fs, job->job_dir, err)) KG_WARN("%s", err);
  fprintf(stderr, "kingest: %s\n", msg);
  fflush(stderr);
  _exit(1);
}

static void report_interim_metrics(const kg_job_t *job);

/* One progress line of task T: its partition, records pulled of the range, rate and time left. */
static bool progress_line(kg_task_t *t, int64_t now, kg_buf_t *out) {
  int64_t started = atomic_load(&t->live.unit_started_ms);
  if (!started) return false;
  kg_workunit_t *wu = t->spec.units[atomic_load(&t->live.current_unit)];
  int64_t done = atomic_load(&t->live.unit_records), range = wu->high - wu->low;
  double secs = (double)(now - started) / 1000.0;
  double rate = secs > 0 ? (double)done / secs : 0;
  kg_buf_appendf(out, "%s %s:%d %lld/%lld records (%.0f%%), %.0f records/s", t->spec.task_id, wu->topic, wu->partition,
                 (long long)done, (long long)range, range > 0 ? 100.0 * (double)done / (double)range : 100.0, rate);
  if (rate > 0 && done < range) kg_buf_appendf(out, ", about %.0fs left", (double)(range - done) / rate);
  return true;
}

static void report_progress(kg_watchdog_t *w, int64_t now) {
  kg_buf_t text = {0};
  if (w->terminal) {
    for (size_t i = 0; i < w->job->ntasks; i++)
      if (progress_line(&w->job->tasks[i], now, &text)) kg_buf_append(&text, "\n", 1);
    kg_log_set_status(text.data);
  } else {
    for (size_t i = 0; i < w->job->ntasks; i++) {
      text.len = 0;
      if (progress_line(&w->job->tasks[i], now, &text)) KG_INFO("Progress: %s", text.data);
    }
  }
  kg_buf_free(&text);
}

static void *watchdog(void *arg) {
  kg_watchdog_t *w = arg;
  const int64_t limit = w->job->config->batch_timeout_ms;
  const int64_t every = w->terminal ? 500 : w->job->config->progress_interval_ms;
  int64_t last_progress = kg_mono_ms(), last_metrics = last_progress;
  while (!atomic_load(&w->done)) {
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int64_t now = kg_mono_ms();
    for (size_t i = 0; i < w->job->ntasks; i++) {
      kg_task_t *t = &w->job->tasks[i];
      int64_t since = atomic_load(&t->live.lua_since_ms);
      if (since == KG_LUA_INTERRUPTING) {
        int64_t began = atomic_load(&t->live.interrupted_batch_ms);
        if (now - began > limit + KG_WATCHDOG_GRACE_MS) stop_run(w, t, now - began);
        continue;
      }
      if (!since || now - since <= limit) continue;
      /* Claim the batch: if the task finished it in the meantime, its exchange of lua_since_ms wins and
       * nothing is interrupted; otherwise the task sees KG_LUA_INTERRUPTING when the batch returns. */
      if (!atomic_compare_exchange_strong(&t->live.lua_since_ms, &since, KG_LUA_INTERRUPTING)) continue;
      atomic_store(&t->live.interrupted_batch_ms, since);
      atomic_store(&t->live.interrupted, true);
      KG_WARN("Task %s: the script has run for %lld ms on one batch (script.batch.timeout.ms=%lld); stopping it",
              t->spec.task_id, (long long)(now - since), (long long)limit);
      void *lua = atomic_load(&t->live.lua);
      if (lua) kg_lua_interrupt(lua);
      atomic_store(&t->live.hook_set, true);
    }
    if (every > 0 && now - last_progress >= every) {
      report_progress(w, now);
      last_progress = now;
    }
    const kg_config_t *c = w->job->config;
    if (c->metrics_enabled && now - last_metrics >= c->metrics_interval_ms) {
      report_interim_metrics(w->job);
      last_metrics = now;
    }
  }
  return NULL;
}

static void run_tasks(kg_job_t *job, kg_state_t *state) {
  const kg_config_t *c = job->config;
  size_t ngroups = 0;
  kg_group_t *groups = kg_pack(job->units, job->nunits, c->max_mappers, c->packer, c->pre_grouping_factor, &ngroups);
  job->tasks = kg_xcalloc(ngroups ? ngroups : 1, sizeof(kg_task_t));
  job->ntasks = ngroups;
  for (size_t g = 0; g < ngroups; g++) {
    kg_task_t *t = &job->tasks[g];
    t->spec.index = (int)g;
    t->spec.task_id = kg_xasprintf("task_%s_%lld_%zu", c->job_name, (long long)job->start_ms, g);
    t->spec.config = c;
  }
  const char **names = kg_xcalloc(ngroups ? ngroups : 1, sizeof(char *));
  for (size_t g = 0; g < ngroups; g++)
    names[g] = job->tasks[g].spec.task_id;
  kg_pack_log(groups, ngroups, names);
  free(names);
  for (size_t g = 0; g < ngroups; g++) {
    kg_task_t *t = &job->tasks[g];
    t->spec.units = groups[g].units; /* the task takes the array */
    groups[g].units = NULL;
    t->spec.nunits = groups[g].count;
    t->spec.job_dir = job->job_dir;
    t->spec.extract_id = job->extract_id;
    t->spec.fs = job->fs;
    t->spec.writer = job->writer;
  }
  kg_groups_free(groups, ngroups);
  KG_INFO("Running %zu work units as %zu tasks on %d threads", job->nunits, job->ntasks,
          c->threadpool_size < (int)job->ntasks ? c->threadpool_size : (int)job->ntasks);
  kg_pool_t pool = {.job = job, .next = 0};
  pthread_mutex_init(&pool.mutex, NULL);
  size_t nthreads = (size_t)c->threadpool_size < job->ntasks ? (size_t)c->threadpool_size : job->ntasks;
  pthread_t *threads = kg_xcalloc(nthreads ? nthreads : 1, sizeof(pthread_t));
  const char *term = getenv("TERM");
  kg_watchdog_t dog = {
      .job = job, .state = state, .terminal = isatty(STDERR_FILENO) && term && strcmp(term, "dumb") != 0};
  pthread_t dog_thread;
  bool dog_started = pthread_create(&dog_thread, NULL, watchdog, &dog) == 0;
  if (!dog_started) KG_WARN("cannot start the watchdog thread: script.batch.timeout.ms is not enforced");
  size_t started = 0;
  for (; started < nthreads; started++)
    if (pthread_create(&threads[started], NULL, worker, &pool) != 0) break;
  if (started == 0) worker(&pool); /* no thread could start: run them here */
  for (size_t i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  atomic_store(&dog.done, true);
  if (dog_started) pthread_join(dog_thread, NULL);
  if (dog.terminal) kg_log_set_status(NULL);
  free(threads);
  pthread_mutex_destroy(&pool.mutex);
}

/* Publishes the task output and stores the new offsets, durably and all-or-nothing. */
static int commit(kg_job_t *job, kg_state_t *state, char *errbuf) {
  int64_t t0 = kg_mono_ms();
  size_t nmoves = 0, nparts = 0;
  for (size_t i = 0; i < job->ntasks; i++) {
    if (!job->tasks[i].result.succeeded) continue; /* job.commit.policy=successful: only successful tasks commit */
    nmoves += job->tasks[i].result.nfiles;
    nparts += job->tasks[i].spec.nunits;
  }
  kg_move_t *moves = kg_xcalloc(nmoves ? nmoves : 1, sizeof *moves);
  kg_partition_state_t *parts = kg_xcalloc(nparts ? nparts : 1, sizeof *parts);
  size_t m = 0, p = 0;
  for (size_t i = 0; i < job->ntasks; i++) {
    kg_task_t *t = &job->tasks[i];
    if (!t->result.succeeded) continue;
    for (size_t f = 0; f < t->result.nfiles; f++) {
      moves[m].src = t->result.files[f].output;
      moves[m++].dst = t->result.files[f].final;
    }
    for (size_t u = 0; u < t->spec.nunits; u++) {
      kg_unit_result_t *r = &t->result.units[u];
      kg_partition_state_t *ps = &parts[p++];
      ps->topic = t->spec.units[u]->topic;
      ps->partition = t->spec.units[u]->partition;
      ps->next_offset = r->actual_high;
      ps->has_stats = r->records > 0;
      ps->records_pulled = r->records;
      ps->avg_record_millis = r->records > 0 ? (double)r->elapsed_ms / (double)r->records : 0;
      ps->avg_record_size = r->records > 0 ? (double)r->bytes / (double)r->records : 0;
      ps->has_log_start = true;
      ps->log_start = t->spec.units[u]->earliest;
      /* The last record pulled identifies the log next run. A unit that was reset and pulled nothing leaves no
       * record of the log it now reads: the old one's is dropped, so that it is not held against the new log. */
      ps->last = r->last;
      ps->update_last =
          r->records > 0 || t->spec.units[u]->reason == KG_START_RESET || t->spec.units[u]->reason == KG_START_RECREATED;
      if (r->records == 0) ps->last.set = false;
    }
  }
  int rc = kg_state_commit_begin(state, job->job_id, moves, nmoves, parts, nparts, errbuf);
  bool journaled = rc == KG_OK;
  if (journaled) kg_crash_point("journaled");
  size_t moved = 0;
  while (!rc && moved < nmoves) {
    rc = kg_fs_move(job->fs, moves[moved].src, moves[moved].dst, errbuf);
    if (!rc) {
      moved++;
      kg_crash_point("publish");
    } else {
      /* A move whose folders could not be synced did rename the file: undo it with the others. */
      bool src = true, dst = false;
      if (!kg_fs_exists(job->fs, moves[moved].src, &src, NULL) && !src &&
          !kg_fs_exists(job->fs, moves[moved].dst, &dst, NULL) && dst)
        moved++;
    }
  }
  if (rc && journaled) {
    /* A move failed: put back the ones made, then drop the journal, so that the run leaves no trace. If a
     * file cannot be put back, the journal stays and the next run finishes the commit instead. */
    char undo_err[KG_ERRLEN];
    bool undone = true;
    while (moved > 0) {
      moved--;
      if (kg_fs_move(job->fs, moves[moved].dst, moves[moved].src, undo_err)) {
        KG_ERROR("%s", undo_err);
        undone = false;
      }
    }
    if (undone && kg_state_commit_abort(state, job->job_id, undo_err)) KG_ERROR("%s", undo_err);
  }
  if (!rc) kg_crash_point("finish");
  if (!rc) rc = kg_state_commit_finish(state, job->job_id, errbuf);
  if (!rc) {
    KG_INFO("Published %zu files to %s and committed the offsets of %zu partitions", nmoves, job->config->final_dir,
            nparts);
    char md[64];
    snprintf(md, sizeof md, "{\"durationMs\":%lld}", (long long)(kg_mono_ms() - t0));
    event(job, "JobCommitTimer", md);
  }
  free(moves);
  free(parts);
  return rc;
}

/* Appends LEN bytes of DATA to the metrics file PATH in folder DIR (metrics.log.dir). The metrics files are
 * written by the file reporter to the local file system, whatever file system the writer uses. */
static int append_metrics(const char *dir, const char *path, const char *data, size_t len) {
  kg_fs_t *fs = kg_fs_local();
  kg_fs_stream_t *stream = NULL;
  char err[KG_ERRLEN];
  if (kg_fs_mkdirs(fs, dir, err) || kg_fs_create(fs, path, KG_FS_APPEND, &stream, err)) return KG_EIO;
  int rc = kg_fs_stream_write(stream, data, len, err);
  if (kg_fs_stream_close(stream, err) && !rc) rc = KG_EIO;
  return rc;
}

static char *metrics_path(const kg_job_t *job) {
  const kg_config_t *c = job->config;
  return *c->metrics_suffix
             ? kg_xasprintf("%s/%s.metrics.%s.%s", c->metrics_dir, c->job_name, job->job_id, c->metrics_suffix)
             : kg_xasprintf("%s/%s.metrics.%s", c->metrics_dir, c->job_name, job->job_id);
}

/* An interim report, every metrics.report.interval during the run: each task's records read and written
 * and bytes written so far, appended to the metrics file (the full report follows when the run ends). */
static void report_interim_metrics(const kg_job_t *job) {
  const kg_config_t *c = job->config;
  kg_buf_t out = {0};
  for (size_t i = 0; i < job->ntasks; i++) {
    kg_task_t *t = &job->tasks[i];
    kg_buf_appendf(
        &out, "{\"type\":\"metrics\",\"interim\":true,\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
    kg_json_string(&out, job->job_id);
    kg_buf_append(&out, ",\"task\":", 8);
    kg_json_string(&out, t->spec.task_id);
    kg_buf_appendf(&out, "},\"counters\":{\"%s\":%lld,\"%s\":%lld,\"%s\":%lld}}\n", KG_M_RECORDS_READ,
                   (long long)atomic_load(&t->live.read), KG_M_RECORDS_WRITTEN,
                   (long long)atomic_load(&t->live.written), KG_M_BYTES_WRITTEN,
                   (long long)atomic_load(&t->live.bytes));
  }
  char *path = metrics_path(job);
  if (append_metrics(c->metrics_dir, path, out.data, out.len))
    KG_WARN("cannot write the metrics file %s (metrics.log.dir)", path);
  free(path);
  kg_buf_free(&out);
}

static void write_metrics(kg_job_t *job, bool succeeded) {
  const kg_config_t *c = job->config;
  kg_buf_t out = {0};
  for (size_t i = 0; i < job->ntasks; i++) {
    kg_task_t *t = &job->tasks[i];
    kg_buf_appendf(&out, "{\"type\":\"metrics\",\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
    kg_json_string(&out, job->job_id);
    kg_buf_append(&out, ",\"task\":", 8);
    kg_json_string(&out, t->spec.task_id);
    kg_buf_appendf(&out, ",\"state\":\"%s\"},\"counters\":", t->result.succeeded ? "SUCCESSFUL" : "FAILED");
    kg_metrics_json(&t->result.metrics, &out);
    kg_buf_append(&out, "}\n", 2);
    for (size_t u = 0; u < t->spec.nunits; u++) {
      kg_workunit_t *wu = t->spec.units[u];
      kg_unit_result_t *r = t->result.units ? &t->result.units[u] : NULL;
      if (!r) continue;
      kg_buf_t md = {0};
      kg_buf_append(&md, "{\"topic\":", 9);
      kg_json_string(&md, wu->topic);
      kg_buf_appendf(&md,
                     ",\"partition\":%d,\"lowWatermark\":%lld,\"expectedHighWatermark\":%lld,"
                     "\"actualHighWatermark\":%lld,\"numRecordsConsumed\":%lld,\"avgRecordMillis\":%.6f,"
                     "\"avgRecordSize\":%.2f,\"decodingErrors\":%lld,\"skipped\":%lld,\"quarantined\":%lld,"
                     "\"deletedBeforeRead\":%lld,\"task\":\"%s\"}",
                     wu->partition, (long long)wu->low, (long long)wu->high, (long long)r->actual_high,
                     (long long)r->records, r->records ? (double)r->elapsed_ms / (double)r->records : 0.0,
                     r->records ? (double)r->bytes / (double)r->records : 0.0, (long long)r->decode_errors,
                     (long long)r->skipped, (long long)r->quarantined, (long long)r->deleted, t->spec.task_id);
      event(job, "KafkaExtractorTopicMetadata", md.data);
      kg_buf_free(&md);
      if (r->premature_stop) {
        kg_buf_t stop = {0};
        kg_buf_append(&stop, "{\"topic\":", 9);
        kg_json_string(&stop, wu->topic);
        kg_buf_appendf(&stop,
                       ",\"partition\":%d,\"expectedHighWatermark\":%lld,\"actualHighWatermark\":%lld,\"reason\":",
                       wu->partition, (long long)wu->high, (long long)r->actual_high);
        kg_json_string(&stop, r->stop_reason);
        kg_buf_append(&stop, "}", 1);
        event(job, "PrematureExtractorStop", stop.data);
        kg_buf_free(&stop);
      }
    }
  }
  kg_buf_appendf(&out, "{\"type\":\"metrics\",\"time\":%lld,\"context\":{\"job\":", (long long)kg_now_ms());
  kg_json_string(&out, job->job_id);
  kg_buf_appendf(&out, ",\"state\":\"%s\"},\"counters\":", succeeded ? "SUCCESSFUL" : "FAILED");
  kg_metrics_json(&job->metrics, &out);
  kg_buf_append(&out, "}\n", 2);
  if (job->events.len) kg_buf_append(&out, job->events.data, job->events.len);

  char *path = metrics_path(job);
  if (append_metrics(c->metrics_dir, path, out.data, out.len)) /* after any interim reports */
    KG_WARN("cannot write the metrics file %s (metrics.log.dir)", path);
  else
    KG_INFO("Wrote metrics to %s", path);
  free(path);
  kg_buf_free(&out);
}

/* One WARN line for a run in which records failed in the script or were deleted before they were read: the
 * counts per partition and the first error, so that no run skips records quietly. */
static void warn_failed_records(const kg_job_t *job) {
  int64_t skipped = 0, quarantined = 0, deleted = 0, read = 0;
  size_t nparts = 0;
  kg_buf_t parts = {0};
  const char *first = NULL;
  for (size_t i = 0; i < job->ntasks; i++) {
    const kg_task_t *t = &job->tasks[i];
    if (!t->result.units) continue;
    if (!first && t->result.first_error[0]) first = t->result.first_error;
    for (size_t u = 0; u < t->spec.nunits; u++) {
      const kg_unit_result_t *r = &t->result.units[u];
      read += r->records;
      if (!r->skipped && !r->quarantined && !r->deleted) continue;
      int64_t s = r->skipped;
      skipped += s;
      quarantined += r->quarantined;
      deleted += r->deleted;
      if (nparts++ >= 20) continue;
      kg_buf_appendf(&parts, "%s%s:%d ", parts.len ? ", " : "", t->spec.units[u]->topic, t->spec.units[u]->partition);
      const char *sep = "";
      if (s) kg_buf_appendf(&parts, "%s%lld skipped", sep, (long long)s), sep = " ";
      if (r->quarantined) kg_buf_appendf(&parts, "%s%lld quarantined", sep, (long long)r->quarantined), sep = " ";
      if (r->deleted) kg_buf_appendf(&parts, "%s%lld deleted before read", sep, (long long)r->deleted);
    }
  }
  if (nparts)
    KG_WARN("Of %lld records read, %lld failed in the script and were skipped, %lld were quarantined; %lld were "
            "deleted before they were read: %s%s%s%s",
            (long long)read, (long long)skipped, (long long)quarantined, (long long)deleted, parts.data,
            nparts > 20 ? ", ..." : "", first ? "; first failure: " : "", first ? first : "");
  kg_buf_free(&parts);
}

/* Sums what the tasks' partitions did for the run history. */
static kg_run_counts_t run_counts(const kg_job_t *job) {
  kg_run_counts_t n = {
      .read = (int64_t)kg_metrics_get(&job->metrics, KG_M_RECORDS_READ),
      .written = (int64_t)kg_metrics_get(&job->metrics, KG_M_RECORDS_WRITTEN),
      .bytes = (int64_t)kg_metrics_get(&job->metrics, KG_M_BYTES_WRITTEN),
  };
  for (size_t i = 0; i < job->ntasks; i++)
    for (size_t u = 0; job->tasks[i].result.units && u < job->tasks[i].spec.nunits; u++) {
      const kg_unit_result_t *r = &job->tasks[i].result.units[u];
      n.skipped += r->skipped;
      n.quarantined += r->quarantined;
      n.deleted += r->deleted;
    }
  return n;
}

int kg_job_run(const kg_config_t *c, kg_outcome_t *outcome, char *errbuf) {
  kg_job_t job = {.config = c};
  *outcome = KG_OUTCOME_SUCCESSFUL;
  job.start_ms = kg_now_ms();
  job.job_id = kg_xasprintf("job_%s_%lld", c->job_name, (long long)job.start_ms);
  time_t secs = (time_t)(job.start_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(job.extract_id, sizeof job.extract_id, "%Y%m%d%H%M%S", &tm);
  job.job_dir = kg_xasprintf("%s/%s/%s", c->task_data_root, c->job_name, job.job_id);
  kg_lock_t *lock = NULL;
  kg_state_t *state = NULL;
  bool run_recorded = false;
  int rc = KG_OK;

  KG_INFO("Starting job %s (%s) from %s", c->job_name, job.job_id, c->job_file);
  /* Task data and the final folder are on the writer's file system: publishing renames from one to the other. */
  const char *fs_uri = kg_props_get(c->props, "writer.fs.uri");
  const char *fs_property = "writer.fs.uri";
  if (!fs_uri || !*fs_uri) {
    fs_uri = kg_props_get(c->props, "fs.uri");
    fs_property = "fs.uri";
  }
  if ((rc = kg_fs_open(fs_uri, fs_property, &job.fs, errbuf))) goto out;
  if ((rc = kg_writer_find(kg_props_get(c->props, "writer.builder.class"), c->output_format, &job.writer, errbuf)))
    goto out;
  if (c->lock_enabled) {
    long holder = 0;
    rc = kg_lock_acquire(c->lock_dir, c->job_name, &lock, &holder, errbuf);
    if (rc == KG_ELOCKED) {
      kg_fail(errbuf, KG_ELOCKED, "Previous instance of job %s is still running, skipping this run", c->job_name);
      KG_INFO("%s (lock held by process %ld)", errbuf, holder);
      goto out;
    }
    if (rc) goto out;
  }

  /* Everything that can be checked before a record moves is checked now. */
  if ((rc = kg_fs_check_writable(job.fs, c->final_dir, "data.publisher.final.dir", errbuf))) goto out;
  if ((rc = kg_fs_check_writable(job.fs, c->task_data_root, "task.data.root.dir", errbuf))) goto out;
  if ((rc = kg_fs_check_same_fs(job.fs, c->task_data_root, "task.data.root.dir", c->final_dir,
                                "data.publisher.final.dir", errbuf)))
    goto out;
  if ((rc = kg_state_open(c->state_store_dir, c->job_name, true, &state, errbuf))) goto out;
  if ((rc = kg_lua_job_check(c->job_is_lua ? c->job_file : NULL, errbuf))) goto out;
  if ((rc = kg_job_recover(state, job.fs, errbuf))) goto out;
  if (lock) {
    remove_dead_runs_task_data(c, job.fs, job.job_id);
    if ((rc = kg_state_runs_died(state, job.job_id, errbuf))) goto out;
  }
  if ((rc = kg_state_run_begin(state, job.job_id, job.start_ms, errbuf))) goto out;
  run_recorded = true;

  if ((rc = plan(&job, state, errbuf))) goto out;
  {
    char md[64];
    snprintf(md, sizeof md, "{\"workUnits\":%zu}", job.nunits);
    event(&job, "WorkUnitsCreated", md);
  }
  if (kg_stop_signal()) { /* nothing was pulled yet: nothing to commit */
    *outcome = KG_OUTCOME_STOPPED;
    goto out;
  }
  int64_t run_start = kg_mono_ms();
  run_tasks(&job, state);
  {
    char md[64];
    snprintf(md, sizeof md, "{\"durationMs\":%lld}", (long long)(kg_mono_ms() - run_start));
    event(&job, "JobRunTimer", md);
  }
  size_t failed = 0;
  int task_rc = KG_OK; /* the first failed task's error; KG_EBUDGET wins, so that its exit status shows */
  for (size_t i = 0; i < job.ntasks; i++) {
    kg_metrics_merge(&job.metrics, &job.tasks[i].result.metrics);
    if (!job.tasks[i].result.succeeded) {
      if (!failed) kg_fail(errbuf, KG_EINVAL, "task %s failed: %s", job.tasks[i].spec.task_id, job.tasks[i].result.error);
      if (!failed || job.tasks[i].result.rc == KG_EBUDGET) task_rc = job.tasks[i].result.rc ? job.tasks[i].result.rc : KG_EINVAL;
      failed++;
    }
  }
  kg_metrics_add(&job.metrics, "job.records.written", kg_metrics_get(&job.metrics, KG_M_RECORDS_WRITTEN));
  if (failed) {
    if (failed > 1) {
      size_t n = strlen(errbuf);
      snprintf(errbuf + n, KG_ERRLEN - n, " (and %zu more failed tasks)", failed - 1);
    }
    if (c->commit_policy == KG_COMMIT_FULL) {
      rc = task_rc;
      KG_ERROR("%zu of %zu tasks failed; job.commit.policy=full: nothing is published and no offset moves", failed,
               job.ntasks);
      goto out;
    }
    KG_ERROR("%zu of %zu tasks failed; job.commit.policy=successful: committing the %zu tasks that succeeded", failed,
             job.ntasks, job.ntasks - failed);
    char cerr[KG_ERRLEN];
    rc = commit(&job, state, cerr);
    if (rc) {
      snprintf(errbuf, KG_ERRLEN, "%s", cerr);
      goto out;
    }
    rc = task_rc; /* the run still failed: some of it did not arrive */
    goto out;
  }
  rc = commit(&job, state, errbuf);
  if (!rc) {
    /* Partitions a fetch error stopped short: committed up to where they got, and named, so that a
     * scheduler's log shows the run was partial; the next run goes on from there. */
    kg_buf_t behind = {0};
    size_t nbehind = 0;
    bool stopped = false; /* a stop signal ended a partition early (one that came later changes nothing) */
    for (size_t i = 0; i < job.ntasks; i++)
      for (size_t u = 0; u < job.tasks[i].spec.nunits; u++) {
        kg_unit_result_t *r = &job.tasks[i].result.units[u];
        kg_workunit_t *wu = job.tasks[i].spec.units[u];
        stopped |= r->stopped;
        if (!r->fetch_failed || r->actual_high >= wu->high) continue;
        if (nbehind++ < 10)
          kg_buf_appendf(&behind, "%s%s:%d at %lld of %lld", behind.len ? ", " : "", wu->topic, wu->partition,
                         (long long)r->actual_high, (long long)wu->high);
      }
    if (nbehind) {
      KG_WARN("%zu partitions stopped short of their high watermark after fetch errors (the next run goes on from "
              "there): %s%s",
              nbehind, behind.data, nbehind > 10 ? ", ..." : "");
      *outcome = KG_OUTCOME_PARTIAL;
    }
    kg_buf_free(&behind);
    if (stopped) *outcome = KG_OUTCOME_STOPPED;
  }

out:
  if (job.fs && rc != KG_ELOCKED) {
    char err[KG_ERRLEN];
    if (kg_fs_remove_tree(job.fs, job.job_dir, err)) KG_WARN("%s", err);
  }
  if (rc != KG_ELOCKED) warn_failed_records(&job);
  if (c->metrics_enabled && rc != KG_ELOCKED) write_metrics(&job, rc == KG_OK);
  static const char *outcomes[] = {"SUCCESSFUL", "PARTIAL", "STOPPED"};
  char stopped[96] = "";
  if (rc == KG_OK && *outcome == KG_OUTCOME_STOPPED)
    snprintf(stopped, sizeof stopped, "stopped by %s; the next run goes on from here",
             kg_stop_signal() == SIGINT ? "SIGINT" : "SIGTERM");
  if (state && run_recorded) {
    char err[KG_ERRLEN];
    kg_run_counts_t counts = run_counts(&job);
    if (kg_state_run_end(state, job.job_id, kg_now_ms(), &counts, rc ? "FAILED" : outcomes[*outcome],
                         rc ? errbuf : stopped, err))
      KG_WARN("%s", err);
  }
  if (rc == KG_OK)
    KG_INFO("Job %s %s in %lldms: %lld records, %lld bytes written", job.job_id,
            *outcome == KG_OUTCOME_STOPPED ? "stopped" : "completed", (long long)(kg_now_ms() - job.start_ms),
            (long long)kg_metrics_get(&job.metrics, KG_M_RECORDS_WRITTEN),
            (long long)kg_metrics_get(&job.metrics, KG_M_BYTES_WRITTEN));
  kg_state_close(state);
  kg_lock_release(lock);
  for (size_t i = 0; i < job.ntasks; i++)
    kg_task_clear(&job.tasks[i]);
  free(job.tasks);
  for (size_t i = 0; i < job.nunits; i++)
    kg_workunit_clear(&job.units[i]);
  free(job.units);
  kg_metrics_free(&job.metrics);
  kg_buf_free(&job.events);
  kg_fs_close(job.fs);
  free(job.job_dir);
  free(job.job_id);
  return rc;
}

int kg_job_plan(const kg_config_t *c, bool json, FILE *out, char *errbuf) {
  kg_job_t job = {.config = c};
  job.start_ms = kg_now_ms();
  job.job_id = kg_xasprintf("job_%s_%lld", c->job_name, (long long)job.start_ms);
  kg_state_t *state = NULL;
  int rc = kg_state_open_readonly(c->state_store_dir, c->job_name, &state, errbuf);
  if (rc == KG_ENOTFOUND) rc = KG_OK; /* a job that never ran: every partition is new */
  if (!rc) rc = plan(&job, state, errbuf);
  kg_state_close(state);
  if (rc) goto out;
  size_t ngroups = 0;
  kg_group_t *groups = kg_pack(job.units, job.nunits, c->max_mappers, c->packer, c->pre_grouping_factor, &ngroups);
  static const char *packers[] = {"SINGLE_LEVEL", "BI_LEVEL"};
  static const char *estimators[] = {"AVG_RECORD_TIME", "AVG_RECORD_SIZE", "CUSTOM"};
  double min = 0, max = 0, total = 0;
  int64_t records = 0;
  for (size_t g = 0; g < ngroups; g++) {
    if (g == 0 || groups[g].load < min) min = groups[g].load;
    if (g == 0 || groups[g].load > max) max = groups[g].load;
  }
  for (size_t i = 0; i < job.nunits; i++) {
    total += job.units[i].est_size;
    records += job.units[i].high - job.units[i].low;
  }
  double spread = max > 0 ? (max - min) / max * 100 : 0;
  kg_buf_t o = {0};
  if (json) {
    kg_buf_append(&o, "{\"job\":", 7);
    kg_json_string(&o, c->job_name);
    kg_buf_appendf(&o,
                   ",\"packer\":\"%s\",\"estimator\":\"%s\",\"maxMappers\":%d,\"workUnits\":%zu,\"records\":%lld,"
                   "\"estimatedSize\":%.6g,\"minLoad\":%.6g,\"maxLoad\":%.6g,\"spreadPercent\":%.2f,\"tasks\":[",
                   packers[c->packer], estimators[c->estimator], c->max_mappers, job.nunits, (long long)records, total,
                   min, max, spread);
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
                   c->job_name, job.nunits, (long long)records, ngroups, packers[c->packer], estimators[c->estimator],
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
  if (fwrite(o.data ? o.data : "", 1, o.len, out) != o.len) rc = kg_fail(errbuf, KG_EIO, "cannot write the plan");
  kg_buf_free(&o);
  kg_groups_free(groups, ngroups);
out:
  for (size_t i = 0; i < job.nunits; i++)
    kg_workunit_clear(&job.units[i]);
  free(job.units);
  kg_metrics_free(&job.metrics);
  kg_buf_free(&job.events);
  free(job.job_id);
  return rc;
}
