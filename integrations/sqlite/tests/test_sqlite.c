/*
 * test_sqlite.c - the buffile VFS under Debian's libsqlite3.
 *
 * - vfs_methods: every method SQLite calls on a temp file, against the unix
 *   VFS's own temp file as the reference: the same random writes, reads
 *   (short reads zero-filled, SQLITE_IOERR_SHORT_READ), truncates and sizes
 *   give the same codes and bytes; xFetch declines; named files pass through.
 * - same_database: CREATE INDEX, ORDER BY and VACUUM under a small cache,
 *   temp_store=FILE: with lz4 and zstd the database file is byte for byte
 *   the one stock SQLite makes, the sorted output and the content checksum
 *   are the same, and each step sent temp files through the library.
 * - temp_limit: SQLITE_FULL, the library's message from xGetLastError and
 *   buffile_stats.last_error, an intact database; a raised limit then works.
 * - kill_mid_sort: a process killed while its sort spills leaves its space
 *   directory; the next open of a temp file sweeps it.
 * - sql_functions: buffile_config reads, sets and refuses (checked by the
 *   library); buffile_stats shows the VFS; a connection on another VFS is
 *   told so.
 * - threads: connections in four threads, each sorting with PRAGMA threads=2
 *   (the sorter's worker threads), share one VFS and get the same answers,
 *   without and with the library's workers (threads=2).
 * - worker_threads: with threads=1 (lz4) and threads=2 (zstd) CREATE INDEX,
 *   ORDER BY and VACUUM leave the database byte for byte as stock's, and
 *   temp tables (filled, indexed, sorted, grouped) answer as stock's; the
 *   workers are running while a sort's files are open, and buffile_stats
 *   says how many; bad thread counts are refused with their message, and a
 *   new count applies from the next space.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfsqlite.h"
#include "buffile.h"

static char tmp_root[512];

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmp_root, name);
}

static void make_dir(const char *path)
{
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    assert_int_equal(system(cmd), 0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, err ? err : sqlite3_errstr(rc));
}

/* FNV-1a over every value of every row, with separators. */
static uint64_t query_hash(sqlite3 *db, const char *sql, int64_t *rows)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    uint64_t h = 1469598103934665603ull;
    int64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            for (; t != NULL && *t; t++)
                h = (h ^ *t) * 1099511628211ull;
            h = (h ^ 0x1f) * 1099511628211ull;
        }
        n++;
    }
    if (rc != SQLITE_DONE)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (rows != NULL)
        *rows = n;
    return h;
}

static uint64_t file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint64_t h = 1469598103934665603ull;
    int c;
    while ((c = getc(f)) != EOF)
        h = (h ^ (unsigned)c) * 1099511628211ull;
    fclose(f);
    return h;
}

static void copy_file(const char *from, const char *to)
{
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

static sqlite3 *open_db(const char *path, const char *vfs)
{
    sqlite3 *db;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
    if (rc != SQLITE_OK)
        fail_msg("open %s (%s): %s", path, vfs, sqlite3_errmsg(db));
    assert_int_equal(bf_sqlite_functions(db, NULL, NULL), SQLITE_OK);
    return db;
}

/* A table of text that compresses as spilled rows do: words, numbers, repeats. */
static void fill_table(sqlite3 *db, int nrows)
{
    static const char *const words[] = {"carefully", "final", "deposits", "sleep", "quickly",
                                        "ironic", "packages", "furiously", "regular", "accounts",
                                        "blithely", "express", "requests", "pending", "theodolites"};
    exec(db, "CREATE TABLE t(a INTEGER PRIMARY KEY, b INT, c TEXT, d BLOB)");
    exec(db, "BEGIN");
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?,?,?)", -1, &st, NULL),
                     SQLITE_OK);
    for (int i = 1; i <= nrows; i++) {
        char text[200];
        size_t n = (size_t)snprintf(text, sizeof text, "%08llx",
                                    (unsigned long long)(rnd() & 0xffffffffull));
        for (int w = 0; w < 6; w++)
            n += (size_t)snprintf(text + n, sizeof text - n, " %s",
                                  words[rnd() % (sizeof words / sizeof words[0])]);
        unsigned char blob[16];
        for (size_t k = 0; k < sizeof blob; k++)
            blob[k] = (unsigned char)(k < 4 ? rnd() : 0);
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)(rnd() % 100000));
        sqlite3_bind_text(st, 3, text, (int)n, SQLITE_TRANSIENT);
        sqlite3_bind_blob(st, 4, blob, sizeof blob, SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    exec(db, "COMMIT");
}

