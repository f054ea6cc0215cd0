/* test_crashsim.c: the simulated power loss of fs_crashsim.c (KINGEST_POWERCUT), which the power-loss spec trusts to
 * lose what a real machine would: at a cut, bytes and folder entries not synced are gone and synced ones stay; a
 * rename is undone until its destination folder is synced and its source entry comes back until that folder is;
 * folders made and files created or removed since their folder's last sync are undone; a file keeps its synced
 * bytes and a torn part of the rest. Each scenario runs in a child process (the simulator is set up once a process,
 * from its environment, and ends the process at the cut): once without a cut, its operations logged, then cut at
 * chosen operations, the folder it leaves read back by the parent with plain system calls. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "fs_crashsim.h"
#include "test.h"

#define CUT_STATUS   99
#define TRASH_PREFIX ".kg-powercut-trash."

static char base[256]; /* the test's folder; each scenario works in a fresh DIR under it */
static char dir[512];

/* ---- the parent's view: plain system calls ------------------------------------------------------------------- */

static char *path_of(const char *rel) { return kg_xasprintf("%s/%s", dir, rel); }

/* The bytes of file PATH (NUL-terminated, *LEN of them), NULL when it is not there. */
static char *read_abs(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  kg_buf_t b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    kg_buf_append(&b, chunk, n);
  fclose(f);
  kg_buf_append(&b, "", 1);
  if (len) *len = b.len - 1;
  return b.data;
}

static char *read_rel(const char *rel, size_t *len) {
  char *path = path_of(rel);
  char *text = read_abs(path, len);
  free(path);
  return text;
}

static bool present(const char *rel) {
  char *path = path_of(rel);
  struct stat st;
  bool found = lstat(path, &st) == 0;
  free(path);
  return found;
}

/* Writes TEXT to a new file REL of DIR and syncs it and its folder (as a file that was there before the run). */
static void durable_file(const char *rel, const char *text) {
  char *path = path_of(rel);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK_INT(write(fd, text, strlen(text)), (long long)strlen(text));
    CHECK_INT(fsync(fd), 0);
    close(fd);
  }
  free(path);
}

static void durable_dir(const char *rel) {
  char *path = path_of(rel);
  CHECK_INT(mkdir(path, 0755), 0);
  free(path);
}

/* How many trash entries of the simulator are left anywhere under DIR (none may be: a cut and a normal exit both
 * clear them). */
static int trash_left(const char *at) {
  DIR *d = opendir(at);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!strncmp(e->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX))) n++;
    char *sub = kg_xasprintf("%s/%s", at, e->d_name);
    struct stat st;
    if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) n += trash_left(sub);
    free(sub);
  }
  closedir(d);
  return n;
}

/* ---- the child: a scenario through the simulator -------------------------------------------------------------- */

typedef struct {
  const char *name;
  void (*prepare)(void);             /* what is on the disk before the run, durable (plain system calls) */
  void (*run)(kg_fs_t *fs, char *e); /* the run's operations, through the simulator */
} scenario_t;

/* A check in the child: a failed one ends it with status 1 (never 0 or CUT_STATUS). */
#define MUST(cond)                                                                                                     \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      fprintf(stderr, "%s:%d: in the child: %s failed: %s\n", __FILE__, __LINE__, #cond, e);                           \
      _exit(1);                                                                                                        \
    }                                                                                                                  \
  } while (0)

static kg_fs_stream_t *open_new(kg_fs_t *fs, const char *rel, char *e) {
  char *path = path_of(rel);
  kg_fs_stream_t *s = NULL;
  MUST(kg_fs_create(fs, path, KG_FS_CREATE_NEW, &s, e) == KG_OK);
  free(path);
  return s;
}

static void put(kg_fs_stream_t *s, const char *text, char *e) {
  MUST(kg_fs_stream_write(s, text, strlen(text), e) == KG_OK);
}

static void sync_rel(kg_fs_t *fs, const char *rel, char *e) {
  char *path = path_of(rel);
  MUST(kg_fs_sync(fs, path, e) == KG_OK);
  free(path);
}

