/* fs.c: the file system registry (a backend per URI scheme) and the calls built on a backend's functions. */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int local_open(const char *uri, const void *options, kg_fs_t **out, char *errbuf) {
  (void)options;
  return kg_fs_local_open(uri, out, errbuf);
}

static int webhdfs_open(const char *uri, const void *options, kg_fs_t **out, char *errbuf) {
  return kg_fs_webhdfs_open_with(uri, options, out, errbuf);
}

/* One row per backend: the URI scheme it serves, how to open it (with its section's options, NULL when the caller
 * has no configuration), and its property rows (NULL: none; its settings are its URI's parameters). Two schemes
 * of one backend share its section. */
static const struct {
  const char *scheme;
  int (*open)(const char *uri, const void *options, kg_fs_t **out, char *errbuf);
  const kg_config_section_t *section;
} backends[] = {
    {"file", local_open, NULL},
    {"webhdfs", webhdfs_open, &kg_webhdfs_section},
    {"swebhdfs", webhdfs_open, &kg_webhdfs_section},
    {"s3a", kg_fs_s3_open, &kg_fs_s3_section},
    {"s3", kg_fs_s3_open, &kg_fs_s3_section},
    {"wasbs", kg_fs_azure_open, &kg_fs_azure_section},
    {"wasb", kg_fs_azure_open, &kg_fs_azure_section},
    {"abfss", kg_fs_azure_open, &kg_fs_azure_section},
    {"abfs", kg_fs_azure_open, &kg_fs_azure_section},
};

/* The test hook's wrapper of the local backend and its counter of named points (kg_fs_wrap_local). */
static kg_fs_t *(*local_wrapper)(void);
static void (*point_counter)(const char *what);

void kg_fs_wrap_local(kg_fs_t *(*wrapper)(void), void (*point)(const char *what)) {
  local_wrapper = wrapper;
  point_counter = point;
}

void kg_fs_point(const char *what) {
  if (point_counter) point_counter(what);
}

int kg_fs_open(const char *uri, const char *property, kg_fs_t **out, char *errbuf) {
  return kg_fs_open_config(uri, property, NULL, out, errbuf);
}

int kg_fs_open_config(const char *uri, const char *property, const kg_config_t *config, kg_fs_t **out, char *errbuf) {
  *out = NULL;
  if (!uri || !*uri) uri = "file:///";
  const char *colon = strchr(uri, ':');
  size_t n = colon ? (size_t)(colon - uri) : 0;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (n == strlen(backends[i].scheme) && !strncmp(uri, backends[i].scheme, n)) {
      kg_fs_t *wrapper = backends[i].open == local_open && local_wrapper ? local_wrapper() : NULL;
      if (wrapper) { /* a test hook's wrapper of the local file system */
        *out = wrapper;
        return KG_OK;
      }
      const void *options = config && backends[i].section ? kg_config_options(config, backends[i].section) : NULL;
      return backends[i].open(uri, options, out, errbuf);
    }
  if (n == 4 && !strncmp(uri, "hdfs", 4))
    return kg_fail(errbuf, KG_EINVAL,
                   "property %s=%s: kingest reaches HDFS through WebHDFS, not the NameNode's RPC port: use "
                   "webhdfs://HOST:PORT with PORT the NameNode's HTTP port (dfs.namenode.http-address, 9870 by "
                   "default)",
                   property, uri);
  if (n == 2 && !strncmp(uri, "gs", 2)) {
    const char *bucket = uri + 3 + strspn(uri + 3, "/");
    int len = (int)strcspn(bucket, "/");
    return kg_fail(errbuf, KG_EINVAL,
                   "property %s=%s: kingest reaches Google Cloud Storage through its S3-compatible XML API: use "
                   "s3a://%.*s with fs.s3a.endpoint=https://storage.googleapis.com and an HMAC key as "
                   "fs.s3a.access.key and fs.s3a.secret.key",
                   property, uri, len ? len : 6, len ? bucket : "BUCKET");
  }
  char schemes[128] = "";
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    strncat(schemes, i ? ", " : "", sizeof schemes - strlen(schemes) - 1);
    strncat(schemes, backends[i].scheme, sizeof schemes - strlen(schemes) - 1);
  }
  return kg_fail(errbuf, KG_EINVAL, "property %s=%s: no file system serves this URI (kingest has: %s)", property, uri,
                 schemes);
}

void kg_fs_close(kg_fs_t *fs) {
  if (fs && fs->close) fs->close(fs);
}

void kg_fs_object_clear(kg_fs_object_t *o) {
  free(o->path);
  free(o->etag);
  free(o->upload_id);
  *o = (kg_fs_object_t){.size = -1};
}

void kg_fs_objects_free(kg_fs_object_t *objects, size_t count) {
  for (size_t i = 0; i < count; i++)
    kg_fs_object_clear(&objects[i]);
  free(objects);
}

