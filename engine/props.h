/* props.h: job properties: an ordered string map, and the reader of Gobblin .properties/.pull files. */
#ifndef KG_PROPS_H
#define KG_PROPS_H

#include "kg_common.h"

typedef struct kg_props kg_props_t;

kg_props_t *kg_props_new(void);
void kg_props_destroy(kg_props_t *props); /* NULL is a no-op */

/* Sets KEY to VALUE (both copied). ORIGIN says where it came from, e.g. "job.pull:12" (copied, may be NULL).
 * A key set twice keeps its first position and takes the new value. */
void kg_props_set(kg_props_t *props, const char *key, const char *value, const char *origin);
/* kg_props_set, and the value is a secret whatever KEY's name (kg_props_secret), noted for masking (secret.h): a
 * secret copied from another map of properties that had it from a ${file:}. */
void kg_props_set_secret(kg_props_t *props, const char *key, const char *value, const char *origin);
/* The value of KEY, or NULL. The pointer stays valid until KEY is set again or PROPS is destroyed. */
const char *kg_props_get(const kg_props_t *props, const char *key);
/* Where KEY was set ("file:line"), or NULL. */
const char *kg_props_origin(const kg_props_t *props, const char *key);
bool kg_props_has(const kg_props_t *props, const char *key);

/* Whether the property KEY=VALUE holds a secret by its name or the form of its value, which kingest never writes
 * anywhere (logs, errors, state, the input of a Hadoop job's maps): a name with a word (between '.', '_' and '-',
 * any case) that contains password, passwd, secret or credential, or that is jaas or userinfo; a name whose last
 * word ends in token or key, or is pem after key (key material: ssl.key.pem, ssl_key, private.key);
 * basic.auth.user.info and sasl.oauthbearer.config; but not a name whose last word says where a secret is or how it
 * is given (location, path, file, dir, source, provider, type, class, url, uri: ssl.key.location,
 * basic.auth.credentials.source). And, whatever the name, a VALUE (may be NULL) that is a URL with a password in it
 * (scheme://user:password@host). */
bool kg_props_is_secret(const char *key, const char *value);
/* Whether the property KEY of PROPS holds a secret: by kg_props_is_secret, or because its value came from a
 * ${file:} reference (directly or through another key). False for a key PROPS does not have. */
bool kg_props_secret(const kg_props_t *props, const char *key);
/* The value of KEY as kingest shows it: KG_SECRET_MASK (secret.h) for a secret (kg_props_secret), else the value;
 * NULL when PROPS has no KEY. */
const char *kg_props_shown(const kg_props_t *props, const char *key);

/* Iteration in insertion order: index 0 .. count-1. */
size_t kg_props_count(const kg_props_t *props);
const char *kg_props_key_at(const kg_props_t *props, size_t i);
const char *kg_props_value_at(const kg_props_t *props, size_t i);

/* Parses TEXT (LEN bytes) in Java properties syntax (comments, continuation lines, escapes, `key=value`,
 * `key: value`, `key value`) into PROPS, then resolves references in values (kg_props_resolve).
 * NAME is used in messages and origins. Returns KG_OK, or KG_EINVAL with "NAME:LINE: what" in ERRBUF
 * (PROPS may then hold part of the input). */
int kg_props_parse(kg_props_t *props, const char *text, size_t len, const char *name, char *errbuf);
/* Reads PATH and parses it as above. KG_EIO if it cannot be read. */
int kg_props_load_file(kg_props_t *props, const char *path, char *errbuf);

/* Resolves ${env:VAR}, ${file:PATH} and ${key} references in every value, in place. ${file:PATH} is the text of
 * the file PATH (as given: relative to the current folder), less one trailing newline, and makes the value a secret
 * (kg_props_secret); a WARN names the file and its mode when its group or others may read it. A reference to an
 * unset variable or key, a file that cannot be read (or over 1 MiB, or with a NUL byte), or a cycle, is KG_EINVAL
 * naming the key, its origin and the variable or file, never a file's text. Every secret's value is noted for
 * masking (secret.h), as kg_props_set notes a secret set with a value that needs no resolving. */
int kg_props_resolve(kg_props_t *props, char *errbuf);

#endif
