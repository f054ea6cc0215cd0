/* sha256.h: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the digests and signatures HTTP request signers
 * need (http.h: the body's hash; SigV4, Azure's Shared Key). */
#ifndef KG_SHA256_H
#define KG_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define KG_SHA256_SIZE 32 /* bytes of a digest */

/* A digest being computed: kg_sha256_init, kg_sha256_update as often as needed, kg_sha256_final. Room for
 * libcrypto's context (which computes it, with the CPU's SHA instructions where it has them), so that nothing is
 * allocated and there is nothing to free. */
typedef struct {
  _Alignas(8) unsigned char opaque[128];
} kg_sha256_t;

void kg_sha256_init(kg_sha256_t *s);
void kg_sha256_update(kg_sha256_t *s, const void *data, size_t len);
/* Writes the digest to OUT; S must be initialised again before its next use. */
void kg_sha256_final(kg_sha256_t *s, uint8_t out[KG_SHA256_SIZE]);

/* The digest of the LEN bytes at DATA as 64 lowercase hex digits and a NUL into HEX. */
void kg_sha256_hex(const void *data, size_t len, char hex[2 * KG_SHA256_SIZE + 1]);
/* DIGEST as 64 lowercase hex digits and a NUL into HEX. */
void kg_sha256_to_hex(const uint8_t digest[KG_SHA256_SIZE], char hex[2 * KG_SHA256_SIZE + 1]);

/* HMAC-SHA256 of the LEN bytes at DATA with the KEY_LEN bytes of KEY (RFC 2104), into OUT, which may be KEY (SigV4's
 * chain of keys). */
void kg_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[KG_SHA256_SIZE]);

#endif
