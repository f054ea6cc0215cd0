/* partition.c: time-partitioned output paths (partition.h). */
#include "partition.h"

#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* One piece of a pattern: literal text, or a field letter repeated COUNT times. */
typedef struct {
  char letter; /* 0 for literal text */
  int count;
  char *text; /* literal text, owned */
} piece_t;

/* From UNTIL (seconds since the epoch, UTC) the zone's offset is OFFSET seconds, up to the next entry. */
typedef struct {
  int64_t from;
  int32_t offset;
} span_t;

struct kg_partitioner {
  piece_t *pieces;
  size_t npieces;
  char *prefix, *suffix;
  span_t *spans; /* in order of FROM; the first from -infinity */
  size_t nspans;
};

static const char *const granularity_patterns[] = {"yyyy/MM/dd/HH/mm", "yyyy/MM/dd/HH", "yyyy/MM/dd", "yyyy/MM",
                                                   "yyyy"};
const char *kg_granularity_pattern(kg_granularity_t g) { return granularity_patterns[g]; }

#define FIELD_LETTERS "yMdHhkKmsSDEa"

void kg_partitioner_free(kg_partitioner_t *p) {
  if (!p) return;
  for (size_t i = 0; i < p->npieces; i++)
    free(p->pieces[i].text);
  free(p->pieces);
  free(p->prefix);
  free(p->suffix);
  free(p->spans);
  free(p);
}

static void add_piece(kg_partitioner_t *p, char letter, int count, char *text) {
  p->pieces = kg_xrealloc(p->pieces, (p->npieces + 1) * sizeof *p->pieces);
  p->pieces[p->npieces++] = (piece_t){letter, count, text};
}

/* Parses Joda's pattern syntax into P's pieces. */
static int parse_pattern(kg_partitioner_t *p, const char *pattern, char *errbuf) {
  kg_buf_t lit = {0};
  for (size_t i = 0; pattern[i];) {
    char ch = pattern[i];
    if (ch == '\'') { /* quoted text; '' is a quote */
      if (pattern[i + 1] == '\'') {
        kg_buf_append(&lit, "'", 1);
        i += 2;
        continue;
      }
      size_t j = i + 1;
      for (;;) {
        if (!pattern[j]) {
          kg_buf_free(&lit);
          return kg_fail(errbuf, KG_EINVAL, "pattern '%s': the quote at position %zu is not closed", pattern, i + 1);
        }
        if (pattern[j] == '\'' && pattern[j + 1] == '\'') {
          kg_buf_append(&lit, "'", 1);
          j += 2;
        } else if (pattern[j] == '\'') {
          break;
        } else {
          kg_buf_append(&lit, &pattern[j++], 1);
        }
      }
      i = j + 1;
      continue;
    }
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      if (!strchr(FIELD_LETTERS, ch)) {
        kg_buf_free(&lit);
        return kg_fail(
            errbuf, KG_EINVAL,
            "pattern '%s': unknown letter '%c' at position %zu (the letters are y M d H h k K m s S D E a, as "
            "in Joda-Time; put other text in single quotes)",
            pattern, ch, i + 1);
      }
      if (lit.len) {
        add_piece(p, 0, 0, kg_xstrndup(lit.data, lit.len));
        lit.len = 0;
      }
      int count = 0;
      while (pattern[i] == ch) {
        count++;
        i++;
      }
      add_piece(p, ch, count, NULL);
      continue;
    }
    kg_buf_append(&lit, &pattern[i++], 1);
  }
  if (lit.len) add_piece(p, 0, 0, kg_xstrndup(lit.data, lit.len));
  kg_buf_free(&lit);
  return KG_OK;
}

/* Whether TEXT would climb out of the output folder or start at the root: a ".." segment, or a leading '/'. */
static bool unsafe_path(const char *text) {
  if (text[0] == '/') return true;
  for (const char *s = text; (s = strstr(s, "..")); s += 2)
    if ((s == text || s[-1] == '/') && (s[2] == 0 || s[2] == '/')) return true;
  return false;
}

/* A fixed offset written "+HH:MM", "-HH:MM", "+HH" or "-HH", in *SECONDS. */
static bool fixed_offset(const char *zone, int32_t *seconds) {
  int h = 0, m = 0;
  char sign = zone[0], extra;
  if (sign != '+' && sign != '-') return false;
  int n = sscanf(zone + 1, "%2d:%2d%c", &h, &m, &extra);
  if (n < 1 || n > 2 || h > 23 || m > 59) return false;
  *seconds = (sign == '-' ? -1 : 1) * (h * 3600 + m * 60);
  return true;
}

