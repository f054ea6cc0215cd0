/* task.c: the record loop of one task (the extractor).
 *
 * For each work unit, in order: start fetching at the low watermark, take batches of records, drop those
 * below the next expected offset or at/after the high watermark, hand the rest to Lua in one protected
 * call (decodeRecord and the converters), and write what comes back through the task's outputs (output.c). A
 * script error fails the record it happened on: decode.error.policy and the error budget decide what that
 * means; the batch call then resumes after it. The extract limits are limit.c's. */
#include "task.h"

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "avro_codec.h"
#include "kafka_source.h"
#include "limit.h"
#include "log.h"
#include "lua_bridge.h"
#include "output.h"
#include "stop.h"

/* A task as it runs. */
struct kg_task_run {
  kg_task_t *task;
  kg_outputs_t *outputs;
  kg_limits_t limits;
  kg_kafka_t *kafka;
  kg_lua_t *lua;
  kg_record_t *records; /* the batch's record views (kafka.fetch.batch.size) */
  int64_t task_records; /* records pulled by the task so far */
  /* The error budget (task.skip.error.records, decode.error.max.ratio). */
  int64_t failed_decode;  /* records whose decodeRecord failed */
  int64_t failed_convert; /* records whose converter failed */
  int64_t range_total;    /* the most records the task can read: the sum of its ranges (or its count limit) */
  int log_limit;          /* failed records logged per partition */
  /* Avro (avro_codec.h): the schemas the task met, the reader of framed payloads (NULL when the job reads raw bytes),
   * the output's schema (writer.avro.schema, or -1 for each topic's latest) and, for the topic being pulled, its
   * latest schema and the output's (-1 when the output is not Avro). */
  kg_avro_schemas_t *schemas;
  kg_avro_input_t *avro;
  int32_t fixed_schema;
  int32_t reader_schema;
  int32_t output_schema;
  /* For the topic being pulled (AVRO_TOPIC, owned), per writer schema index (NSEEN of them): whether its records
   * made the task ask the registry for the topic's latest schema again, and whether a WARN said what
   * writer.avro.schema leaves out of them. The schema the last record was read with, for the next. */
  char *avro_topic;
  uint8_t *seen;
  size_t nseen;
  int32_t last_writer, last_latest, last_reader;
};

/* What SEEN[] holds of a writer schema. */
#define SEEN_REFRESHED 1 /* the topic's latest was asked for again for it */
#define SEEN_WARNED    2 /* the WARN that the job's output schema does not hold it was logged */
#define SEEN_OWN       4 /* the INFO that its records are read with their own schema was logged */

/* The first line of TEXT into OUT (SIZE bytes). */
static void first_line(char *out, size_t size, const char *text) {
  size_t n = strcspn(text, "\n");
  snprintf(out, size, "%.*s", (int)n, text);
}

/* Which bound of the error budget the failures so far break, READ being what the ratio is taken of (see
 * kg_task_check_budget): 0 none, else one of these, with a short reason into WHY (SIZE bytes). */
enum { KG_BUDGET_OK = 0, KG_BUDGET_LIMIT, KG_BUDGET_CONVERTER, KG_BUDGET_RATIO };

static int over_budget(const kg_task_run_t *run, int64_t read, char *why, size_t size) {
  const kg_config_t *c = run->task->spec.config;
  int64_t failed = run->failed_decode + run->failed_convert;
  if (c->skip_error_limit_set && c->skip_error_limit >= 0 && failed > c->skip_error_limit) {
    snprintf(why, size, "more than task.skip.error.records=%lld records failed in the script",
             (long long)c->skip_error_limit);
    return KG_BUDGET_LIMIT;
  }
  if (!c->skip_error_limit_set && run->failed_convert > 0) {
    snprintf(why, size, "a converter failure fails the task unless task.skip.error.records is set");
    return KG_BUDGET_CONVERTER;
  }
  if (c->error_max_ratio < 1 && (double)failed > c->error_max_ratio * (double)read) {
    snprintf(why, size, "%lld of the task's %lld records failed in the script, more than decode.error.max.ratio=%g",
             (long long)failed, (long long)read, c->error_max_ratio);
    return KG_BUDGET_RATIO;
  }
  return KG_BUDGET_OK;
}

/* Whether the failures so far are over the budget, as a task error in ERRBUF (KG_EBUDGET), or KG_OK. READ is
 * what the ratio is taken of: the most records the task can read while it runs (so that a broken script fails
 * fast, and only when no later success could bring the ratio back under the bound), the records read at its
 * end. */
