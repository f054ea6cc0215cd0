/* fs_crashsim.c: a simulated power loss behind the file system interface, for tests (in the spirit of SQLite's
 * crash-test VFS). With KINGEST_POWERCUT=<n> in the environment, kg_fs_crashsim_install (called by the command line
 * as it starts) puts it in front of the local backend (kg_fs_wrap_local): kg_fs_open hands out this wrapper of the
 * local backend instead of the local backend itself. It counts the mutating operations of the run (create, write,
 * truncate, close, mkdir, rename, remove, and every fsync of a file or folder it has touched, as the local
 * backend makes them through kg_fs_local_set_fsync), plus the points around the commit journal's state writes
 * (kg_fs_point); just before the n-th it "loses power" and ends the process at once with status 99:
 *   - a folder keeps the entries it had when it was last synced (or when the run first touched it): entries made
 *     since (files created or renamed in, folders made) disappear with what they hold, entries taken away since
 *     (renamed out, removed) come back;
 *   - a file keeps what it held when it was last synced (0 bytes for a new file), and of what was written since
 *     a random part (a torn write): it is cut to a length between the two.
 * What the cut undoes is told on stderr, a line each: "KINGEST_POWERCUT: brought back PATH" (an entry taken away
 * since its folder's last sync), "lost N of the M bytes of PATH (kept K)" (bytes not synced), "dropped PATH" (an
 * entry made since its folder's last sync, with what it holds).
 * Each folder's entries are durable on their own: a rename is durable in its destination folder once that is
 * synced, and out of its source folder once that is, which is what POSIX promises (a journaling file system
 * does better). The state store (SQLite, with its own journal and syncs), the job lock and the metrics do not
 * go through kg_fs_open and are kept as they are.
 *
 * KINGEST_POWERCUT=0 never cuts: with KINGEST_POWERCUT_LOG=<file>, every operation is appended to FILE, one
 * line each ("<n> <operation> <path>"), so that a test learns how many there are; the line of the cut is the
 * last. Removing is done by renaming into a trash entry beside the path (so that a removal can come back),
 * emptied when the process exits normally. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_crashsim.h"

#include "buf.h"
#include "log.h"

#define TRASH_PREFIX ".kg-powercut-trash."
#define CUT_STATUS   99

typedef struct {
  char *name;
  ino_t ino;
} entry_t;

typedef struct {
  char *path;
  ino_t ino;
  entry_t *durable; /* the entries as of the last sync */
  size_t ndurable;
} dir_t;

typedef struct {
  char *path; /* where it is now (as far as the wrapper moved it) */
  ino_t ino;
  off_t durable_len;
} file_t;

static pthread_mutex_t mutex;
static long cut_at;
static long ops;
static int log_fd = -1;
static kg_fs_t *inner;
static dir_t *dirs;
static size_t ndirs;
static file_t *files;
static size_t nfiles;
static char **trash;
static size_t ntrash;
static unsigned long rng;

static void entries_free(entry_t *e, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(e[i].name);
  free(e);
}

/* The entries of folder PATH now, trash entries left out. */
static entry_t *entries_of(const char *path, size_t *n) {
  *n = 0;
  DIR *d = opendir(path);
  if (!d) return NULL;
  entry_t *list = NULL;
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strncmp(e->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX)))
      continue;
    if (*n == cap) list = kg_xrealloc(list, (cap = cap ? 2 * cap : 8) * sizeof *list);
    list[*n].name = kg_xstrdup(e->d_name);
    list[(*n)++].ino = e->d_ino;
  }
  closedir(d);
  return list;
}

static bool has_entry(const entry_t *e, size_t n, const char *name, ino_t ino) {
  for (size_t i = 0; i < n; i++)
    if (e[i].ino == ino && !strcmp(e[i].name, name)) return true;
  return false;
}

static char *parent_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return kg_xstrdup("/");
  return kg_xstrndup(path, (size_t)(slash - path));
}

static dir_t *dir_by_ino(ino_t ino) {
  for (size_t i = 0; i < ndirs; i++)
    if (dirs[i].ino == ino) return &dirs[i];
  return NULL;
}

