/* commit.c: publishing and storing offsets, exactly once (commit.h). */
#include "commit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault.h"
#include "log.h"

/* ---- one file ------------------------------------------------------------------------------------------ */

/* Where an upload to the final folder's file system is written before its rename: next to the file, under a
 * name readers skip (Hadoop's input formats ignore names that start with "_"), and found again from the
 * journal's destination alone. */
static char *upload_path(const char *dst) {
  const char *slash = strrchr(dst, '/');
  size_t dir = slash ? (size_t)(slash - dst) + 1 : 0;
  return kg_xasprintf("%.*s_%s._COPYING_", (int)dir, dst, dst + dir);
}

/* ---- an object store: a write, not a rename --------------------------------------------------------------- */

static bool to_objects(const kg_publish_t *p) { return p->dst->object != NULL; }

/* Whether the object THERE is the one move M wrote: the journalled size and, when the journal knows it, ETag; on a
 * store that marks its objects (MARKED), the journalled upload id as the object's mark too, since there the ETag is
 * known only once the object is written and an object of the same size may be anyone's. */
static bool is_ours(const kg_move_t *m, const kg_fs_object_t *there, bool marked) {
  if (there->size < 0 || there->size != m->size) return false;
  if (marked && (!m->upload_id || !there->upload_id || strcmp(there->upload_id, m->upload_id))) return false;
  return !m->etag || (there->etag && !strcmp(there->etag, m->etag));
}

kg_object_decision_t kg_commit_object_decide(const kg_move_t *m, const kg_fs_object_t *there, bool marked) {
  if (there->size < 0) return KG_OBJECT_WRITE;
  return is_ours(m, there, marked) ? KG_OBJECT_PUBLISHED : KG_OBJECT_FOREIGN;
}

/* Writes M's object under If-None-Match: *. An object already there is M's own when it has the journalled size and
 * ETag (a write whose answer was lost and was tried again); anything else there is another's, an error that names
 * the key. *ETAG: the ETag the store gave, when the journal did not foresee it (a new string, else NULL). */
static int publish_object(const kg_publish_t *p, const kg_move_t *m, char **etag, char *errbuf) {
  const kg_fs_object_ops_t *o = p->dst->object;
  kg_fs_object_t got = {.size = -1};
  bool exists = false;
  *etag = NULL;
  int rc = o->put_new(p->dst, m->src, m->dst, m->upload_id, &got, &exists, errbuf);
  if (rc && exists) {
    kg_fs_object_t there = {.size = -1};
    char why[KG_ERRLEN];
    if (!o->head(p->dst, m->dst, &there, why) && is_ours(m, &there, o->marks_objects)) {
      rc = KG_OK;
    } else {
      size_t len = strlen(errbuf);
      snprintf(errbuf + len, KG_ERRLEN - len,
               "; it is not this commit's (%lld bytes, ETag %s; this commit wrote %lld bytes%s%s)",
               (long long)there.size, there.etag ? there.etag : "none", (long long)m->size, m->etag ? ", ETag " : "",
               m->etag ? m->etag : "");
    }
    kg_fs_object_clear(&there);
  }
  if (!rc && got.etag && (!m->etag || strcmp(got.etag, m->etag))) {
    *etag = got.etag;
    got.etag = NULL;
  }
  kg_fs_object_clear(&got);
  return rc;
}

/* Before the journal: the size and foreseen ETag of each file, and an upload in parts begun for each large one, so
 * that the journal names every upload a killed run may leave. On failure the uploads begun are aborted. */
static int prepare_objects(const kg_publish_t *p, kg_move_t *moves, size_t nmoves, char *errbuf) {
  const kg_fs_object_ops_t *o = p->dst->object;
  int rc = KG_OK;
  size_t i = 0;
  for (; i < nmoves && !rc; i++) {
    kg_move_t *m = &moves[i];
    struct stat st;
    if (stat(m->src, &st)) {
      rc = kg_fail(errbuf, KG_EIO, "cannot publish %s: %s", m->src, strerror(errno));
      break;
    }
    m->size = st.st_size;
    bool multipart = st.st_size >= o->multipart_threshold;
    if (o->expected_etag && (rc = o->expected_etag(p->dst, m->src, multipart, &m->etag, errbuf))) break;
    if ((multipart || o->marks_objects) && (rc = o->upload_begin(p->dst, m->dst, &m->upload_id, errbuf))) break;
  }
  if (rc) {
    for (size_t j = 0; j < nmoves; j++) {
      char ignored[KG_ERRLEN];
      if (moves[j].upload_id) o->abort_upload(p->dst, moves[j].dst, moves[j].upload_id, ignored);
    }
  }
  return rc;
}

