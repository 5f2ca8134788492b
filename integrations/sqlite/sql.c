/*
 * sql.c - the shim seen from SQL: buffile_config(), which reads and sets the
 * options of the connection's own buffile VFS, and the table-valued
 * function buffile_stats, one row per registered buffile VFS.
 *
 * buffile_config() acts on the VFS the connection was opened with (its temp
 * files use that one); a connection on another VFS gets an error, not a
 * silent no-op. Its options are the VFS's, shared by every connection on
 * it. It is SQLITE_DIRECTONLY: a schema (view, trigger) cannot reconfigure
 * the process.
 */
#include <stdio.h>
#include <string.h>

#include "bfsqlite_int.h"
SQLITE_EXTENSION_INIT3

/* The name of db's buffile VFS, or 0 with an error set on ctx. */
static int db_vfs(sqlite3_context *ctx, char *name, size_t len)
{
    sqlite3 *db = sqlite3_context_db_handle(ctx);
    sqlite3_vfs *pVfs = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &pVfs) != SQLITE_OK ||
        pVfs == NULL || !bfs_vfs_name(pVfs, name, len)) {
        char *msg = sqlite3_mprintf("buffile_config: this connection's VFS (%s) is not a buffile "
                                    "VFS, so its temp files do not go through the library; "
                                    "open it with vfs=buffile",
                                    pVfs ? pVfs->zName : "?");
        sqlite3_result_error(ctx, msg ? msg : "buffile_config: not a buffile VFS", -1);
        sqlite3_free(msg);
        return 0;
    }
    return 1;
}

/*
 * buffile_config()            -> all options, "codec=lz4,level=default,..."
 * buffile_config(key)         -> that option's value
 * buffile_config(key, value)  -> set it (checked by the library), then its value
 */
static void fn_config(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    char name[64], err[600], buf[1200];
    if (!db_vfs(ctx, name, sizeof name))
        return;
    const char *key = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
    if (argc > 0 && key == NULL) {
        sqlite3_result_error(ctx, "buffile_config: the option name is NULL", -1);
        return;
    }
    if (argc == 2) {
        const char *value = (const char *)sqlite3_value_text(argv[1]);
        if (value == NULL) {
            sqlite3_result_error(ctx, "buffile_config: the value is NULL", -1);
            return;
        }
        int rc = bfs_configure_one(name, key, value, err, sizeof err);
        if (rc != SQLITE_OK) {
            if (rc == SQLITE_NOMEM) {
                sqlite3_result_error_nomem(ctx);
                return;
            }
            char *msg = sqlite3_mprintf("buffile_config: %s", err);
            sqlite3_result_error(ctx, msg ? msg : err, -1);
            sqlite3_free(msg);
            return;
        }
    }
    bfs_options o;
    if (bfs_vfs_options(name, &o) != SQLITE_OK) {
        sqlite3_result_error(ctx, "buffile_config: the VFS is gone", -1);
        return;
    }
    if (argc == 0) {
        bfs_options_format(&o, buf, sizeof buf);
    } else if (bfs_options_get(&o, key, buf, sizeof buf) != SQLITE_OK) {
        char *msg = sqlite3_mprintf("buffile_config: unknown option '%s' (codec, level, "
                                    "block_size, temp_dir, temp_limit, threads)",
                                    key);
        sqlite3_result_error(ctx, msg ? msg : "buffile_config: unknown option", -1);
        sqlite3_free(msg);
        return;
    }
    sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

/* ---- buffile_stats ----------------------------------------------------- */

enum {
    COL_VFS, COL_IS_DEFAULT, COL_CODEC, COL_LEVEL, COL_BLOCK_SIZE, COL_TEMP_DIR,
    COL_TEMP_LIMIT, COL_TEMP_FILES, COL_TEMP_FILES_OPEN, COL_OTHER_FILES, COL_LOGICAL_BYTES,
    COL_PHYSICAL_BYTES, COL_LOGICAL_PEAK, COL_PHYSICAL_PEAK, COL_LOGICAL_WRITTEN,
    COL_PHYSICAL_WRITTEN, COL_LOGICAL_READ, COL_PHYSICAL_READ, COL_BLOCKS_COMPRESSED,
    COL_BLOCKS_RAW, COL_COMPRESS_NS, COL_DECOMPRESS_NS, COL_SPACES, COL_LAST_ERROR,
    COL_THREADS, /* last: SELECT * of earlier releases keeps its columns */
};

static const char stats_schema[] =
    "CREATE TABLE x(vfs TEXT, is_default INT, codec TEXT, level TEXT, block_size INT,"
    " temp_dir TEXT, temp_limit INT, temp_files INT, temp_files_open INT, other_files INT,"
    " logical_bytes INT, physical_bytes INT, logical_peak INT, physical_peak INT,"
    " logical_written INT, physical_written INT, logical_read INT, physical_read INT,"
    " blocks_compressed INT, blocks_raw INT, compress_ns INT, decompress_ns INT, spaces INT,"
    " last_error TEXT, threads INT)";

typedef struct stats_cursor {
    sqlite3_vtab_cursor base;
    bfs_row *rows;
    int n, i;
} stats_cursor;

static int st_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **ppVtab, char **pzErr)
{
    (void)aux;
    (void)argc;
    (void)argv;
    (void)pzErr;
    int rc = sqlite3_declare_vtab(db, stats_schema);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_vtab *t = sqlite3_malloc(sizeof(*t));
    if (t == NULL)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof(*t));
    *ppVtab = t;
    return SQLITE_OK;
}

