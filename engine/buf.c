/* buf.c: the growable byte buffer, and a whole file read into one. */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_common.h"

void kg_buf_grow(kg_buf_t *buf, size_t n) {
  size_t cap = buf->cap ? buf->cap : 64;
  while (cap < buf->len + n + 1)
    cap *= 2;
  buf->data = kg_xrealloc(buf->data, cap);
  buf->cap = cap;
}

void kg_buf_append(kg_buf_t *buf, const void *p, size_t n) {
  kg_buf_reserve(buf, n);
  if (n) memcpy(buf->data + buf->len, p, n);
  buf->len += n;
  buf->data[buf->len] = '\0';
}

void kg_buf_appendf(kg_buf_t *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) kg_oom();
  kg_buf_append(buf, s, (size_t)n);
  free(s);
}

void kg_buf_append_url_escaped(kg_buf_t *buf, const char *s, bool keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
        *p == '_' || *p == '~' || (keep_slash && *p == '/')) {
      kg_buf_append(buf, p, 1);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      kg_buf_append(buf, e, 3);
    }
  }
}

void kg_buf_free(kg_buf_t *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->len = buf->cap = 0;
}

char *kg_read_file(const char *path, size_t *len, int *error) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    *error = errno;
    return NULL;
  }
  kg_buf_t buf = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    kg_buf_append(&buf, chunk, n);
  bool failed = ferror(f);
  fclose(f);
  if (failed) {
    kg_buf_free(&buf);
    *error = -1;
    return NULL;
  }
  *len = buf.len;
  return buf.data ? buf.data : kg_xstrdup("");
}