/* Aborts the unfinished uploads of the job's files under the final folder (part.task_<job>_...): a run killed
 * between beginning an upload and journalling it leaves one, which no journal names. Called with the job lock held
 * and no commit under way, so that every such upload is an orphan. */
static void sweep_uploads(const kg_publish_t *p) {
  const kg_fs_object_ops_t *o = p->dst->object;
  if (!p->final_dir || !p->job_name || !o->list_uploads) return;
  kg_fs_object_t *ups = NULL;
  size_t n = 0;
  char err[KG_ERRLEN];
  char *prefix = kg_xasprintf("%s/", p->final_dir);
  char *mine = kg_xasprintf("part.task_%s_", p->job_name);
  if (o->list_uploads(p->dst, prefix, &ups, &n, err)) KG_WARN("%s", err);
  for (size_t i = 0; i < n; i++) {
    const char *slash = strrchr(ups[i].path, '/'), *name = slash ? slash + 1 : ups[i].path;
    if (strncmp(name, mine, strlen(mine))) continue;
    if (o->abort_upload(p->dst, ups[i].path, ups[i].upload_id, err))
      KG_WARN("%s", err);
    else
      KG_INFO("Aborted an unfinished upload a killed run left: %s (upload %s)", ups[i].path, ups[i].upload_id);
  }
  kg_fs_objects_free(ups, n);
  free(mine);
  free(prefix);
}

/* Publishes one file: a rename on one file system, or an upload under upload_path and a rename across two. */
static int publish_one(const kg_publish_t *p, const kg_move_t *m, char *errbuf) {
  if (kg_fault("move")) return kg_fail(errbuf, KG_EIO, "cannot move %s to %s: %s", m->src, m->dst, strerror(EIO));
  if (!kg_publish_crosses(p)) return kg_fs_move(p->src, m->src, m->dst, errbuf);
  char *tmp = upload_path(m->dst);
  char *dir = kg_xstrndup(m->dst, (size_t)(strrchr(m->dst, '/') - m->dst));
  /* An upload a killed run left half done is in the way: it goes first. */
  int rc = kg_fs_mkdirs(p->dst, dir, errbuf);
  if (!rc) rc = kg_fs_remove_tree(p->dst, tmp, errbuf);
  if (!rc) rc = kg_fs_put(p->dst, m->src, tmp, errbuf);
  if (!rc && (rc = p->dst->rename(p->dst, tmp, m->dst, errbuf))) {
    char ignored[KG_ERRLEN];
    bool there = false;
    if (!kg_fs_exists(p->dst, tmp, &there, ignored) && there) kg_fs_remove_tree(p->dst, tmp, ignored);
  }
  free(dir);
  free(tmp);
  return rc;
}

/* Takes a published file back: renamed back to task output, or the upload removed (task output still has it). */
static int unpublish_one(const kg_publish_t *p, const kg_move_t *m, char *errbuf) {
  if (!kg_publish_crosses(p)) return kg_fs_move(p->src, m->dst, m->src, errbuf);
  if (to_objects(p)) return p->dst->object->remove(p->dst, m->dst, errbuf); /* written by this commit alone */
  return kg_fs_remove_tree(p->dst, m->dst, errbuf);
}

/* *DONE tells whether a move whose attempt failed did happen; an error when the file systems cannot tell. */
static int was_published(const kg_publish_t *p, const kg_move_t *m, bool *done, char *errbuf) {
  *done = false;
  if (to_objects(p)) {
    kg_fs_object_t there = {.size = -1};
    int rc = p->dst->object->head(p->dst, m->dst, &there, errbuf);
    *done = !rc && is_ours(m, &there, p->dst->object->marks_objects);
    kg_fs_object_clear(&there);
    return rc;
  }
  if (kg_publish_crosses(p)) return kg_fs_exists(p->dst, m->dst, done, errbuf);
  bool src = true;
  int rc = kg_fs_exists(p->src, m->src, &src, errbuf);
  if (!rc && !src) rc = kg_fs_exists(p->src, m->dst, done, errbuf);
  return rc;
}

