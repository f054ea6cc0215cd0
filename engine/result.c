/* result.c: the JSON form of task results (result.h). Every number is written so that it reads back exactly. */
#include "result.h"

#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kg_unit_result_json(kg_buf_t *out, const kg_workunit_t *wu, const kg_unit_result_t *r) {
  kg_buf_append(out, "{\"topic\":", 9);
  kg_json_string(out, wu->topic);
  kg_buf_appendf(out,
                 ",\"partition\":%d,\"actualHigh\":%lld,\"records\":%lld,\"bytes\":%lld,\"elapsedMs\":%lld,"
                 "\"decodeErrors\":%lld,\"skipped\":%lld,\"quarantined\":%lld,\"deletedBeforeRead\":%lld,"
                 "\"tombstones\":%lld,\"written\":%lld,\"fetchFailed\":%s,\"prematureStop\":%s,\"stopped\":%s,"
                 "\"stopReason\":",
                 wu->partition, (long long)r->actual_high, (long long)r->records, (long long)r->bytes,
                 (long long)r->elapsed_ms, (long long)r->decode_errors, (long long)r->skipped,
                 (long long)r->quarantined, (long long)r->deleted, (long long)r->tombstones, (long long)r->written,
                 r->fetch_failed ? "true" : "false", r->premature_stop ? "true" : "false",
                 r->stopped ? "true" : "false");
  kg_json_string(out, r->stop_reason);
  kg_buf_append(out, ",\"fetchError\":", 14);
  kg_json_string(out, r->fetch_error);
  if (r->last.set)
    kg_buf_appendf(out, ",\"last\":{\"offset\":%lld,\"timestamp\":%lld,\"hash\":%lld}}", (long long)r->last.offset,
                   (long long)r->last.timestamp, (long long)r->last.hash);
  else
    kg_buf_append(out, ",\"last\":null}", 13);
}