static file_t *file_by_ino(ino_t ino) {
  for (size_t i = 0; i < nfiles; i++)
    if (files[i].ino == ino) return &files[i];
  return NULL;
}

/* Starts following folder PATH (when it exists and is not followed yet): what it holds now counts as durable,
 * unless MADE (a folder this run just made, with no durable entry yet). */
static void track_dir(const char *path, bool made) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  dir_t *d = dir_by_ino(st.st_ino);
  if (d) {
    free(d->path);
    d->path = kg_xstrdup(path);
    return;
  }
  dirs = kg_xrealloc(dirs, (ndirs + 1) * sizeof *dirs);
  d = &dirs[ndirs++];
  d->path = kg_xstrdup(path);
  d->ino = st.st_ino;
  d->durable = made ? NULL : entries_of(path, &d->ndurable);
  if (made) d->ndurable = 0;
}

/* Starts following the file at PATH; DURABLE_LEN is what of it survives a power loss. */
static void track_file(const char *path, off_t durable_len) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return;
  file_t *f = file_by_ino(st.st_ino);
  if (!f) {
    files = kg_xrealloc(files, (nfiles + 1) * sizeof *files);
    f = &files[nfiles++];
    f->ino = st.st_ino;
    f->durable_len = durable_len < 0 ? st.st_size : durable_len;
    f->path = NULL;
  }
  free(f->path);
  f->path = kg_xstrdup(path);
}

/* What was at FROM (and under it) is now at TO. */
static void moved(const char *from, const char *to) {
  size_t n = strlen(from);
  for (size_t i = 0; i < nfiles + ndirs; i++) {
    char **p = i < nfiles ? &files[i].path : &dirs[i - nfiles].path;
    if (strncmp(*p, from, n) || ((*p)[n] != '\0' && (*p)[n] != '/')) continue;
    char *np = kg_xasprintf("%s%s", to, *p + n);
    free(*p);
    *p = np;
  }
}

static int path_depth_cmp(const void *a, const void *b) {
  const dir_t *x = a, *y = b;
  size_t lx = strlen(x->path), ly = strlen(y->path);
  return lx < ly ? -1 : lx > ly;
}

static void rm_rf(const char *path) {
  char *cmd = kg_xasprintf("rm -rf -- '%s'", path); /* paths made by the engine: no quote in them */
  if (system(cmd) != 0) kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_POWERCUT: cannot remove %s", path);
  free(cmd);
}

static void log_op(const char *what, const char *path) {
  if (log_fd < 0) return;
  char line[4200];
  int n = snprintf(line, sizeof line, "%ld %s %s\n", ops, what, path ? path : "-");
  if (n > 0 && write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) {
    /* the log is for the test; nothing to do */
  }
}

/* The power goes: every folder back to its durable entries, every file to its durable bytes and a torn part of
 * the rest, then the process ends at once. */
