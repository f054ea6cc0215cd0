/* mapreduce.c: the execute phase as a map-only Hadoop Streaming job (mapreduce.h). */
#include "mapreduce.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "executor.h"
#include "fault.h"
#include "hadoop_token.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "result.h"
#include "secret.h"
#include "stop.h"
#include "writer.h"

extern char **environ;

/* ---- what the driver needs ------------------------------------------------------------------------------- */

static const char *mr_root(const kg_config_t *c) { return kg_props_get(c->props, "mr.job.root.dir"); }

/* The Hadoop command's path: as given when it has a slash, else the first in PATH. NULL when none; *TRIED says
 * where it was looked for. */
static char *find_command(const char *name, char *tried, size_t tried_size) {
  if (strchr(name, '/')) {
    snprintf(tried, tried_size, "%s", name);
    return access(name, X_OK) == 0 ? kg_xstrdup(name) : NULL;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/bin:/bin";
  snprintf(tried, tried_size, "PATH=%s", path);
  char *copy = kg_xstrdup(path), *save = NULL;
  char *found = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
    char *candidate = kg_xasprintf("%s/%s", *dir ? dir : ".", name);
    struct stat st;
    if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0)
      found = candidate;
    else
      free(candidate);
  }
  free(copy);
  return found;
}

/* The streaming jar: mr.streaming.jar, else the newest hadoop-streaming-*.jar under $HADOOP_HOME. */
static char *find_streaming_jar(const kg_config_t *config, char *errbuf) {
  const kg_mr_options_t *c = kg_mr_options(config);
  if (c->streaming_jar && *c->streaming_jar) {
    if (access(c->streaming_jar, R_OK) == 0) return kg_xstrdup(c->streaming_jar);
    kg_fail(errbuf, KG_EINVAL, "mr.streaming.jar=%s: cannot read it: %s", c->streaming_jar, strerror(errno));
    return NULL;
  }
  const char *home = getenv("HADOOP_HOME");
  if (!home || !*home) {
    kg_fail(errbuf, KG_EINVAL,
            "launcher.type=MAPREDUCE: no Hadoop Streaming jar: set mr.streaming.jar, or HADOOP_HOME (where "
            "share/hadoop/tools/lib/hadoop-streaming-*.jar is looked for)");
    return NULL;
  }
  char *pattern = kg_xasprintf("%s/share/hadoop/tools/lib/hadoop-streaming-*.jar", home);
  glob_t g;
  char *jar = NULL;
  if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0) jar = kg_xstrdup(g.gl_pathv[g.gl_pathc - 1]);
  if (!jar)
    kg_fail(errbuf, KG_EINVAL,
            "launcher.type=MAPREDUCE: no Hadoop Streaming jar at %s (from HADOOP_HOME); set "
            "mr.streaming.jar",
            pattern);
  globfree(&g);
  free(pattern);
  return jar;
}

/* The kingest the maps run: mr.kingest.path, else this one. */
static char *kingest_path(const kg_config_t *config) {
  const kg_mr_options_t *c = kg_mr_options(config);
  if (c->kingest && *c->kingest) return kg_xstrdup(c->kingest);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return kg_xstrdup("kingest");
  self[n] = 0;
  return kg_xstrdup(self);
}

int kg_mr_check(const kg_config_t *c, kg_fs_t *fs, kg_fs_t *pub_fs, bool reach, char *errbuf) {
  if (!mr_root(c) || !*mr_root(c))
    return kg_fail(errbuf, KG_EINVAL,
                   "launcher.type=MAPREDUCE needs mr.job.root.dir: the folder on HDFS where each run keeps the maps' "
                   "input and task data");
  if (!strcmp(fs->scheme, "file"))
    return kg_fail(
        errbuf, KG_EINVAL,
        "launcher.type=MAPREDUCE: the maps write to the writer's file system, and writer.fs.uri is the "
        "local disk of this machine: set writer.fs.uri (or fs.uri) to the cluster's HDFS, webhdfs://HOST:PORT");
  if (pub_fs != fs)
    return kg_fail(errbuf, KG_EINVAL,
                   "launcher.type=MAPREDUCE: data.publisher.fs.uri must be the writer's file system (the maps' output "
                   "is published by renames on HDFS)");
  if (mr_root(c)[0] != '/')
    return kg_fail(errbuf, KG_EINVAL, "mr.job.root.dir=%s: an absolute path on HDFS is needed", mr_root(c));
  int rc = reach ? kg_fs_check_writable(fs, mr_root(c), "mr.job.root.dir", errbuf) : KG_OK;
  if (rc) return rc;
  char tried[PATH_MAX + 64];
  char *hadoop = find_command(kg_mr_options(c)->hadoop, tried, sizeof tried);
  if (!hadoop)
    return kg_fail(errbuf, KG_EINVAL,
                   "launcher.type=MAPREDUCE: no Hadoop command: mr.hadoop.command=%s was not found (looked in %s); "
                   "install Hadoop's client or set mr.hadoop.command",
                   kg_mr_options(c)->hadoop, tried);
  free(hadoop);
  char *jar = find_streaming_jar(c, errbuf);
  if (!jar) return KG_EINVAL;
  free(jar);
  return KG_OK;
}

/* ---- the driver ------------------------------------------------------------------------------------------ */

/* A property the maps do not get: the driver's own Hadoop command line, whose -cmdenv values (a secret, say) reach
 * the maps as their environment. */
static bool driver_only(const char *key) { return !strcmp(key, "mr.streaming.args"); }

void kg_mr_task_line(kg_buf_t *out, const kg_mr_run_t *run, const kg_task_t *t) {
  const kg_props_t *props = run->config->props;
  kg_buf_appendf(out, "{\"task\":");
  kg_json_string(out, t->spec.task_id);
  kg_buf_appendf(out, ",\"index\":%d,\"jobId\":", t->spec.index);
  kg_json_string(out, run->job_id);
  kg_buf_appendf(out, ",\"jobDir\":");
  kg_json_string(out, run->job_dir);
  kg_buf_appendf(out, ",\"extractId\":");
  kg_json_string(out, run->extract_id);
  kg_buf_appendf(out, ",\"properties\":[");
  bool first = true;
  for (size_t i = 0; i < kg_props_count(props); i++) {
    const char *key = kg_props_key_at(props, i), *value = kg_props_value_at(props, i);
    if (driver_only(key) || kg_props_secret(props, key)) continue;
    const char *origin = kg_props_origin(props, key);
    kg_buf_append(out, first ? "[" : ",[", first ? 1 : 2);
    first = false;
    kg_json_string(out, key);
    kg_buf_append(out, ",", 1);
    kg_json_string(out, value);
    kg_buf_append(out, ",", 1);
    kg_json_string(out, origin ? origin : "");
    kg_buf_append(out, "]", 1);
  }
  kg_buf_appendf(out, "],\"secrets\":[");
  first = true;
  for (size_t i = 0; i < kg_props_count(props); i++) {
    const char *key = kg_props_key_at(props, i);
    if (driver_only(key) || !kg_props_secret(props, key)) continue;
    if (!first) kg_buf_append(out, ",", 1);
    first = false;
    kg_json_string(out, key);
  }
  kg_buf_appendf(out, "],\"units\":[");
  for (size_t u = 0; u < t->spec.nunits; u++) {
    if (u) kg_buf_append(out, ",", 1);
    kg_workunit_json(out, t->spec.units[u], true);
  }
  kg_buf_appendf(out, "]}\n");
}

