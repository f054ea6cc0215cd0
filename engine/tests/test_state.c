/* test_state.c: the state store: partitions, the commit journal and its recovery, run history. */
#include <sqlite3.h>
#include <stdlib.h>

#include "fs.h"
#include "cli.h"
#include "commit.h"
#include "job.h"
#include "state.h"
#include "test.h"

/* Publishing on the local file system, as a job with the default properties does. */
static const kg_publish_t *local_publish(void) {
  static kg_publish_t p;
  p = (kg_publish_t){.src = kg_fs_local(), .dst = kg_fs_local(), .threads = 1};
  return &p;
}

static bool exists(const char *path) {
  bool found = false;
  return kg_fs_exists(kg_fs_local(), path, &found, NULL) == KG_OK && found;
}

static kg_partition_state_t part(const char *topic, int32_t p, int64_t next, int64_t records) {
  kg_partition_state_t s = {0};
  s.topic = (char *)topic;
  s.partition = p;
  s.next_offset = next;
  s.has_stats = records > 0;
  s.records_pulled = records;
  s.avg_record_millis = 0.5;
  s.avg_record_size = 100;
  return s;
}

static void touch(const char *path) {
  FILE *f = fopen(path, "w");
  fputs("data\n", f);
  fclose(f);
}

/* A database made by an older kingest (no run counts, no partition fingerprints) is brought up to date when it
 * is opened, keeping its rows. */
