/* hadoop_token.h: the files of Kerberos and Hadoop security that kingest reads and writes itself: the principals a
 * keytab holds (MIT's keytab format, version 0x502), and a Hadoop credentials file (Hadoop's token storage,
 * "HDTS" in its Writable form) that carries one delegation token, given and taken in the URL-safe form WebHDFS
 * speaks (Token.encodeToUrlString: the token's Writable bytes in base64url without padding).
 *
 * A delegation token is a secret: these functions never put it into an error message. */
#ifndef KG_HADOOP_TOKEN_H
#define KG_HADOOP_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "kg_common.h"

/* The principals of keytab PATH, in the order of its entries, each once ("name/instance@REALM"): *NAMES is a new
 * array of *COUNT new strings (kg_keytab_principals_free). KG_EIO with ERRBUF naming PATH when it cannot be read,
 * KG_EINVAL when it is not a keytab (or is cut short). */
int kg_keytab_principals(const char *path, char ***names, size_t *count, char *errbuf);
/* The same, of the LEN bytes at DATA (WHAT names them in errors). */
int kg_keytab_principals_parse(const void *data, size_t len, const char *what, char ***names, size_t *count,
                               char *errbuf);
void kg_keytab_principals_free(char **names, size_t count);

/* Whether principal WANTED is NAME: the same name, or WANTED has no realm and NAME's part before its '@' is it. */
int kg_keytab_principal_matches(const char *wanted, const char *name);

/* The bytes of base64url TEXT (padding and the standard alphabet's '+' '/' accepted too) appended to OUT. KG_EINVAL
 * when TEXT has a character of neither alphabet, or a length no encoding gives. */
int kg_base64url_decode(const char *text, kg_buf_t *out);
/* The base64url form (no padding) of LEN bytes at DATA appended to OUT. */
void kg_base64url_encode(const void *data, size_t len, kg_buf_t *out);

/* TOKEN (the URL-safe form) with its service (the address a renewer reaches its issuer at) set to SERVICE: *OUT, a
 * new string and a secret. KG_EINVAL when TOKEN is not a token's URL-safe form. */
int kg_hadoop_token_set_service(const char *token, const char *service, char **out);

/* The Writable bytes of a Hadoop credentials file holding one token, TOKEN (the URL-safe form), under ALIAS, and
 * no secret keys, appended to OUT. KG_EINVAL with ERRBUF when TOKEN is not a token's URL-safe form (its text is not
 * shown). */
int kg_hadoop_creds_build(const char *alias, const char *token, kg_buf_t *out, char *errbuf);
/* The token of alias ALIAS in the credentials file of LEN bytes at DATA (WHAT names it in errors), in its URL-safe
 * form, into *TOKEN (a new string); *KIND (may be NULL) gets its kind (a new string). KG_ENOTFOUND when the file
 * has no token of that alias; KG_EINVAL when it is not a credentials file in the Writable form. */
int kg_hadoop_creds_find(const void *data, size_t len, const char *what, const char *alias, char **token, char **kind,
                         char *errbuf);

/* The kind and the service of TOKEN (the URL-safe form), each a new string. KG_EINVAL when it is not one. */
int kg_hadoop_token_describe(const char *token, char **kind, char **service);

#endif
