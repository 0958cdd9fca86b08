#ifndef STRATA_CCURL_H
#define STRATA_CCURL_H
/* libcurl, loaded on first use.

   Linking libcurl makes every process load it and the ~28 shared libraries it needs (TLS, LDAP,
   Kerberos, SSH, IDN…): about 9 ms of a 25 ms process start on the reference machine, paid by
   `strata list` and `strata --version` alike. So Strata does not link it: `ccurl_load` opens
   libcurl.so.4 with dlopen the first time a command makes a request, and these functions call
   through the pointers it resolved (`STRATA_LIBCURL` names another libcurl to open). Only the
   header is needed at build time. Call `ccurl_load`
   (and check it returned NULL) before any other function here. */
#include <curl/curl.h>

/* NULL once libcurl is loaded, every function below resolved and curl_global_init done; else
   what went wrong. Safe to call from any thread, any number of times. */
const char *ccurl_load(void);

CURL *ccurl_easy_init(void);
void ccurl_easy_cleanup(CURL *h);
const char *ccurl_easy_strerror(CURLcode rc);
CURLHcode ccurl_easy_header(CURL *h, const char *name, size_t index, unsigned int origin, int request, struct curl_header **out);
/* The response headers in the order they came (libcurl 7.84's curl_easy_nextheader). */
struct curl_header *ccurl_easy_nextheader(CURL *h, unsigned int origin, int request, struct curl_header *prev);
struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *s);
void ccurl_slist_free_all(struct curl_slist *list);
CURLM *ccurl_multi_init(void);
CURLMcode ccurl_multi_cleanup(CURLM *m);
CURLMcode ccurl_multi_add_handle(CURLM *m, CURL *h);
CURLMcode ccurl_multi_remove_handle(CURLM *m, CURL *h);
CURLMcode ccurl_multi_perform(CURLM *m, int *running);
CURLMcode ccurl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned int nfds, int timeout_ms, int *numfds);
CURLMcode ccurl_multi_wakeup(CURLM *m);
CURLMsg *ccurl_multi_info_read(CURLM *m, int *left);

/* curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic (and type-checking
   macros under clang), which Swift cannot call: these typed wrappers are what Strata uses. */
CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v);
CURLcode ccurl_setopt_string(CURL *h, CURLoption o, const char *v);
CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, void *v);
CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v);
CURLcode ccurl_setopt_write_cb(CURL *h, CURLoption o, curl_write_callback cb);
CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v);
CURLcode ccurl_getinfo_string(CURL *h, CURLINFO i, char **v);
CURLcode ccurl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v);
CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v);

#endif
