/* writer_avro.c: Avro object container files (Gobblin's AvroHdfsDataWriter), framed here rather than by
 * avro-c's file writer, which rewrites the schema it stores (logicalType, doc, defaults and aliases lost), fixes
 * deflate at level 9, refuses a record larger than its block, and keeps its error text in one global buffer.
 *
 * A record is one Avro binary datum of the file's schema; its bytes go into the file as they are. Each is walked
 * once with the schema first (kg_avro_is_datum: no decode, no allocation), so that bytes that are not exactly one datum
 * of it (a raw payload, a record framed for a registry) fail the write instead of making a file no reader can
 * read.
 * The file is the header (magic "Obj\1", the metadata map with avro.schema, the schema's text byte for byte,
 * and avro.codec, then a 16-byte random sync marker), then blocks: the datum count, the size of the block's
 * data, the data (the datums, compressed by the codec), the sync marker. Datums wait in the pending block until
 * a mark finds it holding at least the block bound, or the file is finished (writer.h: marks and truncation).
 * Codecs, as the Avro spec has them: null; deflate (raw RFC 1951, zlib with negative window bits); snappy (each
 * block's data followed by the big-endian CRC32 of the uncompressed datums). */
#include <errno.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"
#include "avro_codec.h"
#include "avro_registry.h"
#include "writer.h"

typedef struct {
  kg_codec_t codec;
  int deflate_level;
  size_t block_bytes;     /* datum bytes at which a mark writes the pending block out */
  unsigned char sync[16]; /* the file's sync marker */
  kg_buf_t block;         /* the pending block's datums, back to back */
  size_t *ends;           /* ends[i]: the end of datum i in BLOCK (NENDS of them, CAP allocated) */
  size_t nends, cap;      /* NENDS: the datums in the pending block */
  int64_t records_before; /* records in blocks already written (the writer's records minus NENDS) */
  kg_buf_t out;           /* a block's framing and compressed data, reused */
  z_stream z;             /* the deflate stream, reset for each block */
  bool z_ready;           /* Z was set up by deflateInit2 */
  kg_avro_shape_t *shape; /* the file's schema, to check each datum against; NULL until parsed */
} ocf_t;

/* Appends N as an Avro long: zig-zag, then 7 bits a byte, low bits first. */
static void put_long(kg_buf_t *buf, int64_t n) {
  uint64_t z = ((uint64_t)n << 1) ^ (uint64_t)(n >> 63);
  unsigned char b[10];
  size_t len = 0;
  do {
    b[len] = (unsigned char)(z & 0x7f);
    z >>= 7;
    if (z) b[len] |= 0x80;
    len++;
  } while (z);
  kg_buf_append(buf, b, len);
}

/* Appends LEN bytes of P as Avro bytes (or string): the length, then the bytes. */
static void put_bytes(kg_buf_t *buf, const void *p, size_t len) {
  put_long(buf, (int64_t)len);
  kg_buf_append(buf, p, len);
}

/* Fills the 16 bytes of SYNC at random. */
static void random_sync(unsigned char sync[16]) {
  size_t got = 0;
  while (got < 16) {
    ssize_t n = getrandom(sync + got, 16 - got, 0);
    if (n > 0)
      got += (size_t)n;
    else if (errno != EINTR)
      break;
  }
  if (got == 16) return;
  /* No getrandom(2) (an old kernel): the time and the address of SYNC still tell files apart. */
  uint64_t seed = (uint64_t)kg_now_ms() ^ (uint64_t)(uintptr_t)sync ^ ((uint64_t)getpid() << 32);
  for (size_t i = got; i < 16; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    sync[i] = (unsigned char)(seed >> 56);
  }
}

static const char *codec_name(kg_codec_t codec) {
  return codec == KG_CODEC_DEFLATE ? "deflate" : codec == KG_CODEC_SNAPPY ? "snappy" : "null";
}

