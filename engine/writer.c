/* writer.c: the writer registry, and what every writer does whatever its format: the file through the file
 * system interface, and the counts of records and bytes. */
#include "writer.h"

#include "buf.h"

#include <stddef.h>
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
    {"SimpleDataWriterBuilder", "txt", &kg_writer_simple},       {"SimpleDataWriterBuilder", "json", &kg_writer_simple},
    {"SimpleDataWriterBuilder", "csv", &kg_writer_csv},          {"AvroDataWriterBuilder", "avro", &kg_writer_avro},
    {"ParquetDataWriterBuilder", "parquet", &kg_writer_parquet},
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
  kg_buf_t what = {0}; /* each builder class and its formats, as "B writes a, b and c, C writes d" */
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    bool first = true, last = true;
    for (size_t k = 0; k < i && first; k++)
      first = strcmp(backends[k].builder_class, backends[i].builder_class) != 0;
    for (size_t k = i + 1; k < sizeof backends / sizeof backends[0] && last; k++)
      last = strcmp(backends[k].builder_class, backends[i].builder_class) != 0;
    if (first)
      kg_buf_appendf(&what, "%s%s writes %s", what.len ? ", " : "", backends[i].builder_class, backends[i].format);
    else
      kg_buf_appendf(&what, "%s%s", last ? " and " : ", ", backends[i].format);
  }
  int rc = kg_fail(errbuf, KG_EINVAL, "no writer for writer.builder.class=%s and writer.output.format=%s: %s",
                   builder_class ? builder_class : "(default)", format ? format : "(none)", what.data);
  kg_buf_free(&what);
  return rc;
}

void kg_writer_formats(const char **out, size_t size) {
  size_t n = 0;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0] && n + 1 < size; i++) {
    bool seen = false;
    for (size_t k = 0; k < n && !seen; k++)
      seen = !strcmp(out[k], backends[i].format);
    if (!seen) out[n++] = backends[i].format;
  }
  out[n] = NULL;
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

/* ---- the settings every writer reads ------------------------------------------------------------------------- */

/* kg_codec_t, then "uncompressed": Parquet's name for null. */
static const char *const codecs[] = {"null", "deflate", "snappy", "gzip", "zstd", "uncompressed", NULL};
#define UNCOMPRESSED 5

static bool is_avro(const kg_config_t *c) { return c->output_format && !strcmp(c->output_format, "avro"); }
static bool is_parquet(const kg_config_t *c) { return c->output_format && !strcmp(c->output_format, "parquet"); }

/* Gobblin's default codec, deflate, for Avro; snappy for Parquet (Gobblin's, and what Spark, Hive and Athena write);
 * text output is uncompressed. */
static char *default_codec(const kg_config_t *c, const void *options) {
  (void)options;
  return kg_xstrdup(is_avro(c) ? "deflate" : is_parquet(c) ? "snappy" : "null");
}

/* The codecs of Avro blocks and of text files differ; the file extension follows the text codec. */
static int set_codec(const kg_config_t *config, void *options, const kg_property_t *p, const char *key,
                     kg_property_value_t *v, char *errbuf) {
  const kg_config_t *c = config;
  kg_writer_settings_t *s = options;
  s->codec = v->e == UNCOMPRESSED ? KG_CODEC_NULL : (kg_codec_t)v->e;
  if (key && is_parquet(c) && s->codec == KG_CODEC_DEFLATE)
    return kg_fail(
        errbuf, KG_EINVAL,
        "%s: %s=%s: Parquet pages are compressed with snappy, gzip, zstd or uncompressed (null); deflate is a "
        "codec of Avro blocks",
        kg_config_origin(c, key), key, p->names[v->e]);
  if (is_parquet(c)) { /* the pages are compressed inside the file: its name is the format's alone */
    s->ext = kg_xstrdup(c->output_format);
    return KG_OK;
  }
  if (key && v->e == UNCOMPRESSED)
    return kg_fail(errbuf, KG_EINVAL, "%s: %s=uncompressed is Parquet's name for no compression; %s output takes null",
                   kg_config_origin(c, key), key, c->output_format);
  bool avro_codec = s->codec == KG_CODEC_NULL || s->codec == KG_CODEC_DEFLATE || s->codec == KG_CODEC_SNAPPY;
  bool text_codec = s->codec == KG_CODEC_NULL || s->codec == KG_CODEC_GZIP || s->codec == KG_CODEC_ZSTD;
  if (key && is_avro(c) && !avro_codec)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s=%s: Avro files compress their blocks with null, deflate or snappy (the codecs of the Avro "
                   "spec); %s compresses text output",
                   kg_config_origin(c, key), key, p->names[v->e], p->names[v->e]);
  if (key && !is_avro(c) && !text_codec)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: %s=%s: writer.output.format=%s is compressed with gzip or zstd (or null for none); %s is a "
                   "codec of Avro blocks",
                   kg_config_origin(c, key), key, p->names[v->e], c->output_format, p->names[v->e]);
  s->ext = kg_xasprintf("%s%s", c->output_format,
                        s->codec == KG_CODEC_GZIP   ? ".gz"
                        : s->codec == KG_CODEC_ZSTD ? ".zst"
                                                    : "");
  return KG_OK;
}

