/*
 * blockmap.h - logical block number -> physical extent.
 *
 * One 16-byte entry per logical block holding data: part and physical
 * offset, extent length (raw, bare and kept flags in its top bits) and
 * capacity (bytes reserved at that offset, >= length), or for a bare block
 * (stored raw without a header) its CRC-32C. cap == 0 without the bare
 * flag means a hole: no extent, reads as zeros. Blocks at or beyond n are
 * holes too.
 *
 * Two levels: entries live in leaves of up to BF_MAP_LEAF blocks. While the
 * map covers at most one leaf (files up to 32 MiB at 8 KiB blocks: nearly
 * every spill file) `p` is that leaf itself and `one` its counts; beyond,
 * `p` is a directory: a leaf pointer for each BF_MAP_LEAF blocks covered
 * (NULL for a leaf of holes), then the leaves' counts, then a bit for each
 * that says it holds a leaf: 12 bytes and a bit a leaf. A
 * leaf is an array, of one of three kinds, whichever costs less for what it
 * holds:
 *  - dense: entries indexed by block, as many as its capacity (blocks at or
 *    past it are holes), grown in eighth steps; O(1) lookup; a full one is
 *    exactly 64 KiB, which allocators serve without rounding;
 *  - compact: only the entries of its blocks holding data, sorted, then
 *    each one's 2-byte block index; lookup by binary search;
 *  - run: consecutive bare blocks of one length, each at the offset after
 *    the last's (stock's layout: what `none`, and `auto` where I/O is cheap,
 *    write): the first one's offset and length word once, then each block's
 *    check, 4 bytes a block; O(1) lookup. Beside the run it holds one entry
 *    of its own, the block bf_map_slot made room for last (reserved, or
 *    what bf_map_put stored there): the next change to the leaf adds it to
 *    the run when it is the run's next block (or a block of the run written
 *    in place), else makes the leaf dense or compact first.
 * A leaf turns compact -> dense once dense costs no more, dense -> compact
 * once it costs more than 1.5 times compact (checked whenever its count or
 * capacity changes), dense or compact -> run when it must grow and all it
 * holds is a run of 16 blocks or more, run -> dense or compact when a
 * change does not fit a run (checked by the changes themselves), so no
 * leaf holds more than 31 bytes per block holding data, the bound
 * buffile.h states (tests count the allocator hooks against it). Only a
 * failed allocation (a conversion that could not be made, a shrink that
 * could not give back) leaves more.
 *
 * Callers read entries through the pointers bf_map_get and bf_map_next
 * return, and change them only through the map: bf_map_slot makes room for
 * a block (a reserved hole, which changes of kind keep), bf_map_put stores
 * its entry (always right after bf_map_slot for that block: a run leaf
 * takes a store only in the entry bf_map_slot gave), bf_map_clear makes it
 * a hole again; they keep the counts the choice of kind rests on. A pointer
 * is valid until the next call that changes the map, and one into a run
 * (a copy the leaf keeps) until the next bf_map_get or bf_map_next in the
 * same leaf too: read what you need from it before looking up another
 * block, or copy it; code that scans ahead of a block whose entry a caller
 * may hold reads entries by value (bf_map_read).
 */
#ifndef BF_BLOCKMAP_H
#define BF_BLOCKMAP_H

#include <stdint.h>

#include "buffile.h"

#define BF_MAP_RAW 0x80000000u
/* The extent is referenced by the file's last persisted index (see fileset.c: shadow paging). */
#define BF_MAP_KEPT 0x40000000u
#define BF_MAP_FLAGS (BF_MAP_RAW | BF_MAP_KEPT | BF_MAP_BARE)
/* A hole bf_map_slot made room for (cap 0): it stays until bf_map_put or bf_map_clear. */
#define BF_MAP_RESERVED 0x20000000u
/*
 * A bare block (format 4): stored raw with no header, its length bytes at a
 * 4096-aligned offset (when it is 4096 bytes or more); the entry's `cap` word holds the CRC-32C of those
 * bytes (extent.h: bf_extent_bare_crc) instead of a capacity, which is the
 * length (bf_map_room). Always with BF_MAP_RAW.
 */
#define BF_MAP_BARE 0x10000000u
/* The top 16 bits of `off` name the part (0: the file's own segments; see fileset.c). */
#define BF_MAP_PART_SHIFT 48
#define BF_MAP_OFF_MASK ((UINT64_C(1) << BF_MAP_PART_SHIFT) - 1)
#define BF_MAP_MAX_PARTS 0xffffu

#define BF_MAP_LEAF_SHIFT 12
#define BF_MAP_LEAF (1u << BF_MAP_LEAF_SHIFT)

typedef struct bf_map_entry {
    uint64_t off;
    uint32_t len; /* extent bytes | BF_MAP_RAW when stored raw | BF_MAP_BARE | BF_MAP_KEPT */
    uint32_t cap; /* bytes reserved at off (>= the extent's); a bare block's CRC-32C */
} bf_map_entry;

/* What a leaf holds: entries with data or reserved (compact: all it stores), and its room. */
typedef struct bf_map_meta {
    uint16_t used;
    uint16_t cap;
} bf_map_meta;

typedef struct bf_blockmap {
    void *p;         /* n <= BF_MAP_LEAF: the leaf (bit 0 set: compact); else the directory */
    uint32_t n;      /* blocks 0..n-1 are covered */
    bf_map_meta one; /* the leaf's counts while there is one leaf */
} bf_blockmap;

