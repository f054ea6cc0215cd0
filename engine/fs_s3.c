/* fs_s3.c: the S3 file system (fs_s3.h): objects of one bucket through S3's REST API, signed with SigV4, as the
 * final folder of a commit (fs.h's object store: no rename, no streams).
 *
 * A path /a/b is the key a/b. Folders are prefixes: a folder exists when a key starts with it and a slash. Every
 * request goes through http.c, signed by sign() below with the credentials of the chain (the job's keys, the
 * environment, a profile, web identity, the instance's metadata), found at the first request; it is tried again
 * on 500, 503 (S3's SlowDown) and connection failures, fs.s3a.attempts.maximum times in all. */
#include "fs_s3.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "json.h"
#include "log.h"
#include "md5.h"
#include "parse.h"
#include "secret.h"
#include "sigv4.h"

/* ---- the properties --------------------------------------------------------------------------------------- */

#define FIELD(f) KG_FIELD_OF(kg_s3_options_t, f)

/* A size as Hadoop writes them: a number of bytes, or with K, M, G or T (powers of 1024). */
static bool parse_size(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long n = strtoll(s, &end, 10);
  if (errno || end == s || n < 0) return false;
  int shift = 0;
  switch (*end) {
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  case 't':
  case 'T':
    shift = 40;
    end++;
    break;
  default: break;
  }
  if (*end || (shift && n > (INT64_MAX >> shift))) return false;
  *out = (int64_t)n << shift;
  return true;
}

/* fs.s3a.multipart.size and fs.s3a.multipart.threshold: S3 wants parts of 5 MiB at least (but the last) and 10000
 * parts at most. */
static int set_size(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                    kg_property_value_t *v, char *errbuf) {
  kg_s3_options_t *o = options;
  int64_t n = 0;
  bool ok = parse_size(v->s, &n);
  const char *given = key ? key : p->name;
  int rc = KG_OK;
  if (!ok || n < 5 * 1024 * 1024)
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: property %s=%s: a size of 5M or more (bytes, or with K, M or G), as S3 wants each part but the "
                 "last to be",
                 kg_config_origin(c, given), given, v->s);
  else if (!strcmp(p->name, "fs.s3a.multipart.size"))
    o->part_size = n;
  else
    o->threshold = n;
  free(v->s);
  return rc;
}

/* fs.s3a.connection.timeout, fs.s3a.connection.establish.timeout, fs.s3a.retry.interval: milliseconds, or with s,
 * m (Hadoop 3.4 writes "200s"). */
static int set_duration(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                        kg_property_value_t *v, char *errbuf) {
  kg_s3_options_t *o = options;
  char *end;
  errno = 0;
  long long n = strtoll(v->s, &end, 10);
  int64_t ms = -1;
  if (!errno && end != v->s && n > 0) {
    if (!*end || !strcmp(end, "ms"))
      ms = n;
    else if (!strcmp(end, "s"))
      ms = n * 1000;
    else if (!strcmp(end, "m"))
      ms = n * 60000;
  }
  const char *given = key ? key : p->name;
  int rc = KG_OK;
  if (ms <= 0)
    rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s=%s: a duration in milliseconds (or with s or m) above 0",
                 kg_config_origin(c, given), given, v->s);
  else if (!strcmp(p->name, "fs.s3a.connection.timeout"))
    o->timeout_ms = ms;
  else if (!strcmp(p->name, "fs.s3a.connection.establish.timeout"))
    o->connect_ms = ms;
  else
    o->retry_pause_ms = ms;
  free(v->s);
  return rc;
}

static int set_region(const kg_config_t *c, void *options, const kg_property_t *p, const char *key,
                      kg_property_value_t *v, char *errbuf) {
  (void)c, (void)p, (void)errbuf;
  kg_s3_options_t *o = options;
  free(o->region);
  o->region = v->s;
  o->given_region = key != NULL && *v->s;
  return KG_OK;
}

static const char *const sse_names[] = {"", "SSE-S3", "SSE-KMS", NULL};

static const kg_property_t rows[] = {
    {.name = "fs.s3a.endpoint",
     .type = KG_PROP_STRING,
     .def = "",
     FIELD(endpoint),
     .doc = "S3's endpoint: a URL (`http://127.0.0.1:9000` for an S3-compatible store, "
            "`https://storage.googleapis.com` for Google Cloud Storage) or a host (then https); empty: AWS's of "
            "the region ([Object storage](object-storage.md))."},
    {.name = "fs.s3a.endpoint.region",
     .type = KG_PROP_STRING,
     .def = "",
     .set = set_region,
     .doc = "The region requests are signed for; empty: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's region, "
            "else us-east-1."},
    {.name = "fs.s3a.path.style.access",
     .type = KG_PROP_BOOL,
     .def = "false",
     FIELD(path_style),
     .doc = "Path-style addressing (`ENDPOINT/BUCKET/KEY`) instead of virtual-hosted (`BUCKET.ENDPOINT/KEY`); "
            "most S3-compatible stores want true."},
    {.name = "fs.s3a.access.key",
     .type = KG_PROP_STRING,
     .def = "",
     FIELD(access_key),
     .secret = true,
     .doc = "The access key id; empty: the credential chain (`AWS_ACCESS_KEY_ID`, `AWS_PROFILE`, web identity, "
            "the instance's metadata)."},
    {.name = "fs.s3a.secret.key",
     .type = KG_PROP_STRING,
     .def = "",
     FIELD(secret_key),
     .secret = true,
     .doc = "The secret access key, with `fs.s3a.access.key`. A secret: never printed; give it with "
            "`${file:PATH}` or `${env:VAR}`."},
    {.name = "fs.s3a.session.token",
     .type = KG_PROP_STRING,
     .def = "",
     FIELD(session_token),
     .secret = true,
     .doc = "A session token for temporary keys (with `fs.s3a.access.key`). A secret."},
    {.name = "fs.s3a.multipart.size",
     .type = KG_PROP_STRING,
     .def = "64M",
     .set = set_size,
     .doc = "Bytes of each part of a multipart upload (K, M, G suffixes; 5M at least)."},
    {.name = "fs.s3a.multipart.threshold",
     .type = KG_PROP_STRING,
     .def = "128M",
     .set = set_size,
     .doc = "A file this big or bigger is uploaded in parts; a smaller one with one PutObject."},
    {.name = "fs.s3a.fast.upload.active.blocks",
     .type = KG_PROP_INT,
     .def = "4",
     .min = 1,
     .max = 64,
     FIELD(upload_threads),
     .doc = "Parts of one multipart upload sent at once. Parts are read from the task output's file, not held in "
            "memory."},
    {.name = "fs.s3a.server-side-encryption-algorithm",
     .type = KG_PROP_ENUM,
     .def = "",
     .names = sse_names,
     .empty_is_default = true,
     FIELD(sse),
     .doc = "Server-side encryption asked for each object: `SSE-S3` (AES256) or `SSE-KMS` (with "
            "`fs.s3a.server-side-encryption.key`); empty: the bucket's default."},
    {.name = "fs.s3a.server-side-encryption.key",
     .type = KG_PROP_STRING,
     .def = "",
     FIELD(sse_key),
     .secret = true,
     .doc = "SSE-KMS's key (an id or ARN); empty: the account's default KMS key."},
    {.name = "fs.s3a.connection.establish.timeout",
     .type = KG_PROP_STRING,
     .def = "30s",
     .set = set_duration,
     .doc = "Time to connect to the endpoint (milliseconds, or with s or m)."},
    {.name = "fs.s3a.connection.timeout",
     .type = KG_PROP_STRING,
     .def = "200s",
     .set = set_duration,
     .doc = "A request during which no byte moves for this long fails (and is tried again as "
            "`fs.s3a.attempts.maximum` says)."},
    {.name = "fs.s3a.attempts.maximum",
     .type = KG_PROP_INT,
     .def = "5",
     .min = 1,
     .max = 100,
     FIELD(attempts),
     .doc = "Tries of a request that got 500, 503 (SlowDown) or no connection, with a pause doubled each time "
            "(`fs.s3a.retry.interval`); the error says how many were made."},
    {.name = "fs.s3a.retry.interval",
     .type = KG_PROP_STRING,
     .def = "500ms",
     .set = set_duration,
     .doc = "The pause before a request's second try, doubled for each next one (at most 20 s)."},
};