int kg_task_check_budget(const kg_task_run_t *run, int64_t read, const char *where, char *errbuf) {
  const kg_config_t *c = run->task->spec.config;
  int64_t failed = run->failed_decode + run->failed_convert;
  char why[256];
  switch (over_budget(run, read, why, sizeof why)) {
  case KG_BUDGET_LIMIT:
    return kg_fail(errbuf, KG_EBUDGET,
                   "more than %lld records failed in the script (task.skip.error.records=%lld); last at %s; first: %s",
                   (long long)c->skip_error_limit, (long long)c->skip_error_limit, where,
                   run->task->result.first_error);
  case KG_BUDGET_CONVERTER:
    return kg_fail(errbuf, KG_EBUDGET,
                   "a converter failed at %s, and a converter failure fails the task unless task.skip.error.records "
                   "is set, as in Gobblin (set it to how many records may fail, or -1 for no limit); first failure: %s",
                   where, run->task->result.first_error);
  case KG_BUDGET_RATIO:
    return kg_fail(errbuf, KG_EBUDGET,
                   "%lld of the task's %lld records failed in the script, more than decode.error.max.ratio=%g of them; "
                   "last at %s; first: %s",
                   (long long)failed, (long long)read, c->error_max_ratio, where, run->task->result.first_error);
  default: return KG_OK;
  }
}

/* Record BAD of WU failed at STAGE (NULL: where the script was) with LERR: takes back its outputs, counts it, and
 * applies decode.error.policy and the error budget. The record either fails the task (decode.error.policy=fail, or
 * it is one failure too many), and is then neither skipped nor quarantined, or it is skipped or quarantined and the
 * task goes on; the WARN of each failed record (the first few of a partition) says which, and why. Returns KG_OK to
 * go on with the next record, or the error that fails the task. LOGGED counts the failures logged for this
 * partition. */
static int record_failed(kg_task_run_t *run, const kg_workunit_t *wu, kg_unit_result_t *res, const kg_record_t *bad,
                         const char *at, const char *lerr, int *logged, char *errbuf) {
  kg_task_t *t = run->task;
  const kg_config_t *c = t->spec.config;
  char stage[64];
  if (at)
    snprintf(stage, sizeof stage, "%s", at);
  else
    kg_lua_stage(run->lua, stage, sizeof stage);
  /* A module the script cannot find, or a record view used as a string, is a broken job, not a bad record:
   * skipping would skip every record and move the offsets past them, so the task fails whatever
   * decode.error.policy says. */
  if ((strstr(lerr, "module '") && strstr(lerr, "' not found")) || strstr(lerr, KG_RECORD_NOT_A_STRING))
    return kg_fail(errbuf, KG_ELUA, "%s failed for %s:%d at offset %.0f: %s", stage, wu->topic, wu->partition,
                   bad->offset, lerr);
  if (kg_outputs_take_back(run->outputs, bad, errbuf)) return KG_EIO;
  res->decode_errors++;
  kg_metrics_add(&t->result.metrics, KG_M_DECODE_ERRORS, 1);
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_FAILED, 1);
  if (!t->result.first_error[0]) {
    char line[KG_ERRLEN / 2];
    first_line(line, sizeof line, lerr);
    snprintf(t->result.first_error, sizeof t->result.first_error, "%s:%d offset %.0f: %s failed: %s", wu->topic,
             wu->partition, bad->offset, stage, line);
  }
  if (!strncmp(stage, "converter", 9))
    run->failed_convert++;
  else
    run->failed_decode++;
  char where[256], why[256];
  snprintf(where, sizeof where, "%s:%d offset %.0f", wu->topic, wu->partition, bad->offset);
  int rc = KG_OK;
  if (c->decode_errors == KG_ERRORS_FAIL) {
    snprintf(why, sizeof why, "decode.error.policy=fail");
    rc = kg_fail(errbuf, KG_ELUA, "%s failed for %s:%d at offset %.0f (decode.error.policy=fail): %s", stage, wu->topic,
                 wu->partition, bad->offset, lerr);
  } else if (over_budget(run, run->range_total, why, sizeof why)) {
    rc = kg_task_check_budget(run, run->range_total, where, errbuf);
  }
  /* The message, then the record's fate, then the traceback (lua_bridge.c) when there is one. */
  const char *tb = strstr(lerr, "\nstack traceback:\n");
  int head = tb ? (int)(tb - lerr) : (int)strlen(lerr);
  if (!tb) tb = "";
  if (rc) {
    /* The last failure of the task: logged whatever the limit, the record is not skipped. */
    KG_WARN("%s failed for %s:%d at offset %.0f: %.*s; the task fails: %s (none of its output is published and its "
            "offsets do not move)%s",
            stage, wu->topic, wu->partition, bad->offset, head, lerr, why, tb);
    return rc;
  }
  bool quarantine = c->decode_errors == KG_ERRORS_QUARANTINE;
  if (quarantine) {
    res->quarantined++;
    kg_metrics_add(&t->result.metrics, KG_M_QUARANTINED, 1);
    if (kg_outputs_quarantine(run->outputs, wu, bad, stage, lerr, errbuf)) return KG_EIO;
  } else {
    res->skipped++;
    kg_metrics_add(&t->result.metrics, KG_M_SCRIPT_SKIPPED, 1);
  }
  if ((*logged)++ < run->log_limit) {
    char budget[160];
    if (c->skip_error_limit_set && c->skip_error_limit >= 0)
      snprintf(budget, sizeof budget, "task.skip.error.records=%lld and decode.error.max.ratio=%g",
               (long long)c->skip_error_limit, c->error_max_ratio);
    else
      snprintf(budget, sizeof budget, "decode.error.max.ratio=%g", c->error_max_ratio);
    KG_WARN("%s record %s:%d at offset %.0f: %s failed: %.*s (the task goes on: %lld failed so far, within %s)%s",
            quarantine ? "Quarantining" : "Skipping", wu->topic, wu->partition, bad->offset, stage, head, lerr,
            (long long)(run->failed_decode + run->failed_convert), budget, tb);
  }
  return KG_OK;
}

