/* config.c: reading a job's properties into a validated kg_config_t, with the rows of every section.
 *
 * The rows are the union of the sections' tables (config.h), in the order config_sections.c gives: kg_config_new
 * reads them in that order with one loop (read_property), each parsed by its type and stored by its offset in its
 * section's options, or handed to its setter, which the section's own file defines next to its rows. The checks
 * that span every key (unknown and misspelt keys, job.strict, the MapReduce-only namespaces) run first, on the
 * union. `kingest properties` prints the same rows, so the documented defaults are the ones the code uses.
 *
 * Adding a property: a row in its section's table, where its check belongs in the order, a field in that
 * section's options when a backend reads the value (KG_FIELD_OF), and docs/properties.md's table written again
 * from `kingest properties --markdown` by scripts/gen-properties (docs_spec checks they agree; test_props checks
 * the row). A doc's links name a heading of the manual (`[Avro](#avro)`); scripts/gen-properties points each at
 * the page of docs/ that has it. Adding a backend with its rows: docs/architecture.md, "Adding a backend". */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "parse.h"
#include "suggest.h"

const char *kg_config_origin(const kg_config_t *c, const char *key) {
  const char *o = key ? kg_props_origin(c->props, key) : NULL;
  return o ? o : "job";
}

/* ---- the union of the sections' rows ------------------------------------------------------------------------ */

#define KG_MAX_ROWS     512
#define KG_MAX_SECTIONS 64

/* Built once from kg_config_spans: every row in order, the section of each (an index in SECTIONS), and the
 * sections in the order their first rows come. */
static struct {
  const kg_property_t *rows[KG_MAX_ROWS];
  size_t row_section[KG_MAX_ROWS];
  size_t nrows;
  const kg_config_section_t *sections[KG_MAX_SECTIONS];
  size_t nsections;
} table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* The index of SECTION in table.sections, added when new. */
static size_t section_index(const kg_config_section_t *s) {
  for (size_t i = 0; i < table.nsections; i++)
    if (table.sections[i] == s) return i;
  if (table.nsections == KG_MAX_SECTIONS) {
    fprintf(stderr, "kingest: more than %d property sections\n", KG_MAX_SECTIONS);
    abort();
  }
  table.sections[table.nsections] = s;
  return table.nsections++;
}

/* Appends rows FROM to TO (excluded) of section S. */
static void take_rows(const kg_config_section_t *s, size_t from, size_t to) {
  size_t index = section_index(s);
  for (size_t r = from; r < to; r++) {
    if (table.nrows == KG_MAX_ROWS) {
      fprintf(stderr, "kingest: more than %d property rows\n", KG_MAX_ROWS);
      abort();
    }
    table.row_section[table.nrows] = index;
    table.rows[table.nrows++] = &s->rows[r];
  }
}

/* Whether an entry of kg_config_spans names S. */
static bool named(const kg_config_section_t *s) {
  for (size_t i = 0; i < kg_config_nspans; i++)
    if (kg_config_spans[i].section == s) return true;
  return false;
}

/* Follows kg_config_spans. A span whose THROUGH row is not in its section, or a named section whose rows are not
 * all taken, is a mistake in the tables: test_props finds it, and a build with one aborts at its first use. */
static void build_table(void) {
  size_t taken[KG_MAX_SECTIONS] = {0}; /* per index in table.sections: rows taken so far */
  for (size_t i = 0; i < kg_config_nspans; i++) {
    const kg_config_span_t *span = &kg_config_spans[i];
    if (span->family) {
      for (size_t k = 0; span->family(k); k++) {
        const kg_config_section_t *s = span->family(k);
        bool seen = false;
        for (size_t j = 0; j < table.nsections && !seen; j++)
          seen = table.sections[j] == s;
        if (!seen && !named(s)) take_rows(s, 0, s->nrows);
      }
      continue;
    }
    const kg_config_section_t *s = span->section;
    size_t index = section_index(s), from = taken[index], to = s->nrows;
    if (span->through) {
      for (to = from; to < s->nrows && strcmp(s->rows[to].name, span->through); to++)
        ;
      if (to == s->nrows) {
        fprintf(stderr, "kingest: no row %s in section %s after row %zu\n", span->through, s->name, from);
        abort();
      }
      to++;
    }
    take_rows(s, from, to);
    taken[index] = to;
  }
  for (size_t i = 0; i < table.nsections; i++)
    if (named(table.sections[i]) && taken[i] != table.sections[i]->nrows) {
      fprintf(stderr, "kingest: rows of section %s are not all in kg_config_spans\n", table.sections[i]->name);
      abort();
    }
}

