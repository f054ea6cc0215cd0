/* test_hadoop_token.c: base64url both ways, a Hadoop delegation token's kind and service (and a token given a new
 * service), a credentials file of one token built and read back (and the files it refuses), and the principals of
 * keytabs made entry by entry. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hadoop_token.h"
#include "test.h"

/* A token a Kerberized NameNode (Hadoop 3.4.2) gave through WebHDFS's GETDELEGATIONTOKEN over HTTPS, for owner and
 * renewer kingest; the cluster it came from is gone. */
static const char real_token[] = "IgAHa2luZ2VzdAdraW5nZXN0AIoBojRlryaKAaJYcjMmAQIUWeOiR5T3ofIZkx5jHtuJsHsw9_"
                                 "UTU1dFQkhERlMgZGVsZWdhdGlvbg8xMjcuMC4wLjE6MzMwODE";

static void test_base64url(void) {
  unsigned char bytes[64];
  for (size_t i = 0; i < sizeof bytes; i++)
    bytes[i] = (unsigned char)(i * 37 + 250);
  for (size_t n = 0; n <= sizeof bytes; n++) {
    kg_buf_t text = {0}, back = {0};
    kg_base64url_encode(bytes, n, &text);
    kg_buf_append(&text, "", 1);
    CHECK(!strchr(text.data, '=') && !strchr(text.data, '+') && !strchr(text.data, '/'));
    CHECK_INT(strlen(text.data), (n * 8 + 5) / 6);
    CHECK_INT(kg_base64url_decode(text.data, &back), KG_OK);
    CHECK_INT(back.len, n);
    CHECK(n == 0 || !memcmp(back.data, bytes, n));
    kg_buf_free(&text);
    kg_buf_free(&back);
  }
  kg_buf_t b = {0};
  CHECK_INT(kg_base64url_decode("aGk=", &b), KG_OK); /* padding, as the standard form has it */
  CHECK_INT(b.len, 2);
  CHECK(!memcmp(b.data, "hi", 2));
  b.len = 0;
  CHECK_INT(kg_base64url_decode("+/8", &b), KG_OK); /* the standard alphabet's 62 and 63 */
  CHECK_INT(b.len, 2);
  CHECK_INT((unsigned char)b.data[0], 0xfb);
  CHECK_INT((unsigned char)b.data[1], 0xff);
  CHECK_INT(kg_base64url_decode("ab*d", &b), KG_EINVAL);
  CHECK_INT(kg_base64url_decode("abcde", &b), KG_EINVAL); /* no encoding is 5 characters long */
  kg_buf_free(&b);
}

static void test_describe(void) {
  char *kind = NULL, *service = NULL;
  CHECK_INT(kg_hadoop_token_describe(real_token, &kind, &service), KG_OK);
  CHECK_STR(kind, "SWEBHDFS delegation");
  CHECK_STR(service, "127.0.0.1:33081");
  free(kind);
  free(service);
  CHECK_INT(kg_hadoop_token_describe("bm90IGEgdG9rZW4", &kind, &service), KG_EINVAL); /* "not a token" */
  CHECK(kind == NULL && service == NULL);
  CHECK_INT(kg_hadoop_token_describe("", &kind, &service), KG_EINVAL);
}

static void test_set_service(void) {
  char *moved = NULL, *back = NULL, *kind = NULL, *service = NULL;
  CHECK_INT(kg_hadoop_token_set_service(real_token, "namenode.example.com:9871", &moved), KG_OK);
  CHECK_INT(kg_hadoop_token_describe(moved, &kind, &service), KG_OK);
  CHECK_STR(kind, "SWEBHDFS delegation");
  CHECK_STR(service, "namenode.example.com:9871");
  /* The identifier, the password and the kind are the same bytes: set back, it is the NameNode's token again. */
  CHECK_INT(kg_hadoop_token_set_service(moved, "127.0.0.1:33081", &back), KG_OK);
  CHECK_STR(back, real_token);
  free(kind);
  free(service);
  free(moved);
  free(back);
  CHECK_INT(kg_hadoop_token_set_service("bm90IGEgdG9rZW4", "h:1", &moved), KG_EINVAL);
  CHECK(moved == NULL);
}

