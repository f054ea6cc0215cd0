/* writer.h: the writer interface: records into one output file, through a file system stream, in a format
 * that a backend makes (writer_simple.c: Gobblin's SimpleDataWriter; writer_avro.c: Avro object container
 * files, as Gobblin's AvroHdfsDataWriter; writer_csv.c: CSV, RFC 4180). The writer is what counts the records and bytes
 * written: the task's metrics and the run's history take them from here.
 *
 * A backend is a kg_writer_ops_t; kg_writer_find picks one by writer.builder.class and writer.output.format
 * from the registry in writer.c. Adding one is a new file that fills a kg_writer_ops_t, with its property rows in
 * a kg_config_section_t that the ops name, and a row in that registry: the job's properties then include its
 * rows, and the options they make reach its open.
 *
 * Records, bytes and marks. RECORDS counts whole records given to the writer. BYTES counts the bytes in the
 * file: what the format puts first, each record as it reaches the file, and what the format puts last once
 * closed; at close it is the file's size. A backend that buffers records (Avro: a block of datums, written
 * compressed) counts them when it writes the buffer out, so BYTES may lag the records by one buffer.
 *
 * A record's outputs are all or nothing (output.c): before a record's first write the caller takes a mark
 * (kg_writer_mark), and if the record fails later it takes the file back to that mark (kg_writer_truncate).
 * Only the last mark is ever returned to. A buffering backend writes its buffer out only at a mark, or at
 * close, never within write: so whatever is written after the last mark is still in the buffer (or, for the
 * simple writer, at the end of the file), and can be taken back. */
#ifndef KG_WRITER_H
#define KG_WRITER_H

#include "fs.h"
#include "kg_common.h"

typedef struct kg_writer kg_writer_t;

/* writer.codec.type: how an Avro file's blocks are compressed (null, deflate, snappy: the names of the Avro spec),
 * or a whole text file (gzip, zstd). */
typedef enum { KG_CODEC_NULL = 0, KG_CODEC_DEFLATE, KG_CODEC_SNAPPY, KG_CODEC_GZIP, KG_CODEC_ZSTD } kg_codec_t;

/* Datum bytes after which an Avro block is written out at the next mark: Java's DataFileWriter default sync
 * interval (DataFileConstants.DEFAULT_SYNC_INTERVAL), which Gobblin's Avro writer keeps; Gobblin has no
 * property for it. */
#define KG_AVRO_BLOCK_BYTES 64000

/* The settings every writer reads: writer.c's rows, writer.codec.type and writer.deflate.level, checked against the
 * output's format (Avro blocks take null, deflate or snappy; a text file null, gzip or zstd); and the extension of
 * the output's files that follows from them. */
typedef struct {
  kg_codec_t codec;
  int deflate_level; /* 0-9 */
  char *ext;         /* writer.output.format's, and .gz or .zst for a compressed text file; owned */
} kg_writer_settings_t;
extern const kg_config_section_t kg_writer_section;
const kg_writer_settings_t *kg_writer_settings(const kg_config_t *config);

/* The simple writer's options (simple.writer.*, writer_simple.c): the bytes after each record (DELIMITER_LEN of
 * them; owned when its section made them), and whether each record's length goes before it as 8 big-endian bytes. */
typedef struct {
  const char *delimiter;
  size_t delimiter_len;
  bool prepend_size;
} kg_simple_options_t;
extern const kg_config_section_t kg_writer_simple_section;
const kg_simple_options_t *kg_simple_options(const kg_config_t *config);

/* The CSV writer's options (writer.csv.*, writer_csv.c): the columns, in order (NCOLUMNS names, at least one, none
 * twice), the byte between fields, the line end (CRLF: "\r\n", else "\n"), a header line of the column names at
 * the top of each file, and whether a field that is no column is left out (IGNORE_EXTRA) or fails its record. */
typedef struct {
  char **columns;
  size_t ncolumns;
  char delimiter;
  bool crlf;
  bool header;
  bool ignore_extra;
} kg_csv_options_t;
extern const kg_config_section_t kg_writer_csv_section;
const kg_csv_options_t *kg_csv_options(const kg_config_t *config);

/* The Avro writer's options (writer.avro.schema or writer.avro.schema.file, writer_avro.c), the text checked by
 * avro-c when the job is read: with avro output, the records' schema (SCHEMA, SCHEMA_LEN bytes; NULL when each
 * topic's latest schema from the registry is used); with csv output, a record schema whose fields are the CSV
 * columns (FIELDS, FIELDS_LEN bytes, given by property FIELDS_KEY), which the CSV writer's rows read. Owned. */
