/* test_writer.c: the writer interface (counts, truncation, abort, close, backends chosen by format), the
 * simple writer's bytes, and the output path of each writer.file.path.type. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"
#include "output.h"
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

/* The simple writer, as the registry gives it for writer.output.format=txt. */
static int open_simple(const char *path, const char *delim, size_t delim_len, bool prepend_size, kg_writer_t **w,
                       char *err) {
  const kg_writer_ops_t *ops = NULL;
  CHECK_INT(kg_writer_find(NULL, "txt", &ops, err), KG_OK);
  kg_simple_options_t simple = {.delimiter = delim, .delimiter_len = delim_len, .prepend_size = prepend_size};
  kg_writer_options_t options = {.backend = &simple};
  return kg_writer_open(kg_fs_local(), ops, path, &options, w, err);
}

static bool exists(const char *path) {
  bool found = false;
  return kg_fs_exists(kg_fs_local(), path, &found, NULL) == KG_OK && found;
}

static void test_bytes(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/a/b/plain.txt", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(open_simple(path, "\n", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "one", 3, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "", 0, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "t\0o", 3, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 3);
  CHECK_INT(kg_writer_bytes(w), 9);
  int64_t records = -1, bytes = -1;
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 3);
  CHECK_INT(bytes, 9);
  size_t len;
  char *data = slurp(path, &len);
  CHECK_INT(len, 9);
  CHECK(data && memcmp(data, "one\n\nt\0o\n", 9) == 0);
  free(data);
  /* An existing file is never overwritten. */
  CHECK_INT(open_simple(path, "\n", 1, false, &w, err), KG_EIO);
  CHECK_CONTAINS(err, path);
  free(path);

  path = kg_xasprintf("%s/sized.bin", dir);
  CHECK_INT(open_simple(path, "", 0, true, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "abc", 3, err), KG_OK);
  CHECK_INT(kg_writer_bytes(w), 11); /* the size prefix counts */
  CHECK_INT(kg_writer_close(w, NULL, NULL, err), KG_OK);
  data = slurp(path, &len);
  CHECK_INT(len, 11);
  CHECK(data && memcmp(data, "\0\0\0\0\0\0\0\3abc", 11) == 0);
  free(data);
  free(path);

  /* Taking back a record's outputs: what follows the counts given is gone, also past the write buffer. */
  path = kg_xasprintf("%s/truncated.txt", dir);
  CHECK_INT(open_simple(path, "\n", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "keep", 4, err), KG_OK);
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 1);
  CHECK_INT(bytes, 5);
  char *big = kg_xcalloc(1, 3 << 20);
  memset(big, 'z', 3 << 20);
  CHECK_INT(kg_writer_write(w, "gone", 4, err), KG_OK);
  CHECK_INT(kg_writer_write(w, big, 3 << 20, err), KG_OK);
  free(big);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 1);
  CHECK_INT(kg_writer_bytes(w), 5);
  CHECK_INT(kg_writer_write(w, "next", 4, err), KG_OK);
  CHECK_INT(kg_writer_close(w, NULL, NULL, err), KG_OK);
  data = slurp(path, &len);
  CHECK_INT(len, 10);
  CHECK(data && memcmp(data, "keep\nnext\n", 10) == 0);
  free(data);
  free(path);

  path = kg_xasprintf("%s/aborted.txt", dir);
  CHECK_INT(open_simple(path, "|", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "x", 1, err), KG_OK);
  kg_writer_abort(w);
  CHECK(!exists(path));
  free(path);

  /* A folder that cannot be created: a file stands in the way. */
  path = kg_xasprintf("%s/plain-file/x.txt", dir);
  char *blocker = kg_xasprintf("%s/plain-file", dir);
  FILE *f = fopen(blocker, "w");
  fclose(f);
  free(blocker);
  CHECK_INT(open_simple(path, "\n", 1, false, &w, err), KG_EIO);
  CHECK_CONTAINS(err, "plain-file");
  free(path);
}