/* The fetch of a partition stopped with an error: RES keeps WHY, with the brokers it was asked of, for the run's
 * log and history (a map's result carries it to the driver). */
static void fetch_failed(kg_unit_result_t *res, const kg_config_t *c, const char *why) {
  res->fetch_failed = true;
  if (strstr(why, "kafka.brokers="))
    snprintf(res->fetch_error, sizeof res->fetch_error, "%.1000s", why);
  else
    snprintf(res->fetch_error, sizeof res->fetch_error, "%.700s (kafka.brokers=%.250s)", why,
             kg_kafka_options(c)->brokers);
}

static void stop_early(kg_unit_result_t *res, const kg_workunit_t *wu, int64_t next, const char *why) {
  res->premature_stop = true;
  snprintf(res->stop_reason, sizeof res->stop_reason, "%s", why);
  KG_INFO("Stopping partition %s:%d early at offset %lld of %lld: %s", wu->topic, wu->partition, (long long)next,
          (long long)wu->high, why);
}

/* Records NEXT.. of WU were deleted under the reader (retention, delete-records): the reset policy decides where to
 * go on, and the range that can no longer be read is logged and counted. Returns true with *NEXT moved and the
 * fetcher restarted there, or false when the partition stops here (RES says why). FERR is the fetch's error. */
static bool deleted_under_reader(kg_task_run_t *run, const kg_workunit_t *wu, kg_unit_result_t *res, int64_t *next,
                                 const char *ferr) {
  kg_task_t *t = run->task;
  const kg_config_t *c = t->spec.config;
  int64_t earliest, latest;
  char oerr[KG_ERRLEN];
  if (kg_kafka_offsets(run->kafka, wu->topic, wu->partition, &earliest, &latest, oerr)) {
    KG_WARN("%s; %s; partition %s:%d stops at offset %lld", ferr, oerr, wu->topic, wu->partition, (long long)*next);
    char why[KG_ERRLEN];
    snprintf(why, sizeof why, "%.500s; %.500s", ferr, oerr);
    fetch_failed(res, c, why);
    return false;
  }
  kg_offset_decision_t d = kg_offset_decide(c->bootstrap, c->reset, false, true, *next, earliest, latest);
  static const char *policies[] = {"earliest", "latest", "nearest", "skip"};
  kg_metrics_add(&t->result.metrics, KG_M_OFFSET_RESETS, 1);
  if (d.reason != KG_START_RESET || !d.pull) {
    KG_WARN("Offset %lld of partition %s:%d went out of range [%lld, %lld] while it was read; %s: the partition "
            "stops here and keeps this offset",
            (long long)*next, wu->topic, wu->partition, (long long)earliest, (long long)latest,
            d.reason == KG_START_RESET ? "reset.on.offset.out.of.range=skip" : "the broker answered oddly");
    if (d.reason != KG_START_RESET) {
      char why[KG_ERRLEN];
      snprintf(why, sizeof why, "offset %lld went out of range [%lld, %lld] while it was read", (long long)*next,
               (long long)earliest, (long long)latest);
      fetch_failed(res, c, why);
    }
    return false;
  }
  int64_t to = d.low < wu->high ? d.low : wu->high;
  int64_t skipped = to > *next ? to - *next : 0;
  KG_WARN("Records %lld to %lld of partition %s:%d were deleted before they were read (the range is now [%lld, "
          "%lld]); reset.on.offset.out.of.range=%s goes on at %lld: %lld records skipped",
          (long long)*next, (long long)(to - 1), wu->topic, wu->partition, (long long)earliest, (long long)latest,
          policies[c->reset], (long long)to, (long long)skipped);
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_SKIPPED, (double)skipped);
  res->deleted += skipped;
  *next = to;
  if (*next >= wu->high) return false;
  char serr[KG_ERRLEN];
  if (kg_kafka_fetch_start(run->kafka, wu->topic, wu->partition, *next, serr)) {
    KG_WARN("%s; moving on to the next partition", serr);
    fetch_failed(res, c, serr);
    return false;
  }
  return true;
}

/* The flags of writer schema W in run->seen (grown as needed). */
static uint8_t *seen_of(kg_task_run_t *run, int32_t w) {
  if ((size_t)w >= run->nseen) {
    size_t n = (size_t)w + 8;
    run->seen = kg_xrealloc(run->seen, n);
    memset(run->seen + run->nseen, 0, n - run->nseen);
    run->nseen = n;
  }
  return &run->seen[w];
}

/* The schema a record of writer schema W of WU's topic is read with, into *READER: the topic's latest when it holds
 * W's datums with nothing lost; else, once per W, the latest asked of the registry again (a schema registered
 * since the task began), when that holds them; else W itself, so that no field is ever dropped. Returns KG_OK, or
 * KG_EREGISTRY when the registry did not give the latest (the task fails). */
