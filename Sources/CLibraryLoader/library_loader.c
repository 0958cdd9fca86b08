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

const char *strata_library_load(struct strata_library *lib, void (*load)(void)) {
    pthread_once(&lib->once, load);
    return lib->problem;
}
