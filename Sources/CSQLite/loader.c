#include "CSQLite.h"
#include "library_loader.h"

static struct {
    int (*open_v2)(const char *, sqlite3 **, int, const char *);
    const char *(*errmsg)(sqlite3 *);
    int (*close)(sqlite3 *);
    int (*exec)(sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **);
    void (*free)(void *);
    int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
    int (*finalize)(sqlite3_stmt *);
    int (*reset)(sqlite3_stmt *);
    int (*clear_bindings)(sqlite3_stmt *);
    int (*bind_null)(sqlite3_stmt *, int);
    int (*bind_int64)(sqlite3_stmt *, int, sqlite3_int64);
    int (*bind_double)(sqlite3_stmt *, int, double);
    int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
    int (*step)(sqlite3_stmt *);
} f;

static struct strata_library lib = STRATA_LIBRARY("libsqlite3.so.0", NULL);

#define RESOLVE(field) strata_library_resolve(&lib, (void **)&f.field, "sqlite3_" #field)

static void load(void) {
    strata_library_open(&lib, NULL);
    RESOLVE(open_v2); RESOLVE(errmsg); RESOLVE(close); RESOLVE(exec); RESOLVE(free);
    RESOLVE(prepare_v2); RESOLVE(finalize); RESOLVE(reset); RESOLVE(clear_bindings);
    RESOLVE(bind_null); RESOLVE(bind_int64); RESOLVE(bind_double); RESOLVE(bind_text); RESOLVE(step);
}

const char *csqlite_load(void) {
    return strata_library_load(&lib, load);
}

int csqlite_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) { return f.open_v2(filename, db, flags, vfs); }
const char *csqlite_errmsg(sqlite3 *db) { return f.errmsg(db); }
int csqlite_close(sqlite3 *db) { return f.close(db); }
int csqlite_exec(sqlite3 *db, const char *sql, char **errmsg) { return f.exec(db, sql, NULL, NULL, errmsg); }
void csqlite_free(void *p) { f.free(p); }
int csqlite_prepare_v2(sqlite3 *db, const char *sql, int bytes, sqlite3_stmt **statement) { return f.prepare_v2(db, sql, bytes, statement, NULL); }
int csqlite_finalize(sqlite3_stmt *statement) { return f.finalize(statement); }
int csqlite_reset(sqlite3_stmt *statement) { return f.reset(statement); }
int csqlite_clear_bindings(sqlite3_stmt *statement) { return f.clear_bindings(statement); }
int csqlite_bind_null(sqlite3_stmt *statement, int index) { return f.bind_null(statement, index); }
int csqlite_bind_int64(sqlite3_stmt *statement, int index, sqlite3_int64 value) { return f.bind_int64(statement, index, value); }
int csqlite_bind_double(sqlite3_stmt *statement, int index, double value) { return f.bind_double(statement, index, value); }
int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int bytes) { return f.bind_text(statement, index, text, bytes, SQLITE_TRANSIENT); }
int csqlite_step(sqlite3_stmt *statement) { return f.step(statement); }