static int st_disconnect(sqlite3_vtab *t)
{
    sqlite3_free(t);
    return SQLITE_OK;
}

static int st_best_index(sqlite3_vtab *t, sqlite3_index_info *info)
{
    (void)t;
    info->estimatedCost = 10;
    info->estimatedRows = 1;
    return SQLITE_OK;
}

static int st_open(sqlite3_vtab *t, sqlite3_vtab_cursor **pp)
{
    (void)t;
    stats_cursor *c = sqlite3_malloc(sizeof(*c));
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *pp = &c->base;
    return SQLITE_OK;
}

static int st_close(sqlite3_vtab_cursor *cur)
{
    stats_cursor *c = (stats_cursor *)cur;
    sqlite3_free(c->rows);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* The rows are taken at the start of each scan: one consistent snapshot per query. */
static int st_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv)
{
    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    stats_cursor *c = (stats_cursor *)cur;
    sqlite3_free(c->rows);
    c->rows = NULL;
    c->i = 0;
    c->n = bfs_snapshot(&c->rows);
    return c->n < 0 ? SQLITE_NOMEM : SQLITE_OK;
}

static int st_next(sqlite3_vtab_cursor *cur)
{
    ((stats_cursor *)cur)->i++;
    return SQLITE_OK;
}

static int st_eof(sqlite3_vtab_cursor *cur)
{
    stats_cursor *c = (stats_cursor *)cur;
    return c->i >= c->n;
}

static void result_u64(sqlite3_context *ctx, uint64_t v)
{
    sqlite3_result_int64(ctx, v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v);
}

static int st_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    stats_cursor *c = (stats_cursor *)cur;
    const bfs_row *r = &c->rows[c->i];
    const bf_sqlite_stats *s = &r->st;
    char buf[1100];
    switch (col) {
    case COL_VFS: sqlite3_result_text(ctx, r->name, -1, SQLITE_TRANSIENT); break;
    case COL_IS_DEFAULT: sqlite3_result_int(ctx, r->is_default); break;
    case COL_CODEC:
    case COL_LEVEL:
    case COL_TEMP_DIR:
        bfs_options_get(&r->opt, col == COL_CODEC ? "codec" : col == COL_LEVEL ? "level" : "temp_dir",
                        buf, sizeof buf);
        sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
        break;
    case COL_BLOCK_SIZE: sqlite3_result_int64(ctx, r->opt.block_size); break;
    case COL_TEMP_LIMIT: /* the bytes in force; before a space exists, auto is not yet known */
        if (!r->limit_known && r->temp_limit == BF_TEMP_LIMIT_AUTO)
            sqlite3_result_null(ctx);
        else
            result_u64(ctx, r->temp_limit);
        break;
    case COL_TEMP_FILES: result_u64(ctx, s->temp_files); break;
    case COL_TEMP_FILES_OPEN: result_u64(ctx, s->temp_files_open); break;
    case COL_OTHER_FILES: result_u64(ctx, s->other_files); break;
    case COL_LOGICAL_BYTES: result_u64(ctx, s->logical_bytes); break;
    case COL_PHYSICAL_BYTES: result_u64(ctx, s->physical_bytes); break;
    case COL_LOGICAL_PEAK: result_u64(ctx, s->logical_peak); break;
    case COL_PHYSICAL_PEAK: result_u64(ctx, s->physical_peak); break;
    case COL_LOGICAL_WRITTEN: result_u64(ctx, s->logical_written); break;
    case COL_PHYSICAL_WRITTEN: result_u64(ctx, s->physical_written); break;
    case COL_LOGICAL_READ: result_u64(ctx, s->logical_read); break;
    case COL_PHYSICAL_READ: result_u64(ctx, s->physical_read); break;
    case COL_BLOCKS_COMPRESSED: result_u64(ctx, s->blocks_compressed); break;
    case COL_BLOCKS_RAW: result_u64(ctx, s->blocks_raw); break;
    case COL_COMPRESS_NS: result_u64(ctx, s->compress_ns); break;
    case COL_DECOMPRESS_NS: result_u64(ctx, s->decompress_ns); break;
    case COL_SPACES: result_u64(ctx, s->spaces); break;
    case COL_LAST_ERROR: sqlite3_result_text(ctx, r->last_error, -1, SQLITE_TRANSIENT); break;
    case COL_THREADS: sqlite3_result_int64(ctx, r->threads); break;
    default: break;
    }
    return SQLITE_OK;
}

static int st_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *pRowid)
{
    *pRowid = ((stats_cursor *)cur)->i + 1;
    return SQLITE_OK;
}

/* Eponymous only (no xCreate): SELECT * FROM buffile_stats. */
static const sqlite3_module stats_module = {
    .iVersion = 0,
    .xConnect = st_connect,
    .xBestIndex = st_best_index,
    .xDisconnect = st_disconnect,
    .xOpen = st_open,
    .xClose = st_close,
    .xFilter = st_filter,
    .xNext = st_next,
    .xEof = st_eof,
    .xColumn = st_column,
    .xRowid = st_rowid,
};

int bf_sqlite_functions(sqlite3 *db, char **pzErr, const sqlite3_api_routines *pApi)
{
    (void)pzErr;
    (void)pApi;
    const int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
    int rc = SQLITE_OK;
    for (int argc = 0; argc <= 2 && rc == SQLITE_OK; argc++)
        rc = sqlite3_create_function(db, "buffile_config", argc, flags, NULL, fn_config, NULL,
                                     NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_module(db, "buffile_stats", &stats_module, NULL);
    return rc;
}
