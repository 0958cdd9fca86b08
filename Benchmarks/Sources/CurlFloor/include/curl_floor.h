#ifndef CURL_FLOOR_H
#define CURL_FLOOR_H
#include <stdint.h>

/* The raw libcurl work of Strata's fetch: GET every URL with a multi handle, at most
   `concurrency` transfers in flight, connections reused, bodies counted and dropped. Returns the
   total body bytes, or -1 if any transfer failed or was not 2xx. */
int64_t curl_floor_fetch(const char *const *urls, int count, int concurrency);

#endif