/* A -cmdenv VAR=VALUE pair of mr.streaming.args (PAIR, may be NULL) whose variable names a secret: its value is
 * masked in whatever kingest prints, and a WARN says where Hadoop keeps it. */
static void cmdenv_secret(const kg_config_t *c, const char *pair) {
  const char *eq = pair ? strchr(pair, '=') : NULL;
  if (!eq) return;
  char *var = kg_xstrndup(pair, (size_t)(eq - pair));
  if (kg_props_is_secret(var, eq + 1)) {
    kg_secret_note(eq + 1);
    KG_WARN("%s: mr.streaming.args passes the secret %s to the maps with -cmdenv: Hadoop keeps -cmdenv pairs in the "
            "job's configuration (stream.addenvironment), which whoever may read the job's history reads; a secret "
            "the maps read from their own evaluation of the job file (${file:PATH} of a file on each node) is "
            "never shipped",
            kg_config_origin(c, "mr.streaming.args"), var);
  }
  free(var);
}

/* Writes the maps' input: a line per task (kg_mr_task_line). */
static int write_input(const kg_mr_run_t *run, const char *path, char *errbuf) {
  kg_buf_t text = {0};
  for (size_t i = 0; i < run->ntasks; i++)
    kg_mr_task_line(&text, run, &run->tasks[i]);
  char why[KG_ERRLEN];
  kg_fs_stream_t *out = NULL;
  char *dir = kg_xstrndup(path, (size_t)(strrchr(path, '/') - path));
  int rc = kg_fs_mkdirs(run->fs, dir, why);
  if (!rc) rc = kg_fs_create(run->fs, path, KG_FS_CREATE_NEW, &out, why);
  if (!rc) rc = kg_fs_stream_write(out, text.data, text.len, why);
  if (!rc) {
    rc = kg_fs_stream_close(out, why);
    out = NULL;
  }
  kg_fs_stream_abort(out);
  if (rc) kg_fail(errbuf, rc, "cannot write the maps' input %s: %s", path, why);
  free(dir);
  kg_buf_free(&text);
  return rc;
}

typedef struct {
  char **items;
  size_t count, cap;
} argv_t;

static void arg(argv_t *a, const char *s) {
  if (a->count + 2 > a->cap) {
    a->cap = a->cap ? a->cap * 2 : 32;
    a->items = kg_xrealloc(a->items, a->cap * sizeof *a->items);
  }
  a->items[a->count++] = kg_xstrdup(s);
  a->items[a->count] = NULL;
}

static void argf(argv_t *a, const char *fmt, const char *value) {
  char *s = kg_xasprintf(fmt, value);
  arg(a, s);
  free(s);
}

static void argv_free(argv_t *a) {
  for (size_t i = 0; i < a->count; i++)
    free(a->items[i]);
  free(a->items);
}

/* Properties of Gobblin's that a MapReduce run hands to the Hadoop job as they are. */
static const char *const passed_on[] = {"mapreduce.job.queuename",        "mapreduce.map.memory.mb",
                                        "mapreduce.map.java.opts",        "mapred.job.queue.name",
                                        "yarn.resourcemanager.principal", NULL};

/* Per-task progress while the job runs: the maps' `reporter:status:` lines, which YARN keeps as each task's
 * status, asked of the job's coordinator (the MapReduce REST API, behind the tracking URL) every
 * progress.interval.ms, and logged when they change. */
typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  bool done;
  char *tasks_url; /* <tracking URL>ws/v1/mapreduce/jobs/<job>/tasks once both are known */
  char *tracking;
  int64_t every_ms;
  kg_buf_t seen; /* the statuses logged last, one per line */
} poller_t;

static void poll_tasks(poller_t *p, const char *url) {
  static const char *const headers[] = {"Accept: application/json", NULL};
  kg_http_request_t req = {.url = url,
                           .headers = headers,
                           .answer = {.cap = 4 << 20},
                           .connect_timeout_ms = 2000,
                           .timeout_ms = 5000,
                           .max_redirects = 5, /* the proxy may redirect to the coordinator */
                           .any_status = true};
  kg_http_response_t resp = {0};
  char why[KG_ERRLEN];
  /* A failure is only logged: the progress lines are a courtesy, the job's own calls report the error. */
  kg_http_perform(NULL, &req, &resp, why);
  long status = resp.status;
  const kg_buf_t body = resp.body;
  kg_json_t *doc = NULL;
  char err[KG_ERRLEN];
  const kg_json_t *tasks = NULL, *list = NULL;
  if (status == 200 && body.len && !kg_json_parse(body.data, body.len, url, &doc, err) &&
      (tasks = kg_json_get(doc, "tasks")) && (list = kg_json_get(tasks, "task")) && list->type == KG_JSON_ARRAY) {
    kg_buf_t now = {0};
    for (size_t i = 0; i < list->count; i++) {
      const kg_json_t *state = kg_json_get(&list->items[i], "state");
      const kg_json_t *text = kg_json_get(&list->items[i], "status");
      if (!state || state->type != KG_JSON_STRING || strcmp(state->string, "RUNNING")) continue;
      if (!text || text->type != KG_JSON_STRING || strncmp(text->string, "task_", 5)) continue;
      size_t len = strlen(text->string);
      const char *suffix = " > map"; /* what YARN appends to a map's status */
      if (len > strlen(suffix) && !strcmp(text->string + len - strlen(suffix), suffix)) len -= strlen(suffix);
      kg_buf_appendf(&now, "%.*s\n", (int)len, text->string);
    }
    /* Each line that is new since the last poll. */
    for (char *line = now.data, *end; line && *line; line = end + 1) {
      end = strchr(line, '\n');
      *end = 0;
      bool old = p->seen.data && strstr(p->seen.data, line);
      if (!old) KG_INFO("Progress: %s", line);
      *end = '\n';
    }
    kg_buf_free(&p->seen);
    p->seen = now;
  } else if (status != 200) {
    KG_DEBUG("Progress of the Hadoop job: %s answered %s %ld", url,
             status          ? "HTTP"
             : resp.cause[0] ? resp.cause
                             : resp.error,
             status);
  }
  kg_json_free(doc);
  kg_http_response_free(&resp);
}

static void *poller(void *arg) {
  poller_t *p = arg;
  pthread_mutex_lock(&p->mutex);
  while (!p->done) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + (p->every_ms % 1000) * 1000000;
    until.tv_sec += (time_t)(p->every_ms / 1000 + ns / 1000000000);
    until.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(&p->cond, &p->mutex, &until);
    if (p->done || !p->tasks_url) continue;
    char *url = kg_xstrdup(p->tasks_url);
    pthread_mutex_unlock(&p->mutex);
    poll_tasks(p, url);
    free(url);
    pthread_mutex_lock(&p->mutex);
  }
  pthread_mutex_unlock(&p->mutex);
  return NULL;
}

/* Notes the tracking URL or the job id a client line names; once both are known, the poller starts asking. */
static void poller_note(poller_t *p, const char *line) {
  const char *t = strstr(line, "The url to track the job: "), *j = strstr(line, "Running job: ");
  if (!t && !j) return;
  pthread_mutex_lock(&p->mutex);
  if (t) {
    free(p->tracking);
    p->tracking = kg_xstrdup(t + strlen("The url to track the job: "));
  }
  if (j && p->tracking) {
    const char *slash = p->tracking[strlen(p->tracking) - 1] == '/' ? "" : "/";
    free(p->tasks_url);
    p->tasks_url = kg_xasprintf("%s%sws/v1/mapreduce/jobs/%s/tasks", p->tracking, slash, j + strlen("Running job: "));
  }
  pthread_mutex_unlock(&p->mutex);
}

