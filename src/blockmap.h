/*
 * blockmap.h - logical block number -> physical extent.
 *
 * One 16-byte entry per logical block: part and physical offset, extent
 * length (raw and kept flags in its top bits) and capacity (bytes reserved
 * at that offset, >= length). cap == 0 means a hole: no extent, reads as
 * zeros. Blocks at or beyond n are holes too.
 *
 * Two levels, so that a hole costs (almost) nothing: entries live in leaves
 * of BF_MAP_LEAF blocks. While the map covers at most one leaf (files up to
 * 32 MiB at 8 KiB blocks: nearly every spill file) `p` is that leaf itself,
 * grown in steps of at most an eighth of its size, so a small file pays one
 * allocation and ~16-18 bytes per block. Beyond one leaf `p` is a directory
 * of leaf pointers, NULL for a leaf of holes; every leaf but the last is
 * full-sized, the last grows like the single leaf. One byte written at the
 * largest offset costs the directory (8 bytes per leaf) and one leaf, not
 * 16 bytes per block of the hole.
 *
 * Invariant: the capacity of the single leaf, of the directory and of the
 * last leaf is at least what the *_cap functions of blockmap.c give for n
 * (growth reallocates to exactly that; a failed shrink leaves more).
 */
#ifndef BF_BLOCKMAP_H
#define BF_BLOCKMAP_H

#include <stdint.h>

#include "buffile.h"

#define BF_MAP_RAW 0x80000000u
/* The extent is referenced by the file's last persisted index (see fileset.c: shadow paging). */
#define BF_MAP_KEPT 0x40000000u
#define BF_MAP_FLAGS (BF_MAP_RAW | BF_MAP_KEPT)
/* The top 16 bits of `off` name the part (0: the file's own segments; see fileset.c). */
#define BF_MAP_PART_SHIFT 48
#define BF_MAP_OFF_MASK ((UINT64_C(1) << BF_MAP_PART_SHIFT) - 1)
#define BF_MAP_MAX_PARTS 0xffffu

#define BF_MAP_LEAF_SHIFT 12
#define BF_MAP_LEAF (1u << BF_MAP_LEAF_SHIFT)

typedef struct bf_map_entry {
    uint64_t off;
    uint32_t len; /* extent bytes | BF_MAP_RAW when stored raw | BF_MAP_KEPT */
    uint32_t cap;
} bf_map_entry;

typedef struct bf_blockmap {
    void *p;    /* n <= BF_MAP_LEAF: the leaf; else the directory of leaves */
    uint32_t n; /* blocks 0..n-1 are covered */
} bf_blockmap;

/* The entry of `blkno`, or NULL when it is a hole the map holds no entry for. */
static inline bf_map_entry *bf_map_get(const bf_blockmap *m, uint64_t blkno)
{
    if (blkno >= m->n || m->p == NULL)
        return NULL;
    if (m->n <= BF_MAP_LEAF)
        return (bf_map_entry *)m->p + blkno;
    bf_map_entry *leaf = ((bf_map_entry **)m->p)[blkno >> BF_MAP_LEAF_SHIFT];
    return leaf != NULL ? leaf + (blkno & (BF_MAP_LEAF - 1)) : NULL;
}

/* An entry that holds an extent (not a hole). */
static inline int bf_map_used(const bf_map_entry *e)
{
    return e != NULL && e->cap != 0;
}

static inline uint32_t bf_map_len(const bf_map_entry *e)
{
    return e->len & ~BF_MAP_FLAGS;
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

/*
 * Make block `blkno` (<= BF_MAP_MAX_BLOCK) addressable and return its
 * entry (a hole when new), or NULL when an allocation failed; the map is
 * then as it was.
 */
bf_map_entry *bf_map_slot(bf_blockmap *m, const bf_allocator *a, uint32_t blkno);

/*
 * The first block at or after *blkno whose entry holds an extent: its
 * entry, with *blkno set to it; NULL when there is none. Leaves of holes
 * are skipped whole.
 */
bf_map_entry *bf_map_next(const bf_blockmap *m, uint64_t *blkno);

/* Forget blocks >= nblocks (the caller has freed their extents); gives memory back. */
void bf_map_shrink(bf_blockmap *m, const bf_allocator *a, uint32_t nblocks);

/* Heap bytes the map holds. */
uint64_t bf_map_memory(const bf_blockmap *m);

void bf_map_free(bf_blockmap *m, const bf_allocator *a);

#endif
