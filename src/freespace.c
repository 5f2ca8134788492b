/*
 * freespace.c - best-fit free list kept sorted by (capacity, offset).
 *
 * Invariants: c[0..n) sorted ascending by (cap, off); chunks do not
 * overlap each other or any live extent.
 */
#include "freespace.h"

#include <string.h>

#include "alloc.h"

/* First index whose chunk is not less than (cap, off). */
static uint32_t lower_bound(const bf_freespace *fs, uint32_t cap, uint64_t off)
{
    uint32_t lo = 0, hi = fs->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const bf_chunk *m = &fs->c[mid];
        if (m->cap < cap || (m->cap == cap && m->off < off))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void remove_at(bf_freespace *fs, uint32_t i)
{
    memmove(&fs->c[i], &fs->c[i + 1], (fs->n - i - 1) * sizeof(bf_chunk));
    fs->n--;
}

void bf_free_put(bf_freespace *fs, const bf_allocator *a, uint64_t off, uint32_t cap)
{
    if (cap == 0)
        return;
    if (fs->n == fs->cap) {
        uint32_t ncap = fs->cap ? fs->cap * 2 : 8;
        bf_chunk *c = bf_realloc(a, fs->c, (size_t)ncap * sizeof(*c));
        if (c == NULL)
            return;
        fs->c = c;
        fs->cap = ncap;
    }
    uint32_t i = lower_bound(fs, cap, off);
    memmove(&fs->c[i + 1], &fs->c[i], (fs->n - i) * sizeof(bf_chunk));
    fs->c[i] = (bf_chunk){off, cap};
    fs->n++;
}

int bf_free_take(bf_freespace *fs, const bf_allocator *a, uint32_t need, uint32_t split_min,
                 bf_chunk *out)
{
    uint32_t i = lower_bound(fs, need, 0);
    if (i == fs->n)
        return 0;
    bf_chunk ch = fs->c[i];
    remove_at(fs, i);
    if (ch.cap - need >= split_min && ch.cap - need > 0) {
        bf_free_put(fs, a, ch.off + need, ch.cap - need);
        ch.cap = need;
    }
    *out = ch;
    return 1;
}

uint64_t bf_free_tail_start(const bf_freespace *fs, uint64_t end)
{
    for (int found = 1; found;) {
        found = 0;
        for (uint32_t i = 0; i < fs->n; i++) {
            if (fs->c[i].off + fs->c[i].cap == end) {
                end = fs->c[i].off;
                found = 1;
            }
        }
    }
    return end;
}

void bf_free_drop_beyond(bf_freespace *fs, uint64_t end)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < fs->n; i++) {
        if (fs->c[i].off < end)
            fs->c[j++] = fs->c[i];
    }
    fs->n = j;
}

void bf_free_clear(bf_freespace *fs, const bf_allocator *a)
{
    bf_free(a, fs->c);
    memset(fs, 0, sizeof(*fs));
}
