/* writer.h: the writer interface: records into one output file, through a file system stream, in a format
 * that a backend makes (writer_simple.c: Gobblin's SimpleDataWriter; writer_avro.c: Avro object container
 * files, as Gobblin's AvroHdfsDataWriter; writer_csv.c: CSV, RFC 4180). The writer is what counts the records and bytes
 * written: the task's metrics and the run's history take them from here.
 *
 * A backend is a kg_writer_ops_t; kg_writer_find picks one by writer.builder.class and writer.output.format
 * from the registry in writer.c. Adding one is a new file that fills a kg_writer_ops_t and a row in that
 * registry.
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

/* The CSV writer's settings (writer.csv.*): the columns, in order (NCOLUMNS names, at least one, none twice), the
 * byte between fields, the line end (CRLF: "\r\n", else "\n"), a header line of the column names at the top of
 * each file, and whether a field that is no column is left out (IGNORE_EXTRA) or fails its record. */
typedef struct {
  char **columns;
  size_t ncolumns;
  char delimiter;
  bool crlf;
  bool header;
  bool ignore_extra;
} kg_csv_options_t;

/* What a writer is opened with; the backend copies what it keeps, so the caller keeps what it passed. */
typedef struct {
  const char *delimiter; /* bytes after each record (simple.writer.delimiter), DELIMITER_LEN of them */
  size_t delimiter_len;
  bool prepend_size; /* each record's length as 8 big-endian bytes before it (simple.writer.prepend.size) */
  /* Avro: the schema's JSON text, written to the header byte for byte (SCHEMA_LEN bytes; validated by the
   * caller), the codec, its deflate level (0-9) and the block bound (datum bytes; 0 for KG_AVRO_BLOCK_BYTES).
   * The simple writer: the codec of the whole file (null, gzip at DEFLATE_LEVEL, zstd), the records held back
   * before they are compressed (BLOCK_BYTES, 0 for KG_AVRO_BLOCK_BYTES). */
  const char *schema;
  size_t schema_len;
  kg_codec_t codec;
  int deflate_level;
  size_t block_bytes;
  kg_csv_options_t csv; /* the CSV writer's; the file's codec, level and block bound are the ones above */
} kg_writer_options_t;

/* A writer backend: one output format. Every function returns KG_OK, or an error with a sentence naming the
 * file in ERRBUF (kg_writer_io_error makes the I/O ones). */
typedef struct {
  const char *name; /* "simple", "avro" */
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

/* The backend for writer.builder.class BUILDER_CLASS (its last dotted part is matched; NULL for the default,
 * SimpleDataWriterBuilder) and writer.output.format FORMAT. KG_EINVAL naming both when there is none. */
int kg_writer_find(const char *builder_class, const char *format, const kg_writer_ops_t **out, char *errbuf);
/* The simple writer (writer_simple.c): each record's bytes, optionally preceded by its size, then the
 * delimiter; the file compressed as a whole by gzip or zstd, or not. Also the writer of quarantined records, as
 * JSON lines. */
extern const kg_writer_ops_t kg_writer_simple;
/* The CSV writer (writer_csv.c): each record a JSON object (a table the script returned, a JSON payload, an Avro
 * record as JSON) or array, written as one CSV line of OPTIONS->csv's columns; the file compressed as the simple
 * writer's. */
extern const kg_writer_ops_t kg_writer_csv;
/* The Avro writer (writer_avro.c): an Avro object container file whose records are Avro binary datums of the
 * file's schema (OPTIONS->schema), written as they are, in blocks compressed by OPTIONS->codec. */
extern const kg_writer_ops_t kg_writer_avro;

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
