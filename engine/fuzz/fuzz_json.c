/* fuzz_json.c: libFuzzer target for the JSON parser of json.h and what is built on it: any input is refused with an
 * error naming a byte, or parses into a tape that, written back as text, parses into the same tape; the tree of the
 * engine's documents takes what the tape takes within its depth bound, and a work unit that reads back from it is
 * written again and must read back the same. And for the writer's string escaper: the input as a JSON string reads
 * back as the same bytes, and with too little room it writes a string that reads back as a prefix of them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "metrics.h"
#include "result.h"
#include "workunit.h"

/* Whether the tapes of A and B are the same value: types, counts, string bytes and numbers bit for bit (a number
 * written as 1.0 is written back as 1: whether it was written as an integer is not compared). */
static bool same_tape(const kg_json_parser_t *a, const kg_json_parser_t *b) {
  if (a->ntape != b->ntape) return false;
  for (size_t i = 0; i < a->ntape; i++) {
    const kg_json_tok_t *x = &a->tape[i], *y = &b->tape[i];
    bool xs = x->type == KG_JSON_TOK_STRING || x->type == KG_JSON_TOK_ESCAPED_STRING;
    bool ys = y->type == KG_JSON_TOK_STRING || y->type == KG_JSON_TOK_ESCAPED_STRING;
    if (xs != ys || (!xs && x->type != y->type)) return false;
    if (x->type != KG_JSON_TOK_NUMBER && x->n != y->n) return false;
    if (xs && memcmp(kg_json_tok_string(a, x), kg_json_tok_string(b, y), x->n)) return false;
    if (x->type == KG_JSON_TOK_NUMBER && memcmp(&x->v.d, &y->v.d, sizeof x->v.d)) return false;
    if ((x->type == KG_JSON_TOK_INT || x->type == KG_JSON_TOK_UINT) && x->v.u != y->v.u) return false;
  }
  return true;
}

/* The tape of DATA; returns whether it parsed. */
static bool tape(const uint8_t *data, size_t size) {
  static kg_json_parser_t first, again;
  char err[KG_ERRLEN];
  char *copy = malloc(size ? size : 1); /* exactly SIZE bytes: a read past them is a sanitizer report */
  memcpy(copy, data, size);
  if (kg_json_parse_tape(&first, copy, size, 1000, err) != KG_OK) {
    if (strncmp(err, "invalid JSON at byte ", 21)) abort();
    free(copy);
    return false;
  }
  kg_buf_t text = {0};
  kg_json_write_tape(&text, &first);
  if (kg_json_parse_tape(&again, text.data, text.len, 1000, err) != KG_OK || !same_tape(&first, &again)) abort();
  kg_buf_free(&text);
  free(copy);
  return true;
}

/* DATA as a JSON string, with room for all of it and with less. */
static void escaper(const uint8_t *data, size_t size) {
  static kg_json_parser_t p;
  char err[KG_ERRLEN];
  kg_buf_t text = {0};
  kg_json_write_string(&text, (const char *)data, size);
  if (kg_json_parse_tape(&p, text.data, text.len, 1, err) != KG_OK || p.tape[0].n != size ||
      memcmp(kg_json_tok_string(&p, &p.tape[0]), data, size))
    abort();
  size_t cap = size ? data[0] % (size * 6) : 0;
  char *out = malloc(cap + 2);
  out[0] = '"';
  size_t n = kg_json_escape(out + 1, cap, (const char *)data, size);
  if (n > cap) abort();
  out[n + 1] = '"';
  if (kg_json_parse_tape(&p, out, n + 2, 1, err) != KG_OK || p.tape[0].n > size ||
      memcmp(kg_json_tok_string(&p, &p.tape[0]), data, p.tape[0].n))
    abort();
  free(out);
  kg_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[KG_ERRLEN];
  bool tape_ok = tape(data, size);
  escaper(data, size);
  kg_json_t *v = NULL;
  int rc = kg_json_parse((const char *)data, size, "fuzz", &v, err);
  if (rc != KG_OK) {
    if (v || strncmp(err, "fuzz: invalid JSON at byte ", 27)) abort();
    return 0;
  }
  if (!tape_ok) abort(); /* the tree is built from the tape */
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
