/* kafka_fingerprint.c: record fingerprints (see kafka_fingerprint.h). */
#include "kafka_fingerprint.h"

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= FNV_PRIME;
  }
  return h;
}

/* A length-prefixed field, with a marker that tells a null field from an empty one. */
static uint64_t field(uint64_t h, const void *p, size_t n) {
  unsigned char present = p != NULL;
  uint64_t len = p ? (uint64_t)n : 0;
  h = fnv(h, &present, 1);
  h = fnv(h, &len, sizeof len);
  return p ? fnv(h, p, n) : h;
}

kg_fingerprint_t kg_fingerprint_of(int64_t offset, int64_t timestamp, const void *key, size_t key_len,
                                   const void *value, size_t value_len) {
  uint64_t h = field(field(FNV_OFFSET, key, key_len), value, value_len);
  return (kg_fingerprint_t){.set = true, .offset = offset, .timestamp = timestamp, .hash = (int64_t)h};
}

kg_fingerprint_t kg_fingerprint_record(const kg_record_t *r) {
  return kg_fingerprint_of((int64_t)r->offset, (int64_t)r->timestamp, r->key_ptr, r->key_len, r->value_ptr,
                           r->value_len);
}

bool kg_fingerprint_same(const kg_fingerprint_t *a, const kg_fingerprint_t *b) {
  return a->set && b->set && a->offset == b->offset && a->timestamp == b->timestamp && a->hash == b->hash;
}
