/* curl_api.c: loads libcurl on first use (see curl_api.h). */
#include "curl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "kg_common.h"

#ifndef KG_CURL_SONAME
#define KG_CURL_SONAME "libcurl.so.4"
#endif

kg_curl_api_t kg_curl_api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[KG_ERRLEN]; /* empty once libcurl is loaded and started */

/* The address of SYMBOL in HANDLE into *SLOT; false (with load_error set) when it is missing. */
static bool bind_symbol(void *handle, const char *symbol, void **slot) {
  *slot = dlsym(handle, symbol);
  if (*slot) return true;
  snprintf(load_error, sizeof load_error, "%s has no %s: %s", KG_CURL_SONAME, symbol, dlerror());
  return false;
}

static void load(void) {
  void *h = dlopen(KG_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(load_error, sizeof load_error, "cannot load %s (Debian's package libcurl4): %s", KG_CURL_SONAME,
             dlerror());
    return;
  }
  kg_curl_api_t a;
  CURLcode (*global_init)(long flags) = NULL;
  if (!bind_symbol(h, "curl_global_init", (void **)&global_init) ||
      !bind_symbol(h, "curl_easy_init", (void **)&a.easy_init) ||
      !bind_symbol(h, "curl_easy_setopt", (void **)&a.easy_setopt) ||
      !bind_symbol(h, "curl_easy_perform", (void **)&a.easy_perform) ||
      !bind_symbol(h, "curl_easy_getinfo", (void **)&a.easy_getinfo) ||
      !bind_symbol(h, "curl_easy_reset", (void **)&a.easy_reset) ||
      !bind_symbol(h, "curl_easy_cleanup", (void **)&a.easy_cleanup) ||
      !bind_symbol(h, "curl_easy_strerror", (void **)&a.easy_strerror) ||
      !bind_symbol(h, "curl_slist_append", (void **)&a.slist_append) ||
      !bind_symbol(h, "curl_slist_free_all", (void **)&a.slist_free_all))
    return; /* the handle stays open: dlclose of a half-bound library buys nothing */
  CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) {
    snprintf(load_error, sizeof load_error, "libcurl failed to start: %s", a.easy_strerror(rc));
    return;
  }
  kg_curl_api = a;
  load_error[0] = '\0';
}

int kg_curl_load(char *errbuf) {
  pthread_once(&once, load);
  if (load_error[0]) return kg_fail(errbuf, KG_EIO, "%s", load_error);
  return KG_OK;
}