static void load_table(void) { pthread_once(&table_once, build_table); }

const kg_property_t *const *kg_config_properties(size_t *count) {
  load_table();
  *count = table.nrows;
  return table.rows;
}

/* The index in table.rows of the row of NAME (see kg_config_property), or -1. */
static ptrdiff_t row_of(const char *name) {
  load_table();
  for (size_t i = 0; i < table.nrows; i++) {
    const kg_property_t *p = table.rows[i];
    size_t len = strlen(p->name);
    if (len > 2 && !strcmp(p->name + len - 2, ".*")) {
      if (!strncmp(name, p->name, len - 1)) return (ptrdiff_t)i;
    } else if (!strcmp(name, p->name) || (p->alias && !strcmp(name, p->alias))) {
      return (ptrdiff_t)i;
    }
  }
  return -1;
}

const kg_property_t *kg_config_property(const char *name) {
  ptrdiff_t i = row_of(name);
  return i < 0 ? NULL : table.rows[i];
}

const kg_config_section_t *kg_config_section_of(const kg_property_t *p) {
  load_table();
  for (size_t i = 0; i < table.nrows; i++)
    if (table.rows[i] == p) return table.sections[table.row_section[i]];
  return NULL;
}

/* The options of section index I in C: C itself for the job's own section. */
static void *options_at(kg_config_t *c, size_t i) {
  return table.sections[i] == &kg_config_job_section ? (void *)c : c->options ? c->options[i] : NULL;
}

const void *kg_config_options(const kg_config_t *c, const kg_config_section_t *section) {
  if (section == &kg_config_job_section) return c;
  load_table();
  for (size_t i = 0; i < table.nsections; i++)
    if (table.sections[i] == section) return c->options ? c->options[i] : NULL;
  return NULL;
}

/* ---- parsing one value ------------------------------------------------------------------------------------- */

/* Reads a string of at most SIZE - 1 bytes into BUF with the blanks around it removed. */
static char *trimmed(const char *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", value);
  return kg_strtrim(buf);
}

const char *kg_config_class_name(const char *value, char *buf, size_t size) {
  const char *cls = trimmed(value, buf, size);
  const char *dot = strrchr(cls, '.');
  return dot ? dot + 1 : cls;
}

char *kg_config_absolute(const char *path) {
  if (path[0] == '/') return kg_xstrdup(path);
  if (!strncmp(path, "file://", 7)) return kg_config_absolute(path + 7);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return kg_xstrdup(path);
  return kg_xasprintf("%s/%s", cwd, path);
}

/* The namespaces of MapReduce and Hadoop properties, which change nothing in a standalone run. */
static bool is_mapreduce_name(const char *name) {
  return !strncmp(name, "mapreduce.", 10) || !strncmp(name, "mapred.", 7) || !strncmp(name, "mr.", 3);
}

int kg_config_parse_enum(const char *property, const char *origin, const char *value, const char *const *allowed,
                         char *errbuf) {
  for (int i = 0; allowed[i]; i++)
    if (!strcasecmp(value, allowed[i])) return i;
  char list[256] = "";
  for (int i = 0; allowed[i]; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, allowed[i], sizeof list - strlen(list) - 1);
  }
  kg_fail(errbuf, KG_EINVAL, "%s%sinvalid value '%s' for property %s: allowed values are %s", origin ? origin : "",
          origin ? ": " : "", value, property, list);
  return -1;
}