/* What the driver keeps of the Hadoop client's output: its last lines (at most TAIL_LINES of TAIL_LINE_BYTES, shown
 * up to TAIL_BYTES), the last that reads as an error, and the ids and addresses it names. All owned. */
#define TAIL_LINES      20
#define TAIL_LINE_BYTES 1024
#define TAIL_BYTES      4096
typedef struct {
  char *tail[TAIL_LINES]; /* a ring: the oldest at tail_next once it is full */
  size_t tail_next, tail_count;
  char *last_error; /* the last line with ERROR, Exception, Error or failed, stack frames aside */
  char *rm;         /* where the ResourceManager was looked for */
  char *app_id;     /* application_..., once the job is submitted */
  char *job_id;     /* job_..., once it runs */
} client_t;

static void client_clear(client_t *cl) {
  for (size_t i = 0; i < TAIL_LINES; i++)
    free(cl->tail[i]);
  free(cl->last_error);
  free(cl->rm);
  free(cl->app_id);
  free(cl->job_id);
  memset(cl, 0, sizeof *cl);
}

static void replace(char **slot, const char *value, size_t len) {
  free(*slot);
  *slot = kg_xstrndup(value, len);
}

/* The line of the client's output that says best why it failed: its last error line, else its last line. */
static const char *client_essential(const client_t *cl) {
  if (cl->last_error) return cl->last_error;
  if (!cl->tail_count) return NULL;
  return cl->tail[(cl->tail_next + TAIL_LINES - 1) % TAIL_LINES];
}

/* Logs the client's last lines at ERROR, oldest first, at most TAIL_BYTES of them. */
static void client_log_tail(const client_t *cl, const char *command, int status) {
  size_t first = cl->tail_count < TAIL_LINES ? 0 : cl->tail_next, n = cl->tail_count, bytes = 0, skip = 0;
  for (size_t i = n; i > 0; i--) { /* from the newest back, while TAIL_BYTES holds them */
    bytes += strlen(cl->tail[(first + i - 1) % TAIL_LINES]) + 1;
    if (bytes > TAIL_BYTES) {
      skip = i;
      break;
    }
  }
  if (!n) {
    KG_ERROR("The Hadoop client %s exited %d and printed nothing", command, status);
    return;
  }
  if (n - skip == 1)
    KG_ERROR("The Hadoop client %s exited %d; its last line:", command, status);
  else
    KG_ERROR("The Hadoop client %s exited %d; its last %zu lines:", command, status, n - skip);
  for (size_t i = skip; i < n; i++)
    KG_ERROR("Hadoop client: %s", cl->tail[(first + i) % TAIL_LINES]);
}

/* Whether a line of the client's reads as the reason it fails: one that names an error, not a stack frame, nor the
 * lines Streaming ends every failure with. */
static bool says_why(const char *line) {
  const char *text = line + strspn(line, " \t");
  if (!strncmp(text, "at ", 3) || !strncmp(text, "... ", 4) || !strcmp(text, "Streaming Command Failed!") ||
      !strncmp(text, "Try -help", 9))
    return false;
  static const char *const words[] = {"error",   "exception", "failed",  "not found", "cannot",       "denied",
                                      "refused", "no such",   "unknown", "invalid",   "unrecognized", NULL};
  for (const char *const *w = words; *w; w++)
    if (strcasestr(line, *w)) return true;
  return false;
}

/* What the Hadoop client says as the job goes: the lines a user wants in the log at INFO, and what CL keeps. */
static void client_line(client_t *cl, const char *line) {
  const char *p;
  if ((p = strstr(line, "Submitted application ")))
    KG_INFO("Hadoop job: application %s", p + strlen("Submitted application "));
  else if ((p = strstr(line, "The url to track the job: ")))
    KG_INFO("Hadoop job: tracking URL %s", p + strlen("The url to track the job: "));
  else if ((p = strstr(line, "Running job: ")))
    KG_INFO("Hadoop job: %s running", p + strlen("Running job: "));
  else if ((p = strstr(line, " map ")) && strstr(line, "reduce "))
    KG_INFO("Hadoop job: map%s", p + 4);
  else if ((p = strstr(line, "Job ")) && (strstr(line, "completed successfully") || strstr(line, "failed with state")))
    KG_INFO("Hadoop job: %s", p);
  else if (strstr(line, "Task Id :") || strstr(line, "ERROR") || strstr(line, "Exception") ||
           strstr(line, "AttemptID:"))
    KG_WARN("Hadoop job: %s", line);
  else
    KG_DEBUG("Hadoop: %s", line);
  if ((p = strstr(line, "Submitted application "))) {
    p += strlen("Submitted application ");
    replace(&cl->app_id, p, strcspn(p, " \t"));
  }
  if ((p = strstr(line, "Running job: "))) {
    p += strlen("Running job: ");
    replace(&cl->job_id, p, strcspn(p, " \t"));
  }
  if ((p = strstr(line, "Connecting to ResourceManager at "))) {
    p += strlen("Connecting to ResourceManager at ");
    replace(&cl->rm, p, strlen(p));
  }
  if (says_why(line)) replace(&cl->last_error, line, strlen(line));
  size_t len = strlen(line);
  replace(&cl->tail[cl->tail_next], line, len < TAIL_LINE_BYTES ? len : TAIL_LINE_BYTES);
  cl->tail_next = (cl->tail_next + 1) % TAIL_LINES;
  if (cl->tail_count < TAIL_LINES) cl->tail_count++;
}

/* Starts ARGV in a process group of its own (so that a signal reaches a launcher script's java too), its stdout and
 * stderr into *FD, stdin /dev/null. */
static int spawn_reading(char **argv, pid_t *pid, int *fd, char *errbuf) {
  int fds[2];
  if (pipe(fds) != 0) return kg_fail(errbuf, KG_EIO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGTERM);
  sigaddset(&def, SIGINT);
  sigaddset(&def, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &def);
  int e = posix_spawn(pid, argv[0], &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (e) {
    close(fds[0]);
    return kg_fail(errbuf, KG_EIO, "cannot run %s: %s", argv[0], strerror(e));
  }
  *fd = fds[0];
  return KG_OK;
}

static int wait_status(pid_t pid) {
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
}

/* Waits up to WAIT_MS for output on FD and hands each whole line to ON_LINE (CTX, the line without its end; empty
 * lines are left out); at the end, or past 64 KB without a newline, what is there is a line too. PENDING keeps a
 * line's start between calls. Returns false once FD is at its end. */
static bool read_lines(int fd, kg_buf_t *pending, int wait_ms, void (*on_line)(void *, const char *), void *ctx) {
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  int ready = poll(&pfd, 1, wait_ms);
  if (ready < 0) return errno == EINTR;
  if (ready == 0) return true;
  char chunk[8192];
  ssize_t got = read(fd, chunk, sizeof chunk);
  bool eof = got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN);
  if (got > 0) kg_buf_append(pending, chunk, (size_t)got);
  size_t start = 0;
  for (size_t i = 0; i < pending->len; i++) {
    bool end = pending->data[i] == '\n';
    if (!end && !(i + 1 == pending->len && (eof || pending->len - start > 65536))) continue;
    size_t len = i - start + (end ? 0 : 1);
    char *line = kg_xstrndup(pending->data + start, len);
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
      line[--len] = 0;
    if (len) on_line(ctx, line);
    free(line);
    start = i + 1;
  }
  memmove(pending->data, pending->data + start, pending->len - start);
  pending->len -= start;
  return !eof;
}