static _Noreturn void power_loss(const char *what, const char *path) {
  kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_POWERCUT=%ld: power lost before %s %s", cut_at, what,
             path ? path : "-");
  qsort(dirs, ndirs, sizeof *dirs, path_depth_cmp);
  /* 1. Entries that were durable and are gone come back (from where the file or folder is now). */
  for (size_t i = 0; i < ndirs; i++) {
    dir_t *d = &dirs[i];
    struct stat st;
    if (lstat(d->path, &st) != 0 || st.st_ino != d->ino) continue;
    size_t ncur;
    entry_t *cur = entries_of(d->path, &ncur);
    for (size_t k = 0; k < d->ndurable; k++) {
      if (has_entry(cur, ncur, d->durable[k].name, d->durable[k].ino)) continue;
      char *at = kg_xasprintf("%s/%s", d->path, d->durable[k].name);
      file_t *f = file_by_ino(d->durable[k].ino);
      dir_t *sub = dir_by_ino(d->durable[k].ino);
      struct stat now;
      if (f && lstat(f->path, &now) == 0 && now.st_ino == f->ino) {
        if (link(f->path, at) != 0)
          kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_POWERCUT: cannot bring back %s: %s", at, strerror(errno));
        else
          kg_log_say(KG_LOG_WARN, "kingest: ", -1, "KINGEST_POWERCUT: brought back %s", at);
      } else if (sub && lstat(sub->path, &now) == 0 && now.st_ino == sub->ino) {
        if (rename(sub->path, at) != 0) {
          kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_POWERCUT: cannot bring back %s: %s", at, strerror(errno));
        } else {
          kg_log_say(KG_LOG_WARN, "kingest: ", -1, "KINGEST_POWERCUT: brought back %s", at);
          moved(sub->path, at);
        }
      } else {
        kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_POWERCUT: cannot bring back %s: not found", at);
      }
      free(at);
    }
    entries_free(cur, ncur);
  }
  /* 2. Files keep their synced bytes and a random part of the rest. */
  for (size_t i = 0; i < nfiles; i++) {
    struct stat st;
    if (lstat(files[i].path, &st) != 0 || st.st_ino != files[i].ino || st.st_size <= files[i].durable_len) continue;
    rng = rng * 6364136223846793005UL + 1442695040888963407UL;
    off_t keep = files[i].durable_len + (off_t)((rng >> 33) % (unsigned long)(st.st_size - files[i].durable_len + 1));
    if (truncate(files[i].path, keep) != 0)
      kg_log_say(KG_LOG_ERROR, "kingest: ", -1, "KINGEST_POWERCUT: cannot cut %s: %s", files[i].path, strerror(errno));
    else if (keep < st.st_size)
      kg_log_say(KG_LOG_WARN, "kingest: ", -1, "KINGEST_POWERCUT: lost %lld of the %lld bytes of %s (kept %lld)",
                 (long long)(st.st_size - keep), (long long)st.st_size, files[i].path, (long long)keep);
  }
  /* 3. Entries made since the last sync of their folder go, trash included. */
  for (size_t i = 0; i < ndirs; i++) {
    dir_t *d = &dirs[i];
    struct stat st;
    if (lstat(d->path, &st) != 0 || st.st_ino != d->ino) continue;
    DIR *dd = opendir(d->path);
    if (!dd) continue;
    struct dirent *e;
    char **doomed = NULL;
    size_t ndoomed = 0;
    while ((e = readdir(dd))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      bool in_trash = !strncmp(e->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX));
      if (in_trash || !has_entry(d->durable, d->ndurable, e->d_name, e->d_ino)) {
        doomed = kg_xrealloc(doomed, (ndoomed + 1) * sizeof *doomed);
        doomed[ndoomed++] = kg_xasprintf("%s/%s", d->path, e->d_name);
        if (!in_trash) kg_log_say(KG_LOG_WARN, "kingest: ", -1, "KINGEST_POWERCUT: dropped %s", doomed[ndoomed - 1]);
      }
    }
    closedir(dd);
    for (size_t k = 0; k < ndoomed; k++) {
      rm_rf(doomed[k]);
      free(doomed[k]);
    }
    free(doomed);
  }
  if (log_fd >= 0) close(log_fd);
  _exit(CUT_STATUS);
}

/* One operation: counted, logged, and the cut when it is the one. Called with the mutex held. */
static void op(const char *what, const char *path) {
  ops++;
  log_op(what, path);
  if (cut_at > 0 && ops == cut_at) power_loss(what, path);
}

/* The local backend's fsync: a sync of a followed file or folder is an operation, and makes what it holds
 * durable. */
static int sim_fsync(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return fsync(fd);
  pthread_mutex_lock(&mutex);
  dir_t *d = S_ISDIR(st.st_mode) ? dir_by_ino(st.st_ino) : NULL;
  file_t *f = S_ISREG(st.st_mode) ? file_by_ino(st.st_ino) : NULL;
  if (d) op("dirsync", d->path);
  if (f) op("fsync", f->path);
  int rc = fsync(fd);
  if (rc == 0 && d) {
    entries_free(d->durable, d->ndurable);
    d->durable = entries_of(d->path, &d->ndurable);
  }
  if (rc == 0 && f && fstat(fd, &st) == 0) f->durable_len = st.st_size;
  pthread_mutex_unlock(&mutex);
  return rc;
}

/* ---- streams ---------------------------------------------------------------------------------------------- */

typedef struct {
  kg_fs_stream_t base;
  kg_fs_stream_t *inner;
  char *path;
} sim_stream_t;