typedef struct {
  char *schema;
  size_t schema_len;
  char *fields;
  size_t fields_len;
  const char *fields_key;
} kg_avro_file_options_t;
extern const kg_config_section_t kg_writer_avro_section;
const kg_avro_file_options_t *kg_avro_file_options(const kg_config_t *config);

/* The Parquet writer's options (writer.parquet.*, writer_parquet.c): the bytes of a row group at which a mark
 * writes it out, and of a column's page at which a mark closes it. Its records' schema is writer.avro.schema's (or
 * each topic's latest from the registry), as the Avro writer's. */
typedef struct {
  int64_t block_size;
  int64_t page_size;
} kg_parquet_options_t;
#define KG_PARQUET_BLOCK_SIZE (128 * 1024 * 1024) /* parquet-mr's ParquetWriter.DEFAULT_BLOCK_SIZE */
#define KG_PARQUET_PAGE_SIZE  (1024 * 1024)       /* and its DEFAULT_PAGE_SIZE, Gobblin's writer.parquet.page.size */
extern const kg_config_section_t kg_writer_parquet_section;
/* Whether the Parquet writer writes records of the Avro schema whose JSON text is the LEN bytes at TEXT: KG_OK, or
 * KG_EINVAL with ERRBUF naming the first field it cannot write (its path, as Record.field) and what it writes. */
int kg_parquet_schema_check(const char *text, size_t len, char *errbuf);

/* What a writer is opened with: the settings every writer reads, the file's records' schema for a format that
 * writes one, and the backend's own options. The backend copies what it keeps, so the caller keeps what it
 * passed. */
typedef struct {
  kg_codec_t codec;   /* Avro: the blocks' codec; the simple and CSV writers: the whole file's (null, gzip, zstd) */
  int deflate_level;  /* 0-9, for deflate and gzip */
  size_t block_bytes; /* the block bound (datum or record bytes held before they are compressed); 0 for
                         KG_AVRO_BLOCK_BYTES */
  /* Avro: the schema's JSON text, written to the header byte for byte (SCHEMA_LEN bytes; validated by the caller);
   * NULL for the one of the backend's options. */
  const char *schema;
  size_t schema_len;
  /* The backend's own options (kg_simple_options_t, kg_csv_options_t, kg_avro_file_options_t), as its section
   * parsed them or as a test builds them; NULL for its defaults (the CSV writer has none: it needs columns). */
  const void *backend;
} kg_writer_options_t;

/* A writer backend: one output format. Every function returns KG_OK, or an error with a sentence naming the
 * file in ERRBUF (kg_writer_io_error makes the I/O ones). */
typedef struct {
  const char *name;                   /* "simple", "avro" */
  const char *title;                  /* what `kingest validate` calls it: "the simple writer" */
  const kg_config_section_t *section; /* its property rows, whose options OPEN gets in OPTIONS->backend; NULL: none */
  bool avro_datums; /* its records are Avro binary datums of the file's schema (OPTIONS->schema): a script's tables are
                       encoded with that schema, and records of another schema go to a file of their own */
  /* Sets up W->impl from OPTIONS once W->stream is open; may write what the format puts first, and *BYTES
   * gets how many bytes that is (starts at 0). */
  int (*open)(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf);
  /* Takes one record, LEN bytes of DATA; *BYTES gets how many bytes it added to the file (0 when it waits in a
   * buffer; only read on success). Never writes a buffer out (see the marks above). KG_ERECORD when the record
   * does not fit the format (a CSV record that is not an object): nothing of it was written, and only that record
   * fails; any other error fails the file. */
  int (*write)(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf);
  /* A mark: the caller will never take the file back to before here. A buffering backend may write its buffer
   * out; *BYTES gets how many bytes that added to the file (starts at 0). NULL when nothing is buffered. */
  int (*mark)(kg_writer_t *w, int64_t *bytes, char *errbuf);
  /* Takes the file back to what it held after RECORDS records in BYTES bytes: counts of the last mark. */
  int (*truncate)(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf);
  /* Writes what is buffered and what the format puts last, before the stream is synced and closed; *BYTES
   * gets how many bytes that added (starts at 0). NULL when nothing. */
  int (*finish)(kg_writer_t *w, int64_t *bytes, char *errbuf);
  /* Frees W->impl. */
  void (*release)(kg_writer_t *w);
} kg_writer_ops_t;

/* An open writer. Backends use its fields; the rest of the engine calls the functions below. */
struct kg_writer {
  const kg_writer_ops_t *ops;
  kg_fs_stream_t *stream; /* the file, owned */
  char *path;             /* owned */
  int64_t records;        /* whole records given to the writer (see the top of this file) */
  int64_t bytes;          /* bytes in the file so far (see the top of this file) */
  bool checked;           /* during write: the caller has checked the record (kg_writer_write_checked) */
  void *impl;             /* the backend's state, owned by it */
};

