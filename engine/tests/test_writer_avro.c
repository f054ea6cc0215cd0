/* test_writer_avro.c: the Avro writer: files of each codec read back record by record by avro-c's file reader,
 * the header's schema byte for byte, blocks at the bound and only at marks, taking records back within the
 * pending block (and the refusal to go back past a written block), a record larger than the block bound, a file
 * without records, and the byte counts (the file's size at close). */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "avro_datum.h"
#include "buf.h"
#include "fs.h"
#include "test.h"
#include "writer.h"

static const char *const codec_names[] = {"null", "deflate", "snappy"};

static int open_avro(const char *path, kg_codec_t codec, size_t block_bytes, kg_writer_t **w, char *err) {
  kg_writer_options_t options = {.schema = kg_test_schema,
                                 .schema_len = sizeof kg_test_schema - 1,
                                 .codec = codec,
                                 .deflate_level = 6,
                                 .block_bytes = block_bytes};
  return kg_writer_open(kg_fs_local(), &kg_writer_avro, path, &options, w, err);
}

/* Writes record I (its own name, or NAME of NAME_LEN bytes). */
static void write_record(kg_writer_t *w, long long i, const char *name, size_t name_len) {
  char err[KG_ERRLEN];
  size_t len;
  char *datum = kg_test_datum(i, name, name_len, &len);
  CHECK_INT(kg_writer_write(w, datum, len, err), KG_OK);
  free(datum);
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) ? -1 : (int64_t)st.st_size;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  kg_buf_t buf = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    kg_buf_append(&buf, chunk, n);
  fclose(f);
  *len = buf.len;
  return buf.data;
}

/* Reads PATH with avro-c's file reader and checks that it holds the records of IDS (N of them), in order; a
 * record whose id is BIG_ID has the name BIG (BIG_LEN bytes). */
static void check_file(const char *path, const long long *ids, size_t n, long long big_id, const char *big,
                       size_t big_len) {
  avro_file_reader_t reader;
  if (avro_file_reader(path, &reader)) {
    fprintf(stderr, "avro_file_reader %s: %s\n", path, avro_strerror());
    CHECK(false);
    return;
  }
  avro_schema_t schema = avro_file_reader_get_writer_schema(reader);
  avro_value_iface_t *iface = avro_generic_class_from_schema(schema);
  avro_value_t rec, field, branch;
  avro_generic_value_new(iface, &rec);
  size_t got = 0;
  int rc;
  while ((rc = avro_file_reader_read_value(reader, &rec)) == 0) {
    int64_t id = -1, at = -1;
    const char *name = NULL;
    size_t name_size = 0;
    int disc = -1;
    avro_value_get_by_name(&rec, "id", &field, NULL);
    avro_value_get_long(&field, &id);
    avro_value_get_by_name(&rec, "at", &field, NULL);
    avro_value_get_long(&field, &at);
    avro_value_get_by_name(&rec, "name", &field, NULL);
    avro_value_get_string(&field, &name, &name_size);
    avro_value_get_by_name(&rec, "note", &field, NULL);
    avro_value_get_discriminant(&field, &disc);
    avro_value_get_current_branch(&field, &branch);
    if (got < n) {
      char own[64], note[64];
      bool has_note;
      kg_test_fields(ids[got], own, sizeof own, &has_note, note, sizeof note);
      CHECK_INT(id, ids[got]);
      CHECK_INT(at, KG_TEST_AT0 + ids[got]);
      if (ids[got] == big_id) {
        CHECK_INT(name_size, big_len + 1);
        CHECK(name && memcmp(name, big, big_len) == 0);
      } else {
        CHECK_STR(name, own);
      }
      CHECK_INT(disc, has_note ? 1 : 0);
      if (has_note) {
        const char *s = NULL;
        size_t size = 0;
        avro_value_get_string(&branch, &s, &size);
        CHECK_STR(s, note);
      }
    }
    got++;
    avro_value_reset(&rec);
  }
  CHECK_INT(got, n);
  avro_value_decref(&rec);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  avro_file_reader_close(reader);
}

/* Each codec: many blocks (a small bound, a mark before each record), read back record by record; the header
 * holds the schema's text byte for byte and the codec's name; the bytes counted are the file's size. */