/* 700 bytes, "000 001 002 ... 174 ": a file cut to a prefix of them is told apart from one holding other bytes. */
static const char *unsynced_text(void) {
  static char text[701];
  if (!text[0])
    for (int i = 0; i < 175; i++)
      snprintf(text + 4 * i, 5, "%03d ", i);
  return text;
}

/* A file created, synced, its folder synced, then written more and closed (the bytes reach the file, unsynced). */
static void prepare_data(void) { durable_dir("a"); }
static void run_data(kg_fs_t *fs, char *e) {
  kg_fs_stream_t *s = open_new(fs, "a/f", e);
  put(s, "synced;", e);
  MUST(kg_fs_stream_sync(s, e) == KG_OK);
  sync_rel(fs, "a", e);
  put(s, unsynced_text(), e);
  MUST(kg_fs_stream_close(s, e) == KG_OK);
  /* A second file whose bytes are synced but whose entry is not. */
  s = open_new(fs, "a/g", e);
  put(s, "entry never synced", e);
  MUST(kg_fs_stream_sync(s, e) == KG_OK);
  MUST(kg_fs_stream_close(s, e) == KG_OK);
  kg_fs_powercut_point("end");
}

/* A durable file renamed into another durable folder (the local backend syncs the destination folder, then the
 * source's). */
static void prepare_rename(void) {
  durable_dir("a");
  durable_dir("b");
  durable_file("a/src", "renamed\n");
}
static void run_rename(kg_fs_t *fs, char *e) {
  char *src = path_of("a/src"), *dst = path_of("b/dst");
  MUST(kg_fs_move(fs, src, dst, e) == KG_OK);
  free(src);
  free(dst);
  kg_fs_powercut_point("end");
}

/* Folders made (mkdir -p syncs each one's parent) and a file created in the deepest, its bytes synced but not its
 * folder; a durable file removed and its folder synced; a new file created, synced, its folder synced; then, with no
 * sync of their folders after: a durable file and a durable folder removed, the new file removed, and another new
 * file created and removed. */
static void prepare_tree(void) {
  durable_dir("a");
  durable_file("a/old", "old\n");
  durable_file("a/kept", "kept\n");
  durable_dir("t");
  durable_file("t/inner", "inner\n");
}
static void remove_rel(kg_fs_t *fs, const char *rel, char *e) {
  char *path = path_of(rel);
  MUST(kg_fs_remove_tree(fs, path, e) == KG_OK);
  free(path);
}
static void run_tree(kg_fs_t *fs, char *e) {
  char *deep = path_of("n/m");
  MUST(kg_fs_mkdirs(fs, deep, e) == KG_OK);
  free(deep);
  kg_fs_stream_t *s = open_new(fs, "n/m/f", e);
  put(s, "in a new folder", e);
  MUST(kg_fs_stream_sync(s, e) == KG_OK);
  MUST(kg_fs_stream_close(s, e) == KG_OK);
  remove_rel(fs, "a/old", e);
  sync_rel(fs, "a", e); /* the removal of a/old is durable */
  s = open_new(fs, "a/new", e);
  put(s, "was durable", e);
  MUST(kg_fs_stream_sync(s, e) == KG_OK);
  MUST(kg_fs_stream_close(s, e) == KG_OK);
  sync_rel(fs, "a", e); /* a/new is durable */
  remove_rel(fs, "a/kept", e);
  remove_rel(fs, "t", e);
  remove_rel(fs, "a/new", e);
  s = open_new(fs, "a/never-synced", e);
  put(s, "gone", e);
  MUST(kg_fs_stream_close(s, e) == KG_OK);
  remove_rel(fs, "a/never-synced", e);
  kg_fs_powercut_point("end");
}

/* EXTRA powercut points, then a new file in a durable folder, its entry synced, 700 bytes written and handed to
 * the file unsynced: the cut after them keeps a random part of those bytes (the extra points change the cut's
 * number, and so the draw). */
