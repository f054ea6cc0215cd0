/* commit.c: publishing and storing offsets, exactly once (commit.h). */
#include "commit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kg_commit_recover(kg_state_t *state, kg_fs_t *fs, char *errbuf) {
  char *job_id = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  int rc = kg_state_pending(state, &job_id, &moves, &nmoves, errbuf);
  if (rc || !job_id) return rc;
  KG_WARN("Finishing the interrupted commit of %s (%zu files)", job_id, nmoves);
  for (size_t i = 0; i < nmoves && !rc; i++) {
    bool src = false, dst = false;
    if ((rc = kg_fs_exists(fs, moves[i].src, &src, errbuf))) break;
    if (src) {
      rc = kg_fs_move(fs, moves[i].src, moves[i].dst, errbuf);
      kg_crash_point("recover");
    } else if (!(rc = kg_fs_exists(fs, moves[i].dst, &dst, errbuf)) && !dst) {
      rc = kg_fail(errbuf, KG_EIO, "cannot finish the commit of %s: neither %s nor %s exists", job_id, moves[i].src,
                   moves[i].dst);
    }
  }
  if (!rc) rc = kg_state_commit_finish(state, job_id, errbuf);
  if (!rc) KG_INFO("Finished the interrupted commit of %s", job_id);
  free(job_id);
  kg_state_free_moves(moves, nmoves);
  return rc;
}

void kg_commit_remove_dead_runs(const kg_config_t *c, kg_fs_t *fs, const char *job_id) {
  char *root = kg_xasprintf("%s/%s", c->task_data_root, c->job_name);
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

int kg_commit(kg_state_t *state, kg_fs_t *fs, const char *job_id, const char *final_dir, const kg_task_t *tasks,
              size_t ntasks, int64_t *duration_ms, char *errbuf) {
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
  int rc = kg_state_commit_begin(state, job_id, moves, nmoves, parts, nparts, errbuf);
  bool journaled = rc == KG_OK;
  if (journaled) kg_crash_point("journaled");
  size_t moved = 0;
  bool unknown = false; /* a failed move may have happened, and the file system cannot tell */
  while (!rc && moved < nmoves) {
    rc = kg_fs_move(fs, moves[moved].src, moves[moved].dst, errbuf);
    if (!rc) {
      moved++;
      kg_crash_point("publish");
    } else {
      /* A move whose folders could not be synced did rename the file, and so may a rename whose answer was lost
       * (a NameNode that died after doing it): undo it with the others. When the file system cannot say where
       * the file is, the move may have happened: the journal must stay. */
      char look_err[KG_ERRLEN];
      bool src = true, dst = false;
      if (kg_fs_exists(fs, moves[moved].src, &src, look_err) ||
          (!src && kg_fs_exists(fs, moves[moved].dst, &dst, look_err)))
        unknown = true;
      else if (!src && dst)
        moved++;
    }
  }
  if (rc && journaled && unknown) {
    /* Neither undone nor dropped: the next run finds the journal and finishes the commit (the move that may have
     * happened included), before anything else. */
    KG_ERROR("The commit of %s stays journaled: a move failed and the file system cannot tell whether it happened; "
             "the next run finishes it", job_id);
  } else if (rc && journaled) {
    /* A move failed: put back the ones made, then drop the journal, so that the run leaves no trace. If a
     * file cannot be put back, the journal stays and the next run finishes the commit instead. */
    char undo_err[KG_ERRLEN];
    bool undone = true;
    while (moved > 0) {
      moved--;
      if (kg_fs_move(fs, moves[moved].dst, moves[moved].src, undo_err)) {
        KG_ERROR("%s", undo_err);
        undone = false;
      }
    }
    if (undone && kg_state_commit_abort(state, job_id, undo_err)) KG_ERROR("%s", undo_err);
  }
  if (!rc) kg_crash_point("finish");
  if (!rc) rc = kg_state_commit_finish(state, job_id, errbuf);
  if (!rc) {
    KG_INFO("Published %zu files to %s and committed the offsets of %zu partitions", nmoves, final_dir, nparts);
    *duration_ms = kg_mono_ms() - t0;
  }
  free(moves);
  free(parts);
  return rc;
}
