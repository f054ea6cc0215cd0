/* buf.h: the growable byte buffer every engine file builds text in, and a whole file read into one. */
#ifndef KG_BUF_H
#define KG_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* A growable byte buffer. */
typedef struct {
  char *data; /* heap, NUL-terminated when len > 0 */
  size_t len;
  size_t cap;
} kg_buf_t;

/* Grows BUF to hold N more bytes and a NUL (kg_buf_reserve's slow path). */
void kg_buf_grow(kg_buf_t *buf, size_t n);
/* Makes room for N more bytes (and a NUL) in BUF; returns where they go. BUF->len is left to the caller. */
static inline char *kg_buf_reserve(kg_buf_t *buf, size_t n) {
  if (buf->len + n + 1 > buf->cap) kg_buf_grow(buf, n);
  return buf->data + buf->len;
}
void kg_buf_append(kg_buf_t *buf, const void *p, size_t n);
void kg_buf_appendf(kg_buf_t *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends S to BUF with every byte that is not unreserved in a URL (RFC 3986) as %XX; '/' stays when KEEP_SLASH. */
void kg_buf_append_url_escaped(kg_buf_t *buf, const char *s, bool keep_slash);
void kg_buf_free(kg_buf_t *buf);

/* The whole file at PATH: a new buffer of *LEN bytes, NUL-terminated, or NULL with *ERROR set to the errno of a
 * file that cannot be opened, or to -1 when reading it failed. */
char *kg_read_file(const char *path, size_t *len, int *error);

#endif