static void make_db(const char *path, int nrows)
{
    unlink(path);
    sqlite3 *db = open_db(path, "unix");
    fill_table(db, nrows);
    sqlite3_close(db);
}

static void small_cache(sqlite3 *db)
{
    exec(db, "PRAGMA cache_size=20; PRAGMA temp_store=FILE");
}

static void stats(const char *vfs, bf_sqlite_stats *s)
{
    assert_int_equal(bf_sqlite_stats_get(vfs, s), SQLITE_OK);
}

static void register_vfs(const char *name, const char *options)
{
    char *err = NULL;
    int rc = bf_sqlite_register(name, "unix", 0, options, &err);
    if (rc != SQLITE_OK)
        fail_msg("register %s: %s", name, err ? err : sqlite3_errstr(rc));
}

/* ---- vfs_methods ------------------------------------------------------- */

static sqlite3_file *temp_open(sqlite3_vfs *vfs, int type)
{
    sqlite3_file *f = calloc(1, (size_t)vfs->szOsFile);
    assert_non_null(f);
    int out = 0;
    int flags = type | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE |
                SQLITE_OPEN_DELETEONCLOSE;
    assert_int_equal(vfs->xOpen(vfs, NULL, f, flags, &out), SQLITE_OK);
    assert_non_null(f->pMethods);
    return f;
}

static void temp_close(sqlite3_file *f)
{
    assert_int_equal(f->pMethods->xClose(f), SQLITE_OK);
    free(f);
}

