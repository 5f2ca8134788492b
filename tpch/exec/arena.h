/*
 * arena.h - bump allocator in accounted chunks, for sort buffers: many small
 * tuples freed all at once when a run is written. Every chunk is charged to
 * the owner's memacct while it is held.
 */
#ifndef TPCH_ARENA_H
#define TPCH_ARENA_H

#include <stddef.h>

#include "qctx.h"

typedef struct arena_chunk arena_chunk;

typedef struct arena {
    qctx *q;
    memacct *m;
    arena_chunk *head;
    size_t chunk_size;
} arena;

void arena_init(arena *a, qctx *q, memacct *m);
/* 8-aligned memory valid until arena_reset. */
void *arena_alloc(arena *a, size_t n);
/* Bytes arena_alloc(n) may newly charge at most (for spill decisions). */
size_t arena_cost(const arena *a, size_t n);
void arena_reset(arena *a);

#endif
