/* http.h: the engine's one HTTP client. A request is a method, a URL, headers and a body (none, bytes in memory, or
 * a range of a file); its answer goes into a buffer with a cap, or into a file; the status and the answer's headers
 * are readable. Each request chooses its timeouts, how it is tried again (attempts, a deadline, a backoff, what
 * Retry-After asks, and a judge that says which outcomes are worth another try), whether redirects are followed,
 * its TLS settings and its authentication (basic, a bearer token, SPNEGO through libcurl's GSS-API, and a signer
 * that adds headers computed from the method, the URL, the headers and the body's SHA-256). Errors name the
 * method, the URL with its secrets masked, the status and the server's reason.
 *
 * Every request, whatever it asks: the user agent kingest/<version>; http and https only, redirects included; no
 * signals (libcurl's NOSIGNAL: the engine has threads); libcurl's error buffer; no "Expect: 100-continue" round
 * trip for a body (unless the caller sends an Expect header itself); TLS verification on unless turned off.
 *
 * libcurl is loaded at the first request (dlopen): a run that speaks no HTTP never loads it.
 *
 * Thread safety: kg_http_perform with a NULL handle may be called from any thread at once (each call has its own
 * connection). A kg_http_t keeps its connections open between requests, for one thread at a time. */
#ifndef KG_HTTP_H
#define KG_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "kg_common.h"

/* A handle that keeps connections open between requests (a client that asks one server again and again). */
typedef struct kg_http kg_http_t;

/* A new handle in *OUT (free with kg_http_destroy); loads libcurl first. Returns KG_OK, or KG_EIO with ERRBUF
 * saying why libcurl cannot be used. */
int kg_http_new(kg_http_t **out, char *errbuf);
/* Frees HTTP and closes its connections; NULL is a no-op. */
void kg_http_destroy(kg_http_t *http);

/* ---- the request ---------------------------------------------------------------------------------------- */

/* Header lines ("Name: value"), grown by kg_http_headers_add; each line owned. */
typedef struct {
  char **lines;
  size_t count;
} kg_http_headers_t;

/* Appends "NAME: VALUE" to HEADERS (both copied). */
void kg_http_headers_add(kg_http_headers_t *headers, const char *name, const char *value);
/* Frees the lines of HEADERS and empties it. */
void kg_http_headers_free(kg_http_headers_t *headers);

typedef enum {
  KG_HTTP_BODY_NONE = 0, /* no body */
  KG_HTTP_BODY_MEMORY,   /* LEN bytes at DATA */
  KG_HTTP_BODY_FILE,     /* bytes [OFFSET, OFFSET + LEN) of FD (a part of a multipart upload, a spool file) */
} kg_http_body_kind_t;

/* What a request sends: read during the call only, and again from its start for each try (and when libcurl
 * must send it again itself, as after an authentication round), so a file body is read with pread and FD's
 * position never moves. */
typedef struct {
  kg_http_body_kind_t kind;
  const void *data; /* MEMORY: the caller's */
  int fd;           /* FILE: the caller's, open for reading */
  int64_t offset;   /* FILE: where the bytes start */
  int64_t len;      /* bytes sent (the Content-Length) */
} kg_http_body_t;

typedef enum {
  KG_HTTP_ANSWER_BUFFER = 0, /* the body goes to the response's BODY buffer */
  KG_HTTP_ANSWER_FILE,       /* a 2xx answer's body is written to FD from OFFSET on; another status's goes to BODY */
  KG_HTTP_ANSWER_DISCARD,    /* a 2xx answer's body is dropped; another status's goes to BODY */
} kg_http_answer_kind_t;

/* Bytes of the body of an error answer (not 2xx) kept when the answer itself goes to a file or nowhere. */
#define KG_HTTP_ERROR_BODY_CAP (64 * 1024)
/* The cap of a buffer answer when the request gives none. */
#define KG_HTTP_DEFAULT_CAP (16 * 1024 * 1024)

/* Where the answer's body goes. */
typedef struct {
  kg_http_answer_kind_t kind;
  int64_t cap;   /* most bytes of the body: 0 is KG_HTTP_DEFAULT_CAP for a buffer, no limit for a file */
  bool truncate; /* past CAP: keep the first CAP bytes and read the rest to the end (response TRUNCATED), instead of
                    failing the try with KG_HTTP_FAIL_TOO_BIG */
  int fd;        /* FILE: the caller's, open for writing; a try tried again writes from OFFSET again, and the file
                    is cut at OFFSET first */
  int64_t offset;
} kg_http_answer_t;

