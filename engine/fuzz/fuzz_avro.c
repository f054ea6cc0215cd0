/* fuzz_avro.c: libFuzzer target for the Avro writer's datum check: any bytes are written as a record of a schema
 * that has every Avro type (a recursive record with unions, arrays, maps, enums, fixed, strings and bytes); they
 * are refused or written, never read out of bounds, and the file the accepted ones make reads back with avro-c. */
#include <avro.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"
#include "writer.h"

static const char schema[] =
    "{\"type\":\"record\",\"name\":\"Node\",\"fields\":["
    "{\"name\":\"b\",\"type\":\"boolean\"},{\"name\":\"i\",\"type\":\"int\"},{\"name\":\"l\",\"type\":\"long\"},"
    "{\"name\":\"f\",\"type\":\"float\"},{\"name\":\"d\",\"type\":\"double\"},{\"name\":\"s\",\"type\":\"string\"},"
    "{\"name\":\"y\",\"type\":\"bytes\"},{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":3}},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]}},"
    "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"long\",\"string\"]}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"int\"}},"
    "{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}]}";

static char path[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  kg_log_set_level(KG_LOG_ERROR + 1);
  snprintf(path, sizeof path, "/tmp/kg-fuzz-avro-%d.avro", (int)getpid());
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[KG_ERRLEN];
  unlink(path);
  kg_writer_options_t options = {.schema = schema, .schema_len = sizeof schema - 1, .codec = KG_CODEC_NULL};
  kg_writer_t *w = NULL;
  if (kg_writer_open(kg_fs_local(), &kg_writer_avro, path, &options, &w, err)) abort();
  bool written = kg_writer_write(w, (const char *)data, size, err) == KG_OK;
  if (kg_writer_close(w, NULL, NULL, err)) abort();
  /* What was accepted is one datum of the schema: avro-c reads it back. */
  avro_file_reader_t reader;
  if (avro_file_reader(path, &reader)) abort();
  avro_schema_t writer_schema = avro_file_reader_get_writer_schema(reader); /* a new reference */
  avro_value_iface_t *iface = avro_generic_class_from_schema(writer_schema);
  avro_value_t value;
  avro_generic_value_new(iface, &value);
  int records = 0;
  while (avro_file_reader_read_value(reader, &value) == 0)
    records++;
  if (records != (written ? 1 : 0)) abort();
  avro_value_decref(&value);
  avro_value_iface_decref(iface);
  avro_schema_decref(writer_schema);
  avro_file_reader_close(reader);
  unlink(path);
  return 0;
}
