/* fs_local.c: the local file system (file:///) behind the kg_fs_t interface, with durable renames.
 *
 * Streams are file descriptors behind a large buffer of their own (stdio would take a lock on every call), written
 * from one thread each. Renames never replace their target (renameat2 RENAME_NOREPLACE) and sync both folders; a
 * folder that cannot be synced fails the rename. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fault.h"
#include "fs.h"

#define KG_FS_LOCAL_BUFFER (1 << 20) /* bytes of a stream's buffer */

/* The fsync the backend calls: fsync(2), or a test's fault (kg_fs_local_set_fsync). */
static int (*local_fsync)(int fd) = fsync;

void kg_fs_local_set_fsync(int (*fsync_fn)(int fd)) { local_fsync = fsync_fn ? fsync_fn : fsync; }

/* The reason of the last failed call: errno's text, or EIO's when the call did not set errno. */
static int reason(char *errbuf) { return kg_fail(errbuf, KG_EIO, "%s", strerror(errno ? errno : EIO)); }

typedef struct {
  kg_fs_stream_t base;
  int fd;
  char *path;
  char *buffer; /* bytes not written to the file yet: LEN of KG_FS_LOCAL_BUFFER */
  size_t len;
  int64_t written;      /* bytes handed to the file */
  int64_t writeback_at; /* where the writeback started last ends (see flush) */
} local_stream_t;

static void stream_free(local_stream_t *s) {
  free(s->path);
  free(s->buffer);
  free(s);
}

/* Writes the N bytes at P to the file, all of them. */
static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes the buffer out. Every KG_FS_LOCAL_WRITEBACK bytes, starts the writeback of what was written since to
 * the disk, without waiting for it (sync_file_range), so that the fsync of the file's close finds little left to
 * do instead of all of it. */
#define KG_FS_LOCAL_WRITEBACK (8 << 20)
static int flush(local_stream_t *s) {
  if (!s->len) return 0;
  size_t n = s->len;
  s->len = 0;
  if (write_all(s->fd, s->buffer, n) != 0) return -1;
  s->written += (int64_t)n;
  if (s->written - s->writeback_at >= KG_FS_LOCAL_WRITEBACK) {
    /* A hint: a file system that cannot do it leaves it to the fsync. */
    sync_file_range(s->fd, s->writeback_at, s->written - s->writeback_at, SYNC_FILE_RANGE_WRITE);
    s->writeback_at = s->written;
  }
  return 0;
}

static int stream_write(kg_fs_stream_t *stream, const void *data, size_t len, char *errbuf) {
  local_stream_t *s = (local_stream_t *)stream;
  if (len <= KG_FS_LOCAL_BUFFER - s->len) {
    memcpy(s->buffer + s->len, data, len);
    s->len += len;
    return KG_OK;
  }
  errno = 0;
  if (flush(s) != 0) return reason(errbuf);
  if (len >= KG_FS_LOCAL_BUFFER) {
    if (write_all(s->fd, data, len) != 0) return reason(errbuf);
    s->written += (int64_t)len;
    return KG_OK;
  }
  memcpy(s->buffer, data, len);
  s->len = len;
  return KG_OK;
}

static int stream_truncate(kg_fs_stream_t *stream, int64_t size, char *errbuf) {
  local_stream_t *s = (local_stream_t *)stream;
  errno = 0;
  if (flush(s) != 0 || ftruncate(s->fd, (off_t)size) != 0 || lseek(s->fd, (off_t)size, SEEK_SET) < 0)
    return reason(errbuf);
  s->written = size;
  if (s->writeback_at > size) s->writeback_at = size;
  return KG_OK;
}

static int stream_sync(kg_fs_stream_t *stream, char *errbuf) {
  local_stream_t *s = (local_stream_t *)stream;
  errno = 0;
  if (flush(s) != 0 || local_fsync(s->fd) != 0) return reason(errbuf);
  return KG_OK;
}

static int stream_close(kg_fs_stream_t *stream, char *errbuf) {
  local_stream_t *s = (local_stream_t *)stream;
  errno = 0;
  int rc = flush(s) != 0 ? reason(errbuf) : KG_OK;
  if (close(s->fd) != 0 && !rc) rc = reason(errbuf);
  stream_free(s);
  return rc;
}