static int s_write(kg_fs_stream_t *stream, const void *data, size_t len, char *errbuf) {
  sim_stream_t *s = (sim_stream_t *)stream;
  pthread_mutex_lock(&mutex);
  op("write", s->path);
  pthread_mutex_unlock(&mutex);
  return kg_fs_stream_write(s->inner, data, len, errbuf);
}

static int s_truncate(kg_fs_stream_t *stream, int64_t size, char *errbuf) {
  sim_stream_t *s = (sim_stream_t *)stream;
  pthread_mutex_lock(&mutex);
  op("truncate", s->path);
  pthread_mutex_unlock(&mutex);
  return kg_fs_stream_truncate(s->inner, size, errbuf);
}

static int s_sync(kg_fs_stream_t *stream, char *errbuf) {
  sim_stream_t *s = (sim_stream_t *)stream;
  return kg_fs_stream_sync(s->inner, errbuf); /* the fsync is counted by sim_fsync */
}

static int s_close(kg_fs_stream_t *stream, char *errbuf) {
  sim_stream_t *s = (sim_stream_t *)stream;
  pthread_mutex_lock(&mutex);
  op("close", s->path);
  pthread_mutex_unlock(&mutex);
  int rc = kg_fs_stream_close(s->inner, errbuf);
  free(s->path);
  free(s);
  return rc;
}

static void s_abort(kg_fs_stream_t *stream) {
  sim_stream_t *s = (sim_stream_t *)stream;
  kg_fs_stream_abort(s->inner);
  free(s->path);
  free(s);
}

static const kg_fs_stream_ops_t sim_stream_ops = {s_write, s_truncate, s_sync, s_close, s_abort};

/* ---- the file system ---------------------------------------------------------------------------------------- */

/* mkdir -p, one folder at a time: each is made by the local backend (which syncs the folder it is made in) and
 * followed at once, as a folder with no durable entry yet. */
static int sim_mkdirs(kg_fs_t *fs, const char *path, char *errbuf) {
  pthread_mutex_lock(&mutex);
  char *p = kg_xstrdup(path);
  size_t n = strlen(p);
  int rc = KG_OK;
  for (size_t i = 1; i <= n && !rc; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char saved = p[i];
    p[i] = '\0';
    struct stat st;
    if (lstat(p, &st) != 0) {
      char *parent = parent_of(p);
      track_dir(parent, false);
      free(parent);
      op("mkdir", p);
      rc = inner->mkdirs(inner, p, errbuf);
      track_dir(p, true);
    }
    p[i] = saved;
  }
  if (!rc) rc = inner->mkdirs(inner, path, errbuf); /* what is there is a folder */
  free(p);
  pthread_mutex_unlock(&mutex);
  return rc;
}

static int sim_create(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf) {
  pthread_mutex_lock(&mutex);
  char *parent = parent_of(path);
  track_dir(parent, false);
  free(parent);
  struct stat st;
  off_t before = mode == KG_FS_APPEND && lstat(path, &st) == 0 ? st.st_size : 0;
  op("create", path);
  kg_fs_stream_t *s = NULL;
  int rc = inner->create(inner, path, mode, &s, errbuf);
  if (!rc) track_file(path, before);
  pthread_mutex_unlock(&mutex);
  *out = NULL;
  if (rc) return rc;
  sim_stream_t *w = kg_xcalloc(1, sizeof *w);
  w->base.ops = &sim_stream_ops;
  w->inner = s;
  w->path = kg_xstrdup(path);
  *out = &w->base;
  return KG_OK;
}

static int sim_rename(kg_fs_t *fs, const char *src, const char *dst, char *errbuf) {
  pthread_mutex_lock(&mutex);
  char *a = parent_of(src), *b = parent_of(dst);
  track_dir(a, false);
  track_dir(b, false);
  free(a);
  free(b);
  track_file(src, -1); /* a file the run did not make is durable as it is */
  op("rename", dst);
  /* Followed at DST before the rename, since the power may go during the folder syncs that follow it. */
  moved(src, dst);
  int rc = inner->rename(inner, src, dst, errbuf);
  struct stat st;
  if (lstat(src, &st) == 0) moved(dst, src); /* not done */
  pthread_mutex_unlock(&mutex);
  return rc;
}