static int reader_for(kg_task_run_t *run, const kg_workunit_t *wu, int32_t w, int32_t *reader, char *errbuf) {
  int32_t latest = run->reader_schema;
  if (w == run->last_writer && latest == run->last_latest) {
    *reader = run->last_reader;
    return KG_OK;
  }
  const char *why = "";
  if (latest >= 0 && kg_avro_schemas_holds(run->schemas, w, latest, &why)) {
    *reader = latest;
  } else {
    uint8_t *seen = seen_of(run, w);
    if (!(*seen & SEEN_REFRESHED)) {
      *seen |= SEEN_REFRESHED;
      int32_t newer = -1;
      char rerr[KG_ERRLEN];
      int rc = kg_avro_input_latest(run->avro, wu->topic, true, &newer, rerr);
      if (rc && rc != KG_ENOTFOUND)
        return kg_fail(errbuf, rc, "cannot read the latest schema of topic %s: %s", wu->topic, rerr);
      if (rc == KG_OK && newer != latest) {
        KG_INFO("Topic %s has a newer latest schema in the registry than when the task began: records go on with it",
                wu->topic);
        run->reader_schema = latest = newer;
      }
    }
    if (latest >= 0 && kg_avro_schemas_holds(run->schemas, w, latest, &why)) {
      *reader = latest;
    } else {
      *reader = w;
      if (latest >= 0 && !(*seen_of(run, w) & SEEN_OWN)) {
        *seen_of(run, w) |= SEEN_OWN;
        KG_INFO("Records of %s:%d have a schema the topic's latest cannot hold with nothing lost (%s): they are "
                "read with their own schema%s",
                wu->topic, wu->partition, why,
                run->task->spec.writer->avro_datums && run->fixed_schema < 0 ? ", in a file of their own" : "");
      }
    }
  }
  run->last_writer = w, run->last_latest = latest, run->last_reader = *reader;
  return KG_OK;
}

/* The error of a batch whose Avro records, offsets FIRST to LAST, took longer to read than script.batch.timeout.ms. */
static int framing_timeout(kg_task_run_t *run, const kg_workunit_t *wu, double first, double last, char *errbuf) {
  return kg_fail(errbuf, KG_ELUA,
                 "reading the Avro records of one batch of %s:%d (offsets %.0f to %.0f) took more than %lld ms and was "
                 "stopped (script.batch.timeout.ms)",
                 wu->topic, wu->partition, first, last, (long long)run->task->spec.config->batch_timeout_ms);
}

/* Reads the Avro framing of the KEEP records at RECORDS: sets each one's datum and schemas, and takes out those
 * that cannot be decoded (each a failed record, under decode.error.policy and the budget) and the tombstones (null
 * payloads: deleted records, counted as such) unless the job decodes the records itself. The batch timeout
 * (script.batch.timeout.ms) bounds this work as it bounds the script's: looked at after every 64 records or 64 KB of
 * them, the records that waited for the registry left out (its own timeout bounds that). Returns the records left,
 * or a negative error that fails the task (the registry did not give a schema, the budget, the timeout). */
static int read_framing(kg_task_run_t *run, const kg_workunit_t *wu, kg_unit_result_t *res, kg_record_t *records,
                        int keep, int *logged, char *errbuf) {
  kg_task_t *t = run->task;
  int64_t started = kg_mono_ms(), since_records = 0, since_bytes = 0;
  double first = records[0].offset, last = records[keep - 1].offset;
  bool own_decoder = kg_lua_decodes(run->lua);
  /* The records themselves go to an output whose schema the job fixed: say what that schema leaves out of them. */
  bool fixed_avro = t->spec.writer->avro_datums && run->fixed_schema >= 0 && !kg_lua_transforms(run->lua);
  int good = 0;
  for (int i = 0; i < keep; i++) {
    kg_record_t *r = &records[i];
    if (since_records >= 64 || since_bytes >= 65536) {
      if (kg_mono_ms() - started > t->spec.config->batch_timeout_ms)
        return framing_timeout(run, wu, first, records[i - 1].offset, errbuf);
      since_records = since_bytes = 0;
    }
    since_records++;
    since_bytes += (int64_t)r->value_len;
    if (!r->value_ptr && !own_decoder) { /* a tombstone: the record was deleted */
      res->tombstones++;
      kg_metrics_add(&t->result.metrics, KG_M_TOMBSTONES, 1);
      continue;
    }
    if (!r->value_ptr) {
      r->datum_ptr = NULL;
      r->schema = r->reader_schema = -1;
      records[good++] = *r;
      continue;
    }
    char ferr[KG_ERRLEN];
    int64_t asked = kg_avro_input_asked(run->avro);
    int rc = kg_avro_input_frame(run->avro, r->value_ptr, r->value_len, &r->schema, &r->datum_ptr, &r->datum_len, ferr);
    if (rc == KG_EREGISTRY)
      return kg_fail(errbuf, rc, "cannot read %s:%d at offset %.0f: %s", wu->topic, wu->partition, r->offset, ferr);
    if (rc) {
      r->datum_ptr = NULL;
      r->schema = -1;
      if ((rc = record_failed(run, wu, res, r, "Avro decoding", ferr, logged, errbuf))) return rc;
      continue;
    }
    if ((rc = reader_for(run, wu, r->schema, &r->reader_schema, errbuf))) return rc;
    if (kg_avro_input_asked(run->avro) != asked) started = kg_mono_ms(); /* it waited for the registry */
    const char *why;
    if (fixed_avro && !(*seen_of(run, r->schema) & SEEN_WARNED) &&
        !kg_avro_schemas_holds(run->schemas, r->schema, run->fixed_schema, &why)) {
      *seen_of(run, r->schema) |= SEEN_WARNED;
      KG_WARN("Records of %s:%d have a schema that writer.avro.schema does not hold with nothing lost (%s): they are "
              "written as the job's schema says",
              wu->topic, wu->partition, why);
    }
    records[good++] = *r;
  }
  if (kg_mono_ms() - started > t->spec.config->batch_timeout_ms) return framing_timeout(run, wu, first, last, errbuf);
  return good;
}

