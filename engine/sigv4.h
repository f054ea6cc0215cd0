/* sigv4.h: AWS Signature Version 4 (the signing of S3 requests, and of any AWS API), over the engine's SHA-256.
 *
 * A request is signed from its method, its URL (the path and query as they are sent: already percent-encoded),
 * the header lines it carries and its payload's SHA-256: the canonical request's hash, the string to sign with the
 * date and the scope (DATE/REGION/SERVICE/aws4_request), and an HMAC chain from the secret key. */
#ifndef KG_SIGV4_H
#define KG_SIGV4_H

#include <stddef.h>

#include "http.h"

/* The credentials a request is signed with; the strings are the caller's. */
typedef struct {
  const char *access_key;
  const char *secret_key;
  const char *session_token; /* NULL: none (long-term keys) */
} kg_sigv4_keys_t;

/* Signs METHOD URL with header lines HEADERS (NULL-terminated "Name: value"; each is signed, as is Host, taken from
 * URL) and PAYLOAD_SHA256 (64 hex digits, or UNSIGNED-PAYLOAD) at AMZ_DATE (YYYYMMDDTHHMMSSZ) for REGION and
 * SERVICE: adds the header lines the request must carry to ADD (x-amz-date, x-amz-content-sha256 when
 * CONTENT_SHA256 is true, as S3 wants, x-amz-security-token with a session token, and Authorization). The canonical
 * request goes to CANONICAL when not NULL (a new string: for tests and debugging). KG_EINVAL for a URL it cannot
 * read. */
int kg_sigv4_sign(const char *method, const char *url, const char *const *headers, const char *payload_sha256,
                  const char *amz_date, const char *region, const char *service, const kg_sigv4_keys_t *keys,
                  bool content_sha256, kg_http_headers_t *add, char **canonical, char *errbuf);

/* The time NOW_S (seconds since the epoch) as SigV4's YYYYMMDDTHHMMSSZ, into OUT. */
void kg_sigv4_date(long long now_s, char out[17]);

#endif