/* writer.builder.class and writer.output.format choose the backend: the simple writer for text, Avro for avro. */
static void test_find(void) {
  char err[KG_ERRLEN];
  const kg_writer_ops_t *ops = NULL;
  static const char *const formats[] = {"txt", "json", "TXT"};
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    ops = NULL;
    CHECK_INT(kg_writer_find(NULL, formats[i], &ops, err), KG_OK);
    CHECK(ops == &kg_writer_simple);
  }
  CHECK_INT(kg_writer_find("gobblin.writer.SimpleDataWriterBuilder", "json", &ops, err), KG_OK);
  CHECK(ops == &kg_writer_simple);
  /* csv is the CSV writer's, not JSON lines in a .csv file. */
  CHECK_INT(kg_writer_find(NULL, "CSV", &ops, err), KG_OK);
  CHECK(ops == &kg_writer_csv);
  CHECK_INT(kg_writer_find("org.apache.gobblin.writer.SimpleDataWriterBuilder", "csv", &ops, err), KG_OK);
  CHECK(ops == &kg_writer_csv);
  static const char *const avro[] = {"avro", "AVRO", "Avro"};
  for (size_t i = 0; i < sizeof avro / sizeof avro[0]; i++) {
    ops = NULL;
    CHECK_INT(kg_writer_find(NULL, avro[i], &ops, err), KG_OK);
    CHECK(ops == &kg_writer_avro);
  }
  CHECK_INT(kg_writer_find("org.apache.gobblin.writer.AvroDataWriterBuilder", "avro", &ops, err), KG_OK);
  CHECK(ops == &kg_writer_avro);
  CHECK_INT(kg_writer_find("gobblin.writer.SimpleDataWriterBuilder", "avro", &ops, err), KG_EINVAL);
  CHECK(ops == NULL);
  CHECK_CONTAINS(err, "writer.builder.class=gobblin.writer.SimpleDataWriterBuilder and writer.output.format=avro");
  CHECK_INT(kg_writer_find("gobblin.writer.AvroDataWriterBuilder", "txt", &ops, err), KG_EINVAL);
  CHECK_CONTAINS(err, "writer.builder.class=gobblin.writer.AvroDataWriterBuilder");
  CHECK_CONTAINS(err, "AvroDataWriterBuilder writes avro");
  CHECK_CONTAINS(err, ": SimpleDataWriterBuilder writes txt, json and csv, AvroDataWriterBuilder writes avro, "
                      "ParquetDataWriterBuilder writes parquet");
  /* writer.output.format's values: the registry's formats, each once, in its order, and no more than asked. */
  const char *names[8];
  kg_writer_formats(names, 8);
  CHECK_STR(names[0], "txt");
  CHECK_STR(names[1], "json");
  CHECK_STR(names[2], "csv");
  CHECK_STR(names[3], "avro");
  CHECK_STR(names[4], "parquet");
  CHECK(names[5] == NULL);
  kg_writer_formats(names, 3);
  CHECK_STR(names[1], "json");
  CHECK(names[2] == NULL);
}

/* A backend of its own through the interface: the writer counts what the backend says its header, each record
 * and its trailer added, takes the counts back with the file, and closes with them. The backend writes "[", then
 * "<record>;" each, then "]". */
static int bracketed_open(kg_writer_t *w, const kg_writer_options_t *options, int64_t *bytes, char *errbuf) {
  char why[KG_ERRLEN];
  *bytes = 1;
  return kg_fs_stream_write(w->stream, "[", 1, why) ? kg_writer_io_error(w, why, errbuf) : KG_OK;
}
static int bracketed_write(kg_writer_t *w, const char *data, size_t len, int64_t *bytes, char *errbuf) {
  char why[KG_ERRLEN];
  if (kg_fs_stream_write(w->stream, data, len, why) || kg_fs_stream_write(w->stream, ";", 1, why))
    return kg_writer_io_error(w, why, errbuf);
  *bytes = (int64_t)len + 1;
  return KG_OK;
}
static int bracketed_truncate(kg_writer_t *w, int64_t records, int64_t bytes, char *errbuf) {
  char why[KG_ERRLEN];
  return kg_fs_stream_truncate(w->stream, bytes, why) ? kg_writer_io_error(w, why, errbuf) : KG_OK;
}
static int bracketed_finish(kg_writer_t *w, int64_t *bytes, char *errbuf) {
  char why[KG_ERRLEN];
  *bytes = 1;
  return kg_fs_stream_write(w->stream, "]", 1, why) ? kg_writer_io_error(w, why, errbuf) : KG_OK;
}
static const kg_writer_ops_t bracketed = {
    .name = "bracketed",
    .open = bracketed_open,
    .write = bracketed_write,
    .truncate = bracketed_truncate,
    .finish = bracketed_finish,
};