static void test_vfs_methods(void **state)
{
    (void)state;
    register_vfs("bf_methods", "codec=zstd,block_size=4096");
    sqlite3_vfs *bv = sqlite3_vfs_find("bf_methods");
    sqlite3_vfs *uv = sqlite3_vfs_find("unix");
    assert_non_null(bv);
    const int types[] = {SQLITE_OPEN_TEMP_JOURNAL, SQLITE_OPEN_TEMP_DB, SQLITE_OPEN_SUBJOURNAL,
                         SQLITE_OPEN_TRANSIENT_DB};
    bf_sqlite_stats before, after;
    stats("bf_methods", &before);
    enum { N = 1 << 16 };
    unsigned char *wbuf = malloc(N), *ra = malloc(N), *rb = malloc(N);
    assert_non_null(wbuf);
    assert_non_null(ra);
    assert_non_null(rb);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        sqlite3_file *b = temp_open(bv, types[t]), *u = temp_open(uv, types[t]);
        assert_int_equal(b->pMethods->iVersion, 3);
        for (int op = 0; op < 3000; op++) {
            sqlite3_int64 fsz_b, fsz_u;
            assert_int_equal(b->pMethods->xFileSize(b, &fsz_b), SQLITE_OK);
            assert_int_equal(u->pMethods->xFileSize(u, &fsz_u), SQLITE_OK);
            assert_int_equal(fsz_b, fsz_u);
            uint64_t kind = rnd() % 100;
            /* Offsets around the end and across blocks; sizes from one byte to 64 KiB, the
               largest page (the unix VFS takes no single write of 128 KiB or more). */
            int64_t off = (int64_t)(rnd() % (uint64_t)(fsz_u + 70000));
            uint64_t span = rnd() % 8 == 0 ? N : 9000;
            int amt = rnd() % 4 == 0 ? 4096 : (int)(1 + rnd() % span);
            if (rnd() % 3 == 0)
                off &= ~(int64_t)4095;
            if (kind < 45) {
                for (int k = 0; k < amt; k++)
                    wbuf[k] = (unsigned char)(k % 97 < 60 ? (uint64_t)('a' + op % 26) : rnd());
                assert_int_equal(b->pMethods->xWrite(b, wbuf, amt, off),
                                 u->pMethods->xWrite(u, wbuf, amt, off));
            } else if (kind < 90) {
                memset(ra, 0xaa, (size_t)amt);
                memset(rb, 0x55, (size_t)amt);
                int rc_b = b->pMethods->xRead(b, ra, amt, off);
                int rc_u = u->pMethods->xRead(u, rb, amt, off);
                assert_int_equal(rc_b, rc_u);
                assert_true(rc_b == SQLITE_OK || rc_b == SQLITE_IOERR_SHORT_READ);
                assert_memory_equal(ra, rb, (size_t)amt);
            } else if (kind < 97) {
                int64_t size = (int64_t)(rnd() % (uint64_t)(fsz_u + 50000));
                assert_int_equal(b->pMethods->xTruncate(b, size), SQLITE_OK);
                assert_int_equal(u->pMethods->xTruncate(u, size), SQLITE_OK);
            } else {
                assert_int_equal(b->pMethods->xSync(b, SQLITE_SYNC_NORMAL), SQLITE_OK);
            }
        }
        /* Locks are the connection's alone; mmap is declined; the device looks like unix's. */
        int res = 1;
        assert_int_equal(b->pMethods->xLock(b, SQLITE_LOCK_SHARED), SQLITE_OK);
        assert_int_equal(b->pMethods->xCheckReservedLock(b, &res), SQLITE_OK);
        assert_int_equal(res, 0);
        assert_int_equal(b->pMethods->xLock(b, SQLITE_LOCK_EXCLUSIVE), SQLITE_OK);
        assert_int_equal(b->pMethods->xCheckReservedLock(b, &res), SQLITE_OK);
        assert_int_equal(res, 1);
        assert_int_equal(b->pMethods->xUnlock(b, SQLITE_LOCK_NONE), SQLITE_OK);
        void *p = (void *)1;
        assert_int_equal(b->pMethods->xFetch(b, 0, 4096, &p), SQLITE_OK);
        assert_null(p);
        assert_int_equal(b->pMethods->xUnfetch(b, 0, NULL), SQLITE_OK);
        assert_int_equal(b->pMethods->xSectorSize(b), u->pMethods->xSectorSize(u));
        assert_int_equal(b->pMethods->xDeviceCharacteristics(b),
                         u->pMethods->xDeviceCharacteristics(u));
        sqlite3_int64 mmap = 512000;
        assert_int_equal(b->pMethods->xFileControl(b, SQLITE_FCNTL_MMAP_SIZE, &mmap), SQLITE_OK);
        assert_int_equal(mmap, 0);
        mmap = -1;
        assert_int_equal(b->pMethods->xFileControl(b, SQLITE_FCNTL_MMAP_SIZE, &mmap), SQLITE_OK);
        assert_int_equal(mmap, 512000);
        int64_t hint = 1 << 20;
        assert_int_equal(b->pMethods->xFileControl(b, SQLITE_FCNTL_SIZE_HINT, &hint), SQLITE_OK);
        char *name = NULL;
        assert_int_equal(b->pMethods->xFileControl(b, SQLITE_FCNTL_VFSNAME, &name), SQLITE_OK);
        assert_string_equal(name, "bf_methods");
        sqlite3_free(name);
        assert_int_equal(b->pMethods->xFileControl(b, SQLITE_FCNTL_PERSIST_WAL, &res),
                         SQLITE_NOTFOUND);
        temp_close(b);
        temp_close(u);
    }
    stats("bf_methods", &after);
    assert_int_equal(after.temp_files - before.temp_files, 4);
    assert_int_equal(after.temp_files_open, 0);
    assert_true(after.logical_written > before.logical_written);
    assert_true(after.physical_written < after.logical_written);

    /* A named main database goes to the parent: a real file at its path. */
    char path[600];
    path_of(path, sizeof path, "named.db");
    unlink(path);
    sqlite3_file *m = calloc(1, (size_t)bv->szOsFile);
    assert_non_null(m);
    int flags = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    assert_int_equal(bv->xOpen(bv, path, m, flags, NULL), SQLITE_OK);
    assert_int_equal(m->pMethods->xWrite(m, "hello", 5, 0), SQLITE_OK);
    char *name = NULL;
    assert_int_equal(m->pMethods->xFileControl(m, SQLITE_FCNTL_VFSNAME, &name), SQLITE_OK);
    assert_string_equal(name, "bf_methods/unix");
    sqlite3_free(name);
    assert_int_equal(m->pMethods->xClose(m), SQLITE_OK);
    free(m);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 5);
    bf_sqlite_stats last;
    stats("bf_methods", &last);
    assert_int_equal(last.temp_files, after.temp_files);
    assert_int_equal(last.other_files, after.other_files + 1);
    free(wbuf);
    free(ra);
    free(rb);
}

