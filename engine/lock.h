/* lock.h: the job lock, so that two runs of one job never overlap, and no edit of its state overlaps a run.
 *
 * A job has two lock files, both held by flock(2): <job.lock.dir>/<job>.lock, Gobblin's job lock, and
 * <state.store.dir>/<job>.db.lock, next to the job's state database. A run takes both, the job lock first; an
 * edit of the state (kingest state set-offset, reset) takes both when it knows job.lock.dir (a job file, or a
 * work dir) and the state's own lock always: however the state is named (a job file, a job name with
 * --state-store-dir, --work-dir or GOBBLIN_WORK_DIR), its path is known, and so is the lock beside it. */
#ifndef KG_LOCK_H
#define KG_LOCK_H

#include "kg_common.h"

typedef struct kg_lock kg_lock_t;

/* Takes the lock of JOB in DIR (<dir>/<job>.lock) without waiting. KG_ELOCKED when a live process holds it;
 * *HOLDER_PID then tells which (0 if unknown). The lock is an flock(2) on the file, so the kernel releases
 * it when its holder dies: a lock left by a dead process is simply taken over. */
int kg_lock_acquire(const char *dir, const char *job, kg_lock_t **out, long *holder_pid, char *errbuf);
/* Takes the locks of JOB (see the top of this file) without waiting: <LOCK_DIR>/<job>.lock unless LOCK_DIR is
 * NULL, then <STATE_PATH>.lock, STATE_PATH being the job's state database (kg_state_path). Both are taken or
 * neither; KG_ELOCKED as kg_lock_acquire, *HOLDER_PID the holder of the one that is held. *OUT is released with
 * kg_lock_release, which releases both. */
int kg_lock_acquire_job(const char *lock_dir, const char *state_path, const char *job, kg_lock_t **out,
                        long *holder_pid, char *errbuf);
void kg_lock_release(kg_lock_t *lock); /* NULL is a no-op */

#endif
