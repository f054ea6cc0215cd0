/* secret.c: the noted secrets (secret.h): a list kept longest first, read under a lock by every masking call. */
#include "secret.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kg_common.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static char **values; /* owned, longest first */
static size_t *lengths;
static size_t count, cap;
static atomic_size_t noted; /* COUNT, read without the lock by kg_secret_any and the masks' fast path */

static void note(const char *value);

/* VALUE as it appears inside a JSON string (and a Prometheus label, which escapes \\, \" and \n alike), a new
 * string; NULL when it has nothing to escape. */
static char *json_form(const char *value) {
  size_t extra = 0;
  for (const unsigned char *s = (const unsigned char *)value; *s; s++)
    extra += *s == '"' || *s == '\\' || *s == '\n' || *s == '\r' || *s == '\t' ? 1 : *s < 0x20 ? 5 : 0;
  if (!extra) return NULL;
  char *out = kg_xmalloc(strlen(value) + extra + 1), *o = out;
  for (const unsigned char *s = (const unsigned char *)value; *s; s++) {
    static const char hex[] = "0123456789abcdef";
    if (*s == '"' || *s == '\\')
      *o++ = '\\', *o++ = (char)*s;
    else if (*s == '\n')
      *o++ = '\\', *o++ = 'n';
    else if (*s == '\r')
      *o++ = '\\', *o++ = 'r';
    else if (*s == '\t')
      *o++ = '\\', *o++ = 't';
    else if (*s < 0x20)
      *o++ = '\\', *o++ = 'u', *o++ = '0', *o++ = '0', *o++ = hex[*s >> 4], *o++ = hex[*s & 15];
    else
      *o++ = (char)*s;
  }
  *o = '\0';
  return out;
}

void kg_secret_note(const char *value) {
  if (!value) return;
  note(value);
  char *escaped = json_form(value);
  if (escaped) note(escaped); /* as the metrics file and the Prometheus text write it */
  free(escaped);
}

static void note(const char *value) {
  size_t len = strlen(value);
  if (len < KG_SECRET_MIN) return;
  pthread_mutex_lock(&mutex);
  size_t at = 0;
  for (; at < count && lengths[at] >= len; at++)
    if (lengths[at] == len && !memcmp(values[at], value, len)) {
      pthread_mutex_unlock(&mutex);
      return;
    }
  if (count == cap) {
    cap = cap ? cap * 2 : 8;
    values = kg_xrealloc(values, cap * sizeof *values);
    lengths = kg_xrealloc(lengths, cap * sizeof *lengths);
  }
  memmove(values + at + 1, values + at, (count - at) * sizeof *values);
  memmove(lengths + at + 1, lengths + at, (count - at) * sizeof *lengths);
  values[at] = kg_xstrdup(value);
  lengths[at] = len;
  count++;
  atomic_store(&noted, count);
  pthread_mutex_unlock(&mutex);
}

void kg_secret_forget_all(void) {
  pthread_mutex_lock(&mutex);
  for (size_t i = 0; i < count; i++)
    free(values[i]);
  free(values);
  free(lengths);
  values = NULL;
  lengths = NULL;
  count = cap = 0;
  atomic_store(&noted, 0);
  pthread_mutex_unlock(&mutex);
}

bool kg_secret_any(void) { return atomic_load(&noted) > 0; }

size_t kg_secret_mask_bytes(char *text, size_t *len) {
  if (!text || !atomic_load(&noted)) return 0;
  size_t replaced = 0, n = *len;
  pthread_mutex_lock(&mutex);
  for (size_t i = 0; i < count; i++) {
    size_t vlen = lengths[i], m = sizeof KG_SECRET_MASK - 1;
    char *at = text;
    while (n >= vlen && (at = memmem(at, n - (size_t)(at - text), values[i], vlen))) {
      memcpy(at, KG_SECRET_MASK, m);
      memmove(at + m, at + vlen, n - (size_t)(at - text) - vlen);
      n -= vlen - m;
      at += m;
      replaced++;
    }
  }
  pthread_mutex_unlock(&mutex);
  *len = n;
  return replaced;
}

size_t kg_secret_mask(char *text) {
  if (!text || !atomic_load(&noted)) return 0;
  size_t len = strlen(text);
  size_t replaced = kg_secret_mask_bytes(text, &len);
  text[len] = '\0';
  return replaced;
}
