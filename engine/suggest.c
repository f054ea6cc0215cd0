/* suggest.c: the edit distance behind every "did you mean" (properties, options, topics). */
#include "suggest.h"

#include <string.h>

size_t kg_edit_distance(const char *a, const char *b, size_t limit) {
  size_t n = strlen(a), m = strlen(b);
  if ((n > m ? n - m : m - n) > limit || m >= 256) return limit + 1;
  size_t row[256];
  for (size_t j = 0; j <= m; j++)
    row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0], best = row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < v) v = up + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      row[j] = v;
      diag = up;
      if (v < best) best = v;
    }
    if (best > limit) return limit + 1;
  }
  return row[m];
}