/* What `job -kill` printed: whether it says the job was killed, and its last line. */
typedef struct {
  const char *hadoop;
  bool killed;
  char *last;
} kill_output_t;

static void on_kill_line(void *ctx, const char *line) {
  kill_output_t *k = ctx;
  KG_DEBUG("%s job -kill: %s", k->hadoop, line);
  if (strstr(line, "Killed job ")) k->killed = true;
  replace(&k->last, line, strlen(line));
}

/* How long the kill may take (the job client retries a ResourceManager that does not answer for much longer). */
#define KILL_WAIT_MS 60000

/* Kills the Hadoop job the client CL runs, with the same Hadoop command: `HADOOP job -kill JOB_ID`, which asks the
 * job's ApplicationMaster to kill its tasks and falls back on the ResourceManager (it goes through the client's own
 * configuration: the cluster's addresses, its ResourceManager failover, its Kerberos login). Returns once the
 * command has ended; true when it says the job was killed. */
static bool kill_job(const char *hadoop, const client_t *cl) {
  char *job_id = cl->job_id ? kg_xstrdup(cl->job_id) : kg_xasprintf("job_%s", cl->app_id + strlen("application_"));
  KG_INFO("Killing the Hadoop job %s (application %s) with %s job -kill", job_id, cl->app_id ? cl->app_id : "?",
          hadoop);
  char *argv[] = {(char *)hadoop, "job", "-kill", job_id, NULL};
  pid_t pid;
  int fd;
  char err[KG_ERRLEN];
  kill_output_t k = {.hadoop = hadoop};
  if (spawn_reading(argv, &pid, &fd, err)) {
    KG_WARN("%s", err);
  } else {
    kg_buf_t pending = {0};
    int64_t until = kg_mono_ms() + KILL_WAIT_MS;
    bool open = true;
    while (open && kg_mono_ms() < until)
      open = read_lines(fd, &pending, 200, on_kill_line, &k);
    if (open) {
      kill(-pid, SIGKILL);
      replace(&k.last, "no answer within 60 s", strlen("no answer within 60 s"));
    }
    kg_buf_free(&pending);
    close(fd);
    int status = wait_status(pid);
    k.killed = k.killed && status == 0;
    if (k.killed)
      KG_INFO("Killed the Hadoop job %s", job_id);
    else
      KG_WARN("Could not kill the Hadoop job %s (%s job -kill exited %d%s%s); it may still run: kill it with `yarn "
              "application -kill %s`; its output is not published either way",
              job_id, hadoop, status, k.last ? ": " : "", k.last ? k.last : "", cl->app_id ? cl->app_id : job_id);
    free(k.last);
  }
  free(job_id);
  return k.killed;
}

/* How long the driver waits, after a stop signal, for the client to name the application it submits, and then
 * for the client to end once the job is killed, before it stops the client itself. */
#define STOP_WAIT_SUBMIT_MS 30000
#define STOP_WAIT_CLIENT_MS 15000

/* A line of the Hadoop client's: logged and kept (client_line), and noted for the progress poller. */
typedef struct {
  client_t *cl;
  poller_t *poller; /* NULL when not polling */
} client_reader_t;

static void on_client_line(void *ctx, const char *line) {
  client_reader_t *r = ctx;
  client_line(r->cl, line);
  if (r->poller) poller_note(r->poller, line);
}

/* Runs ARGV (the Hadoop client), logging what it prints into CL; *STATUS is its exit status (128 + signal when
 * killed). On a stop signal the job is killed as soon as the client has named it (kill_job), then the client is
 * stopped, and *STOPPED is set. */
static int run_client(char **argv, int64_t every_ms, int *status, bool *stopped, client_t *cl, char *errbuf) {
  pid_t pid;
  int fd;
  int rc = spawn_reading(argv, &pid, &fd, errbuf);
  if (rc) return rc;
  kg_stop_also_signal(pid);
  poller_t p = {.mutex = PTHREAD_MUTEX_INITIALIZER, .every_ms = every_ms};
  pthread_cond_init(&p.cond, NULL);
  pthread_t thread;
  bool polling = every_ms > 0 && pthread_create(&thread, NULL, poller, &p) == 0;
  kg_buf_t pending = {0};
  int64_t stop_ms = 0, killed_ms = 0, termed_ms = 0;
  bool eof = false, sigkilled = false;
  client_reader_t reader = {.cl = cl, .poller = polling ? &p : NULL};
  while (!eof) {
    eof = !read_lines(fd, &pending, 200, on_client_line, &reader);
    /* A stop signal: the job is killed once the client has named it; then the client is stopped. */
    int64_t now = kg_mono_ms();
    if (kg_stop_signal() && !stop_ms) {
      stop_ms = now;
      *stopped = true;
      KG_INFO("Stopping: the Hadoop job is killed, and none of its output is published (the next run pulls the same "
              "records)");
    }
    if (stop_ms && !killed_ms && !eof) {
      if (cl->app_id || cl->job_id) {
        kill_job(argv[0], cl);
        killed_ms = kg_mono_ms();
      } else if (now - stop_ms > STOP_WAIT_SUBMIT_MS) {
        KG_WARN("The Hadoop client named no application within %d s of the stop signal: stopping it (a job it "
                "submitted all the same would run on, and its output would not be published)",
                STOP_WAIT_SUBMIT_MS / 1000);
        killed_ms = now - STOP_WAIT_CLIENT_MS;
      }
    }
    if (killed_ms && !termed_ms && !eof && kg_mono_ms() - killed_ms >= STOP_WAIT_CLIENT_MS) {
      kill(-pid, SIGTERM);
      termed_ms = kg_mono_ms();
    }
    if (termed_ms && !sigkilled && !eof && kg_mono_ms() - termed_ms >= 10000) {
      kill(-pid, SIGKILL);
      sigkilled = true;
    }
  }
  close(fd);
  kg_buf_free(&pending);
  if (polling) {
    pthread_mutex_lock(&p.mutex);
    p.done = true;
    pthread_cond_signal(&p.cond);
    pthread_mutex_unlock(&p.mutex);
    pthread_join(thread, NULL);
  }
  pthread_cond_destroy(&p.cond);
  free(p.tracking);
  free(p.tasks_url);
  kg_buf_free(&p.seen);
  *status = wait_status(pid);
  kg_stop_also_signal(0);
  return KG_OK;
}

/* Reads the result lines in the Hadoop job's output folder OUTPUT into the tasks' results. */
static int read_results(const kg_mr_run_t *run, const char *output, char *errbuf) {
  char **names = NULL;
  size_t count = 0;
  int rc = kg_fs_list(run->fs, output, &names, &count, errbuf);
  if (rc) return rc;
  size_t found = 0;
  for (size_t i = 0; i < count && !rc; i++) {
    if (strncmp(names[i], "part-", 5)) continue;
    char *path = kg_xasprintf("%s/%s", output, names[i]);
    kg_buf_t text = {0};
    rc = kg_fs_read(run->fs, path, &text, errbuf);
    char *line = text.data, *end;
    size_t lineno = 0;
    while (!rc && line && *line) {
      lineno++;
      end = strchr(line, '\n');
      if (end) *end = 0;
      const char *json = strstr(line, KG_MR_RESULT_MARK);
      if (json) {
        json += strlen(KG_MR_RESULT_MARK);
        char what[KG_ERRLEN];
        snprintf(what, sizeof what, "%s:%zu", path, lineno);
        kg_json_t *doc = NULL;
        const char *id = NULL;
        rc = kg_json_parse(json, strlen(json), what, &doc, errbuf);
        if (!rc) rc = kg_json_get_string(doc, "task", what, &id, errbuf);
        kg_task_t *t = NULL;
        for (size_t k = 0; !rc && k < run->ntasks && !t; k++)
          if (!strcmp(run->tasks[k].spec.task_id, id)) t = &run->tasks[k];
        if (!rc && !t)
          rc = kg_fail(errbuf, KG_EINVAL, "%s: a result of task %s, which this run does not have", what, id);
        if (!rc && (t->result.units || t->result.error[0]))
          rc = kg_fail(errbuf, KG_EINVAL, "%s: a second result of task %s", what, id);
        if (!rc) rc = kg_task_result_from_json(doc, t, what, errbuf);
        if (!rc) found++;
        kg_json_free(doc);
      }
      line = end ? end + 1 : NULL;
    }
    kg_buf_free(&text);
    free(path);
  }
  kg_fs_list_free(names, count);
  if (!rc && found < run->ntasks)
    for (size_t k = 0; k < run->ntasks; k++) {
      kg_task_t *t = &run->tasks[k];
      if (t->result.units) continue;
      t->result.succeeded = false;
      t->result.rc = KG_EIO;
      snprintf(t->result.error, sizeof t->result.error, "its map left no result in %s", output);
    }
  return rc;
}

