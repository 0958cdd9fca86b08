#ifndef STRATA_CSQLITE_H
#define STRATA_CSQLITE_H
/* SQLite, opened on first use (for `strata export --sqlite`).

   Linked, libsqlite3 would be loaded by every strata process at start; it is opened with dlopen
   by the first `csqlite_load` instead, and these functions call through the pointers it resolved.
   Only the header is needed at build time. Call `csqlite_load` (and check it returned NULL)
   before any other function here. */
#include <sqlite3.h>

/* NULL once libsqlite3.so.0 is loaded and every function below resolved; else what went wrong.
   Safe to call from any thread, any number of times. */
const char *csqlite_load(void);

int csqlite_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
const char *csqlite_errmsg(sqlite3 *db);
int csqlite_close(sqlite3 *db);
int csqlite_exec(sqlite3 *db, const char *sql, char **errmsg);
void csqlite_free(void *p);
int csqlite_prepare_v2(sqlite3 *db, const char *sql, int bytes, sqlite3_stmt **statement);
int csqlite_finalize(sqlite3_stmt *statement);
int csqlite_reset(sqlite3_stmt *statement);
int csqlite_clear_bindings(sqlite3_stmt *statement);
int csqlite_bind_null(sqlite3_stmt *statement, int index);
int csqlite_bind_int64(sqlite3_stmt *statement, int index, sqlite3_int64 value);
int csqlite_bind_double(sqlite3_stmt *statement, int index, double value);
/* The text is copied by SQLite (SQLITE_TRANSIENT). */
int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int bytes);
int csqlite_step(sqlite3_stmt *statement);

#endif