static void stream_abort(kg_fs_stream_t *stream) {
  local_stream_t *s = (local_stream_t *)stream;
  close(s->fd);
  unlink(s->path);
  stream_free(s);
}

static const kg_fs_stream_ops_t stream_ops = {stream_write, stream_truncate, stream_sync, stream_close, stream_abort};

static int sync_dir(const char *path);

/* mkdir -p; each folder made is made durable by a sync of the folder it was made in (a file renamed into a new
 * folder is only as durable as the folder), and a sync that fails fails the call. */
static int local_mkdirs(kg_fs_t *fs, const char *path, char *errbuf) {
  (void)fs;
  return kg_fs_local_mkdirs_mode(path, 0755, errbuf);
}

int kg_fs_local_mkdirs_mode(const char *path, unsigned mode, char *errbuf) {
  char *p = kg_xstrdup(path);
  size_t n = strlen(p);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char saved = p[i];
    p[i] = '\0';
    bool made = mkdir(p, (mode_t)mode) == 0;
    if (!made && errno != EEXIST) {
      int e = errno;
      kg_fail(errbuf, KG_EIO, "cannot create folder %s: %s", p, strerror(e));
      free(p);
      errno = e;
      return KG_EIO;
    }
    if (made) {
      char *slash = strrchr(p, '/');
      char *parent = slash == p ? kg_xstrdup("/") : kg_xstrndup(p, (size_t)(slash - p));
      errno = 0;
      int failed = sync_dir(parent);
      int e = errno ? errno : EIO;
      if (failed) kg_fail(errbuf, KG_EIO, "cannot sync folder %s after creating %s: %s", parent, p, strerror(e));
      free(parent);
      if (failed) {
        free(p);
        errno = e;
        return KG_EIO;
      }
    }
    p[i] = saved;
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) { /* it exists, as something else than a folder */
    kg_fail(errbuf, KG_EIO, "cannot create folder %s: %s", path, strerror(ENOTDIR));
    free(p);
    errno = ENOTDIR;
    return KG_EIO;
  }
  free(p);
  return KG_OK;
}

static int local_create(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf) {
  *out = NULL;
  errno = 0;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == KG_FS_APPEND ? O_APPEND : O_EXCL);
  int fd = open(path, flags, 0666);
  if (fd < 0) return reason(errbuf);
  local_stream_t *s = kg_xcalloc(1, sizeof *s);
  s->base.ops = &stream_ops;
  s->fd = fd;
  s->path = kg_xstrdup(path);
  s->buffer = kg_xmalloc(KG_FS_LOCAL_BUFFER);
  struct stat st;
  if (mode == KG_FS_APPEND && fstat(fd, &st) == 0) s->written = s->writeback_at = (int64_t)st.st_size;
  *out = &s->base;
  return KG_OK;
}