int kg_property_parse(const kg_property_t *p, const char *key, const char *origin, const char *value,
                      const char *work_dir, kg_property_value_t *out, char *errbuf) {
  char tmp[512];
  char *end;
  memset(out, 0, sizeof *out);
  switch (p->type) {
  case KG_PROP_STRING: out->s = kg_xstrdup(value); return KG_OK;
  case KG_PROP_PATH:
    if (work_dir && !strncmp(value, "<work dir>", 10))
      out->s = kg_xasprintf("%s%s", work_dir, value + 10);
    else
      out->s = kg_config_absolute(value);
    return KG_OK;
  case KG_PROP_BOOL:
    if (!kg_parse_bool(trimmed(value, tmp, 64), &out->b))
      return kg_fail(errbuf, KG_EINVAL, "%s: invalid value '%s' for property %s: allowed values are true, false",
                     origin, value, key);
    return KG_OK;
  case KG_PROP_INT:
    if (!kg_parse_int64(trimmed(value, tmp, 64), &out->i) || out->i < p->min || out->i > p->max)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: invalid value '%s' for property %s: expected a whole number from %lld to %lld", origin, value,
                     key, (long long)p->min, (long long)p->max);
    return KG_OK;
  case KG_PROP_DOUBLE:
    out->d = strtod(value, &end);
    while (*end == ' ' || *end == '\t')
      end++;
    if (end == value || *end || !(out->d >= p->dmin && out->d <= p->dmax))
      return kg_fail(errbuf, KG_EINVAL, "%s: invalid value '%s' for property %s: expected a number from %g to %g",
                     origin, value, key, p->dmin, p->dmax);
    return KG_OK;
  case KG_PROP_ENUM:
    out->e = kg_config_parse_enum(key, origin, trimmed(value, tmp, 256), p->names, errbuf);
    return out->e < 0 ? KG_EINVAL : KG_OK;
  case KG_PROP_CLASS: {
    const char *name = kg_config_class_name(value, tmp, sizeof tmp);
    for (int i = 0; p->names[i]; i++)
      if (!strcmp(name, p->names[i])) {
        out->e = i;
        return KG_OK;
      }
    char list[256] = "";
    for (int i = 0; p->names[i]; i++) {
      strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
      strncat(list, p->names[i], sizeof list - strlen(list) - 1);
    }
    return kg_fail(errbuf, KG_EINVAL, "%s: unknown class '%s' for property %s: kingest provides %s", origin, value, key,
                   list);
  }
  }
  return kg_fail(errbuf, KG_EINVAL, "%s: property %s has no type", origin, key);
}

/* Stores V in the field of P in OPTIONS (a string without a field is freed). */
static void store(void *options, const kg_property_t *p, kg_property_value_t *v) {
  char *field = (char *)options + p->offset;
  int n;
  switch (p->type) {
  case KG_PROP_STRING:
  case KG_PROP_PATH:
    if (p->size == sizeof v->s)
      memcpy(field, &v->s, sizeof v->s);
    else
      free(v->s);
    break;
  case KG_PROP_BOOL:
    if (p->size == sizeof v->b) memcpy(field, &v->b, sizeof v->b);
    break;
  case KG_PROP_INT:
    n = (int)v->i; /* an int field's row has bounds within an int */
    if (p->size == sizeof n) memcpy(field, &n, sizeof n);
    if (p->size == sizeof v->i) memcpy(field, &v->i, sizeof v->i);
    break;
  case KG_PROP_DOUBLE:
    if (p->size == sizeof v->d) memcpy(field, &v->d, sizeof v->d);
    break;
  case KG_PROP_ENUM: /* an int, or an enum type of its size */
    if (p->size == sizeof v->e) memcpy(field, &v->e, sizeof v->e);
    break;
  case KG_PROP_CLASS: break;
  }
}

/* A property with two accepted names (the seed's dotted one and Gobblin's newer camel-case one): the
 * name in use, or NULL. Both set to different values is an error. */