/* What the setters made: the region (set_region's). */
static void clear(void *options) { free(((kg_s3_options_t *)options)->region); }

const kg_config_section_t kg_fs_s3_section = {.name = "fs.s3a",
                                              .rows = rows,
                                              .nrows = sizeof rows / sizeof rows[0],
                                              .size = sizeof(kg_s3_options_t),
                                              .clear = clear};

/* ---- credentials ------------------------------------------------------------------------------------------ */

void kg_s3_creds_clear(kg_s3_creds_t *c) {
  if (c->secret_key) memset(c->secret_key, 0, strlen(c->secret_key));
  free(c->access_key);
  free(c->secret_key);
  free(c->session_token);
  free(c->region);
  free(c->role_arn);
  free(c->token_file);
  free(c->source);
  memset(c, 0, sizeof *c);
}

static void set_str(char **field, const char *value, size_t len) {
  free(*field);
  *field = kg_xstrndup(value, len);
}

bool kg_s3_profile_parse(const char *text, const char *profile, bool config_file, kg_s3_creds_t *creds) {
  char *want = config_file && strcmp(profile, "default") ? kg_xasprintf("profile %s", profile) : kg_xstrdup(profile);
  bool in = false, found = false;
  for (const char *line = text; line && *line;) {
    size_t len = strcspn(line, "\r\n");
    const char *s = line, *e = line + len;
    line = *e ? e + 1 : e;
    while (s < e && (*s == ' ' || *s == '\t'))
      s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    if (s == e || *s == '#' || *s == ';') continue;
    if (*s == '[') {
      const char *close = memchr(s, ']', (size_t)(e - s));
      if (!close) continue;
      const char *n = s + 1, *ne = close;
      while (n < ne && *n == ' ')
        n++;
      while (ne > n && ne[-1] == ' ')
        ne--;
      in = (size_t)(ne - n) == strlen(want) && !strncmp(n, want, strlen(want));
      found |= in;
      continue;
    }
    if (!in) continue;
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq) continue;
    const char *k = s, *ke = eq, *v = eq + 1;
    while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
      ke--;
    while (v < e && (*v == ' ' || *v == '\t'))
      v++;
    size_t kl = (size_t)(ke - k), vl = (size_t)(e - v);
#define KEY_IS(name) (kl == strlen(name) && !strncmp(k, name, kl))
    if (KEY_IS("aws_access_key_id"))
      set_str(&creds->access_key, v, vl);
    else if (KEY_IS("aws_secret_access_key"))
      set_str(&creds->secret_key, v, vl);
    else if (KEY_IS("aws_session_token"))
      set_str(&creds->session_token, v, vl);
    else if (KEY_IS("region"))
      set_str(&creds->region, v, vl);
    else if (KEY_IS("role_arn"))
      set_str(&creds->role_arn, v, vl);
    else if (KEY_IS("web_identity_token_file"))
      set_str(&creds->token_file, v, vl);
#undef KEY_IS
  }
  free(want);
  return found;
}

/* The file of environment variable VAR, else ~/.aws/NAME; a new string, NULL without a home. */
static char *aws_file(const char *var, const char *name) {
  const char *v = getenv(var);
  if (v && *v) return kg_xstrdup(v);
  const char *home = getenv("HOME");
  return home && *home ? kg_xasprintf("%s/.aws/%s", home, name) : NULL;
}

/* ---- the file system -------------------------------------------------------------------------------------- */

typedef struct {
  kg_fs_t fs;
  char *bucket;
  char *base;   /* scheme://host[:port] of the endpoint (with the bucket in the host when virtual-hosted) */
  char *prefix; /* "/BUCKET" with path-style addressing, else "" */
  char *region;
  kg_s3_options_t o;         /* copies: strings owned */
  kg_fs_object_ops_t object; /* its object calls, with this bucket's part size */
  pthread_mutex_t mutex;     /* guards the credentials */
  bool resolved;
  kg_s3_creds_t creds;
  int64_t creds_expire_s; /* temporary credentials (STS, metadata) are fetched again a few minutes before; 0: never */
  char creds_error[KG_ERRLEN];
  long long skew_s; /* KINGEST_S3_CLOCK_SKEW: seconds added to the signing clock (a test hook) */
  bool gcs;         /* the endpoint is Google Cloud Storage's XML API, whose writes take x-goog-if-generation-match */
} s3_t;

static s3_t *s3_of(kg_fs_t *fs) { return fs->data; }

/* The key of path PATH: without its leading slashes. */
static const char *key_of(const char *path) {
  while (*path == '/')
    path++;
  return path;
}

/* The XML element NAME's text in BODY from FROM on (entities decoded) into a new string, *END past its close; NULL
 * when there is none before LIMIT (NULL: the end). */
static char *xml_text(const char *from, const char *limit, const char *name, const char **end) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", name);
  snprintf(close, sizeof close, "</%s>", name);
  const char *s = strstr(from, open);
  if (!s || (limit && s >= limit)) return NULL;
  s += strlen(open);
  const char *e = strstr(s, close);
  if (!e || (limit && e > limit)) return NULL;
  if (end) *end = e + strlen(close);
  kg_buf_t b = {0};
  for (const char *p = s; p < e; p++) {
    static const struct {
      const char *entity, *c;
    } entities[] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&#34;", "\""}};
    bool done = false;
    for (size_t i = 0; !done && *p == '&' && i < sizeof entities / sizeof entities[0]; i++)
      if (!strncmp(p, entities[i].entity, strlen(entities[i].entity))) {
        kg_buf_append(&b, entities[i].c, 1);
        p += strlen(entities[i].entity) - 1;
        done = true;
      }
    if (!done) kg_buf_append(&b, p, 1);
  }
  return b.data ? b.data : kg_xstrdup("");
}

void kg_s3_error_reason(long status, const char *body, const char *region_header, char *out, size_t size) {
  char *code = body ? xml_text(body, NULL, "Code", NULL) : NULL;
  char *message = body ? xml_text(body, NULL, "Message", NULL) : NULL;
  char *region = body ? xml_text(body, NULL, "Region", NULL) : NULL;
  char *endpoint = body ? xml_text(body, NULL, "Endpoint", NULL) : NULL;
  if (!region && region_header && *region_header) region = kg_xstrdup(region_header);
  if (!code) { /* an answer without a body (HEAD): the status says it */
    const char *guess = status == 403   ? "AccessDenied or a bad signature (a HEAD answer has no body to say which)"
                        : status == 404 ? "NoSuchKey or NoSuchBucket"
                        : status == 301 ? "PermanentRedirect"
                        : status == 412 ? "PreconditionFailed"
                        : status == 503 ? "SlowDown"
                                        : NULL;
    if (guess) code = kg_xstrdup(guess);
  }
  char where[256] = "";
  if (region && *region)
    snprintf(where, sizeof where, " (the bucket is in region %s: set fs.s3a.endpoint.region=%s)", region, region);
  else if (endpoint && *endpoint)
    snprintf(where, sizeof where, " (the bucket's endpoint is %s)", endpoint);
  snprintf(out, size, "HTTP %ld%s%s%s%s%s", status, code ? " " : "", code ? code : "", message ? ": " : "",
           message ? message : "", where);
  free(code);
  free(message);
  free(region);
  free(endpoint);
}

/* http.c's reason hook: S3's error document. */
static void s3_reason(const kg_http_response_t *r, char *out, size_t size) {
  if (!r->status) {
    kg_http_reason(r, out, size);
    return;
  }
  kg_s3_error_reason(r->status, r->body.len ? r->body.data : NULL, kg_http_response_header(r, "x-amz-bucket-region"),
                     out, size);
}