/* The offset of ZONE at time T, as the C library computes it under TZ. */
static int32_t offset_at(time_t t) {
  struct tm tm;
  localtime_r(&t, &tm);
  return (int32_t)tm.tm_gmtoff;
}

/* Fills P's spans for zone NAME from the C library's reading of the zone database: each day from 1900 to 2200
 * is looked at, and a change of offset is found to the second by bisection. */
static int read_zone(kg_partitioner_t *p, const char *zone, char *errbuf) {
  int32_t fixed;
  p->spans = kg_xcalloc(1, sizeof *p->spans);
  p->nspans = 1;
  p->spans[0].from = INT64_MIN;
  if (!strcmp(zone, "UTC") || !strcmp(zone, "GMT") || !strcmp(zone, "Z")) return KG_OK;
  if (fixed_offset(zone, &fixed)) {
    p->spans[0].offset = fixed;
    return KG_OK;
  }
  const char *dir = getenv("TZDIR") ? getenv("TZDIR") : "/usr/share/zoneinfo";
  char path[1024];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, zone);
  if (!*zone || strstr(zone, "..") || zone[0] == '/' || stat(path, &st) || !S_ISREG(st.st_mode))
    return kg_fail(errbuf, KG_EINVAL,
                   "unknown time zone '%s' (not in %s): give an IANA name such as America/Los_Angeles or "
                   "Europe/Paris, UTC, or an offset such as +05:30",
                   zone, dir);
  char *saved = getenv("TZ") ? kg_xstrdup(getenv("TZ")) : NULL;
  char tz[1100];
  snprintf(tz, sizeof tz, ":%s", zone);
  setenv("TZ", tz, 1);
  tzset();
  const int64_t start = -2208988800LL, end = 7258118400LL; /* 1900-01-01 and 2200-01-01 */
  int32_t prev = offset_at((time_t)start);
  p->spans[0].offset = prev;
  for (int64_t t = start + 86400; t <= end; t += 86400) {
    int32_t off = offset_at((time_t)t);
    if (off == prev) continue;
    int64_t lo = t - 86400, hi = t; /* offset_at(lo) == prev, offset_at(hi) == off */
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (offset_at((time_t)mid) == prev)
        lo = mid;
      else
        hi = mid;
    }
    p->spans = kg_xrealloc(p->spans, (p->nspans + 1) * sizeof *p->spans);
    p->spans[p->nspans++] = (span_t){hi, off};
    prev = off;
  }
  if (saved) {
    setenv("TZ", saved, 1);
    free(saved);
  } else {
    unsetenv("TZ");
  }
  tzset();
  return KG_OK;
}

int kg_partitioner_new(const char *pattern, const char *zone, const char *prefix, const char *suffix,
                       kg_partitioner_t **out, char *errbuf) {
  *out = NULL;
  kg_partitioner_t *p = kg_xcalloc(1, sizeof *p);
  int rc = parse_pattern(p, pattern, errbuf);
  bool fields = false;
  for (size_t i = 0; i < p->npieces; i++) {
    if (p->pieces[i].letter) fields = true;
    if (!rc && !p->pieces[i].letter && unsafe_path(p->pieces[i].text) && i == 0)
      rc = kg_fail(errbuf, KG_EINVAL, "pattern '%s' starts at the root or climbs out of the output folder", pattern);
  }
  if (!rc && !fields)
    rc = kg_fail(errbuf, KG_EINVAL, "pattern '%s' has no time field: every record would go to one folder", pattern);
  if (!rc && strstr(pattern, ".."))
    rc = kg_fail(errbuf, KG_EINVAL, "pattern '%s' has '..': a folder may not climb out of the output folder", pattern);
  if (!rc && ((prefix && unsafe_path(prefix)) || (suffix && unsafe_path(suffix))))
    rc = kg_fail(errbuf, KG_EINVAL, "a partition prefix or suffix may not start with '/' or hold a '..' folder");
  if (!rc) rc = read_zone(p, zone, errbuf);
  if (rc) {
    kg_partitioner_free(p);
    return rc;
  }
  p->prefix = kg_xstrdup(prefix ? prefix : "");
  p->suffix = kg_xstrdup(suffix ? suffix : "");
  *out = p;
  return KG_OK;
}

static int32_t offset_of(const kg_partitioner_t *p, int64_t t) {
  size_t lo = 0, hi = p->nspans; /* the last span whose FROM <= t */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (p->spans[mid].from <= t)
      lo = mid;
    else
      hi = mid;
  }
  return p->spans[lo].offset;
}

static const char *const months[] = {"January", "February", "March",     "April",   "May",      "June",
                                     "July",    "August",   "September", "October", "November", "December"};
static const char *const days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