static int sim_remove_tree(kg_fs_t *fs, const char *path, char *errbuf) {
  pthread_mutex_lock(&mutex);
  struct stat st;
  int rc = KG_OK;
  if (lstat(path, &st) == 0) {
    char *parent = parent_of(path);
    track_dir(parent, false);
    if (S_ISDIR(st.st_mode))
      track_dir(path, false);
    else
      track_file(path, -1);
    op("remove", path);
    char *to = kg_xasprintf("%s/" TRASH_PREFIX "%ld.%zu", parent, (long)getpid(), ntrash);
    if (rename(path, to) != 0) {
      rc = kg_fail(errbuf, KG_EIO, "cannot remove %s: %s", path, strerror(errno));
      free(to);
    } else {
      moved(path, to);
      trash = kg_xrealloc(trash, (ntrash + 1) * sizeof *trash);
      trash[ntrash++] = to;
    }
    free(parent);
  }
  pthread_mutex_unlock(&mutex);
  return rc;
}

static int sim_sync(kg_fs_t *fs, const char *path, char *errbuf) {
  pthread_mutex_lock(&mutex);
  track_dir(path, false);
  pthread_mutex_unlock(&mutex);
  return inner->sync(inner, path, errbuf); /* counted by sim_fsync */
}

static int sim_check_writable(kg_fs_t *fs, const char *path, const char *property, char *errbuf) {
  char why[KG_ERRLEN];
  if (sim_mkdirs(fs, path, why)) return kg_fail(errbuf, KG_EIO, "%s: %s cannot be created: %s", property, path, why);
  return inner->check_writable(inner, path, property, errbuf);
}

static int sim_exists(kg_fs_t *fs, const char *path, bool *exists, char *errbuf) {
  return inner->exists(inner, path, exists, errbuf);
}

static int sim_list(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf) {
  int rc = inner->list(inner, path, names, count, errbuf);
  size_t k = 0;
  for (size_t i = 0; !rc && i < *count; i++) {
    if (!strncmp((*names)[i], TRASH_PREFIX, strlen(TRASH_PREFIX)))
      free((*names)[i]);
    else
      (*names)[k++] = (*names)[i];
  }
  if (!rc) *count = k;
  return rc;
}

static int sim_same_volume(kg_fs_t *fs, const char *a, const char *b, bool *same, char *errbuf) {
  return inner->same_volume(inner, a, b, same, errbuf);
}

static int sim_read(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf) {
  return inner->read(inner, path, out, errbuf);
}

static kg_fs_t sim = {
    .scheme = "file",
    .mkdirs = sim_mkdirs,
    .create = sim_create,
    .rename = sim_rename,
    .exists = sim_exists,
    .list = sim_list,
    .remove_tree = sim_remove_tree,
    .sync = sim_sync,
    .check_writable = sim_check_writable,
    .same_volume = sim_same_volume,
    .read = sim_read,
    .close = NULL,
    .data = NULL,
};

/* A normal exit empties the trash. */
static void empty_trash(void) {
  for (size_t i = 0; i < ntrash; i++)
    rm_rf(trash[i]);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
  const char *spec = getenv("KINGEST_POWERCUT");
  if (!spec || !*spec) return;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  cut_at = strtol(spec, NULL, 10);
  rng = (unsigned long)cut_at * 2654435761UL + 1;
  const char *log = getenv("KINGEST_POWERCUT_LOG");
  if (log && *log) log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  inner = kg_fs_local();
  kg_fs_local_set_fsync(sim_fsync);
  atexit(empty_trash);
}

kg_fs_t *kg_fs_crashsim(void) {
  pthread_once(&once, init);
  return inner ? &sim : NULL;
}

void kg_fs_crashsim_install(void) {
  const char *spec = getenv("KINGEST_POWERCUT");
  if (spec && *spec) kg_fs_wrap_local(kg_fs_crashsim, kg_fs_powercut_point);
}

void kg_fs_powercut_point(const char *what) {
  if (!kg_fs_crashsim()) return;
  pthread_mutex_lock(&mutex);
  op(what, NULL);
  pthread_mutex_unlock(&mutex);
}
