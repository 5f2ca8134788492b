/*
 * op_hashjoin.c - hybrid hash join in the manner of PostgreSQL's nodeHash.
 *
 * The inner input is hashed into batch 0 in memory; when the table would
 * outgrow its budget, nbatch doubles and the tuples that now belong to a
 * later batch move to that batch's inner file. Outer tuples of later
 * batches go to outer files during the batch-0 probe; each later batch is
 * then reloaded (it may split again: nbatch can still grow) and probed from
 * its outer file, tuples re-routed when their batch moved on.
 *
 * Invariants: batch_of(hash) uses hash bits 32.. and buckets the low bits,
 * so batch and bucket are independent. A tuple only ever moves to a later
 * batch. When a split moves no tuple or all of them (one key dominates the
 * batch: skew) growth stops, as in PostgreSQL, and the batch is kept in
 * memory above the budget - correct, and reported by the counter.
 * Budget for tuples: the space allowed (work_mem at first) minus the block
 * buffers of the batch files (open now, or to be opened: an inner and an
 * outer file per later batch, and the new inner files of the next
 * doubling), never less than half of the space. When the file buffers of
 * more batches would cost more than the space itself, the space doubles
 * instead of nbatch (make_room), so a huge inner side ends with memory near
 * the minimum of tuples + file buffers rather than with thousands of files.
 */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

#include "htable.h"
#include "keys.h"
#include "spillio.h"

#define HJ_MAX_KEYS 4

typedef struct hj {
    op base;
    op *outer, *inner;
    jointype jt;
    int nkeys;
    int okeys[HJ_MAX_KEYS], ikeys[HJ_MAX_KEYS];
    join_qual_fn qual;
    void *qual_arg;
    memacct m;
    htable ht;
    int nbatch, curbatch;
    int64_t space_allowed;       /* table + batch-file buffers; starts at work_mem */
    bool grow_enabled, built, done, spilled;
    int nfiles;                  /* open spill files (each charged a block) */
    spillfile **ifiles, **ofiles;
    uint64_t batch_inner;        /* inner tuples loaded for the current batch */
    /* probe state */
    const tup *otup;
    uint64_t ohash;
    htentry *cur;
    bool matched;
    tbuild tb;
} hj;

static int batch_of(const hj *j, uint64_t hash)
{
    return (int)((uint32_t)(hash >> 32) & (uint32_t)(j->nbatch - 1));
}

static spillfile *batch_file(hj *j, spillfile **files, int b)
{
    if (!files[b]) {
        files[b] = spill_create(j->base.q, &j->m);
        j->nfiles++;
        if (!j->spilled) {
            j->spilled = true;
            j->base.q->st.hj_spilled++;
        }
    }
    return files[b];
}

static void close_file(hj *j, spillfile **slot)
{
    if (*slot) {
        spill_close(&j->m, *slot);
        *slot = NULL;
        j->nfiles--;
    }
}

static bool table_full(const hj *j, size_t cost)
{
    int64_t bs = j->base.q->block_size;
    int64_t files = (int64_t)j->nfiles * bs;
    /* inner and outer files of the later batches, and the inner files a doubling opens */
    int64_t reserved = 2 * (int64_t)j->nbatch * bs;
    /* a split copies kept tuples into fresh chunks before freeing old ones: one chunk more */
    int64_t budget = j->space_allowed - (reserved > files ? reserved : files) -
                     (int64_t)j->ht.chunk_size;
    if (budget < j->space_allowed / 2)
        budget = j->space_allowed / 2;
    return j->m.cur - files + (int64_t)cost > budget;
}

