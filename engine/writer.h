/* writer.h: SimpleDataWriter: each record's bytes, optionally preceded by its size, followed by the
 * delimiter, into one staging file. */
#ifndef KG_WRITER_H
#define KG_WRITER_H

#include "kg_common.h"

typedef struct kg_writer kg_writer_t;

/* Creates PATH (and its folder). DELIM (DELIM_LEN bytes, may be 0) is copied. */
int kg_writer_open(const char *path, const char *delim, size_t delim_len, bool prepend_size, kg_writer_t **out,
                   char *errbuf);
/* Appends one record. KG_EIO names the file and the reason (disk full, file too large). */
int kg_writer_write(kg_writer_t *w, const char *data, size_t len, char *errbuf);
/* Takes back everything written after the writer held RECORDS records in BYTES bytes (counts it reported
 * earlier), so that a record's outputs are all or nothing. KG_EIO names the file. */
int kg_writer_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf);
/* Flushes, syncs and closes; frees W. On failure the file is left for the caller to clean up. */
int kg_writer_close(kg_writer_t *w, char *errbuf);
/* Closes and deletes the file; frees W. NULL is a no-op. */
void kg_writer_abort(kg_writer_t *w);
int64_t kg_writer_records(const kg_writer_t *w);
int64_t kg_writer_bytes(const kg_writer_t *w);
const char *kg_writer_path(const kg_writer_t *w);

#endif
