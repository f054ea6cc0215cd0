/* test_azure_blob.c: the Azure Blob file system (fs_azure.c) against the real emulator of scripts/azurite (the
 * "azurite" fixture): Put Blob and blocks under If-None-Match: *, a blob that exists, head, list, delete, folders,
 * a wrong key and a missing container. What it writes is read back with spec/support/azure_blob.py, a client of the
 * tests' own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "fs.h"
#include "props.h"
#include "test.h"

static char endpoint[256], key[256], root[1024];

/* The first line of file PATH into OUT. */
static void first_line(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  out[0] = 0;
  if (f && fgets(out, (int)size, f)) out[strcspn(out, "\n")] = 0;
  if (f) fclose(f);
}

/* Runs azure_blob.py with ARGS; its stdout into OUT (may be NULL). Returns its exit status. */
static int py(const char *args, kg_buf_t *out) {
  kg_buf_t cmd = {0};
  kg_buf_appendf(&cmd, "python3 '%s/spec/support/azure_blob.py' '%s' devstoreaccount1 '%s' %s", root, endpoint, key,
                 args);
  FILE *p = popen(cmd.data, "r");
  char chunk[4096];
  size_t n;
  while (p && (n = fread(chunk, 1, sizeof chunk, p)) > 0)
    if (out) kg_buf_append(out, chunk, n);
  kg_buf_free(&cmd);
  return p ? WEXITSTATUS(pclose(p)) : -1;
}

/* A file system on container CONTAINER with the key KEY_VALUE and blocks of BLOCK bytes. */
static kg_fs_t *open_fs(const char *container, const char *key_value, int block, kg_config_t **c) {
  char text[2048], err[KG_ERRLEN] = "";
  snprintf(text, sizeof text,
           "kafka.brokers=127.0.0.1:9\ntopic.whitelist=t\n"
           "fs.azure.account.key.devstoreaccount1.blob.core.windows.net=%s\n"
           "fs.azure.blob.endpoint=%s\nfs.azure.write.request.size=%d\nfs.azure.io.retry.max.retries=1\n"
           "fs.azure.io.retry.min.backoff.interval=10\n",
           key_value, endpoint, block);
  *c = NULL;
  if (kg_test_config(text, "job.pull", c, err)) {
    fprintf(stderr, "config: %s\n", err);
    return NULL;
  }
  char uri[256];
  snprintf(uri, sizeof uri, "wasb://%s@devstoreaccount1.blob.core.windows.net", container);
  kg_fs_t *fs = NULL;
  if (kg_fs_open_config(uri, "data.publisher.fs.uri", *c, &fs, err)) fprintf(stderr, "open: %s\n", err);
  return fs;
}

static void write_file(const char *path, size_t len, unsigned seed) {
  FILE *f = fopen(path, "w");
  for (size_t i = 0; i < len; i++)
    fputc((int)((i * 31 + seed) % 251), f);
  fclose(f);
}

static bool same_as_blob(const char *local, const char *container, const char *blob) {
  size_t len = 0;
  int e = 0;
  char *want = kg_read_file(local, &len, &e);
  kg_buf_t got = {0};
  char args[512];
  snprintf(args, sizeof args, "get %s %s", container, blob);
  bool same = py(args, &got) == 0 && got.len == len && (!len || !memcmp(got.data, want, len));
  free(want);
  kg_buf_free(&got);
  return same;
}