static void grow_batches(hj *j)
{
    qctx *q = j->base.q;
    int old = j->nbatch;
    if (old >= (1 << 24)) {
        j->grow_enabled = false;
        return;
    }
    j->nbatch = old * 2;
    j->ifiles = q_realloc(q, j->ifiles, sizeof(spillfile *) * (size_t)j->nbatch);
    j->ofiles = q_realloc(q, j->ofiles, sizeof(spillfile *) * (size_t)j->nbatch);
    memset(j->ifiles + old, 0, sizeof(spillfile *) * (size_t)old);
    memset(j->ofiles + old, 0, sizeof(spillfile *) * (size_t)old);
    if (j->nbatch > q->st.hj_max_batches)
        q->st.hj_max_batches = j->nbatch;

    uint64_t moved = 0, kept = 0;
    htchunk *c = ht_detach(&j->ht);
    while (c) {
        htchunk *nextc = c->next;
        for (htentry *e = ht_chunk_first(c); e; e = ht_chunk_next(c, e)) {
            const tup *t = ht_payload(e);
            int b = batch_of(j, e->hash);
            if (b != j->curbatch) {
                spill_write(q, batch_file(j, j->ifiles, b), e->hash, t);
                moved++;
            } else {
                memcpy(ht_insert(&j->ht, e->hash, tup_len(t)), t, tup_len(t));
                kept++;
            }
        }
        ht_free_chunk(&j->ht, c);
        c = nextc;
    }
    if (moved == 0 || kept == 0) {
        j->grow_enabled = false;
        q->st.hj_skew_stop = true;
    }
}

/*
 * The table is full: double nbatch, unless the batch files' buffers after
 * doubling (an inner and an outer file per batch) would cost more than the
 * space allowed; then doubling the space is the cheaper way to go on
 * (PostgreSQL 18 balances the same way), and memory stays near the
 * minimum of table + file buffers instead of exploding with nbatch.
 */
static void make_room(hj *j)
{
    int64_t bs = j->base.q->block_size;
    if (4 * (int64_t)j->nbatch * bs > j->space_allowed && j->space_allowed < INT64_MAX / 2)
        j->space_allowed *= 2;
    else
        grow_batches(j);
}

/* Put an inner tuple of the current batch into memory, or route it onward. */
static void insert_inner(hj *j, uint64_t hash, const tup *t)
{
    int b = batch_of(j, hash);
    if (b == j->curbatch && j->grow_enabled && table_full(j, ht_insert_cost(&j->ht, tup_len(t)))) {
        make_room(j);
        b = batch_of(j, hash);
    }
    if (b != j->curbatch) {
        spill_write(j->base.q, batch_file(j, j->ifiles, b), hash, t);
        return;
    }
    memcpy(ht_insert(&j->ht, hash, tup_len(t)), t, tup_len(t));
    j->batch_inner++;
}

static void build(hj *j)
{
    const tup *t;
    while ((t = j->inner->next(j->inner)) != NULL) {
        if (keys_any_null(t, j->nkeys, j->ikeys))
            continue;
        insert_inner(j, keys_hash(t, j->nkeys, j->ikeys), t);
    }
    j->built = true;
}

/* Move to the next batch that has work; false when all are done. */
static bool next_batch(hj *j)
{
    qctx *q = j->base.q;
    for (;;) {
        close_file(j, &j->ofiles[j->curbatch]);
        close_file(j, &j->ifiles[j->curbatch]);
        j->curbatch++;
        if (j->curbatch >= j->nbatch)
            return false;
        ht_reset(&j->ht);
        j->batch_inner = 0;
        int b = j->curbatch;
        if (j->ifiles[b]) {
            spillfile *f = j->ifiles[b];
            spill_rewind(q, f);
            uint64_t h;
            const tup *t;
            while ((t = spill_read(q, f, &h)) != NULL)
                insert_inner(j, h, t);
            close_file(j, &j->ifiles[b]);
        }
        if (!j->ofiles[b])
            continue;
        if (j->batch_inner == 0 && (j->jt == JOIN_INNER || j->jt == JOIN_SEMI))
            continue;
        spill_rewind(q, j->ofiles[b]);
        return true;
    }
}