/* ---- a Kerberized HDFS: the job's delegation token ---------------------------------------------------------- */

/* The alias of the delegation token in the job's credentials. */
#define TOKEN_ALIAS "kingest.webhdfs"

/* What the driver makes for a job on a Kerberized HDFS: a folder of its own (mode 700) with the ticket cache the
 * Hadoop client logs in with and the credentials file that carries the token to the maps. All owned. */
typedef struct {
  char *dir;       /* NULL: no Kerberos */
  char *ccache;    /* DIR/krb5cc */
  char *creds;     /* DIR/tokens */
  char *token;     /* the delegation token: a secret */
  char *old_cache; /* KRB5CCNAME before (the run's cache in memory) */
} job_token_t;

/* The short name of principal P ("kingest" of "kingest@R", "rm" of "rm/host@R"), a new string. */
static char *short_name(const char *p) { return kg_xstrndup(p, strcspn(p, "/@")); }

/* On a Kerberized HDFS: logs the Hadoop client in (the run's keytab into a ticket cache in a folder of its own,
 * which its environment names: KRB5CCNAME) and takes one delegation token (GETDELEGATIONTOKEN; renewer
 * yarn.resourcemanager.principal's short name, else the run's own), written to a Hadoop credentials file that the
 * job gets with -Dmapreduce.job.credentials.binary. YARN copies it into each container's token file
 * (HADOOP_TOKEN_FILE_LOCATION), readable by the job's user alone; the token never goes into the maps' input, the
 * job's configuration or its command line, and the keytab never leaves this machine. */
static int token_setup(const kg_mr_run_t *run, job_token_t *t, char *errbuf) {
  memset(t, 0, sizeof *t);
  if (!kg_fs_webhdfs_kerberos(run->fs)) return KG_OK;
  const char *tmp = getenv("TMPDIR");
  char *dir = kg_xasprintf("%s/kingest-mr-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    int e = errno;
    free(dir);
    return kg_fail(errbuf, KG_EIO, "cannot make a private folder for the Hadoop job's Kerberos login: %s", strerror(e));
  }
  t->dir = dir;
  t->ccache = kg_xasprintf("%s/krb5cc", dir);
  t->creds = kg_xasprintf("%s/tokens", dir);
  const char *old = getenv("KRB5CCNAME");
  t->old_cache = old ? kg_xstrdup(old) : NULL;
  char *cache = kg_xasprintf("FILE:%s", t->ccache);
  setenv("KRB5CCNAME", cache, 1); /* where the SPNEGO below puts the ticket it takes from the keytab */
  free(cache);
  const char *rm = kg_props_get(run->config->props, "yarn.resourcemanager.principal");
  char *renewer = short_name(rm && *rm ? rm : kg_fs_webhdfs_principal(run->fs));
  int rc = kg_fs_webhdfs_get_token(run->fs, renewer, &t->token, errbuf);
  kg_buf_t file = {0};
  if (!rc) rc = kg_hadoop_creds_build(TOKEN_ALIAS, t->token, &file, errbuf);
  if (!rc) {
    int fd = open(t->creds, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, file.data, file.len) == (ssize_t)file.len;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (!ok)
      rc = kg_fail(errbuf, KG_EIO, "cannot write the Hadoop job's credentials %s: %s", t->creds, strerror(errno));
  }
  if (file.data) memset(file.data, 0, file.len);
  kg_buf_free(&file);
  if (!rc)
    KG_INFO("Took a delegation token of %s (renewer %s) for the Hadoop job; the maps get it in the job's credentials",
            kg_fs_webhdfs_principal(run->fs), renewer);
  free(renewer);
  return rc;
}

/* Cancels the token (the job is over, whatever its end), removes the folder and gives the run its own ticket cache
 * back. */
static void token_teardown(const kg_mr_run_t *run, job_token_t *t) {
  if (!t->dir) return;
  if (t->token) {
    char why[KG_ERRLEN];
    if (!kg_fs_webhdfs_cancel_token(run->fs, t->token, why))
      KG_INFO("Cancelled the Hadoop job's delegation token");
    else if (strstr(why, "Token not found")) /* the NameNode's InvalidToken of a token it no longer has */
      KG_INFO("The Hadoop job's delegation token was cancelled already (YARN cancels a job's tokens once it has "
              "ended)");
    else
      KG_WARN("%s (it expires by itself)", why);
    memset(t->token, 0, strlen(t->token));
    free(t->token);
  }
  unlink(t->creds);
  unlink(t->ccache);
  rmdir(t->dir);
  if (t->old_cache)
    setenv("KRB5CCNAME", t->old_cache, 1);
  else
    unsetenv("KRB5CCNAME");
  free(t->old_cache);
  free(t->creds);
  free(t->ccache);
  free(t->dir);
  memset(t, 0, sizeof *t);
}

static void fail_all(const kg_mr_run_t *run, int rc, const char *error) {
  for (size_t k = 0; k < run->ntasks; k++) {
    kg_task_result_t *r = &run->tasks[k].result;
    if (r->units) continue; /* a result was read: kg_task_result_from_json filled it */
    r->succeeded = false;
    r->rc = rc;
    snprintf(r->error, sizeof r->error, "%s", error);
  }
}

