/* report.h: the report phase: the metrics file (interim lines during a run, the full report at its end, with the
 * events), the WARN that accounts for every record that did not reach the output, and the counts kept in the run
 * history. A reporter is what grows here (a Prometheus text file next): it reads the job's and the tasks' results
 * and writes them somewhere; it never changes them. */
#ifndef KG_REPORT_H
#define KG_REPORT_H

#include "config.h"
#include "metrics.h"
#include "state.h"
#include "task.h"

/* One run's report. The events are appended by the job's thread only; kg_report_interim may run on the watchdog's
 * thread, as it reads nothing but the tasks' live counters. */
typedef struct {
  const kg_config_t *config; /* borrowed */
  const char *job_id;        /* borrowed */
  kg_buf_t events;           /* JSON lines of the events so far, for the metrics file */
} kg_report_t;

void kg_report_init(kg_report_t *report, const kg_config_t *config, const char *job_id);
void kg_report_clear(kg_report_t *report);

/* Records the event NAME (WorkUnitsCreated, JobRunTimer, ...) with METADATA_JSON (an object, or NULL for {}). */
void kg_report_event(kg_report_t *report, const char *name, const char *metadata_json);

/* Appends one interim line per task to the metrics file: records read and written and bytes written so far. */
void kg_report_interim(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks);

/* Appends the full report to the metrics file: a line per task and one for the job (JOB_METRICS, the tasks'
 * metrics merged with the job's own), the per-partition events (KafkaExtractorTopicMetadata,
 * PrematureExtractorStop) and every event recorded. SUCCEEDED is the run's state. A file that cannot be written
 * is a WARN: the run's outcome does not depend on it. */
void kg_report_write(kg_report_t *report, const kg_task_t *tasks, size_t ntasks, const kg_metrics_t *job_metrics,
                     bool succeeded);

/* One WARN line for a run in which records failed in the script or were deleted before they were read: the counts
 * per partition and the first failure. Nothing when every record read reached the writer. */
void kg_report_failed_records(const kg_task_t *tasks, size_t ntasks);

/* What the run did with its records, for the run history. */
kg_run_counts_t kg_report_counts(const kg_metrics_t *job_metrics, const kg_task_t *tasks, size_t ntasks);

#endif
