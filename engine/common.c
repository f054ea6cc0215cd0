/* common.c: what every engine file uses: error strings and kg_fail, the process's malloc settings, allocation that
 * cannot fail, the clocks. */
#include "kg_common.h"
#include "secret.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The process's malloc, set before main: as many arenas as the default number of task threads (twice the cores),
 * not glibc's eight a core, and a fixed mmap threshold, so that a fetch's buffer of a megabyte goes back to the
 * system when it is freed instead of raising the threshold and staying in the heap. Each arena keeps memory of its
 * own that the others cannot reuse; with fewer arenas than task threads, though, the tasks (which free what their
 * Kafka clients' threads allocated) wait on each other's arena locks: two arenas for four tasks made the
 * pass-through a tenth slower. The environment's MALLOC_ARENA_MAX and MALLOC_MMAP_THRESHOLD_ win. */
__attribute__((constructor)) static void malloc_setup(void) {
  if (!getenv("MALLOC_ARENA_MAX")) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    mallopt(M_ARENA_MAX, cores > 1 ? (int)(2 * cores) : 2);
  }
  if (!getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

const char *kg_err2str(int err) {
  switch (err) {
  case KG_OK: return "success";
  case KG_EINVAL: return "invalid input";
  case KG_EIO: return "file system error";
  case KG_EKAFKA: return "Kafka error";
  case KG_ELUA: return "script error";
  case KG_ESTATE: return "state store error";
  case KG_ELOCKED: return "job is locked";
  case KG_ENOMEM: return "out of memory";
  case KG_ENOTFOUND: return "not found";
  case KG_ERANGE: return "offset out of range";
  case KG_EBUDGET: return "over the error budget";
  case KG_EREGISTRY: return "schema registry error";
  case KG_ERECORD: return "record refused by the writer";
  case KG_ESTALLED: return "nothing moved";
  case KG_EFAILED: return "task failed";
  case KG_EAUTH: return "authentication or TLS failure";
  default: return "unknown error";
  }
}

int kg_fail(char *errbuf, int err, const char *fmt, ...) {
  if (errbuf) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, KG_ERRLEN, fmt, ap);
    va_end(ap);
    kg_secret_mask(errbuf); /* every error text, whatever it quotes (a refused value, a library's message) */
  }
  return err;
}

int64_t kg_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t kg_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kg_oom(void) {
  fputs("kingest: out of memory\n", stderr);
  abort();
}

void *kg_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) kg_oom();
  return p;
}

void *kg_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) kg_oom();
  return p;
}

void *kg_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) kg_oom();
  return p;
}

char *kg_xstrdup(const char *s) { return kg_xstrndup(s, strlen(s)); }

char *kg_xstrndup(const char *s, size_t n) {
  char *p = kg_xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *kg_xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) kg_oom();
  return s;
}
