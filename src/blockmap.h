/*
 * blockmap.h - logical block number -> physical extent.
 *
 * One 16-byte entry per logical block holding data: part and physical
 * offset, extent length (raw and kept flags in its top bits) and capacity
 * (bytes reserved at that offset, >= length). cap == 0 means a hole: no
 * extent, reads as zeros. Blocks at or beyond n are holes too.
 *
 * Two levels: entries live in leaves of up to BF_MAP_LEAF blocks. While the
 * map covers at most one leaf (files up to 32 MiB at 8 KiB blocks: nearly
 * every spill file) `p` is that leaf itself; beyond, `p` is a directory of
 * leaf pointers (8 bytes per BF_MAP_LEAF blocks covered), NULL for a leaf of
 * holes. A leaf is one of two kinds, whichever costs less for what it holds:
 *  - dense: entries indexed by block, as many as its capacity (blocks at or
 *    past it are holes), grown in eighth steps; O(1) lookup;
 *  - compact: only the entries of its blocks holding data, sorted, each
 *    with its 2-byte block index; lookup by binary search.
 * A leaf turns compact -> dense once dense costs no more, dense -> compact
 * once it costs more than 1.5 times compact (checked whenever its count or
 * capacity changes), so no leaf holds more than 12 bytes + 31 per block
 * holding data, the bound buffile.h states (tests count the allocator hooks
 * against it). Only a failed allocation (a conversion that could not be
 * made, a shrink that could not give back) leaves more.
 *
 * Callers read entries through the pointers bf_map_get and bf_map_next
 * return, and change them only through the map: bf_map_slot makes room for
 * a block (a reserved hole, which changes of kind keep), bf_map_put stores
 * its entry, bf_map_clear makes it a hole again; they keep the counts the
 * choice of kind rests on. A pointer is valid until the next call that
 * changes the map.
 */
#ifndef BF_BLOCKMAP_H
#define BF_BLOCKMAP_H

#include <stdint.h>

#include "buffile.h"

#define BF_MAP_RAW 0x80000000u
/* The extent is referenced by the file's last persisted index (see fileset.c: shadow paging). */
#define BF_MAP_KEPT 0x40000000u
#define BF_MAP_FLAGS (BF_MAP_RAW | BF_MAP_KEPT)
/* A hole bf_map_slot made room for (cap 0): it stays until bf_map_put or bf_map_clear. */
#define BF_MAP_RESERVED 0x20000000u
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

/*
 * A leaf (its pointer tagged with bit 0 when compact). Dense: e[i] is block
 * i of the leaf's range, for i < cap. Compact: e[0..used) are the entries
 * of the blocks keys[0..used) (ascending), the keys stored after e[cap].
 */
typedef struct bf_map_leaf {
    uint32_t used; /* entries holding data or reserved (compact: all it stores) */
    uint32_t cap;  /* entries allocated */
    bf_map_entry e[];
} bf_map_leaf;

typedef struct bf_blockmap {
    void *p;    /* n <= BF_MAP_LEAF: the leaf; else the directory of leaves */
    uint32_t n; /* blocks 0..n-1 are covered */
} bf_blockmap;

/* The entry of block `i` of a compact leaf, or NULL. */
bf_map_entry *bf_map_find(const bf_map_leaf *leaf, uint32_t i);

/* The entry of `blkno`, or NULL when it is a hole the map holds no entry for. */
static inline bf_map_entry *bf_map_get(const bf_blockmap *m, uint64_t blkno)
{
    if (blkno >= m->n || m->p == NULL)
        return NULL;
    uintptr_t l = m->n <= BF_MAP_LEAF ? (uintptr_t)m->p
                                      : (uintptr_t)((void **)m->p)[blkno >> BF_MAP_LEAF_SHIFT];
    uint32_t i = (uint32_t)(blkno & (BF_MAP_LEAF - 1));
    if (l & 1)
        return bf_map_find((const bf_map_leaf *)(l - 1), i);
    bf_map_leaf *leaf = (bf_map_leaf *)l;
    return leaf != NULL && i < leaf->cap ? &leaf->e[i] : NULL;
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
 * Make room for block `blkno` (<= BF_MAP_MAX_BLOCK) and return its entry
 * (reserved when it was a hole), or NULL when an allocation failed; the
 * map is then as it was. Room never filled costs until bf_map_clear.
 */
bf_map_entry *bf_map_slot(bf_blockmap *m, const bf_allocator *a, uint32_t blkno);

/* Store `v` (cap != 0) as the entry of `blkno`, whose room bf_map_slot made. Cannot fail. */
void bf_map_put(bf_blockmap *m, uint32_t blkno, const bf_map_entry *v);

/*
 * Make `blkno` a hole and give back what its entry held (the caller has
 * released its extent; room reserved and not filled goes too); a leaf may
 * turn compact, or go. Never fails: an allocation that fails only leaves
 * more memory held.
 */
void bf_map_clear(bf_blockmap *m, const bf_allocator *a, uint64_t blkno);

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