/* fsync of folder PATH, through local_fsync. */
static int sync_dir(const char *path) {
  if (kg_fault("dirsync")) { /* KINGEST_FAULT=publish.dirsync:<n> */
    errno = EIO;
    return -1;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  int rc = local_fsync(fd);
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

static char *dirname_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kg_xstrdup(".");
  if (slash == path) return kg_xstrdup("/");
  return kg_xstrndup(path, (size_t)(slash - path));
}

/* rename(2) that never replaces DST. Where the file system cannot do that atomically (renameat2 answers
 * EINVAL or ENOSYS), DST is looked for first: the job lock keeps other runs away, so nothing else makes it
 * in between. */
static int rename_noreplace(const char *src, const char *dst) {
  if (renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  struct stat st;
  if (lstat(dst, &st) == 0) {
    errno = EEXIST;
    return -1;
  }
  return rename(src, dst);
}

static int local_rename(kg_fs_t *fs, const char *src, const char *dst, char *errbuf) {
  if (rename_noreplace(src, dst) != 0)
    return kg_fail(errbuf, KG_EIO, "cannot move %s to %s: %s", src, dst, strerror(errno));
  char *dirs[2] = {dirname_of(dst), dirname_of(src)};
  int rc = KG_OK;
  for (int i = 0; i < 2 && !rc; i++) {
    errno = 0;
    if (sync_dir(dirs[i]) != 0)
      rc = kg_fail(errbuf, KG_EIO, "cannot sync folder %s after moving %s to %s: %s", dirs[i], src, dst,
                   strerror(errno ? errno : EIO));
  }
  free(dirs[0]);
  free(dirs[1]);
  return rc;
}

static int local_exists(kg_fs_t *fs, const char *path, bool *exists, char *errbuf) {
  *exists = access(path, F_OK) == 0;
  return KG_OK;
}

static int local_list(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf) {
  *names = NULL;
  *count = 0;
  DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? KG_OK : kg_fail(errbuf, KG_EIO, "cannot list %s: %s", path, strerror(errno));
  struct dirent *e;
  size_t n = 0, cap = 0;
  char **list = NULL;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      list = kg_xrealloc(list, cap * sizeof *list);
    }
    list[n++] = kg_xstrdup(e->d_name);
  }
  closedir(d);
  *names = list;
  *count = n;
  return KG_OK;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

static int local_remove_tree(kg_fs_t *fs, const char *path, char *errbuf) {
  if (access(path, F_OK) != 0) return KG_OK;
  if (nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0)
    return kg_fail(errbuf, KG_EIO, "cannot remove %s: %s", path, strerror(errno));
  return KG_OK;
}

static int local_sync(kg_fs_t *fs, const char *path, char *errbuf) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return kg_fail(errbuf, KG_EIO, "cannot sync %s: %s", path, strerror(errno));
  errno = 0;
  int rc =
      local_fsync(fd) != 0 ? kg_fail(errbuf, KG_EIO, "cannot sync %s: %s", path, strerror(errno ? errno : EIO)) : KG_OK;
  close(fd);
  return rc;
}

static int local_check_writable(kg_fs_t *fs, const char *path, const char *property, char *errbuf) {
  if (local_mkdirs(fs, path, errbuf))
    return kg_fail(errbuf, KG_EIO, "%s: %s cannot be created: %s", property, path, strerror(errno));
  /* An unnamed file in the folder: it is never seen there, and vanishes with the process, even one killed right
   * after making it. A file system without O_TMPFILE gets a named probe, removed at once. */
  int fd = open(path, O_TMPFILE | O_WRONLY, 0600);
  if (fd >= 0) {
    close(fd);
    return KG_OK;
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    return kg_fail(errbuf, KG_EIO, "%s: %s is not writable: %s", property, path, strerror(errno));
  char *probe = kg_xasprintf("%s/.kingest-write-check.%d", path, (int)getpid());
  fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int rc = KG_OK;
  if (fd < 0) {
    rc = kg_fail(errbuf, KG_EIO, "%s: %s is not writable: %s", property, path, strerror(errno));
  } else {
    close(fd);
    unlink(probe);
  }
  free(probe);
  return rc;
}

static int local_same_volume(kg_fs_t *fs, const char *a, const char *b, bool *same, char *errbuf) {
  struct stat sa, sb;
  *same = stat(a, &sa) != 0 || stat(b, &sb) != 0 || sa.st_dev == sb.st_dev;
  return KG_OK;
}

static int local_read(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf) {
  FILE *f = fopen(path, "rb");
  if (!f) return kg_fail(errbuf, KG_EIO, "cannot read %s: %s", path, strerror(errno));
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    kg_buf_append(out, chunk, n);
  int failed = ferror(f);
  fclose(f);
  if (failed) return kg_fail(errbuf, KG_EIO, "cannot read %s: %s", path, strerror(EIO));
  return KG_OK;
}

static kg_fs_t local = {
    .scheme = "file",
    .mkdirs = local_mkdirs,
    .create = local_create,
    .rename = local_rename,
    .exists = local_exists,
    .list = local_list,
    .remove_tree = local_remove_tree,
    .sync = local_sync,
    .check_writable = local_check_writable,
    .same_volume = local_same_volume,
    .read = local_read,
    .close = NULL,
    .data = NULL,
};

kg_fs_t *kg_fs_local(void) { return &local; }

int kg_fs_local_open(const char *uri, kg_fs_t **out, char *errbuf) {
  *out = &local;
  return KG_OK;
}
