/* state.c: the SQLite state store. WAL journal with synchronous=FULL: a committed transaction survives a
 * crash of the process or the machine.
 *
 * SQLite opens and syncs its own files (through its own VFS), and WAL needs shared memory between the
 * processes that open the database, so the store is always on the local file system: its folder is made and
 * its file looked for through the local backend of the file system interface. */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "fs.h"
#include "metrics.h"
#include "secret.h"

struct kg_state {
  sqlite3 *db;
  char *path;
};

static const char *schema =
    "CREATE TABLE IF NOT EXISTS kg_meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT OR IGNORE INTO kg_meta VALUES('schema_version', '1');"
    "CREATE TABLE IF NOT EXISTS partition_state("
    "  topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,"
    "  avg_record_millis REAL, avg_record_size REAL, records_pulled INTEGER, job_id TEXT, updated_ms INTEGER,"
    "  PRIMARY KEY(topic, partition));"
    "CREATE TABLE IF NOT EXISTS runs("
    "  job_id TEXT PRIMARY KEY, started_ms INTEGER, ended_ms INTEGER, records INTEGER, bytes INTEGER,"
    "  result TEXT, message TEXT);"
    "CREATE TABLE IF NOT EXISTS pending_moves("
    "  job_id TEXT NOT NULL, seq INTEGER NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL,"
    "  PRIMARY KEY(job_id, seq));"
    "CREATE TABLE IF NOT EXISTS state_changes("
    "  time_ms INTEGER NOT NULL, command TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL,"
    "  old_offset INTEGER, new_offset INTEGER);"
    "CREATE TABLE IF NOT EXISTS pending_partitions("
    "  job_id TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,"
    "  has_stats INTEGER NOT NULL, avg_record_millis REAL, avg_record_size REAL, records_pulled INTEGER,"
    "  PRIMARY KEY(job_id, topic, partition));";

/* Columns added after the first release, each with the type it is added with: a database made by an older
 * kingest gets them when it is opened for writing, and keeps every row. */
static const struct {
  const char *table, *column, *type;
} added_columns[] = {
    {"runs", "records_read", "INTEGER"},
    {"runs", "skipped", "INTEGER"},
    {"runs", "quarantined", "INTEGER"},
    {"runs", "deleted", "INTEGER"},
    {"runs", "tombstones", "INTEGER"},
    {"partition_state", "log_start", "INTEGER"},
    {"partition_state", "last_offset", "INTEGER"},
    {"partition_state", "last_timestamp", "INTEGER"},
    {"partition_state", "last_hash", "INTEGER"},
    {"pending_moves", "upload_id", "TEXT"},
    {"pending_moves", "size", "INTEGER"},
    {"pending_moves", "etag", "TEXT"},
    {"pending_partitions", "log_start", "INTEGER"},
    {"pending_partitions", "update_last", "INTEGER"},
    {"pending_partitions", "last_offset", "INTEGER"},
    {"pending_partitions", "last_timestamp", "INTEGER"},
    {"pending_partitions", "last_hash", "INTEGER"},
};

/* True when TABLE has COLUMN. */
static bool has_column(sqlite3 *db, const char *table, const char *column) {
  char *sql = kg_xasprintf("SELECT 1 FROM pragma_table_info('%s') WHERE name = ?", table);
  sqlite3_stmt *st;
  bool found = false;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, column, -1, SQLITE_TRANSIENT);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
  }
  free(sql);
  return found;
}

