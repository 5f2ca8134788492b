/*
 * arena.c - accounted bump allocator (see arena.h). Chunk size follows
 * work_mem (1/16 of it, 4 KiB .. 64 KiB) so small budgets stay meaningful.
 */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>

struct arena_chunk {
    arena_chunk *next;
    size_t used, cap;
};

void arena_init(arena *a, qctx *q, memacct *m)
{
    a->q = q;
    a->m = m;
    a->head = NULL;
    a->chunk_size = q_chunk_size(q);
}

size_t arena_cost(const arena *a, size_t n)
{
    n = Q_ALIGN8(n);
    if (a->head && a->head->cap - a->head->used >= n)
        return 0;
    return sizeof(arena_chunk) + (n > a->chunk_size ? n : a->chunk_size);
}

void *arena_alloc(arena *a, size_t n)
{
    n = Q_ALIGN8(n);
    arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > a->chunk_size ? n : a->chunk_size;
        c = q_malloc(a->q, sizeof *c + cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        mem_add(a->m, (int64_t)(sizeof *c + cap));
    }
    void *p = (uint8_t *)(c + 1) + c->used;
    c->used += n;
    return p;
}

void arena_reset(arena *a)
{
    while (a->head) {
        arena_chunk *n = a->head->next;
        mem_add(a->m, -(int64_t)(sizeof *a->head + a->head->cap));
        free(a->head);
        a->head = n;
    }
}
