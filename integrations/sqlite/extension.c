/*
 * extension.c - the loadable-extension form: `.load ./bfsqlite` in the
 * sqlite3 shell, or sqlite3_load_extension().
 *
 * Loading registers the buffile VFS "buffile" as the default VFS, with the
 * options of the BFSQLITE_OPTIONS environment variable, installs the SQL
 * functions in this connection and, as an auto extension, in every
 * connection opened afterwards. Connections opened afterwards use it: the
 * connection that loads it keeps the VFS it was opened with (SQLite fixes a
 * connection's VFS at open), so the shell needs `.open` after `.load`.
 * It stays loaded when the connection closes: a registered VFS must not
 * lose its code.
 */
#include <stdlib.h>

#include "bfsqlite_int.h"
SQLITE_EXTENSION_INIT1

/* The entry point SQLite derives from the file name bfsqlite.so. */
__attribute__((visibility("default"))) int
sqlite3_bfsqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

int sqlite3_bfsqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi)
{
    SQLITE_EXTENSION_INIT2(pApi);
    int rc = bf_sqlite_register("buffile", NULL, 1, getenv("BFSQLITE_OPTIONS"), pzErrMsg);
    if (rc == SQLITE_OK)
        rc = bf_sqlite_functions(db, pzErrMsg, pApi);
    if (rc == SQLITE_OK)
        rc = sqlite3_auto_extension((void (*)(void))bf_sqlite_functions);
    return rc == SQLITE_OK ? SQLITE_OK_LOAD_PERMANENTLY : rc;
}
