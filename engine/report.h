/* report.h: the report phase: the events of a run and its reporters (the metrics file, Prometheus: interim reports
 * during the run, the full report at its end), the WARN that accounts for every record that did not reach the
 * output, and the counts kept in the run history. Reporters read the job's and the tasks' results and write them
 * somewhere; they never change them. */
#ifndef KG_REPORT_H
#define KG_REPORT_H

#include "buf.h"
#include "config.h"
#include "metrics.h"
#include "state.h"
#include "task.h"

/* One run's report. The events are appended by the job's thread only; kg_report_interim may run on the watchdog's
 * thread, as it reads nothing but the tasks' live counters and the fields set before the tasks started. */
typedef struct {
  const kg_config_t *config; /* borrowed */
  const char *job_id;        /* borrowed */
  int64_t start_ms;          /* when the run started, epoch ms */
  kg_buf_t events;           /* JSON lines of the events so far, for the metrics file */
  kg_state_t *state;         /* the job's state store once the run is recorded in it (borrowed), else NULL; for the
                                job's thread only */
  bool history_read;         /* the two below were read from the run history */
  int64_t prev_run_ms;       /* when the last earlier run ended, epoch ms; 0: none */
  int64_t prev_success_ms;   /* when the last earlier successful run ended (kg_report_succeeded); 0: none */
  const char *result;        /* set before kg_report_write: SUCCESSFUL, PARTIAL, STOPPED or FAILED */
  int64_t end_ms;            /* set with it: when the run ended, epoch ms, as the run history records it */
  /* The brokers' earliest and latest offsets of N partitions, for the lag, as kg_kafka_offsets_bulk gives them
     (ERRORS[i] set for a partition without); set by the job, which knows its source. NULL: no lag is reported. */
  int (*source_offsets)(const kg_config_t *config, const char *const *topics, const int32_t *partitions, size_t n,
                        int64_t *earliest, int64_t *latest, const char **errors, char *errbuf);
} kg_report_t;

void kg_report_init(kg_report_t *report, const kg_config_t *config, const char *job_id, int64_t start_ms);
void kg_report_clear(kg_report_t *report);

/* Once the run is recorded in STATE: keeps it for the final report and reads the earlier runs' history. */
void kg_report_begin(kg_report_t *report, kg_state_t *state);

/* Whether a run with RESULT succeeded: SUCCESSFUL, or PARTIAL unless job.fail.on.partial (the runs that exit 0). */
bool kg_report_succeeded(const kg_config_t *config, const char *result);

/* Records the event NAME (WorkUnitsCreated, JobRunTimer, ...) with METADATA_JSON (an object, or NULL for {}). */
void kg_report_event(kg_report_t *report, const char *name, const char *metadata_json);

/* A reporter: where a run's metrics go. One file each (reporter_file.c: the metrics file; reporter_prom.c: the
 * Prometheus text file and the Pushgateway), and a row in report.c's registry. A reporter that cannot write says
 * so in a WARN: the run's outcome never depends on it. */
typedef struct {
  const char *name;
  const kg_config_section_t *section;         /* its property rows (NULL: none) */
  bool (*enabled)(const kg_config_t *config); /* whether the job's properties turn it on */
  /* While the run goes on, every metrics.report.interval, possibly on another thread than the job's: what the
   * tasks have done so far (their live counters only). May be NULL. */
  void (*interim)(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks);
  /* When the run ends: each task's metrics and the job's (JOB_METRICS, the tasks' merged with the job's own),
   * and every event of the run (report->events). SUCCEEDED is the run's state. */
  void (*final)(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks, const kg_metrics_t *job_metrics,
                bool succeeded);
} kg_reporter_t;

extern const kg_reporter_t kg_reporter_file;
extern const kg_reporter_t kg_reporter_prom;

/* The file reporter's options (metrics.reporting.file.*, metrics.log.dir; reporter_file.c). */
typedef struct {
  bool enabled; /* metrics.reporting.file.enabled */
  char *dir;    /* metrics.log.dir */
  char *suffix; /* metrics.reporting.file.suffix, "" for none */
} kg_file_reporter_options_t;
extern const kg_config_section_t kg_reporter_file_section;
const kg_file_reporter_options_t *kg_file_reporter_options(const kg_config_t *config);

/* The Prometheus reporter's options (metrics.reporting.prometheus.*; reporter_prom.c). */
typedef struct {
  char *file;                     /* metrics.reporting.prometheus.file: absolute, "" for none */
  char *pushgateway_url;          /* metrics.reporting.prometheus.pushgateway.url without a trailing /, "" for none */
  int64_t pushgateway_timeout_ms; /* metrics.reporting.prometheus.pushgateway.timeout.ms */
  char *pushgateway_ca_file;      /* metrics.reporting.prometheus.pushgateway.ssl.ca.location, "" for the system's */
  char *pushgateway_user;         /* of metrics.reporting.prometheus.pushgateway.basic.auth.user.info, "" for none */
  char *pushgateway_password;     /* its password */
} kg_prom_reporter_options_t;
extern const kg_config_section_t kg_reporter_prom_section;
const kg_prom_reporter_options_t *kg_prom_reporter_options(const kg_config_t *config);

/* The I-th reporter's section, in the order they report (NULL past the last). */
const kg_config_section_t *kg_report_section_at(size_t i);

/* Whether any reporter is on. */
bool kg_report_enabled(const kg_report_t *report);

/* Hands what the tasks have done so far to every reporter that is on. */
void kg_report_interim(const kg_report_t *report, const kg_task_t *tasks, size_t ntasks);

/* The full report, when the run ends: records the per-partition events (KafkaExtractorTopicMetadata,
 * PrematureExtractorStop), then hands everything to every reporter that is on. */
void kg_report_write(kg_report_t *report, const kg_task_t *tasks, size_t ntasks, const kg_metrics_t *job_metrics,
                     bool succeeded);

/* One WARN line for a run in which records failed in the script or were deleted before they were read: the counts
 * per partition and the first failure. Nothing when every record read reached the writer. */
void kg_report_failed_records(const kg_task_t *tasks, size_t ntasks);

/* What the run did with its records, for the run history. */
kg_run_counts_t kg_report_counts(const kg_metrics_t *job_metrics, const kg_task_t *tasks, size_t ntasks);

#endif
