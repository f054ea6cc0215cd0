/* mapreduce.c: the execute phase as a map-only Hadoop Streaming job (mapreduce.h). */
#include "mapreduce.h"

#include "curl_api.h"
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
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

#include "executor.h"
#include "json.h"
#include "result.h"
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
static char *find_streaming_jar(const kg_config_t *c, char *errbuf) {
  if (c->mr_streaming_jar && *c->mr_streaming_jar) {
    if (access(c->mr_streaming_jar, R_OK) == 0) return kg_xstrdup(c->mr_streaming_jar);
    kg_fail(errbuf, KG_EINVAL, "mr.streaming.jar=%s: cannot read it: %s", c->mr_streaming_jar, strerror(errno));
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
    kg_fail(errbuf, KG_EINVAL, "launcher.type=MAPREDUCE: no Hadoop Streaming jar at %s (from HADOOP_HOME); set "
                               "mr.streaming.jar",
            pattern);
  globfree(&g);
  free(pattern);
  return jar;
}

/* The kingest the maps run: mr.kingest.path, else this one. */
static char *kingest_path(const kg_config_t *c) {
  if (c->mr_kingest && *c->mr_kingest) return kg_xstrdup(c->mr_kingest);
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
    return kg_fail(errbuf, KG_EINVAL,
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
  char *hadoop = find_command(c->mr_hadoop, tried, sizeof tried);
  if (!hadoop)
    return kg_fail(errbuf, KG_EINVAL,
                   "launcher.type=MAPREDUCE: no Hadoop command: mr.hadoop.command=%s was not found (looked in %s); "
                   "install Hadoop's client or set mr.hadoop.command",
                   c->mr_hadoop, tried);
  free(hadoop);
  char *jar = find_streaming_jar(c, errbuf);
  if (!jar) return KG_EINVAL;
  free(jar);
  return KG_OK;
}

/* ---- the driver ------------------------------------------------------------------------------------------ */

/* Writes the maps' input: a line per task, {"task", "index", "jobId", "jobDir", "extractId", "units": [...]}. */
static int write_input(const kg_mr_run_t *run, const char *path, char *errbuf) {
  kg_buf_t text = {0};
  for (size_t i = 0; i < run->ntasks; i++) {
    const kg_task_t *t = &run->tasks[i];
    kg_buf_appendf(&text, "{\"task\":");
    kg_json_string(&text, t->spec.task_id);
    kg_buf_appendf(&text, ",\"index\":%d,\"jobId\":", t->spec.index);
    kg_json_string(&text, run->job_id);
    kg_buf_appendf(&text, ",\"jobDir\":");
    kg_json_string(&text, run->job_dir);
    kg_buf_appendf(&text, ",\"extractId\":");
    kg_json_string(&text, run->extract_id);
    kg_buf_appendf(&text, ",\"units\":[");
    for (size_t u = 0; u < t->spec.nunits; u++) {
      if (u) kg_buf_append(&text, ",", 1);
      kg_workunit_json(&text, t->spec.units[u], true);
    }
    kg_buf_appendf(&text, "]}\n");
  }
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
static const char *const passed_on[] = {"mapreduce.job.queuename", "mapreduce.map.memory.mb", "mapreduce.map.java.opts",
                                        "mapred.job.queue.name", NULL};

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

static size_t on_answer(char *data, size_t size, size_t n, void *userdata) {
  kg_buf_t *body = userdata;
  if (body->len + size * n > (4u << 20)) return 0;
  kg_buf_append(body, data, size * n);
  return size * n;
}

static void poll_tasks(poller_t *p, const char *url) {
  char why[KG_ERRLEN];
  if (kg_curl_load(why)) return; /* the progress lines are a courtesy: the job's own calls report the error */
  CURL *curl = curl_easy_init();
  if (!curl) return;
  kg_buf_t body = {0};
  struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_answer);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L); /* the proxy may redirect to the coordinator */
  long status = 0;
  CURLcode cc = curl_easy_perform(curl);
  if (cc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  kg_json_t *doc = NULL;
  char err[KG_ERRLEN];
  const kg_json_t *tasks = NULL, *list = NULL;
  if (cc == CURLE_OK && status == 200 && body.len && !kg_json_parse(body.data, body.len, url, &doc, err) &&
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
  } else if (cc != CURLE_OK || status != 200) {
    KG_DEBUG("Progress of the Hadoop job: %s answered %s %ld", url, cc == CURLE_OK ? "HTTP" : curl_easy_strerror(cc),
             status);
  }
  kg_json_free(doc);
  kg_buf_free(&body);
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

/* What the Hadoop client says as the job goes: the lines a user wants in the log, at INFO. */
static void log_client_line(const char *line, char **last, char **rm) {
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
  /* For the error of a job that fails: its last error line, and where the ResourceManager was looked for. */
  if (strstr(line, "ERROR") || strstr(line, "Exception") || strstr(line, "failed") || strstr(line, "Error")) {
    free(*last);
    *last = kg_xstrdup(line);
  }
  if ((p = strstr(line, "Connecting to ResourceManager at "))) {
    free(*rm);
    *rm = kg_xstrdup(p + strlen("Connecting to ResourceManager at "));
  }
}

/* Runs ARGV, logging what it prints; *STATUS is its exit status (128 + signal when killed). */
static int run_client(char **argv, int64_t every_ms, int *status, char *errbuf, char *last_error,
                      size_t last_error_size) {
  int fds[2];
  if (pipe(fds) != 0) return kg_fail(errbuf, KG_EIO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (e) {
    close(fds[0]);
    return kg_fail(errbuf, KG_EIO, "cannot run %s: %s", argv[0], strerror(e));
  }
  FILE *in = fdopen(fds[0], "r");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  char *last = NULL, *rm = NULL;
  poller_t p = {.mutex = PTHREAD_MUTEX_INITIALIZER, .every_ms = every_ms};
  pthread_cond_init(&p.cond, NULL);
  pthread_t thread;
  bool polling = every_ms > 0 && pthread_create(&thread, NULL, poller, &p) == 0;
  while ((n = getline(&line, &cap, in)) > 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = 0;
    if (!n) continue;
    log_client_line(line, &last, &rm);
    if (polling) poller_note(&p, line);
  }
  free(line);
  fclose(in);
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
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  last_error[0] = 0;
  snprintf(last_error, last_error_size, "%s%s%s%s", last ? last : "", rm && last ? " " : "",
           rm ? "(ResourceManager at " : "", rm ? rm : "");
  if (rm) strncat(last_error, ")", last_error_size - strlen(last_error) - 1);
  free(last);
  free(rm);
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
        if (!rc && !t) rc = kg_fail(errbuf, KG_EINVAL, "%s: a result of task %s, which this run does not have", what, id);
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

static void fail_all(const kg_mr_run_t *run, int rc, const char *error) {
  for (size_t k = 0; k < run->ntasks; k++) {
    kg_task_result_t *r = &run->tasks[k].result;
    if (r->units) continue; /* a result was read: kg_task_result_from_json filled it */
    r->succeeded = false;
    r->rc = rc;
    snprintf(r->error, sizeof r->error, "%s", error);
  }
}

int kg_mr_run(const kg_mr_run_t *run, char *errbuf) {
  const kg_config_t *c = run->config;
  char *input = kg_xasprintf("%s/input/tasks.txt", run->job_dir);
  char *output = kg_xasprintf("%s/output", run->job_dir);
  char *hadoop = NULL, *jar = NULL, *self = kingest_path(c);
  char tried[PATH_MAX + 64];
  argv_t a = {0};
  int rc = write_input(run, input, errbuf);
  if (!rc && !(hadoop = find_command(c->mr_hadoop, tried, sizeof tried)))
    rc = kg_fail(errbuf, KG_EINVAL, "mr.hadoop.command=%s was not found (looked in %s)", c->mr_hadoop, tried);
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
    snprintf(n, sizeof n, "%d", c->mr_attempts);
    argf(&a, "-Dmapreduce.map.maxattempts=%s", n);
    for (const char *const *p = passed_on; *p; p++) {
      const char *v = kg_props_get(c->props, *p);
      if (!v || !*v) continue;
      char *kv = kg_xasprintf("-D%s=%s", *p, v);
      arg(&a, kv);
      free(kv);
    }
    /* Generic options go first; a -cmdenv VAR=VALUE pair, Streaming's own, after the input and output. */
    argv_t env = {0};
    char *extra = kg_xstrdup(c->mr_args ? c->mr_args : ""), *save = NULL;
    for (char *w = strtok_r(extra, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
      if (!strcmp(w, "-cmdenv")) {
        char *value = strtok_r(NULL, " \t", &save);
        arg(&env, w);
        if (value) arg(&env, value);
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
    KG_INFO("Submitting %zu tasks as a Hadoop Streaming job (%s, one map per task, input %s)", run->ntasks, jar,
            input);
    int status = 0;
    char last[KG_ERRLEN];
    rc = run_client(a.items, c->progress_interval_ms, &status, errbuf, last, sizeof last);
    bool success = false;
    if (!rc) {
      char *marker = kg_xasprintf("%s/_SUCCESS", output);
      char why[KG_ERRLEN];
      if (kg_fs_exists(run->fs, marker, &success, why)) success = false;
      free(marker);
    }
    if (!rc && (status != 0 || !success))
      rc = kg_fail(errbuf, KG_EIO, "the Hadoop job of %s failed (%s exited %d%s)%s%s", run->job_id, hadoop, status,
                   status == 0 ? " without _SUCCESS in its output" : "", last[0] ? ": " : "", last);
    if (!rc) rc = read_results(run, output, errbuf);
  }
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

/* Runs the task of one input line. */
static int run_line(const kg_config_t *c, kg_fs_t *fs, const kg_writer_ops_t *writer, const char *line,
                    const char *attempt, char *errbuf) {
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
                               .config = c,
                               .units = kg_xcalloc(nunits ? nunits : 1, sizeof(kg_workunit_t *)),
                               .nunits = nunits,
                               .job_dir = dir,
                               .extract_id = extract_id,
                               .fs = fs,
                               .writer = writer};
  for (size_t u = 0; u < nunits; u++)
    task.spec.units[u] = &wus[u];
  KG_INFO("Task %s of %s (attempt %s): %zu work units, task data in %s", task_id, job_id, attempt, nunits, dir);
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
  kg_json_free(doc);
  return ferror(stdout) ? kg_fail(errbuf, KG_EIO, "cannot write the result to stdout") : KG_OK;
}

int kg_mr_run_task(const kg_config_t *c, char *errbuf) {
  const char *attempt = getenv("mapreduce_task_attempt_id");
  if (!attempt || !*attempt) attempt = "attempt_local";
  /* Fault injection for tests: KINGEST_MAP_CRASH_AT is KINGEST_CRASH_AT for the first attempt of each map only, so
   * that the attempt YARN makes next succeeds. */
  const char *crash = getenv("KINGEST_MAP_CRASH_AT");
  size_t alen = strlen(attempt);
  if (crash && *crash && alen > 2 && !strcmp(attempt + alen - 2, "_0")) setenv("KINGEST_CRASH_AT", crash, 1);
  const char *fs_property = NULL;
  const char *fs_uri = kg_config_writer_fs(c, &fs_property);
  kg_fs_t *fs = NULL;
  const kg_writer_ops_t *writer = NULL;
  int rc = kg_fs_open(fs_uri, fs_property, &fs, errbuf);
  if (!rc) rc = kg_writer_find(kg_props_get(c->props, "writer.builder.class"), c->output_format, &writer, errbuf);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  size_t lines = 0;
  while (!rc && (n = getline(&line, &cap, stdin)) > 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = 0;
    if (!n) continue;
    lines++;
    rc = run_line(c, fs, writer, line, attempt, errbuf);
    kg_crash_point("map");
  }
  free(line);
  if (!rc && !lines) rc = kg_fail(errbuf, KG_EINVAL, "run-task: no task line on stdin");
  kg_fs_close(fs);
  return rc;
}
