/*
 * freespace.c - best-fit free list with merging of neighbours.
 * Implements: bf_free_put, bf_free_put_clean, bf_free_put_room, bf_free_take, bf_free_take_at,
 * bf_free_take_aligned, bf_free_tail_start, bf_free_drop_beyond, bf_free_memory, bf_free_clear
 * (freespace.h).
 *
 * Invariants: c[0..n) sorted ascending by (cap, off) and the by-offset
 * half ascending by off hold the same chunks; chunks do not overlap each
 * other or any live extent; no chunk crosses a segment boundary; two
 * chunks that touch inside one segment have been merged, unless their sum
 * would not fit a 32-bit capacity; a chunk is clean only if every byte of
 * it reads as zeros (merging keeps that: clean only if both were).
 */
#include "freespace.h"

#include <string.h>

#include "alloc.h"

/* First index in c whose chunk is not less than (cap, off). */
static uint32_t by_size_index(const bf_freespace *fs, uint32_t cap, uint64_t off)
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

/* First index in the by-offset order whose chunk starts at or after `off`. */
static uint32_t by_off_index(const bf_freespace *fs, uint64_t off)
{
    const bf_chunk *o = bf_free_by_offset(fs);
    uint32_t lo = 0, hi = fs->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (o[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void array_remove(bf_chunk *arr, uint32_t n, uint32_t i)
{
    memmove(&arr[i], &arr[i + 1], (n - i - 1) * sizeof(bf_chunk));
}

static void array_insert(bf_chunk *arr, uint32_t n, uint32_t i, bf_chunk ch)
{
    memmove(&arr[i + 1], &arr[i], (n - i) * sizeof(bf_chunk));
    arr[i] = ch;
}

/* Remove the k-th chunk by offset from both orders. */
static void remove_chunk(bf_freespace *fs, uint32_t k)
{
    bf_chunk ch = bf_free_by_offset(fs)[k];
    array_remove(fs->c, fs->n, by_size_index(fs, ch.cap, ch.off));
    array_remove(bf_free_by_offset(fs), fs->n, k);
    fs->n--;
}

/* Room for one more chunk in both orders; 0 when the allocation failed. */
static int reserve_one(bf_freespace *fs, const bf_allocator *a)
{
    if (fs->n < fs->cap)
        return 1;
    uint32_t ncap = fs->cap ? fs->cap * 2 : 8;
    bf_chunk *c = bf_realloc(a, fs->c, 2 * (size_t)ncap * sizeof(*c));
    if (c == NULL)
        return 0;
    /* The by-offset half moves up to its place in the larger block. */
    memmove(c + ncap, c + fs->cap, (size_t)fs->n * sizeof(*c));
    fs->c = c;
    fs->cap = ncap;
    return 1;
}

/* Whether two chunks touching at `join` may become one of `caps` bytes. */
static int mergeable(uint64_t boundary, uint64_t join, uint64_t caps)
{
    return join % boundary != 0 && caps <= UINT32_MAX;
}

static void free_put(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                     uint32_t cap, uint32_t clean)
{
    if (cap == 0)
        return;
    uint64_t end = off + cap;
    uint32_t k = by_off_index(fs, off);
    if (k > 0) {
        const bf_chunk *prev = &bf_free_by_offset(fs)[k - 1];
        if (prev->off + prev->cap == off &&
            mergeable(boundary, off, (uint64_t)prev->cap + (end - off))) {
            off = prev->off;
            clean &= prev->clean;
            remove_chunk(fs, --k);
        }
    }
    if (k < fs->n) {
        const bf_chunk *next = &bf_free_by_offset(fs)[k];
        if (next->off == end && mergeable(boundary, end, end - off + next->cap)) {
            end += next->cap;
            clean &= next->clean;
            remove_chunk(fs, k);
        }
    }
    if (!reserve_one(fs, a))
        return;
    bf_chunk ch = {off, (uint32_t)(end - off), clean};
    array_insert(fs->c, fs->n, by_size_index(fs, ch.cap, ch.off), ch);
    array_insert(bf_free_by_offset(fs), fs->n, k, ch);
    fs->n++;
}

void bf_free_put(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                 uint32_t cap)
{
    free_put(fs, a, boundary, off, cap, 0);
}

void bf_free_put_clean(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                       uint32_t cap)
{
    free_put(fs, a, boundary, off, cap, BF_CHUNK_CLEAN);
}

void bf_free_put_room(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                      uint32_t cap, uint32_t clean)
{
    free_put(fs, a, boundary, off, cap, (clean & BF_CHUNK_CLEAN) | BF_CHUNK_ROOM);
}

int bf_free_take(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint32_t need,
                 uint32_t split_min, bf_chunk *out)
{
    uint32_t i = by_size_index(fs, need, 0);
    /* Rooms are their blocks' (freespace.h): passed over. */
    for (uint32_t tries = 0; i < fs->n && (fs->c[i].clean & BF_CHUNK_ROOM) && tries < 64;
         i++, tries++)
        ;
    if (i == fs->n || (fs->c[i].clean & BF_CHUNK_ROOM))
        return 0;
    bf_chunk ch = fs->c[i];
    remove_chunk(fs, by_off_index(fs, ch.off));
    if (ch.cap - need >= split_min && ch.cap - need > 0) {
        free_put(fs, a, boundary, ch.off + need, ch.cap - need, ch.clean);
        ch.cap = need;
    }
    *out = ch;
    return 1;
}

int bf_free_take_at(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                    uint32_t need, uint32_t *clean)
{
    uint32_t k = by_off_index(fs, off);
    if (k == fs->n)
        return 0;
    bf_chunk ch = bf_free_by_offset(fs)[k];
    if (ch.off != off || ch.cap < need)
        return 0;
    remove_chunk(fs, k);
    if (ch.cap > need)
        free_put(fs, a, boundary, off + need, ch.cap - need, ch.clean);
    *clean = ch.clean;
    return 1;
}

int bf_free_take_aligned(bf_freespace *fs, const bf_allocator *a, uint64_t boundary,
                         uint32_t need, uint32_t align, bf_chunk *out)
{
    /* Smallest first, as bf_free_take, but a chunk must hold an aligned range of `need`: the
       freed slots of bare blocks always do; a compressed extent's rarely. The walk is bounded
       so that a list of many unaligned chunks costs a placement little: the end serves. */
    uint32_t i = by_size_index(fs, need, 0);
    /* XXX: rooms (BF_CHUNK_ROOM) are not passed over here as bf_free_take passes them: a
       page-aligned placement may take a short block's room, which that block then cannot
       grow into. Measured as it is (docs/results/format4.md); skipping them is untried. */
    for (uint32_t tries = 0; i < fs->n && tries < 64; i++, tries++) {
        bf_chunk ch = fs->c[i];
        /* Aligned within the chunk's segment file (it lies in one): what its page cache sees. */
        uint64_t in = ch.off % boundary;
        uint64_t at = ch.off - in + ((in + align - 1) & ~(uint64_t)(align - 1));
        if (at + need > ch.off + ch.cap)
            continue;
        remove_chunk(fs, by_off_index(fs, ch.off));
        if (at > ch.off)
            free_put(fs, a, boundary, ch.off, (uint32_t)(at - ch.off), ch.clean);
        if (at + need < ch.off + ch.cap)
            free_put(fs, a, boundary, at + need, (uint32_t)(ch.off + ch.cap - at - need), ch.clean);
        *out = (bf_chunk){at, need, ch.clean};
        return 1;
    }
    return 0;
}

uint64_t bf_free_tail_start(const bf_freespace *fs, uint64_t end)
{
    /* Chunks that touch across a segment boundary stay apart: walk back over them. */
    const bf_chunk *o = bf_free_by_offset(fs);
    for (uint32_t k = fs->n; k > 0 && o[k - 1].off + o[k - 1].cap == end; k--)
        end = o[k - 1].off;
    return end;
}

void bf_free_drop_beyond(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t end)
{
    while (fs->n > 0) {
        bf_chunk last = bf_free_by_offset(fs)[fs->n - 1];
        if (last.off + last.cap <= end)
            return;
        remove_chunk(fs, fs->n - 1);
        if (last.off < end) /* it straddles the new end: keep the part below */
            free_put(fs, a, boundary, last.off, (uint32_t)(end - last.off), last.clean);
    }
}

uint64_t bf_free_memory(const bf_freespace *fs)
{
    return 2 * (uint64_t)fs->cap * sizeof(bf_chunk);
}

void bf_free_clear(bf_freespace *fs, const bf_allocator *a)
{
    bf_free(a, fs->c);
    memset(fs, 0, sizeof(*fs));
}
