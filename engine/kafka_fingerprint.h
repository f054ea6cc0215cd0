/* kafka_fingerprint.h: a record's fingerprint (offset, timestamp, hash of key and value), stored for the last record
 * pulled from each partition so that a later run can tell whether the partition's log is still the one it
 * read, or a new log of a deleted and recreated topic whose offsets start over. */
#ifndef KG_KAFKA_FINGERPRINT_H
#define KG_KAFKA_FINGERPRINT_H

#include <stdbool.h>

#include "kg_ffi.h"

typedef struct {
  bool set;          /* false: no fingerprint (nothing pulled yet, or forgotten) */
  int64_t offset;    /* the record's offset */
  int64_t timestamp; /* its timestamp in ms, -1 when unknown */
  int64_t hash;      /* 64-bit FNV-1a of key and value (null and empty told apart), as stored in SQLite */
} kg_fingerprint_t;

/* The fingerprint of a record given by its parts; KEY or VALUE NULL for a null key or payload. */
kg_fingerprint_t kg_fingerprint_of(int64_t offset, int64_t timestamp, const void *key, size_t key_len,
                                   const void *value, size_t value_len);
/* The fingerprint of a record view. */
kg_fingerprint_t kg_fingerprint_record(const kg_record_t *record);
/* True when A and B are the same record: same offset, timestamp and hash. */
bool kg_fingerprint_same(const kg_fingerprint_t *a, const kg_fingerprint_t *b);

#endif