static void test_backend(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/backend/out.b", dir);
  kg_writer_t *w = NULL;
  kg_writer_options_t options = {0};
  CHECK_INT(kg_writer_open(kg_fs_local(), &bracketed, path, &options, &w, err), KG_OK);
  CHECK_STR(kg_writer_path(w), path);
  CHECK_INT(kg_writer_bytes(w), 1);
  CHECK_INT(kg_writer_write(w, "ab", 2, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "cde", 3, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 2);
  CHECK_INT(kg_writer_bytes(w), 8);
  int64_t records = 0, bytes = 0;
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK); /* no mark op: the counts as they are */
  CHECK_INT(records, 2);
  CHECK_INT(bytes, 8);
  CHECK_INT(kg_writer_write(w, "gone", 4, err), KG_OK);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_records(w), 2);
  CHECK_INT(kg_writer_bytes(w), 8);
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 2);
  CHECK_INT(bytes, 9); /* the trailer counts: the file's size */
  size_t len = 0;
  char *data = slurp(path, &len);
  CHECK_INT(len, 9);
  CHECK(data && memcmp(data, "[ab;cde;]", 9) == 0);
  free(data);
  free(path);
}

static int failing_fsync(int fd) {
  errno = EIO;
  return -1;
}

/* A file that cannot be synced when it is closed fails the close, naming it; the counts still come back. */
static void test_close_failure(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/unsynced.txt", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(open_simple(path, "\n", 1, false, &w, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "one", 3, err), KG_OK);
  kg_fs_local_set_fsync(failing_fsync);
  int64_t records = 0, bytes = 0;
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_EIO);
  kg_fs_local_set_fsync(NULL);
  CHECK_CONTAINS(err, "cannot write output file ");
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, strerror(EIO));
  CHECK_INT(records, 1);
  CHECK_INT(bytes, 4);
  free(path);
}

static void test_file_paths(void) {
  const char *ns = "gobblin.extract.kafka";
  char *fp = kg_task_file_path(KG_PATH_TABLENAME, ns, "test", "20261130000000");
  CHECK_STR(fp, "test");
  free(fp);
  fp = kg_task_file_path(KG_PATH_NAMESPACE_TABLE, ns, "test", "20261130000000");
  CHECK_STR(fp, "gobblin/extract/kafka/test");
  free(fp);
  fp = kg_task_file_path(KG_PATH_DEFAULT, ns, "test", "20261130000000");
  CHECK_STR(fp, "gobblin/extract/kafka/test/20261130000000_append");
  free(fp);
  fp = kg_task_file_path(KG_PATH_DEFAULT, "", "test", "20261130000000");
  CHECK_STR(fp, "test/20261130000000_append");
  free(fp);
}

/* gzip and zstd: the whole file compressed, read back by the gzip and zstd tools; a record taken back after its
 * mark is not in the file, and the bytes counted are the file's. Many records, so that blocks go to the
 * compressor at marks, and the file is several compressed blocks. */
