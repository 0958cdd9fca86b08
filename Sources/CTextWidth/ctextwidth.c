#define _XOPEN_SOURCE 700
#define _GNU_SOURCE
#include <locale.h>
#include <pthread.h>
#include <wchar.h>
#include "ctextwidth.h"

static locale_t utf8;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) { utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

int ctw_wcwidth(uint32_t codepoint) {
    pthread_once(&once, init);
    if (!utf8) return -1;
    locale_t old = uselocale(utf8);
    int w = wcwidth((wchar_t)codepoint);
    uselocale(old);
    return w;
}
