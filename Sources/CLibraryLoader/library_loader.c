#include "library_loader.h"
#include <dlfcn.h>
#include <stdio.h>

void strata_library_open(struct strata_library *lib, const char *name) {
    if (name && *name) lib->soname = name;  /* messages name what was opened */
    lib->handle = dlopen(lib->soname, RTLD_LAZY | RTLD_LOCAL);
    if (!lib->handle) {
        snprintf(lib->message, sizeof lib->message, "%s", dlerror());
        lib->problem = lib->message;
    }
}

int strata_library_resolve(struct strata_library *lib, void **field, const char *symbol) {
    *field = lib->handle ? dlsym(lib->handle, symbol) : NULL;
    if (!*field && !lib->problem) {
        snprintf(lib->message, sizeof lib->message, "%s has no %s%s%s", lib->soname, symbol,
                 lib->hint ? " " : "", lib->hint ? lib->hint : "");
        lib->problem = lib->message;
    }
    return *field != NULL;
}

/* Every library whose load has started, for `strata_library_settle_all`. */
static pthread_mutex_t started_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strata_library *started;

const char *strata_library_load(struct strata_library *lib, void (*load)(void)) {
    pthread_mutex_lock(&started_lock);
    if (!lib->load) {
        lib->load = load;
        lib->next = started;
        started = lib;
    }
    pthread_mutex_unlock(&started_lock);
    pthread_once(&lib->once, load);
    return lib->problem;
}

void strata_library_settle_all(void) {
    pthread_mutex_lock(&started_lock);
    struct strata_library *first = started;
    pthread_mutex_unlock(&started_lock);
    /* pthread_once returns only once the load that another thread started has finished. */
    for (struct strata_library *lib = first; lib; lib = lib->next) pthread_once(&lib->once, lib->load);
}