/* The I-th section of the writers in the registry, in its order (NULL past the last). */
const kg_config_section_t *kg_writer_section_at(size_t i);

/* The options a job's files of backend OPS are opened with: CONFIG's writer settings and OPS's own options, with
 * SCHEMA (SCHEMA_LEN bytes, may be NULL) as the files' schema. */
kg_writer_options_t kg_writer_options_of(const kg_config_t *config, const kg_writer_ops_t *ops, const char *schema,
                                         size_t schema_len);

/* The backend for writer.builder.class BUILDER_CLASS (its last dotted part is matched; NULL for the default,
 * SimpleDataWriterBuilder) and writer.output.format FORMAT. KG_EINVAL naming both when there is none. */
int kg_writer_find(const char *builder_class, const char *format, const kg_writer_ops_t **out, char *errbuf);

/* The formats of the registry's rows (writer.output.format's values), each once, in the registry's order: at most
 * SIZE - 1 of them into OUT, then NULL. */
void kg_writer_formats(const char **out, size_t size);
/* The simple writer (writer_simple.c): each record's bytes, optionally preceded by its size, then the
 * delimiter; the file compressed as a whole by gzip or zstd, or not. Also the writer of quarantined records, as
 * JSON lines. */
extern const kg_writer_ops_t kg_writer_simple;
/* The CSV writer (writer_csv.c): each record a JSON object (a table the script returned, a JSON payload, an Avro
 * record as JSON) or array, written as one CSV line of the columns of its options (kg_csv_options_t); the file
 * compressed as the simple writer's. */
extern const kg_writer_ops_t kg_writer_csv;
/* The Avro writer (writer_avro.c): an Avro object container file whose records are Avro binary datums of the
 * file's schema (OPTIONS->schema, else its options'), written as they are, in blocks compressed by OPTIONS->codec. */
extern const kg_writer_ops_t kg_writer_avro;
/* The Parquet writer (writer_parquet.c): a Parquet file whose rows are the records, Avro binary datums of a flat
 * record schema (OPTIONS->schema), as columns of pages compressed by OPTIONS->codec (null: UNCOMPRESSED). */
extern const kg_writer_ops_t kg_writer_parquet;

/* Creates PATH (and its folder) on FS with the format of OPS; never replaces an existing file (KG_EIO naming
 * it). *OUT is owned by the caller, who ends it with kg_writer_close or kg_writer_abort. */
int kg_writer_open(kg_fs_t *fs, const kg_writer_ops_t *ops, const char *path, const kg_writer_options_t *options,
                   kg_writer_t **out, char *errbuf);
/* Appends one record. KG_EIO names the file and the reason (disk full, file too large); what the failed record
 * wrote is not counted. KG_ERECORD (the record does not fit the format) leaves the file as it was. */
int kg_writer_write(kg_writer_t *w, const char *data, size_t len, char *errbuf);
/* The same for a record the caller has checked to be what the format takes (an Avro datum of the file's
 * schema): a backend that checks its records skips it. */
int kg_writer_write_checked(kg_writer_t *w, const char *data, size_t len, char *errbuf);
/* Marks a record boundary (see the top of this file): *RECORDS and *BYTES get the counts to give
 * kg_writer_truncate to come back here. The caller will not take the file back to before the last mark. May
 * write a buffer out: KG_EIO names the file. */
int kg_writer_mark(kg_writer_t *w, int64_t *records, int64_t *bytes, char *errbuf);
/* Takes back everything written since the last mark, whose counts RECORDS and BYTES are, so that a record's
 * outputs are all or nothing. KG_EIO names the file; KG_EINVAL when the counts are not the last mark's and the
 * backend cannot go back there (Avro, to a block already written out). */
int kg_writer_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf);
/* Finishes (writes what is buffered and what the format puts last), syncs and closes the file; frees W.
 * *RECORDS and *BYTES (either may be NULL) get what the file holds, also on failure, when the file is left for
 * the caller to clean up. */
int kg_writer_close(kg_writer_t *w, int64_t *records, int64_t *bytes, char *errbuf);
/* Closes and deletes the file; frees W. NULL is a no-op. */
void kg_writer_abort(kg_writer_t *w);
static inline int64_t kg_writer_records(const kg_writer_t *w) { return w->records; }
static inline int64_t kg_writer_bytes(const kg_writer_t *w) { return w->bytes; }
static inline const char *kg_writer_path(const kg_writer_t *w) { return w->path; }

/* For backends: KG_EIO, "cannot write output file <path>: <REASON>". */
int kg_writer_io_error(const kg_writer_t *w, const char *reason, char *errbuf);

#endif
