/* avro_sample.c: writes Avro files with kingest's Avro writer for the independent readers' test
 * (avro_readers.sh): FOLDER/<codec>.avro for each codec, and FOLDER/expected.jsonl, the records they must hold
 * as JSON lines (unions as plain values), FOLDER/schema.avsc, the schema's text as written to each header.
 *
 *   avro_sample FOLDER
 *
 * Each file has many blocks (a small block bound, a mark before each record), records taken back at marks, and
 * one record larger than the block bound. */
#include <stdlib.h>

#include "avro_datum.h"
#include "fs.h"
#include "writer.h"

#define RECORDS 500

static void die(const char *what, const char *err) {
  fprintf(stderr, "avro_sample: %s: %s\n", what, err);
  exit(1);
}

static void put_json_string(FILE *f, const char *s, size_t len) {
  fputc('"', f);
  for (size_t i = 0; i < len; i++)
    fputc(s[i], f); /* the test's strings need no escapes */
  fputc('"', f);
}

int main(int argc, char **argv) {
  if (argc != 2) die("usage", "avro_sample FOLDER");
  const char *dir = argv[1];
  static const char *const names[] = {"null", "deflate", "snappy"};
  size_t big_len = 2 * KG_AVRO_BLOCK_BYTES + 5;
  char *big = malloc(big_len + 1);
  for (size_t i = 0; i < big_len; i++)
    big[i] = (char)('A' + i % 26);
  big[big_len] = '\0';
  char err[KG_ERRLEN];

  char *schema_path = kg_xasprintf("%s/schema.avsc", dir);
  FILE *f = fopen(schema_path, "wb");
  if (!f) die(schema_path, "cannot create");
  fwrite(kg_test_schema, 1, sizeof kg_test_schema - 1, f);
  fclose(f);
  free(schema_path);

  char *expected_path = kg_xasprintf("%s/expected.jsonl", dir);
  FILE *expected = fopen(expected_path, "w");
  if (!expected) die(expected_path, "cannot create");
  for (int codec = KG_CODEC_NULL; codec <= KG_CODEC_SNAPPY; codec++) {
    char *path = kg_xasprintf("%s/%s.avro", dir, names[codec]);
    kg_writer_options_t options = {.schema = kg_test_schema,
                                   .schema_len = sizeof kg_test_schema - 1,
                                   .codec = (kg_codec_t)codec,
                                   .deflate_level = 9,
                                   .block_bytes = 2000};
    kg_writer_t *w = NULL;
    if (kg_writer_open(kg_fs_local(), &kg_writer_avro, path, &options, &w, err)) die(path, err);
    for (long long i = 0; i < RECORDS; i++) {
      int64_t records, bytes;
      if (kg_writer_mark(w, &records, &bytes, err)) die(path, err);
      size_t len;
      bool is_big = i == RECORDS / 2;
      char *datum = kg_test_datum(i, is_big ? big : NULL, big_len, &len);
      if (kg_writer_write(w, datum, len, err)) die(path, err);
      free(datum);
      if (i % 7 == 3) { /* a second output of the record, then the record fails: both taken back */
        datum = kg_test_datum(-i, NULL, 0, &len);
        if (kg_writer_write(w, datum, len, err)) die(path, err);
        free(datum);
        if (kg_writer_truncate(w, records, bytes, err)) die(path, err);
        continue;
      }
      if (codec != KG_CODEC_NULL) continue;
      char name[64], note[64];
      bool has_note;
      kg_test_fields(i, name, sizeof name, &has_note, note, sizeof note);
      fprintf(expected, "{\"id\": %lld, \"at\": %lld, \"name\": ", i, KG_TEST_AT0 + i);
      if (is_big)
        put_json_string(expected, big, big_len);
      else
        put_json_string(expected, name, strlen(name));
      fputs(", \"note\": ", expected);
      if (has_note)
        put_json_string(expected, note, strlen(note));
      else
        fputs("null", expected);
      fputs("}\n", expected);
    }
    if (kg_writer_close(w, NULL, NULL, err)) die(path, err);
    free(path);
  }
  fclose(expected);
  free(expected_path);
  free(big);
  return 0;
}
