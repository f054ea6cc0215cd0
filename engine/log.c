/* log.c: the engine's log: text or JSON lines on stderr and a log file, what each line is about, the live status
 * block of a terminal, and the notice a signal handler writes. */
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "kg_common.h"
#include "secret.h"

static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static kg_log_level_t log_level = KG_LOG_INFO;
static FILE *log_file;
static char *status_text; /* the live status block at the bottom of a terminal, or NULL */
static int status_lines;
static kg_log_format_t log_format = KG_LOG_FORMAT_TEXT;
/* What the lines are about: the run (set once per run), and per thread the task and the partition it pulls. */
static char log_job[256], log_job_id[320];
static _Thread_local char log_task[320], log_topic[256];
static _Thread_local int32_t log_partition = -1;

void kg_log_set_level(kg_log_level_t level) { log_level = level; }

int kg_log_set_file(const char *path) {
  pthread_mutex_lock(&log_mutex);
  if (log_file) fclose(log_file);
  log_file = NULL;
  if (path) log_file = fopen(path, "a");
  pthread_mutex_unlock(&log_mutex);
  return (path && !log_file) ? KG_EIO : KG_OK;
}

void kg_log_set_format(kg_log_format_t format) { log_format = format; }

kg_log_format_t kg_log_get_format(void) { return log_format; }

void kg_log_set_job(const char *name, const char *job_id) {
  pthread_mutex_lock(&log_mutex);
  snprintf(log_job, sizeof log_job, "%s", name ? name : "");
  snprintf(log_job_id, sizeof log_job_id, "%s", job_id ? job_id : "");
  pthread_mutex_unlock(&log_mutex);
}

void kg_log_set_task(const char *task_id) { snprintf(log_task, sizeof log_task, "%s", task_id ? task_id : ""); }

void kg_log_set_partition(const char *topic, int32_t partition) {
  snprintf(log_topic, sizeof log_topic, "%s", topic ? topic : "");
  log_partition = partition;
}

/* Appends S to OUT (at *N, of SIZE bytes) as the inside of a JSON string (kg_json_escape); stops short rather than
 * overflow. */
static void json_escape(char *out, size_t size, int *n, const char *s) {
  if ((size_t)*n + 8 < size) *n += (int)kg_json_escape(out + *n, size - 8 - (size_t)*n, s, strlen(s));
}

/* One JSON object: time (UTC, RFC 3339 with milliseconds), level, message, then the job, job_id, task, topic and
 * partition the line is about, when known, and the exit status when STATUS >= 0. */
static int format_json(char *line, size_t size, kg_log_level_t level, const struct timespec *ts, const char *msg,
                       int status) {
  static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  struct tm tm;
  gmtime_r(&ts->tv_sec, &tm);
  int n = (int)strftime(line, size, "{\"time\":\"%Y-%m-%dT%H:%M:%S", &tm);
  n += snprintf(line + n, size - (size_t)n, ".%03ldZ\",\"level\":\"%s\",\"message\":\"", ts->tv_nsec / 1000000,
                names[level]);
  /* A script error's traceback (lua_bridge.c) in a field of its own. */
  static const char header[] = "\nstack traceback:\n";
  const char *tb = strstr(msg, header);
  if (tb) {
    char *head = kg_xstrndup(msg, (size_t)(tb - msg));
    json_escape(line, size / 2, &n, head);
    free(head);
    n += snprintf(line + n, size - (size_t)n, "\",\"traceback\":\"");
    json_escape(line, size - 256, &n, tb + sizeof header - 1);
  } else {
    json_escape(line, size - 256, &n, msg);
  }
  line[n++] = '"';
  if (*log_job) {
    n += snprintf(line + n, size - (size_t)n, ",\"job\":\"");
    json_escape(line, size, &n, log_job);
    n += snprintf(line + n, size - (size_t)n, "\",\"job_id\":\"");
    json_escape(line, size, &n, log_job_id);
    line[n++] = '"';
  }
  if (*log_task) {
    n += snprintf(line + n, size - (size_t)n, ",\"task\":\"");
    json_escape(line, size, &n, log_task);
    line[n++] = '"';
  }
  if (*log_topic) {
    n += snprintf(line + n, size - (size_t)n, ",\"topic\":\"");
    json_escape(line, size, &n, log_topic);
    line[n++] = '"';
    if (log_partition >= 0) n += snprintf(line + n, size - (size_t)n, ",\"partition\":%d", (int)log_partition);
  }
  if (status >= 0) n += snprintf(line + n, size - (size_t)n, ",\"exit_status\":%d", status);
  line[n++] = '}';
  return n;
}

static void write_line(const char *line, size_t n);

/* A log line of LEVEL: text after PREFIX ("" for a timestamped log line, else the line is PREFIX and the message
 * alone), or JSON with STATUS (see format_json). */
static void vlog(kg_log_level_t level, const char *prefix, int status, const char *fmt, va_list ap) {
  static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  char line[8192];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int n;
  if (log_format == KG_LOG_FORMAT_JSON) {
    char msg[6144];
    vsnprintf(msg, sizeof msg, fmt, ap);
    kg_secret_mask(msg); /* before escaping: a secret is found as it is, not as JSON spells it */
    n = format_json(line, sizeof line - 2, level, &ts, msg, status);
  } else {
    if (*prefix) {
      n = snprintf(line, sizeof line, "%s", prefix);
    } else {
      struct tm tm;
      localtime_r(&ts.tv_sec, &tm);
      n = (int)strftime(line, sizeof line, "%Y-%m-%d %H:%M:%S", &tm);
      n += snprintf(line + n, sizeof line - (size_t)n, ".%03ld %s ", ts.tv_nsec / 1000000, names[level]);
    }
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    int head = n;
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0) m = 0;
    n += m;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n] = '\0';
    if (kg_secret_mask(line + head)) n = (int)strlen(line); /* the message, masked, is shorter */
  }
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  line[n] = '\0';
  write_line(line, (size_t)n);
}

