/* fs.c: local file system helpers with durable renames. */
#define _XOPEN_SOURCE 700
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kg_fs_mkdirs(const char *path, char *errbuf) {
  char *p = kg_xstrdup(path);
  size_t n = strlen(p);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char saved = p[i];
    p[i] = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      int e = errno;
      kg_fail(errbuf, KG_EIO, "cannot create folder %s: %s", p, strerror(e));
      free(p);
      errno = e;
      return KG_EIO;
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

bool kg_fs_exists(const char *path) { return access(path, F_OK) == 0; }

int kg_fs_sync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return KG_EIO;
  int rc = fsync(fd);
  close(fd);
  return rc ? KG_EIO : KG_OK;
}

static char *dirname_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kg_xstrdup(".");
  if (slash == path) return kg_xstrdup("/");
  return kg_xstrndup(path, (size_t)(slash - path));
}

int kg_fs_move(const char *src, const char *dst, char *errbuf) {
  char *dst_dir = dirname_of(dst);
  char *src_dir = dirname_of(src);
  int rc = kg_fs_mkdirs(dst_dir, errbuf);
  if (!rc && rename(src, dst) != 0) rc = kg_fail(errbuf, KG_EIO, "cannot move %s to %s: %s", src, dst, strerror(errno));
  if (!rc) {
    kg_fs_sync_dir(dst_dir);
    kg_fs_sync_dir(src_dir);
  }
  free(dst_dir);
  free(src_dir);
  return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

int kg_fs_remove_tree(const char *path, char *errbuf) {
  if (!kg_fs_exists(path)) return KG_OK;
  if (nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0)
    return kg_fail(errbuf, KG_EIO, "cannot remove %s: %s", path, strerror(errno));
  return KG_OK;
}

int kg_fs_check_writable(const char *path, const char *property, char *errbuf) {
  if (kg_fs_mkdirs(path, errbuf))
    return kg_fail(errbuf, KG_EIO, "%s: %s cannot be created: %s", property, path, strerror(errno));
  char *probe = kg_xasprintf("%s/.kingest-write-check.%d", path, (int)getpid());
  int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
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

int kg_fs_check_same_fs(const char *a, const char *a_property, const char *b, const char *b_property, char *errbuf) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return KG_OK; /* the writability checks report missing folders */
  if (sa.st_dev != sb.st_dev)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s (%s) and %s (%s) are on different file systems: publishing moves files with rename(2), "
                   "which cannot cross file systems; put both on one",
                   a_property, a, b_property, b);
  return KG_OK;
}
