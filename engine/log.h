/* log.h: the engine's log: levels, the text and JSON line formats, what a line is about, the live status block. */
#ifndef KG_LOG_H
#define KG_LOG_H

#include <stdint.h>

typedef enum { KG_LOG_DEBUG = 0, KG_LOG_INFO, KG_LOG_WARN, KG_LOG_ERROR } kg_log_level_t;

/* Log lines look like "2026-11-30 02:47:01.123 INFO Pulling topic test" and go to stderr
 * (and to a log file when one is set). Thread-safe: each line is written with one call. */
void kg_log(kg_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kg_log_set_level(kg_log_level_t level);
/* Writes one line on stderr (and the log file) whatever the log level: in the text format PREFIX and the message
 * ("kingest: " for a command's final error), in the JSON format a log line of LEVEL, with "exit_status":STATUS
 * when STATUS >= 0 (the line a failing command ends with). */
void kg_log_say(kg_log_level_t level, const char *prefix, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Also append every line to PATH (NULL stops). Returns KG_OK or KG_EIO. */
int kg_log_set_file(const char *path);

/* The log's format: text lines as above, or one JSON object per line for log shippers (--log-format json,
 * log.format=json): {"time":"2026-11-30T02:47:01.123Z","level":"INFO","message":"Pulling topic test",
 * "job":"events","job_id":"job_events_1796...","task":"task_events_1796..._0","topic":"test","partition":0}, the
 * last fields only when the line is about them. */
typedef enum { KG_LOG_FORMAT_TEXT = 0, KG_LOG_FORMAT_JSON } kg_log_format_t;
void kg_log_set_format(kg_log_format_t format);
kg_log_format_t kg_log_get_format(void);
/* The run the following lines are about (NULL: none). */
void kg_log_set_job(const char *name, const char *job_id);
/* The task the calling thread runs (NULL: none), and the partition it pulls (TOPIC NULL: none; PARTITION -1 for a
 * topic as a whole). */
void kg_log_set_task(const char *task_id);
void kg_log_set_partition(const char *topic, int32_t partition);

/* Shows TEXT (lines, each ending in '\n') as a live block under the log on a terminal: log lines appear above
 * it, and the next call replaces it. NULL or "" removes it. Only for a terminal: it moves the cursor. */
void kg_log_set_status(const char *text);
/* Writes PREFIX TEXT and a newline to stderr as one line among the log's (a line for another program to read,
 * as Hadoop Streaming's "reporter:status:"). */
void kg_log_line_raw(const char *prefix, const char *text);
/* Writes a signal's notice with one write(2) to stderr and one to the log file: in the text format "kingest: "
 * and MESSAGE, in the JSON format a WARN line with MESSAGE, the run's job and job_id when known, and
 * "signal":SIGNAL_NAME. Async-signal-safe, for a signal handler: the JSON line's time is worked out by hand. */
void kg_log_signal_notice(const char *message, const char *signal_name);

#define KG_DEBUG(...) kg_log(KG_LOG_DEBUG, __VA_ARGS__)
#define KG_INFO(...)  kg_log(KG_LOG_INFO, __VA_ARGS__)
#define KG_WARN(...)  kg_log(KG_LOG_WARN, __VA_ARGS__)
#define KG_ERROR(...) kg_log(KG_LOG_ERROR, __VA_ARGS__)

#endif