void kg_log(kg_log_level_t level, const char *fmt, ...) {
  if (level < log_level) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, "", -1, fmt, ap);
  va_end(ap);
}

void kg_log_say(kg_log_level_t level, const char *prefix, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, prefix, status, fmt, ap);
  va_end(ap);
}

static void write_line(const char *line, size_t n) {
  pthread_mutex_lock(&log_mutex);
  if (status_lines) fprintf(stderr, "\033[%dF\033[J", status_lines); /* lift the status block off */
  fwrite(line, 1, n, stderr);
  if (status_lines) fputs(status_text, stderr); /* and put it back below the new line */
  fflush(stderr);
  if (log_file) {
    fwrite(line, 1, n, log_file);
    fflush(log_file);
  }
  pthread_mutex_unlock(&log_mutex);
}

void kg_log_line_raw(const char *prefix, const char *text) {
  char *shown = kg_xstrdup(text);
  kg_secret_mask(shown);
  pthread_mutex_lock(&log_mutex);
  fprintf(stderr, "%s%s\n", prefix, shown);
  fflush(stderr);
  pthread_mutex_unlock(&log_mutex);
  free(shown);
}

void kg_log_set_status(const char *text) {
  if (log_format == KG_LOG_FORMAT_JSON) return; /* a log shipper reads every byte: no cursor movements */
  pthread_mutex_lock(&log_mutex);
  if (status_lines) fprintf(stderr, "\033[%dF\033[J", status_lines);
  free(status_text);
  status_text = NULL;
  status_lines = 0;
  if (text && *text) {
    status_text = kg_xstrdup(text);
    kg_secret_mask(status_text);
    for (const char *p = text; *p; p++)
      status_lines += *p == '\n';
    fputs(status_text, stderr);
  }
  fflush(stderr);
  pthread_mutex_unlock(&log_mutex);
}

/* Appends S to the line at *N of SIZE bytes, as the inside of a JSON string when ESCAPE (kg_json_escape), keeping 7
 * bytes free: async-signal-safe. */
static void put(char *line, size_t size, size_t *n, const char *s, bool escape) {
  if (*n + 7 >= size) return;
  size_t len = strlen(s), room = size - 7 - *n;
  if (escape) {
    *n += kg_json_escape(line + *n, room, s, len);
    return;
  }
  if (len > room) len = room;
  memcpy(line + *n, s, len);
  *n += len;
}

/* Appends V as NDIGITS decimal digits: async-signal-safe. */
static void put_number(char *line, size_t size, size_t *n, long v, int ndigits) {
  char digits[24];
  for (int i = ndigits - 1; i >= 0; i--, v /= 10)
    digits[i] = (char)('0' + v % 10);
  digits[ndigits] = '\0';
  put(line, size, n, digits, false);
}

/* Only async-signal-safe calls: the JSON line's time is worked out by hand, as gmtime is not safe in a handler. */
void kg_log_signal_notice(const char *message, const char *signal_name) {
  char line[1024];
  size_t n = 0;
  if (log_format != KG_LOG_FORMAT_JSON) {
    put(line, sizeof line, &n, "kingest: ", false);
    put(line, sizeof line, &n, message, false);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* Days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil, inverted). */
    long days = (long)(ts.tv_sec / 86400), secs = (long)(ts.tv_sec % 86400);
    long z = days + 719468, era = z / 146097, doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
    put(line, sizeof line, &n, "{\"time\":\"", false);
    put_number(line, sizeof line, &n, y, 4);
    put(line, sizeof line, &n, "-", false);
    put_number(line, sizeof line, &n, m, 2);
    put(line, sizeof line, &n, "-", false);
    put_number(line, sizeof line, &n, d, 2);
    put(line, sizeof line, &n, "T", false);
    put_number(line, sizeof line, &n, secs / 3600, 2);
    put(line, sizeof line, &n, ":", false);
    put_number(line, sizeof line, &n, secs / 60 % 60, 2);
    put(line, sizeof line, &n, ":", false);
    put_number(line, sizeof line, &n, secs % 60, 2);
    put(line, sizeof line, &n, ".", false);
    put_number(line, sizeof line, &n, ts.tv_nsec / 1000000, 3);
    put(line, sizeof line, &n, "Z\",\"level\":\"WARN\",\"message\":\"", false);
    put(line, sizeof line, &n, message, true);
    put(line, sizeof line, &n, "\"", false);
    if (*log_job) {
      put(line, sizeof line, &n, ",\"job\":\"", false);
      put(line, sizeof line, &n, log_job, true);
      put(line, sizeof line, &n, "\",\"job_id\":\"", false);
      put(line, sizeof line, &n, log_job_id, true);
      put(line, sizeof line, &n, "\"", false);
    }
    put(line, sizeof line, &n, ",\"signal\":\"", false);
    put(line, sizeof line, &n, signal_name, true);
    put(line, sizeof line, &n, "\"}", false);
  }
  line[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, n);
  if (log_file) ignored = write(fileno(log_file), line, n); /* each log line is flushed: nothing is buffered */
  (void)ignored;
}