static void test_creds(void) {
  char err[KG_ERRLEN];
  kg_buf_t file = {0};
  CHECK_INT(kg_hadoop_creds_build("kingest.webhdfs", real_token, &file, err), KG_OK);
  /* "HDTS", the Writable form (0), one token, its alias as a Text, the token's own bytes, no secret keys. */
  CHECK(file.len > 22 && !memcmp(file.data, "HDTS\0\1\17kingest.webhdfs", 22));
  CHECK_INT(file.data[file.len - 1], 0);
  char *token = NULL, *kind = NULL;
  CHECK_INT(kg_hadoop_creds_find(file.data, file.len, "f", "kingest.webhdfs", &token, &kind, err), KG_OK);
  CHECK_STR(token, real_token);
  CHECK_STR(kind, "SWEBHDFS delegation");
  free(token);
  free(kind);
  CHECK_INT(kg_hadoop_creds_find(file.data, file.len, "f", "other", &token, NULL, err), KG_ENOTFOUND);
  CHECK_CONTAINS(err, "f holds no token of alias other");
  CHECK(token == NULL);
  /* Cut short anywhere: refused, never read past the end. */
  for (size_t cut = 0; cut + 1 < file.len; cut++) {
    int rc = kg_hadoop_creds_find(file.data, cut, "f", "kingest.webhdfs", &token, NULL, err);
    CHECK(rc == KG_EINVAL || (rc == KG_OK && cut >= file.len - 1));
    free(token);
    token = NULL;
  }
  file.data[4] = 1; /* the protobuf form */
  CHECK_INT(kg_hadoop_creds_find(file.data, file.len, "f", "kingest.webhdfs", &token, NULL, err), KG_EINVAL);
  CHECK_CONTAINS(err, "form 1, which kingest does not read");
  CHECK_INT(kg_hadoop_creds_find("HDTX\0", 5, "g", "a", &token, NULL, err), KG_EINVAL);
  CHECK_CONTAINS(err, "g is not a Hadoop credentials file");
  kg_buf_free(&file);

  /* A long alias takes a multi-byte length (WritableUtils' vint); two tokens, the second one found. */
  char alias[301];
  memset(alias, 'a', 300);
  alias[300] = 0;
  kg_buf_t one = {0}, two = {0};
  CHECK_INT(kg_hadoop_creds_build(alias, real_token, &one, err), KG_OK);
  /* 300: -114 (a positive value in two more bytes), then 0x01 0x2c. */
  CHECK_INT((unsigned char)one.data[6], 0x8e);
  CHECK_INT((unsigned char)one.data[7], 0x01);
  CHECK_INT((unsigned char)one.data[8], 0x2c);
  /* Splice: HDTS 0, count 2, [alias, token] of ONE, then [kingest.webhdfs, token] of another file, then 0. */
  kg_buf_t other = {0};
  CHECK_INT(kg_hadoop_creds_build("kingest.webhdfs", real_token, &other, err), KG_OK);
  kg_buf_append(&two, "HDTS\0\2", 6);
  kg_buf_append(&two, one.data + 6, one.len - 7);
  kg_buf_append(&two, other.data + 6, other.len - 6);
  CHECK_INT(kg_hadoop_creds_find(two.data, two.len, "two", "kingest.webhdfs", &token, NULL, err), KG_OK);
  CHECK_STR(token, real_token);
  free(token);
  CHECK_INT(kg_hadoop_creds_find(two.data, two.len, "two", alias, &token, NULL, err), KG_OK);
  CHECK_STR(token, real_token);
  free(token);
  kg_buf_free(&one);
  kg_buf_free(&two);
  kg_buf_free(&other);

  /* What is not a token is refused, and its text is not shown. */
  CHECK_INT(kg_hadoop_creds_build("a", "c2VjcmV0LXZhbHVl", &file, err), KG_EINVAL);
  CHECK(strstr(err, "c2VjcmV0") == NULL);
  CHECK_INT(file.len, 0);
}

/* Appends a keytab entry of PRINCIPAL ("a/b@R") with a 16-byte key; a negative HOLE appends a hole of that many
 * bytes instead. */