int kg_task_begin_unit(kg_task_run_t *run, const kg_workunit_t *wu, char *errbuf) {
  const char *topic = wu->topic;
  bool avro_out = run->task->spec.writer->avro_datums;
  run->reader_schema = -1;
  run->output_schema = avro_out ? run->fixed_schema : -1;
  run->last_writer = -1;
  if (run->avro && (!run->avro_topic || strcmp(run->avro_topic, topic))) { /* what the task knows of another topic */
    free(run->avro_topic);
    run->avro_topic = kg_xstrdup(topic);
    if (run->nseen) memset(run->seen, 0, run->nseen);
  }
  if (run->avro) {
    char rerr[KG_ERRLEN];
    int rc = kg_avro_input_latest(run->avro, topic, false, &run->reader_schema, rerr);
    if (rc == KG_ENOTFOUND && !(avro_out && run->fixed_schema < 0)) {
      KG_WARN("Topic %s has no latest schema in the registry (%s): its records are decoded with their own schemas",
              topic, rerr);
      run->reader_schema = -1;
    } else if (rc == KG_ENOTFOUND) {
      return kg_fail(errbuf, rc,
                     "the Avro output of topic %s takes the topic's latest schema, and the registry has none: %s (or "
                     "set writer.avro.schema)",
                     topic, rerr);
    } else if (rc) {
      return kg_fail(errbuf, rc, "cannot read the latest schema of topic %s: %s", topic, rerr);
    }
    if (avro_out && run->fixed_schema < 0) run->output_schema = run->reader_schema;
  }
  size_t len = 0;
  const char *text = kg_avro_schemas_text(run->schemas, run->output_schema, &len);
  kg_outputs_select(run->outputs, topic, text, len);
  return KG_OK;
}

/* Runs the script over the KEEP records at RECORDS, in protected calls that resume after each failing record,
 * with the watchdog's interrupt handshake. Returns KG_OK, or the error that fails the task: a write error, a
 * script the watchdog had to stop, or a record failure decode.error.policy or the budget does not allow. */
static int process_batch(kg_task_run_t *run, const kg_workunit_t *wu, kg_unit_result_t *res, kg_record_t *records,
                         int keep, int *logged, char *errbuf) {
  kg_task_t *t = run->task;
  const kg_config_t *c = t->spec.config;
  kg_sink_t sink = {kg_outputs_emit, run->outputs, kg_outputs_emit_datum};
  kg_batch_t batch = {
      .records = records, .count = keep, .next = 0, .sink = &sink, .output_schema = run->output_schema, .time = -1};
  while (batch.next < batch.count) {
    char lerr[KG_ERRLEN];
    kg_outputs_batch_begin(run->outputs);
    atomic_store(&t->live.lua_since_ms, kg_mono_ms());
    int rc = kg_lua_process(run->lua, &batch, lerr);
    if (atomic_exchange(&t->live.lua_since_ms, 0) == KG_LUA_INTERRUPTING) {
      /* The watchdog claimed this batch: wait until its hook is set, then remove it if it did not fire. */
      while (!atomic_load(&t->live.hook_set))
        sched_yield();
      kg_lua_clear_interrupt(run->lua);
    }
    if (kg_outputs_error(run->outputs, errbuf)) return kg_outputs_error(run->outputs, errbuf);
    /* A batch the watchdog had to stop (script.batch.timeout.ms) is a broken script, not a bad record. */
    if (atomic_load(&t->live.interrupted))
      return kg_fail(errbuf, KG_ELUA,
                     "the script ran for more than %lld ms on one batch of %s:%d (offsets %.0f to %.0f) and was "
                     "stopped (script.batch.timeout.ms)",
                     (long long)c->batch_timeout_ms, wu->topic, wu->partition, records[0].offset,
                     records[keep - 1].offset);
    if (rc == KG_OK) return KG_OK;
    if (batch.next == 0) /* before its first record (a schema it cannot compile): no record to blame */
      return kg_fail(errbuf, KG_ELUA, "the script failed on a batch of %s:%d before its first record: %s", wu->topic,
                     wu->partition, lerr);
    /* The writer refused the record's output (a CSV record that is not an object): the record failed there. */
    char refused[KG_ERRLEN];
    bool by_writer = kg_outputs_refused(run->outputs, refused);
    rc = record_failed(run, wu, res, &records[batch.next - 1], by_writer ? "writer" : NULL, by_writer ? refused : lerr,
                       logged, errbuf);
    if (rc) return rc;
  }
  return KG_OK;
}