static void test_compressed(const char *dir) {
  const struct {
    kg_codec_t codec;
    const char *ext, *tool;
  } codecs[] = {{KG_CODEC_GZIP, "gz", "gzip -dc"}, {KG_CODEC_ZSTD, "zst", "zstd -q -dc"}};
  for (size_t c = 0; c < 2; c++) {
    char err[KG_ERRLEN], path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/c/part.%s", dir, codecs[c].ext);
    kg_simple_options_t lines = {.delimiter = "\n", .delimiter_len = 1};
    kg_writer_options_t o = {.codec = codecs[c].codec, .deflate_level = 6, .block_bytes = 1000, .backend = &lines};
    kg_writer_t *w = NULL;
    CHECK_INT(kg_writer_open(kg_fs_local(), &kg_writer_simple, path, &o, &w, err), KG_OK);
    if (!w) continue;
    kg_buf_t expected = {0};
    for (int i = 0; i < 5000; i++) {
      int64_t records, bytes;
      CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
      char line[64];
      int n = snprintf(line, sizeof line, "record %d of the compressed file", i);
      CHECK_INT(kg_writer_write(w, line, (size_t)n, err), KG_OK);
      if (i % 7 == 3) { /* this record fails after it wrote: taken back */
        CHECK_INT(kg_writer_write(w, "half", 4, err), KG_OK);
        CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
        continue;
      }
      kg_buf_appendf(&expected, "%s\n", line);
    }
    int64_t records = 0, bytes = 0;
    CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
    size_t len = 0;
    char *file = slurp(path, &len);
    CHECK_INT(bytes, len);
    CHECK(len > 0 && len < expected.len / 4); /* compressed */
    free(file);
    snprintf(cmd, sizeof cmd, "%s '%s'", codecs[c].tool, path);
    FILE *p = popen(cmd, "r");
    kg_buf_t got = {0};
    char chunk[65536];
    size_t n;
    while (p && (n = fread(chunk, 1, sizeof chunk, p)) > 0)
      kg_buf_append(&got, chunk, n);
    CHECK_INT(p ? pclose(p) : -1, 0);
    CHECK_INT(got.len, expected.len);
    CHECK(got.len == expected.len && !memcmp(got.data, expected.data, got.len));
    kg_buf_free(&got);
    kg_buf_free(&expected);
  }
}

static int64_t file_size(const char *path);

/* Opens a CSV writer at PATH with columns COLS (comma-separated) and the other settings of O. */
static int open_csv(const char *path, const char *cols, kg_csv_options_t o, kg_codec_t codec, kg_writer_t **w,
                    char *err) {
  char *names[16];
  char *copy = kg_xstrdup(cols);
  size_t n = 0;
  for (char *tok = strtok(copy, ","); tok && n < 16; tok = strtok(NULL, ","))
    names[n++] = tok;
  o.columns = names;
  o.ncolumns = n;
  if (!o.delimiter) o.delimiter = ',';
  kg_writer_options_t options = {.codec = codec, .deflate_level = 6, .block_bytes = 64, .backend = &o};
  int rc = kg_writer_open(kg_fs_local(), &kg_writer_csv, path, &options, w, err);
  free(copy); /* the writer keeps its own copy of the names */
  return rc;
}

/* The file at PATH as a string (NUL-terminated; "" when there is none). */
static char *text_of(const char *path) {
  size_t len = 0;
  char *data = slurp(path, &len);
  if (!data) return kg_xstrdup("");
  data[len] = '\0';
  return data;
}

/* The CSV writer: RFC 4180 quoting, every kind of value, the header, the line end; records that are not objects or
 * arrays, or have a field that is no column, refused with the file as it was; the bytes counted are the file's. */
