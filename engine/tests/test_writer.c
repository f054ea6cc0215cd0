/* test_writer.c: the simple writer's bytes, and the output path of each writer.file.path.type. */
#include <stdlib.h>
#include <unistd.h>

#include "fs.h"
#include "task.h"
#include "test.h"
#include "writer.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 16);
  *len = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}

static void test_bytes(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/a/b/plain.txt", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(kg_writer_open(path, "\n", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "one", 3, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "", 0, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "t\0o", 3, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 3);
  CHECK_INT(kg_writer_bytes(w), 9);
  CHECK_INT(kg_writer_close(w, err), KG_OK);
  size_t len;
  char *data = slurp(path, &len);
  CHECK_INT(len, 9);
  CHECK(data && memcmp(data, "one\n\nt\0o\n", 9) == 0);
  free(data);
  /* An existing file is never overwritten. */
  CHECK_INT(kg_writer_open(path, "\n", 1, false, &w, err), KG_EIO);
  CHECK_CONTAINS(err, path);
  free(path);

  path = kg_xasprintf("%s/sized.bin", dir);
  CHECK_INT(kg_writer_open(path, "", 0, true, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "abc", 3, err), KG_OK);
  CHECK_INT(kg_writer_close(w, err), KG_OK);
  data = slurp(path, &len);
  CHECK_INT(len, 11);
  CHECK(data && memcmp(data, "\0\0\0\0\0\0\0\3abc", 11) == 0);
  free(data);
  free(path);

  /* Taking back a record's outputs: what follows the counts given is gone, also past the write buffer. */
  path = kg_xasprintf("%s/truncated.txt", dir);
  CHECK_INT(kg_writer_open(path, "\n", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "keep", 4, err), KG_OK);
  int64_t records = kg_writer_records(w), bytes = kg_writer_bytes(w);
  char *big = kg_xcalloc(1, 3 << 20);
  memset(big, 'z', 3 << 20);
  CHECK_INT(kg_writer_write(w, "gone", 4, err), KG_OK);
  CHECK_INT(kg_writer_write(w, big, 3 << 20, err), KG_OK);
  free(big);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 1);
  CHECK_INT(kg_writer_bytes(w), 5);
  CHECK_INT(kg_writer_write(w, "next", 4, err), KG_OK);
  CHECK_INT(kg_writer_close(w, err), KG_OK);
  data = slurp(path, &len);
  CHECK_INT(len, 10);
  CHECK(data && memcmp(data, "keep\nnext\n", 10) == 0);
  free(data);
  free(path);

  path = kg_xasprintf("%s/aborted.txt", dir);
  CHECK_INT(kg_writer_open(path, "|", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "x", 1, err), KG_OK);
  kg_writer_abort(w);
  CHECK(!kg_fs_exists(path));
  free(path);

  /* A folder that cannot be created: a file stands in the way. */
  path = kg_xasprintf("%s/plain-file/x.txt", dir);
  char *blocker = kg_xasprintf("%s/plain-file", dir);
  FILE *f = fopen(blocker, "w");
  fclose(f);
  free(blocker);
  CHECK_INT(kg_writer_open(path, "\n", 1, false, &w, err), KG_EIO);
  CHECK_CONTAINS(err, "plain-file");
  free(path);
}

static void test_file_paths(void) {
  kg_config_t c = {0};
  c.extract_namespace = "gobblin.extract.kafka";
  c.path_type = KG_PATH_TABLENAME;
  char *fp = kg_task_file_path(&c, "test", "20261130000000");
  CHECK_STR(fp, "test");
  free(fp);
  c.path_type = KG_PATH_NAMESPACE_TABLE;
  fp = kg_task_file_path(&c, "test", "20261130000000");
  CHECK_STR(fp, "gobblin/extract/kafka/test");
  free(fp);
  c.path_type = KG_PATH_DEFAULT;
  fp = kg_task_file_path(&c, "test", "20261130000000");
  CHECK_STR(fp, "gobblin/extract/kafka/test/20261130000000_append");
  free(fp);
  c.extract_namespace = "";
  fp = kg_task_file_path(&c, "test", "20261130000000");
  CHECK_STR(fp, "test/20261130000000_append");
  free(fp);
}

int main(void) {
  char tmpl[] = "/tmp/kg-writer-XXXXXX";
  char *dir = mkdtemp(tmpl);
  test_bytes(dir);
  test_file_paths();
  kg_fs_remove_tree(dir, NULL);
  TEST_MAIN_END();
}