int kg_config_given(const kg_config_t *c, const kg_property_t *row, const char **out, char *errbuf) {
  const char *a = row->name, *b = row->alias;
  const char *va = kg_props_get(c->props, a), *vb = b ? kg_props_get(c->props, b) : NULL;
  *out = va ? a : vb ? b : NULL;
  if (va && vb && strcmp(va, vb))
    return kg_fail(errbuf, KG_EINVAL, "%s: properties %s=%s and %s=%s disagree; set one of them",
                   kg_config_origin(c, b), a, va, b, vb);
  return KG_OK;
}

/* Reads row P of section index S into C: the job's value (by either name) or the default, parsed by the row's
 * type, then stored in its field or handed to its setter. */
static int read_property(kg_config_t *c, const kg_property_t *p, size_t s, char *errbuf) {
  if (p->mode == KG_MODE_MAPREDUCE || p->part_of) return KG_OK;
  void *options = options_at(c, s);
  const char *key = NULL;
  int rc = kg_config_given(c, p, &key, errbuf);
  if (rc) return rc;
  const char *value = key ? kg_props_get(c->props, key) : NULL;
  if (p->required && (!value || !*value))
    return kg_fail(errbuf, KG_EINVAL, "%s: missing required property %s (%s)", c->job_file, p->name, p->required);
  if (value && !*value && p->empty_is_default) key = value = NULL;
  char *computed = NULL;
  if (!value) value = p->def ? p->def : p->computed ? (computed = p->computed(c, options)) : NULL;
  if (!value) return KG_OK; /* not given, no default */
  kg_property_value_t v;
  rc = kg_property_parse(p, key ? key : p->name, kg_config_origin(c, key ? key : p->name), value,
                         key ? NULL : c->work_dir, &v, errbuf);
  free(computed);
  if (rc) return rc;
  if (p->set) return p->set(c, options, p, key, &v, errbuf);
  store(options, p, &v);
  return KG_OK;
}

char *kg_config_default_path(const char *name, const char *work_dir) {
  const kg_property_t *p = kg_config_property(name);
  if (!p || p->type != KG_PROP_PATH || !p->def || strncmp(p->def, "<work dir>", 10)) return NULL;
  kg_property_value_t v;
  char errbuf[KG_ERRLEN];
  return kg_property_parse(p, p->name, "default", p->def, work_dir, &v, errbuf) ? NULL : v.s;
}

/* ---- the keys the rows do not read --------------------------------------------------------------------------- */

/* Gobblin properties kingest does not read. The first row that matches a key decides: a row with a VALUE
 * matches that value only (compared case-insensitively), a row without matches any. A row without INSTEAD is
 * harmless to ignore: it changes nothing in a standalone run's output or its meaning. A row with INSTEAD would
 * change the output or the meaning of a Gobblin run; INSTEAD says what kingest does instead, in a WARN (an
 * error with job.strict). Any other unknown key gets a generic WARN. */
#define KG_METRICS_INSTEAD                                                                                             \
  "metrics go to the metrics file (metrics.reporting.file.enabled) and to Prometheus "                                 \
  "(metrics.reporting.prometheus.file, metrics.reporting.prometheus.pushgateway.url)"