/* Appends N zero-padded to WIDTH digits. */
static void put_number(kg_buf_t *b, long long n, int width) {
  char tmp[32];
  int len = snprintf(tmp, sizeof tmp, "%0*lld", width, n);
  kg_buf_append(b, tmp, (size_t)len);
}

static void put_name(kg_buf_t *b, const char *name, int count) {
  kg_buf_append(b, name, count >= 4 ? strlen(name) : 3);
}

size_t kg_partitioner_path(const kg_partitioner_t *p, int64_t time_ms, char *out, size_t size) {
  int64_t secs = time_ms >= 0 ? time_ms / 1000 : -((-time_ms + 999) / 1000);
  int ms = (int)(time_ms - secs * 1000);
  time_t local = (time_t)(secs + offset_of(p, secs));
  struct tm tm;
  gmtime_r(&local, &tm);
  kg_buf_t b = {0};
  if (*p->prefix) {
    kg_buf_append(&b, p->prefix, strlen(p->prefix));
    kg_buf_append(&b, "/", 1);
  }
  for (size_t i = 0; i < p->npieces; i++) {
    const piece_t *pc = &p->pieces[i];
    int c = pc->count;
    switch (pc->letter) {
    case 0: kg_buf_append(&b, pc->text, strlen(pc->text)); break;
    case 'y': put_number(&b, c == 2 ? (tm.tm_year + 1900) % 100 : tm.tm_year + 1900, c); break;
    case 'M':
      if (c >= 3)
        put_name(&b, months[tm.tm_mon], c);
      else
        put_number(&b, tm.tm_mon + 1, c);
      break;
    case 'd': put_number(&b, tm.tm_mday, c); break;
    case 'H': put_number(&b, tm.tm_hour, c); break;
    case 'h': put_number(&b, tm.tm_hour % 12 ? tm.tm_hour % 12 : 12, c); break;
    case 'k': put_number(&b, tm.tm_hour ? tm.tm_hour : 24, c); break;
    case 'K': put_number(&b, tm.tm_hour % 12, c); break;
    case 'm': put_number(&b, tm.tm_min, c); break;
    case 's': put_number(&b, tm.tm_sec, c); break;
    case 'S': { /* the fraction of the second, to C digits */
      char tmp[8];
      snprintf(tmp, sizeof tmp, "%03d", ms);
      for (int k = 0; k < c; k++)
        kg_buf_append(&b, k < 3 ? &tmp[k] : "0", 1);
      break;
    }
    case 'D': put_number(&b, tm.tm_yday + 1, c); break;
    case 'E': put_name(&b, days[tm.tm_wday], c); break;
    case 'a': kg_buf_append(&b, tm.tm_hour < 12 ? "AM" : "PM", 2); break;
    }
  }
  if (*p->suffix) {
    kg_buf_append(&b, "/", 1);
    kg_buf_append(&b, p->suffix, strlen(p->suffix));
  }
  size_t n = b.len < size ? b.len : size - 1;
  memcpy(out, b.data ? b.data : "", n);
  out[n] = 0;
  kg_buf_free(&b);
  return n;
}

/* ---- the time partitioner's properties ----------------------------------------------------------------------- */

static const char *const partitioners[] = {"TimeBasedWriterPartitioner", "TimeBasedAvroWriterPartitioner",
                                           "TimeBasedJsonWriterPartitioner", NULL};
static const char *const granularities[] = {"MINUTE", "HOUR", "DAY", "MONTH", "YEAR", NULL}; /* kg_granularity_t */

static char *no_default(const kg_config_t *c, const void *options) {
  (void)c, (void)options;
  return kg_xstrdup("");
}

/* The value of part-of row NAME of the partitioner: the job's, or the row's default. */
static const char *partition_value(const kg_config_t *c, const char *name) {
  const char *v = kg_props_get(c->props, name);
  return v ? v : kg_config_property(name)->def;
}

/* writer.partitioner.class and its writer.partition.* rows: a partitioner made once, here (it reads the time zone
 * through the C library's TZ, before any thread starts). Its rows without the class are refused: they would
 * change nothing. */
