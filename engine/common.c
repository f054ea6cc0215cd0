/* common.c: error strings, the log, the process's malloc settings, and allocation and string helpers. */
#include "kg_common.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

/* The process's malloc, set before main: as many arenas as the default number of task threads (twice the cores),
 * not glibc's eight a core, and a fixed mmap threshold, so that a fetch's buffer of a megabyte goes back to the
 * system when it is freed instead of raising the threshold and staying in the heap. Each arena keeps memory of its
 * own that the others cannot reuse; with fewer arenas than task threads, though, the tasks (which free what their
 * Kafka clients' threads allocated) wait on each other's arena locks: two arenas for four tasks made the
 * pass-through a tenth slower. The environment's MALLOC_ARENA_MAX and MALLOC_MMAP_THRESHOLD_ win. */
__attribute__((constructor)) static void malloc_setup(void) {
  if (!getenv("MALLOC_ARENA_MAX")) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    mallopt(M_ARENA_MAX, cores > 1 ? (int)(2 * cores) : 2);
  }
  if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

const char *kg_err2str(int err) {
  switch (err) {
  case KG_OK: return "success";
  case KG_EINVAL: return "invalid input";
  case KG_EIO: return "file system error";
  case KG_EKAFKA: return "Kafka error";
  case KG_ELUA: return "script error";
  case KG_ESTATE: return "state store error";
  case KG_ELOCKED: return "job is locked";
  case KG_ENOMEM: return "out of memory";
  case KG_ENOTFOUND: return "not found";
  case KG_ERANGE: return "offset out of range";
  case KG_EBUDGET: return "over the error budget";
  case KG_EREGISTRY: return "schema registry error";
  case KG_ERECORD: return "record refused by the writer";
  case KG_ESTALLED: return "nothing moved";
  case KG_EFAILED: return "task failed";
  default: return "unknown error";
  }
}

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
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0) m = 0;
    n += m;
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
  pthread_mutex_lock(&log_mutex);
  fprintf(stderr, "%s%s\n", prefix, text);
  fflush(stderr);
  pthread_mutex_unlock(&log_mutex);
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
    for (const char *p = text; *p; p++)
      status_lines += *p == '\n';
    fputs(status_text, stderr);
  }
  fflush(stderr);
  pthread_mutex_unlock(&log_mutex);
}

int kg_fail(char *errbuf, int err, const char *fmt, ...) {
  if (errbuf) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, KG_ERRLEN, fmt, ap);
    va_end(ap);
  }
  return err;
}

int64_t kg_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t kg_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void oom(void) {
  fputs("kingest: out of memory\n", stderr);
  abort();
}

void *kg_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom();
  return p;
}

void *kg_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) oom();
  return p;
}

void *kg_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) oom();
  return p;
}

char *kg_xstrdup(const char *s) { return kg_xstrndup(s, strlen(s)); }

char *kg_xstrndup(const char *s, size_t n) {
  char *p = kg_xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *kg_xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) oom();
  return s;
}

void kg_buf_grow(kg_buf_t *buf, size_t n) {
  size_t cap = buf->cap ? buf->cap : 64;
  while (cap < buf->len + n + 1)
    cap *= 2;
  buf->data = kg_xrealloc(buf->data, cap);
  buf->cap = cap;
}

void kg_buf_append(kg_buf_t *buf, const void *p, size_t n) {
  kg_buf_reserve(buf, n);
  if (n) memcpy(buf->data + buf->len, p, n);
  buf->len += n;
  buf->data[buf->len] = '\0';
}

void kg_buf_appendf(kg_buf_t *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) oom();
  kg_buf_append(buf, s, (size_t)n);
  free(s);
}

void kg_buf_append_url_escaped(kg_buf_t *buf, const char *s, bool keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
        *p == '_' || *p == '~' || (keep_slash && *p == '/')) {
      kg_buf_append(buf, p, 1);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      kg_buf_append(buf, e, 3);
    }
  }
}

void kg_buf_free(kg_buf_t *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->len = buf->cap = 0;
}

char *kg_strtrim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\f')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == '\f'))
    s[--n] = '\0';
  return s;
}

bool kg_parse_int64(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

bool kg_parse_bool(const char *s, bool *out) {
  if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes")) {
    *out = true;
    return true;
  }
  if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no")) {
    *out = false;
    return true;
  }
  return false;
}

/* Fault injection: KINGEST_CRASH_AT=<point>[:<n>] kills the process with SIGKILL at the n-th time (default
 * the first) it passes the named point. Read once; off when unset. */
static const char *crash_point;
static long crash_hit = 1;
static atomic_long crash_count;
static pthread_once_t crash_once = PTHREAD_ONCE_INIT;

static void crash_init(void) {
  const char *spec = getenv("KINGEST_CRASH_AT");
  if (!spec || !*spec) return;
  char *copy = kg_xstrdup(spec);
  char *colon = strchr(copy, ':');
  if (colon) {
    *colon = '\0';
    crash_hit = strtol(colon + 1, NULL, 10);
    if (crash_hit < 1) crash_hit = 1;
  }
  crash_point = copy;
}

void kg_crash_point(const char *name) {
  pthread_once(&crash_once, crash_init);
  if (!crash_point || strcmp(crash_point, name)) return;
  if (atomic_fetch_add(&crash_count, 1) + 1 == crash_hit) {
    kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_CRASH_AT=%s:%ld: killing the process", name, crash_hit);
    kill(getpid(), SIGKILL);
  }
}

