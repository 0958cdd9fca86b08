#include "CCurl.h"
#include "library_loader.h"
#include <stdlib.h>

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLHcode (*easy_header)(CURL *, const char *, size_t, unsigned int, int, struct curl_header **);
    struct curl_header *(*easy_nextheader)(CURL *, unsigned int, int, struct curl_header *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
} f;

static struct strata_library lib = STRATA_LIBRARY("libcurl.so.4", "(libcurl 7.84 or later is needed)");

#define RESOLVE(field) strata_library_resolve(&lib, (void **)&f.field, "curl_" #field)

static void load(void) {
    /* STRATA_LIBCURL names another build of libcurl (a path, or a soname on the search path). */
    strata_library_open(&lib, getenv("STRATA_LIBCURL"));
    RESOLVE(global_init); RESOLVE(easy_init); RESOLVE(easy_cleanup); RESOLVE(easy_strerror);
    RESOLVE(easy_header); RESOLVE(easy_nextheader); RESOLVE(easy_setopt); RESOLVE(easy_getinfo); RESOLVE(slist_append);
    RESOLVE(slist_free_all); RESOLVE(multi_init); RESOLVE(multi_cleanup); RESOLVE(multi_add_handle);
    RESOLVE(multi_remove_handle); RESOLVE(multi_perform); RESOLVE(multi_poll); RESOLVE(multi_wakeup);
    RESOLVE(multi_info_read); RESOLVE(multi_setopt);
    if (!lib.problem) f.global_init(CURL_GLOBAL_ALL);
}

const char *ccurl_load(void) {
    return strata_library_load(&lib, load);
}

CURL *ccurl_easy_init(void) { return f.easy_init(); }
void ccurl_easy_cleanup(CURL *h) { f.easy_cleanup(h); }
const char *ccurl_easy_strerror(CURLcode rc) { return f.easy_strerror(rc); }
CURLHcode ccurl_easy_header(CURL *h, const char *name, size_t index, unsigned int origin, int request, struct curl_header **out) {
    return f.easy_header(h, name, index, origin, request, out);
}
struct curl_header *ccurl_easy_nextheader(CURL *h, unsigned int origin, int request, struct curl_header *prev) {
    return f.easy_nextheader(h, origin, request, prev);
}
struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *s) { return f.slist_append(list, s); }
void ccurl_slist_free_all(struct curl_slist *list) { f.slist_free_all(list); }
CURLM *ccurl_multi_init(void) { return f.multi_init(); }
CURLMcode ccurl_multi_cleanup(CURLM *m) { return f.multi_cleanup(m); }
CURLMcode ccurl_multi_add_handle(CURLM *m, CURL *h) { return f.multi_add_handle(m, h); }
CURLMcode ccurl_multi_remove_handle(CURLM *m, CURL *h) { return f.multi_remove_handle(m, h); }
CURLMcode ccurl_multi_perform(CURLM *m, int *running) { return f.multi_perform(m, running); }
CURLMcode ccurl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned int nfds, int timeout_ms, int *numfds) {
    return f.multi_poll(m, fds, nfds, timeout_ms, numfds);
}
CURLMcode ccurl_multi_wakeup(CURLM *m) { return f.multi_wakeup(m); }
CURLMsg *ccurl_multi_info_read(CURLM *m, int *left) { return f.multi_info_read(m, left); }

CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return f.easy_setopt(h, o, v); }
CURLcode ccurl_setopt_string(CURL *h, CURLoption o, const char *v) { return f.easy_setopt(h, o, v); }
CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, void *v) { return f.easy_setopt(h, o, v); }
CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return f.easy_setopt(h, o, v); }
CURLcode ccurl_setopt_write_cb(CURL *h, CURLoption o, curl_write_callback cb) { return f.easy_setopt(h, o, cb); }
CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return f.easy_getinfo(h, i, v); }
CURLcode ccurl_getinfo_string(CURL *h, CURLINFO i, char **v) { return f.easy_getinfo(h, i, v); }
CURLcode ccurl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return f.easy_getinfo(h, i, v); }
CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return f.multi_setopt(m, o, v); }