/* k rounded up to a step of an eighth of its power of two (at least 16): capacities. */
static inline uint32_t bf_map_round_cap(uint32_t k)
{
    if (k <= 16)
        return k == 0 ? 0 : 16;
    uint32_t q = 1u << (31 - __builtin_clz(k - 1) - 3);
    return (k + q - 1) / q * q;
}

/* Slots of the directory of a map of n > BF_MAP_LEAF blocks: its leaves' counts follow them. */
static inline uint32_t bf_map_dir_cap(uint32_t n)
{
    return bf_map_round_cap(((n - 1) >> BF_MAP_LEAF_SHIFT) + 1);
}

/* The entry of block `i` of compact leaf `e`, or NULL. */
bf_map_entry *bf_map_find(const bf_map_entry *e, bf_map_meta meta, uint32_t i);

/* The entry of index `i` of run leaf `t` (its tag cleared), or NULL. */
bf_map_entry *bf_map_run_get(const void *t, bf_map_meta meta, uint32_t i);

/* The leaf of `blkno` (its pointer with the kind's tag) and its counts, or 0 (no leaf). */
static inline uintptr_t bf_map_leaf(const bf_blockmap *m, uint64_t blkno, bf_map_meta *meta)
{
    if (blkno >= m->n || m->p == NULL)
        return 0;
    *meta = m->one;
    if (m->n <= BF_MAP_LEAF)
        return (uintptr_t)m->p;
    /* A slot is read only once its bit says it holds a leaf (see blockmap.c). */
    void *const *dir = m->p;
    uint32_t li = (uint32_t)(blkno >> BF_MAP_LEAF_SHIFT), dcap = bf_map_dir_cap(m->n);
    const bf_map_meta *counts = (const bf_map_meta *)(dir + dcap);
    const uint64_t *present = (const uint64_t *)(counts + dcap);
    if (!((present[li / 64] >> (li % 64)) & 1))
        return 0;
    *meta = counts[li];
    return (uintptr_t)dir[li];
}

/* The entry of index `i` in leaf `t` (bf_map_leaf's, not 0) of counts `meta`, or NULL. */
static inline bf_map_entry *bf_map_in_leaf(uintptr_t t, bf_map_meta meta, uint32_t i)
{
    if (t & 3) /* bit 0: compact, bit 1: run */
        return (t & 1) ? bf_map_find((const bf_map_entry *)(t - 1), meta, i)
                       : bf_map_run_get((const void *)(t - 2), meta, i);
    return i < meta.cap ? (bf_map_entry *)t + i : NULL;
}

/* The entry of `blkno`, or NULL when it is a hole the map holds no entry for. */
static inline bf_map_entry *bf_map_get(const bf_blockmap *m, uint64_t blkno)
{
    bf_map_meta meta;
    uintptr_t t = bf_map_leaf(m, blkno, &meta);
    return t != 0 ? bf_map_in_leaf(t, meta, (uint32_t)(blkno & (BF_MAP_LEAF - 1))) : NULL;
}

/*
 * The entry of `blkno` copied into *out (zeros for a hole); 1 when it holds
 * data. Unlike bf_map_get it leaves a run leaf's shared copy alone: for
 * scans ahead of a block whose entry a caller holds (the read-ahead).
 */
int bf_map_read(const bf_blockmap *m, uint64_t blkno, bf_map_entry *out);

/* An entry that holds an extent (not a hole). */
static inline int bf_map_used(const bf_map_entry *e)
{
    return e != NULL && (e->cap != 0 || (e->len & BF_MAP_BARE) != 0);
}

static inline uint32_t bf_map_len(const bf_map_entry *e)
{
    return e->len & ~BF_MAP_FLAGS;
}

/* Bytes the extent holds at its offset: its capacity; a bare block's length. */
static inline uint32_t bf_map_room(const bf_map_entry *e)
{
    return (e->len & BF_MAP_BARE) != 0 ? bf_map_len(e) : e->cap;
}

/* An entry that holds a bare block (NULL, a hole, holds none). */
static inline int bf_map_bare(const bf_map_entry *e)
{
    return e != NULL && (e->len & BF_MAP_BARE) != 0;
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

/*
 * Store `v` (cap != 0) as the entry of `blkno`, whose room bf_map_slot made
 * (the map unchanged since). Cannot fail.
 */
void bf_map_put(bf_blockmap *m, uint32_t blkno, const bf_map_entry *v);

/*
 * bf_map_put through the entry itself: `slot` is what bf_map_slot returned
 * for the block (or bf_map_get of that block after it), the map unchanged
 * since. For the store path, which holds the entry from making room to
 * committing.
 */
static inline void bf_map_put_slot(bf_map_entry *slot, const bf_map_entry *v)
{
    *slot = *v; /* occupied already (reserved or data): no count changes */
}

/*
 * Make `blkno` a hole and give back what its entry held (room reserved and
 * not filled goes too); a leaf may turn compact, or go. Returns 1; 0 only
 * when `blkno` holds data inside a run and the leaf could not be made
 * dense or compact to hold the hole (allocation failed): the map is then
 * as it was. A reserved block, a run's last block and any block of a
 * dense or compact leaf always clear (an allocation that fails there only
 * leaves more memory held). The caller releases the extent once it did.
 */
int bf_map_clear(bf_blockmap *m, const bf_allocator *a, uint64_t blkno);

/*
 * Make sure a bf_map_clear of `blkno` cannot fail (a block inside a run:
 * its leaf made dense or compact now). 0 when that allocation failed (the
 * map as it was), else 1. For a caller that must clear after changes of
 * its own that it cannot undo.
 */
int bf_map_clearable(bf_blockmap *m, const bf_allocator *a, uint64_t blkno);

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
