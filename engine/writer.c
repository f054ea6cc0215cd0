/* writer.c: the writer registry, and what every writer does whatever its format: the file through the file
 * system interface, and the counts of records and bytes. */
#include "writer.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One row per writer.builder.class and writer.output.format that kingest writes. Without a builder class, the
 * format alone chooses (writer.output.format=avro is the Avro writer). */
static const struct {
  const char *builder_class;
  const char *format;
  const kg_writer_ops_t *ops;
} backends[] = {
    {"SimpleDataWriterBuilder", "txt", &kg_writer_simple},
    {"SimpleDataWriterBuilder", "json", &kg_writer_simple},
    {"SimpleDataWriterBuilder", "csv", &kg_writer_csv},
    {"AvroDataWriterBuilder", "avro", &kg_writer_avro},
};

int kg_writer_find(const char *builder_class, const char *format, const kg_writer_ops_t **out, char *errbuf) {
  *out = NULL;
  const char *name = builder_class && *builder_class ? builder_class : NULL;
  const char *dot = name ? strrchr(name, '.') : NULL;
  if (dot) name = dot + 1;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if ((!name || !strcmp(name, backends[i].builder_class)) && format && !strcasecmp(format, backends[i].format)) {
      *out = backends[i].ops;
      return KG_OK;
    }
  return kg_fail(errbuf, KG_EINVAL,
                 "no writer for writer.builder.class=%s and writer.output.format=%s: SimpleDataWriterBuilder writes "
                 "txt, json and csv, AvroDataWriterBuilder writes avro",
                 builder_class ? builder_class : "(default)", format ? format : "(none)");
}

int kg_writer_io_error(const kg_writer_t *w, const char *reason, char *errbuf) {
  return kg_fail(errbuf, KG_EIO, "cannot write output file %s: %s", w->path, reason);
}

static void release(kg_writer_t *w) {
  if (w->ops->release) w->ops->release(w);
  free(w->path);
  free(w);
}

int kg_writer_open(kg_fs_t *fs, const kg_writer_ops_t *ops, const char *path, const kg_writer_options_t *options,
                   kg_writer_t **out, char *errbuf) {
  *out = NULL;
  const char *slash = strrchr(path, '/');
  if (slash && slash != path) {
    char *dir = kg_xstrndup(path, (size_t)(slash - path));
    int rc = kg_fs_mkdirs(fs, dir, errbuf);
    free(dir);
    if (rc) return rc;
  }
  kg_fs_stream_t *stream = NULL;
  char why[KG_ERRLEN];
  if (kg_fs_create(fs, path, KG_FS_CREATE_NEW, &stream, why))
    return kg_fail(errbuf, KG_EIO, "cannot create output file %s: %s", path, why);
  kg_writer_t *w = kg_xcalloc(1, sizeof *w);
  w->ops = ops;
  w->stream = stream;
  w->path = kg_xstrdup(path);
  int64_t bytes = 0;
  int rc = ops->open(w, options, &bytes, errbuf);
  if (rc) {
    kg_writer_abort(w);
    return rc;
  }
  w->bytes = bytes;
  *out = w;
  return KG_OK;
}

int kg_writer_write(kg_writer_t *w, const char *data, size_t len, char *errbuf) {
  int64_t bytes = 0;
  int rc = w->ops->write(w, data, len, &bytes, errbuf);
  if (rc) return rc;
  w->records++;
  w->bytes += bytes;
  return KG_OK;
}

int kg_writer_write_checked(kg_writer_t *w, const char *data, size_t len, char *errbuf) {
  w->checked = true;
  int rc = kg_writer_write(w, data, len, errbuf);
  w->checked = false;
  return rc;
}

int kg_writer_mark(kg_writer_t *w, int64_t *records, int64_t *bytes, char *errbuf) {
  int64_t added = 0;
  int rc = w->ops->mark ? w->ops->mark(w, &added, errbuf) : KG_OK;
  if (!rc) w->bytes += added;
  *records = w->records;
  *bytes = w->bytes;
  return rc;
}

int kg_writer_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  if (records == w->records && bytes == w->bytes) return KG_OK;
  int rc = w->ops->truncate(w, records, bytes, errbuf);
  if (rc) return rc;
  w->records = records;
  w->bytes = bytes;
  return KG_OK;
}

int kg_writer_close(kg_writer_t *w, int64_t *records, int64_t *bytes, char *errbuf) {
  char why[KG_ERRLEN];
  int64_t added = 0;
  int rc = w->ops->finish ? w->ops->finish(w, &added, errbuf) : KG_OK;
  if (!rc) w->bytes += added;
  if (records) *records = w->records;
  if (bytes) *bytes = w->bytes;
  if (!rc && kg_fs_stream_sync(w->stream, why)) rc = kg_writer_io_error(w, why, errbuf);
  if (kg_fs_stream_close(w->stream, why) && !rc) rc = kg_writer_io_error(w, why, errbuf);
  release(w);
  return rc;
}

void kg_writer_abort(kg_writer_t *w) {
  if (!w) return;
  kg_fs_stream_abort(w->stream);
  release(w);
}
