/*
 * bench_rows.h - lineitem rows as .tbl text for the benchmarks that compress
 * realistic spill data: generated once by our own generator into a folder
 * of the temp dir, then read from there on every later run.
 */
#ifndef BF_BENCH_ROWS_H
#define BF_BENCH_ROWS_H

#include <stddef.h>

/* The first `len` bytes of lineitem.tbl in `<temp_dir>/<subdir>` (generated
 * at a scale factor large enough if the file is missing or shorter), in a
 * malloc'd buffer the caller frees. Any failure ends the process through
 * bench_die(prog, ...). */
unsigned char *bench_lineitem_rows(const char *temp_dir, const char *subdir, const char *prog,
                                   size_t len);

#endif