typedef struct {
  const char *ca_file;      /* PEM file of the certificate authorities to trust; NULL: the system's */
  const char *cert_file;    /* the client's certificate (PEM), for servers that ask for one; NULL: none */
  const char *key_file;     /* its private key (PEM); NULL: in CERT_FILE */
  const char *key_password; /* of KEY_FILE; NULL: not encrypted */
  bool insecure;            /* the server's certificate and name are not checked (tests against a self-signed
                               server); off by default */
} kg_http_tls_t;

/* What a signer signs: the request as it will be sent. */
typedef struct {
  const char *method;
  const char *url;
  const char *const *headers; /* the request's own header lines, NULL-terminated */
  const char *body_sha256;    /* the body's SHA-256 as 64 lowercase hex digits (that of no bytes without a body); ""
                                 for a signer that hashes no body (kg_http_auth_t.sign_unhashed) */
  int64_t body_len;           /* bytes of the body (its Content-Length); 0 without one */
  int attempt;                /* 1 for the first try: each try is signed again (signatures carry the time) */
} kg_http_signing_t;

/* Adds the headers that sign REQUEST to ADD (kg_http_headers_add). Returns KG_OK, or a KG_E* with ERRBUF saying
 * why it cannot sign: then nothing is sent and the request fails (KG_HTTP_FAIL_SIGNER). */
typedef int (*kg_http_signer_fn)(void *arg, const kg_http_signing_t *request, kg_http_headers_t *add, char *errbuf);

typedef enum {
  KG_HTTP_AUTH_NONE = 0,  /* none (credentials in the URL, user:password@, are sent as basic authentication) */
  KG_HTTP_AUTH_BASIC,     /* USER and PASSWORD */
  KG_HTTP_AUTH_BEARER,    /* "Authorization: Bearer TOKEN" */
  KG_HTTP_AUTH_NEGOTIATE, /* SPNEGO: a Kerberos ticket through libcurl's GSS-API (the credentials cache, or the
                             keytab of $KRB5_CLIENT_KTNAME) */
} kg_http_auth_kind_t;

/* How a request authenticates. Credentials are never shown in messages and never sent to another host a redirect
 * leads to. */
typedef struct {
  kg_http_auth_kind_t kind;
  const char *user;       /* BASIC */
  const char *password;   /* BASIC */
  const char *token;      /* BEARER */
  kg_http_signer_fn sign; /* with any kind: called before each try; NULL: none */
  void *sign_arg;
  bool sign_unhashed; /* SIGN reads no body_sha256 (Azure's Shared Key signs the length, not the bytes): the body is
                         not hashed */
} kg_http_auth_t;

typedef struct kg_http_response kg_http_response_t;

/* A judge's word on a try. */
typedef enum {
  KG_HTTP_DONE = 0,     /* this try is the outcome */
  KG_HTTP_AGAIN,        /* try again, after what Retry-After asks (when the policy honours it) or the backoff's pause,
                           unless the attempts or the deadline are used up */
  KG_HTTP_AGAIN_PAUSED, /* try again after the backoff's pause, whatever Retry-After says and even past the deadline
                           (the attempts still bound it): for a judge that bounds these tries itself */
} kg_http_verdict_t;

/* Judges RESPONSE, the outcome of try RESPONSE->attempts. */
typedef kg_http_verdict_t (*kg_http_judge_fn)(void *arg, const kg_http_response_t *response);

/* What the default judge tries again (kg_http_retry_t.retry_on). */
enum {
  KG_HTTP_RETRY_CONNECT = 1,   /* a failure before anything was sent (refused, no route, a name that does not
                                  resolve, a connect timeout): any request may be tried again */
  KG_HTTP_RETRY_TRANSPORT = 2, /* any failure without an answer (a timeout, a connection broken midway): only for
                                  a request that may be done twice */
  KG_HTTP_RETRY_STATUS = 4,    /* HTTP 408, 429 and 5xx */
};

