/* result.c: the JSON form of task results (result.h). Every number is written so that it reads back exactly. */
#include "result.h"

#include <stdio.h>
#include <string.h>

void kg_unit_result_json(kg_buf_t *out, const kg_workunit_t *wu, const kg_unit_result_t *r) {
  kg_buf_append(out, "{\"topic\":", 9);
  kg_json_string(out, wu->topic);
  kg_buf_appendf(out,
                 ",\"partition\":%d,\"actualHigh\":%lld,\"records\":%lld,\"bytes\":%lld,\"elapsedMs\":%lld,"
                 "\"decodeErrors\":%lld,\"skipped\":%lld,\"quarantined\":%lld,\"deletedBeforeRead\":%lld,"
                 "\"fetchFailed\":%s,\"prematureStop\":%s,\"stopped\":%s,\"stopReason\":",
                 wu->partition, (long long)r->actual_high, (long long)r->records, (long long)r->bytes,
                 (long long)r->elapsed_ms, (long long)r->decode_errors, (long long)r->skipped,
                 (long long)r->quarantined, (long long)r->deleted, r->fetch_failed ? "true" : "false",
                 r->premature_stop ? "true" : "false", r->stopped ? "true" : "false");
  kg_json_string(out, r->stop_reason);
  if (r->last.set)
    kg_buf_appendf(out, ",\"last\":{\"offset\":%lld,\"timestamp\":%lld,\"hash\":%lld}}", (long long)r->last.offset,
                   (long long)r->last.timestamp, (long long)r->last.hash);
  else
    kg_buf_append(out, ",\"last\":null}", 13);
}

int kg_unit_result_from_json(const kg_json_t *v, const kg_workunit_t *wu, const char *what, kg_unit_result_t *r,
                             char *errbuf) {
  memset(r, 0, sizeof *r);
  const char *topic = NULL, *reason = NULL;
  int64_t partition = -1;
  int rc = kg_json_get_string(v, "topic", what, &topic, errbuf);
  if (!rc) rc = kg_json_get_int(v, "partition", what, &partition, errbuf);
  if (!rc && (strcmp(topic, wu->topic) || partition != wu->partition))
    rc = kg_fail(errbuf, KG_EINVAL, "%s: the result of %s:%lld where %s:%d was expected", what, topic,
                 (long long)partition, wu->topic, wu->partition);
  if (!rc) rc = kg_json_get_int(v, "actualHigh", what, &r->actual_high, errbuf);
  if (!rc) rc = kg_json_get_int(v, "records", what, &r->records, errbuf);
  if (!rc) rc = kg_json_get_int(v, "bytes", what, &r->bytes, errbuf);
  if (!rc) rc = kg_json_get_int(v, "elapsedMs", what, &r->elapsed_ms, errbuf);
  if (!rc) rc = kg_json_get_int(v, "decodeErrors", what, &r->decode_errors, errbuf);
  if (!rc) rc = kg_json_get_int(v, "skipped", what, &r->skipped, errbuf);
  if (!rc) rc = kg_json_get_int(v, "quarantined", what, &r->quarantined, errbuf);
  if (!rc) rc = kg_json_get_int(v, "deletedBeforeRead", what, &r->deleted, errbuf);
  if (!rc) rc = kg_json_get_bool(v, "fetchFailed", what, &r->fetch_failed, errbuf);
  if (!rc) rc = kg_json_get_bool(v, "prematureStop", what, &r->premature_stop, errbuf);
  if (!rc) rc = kg_json_get_bool(v, "stopped", what, &r->stopped, errbuf);
  if (!rc) rc = kg_json_get_string(v, "stopReason", what, &reason, errbuf);
  if (!rc) snprintf(r->stop_reason, sizeof r->stop_reason, "%s", reason);
  const kg_json_t *last = kg_json_get(v, "last");
  if (!rc && !last) rc = kg_fail(errbuf, KG_EINVAL, "%s: \"last\" must be null or an object", what);
  if (!rc && last->type != KG_JSON_NULL) {
    r->last.set = true;
    rc = kg_json_get_int(last, "offset", what, &r->last.offset, errbuf);
    if (!rc) rc = kg_json_get_int(last, "timestamp", what, &r->last.timestamp, errbuf);
    if (!rc) rc = kg_json_get_int(last, "hash", what, &r->last.hash, errbuf);
  }
  if (rc) memset(r, 0, sizeof *r);
  return rc;
}
