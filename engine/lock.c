/* lock.c: job locks on flock(2) (lock.h); each file holds its holder's pid for messages.
 *
 * The lock file is opened with open(2), not through the file system interface: flock(2) needs a local file
 * descriptor, and a lock is only as good as the kernel that holds it, so job.lock.dir is always local. */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"

struct kg_lock {
  int fd;
  char *path;
  kg_lock_t *next; /* the state's lock, held with this one (kg_lock_acquire_job); owned */
};

static long read_pid(int fd) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? strtol(buf, NULL, 10) : 0;
}

/* Takes the lock file PATH (taken over) of JOB in folder DIR, which PROPERTY names for an error (job.lock.dir,
 * state.store.dir). TAKEOVER: say so when the lock was left by a process that died. */
static int take(const char *dir, const char *property, char *path, const char *job, bool takeover, kg_lock_t **out,
                long *holder_pid, char *errbuf) {
  *out = NULL;
  *holder_pid = 0;
  /* Owner only: the state store's folder holds the job's state (kg_state_open). */
  if (kg_fs_local_mkdirs_mode(dir, 0700, errbuf)) {
    free(path);
    return kg_fail(errbuf, KG_EIO, "%s %s cannot be created: %s", property, dir, strerror(errno));
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    int rc = kg_fail(errbuf, KG_EIO, "cannot open lock file %s: %s", path, strerror(errno));
    free(path);
    return rc;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    *holder_pid = read_pid(fd);
    close(fd);
    int rc = e == EWOULDBLOCK ? kg_fail(errbuf, KG_ELOCKED, "job %s is locked by %s", job, path)
                              : kg_fail(errbuf, KG_EIO, "cannot lock %s: %s", path, strerror(e));
    free(path);
    return rc;
  }
  long previous = read_pid(fd);
  if (takeover && previous > 0 && previous != (long)getpid())
    KG_INFO("Taking over the lock of job %s left by process %ld, which is no longer running", job, previous);
  char pid[32];
  int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) KG_WARN("cannot write pid to lock file %s", path);
  kg_lock_t *lock = kg_xcalloc(1, sizeof *lock);
  lock->fd = fd;
  lock->path = path;
  *out = lock;
  return KG_OK;
}

int kg_lock_acquire(const char *dir, const char *job, kg_lock_t **out, long *holder_pid, char *errbuf) {
  return take(dir, "job.lock.dir", kg_xasprintf("%s/%s.lock", dir, job), job, true, out, holder_pid, errbuf);
}

int kg_lock_acquire_job(const char *lock_dir, const char *state_path, const char *job, kg_lock_t **out,
                        long *holder_pid, char *errbuf) {
  *out = NULL;
  kg_lock_t *job_lock = NULL, *state_lock = NULL;
  if (lock_dir) {
    int rc = kg_lock_acquire(lock_dir, job, &job_lock, holder_pid, errbuf);
    if (rc) return rc;
  }
  const char *slash = strrchr(state_path, '/');
  char *dir = slash ? kg_xstrndup(state_path, (size_t)(slash - state_path)) : kg_xstrdup(".");
  /* A dead run's job lock has said it was taken over; its state's lock need not say it again. */
  int rc = take(*dir ? dir : "/", "state.store.dir", kg_xasprintf("%s.lock", state_path), job, !job_lock, &state_lock,
                holder_pid, errbuf);
  free(dir);
  if (rc) {
    kg_lock_release(job_lock);
    return rc;
  }
  if (!job_lock) {
    *out = state_lock;
  } else {
    job_lock->next = state_lock;
    *out = job_lock;
  }
  return KG_OK;
}

void kg_lock_release(kg_lock_t *lock) {
  if (!lock) return;
  kg_lock_release(lock->next); /* the state's lock first: taken last */
  /* Empty the pid before unlocking, so the next holder does not report a takeover. */
  if (ftruncate(lock->fd, 0) != 0) KG_DEBUG("cannot truncate %s", lock->path);
  flock(lock->fd, LOCK_UN);
  close(lock->fd);
  free(lock->path);
  free(lock);
}
