/* azure_auth.h: Azure Storage's Shared Key authentication, as a signer of the HTTP client (http.h).
 *
 * Each request carries x-ms-date (the time of its try), x-ms-version (the API version spoken) and
 * "Authorization: SharedKey ACCOUNT:SIGNATURE", the signature being the base64 of the HMAC-SHA256, keyed with the
 * account's key (given in base64), of the string to sign: the method, the values of eleven standard headers
 * (Content-Length empty for none), the x-ms-* headers (lower-case names in order, values with their blanks folded) and
 * the resource (/ACCOUNT, the URL's path as sent, and each query parameter, decoded, name in lower case, in order). */
#ifndef KG_AZURE_AUTH_H
#define KG_AZURE_AUTH_H

#include <stdint.h>

#include "buf.h"
#include "http.h"

/* The version of the Blob service's REST API that requests speak (x-ms-version). */
#define KG_AZURE_API_VERSION "2021-08-06"

/* An account and its key: what signs its requests. */
typedef struct kg_azure_key kg_azure_key_t;

/* A new key of ACCOUNT from KEY_BASE64 (the key as the portal shows it) in *OUT (kg_azure_key_destroy). KG_EINVAL
 * with ERRBUF saying why (never showing the key) when KEY_BASE64 is not base64 or decodes to nothing. */
int kg_azure_key_new(const char *account, const char *key_base64, kg_azure_key_t **out, char *errbuf);
void kg_azure_key_destroy(kg_azure_key_t *key); /* NULL is a no-op */
/* The account KEY signs for. */
const char *kg_azure_key_account(const kg_azure_key_t *key);

/* The string to sign of a request of ACCOUNT (METHOD to URL with the header lines HEADERS, NULL-terminated, x-ms-date
 * among them, and a body of CONTENT_LENGTH bytes), appended to OUT. */
void kg_azure_string_to_sign(const char *account, const char *method, const char *url, const char *const *headers,
                             int64_t content_length, kg_buf_t *out);
/* The base64 signature of TEXT with KEY, appended to OUT. */
void kg_azure_signature(const kg_azure_key_t *key, const char *text, kg_buf_t *out);

/* The HTTP client's signer (kg_http_signer_fn) with a kg_azure_key_t as ARG: adds x-ms-date (now), x-ms-version
 * (KG_AZURE_API_VERSION, unless the request gives its own) and Authorization. Set kg_http_auth_t.sign_unhashed: the
 * body's hash is not needed. */
int kg_azure_sign(void *key, const kg_http_signing_t *request, kg_http_headers_t *add, char *errbuf);

/* The date of time T (seconds since the epoch) as HTTP writes it (RFC 7231: "Sun, 06 Nov 1994 08:49:37 GMT"), in
 * the C locale's names, into OUT. */
void kg_azure_http_date(int64_t t, char out[32]);

#endif