/* ---- many files at once ---------------------------------------------------------------------------------- */

/* A publish of many files, on up to parallel.runner.threads threads: closing a file on HDFS waits for the
 * NameNode, so one file at a time would spend most of a commit waiting. The first failure stops the others from
 * starting new files. */
typedef enum { MOVE_PENDING = 0, MOVE_DONE, MOVE_FAILED } move_status_t;

typedef struct {
  const kg_publish_t *p;
  const kg_move_t *moves;
  char **etags; /* per move, an object store's ETag that the journal did not foresee (publish_object) */
  move_status_t *status;
  size_t nmoves;
  pthread_mutex_t mutex;
  size_t next;  /* the next move to start */
  bool failed;  /* a move failed: start no more */
  int rc;       /* the first failure's */
  char *errbuf; /* and its message */
} publish_run_t;

static void *publish_worker(void *arg) {
  publish_run_t *run = arg;
  char err[KG_ERRLEN];
  for (;;) {
    pthread_mutex_lock(&run->mutex);
    size_t i = run->failed ? run->nmoves : run->next++;
    pthread_mutex_unlock(&run->mutex);
    if (i >= run->nmoves) break;
    kg_fault_scope("publish"); /* KINGEST_FAULT's publish.move and publish.dirsync */
    int rc = to_objects(run->p) ? publish_object(run->p, &run->moves[i], &run->etags[i], err)
                                : publish_one(run->p, &run->moves[i], err);
    kg_fault_scope(NULL);
    run->status[i] = rc ? MOVE_FAILED : MOVE_DONE;
    if (!rc) {
      kg_crash_point("publish");
      continue;
    }
    pthread_mutex_lock(&run->mutex);
    if (!run->failed) {
      run->failed = true;
      run->rc = rc;
      snprintf(run->errbuf, KG_ERRLEN, "%s", err);
    }
    pthread_mutex_unlock(&run->mutex);
  }
  return NULL;
}

/* Publishes MOVES, leaving in STATUS which were done; the first failure's error. */
static int publish_all(const kg_publish_t *p, const kg_move_t *moves, size_t nmoves, move_status_t *status,
                       char **etags, char *errbuf) {
  publish_run_t run = {.p = p, .moves = moves, .etags = etags, .status = status, .nmoves = nmoves, .errbuf = errbuf};
  pthread_mutex_init(&run.mutex, NULL);
  size_t nthreads = p->threads > 1 ? (size_t)p->threads : 1;
  if (nthreads > nmoves) nthreads = nmoves;
  pthread_t *threads = kg_xcalloc(nthreads ? nthreads : 1, sizeof *threads);
  size_t started = 0;
  while (started + 1 < nthreads && pthread_create(&threads[started], NULL, publish_worker, &run) == 0)
    started++;
  publish_worker(&run); /* this thread is one of them */
  for (size_t t = 0; t < started; t++)
    pthread_join(threads[t], NULL);
  free(threads);
  pthread_mutex_destroy(&run.mutex);
  return run.rc;
}

/* ---- the commit ------------------------------------------------------------------------------------------ */

/* Finishes move I of JOB_ID's journal on an object store: an object with the journalled size and ETag is published;
 * another object at the key is an error (never overwritten); else the journalled upload is aborted, and the file
 * written again (a new upload journalled first). */
