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
 * batch; a split moves the current batch's tuples to ONE new batch (the one
 * the new hash bit selects). When a split moves no tuple or all of them (one
 * key dominates the batch: skew) growth stops, as in PostgreSQL, and the
 * batch is kept in memory above the budget - correct, and reported.
 *
 * Memory (docs/executor.md): the working set is the table, the block buffer
 * of every batch file being written or read, and the file arrays; the
 * library's struct, block map and free list of every batch file count too
 * (memacct.lib). Files are written in phases (batch 0's build or probe, a
 * later batch's load or probe, which re-routes tuples to files that may
 * exist already) and parked when each phase ends, so a pending batch holds
 * no buffer: at any time the files with a buffer are the writers of one
 * side plus one reader. The table may use the working
 * budget less the buffers of the writers the current phase can have (every
 * later batch during batch 0; for a later batch the batches its tuples can
 * move on to) and of one split. When it is full, doubling nbatch frees half
 * of the table and costs a writer's buffer per batch; it is done when that
 * lowers memory (table >= 2 x nbatch writers' buffers). Otherwise the budget
 * cannot hold the join and, as PostgreSQL 18 does, the table grows instead
 * of nbatch: memory then stays within a few percent of the least that any
 * number of batches needs (memacct.need), instead of exploding into
 * thousands of file buffers.
 */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

#include "htable.h"
#include "keys.h"
#include "spillio.h"

#define HJ_MAX_KEYS 4
/* Per batch: its inner and outer file pointers and born[]. */
#define HJ_SLOT_BYTES (int64_t)(2 * sizeof(spillfile *) + sizeof(int))

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
    int64_t allowance;           /* working set granted beyond the budget (PG18's balance) */
    bool grow_enabled, built, done, spilled;
    spillfile **ifiles, **ofiles;
    int *born;                   /* nbatch when a batch's first file was created */
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
        if (!j->ifiles[b] || !j->ofiles[b])
            j->born[b] = j->nbatch;
        if (!j->spilled) {
            j->spilled = true;
            j->base.q->st.hj_spilled++;
        }
    }
    return files[b];
}

static void close_file(spillfile **slot)
{
    spill_close(*slot);
    *slot = NULL;
}

/* The phase that wrote these files of the later batches is over: they wait to be read (or
 * to be written again by a later batch's re-routing, which reloads their last block). */
static void park_later(hj *j, spillfile **files)
{
    for (int b = j->curbatch + 1; b < j->nbatch; b++)
        if (files[b])
            spill_park(j->base.q, files[b]);
}

/*
 * Batches that tuples of the current batch can still move to: for batch 0 every later
 * batch; a later batch's tuples were written when nbatch was born[cur], so they can only
 * move to the batches that share its low bits.
 */
static int64_t writers(const hj *j)
{
    int from = j->curbatch == 0 ? 1 : j->born[j->curbatch];
    return j->nbatch / from - 1;
}

/*
 * Working set beyond the table that the table must leave room for: the block buffers of
 * the writers, of the one new file a split opens and, after batch 0, of the file being
 * read; and a chunk, since a split copies kept tuples into fresh chunks before it frees
 * the old ones.
 */
static int64_t reserved(const hj *j)
{
    int64_t c = spill_writer_cost(j->base.q);
    return (writers(j) + 1 + (j->curbatch > 0)) * c + (int64_t)j->ht.chunk_size;
}

/*
 * The least working set that could hold the inner side seen so far in any number of
 * batches b: the table of one batch (the current table, `cost` bytes about to be added,
 * scaled by nbatch / b, for hash-spread keys) plus the block buffers of the b - 1 writers,
 * plus what a split holds for a moment (a chunk of kept tuples, the new batch's file).
 * Updated before the table grows, so that it covers the moment a bucket doubling holds
 * both arrays; the balance keeps the join within a few percent of it.
 */
static void update_need(hj *j, int64_t cost)
{
    int64_t c = spill_writer_cost(j->base.q);
    int64_t inner = (j->ht.bytes + cost) * j->nbatch;
    int64_t best = INT64_MAX;
    for (int64_t b = 1; b <= (1 << 24); b *= 2) {
        int64_t m = inner / b + (b - 1) * c;
        if (m > best)
            break;
        best = m;
    }
    if (j->grow_enabled)
        j->m.need = best + (int64_t)j->ht.chunk_size + c;
}

