/* test.h: minimal assertion macros for the engine's C tests; failures print both operands. */
#ifndef KG_TEST_H
#define KG_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kg_test_failures;
static int kg_test_checks;

#define CHECK(cond)                                                                                                    \
  do {                                                                                                                 \
    kg_test_checks++;                                                                                                  \
    if (!(cond)) {                                                                                                     \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                         \
      kg_test_failures++;                                                                                              \
    }                                                                                                                  \
  } while (0)

#define CHECK_INT(a, b)                                                                                                \
  do {                                                                                                                 \
    long long _a = (long long)(a), _b = (long long)(b);                                                                \
    kg_test_checks++;                                                                                                  \
    if (_a != _b) {                                                                                                    \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, _a, _b);                   \
      kg_test_failures++;                                                                                              \
    }                                                                                                                  \
  } while (0)

#define CHECK_STR(a, b)                                                                                                \
  do {                                                                                                                 \
    const char *_a = (a), *_b = (b);                                                                                   \
    kg_test_checks++;                                                                                                  \
    if (!_a || !_b || strcmp(_a, _b)) {                                                                                \
      fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, _a ? _a : "(null)",    \
              _b ? _b : "(null)");                                                                                     \
      kg_test_failures++;                                                                                              \
    }                                                                                                                  \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                                    \
  do {                                                                                                                 \
    const char *_h = (hay), *_n = (needle);                                                                            \
    kg_test_checks++;                                                                                                  \
    if (!_h || !strstr(_h, _n)) {                                                                                      \
      fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, _h ? _h : "(null)", _n);          \
      kg_test_failures++;                                                                                              \
    }                                                                                                                  \
  } while (0)

#ifdef KG_CONFIG_H
/* A job config from the properties TEXT, as if read from JOB_FILE, with /tmp/kg-work as its work dir. */
static inline int kg_test_config(const char *text, const char *job_file, kg_config_t **c, char *err) {
  kg_props_t *p = kg_props_new();
  int rc = kg_props_parse(p, text, strlen(text), "job.pull", err);
  if (rc) {
    kg_props_destroy(p);
    return rc;
  }
  return kg_config_new(p, job_file, false, "/tmp/kg-work", c, err);
}
#endif

#define TEST_MAIN_END()                                                                                                \
  do {                                                                                                                 \
    printf("%d checks, %d failed\n", kg_test_checks, kg_test_failures);                                                \
    return kg_test_failures ? 1 : 0;                                                                                   \
  } while (0)

#endif
