/*
 * sqlite_consumer.c - an application of the installed bfsqlite.h and
 * libbfsqlite.a (pkg-config bfsqlite): registers the buffile VFS as the
 * default with zstd, builds an index under a small cache so that SQLite's
 * sorter spills, and exits 0 when the VFS's statistics show temp files that
 * took fewer bytes on disk than SQLite wrote to them.  usage: sqlite_consumer DIR
 */
#include <bfsqlite.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sqlite_consumer DIR\n");
        return 2;
    }
    char *err = NULL, path[4096], opts[4200];
    snprintf(opts, sizeof opts, "codec=zstd,temp_dir=%s", argv[1]);
    if (bf_sqlite_register(NULL, NULL, 1, opts, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite_consumer: %s\n", err ? err : "bf_sqlite_register failed");
        return 1;
    }
    snprintf(path, sizeof path, "%s/consumer.db", argv[1]);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        fprintf(stderr, "sqlite_consumer: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    const char *sql =
        "PRAGMA cache_size=10; PRAGMA temp_store=FILE;"
        "CREATE TABLE t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c "
        "WHERE x<100000) SELECT x, printf('%08d row %d', x*7919%100003, x) AS s FROM c;"
        "CREATE INDEX t_s ON t(s);";
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite_consumer: %s\n", err);
        return 1;
    }
    sqlite3_close(db);
    bf_sqlite_stats st;
    if (bf_sqlite_stats_get(NULL, &st) != SQLITE_OK || st.temp_files == 0 ||
        st.physical_written == 0 || st.physical_written >= st.logical_written) {
        fprintf(stderr, "sqlite_consumer: %llu temp files, %llu bytes written as %llu\n",
                (unsigned long long)st.temp_files, (unsigned long long)st.logical_written,
                (unsigned long long)st.physical_written);
        return 1;
    }
    printf("sqlite_consumer: %llu temp files, %llu bytes stored as %llu\n",
           (unsigned long long)st.temp_files, (unsigned long long)st.logical_written,
           (unsigned long long)st.physical_written);
    return 0;
}
