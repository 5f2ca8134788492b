/*
 * htable.h - chained hash table over an accounted chunk arena, shared by the
 * hash join and the hash aggregate.
 *
 * Entries live back to back in chunks (each with its total size), so the
 * table can be walked in insertion order chunk by chunk, and a hash join can
 * re-sort its entries into batches while freeing the old chunks as it goes
 * (memory never doubles during a batch split). Every chunk and the bucket
 * array are charged to the owner's memacct.
 */
#ifndef TPCH_HTABLE_H
#define TPCH_HTABLE_H

#include <stdint.h>

#include "qctx.h"

typedef struct htentry {
    struct htentry *next;
    uint64_t hash;
    uint32_t size; /* whole entry, header included, multiple of 8 */
    uint32_t pad;
    /* payload follows, 8-aligned */
} htentry;

typedef struct htchunk {
    struct htchunk *next; /* older chunk */
    size_t used;
    size_t cap;
    /* entries follow */
} htchunk;

typedef struct htable {
    qctx *q;
    memacct *m;
    htentry **buckets;
    uint64_t nbuckets; /* power of two */
    uint64_t nentries;
    htchunk *chunks;   /* newest first */
    size_t chunk_size;
    int64_t bytes;     /* chunks and bucket array: what the table charges to m */
} htable;

void ht_init(htable *h, qctx *q, memacct *m);
/* Free everything (the table stays usable, empty). */
void ht_reset(htable *h);
/* Add an entry with `payload` bytes of room; returns the payload pointer. */
void *ht_insert(htable *h, uint64_t hash, size_t payload);
/* First entry of the chain that may hold `hash` (compare e->hash yourself). */
htentry *ht_chain(const htable *h, uint64_t hash);
static inline void *ht_payload(htentry *e)
{
    return e + 1;
}
/* Bytes inserting one more entry with `payload` bytes would add at the peak:
 * the entry, and the new bucket array when this insert doubles it. */
size_t ht_insert_cost(const htable *h, size_t payload);
/* Detach all chunks (oldest first) and empty the buckets, to re-insert some entries. */
htchunk *ht_detach(htable *h);
/* Free one detached chunk (and uncharge it). */
void ht_free_chunk(htable *h, htchunk *c);
/* Iterate entries of a chunk: first entry, next entry (NULL at the end). */
htentry *ht_chunk_first(htchunk *c);
htentry *ht_chunk_next(htchunk *c, htentry *e);

#endif