/* A deadline at the first try's start (kg_http_retry_t.deadline_ms): KG_HTTP_AGAIN never tries again, while
 * KG_HTTP_AGAIN_PAUSED does. */
#define KG_HTTP_DEADLINE_AT_START (-1)

/* How a request is tried again. All zero: one try (the default judge tries nothing again without RETRY_ON). The pause
 * before the second try is PAUSE_MS, doubled for each next one up to MAX_PAUSE_MS; a try is not made when ATTEMPTS are
 * used up, nor when its pause would end at or past the deadline (then the request fails at once, saying so, rather than
 * wait for nothing). With neither ATTEMPTS nor DEADLINE_MS, only the judge bounds the tries. */
typedef struct {
  int attempts;           /* most tries; 0: no bound by count (0 or 1 with the default judge and no RETRY_ON: one) */
  int64_t deadline_ms;    /* no try after the first starts later than this after the first began; 0: no bound by
                             time; KG_HTTP_DEADLINE_AT_START */
  int64_t pause_ms;       /* before the second try */
  int64_t max_pause_ms;   /* the longest pause of the backoff; 0: no bound */
  unsigned *jitter_seed;  /* not NULL: each pause a quarter longer at most, at random (rand_r on it; the caller
                             serialises its use) */
  bool retry_after;       /* an answer's Retry-After (seconds or an HTTP date) replaces the pause */
  bool interruptible;     /* a stop signal (kg_stop_signal) ends the request instead of the next try */
  int64_t try_floor_ms;   /* > 0, with a deadline: a try after the first has the time left before the deadline as its
                             timeout when that is shorter, but at least this */
  unsigned retry_on;      /* KG_HTTP_RETRY_*: what the default judge tries again */
  kg_http_judge_fn judge; /* NULL: the default judge (RETRY_ON) */
  void *judge_arg;
} kg_http_retry_t;

/* A request. Zero is a sensible default for every field but URL. Nothing of it is kept after the call. */
typedef struct {
  const char *method;         /* "GET", "PUT", "POST", "DELETE", "HEAD", ...; NULL: GET */
  const char *url;            /* http:// or https:// */
  const char *const *headers; /* "Name: value" lines, NULL-terminated (If-None-Match, Content-Type...); NULL: none */
  kg_http_body_t body;
  kg_http_answer_t answer;
  int64_t connect_timeout_ms; /* to connect (TLS handshake included); 0: libcurl's (300 s) */
  int64_t timeout_ms;         /* a whole try; 0: none */
  int64_t stall_ms;           /* a try that moves less than a byte a second over this long fails (libcurl's
                                 low-speed limit, in whole seconds, at least 1); 0: none. For an upload that takes as
                                 long as it takes, with TIMEOUT_MS 0 */
  int max_redirects;          /* redirects followed, a body sent again to each; 0: a redirect is the answer (its
                                 status and Location readable), for a protocol where a redirect is a step of its own
                                 (WebHDFS names a DataNode with a 307) */
  kg_http_tls_t tls;
  kg_http_auth_t auth;
  kg_http_retry_t retry;
  bool any_status; /* KG_OK for an answer of any status; else only for 2xx (and 1xx, 3xx not followed) */
  /* The server's reason in an error answer, into OUT (SIZE bytes), for a service with its own error shape (as
   * Hadoop's RemoteException); NULL: kg_http_reason's. */
  void (*reason)(const kg_http_response_t *response, char *out, size_t size);
  const char *service; /* who speaks ("WebHDFS"), at the start of the debug line of each try again; NULL: "HTTP" */
} kg_http_request_t;

/* ---- the response --------------------------------------------------------------------------------------- */

typedef enum {
  KG_HTTP_FAIL_NONE = 0, /* an answer came */
  KG_HTTP_FAIL_CONNECT,  /* no connection: refused, no route, the name does not resolve; nothing was sent */
  KG_HTTP_FAIL_TIMEOUT,  /* connecting, the whole try, or a stall took too long */
  KG_HTTP_FAIL_TLS,      /* the TLS handshake failed, or the server's certificate is not trusted */
  KG_HTTP_FAIL_TOO_BIG,  /* the answer's body passed its cap */
  KG_HTTP_FAIL_BODY,     /* the body's file could not be read, or the answer's file written */
  KG_HTTP_FAIL_SIGNER,   /* the signer refused: nothing was sent */
  KG_HTTP_FAIL_OTHER,    /* anything else: a connection broken midway, an answer that is not HTTP, a protocol
                            other than http or https, libcurl missing */
} kg_http_failure_t;

