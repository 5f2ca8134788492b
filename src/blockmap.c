/*
 * blockmap.c - growth and shrinking of the block map array.
 *
 * Growth by 1/8 (at least 16 entries) keeps appends amortised O(1) while
 * bounding the slack; a failed growth leaves the map as it was.
 */
#include "blockmap.h"

#include <string.h>

#include "alloc.h"

static int map_resize(bf_blockmap *m, const bf_allocator *a, uint32_t cap)
{
    bf_map_entry *e = bf_realloc(a, m->e, (size_t)cap * sizeof(*e));
    if (e == NULL)
        return BF_ENOMEM;
    m->e = e;
    m->cap = cap;
    return BF_OK;
}

int bf_map_ensure(bf_blockmap *m, const bf_allocator *a, uint32_t blkno)
{
    if (blkno < m->n)
        return BF_OK;
    if (blkno >= m->cap) {
        uint64_t want = (uint64_t)blkno + 1;
        uint64_t grown = (uint64_t)m->cap + m->cap / 8 + 16;
        uint64_t cap = want > grown ? want : grown;
        int rc = map_resize(m, a, cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap);
        if (rc != BF_OK)
            return rc;
    }
    memset(&m->e[m->n], 0, (size_t)(blkno + 1 - m->n) * sizeof(bf_map_entry));
    m->n = blkno + 1;
    return BF_OK;
}

void bf_map_shrink(bf_blockmap *m, const bf_allocator *a, uint32_t nblocks)
{
    if (nblocks >= m->n)
        return;
    m->n = nblocks;
    if (nblocks == 0) {
        bf_free(a, m->e);
        m->e = NULL;
        m->cap = 0;
    } else if (m->cap / 2 > nblocks + 16) {
        /* Failure to shrink is harmless: keep the larger array. */
        map_resize(m, a, nblocks);
    }
}

void bf_map_free(bf_blockmap *m, const bf_allocator *a)
{
    bf_free(a, m->e);
    memset(m, 0, sizeof(*m));
}
