/* test_azure.c: Azure Blob's pieces without a service: HMAC-SHA256 (RFC 4231's vectors), base64, the Shared Key string
 * to sign and signature against spec/support/azure_blob.py (Python's hmac, written from Azure's documentation), the
 * URIs fs_azure.c takes and refuses, and its property rows (the key a secret, masked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure_auth.h"
#include "base64.h"
#include "commit.h"
#include "config.h"
#include "fs.h"
#include "props.h"
#include "secret.h"
#include "sha256.h"
#include "test.h"

#define KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static void hex(const uint8_t *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_hmac(void) {
  /* RFC 4231, test cases 1, 2 and 6 (a key longer than a block). */
  uint8_t mac[KG_SHA256_SIZE], key[131];
  char h[65];
  memset(key, 0x0b, 20);
  kg_hmac_sha256(key, 20, "Hi There", 8, mac);
  hex(mac, sizeof mac, h);
  CHECK_STR(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  kg_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
  hex(mac, sizeof mac, h);
  CHECK_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  memset(key, 0xaa, sizeof key);
  const char *text = "Test Using Larger Than Block-Size Key - Hash Key First";
  kg_hmac_sha256(key, sizeof key, text, strlen(text), mac);
  hex(mac, sizeof mac, h);
  CHECK_STR(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void test_base64(void) {
  const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"}; /* RFC 4648, 10 */
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    kg_buf_t b = {0}, d = {0};
    kg_base64_encode(&b, plain[i], strlen(plain[i]));
    CHECK_STR(b.data ? b.data : "", coded[i]);
    CHECK(kg_base64_decode(&d, coded[i]));
    CHECK_INT(d.len, strlen(plain[i]));
    CHECK(d.len == 0 || !memcmp(d.data, plain[i], d.len));
    kg_buf_free(&b);
    kg_buf_free(&d);
  }
  const char *bad[] = {"Zg=", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg=="};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kg_buf_t d = {0};
    CHECK(!kg_base64_decode(&d, bad[i]));
    CHECK_INT(d.len, 0);
    kg_buf_free(&d);
  }
}

/* What spec/support/azure_blob.py says of a request: its string to sign and signature, compared with ours. */
static void check_against_python(const char *method, const char *url, int64_t length, const char *const *headers) {
  const char *root = getenv("KINGEST_ROOT");
  kg_buf_t cmd = {0};
  kg_buf_appendf(&cmd, "python3 '%s/spec/support/azure_blob.py' sign devstoreaccount1 '%s' '%s' '%s' %lld", root, KEY,
                 method, url, (long long)length);
  for (size_t i = 0; headers[i]; i++)
    kg_buf_appendf(&cmd, " '%s'", headers[i]);
  FILE *p = popen(cmd.data, "r");
  CHECK(p != NULL);
  char answer[8192] = "";
  size_t n = p ? fread(answer, 1, sizeof answer - 1, p) : 0;
  answer[n] = 0;
  CHECK_INT(p ? pclose(p) : -1, 0);
  kg_buf_free(&cmd);

  kg_buf_t text = {0}, sig = {0}, json_text = {0};
  kg_azure_string_to_sign("devstoreaccount1", method, url, headers, length, &text);
  kg_azure_key_t *key = NULL;
  char err[KG_ERRLEN];
  CHECK_INT(kg_azure_key_new("devstoreaccount1", KEY, &key, err), KG_OK);
  kg_azure_signature(key, text.data, &sig);
  /* The JSON the script prints: {"string_to_sign": "...", "signature": "..."}; compare the signature, and the
   * string to sign through its JSON spelling (newlines as \n). */
  for (const char *c = text.data; *c; c++)
    if (*c == '\n')
      kg_buf_append(&json_text, "\\n", 2);
    else
      kg_buf_append(&json_text, c, 1);
  CHECK_CONTAINS(answer, json_text.data);
  char want[128];
  snprintf(want, sizeof want, "\"signature\": \"%s\"", sig.data);
  CHECK_CONTAINS(answer, want);
  kg_azure_key_destroy(key);
  kg_buf_free(&text);
  kg_buf_free(&sig);
  kg_buf_free(&json_text);
}

static void test_string_to_sign(void) {
  /* A Put Block List as fs_azure.c sends it, to the emulator's path-style URL. */
  const char *put[] = {"x-ms-date: Wed, 02 Dec 2026 02:10:50 GMT",
                       "x-ms-version: 2021-08-06",
                       "If-None-Match: *",
                       "Content-Type: application/xml",
                       "x-ms-meta-kingestupload: 0123456789abcdef",
                       NULL};
  kg_buf_t text = {0};
  kg_azure_string_to_sign("devstoreaccount1", "PUT",
                          "http://127.0.0.1:10000/devstoreaccount1/out/a/part%200.txt?comp=blocklist", put, 123, &text);
  CHECK_STR(text.data,
            "PUT\n\n\n123\n\napplication/xml\n\n\n\n*\n\n\n"
            "x-ms-date:Wed, 02 Dec 2026 02:10:50 GMT\nx-ms-meta-kingestupload:0123456789abcdef\n"
            "x-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/out/a/part%200.txt\ncomp:blocklist");
  kg_buf_free(&text);
  check_against_python("PUT", "http://127.0.0.1:10000/devstoreaccount1/out/a/part%200.txt?comp=blocklist", 123, put);

  /* A listing: parameters in order of name, decoded; no body, so no Content-Length; blanks folded. */
  const char *get[] = {"x-ms-date: Wed, 02 Dec 2026 02:10:50 GMT", "X-MS-Version:  2021-08-06", NULL};
  const char *list_url = "https://acct.blob.core.windows.net/logs?restype=container&comp=list&prefix=out%2Fa%2F&"
                         "marker=2%21abc&include=uncommittedblobs";
  kg_azure_string_to_sign("acct", "GET", list_url, get, 0, &text);
  CHECK_STR(text.data,
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Wed, 02 Dec 2026 02:10:50 GMT\nx-ms-version:2021-08-06\n"
            "/acct/logs\ncomp:list\ninclude:uncommittedblobs\nmarker:2!abc\nprefix:out/a/\nrestype:container");
  kg_buf_free(&text);
  check_against_python("GET", list_url, 0, get);

  /* A Put Block, its block id escaped; the account's root. */
  const char *block[] = {"x-ms-date: Wed, 02 Dec 2026 02:10:50 GMT", "x-ms-version: 2021-08-06",
                         "Content-Type: application/octet-stream", NULL};
  check_against_python("PUT",
                       "https://acct.blob.core.windows.net/c1/x?comp=block&blockid=MDEyMzQ1Njc4OWFiY2RlZi0wMDAwMDE%3D",
                       65536, block);
  check_against_python("GET", "https://acct.blob.core.windows.net/?comp=list", 0, get);
}

static void test_sign_hook(void) {
  kg_azure_key_t *key = NULL;
  char err[KG_ERRLEN];
  CHECK_INT(kg_azure_key_new("devstoreaccount1", "not base64!", &key, err), KG_EINVAL);
  CHECK_CONTAINS(err, "account devstoreaccount1 is not base64");
  CHECK_INT(kg_azure_key_new("devstoreaccount1", KEY, &key, err), KG_OK);
  const char *const headers[] = {"If-None-Match: *", NULL};
  kg_http_signing_t s = {.method = "PUT",
                         .url = "http://127.0.0.1:1/devstoreaccount1/c/b",
                         .headers = headers,
                         .body_sha256 = "",
                         .body_len = 5,
                         .attempt = 1};
  kg_http_headers_t add = {0};
  CHECK_INT(kg_azure_sign(key, &s, &add, err), KG_OK);
  CHECK_INT(add.count, 3);
  CHECK(!strncmp(add.lines[0], "x-ms-date: ", 11));
  CHECK_STR(add.lines[1], "x-ms-version: " KG_AZURE_API_VERSION);
  CHECK(!strncmp(add.lines[2], "Authorization: SharedKey devstoreaccount1:", 42));
  /* The signature is the one of the string to sign with the date it added. */
  const char *all[] = {headers[0], add.lines[0] + 0, add.lines[1], NULL};
  kg_buf_t text = {0}, sig = {0};
  kg_azure_string_to_sign("devstoreaccount1", "PUT", s.url, all, 5, &text);
  kg_buf_appendf(&sig, "Authorization: SharedKey devstoreaccount1:");
  kg_azure_signature(key, text.data, &sig);
  CHECK_STR(add.lines[2], sig.data);
  kg_buf_free(&text);
  kg_buf_free(&sig);
  kg_http_headers_free(&add);
  kg_azure_key_destroy(key);

  char date[32];
  kg_azure_http_date(784111777, date);
  CHECK_STR(date, "Sun, 06 Nov 1994 08:49:37 GMT");
}

static void test_uris(void) {
  const char *good[] = {"wasbs://logs@acct.blob.core.windows.net", "wasb://logs@acct.blob.core.windows.net/",
                        "abfss://logs@acct.dfs.core.windows.net", "wasbs://logs@acct.blob.core.chinacloudapi.cn"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    kg_fs_t *fs = NULL;
    char err[KG_ERRLEN] = "";
    CHECK_INT(kg_fs_open(good[i], "data.publisher.fs.uri", &fs, err), KG_OK);
    CHECK(fs && fs->object && !fs->rename);
    kg_fs_close(fs);
  }
  const char *bad[] = {"wasbs://acct.blob.core.windows.net", "wasbs://logs@acct.queue.core.windows.net",
                       "wasbs://logs@acct.blob.core.windows.net/out", "wasbs://@acct.blob.core.windows.net"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kg_fs_t *fs = NULL;
    char err[KG_ERRLEN] = "";
    CHECK_INT(kg_fs_open(bad[i], "data.publisher.fs.uri", &fs, err), KG_EINVAL);
    CHECK_CONTAINS(err, "expected wasbs://CONTAINER@ACCOUNT.blob.core.windows.net");
    CHECK(fs == NULL);
  }
  /* Without a key, the first request says which property gives it. */
  kg_fs_t *fs = NULL;
  char err[KG_ERRLEN] = "";
  CHECK_INT(kg_fs_open("wasbs://logs@acct.blob.core.windows.net", "data.publisher.fs.uri", &fs, err), KG_OK);
  CHECK_INT(fs->check_writable(fs, "/out", "data.publisher.final.dir", err), KG_EINVAL);
  CHECK_CONTAINS(err, "Azure Blob account acct, container logs: no key: set "
                      "fs.azure.account.key.acct.blob.core.windows.net");
  kg_fs_close(fs);
}

static void test_properties(void) {
  kg_config_t *c = NULL;
  char err[KG_ERRLEN] = "";
  kg_secret_forget_all();
  CHECK_INT(kg_test_config(
                "kafka.brokers=127.0.0.1:9\ntopic.whitelist=t\nfs.azure.account.key.acct.blob.core.windows.net=" KEY
                "\nfs.azure.blob.endpoint=http://127.0.0.1:10000/acct/\nfs.azure.write.request.size=65536\n",
                "job.pull", &c, err),
            KG_OK);
  if (!c) {
    fprintf(stderr, "%s\n", err);
    return;
  }
  /* The key is a secret by its name: masked in every text. */
  CHECK(kg_props_secret(c->props, "fs.azure.account.key.acct.blob.core.windows.net"));
  char text[256];
  snprintf(text, sizeof text, "key=%s", KEY);
  kg_secret_mask(text);
  CHECK_STR(text, "key=" KG_SECRET_MASK);
  kg_fs_t *fs = NULL;
  CHECK_INT(kg_fs_open_config("wasbs://logs@acct.blob.core.windows.net", "data.publisher.fs.uri", c, &fs, err), KG_OK);
  CHECK_INT(fs->object->part_size, 65536);
  kg_fs_close(fs);
  kg_config_destroy(c);

  CHECK_INT(
      kg_test_config(
          "kafka.brokers=127.0.0.1:9\ntopic.whitelist=t\nfs.azure.account.key.acct.blob.core.windows.net=not*base64\n",
          "job.pull", &c, err),
      KG_EINVAL);
  CHECK_CONTAINS(err, "job.pull:3: property fs.azure.account.key.acct.blob.core.windows.net: the account key is not "
                      "base64");
  CHECK(!strstr(err, "not*base64"));
  CHECK_INT(kg_test_config(
                "kafka.brokers=127.0.0.1:9\ntopic.whitelist=t\nfs.azure.account.key.Bad_Name.blob.core.windows.net=" KEY
                "\n",
                "job.pull", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err, "expected fs.azure.account.key.ACCOUNT.blob.core.windows.net");
  CHECK(!strstr(err, KEY));
  CHECK_INT(kg_test_config("kafka.brokers=127.0.0.1:9\ntopic.whitelist=t\nfs.azure.blob.endpoint=127.0.0.1:10000\n",
                           "job.pull", &c, err),
            KG_EINVAL);
  CHECK_CONTAINS(err,
                 "job.pull:3: property fs.azure.blob.endpoint=127.0.0.1:10000: expected an http:// or https:// URL");
  /* The rows are listed once, though four schemes share them. */
  size_t n = 0, seen = 0;
  const kg_property_t *const *rows = kg_config_properties(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i]->name, "fs.azure.write.request.size")) seen++;
  CHECK_INT(seen, 1);
}

