/* parse.h: text to values, as properties and command-line arguments are read: trimming, whole numbers, booleans. */
#ifndef KG_PARSE_H
#define KG_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Trims spaces, tabs, carriage returns, newlines and form feeds at both ends, in place; returns S. */
char *kg_strtrim(char *s);
/* Parses a whole base-10 integer; false if S is not one. */
bool kg_parse_int64(const char *s, int64_t *out);
bool kg_parse_bool(const char *s, bool *out);

#endif
