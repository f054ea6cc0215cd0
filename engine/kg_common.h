/* kg_common.h: what every engine file uses: the error codes and kg_fail, allocation that cannot fail, the clocks.
 * The log (log.h) and the byte buffer (buf.h) are included where they are used. */
#ifndef KG_COMMON_H
#define KG_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Fallible functions return KG_OK or one of these; the detail goes into a caller's error buffer. */
enum {
  KG_OK = 0,
  KG_EINVAL = -1,  /* bad input: a property, a job file, an argument */
  KG_EIO = -2,     /* a file system operation failed */
  KG_EKAFKA = -3,  /* the broker could not be reached or answered with an error */
  KG_ELUA = -4,    /* a script failed */
  KG_ESTATE = -5,  /* the state store failed */
  KG_ELOCKED = -6, /* another instance of the job holds the lock */
  KG_ENOMEM = -7,
  KG_ENOTFOUND = -8,
  KG_ERANGE = -9,     /* a Kafka offset outside the partition's range (records deleted under the reader) */
  KG_EBUDGET = -10,   /* more records failed in the script than the error budget allows */
  KG_EREGISTRY = -11, /* the schema registry did not answer, or answered with something that is not a schema */
  KG_ERECORD = -12,   /* a writer refused one record (it does not fit the format): that record fails, the file is
                         as before it, and the task goes on (writer.h) */
  KG_ESTALLED = -13,  /* partitions had records to read and not one record or offset moved */
  KG_EFAILED = -14,   /* a task failed: its own error (the task's result) says why */
  KG_EAUTH = -15,     /* the brokers refused kingest's login or its TLS handshake (or the Kerberos login failed) */
};

const char *kg_err2str(int err);

/* Size of the error buffers passed around the engine. */
#define KG_ERRLEN 1024

/* Formats into an error buffer of KG_ERRLEN bytes; returns ERR so callers can `return kg_fail(...)`. */
int kg_fail(char *errbuf, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Milliseconds since the epoch, and a monotonic clock in milliseconds. */
int64_t kg_now_ms(void);
int64_t kg_mono_ms(void);

/* Says "kingest: out of memory" on stderr and aborts: what the allocations below (and kg_buf_t's) do when memory
 * runs out. */
void kg_oom(void) __attribute__((noreturn));
/* malloc/strdup that abort on out-of-memory: allocation failure is not an input error. */
void *kg_xmalloc(size_t n);
void *kg_xcalloc(size_t n, size_t size);
void *kg_xrealloc(void *p, size_t n);
char *kg_xstrdup(const char *s);
char *kg_xstrndup(const char *s, size_t n);
/* printf into a new heap string. */
char *kg_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
