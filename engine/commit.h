/* commit.h: the commit phase: publishing the tasks' files and storing the new offsets, all or nothing and
 * exactly once, with the journal that lets a later run finish a commit a killed run left under way (docs/running.md,
 * "Commit protocol"; docs/behaviour.md, section 8). */
#ifndef KG_COMMIT_H
#define KG_COMMIT_H

#include "config.h"
#include "fs.h"
#include "state.h"
#include "task.h"

/* Where a commit publishes from and to: task output is on SRC (the writer's file system), the final folder on
 * DST (data.publisher.fs.uri); the same kg_fs_t when they are one file system, and then a file is published by a
 * rename. Otherwise SRC is the local one and a file is uploaded to DST next to its final path, then renamed there,
 * so that readers never see half a file; or, when DST is an object store (fs.h: no rename), written to its final
 * key once, whole, under If-None-Match: * (docs/object-storage.md). THREADS files are published at once
 * (parallel.runner.threads). */
typedef struct {
  kg_fs_t *src;
  kg_fs_t *dst;
  int threads;
  const char *final_dir; /* data.publisher.final.dir: where an object store's unfinished uploads are swept */
  const char *job_name;  /* whose uploads they are (part.task_<job>_...) */
} kg_publish_t;

static inline bool kg_publish_crosses(const kg_publish_t *p) { return p->src != p->dst; }

/* What a recovery does with a journalled move to an object store, given what is at its key (THERE; size -1: nothing):
 * an object with the journalled size and ETag (any ETag when the journal has none) is the move's own, published;
 * on a store that marks its objects with their upload's id (MARKED: kg_fs_object_ops_t.marks_objects) it must also
 * carry the journalled upload id; another object is someone else's, never overwritten (an error naming the key);
 * nothing there: the journalled upload, if any, is aborted and the file written again. */
typedef enum {
  KG_OBJECT_PUBLISHED = 0,
  KG_OBJECT_FOREIGN,
  KG_OBJECT_WRITE,
} kg_object_decision_t;
kg_object_decision_t kg_commit_object_decide(const kg_move_t *move, const kg_fs_object_t *there, bool marked);

/* Publishes the files of the tasks that succeeded (job.commit.policy=successful commits those only; with full the
 * job commits only when all did) from task output to their final place on FS, and stores their partitions' new
 * offsets and statistics, under JOB_ID: first one transaction records every move and offset, then the files are
 * renamed, then one transaction applies the offsets. A move that fails undoes the moves made and drops the record,
 * so the run leaves no trace; a process killed in between leaves the record for kg_commit_recover. Returns KG_OK
 * with *DURATION_MS, or the error of the step that failed. */
int kg_commit(kg_state_t *state, const kg_publish_t *publish, const char *job_id, const char *final_dir,
              const kg_task_t *tasks, size_t ntasks, int64_t *duration_ms, char *errbuf);

/* Finishes a commit an earlier run recorded but did not complete, publishing what it had not (a file published
 * is never published again). KG_OK when there was none. */
int kg_commit_recover(kg_state_t *state, const kg_publish_t *publish, char *errbuf);

/* Removes what earlier runs of the job left in RUNS_ROOT (task.data.root.dir, or mr.job.root.dir) when they died (a
 * killed run never cleans up); the folder of the run JOB_ID is kept. Their files were never published: a commit
 * publishes from task output only, and an interrupted commit has been finished by kg_commit_recover. Call only while
 * holding the job lock, so that no other run is using them. */
void kg_commit_remove_dead_runs(const kg_config_t *config, kg_fs_t *fs, const char *runs_root, const char *job_id);

#endif
