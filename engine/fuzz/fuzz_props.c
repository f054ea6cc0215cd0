/* fuzz_props.c: libFuzzer target for the properties-file reader and the job config built from it. */
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "log.h"
#include "props.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  kg_log_set_level(KG_LOG_ERROR + 1); /* silent: warnings about unknown properties are expected */
  setenv("KG_FUZZ_VAR", "value", 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[KG_ERRLEN];
  kg_props_t *props = kg_props_new();
  if (kg_props_parse(props, (const char *)data, size, "fuzz.pull", err) != KG_OK) {
    kg_props_destroy(props);
    return 0;
  }
  kg_config_t *config = NULL;
  if (kg_config_new(props, "fuzz.pull", false, "/tmp/kg-fuzz-work", &config, err) == KG_OK) /* takes props */
    kg_config_destroy(config);
  return 0;
}
