/* secret.h: the values kingest must never print or write, and the mask that replaces them in text.
 *
 * The job's secrets (props.h: kg_props_secret) are noted here as their properties are resolved; every place text
 * leaves the process masks it here: kg_fail's error texts, every log line (librdkafka's own included), the lines
 * for Hadoop Streaming, the state store's run messages, the metrics file and the Prometheus text. Masking
 * replaces each noted value, wherever it occurs, with KG_SECRET_MASK. A value shorter than KG_SECRET_MIN bytes is
 * not noted (it would mask common words); the property printers still mask it by its name. Thread-safe. */
#ifndef KG_SECRET_H
#define KG_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#define KG_SECRET_MASK "****"
/* Values shorter than this are not searched for in text (the mask is never longer than what it replaces). */
#define KG_SECRET_MIN 4

/* Notes VALUE (copied) as a secret, from now on masked wherever kg_secret_mask looks, as it is and as a JSON string
 * (or a Prometheus label) spells it; one shorter than KG_SECRET_MIN, or one noted already, is ignored. */
void kg_secret_note(const char *value);
/* Forgets every noted value (tests). */
void kg_secret_forget_all(void);
/* Replaces each noted value in the NUL-terminated TEXT with KG_SECRET_MASK, in place (the text never grows), the
 * longest first. Returns how many were replaced. */
size_t kg_secret_mask(char *text);
/* The same for LEN bytes at TEXT, which may hold NULs; *LEN becomes the new length. */
size_t kg_secret_mask_bytes(char *text, size_t *len);
/* Whether any value is noted: a writer that would mask a big text asks first. */
bool kg_secret_any(void);

#endif
