/* test_webhdfs.c: the WebHDFS file system (fs_webhdfs.c) against the real HDFS that scripts/hadoop runs (the ctest
 * fixture "hadoop" starts it; its URL is in $KINGEST_HADOOP_DIR/url): every function of kg_fs_t and its contract,
 * checked with Hadoop's own FsShell (scripts/hadoop fs); the errors HDFS gives (permissions, safe mode, quotas)
 * named in the messages; an HDFS that is not there (bounded time); tasks sharing one file system from threads;
 * and a NameNode killed and started again under a client. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"
#include "test.h"

static char base_url[256]; /* http://127.0.0.1:PORT */
static char uri[300];      /* webhdfs://127.0.0.1:PORT */
static char root[64];      /* this run's folder on HDFS */

/* Runs scripts/hadoop ARGS; returns its exit status, with its stdout in OUT (when not NULL). */
static int hadoop(const char *args, char *out, size_t size) {
  const char *top = getenv("KINGEST_ROOT") ? getenv("KINGEST_ROOT") : ".";
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s/scripts/hadoop' %s 2>/dev/null", top, args);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = 0;
  char scratch[256];
  if (!out) out = scratch, size = sizeof scratch;
  while (n + 1 < size) {
    size_t got = fread(out + n, 1, size - 1 - n, p);
    if (!got) break;
    n += got;
  }
  out[n] = 0;
  while (fread(scratch, 1, sizeof scratch, p)) {
  }
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The content of file PATH as Hadoop's FsShell reads it, in OUT; "(missing)" when it cannot. */
static const char *cat(const char *path, char *out, size_t size) {
  char args[512];
  snprintf(args, sizeof args, "fs -cat '%s'", path);
  if (hadoop(args, out, size) != 0) snprintf(out, size, "(missing)");
  return out;
}

/* The same through curl's WebHDFS OPEN (following the redirect to a DataNode): 1.5 s faster than starting
 * FsShell's JVM, and just as independent of kingest. */
static const char *fetch(const char *path, char *out, size_t size) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "curl -sfL -m 10 '%s/webhdfs/v1%s?op=OPEN&user.name=kg_reader'", base_url, path);
  FILE *p = popen(cmd, "r");
  size_t n = p ? fread(out, 1, size - 1, p) : 0;
  out[n] = 0;
  if (!p || pclose(p) != 0) snprintf(out, size, "(missing)");
  return out;
}

static char *at(const char *name) {
  static __thread char paths[4][512];
  static __thread int next;
  char *p = paths[next++ % 4];
  snprintf(p, sizeof paths[0], "%s/%s", root, name);
  return p;
}

/* Writes TEXT to new file PATH and closes it. */
static int put(kg_fs_t *fs, const char *path, const char *text, char *err) {
  kg_fs_stream_t *s = NULL;
  int rc = kg_fs_create(fs, path, KG_FS_CREATE_NEW, &s, err);
  if (rc) return rc;
  if ((rc = kg_fs_stream_write(s, text, strlen(text), err))) {
    kg_fs_stream_abort(s);
    return rc;
  }
  return kg_fs_stream_close(s, err);
}

static kg_fs_t *open_fs(const char *u) {
  kg_fs_t *fs = NULL;
  char err[KG_ERRLEN] = "";
  if (kg_fs_open(u, "fs.uri", &fs, err)) fprintf(stderr, "cannot open %s: %s\n", u, err);
  return fs;
}