static int ocf_open(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf) {
  const kg_avro_file_options_t *own = options->backend;
  const char *schema = options->schema ? options->schema : own ? own->schema : NULL;
  size_t schema_len = options->schema ? options->schema_len : own ? own->schema_len : 0;
  ocf_t *a = kg_xcalloc(1, sizeof *a);
  w->impl = a;
  a->codec = options->codec;
  a->deflate_level = options->deflate_level;
  a->block_bytes = options->block_bytes ? options->block_bytes : KG_AVRO_BLOCK_BYTES;
  if (!schema || !schema_len) return kg_fail(errbuf, KG_EINVAL, "cannot write Avro file %s: no schema", w->path);
  /* The schema was checked when the job started (or, from a registry, when the task met it). */
  char serr[KG_ERRLEN];
  if (!(a->shape = kg_avro_shape_parse(schema, schema_len, serr)))
    return kg_fail(errbuf, KG_EINVAL, "cannot write Avro file %s: its schema is %s", w->path, serr);
  if (a->codec == KG_CODEC_DEFLATE) {
    if (deflateInit2(&a->z, a->deflate_level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return kg_fail(errbuf, KG_EINVAL, "cannot write Avro file %s: deflate level %d refused by zlib", w->path,
                     a->deflate_level);
    a->z_ready = true;
  }
  random_sync(a->sync);
  kg_buf_t header = {0};
  kg_buf_append(&header, "Obj\x01", 4);
  put_long(&header, 2); /* one block of two metadata entries, then the empty block that ends the map */
  put_bytes(&header, "avro.schema", 11);
  put_bytes(&header, schema, schema_len);
  put_bytes(&header, "avro.codec", 10);
  put_bytes(&header, codec_name(a->codec), strlen(codec_name(a->codec)));
  put_long(&header, 0);
  kg_buf_append(&header, a->sync, 16);
  char why[KG_ERRLEN];
  int rc = kg_fs_stream_write(w->stream, header.data, header.len, why) ? kg_writer_io_error(w, why, errbuf) : KG_OK;
  *bytes = (int64_t)header.len;
  kg_buf_free(&header);
  return rc;
}

static int ocf_write(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf) {
  ocf_t *a = w->impl;
  if (!w->checked && !kg_avro_is_datum(a->shape, data, len))
    return kg_fail(errbuf, KG_EINVAL,
                   "cannot write Avro file %s: a record of %zu bytes is not one binary datum of the file's schema "
                   "(writer.avro.schema)",
                   w->path, len);
  if (a->nends == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 256;
    a->ends = kg_xrealloc(a->ends, a->cap * sizeof *a->ends);
  }
  kg_buf_append(&a->block, data, len);
  a->ends[a->nends++] = a->block.len;
  *bytes = 0; /* in the file when its block is written out */
  return KG_OK;
}

/* Compresses the pending block's datums into A->out after the framing in it; KG_EIO naming the codec. */
static int compress_block(kg_writer_t *w, ocf_t *a, char *errbuf) {
  const char *src = a->block.data ? a->block.data : "";
  size_t n = a->block.len;
  kg_buf_t *out = &a->out;
  if (a->codec == KG_CODEC_NULL) {
    put_long(out, (int64_t)n);
    kg_buf_append(out, src, n);
    return KG_OK;
  }
  char *tmp = NULL;
  size_t tmp_len = 0;
  if (a->codec == KG_CODEC_DEFLATE) {
    if (n > UINT32_MAX) return kg_writer_io_error(w, "an Avro block over 4 GB cannot be deflated", errbuf);
    tmp_len = deflateBound(&a->z, (uLong)n);
    tmp = kg_xmalloc(tmp_len);
    a->z.next_in = (Bytef *)src;
    a->z.avail_in = (uInt)n;
    a->z.next_out = (Bytef *)tmp;
    a->z.avail_out = (uInt)tmp_len;
    int zrc = deflate(&a->z, Z_FINISH);
    tmp_len -= a->z.avail_out;
    deflateReset(&a->z);
    if (zrc != Z_STREAM_END) {
      free(tmp);
      return kg_writer_io_error(w, "deflate failed", errbuf);
    }
    put_long(out, (int64_t)tmp_len);
    kg_buf_append(out, tmp, tmp_len);
  } else {
    tmp_len = snappy_max_compressed_length(n);
    tmp = kg_xmalloc(tmp_len + 4);
    if (snappy_compress(src, n, tmp, &tmp_len) != SNAPPY_OK) {
      free(tmp);
      return kg_writer_io_error(w, "snappy compression failed", errbuf);
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < n;) { /* crc32 takes at most a uInt at a time */
      uInt chunk = n - off > (1u << 30) ? (1u << 30) : (uInt)(n - off);
      crc = crc32(crc, (const Bytef *)src + off, chunk);
      off += chunk;
    }
    unsigned char *c = (unsigned char *)tmp + tmp_len;
    c[0] = (unsigned char)(crc >> 24), c[1] = (unsigned char)(crc >> 16), c[2] = (unsigned char)(crc >> 8);
    c[3] = (unsigned char)crc;
    put_long(out, (int64_t)tmp_len + 4);
    kg_buf_append(out, tmp, tmp_len + 4);
  }
  free(tmp);
  return KG_OK;
}

/* Writes the pending block out, when it has datums; *BYTES gets its size in the file. */
static int flush_block(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  ocf_t *a = w->impl;
  if (!a->nends) return KG_OK;
  a->out.len = 0;
  put_long(&a->out, (int64_t)a->nends);
  int rc = compress_block(w, a, errbuf);
  if (rc) return rc;
  kg_buf_append(&a->out, a->sync, 16);
  char why[KG_ERRLEN];
  if (kg_fs_stream_write(w->stream, a->out.data, a->out.len, why)) return kg_writer_io_error(w, why, errbuf);
  *bytes += (int64_t)a->out.len;
  a->records_before += (int64_t)a->nends;
  a->nends = 0;
  a->block.len = 0;
  /* A large block's buffers are not kept for the life of the file. */
  if (a->out.cap > 4 * a->block_bytes) kg_buf_free(&a->out);
  if (a->block.cap > 4 * a->block_bytes) kg_buf_free(&a->block);
  return KG_OK;
}

static int ocf_mark(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  ocf_t *a = w->impl;
  return a->block.len >= a->block_bytes ? flush_block(w, bytes, errbuf) : KG_OK;
}

/* Back to the last mark: only datums of the pending block can be taken back, as a mark writes blocks out. */
static int ocf_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  ocf_t *a = w->impl;
  int64_t keep = records - a->records_before;
  if (bytes != w->bytes || keep < 0 || keep > (int64_t)a->nends)
    return kg_fail(errbuf, KG_EINVAL,
                   "cannot take output file %s back to %lld records in %lld bytes: the Avro writer can only take back "
                   "the records of its pending block (it holds records %lld to %lld, after %lld bytes)",
                   w->path, (long long)records, (long long)bytes, (long long)a->records_before,
                   (long long)(a->records_before + (int64_t)a->nends), (long long)w->bytes);
  a->nends = (size_t)keep;
  a->block.len = keep ? a->ends[keep - 1] : 0;
  return KG_OK;
}

static int ocf_finish(kg_writer_t *w, int64_t *bytes, char *errbuf) { return flush_block(w, bytes, errbuf); }

static void ocf_release(kg_writer_t *w) {
  ocf_t *a = w->impl;
  if (a) {
    if (a->z_ready) deflateEnd(&a->z);
    kg_avro_shape_free(a->shape);
    kg_buf_free(&a->block);
    kg_buf_free(&a->out);
    free(a->ends);
  }
  free(a);
  w->impl = NULL;
}

const kg_writer_ops_t kg_writer_avro = {
    .name = "avro",
    .title = "the Avro writer",
    .section = &kg_writer_avro_section,
    .avro_datums = true,
    .open = ocf_open,
    .write = ocf_write,
    .mark = ocf_mark,
    .truncate = ocf_truncate,
    .finish = ocf_finish,
    .release = ocf_release,
};

/* ---- the Avro writer's properties ---------------------------------------------------------------------------- */

/* Avro output, or Parquet output of Avro records: both take the records' Avro schema. */
static bool is_avro(const kg_config_t *c) {
  return c->output_format && (!strcmp(c->output_format, "avro") || !strcmp(c->output_format, "parquet"));
}
static bool is_parquet(const kg_config_t *c) { return c->output_format && !strcmp(c->output_format, "parquet"); }
static bool is_csv(const kg_config_t *c) { return c->output_format && !strcmp(c->output_format, "csv"); }

static char *no_schema(const kg_config_t *c, const void *options) {
  (void)c, (void)options;
  return kg_xstrdup("");
}

/* The bytes of file PATH: a new string of *LEN bytes, or NULL with the reason in WHY. */
static char *read_file(const char *path, size_t *len, char *why, size_t why_size) {
  int error = 0;
  char *data = kg_read_file(path, len, &error);
  if (!data) snprintf(why, why_size, "%s", error > 0 ? strerror(error) : "read error");
  return data;
}

/* writer.avro.schema, or writer.avro.schema.file, read together: the schema text, checked by avro-c. avro-c
 * keeps its error text in one global buffer: it is read right after the failing call, on the main thread. */
static int set_avro_schema(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                           kg_property_value_t *v, char *errbuf) {
  kg_avro_file_options_t *o = options;
  const kg_property_t *file_row = kg_config_property("writer.avro.schema.file");
  const char *file = kg_props_get(c->props, file_row->name);
  const char *given = key ? key : file ? file_row->name : NULL;
  if (key && file) {
    free(v->s);
    return kg_fail(errbuf, KG_EINVAL, "%s: properties %s and %s are both set; set one of them",
                   kg_config_origin(c, file_row->name), p->name, file_row->name);
  }
  bool csv = is_csv(c) && given; /* a record schema gives the CSV writer its columns */
  if (!is_avro(c) && !csv) {
    free(v->s);
    if (!given) return KG_OK;
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s is read by the Avro writer, and by the CSV writer for its columns, and writer.output.format "
                   "is %s",
                   kg_config_origin(c, given), given, c->output_format);
  }
  if (!given) {
    free(v->s);
    if (kg_registry_settings(c)->framing != KG_FRAMING_NONE)
      return KG_OK; /* each topic's latest schema, from the registry */
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: writer.output.format=%s needs the records' Avro schema: set writer.avro.schema (its JSON "
                   "text; `schema` in a job.lua) or writer.avro.schema.file (a file holding it), or read Avro records "
                   "from a schema registry (kafka.deserializer.type=CONFLUENT_AVRO)",
                   c->job_file, c->output_format);
  }
  size_t len = strlen(v->s);
  char *path = NULL;
  if (!key) {
    free(v->s);
    kg_property_value_t pv;
    int rc = kg_property_parse(file_row, file_row->name, kg_config_origin(c, file_row->name), file, NULL, &pv, errbuf);
    if (rc) return rc;
    path = pv.s;
    char why[256];
    v->s = read_file(path, &len, why, sizeof why);
    if (!v->s) {
      rc = kg_fail(errbuf, KG_EINVAL, "%s: %s=%s: cannot read %s: %s", kg_config_origin(c, file_row->name),
                   file_row->name, file, path, why);
      free(path);
      return rc;
    }
  }
  if (csv) { /* the text is for the CSV writer's columns: the records are not Avro */
    o->fields = v->s;
    o->fields_len = len;
    o->fields_key = path ? file_row->name : key;
  } else {
    o->schema = v->s;
    o->schema_len = len;
  }
  avro_schema_t schema = NULL;
  if (avro_schema_from_json_length(v->s, len, &schema)) {
    const char *reason = avro_strerror();
    int rc = path
                 ? kg_fail(errbuf, KG_EINVAL, "%s: %s=%s: invalid Avro schema in %s: %s",
                           kg_config_origin(c, file_row->name), file_row->name, file, path, reason)
                 : kg_fail(errbuf, KG_EINVAL, "%s: %s: invalid Avro schema: %s", kg_config_origin(c, key), key, reason);
    free(path);
    return rc;
  }
  avro_schema_decref(schema);
  char perr[KG_ERRLEN];
  int rc = is_parquet(c) ? kg_parquet_schema_check(v->s, len, perr) : KG_OK;
  if (rc)
    rc = path ? kg_fail(errbuf, rc, "%s: %s=%s: the schema in %s cannot be written as Parquet: %s",
                        kg_config_origin(c, file_row->name), file_row->name, file, path, perr)
              : kg_fail(errbuf, rc, "%s: %s: the schema cannot be written as Parquet: %s", kg_config_origin(c, key),
                        key, perr);
  free(path);
  return rc;
}