static void test_objects(const char *dir) {
  kg_config_t *c = NULL;
  kg_fs_t *fs = open_fs("objects", key, 16384, &c);
  CHECK(fs != NULL);
  if (!fs) return;
  const kg_fs_object_ops_t *o = fs->object;
  char small[512], large[512], err[KG_ERRLEN] = "";
  snprintf(small, sizeof small, "%s/small", dir);
  snprintf(large, sizeof large, "%s/large", dir);
  write_file(small, 1000, 1);
  write_file(large, 50000, 2); /* four blocks of 16384, the last one short */

  /* One Put Blob. */
  kg_fs_object_t obj;
  bool exists = true;
  CHECK_INT(o->put_new(fs, small, "/out/t/part.0.txt", NULL, &obj, &exists, err), KG_OK);
  CHECK(!exists);
  CHECK_INT(obj.size, 1000);
  CHECK(obj.etag && *obj.etag);
  kg_fs_object_t head;
  CHECK_INT(o->head(fs, "/out/t/part.0.txt", &head, err), KG_OK);
  CHECK_INT(head.size, 1000);
  CHECK_STR(head.etag, obj.etag);
  CHECK(same_as_blob(small, "objects", "out/t/part.0.txt"));
  kg_fs_object_clear(&head);
  kg_fs_object_clear(&obj);

  /* Blocks and a block list. */
  char *upload = NULL;
  CHECK_INT(o->upload_begin(fs, "/out/t/part.1.txt", &upload, err), KG_OK);
  CHECK_INT(strlen(upload), 16);
  CHECK_INT(o->put_new(fs, large, "/out/t/part.1.txt", upload, &obj, &exists, err), KG_OK);
  CHECK_INT(obj.size, 50000);
  CHECK(same_as_blob(large, "objects", "out/t/part.1.txt"));
  kg_fs_object_clear(&obj);

  /* A blob that exists is never overwritten, in one request or in blocks. */
  CHECK_INT(o->put_new(fs, large, "/out/t/part.0.txt", NULL, &obj, &exists, err), KG_EIO);
  CHECK(exists);
  CHECK_CONTAINS(err, "Azure Blob account devstoreaccount1, container objects, blob out/t/part.0.txt: PUT blob: HTTP "
                      "409 BlobAlreadyExists");
  CHECK(same_as_blob(small, "objects", "out/t/part.0.txt"));
  exists = false;
  CHECK_INT(o->put_new(fs, small, "/out/t/part.1.txt", upload, &obj, &exists, err), KG_EIO);
  CHECK(exists);
  CHECK_CONTAINS(err, "blob out/t/part.1.txt: PUT blob: HTTP 409");
  CHECK(same_as_blob(large, "objects", "out/t/part.1.txt"));
  free(upload);
  /* kg_fs_put says so as a file system does. */
  CHECK_INT(kg_fs_put(fs, small, "/out/t/part.0.txt", err), KG_EIO);
  CHECK_CONTAINS(err, "File exists");

  /* Listing: every object under a prefix, in key order, with sizes and ETags. */
  kg_fs_object_t *list = NULL;
  size_t n = 0;
  CHECK_INT(o->list(fs, "/out/t/", &list, &n, err), KG_OK);
  CHECK_INT(n, 2);
  if (n == 2) {
    CHECK_STR(list[0].path, "/out/t/part.0.txt");
    CHECK_INT(list[0].size, 1000);
    CHECK_STR(list[1].path, "/out/t/part.1.txt");
    CHECK_INT(list[1].size, 50000);
    CHECK(list[1].etag && *list[1].etag);
  }
  kg_fs_objects_free(list, n);

  /* Folders are prefixes. */
  bool there = false;
  CHECK_INT(kg_fs_exists(fs, "/out/t", &there, err), KG_OK);
  CHECK(there);
  CHECK_INT(kg_fs_exists(fs, "/out/none", &there, err), KG_OK);
  CHECK(!there);
  char **names = NULL;
  CHECK_INT(kg_fs_list(fs, "/out", &names, &n, err), KG_OK);
  CHECK_INT(n, 1);
  if (n == 1) CHECK_STR(names[0], "t");
  kg_fs_list_free(names, n);
  kg_buf_t bytes = {0};
  CHECK_INT(kg_fs_read(fs, "/out/t/part.0.txt", &bytes, err), KG_OK);
  CHECK_INT(bytes.len, 1000);
  kg_buf_free(&bytes);

  /* Delete; a missing blob is fine; rm -rf of a folder. */
  CHECK_INT(o->remove(fs, "/out/t/part.0.txt", err), KG_OK);
  CHECK_INT(o->head(fs, "/out/t/part.0.txt", &head, err), KG_OK);
  CHECK_INT(head.size, -1);
  CHECK(head.path == NULL);
  CHECK_INT(o->remove(fs, "/out/t/part.0.txt", err), KG_OK);
  CHECK_INT(kg_fs_remove_tree(fs, "/out", err), KG_OK);
  CHECK_INT(o->list(fs, "/", &list, &n, err), KG_OK);
  CHECK_INT(n, 0);
  kg_fs_objects_free(list, n);
  CHECK_INT(kg_fs_check_writable(fs, "/out", "data.publisher.final.dir", err), KG_OK);

  /* Staging on Azure is refused. */
  kg_fs_stream_t *s = NULL;
  CHECK_INT(kg_fs_create(fs, "/staging/x", KG_FS_CREATE_NEW, &s, err), KG_EINVAL);
  CHECK_CONTAINS(err, "keep task.data.root.dir on the local disk or HDFS");
  kg_fs_close(fs);
  kg_config_destroy(c);
}

