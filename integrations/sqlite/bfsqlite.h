/*
 * bfsqlite.h - SQLite's temporary files on libbuffile: a VFS shim.
 *
 * A buffile VFS sits over another VFS (the default one unless named). Every
 * file SQLite opens without a name or as a temporary file (the temp schema
 * and its journal, statement journals, ephemeral tables, VACUUM's transient
 * database, the external sorter's PMA files) becomes a file of one
 * libbuffile space, stored as compressed blocks; main databases, their
 * rollback journals, WAL and super-journals go to the VFS underneath
 * untouched.
 *
 * One space per registered VFS, shared by every connection and thread that
 * uses it (xOpen is not told which connection opens a file, and files cross
 * threads: the sorter's worker threads write PMAs the connection's thread
 * merges), guarded by the VFS's own mutex. The space exists while temp files
 * are open: it is created, with its private directory, at the first open
 * and removed when the last file closes; its counters carry over. The first
 * space of a VFS sweeps directories that dead processes left behind.
 *
 * Options, as "key=value" pairs separated by commas:
 *   codec=none|lz4|zstd|zlib|auto   (default lz4)
 *   level=N|default                 (the codec's level; auto takes default only)
 *   block_size=N                    (bytes, 4096..1 MiB, a power of two; default 4096,
 *                                    SQLite's page size: whole pages never read-modify-write)
 *   temp_dir=PATH                   (default: SQLite's own choice, $SQLITE_TMPDIR, $TMPDIR,
 *                                    /var/tmp, /usr/tmp, /tmp)
 *   temp_limit=N|auto               (physical bytes of all temp files, 0 = none; K, M, G;
 *                                    auto, the default: 90% of the temp directory's free
 *                                    bytes when the first temp file is made)
 *   threads=N                       (0, the default: off; 1..BF_WORKERS_MAX: worker threads
 *                                    of the library compress the temp files' blocks while
 *                                    SQLite's thread goes on; see bf_space_set_workers. Not
 *                                    PRAGMA threads, which stays SQLite's sorter's own)
 * Sizes take a K, M or G suffix (powers of 1024).
 *
 * Errors of temp files: the temp limit and a full disk give SQLITE_FULL;
 * anything else SQLITE_IOERR_* of the operation (a corrupt block
 * SQLITE_IOERR_DATA). The library's message of the failure is what the
 * VFS's xGetLastError() gives the same thread, and buffile_stats.last_error
 * shows it from SQL. Nothing is printed.
 */
#ifndef BFSQLITE_H
#define BFSQLITE_H

#include <stdint.h>

#include <sqlite3.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Register a buffile VFS named zName (NULL: "buffile") over the VFS named
 * zParent (NULL: the default VFS at the time of the call), with the options
 * zOptions (NULL or "": the defaults). makeDefault as sqlite3_vfs_register.
 * Registering a name that is already a buffile VFS registers it again
 * (makeDefault applies; the parent stays the one it has) and applies
 * zOptions as bf_sqlite_configure when not NULL.
 * Returns SQLITE_OK; SQLITE_ERROR with a message in *pzErr (free it with
 * sqlite3_free; pzErr may be NULL) for bad options, an unknown parent or a
 * name taken by another VFS; SQLITE_NOMEM.
 */
int bf_sqlite_register(const char *zName, const char *zParent, int makeDefault,
                       const char *zOptions, char **pzErr);

/*
 * Change options of the buffile VFS named zVfs, as the SQL function
 * buffile_config() does: codec, level and block_size apply to temp files
 * created from then on, temp_limit at once (a limit below what the files
 * hold makes their next growth fail), temp_dir and threads from the next
 * space (the current one, if temp files are open, keeps its directory and
 * its workers until they close). Every option is checked by the library before anything changes:
 * a bad one changes nothing. Returns SQLITE_OK; SQLITE_ERROR with *pzErr for
 * a bad option or a name that is not a buffile VFS; SQLITE_NOMEM.
 */
int bf_sqlite_configure(const char *zVfs, const char *zOptions, char **pzErr);

/* What a buffile VFS has done since it was registered. */
typedef struct bf_sqlite_stats {
    uint64_t temp_files;       /* temp files opened through the library */
    uint64_t temp_files_open;  /* of them, open now */
    uint64_t other_files;      /* files passed to the VFS underneath */
    uint64_t logical_bytes;    /* bytes the open temp files hold, as SQLite sees them */
    uint64_t physical_bytes;   /* bytes they take on disk */
    uint64_t logical_peak;     /* peaks of the two (over all spaces the VFS had) */
    uint64_t physical_peak;
    uint64_t logical_written;  /* bytes SQLite wrote to temp files */
    uint64_t physical_written; /* bytes the library wrote for them */
    uint64_t logical_read;
    uint64_t physical_read;
    uint64_t blocks_compressed; /* blocks stored compressed, and raw (did not shrink) */
    uint64_t blocks_raw;
    uint64_t compress_ns;      /* codec time */
    uint64_t decompress_ns;
    uint64_t spaces;           /* spaces created (one per burst of open temp files) */
} bf_sqlite_stats;

/*
 * Fill *pOut with the statistics of the buffile VFS named zVfs (NULL:
 * "buffile"). Returns SQLITE_OK, or SQLITE_ERROR when no such buffile VFS
 * is registered.
 */
int bf_sqlite_stats_get(const char *zVfs, bf_sqlite_stats *pOut);

/*
 * Install the SQL functions in connection db: buffile_config(key [, value])
 * and the table-valued function buffile_stats (see the README). Suitable
 * for sqlite3_auto_extension() too (pApi is unused when linked into the
 * application, and pzErr receives nothing).
 */
int bf_sqlite_functions(sqlite3 *db, char **pzErr, const sqlite3_api_routines *pApi);

#ifdef __cplusplus
}
#endif

#endif /* BFSQLITE_H */