static const struct {
  const char *name;
  const char *value;   /* NULL: any value */
  const char *instead; /* NULL: harmless */
} gobblin_ignored[] = {
    /* Harmless: Gobblin's own machinery, or a value that asks for what kingest does anyway. */
    {"job.runonce", "true", NULL},
    {"job.disabled", "false", NULL},
    {"job.commit.parallelize", NULL, NULL},
    {"gobblin.kafka.consumerClient.class", NULL, NULL},
    {"task.status.reportintervalinms", NULL, NULL},
    {"metrics.reporting.jmx.enabled", "false", NULL},
    {"metrics.reporting.kafka.enabled", "false", NULL},
    {"metrics.reporting.graphite.enabled", "false", NULL},
    {"metrics.reporting.influxdb.enabled", "false", NULL},
    {"job.history.store.enabled", "false", NULL},
    {"data.publisher.replace.final.dir", "false", NULL},
    {"extract.table.type", "append_only", NULL},
    /* Not implemented: the run's output or meaning differs from Gobblin's. */
    {"job.schedule", NULL, "kingest runs the job once per `kingest run`; schedule that with cron or a systemd timer"},
    {"job.runonce", NULL, "kingest runs the job once per `kingest run`; schedule that with cron or a systemd timer"},
    {"job.disabled", NULL, "kingest runs the job whenever `kingest run` starts it"},
    {"writer.staging.dir", NULL, "staging files go under task.data.root.dir"},
    {"writer.output.dir", NULL, "task output goes under task.data.root.dir"},
    {"converter.classes", NULL,
     "records are written as the source gives them; converters are Lua functions (converters in a job.lua)"},
    {"fork.branches", NULL, "every record goes to one branch: one writer, one output"},
    {"fork.operator.class", NULL, "every record goes to one branch: one writer, one output"},
    {"qualitychecker.task.policies", NULL, "no quality check is made: every task's output is published"},
    {"qualitychecker.task.policy.types", NULL, "no quality check is made: every task's output is published"},
    {"qualitychecker.row.policies", NULL, "no quality check is made: every record is written"},
    {"qualitychecker.row.policy.types", NULL, "no quality check is made: every record is written"},
    {"data.publisher.replace.final.dir", NULL, "published files are added to the final folder; nothing is replaced"},
    {"extract.table.type", NULL, "the table type is APPEND_ONLY (writer.file.path.type=default ends in _append)"},
    {"metrics.reporting.jmx.enabled", NULL, KG_METRICS_INSTEAD},
    {"metrics.reporting.kafka.enabled", NULL, KG_METRICS_INSTEAD},
    {"metrics.reporting.graphite.enabled", NULL, KG_METRICS_INSTEAD},
    {"metrics.reporting.influxdb.enabled", NULL, KG_METRICS_INSTEAD},
    {"job.history.store.enabled", NULL, "the run history is kept in the job's state database (kingest state history)"},
};

/* The row of gobblin_ignored for KEY=VALUE, or -1. */
static int ignored_row(const char *key, const char *value) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s", value ? value : "");
  const char *v = kg_strtrim(tmp);
  for (size_t i = 0; i < sizeof gobblin_ignored / sizeof gobblin_ignored[0]; i++)
    if (!strcmp(key, gobblin_ignored[i].name) &&
        (!gobblin_ignored[i].value || !strcasecmp(v, gobblin_ignored[i].value)))
      return (int)i;
  return -1;
}

/* A row of the union (by name or alias) within two edits of NAME (a likely typo), or NULL; with STANDALONE_ONLY,
 * only those a standalone run reads. One that differs only in case is the likeliest. */
static const char *nearest_property(const char *name, bool standalone_only) {
  const char *best = NULL;
  size_t best_d = 3;
  load_table();
  for (size_t i = 0; i < table.nrows; i++) {
    const kg_property_t *p = table.rows[i];
    if (strchr(p->name, '*') || (standalone_only && p->mode == KG_MODE_MAPREDUCE)) continue;
    for (int k = 0; k < 2; k++) {
      const char *candidate = k ? p->alias : p->name;
      if (!candidate) continue;
      if (!strcasecmp(name, candidate)) return candidate;
      size_t d = kg_edit_distance(name, candidate, 2);
      if (d < best_d) {
        best_d = d;
        best = candidate;
      }
    }
  }
  return best;
}

/* A row of gobblin_ignored within two edits of NAME (and not NAME itself), or NULL. */
static const char *nearest_ignored(const char *name) {
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < sizeof gobblin_ignored / sizeof gobblin_ignored[0]; i++) {
    size_t d = kg_edit_distance(name, gobblin_ignored[i].name, 2);
    if (d > 0 && d < best_d) {
      best_d = d;
      best = gobblin_ignored[i].name;
    }
  }
  return best;
}

