/* On-disk layout of a .bin table file, shared by writer and reader
 * (documented byte by byte in docs/tpchgen.md). Little-endian; the header is
 * followed by ncols column descriptors, then the arrays, each starting at a
 * multiple of 8 bytes. file_size lets a reader reject truncated files. */
#ifndef TPCH_GEN_BINFMT_H
#define TPCH_GEN_BINFMT_H

#include <stdint.h>

#define TPCH_BIN_MAGIC "TPCHBIN1" /* 8 bytes, no NUL stored */
#define TPCH_BIN_VERSION 1u
#define TPCH_BIN_NAMELEN 32
#define TPCH_BIN_MAXCOLS 64

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t ncols;
    uint64_t nrows;
    uint64_t file_size;
} tpch_bin_header;

typedef struct {
    char name[TPCH_BIN_NAMELEN]; /* NUL-padded */
    uint32_t type;               /* tpch_coltype */
    uint32_t reserved;           /* 0 */
    uint64_t array_off;          /* int64[nrows], int32[nrows] or uint64 offsets[nrows+1] */
    uint64_t data_off;           /* strings: byte array; otherwise 0 */
    uint64_t data_len;           /* strings: its length (= offsets[nrows]); otherwise 0 */
} tpch_bin_coldesc;

_Static_assert(sizeof(tpch_bin_header) == 32, "header is 32 bytes");
_Static_assert(sizeof(tpch_bin_coldesc) == 64, "column descriptor is 64 bytes");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .bin format is little-endian");

static inline uint64_t tpch_align8(uint64_t x)
{
    return (x + 7) & ~(uint64_t)7;
}

#endif