static void test_open(void) {
  kg_fs_t *fs = NULL;
  char err[KG_ERRLEN] = "";
  CHECK_INT(kg_fs_open("hdfs://127.0.0.1:8020", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "use webhdfs://HOST:PORT with PORT the NameNode's HTTP port");
  /* auth=kerberos is read (the keytab is checked when the run's options come with it). */
  CHECK_INT(kg_fs_open("webhdfs://127.0.0.1:9870?auth=kerberos", "fs.uri", &fs, err), KG_OK);
  CHECK(kg_fs_webhdfs_kerberos(fs));
  kg_fs_close(fs);
  fs = NULL;
  CHECK_INT(kg_fs_open("webhdfs://127.0.0.1:9870?auth=magic", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "auth=magic: unknown authentication (kingest has: simple, kerberos)");
  kg_webhdfs_options_t krb = {.auth = KG_WEBHDFS_AUTH_KERBEROS};
  CHECK_INT(kg_fs_webhdfs_open_with("webhdfs://127.0.0.1:9870", &krb, &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "hadoop.security.authentication=kerberos needs kerberos.principal");
  krb.principal = "kingest@KINGEST.TEST";
  CHECK_INT(kg_fs_webhdfs_open_with("webhdfs://127.0.0.1:9870", &krb, &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "needs kerberos.keytab (the keytab of kerberos.principal=kingest@KINGEST.TEST)");
  krb.keytab = "/nonexistent/kingest.keytab";
  CHECK_INT(kg_fs_webhdfs_open_with("webhdfs://127.0.0.1:9870", &krb, &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "kerberos.keytab=/nonexistent/kingest.keytab (for kerberos.principal=kingest@KINGEST.TEST)");
  CHECK_CONTAINS(err, "No such file or directory");
  krb.keytab = "/etc/hostname"; /* not a keytab */
  CHECK_INT(kg_fs_webhdfs_open_with("webhdfs://127.0.0.1:9870", &krb, &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "/etc/hostname is not a Kerberos keytab");
  kg_webhdfs_options_t tls = {.ca_file = "/nonexistent/ca.pem"};
  CHECK_INT(kg_fs_webhdfs_open_with("swebhdfs://127.0.0.1:9871", &tls, &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "webhdfs.ssl.ca.location=/nonexistent/ca.pem: cannot read it");
  CHECK_INT(kg_fs_open("swebhdfs://127.0.0.1", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "expected swebhdfs://[USER@]HOST:PORT, PORT being the NameNode's HTTPS port");
  CHECK_INT(kg_fs_open("swebhdfs://127.0.0.1:9871", "fs.uri", &fs, err), KG_OK);
  CHECK_STR(fs ? fs->scheme : NULL, "swebhdfs");
  CHECK(!kg_fs_webhdfs_kerberos(fs));
  kg_fs_close(fs);
  fs = NULL;
  CHECK_INT(kg_fs_open("webhdfs://127.0.0.1", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "expected webhdfs://[USER@]HOST:PORT");
  CHECK_INT(kg_fs_open("webhdfs://127.0.0.1:99999", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "the port '99999' is not a number from 1 to 65535");
  CHECK_INT(kg_fs_open("webhdfs://127.0.0.1:9870/data", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "a file system URI names no path");
  CHECK_INT(kg_fs_open("webhdfs://127.0.0.1:9870/?colour=blue", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "unknown parameter 'colour'");
  CHECK_INT(kg_fs_open("ftp://x", "fs.uri", &fs, err), KG_EINVAL);
  CHECK_CONTAINS(err, "(kingest has: file, webhdfs, swebhdfs, s3a, s3, wasbs, wasb, abfss, abfs)");
  CHECK_INT(kg_fs_open("webhdfs://someone@127.0.0.1:9870/?user.name=other&auth=simple", "fs.uri", &fs, err), KG_OK);
  CHECK_STR(fs ? fs->scheme : NULL, "webhdfs");
  kg_fs_close(fs);
}

static void test_folders(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "";
  bool found = true, same = false;
  char **names = NULL;
  size_t count = 9;
  CHECK_INT(kg_fs_exists(fs, at("a"), &found, err), KG_OK);
  CHECK(!found);
  CHECK_INT(kg_fs_list(fs, at("a"), &names, &count, err), KG_OK); /* a missing folder has no names */
  CHECK_INT(count, 0);
  kg_fs_list_free(names, count);
  CHECK_INT(kg_fs_mkdirs(fs, at("a/b/c"), err), KG_OK);
  CHECK_INT(kg_fs_mkdirs(fs, at("a/b/c"), err), KG_OK); /* already there */
  CHECK_INT(kg_fs_exists(fs, at("a/b/c"), &found, err), KG_OK);
  CHECK(found);
  CHECK_INT(put(fs, at("a/one.txt"), "1\n", err), KG_OK);
  CHECK_INT(put(fs, at("a/two words.txt"), "2\n", err), KG_OK); /* escaped in the URL */
  CHECK_INT(kg_fs_list(fs, at("a"), &names, &count, err), KG_OK);
  CHECK_INT(count, 3);
  int seen = 0;
  for (size_t i = 0; i < count; i++)
    seen |= (!strcmp(names[i], "b") ? 1 : 0) | (!strcmp(names[i], "one.txt") ? 2 : 0) |
            (!strcmp(names[i], "two words.txt") ? 4 : 0);
  CHECK_INT(seen, 7);
  kg_fs_list_free(names, count);
  char text[256];
  CHECK_STR(cat(at("a/two words.txt"), text, sizeof text), "2\n"); /* FsShell reads what the escaped URL named */
  /* A file where a folder is wanted. */
  CHECK_INT(kg_fs_mkdirs(fs, at("a/one.txt/x"), err), KG_EIO);
  CHECK_CONTAINS(err, "cannot create folder");
  CHECK_CONTAINS(err, "one.txt");
  CHECK_INT(kg_fs_mkdirs(fs, "relative/path", err), KG_EIO);
  CHECK_CONTAINS(err, "not an absolute path");

  CHECK_INT(kg_fs_sync(fs, at("a"), err), KG_OK);
  CHECK_INT(fs->same_volume(fs, at("a"), "/elsewhere", &same, err), KG_OK);
  CHECK(same);
  CHECK_INT(kg_fs_remove_tree(fs, at("a"), err), KG_OK);
  CHECK_INT(kg_fs_exists(fs, at("a/b/c"), &found, err), KG_OK);
  CHECK(!found);
  CHECK_INT(kg_fs_exists(fs, at("a"), &found, err), KG_OK);
  CHECK(!found);
  CHECK_INT(kg_fs_remove_tree(fs, at("a"), err), KG_OK); /* a missing path is fine */
}

static void test_streams(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "", text[256];
  bool found = true;
  kg_fs_stream_t *s = NULL;
  CHECK_INT(kg_fs_mkdirs(fs, at("s"), err), KG_OK);

  /* Truncate takes back bytes; close hands over what is left. */
  CHECK_INT(kg_fs_create(fs, at("s/t.txt"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "keep\n", 5, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "drop this\n", 10, err), KG_OK);
  CHECK_INT(kg_fs_stream_truncate(s, 5, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "more\n", 5, err), KG_OK);
  CHECK_INT(kg_fs_stream_truncate(s, 99, err), KG_EIO);
  CHECK_INT(kg_fs_exists(fs, at("s/t.txt"), &found, err), KG_OK);
  CHECK(!found); /* nothing on HDFS before sync or close */
  int64_t t0 = kg_mono_ms();
  CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  fprintf(stderr, "webhdfs: a small file's upload and close took %lld ms\n", (long long)(kg_mono_ms() - t0));
  CHECK_STR(cat(at("s/t.txt"), text, sizeof text), "keep\nmore\n");

  /* Create-new never replaces. */
  CHECK_INT(kg_fs_create(fs, at("s/t.txt"), KG_FS_CREATE_NEW, &s, err), KG_EIO);
  CHECK_STR(err, "File exists");
  CHECK(s == NULL);
  /* ... also when the file appears between create and close. */
  CHECK_INT(kg_fs_create(fs, at("s/race.txt"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "mine\n", 5, err), KG_OK);
  CHECK_INT(put(fs, at("s/race.txt"), "theirs\n", err), KG_OK);
  CHECK_INT(kg_fs_stream_close(s, err), KG_EIO);
  CHECK_STR(err, "File exists");
  CHECK_STR(fetch(at("s/race.txt"), text, sizeof text), "theirs\n");

  /* An empty file is made too. */
  CHECK_INT(kg_fs_create(fs, at("s/empty"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  CHECK_INT(kg_fs_exists(fs, at("s/empty"), &found, err), KG_OK);
  CHECK(found);

  /* Abort leaves nothing, before and after a sync. */
  CHECK_INT(kg_fs_create(fs, at("s/aborted"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "x", 1, err), KG_OK);
  kg_fs_stream_abort(s);
  CHECK_INT(kg_fs_exists(fs, at("s/aborted"), &found, err), KG_OK);
  CHECK(!found);
  CHECK_INT(kg_fs_create(fs, at("s/aborted2"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "x", 1, err), KG_OK);
  CHECK_INT(kg_fs_stream_sync(s, err), KG_OK);
  kg_fs_stream_abort(s);
  CHECK_INT(kg_fs_exists(fs, at("s/aborted2"), &found, err), KG_OK);
  CHECK(!found);

  /* Sync hands the bytes over (durably); later bytes are appended, and synced ones cannot be taken back. */
  CHECK_INT(kg_fs_create(fs, at("s/synced"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "first\n", 6, err), KG_OK);
  CHECK_INT(kg_fs_stream_sync(s, err), KG_OK);
  CHECK_STR(fetch(at("s/synced"), text, sizeof text), "first\n");
  CHECK_INT(kg_fs_stream_write(s, "second\n", 7, err), KG_OK);
  CHECK_INT(kg_fs_stream_truncate(s, 3, err), KG_EIO);
  CHECK_CONTAINS(err, "cannot take back bytes already synced");
  CHECK_INT(kg_fs_stream_truncate(s, 6, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "third\n", 6, err), KG_OK);
  CHECK_INT(kg_fs_stream_sync(s, err), KG_OK);
  CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  CHECK_STR(fetch(at("s/synced"), text, sizeof text), "first\nthird\n");

  /* Append mode: to a missing file, then to one that is there. */
  for (int i = 0; i < 2; i++) {
    CHECK_INT(kg_fs_create(fs, at("s/log"), KG_FS_APPEND, &s, err), KG_OK);
    CHECK_INT(kg_fs_stream_write(s, i ? "b\n" : "a\n", 2, err), KG_OK);
    CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  }
  CHECK_STR(fetch(at("s/log"), text, sizeof text), "a\nb\n");

  /* A file larger than a block (1 MiB here), with a truncate in the middle. */
  size_t big = (3 << 20) + 123;
  char *data = kg_xmalloc(big);
  for (size_t i = 0; i < big; i++)
    data[i] = (char)('a' + i % 26);
  CHECK_INT(kg_fs_create(fs, at("s/big"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, data, big, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "junk", 4, err), KG_OK);
  CHECK_INT(kg_fs_stream_truncate(s, (int64_t)big, err), KG_OK);
  CHECK_INT(kg_fs_stream_close(s, err), KG_OK);
  char *back = kg_xmalloc(big + 16);
  fetch(at("s/big"), back, big + 16);
  CHECK_INT(strlen(back), big);
  CHECK(!memcmp(back, data, big));
  free(back);
  free(data);
}

static void test_rename(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "", text[256];
  bool found = false;
  CHECK_INT(kg_fs_mkdirs(fs, at("r/dir"), err), KG_OK);
  CHECK_INT(put(fs, at("r/a"), "a\n", err), KG_OK);
  CHECK_INT(put(fs, at("r/b"), "b\n", err), KG_OK);
  CHECK_INT(fs->rename(fs, at("r/a"), at("r/c"), err), KG_OK);
  CHECK_STR(fetch(at("r/c"), text, sizeof text), "a\n");
  CHECK_INT(kg_fs_exists(fs, at("r/a"), &found, err), KG_OK);
  CHECK(!found);
  /* Never replaces a file... */
  CHECK_INT(fs->rename(fs, at("r/b"), at("r/c"), err), KG_EIO);
  CHECK_CONTAINS(err, "cannot move");
  CHECK_CONTAINS(err, ": File exists");
  CHECK_STR(fetch(at("r/c"), text, sizeof text), "a\n");
  CHECK_STR(fetch(at("r/b"), text, sizeof text), "b\n");
  /* ... nor moves into a folder that is there. */
  CHECK_INT(fs->rename(fs, at("r/b"), at("r/dir"), err), KG_EIO);
  CHECK_CONTAINS(err, "File exists");
  CHECK_INT(kg_fs_exists(fs, at("r/dir/b"), &found, err), KG_OK);
  CHECK(!found);
  /* A missing source, a missing target folder. */
  CHECK_INT(fs->rename(fs, at("r/nothing"), at("r/d"), err), KG_EIO);
  CHECK_CONTAINS(err, "is not found");
  CHECK_CONTAINS(err, "HTTP 404");
  CHECK_INT(fs->rename(fs, at("r/b"), at("r/no/such/d"), err), KG_EIO);
  CHECK_CONTAINS(err, "not found");
  /* kg_fs_move makes the target's folder. */
  CHECK_INT(kg_fs_move(fs, at("r/b"), at("r/new/folder/b"), err), KG_OK);
  CHECK_STR(fetch(at("r/new/folder/b"), text, sizeof text), "b\n");
}

static void test_check_writable(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "", args[512], other_uri[400];
  char **names = NULL;
  size_t count = 0;
  CHECK_INT(kg_fs_check_writable(fs, at("w/made"), "data.publisher.final.dir", err), KG_OK);
  CHECK_INT(kg_fs_list(fs, at("w/made"), &names, &count, err), KG_OK);
  CHECK_INT(count, 0); /* nothing made in it to check it */
  kg_fs_list_free(names, count);

  /* A folder its owner made read-only, written as someone else. */
  CHECK_INT(kg_fs_mkdirs(fs, at("w/ro"), err), KG_OK);
  snprintf(args, sizeof args, "fs -chmod 500 '%s'", at("w/ro"));
  CHECK_INT(hadoop(args, NULL, 0), 0);
  snprintf(other_uri, sizeof other_uri, "webhdfs://kg_other@%s", base_url + strlen("http://"));
  kg_fs_t *other = open_fs(other_uri);
  if (!other) return;
  CHECK_INT(kg_fs_check_writable(other, at("w/ro"), "task.data.root.dir", err), KG_EIO);
  CHECK_CONTAINS(err, "task.data.root.dir: ");
  CHECK_CONTAINS(err, "Permission denied: user=kg_other, access=");
  kg_fs_stream_t *s = NULL;
  CHECK_INT(kg_fs_create(other, at("w/ro/f"), KG_FS_CREATE_NEW, &s, err), KG_EIO);
  CHECK_CONTAINS(err, "Permission denied: user=kg_other");
  CHECK_CONTAINS(err, "AccessControlException, HTTP 403");
  /* Readable and searchable, not writable. */
  snprintf(args, sizeof args, "fs -chmod 555 '%s'", at("w/ro"));
  CHECK_INT(hadoop(args, NULL, 0), 0);
  CHECK_INT(kg_fs_create(other, at("w/ro/f"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  if (s) {
    CHECK_INT(kg_fs_stream_write(s, "x", 1, err), KG_OK);
    CHECK_INT(kg_fs_stream_close(s, err), KG_EIO);
    CHECK_CONTAINS(err, "Permission denied: user=kg_other, access=WRITE");
  }
  CHECK_INT(kg_fs_check_writable(other, at("w/ro"), "task.data.root.dir", err), KG_EIO);
  CHECK_CONTAINS(err, "is not writable: Permission denied: user=kg_other, access=");
  kg_fs_close(other);
}

static void test_safe_mode(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "";
  kg_fs_stream_t *s = NULL;
  CHECK_INT(kg_fs_create(fs, at("sm.txt"), KG_FS_CREATE_NEW, &s, err), KG_OK);
  CHECK_INT(kg_fs_stream_write(s, "x\n", 2, err), KG_OK);
  CHECK_INT(hadoop("safemode enter", NULL, 0), 0);
  int mk = kg_fs_mkdirs(fs, at("in_safe_mode"), err);
  char mk_err[KG_ERRLEN];
  snprintf(mk_err, sizeof mk_err, "%s", err);
  int closed = s ? kg_fs_stream_close(s, err) : KG_EIO;
  CHECK_INT(hadoop("safemode leave", NULL, 0), 0);
  CHECK_INT(mk, KG_EIO);
  CHECK_CONTAINS(mk_err, "Name node is in safe mode");
  CHECK_INT(closed, KG_EIO);
  CHECK_CONTAINS(err, "Name node is in safe mode");
  CHECK_INT(put(fs, at("sm.txt"), "after\n", err), KG_OK); /* nothing was left behind */
}

static void test_quota(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "", args[512];
  bool found = true;
  CHECK_INT(kg_fs_mkdirs(fs, at("q"), err), KG_OK);
  snprintf(args, sizeof args, "quota '%s' 1000", at("q"));
  CHECK_INT(hadoop(args, NULL, 0), 0);
  CHECK_INT(put(fs, at("q/f"), "over the quota\n", err), KG_EIO);
  CHECK_CONTAINS(err, "The DiskSpace quota of ");
  CHECK_CONTAINS(err, "is exceeded");
  CHECK_CONTAINS(err, "DSQuotaExceededException, HTTP 403");
  /* The empty file the NameNode made before refusing the block is taken away. */
  CHECK_INT(kg_fs_exists(fs, at("q/f"), &found, err), KG_OK);
  CHECK(!found);
  CHECK_INT(kg_fs_check_writable(fs, at("q"), "task.data.root.dir", err), KG_OK); /* an empty file needs no block */
  snprintf(args, sizeof args, "clearquota '%s'", at("q"));
  CHECK_INT(hadoop(args, NULL, 0), 0);
  CHECK_INT(put(fs, at("q/f"), "fits\n", err), KG_OK);
}

static void test_unreachable(void) {
  /* A loopback port where nothing listens. */
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  bind(sock, (struct sockaddr *)&a, sizeof a);
  getsockname(sock, (struct sockaddr *)&a, &len);
  close(sock);
  char u[128], err[KG_ERRLEN] = "";
  snprintf(u, sizeof u, "webhdfs://127.0.0.1:%d", ntohs(a.sin_port));
  kg_fs_t *fs = open_fs(u);
  if (!fs) return;
  bool found = true;
  int64_t t0 = kg_mono_ms();
  CHECK_INT(kg_fs_exists(fs, "/x", &found, err), KG_EIO);
  int64_t took = kg_mono_ms() - t0;
  CHECK(took < 5000);
  CHECK_CONTAINS(err, "cannot look for /x on ");
  CHECK_CONTAINS(err, "did not answer");
  CHECK_CONTAINS(err, "4 attempts");
  kg_fs_stream_t *s = NULL;
  CHECK_INT(kg_fs_create(fs, "/x", KG_FS_CREATE_NEW, &s, err), KG_EIO);
  CHECK_CONTAINS(err, "did not answer");
  kg_fs_close(fs);
  /* A server that takes the connection and never answers: the request timeout bounds each try. */
  sock = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_port = 0;
  bind(sock, (struct sockaddr *)&a, sizeof a);
  listen(sock, 16);
  getsockname(sock, (struct sockaddr *)&a, &len);
  snprintf(u, sizeof u, "webhdfs://127.0.0.1:%d?timeout.ms=1000&attempts=2", ntohs(a.sin_port));
  fs = open_fs(u);
  if (fs) {
    t0 = kg_mono_ms();
    CHECK_INT(kg_fs_mkdirs(fs, "/x", err), KG_EIO);
    took = kg_mono_ms() - t0;
    CHECK(took >= 2000 && took < 4000);
    CHECK_CONTAINS(err, "cannot create folder /x: WebHDFS at webhdfs://127.0.0.1:");
    CHECK_CONTAINS(err, "did not answer: Operation timed out");
    kg_fs_close(fs);
  }
  close(sock);
}

typedef struct {
  kg_fs_t *fs;
  int id;
  int failures;
} worker_t;

static void *worker(void *arg) {
  worker_t *wk = arg;
  char err[KG_ERRLEN], name[64], text[64];
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "threads/%d/%d", wk->id, i);
    snprintf(text, sizeof text, "%d %d\n", wk->id, i);
    char *path = at(name), dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    if (kg_fs_mkdirs(wk->fs, dir, err) || put(wk->fs, path, text, err)) {
      fprintf(stderr, "thread %d: %s\n", wk->id, err);
      wk->failures++;
    }
  }
  return NULL;
}

static void test_threads(kg_fs_t *fs) {
  pthread_t t[4];
  worker_t wk[4];
  int64_t t0 = kg_mono_ms();
  for (int i = 0; i < 4; i++) {
    wk[i] = (worker_t){.fs = fs, .id = i};
    pthread_create(&t[i], NULL, worker, &wk[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT(wk[i].failures, 0);
  }
  fprintf(stderr, "webhdfs: 20 files from 4 threads in %lld ms\n", (long long)(kg_mono_ms() - t0));
  char text[64], expected[64];
  for (int i = 0; i < 4; i++) {
    snprintf(expected, sizeof expected, "%d 4\n", i);
    char name[64];
    snprintf(name, sizeof name, "threads/%d/4", i);
    CHECK_STR(fetch(at(name), text, sizeof text), expected);
  }
}

/* A NameNode killed and started again: the first requests after it may fail with an EOFException, and are tried
 * again. */
static void test_namenode_restart(kg_fs_t *fs) {
  char err[KG_ERRLEN] = "", text[64];
  CHECK_INT(put(fs, at("before_restart"), "before\n", err), KG_OK);
  CHECK_INT(hadoop("stop-namenode", NULL, 0), 0);
  bool found = false;
  CHECK_INT(kg_fs_exists(fs, at("before_restart"), &found, err), KG_EIO);
  CHECK_CONTAINS(err, "did not answer");
  CHECK_INT(hadoop("start-namenode", NULL, 0), 0);
  CHECK_INT(put(fs, at("after_restart"), "after\n", err), KG_OK);
  CHECK_INT(kg_fs_exists(fs, at("before_restart"), &found, err), KG_OK);
  CHECK(found);
  CHECK_STR(cat(at("after_restart"), text, sizeof text), "after\n");
}

int main(void) {
  kg_log_set_level(KG_LOG_ERROR);
  const char *dir = getenv("KINGEST_HADOOP_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/url", dir ? dir : ".hadoop");
  FILE *f = fopen(path, "r");
  if (!f || !fgets(base_url, sizeof base_url, f)) {
    fprintf(stderr, "no WebHDFS URL in %s (scripts/hadoop start)\n", path);
    return 1;
  }
  fclose(f);
  base_url[strcspn(base_url, "\n")] = 0;
  snprintf(uri, sizeof uri, "webhdfs://%s", base_url + strlen("http://"));
  snprintf(root, sizeof root, "/test_webhdfs_%ld_%ld", (long)getpid(), (long)time(NULL) % 100000);

  test_open();
  test_unreachable();
  kg_fs_t *fs = open_fs(uri);
  if (!fs) return 1;
  test_folders(fs);
  test_streams(fs);
  test_rename(fs);
  test_check_writable(fs);
  test_safe_mode(fs);
  test_quota(fs);
  test_threads(fs);
  test_namenode_restart(fs);
  char err[KG_ERRLEN];
  if (kg_fs_remove_tree(fs, root, err)) fprintf(stderr, "%s\n", err);
  kg_fs_close(fs);
  TEST_MAIN_END();
}
