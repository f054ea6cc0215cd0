/* fuzz_json.c: libFuzzer target for the JSON reader and the JSON forms built on it: any input either is refused
 * with an error, or reads as a value; a work unit that reads back is written again and must read back the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "metrics.h"
#include "result.h"
#include "workunit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[KG_ERRLEN];
  kg_json_t *v = NULL;
  if (kg_json_parse((const char *)data, size, "fuzz", &v, err) != KG_OK) {
    if (v || !strstr(err, "invalid JSON at byte")) abort();
    return 0;
  }
  kg_workunit_t wu;
  if (kg_workunit_from_json(v, "fuzz", &wu, err) == KG_OK) {
    kg_buf_t b = {0};
    kg_workunit_json(&b, &wu, true);
    kg_json_t *again = NULL;
    kg_workunit_t back;
    if (kg_json_parse(b.data, b.len, "again", &again, err) || kg_workunit_from_json(again, "again", &back, err))
      abort();
    bool same = !strcmp(back.topic, wu.topic) && back.partition == wu.partition && back.low == wu.low &&
                back.high == wu.high && back.earliest == wu.earliest && back.latest == wu.latest &&
                back.has_stored == wu.has_stored && (!wu.has_stored || back.stored == wu.stored) &&
                back.reason == wu.reason && (back.est_size == wu.est_size || wu.est_size != wu.est_size);
    if (!same) abort();
    kg_unit_result_t r;
    kg_unit_result_from_json(v, &wu, "fuzz", &r, err);
    kg_workunit_clear(&back);
    kg_json_free(again);
    kg_buf_free(&b);
    kg_workunit_clear(&wu);
  }
  kg_metrics_t m = {0};
  kg_metrics_from_json(&m, v, "fuzz", err);
  kg_metrics_free(&m);
  kg_json_free(v);
  return 0;
}
