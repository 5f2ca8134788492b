/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of every extent.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it, else a
 * slicing-by-8 table; both give identical results (tested).
 */
#ifndef BF_CRC32C_H
#define BF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over `len` bytes of `data`. */
uint32_t bf_crc32c(uint32_t crc, const void *data, size_t len);

/* The portable implementation, exposed so tests can compare it with the fast one. */
uint32_t bf_crc32c_sw(uint32_t crc, const void *data, size_t len);

#endif