static void entry(kg_buf_t *kt, const char *principal, int hole, bool v501) {
  kg_buf_t e = {0};
  if (hole) {
    unsigned char size[4] = {0xff, 0xff, 0xff, (unsigned char)(256 + hole)};
    kg_buf_append(kt, size, 4);
    for (int i = 0; i < -hole; i++)
      kg_buf_append(kt, "\0", 1);
    return;
  }
  const char *at = strchr(principal, '@');
  char *name = kg_xstrndup(principal, (size_t)(at - principal));
  int components = 1;
  for (const char *p = name; *p; p++)
    components += *p == '/';
  unsigned char n[2] = {0, (unsigned char)(components + (v501 ? 1 : 0))};
  kg_buf_append(&e, n, 2);
  unsigned char rl[2] = {0, (unsigned char)strlen(at + 1)};
  kg_buf_append(&e, rl, 2);
  kg_buf_append(&e, at + 1, strlen(at + 1));
  for (char *c = name, *save = NULL, *tok = strtok_r(c, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
    unsigned char cl[2] = {0, (unsigned char)strlen(tok)};
    kg_buf_append(&e, cl, 2);
    kg_buf_append(&e, tok, strlen(tok));
  }
  free(name);
  static const unsigned char rest[] = {0, 0,  0, 1,  /* name type */
                                       0, 0,  0, 0,  /* timestamp */
                                       1,            /* kvno */
                                       0, 18, 0, 16, /* aes256, 16 bytes (shortened) */
                                       1, 2,  3, 4,  5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  kg_buf_append(&e, rest, sizeof rest);
  unsigned char size[4] = {0, 0, (unsigned char)(e.len >> 8), (unsigned char)e.len};
  kg_buf_append(kt, size, 4);
  kg_buf_append(kt, e.data, e.len);
  kg_buf_free(&e);
}

static void test_keytab(void) {
  char err[KG_ERRLEN];
  kg_buf_t kt = {0};
  kg_buf_append(&kt, "\5\2", 2);
  entry(&kt, "kingest@KINGEST.TEST", 0, false);
  entry(&kt, "kingest@KINGEST.TEST", 0, false); /* a second key of the same principal */
  entry(&kt, NULL, -12, false);
  entry(&kt, "HTTP/localhost@KINGEST.TEST", 0, false);
  char **names = NULL;
  size_t count = 0;
  CHECK_INT(kg_keytab_principals_parse(kt.data, kt.len, "k.keytab", &names, &count, err), KG_OK);
  CHECK_INT(count, 2);
  if (count == 2) {
    CHECK_STR(names[0], "kingest@KINGEST.TEST");
    CHECK_STR(names[1], "HTTP/localhost@KINGEST.TEST");
  }
  kg_keytab_principals_free(names, count);
  for (size_t cut = 3; cut < kt.len; cut++) {
    int rc = kg_keytab_principals_parse(kt.data, cut, "k.keytab", &names, &count, err);
    if (rc == KG_OK) kg_keytab_principals_free(names, count);
    CHECK(rc == KG_EINVAL || rc == KG_OK);
  }
  CHECK_INT(kg_keytab_principals_parse(kt.data, kt.len - 5, "k.keytab", &names, &count, err), KG_EINVAL);
  CHECK_CONTAINS(err, "k.keytab is not a Kerberos keytab (an entry is cut short)");
  CHECK_INT(kg_keytab_principals_parse("hello", 5, "h.txt", &names, &count, err), KG_EINVAL);
  CHECK_CONTAINS(err, "h.txt is not a Kerberos keytab");
  kg_buf_free(&kt);

  /* Version 0x501 counts the realm among the components. */
  kg_buf_append(&kt, "\5\1", 2);
  entry(&kt, "nn/host@R", 0, true);
  CHECK_INT(kg_keytab_principals_parse(kt.data, kt.len, "old", &names, &count, err), KG_OK);
  CHECK_INT(count, 1);
  if (count == 1) CHECK_STR(names[0], "nn/host@R");
  kg_keytab_principals_free(names, count);
  kg_buf_free(&kt);

  CHECK_INT(kg_keytab_principals("/nonexistent/k.keytab", &names, &count, err), KG_EIO);
  CHECK_CONTAINS(err, "cannot read /nonexistent/k.keytab: No such file or directory");

  CHECK(kg_keytab_principal_matches("kingest@KINGEST.TEST", "kingest@KINGEST.TEST"));
  CHECK(kg_keytab_principal_matches("kingest", "kingest@KINGEST.TEST"));
  CHECK(!kg_keytab_principal_matches("kingest", "kingest2@KINGEST.TEST"));
  CHECK(!kg_keytab_principal_matches("kingest@OTHER", "kingest@KINGEST.TEST"));
  CHECK(!kg_keytab_principal_matches("king", "kingest@KINGEST.TEST"));
}

int main(void) {
  test_base64url();
  test_describe();
  test_set_service();
  test_creds();
  test_keytab();
  TEST_MAIN_END();
}
