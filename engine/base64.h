/* base64.h: base64 (RFC 4648, the standard alphabet with '=' padding), for keys and signatures that travel as
 * text (Azure's account keys, block ids and Shared Key signatures). */
#ifndef KG_BASE64_H
#define KG_BASE64_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Appends the base64 of the LEN bytes at DATA to OUT (NUL-terminated). */
void kg_base64_encode(kg_buf_t *out, const void *data, size_t len);
/* Appends the bytes that the base64 TEXT stands for to OUT. False (OUT as it was) when TEXT is not base64: a
 * character outside the alphabet, a length that is not a multiple of 4, padding anywhere but at the end. */
bool kg_base64_decode(kg_buf_t *out, const char *text);

#endif
