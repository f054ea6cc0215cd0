/* writer.c: the simple writer, buffered, synced to disk before its file is handed on. */
#include "writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

#define KG_WRITER_BUFFER (1 << 20)

struct kg_writer {
  FILE *file;
  char *path;
  char *buffer; /* stdio buffer, KG_WRITER_BUFFER bytes */
  char *delim;
  size_t delim_len;
  bool prepend_size;
  int64_t records;
  int64_t bytes;
};

int kg_writer_open(const char *path, const char *delim, size_t delim_len, bool prepend_size, kg_writer_t **out,
                   char *errbuf) {
  *out = NULL;
  char *dir = kg_xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  int rc = slash ? kg_fs_mkdirs(dir, errbuf) : KG_OK;
  free(dir);
  if (rc) return rc;
  FILE *f = fopen(path, "wbx");
  if (!f) return kg_fail(errbuf, KG_EIO, "cannot create output file %s: %s", path, strerror(errno));
  kg_writer_t *w = kg_xcalloc(1, sizeof *w);
  w->file = f;
  w->path = kg_xstrdup(path);
  w->buffer = kg_xmalloc(KG_WRITER_BUFFER);
  setvbuf(f, w->buffer, _IOFBF, KG_WRITER_BUFFER);
  w->delim = kg_xstrndup(delim ? delim : "", delim_len);
  w->delim_len = delim_len;
  w->prepend_size = prepend_size;
  *out = w;
  return KG_OK;
}

static int write_error(kg_writer_t *w, char *errbuf) {
  return kg_fail(errbuf, KG_EIO, "cannot write output file %s: %s", w->path, strerror(errno ? errno : EIO));
}

int kg_writer_write(kg_writer_t *w, const char *data, size_t len, char *errbuf) {
  errno = 0;
  if (w->prepend_size) {
    unsigned char size[8];
    uint64_t n = len;
    for (int i = 7; i >= 0; i--, n >>= 8)
      size[i] = (unsigned char)(n & 0xff);
    if (fwrite(size, 1, 8, w->file) != 8) return write_error(w, errbuf);
    w->bytes += 8;
  }
  if (len && fwrite(data, 1, len, w->file) != len) return write_error(w, errbuf);
  if (w->delim_len && fwrite(w->delim, 1, w->delim_len, w->file) != w->delim_len) return write_error(w, errbuf);
  w->bytes += (int64_t)(len + w->delim_len);
  w->records++;
  return KG_OK;
}

int kg_writer_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  errno = 0;
  if (bytes == w->bytes) return KG_OK;
  if (fflush(w->file) != 0 || ftruncate(fileno(w->file), (off_t)bytes) != 0 || fseeko(w->file, (off_t)bytes, SEEK_SET))
    return write_error(w, errbuf);
  w->records = records;
  w->bytes = bytes;
  return KG_OK;
}

static void release(kg_writer_t *w) {
  free(w->path);
  free(w->buffer);
  free(w->delim);
  free(w);
}

int kg_writer_close(kg_writer_t *w, char *errbuf) {
  errno = 0;
  int rc = KG_OK;
  if (fflush(w->file) != 0 || fsync(fileno(w->file)) != 0) rc = write_error(w, errbuf);
  if (fclose(w->file) != 0 && rc == KG_OK) rc = write_error(w, errbuf);
  release(w);
  return rc;
}

void kg_writer_abort(kg_writer_t *w) {
  if (!w) return;
  fclose(w->file);
  unlink(w->path);
  release(w);
}

int64_t kg_writer_records(const kg_writer_t *w) { return w->records; }
int64_t kg_writer_bytes(const kg_writer_t *w) { return w->bytes; }
const char *kg_writer_path(const kg_writer_t *w) { return w->path; }
