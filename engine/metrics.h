/* metrics.h: counters per task and per job, with Gobblin's metric names, and the metrics file. */
#ifndef KG_METRICS_H
#define KG_METRICS_H

#include "buf.h"
#include "json.h"
#include "kg_common.h"

#define KG_M_RECORDS_READ        "gobblin.extractor.records.read"
#define KG_M_RECORDS_FAILED      "gobblin.extractor.records.failed"
#define KG_M_EXTRACT_TIME        "gobblin.extractor.extract.time"
#define KG_M_DECODE_ERRORS       "num.of.decoding.errors"
#define KG_M_CONVERTER_IN        "gobblin.converter.records.in"
#define KG_M_CONVERTER_OUT       "gobblin.converter.records.out"
#define KG_M_RECORDS_WRITTEN     "gobblin.writer.records.written"
#define KG_M_BYTES_WRITTEN       "gobblin.writer.bytes.written"
#define KG_M_OFFSET_RESETS       "kafka.offset.resets"
#define KG_M_QUARANTINED         "num.of.quarantined.records"
#define KG_M_SCRIPT_SKIPPED      "num.of.skipped.records" /* failed in the script and skipped */
#define KG_M_RECORDS_SKIPPED     "kafka.records.skipped"
#define KG_M_TOMBSTONES          "kafka.records.tombstones" /* Avro records with a null payload: deleted, not written */
#define KG_M_REGISTRY_REQUESTS   "kafka.schema.registry.requests" /* requests sent to the schema registry */
#define KG_M_JOB_RECORDS_WRITTEN "job.records.written"            /* the job's: records written by all its tasks */

/* A set of named values (counts, and the rates and statistics of script meters and histograms). Not
 * thread-safe: each task owns its own, the job merges them at the end (merging adds values up). */
typedef struct {
  char **names;
  double *values;
  size_t count;
  size_t cap;
} kg_metrics_t;

void kg_metrics_add(kg_metrics_t *m, const char *name, double delta);
/* Whether NAME is one of the engine's metrics (the KG_M_ names) rather than a script's own. */
bool kg_metrics_is_engine(const char *name);
double kg_metrics_get(const kg_metrics_t *m, const char *name);
/* Adds FROM into INTO as a job sums its tasks: counts and rates add up, histogram .min/.max combine, .mean is
 * weighted by .count, and percentiles (.p50 ...) stay out (they only exist per task). */
void kg_metrics_merge(kg_metrics_t *into, const kg_metrics_t *from);
/* Adds every value of FROM to INTO. */
void kg_metrics_merge_sum(kg_metrics_t *into, const kg_metrics_t *from);
void kg_metrics_free(kg_metrics_t *m);
/* Appends the counters as a JSON object to OUT. */
void kg_metrics_json(const kg_metrics_t *m, kg_buf_t *out);
/* Appends the values as a JSON object to OUT, each written so that it reads back exactly (the form metrics
 * travel in between the phases of a run). */
void kg_metrics_json_exact(const kg_metrics_t *m, kg_buf_t *out);
/* Adds every member of the JSON object OBJ (name: number) to M. KG_EINVAL names WHAT and the first member that
 * is not a number. */
int kg_metrics_from_json(kg_metrics_t *m, const kg_json_t *obj, const char *what, char *errbuf);

#endif