int kg_task_records(kg_task_run_t *run, const kg_workunit_t *wu, kg_unit_result_t *res, kg_record_t *records, int n,
                    int *logged, char *errbuf) {
  if (n <= 0) return KG_OK;
  for (int i = 0; i < n; i++)
    res->bytes += (int64_t)records[i].value_len;
  res->records += n;
  kg_metrics_add(&run->task->result.metrics, KG_M_RECORDS_READ, n);
  res->last = kg_fingerprint_record(&records[n - 1]);
  int good = run->avro ? read_framing(run, wu, res, records, n, logged, errbuf) : n;
  if (good < 0) return good;
  if (!(run->avro && run->task->spec.writer->avro_datums && run->fixed_schema < 0))
    return good ? process_batch(run, wu, res, records, good, logged, errbuf) : KG_OK;
  /* Avro output with each record's schema (the topic's latest, unless it cannot hold a record): a run of records
   * read with one schema goes to a file of that schema, which output.c starts when the schema changes. A record
   * without a datum (a tombstone the job's decodeRecord gets) goes with the file being written. */
  for (int from = 0, to; from < good; from = to) {
    int32_t schema = records[from].reader_schema >= 0 ? records[from].reader_schema : run->output_schema;
    for (to = from + 1; to < good && (records[to].reader_schema == schema || records[to].reader_schema < 0);)
      to++;
    size_t len = 0;
    const char *text = kg_avro_schemas_text(run->schemas, schema, &len);
    run->output_schema = schema;
    kg_outputs_use_schema(run->outputs, text, len);
    int rc = process_batch(run, wu, res, records + from, to - from, logged, errbuf);
    if (rc) return rc;
  }
  return KG_OK;
}

/* Pulls one work unit within ALLOW. Returns KG_OK (the unit is done, perhaps short of its high watermark after a
 * fetch error, a limit or a stop signal: RES says which), or an error that fails the task (script policy, the error
 * budget, a write failure). */