/* Azure's ETag is the service's own: a journal knows its objects before their ETag by the upload id each carries. */
static void test_recovery_decisions(void) {
  kg_move_t journalled = {.src = "/t/a", .dst = "/out/a", .size = 42, .upload_id = "0123456789abcdef"};
  kg_fs_object_t none = {.size = -1}, ours = {.size = 42, .etag = "0x8DC1", .upload_id = "0123456789abcdef"},
                 unmarked = {.size = 42, .etag = "0x8DC2"},
                 other_upload = {.size = 42, .etag = "0x8DC3", .upload_id = "fedcba9876543210"},
                 other_size = {.size = 41, .etag = "0x8DC1", .upload_id = "0123456789abcdef"};
  CHECK_INT(kg_commit_object_decide(&journalled, &none, true), KG_OBJECT_WRITE);
  CHECK_INT(kg_commit_object_decide(&journalled, &ours, true), KG_OBJECT_PUBLISHED);
  CHECK_INT(kg_commit_object_decide(&journalled, &unmarked, true), KG_OBJECT_FOREIGN); /* same size, anyone's */
  CHECK_INT(kg_commit_object_decide(&journalled, &other_upload, true), KG_OBJECT_FOREIGN);
  CHECK_INT(kg_commit_object_decide(&journalled, &other_size, true), KG_OBJECT_FOREIGN);
  /* Once written, the journal has the ETag too: both must match. */
  kg_move_t written = journalled;
  written.etag = "0x8DC1";
  CHECK_INT(kg_commit_object_decide(&written, &ours, true), KG_OBJECT_PUBLISHED);
  kg_fs_object_t rewritten = ours;
  rewritten.etag = "0x8DC9";
  CHECK_INT(kg_commit_object_decide(&written, &rewritten, true), KG_OBJECT_FOREIGN);
  /* A journal without an upload id cannot own a marked object. */
  kg_move_t bare = {.src = "/t/a", .dst = "/out/a", .size = 42};
  CHECK_INT(kg_commit_object_decide(&bare, &ours, true), KG_OBJECT_FOREIGN);
}

int main(void) {
  test_hmac();
  test_base64();
  test_string_to_sign();
  test_sign_hook();
  test_uris();
  test_properties();
  test_recovery_decisions();
  TEST_MAIN_END();
}