void kg_fs_list_free(char **names, size_t count) {
  for (size_t i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

static char *dirname_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kg_xstrdup(".");
  if (slash == path) return kg_xstrdup("/");
  return kg_xstrndup(path, (size_t)(slash - path));
}

int kg_fs_move(kg_fs_t *fs, const char *src, const char *dst, char *errbuf) {
  char *dst_dir = dirname_of(dst);
  int rc = fs->mkdirs(fs, dst_dir, errbuf);
  if (!rc) rc = fs->rename(fs, src, dst, errbuf);
  free(dst_dir);
  return rc;
}

/* put for a backend without its own: the bytes go through a stream, a megabyte at a time. */
static int put_by_stream(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf) {
  int fd = open(local_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kg_fail(errbuf, KG_EIO, "%s", strerror(errno));
  kg_fs_stream_t *out = NULL;
  int rc = fs->create(fs, path, KG_FS_CREATE_NEW, &out, errbuf);
  enum { CHUNK = 1 << 20 };
  char *buf = rc ? NULL : kg_xmalloc(CHUNK);
  while (!rc) {
    ssize_t n = read(fd, buf, CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = kg_fail(errbuf, KG_EIO, "%s", strerror(errno));
    if (n <= 0) break;
    rc = kg_fs_stream_write(out, buf, (size_t)n, errbuf);
  }
  if (!rc) rc = kg_fs_stream_sync(out, errbuf);
  if (!rc) {
    rc = kg_fs_stream_close(out, errbuf);
    out = NULL;
  }
  kg_fs_stream_abort(out);
  free(buf);
  close(fd);
  return rc;
}

int kg_fs_put(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf) {
  char why[KG_ERRLEN];
  int rc = fs->put ? fs->put(fs, local_path, path, why) : put_by_stream(fs, local_path, path, why);
  if (rc) kg_fail(errbuf, rc, "cannot copy %s to %s: %s", local_path, path, why);
  return rc;
}

int kg_fs_check_same_fs(kg_fs_t *fs, const char *a, const char *a_property, const char *b, const char *b_property,
                        char *errbuf) {
  bool same = true;
  int rc = fs->same_volume(fs, a, b, &same, errbuf);
  if (rc) return rc;
  if (!same)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s (%s) and %s (%s) are on different file systems: publishing moves files with rename(2), "
                   "which cannot cross file systems; put both on one",
                   a_property, a, b_property, b);
  return KG_OK;
}

/* ---- the file systems' properties ------------------------------------------------------------------------ */

/* A file system URI row: file: (or empty, the local one), else one a backend serves, which the backend's own open
 * checks (no request is made); the state store is always local. */
static int check_uri(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                     kg_property_value_t *v, char *errbuf) {
  (void)options;
  char *value = v->s;
  const char *given = key ? key : p->name, *origin = kg_config_origin(c, given);
  int rc = KG_OK;
  if (*value && strncmp(value, "file:", 5) && !strcmp(p->name, "state.store.fs.uri")) {
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: property %s=%s: the state store is a local SQLite database (file:///); the output may go to "
                 "HDFS (writer.fs.uri)",
                 origin, given, value);
  } else if (*value && strncmp(value, "file:", 5)) {
    kg_fs_t *fs = NULL;
    char why[KG_ERRLEN];
    rc = kg_fs_open(value, given, &fs, why);
    kg_fs_close(fs);
    if (rc) kg_fail(errbuf, rc, "%s: %s", origin, why);
  }
  free(value);
  return rc;
}

/* Which file system each part of a run uses; the backends' own settings are their URI's parameters, which their
 * open reads. */
static const kg_property_t rows[] = {
    {.name = "writer.fs.uri",
     .type = KG_PROP_STRING,
     .set = check_uri,
     .def_doc = "fs.uri's",
     .doc = "File system of the task data (`task.data.root.dir`) and the final folder: `file:///`, or "
            "`webhdfs://HOST:PORT` (or `webhdfs://USER@HOST:PORT`) for HDFS through WebHDFS, PORT being the NameNode's "
            "HTTP port ([HDFS](#hdfs)), or `swebhdfs://HOST:PORT` for WebHDFS over HTTPS (its HTTPS port); an "
            "`hdfs://` URI is refused with that hint."},
    {.name = "fs.uri",
     .type = KG_PROP_STRING,
     .set = check_uri,
     .def = "file:///",
     .doc = "Default file system, for `writer.fs.uri` and `data.publisher.fs.uri`."},
    {.name = "data.publisher.fs.uri",
     .type = KG_PROP_STRING,
     .set = check_uri,
     .def_doc = "writer.fs.uri's",
     .doc = "File system of the final folder. When it is the writer's, a file is published by a rename; when the "
            "writer's is local and this one is HDFS (`webhdfs://`), the commit uploads each file next to its final "
            "path (as `_<name>._COPYING_`) and renames it there, exactly once as well ([HDFS](#hdfs)); when it is an "
            "object store (`s3a://BUCKET`, `wasbs://CONTAINER@ACCOUNT.blob.core.windows.net`), each file is written "
            "once to its final key under `If-None-Match: *` ([Object storage](#object-storage))."},
    {.name = "state.store.fs.uri",
     .type = KG_PROP_STRING,
     .set = check_uri,
     .def = "file:///",
     .doc = "File system of the state store: local (`file:///`), whatever the output's."},
};

const kg_config_section_t kg_fs_section = {.name = "fs", .rows = rows, .nrows = sizeof rows / sizeof rows[0]};

const kg_config_section_t *kg_fs_section_at(size_t i) {
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    if (!backends[b].section || (b && backends[b].section == backends[b - 1].section)) continue;
    if (i-- == 0) return backends[b].section;
  }
  return NULL;
}

const char *kg_fs_writer_uri(const kg_config_t *c, const char **property) {
  const char *uri = kg_props_get(c->props, "writer.fs.uri");
  *property = "writer.fs.uri";
  if (!uri || !*uri) {
    uri = kg_props_get(c->props, "fs.uri");
    *property = "fs.uri";
  }
  return uri && *uri ? uri : "file:///";
}