void kg_test_hooks_warn(void) {
  static const struct {
    const char *name, *what;
  } hooks[] = {
      {"KINGEST_CRASH_AT", "the process kills itself (SIGKILL) at a crash point"},
      {"KINGEST_FAULT", "steps of the commit fail on purpose"},
      {"KINGEST_POWERCUT", "the local file system is behind a simulated power loss"},
      {"KINGEST_KAFKA_FAULT", "Kafka queries of the planning fail on purpose"},
      {"KINGEST_MAP_CRASH_AT", "the first attempt of each Hadoop map kills itself at a crash point"},
  };
  static atomic_bool warned;
  if (atomic_exchange(&warned, true)) return;
  for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
    const char *value = getenv(hooks[i].name);
    if (value && *value)
      KG_WARN("Test hook %s=%s is set: %s; not for production use (docs/testing.md)", hooks[i].name, value,
              hooks[i].what);
  }
}

/* KINGEST_FAULT: up to 16 points, each with the hit that fails and a count of hits so far. */
enum { FAULT_MAX = 16 };
static struct {
  char point[64];
  long hit;
  atomic_long count;
} faults[FAULT_MAX];
static size_t nfaults;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static _Thread_local const char *fault_scope;

static void fault_init(void) {
  const char *spec = getenv("KINGEST_FAULT");
  if (!spec || !*spec) return;
  char *copy = kg_xstrdup(spec), *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item && nfaults < FAULT_MAX; item = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(item, ':');
    long hit = 1;
    if (colon) {
      *colon = '\0';
      hit = strtol(colon + 1, NULL, 10);
      if (hit < 1) hit = 1;
    }
    snprintf(faults[nfaults].point, sizeof faults[nfaults].point, "%s", item);
    faults[nfaults++].hit = hit;
  }
  free(copy);
}

void kg_fault_scope(const char *scope) { fault_scope = scope; }

bool kg_fault(const char *point) {
  pthread_once(&fault_once, fault_init);
  if (!nfaults) return false;
  char name[64];
  snprintf(name, sizeof name, "%s%s%s", fault_scope ? fault_scope : "", fault_scope ? "." : "", point);
  for (size_t i = 0; i < nfaults; i++) {
    if (strcmp(faults[i].point, name)) continue;
    if (atomic_fetch_add(&faults[i].count, 1) + 1 != faults[i].hit) return false;
    kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_FAULT=%s:%ld: failing here", name, faults[i].hit);
    return true;
  }
  return false;
}

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t stop_group; /* kg_stop_also_signal */

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

/* The notice of a stop signal SIG, in the log's format, written with one write(2): only async-signal-safe calls
 * (the JSON line's time is worked out by hand, as gmtime is not safe in a handler). */
static void stop_notice(int sig) {
  const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  static const char what[] = ": finishing the batches in hand and committing what was completely written (signal "
                             "again to stop at once)";
  char line[1024];
  size_t n = 0;
  if (log_format != KG_LOG_FORMAT_JSON) {
    put(line, sizeof line, &n, "kingest: stopping on ", false);
    put(line, sizeof line, &n, name, false);
    put(line, sizeof line, &n, what, false);
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
    put(line, sizeof line, &n, "Z\",\"level\":\"WARN\",\"message\":\"stopping on ", false);
    put(line, sizeof line, &n, name, false);
    put(line, sizeof line, &n, what, false);
    put(line, sizeof line, &n, "\"", false);
    if (*log_job) {
      put(line, sizeof line, &n, ",\"job\":\"", false);
      put(line, sizeof line, &n, log_job, true);
      put(line, sizeof line, &n, "\",\"job_id\":\"", false);
      put(line, sizeof line, &n, log_job_id, true);
      put(line, sizeof line, &n, "\"", false);
    }
    put(line, sizeof line, &n, ",\"signal\":\"", false);
    put(line, sizeof line, &n, name, false);
    put(line, sizeof line, &n, "\"}", false);
  }
  line[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, n);
  if (log_file) ignored = write(fileno(log_file), line, n); /* each log line is flushed: nothing is buffered */
  (void)ignored;
}

/* Async-signal-safe: the first signal is noted (the run polls it); a second one takes the default action, which
 * ends the process, as a user pressing Ctrl-C twice expects. */
static void on_stop_signal(int sig) {
  if (stop_signal) {
    if (stop_group > 0) kill(-(pid_t)stop_group, sig);
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  stop_signal = sig;
  stop_notice(sig);
}

void kg_stop_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

int kg_stop_signal(void) { return stop_signal; }

void kg_stop_also_signal(int pgid) { stop_group = pgid; }

size_t kg_edit_distance(const char *a, const char *b, size_t limit) {
  size_t n = strlen(a), m = strlen(b);
  if ((n > m ? n - m : m - n) > limit || m >= 256) return limit + 1;
  size_t row[256];
  for (size_t j = 0; j <= m; j++)
    row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0], best = row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < v) v = up + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      row[j] = v;
      diag = up;
      if (v < best) best = v;
    }
    if (best > limit) return limit + 1;
  }
  return row[m];
}

char *kg_read_file(const char *path, size_t *len, int *error) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    *error = errno;
    return NULL;
  }
  kg_buf_t buf = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    kg_buf_append(&buf, chunk, n);
  bool failed = ferror(f);
  fclose(f);
  if (failed) {
    kg_buf_free(&buf);
    *error = -1;
    return NULL;
  }
  *len = buf.len;
  return buf.data ? buf.data : kg_xstrdup("");
}