int kg_unit_result_from_json(const kg_json_t *v, const kg_workunit_t *wu, const char *what, kg_unit_result_t *r,
                             char *errbuf) {
  memset(r, 0, sizeof *r);
  const char *topic = NULL, *reason = NULL, *fetch_error = NULL;
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
  if (!rc) rc = kg_json_get_int(v, "tombstones", what, &r->tombstones, errbuf);
  if (!rc) rc = kg_json_get_int(v, "written", what, &r->written, errbuf);
  if (!rc) rc = kg_json_get_bool(v, "fetchFailed", what, &r->fetch_failed, errbuf);
  if (!rc) rc = kg_json_get_bool(v, "prematureStop", what, &r->premature_stop, errbuf);
  if (!rc) rc = kg_json_get_bool(v, "stopped", what, &r->stopped, errbuf);
  if (!rc) rc = kg_json_get_string(v, "stopReason", what, &reason, errbuf);
  if (!rc) snprintf(r->stop_reason, sizeof r->stop_reason, "%s", reason);
  if (!rc) rc = kg_json_get_string(v, "fetchError", what, &fetch_error, errbuf);
  if (!rc) snprintf(r->fetch_error, sizeof r->fetch_error, "%s", fetch_error);
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

void kg_task_result_json(kg_buf_t *out, const kg_task_t *t) {
  const kg_task_result_t *r = &t->result;
  kg_buf_append(out, "{\"task\":", 8);
  kg_json_string(out, t->spec.task_id);
  kg_buf_appendf(out, ",\"succeeded\":%s,\"rc\":%d,\"error\":", r->succeeded ? "true" : "false", r->rc);
  kg_json_string(out, r->error);
  kg_buf_append(out, ",\"firstError\":", 14);
  kg_json_string(out, r->first_error);
  kg_buf_appendf(out, ",\"elapsedMs\":%lld,\"units\":[", (long long)r->elapsed_ms);
  for (size_t u = 0; r->units && u < t->spec.nunits; u++) {
    if (u) kg_buf_append(out, ",", 1);
    kg_unit_result_json(out, t->spec.units[u], &r->units[u]);
  }
  kg_buf_append(out, "],\"files\":[", 11);
  for (size_t f = 0; f < r->nfiles; f++) {
    kg_buf_append(out, f ? ",{\"filePath\":" : "{\"filePath\":", f ? 13 : 12);
    kg_json_string(out, r->files[f].file_path);
    kg_buf_append(out, ",\"output\":", 10);
    kg_json_string(out, r->files[f].output);
    kg_buf_append(out, ",\"final\":", 9);
    kg_json_string(out, r->files[f].final);
    kg_buf_append(out, "}", 1);
  }
  kg_buf_append(out, "],\"metrics\":", 12);
  kg_metrics_json_exact(&r->metrics, out);
  kg_buf_append(out, "}", 1);
}

/* Frees what kg_task_result_from_json had read into R. */
static void clear_result(kg_task_result_t *r) {
  free(r->units);
  for (size_t i = 0; i < r->nfiles; i++) {
    free(r->files[i].file_path);
    free(r->files[i].output);
    free(r->files[i].final);
  }
  free(r->files);
  kg_metrics_free(&r->metrics);
  memset(r, 0, sizeof *r);
}

int kg_task_result_from_json(const kg_json_t *v, kg_task_t *t, const char *what, char *errbuf) {
  kg_task_result_t *r = &t->result;
  memset(r, 0, sizeof *r);
  const char *id = NULL, *error = NULL, *first = NULL;
  int64_t rc = 0;
  int err = kg_json_get_string(v, "task", what, &id, errbuf);
  if (!err && strcmp(id, t->spec.task_id))
    err = kg_fail(errbuf, KG_EINVAL, "%s: the result of task %s where %s was expected", what, id, t->spec.task_id);
  if (!err) err = kg_json_get_bool(v, "succeeded", what, &r->succeeded, errbuf);
  if (!err) err = kg_json_get_int(v, "rc", what, &rc, errbuf);
  if (!err) err = kg_json_get_string(v, "error", what, &error, errbuf);
  if (!err) err = kg_json_get_string(v, "firstError", what, &first, errbuf);
  if (!err) err = kg_json_get_int(v, "elapsedMs", what, &r->elapsed_ms, errbuf);
  if (!err) {
    r->rc = (int)rc;
    snprintf(r->error, sizeof r->error, "%s", error);
    snprintf(r->first_error, sizeof r->first_error, "%s", first);
  }
  const kg_json_t *units = kg_json_get(v, "units");
  if (!err && (!units || units->type != KG_JSON_ARRAY || units->count != t->spec.nunits))
    err = kg_fail(errbuf, KG_EINVAL, "%s: \"units\" must be an array of the %zu results of the task's work units", what,
                  t->spec.nunits);
  if (!err) r->units = kg_xcalloc(t->spec.nunits ? t->spec.nunits : 1, sizeof(kg_unit_result_t));
  for (size_t u = 0; !err && u < t->spec.nunits; u++)
    err = kg_unit_result_from_json(&units->items[u], t->spec.units[u], what, &r->units[u], errbuf);
  const kg_json_t *files = kg_json_get(v, "files");
  if (!err && (!files || files->type != KG_JSON_ARRAY))
    err = kg_fail(errbuf, KG_EINVAL, "%s: \"files\" must be an array", what);
  for (size_t f = 0; !err && f < files->count; f++) {
    const char *fp = NULL, *output = NULL, *final = NULL;
    err = kg_json_get_string(&files->items[f], "filePath", what, &fp, errbuf);
    if (!err) err = kg_json_get_string(&files->items[f], "output", what, &output, errbuf);
    if (!err) err = kg_json_get_string(&files->items[f], "final", what, &final, errbuf);
    if (err) break;
    r->files = kg_xrealloc(r->files, (r->nfiles + 1) * sizeof(kg_task_file_t));
    r->files[r->nfiles++] = (kg_task_file_t){kg_xstrdup(fp), kg_xstrdup(output), kg_xstrdup(final)};
  }
  if (!err) err = kg_metrics_from_json(&r->metrics, kg_json_get(v, "metrics"), what, errbuf);
  if (err) clear_result(r);
  return err;
}
