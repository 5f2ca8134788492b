/* Reader of the generator's binary table format (outdir/<name>.bin): one
 * columnar, little-endian, mmap-able file per table, every array 8-byte
 * aligned. The layout is documented byte by byte in docs/tpchgen.md.
 * Decimals are int64 hundredths, dates int32 days since 1970-01-01, strings
 * an offsets[nrows+1] array into a byte array (no NULs). Pointers returned
 * stay valid until tpch_bin_close. */
#ifndef TPCH_BIN_H
#define TPCH_BIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TPCH_I64 = 1, TPCH_DATE = 2, TPCH_STR = 3 } tpch_coltype;
typedef struct tpch_bin tpch_bin;

/* 0, or -1 with a one-line message; validates header and array bounds. */
int tpch_bin_open(const char *path, tpch_bin **out, char *err, size_t errlen);
void tpch_bin_close(tpch_bin *t);
uint64_t tpch_bin_rows(const tpch_bin *t);
int tpch_bin_ncols(const tpch_bin *t);
const char *tpch_bin_col_name(const tpch_bin *t, int col);
tpch_coltype tpch_bin_col_type(const tpch_bin *t, int col);
int tpch_bin_col_index(const tpch_bin *t, const char *name);   /* -1 if absent */
const int64_t *tpch_bin_i64(const tpch_bin *t, int col);        /* NULL if wrong type */
const int32_t *tpch_bin_date(const tpch_bin *t, int col);
const uint64_t *tpch_bin_str_offsets(const tpch_bin *t, int col);
const char *tpch_bin_str_data(const tpch_bin *t, int col);

#ifdef __cplusplus
}
#endif

#endif
