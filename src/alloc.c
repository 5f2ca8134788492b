/*
 * alloc.c - allocator hooks: the default libc hooks and checked helpers.
 * Implements: bf_malloc, bf_calloc, bf_realloc, bf_free and the default
 * allocator (alloc.h).
 *
 * bf_calloc checks n * size for overflow because block-map growth computes
 * sizes from caller-controlled offsets.
 */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *libc_malloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void *libc_realloc(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    return realloc(ptr, size);
}

static void libc_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

const bf_allocator bf_default_allocator = {libc_malloc, libc_realloc, libc_free, NULL};

void *bf_malloc(const bf_allocator *a, size_t size)
{
    return a->malloc_fn(a->ctx, size ? size : 1);
}

void *bf_calloc(const bf_allocator *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = bf_malloc(a, n * size);
    if (p != NULL)
        memset(p, 0, n * size);
    return p;
}

void *bf_realloc(const bf_allocator *a, void *ptr, size_t size)
{
    return a->realloc_fn(a->ctx, ptr, size ? size : 1);
}

void bf_free(const bf_allocator *a, void *ptr)
{
    if (ptr != NULL)
        a->free_fn(a->ctx, ptr);
}
