#include "curl_floor.h"
#include <curl/curl.h>
#include <stdlib.h>

static size_t sink(char *data, size_t size, size_t n, void *user) {
    (void)data;
    *(int64_t *)user += (int64_t)(size * n);
    return size * n;
}

static CURL *easy(const char *url, int64_t *bytes) {
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, bytes);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    return e;
}

int64_t curl_floor_fetch(const char *const *urls, int count, int concurrency) {
    static int initialized = 0;
    if (!initialized) { curl_global_init(CURL_GLOBAL_DEFAULT); initialized = 1; }
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)concurrency);
    int64_t bytes = 0;
    int next = 0, running = 0, failed = 0, done = 0;
    while (next < count && next < concurrency) curl_multi_add_handle(m, easy(urls[next++], &bytes));
    while (done < count) {
        curl_multi_perform(m, &running);
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            long status = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            if (msg->data.result != CURLE_OK || status < 200 || status >= 300) failed = 1;
            curl_multi_remove_handle(m, msg->easy_handle);
            curl_easy_cleanup(msg->easy_handle);
            done++;
            if (next < count) curl_multi_add_handle(m, easy(urls[next++], &bytes));
        }
        if (done < count) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    curl_multi_cleanup(m);
    return failed ? -1 : bytes;
}
