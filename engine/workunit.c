/* workunit.c: work units, one partition's share of a run, and their JSON form. */
#include "workunit.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"

void kg_workunit_clear(kg_workunit_t *wu) {
  free(wu->topic);
  wu->topic = NULL;
}

void kg_workunit_json(kg_buf_t *out, const kg_workunit_t *wu, bool exact) {
  kg_buf_append(out, "{\"topic\":", 9);
  kg_json_string(out, wu->topic);
  kg_buf_appendf(out,
                 ",\"partition\":%d,\"low\":%lld,\"high\":%lld,\"range\":%lld,\"earliest\":%lld,\"latest\":%lld,"
                 "\"stored\":",
                 wu->partition, (long long)wu->low, (long long)wu->high, (long long)(wu->high - wu->low),
                 (long long)wu->earliest, (long long)wu->latest);
  if (wu->has_stored)
    kg_buf_appendf(out, "%lld", (long long)wu->stored);
  else
    kg_buf_append(out, "null", 4);
  kg_buf_appendf(out, ",\"start\":\"%s\",\"estimatedSize\":", kg_start_reason_name(wu->reason));
  if (exact)
    kg_json_double(out, wu->est_size);
  else
    kg_buf_appendf(out, "%.6g", wu->est_size);
  kg_buf_append(out, "}", 1);
}

int kg_workunit_from_json(const kg_json_t *v, const char *what, kg_workunit_t *wu, char *errbuf) {
  memset(wu, 0, sizeof *wu);
  const char *topic = NULL, *start = NULL;
  int64_t partition = 0;
  int rc = kg_json_get_string(v, "topic", what, &topic, errbuf);
  if (!rc) rc = kg_json_get_int(v, "partition", what, &partition, errbuf);
  if (!rc && (partition < 0 || partition > INT32_MAX))
    rc = kg_fail(errbuf, KG_EINVAL, "%s: \"partition\" must be a partition number", what);
  if (!rc) rc = kg_json_get_int(v, "low", what, &wu->low, errbuf);
  if (!rc) rc = kg_json_get_int(v, "high", what, &wu->high, errbuf);
  if (!rc) rc = kg_json_get_int(v, "earliest", what, &wu->earliest, errbuf);
  if (!rc) rc = kg_json_get_int(v, "latest", what, &wu->latest, errbuf);
  if (!rc) rc = kg_json_get_int_or_null(v, "stored", what, &wu->has_stored, &wu->stored, errbuf);
  if (!rc) rc = kg_json_get_string(v, "start", what, &start, errbuf);
  if (!rc && !kg_start_reason_parse(start, &wu->reason))
    rc = kg_fail(errbuf, KG_EINVAL, "%s: unknown \"start\" '%s'", what, start);
  if (!rc) rc = kg_json_get_double(v, "estimatedSize", what, &wu->est_size, errbuf);
  if (rc) {
    memset(wu, 0, sizeof *wu);
    return rc;
  }
  wu->topic = kg_xstrdup(topic);
  wu->partition = (int32_t)partition;
  return KG_OK;
}
