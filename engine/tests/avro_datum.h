/* avro_datum.h: the test schema of the Avro writer's tests and its datums, encoded by avro-c's value API (an
 * encoder that is not kingest's), for test_writer_avro.c and the independent readers' driver avro_sample.c. */
#ifndef KG_TEST_AVRO_DATUM_H
#define KG_TEST_AVRO_DATUM_H

#include <avro.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What avro-c's file writer would lose: doc, aliases, a logicalType, defaults. Readers must see it as written. */
static const char kg_test_schema[] =
    "{\"type\": \"record\", \"name\": \"Event\", \"namespace\": \"kingest.test\", \"doc\": \"A test event.\",\n"
    " \"aliases\": [\"Happening\"],\n"
    " \"fields\": [\n"
    "  {\"name\": \"id\", \"type\": \"long\", \"doc\": \"Its number.\"},\n"
    "  {\"name\": \"at\", \"type\": {\"type\": \"long\", \"logicalType\": \"timestamp-millis\"}},\n"
    "  {\"name\": \"name\", \"type\": \"string\", \"default\": \"\"},\n"
    "  {\"name\": \"note\", \"type\": [\"null\", \"string\"], \"default\": null}\n"
    " ]}";

#define KG_TEST_AT0 1700000000000LL

/* Record I's fields: its name is NAME when given (NAME_LEN bytes), else "event-<I>"; its note is null for every
 * third record. */
static inline void kg_test_fields(long long i, char *name, size_t size, bool *has_note, char *note, size_t note_size) {
  snprintf(name, size, "event-%lld", i);
  *has_note = i % 3 != 0;
  snprintf(note, note_size, "note %lld", i);
}

/* Encodes record I as one Avro binary datum of kg_test_schema into a new buffer of *LEN bytes; NAME (NAME_LEN
 * bytes) replaces its name when not NULL. Exits on an avro-c failure (a broken test). */
static inline char *kg_test_datum(long long i, const char *name, size_t name_len, size_t *len) {
  static avro_schema_t schema;
  static avro_value_iface_t *iface;
  if (!schema) {
    if (avro_schema_from_json_length(kg_test_schema, sizeof kg_test_schema - 1, &schema)) {
      fprintf(stderr, "test schema: %s\n", avro_strerror());
      exit(2);
    }
    iface = avro_generic_class_from_schema(schema);
  }
  char own[64], note[64];
  bool has_note;
  kg_test_fields(i, own, sizeof own, &has_note, note, sizeof note);
  if (!name) name = own, name_len = strlen(own);
  avro_value_t rec, field, branch;
  avro_generic_value_new(iface, &rec);
  avro_value_get_by_name(&rec, "id", &field, NULL);
  avro_value_set_long(&field, i);
  avro_value_get_by_name(&rec, "at", &field, NULL);
  avro_value_set_long(&field, KG_TEST_AT0 + i);
  avro_value_get_by_name(&rec, "name", &field, NULL);
  avro_value_set_string_len(&field, name, name_len + 1); /* the size counts a NUL */
  avro_value_get_by_name(&rec, "note", &field, NULL);
  if (has_note) {
    avro_value_set_branch(&field, 1, &branch);
    avro_value_set_string(&branch, note);
  } else {
    avro_value_set_branch(&field, 0, &branch);
    avro_value_set_null(&branch);
  }
  size_t size = 0;
  avro_value_sizeof(&rec, &size);
  char *buf = malloc(size ? size : 1);
  avro_writer_t w = avro_writer_memory(buf, (int64_t)size);
  if (avro_value_write(w, &rec)) {
    fprintf(stderr, "test datum: %s\n", avro_strerror());
    exit(2);
  }
  avro_writer_free(w);
  avro_value_decref(&rec);
  *len = size;
  return buf;
}

#endif