/* NAME with its leading components within two edits of the prefix of a ".*" row, as many components as the prefix
 * has (kafka.consumr.fetch.wait.max.ms for kafka.consumer.*): the name meant, as a new string, or NULL. */
static char *near_wildcard_key(const char *name) {
  load_table();
  for (size_t i = 0; i < table.nrows; i++) {
    const char *row = table.rows[i]->name;
    size_t len = strlen(row);
    if (len <= 2 || strcmp(row + len - 2, ".*")) continue;
    len -= 2; /* the prefix, without ".*" */
    const char *rest = strchr(name, '.');
    for (size_t k = 0; k < len && rest; k++) /* the dot after as many components as the prefix has */
      if (row[k] == '.') rest = strchr(rest + 1, '.');
    if (!rest || !rest[1] || (size_t)(rest - name) >= 64 || (!strncmp(name, row, len) && name[len] == '.')) continue;
    char head[64], prefix[64];
    snprintf(head, sizeof head, "%.*s", (int)(rest - name), name);
    snprintf(prefix, sizeof prefix, "%.*s", (int)len, row);
    if (kg_edit_distance(head, prefix, 2) <= 2) return kg_xasprintf("%s%s", prefix, rest);
  }
  return NULL;
}

/* The sections' options for C, zeroed. */
static void make_options(kg_config_t *c) {
  load_table();
  c->options = kg_xcalloc(table.nsections, sizeof *c->options);
  for (size_t i = 0; i < table.nsections; i++)
    if (table.sections[i] != &kg_config_job_section && table.sections[i]->size)
      c->options[i] = kg_xcalloc(1, table.sections[i]->size);
}

/* Frees what section S's OPTIONS hold: the strings of its rows' fields, then what its setters made. */
static void clear_options(const kg_config_section_t *s, void *options) {
  for (size_t r = 0; r < s->nrows; r++) {
    const kg_property_t *p = &s->rows[r];
    if ((p->type == KG_PROP_STRING || p->type == KG_PROP_PATH) && p->size == sizeof(char *)) {
      char *str;
      memcpy(&str, (char *)options + p->offset, sizeof str);
      free(str);
    }
  }
  if (s->clear) s->clear(options);
}

void kg_config_destroy(kg_config_t *c) {
  if (!c) return;
  for (size_t i = 0; c->options && i < table.nsections; i++) {
    void *options = options_at(c, i);
    if (options) clear_options(table.sections[i], options);
    if (options != c) free(options);
  }
  free(c->options);
  kg_props_destroy(c->props);
  free(c->job_file);
  free(c->work_dir);
  free(c);
}

/* Checks every key of C's properties that no row reads, and each key under a ".*" row with its setter. An error:
 * a key a ".*" row's setter refuses (a kafka.consumer.<name> that would change a librdkafka setting the engine
 * relies on); a near-miss of a property kingest reads (a typo: the run would go on with the default); with
 * job.strict=true, any key that would otherwise get a WARN. Otherwise logs one WARN per unknown or unimplemented
 * key, and one INFO line naming the MapReduce-only ones. */
