/* suggest.h: the edit distance behind every "did you mean" (properties, options, topics). */
#ifndef KG_SUGGEST_H
#define KG_SUGGEST_H

#include <stddef.h>

/* The edit distance between A and B (for "did you mean"), or LIMIT + 1 once it is sure to exceed LIMIT, and for
 * strings of 256 bytes or more. */
size_t kg_edit_distance(const char *a, const char *b, size_t limit);

#endif