/* Brings an older database up to date (see added_columns); SQL errors go to *ERR. */
static int migrate(sqlite3 *db, char **err) {
  for (size_t i = 0; i < sizeof added_columns / sizeof added_columns[0]; i++) {
    if (has_column(db, added_columns[i].table, added_columns[i].column)) continue;
    char *sql = kg_xasprintf("ALTER TABLE %s ADD COLUMN %s %s", added_columns[i].table, added_columns[i].column,
                             added_columns[i].type);
    int rc = sqlite3_exec(db, sql, NULL, NULL, err);
    free(sql);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

/* What to do with a state database that cannot be read as one: the end of the errors that say so. */
#define KG_STATE_WAY_OUT                                                                                               \
  "restore it (with its -wal file, if any) from a backup, or remove it, with its -wal and -shm files, to start "       \
  "the job over (every partition is then new, and bootstrap.with.offset decides where each starts)"

/* KG_ESTATE, "state store <path>: <WHAT>: <SQLite's error>"; for a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB)
 * followed by the way out. */
static int db_fail(kg_state_t *s, char *errbuf, const char *what) {
  int code = sqlite3_errcode(s->db);
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
    return kg_fail(errbuf, KG_ESTATE, "state store %s: %s: %s: the file is damaged; " KG_STATE_WAY_OUT, s->path, what,
                   sqlite3_errmsg(s->db));
  return kg_fail(errbuf, KG_ESTATE, "state store %s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

/* An existing file opened as the state: it must be a kingest state database (its tables are made by the first
 * transaction kingest makes in it; a database of an older kingest has partition_state, and perhaps not kg_meta).
 * An empty file (0 bytes: truncated, or made by a tool) or another SQLite database is refused: taken for a new
 * job's state, it would have every partition pulled again from bootstrap.with.offset, and records already
 * published published again. */
static int check_existing(kg_state_t *s, const char *job, char *errbuf) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('kg_meta', 'partition_state')",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot read it");
  int step = sqlite3_step(st);
  sqlite3_finalize(st);
  if (step == SQLITE_ROW) return KG_OK;
  if (step != SQLITE_DONE) return db_fail(s, errbuf, "cannot read it");
  struct stat sb;
  bool empty = stat(s->path, &sb) == 0 && sb.st_size == 0;
  return kg_fail(errbuf, KG_ESTATE,
                 "state store %s %s, not the state of job %s: kingest does not take it for a new job's, which "
                 "would pull every partition again and publish again what was published; " KG_STATE_WAY_OUT,
                 s->path, empty ? "is empty (0 bytes)" : "holds no kingest state (it has no partition_state table)",
                 job);
}

static bool exists(const char *path) {
  bool found = false;
  return kg_fs_exists(kg_fs_local(), path, &found, NULL) == KG_OK && found;
}

char *kg_state_path(const char *dir, const char *job) { return kg_xasprintf("%s/%s.db", dir, job); }

int kg_state_open(const char *dir, const char *job, bool create, kg_state_t **out, char *errbuf) {
  *out = NULL;
  char *path = kg_state_path(dir, job);
  if (!create && !exists(path)) {
    int rc = kg_fail(errbuf, KG_ENOTFOUND, "no state for job %s: %s does not exist", job, path);
    free(path);
    return rc;
  }
  if (create) {
    int rc = kg_fs_local_mkdirs_mode(dir, 0700, errbuf);
    if (rc) {
      free(path);
      return kg_fail(errbuf, KG_EIO, "state.store.dir %s cannot be created: %s", dir, strerror(errno));
    }
  }
  kg_state_t *s = kg_xcalloc(1, sizeof *s);
  s->path = path;
  bool existed = exists(path);
  if (create && !existed) {
    /* Made here, readable by its owner only: SQLite makes a new database 0644, and its -wal and -shm files with the
     * database's own mode. An empty file is a new database to SQLite. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
    int rc = db_fail(s, errbuf, "cannot open");
    kg_state_close(s);
    return rc;
  }
  sqlite3_busy_timeout(s->db, 10000);
  int checked = existed ? check_existing(s, job, errbuf) : KG_OK;
  if (checked) {
    kg_state_close(s);
    return checked;
  }
  char *err = NULL;
  /* The tables and any added columns in one transaction: one sync of the journal, not one per statement. */
  if (sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, &err) != SQLITE_OK ||
      sqlite3_exec(s->db, schema, NULL, NULL, &err) != SQLITE_OK || migrate(s->db, &err) != SQLITE_OK ||
      sqlite3_exec(s->db, "COMMIT", NULL, NULL, &err) != SQLITE_OK) {
    int rc = kg_fail(errbuf, KG_ESTATE, "state store %s: %s", path, err ? err : "cannot initialise");
    sqlite3_free(err);
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    kg_state_close(s);
    return rc;
  }
  *out = s;
  return KG_OK;
}

int kg_state_open_readonly(const char *dir, const char *job, kg_state_t **out, char *errbuf) {
  *out = NULL;
  char *path = kg_state_path(dir, job);
  if (!exists(path)) {
    int rc = kg_fail(errbuf, KG_ENOTFOUND, "no state for job %s: %s does not exist", job, path);
    free(path);
    return rc;
  }
  kg_state_t *s = kg_xcalloc(1, sizeof *s);
  s->path = path;
  /* Not SQLITE_OPEN_READONLY: reading a WAL database creates its -wal and -shm files, and only a connection that
   * may write removes them when it is the last to close. query_only makes SQLite refuse any change. */
  if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK ||
      sqlite3_exec(s->db, "PRAGMA query_only=1", NULL, NULL, NULL) != SQLITE_OK) {
    int rc = db_fail(s, errbuf, "cannot open");
    kg_state_close(s);
    return rc;
  }
  sqlite3_busy_timeout(s->db, 10000);
  int rc = check_existing(s, job, errbuf);
  if (rc) {
    kg_state_close(s);
    return rc;
  }
  *out = s;
  return KG_OK;
}

void kg_state_close(kg_state_t *s) {
  if (!s) return;
  sqlite3_close(s->db);
  free(s->path);
  free(s);
}

int kg_state_partitions(kg_state_t *s, kg_partition_state_t **out, size_t *count, char *errbuf) {
  *out = NULL;
  *count = 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "SELECT topic, partition, next_offset, avg_record_millis, avg_record_size, records_pulled,"
                         " updated_ms, log_start, last_offset, last_timestamp, last_hash FROM partition_state"
                         " ORDER BY topic, partition",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot read partitions");
  size_t n = 0, cap = 0;
  kg_partition_state_t *parts = NULL;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      parts = kg_xrealloc(parts, cap * sizeof *parts);
    }
    kg_partition_state_t *p = &parts[n++];
    memset(p, 0, sizeof *p);
    p->topic = kg_xstrdup((const char *)sqlite3_column_text(st, 0));
    p->partition = sqlite3_column_int(st, 1);
    p->next_offset = sqlite3_column_int64(st, 2);
    p->has_stats = sqlite3_column_type(st, 3) != SQLITE_NULL;
    p->avg_record_millis = sqlite3_column_double(st, 3);
    p->avg_record_size = sqlite3_column_double(st, 4);
    p->records_pulled = sqlite3_column_int64(st, 5);
    p->updated_ms = sqlite3_column_int64(st, 6);
    p->has_log_start = sqlite3_column_type(st, 7) != SQLITE_NULL;
    p->log_start = sqlite3_column_int64(st, 7);
    p->last.set = sqlite3_column_type(st, 8) != SQLITE_NULL && sqlite3_column_type(st, 10) != SQLITE_NULL;
    p->last.offset = sqlite3_column_int64(st, 8);
    p->last.timestamp = sqlite3_column_int64(st, 9);
    p->last.hash = sqlite3_column_int64(st, 10);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    kg_state_free_partitions(parts, n);
    return db_fail(s, errbuf, "cannot read partitions");
  }
  *out = parts;
  *count = n;
  return KG_OK;
}