/* Gobblin's level for Avro's deflate; for gzip, 3: on the bench's records, files 1% larger than gzip's own
 * default of 6, written about 1.3 times faster, which keeps a gzip pass-through near the uncompressed one. */
static char *default_deflate_level(const kg_config_t *c, const void *options) {
  (void)c;
  return kg_xstrdup(((const kg_writer_settings_t *)options)->codec == KG_CODEC_GZIP ? "3" : "9");
}

static void clear(void *options) { free(((kg_writer_settings_t *)options)->ext); }

#define KG_FIELD(f) KG_FIELD_OF(kg_writer_settings_t, f)

/* Read after writer.output.format, whose format they check the codec against. */
static const kg_property_t rows[] = {
    {.name = "writer.codec.type",
     .type = KG_PROP_ENUM,
     .names = codecs,
     .def_doc = "deflate for avro, snappy for parquet, null otherwise",
     .computed = default_codec,
     .set = set_codec,
     .doc = "Compression: of Avro blocks, `null`, `deflate` or `snappy` (the codecs of the Avro spec; Gobblin's "
            "`bzip2` and `xz` are refused); of Parquet pages, `snappy` (the default), `gzip`, `zstd` or `uncompressed` "
            "(`null`); of text output (`txt`, `json`, `csv`), `null`, `gzip` or `zstd`, the "
            "whole file, whose name then ends in `.gz` or `.zst`."},
    {.name = "writer.deflate.level",
     .type = KG_PROP_INT,
     .def_doc = "9 for deflate, 3 for gzip",
     .computed = default_deflate_level,
     .min = 0,
     .max = 9,
     KG_FIELD(deflate_level),
     .doc = "Level of the `deflate` and `gzip` codecs; 9 is Gobblin's default for Avro, and 6 makes files of about "
            "the same size about 4.5 times faster; gzip's 3 keeps text output at the speed of a text pass-through "
            "([Performance](#performance))."},
};

const kg_config_section_t kg_writer_section = {.name = "writer",
                                               .rows = rows,
                                               .nrows = sizeof rows / sizeof rows[0],
                                               .size = sizeof(kg_writer_settings_t),
                                               .clear = clear};

const kg_writer_settings_t *kg_writer_settings(const kg_config_t *config) {
  return kg_config_options(config, &kg_writer_section);
}

const kg_config_section_t *kg_writer_section_at(size_t i) {
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    const kg_config_section_t *s = backends[b].ops->section;
    bool first = s != NULL;
    for (size_t e = 0; e < b && first; e++)
      first = backends[e].ops->section != s;
    if (first && i-- == 0) return s;
  }
  return NULL;
}

kg_writer_options_t kg_writer_options_of(const kg_config_t *config, const kg_writer_ops_t *ops, const char *schema,
                                         size_t schema_len) {
  const kg_writer_settings_t *s = kg_writer_settings(config);
  return (kg_writer_options_t){.codec = s->codec,
                               .deflate_level = s->deflate_level,
                               .schema = schema,
                               .schema_len = schema_len,
                               .backend = ops->section ? kg_config_options(config, ops->section) : NULL};
}