static int recover_object(kg_state_t *state, const kg_publish_t *p, const char *job_id, size_t i, kg_move_t *m,
                          char *errbuf) {
  const kg_fs_object_ops_t *o = p->dst->object;
  kg_fs_object_t there = {.size = -1};
  int rc = o->head(p->dst, m->dst, &there, errbuf);
  kg_object_decision_t decision = kg_commit_object_decide(m, &there, o->marks_objects);
  if (!rc && decision != KG_OBJECT_WRITE) {
    if (decision == KG_OBJECT_FOREIGN)
      rc = kg_fail(errbuf, KG_EIO,
                   "cannot finish the commit of %s: %s is there and is not the object this commit wrote (%lld bytes, "
                   "ETag %s; the journal has %lld bytes%s%s): it is never overwritten; remove it, or the job's journal "
                   "(kingest state), once you know whose it is",
                   job_id, m->dst, (long long)there.size, there.etag ? there.etag : "none", (long long)m->size,
                   m->etag ? ", ETag " : "", m->etag ? m->etag : "");
    kg_fs_object_clear(&there);
    return rc;
  }
  kg_fs_object_clear(&there);
  if (rc) return rc;
  if (m->upload_id) {
    if ((rc = o->abort_upload(p->dst, m->dst, m->upload_id, errbuf))) return rc;
    if (o->marks_objects) /* every file has an upload there, begun or not */
      KG_INFO("Writing %s again, as a new upload (not %s)", m->dst, m->upload_id);
    else
      KG_INFO("Aborted the unfinished upload %s of %s", m->upload_id, m->dst);
    free(m->upload_id);
    m->upload_id = NULL;
    if ((rc = o->upload_begin(p->dst, m->dst, &m->upload_id, errbuf))) return rc;
    if ((rc = kg_state_move_update(state, job_id, i, m->upload_id, m->etag, errbuf))) {
      char ignored[KG_ERRLEN];
      o->abort_upload(p->dst, m->dst, m->upload_id, ignored);
      return rc;
    }
  }
  bool src = false;
  if ((rc = kg_fs_exists(p->src, m->src, &src, errbuf))) return rc;
  if (!src)
    return kg_fail(errbuf, KG_EIO, "cannot finish the commit of %s: %s is not published and %s is gone", job_id, m->dst,
                   m->src);
  char *etag = NULL;
  kg_fault_scope("recover");
  rc = publish_object(p, m, &etag, errbuf);
  kg_fault_scope(NULL);
  free(etag);
  kg_crash_point("recover");
  return rc;
}

int kg_commit_recover(kg_state_t *state, const kg_publish_t *p, char *errbuf) {
  char *job_id = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  int rc = kg_state_pending(state, &job_id, &moves, &nmoves, errbuf);
  if (!rc && !job_id && to_objects(p)) sweep_uploads(p);
  if (rc || !job_id) return rc;
  KG_WARN("Finishing the interrupted commit of %s (%zu files)", job_id, nmoves);
  for (size_t i = 0; i < nmoves && !rc; i++) {
    bool src = false, dst = false;
    if (to_objects(p)) {
      rc = recover_object(state, p, job_id, i, &moves[i], errbuf);
      continue;
    }
    if (kg_publish_crosses(p)) {
      /* An upload leaves its source: the destination tells whether it was made (its rename is atomic). */
      if ((rc = kg_fs_exists(p->dst, moves[i].dst, &dst, errbuf)) || dst) continue;
      if ((rc = kg_fs_exists(p->src, moves[i].src, &src, errbuf))) break;
    } else if ((rc = kg_fs_exists(p->src, moves[i].src, &src, errbuf))) {
      break;
    } else if (!src && !(rc = kg_fs_exists(p->src, moves[i].dst, &dst, errbuf)) && dst) {
      continue;
    }
    if (rc) break;
    if (src && !kg_publish_crosses(p) && !(rc = kg_fs_exists(p->src, moves[i].dst, &dst, errbuf)) && dst) {
      /* Both names: the power went after the rename was made durable in the final folder and before it was in
       * the task output's (each folder is synced on its own). The final name is this move's (no other file has
       * it): the published file is whole, and the task output's name is a leftover. */
      KG_WARN("%s is published and still in task output as %s: removing the task output's name", moves[i].dst,
              moves[i].src);
      rc = kg_fs_remove_tree(p->src, moves[i].src, errbuf);
      continue;
    }
    if (rc) break;
    if (src) {
      kg_fault_scope("recover"); /* KINGEST_FAULT's recover.move and recover.dirsync */
      rc = publish_one(p, &moves[i], errbuf);
      kg_fault_scope(NULL);
      kg_crash_point("recover");
    } else {
      rc = kg_fail(errbuf, KG_EIO, "cannot finish the commit of %s: neither %s nor %s exists", job_id, moves[i].src,
                   moves[i].dst);
    }
  }
  if (!rc) kg_fs_point("state.recover.before");
  if (!rc) rc = kg_state_commit_finish(state, job_id, errbuf);
  if (!rc) kg_fs_point("state.recover.after");
  if (!rc) KG_INFO("Finished the interrupted commit of %s", job_id);
  if (!rc && to_objects(p)) sweep_uploads(p);
  free(job_id);
  kg_state_free_moves(moves, nmoves);
  return rc;
}
void kg_commit_remove_dead_runs(const kg_config_t *c, kg_fs_t *fs, const char *runs_root, const char *job_id) {
  char *root = kg_xasprintf("%s/%s", runs_root, c->job_name);
  char *prefix = kg_xasprintf("job_%s_", c->job_name);
  char **names = NULL;
  size_t count = 0;
  char err[KG_ERRLEN];
  if (kg_fs_list(fs, root, &names, &count, err)) KG_DEBUG("%s", err);
  for (size_t i = 0; i < count; i++) {
    if (strncmp(names[i], prefix, strlen(prefix)) || !strcmp(names[i], job_id)) continue;
    char *dir = kg_xasprintf("%s/%s", root, names[i]);
    if (kg_fs_remove_tree(fs, dir, err))
      KG_WARN("%s", err);
    else
      KG_INFO("Removed the task data of an earlier run that did not finish: %s", dir);
    free(dir);
  }
  kg_fs_list_free(names, count);
  free(prefix);
  free(root);
}