void kg_state_free_partitions(kg_partition_state_t *parts, size_t count) {
  for (size_t i = 0; i < count; i++)
    free(parts[i].topic);
  free(parts);
}

const kg_partition_state_t *kg_state_find(const kg_partition_state_t *parts, size_t count, const char *topic,
                                          int32_t partition) {
  size_t lo = 0, hi = count;
  while (lo < hi) { /* binary search: PARTS is sorted by topic, then partition */
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(parts[mid].topic, topic);
    if (c == 0) c = (parts[mid].partition > partition) - (parts[mid].partition < partition);
    if (c == 0) return &parts[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static int exec(kg_state_t *s, const char *sql, char *errbuf) {
  char *err = NULL;
  if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
    int code = sqlite3_errcode(s->db);
    bool damaged = code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
    int rc = kg_fail(errbuf, KG_ESTATE, "state store %s: %s%s", s->path, err ? err : sqlite3_errmsg(s->db),
                     damaged ? ": the file is damaged; " KG_STATE_WAY_OUT : "");
    sqlite3_free(err);
    return rc;
  }
  return KG_OK;
}

/* Runs SQL with one text parameter. */
static int exec1(kg_state_t *s, const char *sql, const char *param, char *errbuf) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_fail(s, errbuf, "cannot prepare");
  sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot write");
}

/* Failure injection (KINGEST_FAULT, kg_fault) at STEP of the commit journal: state.<step>.busy makes the step meet
 * a real SQLITE_BUSY (a second connection holds the write lock and the step waits 100 ms for it, not 10 s);
 * state.<step>.full fails the step as SQLite fails a write to a full disk. *BLOCKER is what fault_after
 * releases. */
static int fault_before(kg_state_t *s, const char *step, sqlite3 **blocker, char *errbuf) {
  *blocker = NULL;
  char point[64];
  snprintf(point, sizeof point, "state.%s.full", step);
  if (kg_fault(point)) return kg_fail(errbuf, KG_ESTATE, "state store %s: %s", s->path, sqlite3_errstr(SQLITE_FULL));
  snprintf(point, sizeof point, "state.%s.busy", step);
  if (!kg_fault(point)) return KG_OK;
  if (sqlite3_open_v2(s->path, blocker, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
      sqlite3_exec(*blocker, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
    int rc = kg_fail(errbuf, KG_ESTATE, "state store %s: cannot lock it for KINGEST_FAULT: %s", s->path,
                     sqlite3_errmsg(*blocker));
    sqlite3_close(*blocker);
    *blocker = NULL;
    return rc;
  }
  sqlite3_busy_timeout(s->db, 100);
  return KG_OK;
}

static void fault_after(kg_state_t *s, sqlite3 *blocker) {
  if (!blocker) return;
  sqlite3_exec(blocker, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_close(blocker);
  sqlite3_busy_timeout(s->db, 10000);
}

static int commit_begin(kg_state_t *s, const char *job_id, const kg_move_t *moves, size_t nmoves,
                        const kg_partition_state_t *parts, size_t nparts, char *errbuf);
static int commit_finish(kg_state_t *s, const char *job_id, char *errbuf);
static int commit_abort(kg_state_t *s, const char *job_id, char *errbuf);

int kg_state_commit_begin(kg_state_t *s, const char *job_id, const kg_move_t *moves, size_t nmoves,
                          const kg_partition_state_t *parts, size_t nparts, char *errbuf) {
  sqlite3 *blocker;
  int rc = fault_before(s, "journal", &blocker, errbuf);
  if (!rc) rc = commit_begin(s, job_id, moves, nmoves, parts, nparts, errbuf);
  fault_after(s, blocker);
  return rc;
}

int kg_state_commit_finish(kg_state_t *s, const char *job_id, char *errbuf) {
  sqlite3 *blocker;
  int rc = fault_before(s, "finish", &blocker, errbuf);
  if (!rc) rc = commit_finish(s, job_id, errbuf);
  fault_after(s, blocker);
  return rc;
}

int kg_state_commit_abort(kg_state_t *s, const char *job_id, char *errbuf) {
  sqlite3 *blocker;
  int rc = fault_before(s, "abort", &blocker, errbuf);
  if (!rc) rc = commit_abort(s, job_id, errbuf);
  fault_after(s, blocker);
  return rc;
}

static int commit_begin(kg_state_t *s, const char *job_id, const kg_move_t *moves, size_t nmoves,
                        const kg_partition_state_t *parts, size_t nparts, char *errbuf) {
  int rc = exec(s, "BEGIN IMMEDIATE", errbuf);
  if (rc) return rc;
  sqlite3_stmt *mv = NULL, *pp = NULL;
  if (sqlite3_prepare_v2(s->db,
                         "INSERT INTO pending_moves(job_id, seq, src, dst, upload_id, size, etag)"
                         " VALUES(?,?,?,?,?,?,?)",
                         -1, &mv, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(s->db,
                         "INSERT INTO pending_partitions(job_id, topic, partition, next_offset, has_stats,"
                         " avg_record_millis, avg_record_size, records_pulled, log_start, update_last, last_offset,"
                         " last_timestamp, last_hash) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &pp, NULL) != SQLITE_OK) {
    rc = db_fail(s, errbuf, "cannot record the commit");
    goto out;
  }
  for (size_t i = 0; i < nmoves && !rc; i++) {
    sqlite3_reset(mv);
    sqlite3_bind_text(mv, 1, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(mv, 2, (sqlite3_int64)i);
    sqlite3_bind_text(mv, 3, moves[i].src, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(mv, 4, moves[i].dst, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(mv, 5, moves[i].upload_id, -1, SQLITE_TRANSIENT); /* NULL binds NULL */
    if (moves[i].size >= 0 && (moves[i].upload_id || moves[i].etag))
      sqlite3_bind_int64(mv, 6, moves[i].size);
    else
      sqlite3_bind_null(mv, 6);
    sqlite3_bind_text(mv, 7, moves[i].etag, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(mv) != SQLITE_DONE) rc = db_fail(s, errbuf, "cannot record the commit");
  }
  for (size_t i = 0; i < nparts && !rc; i++) {
    const kg_partition_state_t *p = &parts[i];
    sqlite3_reset(pp);
    sqlite3_bind_text(pp, 1, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(pp, 2, p->topic, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(pp, 3, p->partition);
    sqlite3_bind_int64(pp, 4, p->next_offset);
    sqlite3_bind_int(pp, 5, p->has_stats);
    sqlite3_bind_double(pp, 6, p->avg_record_millis);
    sqlite3_bind_double(pp, 7, p->avg_record_size);
    sqlite3_bind_int64(pp, 8, p->records_pulled);
    if (p->has_log_start)
      sqlite3_bind_int64(pp, 9, p->log_start);
    else
      sqlite3_bind_null(pp, 9);
    sqlite3_bind_int(pp, 10, p->update_last);
    if (p->update_last && p->last.set) {
      sqlite3_bind_int64(pp, 11, p->last.offset);
      sqlite3_bind_int64(pp, 12, p->last.timestamp);
      sqlite3_bind_int64(pp, 13, p->last.hash);
    } else {
      sqlite3_bind_null(pp, 11);
      sqlite3_bind_null(pp, 12);
      sqlite3_bind_null(pp, 13);
    }
    if (sqlite3_step(pp) != SQLITE_DONE) rc = db_fail(s, errbuf, "cannot record the commit");
  }
out:
  sqlite3_finalize(mv);
  sqlite3_finalize(pp);
  if (rc) {
    exec(s, "ROLLBACK", NULL);
    return rc;
  }
  return exec(s, "COMMIT", errbuf);
}

static int commit_finish(kg_state_t *s, const char *job_id, char *errbuf) {
  int rc = exec(s, "BEGIN IMMEDIATE", errbuf);
  if (rc) return rc;
  char now[32];
  snprintf(now, sizeof now, "%lld", (long long)kg_now_ms());
  /* The last record's fingerprint is replaced only where the commit says so (update_last; a journal written by an
   * older kingest has NULL there and keeps it). */
  char *upsert = kg_xasprintf(
      "INSERT INTO partition_state(topic, partition, next_offset, avg_record_millis, avg_record_size,"
      " records_pulled, job_id, updated_ms, log_start, last_offset, last_timestamp, last_hash)"
      " SELECT p.topic, p.partition, p.next_offset,"
      "  CASE WHEN p.has_stats THEN p.avg_record_millis END, CASE WHEN p.has_stats THEN p.avg_record_size END,"
      "  CASE WHEN p.has_stats THEN p.records_pulled END, p.job_id, %s, p.log_start,"
      "  CASE WHEN p.update_last THEN p.last_offset ELSE s.last_offset END,"
      "  CASE WHEN p.update_last THEN p.last_timestamp ELSE s.last_timestamp END,"
      "  CASE WHEN p.update_last THEN p.last_hash ELSE s.last_hash END"
      " FROM pending_partitions p LEFT JOIN partition_state s ON s.topic = p.topic AND s.partition = p.partition"
      " WHERE p.job_id = ?1 AND true"
      " ON CONFLICT(topic, partition) DO UPDATE SET next_offset = excluded.next_offset,"
      "  avg_record_millis = coalesce(excluded.avg_record_millis, avg_record_millis),"
      "  avg_record_size = coalesce(excluded.avg_record_size, avg_record_size),"
      "  records_pulled = coalesce(excluded.records_pulled, records_pulled),"
      "  job_id = excluded.job_id, updated_ms = excluded.updated_ms,"
      "  log_start = coalesce(excluded.log_start, log_start), last_offset = excluded.last_offset,"
      "  last_timestamp = excluded.last_timestamp, last_hash = excluded.last_hash",
      now);
  rc = exec1(s, upsert, job_id, errbuf);
  free(upsert);
  if (!rc) rc = exec1(s, "DELETE FROM pending_partitions WHERE job_id = ?", job_id, errbuf);
  if (!rc) rc = exec1(s, "DELETE FROM pending_moves WHERE job_id = ?", job_id, errbuf);
  if (rc) {
    exec(s, "ROLLBACK", NULL);
    return rc;
  }
  return exec(s, "COMMIT", errbuf);
}

static int commit_abort(kg_state_t *s, const char *job_id, char *errbuf) {
  int rc = exec(s, "BEGIN IMMEDIATE", errbuf);
  if (!rc) rc = exec1(s, "DELETE FROM pending_partitions WHERE job_id = ?", job_id, errbuf);
  if (!rc) rc = exec1(s, "DELETE FROM pending_moves WHERE job_id = ?", job_id, errbuf);
  if (rc) {
    exec(s, "ROLLBACK", NULL);
    return rc;
  }
  return exec(s, "COMMIT", errbuf);
}

int kg_state_pending(kg_state_t *s, char **job_id, kg_move_t **moves, size_t *nmoves, char *errbuf) {
  *job_id = NULL;
  *moves = NULL;
  *nmoves = 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "SELECT job_id FROM pending_partitions UNION SELECT job_id FROM pending_moves LIMIT 1",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot read the commit journal");
  if (sqlite3_step(st) == SQLITE_ROW) *job_id = kg_xstrdup((const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (!*job_id) return KG_OK;
  /* A database of an older kingest opened for reading only has no upload columns. */
  const char *select = has_column(s->db, "pending_moves", "upload_id")
                           ? "SELECT src, dst, upload_id, size, etag FROM pending_moves WHERE job_id = ? ORDER BY seq"
                           : "SELECT src, dst, NULL, NULL, NULL FROM pending_moves WHERE job_id = ? ORDER BY seq";
  if (sqlite3_prepare_v2(s->db, select, -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot read the commit journal");
  sqlite3_bind_text(st, 1, *job_id, -1, SQLITE_TRANSIENT);
  size_t cap = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (*nmoves == cap) {
      cap = cap ? cap * 2 : 16;
      *moves = kg_xrealloc(*moves, cap * sizeof **moves);
    }
    (*moves)[*nmoves].src = kg_xstrdup((const char *)sqlite3_column_text(st, 0));
    (*moves)[*nmoves].dst = kg_xstrdup((const char *)sqlite3_column_text(st, 1));
    const char *upload_id = (const char *)sqlite3_column_text(st, 2), *etag = (const char *)sqlite3_column_text(st, 4);
    (*moves)[*nmoves].upload_id = upload_id ? kg_xstrdup(upload_id) : NULL;
    (*moves)[*nmoves].size = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
    (*moves)[*nmoves].etag = etag ? kg_xstrdup(etag) : NULL;
    (*nmoves)++;
  }
  sqlite3_finalize(st);
  return KG_OK;
}

int kg_state_move_update(kg_state_t *s, const char *job_id, size_t seq, const char *upload_id, const char *etag,
                         char *errbuf) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "UPDATE pending_moves SET upload_id = ?, etag = ? WHERE job_id = ? AND seq = ?", -1,
                         &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot record an upload in the commit journal");
  sqlite3_bind_text(st, 1, upload_id, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, etag, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, job_id, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 4, (sqlite3_int64)seq);
  int rc =
      sqlite3_step(st) == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot record an upload in the commit journal");
  sqlite3_finalize(st);
  return rc;
}

void kg_state_free_moves(kg_move_t *moves, size_t count) {
  for (size_t i = 0; i < count; i++) {
    free(moves[i].src);
    free(moves[i].dst);
    free(moves[i].upload_id);
    free(moves[i].etag);
  }
  free(moves);
}

int kg_state_run_begin(kg_state_t *s, const char *job_id, int64_t started_ms, char *errbuf) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO runs(job_id, started_ms, result) VALUES(?, ?, 'RUNNING')", -1,
                         &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot record the run");
  sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, started_ms);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot record the run");
}

int kg_state_runs_died(kg_state_t *s, const char *job_id, char *errbuf) {
  /* A dead run whose commit was completed (by itself, or by the next run's recovery) is the one the stored
   * partitions name. */
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "UPDATE runs SET result = 'DIED', message = 'the process ended before the run finished "
                         "(killed or crashed); ' || CASE WHEN EXISTS(SELECT 1 FROM partition_state p WHERE p.job_id = "
                         "runs.job_id) THEN 'its commit was completed' ELSE 'nothing of it was committed' END"
                         " WHERE result = 'RUNNING' AND job_id <> ?",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot record the run");
  sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot record the run");
}

int kg_state_run_end(kg_state_t *s, const char *job_id, int64_t ended_ms, const kg_run_counts_t *counts,
                     const char *result, const char *message, char *errbuf) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "UPDATE runs SET ended_ms = ?, records = ?, bytes = ?, records_read = ?, skipped = ?,"
                         " quarantined = ?, deleted = ?, result = ?, message = ?, tombstones = ? WHERE job_id = ?",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot record the run");
  sqlite3_bind_int64(st, 1, ended_ms);
  sqlite3_bind_int64(st, 2, counts->written);
  sqlite3_bind_int64(st, 3, counts->bytes);
  sqlite3_bind_int64(st, 4, counts->read);
  sqlite3_bind_int64(st, 5, counts->skipped);
  sqlite3_bind_int64(st, 6, counts->quarantined);
  sqlite3_bind_int64(st, 7, counts->deleted);
  sqlite3_bind_text(st, 8, result, -1, SQLITE_TRANSIENT);
  char *shown = kg_xstrdup(message ? message : "");
  kg_secret_mask(shown); /* a run's error may quote what it was given */
  sqlite3_bind_text(st, 9, shown, -1, SQLITE_TRANSIENT);
  free(shown);
  sqlite3_bind_int64(st, 10, counts->tombstones);
  sqlite3_bind_text(st, 11, job_id, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot record the run");
}

int kg_state_last_runs(kg_state_t *s, const char *job_id, bool partial_succeeds, int64_t *last_run_ms,
                       int64_t *last_success_ms, char *errbuf) {
  *last_run_ms = *last_success_ms = 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "SELECT MAX(ended_ms), MAX(CASE WHEN result = 'SUCCESSFUL' OR (result = 'PARTIAL' AND ?) "
                         "THEN ended_ms END) FROM runs WHERE ended_ms IS NOT NULL AND job_id <> ?",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot read the run history");
  sqlite3_bind_int(st, 1, partial_succeeds ? 1 : 0);
  sqlite3_bind_text(st, 2, job_id, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *last_run_ms = sqlite3_column_int64(st, 0);
    *last_success_ms = sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? KG_OK : db_fail(s, errbuf, "cannot read the run history");
}

int kg_state_run_totals(kg_state_t *s, const char *job_id, kg_run_counts_t *totals, const char *const *result_names,
                        size_t nresults, int64_t *results, char *errbuf) {
  memset(totals, 0, sizeof *totals);
  for (size_t i = 0; i < nresults; i++)
    results[i] = 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db,
                         "SELECT result, count(*), total(records_read), total(records), total(bytes), total(skipped),"
                         " total(quarantined), total(deleted), total(tombstones) FROM runs"
                         " WHERE ended_ms IS NOT NULL AND job_id <> ?"
                         " GROUP BY result",
                         -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot read the run history");
  sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *result = (const char *)sqlite3_column_text(st, 0);
    for (size_t i = 0; result && i < nresults; i++)
      if (!strcmp(result, result_names[i])) results[i] += sqlite3_column_int64(st, 1);
    totals->read += (int64_t)sqlite3_column_double(st, 2);
    totals->written += (int64_t)sqlite3_column_double(st, 3);
    totals->bytes += (int64_t)sqlite3_column_double(st, 4);
    totals->skipped += (int64_t)sqlite3_column_double(st, 5);
    totals->quarantined += (int64_t)sqlite3_column_double(st, 6);
    totals->deleted += (int64_t)sqlite3_column_double(st, 7);
    totals->tombstones += (int64_t)sqlite3_column_double(st, 8);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot read the run history");
}

/* Records one operator change in state_changes (within the caller's transaction). */
static int log_change(kg_state_t *s, const char *command, const char *topic, int32_t partition, bool had_old,
                      int64_t old_offset, bool has_new, int64_t new_offset, char *errbuf) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "INSERT INTO state_changes VALUES(?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
    return db_fail(s, errbuf, "cannot record the change");
  sqlite3_bind_int64(st, 1, kg_now_ms());
  sqlite3_bind_text(st, 2, command, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, topic, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 4, partition);
  if (had_old)
    sqlite3_bind_int64(st, 5, old_offset);
  else
    sqlite3_bind_null(st, 5);
  if (has_new)
    sqlite3_bind_int64(st, 6, new_offset);
  else
    sqlite3_bind_null(st, 6);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot record the change");
}

int kg_state_set_offset(kg_state_t *s, const char *topic, int32_t partition, int64_t offset, bool *had_old,
                        int64_t *old_offset, char *errbuf) {
  *had_old = false;
  int rc = exec(s, "BEGIN IMMEDIATE", errbuf);
  if (rc) return rc;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "SELECT next_offset FROM partition_state WHERE topic = ? AND partition = ?", -1, &st,
                         NULL) != SQLITE_OK) {
    rc = db_fail(s, errbuf, "cannot read the partition");
    goto out;
  }
  sqlite3_bind_text(st, 1, topic, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 2, partition);
  if (sqlite3_step(st) == SQLITE_ROW) {
    *had_old = true;
    *old_offset = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  if (sqlite3_prepare_v2(
          s->db,
          "INSERT INTO partition_state(topic, partition, next_offset, job_id, updated_ms)"
          " VALUES(?1, ?2, ?3, 'set-offset', ?4) ON CONFLICT(topic, partition) DO UPDATE SET"
          " next_offset = excluded.next_offset, job_id = excluded.job_id, updated_ms = excluded.updated_ms,"
          /* The operator chose the offset: what told a recreated log apart no longer applies to it. */
          " log_start = NULL, last_offset = NULL, last_timestamp = NULL, last_hash = NULL",
          -1, &st, NULL) != SQLITE_OK) {
    rc = db_fail(s, errbuf, "cannot write the partition");
    goto out;
  }
  sqlite3_bind_text(st, 1, topic, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 2, partition);
  sqlite3_bind_int64(st, 3, offset);
  sqlite3_bind_int64(st, 4, kg_now_ms());
  rc = sqlite3_step(st) == SQLITE_DONE ? KG_OK : db_fail(s, errbuf, "cannot write the partition");
  sqlite3_finalize(st);
  if (!rc) rc = log_change(s, "set-offset", topic, partition, *had_old, *old_offset, true, offset, errbuf);
out:
  if (rc) {
    exec(s, "ROLLBACK", NULL);
    return rc;
  }
  return exec(s, "COMMIT", errbuf);
}

int kg_state_reset(kg_state_t *s, const char *topic, int32_t partition, kg_partition_state_t **removed, size_t *count,
                   char *errbuf) {
  *removed = NULL;
  *count = 0;
  int rc = exec(s, "BEGIN IMMEDIATE", errbuf);
  if (rc) return rc;
  kg_partition_state_t *all = NULL;
  size_t n = 0;
  rc = kg_state_partitions(s, &all, &n, errbuf);
  kg_partition_state_t *out = kg_xcalloc(n ? n : 1, sizeof *out);
  size_t m = 0;
  sqlite3_stmt *st = NULL;
  if (!rc && sqlite3_prepare_v2(s->db, "DELETE FROM partition_state WHERE topic = ? AND partition = ?", -1, &st,
                                NULL) != SQLITE_OK)
    rc = db_fail(s, errbuf, "cannot reset");
  for (size_t i = 0; !rc && i < n; i++) {
    if (topic && strcmp(all[i].topic, topic)) continue;
    if (partition >= 0 && all[i].partition != partition) continue;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, all[i].topic, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, all[i].partition);
    if (sqlite3_step(st) != SQLITE_DONE) {
      rc = db_fail(s, errbuf, "cannot reset");
      break;
    }
    rc = log_change(s, "reset", all[i].topic, all[i].partition, true, all[i].next_offset, false, 0, errbuf);
    out[m] = all[i];
    out[m++].topic = kg_xstrdup(all[i].topic);
  }
  sqlite3_finalize(st);
  kg_state_free_partitions(all, n);
  if (rc) {
    exec(s, "ROLLBACK", NULL);
    kg_state_free_partitions(out, m);
    return rc;
  }
  rc = exec(s, "COMMIT", errbuf);
  if (rc) {
    kg_state_free_partitions(out, m);
    return rc;
  }
  *removed = out;
  *count = m;
  return KG_OK;
}

/* Column I of ST as a new string, or NULL. */
static char *text_or_null(sqlite3_stmt *st, int i) {
  const char *text = (const char *)sqlite3_column_text(st, i);
  return text && sqlite3_column_type(st, i) != SQLITE_NULL ? kg_xstrdup(text) : NULL;
}

/* Column I of ST, or -1 when it is NULL. */
static int64_t int_or_unknown(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

int kg_state_history(kg_state_t *s, int limit, kg_history_entry_t **out, size_t *count, char *errbuf) {
  *out = NULL;
  *count = 0;
  sqlite3_stmt *st;
  /* Runs and operator changes, newest first, each with its own columns (NULL where the other kind has one). */
  const char *sql =
      "SELECT * FROM ("
      " SELECT 'run' AS kind, started_ms AS time_ms, job_id, ended_ms, result, records_read, records, bytes, skipped,"
      "  quarantined, deleted, message, NULL AS command, NULL AS topic, NULL AS partition, NULL AS old_offset,"
      "  NULL AS new_offset, tombstones FROM runs"
      " UNION ALL SELECT 'change', time_ms, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, command, topic,"
      "  partition, old_offset, new_offset, NULL FROM state_changes)"
      " ORDER BY time_ms DESC LIMIT ?";
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_fail(s, errbuf, "cannot read the history");
  sqlite3_bind_int(st, 1, limit > 0 ? limit : -1);
  kg_history_entry_t *entries = NULL;
  size_t n = 0, cap = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      entries = kg_xrealloc(entries, cap * sizeof *entries);
    }
    kg_history_entry_t *e = &entries[n++];
    memset(e, 0, sizeof *e);
    e->is_run = !strcmp((const char *)sqlite3_column_text(st, 0), "run");
    e->time_ms = sqlite3_column_int64(st, 1);
    if (e->is_run) {
      e->job_id = text_or_null(st, 2);
      e->ended_ms = int_or_unknown(st, 3);
      e->result = text_or_null(st, 4);
      e->counts.read = int_or_unknown(st, 5);
      e->counts.written = int_or_unknown(st, 6);
      e->counts.bytes = int_or_unknown(st, 7);
      e->counts.skipped = int_or_unknown(st, 8);
      e->counts.quarantined = int_or_unknown(st, 9);
      e->counts.deleted = int_or_unknown(st, 10);
      e->message = text_or_null(st, 11);
      e->counts.tombstones = int_or_unknown(st, 17);
      if (e->counts.tombstones < 0 && e->counts.read >= 0)
        e->counts.tombstones = 0; /* a run recorded before tombstones were counted */
    } else {
      e->command = text_or_null(st, 12);
      e->topic = text_or_null(st, 13);
      e->partition = (int32_t)sqlite3_column_int(st, 14);
      e->old_offset = int_or_unknown(st, 15);
      e->new_offset = int_or_unknown(st, 16);
    }
  }
  sqlite3_finalize(st);
  *out = entries;
  *count = n;
  return KG_OK;
}

void kg_state_free_history(kg_history_entry_t *entries, size_t count) {
  for (size_t i = 0; i < count; i++) {
    free(entries[i].job_id);
    free(entries[i].result);
    free(entries[i].message);
    free(entries[i].command);
    free(entries[i].topic);
  }
  free(entries);
}
