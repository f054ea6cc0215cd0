/* test_fs.c: the file system interface on the local backend: folders, exclusive streams, renames that never
 * replace and fail when a folder cannot be synced, listing, removal, and the registry by URI scheme. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "test.h"

static bool exists(kg_fs_t *fs, const char *path) {
  bool found = false;
  CHECK_INT(kg_fs_exists(fs, path, &found, NULL), KG_OK);
  return found;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = kg_xcalloc(1, 4096);
  size_t n = fread(buf, 1, 4095, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Writes TEXT to a new file PATH through the interface. */
static int put(kg_fs_t *fs, const char *path, const char *text, char *err) {
  kg_fs_stream_t *s = NULL;
  int rc = kg_fs_create(fs, path, KG_FS_CREATE_NEW, &s, err);
  if (rc) return rc;
  rc = kg_fs_stream_write(s, text, strlen(text), err);
  if (!rc) rc = kg_fs_stream_sync(s, err);
  int close_rc = kg_fs_stream_close(s, err);
  return rc ? rc : close_rc;
}

static void test_registry(void) {
  char err[KG_ERRLEN];
  kg_fs_t *fs = NULL;
  CHECK_INT(kg_fs_open("file:///", "writer.fs.uri", &fs, err), KG_OK);
  CHECK(fs == kg_fs_local());
  CHECK_STR(fs->scheme, "file");
  kg_fs_close(fs);
  CHECK_INT(kg_fs_open(NULL, "fs.uri", &fs, err), KG_OK);
  CHECK(fs == kg_fs_local());
  CHECK_INT(kg_fs_open("", "fs.uri", &fs, err), KG_OK);
  CHECK(fs == kg_fs_local());
  CHECK_INT(kg_fs_open("ftp://host/", "writer.fs.uri", &fs, err), KG_EINVAL);
  CHECK(fs == NULL);
  CHECK_CONTAINS(err, "writer.fs.uri=ftp://host/");
  CHECK_CONTAINS(err, "(kingest has: file, webhdfs, swebhdfs, s3a, s3, wasbs, wasb, abfss, abfs)");
  /* gs:// is Google's own API: the error points at its S3-compatible one. */
  CHECK_INT(kg_fs_open("gs://bucket/", "data.publisher.fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "data.publisher.fs.uri=gs://bucket/: kingest reaches Google Cloud Storage through its "
                      "S3-compatible XML API: use s3a://bucket with fs.s3a.endpoint=https://storage.googleapis.com");
  /* hdfs:// is HDFS's RPC protocol, which kingest does not speak: the error points at WebHDFS. */
  CHECK_INT(kg_fs_open("hdfs://namenode:8020/", "writer.fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "writer.fs.uri=hdfs://namenode:8020/");
  CHECK_CONTAINS(err, "use webhdfs://HOST:PORT");
  /* Opening makes no request: a name that does not resolve fails at the first call. */
  CHECK_INT(kg_fs_open("webhdfs://namenode:9870/", "writer.fs.uri", &fs, err), KG_OK);
  CHECK_STR(fs ? fs->scheme : NULL, "webhdfs");
  kg_fs_close(fs);
  CHECK_INT(kg_fs_open("/no/scheme", "fs.uri", &fs, err), KG_EINVAL);
  kg_fs_close(NULL);
}

static void test_mkdirs(kg_fs_t *fs, const char *dir) {
  char err[KG_ERRLEN];
  char *deep = kg_xasprintf("%s/m/a/b/c", dir);
  CHECK_INT(kg_fs_mkdirs(fs, deep, err), KG_OK);
  CHECK(exists(fs, deep));
  CHECK_INT(kg_fs_mkdirs(fs, deep, err), KG_OK); /* already there */
  char *file = kg_xasprintf("%s/m/file", dir);
  CHECK_INT(put(fs, file, "x", err), KG_OK);
  char *under = kg_xasprintf("%s/m/file/sub", dir);
  CHECK_INT(kg_fs_mkdirs(fs, under, err), KG_EIO);
  CHECK_CONTAINS(err, "cannot create folder ");
  CHECK_CONTAINS(err, "/m/file");
  CHECK_INT(kg_fs_mkdirs(fs, file, err), KG_EIO); /* a file where the folder should be */
  free(deep);
  free(file);
  free(under);
}

static void test_streams(kg_fs_t *fs, const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/s.txt", dir);
  CHECK_INT(put(fs, path, "hello", err), KG_OK);
  char *text = slurp(path);
  CHECK_STR(text, "hello");
  free(text);
  /* Create is exclusive: an existing file is never overwritten, and the reason alone comes back. */
  kg_fs_stream_t *s = NULL;
  CHECK_INT(kg_fs_create(fs, path, KG_FS_CREATE_NEW, &s, err), KG_EIO);
  CHECK(s == NULL);
  CHECK_STR(err, strerror(EEXIST));
  /* Append adds to it. */
  CHECK_INT(kg_fs_create(fs, path, KG_FS_APPEND, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, " world", 6, err), KG_OK);
  CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  text = slurp(path);
  CHECK_STR(text, "hello world");
  free(text);
  /* Truncation takes back what follows, and writing goes on there. */
  char *cut = kg_xasprintf("%s/cut.txt", dir);
  CHECK_INT(kg_fs_create(fs, cut, KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "keep|drop", 9, err), KG_OK);
  CHECK_INT(kg_fs_stream_truncate(s, 5, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "next", 4, err), KG_OK);
  CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  text = slurp(cut);
  CHECK_STR(text, "keep|next");
  free(text);
  /* Abort deletes the file. */
  char *gone = kg_xasprintf("%s/gone.txt", dir);
  CHECK_INT(kg_fs_create(fs, gone, KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "x", 1, err), KG_OK);
  kg_fs_stream_abort(s);
  CHECK(!exists(fs, gone));
  kg_fs_stream_abort(NULL);
  /* A missing folder: create does not make it. */
  char *nofolder = kg_xasprintf("%s/nofolder/x", dir);
  CHECK_INT(kg_fs_create(fs, nofolder, KG_FS_CREATE_NEW, &s, err), KG_EIO);
  CHECK_STR(err, strerror(ENOENT));
  CHECK_INT(kg_fs_sync(fs, path, err), KG_OK);
  CHECK_INT(kg_fs_sync(fs, dir, err), KG_OK);
  CHECK_INT(kg_fs_sync(fs, nofolder, err), KG_EIO);
  CHECK_CONTAINS(err, nofolder);
  free(path);
  free(cut);
  free(gone);
  free(nofolder);
}

static void test_move(kg_fs_t *fs, const char *dir) {
  char err[KG_ERRLEN];
  char *src = kg_xasprintf("%s/mv/src.txt", dir), *dst = kg_xasprintf("%s/mv/new/folder/dst.txt", dir);
  char *mv = kg_xasprintf("%s/mv", dir);
  CHECK_INT(kg_fs_mkdirs(fs, mv, err), KG_OK);
  CHECK_INT(put(fs, src, "one", err), KG_OK);
  /* The target's folder is made. */
  CHECK_INT(kg_fs_move(fs, src, dst, err), KG_OK);
  CHECK(!exists(fs, src));
  CHECK(exists(fs, dst));
  /* An existing target is never replaced: both files stay as they were. */
  CHECK_INT(put(fs, src, "two", err), KG_OK);
  CHECK_INT(kg_fs_move(fs, src, dst, err), KG_EIO);
  CHECK_CONTAINS(err, "cannot move ");
  CHECK_CONTAINS(err, dst);
  CHECK_CONTAINS(err, strerror(EEXIST));
  char *text = slurp(dst);
  CHECK_STR(text, "one");
  free(text);
  text = slurp(src);
  CHECK_STR(text, "two");
  free(text);
  /* A missing source. */
  char *missing = kg_xasprintf("%s/mv/missing", dir);
  CHECK_INT(kg_fs_move(fs, missing, dst, err), KG_EIO);
  CHECK_CONTAINS(err, missing);
  /* A target folder that cannot be made: the file stays. */
  char *blocked = kg_xasprintf("%s/mv/src.txt/under/x", dir);
  CHECK_INT(kg_fs_move(fs, src, blocked, err), KG_EIO);
  CHECK(exists(fs, src));
  free(src);
  free(dst);
  free(mv);
  free(missing);
  free(blocked);
}

/* Which fsync calls fail: those on folders (the file's own sync goes through). */
static int folder_fsyncs;
static int failing_folder_fsync(int fd) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    folder_fsyncs++;
    errno = EIO;
    return -1;
  }
  return fsync(fd);
}

/* A rename whose folder cannot be synced is not durable: the move fails, naming the folder, and the file is at
 * the target for the caller to undo. */
static void test_move_sync_failure(kg_fs_t *fs, const char *dir) {
  char err[KG_ERRLEN];
  char *src = kg_xasprintf("%s/sf/a.txt", dir), *dst_dir = kg_xasprintf("%s/sf/final", dir);
  char *dst = kg_xasprintf("%s/a.txt", dst_dir);
  char *sf = kg_xasprintf("%s/sf", dir);
  CHECK_INT(kg_fs_mkdirs(fs, sf, err), KG_OK);
  CHECK_INT(kg_fs_mkdirs(fs, dst_dir, err), KG_OK);
  CHECK_INT(put(fs, src, "a", err), KG_OK);
  kg_fs_local_set_fsync(failing_folder_fsync);
  folder_fsyncs = 0;
  int rc = kg_fs_move(fs, src, dst, err);
  kg_fs_local_set_fsync(NULL);
  CHECK_INT(rc, KG_EIO);
  CHECK_INT(folder_fsyncs, 1);
  char *expect = kg_xasprintf("cannot sync folder %s after moving %s to %s: %s", dst_dir, src, dst, strerror(EIO));
  CHECK_STR(err, expect);
  free(expect);
  CHECK(!exists(fs, src));
  CHECK(exists(fs, dst));
  /* With fsync back, the move back succeeds. */
  CHECK_INT(kg_fs_move(fs, dst, src, err), KG_OK);
  CHECK(exists(fs, src));
  /* kg_fs_sync of a folder fails the same way. */
  kg_fs_local_set_fsync(failing_folder_fsync);
  CHECK_INT(kg_fs_sync(fs, sf, err), KG_EIO);
  kg_fs_local_set_fsync(NULL);
  CHECK_CONTAINS(err, sf);
  /* A folder mkdirs makes is synced in the folder it was made in; a sync that fails fails mkdirs, naming both. */
  char *made = kg_xasprintf("%s/new/deeper", sf);
  kg_fs_local_set_fsync(failing_folder_fsync);
  folder_fsyncs = 0;
  rc = kg_fs_mkdirs(fs, made, err);
  kg_fs_local_set_fsync(NULL);
  CHECK_INT(rc, KG_EIO);
  CHECK_INT(folder_fsyncs, 1);
  expect = kg_xasprintf("cannot sync folder %s after creating %s/new: %s", sf, sf, strerror(EIO));
  CHECK_STR(err, expect);
  free(expect);
  free(made);
  free(src);
  free(dst);
  free(dst_dir);
  free(sf);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_list_and_remove(kg_fs_t *fs, const char *dir) {
  char err[KG_ERRLEN];
  char *root = kg_xasprintf("%s/ls", dir);
  char *sub = kg_xasprintf("%s/ls/job_b/deep/er", dir);
  char *file = kg_xasprintf("%s/ls/job_a", dir);
  char *inner = kg_xasprintf("%s/ls/job_b/deep/er/f", dir);
  CHECK_INT(kg_fs_mkdirs(fs, sub, err), KG_OK);
  CHECK_INT(put(fs, file, "", err), KG_OK);
  CHECK_INT(put(fs, inner, "f", err), KG_OK);
  char **names = NULL;
  size_t count = 0;
  CHECK_INT(kg_fs_list(fs, root, &names, &count, err), KG_OK);
  CHECK_INT(count, 2);
  if (count == 2) {
    qsort(names, count, sizeof *names, cmp_names);
    CHECK_STR(names[0], "job_a");
    CHECK_STR(names[1], "job_b");
  }
  kg_fs_list_free(names, count);
  /* A missing folder has no names. */
  char *missing = kg_xasprintf("%s/ls/missing", dir);
  CHECK_INT(kg_fs_list(fs, missing, &names, &count, err), KG_OK);
  CHECK_INT(count, 0);
  kg_fs_list_free(names, count);
  /* A file is not a folder. */
  CHECK_INT(kg_fs_list(fs, file, &names, &count, err), KG_EIO);
  CHECK_CONTAINS(err, file);
  /* rm -rf, and a missing path is fine. */
  CHECK_INT(kg_fs_remove_tree(fs, root, err), KG_OK);
  CHECK(!exists(fs, root));
  CHECK_INT(kg_fs_remove_tree(fs, root, err), KG_OK);
  free(root);
  free(sub);
  free(file);
  free(inner);
  free(missing);
}

static void test_checks(kg_fs_t *fs, const char *dir) {
  char err[KG_ERRLEN];
  char *made = kg_xasprintf("%s/chk/new", dir);
  CHECK_INT(kg_fs_check_writable(fs, made, "task.data.root.dir", err), KG_OK);
  CHECK(exists(fs, made));
  char **names = NULL;
  size_t count = 0;
  CHECK_INT(kg_fs_list(fs, made, &names, &count, err), KG_OK);
  CHECK_INT(count, 0); /* the probe is gone */
  kg_fs_list_free(names, count);
  char *file = kg_xasprintf("%s/chk/file", dir);
  CHECK_INT(put(fs, file, "", err), KG_OK);
  char *blocked = kg_xasprintf("%s/chk/file/x", dir);
  CHECK_INT(kg_fs_check_writable(fs, blocked, "data.publisher.final.dir", err), KG_EIO);
  CHECK_CONTAINS(err, "data.publisher.final.dir: ");
  CHECK_CONTAINS(err, " cannot be created: ");
  CHECK_INT(kg_fs_check_same_fs(fs, made, "task.data.root.dir", dir, "data.publisher.final.dir", err), KG_OK);
  free(made);
  free(file);
  free(blocked);
}

int main(void) {
  char tmpl[] = "/tmp/kg-fs-XXXXXX";
  char *dir = mkdtemp(tmpl);
  kg_fs_t *fs = kg_fs_local();
  test_registry();
  test_mkdirs(fs, dir);
  test_streams(fs, dir);
  test_move(fs, dir);
  test_move_sync_failure(fs, dir);
  test_list_and_remove(fs, dir);
  test_checks(fs, dir);
  kg_fs_remove_tree(fs, dir, NULL);
  TEST_MAIN_END();
}
