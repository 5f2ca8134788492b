/*
 * blockmap.h - logical block number -> physical extent.
 *
 * One 16-byte entry per logical block up to the highest block ever
 * written: part and physical offset, extent length (with the raw flag in
 * the top bit) and capacity (bytes reserved at that offset, >= length). cap == 0
 * means a hole: no extent, reads as zeros. The array grows by 1/8 of its
 * size at a time, so it never holds more than ~18 bytes per block.
 */
#ifndef BF_BLOCKMAP_H
#define BF_BLOCKMAP_H

#include <stdint.h>

#include "buffile.h"

#define BF_MAP_RAW 0x80000000u
/* The top 16 bits of `off` name the part (0: the file's own segments; see fileset.c). */
#define BF_MAP_PART_SHIFT 48
#define BF_MAP_OFF_MASK ((UINT64_C(1) << BF_MAP_PART_SHIFT) - 1)
#define BF_MAP_MAX_PARTS 0xffffu

typedef struct bf_map_entry {
    uint64_t off;
    uint32_t len; /* extent bytes | BF_MAP_RAW when the payload is stored raw */
    uint32_t cap;
} bf_map_entry;

typedef struct bf_blockmap {
    bf_map_entry *e;
    uint32_t n;   /* entries in use: blocks 0..n-1 */
    uint32_t cap; /* entries allocated */
} bf_blockmap;

/* The entry of `blkno`, or NULL when it is beyond the map (a hole). */
static inline const bf_map_entry *bf_map_get(const bf_blockmap *m, uint64_t blkno)
{
    return blkno < m->n ? &m->e[blkno] : NULL;
}

static inline uint32_t bf_map_len(const bf_map_entry *e)
{
    return e->len & ~BF_MAP_RAW;
}

static inline uint32_t bf_map_part(const bf_map_entry *e)
{
    return (uint32_t)(e->off >> BF_MAP_PART_SHIFT);
}

static inline uint64_t bf_map_off(const bf_map_entry *e)
{
    return e->off & BF_MAP_OFF_MASK;
}

/* Largest block number a map can hold (32-bit counts keep the file struct small). */
#define BF_MAP_MAX_BLOCK (UINT32_MAX - 1u)

/* Make blocks 0..blkno (<= BF_MAP_MAX_BLOCK) addressable; new entries are holes. BF_OK or
 * BF_ENOMEM. */
int bf_map_ensure(bf_blockmap *m, const bf_allocator *a, uint32_t blkno);

/* Forget blocks >= nblocks (the caller has freed their extents); shrinks the array. */
void bf_map_shrink(bf_blockmap *m, const bf_allocator *a, uint32_t nblocks);

void bf_map_free(bf_blockmap *m, const bf_allocator *a);

#endif
