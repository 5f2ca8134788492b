/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of every extent.
 *
 * Folds with VPCLMULQDQ (AVX-512) or PCLMULQDQ when the CPU has them, else
 * uses the SSE4.2 crc32 instruction, else a slicing-by-8 table; all give
 * identical results (tested).
 */
#ifndef BF_CRC32C_H
#define BF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over `len` bytes of `data`. */
uint32_t bf_crc32c(uint32_t crc, const void *data, size_t len);

/* CRC-32C (from 0) of `v` as 8 little-endian bytes followed by `len` bytes of `data`: the
   check of a bare block (extent.h), in one call. */
uint32_t bf_crc32c_le64(uint64_t v, const void *data, size_t len);

/* bf_crc32c_le64 of `src` that also copies its `len` bytes to `dst` (not overlapping it), in
   the same pass where the implementation can: a block checked as it is copied out of a read
   buffer reads its bytes once. */
uint32_t bf_crc32c_le64_copy(uint64_t v, void *dst, const void *src, size_t len);

/* The portable implementation, exposed so tests can compare it with the fast one. */
uint32_t bf_crc32c_sw(uint32_t crc, const void *data, size_t len);

/*
 * For tests and benchmarks only (the library calls bf_crc32c): each implementation
 * bf_crc32c may choose, numbered slowest first. bf_crc32c_impl returns the one named if
 * this CPU (and build) runs it, else NULL; the function it returns takes any input (the
 * folding ones pass short inputs to the crc32 instruction's path, as bf_crc32c does).
 * bf_crc32c_selected is the one bf_crc32c uses, bf_crc32c_impl_name a short name.
 */
enum {
    BF_CRC32C_TABLE,   /* slicing-by-8, every platform */
    BF_CRC32C_SSE42,   /* three chains of the crc32 instruction (x86-64 SSE4.2) */
    BF_CRC32C_PCLMUL,  /* 4 x 128-bit PCLMULQDQ folding (and SSE4.2) */
    BF_CRC32C_VPCLMUL, /* 4 x 512-bit VPCLMULQDQ folding (AVX-512F, AVX-512VL) */
    BF_CRC32C_KINDS
};
typedef uint32_t (*bf_crc32c_fn)(uint32_t crc, const void *data, size_t len);
typedef uint32_t (*bf_crc32c_copy_fn)(uint32_t crc, void *dst, const void *src, size_t len);
bf_crc32c_fn bf_crc32c_impl(int which);
bf_crc32c_copy_fn bf_crc32c_copy_impl(int which); /* each one's copying form (tests) */
const char *bf_crc32c_impl_name(int which);
int bf_crc32c_selected(void);

#endif
