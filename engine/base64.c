/* base64.c: base64 encoding and strict decoding (base64.h). */
#include "base64.h"

#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void kg_base64_encode(kg_buf_t *out, const void *data, size_t len) {
  const unsigned char *p = data;
  char quad[4];
  for (size_t i = 0; i < len; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < len ? p[i + 2] : 0);
    quad[0] = alphabet[v >> 18 & 63];
    quad[1] = alphabet[v >> 12 & 63];
    quad[2] = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
    quad[3] = i + 2 < len ? alphabet[v & 63] : '=';
    kg_buf_append(out, quad, 4);
  }
  if (!len) kg_buf_append(out, "", 0);
}

/* The value of base64 digit C, or -1. */
static int digit(char c) {
  const char *at = c ? strchr(alphabet, c) : NULL;
  return at ? (int)(at - alphabet) : -1;
}

bool kg_base64_decode(kg_buf_t *out, const char *text) {
  size_t n = strlen(text), start = out->len;
  if (n % 4) return false;
  for (size_t i = 0; i < n; i += 4) {
    bool last = i + 4 == n;
    int pads = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    int d[4];
    for (int k = 0; k < 4; k++)
      d[k] = k >= 4 - pads ? 0 : digit(text[i + (size_t)k]);
    if (d[0] < 0 || d[1] < 0 || d[2] < 0 || d[3] < 0) {
      out->len = start;
      if (out->data) out->data[start] = 0;
      return false;
    }
    unsigned v = (unsigned)d[0] << 18 | (unsigned)d[1] << 12 | (unsigned)d[2] << 6 | (unsigned)d[3];
    unsigned char bytes[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
    kg_buf_append(out, bytes, (size_t)(3 - pads));
  }
  return true;
}