static void test_codecs(const char *dir) {
  char err[KG_ERRLEN];
  for (int codec = KG_CODEC_NULL; codec <= KG_CODEC_SNAPPY; codec++) {
    char *path = kg_xasprintf("%s/%s/part.avro", dir, codec_names[codec]);
    kg_writer_t *w = NULL;
    CHECK_INT(open_avro(path, (kg_codec_t)codec, 500, &w, err), KG_OK);
    int64_t header = kg_writer_bytes(w);
    CHECK(header > (int64_t)sizeof kg_test_schema);
    long long ids[300];
    int64_t records, bytes, last_bytes = header;
    for (long long i = 0; i < 300; i++) {
      CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
      CHECK_INT(records, i);
      CHECK(bytes >= last_bytes); /* blocks are counted when written out */
      last_bytes = bytes;
      write_record(w, i, NULL, 0);
      ids[i] = i;
    }
    CHECK(kg_writer_bytes(w) > header); /* some blocks were written out at marks */
    int64_t closed_records = 0, closed_bytes = 0;
    CHECK_INT(kg_writer_close(w, &closed_records, &closed_bytes, err), KG_OK);
    CHECK_INT(closed_records, 300);
    CHECK_INT(closed_bytes, file_size(path));
    check_file(path, ids, 300, -1, NULL, 0);

    size_t len = 0;
    char *data = slurp(path, &len);
    CHECK(data && len > 4 && memcmp(data, "Obj\x01", 4) == 0);
    CHECK(data && memmem(data, len, kg_test_schema, sizeof kg_test_schema - 1) != NULL);
    CHECK(data && memmem(data, len, codec_names[codec], strlen(codec_names[codec])) != NULL);
    /* The sync marker ends the header and every block: the file ends with it. */
    CHECK(data && memcmp(data + header - 16, data + len - 16, 16) == 0);
    free(data);
    free(path);
  }
}

/* Taking a record back cuts the pending block at the mark; a mark writes a full block out, and the records in it
 * can no longer be taken back (the output layer never asks: it only returns to its last mark). */
static void test_truncate(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/truncated.avro", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(open_avro(path, KG_CODEC_DEFLATE, 0, &w, err), KG_OK);
  int64_t header = kg_writer_bytes(w), records, bytes;
  write_record(w, 0, NULL, 0);
  write_record(w, 1, NULL, 0);
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 2);
  CHECK_INT(bytes, header); /* the block is pending */
  write_record(w, 2, NULL, 0);
  write_record(w, 3, NULL, 0);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 2);
  write_record(w, 4, NULL, 0);
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
  write_record(w, 5, NULL, 0);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  int64_t closed = 0;
  CHECK_INT(kg_writer_close(w, &closed, NULL, err), KG_OK);
  CHECK_INT(closed, 3);
  long long ids[] = {0, 1, 4};
  check_file(path, ids, 3, -1, NULL, 0);
  free(path);

  /* Past a block written out at a mark: refused, naming the file; the writer goes on from where it was. */
  path = kg_xasprintf("%s/flushed.avro", dir);
  CHECK_INT(open_avro(path, KG_CODEC_NULL, 100, &w, err), KG_OK);
  int64_t old_records, old_bytes;
  CHECK_INT(kg_writer_mark(w, &old_records, &old_bytes, err), KG_OK);
  for (long long i = 0; i < 10; i++)
    write_record(w, i, NULL, 0);
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
  CHECK(bytes > old_bytes); /* written out */
  write_record(w, 10, NULL, 0);
  CHECK_INT(kg_writer_truncate(w, old_records, old_bytes, err), KG_EINVAL);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, "pending block");
  CHECK_INT(kg_writer_records(w), 11);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_close(w, NULL, NULL, err), KG_OK);
  long long ten[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  check_file(path, ten, 10, -1, NULL, 0);
  free(path);
}

/* A record larger than the block bound is a block of its own (avro-c's own writer refuses it). */
static void test_large_record(const char *dir) {
  char err[KG_ERRLEN];
  size_t big_len = 3 * KG_AVRO_BLOCK_BYTES + 17;
  char *big = malloc(big_len + 1);
  for (size_t i = 0; i < big_len; i++)
    big[i] = (char)('a' + i % 26);
  big[big_len] = '\0';
  for (int codec = KG_CODEC_NULL; codec <= KG_CODEC_SNAPPY; codec++) {
    char *path = kg_xasprintf("%s/large-%s.avro", dir, codec_names[codec]);
    kg_writer_t *w = NULL;
    int64_t records, bytes;
    CHECK_INT(open_avro(path, (kg_codec_t)codec, 0, &w, err), KG_OK);
    write_record(w, 0, NULL, 0);
    CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
    write_record(w, 1, big, big_len);
    CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
    write_record(w, 2, NULL, 0);
    int64_t closed = 0;
    CHECK_INT(kg_writer_close(w, NULL, &closed, err), KG_OK);
    CHECK_INT(closed, file_size(path));
    long long ids[] = {0, 1, 2};
    check_file(path, ids, 3, 1, big, big_len);
    free(path);
  }
  free(big);
}

/* Nothing written: the header alone, a file of no records. */
static void test_empty(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/empty.avro", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(open_avro(path, KG_CODEC_SNAPPY, 0, &w, err), KG_OK);
  int64_t header = kg_writer_bytes(w), records = -1, bytes = -1;
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 0);
  CHECK_INT(bytes, header);
  CHECK_INT(file_size(path), header);
  check_file(path, NULL, 0, -1, NULL, 0);
  free(path);

  /* No schema: refused, and no file is left. */
  path = kg_xasprintf("%s/no-schema.avro", dir);
  kg_writer_options_t options = {.codec = KG_CODEC_NULL};
  CHECK_INT(kg_writer_open(kg_fs_local(), &kg_writer_avro, path, &options, &w, err), KG_EINVAL);
  CHECK_CONTAINS(err, "no schema");
  CHECK_INT(file_size(path), -1);
  free(path);
}

