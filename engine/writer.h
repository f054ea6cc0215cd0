/* writer.h: the writer interface: records into one output file, through a file system stream, in a format
 * that a backend makes (writer_simple.c: Gobblin's SimpleDataWriter). The writer is what counts the records
 * and bytes written: the task's metrics and the run's history take them from here.
 *
 * A backend is a kg_writer_ops_t; kg_writer_find picks one by writer.builder.class and writer.output.format
 * from the registry in writer.c. Adding one (say Avro) is a new file that fills a kg_writer_ops_t and a row
 * in that registry. */
#ifndef KG_WRITER_H
#define KG_WRITER_H

#include "fs.h"
#include "kg_common.h"

typedef struct kg_writer kg_writer_t;

/* What a writer is opened with; copied, so the caller keeps what it passed. */
typedef struct {
  const char *delimiter; /* bytes after each record (simple.writer.delimiter), DELIMITER_LEN of them */
  size_t delimiter_len;
  bool prepend_size; /* each record's length as 8 big-endian bytes before it (simple.writer.prepend.size) */
} kg_writer_options_t;

/* A writer backend: one output format. Every function returns KG_OK, or an error with a sentence naming the
 * file in ERRBUF (kg_writer_io_error makes the I/O ones). */
typedef struct {
  const char *name; /* "simple" */
  /* Sets up W->impl from OPTIONS once W->stream is open; may write what the format puts first. */
  int (*open)(kg_writer_t *w, const kg_writer_options_t *options, char *errbuf);
  /* Writes one record, LEN bytes of DATA, through W->stream; *BYTES gets how many bytes the record added to
   * the file (only read on success). */
  int (*write)(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf);
  /* Takes the file back to its first BYTES bytes, a size it had after a whole record. */
  int (*truncate)(kg_writer_t *w, int64_t bytes, char *errbuf);
  /* Writes what the format puts last, before the stream is synced and closed; NULL when nothing. */
  int (*finish)(kg_writer_t *w, char *errbuf);
  /* Frees W->impl. */
  void (*release)(kg_writer_t *w);
} kg_writer_ops_t;

/* An open writer. Backends use its fields; the rest of the engine calls the functions below. */
struct kg_writer {
  const kg_writer_ops_t *ops;
  kg_fs_stream_t *stream; /* the file, owned */
  char *path;             /* owned */
  int64_t records;        /* whole records in the file */
  int64_t bytes;          /* their bytes: the file's size */
  void *impl;             /* the backend's state, owned by it */
};

/* The backend for writer.builder.class BUILDER_CLASS (its last dotted part is matched; NULL for the default,
 * SimpleDataWriterBuilder) and writer.output.format FORMAT. KG_EINVAL naming both when there is none. */
int kg_writer_find(const char *builder_class, const char *format, const kg_writer_ops_t **out, char *errbuf);
/* The simple writer (writer_simple.c): each record's bytes, optionally preceded by its size, then the
 * delimiter. Also the writer of quarantined records, as JSON lines. */
extern const kg_writer_ops_t kg_writer_simple;

/* Creates PATH (and its folder) on FS with the format of OPS; never replaces an existing file (KG_EIO naming
 * it). *OUT is owned by the caller, who ends it with kg_writer_close or kg_writer_abort. */
int kg_writer_open(kg_fs_t *fs, const kg_writer_ops_t *ops, const char *path, const kg_writer_options_t *options,
                   kg_writer_t **out, char *errbuf);
/* Appends one record. KG_EIO names the file and the reason (disk full, file too large); what the failed record
 * wrote is not counted. */
int kg_writer_write(kg_writer_t *w, const char *data, size_t len, char *errbuf);
/* Takes back everything written after the writer held RECORDS records in BYTES bytes (counts it reported
 * earlier), so that a record's outputs are all or nothing. KG_EIO names the file. */
int kg_writer_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf);
/* Finishes, syncs and closes the file; frees W. *RECORDS and *BYTES (either may be NULL) get what the file
 * holds, also on failure, when the file is left for the caller to clean up. */
int kg_writer_close(kg_writer_t *w, int64_t *records, int64_t *bytes, char *errbuf);
/* Closes and deletes the file; frees W. NULL is a no-op. */
void kg_writer_abort(kg_writer_t *w);
static inline int64_t kg_writer_records(const kg_writer_t *w) { return w->records; }
static inline int64_t kg_writer_bytes(const kg_writer_t *w) { return w->bytes; }
static inline const char *kg_writer_path(const kg_writer_t *w) { return w->path; }

/* For backends: KG_EIO, "cannot write output file <path>: <REASON>". */
int kg_writer_io_error(const kg_writer_t *w, const char *reason, char *errbuf);

#endif
