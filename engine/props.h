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
/* The value of KEY, or NULL. The pointer stays valid until KEY is set again or PROPS is destroyed. */
const char *kg_props_get(const kg_props_t *props, const char *key);
/* Where KEY was set ("file:line"), or NULL. */
const char *kg_props_origin(const kg_props_t *props, const char *key);
bool kg_props_has(const kg_props_t *props, const char *key);

/* Whether the property KEY=VALUE holds a secret, which kingest never writes anywhere (logs, errors, state, the
 * input of a Hadoop job's maps): a name with a word (between '.', '_' and '-', any case) that contains password,
 * passwd, secret or credential, or that is jaas or userinfo; a name whose last word is token, or key, or pem after
 * key (key material: ssl.key.pem, ssl_key, private.key); basic.auth.user.info and sasl.oauthbearer.config; and a
 * VALUE (may be NULL) that is a URL with a password in it (scheme://user:password@host). */
bool kg_props_is_secret(const char *key, const char *value);

/* Iteration in insertion order: index 0 .. count-1. */
size_t kg_props_count(const kg_props_t *props);
const char *kg_props_key_at(const kg_props_t *props, size_t i);
const char *kg_props_value_at(const kg_props_t *props, size_t i);

/* Parses TEXT (LEN bytes) in Java properties syntax (comments, continuation lines, escapes, `key=value`,
 * `key: value`, `key value`) into PROPS, then resolves ${env:VAR} and ${other.key} references in values.
 * NAME is used in messages and origins. Returns KG_OK, or KG_EINVAL with "NAME:LINE: what" in ERRBUF
 * (PROPS may then hold part of the input). */
int kg_props_parse(kg_props_t *props, const char *text, size_t len, const char *name, char *errbuf);
/* Reads PATH and parses it as above. KG_EIO if it cannot be read. */
int kg_props_load_file(kg_props_t *props, const char *path, char *errbuf);

/* Resolves ${env:VAR} and ${key} references in every value, in place. A reference to an unset variable
 * or key, or a cycle, is KG_EINVAL naming the key and its origin. */
int kg_props_resolve(kg_props_t *props, char *errbuf);

#endif
