/* writer_simple.c: Gobblin's SimpleDataWriter: each record's bytes, optionally preceded by its size (8 bytes,
 * big-endian), followed by the delimiter. */
#include <stdlib.h>
#include <string.h>

#include "writer.h"

typedef struct {
  char *delimiter; /* DELIMITER_LEN bytes, owned */
  size_t delimiter_len;
  bool prepend_size;
} simple_t;

static int simple_open(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf) {
  simple_t *s = kg_xcalloc(1, sizeof *s);
  s->delimiter = kg_xstrndup(options->delimiter ? options->delimiter : "", options->delimiter_len);
  s->delimiter_len = options->delimiter_len;
  s->prepend_size = options->prepend_size;
  w->impl = s;
  return KG_OK;
}

static int simple_write(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf) {
  simple_t *s = w->impl;
  char why[KG_ERRLEN];
  if (s->prepend_size) {
    unsigned char size[8];
    uint64_t n = len;
    for (int i = 7; i >= 0; i--, n >>= 8)
      size[i] = (unsigned char)(n & 0xff);
    if (kg_fs_stream_write(w->stream, size, 8, why)) return kg_writer_io_error(w, why, errbuf);
  }
  if (kg_fs_stream_write(w->stream, data, len, why) ||
      kg_fs_stream_write(w->stream, s->delimiter, s->delimiter_len, why))
    return kg_writer_io_error(w, why, errbuf);
  *bytes = (int64_t)(len + s->delimiter_len + (s->prepend_size ? 8 : 0));
  return KG_OK;
}

static int simple_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  char why[KG_ERRLEN];
  if (kg_fs_stream_truncate(w->stream, bytes, why)) return kg_writer_io_error(w, why, errbuf);
  return KG_OK;
}

static void simple_release(kg_writer_t *w) {
  simple_t *s = w->impl;
  if (s) free(s->delimiter);
  free(s);
  w->impl = NULL;
}

const kg_writer_ops_t kg_writer_simple = {
    .name = "simple",
    .open = simple_open,
    .write = simple_write,
    .mark = NULL,
    .truncate = simple_truncate,
    .finish = NULL,
    .release = simple_release,
};
