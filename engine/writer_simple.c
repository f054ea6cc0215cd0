/* writer_simple.c: Gobblin's SimpleDataWriter: each record's bytes, optionally preceded by its size (8 bytes,
 * big-endian), followed by the delimiter; the whole file optionally compressed (writer.codec.type gzip or zstd,
 * read by `gzip -dc` and `zstd -dc`).
 *
 * Uncompressed, a record goes to the stream as it comes, and taking records back truncates the file. Compressed,
 * what a compressor has taken cannot be taken back, so records wait in a pending buffer as the Avro writer's
 * datums do (writer.h: marks): a mark that finds the buffer holding at least the block bound hands it to the
 * compressor, flushed, and taking back cuts the buffer to the last mark. BYTES counts compressed bytes as the
 * compressor gives them out. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "buf.h"
#include "writer.h"

typedef struct {
  char *delimiter; /* DELIMITER_LEN bytes, owned */
  size_t delimiter_len;
  bool prepend_size;
  kg_codec_t codec; /* KG_CODEC_NULL, _GZIP or _ZSTD */
  size_t block_bytes;
  kg_buf_t pending; /* records since they were last handed to the compressor */
  size_t mark;      /* PENDING's length at the last mark */
  kg_buf_t out;     /* compressed bytes, reused */
  z_stream z;       /* gzip */
  bool z_ready;
  ZSTD_CCtx *zstd; /* zstd */
} simple_t;

