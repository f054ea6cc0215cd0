/* md5.h: MD5 (RFC 1321), for the ETag an object store gives an object (S3: the MD5 of its bytes, or of its parts'
 * MD5s), so that a commit can tell its own object from another's. Not for security. */
#ifndef KG_MD5_H
#define KG_MD5_H

#include <stddef.h>
#include <stdint.h>

#define KG_MD5_SIZE 16

typedef struct {
  uint32_t h[4];
  uint64_t bytes;
  uint8_t block[64];
  size_t fill;
} kg_md5_t;

void kg_md5_init(kg_md5_t *m);
void kg_md5_update(kg_md5_t *m, const void *data, size_t len);
void kg_md5_final(kg_md5_t *m, uint8_t out[KG_MD5_SIZE]);

#endif