static int check_keys(kg_config_t *c, char *errbuf) {
  const kg_props_t *p = c->props;
  const kg_property_t *strict_row = kg_config_property("job.strict");
  const char *strict_value = kg_props_get(p, strict_row->name);
  kg_property_value_t strict;
  int rc = kg_property_parse(strict_row, strict_row->name, kg_config_origin(c, strict_row->name),
                             strict_value ? strict_value : strict_row->def, NULL, &strict, errbuf);
  if (rc) return rc;
  kg_buf_t mr = {0}, typos = {0}, warned = {0};
  size_t nwarned = 0;
  for (size_t i = 0; i < kg_props_count(p) && rc == KG_OK; i++) {
    const char *key = kg_props_key_at(p, i), *value = kg_props_value_at(p, i);
    const char *near = NULL;
    ptrdiff_t known = row_of(key);
    const kg_property_t *row = known >= 0 ? table.rows[known] : NULL;
    char *wildcard = NULL, *warning = NULL;
    int ignored;
    if (row && strchr(row->name, '*')) {
      kg_property_value_t v = {.s = kg_xstrdup(value)};
      if (row->set)
        rc = row->set(c, options_at(c, table.row_section[known]), row, key, &v, errbuf);
      else
        free(v.s);
    } else if (row) {
      if (row->mode == KG_MODE_MAPREDUCE) kg_buf_appendf(&mr, "%s%s", mr.len ? ", " : "", key);
    } else if ((ignored = ignored_row(key, value)) >= 0) {
      if (gobblin_ignored[ignored].instead)
        warning = kg_xasprintf("%s: %s=%s is not implemented: %s", kg_config_origin(c, key), key, value,
                               gobblin_ignored[ignored].instead);
    } else if ((near = nearest_property(key, is_mapreduce_name(key))) || (wildcard = near_wildcard_key(key))) {
      /* mr.job.max.maper would otherwise pass as MapReduce-only, and the run would use 100 tasks. */
      kg_buf_appendf(&typos, "%s%s: unknown property %s; did you mean %s?", typos.len ? "; " : "",
                     kg_config_origin(c, key), key, near ? near : wildcard);
    } else if (is_mapreduce_name(key)) {
      kg_buf_appendf(&mr, "%s%s", mr.len ? ", " : "", key);
    } else if ((near = nearest_ignored(key))) {
      warning = kg_xasprintf("%s: unknown property %s%s; did you mean %s?", kg_config_origin(c, key), key,
                             strict.b ? "" : " (ignored)", near);
    } else {
      warning = kg_xasprintf("%s: unknown property %s%s", kg_config_origin(c, key), key, strict.b ? "" : " (ignored)");
    }
    if (warning && strict.b) {
      KG_ERROR("%s", warning);
      kg_buf_appendf(&warned, "%s%s: %s", warned.len ? ", " : "", kg_config_origin(c, key), key);
      nwarned++;
    } else if (warning) {
      KG_WARN("%s", warning);
    }
    free(warning);
    free(wildcard);
  }
  if (rc == KG_OK && typos.len) rc = kg_fail(errbuf, KG_EINVAL, "%s", typos.data);
  if (rc == KG_OK && nwarned)
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: job.strict=true refuses %zu propert%s that kingest does not know or implement (each is "
                 "logged above): %s",
                 kg_config_origin(c, "job.strict"), nwarned, nwarned == 1 ? "y" : "ies", warned.data);
  const char *launcher = kg_props_get(p, "launcher.type");
  if (rc == KG_OK && mr.len && !(launcher && !strcasecmp(launcher, "MAPREDUCE")))
    KG_INFO("Ignoring properties that only apply in MapReduce mode: %s", mr.data);
  kg_buf_free(&mr);
  kg_buf_free(&typos);
  kg_buf_free(&warned);
  return rc;
}

int kg_config_new(kg_props_t *props, const char *job_file, bool job_is_lua, const char *work_dir, kg_config_t **out,
                  char *errbuf) {
  kg_config_t *c = kg_xcalloc(1, sizeof *c);
  c->props = props;
  c->job_file = kg_xstrdup(job_file);
  c->job_is_lua = job_is_lua;
  make_options(c);
  int rc = KG_OK;

  /* Keys first: a misspelt one would otherwise fail later as a missing property, or not at all. */
  if ((rc = check_keys(c, errbuf))) goto done;

  /* The job's identity (row 0, job.name), then the work dir that roots every default path, then the rest. */
  if ((rc = read_property(c, table.rows[0], table.row_section[0], errbuf))) goto done;
  const char *wd = work_dir && *work_dir ? work_dir : getenv("GOBBLIN_WORK_DIR");
  if (!wd || !*wd) {
    rc = kg_fail(errbuf, KG_EINVAL, "no work dir: set GOBBLIN_WORK_DIR or pass --work-dir");
    goto done;
  }
  c->work_dir = kg_config_absolute(wd);
  for (size_t i = 1; i < table.nrows && rc == KG_OK; i++)
    rc = read_property(c, table.rows[i], table.row_section[i], errbuf);

done:
  if (rc) {
    kg_config_destroy(c);
    c = NULL;
  }
  *out = c;
  return rc;
}