static int set_partitioner(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                           kg_property_value_t *v, char *errbuf) {
  (void)p;
  static const char *const rows[] = {"writer.partition.pattern", "writer.partition.granularity",
                                     "writer.partition.timezone", "writer.partition.prefix", "writer.partition.suffix"};
  char tmp[256];
  const char *cls = kg_config_class_name(v->s, tmp, sizeof tmp);
  bool none = !*cls;
  free(v->s);
  if (none) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
      if (kg_props_get(c->props, rows[i]))
        return kg_fail(errbuf, KG_EINVAL,
                       "%s: %s is read by writer.partitioner.class=TimeBasedWriterPartitioner, which the job does not "
                       "set",
                       kg_config_origin(c, rows[i]), rows[i]);
    return KG_OK;
  }
  bool known = false;
  for (int i = 0; partitioners[i]; i++)
    known = known || !strcmp(cls, partitioners[i]);
  if (!known)
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: unknown class '%s' for property %s: kingest provides TimeBasedWriterPartitioner (also named "
                   "TimeBasedAvroWriterPartitioner and TimeBasedJsonWriterPartitioner)",
                   kg_config_origin(c, key), kg_props_get(c->props, key), key);
  const kg_property_t *grow = kg_config_property("writer.partition.granularity");
  kg_property_value_t g;
  const char *gkey = kg_props_get(c->props, grow->name) ? grow->name : NULL;
  int rc = kg_property_parse(grow, grow->name, kg_config_origin(c, gkey ? gkey : key), partition_value(c, grow->name),
                             NULL, &g, errbuf);
  if (rc) return rc;
  const char *pattern = kg_props_get(c->props, "writer.partition.pattern");
  const char *where = kg_config_origin(c, pattern ? "writer.partition.pattern" : key);
  if (pattern && !*pattern) return kg_fail(errbuf, KG_EINVAL, "%s: writer.partition.pattern is empty", where);
  char perr[KG_ERRLEN];
  rc = kg_partitioner_new(pattern ? pattern : kg_granularity_pattern((kg_granularity_t)g.e),
                          partition_value(c, "writer.partition.timezone"),
                          partition_value(c, "writer.partition.prefix"), partition_value(c, "writer.partition.suffix"),
                          &((kg_partition_options_t *)options)->partitioner, perr);
  if (rc) {
    const char *row = strstr(perr, "time zone") ? "writer.partition.timezone"
                      : strstr(perr, "prefix")  ? "writer.partition.prefix"
                                                : "writer.partition.pattern";
    return kg_fail(errbuf, rc, "%s: %s: %s", kg_config_origin(c, kg_props_get(c->props, row) ? row : key), row, perr);
  }
  return KG_OK;
}

static void clear(void *options) { kg_partitioner_free(((kg_partition_options_t *)options)->partitioner); }

/* writer.partitioner.class reads the others: the partitioner is made from them all at once. */
static const kg_property_t rows[] = {
    {.name = "writer.partitioner.class",
     .type = KG_PROP_STRING,
     .def_doc = "none",
     .computed = no_default,
     .set = set_partitioner,
     .doc = "`TimeBasedWriterPartitioner` (or Gobblin's `TimeBasedAvroWriterPartitioner`, "
            "`TimeBasedJsonWriterPartitioner`): each record's output goes to a folder of its time under the "
            "topic's, `<FP>/<prefix>/<time>/<suffix>`; the time is the Kafka record's timestamp, or what the "
            "job.lua's `partition` hook returns ([Output files](#output-files))."},
    {.name = "writer.partition.pattern",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def_doc = "the granularity's",
     .doc = "Joda-Time pattern of the time folders, as `yyyy/MM/dd/HH`: letters y M d H h k K m s S D E a; text in "
            "single quotes (`'hour='HH`); other characters as they are."},
    {.name = "writer.partition.granularity",
     .type = KG_PROP_ENUM,
     .part_of = "writer.partitioner.class",
     .def = "HOUR",
     .names = granularities,
     .doc = "Without a pattern: `MINUTE` (`yyyy/MM/dd/HH/mm`), `HOUR` (`yyyy/MM/dd/HH`), `DAY`, `MONTH` or `YEAR`."},
    {.name = "writer.partition.timezone",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def = "America/Los_Angeles",
     .doc = "Time zone of the folders: an IANA name (Gobblin's default is America/Los_Angeles), `UTC`, or an offset "
            "such as `+05:30`."},
    {.name = "writer.partition.prefix",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def = "",
     .doc = "A folder (or folders) before the time's."},
    {.name = "writer.partition.suffix",
     .type = KG_PROP_STRING,
     .part_of = "writer.partitioner.class",
     .def = "",
     .doc = "A folder (or folders) after the time's."},
};

const kg_config_section_t kg_partition_section = {.name = "partitioner",
                                                  .rows = rows,
                                                  .nrows = sizeof rows / sizeof rows[0],
                                                  .size = sizeof(kg_partition_options_t),
                                                  .clear = clear};

const kg_partitioner_t *kg_partitioner_of(const kg_config_t *config) {
  const kg_partition_options_t *o = kg_config_options(config, &kg_partition_section);
  return o ? o->partitioner : NULL;
}