/* ---- same_database --------------------------------------------------------- */

typedef struct step_result {
    uint64_t file, sorted, content;
} step_result;

/* The three operations on a copy of src, through vfs; each must send files through the library. */
static void run_steps(const char *src, const char *vfs, const char *copy, step_result r[3])
{
    copy_file(src, copy);
    sqlite3 *db = open_db(copy, vfs);
    small_cache(db);
    int shim = strcmp(vfs, "unix") != 0;
    static const char *const steps[3] = {
        "CREATE INDEX t_bc ON t(b, c)",
        NULL, /* the ORDER BY, read below */
        "VACUUM",
    };
    for (int i = 0; i < 3; i++) {
        bf_sqlite_stats s0, s1;
        if (shim)
            stats(vfs, &s0);
        int64_t rows = 0;
        r[i].sorted = 0;
        if (steps[i] != NULL)
            exec(db, steps[i]);
        else
            r[i].sorted = query_hash(db, "SELECT c, d, a FROM t ORDER BY c DESC, d", &rows);
        if (shim) {
            stats(vfs, &s1);
            assert_true(s1.temp_files > s0.temp_files);
            assert_true(s1.logical_written > s0.logical_written);
            assert_true(s1.physical_written - s0.physical_written <
                        s1.logical_written - s0.logical_written);
            assert_int_equal(s1.temp_files_open, 0);
        }
        r[i].content = query_hash(db, "SELECT * FROM t ORDER BY a", NULL);
        assert_int_equal(query_hash(db, "PRAGMA integrity_check", NULL),
                         query_hash(db, "SELECT 'ok'", NULL));
        r[i].file = file_hash(copy);
        if (i == 1)
            assert_true(rows > 0);
    }
    sqlite3_close(db);
}

static void test_same_database(void **state)
{
    (void)state;
    char src[600], copy[600];
    path_of(src, sizeof src, "same-src.db");
    make_db(src, 150000);
    sqlite3 *db = open_db(src, "unix");
    uint64_t before = query_hash(db, "SELECT * FROM t ORDER BY a", NULL);
    sqlite3_close(db);
    register_vfs("bf_same_lz4", "codec=lz4");
    register_vfs("bf_same_zstd", "codec=zstd,block_size=8192");
    step_result stock[3], shim[3];
    path_of(copy, sizeof copy, "same-stock.db");
    run_steps(src, "unix", copy, stock);
    const char *const vfses[] = {"bf_same_lz4", "bf_same_zstd"};
    for (int v = 0; v < 2; v++) {
        path_of(copy, sizeof copy, vfses[v]);
        run_steps(src, vfses[v], copy, shim);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(shim[i].content, before);
            assert_int_equal(shim[i].content, stock[i].content);
            assert_int_equal(shim[i].sorted, stock[i].sorted);
            assert_int_equal(shim[i].file, stock[i].file);
        }
    }
}

/* ---- temp_limit ------------------------------------------------------------ */