/* ---- printing ---------------------------------------------------------------------------------------------- */

/* Prints DOC without its Markdown: `code` as code, [text](#anchor) as text. */
static void print_plain(FILE *out, const char *doc) {
  for (const char *s = doc; *s; s++) {
    const char *close = *s == '[' ? strstr(s, "](") : NULL;
    const char *end = close ? strchr(close, ')') : NULL;
    if (end) {
      fprintf(out, "%.*s", (int)(close - s - 1), s + 1);
      s = end;
    } else if (*s != '`') {
      fputc(*s, out);
    }
  }
}

/* Prints a default value as text: control characters as C escapes (the delimiter's newline is \n). */
static void print_value(FILE *out, const char *value) {
  for (const char *s = value; *s; s++) {
    if (*s == '\n')
      fputs("\\n", out);
    else if (*s == '\t')
      fputs("\\t", out);
    else if ((unsigned char)*s < 32)
      fprintf(out, "\\x%02x", (unsigned char)*s);
    else
      fputc(*s, out);
  }
}

/* The bounds of a number row as a sentence, CODE quoting the numbers (Markdown) or not. */
static void print_range(FILE *out, const kg_property_t *p, const char *q) {
  if (p->type == KG_PROP_INT && p->max == INT64_MAX)
    fprintf(out, " At least %s%lld%s.", q, (long long)p->min, q);
  else if (p->type == KG_PROP_INT)
    fprintf(out, " From %s%lld%s to %s%lld%s.", q, (long long)p->min, q, q, (long long)p->max, q);
  else if (p->type == KG_PROP_DOUBLE && p->dmax > p->dmin)
    fprintf(out, " From %s%g%s to %s%g%s.", q, p->dmin, q, q, p->dmax, q);
}

/* A row's name as written in the docs: the keys under a ".*" row are kafka.consumer.<name>. */
static void print_name(FILE *out, const char *name, const char *q) {
  size_t len = strlen(name);
  if (len > 2 && !strcmp(name + len - 2, ".*"))
    fprintf(out, "%s%.*s.<name>%s", q, (int)(len - 2), name, q);
  else
    fprintf(out, "%s%s%s", q, name, q);
}

void kg_config_print_properties(FILE *out, bool markdown) {
  if (markdown) fputs("| Property | Default | Meaning |\n|---|---|---|\n", out);
  load_table();
  for (size_t i = 0; i < table.nrows; i++) {
    const kg_property_t *p = table.rows[i];
    const char *q = markdown ? "`" : "";
    if (markdown) {
      fputs("| ", out);
      print_name(out, p->name, q);
    } else {
      fputs(p->name, out);
    }
    if (p->alias) {
      fputs(" (also ", out);
      print_name(out, p->alias, q);
      fputs(")", out);
    }
    if (p->secret) fputs(" (secret)", out);
    if (markdown) {
      fputs(" |", out);
      if (p->required) {
        fputs(" required", out);
      } else if (p->def && !*p->def) {
        fputs(" empty", out);
      } else if (p->def) {
        fputs(" `", out);
        print_value(out, p->def);
        fputs("`", out);
      } else if (p->def_doc) {
        fprintf(out, " %s", p->def_doc);
      }
      fprintf(out, " | %s%s", p->mode == KG_MODE_MAPREDUCE ? "MapReduce only (a standalone run ignores it): " : "",
              p->doc);
      print_range(out, p, q);
      fputs(" |\n", out);
    } else {
      fprintf(out, "%s\n    ", p->mode == KG_MODE_MAPREDUCE ? " (MapReduce only)" : "");
      print_plain(out, p->doc);
      print_range(out, p, q);
      fputs("\n    default: ", out);
      if (p->def)
        print_value(out, p->def);
      else
        fputs(p->def_doc && !p->required ? p->def_doc : "(none)", out);
      fputs("\n", out);
    }
  }
}
