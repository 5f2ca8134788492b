/*
 * freespace.h - freed extents of one file, for reuse by later extents.
 *
 * Chunks are kept twice: sorted by (capacity, offset) for best-fit
 * allocation, and sorted by offset so that a freed chunk merges with free
 * neighbours. Merging never crosses a segment boundary (an extent never
 * straddles two segments) and keeps capacities below 4 GiB. With best fit
 * and merging, a logtape-style caller that frees and rewrites blocks keeps
 * the file's physical size bounded, and the free chunks at the physical end
 * are handed back to the file system (bf_free_tail_start +
 * bf_free_drop_beyond). Freeing never fails: if the arrays cannot grow,
 * the chunk is forgotten and stays counted as dead bytes.
 */
#ifndef BF_FREESPACE_H
#define BF_FREESPACE_H

#include <stdint.h>

#include "buffile.h"

#define BF_CHUNK_CLEAN 1u
#define BF_CHUNK_ROOM 2u

typedef struct bf_chunk {
    uint64_t off;
    uint32_t cap;
    /* Bit 1 (BF_CHUNK_CLEAN): its bytes read as zeros (never written since the file's
       segments were created, or written as zeros): file.c writes nothing of a bare block's
       zeros there. Bit 2 (BF_CHUNK_ROOM): the rest of the page of the short bare
       block before it, kept for that block to grow into (bf_free_put_room). A chunk merged
       with one that has not a bit has not that bit; a part split off keeps them. */
    uint32_t clean;
} bf_chunk;

/*
 * One allocation of 2 * cap chunks: the first n sorted by (cap, off), and
 * from index cap on the same n chunks sorted by offset. All zero is empty.
 */
typedef struct bf_freespace {
    bf_chunk *c;
    uint32_t n, cap;
} bf_freespace;

static inline bf_chunk *bf_free_by_offset(const bf_freespace *fs)
{
    return fs->c != NULL ? fs->c + fs->cap : NULL; /* NULL + 0 is undefined */
}

/*
 * Remember a freed chunk, merged with the free chunks it touches inside the
 * same segment (`boundary` is the segment size). The chunk itself lies
 * inside one segment: the caller cuts a range at segment boundaries.
 */
void bf_free_put(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                 uint32_t cap);

/* bf_free_put of a chunk whose bytes read as zeros (bf_chunk.clean). */
void bf_free_put_clean(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                       uint32_t cap);

/* Put the rest of the page of the short bare block that ends at `off` (file.c's tail_room
   and extent_place), clean as `clean`'s BF_CHUNK_CLEAN says: kept for that block
   (bf_free_take passes it over). */
void bf_free_put_room(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                      uint32_t cap, uint32_t clean);

/*
 * Take the smallest chunk with capacity >= need that is not a short
 * block's room (BF_CHUNK_ROOM; at most 64 looked at past the first that
 * fits). When the chunk is larger than need + split_min, it is split and
 * the tail goes back. Returns 1 and the chunk in *out when found, 0
 * otherwise. A room is taken by its block's growth (bf_free_take_at)
 * and, for now, by an aligned placement (bf_free_take_aligned, XXX there),
 * not here: an extent placed there kept the block from growing where it
 * was.
 */
int bf_free_take(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint32_t need,
                 uint32_t split_min, bf_chunk *out);

/*
 * Take `need` bytes at a multiple of `align` (a power of two) counted from
 * the start of the segment (`boundary` bytes each) from the smallest chunk
 * that holds them; what is left of the chunk before and after goes back.
 * Returns 1 and the range in *out (cap == need), or 0.
 */
int bf_free_take_aligned(bf_freespace *fs, const bf_allocator *a, uint64_t boundary,
                         uint32_t need, uint32_t align, bf_chunk *out);

/*
 * Take the `need` bytes at `off` exactly, when a free chunk starts there and
 * holds them (what is left of it goes back): an extent right before it grows
 * in place. Returns 1 when taken (*clean: the chunk's bf_chunk.clean), 0
 * otherwise.
 */
int bf_free_take_at(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t off,
                    uint32_t need, uint32_t *clean);

/*
 * Where the run of free chunks that ends exactly at `end` starts (`end`
 * itself when no chunk ends there): the physical end can drop to it.
 */
uint64_t bf_free_tail_start(const bf_freespace *fs, uint64_t end);

/* Drop the free bytes at or beyond `end` (a chunk that straddles it is cut). */
void bf_free_drop_beyond(bf_freespace *fs, const bf_allocator *a, uint64_t boundary, uint64_t end);

/* Heap bytes the free list holds. */
uint64_t bf_free_memory(const bf_freespace *fs);

void bf_free_clear(bf_freespace *fs, const bf_allocator *a);

#endif
