/*
 * htable.c - chunked, accounted hash table (see htable.h).
 *
 * Buckets double when entries outnumber them (load factor 1). Chunk size
 * follows work_mem so a tiny budget is not swallowed by one chunk, and so
 * does the first bucket array.
 */
#include "htable.h"

#include <stdlib.h>
#include <string.h>

void ht_init(htable *h, qctx *q, memacct *m)
{
    memset(h, 0, sizeof *h);
    h->q = q;
    h->m = m;
    h->chunk_size = q_chunk_size(q);
}

static void charge(htable *h, int64_t delta)
{
    h->bytes += delta;
    mem_add(h->m, delta);
}

/* Bucket count after the next doubling: the first array is an eighth of a chunk, so a small
 * budget is not half spent on buckets before it holds a tuple. */
static uint64_t grown_nbuckets(const htable *h)
{
    return h->nbuckets ? h->nbuckets * 2 : h->chunk_size / 8 / sizeof(htentry *);
}

static void free_chunks(htable *h, htchunk *c)
{
    while (c) {
        htchunk *n = c->next;
        charge(h, -(int64_t)(sizeof(htchunk) + c->cap));
        free(c);
        c = n;
    }
}

void ht_reset(htable *h)
{
    free_chunks(h, h->chunks);
    h->chunks = NULL;
    if (h->buckets) {
        charge(h, -(int64_t)(h->nbuckets * sizeof(htentry *)));
        free(h->buckets);
    }
    h->buckets = NULL;
    h->nbuckets = 0;
    h->nentries = 0;
}

size_t ht_insert_cost(const htable *h, size_t payload)
{
    size_t sz = sizeof(htentry) + Q_ALIGN8(payload);
    const htchunk *c = h->chunks;
    size_t cost = 0;
    if (!c || c->cap - c->used < sz)
        cost = sizeof(htchunk) + (sz > h->chunk_size ? sz : h->chunk_size);
    if (h->nentries >= h->nbuckets)
        cost += grown_nbuckets(h) * sizeof(htentry *);
    return cost;
}

static void rehash(htable *h, uint64_t nb)
{
    /* Zeroed here, not by calloc: jemalloc zeroes a large allocation that reuses freed pages
       by dropping them (madvise MADV_DONTNEED), so every 4 KiB of every batch's bucket array
       faulted again, first on the zero page and then on the write, a TLB flush each. That
       was 145,000 flushes in Q9, Q13 and Q21 at SF 1 (docs/results/machine.md, "A busy
       second vCPU, and page faults"). nb doubles from a power of two: the size does not
       wrap. */
    size_t size = nb * sizeof(htentry *);
    htentry **nbk = q_malloc(h->q, size);
    memset(nbk, 0, size);
    charge(h, (int64_t)size);
    for (uint64_t i = 0; i < h->nbuckets; i++) {
        htentry *e = h->buckets[i];
        while (e) {
            htentry *n = e->next;
            uint64_t b = e->hash & (nb - 1);
            e->next = nbk[b];
            nbk[b] = e;
            e = n;
        }
    }
    if (h->buckets) {
        charge(h, -(int64_t)(h->nbuckets * sizeof *nbk));
        free(h->buckets);
    }
    h->buckets = nbk;
    h->nbuckets = nb;
}

static void *chunk_alloc(htable *h, size_t n)
{
    htchunk *c = h->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > h->chunk_size ? n : h->chunk_size;
        c = q_malloc(h->q, sizeof(htchunk) + cap);
        c->used = 0;
        c->cap = cap;
        c->next = h->chunks;
        h->chunks = c;
        charge(h, (int64_t)(sizeof(htchunk) + cap));
    }
    void *p = (uint8_t *)(c + 1) + c->used;
    c->used += n;
    return p;
}

void *ht_insert(htable *h, uint64_t hash, size_t payload)
{
    if (h->nentries >= h->nbuckets)
        rehash(h, grown_nbuckets(h));
    size_t sz = sizeof(htentry) + Q_ALIGN8(payload);
    htentry *e = chunk_alloc(h, sz);
    e->hash = hash;
    e->size = (uint32_t)sz;
    e->pad = 0;
    uint64_t b = hash & (h->nbuckets - 1);
    e->next = h->buckets[b];
    h->buckets[b] = e;
    h->nentries++;
    return e + 1;
}

htentry *ht_chain(const htable *h, uint64_t hash)
{
    if (!h->nbuckets)
        return NULL;
    return h->buckets[hash & (h->nbuckets - 1)];
}

htchunk *ht_detach(htable *h)
{
    htchunk *rev = NULL, *c = h->chunks;
    while (c) {
        htchunk *n = c->next;
        c->next = rev;
        rev = c;
        c = n;
    }
    h->chunks = NULL;
    if (h->buckets)
        memset(h->buckets, 0, h->nbuckets * sizeof *h->buckets);
    h->nentries = 0;
    return rev;
}

void ht_free_chunk(htable *h, htchunk *c)
{
    charge(h, -(int64_t)(sizeof(htchunk) + c->cap));
    free(c);
}

htentry *ht_chunk_first(htchunk *c)
{
    return c->used ? (htentry *)(c + 1) : NULL;
}

htentry *ht_chunk_next(htchunk *c, htentry *e)
{
    uint8_t *p = (uint8_t *)e + e->size;
    return p < (uint8_t *)(c + 1) + c->used ? (htentry *)p : NULL;
}