static void test_csv(const char *dir) {
  char err[KG_ERRLEN];
  char *path = kg_xasprintf("%s/csv/plain.csv", dir);
  kg_writer_t *w = NULL;
  CHECK_INT(open_csv(path, "id,name,score,ok,tags,missing", (kg_csv_options_t){.header = true}, KG_CODEC_NULL, &w, err),
            KG_OK);
  if (!w) return;
  CHECK_INT(kg_writer_bytes(w), 30); /* the header */
  const char *lines[] = {
      "{\"id\":1,\"name\":\"plain\",\"score\":0.1,\"ok\":true,\"tags\":[\"a\",\"b\"]}",
      /* members in another order, a comma, a quote, a line break, an escape, a nested object */
      "{\"name\":\"a, \\\"b\\\"\\nc\",\"id\":-9223372036854775808,\"ok\":false,\"tags\":{\"k\":null},\"score\":1e300}",
      /* null and the empty string differ; a CR is quoted */
      "{\"id\":18446744073709551615,\"name\":\"\",\"score\":null,\"tags\":\"cr\\r\"}",
      /* an array fills the columns in order; the ones after it stay empty */
      "[3, \"from an array\", 2.5]",
      "{}",
  };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    CHECK_INT(kg_writer_write(w, lines[i], strlen(lines[i]), err), KG_OK);
  const char *expected = "id,name,score,ok,tags,missing\n"
                         "1,plain,0.1,true,\"[\"\"a\"\",\"\"b\"\"]\",\n"
                         "-9223372036854775808,\"a, \"\"b\"\"\nc\",1e+300,false,\"{\"\"k\"\":null}\",\n"
                         "18446744073709551615,\"\",,,\"cr\r\",\n"
                         "3,from an array,2.5,,,\n"
                         ",,,,,\n";
  CHECK_INT(kg_writer_bytes(w), strlen(expected));

  /* Refused: the writer's counts and the file stay as they were. */
  int64_t records_before = kg_writer_records(w), bytes_before = kg_writer_bytes(w);
  const struct {
    const char *record, *says;
  } refused[] = {
      {"not json", "it is not a JSON object or array"},
      {"42", "it is a JSON number, not an object or array"},
      {"\"text\"", "it is a JSON string"},
      {"{\"id\":1,\"extra\":2}", "its field \"extra\" is not one of the columns (id,name,score,ok,tags,missing)"},
      {"[1,2,3,4,5,6,7]", "it is an array of 7 items, and there are 6 columns"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    err[0] = '\0';
    CHECK_INT(kg_writer_write(w, refused[i].record, strlen(refused[i].record), err), KG_ERECORD);
    CHECK_CONTAINS(err, "cannot write the record as a line of CSV file ");
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, refused[i].says);
  }
  CHECK_INT(kg_writer_records(w), records_before);
  CHECK_INT(kg_writer_bytes(w), bytes_before);
  int64_t records = 0, bytes = 0;
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  CHECK_INT(records, 5);
  char *got = text_of(path);
  CHECK_STR(got, expected);
  CHECK_INT(bytes, strlen(got));
  free(got);
  free(path);

  /* Another delimiter is quoted in its turn (and a comma is not); CRLF line ends; no header; extra fields left
   * out when asked; a record taken back (its converters failed after it wrote) is not in the file. */
  path = kg_xasprintf("%s/csv/semicolon.csv", dir);
  CHECK_INT(open_csv(path, "a,b", (kg_csv_options_t){.delimiter = ';', .crlf = true, .ignore_extra = true},
                     KG_CODEC_NULL, &w, err),
            KG_OK);
  CHECK_INT(kg_writer_bytes(w), 0);
  CHECK_INT(kg_writer_write(w, "{\"a\":\"x;y\",\"b\":\"p,q\",\"c\":\"left out\"}", 36, err), KG_OK);
  CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "[1,2,3]", 7, err), KG_OK);
  CHECK_INT(kg_writer_truncate(w, records, bytes, err), KG_OK);
  CHECK_INT(kg_writer_write(w, "[1,2,3]", 7, err), KG_OK);
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  got = text_of(path);
  CHECK_STR(got, "\"x;y\";p,q\r\n1;2\r\n");
  CHECK_INT(bytes, strlen(got));
  CHECK_INT(records, 2);
  free(got);
  free(path);

  /* gzip: each file its header; the bytes counted are the compressed file's; gzip reads the lines back. */
  path = kg_xasprintf("%s/csv/z.csv.gz", dir);
  CHECK_INT(open_csv(path, "n", (kg_csv_options_t){.header = true}, KG_CODEC_GZIP, &w, err), KG_OK);
  kg_buf_t want = {0};
  kg_buf_append(&want, "n\n", 2);
  for (int i = 0; i < 300; i++) {
    char rec[32];
    int n = snprintf(rec, sizeof rec, "{\"n\":%d}", i);
    CHECK_INT(kg_writer_mark(w, &records, &bytes, err), KG_OK);
    CHECK_INT(kg_writer_write(w, rec, (size_t)n, err), KG_OK);
    kg_buf_appendf(&want, "%d\n", i);
  }
  CHECK_INT(kg_writer_close(w, &records, &bytes, err), KG_OK);
  CHECK_INT(bytes, file_size(path));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
  FILE *pipe = popen(cmd, "r");
  kg_buf_t unzipped = {0};
  char chunk[4096];
  size_t n;
  while (pipe && (n = fread(chunk, 1, sizeof chunk, pipe)) > 0)
    kg_buf_append(&unzipped, chunk, n);
  CHECK_INT(pipe ? pclose(pipe) : -1, 0);
  CHECK_STR(unzipped.data, want.data);
  kg_buf_free(&unzipped);
  kg_buf_free(&want);
  free(path);
}

