/*
 * db.h - the generated TPC-H tables a query reads: a data directory of
 * binary tables (tpch/gen format), opened once and shared by every query
 * run of the process (the tables are mmap'ed and read-only).
 */
#ifndef TPCH_DB_H
#define TPCH_DB_H

#include <stddef.h>

#include "tpch_bin.h"
#include "tpch_gen.h"

struct tpch_db {
    tpch_bin *t[TPCH_NTABLES];
    double sf;
};

typedef void (*db_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* What dir/meta.txt says: 0 with the scale factor in *sf and the tables'
 * format in `format` ("bin", "tbl", or "" when meta.txt does not say), or -1
 * when there is no meta.txt or it names no scale factor. */
int db_meta(const char *dir, double *sf, char *format, size_t n);
/* Generate the binary tables at scale sf into dir unless dir/meta.txt says
 * they are there already (and for that sf). 0, or -1 with a message. */
int db_ensure(const char *dir, double sf, db_progress_fn progress, void *ctx, char *err,
              size_t errlen);
/* Open all tables of dir. 0, or -1 with a message. */
int db_open(const char *dir, struct tpch_db **out, char *err, size_t errlen);
void db_close(struct tpch_db *db);

#endif