int kg_commit(kg_state_t *state, const kg_publish_t *pub, const char *job_id, const char *final_dir,
              const kg_task_t *tasks, size_t ntasks, int64_t *duration_ms, char *errbuf) {
  int64_t t0 = kg_mono_ms();
  size_t nmoves = 0, nparts = 0;
  for (size_t i = 0; i < ntasks; i++) {
    if (!tasks[i].result.succeeded) continue; /* job.commit.policy=successful: only successful tasks commit */
    nmoves += tasks[i].result.nfiles;
    nparts += tasks[i].spec.nunits;
  }
  kg_move_t *moves = kg_xcalloc(nmoves ? nmoves : 1, sizeof *moves);
  kg_partition_state_t *parts = kg_xcalloc(nparts ? nparts : 1, sizeof *parts);
  size_t m = 0, p = 0;
  for (size_t i = 0; i < ntasks; i++) {
    const kg_task_t *t = &tasks[i];
    if (!t->result.succeeded) continue;
    for (size_t f = 0; f < t->result.nfiles; f++) {
      moves[m].src = t->result.files[f].output;
      moves[m++].dst = t->result.files[f].final;
    }
    for (size_t u = 0; u < t->spec.nunits; u++) {
      const kg_unit_result_t *r = &t->result.units[u];
      kg_partition_state_t *ps = &parts[p++];
      ps->topic = t->spec.units[u]->topic;
      ps->partition = t->spec.units[u]->partition;
      ps->next_offset = r->actual_high;
      ps->has_stats = r->records > 0;
      ps->records_pulled = r->records;
      ps->avg_record_millis = r->records > 0 ? (double)r->elapsed_ms / (double)r->records : 0;
      ps->avg_record_size = r->records > 0 ? (double)r->bytes / (double)r->records : 0;
      ps->has_log_start = true;
      ps->log_start = t->spec.units[u]->earliest;
      /* The last record pulled identifies the log next run. A unit that was reset and pulled nothing leaves no
       * record of the log it now reads: the old one's is dropped, so that it is not held against the new log. */
      ps->last = r->last;
      ps->update_last = r->records > 0 || t->spec.units[u]->reason == KG_START_RESET ||
                        t->spec.units[u]->reason == KG_START_RECREATED;
      if (r->records == 0) ps->last.set = false;
    }
  }
  int rc = to_objects(pub) ? prepare_objects(pub, moves, nmoves, errbuf) : KG_OK;
  kg_fs_point("state.journal.before");
  if (!rc) rc = kg_state_commit_begin(state, job_id, moves, nmoves, parts, nparts, errbuf);
  bool journaled = rc == KG_OK;
  if (journaled) kg_fs_point("state.journal.after");
  if (journaled) kg_crash_point("journaled");
  move_status_t *status = kg_xcalloc(nmoves ? nmoves : 1, sizeof *status);
  char **etags = kg_xcalloc(nmoves ? nmoves : 1, sizeof *etags);
  if (!rc && nmoves) rc = publish_all(pub, moves, nmoves, status, etags, errbuf);
  /* ETags the journal did not foresee (SSE-KMS): recorded, so that a recovery knows its own objects. */
  for (size_t i = 0; !rc && i < nmoves; i++)
    if (etags[i]) rc = kg_state_move_update(state, job_id, i, moves[i].upload_id, etags[i], errbuf);
  bool unknown = false; /* a failed move may have happened, and the file systems cannot tell */
  if (rc && journaled) {
    /* A move whose folders could not be synced did happen, and so may one whose answer was lost (a NameNode that
     * died after doing it): those are undone with the others. When the file systems cannot say, the move may
     * have happened: the journal must stay. */
    for (size_t i = 0; i < nmoves; i++) {
      if (status[i] != MOVE_FAILED) continue;
      char look_err[KG_ERRLEN];
      bool done = false;
      if (was_published(pub, &moves[i], &done, look_err))
        unknown = true;
      else if (done)
        status[i] = MOVE_DONE;
    }
  }
  if (rc && journaled && unknown) {
    /* Neither undone nor dropped: the next run finds the journal and finishes the commit (the move that may have
     * happened included), before anything else. */
    KG_ERROR("The commit of %s stays journaled: a move failed and the file system cannot tell whether it happened; "
             "the next run finishes it",
             job_id);
  } else if (rc && journaled) {
    /* A move failed: take back the ones made, then drop the journal, so that the run leaves no trace. If a
     * file cannot be taken back, the journal stays and the next run finishes the commit instead. */
    char undo_err[KG_ERRLEN];
    bool undone = true;
    size_t taken = 0;
    for (size_t i = nmoves; i-- > 0;) {
      if (status[i] != MOVE_DONE) continue;
      if (unpublish_one(pub, &moves[i], undo_err)) {
        KG_ERROR("%s", undo_err);
        undone = false;
      } else {
        taken++;
      }
    }
    if (taken) KG_WARN("Took back the %zu files the failed commit of %s had published", taken, job_id);
    for (size_t i = 0; undone && to_objects(pub) && i < nmoves; i++) /* the uploads not completed */
      if (status[i] != MOVE_DONE && moves[i].upload_id &&
          pub->dst->object->abort_upload(pub->dst, moves[i].dst, moves[i].upload_id, undo_err))
        KG_WARN("%s", undo_err);
    if (undone) kg_fs_point("state.abort.before");
    if (undone && kg_state_commit_abort(state, job_id, undo_err)) KG_ERROR("%s", undo_err);
  }
  if (!rc) kg_crash_point("finish");
  if (!rc) kg_fs_point("state.finish.before");
  if (!rc) rc = kg_state_commit_finish(state, job_id, errbuf);
  if (!rc) kg_fs_point("state.finish.after");
  if (!rc) {
    KG_INFO("Published %zu files to %s%s and committed the offsets of %zu partitions", nmoves, final_dir,
            to_objects(pub)           ? " (written to the object store)"
            : kg_publish_crosses(pub) ? " (uploaded)"
                                      : "",
            nparts);
    *duration_ms = kg_mono_ms() - t0;
  }
  if (rc && !journaled && to_objects(pub)) /* the journal failed: the uploads begun for it go */
    for (size_t i = 0; i < nmoves; i++) {
      char ignored[KG_ERRLEN];
      if (moves[i].upload_id) pub->dst->object->abort_upload(pub->dst, moves[i].dst, moves[i].upload_id, ignored);
    }
  for (size_t i = 0; i < nmoves; i++) {
    free(etags[i]);
    free(moves[i].upload_id);
    free(moves[i].etag);
  }
  free(etags);
  free(status);
  free(moves);
  free(parts);
  return rc;
}