static int simple_open(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf) {
  static const kg_simple_options_t none = {0};
  const kg_simple_options_t *o = options->backend ? options->backend : &none;
  simple_t *s = kg_xcalloc(1, sizeof *s);
  w->impl = s;
  s->delimiter = kg_xstrndup(o->delimiter ? o->delimiter : "", o->delimiter_len);
  s->delimiter_len = o->delimiter_len;
  s->prepend_size = o->prepend_size;
  s->codec = options->codec;
  s->block_bytes = options->block_bytes ? options->block_bytes : KG_AVRO_BLOCK_BYTES;
  if (s->codec == KG_CODEC_GZIP) {
    /* windowBits 15 + 16: a gzip header and trailer around the deflate stream. */
    if (deflateInit2(&s->z, options->deflate_level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return kg_fail(errbuf, KG_EINVAL, "cannot write %s: gzip level %d refused by zlib", w->path,
                     options->deflate_level);
    s->z_ready = true;
  } else if (s->codec == KG_CODEC_ZSTD) {
    s->zstd = ZSTD_createCCtx();
    if (!s->zstd) return kg_fail(errbuf, KG_EINVAL, "cannot write %s: zstd failed to start", w->path);
  } else if (s->codec != KG_CODEC_NULL) {
    return kg_fail(errbuf, KG_EINVAL, "cannot write %s: text output is compressed by gzip or zstd only", w->path);
  }
  return KG_OK;
}

/* Appends one record's bytes to BUF. */
static void frame(const simple_t *s, kg_buf_t *buf, const char *data, size_t len) {
  if (s->prepend_size) {
    unsigned char size[8];
    uint64_t n = len;
    for (int i = 7; i >= 0; i--, n >>= 8)
      size[i] = (unsigned char)(n & 0xff);
    kg_buf_append(buf, size, 8);
  }
  kg_buf_append(buf, data, len);
  kg_buf_append(buf, s->delimiter, s->delimiter_len);
}

static int simple_write(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf) {
  simple_t *s = w->impl;
  if (s->codec != KG_CODEC_NULL) {
    frame(s, &s->pending, data, len);
    *bytes = 0; /* in the file once compressed */
    return KG_OK;
  }
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

/* Hands what is pending to the compressor (and, when FINISH, ends the stream), writing what comes out; *BYTES
 * gets how many bytes that is. */
static int compress_pending(kg_writer_t *w, simple_t *s, bool finish, int64_t *bytes, char *errbuf) {
  const char *src = s->pending.data ? s->pending.data : "";
  size_t n = s->pending.len;
  s->out.len = 0;
  if (s->codec == KG_CODEC_GZIP) {
    s->z.next_in = (Bytef *)src;
    s->z.avail_in = (uInt)n; /* at most a few blocks: well under 4 GB */
    int zrc;
    do {
      if (s->out.cap - s->out.len < 65536) {
        s->out.cap = s->out.len + 65536 + 1;
        s->out.data = kg_xrealloc(s->out.data, s->out.cap);
      }
      s->z.next_out = (Bytef *)s->out.data + s->out.len;
      s->z.avail_out = (uInt)(s->out.cap - 1 - s->out.len);
      size_t before = s->z.avail_out;
      zrc = deflate(&s->z, finish ? Z_FINISH : Z_SYNC_FLUSH);
      s->out.len += before - s->z.avail_out;
      if (zrc == Z_STREAM_ERROR) return kg_writer_io_error(w, "gzip compression failed", errbuf);
    } while (s->z.avail_in > 0 || (finish && zrc != Z_STREAM_END) || (!finish && s->z.avail_out == 0));
    /* Each block is flushed whole (Z_SYNC_FLUSH; ZSTD_e_flush below): what is counted as written is what the
     * file holds, which is what writer.file.max.size compares, at the cost of a few bytes a block. */
  } else {
    ZSTD_inBuffer in = {src, n, 0};
    size_t left;
    do {
      if (s->out.cap - s->out.len < ZSTD_CStreamOutSize()) {
        s->out.cap = s->out.len + ZSTD_CStreamOutSize() + 1;
        s->out.data = kg_xrealloc(s->out.data, s->out.cap);
      }
      ZSTD_outBuffer out = {s->out.data + s->out.len, s->out.cap - 1 - s->out.len, 0};
      left = ZSTD_compressStream2(s->zstd, &out, &in, finish ? ZSTD_e_end : ZSTD_e_flush);
      if (ZSTD_isError(left)) return kg_writer_io_error(w, ZSTD_getErrorName(left), errbuf);
      s->out.len += out.pos;
    } while (in.pos < in.size || left != 0);
  }
  s->pending.len = 0;
  s->mark = 0;
  char why[KG_ERRLEN];
  if (s->out.len && kg_fs_stream_write(w->stream, s->out.data, s->out.len, why))
    return kg_writer_io_error(w, why, errbuf);
  *bytes += (int64_t)s->out.len;
  return KG_OK;
}

static int simple_mark(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  simple_t *s = w->impl;
  if (s->codec == KG_CODEC_NULL) return KG_OK;
  if (s->pending.len >= s->block_bytes) {
    int rc = compress_pending(w, s, false, bytes, errbuf);
    if (rc) return rc;
  }
  s->mark = s->pending.len;
  return KG_OK;
}

static int simple_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  simple_t *s = w->impl;
  if (s->codec != KG_CODEC_NULL) {
    if (bytes != w->bytes)
      return kg_fail(errbuf, KG_EINVAL,
                     "cannot take output file %s back to %lld bytes: compressed, it can only drop the records since "
                     "its last mark (it holds %lld bytes)",
                     w->path, (long long)bytes, (long long)w->bytes);
    s->pending.len = s->mark;
    return KG_OK;
  }
  char why[KG_ERRLEN];
  if (kg_fs_stream_truncate(w->stream, bytes, why)) return kg_writer_io_error(w, why, errbuf);
  return KG_OK;
}

static int simple_finish(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  simple_t *s = w->impl;
  return s->codec == KG_CODEC_NULL ? KG_OK : compress_pending(w, s, true, bytes, errbuf);
}

static void simple_release(kg_writer_t *w) {
  simple_t *s = w->impl;
  if (s) {
    free(s->delimiter);
    kg_buf_free(&s->pending);
    kg_buf_free(&s->out);
    if (s->z_ready) deflateEnd(&s->z);
    ZSTD_freeCCtx(s->zstd);
  }
  free(s);
  w->impl = NULL;
}

/* ---- the simple writer's properties --------------------------------------------------------------------------- */

static int set_delimiter(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                         kg_property_value_t *v, char *errbuf) {
  (void)c, (void)p, (void)key, (void)errbuf;
  kg_simple_options_t *o = options;
  o->delimiter = v->s;
  o->delimiter_len = strlen(v->s);
  return KG_OK;
}

static void clear(void *options) { free((char *)((kg_simple_options_t *)options)->delimiter); }

#define KG_FIELD(f) KG_FIELD_OF(kg_simple_options_t, f)

static const kg_property_t rows[] = {
    /* A .pull file's \n is unescaped by the properties reader; a job.lua's string is taken as it is. */
    {.name = "simple.writer.delimiter",
     .type = KG_PROP_STRING,
     .def = "\n",
     .set = set_delimiter,
     .doc = "Bytes written after each record; empty for none."},
    {.name = "simple.writer.prepend.size",
     .type = KG_PROP_BOOL,
     .def = "false",
     KG_FIELD(prepend_size),
     .doc = "Write each record's length as 8 big-endian bytes before it."},
};

const kg_config_section_t kg_writer_simple_section = {.name = "writer.simple",
                                                      .rows = rows,
                                                      .nrows = sizeof rows / sizeof rows[0],
                                                      .size = sizeof(kg_simple_options_t),
                                                      .clear = clear};

const kg_simple_options_t *kg_simple_options(const kg_config_t *config) {
  return kg_config_options(config, &kg_writer_simple_section);
}

const kg_writer_ops_t kg_writer_simple = {
    .name = "simple",
    .title = "the simple writer",
    .section = &kg_writer_simple_section,
    .open = simple_open,
    .write = simple_write,
    .mark = simple_mark,
    .truncate = simple_truncate,
    .finish = simple_finish,
    .release = simple_release,
};