static void test_migration(const char *dir) {
  char *path = kg_xasprintf("%s/old.db", dir);
  sqlite3 *db = NULL;
  CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
  CHECK_INT(sqlite3_exec(db,
                         "CREATE TABLE partition_state(topic TEXT NOT NULL, partition INTEGER NOT NULL,"
                         " next_offset INTEGER NOT NULL, avg_record_millis REAL, avg_record_size REAL,"
                         " records_pulled INTEGER, job_id TEXT, updated_ms INTEGER, PRIMARY KEY(topic, partition));"
                         "INSERT INTO partition_state VALUES('t', 0, 42, NULL, NULL, NULL, 'job_1', 1);"
                         "CREATE TABLE runs(job_id TEXT PRIMARY KEY, started_ms INTEGER, ended_ms INTEGER,"
                         " records INTEGER, bytes INTEGER, result TEXT, message TEXT);"
                         "INSERT INTO runs VALUES('job_1', 1, 2, 5, 50, 'SUCCESSFUL', '');",
                         NULL, NULL, NULL),
            SQLITE_OK);
  sqlite3_close(db);
  char err[KG_ERRLEN];
  kg_state_t *s = NULL;
  CHECK_INT(kg_state_open(dir, "old", true, &s, err), KG_OK);
  kg_partition_state_t *parts = NULL;
  size_t n = 0;
  CHECK_INT(kg_state_partitions(s, &parts, &n, err), KG_OK);
  CHECK_INT(n, 1);
  CHECK_INT(parts[0].next_offset, 42);
  kg_state_free_partitions(parts, n);
  kg_run_counts_t counts = {.read = 3, .written = 2, .bytes = 20, .skipped = 1};
  CHECK_INT(kg_state_run_begin(s, "job_2", 10, err), KG_OK);
  CHECK_INT(kg_state_run_end(s, "job_2", 20, &counts, "SUCCESSFUL", NULL, err), KG_OK);
  kg_state_close(s);
  CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  CHECK_INT(sqlite3_prepare_v2(db, "SELECT count(*), sum(records_read), sum(skipped) FROM runs", -1, &st, NULL),
            SQLITE_OK);
  CHECK_INT(sqlite3_step(st), SQLITE_ROW);
  CHECK_INT(sqlite3_column_int(st, 0), 2);
  CHECK_INT(sqlite3_column_int(st, 1), 3);
  CHECK_INT(sqlite3_column_int(st, 2), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
  free(path);
}

/* Writes LEN bytes of DATA to PATH (replacing it). */
static void spit(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (len) fwrite(data, 1, len, f);
  fclose(f);
}

/* A state database that exists but is not one is refused, naming the file and the way out, by every way of
 * opening it, and is left as it was: empty (0 bytes), cut short, not SQLite, another program's database. A
 * database that is absent is a new job's. */
static void test_not_a_state(const char *dir) {
  char err[KG_ERRLEN];
  kg_state_t *s = NULL;
  char *store = kg_xasprintf("%s/damaged", dir);
  CHECK_INT(kg_state_open(store, "good", true, &s, err), KG_OK); /* absent: made */
  kg_partition_state_t p = part("t", 0, 100, 100);
  CHECK_INT(kg_state_commit_begin(s, "job_1", NULL, 0, &p, 1, err), KG_OK);
  CHECK_INT(kg_state_commit_finish(s, "job_1", err), KG_OK);
  for (int i = 0; i < 300; i++) { /* a database of several pages, so that cutting it short loses some */
    char id[32];
    snprintf(id, sizeof id, "job_run_%d", i);
    CHECK_INT(kg_state_run_begin(s, id, i, err), KG_OK);
  }
  kg_state_close(s);
  char *good = kg_xasprintf("%s/good.db", store);
  size_t len = 0;
  FILE *f = fopen(good, "rb");
  char *bytes = kg_xmalloc(1 << 20);
  len = fread(bytes, 1, 1 << 20, f);
  fclose(f);
  CHECK(len > 8192);

  struct {
    const char *job, *data;
    size_t len;
    const char *says;
  } cases[] = {
      {"empty", "", 0, "is empty (0 bytes), not the state of job empty"},
      {"cut", bytes, len / 2, "the file is damaged"},
      {"text", "not a database at all, but long enough to be read as one", 57, "the file is damaged"},
      {"other", NULL, 0, "holds no kingest state"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *path = kg_xasprintf("%s/%s.db", store, cases[i].job);
    if (cases[i].data) {
      spit(path, cases[i].data, cases[i].len);
    } else {
      sqlite3 *db = NULL;
      CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
      CHECK_INT(sqlite3_exec(db, "CREATE TABLE notes(text TEXT)", NULL, NULL, NULL), SQLITE_OK);
      sqlite3_close(db);
    }
    f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long before = ftell(f);
    fclose(f);
    for (int how = 0; how < 3; how++) {
      err[0] = 0;
      int rc = how == 0   ? kg_state_open(store, cases[i].job, true, &s, err)
               : how == 1 ? kg_state_open(store, cases[i].job, false, &s, err)
                          : kg_state_open_readonly(store, cases[i].job, &s, err);
      CHECK_INT(rc, KG_ESTATE);
      CHECK(s == NULL);
      CHECK_CONTAINS(err, path);
      CHECK_CONTAINS(err, cases[i].says);
      CHECK_CONTAINS(err, "remove it, with its -wal and -shm files, to start the job over");
      CHECK_CONTAINS(err, "restore it");
    }
    f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    CHECK_INT(ftell(f), before); /* left as it was */
    fclose(f);
    free(path);
  }
  free(bytes);
  free(good);
  free(store);
}

/* Commits on the state S, with files in DIR: in full through the journal, rolled forward by recovery, without
 * statistics, aborted, and with a journal whose files are gone. */
static void test_commits(kg_state_t *s, const char *dir) {
  char err[KG_ERRLEN];
  /* A full commit: journal, move, finish. */
  char *src = kg_xasprintf("%s/out.txt", dir), *dst = kg_xasprintf("%s/final/t/out.txt", dir);
  touch(src);
  kg_move_t mv = {.src = src, .dst = dst};
  kg_partition_state_t parts[2] = {part("t", 0, 10, 10), part("t", 1, 3, 0)};
  CHECK_INT(kg_state_commit_begin(s, "job_1", &mv, 1, parts, 2, err), KG_OK);
  char *pending = NULL;
  kg_move_t *moves = NULL;
  size_t nmoves = 0;
  CHECK_INT(kg_state_pending(s, &pending, &moves, &nmoves, err), KG_OK);
  CHECK_STR(pending, "job_1");
  CHECK_INT(nmoves, 1);
  free(pending);
  kg_state_free_moves(moves, nmoves);
  /* The offsets are not visible before the commit finishes. */
  kg_partition_state_t *got = NULL;
  size_t n = 0;
  CHECK_INT(kg_state_partitions(s, &got, &n, err), KG_OK);
  CHECK_INT(n, 0);
  kg_state_free_partitions(got, n);

  /* Recovery rolls the commit forward: the move and the offsets. */
  CHECK_INT(kg_commit_recover(s, local_publish(), err), KG_OK);
  CHECK(!exists(src));
  CHECK(exists(dst));
  CHECK_INT(kg_state_partitions(s, &got, &n, err), KG_OK);
  CHECK_INT(n, 2);
  if (n == 2) {
    CHECK_STR(got[0].topic, "t");
    CHECK_INT(got[0].next_offset, 10);
    CHECK(got[0].has_stats);
    CHECK_INT(got[0].records_pulled, 10);
    CHECK_INT(got[1].next_offset, 3);
    CHECK(!got[1].has_stats);
  }
  kg_state_free_partitions(got, n);
  CHECK_INT(kg_state_pending(s, &pending, &moves, &nmoves, err), KG_OK);
  CHECK(pending == NULL);

  /* A second commit without statistics keeps the earlier ones. */
  kg_partition_state_t again = part("t", 0, 12, 0);
  CHECK_INT(kg_state_commit_begin(s, "job_2", NULL, 0, &again, 1, err), KG_OK);
  CHECK_INT(kg_state_commit_finish(s, "job_2", err), KG_OK);
  CHECK_INT(kg_state_partitions(s, &got, &n, err), KG_OK);
  const kg_partition_state_t *t0 = kg_state_find(got, n, "t", 0);
  CHECK(t0 != NULL);
  if (t0) {
    CHECK_INT(t0->next_offset, 12);
    CHECK(t0->has_stats);
    CHECK_INT(t0->records_pulled, 10);
  }
  CHECK(kg_state_find(got, n, "t", 7) == NULL);
  kg_state_free_partitions(got, n);

  /* An aborted commit leaves nothing. */
  kg_partition_state_t bad = part("t", 0, 99, 1);
  CHECK_INT(kg_state_commit_begin(s, "job_3", NULL, 0, &bad, 1, err), KG_OK);
  CHECK_INT(kg_state_commit_abort(s, "job_3", err), KG_OK);
  CHECK_INT(kg_state_partitions(s, &got, &n, err), KG_OK);
  t0 = kg_state_find(got, n, "t", 0);
  CHECK(t0 && t0->next_offset == 12);
  kg_state_free_partitions(got, n);

  /* A journal whose files are gone cannot be finished, and says so. */
  kg_move_t lost = {.src = "/nonexistent/a", .dst = "/nonexistent/b"};
  CHECK_INT(kg_state_commit_begin(s, "job_4", &lost, 1, &bad, 1, err), KG_OK);
  CHECK_INT(kg_commit_recover(s, local_publish(), err), KG_EIO);
  CHECK_CONTAINS(err, "job_4");
  CHECK_INT(kg_state_commit_abort(s, "job_4", err), KG_OK);
  free(src);
  free(dst);
}

/* The runs' history on the state S: counts, and runs left RUNNING by a dead process. */
static void test_history(kg_state_t *s) {
  char err[KG_ERRLEN];
  CHECK_INT(kg_state_run_begin(s, "job_5", 1000, err), KG_OK);
  kg_run_counts_t counts = {.read = 9, .written = 7, .bytes = 70, .skipped = 1, .quarantined = 1};
  CHECK_INT(kg_state_run_end(s, "job_5", 2000, &counts, "SUCCESSFUL", NULL, err), KG_OK);

  /* Runs left RUNNING by a dead process are recorded as DIED by the next run, saying whether their commit was
   * completed (job_2's was: the stored partition names it); finished runs and the current one keep theirs. */
  CHECK_INT(kg_state_run_begin(s, "job_2", 3000, err), KG_OK);
  CHECK_INT(kg_state_run_begin(s, "job_6", 4000, err), KG_OK);
  CHECK_INT(kg_state_run_begin(s, "job_7", 5000, err), KG_OK);
  CHECK_INT(kg_state_runs_died(s, "job_7", err), KG_OK);
  char *history = NULL;
  size_t history_len = 0;
  FILE *h = open_memstream(&history, &history_len);
  kg_history_entry_t *entries = NULL;
  size_t nentries = 0;
  CHECK_INT(kg_state_history(s, 0, &entries, &nentries, err), KG_OK);
  kg_cli_history_table(h, entries, nentries);
  kg_state_free_history(entries, nentries);
  fclose(h);
  const char *none = "                                                 -          -            -          -           "
                     "-          -          -  ";
  char *want = kg_xasprintf("job_6%sDIED        the process ended before the run finished (killed or crashed); "
                            "nothing of it was committed\n",
                            none);
  CHECK_CONTAINS(history, want);
  free(want);
  want = kg_xasprintf("job_2%sDIED        the process ended before the run finished (killed or crashed); its "
                      "commit was completed\n",
                      none);
  CHECK_CONTAINS(history, want);
  free(want);
  want = kg_xasprintf("job_7%sRUNNING", none);
  CHECK_CONTAINS(history, want);
  free(want);
  /* Read, written, bytes, skipped, quarantined, deleted, tombstones. */
  CHECK_CONTAINS(history, "job_5                                                 9          7           70          1 "
                          "          1          0          0  SUCCESSFUL  1000 ms\n");
  free(history);
}

/* The last run that ended and the last that succeeded, leaving out the current one, on the state S (after
 * test_history), which it closes; a job of STORE that never ran has neither. */
static void test_last_runs(kg_state_t *s, const char *store) {
  char err[KG_ERRLEN];
  kg_run_counts_t counts = {.read = 9, .written = 7, .bytes = 70, .skipped = 1, .quarantined = 1};
  int64_t last_run = -1, last_success = -1;
  CHECK_INT(kg_state_last_runs(s, "job_7", false, &last_run, &last_success, err), KG_OK);
  CHECK_INT(last_run, 2000);
  CHECK_INT(last_success, 2000);
  CHECK_INT(kg_state_run_begin(s, "job_8", 6000, err), KG_OK);
  CHECK_INT(kg_state_run_end(s, "job_8", 6500, &counts, "PARTIAL", NULL, err), KG_OK);
  CHECK_INT(kg_state_run_begin(s, "job_9", 7000, err), KG_OK);
  CHECK_INT(kg_state_run_end(s, "job_9", 7500, &counts, "FAILED", "broken", err), KG_OK);
  CHECK_INT(kg_state_last_runs(s, "job_10", false, &last_run, &last_success, err), KG_OK);
  CHECK_INT(last_run, 7500);
  CHECK_INT(last_success, 2000);
  CHECK_INT(kg_state_last_runs(s, "job_10", true, &last_run, &last_success, err), KG_OK);
  CHECK_INT(last_success, 6500);
  CHECK_INT(kg_state_last_runs(s, "job_9", true, &last_run, &last_success, err), KG_OK);
  CHECK_INT(last_run, 6500);
  kg_state_close(s);
  /* A job that never ran has neither. */
  CHECK_INT(kg_state_open(store, "job2", true, &s, err), KG_OK);
  CHECK_INT(kg_state_last_runs(s, "job_1", true, &last_run, &last_success, err), KG_OK);
  CHECK_INT(last_run, 0);
  CHECK_INT(last_success, 0);
  kg_state_close(s);
}

int main(void) {
  char tmpl[] = "/tmp/kg-state-XXXXXX";
  char *dir = mkdtemp(tmpl);
  char err[KG_ERRLEN];
  kg_state_t *s = NULL;
  CHECK_INT(kg_state_open(dir, "missing", false, &s, err), KG_ENOTFOUND);
  CHECK_CONTAINS(err, "missing");
  char *store = kg_xasprintf("%s/store", dir);
  test_migration(dir);
  test_not_a_state(dir);
  CHECK_INT(kg_state_open(store, "job1", true, &s, err), KG_OK);
  test_commits(s, dir);
  test_history(s);
  test_last_runs(s, store);
  free(store);
  kg_fs_remove_tree(kg_fs_local(), dir, NULL);
  TEST_MAIN_END();
}