/* Bytes that are not exactly one datum of the file's schema are refused, so that no file holds what no reader can
 * read: a raw payload, a datum with bytes after it, a truncated one. The records before stay. */
static void test_not_a_datum(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/not-a-datum.avro", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(open_avro(path, KG_CODEC_NULL, 0, &w, err), KG_OK);
  write_record(w, 1, NULL, 0);
  size_t len;
  char *datum = kg_test_datum(2, NULL, 0, &len);
  char *longer = kg_xmalloc(len + 3);
  memcpy(longer, datum, len);
  memcpy(longer + len, "xyz", 3);
  const struct {
    const char *data;
    size_t len;
  } bad[] = {{"{\"id\": 2}", 9}, {longer, len + 3}, {datum, len - 1}, {"", 0}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_INT(kg_writer_write(w, bad[i].data, bad[i].len, err), KG_EINVAL);
    CHECK_CONTAINS(err, "is not one binary datum of the file's schema");
  }
  CHECK_INT(kg_writer_records(w), 1);
  write_record(w, 3, NULL, 0);
  CHECK_INT(kg_writer_close(w, NULL, NULL, err), KG_OK);
  long long ids[] = {1, 3};
  check_file(path, ids, 2, -1, NULL, 0);
  free(longer);
  free(datum);
  free(path);
}

/* Whether the LEN bytes at DATA are accepted as a datum of SCHEMA (a JSON text). */
static bool accepts(const char *dir, const char *schema, const char *data, size_t len) {
  static int n;
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/walk-%d.avro", dir, n++);
  kg_writer_options_t options = {.schema = schema, .schema_len = strlen(schema), .codec = KG_CODEC_NULL};
  kg_writer_t *w = NULL;
  bool ok = false;
  if (kg_writer_open(kg_fs_local(), &kg_writer_avro, path, &options, &w, err) == KG_OK) {
    ok = kg_writer_write(w, data, len, err) == KG_OK;
    kg_writer_abort(w);
  }
  free(path);
  return ok;
}

/* The datum check walks the encoding without allocating: every form a writer may use is accepted, and lengths
 * and counts that no datum of that size could hold are refused at once. */
static void test_datum_check(const char *dir) {
  const char *longs = "{\"type\":\"array\",\"items\":\"long\"}";
  CHECK(accepts(dir, longs, "\x04\x02\x04\x00", 4));      /* [1, 2] */
  CHECK(accepts(dir, longs, "\x03\x04\x02\x04\x00", 5));  /* one block of -2 items, 2 bytes */
  CHECK(!accepts(dir, longs, "\x03\x06\x02\x04\x00", 5)); /* a block size that does not add up */
  CHECK(!accepts(dir, longs, "\x04\x02", 2));             /* cut short */
  const char *nulls = "{\"type\":\"array\",\"items\":\"null\"}";
  CHECK(accepts(dir, nulls, "\x06\x00", 2));                                   /* [null, null, null] */
  CHECK(!accepts(dir, nulls, "\xfe\xff\xff\xff\xff\xff\xff\xff\x7f\x00", 10)); /* 2^62 nulls */
  CHECK(!accepts(dir, "\"string\"", "\xfe\xff\xff\xff\x0f", 5));               /* a 2 GB string in 5 bytes */
  CHECK(!accepts(dir, "\"string\"", "\x01", 1));                               /* a negative length */
  CHECK(accepts(dir, "\"string\"",
                "\x06"
                "abc",
                4));
  CHECK(!accepts(dir, "\"boolean\"", "\x02", 1));
  CHECK(!accepts(dir, "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}", "\x04", 1));
  CHECK(!accepts(dir, "[\"null\",\"long\"]", "\x04", 1));     /* union branch 2 of 2 */
  CHECK(accepts(dir, "[\"null\",\"long\"]", "\x02\x08", 2));  /* branch 1: 4 */
  CHECK(!accepts(dir, "\"int\"", "\xff\xff\xff\xff\x7f", 5)); /* beyond an int */
  const char *map = "{\"type\":\"map\",\"values\":\"int\"}";
  CHECK(accepts(dir, map, "\x02\x02k\x02\x00", 5)); /* {"k": 1} */
  /* A recursive type: a list of three nodes. */
  const char *list = "{\"type\":\"record\",\"name\":\"Node\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
                     "{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}]}";
  CHECK(accepts(dir, list, "\x02\x02\x04\x02\x06\x00", 6));
  CHECK(!accepts(dir, list, "\x02\x02\x04\x02\x06\x02", 6));
}

int main(void) {
  char tmpl[] = "/tmp/kg-writer-avro-XXXXXX";
  char *dir = mkdtemp(tmpl);
  test_codecs(dir);
  test_truncate(dir);
  test_large_record(dir);
  test_empty(dir);
  test_not_a_datum(dir);
  test_datum_check(dir);
  kg_fs_remove_tree(kg_fs_local(), dir, NULL);
  TEST_MAIN_END();
}