static void test_temp_limit(void **state)
{
    (void)state;
    char path[600];
    path_of(path, sizeof path, "limit.db");
    make_db(path, 60000);
    register_vfs("bf_limit", "codec=none,temp_limit=256K");
    sqlite3 *db = open_db(path, "bf_limit");
    small_cache(db);
    uint64_t before = query_hash(db, "SELECT * FROM t ORDER BY a", NULL);
    int rc = sqlite3_exec(db, "CREATE INDEX t_c ON t(c, d)", NULL, NULL, NULL);
    assert_int_equal(rc, SQLITE_FULL);
    /* The library's own words, for this thread and from SQL. */
    sqlite3_vfs *v = sqlite3_vfs_find("bf_limit");
    char msg[512] = "";
    assert_int_equal(v->xGetLastError(v, sizeof msg, msg), BF_ELIMIT);
    assert_non_null(strstr(msg, "limit"));
    int64_t rows;
    uint64_t h = query_hash(db, "SELECT last_error FROM buffile_stats WHERE vfs='bf_limit'"
                                " AND last_error LIKE '%limit%'",
                            &rows);
    (void)h;
    assert_int_equal(rows, 1);
    /* Nothing lost, nothing half-made. */
    assert_int_equal(query_hash(db, "PRAGMA integrity_check", NULL),
                     query_hash(db, "SELECT 'ok'", NULL));
    assert_int_equal(query_hash(db, "SELECT * FROM t ORDER BY a", NULL), before);
    query_hash(db, "SELECT name FROM sqlite_schema WHERE name='t_c'", &rows);
    assert_int_equal(rows, 0);
    bf_sqlite_stats s;
    stats("bf_limit", &s);
    assert_int_equal(s.temp_files_open, 0);
    assert_true(s.physical_peak <= 256 * 1024);
    /* An ORDER BY over the limit fails the same way, and the limit lifted lets both through. */
    assert_int_equal(sqlite3_exec(db, "SELECT * FROM t ORDER BY c", NULL, NULL, NULL), SQLITE_FULL);
    exec(db, "SELECT buffile_config('temp_limit', '0')");
    exec(db, "CREATE INDEX t_c ON t(c, d)");
    exec(db, "SELECT * FROM t ORDER BY c");
    assert_int_equal(query_hash(db, "PRAGMA integrity_check", NULL),
                     query_hash(db, "SELECT 'ok'", NULL));
    sqlite3_close(db);
}

/* ---- kill_mid_sort ---------------------------------------------------------- */

/* Directories buffile-<pid>-* under dir; pid 0: any. */
static int count_space_dirs(const char *dir, pid_t pid, int with_files)
{
    char prefix[64];
    if (pid != 0)
        snprintf(prefix, sizeof prefix, "buffile-%ld-", (long)pid);
    else
        snprintf(prefix, sizeof prefix, "buffile-");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (!with_files) {
            n++;
            continue;
        }
        char sub[1200];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        DIR *s = opendir(sub);
        if (s == NULL)
            continue;
        struct dirent *e;
        while ((e = readdir(s)) != NULL)
            if (e->d_name[0] != '.') {
                n++;
                break;
            }
        closedir(s);
    }
    closedir(d);
    return n;
}

static void test_kill_mid_sort(void **state)
{
    (void)state;
    char path[600], dir[600], opts[800];
    path_of(path, sizeof path, "kill.db");
    path_of(dir, sizeof dir, "kill-tmp");
    make_dir(dir);
    make_db(path, 60000);
    snprintf(opts, sizeof opts, "codec=lz4,temp_dir=%s", dir);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        /* Sort until killed. */
        if (bf_sqlite_register("bf_kill", "unix", 0, opts, NULL) != SQLITE_OK)
            _exit(2);
        sqlite3 *db;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, "bf_kill") != SQLITE_OK)
            _exit(3);
        sqlite3_exec(db, "PRAGMA cache_size=20; PRAGMA temp_store=FILE", NULL, NULL, NULL);
        for (;;)
            if (sqlite3_exec(db, "SELECT * FROM t ORDER BY c, d", NULL, NULL, NULL) != SQLITE_OK)
                _exit(4);
    }
    /* Kill it once its sort has files on disk. */
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        seen = count_space_dirs(dir, child, 1) > 0;
        if (!seen) {
            int status;
            assert_int_equal(waitpid(child, &status, WNOHANG), 0);
            usleep(10000);
        }
    }
    kill(child, SIGKILL);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(seen);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(count_space_dirs(dir, child, 0), 1);

    /* The next open of a temp file in that directory sweeps what the dead process left. */
    register_vfs("bf_kill_next", opts);
    sqlite3 *db = open_db(path, "bf_kill_next");
    small_cache(db);
    assert_int_equal(query_hash(db, "PRAGMA integrity_check", NULL),
                     query_hash(db, "SELECT 'ok'", NULL));
    exec(db, "SELECT * FROM t ORDER BY c");
    assert_int_equal(count_space_dirs(dir, child, 0), 0);
    sqlite3_close(db);
    /* And our own space went with our last temp file. */
    assert_int_equal(count_space_dirs(dir, 0, 0), 0);
}

/* ---- sql_functions ---------------------------------------------------------- */

static void expect_error(sqlite3 *db, const char *sql, const char *words)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    assert_int_not_equal(rc, SQLITE_OK);
    if (err == NULL || strstr(err, words) == NULL)
        fail_msg("%s: expected an error saying '%s', got '%s'", sql, words, err ? err : "");
    sqlite3_free(err);
}

