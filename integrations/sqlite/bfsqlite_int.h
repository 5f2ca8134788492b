/*
 * bfsqlite_int.h - what the shim's files share (not installed).
 *
 * Every file of the shim reaches SQLite through sqlite3ext.h: compiled with
 * SQLITE_CORE (the static library an application links) the calls are
 * direct; compiled without it (the loadable extension) they go through the
 * sqlite3_api table that extension.c fills.
 */
#ifndef BFSQLITE_INT_H
#define BFSQLITE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3ext.h>

#include "bfsqlite.h"
#include "buffile.h"

/* The options of a buffile VFS (options.c parses and prints them). */
typedef struct bfs_options {
    bf_codec codec;
    int32_t level;       /* BF_LEVEL_DEFAULT: the codec's */
    uint32_t block_size;
    uint64_t temp_limit; /* 0: none; BF_TEMP_LIMIT_AUTO: the library's default */
    uint32_t threads;    /* the space's worker threads (bf_space_set_workers); 0: none */
    char temp_dir[1024]; /* "": SQLite's order of directories */
} bfs_options;

/* The defaults: lz4 at its level, 4 KiB blocks, the library's temp limit (auto), no worker
   threads, SQLite's temp directory. */
void bfs_options_default(bfs_options *o);

/*
 * Apply "key=value,..." to *o. Returns SQLITE_OK, or SQLITE_ERROR with a
 * message in err (unknown key, malformed value); *o may then be partly
 * changed, so callers work on a copy.
 */
int bfs_options_parse(bfs_options *o, const char *text, char *err, size_t errlen);

/* Set one option (key, value) as bfs_options_parse would. */
int bfs_options_set(bfs_options *o, const char *key, const char *value, char *err, size_t errlen);

/* The value of one option as text, into buf ("" and SQLITE_ERROR for an unknown key). */
int bfs_options_get(const bfs_options *o, const char *key, char *buf, size_t len);

/* All options as "codec=...,level=...,..." into buf. */
void bfs_options_format(const bfs_options *o, char *buf, size_t len);

/* One row of buffile_stats: a registered buffile VFS. */
typedef struct bfs_row {
    char name[64];
    int is_default;
    bfs_options opt;
    bf_sqlite_stats st;
    uint64_t temp_limit; /* the limit in force (0: none), or opt's until a space exists */
    int limit_known;     /* temp_limit is the space's */
    uint32_t threads;    /* the workers in force: the space's, or opt's until a space exists */
    char last_error[512];
} bfs_row;

/*
 * Snapshot of the registered buffile VFSes, in registration order, into a
 * sqlite3_malloc'd array (*rows, freed by the caller with sqlite3_free).
 * Returns the number of rows, or -1 when out of memory.
 */
int bfs_snapshot(bfs_row **rows);

/* 1 if pVfs is a buffile VFS; its name then goes to buf. */
int bfs_vfs_name(sqlite3_vfs *pVfs, char *buf, size_t len);

/* The options of buffile VFS zVfs into *out; SQLITE_ERROR if there is none. */
int bfs_vfs_options(const char *zVfs, bfs_options *out);

/* bf_sqlite_configure for one key and value (a value may hold commas); message in err. */
int bfs_configure_one(const char *zVfs, const char *key, const char *value, char *err,
                      size_t len);

#endif /* BFSQLITE_INT_H */