static void clear(void *options) {
  kg_avro_file_options_t *o = options;
  free(o->schema);
  free(o->fields);
}

/* Read after writer.output.format and the framing of the input (the registry's rows), which they depend on. */
static const kg_property_t rows[] = {
    {.name = "writer.avro.schema",
     .alias = "schema",
     .type = KG_PROP_STRING,
     .def_doc = "none",
     .computed = no_schema,
     .set = set_avro_schema,
     .doc = "The output's Avro schema, as JSON text (`schema` in a job.lua): `avro` and `parquet` output need it, or "
            "`writer.avro.schema.file`, unless it reads Avro records from a registry (then each topic's latest "
            "schema). Records are written with it ([Avro](#avro)); its text goes into each file's header byte for "
            "byte. Checked when the job starts, the error naming the schema's problem. With `csv` output, a record "
            "schema whose fields are the columns."},
    {.name = "writer.avro.schema.file",
     .type = KG_PROP_PATH,
     .part_of = "writer.avro.schema",
     .doc = "A file holding the records' Avro schema (instead of `writer.avro.schema`)."},
};

const kg_config_section_t kg_writer_avro_section = {.name = "writer.avro",
                                                    .rows = rows,
                                                    .nrows = sizeof rows / sizeof rows[0],
                                                    .size = sizeof(kg_avro_file_options_t),
                                                    .clear = clear};

const kg_avro_file_options_t *kg_avro_file_options(const kg_config_t *config) {
  return kg_config_options(config, &kg_writer_avro_section);
}
