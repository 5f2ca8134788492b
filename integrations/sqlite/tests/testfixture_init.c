/*
 * testfixture_init.c - puts the buffile VFS under SQLite's own test suite.
 *
 * testfixture is built with -DSQLITE_EXTRA_INIT=bf_sqlite_testfixture_init,
 * so sqlite3_initialize() calls this at its end, every time (tests shut
 * SQLite down and initialize it again, which makes "unix" the default VFS
 * once more). With BFSQLITE_TEST unset nothing happens: the same binary is
 * stock SQLite. With BFSQLITE_TEST set to options ("codec=zstd") the buffile
 * VFS becomes the default, so every temp file of every test goes through
 * the library. At exit the VFS's counts are appended to the file named by
 * BFSQLITE_STATS as one line: temp_files other_files logical_written
 * physical_written, which integrations/sqlite/scripts/sqlite-test.sh sums per group.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bfsqlite.h"

int bf_sqlite_testfixture_init(const char *unused);

static void write_stats(void)
{
    const char *path = getenv("BFSQLITE_STATS");
    bf_sqlite_stats s;
    if (path == NULL || bf_sqlite_stats_get("buffile", &s) != SQLITE_OK)
        return;
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return;
    fprintf(f, "%llu %llu %llu %llu\n", (unsigned long long)s.temp_files,
            (unsigned long long)s.other_files, (unsigned long long)s.logical_written,
            (unsigned long long)s.physical_written);
    fclose(f);
}

int bf_sqlite_testfixture_init(const char *unused)
{
    static int registered;
    (void)unused;
    const char *options = getenv("BFSQLITE_TEST");
    if (options == NULL)
        return SQLITE_OK;
    int rc = bf_sqlite_register("buffile", NULL, 1, registered ? NULL : options, NULL);
    if (rc == SQLITE_OK && !registered) {
        registered = 1;
        atexit(write_stats);
    }
    return rc;
}