/* S3's error document and, when the request was tried more than once, the tries (" (3 attempts in 0.7 s, as many as
 * allowed)"): the reason of an answer its caller judges (any_status). */
static void s3_reason_tried(const kg_http_response_t *r, char *out, size_t size) {
  s3_reason(r, out, size);
  size_t used = strlen(out);
  kg_http_retry_t retry = {0}; /* S3's requests have no deadline, the only part of the policy the words need */
  if (used + 1 < size) kg_http_tries_said(&retry, r, out + used, size - used);
}

/* ---- the credential chain ---------------------------------------------------------------------------------- */

/* Notes the secrets of C as the job's secrets: masked wherever a message or a file could show them. */
static void note_secrets(const kg_s3_creds_t *c) {
  if (c->secret_key && *c->secret_key) kg_secret_note(c->secret_key);
  if (c->session_token && *c->session_token) kg_secret_note(c->session_token);
}

/* Temporary credentials from STS's AssumeRoleWithWebIdentity for ROLE_ARN with the token in TOKEN_FILE (as
 * Kubernetes' service accounts give them). */
static int from_web_identity(s3_t *s, const char *role_arn, const char *token_file, kg_s3_creds_t *out,
                             int64_t *expire_s, char *errbuf) {
  size_t len = 0;
  int err = 0;
  char *token = kg_read_file(token_file, &len, &err);
  if (!token)
    return kg_fail(errbuf, KG_EIO, "the web identity token file %s (AWS_WEB_IDENTITY_TOKEN_FILE) cannot be read: %s",
                   token_file, err > 0 ? strerror(err) : "read error");
  kg_strtrim(token);
  kg_secret_note(token);
  const char *sts = getenv("AWS_ENDPOINT_URL_STS");
  char *endpoint = sts && *sts ? kg_xstrdup(sts) : kg_xasprintf("https://sts.%s.amazonaws.com", s->region);
  const char *session = getenv("AWS_ROLE_SESSION_NAME");
  kg_buf_t form = {0};
  kg_buf_append(&form, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleSessionName=", 69);
  kg_buf_append_url_escaped(&form, session && *session ? session : "kingest", false);
  kg_buf_append(&form, "&RoleArn=", 9);
  kg_buf_append_url_escaped(&form, role_arn, false);
  kg_buf_append(&form, "&WebIdentityToken=", 18);
  kg_buf_append_url_escaped(&form, token, false);
  const char *headers[] = {"Content-Type: application/x-www-form-urlencoded", "Accept: application/xml", NULL};
  kg_http_request_t req = {
      .method = "POST",
      .url = endpoint,
      .headers = headers,
      .body = {.kind = KG_HTTP_BODY_MEMORY, .data = form.data, .len = (int64_t)form.len},
      .connect_timeout_ms = s->o.connect_ms,
      .timeout_ms = 30000,
      .retry = {.attempts = 3, .pause_ms = 500, .retry_on = KG_HTTP_RETRY_CONNECT | KG_HTTP_RETRY_STATUS},
      .reason = s3_reason,
      .service = "STS"};
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = kg_http_perform(NULL, &req, &r, why);
  if (rc) {
    kg_fail(errbuf, rc, "STS refused AssumeRoleWithWebIdentity for role %s: %s", role_arn, why);
  } else {
    out->access_key = xml_text(r.body.data ? r.body.data : "", NULL, "AccessKeyId", NULL);
    out->secret_key = xml_text(r.body.data ? r.body.data : "", NULL, "SecretAccessKey", NULL);
    out->session_token = xml_text(r.body.data ? r.body.data : "", NULL, "SessionToken", NULL);
    char *expiration = xml_text(r.body.data ? r.body.data : "", NULL, "Expiration", NULL);
    struct tm tm = {0};
    if (expiration && strptime(expiration, "%Y-%m-%dT%H:%M:%S", &tm)) *expire_s = (int64_t)timegm(&tm);
    free(expiration);
    if (!out->access_key || !out->secret_key)
      rc =
          kg_fail(errbuf, KG_EIO, "STS's answer to AssumeRoleWithWebIdentity for role %s has no credentials", role_arn);
    out->source = kg_xasprintf("web identity (role %s, token %s)", role_arn, token_file);
  }
  kg_http_response_free(&r);
  kg_buf_free(&form);
  memset(token, 0, len);
  free(token);
  free(endpoint);
  return rc;
}

/* The string value of "NAME" in the flat JSON object TEXT (the metadata service's answer); a new string or NULL. */
static char *json_string(const char *text, const char *name) {
  char *quoted = kg_xasprintf("\"%s\"", name);
  const char *p = strstr(text, quoted);
  free(quoted);
  if (!p) return NULL;
  p = strchr(p + strlen(name) + 2, ':');
  if (!p) return NULL;
  p = strchr(p, '"');
  if (!p) return NULL;
  const char *e = strchr(p + 1, '"');
  return e ? kg_xstrndup(p + 1, (size_t)(e - p - 1)) : NULL;
}

/* The instance role's credentials from EC2's metadata service, IMDSv2 (a session token first). */
static int from_instance(s3_t *s, kg_s3_creds_t *out, int64_t *expire_s, char *errbuf) {
  const char *endpoint = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  char *base = kg_xstrdup(endpoint && *endpoint ? endpoint : "http://169.254.169.254");
  size_t bl = strlen(base);
  if (bl && base[bl - 1] == '/') base[bl - 1] = 0;
  char *url = kg_xasprintf("%s/latest/api/token", base);
  const char *put_headers[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
  kg_http_request_t req = {.method = "PUT",
                           .url = url,
                           .headers = put_headers,
                           .connect_timeout_ms = 1000,
                           .timeout_ms = 2000,
                           .service = "the instance metadata service"};
  kg_http_response_t r = {0};
  char why[KG_ERRLEN];
  int rc = kg_http_perform(NULL, &req, &r, why);
  char *token = rc ? NULL : kg_xstrndup(r.body.data ? r.body.data : "", r.body.len);
  kg_http_response_free(&r);
  free(url);
  if (rc) {
    free(base);
    return kg_fail(errbuf, rc, "no instance metadata (IMDSv2): %s", why);
  }
  kg_secret_note(token);
  char *header = kg_xasprintf("X-aws-ec2-metadata-token: %s", token);
  const char *get_headers[] = {header, NULL};
  url = kg_xasprintf("%s/latest/meta-data/iam/security-credentials/", base);
  req = (kg_http_request_t){.url = url,
                            .headers = get_headers,
                            .connect_timeout_ms = 1000,
                            .timeout_ms = 2000,
                            .service = "the instance metadata service"};
  rc = kg_http_perform(NULL, &req, &r, why);
  char *role = rc ? NULL : kg_xstrndup(r.body.data ? r.body.data : "", strcspn(r.body.data ? r.body.data : "", "\r\n"));
  kg_http_response_free(&r);
  free(url);
  if (!rc && !*role) rc = kg_fail(why, KG_EIO, "the instance has no IAM role");
  if (!rc) {
    url = kg_xasprintf("%s/latest/meta-data/iam/security-credentials/%s", base, role);
    req.url = url;
    rc = kg_http_perform(NULL, &req, &r, why);
    free(url);
  }
  if (!rc) {
    const char *body = r.body.data ? r.body.data : "";
    out->access_key = json_string(body, "AccessKeyId");
    out->secret_key = json_string(body, "SecretAccessKey");
    out->session_token = json_string(body, "Token");
    char *expiration = json_string(body, "Expiration");
    struct tm tm = {0};
    if (expiration && strptime(expiration, "%Y-%m-%dT%H:%M:%S", &tm)) *expire_s = (int64_t)timegm(&tm);
    free(expiration);
    if (!out->access_key || !out->secret_key) rc = kg_fail(why, KG_EIO, "the role %s's answer has no keys", role);
    out->source = kg_xasprintf("the instance metadata service (role %s)", role);
  }
  kg_http_response_free(&r);
  if (rc) kg_fail(errbuf, rc, "no credentials from the instance metadata (IMDSv2) at %s: %s", base, why);
  free(role);
  free(header);
  free(token);
  free(base);
  return rc;
}

/* Finds the credentials, in the chain's order; under S->mutex. */
static int resolve(s3_t *s, char *errbuf) {
  kg_s3_creds_clear(&s->creds);
  s->creds_expire_s = 0;
  kg_s3_creds_t *c = &s->creds;
  /* 1. The job's keys. */
  if (*s->o.access_key || *s->o.secret_key) {
    if (!*s->o.access_key || !*s->o.secret_key)
      return kg_fail(errbuf, KG_EINVAL, "S3 bucket %s: fs.s3a.%s.key is given without fs.s3a.%s.key", s->bucket,
                     *s->o.access_key ? "access" : "secret", *s->o.access_key ? "secret" : "access");
    c->access_key = kg_xstrdup(s->o.access_key);
    c->secret_key = kg_xstrdup(s->o.secret_key);
    if (*s->o.session_token) c->session_token = kg_xstrdup(s->o.session_token);
    c->source = kg_xstrdup("fs.s3a.access.key and fs.s3a.secret.key");
    return KG_OK;
  }
  /* 2. The environment. */
  const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
  if (id && *id && secret && *secret) {
    c->access_key = kg_xstrdup(id);
    c->secret_key = kg_xstrdup(secret);
    const char *token = getenv("AWS_SESSION_TOKEN");
    if (token && *token) c->session_token = kg_xstrdup(token);
    c->source = kg_xstrdup("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    note_secrets(c);
    return KG_OK;
  }
  /* 3. The profile, of the credentials file, then of the config file (which may name a role for web identity). */
  const char *profile = getenv("AWS_PROFILE");
  bool named = profile && *profile;
  if (!named) profile = "default";
  bool found = false;
  char *files[2] = {aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), aws_file("AWS_CONFIG_FILE", "config")};
  for (int i = 0; i < 2; i++) {
    size_t len;
    int err;
    char *text = files[i] ? kg_read_file(files[i], &len, &err) : NULL;
    kg_s3_creds_t got = {0};
    if (text && kg_s3_profile_parse(text, profile, i == 1, &got)) {
      found = true;
      if (!c->region && got.region) c->region = kg_xstrdup(got.region);
      if (!c->role_arn && got.role_arn) c->role_arn = kg_xstrdup(got.role_arn);
      if (!c->token_file && got.token_file) c->token_file = kg_xstrdup(got.token_file);
      if (!c->access_key && got.access_key && got.secret_key) {
        c->access_key = kg_xstrdup(got.access_key);
        c->secret_key = kg_xstrdup(got.secret_key);
        if (got.session_token) c->session_token = kg_xstrdup(got.session_token);
        c->source = kg_xasprintf("the profile %s of %s", profile, files[i]);
      }
    }
    kg_s3_creds_clear(&got);
    if (text) memset(text, 0, len);
    free(text);
  }
  if (named && !found) {
    int rc = kg_fail(errbuf, KG_EINVAL, "S3 bucket %s: AWS_PROFILE=%s is in neither %s nor %s", s->bucket, profile,
                     files[0] ? files[0] : "~/.aws/credentials", files[1] ? files[1] : "~/.aws/config");
    free(files[0]);
    free(files[1]);
    return rc;
  }
  free(files[0]);
  free(files[1]);
  if (c->region && !s->o.given_region && !getenv("AWS_REGION") && !getenv("AWS_DEFAULT_REGION")) {
    free(s->region);
    s->region = kg_xstrdup(c->region);
  }
  if (c->access_key) {
    note_secrets(c);
    return KG_OK;
  }
  /* 4. Web identity: the environment's, else the profile's. */
  const char *role = getenv("AWS_ROLE_ARN"), *token_file = getenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  if (!(role && *role && token_file && *token_file)) role = c->role_arn, token_file = c->token_file;
  if (role && *role && token_file && *token_file) {
    char *r = kg_xstrdup(role), *t = kg_xstrdup(token_file);
    kg_s3_creds_t got = {0};
    int rc = from_web_identity(s, r, t, &got, &s->creds_expire_s, errbuf);
    free(r);
    free(t);
    if (!rc) {
      note_secrets(&got);
      kg_s3_creds_clear(c);
      *c = got;
    } else {
      kg_s3_creds_clear(&got);
    }
    return rc;
  }
  /* 5. The instance's metadata, unless turned off. */
  const char *off = getenv("AWS_EC2_METADATA_DISABLED");
  char why[KG_ERRLEN] = "AWS_EC2_METADATA_DISABLED is set";
  if (!(off && !strcasecmp(off, "true"))) {
    kg_s3_creds_t got = {0};
    if (!from_instance(s, &got, &s->creds_expire_s, why)) {
      note_secrets(&got);
      kg_s3_creds_clear(c);
      *c = got;
      return KG_OK;
    }
    kg_s3_creds_clear(&got);
  }
  return kg_fail(errbuf, KG_EINVAL,
                 "S3 bucket %s: no credentials: give fs.s3a.access.key and fs.s3a.secret.key, or AWS_ACCESS_KEY_ID "
                 "and AWS_SECRET_ACCESS_KEY, or a profile (AWS_PROFILE, ~/.aws/credentials), or web identity "
                 "(AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE); %s",
                 s->bucket, why);
}

/* The signer of every request (http.h): SigV4 for service s3 with the chain's credentials. */
static int sign(void *arg, const kg_http_signing_t *req, kg_http_headers_t *add, char *errbuf) {
  s3_t *s = arg;
  pthread_mutex_lock(&s->mutex);
  long long now = (long long)time(NULL);
  int rc = KG_OK;
  if (!s->resolved || (s->creds_expire_s && now > s->creds_expire_s - 300)) {
    rc = resolve(s, s->creds_error);
    s->resolved = true;
    if (rc) s->creds_expire_s = 0;
    if (!rc) s->creds_error[0] = 0;
  } else if (s->creds_error[0]) {
    rc = KG_EINVAL;
  }
  if (rc) {
    snprintf(errbuf, KG_ERRLEN, "%s", s->creds_error);
  } else {
    char date[17];
    kg_sigv4_date(now + s->skew_s, date);
    kg_sigv4_keys_t keys = {s->creds.access_key, s->creds.secret_key, s->creds.session_token};
    rc = kg_sigv4_sign(req->method, req->url, req->headers, req->body_sha256, date, s->region, "s3", &keys, true, add,
                       NULL, errbuf);
  }
  pthread_mutex_unlock(&s->mutex);
  return rc;
}

/* ---- requests --------------------------------------------------------------------------------------------- */

/* The URL of KEY ("" for the bucket) with QUERY (already encoded; NULL: none), a new string. */
static char *url_of(const s3_t *s, const char *key, const char *query) {
  kg_buf_t b = {0};
  kg_buf_appendf(&b, "%s%s/", s->base, s->prefix);
  kg_buf_append_url_escaped(&b, key, true);
  if (query && *query) kg_buf_appendf(&b, "?%s", query);
  return b.data;
}

/* What one request sends and expects, for s3_perform. */
typedef struct {
  const char *method;
  const char *key;   /* "" for the bucket */
  const char *query; /* encoded; NULL: none */
  const char *const *headers;
  kg_http_body_t body;
  kg_http_answer_t answer;
  bool any_status;
  bool once; /* not to be tried again after a try that may have reached S3 (a conditional write's answer lost) */
} s3_call_t;

/* Performs CALL on S into *R (the caller frees it); the error names S3, the bucket and the key. */
static int s3_perform(s3_t *s, const s3_call_t *call, kg_http_response_t *r, char *errbuf) {
  char *url = url_of(s, call->key, call->query);
  kg_http_request_t req = {
      .method = call->method,
      .url = url,
      .headers = call->headers,
      .body = call->body,
      .answer = call->answer,
      .connect_timeout_ms = s->o.connect_ms,
      .stall_ms = s->o.timeout_ms,
      .auth = {.sign = sign, .sign_arg = s},
      .retry = {.attempts = s->o.attempts,
                .pause_ms = s->o.retry_pause_ms,
                .max_pause_ms = 20000,
                .retry_on = KG_HTTP_RETRY_CONNECT | KG_HTTP_RETRY_STATUS | (call->once ? 0 : KG_HTTP_RETRY_TRANSPORT),
                .interruptible = true},
      .any_status = call->any_status,
      .reason = s3_reason,
      .service = "S3",
  };
  char why[KG_ERRLEN];
  int rc = kg_http_perform(NULL, &req, r, why);
  if (rc && r->failure == KG_HTTP_FAIL_SIGNER)
    kg_fail(errbuf, rc, "%s", strstr(why, "cannot sign the request: ") ? strstr(why, ": ") + 2 : why);
  else if (rc)
    kg_fail(errbuf, rc, "S3 bucket %s%s%s: %s", s->bucket, *call->key ? " key " : "", call->key, why);
  free(url);
  return rc;
}

/* The ETag header without its quotes, a new string (NULL without one). */
static char *etag_of(const kg_http_response_t *r) {
  const char *e = kg_http_response_header(r, "ETag");
  if (!e) return NULL;
  size_t len = strlen(e);
  if (len >= 2 && e[0] == '"' && e[len - 1] == '"') return kg_xstrndup(e + 1, len - 2);
  return kg_xstrdup(e);
}

/* The headers of a new object: server-side encryption as asked. */
static void sse_headers(const s3_t *s, kg_http_headers_t *h) {
  if (s->o.sse == 1) kg_http_headers_add(h, "x-amz-server-side-encryption", "AES256");
  if (s->o.sse == 2) {
    kg_http_headers_add(h, "x-amz-server-side-encryption", "aws:kms");
    if (*s->o.sse_key) kg_http_headers_add(h, "x-amz-server-side-encryption-aws-kms-key-id", s->o.sse_key);
  }
}

/* NULL-terminated view of H's lines (owned by H). */
static const char *const *lines_of(kg_http_headers_t *h) {
  h->lines = kg_xrealloc(h->lines, (h->count + 1) * sizeof *h->lines);
  h->lines[h->count] = NULL;
  return (const char *const *)h->lines;
}

/* ---- the object calls ------------------------------------------------------------------------------------- */

static int s3_head(kg_fs_t *fs, const char *path, kg_fs_object_t *out, char *errbuf) {
  s3_t *s = s3_of(fs);
  *out = (kg_fs_object_t){.size = -1};
  kg_http_response_t r = {0};
  s3_call_t call = {.method = "HEAD", .key = key_of(path), .any_status = true};
  int rc = s3_perform(s, &call, &r, errbuf);
  if (!rc && r.status == 200) {
    const char *len = kg_http_response_header(&r, "Content-Length");
    out->path = kg_xstrdup(path);
    out->size = len ? strtoll(len, NULL, 10) : 0;
    out->etag = etag_of(&r);
  } else if (!rc && r.status != 404) {
    char reason[KG_ERRLEN];
    s3_reason_tried(&r, reason, sizeof reason);
    rc = kg_fail(errbuf, KG_EIO, "S3 bucket %s key %s: HEAD: %s", s->bucket, key_of(path), reason);
  }
  kg_http_response_free(&r);
  return rc;
}

/* The hex MD5 of LEN bytes of FD from OFFSET into HEX, and the raw digest into RAW. */
static int md5_range(int fd, int64_t offset, int64_t len, uint8_t raw[KG_MD5_SIZE], char *errbuf) {
  kg_md5_t m;
  kg_md5_init(&m);
  enum { CHUNK = 1 << 20 };
  char *buf = kg_xmalloc(CHUNK);
  int rc = KG_OK;
  for (int64_t done = 0; done < len;) {
    size_t want = len - done < CHUNK ? (size_t)(len - done) : CHUNK;
    ssize_t n = pread(fd, buf, want, (off_t)(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      rc = kg_fail(errbuf, KG_EIO, "%s", n < 0 ? strerror(errno) : "the file is shorter than it was");
      break;
    }
    kg_md5_update(&m, buf, (size_t)n);
    done += n;
  }
  free(buf);
  kg_md5_final(&m, raw);
  return rc;
}

static void hex_of(const uint8_t *raw, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

static int s3_expected_etag(kg_fs_t *fs, const char *local_path, bool multipart, char **etag, char *errbuf) {
  s3_t *s = s3_of(fs);
  *etag = NULL;
  if (s->o.sse == 2) return KG_OK; /* SSE-KMS's ETags are not MD5s */
  int fd = open(local_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kg_fail(errbuf, KG_EIO, "cannot open %s: %s", local_path, strerror(errno));
  struct stat st;
  int rc = fstat(fd, &st) ? kg_fail(errbuf, KG_EIO, "cannot stat %s: %s", local_path, strerror(errno)) : KG_OK;
  char hex[2 * KG_MD5_SIZE + 24];
  uint8_t raw[KG_MD5_SIZE];
  if (!rc && !multipart) {
    rc = md5_range(fd, 0, st.st_size, raw, errbuf);
    hex_of(raw, KG_MD5_SIZE, hex);
  } else if (!rc) {
    /* S3's multipart ETag: the MD5 of the parts' MD5s, then "-" and the number of parts. */
    kg_md5_t all;
    kg_md5_init(&all);
    int64_t parts = 0;
    for (int64_t off = 0; !rc && (off < st.st_size || parts == 0); off += s->o.part_size, parts++) {
      int64_t len = st.st_size - off < s->o.part_size ? st.st_size - off : s->o.part_size;
      rc = md5_range(fd, off, len, raw, errbuf);
      kg_md5_update(&all, raw, KG_MD5_SIZE);
    }
    kg_md5_final(&all, raw);
    hex_of(raw, KG_MD5_SIZE, hex);
    snprintf(hex + 2 * KG_MD5_SIZE, 24, "-%lld", (long long)parts);
  }
  close(fd);
  if (!rc) *etag = kg_xstrdup(hex);
  return rc;
}

static int s3_upload_begin(kg_fs_t *fs, const char *path, char **upload_id, char *errbuf) {
  s3_t *s = s3_of(fs);
  *upload_id = NULL;
  kg_http_headers_t h = {0};
  sse_headers(s, &h);
  kg_http_response_t r = {0};
  s3_call_t call = {.method = "POST", .key = key_of(path), .query = "uploads", .headers = lines_of(&h)};
  int rc = s3_perform(s, &call, &r, errbuf);
  if (!rc) {
    *upload_id = xml_text(r.body.data ? r.body.data : "", NULL, "UploadId", NULL);
    if (!*upload_id)
      rc = kg_fail(errbuf, KG_EIO, "S3 bucket %s key %s: CreateMultipartUpload's answer has no UploadId", s->bucket,
                   key_of(path));
  }
  kg_http_response_free(&r);
  kg_http_headers_free(&h);
  return rc;
}

/* The parts of one upload, sent by several threads (fs.s3a.fast.upload.active.blocks). */
typedef struct {
  s3_t *s;
  const char *key;
  const char *upload_id;
  int fd;
  int64_t size;
  int64_t nparts;
  char **etags; /* per part, new strings */
  pthread_mutex_t mutex;
  int64_t next;
  int rc;
  char errbuf[KG_ERRLEN];
} parts_t;

static void *part_worker(void *arg) {
  parts_t *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mutex);
    int64_t i = p->rc ? p->nparts : p->next++;
    pthread_mutex_unlock(&p->mutex);
    if (i >= p->nparts) break;
    int64_t off = i * p->s->o.part_size;
    int64_t len = p->size - off < p->s->o.part_size ? p->size - off : p->s->o.part_size;
    kg_buf_t q = {0};
    kg_buf_appendf(&q, "partNumber=%lld&uploadId=", (long long)(i + 1));
    kg_buf_append_url_escaped(&q, p->upload_id, false);
    kg_http_response_t r = {0};
    char err[KG_ERRLEN];
    s3_call_t call = {.method = "PUT",
                      .key = p->key,
                      .query = q.data,
                      .body = {.kind = KG_HTTP_BODY_FILE, .fd = p->fd, .offset = off, .len = len},
                      .answer = {.kind = KG_HTTP_ANSWER_DISCARD}};
    int rc = s3_perform(p->s, &call, &r, err);
    if (!rc) {
      p->etags[i] = etag_of(&r);
      if (!p->etags[i])
        rc = kg_fail(err, KG_EIO, "S3 bucket %s key %s: UploadPart %lld's answer has no ETag", p->s->bucket, p->key,
                     (long long)(i + 1));
    }
    kg_http_response_free(&r);
    kg_buf_free(&q);
    if (rc) {
      pthread_mutex_lock(&p->mutex);
      if (!p->rc) {
        p->rc = rc;
        snprintf(p->errbuf, sizeof p->errbuf, "%s", err);
      }
      pthread_mutex_unlock(&p->mutex);
    }
  }
  return NULL;
}

/* A conditional write's 412 (409 from a store that says ConditionalRequestConflict): the key exists. */
static bool precondition_failed(const kg_http_response_t *r) { return r->status == 412 || r->status == 409; }

static int s3_put_new(kg_fs_t *fs, const char *local_path, const char *path, const char *upload_id, kg_fs_object_t *out,
                      bool *exists, char *errbuf) {
  s3_t *s = s3_of(fs);
  *out = (kg_fs_object_t){.size = -1};
  *exists = false;
  const char *key = key_of(path);
  int fd = open(local_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kg_fail(errbuf, KG_EIO, "cannot open %s: %s", local_path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st)) {
    close(fd);
    return kg_fail(errbuf, KG_EIO, "cannot stat %s: %s", local_path, strerror(errno));
  }
  kg_http_headers_t h = {0};
  kg_http_headers_add(&h, "If-None-Match", "*");
  /* Google's XML API honours If-None-Match on reads only; generation 0 is its "no object there" for a write. */
  if (s->gcs) kg_http_headers_add(&h, "x-goog-if-generation-match", "0");
  kg_http_response_t r = {0};
  int rc;
  if (!upload_id) {
    sse_headers(s, &h);
    s3_call_t call = {.method = "PUT",
                      .key = key,
                      .headers = lines_of(&h),
                      .body = {.kind = KG_HTTP_BODY_FILE, .fd = fd, .offset = 0, .len = st.st_size},
                      .answer = {.kind = KG_HTTP_ANSWER_DISCARD},
                      .any_status = true,
                      .once = true};
    rc = s3_perform(s, &call, &r, errbuf);
  } else {
    parts_t p = {.s = s, .key = key, .upload_id = upload_id, .fd = fd, .size = st.st_size};
    p.nparts = st.st_size ? (st.st_size + s->o.part_size - 1) / s->o.part_size : 1;
    p.etags = kg_xcalloc((size_t)p.nparts, sizeof *p.etags);
    pthread_mutex_init(&p.mutex, NULL);
    int64_t nthreads = s->o.upload_threads < p.nparts ? s->o.upload_threads : p.nparts;
    pthread_t *threads = kg_xcalloc((size_t)nthreads, sizeof *threads);
    int64_t started = 0;
    while (started + 1 < nthreads && !pthread_create(&threads[started], NULL, part_worker, &p))
      started++;
    part_worker(&p);
    for (int64_t t = 0; t < started; t++)
      pthread_join(threads[t], NULL);
    free(threads);
    pthread_mutex_destroy(&p.mutex);
    rc = p.rc;
    if (rc) snprintf(errbuf, KG_ERRLEN, "%s", p.errbuf);
    if (!rc) {
      kg_buf_t xml = {0}, q = {0};
      kg_buf_append(&xml, "<CompleteMultipartUpload>", 25);
      for (int64_t i = 0; i < p.nparts; i++)
        kg_buf_appendf(&xml, "<Part><PartNumber>%lld</PartNumber><ETag>\"%s\"</ETag></Part>", (long long)(i + 1),
                       p.etags[i]);
      kg_buf_append(&xml, "</CompleteMultipartUpload>", 26);
      kg_buf_append(&q, "uploadId=", 9);
      kg_buf_append_url_escaped(&q, upload_id, false);
      kg_http_headers_add(&h, "Content-Type", "application/xml");
      s3_call_t call = {.method = "POST",
                        .key = key,
                        .query = q.data,
                        .headers = lines_of(&h),
                        .body = {.kind = KG_HTTP_BODY_MEMORY, .data = xml.data, .len = (int64_t)xml.len},
                        .any_status = true,
                        .once = true};
      rc = s3_perform(s, &call, &r, errbuf);
      /* S3 may answer 200 and put an error in the body (a failure after the answer began). */
      if (!rc && r.status == 200 && r.body.len && strstr(r.body.data, "<Error>")) r.status = 500;
      kg_buf_free(&xml);
      kg_buf_free(&q);
    }
    for (int64_t i = 0; i < p.nparts; i++)
      free(p.etags[i]);
    free(p.etags);
  }
  if (!rc && r.status / 100 == 2) {
    out->path = kg_xstrdup(path);
    out->size = st.st_size;
    out->etag = upload_id ? xml_text(r.body.data ? r.body.data : "", NULL, "ETag", NULL) : etag_of(&r);
    if (out->etag && out->etag[0] == '"') { /* <ETag>"..."</ETag> */
      size_t len = strlen(out->etag);
      memmove(out->etag, out->etag + 1, len - 1);
      out->etag[len - 2 < len ? len - 2 : 0] = 0;
    }
  } else if (!rc && precondition_failed(&r)) {
    *exists = true;
    rc = kg_fail(errbuf, KG_EIO,
                 "S3 bucket %s key %s: an object is there already (HTTP %ld to a write under "
                 "If-None-Match: *): never overwritten",
                 s->bucket, key, r.status);
  } else if (!rc) {
    char reason[KG_ERRLEN];
    s3_reason_tried(&r, reason, sizeof reason);
    rc = kg_fail(errbuf, KG_EIO, "S3 bucket %s key %s: %s: %s", s->bucket, key,
                 upload_id ? "CompleteMultipartUpload" : "PutObject", reason);
  }
  kg_http_response_free(&r);
  kg_http_headers_free(&h);
  close(fd);
  return rc;
}

/* One page of a listing: GET ?QUERY on the bucket, then the objects between <TAG> elements into *OUT. */
static int list_pages(s3_t *s, const char *base_query, const char *tag, bool uploads, const char *prefix,
                      kg_fs_object_t **out, size_t *count, char ***folders, size_t *nfolders, char *errbuf) {
  *out = NULL;
  *count = 0;
  size_t cap = 0;
  char *marker = NULL, *marker2 = NULL;
  int rc = KG_OK;
  for (;;) {
    kg_buf_t q = {0};
    kg_buf_appendf(&q, "%s&prefix=", base_query);
    kg_buf_append_url_escaped(&q, prefix, false);
    if (marker && !uploads) {
      kg_buf_append(&q, "&continuation-token=", 20);
      kg_buf_append_url_escaped(&q, marker, false);
    } else if (marker) {
      kg_buf_append(&q, "&key-marker=", 12);
      kg_buf_append_url_escaped(&q, marker, false);
      kg_buf_append(&q, "&upload-id-marker=", 18);
      kg_buf_append_url_escaped(&q, marker2 ? marker2 : "", false);
    }
    kg_http_response_t r = {0};
    s3_call_t call = {.method = "GET", .key = "", .query = q.data};
    rc = s3_perform(s, &call, &r, errbuf);
    kg_buf_free(&q);
    if (rc) {
      kg_http_response_free(&r);
      break;
    }
    const char *body = r.body.data ? r.body.data : "", *p = body;
    char open[32], close[32];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    for (const char *e; (p = strstr(p, open)) && (e = strstr(p, close)); p = e) {
      if (*count == cap) {
        cap = cap ? cap * 2 : 64;
        *out = kg_xrealloc(*out, cap * sizeof **out);
      }
      kg_fs_object_t *o = &(*out)[(*count)++];
      *o = (kg_fs_object_t){.size = -1};
      char *key = xml_text(p, e, "Key", NULL);
      o->path = kg_xasprintf("/%s", key ? key : "");
      free(key);
      char *size = xml_text(p, e, "Size", NULL);
      if (size) o->size = strtoll(size, NULL, 10);
      free(size);
      o->etag = xml_text(p, e, "ETag", NULL);
      if (o->etag && o->etag[0] == '"') {
        size_t len = strlen(o->etag);
        memmove(o->etag, o->etag + 1, len);
        if (len >= 2) o->etag[len - 2] = 0;
      }
      if (uploads) o->upload_id = xml_text(p, e, "UploadId", NULL);
    }
    for (const char *e; folders && (p = strstr(body, "<CommonPrefixes>")) && (e = strstr(p, "</CommonPrefixes>"));
         body = e + 1) {
      char *pre = xml_text(p, e, "Prefix", NULL);
      if (pre) {
        *folders = kg_xrealloc(*folders, (*nfolders + 1) * sizeof **folders);
        (*folders)[(*nfolders)++] = pre;
      }
    }
    char *truncated = xml_text(r.body.data ? r.body.data : "", NULL, "IsTruncated", NULL);
    bool more = truncated && !strcmp(truncated, "true");
    free(truncated);
    free(marker);
    free(marker2);
    marker = marker2 = NULL;
    if (more && !uploads) marker = xml_text(r.body.data, NULL, "NextContinuationToken", NULL);
    if (more && uploads) {
      marker = xml_text(r.body.data, NULL, "NextKeyMarker", NULL);
      marker2 = xml_text(r.body.data, NULL, "NextUploadIdMarker", NULL);
    }
    kg_http_response_free(&r);
    if (!marker) break;
  }
  free(marker);
  free(marker2);
  if (rc) {
    kg_fs_objects_free(*out, *count);
    *out = NULL;
    *count = 0;
  }
  return rc;
}

static int s3_list_objects(kg_fs_t *fs, const char *prefix, kg_fs_object_t **out, size_t *count, char *errbuf) {
  return list_pages(s3_of(fs), "list-type=2", "Contents", false, key_of(prefix), out, count, NULL, NULL, errbuf);
}

static int s3_list_uploads(kg_fs_t *fs, const char *prefix, kg_fs_object_t **out, size_t *count, char *errbuf) {
  return list_pages(s3_of(fs), "uploads", "Upload", true, key_of(prefix), out, count, NULL, NULL, errbuf);
}

static int s3_abort_upload(kg_fs_t *fs, const char *path, const char *upload_id, char *errbuf) {
  s3_t *s = s3_of(fs);
  kg_buf_t q = {0};
  kg_buf_append(&q, "uploadId=", 9);
  kg_buf_append_url_escaped(&q, upload_id, false);
  kg_http_response_t r = {0};
  s3_call_t call = {.method = "DELETE", .key = key_of(path), .query = q.data, .any_status = true};
  int rc = s3_perform(s, &call, &r, errbuf);
  if (!rc && r.status / 100 != 2 && r.status != 404) {
    char reason[KG_ERRLEN];
    s3_reason_tried(&r, reason, sizeof reason);
    rc = kg_fail(errbuf, KG_EIO, "S3 bucket %s key %s: AbortMultipartUpload %s: %s", s->bucket, key_of(path), upload_id,
                 reason);
  }
  kg_http_response_free(&r);
  kg_buf_free(&q);
  return rc;
}

static int s3_remove(kg_fs_t *fs, const char *path, char *errbuf) {
  kg_http_response_t r = {0};
  s3_call_t call = {.method = "DELETE", .key = key_of(path), .any_status = true};
  int rc = s3_perform(s3_of(fs), &call, &r, errbuf);
  if (!rc && r.status / 100 != 2 && r.status != 404) {
    char reason[KG_ERRLEN];
    s3_reason_tried(&r, reason, sizeof reason);
    rc = kg_fail(errbuf, KG_EIO, "S3 bucket %s key %s: DELETE: %s", s3_of(fs)->bucket, key_of(path), reason);
  }
  kg_http_response_free(&r);
  return rc;
}

/* ---- the file system calls ------------------------------------------------------------------------------- */

static int s3_mkdirs(kg_fs_t *fs, const char *path, char *errbuf) {
  (void)fs, (void)path, (void)errbuf;
  return KG_OK; /* keys have no folders to make */
}

static int s3_create(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf) {
  (void)mode, (void)path;
  *out = NULL;
  return kg_fail(errbuf, KG_EINVAL, "S3 bucket %s has no files to write into: an object is written whole, once",
                 s3_of(fs)->bucket);
}

static int s3_exists(kg_fs_t *fs, const char *path, bool *exists, char *errbuf) {
  kg_fs_object_t o;
  int rc = s3_head(fs, path, &o, errbuf);
  *exists = !rc && o.size >= 0;
  kg_fs_object_clear(&o);
  if (rc || *exists) return rc;
  /* A folder: a key under it. */
  char *prefix = kg_xasprintf("%s/", key_of(path));
  kg_http_response_t r = {0};
  kg_buf_t q = {0};
  kg_buf_append(&q, "list-type=2&max-keys=1&prefix=", 30);
  kg_buf_append_url_escaped(&q, prefix, false);
  s3_call_t call = {.method = "GET", .key = "", .query = q.data};
  rc = s3_perform(s3_of(fs), &call, &r, errbuf);
  *exists = !rc && r.body.len && strstr(r.body.data, "<Contents>");
  kg_http_response_free(&r);
  kg_buf_free(&q);
  free(prefix);
  return rc;
}

static int s3_list(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf) {
  *names = NULL;
  *count = 0;
  const char *k = key_of(path);
  char *prefix = *k ? kg_xasprintf("%s/", k) : kg_xstrdup("");
  kg_fs_object_t *objects = NULL;
  size_t n = 0;
  int rc =
      list_pages(s3_of(fs), "list-type=2&delimiter=%2F", "Contents", false, prefix, &objects, &n, names, count, errbuf);
  size_t plen = strlen(prefix);
  for (size_t i = 0; i < *count; i++) { /* the folders: their names without the prefix and the trailing slash */
    char *f = (*names)[i];
    size_t len = strlen(f);
    if (len && f[len - 1] == '/') f[--len] = 0;
    memmove(f, f + (len >= plen ? plen : len), len - (len >= plen ? plen : len) + 1);
  }
  for (size_t i = 0; i < n; i++) {
    *names = kg_xrealloc(*names, (*count + 1) * sizeof **names);
    (*names)[(*count)++] = kg_xstrdup(objects[i].path + 1 + plen);
  }
  kg_fs_objects_free(objects, n);
  free(prefix);
  return rc;
}

static int s3_remove_tree(kg_fs_t *fs, const char *path, char *errbuf) {
  int rc = s3_remove(fs, path, errbuf);
  kg_fs_object_t *objects = NULL;
  size_t n = 0;
  char *prefix = kg_xasprintf("%s/", key_of(path));
  if (!rc) rc = list_pages(s3_of(fs), "list-type=2", "Contents", false, prefix, &objects, &n, NULL, NULL, errbuf);
  for (size_t i = 0; i < n && !rc; i++)
    rc = s3_remove(fs, objects[i].path, errbuf);
  kg_fs_objects_free(objects, n);
  free(prefix);
  return rc;
}

static int s3_sync(kg_fs_t *fs, const char *path, char *errbuf) {
  (void)fs, (void)path, (void)errbuf;
  return KG_OK; /* a completed write is durable */
}

/* The final folder's check: one listing under it, which tells a wrong key, a missing bucket, another region or a
 * clock that is off before any record is read. */
static int s3_check_writable(kg_fs_t *fs, const char *path, const char *property, char *errbuf) {
  s3_t *s = s3_of(fs);
  char *prefix = kg_xasprintf("%s/", key_of(path));
  kg_http_response_t r = {0};
  kg_buf_t q = {0};
  kg_buf_append(&q, "list-type=2&max-keys=1&prefix=", 30);
  kg_buf_append_url_escaped(&q, prefix, false);
  s3_call_t call = {.method = "GET", .key = "", .query = q.data};
  char why[KG_ERRLEN];
  int rc = s3_perform(s, &call, &r, why);
  if (rc) kg_fail(errbuf, rc, "%s=%s: %s", property, path, why);
  kg_http_response_free(&r);
  kg_buf_free(&q);
  free(prefix);
  return rc;
}

static int s3_same_volume(kg_fs_t *fs, const char *a, const char *b, bool *same, char *errbuf) {
  (void)fs, (void)a, (void)b, (void)errbuf;
  *same = false;
  return KG_OK;
}

static int s3_put(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf) {
  s3_t *s = s3_of(fs);
  struct stat st;
  if (stat(local_path, &st)) return kg_fail(errbuf, KG_EIO, "%s", strerror(errno));
  char *upload_id = NULL;
  int rc = st.st_size >= s->o.threshold ? s3_upload_begin(fs, path, &upload_id, errbuf) : KG_OK;
  kg_fs_object_t o;
  bool exists = false;
  if (!rc) rc = s3_put_new(fs, local_path, path, upload_id, &o, &exists, errbuf);
  if (rc && upload_id) {
    char ignored[KG_ERRLEN];
    s3_abort_upload(fs, path, upload_id, ignored);
  }
  if (!rc) kg_fs_object_clear(&o);
  free(upload_id);
  return rc;
}

static int s3_read(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf) {
  kg_http_response_t r = {0};
  s3_call_t call = {.method = "GET", .key = key_of(path)};
  int rc = s3_perform(s3_of(fs), &call, &r, errbuf);
  if (!rc && r.body.len) kg_buf_append(out, r.body.data, r.body.len);
  kg_http_response_free(&r);
  return rc;
}

static void s3_close(kg_fs_t *fs) {
  s3_t *s = s3_of(fs);
  free(s->bucket);
  free(s->base);
  free(s->prefix);
  free(s->region);
  free(s->o.endpoint);
  free(s->o.region);
  free(s->o.access_key);
  free(s->o.secret_key);
  free(s->o.session_token);
  free(s->o.sse_key);
  kg_s3_creds_clear(&s->creds);
  pthread_mutex_destroy(&s->mutex);
  free(s);
}

static char *dup_or_empty(const char *s) { return kg_xstrdup(s ? s : ""); }

int kg_fs_s3_open(const char *uri, const void *options, kg_fs_t **out, char *errbuf) {
  *out = NULL;
  const char *rest = !strncmp(uri, "s3a://", 6) ? uri + 6 : !strncmp(uri, "s3://", 5) ? uri + 5 : NULL;
  if (!rest || !*rest)
    return kg_fail(errbuf, KG_EINVAL, "%s is not an S3 bucket's URI: write s3a://BUCKET (or s3://BUCKET)", uri);
  size_t blen = strcspn(rest, "/?#");
  if (rest[blen] && strcmp(rest + blen, "/"))
    return kg_fail(errbuf, KG_EINVAL,
                   "%s: the URI names the bucket only (s3a://BUCKET); the folder goes in data.publisher.final.dir",
                   uri);
  for (size_t i = 0; i < blen; i++) {
    char c = rest[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.') || blen < 3 || blen > 63)
      return kg_fail(errbuf, KG_EINVAL,
                     "%s: '%.*s' is not an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)", uri,
                     (int)blen, rest);
  }
  kg_s3_options_t defaults = {.endpoint = (char *)"",
                              .region = (char *)"",
                              .access_key = (char *)"",
                              .secret_key = (char *)"",
                              .session_token = (char *)"",
                              .sse_key = (char *)"",
                              .part_size = 64 << 20,
                              .threshold = 128 << 20,
                              .connect_ms = 30000,
                              .timeout_ms = 200000,
                              .attempts = 5,
                              .retry_pause_ms = 500,
                              .upload_threads = 4};
  const kg_s3_options_t *o = options ? options : &defaults;
  s3_t *s = kg_xcalloc(1, sizeof *s);
  s->o = *o;
  s->o.endpoint = dup_or_empty(o->endpoint);
  s->o.region = dup_or_empty(o->region);
  s->o.access_key = dup_or_empty(o->access_key);
  s->o.secret_key = dup_or_empty(o->secret_key);
  s->o.session_token = dup_or_empty(o->session_token);
  s->o.sse_key = dup_or_empty(o->sse_key);
  pthread_mutex_init(&s->mutex, NULL);
  s->bucket = kg_xstrndup(rest, blen);
  const char *env_region = getenv("AWS_REGION");
  if (!env_region || !*env_region) env_region = getenv("AWS_DEFAULT_REGION");
  s->region = kg_xstrdup(*s->o.region ? s->o.region : env_region && *env_region ? env_region : "us-east-1");
  const char *skew = getenv("KINGEST_S3_CLOCK_SKEW");
  if (skew && *skew) s->skew_s = strtoll(skew, NULL, 10);
  /* The endpoint: scheme://host[:port], the bucket in the path or in the host. A bucket with dots cannot be in an
   * https host (the certificate's wildcard covers one label): path-style then. */
  char *endpoint = *s->o.endpoint ? kg_xstrdup(s->o.endpoint) : kg_xasprintf("https://s3.%s.amazonaws.com", s->region);
  size_t elen = strlen(endpoint);
  while (elen && endpoint[elen - 1] == '/')
    endpoint[--elen] = 0;
  if (!strstr(endpoint, "://")) {
    char *with = kg_xasprintf("https://%s", endpoint);
    free(endpoint);
    endpoint = with;
  }
  const char *host = strstr(endpoint, "://") + 3;
  s->gcs = !strncmp(host, "storage.googleapis.com", 22) && strchr(":/", host[22] ? host[22] : '/');
  bool path_style = s->o.path_style || (strchr(s->bucket, '.') && !strncmp(endpoint, "https", 5));
  if (path_style) {
    s->base = kg_xstrdup(endpoint);
    s->prefix = kg_xasprintf("/%s", s->bucket);
  } else {
    s->base = kg_xasprintf("%.*s%s.%s", (int)(host - endpoint), endpoint, s->bucket, host);
    s->prefix = kg_xstrdup("");
  }
  free(endpoint);
  s->object = (kg_fs_object_ops_t){.multipart_threshold = s->o.threshold,
                                   .part_size = s->o.part_size,
                                   .concurrency = s->o.upload_threads,
                                   .expected_etag = s3_expected_etag,
                                   .upload_begin = s3_upload_begin,
                                   .put_new = s3_put_new,
                                   .head = s3_head,
                                   .list = s3_list_objects,
                                   .list_uploads = s3_list_uploads,
                                   .abort_upload = s3_abort_upload,
                                   .remove = s3_remove};
  s->fs = (kg_fs_t){.scheme = !strncmp(uri, "s3a", 3) ? "s3a" : "s3",
                    .mkdirs = s3_mkdirs,
                    .create = s3_create,
                    .rename = NULL,
                    .exists = s3_exists,
                    .list = s3_list,
                    .remove_tree = s3_remove_tree,
                    .sync = s3_sync,
                    .check_writable = s3_check_writable,
                    .same_volume = s3_same_volume,
                    .put = s3_put,
                    .read = s3_read,
                    .close = s3_close,
                    .object = &s->object,
                    .data = s};
  *out = &s->fs;
  return KG_OK;
}