static char *scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) != SQLITE_ROW)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    char *v = sqlite3_mprintf("%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

static void expect_scalar(sqlite3 *db, const char *sql, const char *want)
{
    char *v = scalar(db, sql);
    if (strcmp(v, want) != 0)
        fail_msg("%s: '%s', expected '%s'", sql, v, want);
    sqlite3_free(v);
}

static void test_sql_functions(void **state)
{
    (void)state;
    char path[600];
    path_of(path, sizeof path, "sql.db");
    make_db(path, 5000);
    register_vfs("bf_sql", "codec=zstd,level=3");
    sqlite3 *db = open_db(path, "bf_sql");
    expect_scalar(db, "SELECT buffile_config('codec')", "zstd");
    expect_scalar(db, "SELECT buffile_config('level')", "3");
    /* A new codec starts from its own default level. */
    expect_scalar(db, "SELECT buffile_config('codec', 'lz4')", "lz4");
    expect_scalar(db, "SELECT buffile_config('level')", "default");
    expect_scalar(db, "SELECT buffile_config('block_size', '64K')", "65536");
    expect_scalar(db, "SELECT buffile_config()",
                  "codec=lz4,level=default,block_size=65536,temp_dir=,temp_limit=auto,threads=0");
    /* What the library refuses changes nothing. */
    expect_error(db, "SELECT buffile_config('codec', 'brotli')", "unknown codec");
    exec(db, "SELECT buffile_config('codec', 'zstd')");
    expect_error(db, "SELECT buffile_config('level', '99')", "out of range");
    expect_error(db, "SELECT buffile_config('block_size', '3000')", "block size");
    expect_error(db, "SELECT buffile_config('temp_dir', '/nonexistent/dir')", "/nonexistent/dir");
    expect_error(db, "SELECT buffile_config('temp_limit', '-1')", "bad temp_limit");
    expect_error(db, "SELECT buffile_config('colour', 'blue')", "unknown option");
    expect_error(db, "SELECT buffile_config('colour')", "unknown option");
    exec(db, "SELECT buffile_config('codec', 'auto')");
    expect_error(db, "SELECT buffile_config('level', '1')", "auto");
    expect_scalar(db, "SELECT buffile_config()",
                  "codec=auto,level=default,block_size=65536,temp_dir=,temp_limit=auto,threads=0");
    /* Not from a schema: a view cannot reconfigure the process. */
    exec(db, "CREATE VIEW v AS SELECT buffile_config('codec', 'none') AS x");
    expect_error(db, "SELECT * FROM v", "unsafe use");
    expect_scalar(db, "SELECT buffile_config('codec')", "auto");
    exec(db, "SELECT buffile_config('codec', 'zstd')");
    /* The statistics see the temp files of a sort in this codec. */
    exec(db, "PRAGMA temp_store=FILE; PRAGMA temp.cache_size=10");
    exec(db, "CREATE TEMP TABLE tt AS SELECT * FROM t; INSERT INTO tt SELECT * FROM tt;"
             "INSERT INTO tt SELECT * FROM tt; INSERT INTO tt SELECT * FROM tt");
    expect_scalar(db, "SELECT temp_files > 0 AND temp_files_open > 0 AND logical_written > 0"
                      " AND codec = 'zstd' AND is_default = 0 FROM buffile_stats"
                      " WHERE vfs = 'bf_sql'",
                  "1");
    sqlite3_close(db);
    /* A connection on another VFS is told that its temp files do not go through us. */
    db = open_db(path, "unix");
    expect_error(db, "SELECT buffile_config('codec')", "not a buffile VFS");
    expect_scalar(db, "SELECT count(*) > 0 FROM buffile_stats", "1");
    sqlite3_close(db);
    /* Registration: bad options and taken names are refused with a message. */
    char *err = NULL;
    assert_int_equal(bf_sqlite_register("bf_bad", "unix", 0, "codec=zstd,level=40", &err),
                     SQLITE_ERROR);
    assert_non_null(strstr(err, "level"));
    sqlite3_free(err);
    assert_null(sqlite3_vfs_find("bf_bad"));
    assert_int_equal(bf_sqlite_register("unix-dotfile", "unix", 0, NULL, &err), SQLITE_ERROR);
    assert_non_null(strstr(err, "registered already"));
    sqlite3_free(err);
    assert_int_equal(bf_sqlite_register("bf_x", "no-such-vfs", 0, NULL, &err), SQLITE_ERROR);
    sqlite3_free(err);
}

/* ---- threads ---------------------------------------------------------------- */

typedef struct thread_job {
    char path[600];
    const char *vfs;
    uint64_t hash;
    int rc;
} thread_job;

static void *thread_sort(void *arg)
{
    thread_job *j = arg;
    sqlite3 *db;
    j->rc = sqlite3_open_v2(j->path, &db, SQLITE_OPEN_READONLY, j->vfs);
    if (j->rc != SQLITE_OK)
        return NULL;
    sqlite3_exec(db, "PRAGMA cache_size=20; PRAGMA temp_store=FILE; PRAGMA threads=2", NULL,
                 NULL, NULL);
    sqlite3_stmt *st;
    j->rc = sqlite3_prepare_v2(db, "SELECT c, a FROM t ORDER BY c, a", -1, &st, NULL);
    uint64_t h = 1469598103934665603ull;
    while (j->rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        for (const unsigned char *t = sqlite3_column_text(st, 0); *t; t++)
            h = (h ^ *t) * 1099511628211ull;
    if (j->rc == SQLITE_OK)
        j->rc = sqlite3_finalize(st);
    j->hash = h;
    sqlite3_close(db);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    assert_true(sqlite3_threadsafe() != 0);
    /* Each job a copy of proto: copying jobs[0] while its thread runs would race. */
    thread_job jobs[4], proto;
    memset(&proto, 0, sizeof proto);
    path_of(proto.path, sizeof proto.path, "threads.db");
    make_db(proto.path, 80000);
    register_vfs("bf_threads", "codec=zstd");
    /* The library's workers under the same load: SQLite's threads take turns on the space,
       its workers compress beside them. */
    register_vfs("bf_threads_w", "codec=zstd,threads=2");
    const char *const vfses[] = {"bf_threads", "bf_threads_w"};
    uint64_t want = 0;
    for (int v = 0; v < 2; v++) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            jobs[i] = proto;
            jobs[i].vfs = vfses[v];
            assert_int_equal(pthread_create(&th[i], NULL, thread_sort, &jobs[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            assert_int_equal(jobs[i].rc, SQLITE_OK);
            if (v == 0 && i == 0)
                want = jobs[0].hash;
            assert_int_equal(jobs[i].hash, want);
        }
        bf_sqlite_stats s;
        stats(vfses[v], &s);
        assert_true(s.temp_files >= 4);
        assert_int_equal(s.temp_files_open, 0);
        assert_true(s.physical_written < s.logical_written);
    }
}

/* ---- worker_threads ----------------------------------------------------------- */

/* The threads of this process now. */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Temp tables through vfs: filled past a small temp cache, indexed, sorted and grouped. */
static uint64_t temp_tables(const char *path, const char *vfs)
{
    sqlite3 *db = open_db(path, vfs);
    exec(db, "PRAGMA temp_store=FILE; PRAGMA temp.cache_size=10");
    exec(db, "CREATE TEMP TABLE tt AS SELECT * FROM t; INSERT INTO tt SELECT a + 1000000, b, "
             "c || 'x', d FROM tt; CREATE INDEX temp.tt_c ON tt(c)");
    uint64_t h = query_hash(db, "SELECT c, a FROM tt ORDER BY c DESC, a", NULL);
    h ^= query_hash(db, "SELECT b % 97, count(*), max(c) FROM tt GROUP BY 1 ORDER BY 1", NULL) * 31;
    h ^= query_hash(db, "SELECT c FROM tt INDEXED BY tt_c WHERE c > '8' LIMIT 500", NULL) * 7;
    assert_int_equal(query_hash(db, "PRAGMA temp.integrity_check", NULL),
                     query_hash(db, "SELECT 'ok'", NULL));
    sqlite3_close(db);
    return h;
}

static void test_worker_threads(void **state)
{
    (void)state;
    char src[600], copy[600];
    path_of(src, sizeof src, "workers-src.db");
    make_db(src, 120000);
    register_vfs("bf_w1", "codec=lz4,threads=1");
    register_vfs("bf_w2", "codec=zstd,threads=2");
    step_result stock[3], shim[3];
    path_of(copy, sizeof copy, "workers-stock.db");
    run_steps(src, "unix", copy, stock);
    uint64_t stock_temp = temp_tables(src, "unix");
    const char *const vfses[] = {"bf_w1", "bf_w2"};
    for (int v = 0; v < 2; v++) {
        path_of(copy, sizeof copy, vfses[v]);
        run_steps(src, vfses[v], copy, shim);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(shim[i].content, stock[i].content);
            assert_int_equal(shim[i].sorted, stock[i].sorted);
            assert_int_equal(shim[i].file, stock[i].file);
        }
        bf_sqlite_stats s0, s1;
        stats(vfses[v], &s0);
        assert_int_equal(temp_tables(src, vfses[v]), stock_temp);
        stats(vfses[v], &s1);
        assert_true(s1.temp_files > s0.temp_files);
        assert_true(s1.physical_written - s0.physical_written <
                    s1.logical_written - s0.logical_written);
        assert_int_equal(s1.temp_files_open, 0);
    }

    /* While a sort's files are open the space's workers run (they start with its first
       block), and buffile_stats says how many the space has. */
    int before = count_threads();
    sqlite3 *db = open_db(src, "bf_w2");
    small_cache(db);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT c FROM t ORDER BY c", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_true(count_threads() >= before + 2);
    expect_scalar(db, "SELECT threads FROM buffile_stats WHERE vfs = 'bf_w2'", "2");
    /* A new count is the option at once and the space's from the next space: the library
       takes workers only while a space has no open file. */
    expect_scalar(db, "SELECT buffile_config('threads', '1')", "1");
    expect_scalar(db, "SELECT threads FROM buffile_stats WHERE vfs = 'bf_w2'", "2");
    assert_int_equal(sqlite3_finalize(st), SQLITE_OK);
    expect_scalar(db,
                  "SELECT temp_files_open || ' ' || threads FROM buffile_stats"
                  " WHERE vfs = 'bf_w2'",
                  "0 1");
    expect_scalar(db, "SELECT buffile_config('threads', '0')", "0");

    /* Counts the library does not take, or that are no count, are refused with the reason,
       and change nothing. */
    expect_error(db, "SELECT buffile_config('threads', '65')",
                 "bad threads '65' (0 = off, or 1..64");
    expect_error(db, "SELECT buffile_config('threads', '-1')", "bad threads");
    expect_error(db, "SELECT buffile_config('threads', 'two')", "bad threads");
    expect_error(db, "SELECT buffile_config('threads', '')", "bad threads");
    expect_error(db, "SELECT buffile_config('threads', ' 1')", "bad threads");
    expect_scalar(db, "SELECT buffile_config('threads')", "0");
    sqlite3_close(db);
    char *err = NULL;
    assert_int_equal(bf_sqlite_register("bf_w_bad", "unix", 0, "codec=lz4,threads=1000", &err),
                     SQLITE_ERROR);
    assert_non_null(err);
    assert_non_null(strstr(err, "bad threads '1000'"));
    sqlite3_free(err);
    assert_null(sqlite3_vfs_find("bf_w_bad"));
    err = NULL;
    assert_int_equal(bf_sqlite_configure("bf_w1", "threads=x", &err), SQLITE_ERROR);
    assert_non_null(err);
    assert_non_null(strstr(err, "bad threads 'x'"));
    sqlite3_free(err);
}

int main(void)
{
    const char *base = getenv("BF_TEST_TMP");
    snprintf(tmp_root, sizeof tmp_root, "%s/sqlite-vfs-%ld", base ? base : "/tmp", (long)getpid());
    make_dir(tmp_root);
    /* Our spaces go where the tests look, not into the machine's /tmp. */
    setenv("SQLITE_TMPDIR", tmp_root, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vfs_methods),    cmocka_unit_test(test_same_database),
        cmocka_unit_test(test_temp_limit),     cmocka_unit_test(test_kill_mid_sort),
        cmocka_unit_test(test_sql_functions),  cmocka_unit_test(test_threads),
        cmocka_unit_test(test_worker_threads),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed == 0) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            return 1;
    }
    return failed;
}
