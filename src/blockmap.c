/*
 * blockmap.c - the two-level block map: growth, lookup of used entries,
 * shrinking.
 *
 * Capacities are a function of n (round_cap), so nothing but n needs to be
 * stored: growth reallocates to the next step when n crosses one, steps
 * are an eighth of the current power of two (slack under 12.5%, amortised
 * O(1) appends), as the single array of the old map grew. Every growth allocates before it changes anything visible,
 * so a failed allocation leaves the map as it was (a larger array than n
 * needs is always valid).
 */
#include "blockmap.h"

#include <string.h>

#include "alloc.h"

#define LEAF_MASK (BF_MAP_LEAF - 1)

/* Entries (or directory slots) to allocate for k in use: k rounded up to an eighth step. */
static uint32_t round_cap(uint32_t k)
{
    if (k <= 16)
        return k == 0 ? 0 : 16;
    uint32_t q = 1u << (31 - __builtin_clz(k - 1) - 3);
    return (k + q - 1) / q * q;
}

static uint32_t leaf_cap(uint32_t k)
{
    uint32_t c = round_cap(k);
    return c < BF_MAP_LEAF ? c : BF_MAP_LEAF;
}

static uint32_t nleaves(uint32_t n)
{
    return n == 0 ? 0 : ((n - 1) >> BF_MAP_LEAF_SHIFT) + 1;
}

/* Entries of the last leaf that a map of n > 0 blocks uses. */
static uint32_t last_fill(uint32_t n)
{
    return ((n - 1) & LEAF_MASK) + 1;
}

/* `leaf` (NULL: a new one) reallocated to `cap` entries, with entries [from, to) zeroed. */
static bf_map_entry *leaf_resize(const bf_allocator *a, bf_map_entry *leaf, uint32_t cap,
                                 uint32_t from, uint32_t to)
{
    if (leaf == NULL)
        from = 0;
    bf_map_entry *l = bf_realloc(a, leaf, (size_t)cap * sizeof(*l));
    if (l != NULL && to > from)
        memset(l + from, 0, (size_t)(to - from) * sizeof(*l));
    return l;
}

/* Grow the single leaf to cover n <= BF_MAP_LEAF blocks. */
static bf_map_entry *grow_single(bf_blockmap *m, const bf_allocator *a, uint32_t n)
{
    bf_map_entry *leaf = m->p;
    uint32_t have = leaf != NULL ? leaf_cap(m->n) : 0;
    if (leaf_cap(n) > have) {
        leaf = leaf_resize(a, leaf, leaf_cap(n), m->n, n);
        if (leaf == NULL)
            return NULL;
    } else {
        memset(leaf + m->n, 0, (size_t)(n - m->n) * sizeof(*leaf));
    }
    m->p = leaf;
    m->n = n;
    return leaf;
}

/* Grow to n > BF_MAP_LEAF blocks: the directory, the old last leaf, the new last leaf. */
static bf_map_entry *grow_dir(bf_blockmap *m, const bf_allocator *a, uint32_t n)
{
    uint32_t L = nleaves(n), L0, old_fill;
    int converting = m->n <= BF_MAP_LEAF;
    bf_map_entry **dir;
    if (converting) {
        dir = bf_malloc(a, (size_t)round_cap(L) * sizeof(*dir));
        if (dir == NULL)
            return NULL;
        dir[0] = m->p;
        L0 = 1;
        old_fill = m->n;
    } else {
        dir = m->p;
        L0 = nleaves(m->n);
        old_fill = last_fill(m->n);
        if (round_cap(L) > round_cap(L0)) {
            dir = bf_realloc(a, dir, (size_t)round_cap(L) * sizeof(*dir));
            if (dir == NULL)
                return NULL;
            m->p = dir;
        }
    }
    memset(dir + L0, 0, (size_t)(L - L0) * sizeof(*dir));
    bf_map_entry *last = dir[L0 - 1], *l;
    uint32_t fill = last_fill(n);
    if (L - 1 > L0 - 1) {
        /* The old last leaf becomes an inner one: inner leaves are full-sized. */
        if (last != NULL) {
            l = leaf_resize(a, last, BF_MAP_LEAF, old_fill, BF_MAP_LEAF);
            if (l == NULL)
                goto fail;
            dir[L0 - 1] = l;
        }
        l = leaf_resize(a, NULL, leaf_cap(fill), 0, fill);
    } else if (last == NULL || leaf_cap(fill) > leaf_cap(old_fill)) {
        l = leaf_resize(a, last, leaf_cap(fill), old_fill, fill);
    } else {
        l = last;
        memset(l + old_fill, 0, (size_t)(fill - old_fill) * sizeof(*l));
    }
    if (l == NULL)
        goto fail;
    dir[L - 1] = l;
    m->p = dir;
    m->n = n;
    return l;
fail:
    if (converting) {
        m->p = dir[0]; /* perhaps grown to a full leaf: still valid */
        bf_free(a, dir);
    }
    return NULL;
}