int kg_mr_run(const kg_mr_run_t *run, bool *stopped, char *errbuf) {
  const kg_config_t *c = run->config;
  *stopped = false;
  if (kg_stop_signal()) { /* before anything was submitted */
    *stopped = true;
    fail_all(run, KG_EFAILED, "stopped before the Hadoop job was submitted");
    return KG_OK;
  }
  char *input = kg_xasprintf("%s/input/tasks.txt", run->job_dir);
  char *output = kg_xasprintf("%s/output", run->job_dir);
  char *hadoop = NULL, *jar = NULL, *self = kingest_path(c);
  char tried[PATH_MAX + 64];
  argv_t a = {0};
  job_token_t tok;
  int rc = token_setup(run, &tok, errbuf);
  if (!rc) rc = write_input(run, input, errbuf);
  const kg_mr_options_t *mr = kg_mr_options(c);
  if (!rc && !(hadoop = find_command(mr->hadoop, tried, sizeof tried)))
    rc = kg_fail(errbuf, KG_EINVAL, "mr.hadoop.command=%s was not found (looked in %s)", mr->hadoop, tried);
  if (!rc && !(jar = find_streaming_jar(c, errbuf))) rc = KG_EINVAL;
  if (!rc) {
    char job_file[PATH_MAX];
    if (!realpath(c->job_file, job_file)) snprintf(job_file, sizeof job_file, "%s", c->job_file);
    const char *base = strrchr(job_file, '/') ? strrchr(job_file, '/') + 1 : job_file;
    char n[32];
    arg(&a, hadoop);
    arg(&a, "jar");
    arg(&a, jar);
    argf(&a, "-Dmapreduce.job.name=kingest %s", run->job_id);
    arg(&a, "-Dmapreduce.job.reduces=0");
    arg(&a, "-Dmapreduce.map.speculative=false");
    arg(&a, "-Dmapreduce.input.lineinputformat.linespermap=1");
    snprintf(n, sizeof n, "%d", mr->attempts);
    argf(&a, "-Dmapreduce.map.maxattempts=%s", n);
    if (tok.creds) {
      argf(&a, "-Dmapreduce.job.credentials.binary=%s", tok.creds);
      /* Hadoop drops the property above from the job's configuration once it has read the file: the file's path
       * (not the token) under a name of kingest's, for maps that run on this machine (the local job runner). */
      argf(&a, "-Dkingest.job.credentials=%s", tok.creds);
    }
    for (const char *const *p = passed_on; *p; p++) {
      const char *v = kg_props_get(c->props, *p);
      if (!v || !*v) continue;
      char *kv = kg_xasprintf("-D%s=%s", *p, v);
      arg(&a, kv);
      free(kv);
    }
    /* Generic options go first; a -cmdenv VAR=VALUE pair, Streaming's own, after the input and output. */
    argv_t env = {0};
    char *extra = kg_xstrdup(mr->args ? mr->args : ""), *save = NULL;
    for (char *w = strtok_r(extra, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
      if (!strcmp(w, "-cmdenv")) {
        char *value = strtok_r(NULL, " \t", &save);
        arg(&env, w);
        if (value) arg(&env, value);
        cmdenv_secret(c, value);
      } else {
        arg(&a, w);
      }
    }
    free(extra);
    arg(&a, "-files");
    arg(&a, job_file);
    arg(&a, "-inputformat");
    arg(&a, "org.apache.hadoop.mapred.lib.NLineInputFormat");
    arg(&a, "-input");
    arg(&a, input);
    arg(&a, "-output");
    arg(&a, output);
    char *mapper = kg_xasprintf("%s run-task %s", self, base);
    arg(&a, "-mapper");
    arg(&a, mapper);
    free(mapper);
    for (size_t i = 0; i < env.count; i++)
      arg(&a, env.items[i]);
    argv_free(&env);
    /* The maps find kingest's Lua library where this process does; a test's fault injection goes along. */
    static const char *const forwarded[] = {"KINGEST_LUA_PATH", "KINGEST_MAP_CRASH_AT", NULL};
    for (const char *const *f = forwarded; *f; f++) {
      const char *v = getenv(*f);
      if (!v || !*v) continue;
      char *kv = kg_xasprintf("%s=%s", *f, v);
      arg(&a, "-cmdenv");
      arg(&a, kv);
      free(kv);
    }
    KG_INFO("Submitting %zu tasks as a Hadoop Streaming job (%s, one map per task, input %s)", run->ntasks, jar, input);
    int status = 0;
    client_t cl = {0};
    rc = run_client(a.items, c->progress_interval_ms, &status, stopped, &cl, errbuf);
    bool success = false;
    if (!rc) {
      char *marker = kg_xasprintf("%s/_SUCCESS", output);
      char why[KG_ERRLEN];
      if (kg_fs_exists(run->fs, marker, &success, why)) success = false;
      free(marker);
    }
    /* A job that finished before the stop signal could kill it is read and committed as any other. */
    if (!rc && success) *stopped = false;
    if (!rc && *stopped) {
      fail_all(run, KG_EFAILED, "stopped: the Hadoop job was killed before it finished");
    } else if (!rc && (status != 0 || !success)) {
      client_log_tail(&cl, hadoop, status);
      const char *essential = client_essential(&cl);
      rc = kg_fail(errbuf, KG_EIO, "the Hadoop job of %s failed (%s exited %d%s)%s%.600s%s%s%s", run->job_id, hadoop,
                   status, status == 0 ? " without _SUCCESS in its output" : "", essential ? ": " : "",
                   essential ? essential : "", cl.rm ? " (ResourceManager at " : "", cl.rm ? cl.rm : "",
                   cl.rm ? ")" : "");
    }
    if (!rc && !*stopped) rc = read_results(run, output, errbuf);
    for (size_t k = 0; !rc && !*stopped && k < run->ntasks; k++)
      if (!run->tasks[k].result.succeeded)
        KG_ERROR("Task %s failed in its map: %s", run->tasks[k].spec.task_id, run->tasks[k].result.error);
    client_clear(&cl);
  }
  token_teardown(run, &tok);
  if (rc) fail_all(run, rc, errbuf);
  argv_free(&a);
  free(self);
  free(jar);
  free(hadoop);
  free(output);
  free(input);
  return rc;
}

/* ---- inside a map ---------------------------------------------------------------------------------------- */

static bool listed(const kg_json_t *names, const char *key) {
  for (size_t i = 0; i < names->count; i++)
    if (names->items[i].type == KG_JSON_STRING && !strcmp(names->items[i].string, key)) return true;
  return false;
}

static void name(kg_buf_t *list, const char *key) {
  if (list->len) kg_buf_append(list, ", ", 2);
  kg_buf_appendf(list, "%s", key);
}

int kg_mr_task_props(const kg_json_t *line, const kg_props_t *own, kg_props_t **out, kg_buf_t *differ,
                     kg_buf_t *missing, char *errbuf) {
  *out = NULL;
  const kg_json_t *shipped = kg_json_get(line, "properties"), *secrets = kg_json_get(line, "secrets");
  if (!shipped || shipped->type != KG_JSON_ARRAY || !secrets || secrets->type != KG_JSON_ARRAY)
    return kg_fail(errbuf, KG_EINVAL,
                   "the task line has no \"properties\" and \"secrets\" arrays: the driver that wrote it ships no "
                   "properties (is mr.kingest.path the same kingest as the driver's?)");
  kg_props_t *props = kg_props_new();
  for (size_t i = 0; i < shipped->count; i++) {
    const kg_json_t *p = &shipped->items[i];
    if (p->type != KG_JSON_ARRAY || p->count != 3 || p->items[0].type != KG_JSON_STRING ||
        p->items[1].type != KG_JSON_STRING || p->items[2].type != KG_JSON_STRING) {
      kg_props_destroy(props);
      return kg_fail(errbuf, KG_EINVAL, "the task line's properties[%zu] is not [name, value, origin]", i);
    }
    kg_props_set(props, p->items[0].string, p->items[1].string, *p->items[2].string ? p->items[2].string : NULL);
  }
  for (size_t i = 0; i < secrets->count; i++) {
    if (secrets->items[i].type != KG_JSON_STRING) {
      kg_props_destroy(props);
      return kg_fail(errbuf, KG_EINVAL, "the task line's secrets[%zu] is not a property name", i);
    }
    const char *key = secrets->items[i].string;
    if (own && kg_props_has(own, key))
      kg_props_set_secret(props, key, kg_props_get(own, key), kg_props_origin(own, key));
    else
      name(missing, key);
  }
  /* What the map's own evaluation has otherwise: names only (a value may be a secret by its form). */
  for (size_t i = 0; own && i < kg_props_count(own); i++) {
    const char *key = kg_props_key_at(own, i);
    if (driver_only(key) || listed(secrets, key)) continue;
    const char *driver = kg_props_get(props, key);
    if (!driver || strcmp(driver, kg_props_value_at(own, i))) name(differ, key);
  }
  for (size_t i = 0; own && i < shipped->count; i++) {
    const char *key = shipped->items[i].items[0].string, *origin = shipped->items[i].items[2].string;
    if (!kg_props_has(own, key) && strncmp(origin, "--", 2)) name(differ, key); /* --strict is the driver's */
  }
  *out = props;
  return KG_OK;
}

/* On a Kerberized HDFS, a map authenticates with the job's delegation token, from the job's credentials: the
 * container's token file (HADOOP_TOKEN_FILE_LOCATION, on YARN), else the driver's credentials file, whose path the
 * job's configuration has as kingest.job.credentials (Streaming puts it in a map's environment; the file is there
 * for the maps of Hadoop's local job runner, on the driver's machine). Never with a keytab. */
static int map_token(const kg_config_t *c, char *errbuf) {
  const kg_webhdfs_options_t *o = kg_webhdfs_options(c);
  const char *property = NULL, *uri = kg_fs_writer_uri(c, &property);
  bool kerberos = (o && o->auth == KG_WEBHDFS_AUTH_KERBEROS) || strstr(uri, "auth=kerberos");
  if (!kerberos || strstr(uri, "auth=simple")) return KG_OK;
  const char *path = getenv("HADOOP_TOKEN_FILE_LOCATION"), *from = "HADOOP_TOKEN_FILE_LOCATION";
  if (!path || !*path) {
    path = getenv("kingest_job_credentials");
    from = "kingest.job.credentials";
  }
  if (!path || !*path)
    return kg_fail(
        errbuf, KG_EINVAL,
        "hadoop.security.authentication=kerberos: this map has no job credentials "
        "(HADOOP_TOKEN_FILE_LOCATION is not set), so no delegation token: a map never logs in with a keytab");
  size_t len = 0;
  int error = 0;
  char *data = kg_read_file(path, &len, &error);
  if (!data)
    return kg_fail(errbuf, KG_EIO, "cannot read the job's credentials %s (%s): %s", path, from,
                   strerror(error > 0 ? error : EIO));
  char *token = NULL;
  int rc = kg_hadoop_creds_find(data, len, path, TOKEN_ALIAS, &token, NULL, errbuf);
  memset(data, 0, len);
  free(data);
  if (rc) return rc;
  kg_fs_webhdfs_use_token(token);
  memset(token, 0, strlen(token));
  free(token);
  KG_INFO("Authenticating to HDFS with the job's delegation token, from the job's credentials %s (%s)", path, from);
  return KG_OK;
}

/* Fills T's result as a task that did not run: failed with RC and WHY, each unit where it started. */
static void not_run(kg_task_t *t, int rc, const char *why) {
  t->result.succeeded = false;
  t->result.rc = rc;
  snprintf(t->result.error, sizeof t->result.error, "%s", why);
  t->result.units = kg_xcalloc(t->spec.nunits ? t->spec.nunits : 1, sizeof(kg_unit_result_t));
  for (size_t u = 0; u < t->spec.nunits; u++)
    t->result.units[u].actual_high = t->spec.units[u]->low;
}

/* Runs the task of one input line. KG_OK once its result is printed; an error when the line is not a task line or
 * stdout cannot be written. */
static int run_line(const kg_mr_map_t *map, const char *line, const char *attempt, char *errbuf) {
  const char *json = strchr(line, '{'); /* after the byte offset NLineInputFormat puts first */
  if (!json) return kg_fail(errbuf, KG_EINVAL, "a task line without a task: %.80s", line);
  kg_json_t *doc = NULL;
  int rc = kg_json_parse(json, strlen(json), "the task line", &doc, errbuf);
  const char *task_id = NULL, *job_id = NULL, *job_dir = NULL, *extract_id = NULL;
  int64_t index = 0;
  if (!rc) rc = kg_json_get_string(doc, "task", "the task line", &task_id, errbuf);
  if (!rc) rc = kg_json_get_int(doc, "index", "the task line", &index, errbuf);
  if (!rc) rc = kg_json_get_string(doc, "jobId", "the task line", &job_id, errbuf);
  if (!rc) rc = kg_json_get_string(doc, "jobDir", "the task line", &job_dir, errbuf);
  if (!rc) rc = kg_json_get_string(doc, "extractId", "the task line", &extract_id, errbuf);
  const kg_json_t *units = rc ? NULL : kg_json_get(doc, "units");
  if (!rc && (!units || units->type != KG_JSON_ARRAY))
    rc = kg_fail(errbuf, KG_EINVAL, "the task line of %s has no \"units\" array", task_id);
  size_t nunits = units ? units->count : 0;
  kg_workunit_t *wus = kg_xcalloc(nunits ? nunits : 1, sizeof *wus);
  for (size_t u = 0; !rc && u < nunits; u++)
    rc = kg_workunit_from_json(&units->items[u], "the task line", &wus[u], errbuf);
  kg_props_t *props = NULL;
  kg_buf_t differ = {0}, missing = {0};
  if (!rc) rc = kg_mr_task_props(doc, map->own, &props, &differ, &missing, errbuf);
  if (rc) {
    for (size_t u = 0; u < nunits; u++)
      kg_workunit_clear(&wus[u]);
    free(wus);
    kg_json_free(doc);
    return rc;
  }
  char *dir = kg_xasprintf("%s/attempts/%s", job_dir, attempt);
  kg_task_t task = {0};
  task.spec = (kg_task_spec_t){.index = (int)index,
                               .task_id = kg_xstrdup(task_id),
                               .units = kg_xcalloc(nunits ? nunits : 1, sizeof(kg_workunit_t *)),
                               .nunits = nunits,
                               .job_dir = dir,
                               .extract_id = extract_id};
  for (size_t u = 0; u < nunits; u++)
    task.spec.units[u] = &wus[u];
  KG_INFO("Task %s of %s (attempt %s): %zu work units, task data in %s", task_id, job_id, attempt, nunits, dir);
  if (!map->own)
    KG_WARN("This map cannot evaluate the job file (%s): the task runs on the driver's properties", map->own_error);
  if (differ.len)
    KG_INFO("The job file %s gives these properties otherwise in this map than in the driver: %s; the task runs on "
            "the driver's values",
            map->job_file, differ.data);

  /* The driver's properties, with the map's secrets, make the task's configuration; what cannot be had here fails
   * the task, as a result the driver reads. */
  char why[KG_ERRLEN] = "";
  int why_rc = KG_OK;
  kg_config_t *c = NULL;
  kg_fs_t *fs = NULL;
  const kg_writer_ops_t *writer = NULL;
  if (missing.len) {
    why_rc =
        kg_fail(why, KG_EINVAL,
                "%s %s set in the driver but not in this map's evaluation of %s%s%s%s: a secret is never shipped "
                "with the task, so the map must have it itself: give it a value the job file has on every node "
                "(in the file, or a file it reads there with ${file:PATH}), or, for a value the job reads from the "
                "environment, pass the variable with -cmdenv VAR=VALUE in mr.streaming.args (which Hadoop keeps "
                "in the job's configuration)",
                missing.data, strchr(missing.data, ',') ? "are" : "is", map->job_file, map->own ? "" : " (",
                map->own ? "" : map->own_error, map->own ? "" : ")");
    kg_props_destroy(props);
  } else {
    why_rc = kg_config_new(props, map->job_file, map->job_is_lua, map->work_dir, &c, why);
    if (!why_rc && !map->log_format_set) kg_log_set_format((kg_log_format_t)c->log_format);
    const char *fs_property = NULL;
    if (!why_rc) why_rc = map_token(c, why);
    if (!why_rc) why_rc = kg_fs_open_config(kg_fs_writer_uri(c, &fs_property), fs_property, c, &fs, why);
    if (!why_rc)
      why_rc = kg_writer_find(kg_props_get(c->props, "writer.builder.class"), c->output_format, &writer, why);
  }
  task.spec.config = c;
  task.spec.fs = fs;
  task.spec.writer = writer;
  if (why_rc) {
    not_run(&task, why_rc, why);
  } else {
    /* An attempt id is never used twice, but a folder left by a crashed test run of the same id would be in the
     * way. */
    char ignored[KG_ERRLEN];
    kg_fs_remove_tree(fs, dir, ignored);
    kg_executor_t x = {.config = c,
                       .tasks = &task,
                       .ntasks = 1,
                       .state = NULL,
                       .job_id = job_id,
                       .job_dir = dir,
                       .fs = fs,
                       .report = NULL,
                       .hadoop_status = true,
                       .status_every_ms = 10000};
    kg_executor_run(&x);
  }
  kg_buf_t out = {0};
  kg_buf_append(&out, KG_MR_RESULT_MARK, strlen(KG_MR_RESULT_MARK));
  kg_task_result_json(&out, &task);
  kg_buf_append(&out, "\n", 1);
  fwrite(out.data, 1, out.len, stdout);
  fflush(stdout);
  if (task.result.succeeded)
    KG_INFO("Task %s succeeded: %lld records written", task_id,
            (long long)kg_metrics_get(&task.result.metrics, KG_M_RECORDS_WRITTEN));
  else
    KG_ERROR("Task %s failed: %s", task_id, task.result.error);
  kg_buf_free(&out);
  kg_task_clear(&task);
  for (size_t u = 0; u < nunits; u++)
    kg_workunit_clear(&wus[u]);
  free(wus);
  free(dir);
  kg_fs_close(fs);
  kg_config_destroy(c);
  kg_buf_free(&differ);
  kg_buf_free(&missing);
  kg_json_free(doc);
  return ferror(stdout) ? kg_fail(errbuf, KG_EIO, "cannot write the result to stdout") : KG_OK;
}

int kg_mr_run_task(const kg_mr_map_t *map, char *errbuf) {
  const char *attempt = getenv("mapreduce_task_attempt_id");
  if (!attempt || !*attempt) attempt = "attempt_local";
  /* Fault injection for tests: KINGEST_MAP_CRASH_AT is KINGEST_CRASH_AT for the first attempt of each map only, so
   * that the attempt YARN makes next succeeds. */
  const char *crash = getenv("KINGEST_MAP_CRASH_AT");
  size_t alen = strlen(attempt);
  if (crash && *crash && alen > 2 && !strcmp(attempt + alen - 2, "_0")) setenv("KINGEST_CRASH_AT", crash, 1);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  size_t lines = 0;
  int rc = KG_OK;
  while (!rc && (n = getline(&line, &cap, stdin)) > 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = 0;
    if (!n) continue;
    lines++;
    rc = run_line(map, line, attempt, errbuf);
    kg_crash_point("map");
  }
  free(line);
  if (!rc && !lines) rc = kg_fail(errbuf, KG_EINVAL, "run-task: no task line on stdin");
  return rc;
}

/* ---- the Hadoop launcher's properties ------------------------------------------------------------------------ */

#define KG_FIELD(f) KG_FIELD_OF(kg_mr_options_t, f)

/* What the driver runs Hadoop with, read after launcher.type; then the MapReduce-only rows, which a standalone run
 * accepts and ignores (the driver reads them from the job's properties: mr.job.root.dir, and the Hadoop job's own
 * settings it passes on). */
static const kg_property_t rows[] = {
    {.name = "mr.hadoop.command",
     .type = KG_PROP_STRING,
     .def = "hadoop",
     KG_FIELD(hadoop),
     .doc = "The command that runs Hadoop's `jar` subcommand (`hadoop jar JAR ARGS`), looked up in PATH."},
    {.name = "mr.streaming.jar",
     .type = KG_PROP_STRING,
     .def_doc = "hadoop-streaming-*.jar under $HADOOP_HOME/share/hadoop/tools/lib",
     KG_FIELD(streaming_jar),
     .doc = "The Hadoop Streaming jar the job is submitted with."},
    {.name = "mr.kingest.path",
     .type = KG_PROP_STRING,
     .def_doc = "this kingest's own path",
     KG_FIELD(kingest),
     .doc = "Where each node finds the kingest binary the maps run (installed there, with the libraries it "
            "needs)."},
    {.name = "mr.map.max.attempts",
     .type = KG_PROP_INT,
     .def = "4",
     .min = 1,
     .max = 100,
     KG_FIELD(attempts),
     .doc = "Attempts YARN makes at each map (`mapreduce.map.maxattempts`); a failed or killed attempt's files are "
            "never published."},
    {.name = "mr.streaming.args",
     .type = KG_PROP_STRING,
     .def = "",
     KG_FIELD(args),
     .doc = "More arguments for Hadoop Streaming, split at spaces: generic options, placed before kingest's own "
            "(`-D mapreduce.job.priority=HIGH -libjars ...`), and `-cmdenv VAR=VALUE` pairs, which set a variable "
            "in the maps' environment (one a .pull file's `${env:VAR}` needs, say)."},

    /* MapReduce only: a standalone run accepts and ignores them. */
    {.name = "mr.job.root.dir",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "With `launcher.type=MAPREDUCE`, needed: the folder on the writer's HDFS (`writer.fs.uri`) under which "
            "each run keeps `<job>/<jobId>/`: the maps' input, the Hadoop job's output, and each map attempt's task "
            "data."},
    {.name = "mr.job.lock.dir", .mode = KG_MODE_MAPREDUCE, .doc = "Lock folder of MapReduce runs."},
    {.name = "mr.include.task.counters", .mode = KG_MODE_MAPREDUCE, .doc = "MapReduce counters per task."},
    {.name = "mr.job.max.mappers.per.node", .mode = KG_MODE_MAPREDUCE, .doc = "MapReduce mapper spread."},
    {.name = "mapreduce.job.queuename", .mode = KG_MODE_MAPREDUCE, .doc = "YARN queue: passed to the Hadoop job."},
    {.name = "mapreduce.map.memory.mb",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "Map container memory: passed to the Hadoop job."},
    {.name = "mapreduce.map.java.opts", .mode = KG_MODE_MAPREDUCE, .doc = "Map JVM options: passed to the Hadoop job."},
    {.name = "yarn.resourcemanager.principal",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "On a Kerberized HDFS: the ResourceManager's principal (as the cluster's yarn-site.xml has it), whose "
            "short name renews the job's delegation token (without it, `kerberos.principal`'s short name does); "
            "passed to the Hadoop job ([The Hadoop mode on a Kerberized "
            "cluster](#the-hadoop-mode-on-a-kerberized-cluster))."},
    {.name = "mapred.job.queue.name",
     .mode = KG_MODE_MAPREDUCE,
     .doc = "YARN queue (old name): passed to the Hadoop job."},
};

const kg_config_section_t kg_mr_section = {
    .name = "mapreduce", .rows = rows, .nrows = sizeof rows / sizeof rows[0], .size = sizeof(kg_mr_options_t)};

const kg_mr_options_t *kg_mr_options(const kg_config_t *config) { return kg_config_options(config, &kg_mr_section); }