static const tup *fetch_outer(hj *j)
{
    for (;;) {
        const tup *t;
        if (j->curbatch == 0) {
            t = j->outer->next(j->outer);
            if (!t) {
                if (j->nbatch == 1 || !next_batch(j))
                    return NULL;
                continue;
            }
        } else {
            uint64_t h;
            t = spill_read(j->base.q, j->ofiles[j->curbatch], &h);
            if (!t) {
                if (!next_batch(j))
                    return NULL;
                continue;
            }
        }
        if (keys_any_null(t, j->nkeys, j->okeys)) {
            j->ohash = 0;
            j->cur = NULL;
            return t;
        }
        uint64_t h = keys_hash(t, j->nkeys, j->okeys);
        int b = batch_of(j, h);
        if (b != j->curbatch) {
            spill_write(j->base.q, batch_file(j, j->ofiles, b), h, t);
            continue;
        }
        j->ohash = h;
        j->cur = ht_chain(&j->ht, h);
        return t;
    }
}

static const tup *emit_pair(hj *j, const tup *inner)
{
    int no = tup_natts(j->otup);
    tb_begin(&j->tb, no + j->inner->natts);
    tb_copy_range(&j->tb, j->otup, 0, no);
    if (inner)
        tb_copy_range(&j->tb, inner, 0, j->inner->natts);
    else
        for (int i = 0; i < j->inner->natts; i++)
            tb_null(&j->tb);
    return tb_end(&j->tb);
}

static const tup *hj_next(op *self)
{
    hj *j = (hj *)self;
    if (j->done)
        return NULL;
    if (!j->built)
        build(j);
    for (;;) {
        if (!j->otup) {
            j->otup = fetch_outer(j);
            if (!j->otup) {
                j->done = true;
                return NULL;
            }
            j->matched = false;
        }
        while (j->cur) {
            htentry *e = j->cur;
            j->cur = e->next;
            const tup *in = ht_payload(e);
            if (e->hash != j->ohash || !keys_equal(j->otup, j->okeys, in, j->ikeys, j->nkeys))
                continue;
            if (j->qual && !j->qual(j->otup, in, j->qual_arg))
                continue;
            j->matched = true;
            if (j->jt == JOIN_INNER || j->jt == JOIN_LEFT)
                return emit_pair(j, in);
            j->cur = NULL;
        }
        const tup *o = j->otup;
        j->otup = NULL;
        if (j->jt == JOIN_SEMI && j->matched)
            return o;
        if (j->jt == JOIN_ANTI && !j->matched)
            return o;
        if (j->jt == JOIN_LEFT && !j->matched) {
            j->otup = o;
            const tup *r = emit_pair(j, NULL);
            j->otup = NULL;
            return r;
        }
    }
}

static void hj_close(op *self)
{
    hj *j = (hj *)self;
    for (int b = 0; b < j->nbatch; b++) {
        if (j->ifiles)
            close_file(j, &j->ifiles[b]);
        if (j->ofiles)
            close_file(j, &j->ofiles[b]);
    }
    free(j->ifiles);
    free(j->ofiles);
    ht_reset(&j->ht);
    tb_free(&j->tb);
}

op *op_hashjoin(qctx *q, op *outer, op *inner, jointype jt, int nkeys, const int *okeys,
                const int *ikeys, join_qual_fn qual, void *qual_arg)
{
    if (nkeys < 1 || nkeys > HJ_MAX_KEYS)
        q_fail(q, "hash join: %d keys (1..%d supported)", nkeys, HJ_MAX_KEYS);
    int natts = (jt == JOIN_SEMI || jt == JOIN_ANTI) ? outer->natts : outer->natts + inner->natts;
    hj *j = op_new(q, sizeof *j, hj_next, hj_close, natts);
    j->outer = outer;
    j->inner = inner;
    j->jt = jt;
    j->nkeys = nkeys;
    memcpy(j->okeys, okeys, sizeof(int) * (size_t)nkeys);
    memcpy(j->ikeys, ikeys, sizeof(int) * (size_t)nkeys);
    j->qual = qual;
    j->qual_arg = qual_arg;
    mem_init(&j->m, q);
    ht_init(&j->ht, q, &j->m);
    j->nbatch = 1;
    j->space_allowed = q->work_mem;
    j->grow_enabled = true;
    j->ifiles = q_calloc(q, 1, sizeof(spillfile *));
    j->ofiles = q_calloc(q, 1, sizeof(spillfile *));
    tb_init(&j->tb);
    return &j->base;
}