/* Why the tries stopped. */
typedef enum {
  KG_HTTP_STOP_DONE = 0, /* the judge took the last try */
  KG_HTTP_STOP_ATTEMPTS, /* the policy's attempts were used up */
  KG_HTTP_STOP_DEADLINE, /* the next pause would have ended at or past the deadline */
  KG_HTTP_STOP_SIGNAL,   /* a stop signal came before the next try */
} kg_http_stop_t;

typedef struct {
  char *name; /* owned; as the server spelled it */
  char *value;
} kg_http_header_t;

/* What a request got: the last try's outcome, and how the tries went. Zero it before kg_http_perform; free it with
 * kg_http_response_free (also when the call failed). */
struct kg_http_response {
  long status;               /* HTTP status of the last try; 0 when no answer came */
  kg_http_failure_t failure; /* KG_HTTP_FAIL_NONE when an answer came */
  const char *cause;         /* without an answer: libcurl's short name of the failure (curl_easy_strerror);
                                "" with one */
  char error[512];           /* without an answer: what went wrong, in libcurl's detailed words or ours */
  bool sent;                 /* bytes of the request went out: a try that failed after that may have reached the
                                server (before: it cannot have) */
  kg_buf_t body;             /* the answer's body, as the request's answer says; NUL-terminated when not empty */
  bool truncated;            /* the body passed the answer's cap and was cut there (answer.truncate) */
  int64_t body_bytes;        /* bytes of the body received, all of them (also those written to a file or dropped) */
  kg_http_header_t *headers; /* the last answer's headers, in order (owned) */
  size_t nheaders;
  int64_t retry_after_s; /* seconds the last answer's Retry-After asks (an HTTP date made seconds from now); -1: none
                            (or 0) */
  int attempts;          /* tries made (0 when libcurl cannot be loaded) */
  int64_t elapsed_ms;    /* from the first try's start to the end of the last, or to the decision to stop */
  kg_http_stop_t stop;
  int64_t next_wait_ms; /* KG_HTTP_STOP_DEADLINE: the pause that would have passed the deadline */
};

/* Makes REQUEST, trying again as REQUEST->retry says, into *RESPONSE (zeroed by the caller). Returns KG_OK when an
 * answer came that the request accepts (2xx, or any status with any_status); else KG_EIO, with ERRBUF naming the
 * method, the URL (kg_http_shown_url), the status and the server's reason or what went wrong, and, when it was
 * tried more than once, the tries, their time and why they stopped. *RESPONSE holds the last try either way.
 * HTTP may be NULL: a connection for this call alone. A bad request (no URL, a header line with a line break)
 * fails with KG_EINVAL and nothing sent. */
int kg_http_perform(kg_http_t *http, const kg_http_request_t *request, kg_http_response_t *response, char *errbuf);

/* Frees what RESPONSE holds and zeroes it. */
void kg_http_response_free(kg_http_response_t *response);

/* The value of the last answer's header NAME (any case), or NULL: ETag, Location, Content-Type... Valid until
 * RESPONSE is freed. */
const char *kg_http_response_header(const kg_http_response_t *response, const char *name);

/* URL as messages show it, into OUT (SIZE bytes): user information (user:password@) becomes ***@, and the value of
 * each query parameter that carries a secret (a password, a token, a delegation token, a signature, a key,
 * credentials) becomes ***; the rest (user.name, op...) stays. */
void kg_http_shown_url(const char *url, char *out, size_t size);

/* The reason an outcome gives, into OUT (SIZE bytes): "HTTP STATUS" and the first line of the body (its first 512
 * bytes at most) after ": " when there is one; without an answer, what went wrong. */
void kg_http_reason(const kg_http_response_t *response, char *out, size_t size);

/* " (N attempts in S s...)", the tries RESPONSE took under RETRY, into OUT (SIZE bytes), as kg_http_perform's errors
 * end; "" after one try that the policy did not stop. For a caller that judges an answer itself (any_status). */
void kg_http_tries_said(const kg_http_retry_t *retry, const kg_http_response_t *response, char *out, size_t size);

#endif