/* The size of the file at PATH, -1 when there is none. */
static int64_t file_size(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  int64_t n = ftell(f);
  fclose(f);
  return n;
}

/* A task's outputs count, once finished, the bytes of the files they hand to task output: a compressed file's
 * last block and trailer, which only its close writes, included; the quarantine file is not counted; a failed
 * task's removed files count nothing. */
static void test_outputs_written(const char *dir) {
  for (int codec = 0; codec < 2; codec++) {
    char job_dir[512], err[KG_ERRLEN];
    snprintf(job_dir, sizeof job_dir, "%s/outputs%d", dir, codec);
    /* 7 records: files of 3, 3 and 1. */
    char *text = kg_xasprintf("kafka.brokers=b:1\nwriter.file.path.type=tablename\nwriter.codec.type=%s\n"
                              "writer.deflate.level=6\nwriter.file.max.records=3\ndata.publisher.final.dir=%s\n",
                              codec ? "gzip" : "null", job_dir);
    kg_config_t *c = NULL;
    CHECK_INT(kg_test_config(text, "/jobs/outputs.pull", &c, err), KG_OK);
    free(text);
    if (!c) continue;
    CHECK_STR(kg_writer_settings(c)->ext, codec ? "txt.gz" : "txt");
    kg_task_spec_t spec = {.task_id = "task_T_1_0",
                           .config = c,
                           .job_dir = job_dir,
                           .extract_id = "1",
                           .fs = kg_fs_local(),
                           .writer = &kg_writer_simple};
    kg_outputs_t *o = kg_outputs_new(&spec);
    kg_outputs_select(o, "topic", NULL, 0);
    kg_record_t records[7] = {{0}};
    for (int i = 0; i < 7; i++) {
      char line[32];
      int n = snprintf(line, sizeof line, "line %d", i);
      kg_outputs_batch_begin(o);
      CHECK_INT(kg_outputs_emit(o, &records[i], -1, line, (size_t)n), KG_OK);
    }
    kg_workunit_t wu = {.topic = "topic"};
    CHECK_INT(kg_outputs_quarantine(o, &wu, &records[0], "decodeRecord", "bad", err), KG_OK);
    kg_task_result_t result = {0};
    CHECK_INT(kg_outputs_finish(o, true, &result, err), KG_OK);
    int64_t records_written = 0, bytes_written = 0, on_disk = 0;
    kg_outputs_written(o, &records_written, &bytes_written);
    size_t data_files = 0;
    for (size_t i = 0; i < result.nfiles; i++) {
      int64_t size = file_size(result.files[i].output);
      CHECK(size > 0);
      if (strstr(result.files[i].output, "/_errors/")) continue;
      on_disk += size;
      data_files++;
    }
    CHECK_INT(data_files, 3);
    CHECK_INT(records_written, 7);
    CHECK_INT(bytes_written, on_disk);
    for (size_t i = 0; i < result.nfiles; i++) {
      free(result.files[i].file_path);
      free(result.files[i].output);
      free(result.files[i].final);
    }
    free(result.files);
    kg_outputs_destroy(o);

    /* A failed task: its files are removed, and nothing is written. */
    o = kg_outputs_new(&spec);
    kg_outputs_select(o, "topic", NULL, 0);
    kg_outputs_batch_begin(o);
    CHECK_INT(kg_outputs_emit(o, &records[0], -1, "gone", 4), KG_OK);
    kg_task_result_t failed = {0};
    CHECK_INT(kg_outputs_finish(o, false, &failed, NULL), KG_OK);
    kg_outputs_written(o, &records_written, &bytes_written);
    CHECK_INT(records_written, 0);
    CHECK_INT(bytes_written, 0);
    CHECK_INT(failed.nfiles, 0);
    kg_outputs_destroy(o);
    kg_config_destroy(c);
  }
}

int main(void) {
  char tmpl[] = "/tmp/kg-writer-XXXXXX";
  char *dir = mkdtemp(tmpl);
  test_bytes(dir);
  test_find();
  test_backend(dir);
  test_close_failure(dir);
  test_file_paths();
  test_compressed(dir);
  test_outputs_written(dir);
  test_csv(dir);
  kg_fs_remove_tree(kg_fs_local(), dir, NULL);
  TEST_MAIN_END();
}