static int pull_unit(kg_task_run_t *run, kg_workunit_t *wu, kg_allowance_t allow, kg_unit_result_t *res, char *errbuf) {
  kg_kafka_t *kafka = run->kafka;
  kg_record_t *records = run->records;
  kg_task_t *t = run->task;
  const kg_config_t *c = t->spec.config;
  const kg_kafka_options_t *k = kg_kafka_options(c);
  int64_t start = kg_mono_ms();
  int64_t next = wu->low;
  res->actual_high = wu->low;
  kg_log_set_partition(wu->topic, wu->partition);
  KG_INFO("Pulling partition %s:%d from offset %lld to %lld, range=%lld", wu->topic, wu->partition, (long long)wu->low,
          (long long)wu->high, (long long)(wu->high - wu->low));
  if (wu->high <= wu->low) goto finished;

  int src = kg_task_begin_unit(run, wu, errbuf);
  if (src) return src;
  char ferr[KG_ERRLEN];
  if (kg_kafka_fetch_start(kafka, wu->topic, wu->partition, wu->low, ferr)) {
    KG_WARN("%s; moving on to the next partition", ferr);
    fetch_failed(res, c, ferr);
    goto finished;
  }
  int64_t last_progress = kg_mono_ms();
  int logged_errors = 0;
  while (next < wu->high) {
    if (kg_stop_signal()) {
      stop_early(res, wu, next, kg_stop_signal() == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM");
      res->stopped = true;
      break;
    }
    if (allow.deadline_ms && kg_mono_ms() >= allow.deadline_ms) {
      stop_early(res, wu, next, "extract.limit.type=time: the partition's share of the task's time is used up");
      break;
    }
    if (allow.records >= 0 && res->records >= allow.records) {
      stop_early(res, wu, next, "extract.limit.type=count: the partition's share of the task's records is pulled");
      break;
    }
    int64_t eof_offset = -1;
    /* Ask for no more than the range (and the limits) still allow, so the last batch returns as soon as it is
     * complete. */
    int64_t want = kg_limits_batch(&allow, wu->high - next, res->records, start);
    int n = kg_kafka_fetch(kafka, records, want < k->batch_size ? (int)want : k->batch_size, 500, &eof_offset, ferr);
    if (n == KG_ERANGE) {
      if (!deleted_under_reader(run, wu, res, &next, ferr)) break;
      continue;
    }
    if (n < 0) {
      KG_WARN("%s; partition %s:%d stops at offset %lld", ferr, wu->topic, wu->partition, (long long)next);
      fetch_failed(res, c, ferr);
      break;
    }
    /* Keep the records inside [next, high). A record at or past high means the range has been read. */
    int keep = 0;
    bool past_high = false;
    for (int i = 0; i < n; i++) {
      int64_t off = (int64_t)records[i].offset;
      if (off >= wu->high) past_high = true;
      if (off < next || off >= wu->high) continue;
      records[keep++] = records[i];
    }
    if (n > 0) kg_crash_point("fetch");
    if (allow.records >= 0 && keep > allow.records - res->records) keep = (int)(allow.records - res->records);
    if (keep > 0) {
      last_progress = kg_mono_ms();
      next = (int64_t)records[keep - 1].offset + 1;
      int rc = kg_task_records(run, wu, res, records, keep, &logged_errors, errbuf);
      if (rc) return rc;
      atomic_store(&t->live.unit_records, res->records); /* progress counts records done, not only fetched */
      run->task_records += keep;
      atomic_store(&t->live.read, run->task_records);
      int64_t records_written, bytes_written;
      kg_outputs_written(run->outputs, &records_written, &bytes_written);
      atomic_store(&t->live.written, records_written);
      atomic_store(&t->live.bytes, bytes_written);
      kg_limits_throttle(&run->limits, run->task_records);
    }
    if (past_high && !(allow.records >= 0 && res->records >= allow.records)) next = wu->high;
    if (eof_offset >= 0) {
      /* Every record below the partition's end has come: offsets that did not are gone (deleted,
       * compacted, transaction markers). */
      int64_t end = eof_offset < wu->high ? eof_offset : wu->high;
      if (end > next) next = end;
      if (next < wu->high) break;
    }
    if (keep == 0 && kg_mono_ms() - last_progress > k->fetch_timeout_ms) {
      KG_WARN("No record from %s:%d for %lld ms (kafka.fetch.timeout.ms) at offset %lld, expected up to %lld; "
              "moving on to the next partition",
              wu->topic, wu->partition, (long long)k->fetch_timeout_ms, (long long)next, (long long)wu->high);
      char why[KG_ERRLEN / 2];
      snprintf(why, sizeof why, "no record for %lld ms (kafka.fetch.timeout.ms) at offset %lld",
               (long long)k->fetch_timeout_ms, (long long)next);
      fetch_failed(res, c, why);
      break;
    }
  }
  kg_kafka_fetch_stop(kafka);
  res->actual_high = next;
finished:
  res->elapsed_ms = kg_mono_ms() - start;
  KG_INFO("Finished pulling partition %s:%d", wu->topic, wu->partition);
  kg_log_set_partition(wu->topic, -1);
  return KG_OK;
}

int kg_task_open(kg_task_t *t, kg_task_run_t **out, char *errbuf) {
  const kg_config_t *c = t->spec.config;
  kg_task_run_t *run = kg_xcalloc(1, sizeof *run);
  *out = run;
  run->task = t;
  run->log_limit = 5;
  run->outputs = kg_outputs_new(&t->spec);
  run->records = kg_xcalloc((size_t)kg_kafka_options(c)->batch_size, sizeof(kg_record_t));
  run->schemas = kg_avro_schemas_new();
  run->fixed_schema = run->reader_schema = run->output_schema = -1;
  run->last_writer = -1;
  kg_avro_set_thread_schemas(run->schemas);
  kg_limits_init(&run->limits, c, t->spec.units, t->spec.nunits, kg_mono_ms());
  for (size_t i = 0; i < t->spec.nunits; i++)
    run->range_total += t->spec.units[i]->high - t->spec.units[i]->low;
  run->range_total = kg_limits_most(&run->limits, run->range_total);
  int rc = kg_lua_new(c->job_is_lua ? c->job_file : NULL, &run->lua, errbuf);
  atomic_store(&t->live.lua, (void *)run->lua);
  if (!rc && kg_registry_settings(c)->framing != KG_FRAMING_NONE)
    rc = kg_avro_input_new(c, run->schemas, &run->avro, errbuf);
  const kg_avro_file_options_t *avro_out = kg_avro_file_options(c);
  if (!rc && avro_out->schema && t->spec.writer->avro_datums)
    rc = kg_avro_schemas_add(run->schemas, avro_out->schema, avro_out->schema_len, &run->fixed_schema, errbuf);
  return rc;
}

void kg_task_close(kg_task_run_t *run) {
  if (!run) return;
  kg_task_t *t = run->task;
  kg_outputs_destroy(run->outputs);
  free(run->records);
  kg_kafka_destroy(run->kafka);
  atomic_store(&t->live.lua, NULL);
  kg_lua_destroy(run->lua);
  if (run->avro) kg_metrics_add(&t->result.metrics, KG_M_REGISTRY_REQUESTS, (double)kg_avro_input_requests(run->avro));
  kg_avro_input_destroy(run->avro);
  kg_avro_set_thread_schemas(NULL);
  kg_avro_schemas_destroy(run->schemas);
  free(run->avro_topic);
  free(run->seen);
  free(run);
}

kg_outputs_t *kg_task_outputs(kg_task_run_t *run) { return run->outputs; }

void kg_task_log_failures(kg_task_run_t *run, int limit) { run->log_limit = limit; }

void kg_task_run(kg_task_t *t) {
  int64_t start = kg_mono_ms();
  const kg_config_t *c = t->spec.config;
  kg_log_set_task(t->spec.task_id);
  t->result.units = kg_xcalloc(t->spec.nunits ? t->spec.nunits : 1, sizeof(kg_unit_result_t));
  t->result.succeeded = false;
  char *err = t->result.error;
  kg_task_run_t *run = NULL;
  int rc = kg_task_open(t, &run, err);
  if (!rc) rc = kg_kafka_new(c, &run->kafka, err);

  const char *topic = NULL;
  int64_t extracted = 0;
  for (size_t i = 0; !rc && i < t->spec.nunits; i++) {
    kg_workunit_t *wu = t->spec.units[i];
    kg_allowance_t allow = kg_limits_allow(&run->limits, wu);
    if (!topic || strcmp(topic, wu->topic)) {
      if (topic) KG_INFO("Finished pulling topic %s", topic);
      topic = wu->topic;
      kg_log_set_partition(topic, -1);
      KG_INFO("Pulling topic %s", topic);
    }
    atomic_store(&t->live.current_unit, (int)i);
    atomic_store(&t->live.unit_records, 0);
    atomic_store(&t->live.unit_started_ms, kg_mono_ms());
    int64_t written_before, written_after, bytes;
    kg_outputs_written(run->outputs, &written_before, &bytes);
    rc = pull_unit(run, wu, allow, &t->result.units[i], err);
    kg_outputs_written(run->outputs, &written_after, &bytes);
    t->result.units[i].written = written_after - written_before;
    extracted += t->result.units[i].records;
    kg_limits_used(&run->limits, t->result.units[i].records);
  }
  atomic_store(&t->live.unit_started_ms, 0);
  /* The ratio over what was really read: less than the ranges when a limit, a fetch error or a stop ended
   * the task early. */
  if (!rc) rc = kg_task_check_budget(run, extracted, "the end of the task", err);
  if (!rc && topic) KG_INFO("Finished pulling topic %s", topic);
  kg_log_set_partition(NULL, -1);
  kg_metrics_add(&t->result.metrics, KG_M_EXTRACT_TIME, (double)(kg_mono_ms() - start));
  /* Counted per batch, so a task that read nothing would lack the counter: report it as 0 like the others. */
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_READ, 0);
  if (run->lua) {
    char cerr[KG_ERRLEN];
    if (kg_lua_collect(run->lua, &t->result.metrics, cerr)) KG_WARN("cannot collect the script's metrics: %s", cerr);
  }
  if (!rc) {
    KG_INFO("Extracted %lld data records", (long long)extracted);
    for (size_t i = 0; i < t->spec.nunits; i++)
      KG_INFO("Actual high watermark for partition %s:%d=%lld, expected=%lld", t->spec.units[i]->topic,
              t->spec.units[i]->partition, (long long)t->result.units[i].actual_high,
              (long long)t->spec.units[i]->high);
  }

  /* Close the staging files and move them to task output; on failure remove them. */
  int out_rc = kg_outputs_finish(run->outputs, rc == KG_OK, &t->result, rc ? NULL : err);
  if (!rc) rc = out_rc;
  /* Counted once the files are closed: a file's last block and trailer are written at its close, and a failed
   * task's files are removed (0 written). */
  int64_t records_written, bytes_written;
  kg_outputs_written(run->outputs, &records_written, &bytes_written);
  kg_metrics_add(&t->result.metrics, KG_M_RECORDS_WRITTEN, (double)records_written);
  kg_metrics_add(&t->result.metrics, KG_M_BYTES_WRITTEN, (double)bytes_written);
  if (rc) {
    /* A failed task publishes nothing, quarantine included, and its offsets do not move: its failed records were
     * neither skipped nor quarantined, and the next run reads them again. They stay counted as failed. */
    for (size_t i = 0; i < t->spec.nunits; i++) {
      kg_unit_result_t *u = &t->result.units[i];
      if (u->skipped) kg_metrics_add(&t->result.metrics, KG_M_SCRIPT_SKIPPED, -(double)u->skipped);
      if (u->quarantined) kg_metrics_add(&t->result.metrics, KG_M_QUARANTINED, -(double)u->quarantined);
      u->skipped = u->quarantined = 0;
    }
  }
  kg_task_close(run);
  t->result.elapsed_ms = kg_mono_ms() - start;
  t->result.succeeded = rc == KG_OK;
  t->result.rc = rc;
  if (t->result.succeeded) {
    KG_INFO("Task %s completed in %lldms with state SUCCESSFUL", t->spec.task_id, (long long)t->result.elapsed_ms);
  } else {
    KG_ERROR("Task %s failed: %s", t->spec.task_id, t->result.error);
    KG_INFO("Task %s completed in %lldms with state FAILED", t->spec.task_id, (long long)t->result.elapsed_ms);
  }
  kg_log_set_task(NULL);
}

void kg_task_clear(kg_task_t *t) {
  free(t->spec.task_id);
  free(t->spec.units);
  free(t->result.units);
  for (size_t i = 0; i < t->result.nfiles; i++) {
    free(t->result.files[i].file_path);
    free(t->result.files[i].output);
    free(t->result.files[i].final);
  }
  free(t->result.files);
  kg_metrics_free(&t->result.metrics);
}
