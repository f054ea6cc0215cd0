/* sha256.c: SHA-256 (sha256.h) through libcrypto's, which uses the CPU's SHA instructions where it has them: a
 * commit to S3 hashes every byte it sends for the signature, and a portable C loop did a seventh of libcrypto's
 * rate. */
#include "sha256.h"

/* The one-call context functions are what the digest needs without allocating; OpenSSL 3 marks them deprecated in
 * favour of EVP, which allocates a context per digest. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <string.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(((kg_sha256_t *)0)->opaque), "kg_sha256_t holds a SHA256_CTX");

static SHA256_CTX *ctx_of(kg_sha256_t *s) { return (SHA256_CTX *)(void *)s->opaque; }

void kg_sha256_init(kg_sha256_t *s) { SHA256_Init(ctx_of(s)); }

void kg_sha256_update(kg_sha256_t *s, const void *data, size_t len) {
  if (len) SHA256_Update(ctx_of(s), data, len);
}

void kg_sha256_final(kg_sha256_t *s, uint8_t out[KG_SHA256_SIZE]) { SHA256_Final(out, ctx_of(s)); }

void kg_sha256_to_hex(const uint8_t digest[KG_SHA256_SIZE], char hex[2 * KG_SHA256_SIZE + 1]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < KG_SHA256_SIZE; i++)
    hex[2 * i] = digits[digest[i] >> 4], hex[2 * i + 1] = digits[digest[i] & 15];
  hex[2 * KG_SHA256_SIZE] = 0;
}

void kg_sha256_hex(const void *data, size_t len, char hex[2 * KG_SHA256_SIZE + 1]) {
  kg_sha256_t s;
  uint8_t digest[KG_SHA256_SIZE];
  kg_sha256_init(&s);
  kg_sha256_update(&s, data, len);
  kg_sha256_final(&s, digest);
  kg_sha256_to_hex(digest, hex);
}

void kg_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[KG_SHA256_SIZE]) {
  uint8_t block[64] = {0}, inner[KG_SHA256_SIZE];
  kg_sha256_t s;
  if (key_len > sizeof block) { /* a key longer than a block is hashed first (RFC 2104) */
    kg_sha256_init(&s);
    kg_sha256_update(&s, key, key_len);
    kg_sha256_final(&s, block);
  } else if (key_len) {
    memcpy(block, key, key_len);
  }
  uint8_t pad[64];
  for (size_t i = 0; i < sizeof pad; i++)
    pad[i] = block[i] ^ 0x36;
  kg_sha256_init(&s);
  kg_sha256_update(&s, pad, sizeof pad);
  kg_sha256_update(&s, data, len);
  kg_sha256_final(&s, inner);
  for (size_t i = 0; i < sizeof pad; i++)
    pad[i] = block[i] ^ 0x5c;
  kg_sha256_init(&s);
  kg_sha256_update(&s, pad, sizeof pad);
  kg_sha256_update(&s, inner, sizeof inner);
  kg_sha256_final(&s, out);
}
