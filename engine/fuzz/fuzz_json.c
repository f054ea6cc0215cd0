/* fuzz_json.c: libFuzzer target for the JSON reader and the JSON forms built on it: any input either is refused
 * with an error, or reads as a value; a work unit that reads back is written again and must read back the same.
 * And for the scripts' codec (jsoncodec.h): any input is refused with an error naming a byte, or parses into a
 * tape that, written back as text, parses into the same tape; what the engine's reader takes, it takes too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsoncodec.h"
#include "metrics.h"
#include "result.h"
#include "workunit.h"

/* Whether the tapes of A and B are the same value: types, counts, string bytes and numbers bit for bit. */
static bool same_tape(const kg_jc_parser_t *a, const kg_jc_parser_t *b) {
  if (a->ntape != b->ntape) return false;
  for (size_t i = 0; i < a->ntape; i++) {
    const kg_jc_tok_t *x = &a->tape[i], *y = &b->tape[i];
    bool xs = x->type == KG_JC_STRING || x->type == KG_JC_ESCAPED_STRING;
    bool ys = y->type == KG_JC_STRING || y->type == KG_JC_ESCAPED_STRING;
    if (xs != ys || (!xs && x->type != y->type) || x->n != y->n) return false;
    if (xs && memcmp(kg_jc_string(a, x), kg_jc_string(b, y), x->n)) return false;
    if (x->type == KG_JC_NUMBER && memcmp(&x->v.d, &y->v.d, sizeof x->v.d)) return false;
    if ((x->type == KG_JC_INT || x->type == KG_JC_UINT) && x->v.u != y->v.u) return false;
  }
  return true;
}

/* The scripts' codec on DATA; ENGINE_OK: the engine's reader took it. */
static void codec(const uint8_t *data, size_t size, bool engine_ok) {
  static kg_jc_parser_t first, again;
  char err[KG_ERRLEN];
  char *copy = malloc(size ? size : 1); /* exactly SIZE bytes: a read past them is a sanitizer report */
  memcpy(copy, data, size);
  if (kg_jc_parse(&first, copy, size, 1000, err) != KG_OK) {
    if (strncmp(err, "invalid JSON at byte ", 21) || engine_ok) abort();
    free(copy);
    return;
  }
  kg_buf_t text = {0};
  kg_jc_write_tape(&text, &first);
  if (kg_jc_parse(&again, text.data, text.len, 1000, err) != KG_OK || !same_tape(&first, &again)) abort();
  kg_buf_free(&text);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[KG_ERRLEN];
  kg_json_t *v = NULL;
  int engine_rc = kg_json_parse((const char *)data, size, "fuzz", &v, err);
  codec(data, size, engine_rc == KG_OK);
  if (engine_rc != KG_OK) {
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
