/* parse.c: text to values, as properties and command-line arguments are read: trimming, whole numbers, booleans. */
#include "parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *kg_strtrim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '\f')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == '\f'))
    s[--n] = '\0';
  return s;
}

bool kg_parse_int64(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

bool kg_parse_bool(const char *s, bool *out) {
  if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes")) {
    *out = true;
    return true;
  }
  if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no")) {
    *out = false;
    return true;
  }
  return false;
}