static void test_refusals(const char *dir) {
  kg_config_t *c = NULL;
  char err[KG_ERRLEN] = "", small[512];
  snprintf(small, sizeof small, "%s/small", dir);
  /* A wrong key: the service refuses the signature; the error names the account and never shows the key. */
  const char *wrong = "d3Jvbmcga2V5IG9mIGEgdGVzdCB0aGF0IGlzIGxvbmcgZW5vdWdoIHRvIGJlIGEga2V5IGJ5IGl0cyBsZW5ndGg=";
  kg_fs_t *fs = open_fs("objects", wrong, 16384, &c);
  CHECK(fs != NULL);
  if (fs) {
    CHECK_INT(kg_fs_check_writable(fs, "/out", "data.publisher.final.dir", err), KG_EIO);
    CHECK_CONTAINS(err, "data.publisher.final.dir: Azure Blob account devstoreaccount1, container objects: GET "
                        "container: HTTP 403");
    CHECK_CONTAINS(err, "the account's key is refused");
    CHECK(!strstr(err, wrong));
    kg_fs_object_t obj;
    bool exists = true;
    CHECK_INT(fs->object->put_new(fs, small, "/out/x", NULL, &obj, &exists, err), KG_EIO);
    CHECK(!exists);
    CHECK_CONTAINS(err, "blob out/x: PUT blob: HTTP 403");
    kg_fs_close(fs);
  }
  kg_config_destroy(c);

  /* A missing container. */
  fs = open_fs("nosuchcontainer", key, 16384, &c);
  CHECK(fs != NULL);
  if (fs) {
    CHECK_INT(kg_fs_check_writable(fs, "/out", "data.publisher.final.dir", err), KG_EIO);
    CHECK_CONTAINS(err, "container nosuchcontainer: GET container: HTTP 404 ContainerNotFound");
    CHECK_CONTAINS(err, "the container does not exist");
    kg_fs_object_t head;
    CHECK_INT(fs->object->head(fs, "/out/x", &head, err), KG_EIO);
    CHECK_CONTAINS(err, "ContainerNotFound");
    kg_fs_close(fs);
  }
  kg_config_destroy(c);

  /* Nothing answers: bounded by the retries, and said. */
  char text[1024];
  snprintf(
      text, sizeof text,
      "kafka.brokers=127.0.0.1:9\ntopic.whitelist=t\nfs.azure.account.key.devstoreaccount1.blob.core.windows.net=%s"
      "\nfs.azure.blob.endpoint=http://127.0.0.1:9/devstoreaccount1\nfs.azure.io.retry.max.retries=2\n"
      "fs.azure.io.retry.min.backoff.interval=10\n",
      key);
  CHECK_INT(kg_test_config(text, "job.pull", &c, err), KG_OK);
  fs = NULL;
  CHECK_INT(
      kg_fs_open_config("wasb://objects@devstoreaccount1.blob.core.windows.net", "data.publisher.fs.uri", c, &fs, err),
      KG_OK);
  if (fs) {
    CHECK_INT(kg_fs_check_writable(fs, "/out", "data.publisher.final.dir", err), KG_EIO);
    CHECK_CONTAINS(err, "Azure Blob account devstoreaccount1, container objects");
    CHECK_CONTAINS(err, "3 attempts");
    kg_fs_close(fs);
  }
  kg_config_destroy(c);
}

int main(void) {
  const char *r = getenv("KINGEST_ROOT"), *state = getenv("KINGEST_AZURITE_DIR");
  if (!r || !state) {
    fprintf(stderr, "KINGEST_ROOT and KINGEST_AZURITE_DIR must be set (ctest sets them)\n");
    return 2;
  }
  snprintf(root, sizeof root, "%s", r);
  char path[1024], base[200], account[512];
  snprintf(path, sizeof path, "%s/url", state);
  first_line(path, base, sizeof base);
  snprintf(path, sizeof path, "%s/accounts", state);
  first_line(path, account, sizeof account);
  snprintf(endpoint, sizeof endpoint, "%s/devstoreaccount1", base);
  const char *colon = strchr(account, ':');
  snprintf(key, sizeof key, "%s", colon ? colon + 1 : "");
  if (!base[0] || !key[0]) {
    fprintf(stderr, "no emulator in %s (scripts/azurite start)\n", state);
    return 2;
  }
  char dir[] = "/tmp/kg-azure-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  py("rmcontainer objects", NULL);
  CHECK_INT(py("mkcontainer objects", NULL), 0);
  test_objects(dir);
  test_refusals(dir);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_INT(system(cmd), 0);
  TEST_MAIN_END();
}
