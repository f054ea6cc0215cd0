/* fs_s3.h: the S3 file system (s3a://BUCKET, s3://BUCKET): an object store (fs.h) for the final folder, with Hadoop
 * s3a's property names, and the parts of it that are pure functions (for tests): the credential files' parsing
 * and the store's error answers. */
#ifndef KG_FS_S3_H
#define KG_FS_S3_H

#include "config.h"
#include "fs.h"

/* What fs.s3a.* set (kg_fs_s3_section). Strings owned by the config. */
typedef struct {
  char *endpoint;         /* fs.s3a.endpoint: a URL, or a host (https); "": AWS's for the region */
  char *region;           /* fs.s3a.endpoint.region; "": AWS_REGION, the profile's, else us-east-1 */
  bool path_style;        /* fs.s3a.path.style.access: http://ENDPOINT/BUCKET/KEY, not http://BUCKET.ENDPOINT/KEY */
  char *access_key;       /* fs.s3a.access.key; "": the credential chain */
  char *secret_key;       /* fs.s3a.secret.key */
  char *session_token;    /* fs.s3a.session.token */
  int64_t part_size;      /* fs.s3a.multipart.size, bytes */
  int64_t threshold;      /* fs.s3a.multipart.threshold, bytes */
  int sse;                /* fs.s3a.server-side-encryption-algorithm: 0 none, 1 SSE-S3, 2 SSE-KMS */
  char *sse_key;          /* fs.s3a.server-side-encryption.key: SSE-KMS's key id; "": the bucket's default */
  int64_t connect_ms;     /* fs.s3a.connection.establish.timeout */
  int64_t timeout_ms;     /* fs.s3a.connection.timeout: a request that moves no byte for this long fails */
  int attempts;           /* fs.s3a.attempts.maximum: tries of a request that failed on 500, 503 or a connection */
  int64_t retry_pause_ms; /* fs.s3a.retry.interval: the first pause, doubled for each next one */
  int upload_threads;     /* fs.s3a.fast.upload.active.blocks: parts of one upload in flight at once */
  bool given_region;      /* fs.s3a.endpoint.region was given */
} kg_s3_options_t;

/* kg_fs_s3_open and kg_fs_s3_section (fs.h): s3a://BUCKET or s3://BUCKET (a path after it is refused: the path is
 * the final folder's); no request is made at open. */

/* Credentials as found. Strings owned (kg_s3_creds_clear). */
typedef struct {
  char *access_key;
  char *secret_key;
  char *session_token; /* NULL: none */
  char *region;        /* a profile's region; NULL: none */
  char *role_arn;      /* a profile's role_arn with web_identity_token_file: through STS */
  char *token_file;
  char *source; /* where they came from, for messages ("the profile dev of /home/u/.aws/credentials") */
} kg_s3_creds_t;
void kg_s3_creds_clear(kg_s3_creds_t *creds);

/* Reads the keys of profile PROFILE from TEXT, an INI file of the AWS CLI's: the credentials file's sections are
 * [NAME], the config file's [profile NAME] (and [default]); CONFIG_FILE says which. Fills what it finds into
 * *CREDS (leaving what it does not). Returns true when the profile's section is there. */
bool kg_s3_profile_parse(const char *text, const char *profile, bool config_file, kg_s3_creds_t *creds);

/* The store's error answer BODY (S3's <Error> XML): its Code, Message and, for PermanentRedirect and
 * AuthorizationHeaderMalformed, the Region or Endpoint it names, as one clause into OUT ("SignatureDoesNotMatch:
 * The request signature we calculated does not match..."); STATUS and REGION_HEADER (x-amz-bucket-region, or NULL)
 * serve an answer without a body (HEAD). */
void kg_s3_error_reason(long status, const char *body, const char *region_header, char *out, size_t size);

#endif
