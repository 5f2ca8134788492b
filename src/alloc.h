/*
 * alloc.h - the allocator hooks every allocation of the library goes through.
 *
 * Callers pass the space's bf_allocator; a NULL result is always reported
 * as BF_ENOMEM by the caller, never dereferenced.
 */
#ifndef BF_ALLOC_H
#define BF_ALLOC_H

#include <stddef.h>

#include "buffile.h"

/* The default hooks: malloc/realloc/free. */
extern const bf_allocator bf_default_allocator;

void *bf_malloc(const bf_allocator *a, size_t size);
void *bf_calloc(const bf_allocator *a, size_t n, size_t size);
void *bf_realloc(const bf_allocator *a, void *ptr, size_t size);
void bf_free(const bf_allocator *a, void *ptr);

#endif