bf_map_entry *bf_map_slot(bf_blockmap *m, const bf_allocator *a, uint32_t blkno)
{
    if (blkno < m->n) {
        bf_map_entry *e = bf_map_get(m, blkno);
        if (e != NULL)
            return e;
        /* A leaf of holes gets its storage now. */
        if (m->n <= BF_MAP_LEAF) {
            bf_map_entry *leaf = leaf_resize(a, NULL, leaf_cap(m->n), 0, m->n);
            if (leaf == NULL)
                return NULL;
            m->p = leaf;
            return leaf + blkno;
        }
        uint32_t li = blkno >> BF_MAP_LEAF_SHIFT;
        uint32_t fill = li == nleaves(m->n) - 1 ? last_fill(m->n) : BF_MAP_LEAF;
        bf_map_entry *leaf = leaf_resize(a, NULL, leaf_cap(fill), 0, fill);
        if (leaf == NULL)
            return NULL;
        ((bf_map_entry **)m->p)[li] = leaf;
        return leaf + (blkno & LEAF_MASK);
    }
    uint32_t n = blkno + 1;
    bf_map_entry *leaf = n <= BF_MAP_LEAF ? grow_single(m, a, n) : grow_dir(m, a, n);
    return leaf != NULL ? leaf + (blkno & LEAF_MASK) : NULL;
}

bf_map_entry *bf_map_next(const bf_blockmap *m, uint64_t *blkno)
{
    uint64_t b = *blkno;
    while (b < m->n && m->p != NULL) {
        uint64_t end = m->n;
        bf_map_entry *leaf = m->p;
        if (m->n > BF_MAP_LEAF) {
            leaf = ((bf_map_entry **)m->p)[b >> BF_MAP_LEAF_SHIFT];
            uint64_t leaf_end = ((b >> BF_MAP_LEAF_SHIFT) + 1) << BF_MAP_LEAF_SHIFT;
            end = leaf_end < end ? leaf_end : end;
        }
        for (; leaf != NULL && b < end; b++) {
            if (leaf[b & LEAF_MASK].cap != 0) {
                *blkno = b;
                return &leaf[b & LEAF_MASK];
            }
        }
        b = end;
    }
    return NULL;
}

void bf_map_shrink(bf_blockmap *m, const bf_allocator *a, uint32_t nblocks)
{
    if (nblocks >= m->n)
        return;
    uint32_t L = nleaves(nblocks);
    if (m->n > BF_MAP_LEAF) {
        bf_map_entry **dir = m->p;
        for (uint32_t i = L; i < nleaves(m->n); i++) {
            bf_free(a, dir[i]);
            dir[i] = NULL;
        }
        if (nblocks > BF_MAP_LEAF) {
            /* Failures to give memory back are harmless: larger arrays stay valid. */
            bf_map_entry **d = bf_realloc(a, dir, (size_t)round_cap(L) * sizeof(*dir));
            m->p = d != NULL ? d : dir;
            dir = m->p;
            if (dir[L - 1] != NULL) {
                bf_map_entry *l =
                    bf_realloc(a, dir[L - 1], (size_t)leaf_cap(last_fill(nblocks)) * sizeof(*l));
                dir[L - 1] = l != NULL ? l : dir[L - 1];
            }
            m->n = nblocks;
            return;
        }
        /* Back to a single leaf. */
        m->p = L > 0 ? dir[0] : NULL;
        bf_free(a, dir);
        m->n = BF_MAP_LEAF;
    }
    if (nblocks == 0) {
        bf_free(a, m->p);
        m->p = NULL;
    } else if (m->p != NULL && leaf_cap(nblocks) < leaf_cap(m->n)) {
        bf_map_entry *l = bf_realloc(a, m->p, (size_t)leaf_cap(nblocks) * sizeof(*l));
        m->p = l != NULL ? l : m->p;
    }
    m->n = nblocks;
}

uint64_t bf_map_memory(const bf_blockmap *m)
{
    if (m->n <= BF_MAP_LEAF)
        return m->p != NULL ? (uint64_t)leaf_cap(m->n) * sizeof(bf_map_entry) : 0;
    uint32_t L = nleaves(m->n);
    bf_map_entry **dir = m->p;
    uint64_t bytes = (uint64_t)round_cap(L) * sizeof(*dir);
    for (uint32_t i = 0; i < L; i++)
        if (dir[i] != NULL)
            bytes += (uint64_t)(i + 1 < L ? BF_MAP_LEAF : leaf_cap(last_fill(m->n))) *
                     sizeof(bf_map_entry);
    return bytes;
}

void bf_map_free(bf_blockmap *m, const bf_allocator *a)
{
    bf_map_shrink(m, a, 0);
    memset(m, 0, sizeof(*m));
}
