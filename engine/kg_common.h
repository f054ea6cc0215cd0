/* kg_common.h: error codes, logging, and the small string and time helpers every engine file uses. */
#ifndef KG_COMMON_H
#define KG_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Fallible functions return KG_OK or one of these; the detail goes into a caller's error buffer. */
enum {
  KG_OK = 0,
  KG_EINVAL = -1,  /* bad input: a property, a job file, an argument */
  KG_EIO = -2,     /* a file system operation failed */
  KG_EKAFKA = -3,  /* the broker could not be reached or answered with an error */
  KG_ELUA = -4,    /* a script failed */
  KG_ESTATE = -5,  /* the state store failed */
  KG_ELOCKED = -6, /* another instance of the job holds the lock */
  KG_ENOMEM = -7,
  KG_ENOTFOUND = -8,
  KG_ERANGE = -9,     /* a Kafka offset outside the partition's range (records deleted under the reader) */
  KG_EBUDGET = -10,   /* more records failed in the script than the error budget allows */
  KG_EREGISTRY = -11, /* the schema registry did not answer, or answered with something that is not a schema */
  KG_ERECORD = -12,   /* a writer refused one record (it does not fit the format): that record fails, the file is
                         as before it, and the task goes on (writer.h) */
  KG_ESTALLED = -13,  /* partitions had records to read and not one record or offset moved */
  KG_EFAILED = -14,   /* a task failed: its own error (the task's result) says why */
};

const char *kg_err2str(int err);

/* Size of the error buffers passed around the engine. */
#define KG_ERRLEN 1024

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

#define KG_DEBUG(...) kg_log(KG_LOG_DEBUG, __VA_ARGS__)
#define KG_INFO(...)  kg_log(KG_LOG_INFO, __VA_ARGS__)
#define KG_WARN(...)  kg_log(KG_LOG_WARN, __VA_ARGS__)
#define KG_ERROR(...) kg_log(KG_LOG_ERROR, __VA_ARGS__)

/* Formats into an error buffer of KG_ERRLEN bytes; returns ERR so callers can `return kg_fail(...)`. */
int kg_fail(char *errbuf, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A named point where the crash tests may kill the process (KINGEST_CRASH_AT=<point>[:<n>], docs/testing.md); a
 * no-op otherwise. Points: fetch, write, task-output, journaled, publish, finish, recover, map. */
void kg_crash_point(const char *name);

/* Failure injection for tests (KINGEST_FAULT=<point>[:<n>][,<point>[:<n>]...]): true at the n-th time (default
 * the first) the calling code passes POINT, which then fails as the real call would. Off when unset. Points:
 * publish.move and publish.dirsync (a move of the commit's publish step, a folder sync within one: counted in
 * the publish step only, see kg_fault_scope), recover.move and recover.dirsync (the same in the moves that finish
 * an interrupted commit), state.<step>.busy and state.<step>.full for the commit journal's steps journal, finish
 * (also when finishing an interrupted commit) and abort (state.c). */
bool kg_fault(const char *point);
/* Logs a WARN for each test hook set in the environment (KINGEST_CRASH_AT, KINGEST_FAULT, KINGEST_POWERCUT,
 * KINGEST_KAFKA_FAULT, KINGEST_MAP_CRASH_AT; docs/testing.md), naming it and its value. Once per process: the
 * first call does it, later ones do nothing. */
void kg_test_hooks_warn(void);
/* Names the scope of the calling thread's next faults: kg_fault("dirsync") in scope "publish" is the point
 * publish.dirsync; NULL ends the scope. */
void kg_fault_scope(const char *scope);

/* A graceful stop: the first SIGTERM or SIGINT asks the run to stop (tasks stop fetching, what was completely
 * written is committed); a second one ends the process at once. kg_stop_signal is the first signal, 0 when none
 * came. Installs the handlers; call once, before any thread starts. */
void kg_stop_install(void);
int kg_stop_signal(void);
/* A child's process group (its pid, leader of its own group) that the second signal also ends, before this process
 * ends: a Hadoop client the run waits for. 0: none. */
void kg_stop_also_signal(int pgid);

/* Milliseconds since the epoch, and a monotonic clock in milliseconds. */
int64_t kg_now_ms(void);
int64_t kg_mono_ms(void);

/* malloc/strdup that abort on out-of-memory: allocation failure is not an input error. */
void *kg_xmalloc(size_t n);
void *kg_xcalloc(size_t n, size_t size);
void *kg_xrealloc(void *p, size_t n);
char *kg_xstrdup(const char *s);
char *kg_xstrndup(const char *s, size_t n);
/* printf into a new heap string. */
char *kg_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable byte buffer. */
typedef struct {
  char *data; /* heap, NUL-terminated when len > 0 */
  size_t len;
  size_t cap;
} kg_buf_t;

/* Grows BUF to hold N more bytes and a NUL (kg_buf_reserve's slow path). */
void kg_buf_grow(kg_buf_t *buf, size_t n);
/* Makes room for N more bytes (and a NUL) in BUF; returns where they go. BUF->len is left to the caller. */
static inline char *kg_buf_reserve(kg_buf_t *buf, size_t n) {
  if (buf->len + n + 1 > buf->cap) kg_buf_grow(buf, n);
  return buf->data + buf->len;
}
void kg_buf_append(kg_buf_t *buf, const void *p, size_t n);
void kg_buf_appendf(kg_buf_t *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends S to BUF with every byte that is not unreserved in a URL (RFC 3986) as %XX; '/' stays when KEEP_SLASH. */
void kg_buf_append_url_escaped(kg_buf_t *buf, const char *s, bool keep_slash);
void kg_buf_free(kg_buf_t *buf);

/* The edit distance between A and B (for "did you mean"), or LIMIT + 1 once it is sure to exceed LIMIT, and for
 * strings of 256 bytes or more. */
size_t kg_edit_distance(const char *a, const char *b, size_t limit);

/* The whole file at PATH: a new buffer of *LEN bytes, NUL-terminated, or NULL with *ERROR set to the errno of a
 * file that cannot be opened, or to -1 when reading it failed. */
char *kg_read_file(const char *path, size_t *len, int *error);

/* Trims spaces and tabs at both ends, in place; returns S. */
char *kg_strtrim(char *s);
/* Parses a whole base-10 integer; false if S is not one. */
bool kg_parse_int64(const char *s, int64_t *out);
bool kg_parse_bool(const char *s, bool *out);

#endif