static void grow_batches(hj *j)
{
    qctx *q = j->base.q;
    int old = j->nbatch;
    if (old >= (1 << 24)) {
        j->grow_enabled = false;
        return;
    }
    int nb = old * 2;
    /* grow the arrays before nbatch, so that a failed allocation leaves them consistent */
    j->ifiles = q_realloc(q, j->ifiles, sizeof(spillfile *) * (size_t)nb);
    memset(j->ifiles + old, 0, sizeof(spillfile *) * (size_t)old);
    j->ofiles = q_realloc(q, j->ofiles, sizeof(spillfile *) * (size_t)nb);
    memset(j->ofiles + old, 0, sizeof(spillfile *) * (size_t)old);
    j->born = q_realloc(q, j->born, sizeof(int) * (size_t)nb);
    memset(j->born + old, 0, sizeof(int) * (size_t)old);
    j->nbatch = nb;
    mem_add(&j->m, HJ_SLOT_BYTES * old);
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
 * The table is full. Doubling nbatch frees half of it; what it costs is a writer's buffer
 * per batch: for batch 0 every later batch is a writer, and a later batch's doubling
 * makes every pending batch spread over twice the batches when it is loaded (PostgreSQL
 * counts the same, per batch). Double when the table is at least twice that, so that
 * doubling lowers memory; otherwise grow the table instead (PostgreSQL 18's
 * ExecHashIncreaseBatchSize): more batches would cost more in buffers than they save in
 * table. After a split that moved nothing or everything (skew) the table grows
 * regardless, and what it holds is needed.
 */
static void make_room(hj *j, int64_t cost)
{
    if (j->grow_enabled && j->ht.bytes >= 2 * j->nbatch * spill_writer_cost(j->base.q)) {
        grow_batches(j);
        return;
    }
    j->allowance = j->ht.bytes + cost + reserved(j);
    if (!j->grow_enabled)
        j->m.need = j->allowance; /* the batch that cannot split must be held */
}

/* Put an inner tuple of the current batch into memory, or route it onward. */
static void insert_inner(hj *j, uint64_t hash, const tup *t)
{
    int b = batch_of(j, hash);
    int64_t cost = 0;
    if (b == j->curbatch) {
        cost = (int64_t)ht_insert_cost(&j->ht, tup_len(t));
        int64_t limit = mem_work_budget(&j->m);
        if (j->allowance > limit)
            limit = j->allowance;
        if (cost > 0 && j->ht.bytes + cost + reserved(j) > limit) {
            make_room(j, cost);
            b = batch_of(j, hash);
        }
    }
    if (b != j->curbatch) {
        spill_write(j->base.q, batch_file(j, j->ifiles, b), hash, t);
        return;
    }
    if (cost > 0)
        update_need(j, cost);
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
    park_later(j, j->ifiles);
    j->built = true;
}

/* Move to the next batch that has work; false when all are done. */
static bool next_batch(hj *j)
{
    qctx *q = j->base.q;
    if (j->curbatch == 0)
        j->m.grant = j->m.peak; /* batch 0 is over: the whole input has been seen */
    for (;;) {
        park_later(j, j->ofiles);
        close_file(&j->ofiles[j->curbatch]);
        close_file(&j->ifiles[j->curbatch]);
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
            close_file(&j->ifiles[b]);
            park_later(j, j->ifiles);
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
        close_file(&j->ifiles[b]);
        close_file(&j->ofiles[b]);
    }
    free(j->ifiles);
    free(j->ofiles);
    free(j->born);
    mem_add(&j->m, -HJ_SLOT_BYTES * j->nbatch);
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
    j->grow_enabled = true;
    j->ifiles = q_calloc(q, 1, sizeof(spillfile *));
    j->ofiles = q_calloc(q, 1, sizeof(spillfile *));
    j->born = q_calloc(q, 1, sizeof(int));
    j->nbatch = 1; /* only now: hj_close walks nbatch slots of the arrays */
    mem_add(&j->m, HJ_SLOT_BYTES);
    tb_init(&j->tb);
    return &j->base;
}
