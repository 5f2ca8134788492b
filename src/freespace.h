/*
 * freespace.h - freed extents of one file, for reuse by later extents.
 *
 * A sorted array of (capacity, offset) chunks; allocation is best fit, so
 * when a logtape-style caller frees and rewrites blocks of similar size
 * the file's physical size stays bounded. Chunks are never adjacent-merged
 * except at the physical end, where they are handed back to the file
 * system (bf_free_tail_start + bf_free_drop_beyond). Freeing never fails: if the array cannot
 * grow, the chunk is forgotten and stays counted as dead bytes.
 */
#ifndef BF_FREESPACE_H
#define BF_FREESPACE_H

#include <stdint.h>

#include "buffile.h"

typedef struct bf_chunk {
    uint64_t off;
    uint32_t cap;
} bf_chunk;

typedef struct bf_freespace {
    bf_chunk *c;
    uint32_t n, cap;
} bf_freespace;

/* Remember a freed chunk. */
void bf_free_put(bf_freespace *fs, const bf_allocator *a, uint64_t off, uint32_t cap);

/*
 * Take the smallest chunk with capacity >= need. When the chunk is larger
 * than need + split_min, it is split and the tail goes back. Returns 1 and
 * the chunk in *out when found, 0 otherwise.
 */
int bf_free_take(bf_freespace *fs, const bf_allocator *a, uint32_t need, uint32_t split_min,
                 bf_chunk *out);

/*
 * Where the run of free chunks that ends exactly at `end` starts (`end`
 * itself when no chunk ends there): the physical end can drop to it.
 */
uint64_t bf_free_tail_start(const bf_freespace *fs, uint64_t end);

/* Drop every chunk at or beyond `end`. */
void bf_free_drop_beyond(bf_freespace *fs, uint64_t end);

void bf_free_clear(bf_freespace *fs, const bf_allocator *a);

#endif
