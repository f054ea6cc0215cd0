/* lock.h: the job lock, so that two runs of one job never overlap. */
#ifndef KG_LOCK_H
#define KG_LOCK_H

#include "kg_common.h"

typedef struct kg_lock kg_lock_t;

/* Takes the lock of JOB in DIR (<dir>/<job>.lock) without waiting. KG_ELOCKED when a live process holds it;
 * *HOLDER_PID then tells which (0 if unknown). The lock is an flock(2) on the file, so the kernel releases
 * it when its holder dies: a lock left by a dead process is simply taken over. */
int kg_lock_acquire(const char *dir, const char *job, kg_lock_t **out, long *holder_pid, char *errbuf);
void kg_lock_release(kg_lock_t *lock); /* NULL is a no-op */

#endif
