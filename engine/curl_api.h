/* curl_api.h: libcurl, loaded when first needed, for http.c (the engine's one HTTP client).
 *
 * Most runs never speak HTTP (WebHDFS, a schema registry, a Pushgateway, YARN), and libcurl, with the TLS,
 * Kerberos, LDAP and SSH libraries it brings, costs every start of the process a few milliseconds to load and
 * its end as many to unload. So the engine does not link it: kg_curl_load opens it (dlopen) on first use, once
 * for the process, and runs curl_global_init. http.c includes this header instead of <curl/curl.h>, calls
 * kg_curl_load before anything else of libcurl, and uses the curl_* names as usual: they call through the table
 * the load filled. */
#ifndef KG_CURL_API_H
#define KG_CURL_API_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
/* curl.h makes these two macros that check their arguments' count: they become names of the table below. */
#undef curl_easy_setopt
#undef curl_easy_getinfo

typedef struct {
  CURL *(*easy_init)(void);
  CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL *curl);
  CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
  void (*easy_reset)(CURL *curl);
  void (*easy_cleanup)(CURL *curl);
  const char *(*easy_strerror)(CURLcode code);
  struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
  void (*slist_free_all)(struct curl_slist *list);
} kg_curl_api_t;

extern kg_curl_api_t kg_curl_api;

/* Loads libcurl and starts it, the first time; later calls return what the first found. Returns KG_OK, or
 * KG_EIO with ERRBUF naming the library and why it cannot be used (not installed, a symbol missing, or
 * curl_global_init failing). Thread-safe. */
int kg_curl_load(char *errbuf);

#define curl_easy_init      kg_curl_api.easy_init
#define curl_easy_setopt    kg_curl_api.easy_setopt
#define curl_easy_perform   kg_curl_api.easy_perform
#define curl_easy_getinfo   kg_curl_api.easy_getinfo
#define curl_easy_reset     kg_curl_api.easy_reset
#define curl_easy_cleanup   kg_curl_api.easy_cleanup
#define curl_easy_strerror  kg_curl_api.easy_strerror
#define curl_slist_append   kg_curl_api.slist_append
#define curl_slist_free_all kg_curl_api.slist_free_all

#endif