static int extra_points;
static void prepare_torn(void) { durable_dir("a"); }
static void run_torn(kg_fs_t *fs, char *e) {
  for (int i = 0; i < extra_points; i++)
    kg_fs_powercut_point("pad");
  kg_fs_stream_t *s = open_new(fs, "a/torn", e);
  sync_rel(fs, "a", e);
  put(s, unsynced_text(), e);
  MUST(kg_fs_stream_close(s, e) == KG_OK);
  kg_fs_powercut_point("end");
}

/* Runs SC in a child, in DIR (base/<name>, made afresh), under KINGEST_POWERCUT=CUT: returns its exit status (-1
 * when it did not exit), with its stderr in *ERR and, when CUT is 0, the operations' log in *LOG (both owned by the
 * caller). */
static int run_child(const scenario_t *sc, long cut, char **err, char **log) {
  snprintf(dir, sizeof dir, "%s/%s", base, sc->name);
  char *cmd = kg_xasprintf("rm -rf '%s'", dir);
  CHECK_INT(system(cmd), 0);
  free(cmd);
  CHECK_INT(mkdir(dir, 0755), 0);
  sc->prepare();
  char *err_path = kg_xasprintf("%s/%s.stderr", base, sc->name);
  char *log_path = kg_xasprintf("%s/%s.ops", base, sc->name);
  unlink(log_path);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    char n[32];
    snprintf(n, sizeof n, "%ld", cut);
    setenv("KINGEST_POWERCUT", n, 1);
    if (cut == 0) setenv("KINGEST_POWERCUT_LOG", log_path, 1);
    char e[KG_ERRLEN] = "";
    kg_fs_t *fs = kg_fs_crashsim();
    MUST(fs != NULL);
    sc->run(fs, e);
    exit(0); /* a normal exit: the simulator empties its trash */
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  *err = read_abs(err_path, NULL);
  if (!*err) *err = kg_xstrdup("");
  if (log) *log = read_abs(log_path, NULL);
  free(err_path);
  free(log_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The number of the operation of LOG (lines "<n> <what> <path>") that is the K-th (from 1) WHAT on REL of DIR (NULL:
 * any path), 0 when there is none. */
static long op_number(const char *log, const char *what, const char *rel, int k) {
  char *path = rel ? path_of(rel) : NULL;
  long found = 0;
  for (const char *line = log; line && *line && !found;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char *text = kg_xstrndup(line, len);
    char *sp = strchr(text, ' ');
    if (sp) {
      char *op = sp + 1, *at = strchr(op, ' ');
      if (at) {
        *at++ = '\0';
        if (!strcmp(op, what) && (!path || !strcmp(at, path)) && --k == 0) found = strtol(text, NULL, 10);
      }
    }
    free(text);
    line = end ? end + 1 : line + len;
  }
  free(path);
  return found;
}

/* Runs SC without a cut (it must succeed), and returns its operations' log; *N is how many there are. */
static char *learn(const scenario_t *sc, long *n) {
  char *err = NULL, *log = NULL;
  CHECK_INT(run_child(sc, 0, &err, &log), 0);
  CHECK_STR(err, "");
  *n = 0;
  for (const char *p = log; p && *p; p++)
    if (*p == '\n') (*n)++;
  CHECK_INT(trash_left(dir), 0);
  free(err);
  return log;
}

/* Runs SC cut at operation CUT (which must be reached), and checks the simulator's notice. Returns the child's
 * stderr (static until the next call): the simulator tells there what it undid. */
static const char *cut_at(const scenario_t *sc, long cut, const char *what) {
  static char *err;
  free(err);
  err = NULL;
  CHECK(cut > 0);
  CHECK_INT(run_child(sc, cut, &err, NULL), CUT_STATUS);
  char notice[128];
  snprintf(notice, sizeof notice, "KINGEST_POWERCUT=%ld: power lost before %s ", cut, what);
  CHECK_CONTAINS(err, notice);
  if (strstr(err, "KINGEST_POWERCUT: cannot")) CHECK_STR(err, "(no failure of the simulation itself)");
  CHECK_INT(trash_left(dir), 0);
  return err;
}

/* Whether ERR tells that the cut undid WHAT ("dropped", "brought back") of REL. */
static bool told(const char *err, const char *what, const char *rel) {
  char *path = path_of(rel);
  char *line = kg_xasprintf("KINGEST_POWERCUT: %s %s\n", what, path);
  bool found = strstr(err, line) != NULL;
  free(line);
  free(path);
  return found;
}

static void check_file(const char *rel, const char *expected) {
  char *text = read_rel(rel, NULL);
  if (expected)
    CHECK_STR(text, expected);
  else if (text)
    CHECK_STR(rel, "(absent)");
  free(text);
}

static void test_data(void) {
  const scenario_t sc = {"data", prepare_data, run_data};
  long n = 0;
  char *log = learn(&sc, &n);
  /* Without a cut everything is there. */
  char *all = kg_xasprintf("synced;%s", unsynced_text());
  check_file("a/f", all);
  check_file("a/g", "entry never synced");
  CHECK_CONTAINS(log, " create ");
  CHECK_CONTAINS(log, " write ");
  CHECK_CONTAINS(log, " fsync ");
  CHECK_CONTAINS(log, " dirsync ");
  CHECK_CONTAINS(log, " close ");
  CHECK_CONTAINS(log, " end -");
  CHECK_INT(op_number(log, "end", NULL, 1), n); /* the last line is the last operation */

  /* Before the file's sync: its entry was never synced, so the file is gone. */
  cut_at(&sc, op_number(log, "fsync", "a/f", 1), "fsync");
  CHECK(!present("a/f"));
  /* After the file's sync, before its folder's: gone all the same. */
  cut_at(&sc, op_number(log, "dirsync", "a", 1), "dirsync");
  CHECK(!present("a/f"));
  /* After both: the synced bytes stay; the 700 written since (handed to the file at close) are cut to a random part,
   * a prefix of them. The second file's entry was never synced: gone, though its bytes were. */
  const char *err = cut_at(&sc, n, "end");
  size_t len = 0;
  char *text = read_rel("a/f", &len);
  CHECK(text != NULL);
  if (text) {
    CHECK(len >= 7 && len <= strlen(all));
    CHECK(!strncmp(text, all, len));
    if (len < strlen(all)) {
      char *path = path_of("a/f");
      char *line = kg_xasprintf("KINGEST_POWERCUT: lost %zu of the %zu bytes of %s (kept %zu)\n", strlen(all) - len,
                                strlen(all), path, len);
      CHECK_CONTAINS(err, line);
      free(line);
      free(path);
    }
  }
  CHECK(!present("a/g"));
  CHECK(told(err, "dropped", "a/g"));
  CHECK(!told(err, "dropped", "a/f"));
  /* Cut before the close: the bytes written since the sync were still in the stream's buffer, never in the file. */
  cut_at(&sc, op_number(log, "close", "a/f", 1), "close");
  check_file("a/f", "synced;");
  free(text);
  free(all);
  free(log);
}

static void test_rename(void) {
  const scenario_t sc = {"rename", prepare_rename, run_rename};
  long n = 0;
  char *log = learn(&sc, &n);
  check_file("b/dst", "renamed\n");
  CHECK(!present("a/src"));
  long rename = op_number(log, "rename", "b/dst", 1);
  long sync_dst = op_number(log, "dirsync", "b", 1), sync_src = op_number(log, "dirsync", "a", 1);
  CHECK(rename > 0 && sync_dst > rename && sync_src > sync_dst);
  /* Before the rename: nothing moved. */
  cut_at(&sc, rename, "rename");
  check_file("a/src", "renamed\n");
  CHECK(!present("b/dst"));
  /* Renamed, no folder synced: undone. */
  const char *err = cut_at(&sc, sync_dst, "dirsync");
  check_file("a/src", "renamed\n");
  CHECK(!present("b/dst"));
  CHECK(told(err, "brought back", "a/src") && told(err, "dropped", "b/dst"));
  /* The destination folder synced, not the source's: the file is at both names (what POSIX allows). */
  err = cut_at(&sc, sync_src, "dirsync");
  check_file("a/src", "renamed\n");
  check_file("b/dst", "renamed\n");
  CHECK(told(err, "brought back", "a/src") && !told(err, "dropped", "b/dst"));
  /* Both synced: moved. */
  err = cut_at(&sc, n, "end");
  CHECK(!present("a/src"));
  check_file("b/dst", "renamed\n");
  CHECK(!strstr(err, "KINGEST_POWERCUT: brought back") && !strstr(err, "KINGEST_POWERCUT: dropped"));
  free(log);
}

static void test_tree(void) {
  const scenario_t sc = {"tree", prepare_tree, run_tree};
  long n = 0;
  char *log = learn(&sc, &n);
  /* Without a cut: everything done, and the trash is empty (learn checked). */
  check_file("n/m/f", "in a new folder");
  CHECK(!present("a/old") && !present("a/kept") && !present("t") && !present("a/new") && !present("a/never-synced"));
  long mk_n = op_number(log, "mkdir", "n", 1), mk_m = op_number(log, "mkdir", "n/m", 1);
  CHECK(mk_n > 0 && mk_m > mk_n);
  CHECK(op_number(log, "remove", "a/kept", 1) > op_number(log, "dirsync", "a", 2));
  /* Before the first mkdir: nothing made, nothing removed. */
  cut_at(&sc, mk_n, "mkdir");
  CHECK(!present("n"));
  check_file("a/old", "old\n");
  /* n made and its parent synced (mkdir -p's sync); m made, n not synced since: m is gone, n stays. */
  cut_at(&sc, op_number(log, "dirsync", "n", 1), "dirsync");
  CHECK(present("n") && !present("n/m"));
  /* Before a/old's removal was synced: it is back. */
  cut_at(&sc, op_number(log, "dirsync", "a", 1), "dirsync");
  check_file("a/old", "old\n");
  CHECK(!present("a/new"));
  /* At the end: both folders stay (each synced into its parent); the file's bytes were synced but its folder never
   * was, so it is gone. a/old's removal was synced: gone. a/kept and t were removed unsynced: back, t with what it
   * held; so is a/new, with its synced bytes. The file created and removed with no sync between is not. */
  const char *err = cut_at(&sc, n, "end");
  CHECK(present("n/m") && !present("n/m/f"));
  CHECK(told(err, "dropped", "n/m/f") && told(err, "brought back", "a/kept") && told(err, "brought back", "t"));
  CHECK(!present("a/old"));
  check_file("a/kept", "kept\n");
  check_file("t/inner", "inner\n");
  check_file("a/new", "was durable");
  CHECK(!present("a/never-synced"));
  free(log);
}

static void test_torn(void) {
  const scenario_t sc = {"torn", prepare_torn, run_torn};
  const char *text = unsynced_text();
  size_t full = strlen(text);
  int torn = 0;
  for (extra_points = 0; extra_points < 8; extra_points++) {
    long n = 0;
    char *log = learn(&sc, &n);
    check_file("a/torn", text);
    cut_at(&sc, n, "end");
    size_t len = 0;
    char *got = read_rel("a/torn", &len);
    CHECK(got != NULL);
    if (got) {
      CHECK(len <= full);
      CHECK(!strncmp(got, text, len)); /* a prefix of what was written: never other bytes */
      if (len > 0 && len < full) torn++;
    }
    free(got);
    free(log);
  }
  /* The part kept is drawn per cut: over 8 cuts, some keep neither nothing nor everything. */
  CHECK(torn >= 1);
}

int main(void) {
  const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(base, sizeof base, "%s/kg-crashsim-XXXXXX", tmp);
  if (!mkdtemp(base)) {
    perror(base);
    return 1;
  }
  test_data();
  test_rename();
  test_tree();
  test_torn();
  if (!kg_test_failures) {
    char *cmd = kg_xasprintf("rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", base);
    free(cmd);
  } else {
    fprintf(stderr, "the scenarios' folders are left in %s\n", base);
  }
  TEST_MAIN_END();
}
