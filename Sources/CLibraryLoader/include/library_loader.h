#ifndef STRATA_LIBRARY_LOADER_H
#define STRATA_LIBRARY_LOADER_H
/* A shared library opened with dlopen on first use, and functions resolved from it.

   Strata links only what every command needs (LMDB, zstd). libcurl, libsqlite3 and the image
   libraries are opened by the first command that uses them, so the others start without mapping
   and relocating them (docs/benchmarks.md, process start). Each user keeps one `strata_library`
   and a table of function pointers that its `load` function fills with `strata_library_resolve`. */
#include <pthread.h>

struct strata_library {
    pthread_once_t once;
    const char *soname;   /* what dlopen opens (`strata_library_open` may name another: then that) */
    const char *hint;     /* appended to the message when a function is missing (NULL: none) */
    const char *problem;  /* NULL once the library is open and every function resolved */
    void *handle;
    char message[512];
    void (*load)(void);   /* set by the first `strata_library_load`, for `strata_library_settle_all` */
    struct strata_library *next;
};

#define STRATA_LIBRARY(soname, hint) { PTHREAD_ONCE_INIT, (soname), (hint), NULL, NULL, {0}, NULL, NULL }

/* Opens the library (`name`, or its soname when `name` is NULL or empty); on failure the
   loader's message becomes the problem. Call from the `load` function. */
void strata_library_open(struct strata_library *lib, const char *name);

/* Resolves `symbol` into `*field`; when it is missing (or the library did not open) `*field` is
   NULL and the first such failure becomes the problem. Returns whether it resolved. */
int strata_library_resolve(struct strata_library *lib, void **field, const char *symbol);

/* Runs `load` once (thread-safe) and returns the problem: NULL when the library is usable. */
const char *strata_library_load(struct strata_library *lib, void (*load)(void));

/* Waits until every load that has started (on any thread) has finished. A process must not exit
   while another thread is inside dlopen or a library's initialization (libcurl's starts OpenSSL,
   whose exit handlers would then free what that thread is using): call this before exit. */
void strata_library_settle_all(void);

#endif
