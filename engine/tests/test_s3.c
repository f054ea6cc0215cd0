/* test_s3.c: the S3 file system's pure parts: SigV4 against AWS's published examples, the credential files'
 * parsing, S3's error answers, the bucket URI's checks, MD5, and the commit's recovery decisions on an object store. */
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "fs_s3.h"
#include "md5.h"
#include "sigv4.h"
#include "test.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* The Authorization header that kg_sigv4_sign adds for the request, a new string. */
static char *authorization(const char *method, const char *url, const char *const *headers, const char *payload,
                           const char *date, const char *service, const kg_sigv4_keys_t *keys, bool content_sha256) {
  kg_http_headers_t add = {0};
  char err[KG_ERRLEN];
  CHECK_INT(
      kg_sigv4_sign(method, url, headers, payload, date, "us-east-1", service, keys, content_sha256, &add, NULL, err),
      KG_OK);
  char *auth = NULL;
  for (size_t i = 0; i < add.count; i++)
    if (!strncmp(add.lines[i], "Authorization: ", 15)) auth = kg_xstrdup(add.lines[i] + 15);
  kg_http_headers_free(&add);
  return auth ? auth : kg_xstrdup("");
}

/* The examples of Amazon S3's "Signature Calculations for the Authorization Header" (header-based SigV4). */
static void test_sigv4_s3_examples(void) {
  kg_sigv4_keys_t keys = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", NULL};
  const char *date = "20130524T000000Z";
  const char *range[] = {"Range: bytes=0-9", NULL};
  char *a = authorization("GET", "https://examplebucket.s3.amazonaws.com/test.txt", range, EMPTY_SHA256, date, "s3",
                          &keys, true);
  CHECK_STR(a, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
               "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
               "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  free(a);
  const char *put[] = {"Date: Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class: REDUCED_REDUNDANCY", NULL};
  a = authorization("PUT", "https://examplebucket.s3.amazonaws.com/test%24file.text", put,
                    "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", date, "s3", &keys, true);
  CHECK_STR(a, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
               "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
               "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  free(a);
  /* A parameter without a value is signed as "lifecycle=". */
  a = authorization("GET", "https://examplebucket.s3.amazonaws.com/?lifecycle", NULL, EMPTY_SHA256, date, "s3", &keys,
                    true);
  CHECK_STR(a, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
               "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
               "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
  free(a);
  /* The query sorted by name, whatever its order in the URL. */
  a = authorization("GET", "https://examplebucket.s3.amazonaws.com/?prefix=J&max-keys=2", NULL, EMPTY_SHA256, date,
                    "s3", &keys, true);
  CHECK_STR(a, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
               "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
               "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  free(a);
}

/* AWS's Signature Version 4 test suite: get-vanilla, and the canonical request it shows. */
static void test_sigv4_suite(void) {
  kg_sigv4_keys_t keys = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL};
  char *a = authorization("GET", "https://example.amazonaws.com/", NULL, EMPTY_SHA256, "20150830T123600Z", "service",
                          &keys, false);
  CHECK_STR(a, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
               "SignedHeaders=host;x-amz-date, "
               "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  free(a);
  kg_http_headers_t add = {0};
  char *canonical = NULL, err[KG_ERRLEN];
  CHECK_INT(kg_sigv4_sign("GET", "https://example.amazonaws.com/", NULL, EMPTY_SHA256, "20150830T123600Z", "us-east-1",
                          "service", &keys, false, &add, &canonical, err),
            KG_OK);
  CHECK_STR(canonical,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256);
  free(canonical);
  kg_http_headers_free(&add);
  /* A session token is sent and signed. */
  kg_sigv4_keys_t temp = {"AKIDEXAMPLE", "secret", "the-token"};
  CHECK_INT(kg_sigv4_sign("GET", "https://example.amazonaws.com/", NULL, EMPTY_SHA256, "20150830T123600Z", "us-east-1",
                          "s3", &temp, true, &add, &canonical, err),
            KG_OK);
  CHECK(strstr(canonical, "x-amz-security-token:the-token\n") != NULL);
  bool sent = false;
  for (size_t i = 0; i < add.count; i++)
    sent |= !strcmp(add.lines[i], "x-amz-security-token: the-token");
  CHECK(sent);
  free(canonical);
  kg_http_headers_free(&add);
  CHECK_INT(kg_sigv4_sign("GET", "not a url", NULL, EMPTY_SHA256, "20150830T123600Z", "us-east-1", "s3", &keys, true,
                          &add, NULL, err),
            KG_EINVAL);
  kg_http_headers_free(&add);
  char date[17];
  kg_sigv4_date(1440938160, date);
  CHECK_STR(date, "20150830T123600Z");
}

static void test_profiles(void) {
  const char *credentials = "# a comment\n"
                            "[default]\n"
                            "aws_access_key_id = AKIADEFAULT\n"
                            "aws_secret_access_key=defaultsecret\n"
                            "\n"
                            "[ dev ]\r\n"
                            "aws_access_key_id=AKIADEV\r\n"
                            "aws_secret_access_key = dev/secret+x \r\n"
                            "aws_session_token = tok\n";
  kg_s3_creds_t c = {0};
  CHECK(kg_s3_profile_parse(credentials, "dev", false, &c));
  CHECK_STR(c.access_key, "AKIADEV");
  CHECK_STR(c.secret_key, "dev/secret+x");
  CHECK_STR(c.session_token, "tok");
  kg_s3_creds_clear(&c);
  CHECK(kg_s3_profile_parse(credentials, "default", false, &c));
  CHECK_STR(c.access_key, "AKIADEFAULT");
  CHECK(c.session_token == NULL);
  kg_s3_creds_clear(&c);
  CHECK(!kg_s3_profile_parse(credentials, "prod", false, &c));
  CHECK(c.access_key == NULL);
  /* The config file names its sections "profile NAME", but "default". */
  const char *config = "[default]\nregion = eu-west-1\n"
                       "[profile k8s]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
                       "web_identity_token_file = /var/run/token\nregion=ap-south-1\n"
                       "[dev]\nregion = us-west-2\n";
  CHECK(kg_s3_profile_parse(config, "k8s", true, &c));
  CHECK_STR(c.role_arn, "arn:aws:iam::123456789012:role/r");
  CHECK_STR(c.token_file, "/var/run/token");
  CHECK_STR(c.region, "ap-south-1");
  kg_s3_creds_clear(&c);
  CHECK(kg_s3_profile_parse(config, "default", true, &c));
  CHECK_STR(c.region, "eu-west-1");
  kg_s3_creds_clear(&c);
  CHECK(!kg_s3_profile_parse(config, "dev", true, &c)); /* [dev] is no profile section of a config file */
  kg_s3_creds_clear(&c);
}

static void test_error_reasons(void) {
  char out[512];
  kg_s3_error_reason(403,
                     "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature "
                     "we calculated does not match the signature you provided.</Message></Error>",
                     NULL, out, sizeof out);
  CHECK_STR(out, "HTTP 403 SignatureDoesNotMatch: The request signature we calculated does not match the signature "
                 "you provided.");
  kg_s3_error_reason(301,
                     "<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be "
                     "addressed using the specified endpoint.</Message><Endpoint>b.s3.eu-west-1.amazonaws.com"
                     "</Endpoint><Bucket>b</Bucket></Error>",
                     "eu-west-1", out, sizeof out);
  CHECK(strstr(out, "HTTP 301 PermanentRedirect: ") == out);
  CHECK(strstr(out, "(the bucket is in region eu-west-1: set fs.s3a.endpoint.region=eu-west-1)") != NULL);
  kg_s3_error_reason(400,
                     "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; "
                     "expecting 'eu-central-1'</Message><Region>eu-central-1</Region></Error>",
                     NULL, out, sizeof out);
  CHECK(strstr(out, "set fs.s3a.endpoint.region=eu-central-1") != NULL);
  kg_s3_error_reason(403,
                     "<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time "
                     "and the current time is too large.</Message></Error>",
                     NULL, out, sizeof out);
  CHECK(strstr(out, "HTTP 403 RequestTimeTooSkewed: ") == out);
  kg_s3_error_reason(404, NULL, NULL, out, sizeof out); /* HEAD: no body */
  CHECK_STR(out, "HTTP 404 NoSuchKey or NoSuchBucket");
  kg_s3_error_reason(503, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
                     NULL, out, sizeof out);
  CHECK_STR(out, "HTTP 503 SlowDown: Please reduce your request rate.");
  kg_s3_error_reason(400, "<Error><Code>InvalidArgument</Code><Message>a &lt;b&gt; &amp; c</Message></Error>", NULL,
                     out, sizeof out);
  CHECK_STR(out, "HTTP 400 InvalidArgument: a <b> & c");
}

static void test_uris(void) {
  kg_fs_t *fs = NULL;
  char err[KG_ERRLEN];
  CHECK_INT(kg_fs_s3_open("s3a://my-bucket", NULL, &fs, err), KG_OK);
  CHECK_STR(fs->scheme, "s3a");
  CHECK(fs->rename == NULL && fs->object != NULL);
  CHECK_INT(fs->object->part_size, 64 << 20);
  kg_fs_close(fs);
  CHECK_INT(kg_fs_s3_open("s3://my.bucket/", NULL, &fs, err), KG_OK);
  CHECK_STR(fs->scheme, "s3");
  kg_fs_close(fs);
  CHECK_INT(kg_fs_s3_open("s3a://my-bucket/out", NULL, &fs, err), KG_EINVAL);
  CHECK(strstr(err, "the folder goes in data.publisher.final.dir") != NULL);
  CHECK_INT(kg_fs_s3_open("s3a://My_Bucket", NULL, &fs, err), KG_EINVAL);
  CHECK(strstr(err, "'My_Bucket' is not an S3 bucket name") != NULL);
  CHECK_INT(kg_fs_s3_open("s3a://", NULL, &fs, err), KG_EINVAL);
  CHECK_INT(kg_fs_open("s3a://ok-bucket", "data.publisher.fs.uri", &fs, err), KG_OK);
  kg_fs_close(fs);
}

static void test_md5(void) {
  struct {
    const char *in, *hex;
  } cases[] = {{"", "d41d8cd98f00b204e9800998ecf8427e"},
               {"a", "0cc175b9c0f1b6a831c399e269772661"},
               {"The quick brown fox jumps over the lazy dog", "9e107d9d372bb6826bd81d3542a419d6"},
               {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kg_md5_t m;
    uint8_t d[KG_MD5_SIZE];
    kg_md5_init(&m);
    for (const char *p = cases[i].in; *p; p++) /* a byte at a time: the partial blocks */
      kg_md5_update(&m, p, 1);
    kg_md5_final(&m, d);
    char hex[33];
    for (int j = 0; j < 16; j++)
      snprintf(hex + 2 * j, 3, "%02x", d[j]);
    CHECK_STR(hex, cases[i].hex);
  }
}

static void test_recovery_decisions(void) {
  kg_move_t m = {.src = "/t/part.0.txt", .dst = "/out/part.0.txt", .size = 42, .etag = "abc"};
  kg_fs_object_t none = {.size = -1}, same = {.size = 42, .etag = "abc"}, other_etag = {.size = 42, .etag = "def"},
                 other_size = {.size = 41, .etag = "abc"}, no_etag = {.size = 42};
  CHECK_INT(kg_commit_object_decide(&m, &none, false), KG_OBJECT_WRITE);
  CHECK_INT(kg_commit_object_decide(&m, &same, false), KG_OBJECT_PUBLISHED);
  CHECK_INT(kg_commit_object_decide(&m, &other_etag, false), KG_OBJECT_FOREIGN);
  CHECK_INT(kg_commit_object_decide(&m, &other_size, false), KG_OBJECT_FOREIGN);
  CHECK_INT(kg_commit_object_decide(&m, &no_etag, false), KG_OBJECT_FOREIGN);
  /* A journal that could not foresee the ETag (SSE-KMS) knows its object by its size. */
  kg_move_t kms = {.src = "/t/a", .dst = "/out/a", .size = 42, .etag = NULL, .upload_id = "u1"};
  CHECK_INT(kg_commit_object_decide(&kms, &other_etag, false), KG_OBJECT_PUBLISHED);
  CHECK_INT(kg_commit_object_decide(&kms, &other_size, false), KG_OBJECT_FOREIGN);
  CHECK_INT(kg_commit_object_decide(&kms, &none, false), KG_OBJECT_WRITE);
}

int main(void) {
  test_sigv4_s3_examples();
  test_sigv4_suite();
  test_profiles();
  test_error_reasons();
  test_uris();
  test_md5();
  test_recovery_decisions();
  TEST_MAIN_END();
}
