/* topics.c: which topics a job pulls: topic.whitelist and topic.blacklist, and the names they mean. */
#include "topics.h"

#include "buf.h"
#include "parse.h"
#include "suggest.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  regex_t *items;
  char **sources; /* the patterns as written, for exact-name checks */
  size_t count;
} kg_regex_list_t;

struct kg_topic_filter {
  kg_regex_list_t white;
  kg_regex_list_t black;
};

static void regex_list_free(kg_regex_list_t *l) {
  for (size_t i = 0; i < l->count; i++) {
    regfree(&l->items[i]);
    free(l->sources[i]);
  }
  free(l->items);
  free(l->sources);
}

/* The lists are Gobblin's, so their patterns are Java regexes. POSIX regcomp reads \d as a plain 'd' and would
 * silently select the wrong topics; glibc already knows \w \W \s \S, and \. \* etc. mean the same in both. So
 * \d becomes [0-9] (0-9 inside brackets) and \D [^0-9]; other escaped pairs are copied untouched. Returns a new
 * string. */
static char *posix_pattern(const char *pat) {
  kg_buf_t out = {0};
  kg_buf_append(&out, "", 0);
  bool in_brackets = false;
  for (const char *p = pat; *p; p++) {
    if (*p == '\\' && p[1]) {
      const char *cls = NULL;
      if (p[1] == 'd') cls = in_brackets ? "0-9" : "[0-9]";
      if (p[1] == 'D' && !in_brackets) cls = "[^0-9]";
      if (cls)
        kg_buf_append(&out, cls, strlen(cls));
      else
        kg_buf_append(&out, p, 2);
      p++;
      continue;
    }
    if (*p == '[' && !in_brackets) {
      in_brackets = true;
      kg_buf_append(&out, p, 1);
      if (p[1] == '^') kg_buf_append(&out, ++p, 1);
      if (p[1] == ']') kg_buf_append(&out, ++p, 1); /* a leading ] is a member, not the end */
      continue;
    }
    if (*p == ']') in_brackets = false;
    kg_buf_append(&out, p, 1);
  }
  return out.data;
}

static int regex_list_compile(kg_regex_list_t *l, const char *property, const char *patterns, char *errbuf) {
  char *copy = kg_xstrdup(patterns);
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *pat = kg_strtrim(tok);
    if (!*pat) continue;
    l->items = kg_xrealloc(l->items, (l->count + 1) * sizeof(regex_t));
    l->sources = kg_xrealloc(l->sources, (l->count + 1) * sizeof(char *));
    char *posix = posix_pattern(pat);
    char *anchored = kg_xasprintf("^(%s)$", posix);
    free(posix);
    int rc = regcomp(&l->items[l->count], anchored, REG_EXTENDED | REG_NOSUB);
    free(anchored);
    if (rc) {
      char msg[256];
      regerror(rc, &l->items[l->count], msg, sizeof msg);
      kg_fail(errbuf, KG_EINVAL, "invalid regular expression '%s' in property %s: %s", pat, property, msg);
      free(copy);
      return KG_EINVAL;
    }
    l->sources[l->count] = kg_xstrdup(pat);
    l->count++;
  }
  free(copy);
  return KG_OK;
}

int kg_topic_filter_new(const char *whitelist, const char *blacklist, kg_topic_filter_t **out, char *errbuf) {
  kg_topic_filter_t *f = kg_xcalloc(1, sizeof *f);
  int rc = regex_list_compile(&f->white, "topic.whitelist", whitelist ? whitelist : "", errbuf);
  if (!rc) rc = regex_list_compile(&f->black, "topic.blacklist", blacklist ? blacklist : "", errbuf);
  if (rc) {
    kg_topic_filter_destroy(f);
    f = NULL;
  }
  *out = f;
  return rc;
}

void kg_topic_filter_destroy(kg_topic_filter_t *f) {
  if (!f) return;
  regex_list_free(&f->white);
  regex_list_free(&f->black);
  free(f);
}

static bool any_match(const kg_regex_list_t *l, const char *s) {
  for (size_t i = 0; i < l->count; i++)
    if (regexec(&l->items[i], s, 0, NULL, 0) == 0) return true;
  return false;
}

bool kg_topic_filter_match(const kg_topic_filter_t *f, const char *topic) {
  if (any_match(&f->black, topic)) return false;
  if (!strncmp(topic, "__", 2)) {
    for (size_t i = 0; i < f->white.count; i++)
      if (!strcmp(f->white.sources[i], topic)) return true;
    return false;
  }
  return f->white.count == 0 || any_match(&f->white, topic);
}

bool kg_topic_in_list(const char *list, const char *topic) {
  if (!list || !*list) return false;
  char *copy = kg_xstrdup(list);
  char *save = NULL;
  bool found = false;
  for (char *tok = strtok_r(copy, ",", &save); tok && !found; tok = strtok_r(NULL, ",", &save)) {
    char *name = kg_strtrim(tok);
    found = !strcasecmp(name, "all") || !strcmp(name, topic);
  }
  free(copy);
  return found;
}

bool kg_topic_is_name(const char *p) {
  if (!*p) return false;
  for (; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-')) return false;
  return true;
}

const char *kg_topic_nearest(const char *name, const char *const *names, size_t n) {
  size_t limit = strlen(name) / 3;
  if (limit < 1) limit = 1;
  if (limit > 3) limit = 3;
  const char *best = NULL;
  size_t best_d = limit + 1;
  for (size_t i = 0; i < n; i++) {
    size_t d = kg_edit_distance(name, names[i], limit);
    if (d < best_d) {
      best_d = d;
      best = names[i];
    }
  }
  return best;
}

void kg_topic_filter_names(const kg_topic_filter_t *f, void (*fn)(void *ctx, const char *name), void *ctx) {
  for (size_t i = 0; i < f->white.count; i++)
    if (kg_topic_is_name(f->white.sources[i])) fn(ctx, f->white.sources[i]);
}
