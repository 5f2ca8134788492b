/*
 * op_hashagg.c - hash aggregation that spills partitions and recurses, in
 * the manner of PostgreSQL 13+.
 *
 * A pass reads its input (the child, or a partition file) into a table of
 * groups. When a new group would push the operator past its working budget
 * (the partition files' block buffers and the input file's counted up
 * front), the pass enters spill mode: groups already in memory keep
 * aggregating, rows of any other group are written unchanged to one of
 * npart partition files, chosen by a hash mix of this level. After the
 * in-memory groups are emitted, each partition is parked (it holds no block
 * buffer while it waits) and later processed as the input of a pass one
 * level deeper.
 *
 * npart is chosen when a pass starts, so that the block buffers of its
 * writers and its input take about half of the working budget (4..32): a
 * deeper pass whose budget shrank with the block maps of the pending
 * partitions uses fewer. Any npart splits evenly, since every level maps a
 * fresh 32-bit mix of the hash onto [0, npart). The working budget never
 * goes below the least working set of a spilling pass, as in PostgreSQL:
 * four partition writers and the input's buffer, and a quarter of work_mem
 * for the groups; fewer partitions or a smaller table would multiply the
 * passes (each re-spills its data) for little memory.
 *
 * Invariants: every input row is aggregated in exactly one pass; a group
 * lives in exactly one pass (its rows all go to the same partition); a pass
 * spills only once it holds a group, so every pass makes progress and the
 * recursion ends.
 */
#include <stdlib.h>
#include <string.h>

#include "htable.h"
#include "ops.h"
#include "spillio.h"

#define AGG_MIN_PARTS 4
#define AGG_MAX_PARTS 32

typedef struct pending {
    spillfile *f;
    int level;
} pending;

typedef struct hagg {
    op base;
    op *child;
    aggdesc d;
    memacct m;
    htable ht;
    int npart; /* partitions of the current pass */
    /* current pass */
    int level;
    spillfile *input;
    bool spill_mode, spilled;
    spillfile **parts;
    pending *pend;
    int npend, cappend;
    /* emit state */
    bool emitting, done;
    htchunk *ec;
    htentry *ee;
    tbuild tb, kb;
} hagg;

static size_t states_size(const hagg *a)
{
    return sizeof(aggstate) * (size_t)a->d.naggs;
}

static const tup *entry_key(const hagg *a, htentry *e)
{
    return (const tup *)((uint8_t *)ht_payload(e) + states_size(a));
}

/* The partition of a row at this level: a fresh mix of the hash per level (splitmix64's
 * finaliser), its top 32 bits scaled onto [0, npart). */
static int part_of(const hagg *a, uint64_t hash)
{
    uint64_t x = hash + 0x9e3779b97f4a7c15ull * (uint64_t)(a->level + 1);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (int)(((x >> 32) * (uint64_t)a->npart) >> 32);
}

/* Block buffers of the files a spilling pass has open: its partitions and its input. */
static int64_t pass_buffers(const hagg *a)
{
    return (a->npart + (a->input != NULL)) * spill_writer_cost(a->base.q);
}

/* Partitions of a pass starting now: writers and input take about half of the budget. */
static void choose_npart(hagg *a)
{
    int64_t per = spill_writer_cost(a->base.q);
    int64_t n = mem_work_budget(&a->m) / (2 * per) - (a->input != NULL);
    a->npart = n < AGG_MIN_PARTS ? AGG_MIN_PARTS : n > AGG_MAX_PARTS ? AGG_MAX_PARTS : (int)n;
}

/* Would a new group overrun the working budget, the spill files' buffers reserved? */
static bool table_full(const hagg *a, size_t cost)
{
    return a->ht.bytes + (int64_t)cost + pass_buffers(a) > mem_work_budget(&a->m);
}

static const tup *next_input(hagg *a, uint64_t *hash)
{
    if (a->input)
        return spill_read(a->base.q, a->input, hash);
    const tup *t = a->child->next(a->child);
    if (t)
        *hash = keys_hash(t, a->d.nkeys, a->d.keys);
    return t;
}

static void start_spill(hagg *a)
{
    qctx *q = a->base.q;
    a->spill_mode = true;
    a->parts = q_calloc(q, (size_t)a->npart, sizeof *a->parts);
    for (int i = 0; i < a->npart; i++)
        a->parts[i] = spill_create(q, &a->m);
    if (!a->spilled) {
        a->spilled = true;
        q->st.agg_spilled++;
    }
    if (a->level + 1 > q->st.agg_max_depth)
        q->st.agg_max_depth = a->level + 1;
}

static aggstate *new_group(hagg *a, uint64_t hash, const tup *row)
{
    tb_begin(&a->kb, a->d.nkeys);
    for (int i = 0; i < a->d.nkeys; i++)
        tb_copy(&a->kb, row, a->d.keys[i]);
    const tup *k = tb_end(&a->kb);
    uint8_t *p = ht_insert(&a->ht, hash, states_size(a) + tup_len(k));
    memcpy(p + states_size(a), k, tup_len(k));
    agg_init((aggstate *)p, a->d.naggs);
    return (aggstate *)p;
}

static void consume(hagg *a)
{
    qctx *q = a->base.q;
    uint64_t h;
    const tup *row;
    while ((row = next_input(a, &h)) != NULL) {
        aggstate *st = NULL;
        for (htentry *e = ht_chain(&a->ht, h); e; e = e->next) {
            if (e->hash == h &&
                keys_equal(row, a->d.keys, entry_key(a, e), a->d.keyid, a->d.nkeys)) {
                st = ht_payload(e);
                break;
            }
        }
        if (!st && !a->spill_mode && a->ht.nentries > 0 &&
            table_full(a, ht_insert_cost(&a->ht, states_size(a) + tup_len(row))))
            start_spill(a);
        if (!st && a->spill_mode) {
            spill_write(q, a->parts[part_of(a, h)], h, row);
            continue;
        }
        if (!st)
            st = new_group(a, h, row);
        agg_advance(q, st, a->d.aggs, a->d.naggs, row);
    }
    if (a->d.nkeys == 0 && a->ht.nentries == 0)
        new_group(a, 0, row);
    if (a->input) {
        spill_close(a->input);
        a->input = NULL;
    }
    if (a->spill_mode) {
        for (int i = 0; i < a->npart; i++) {
            if (a->parts[i]->ntuples == 0) {
                spill_close(a->parts[i]);
                continue;
            }
            if (a->npend == a->cappend) {
                a->cappend = a->cappend ? a->cappend * 2 : 32;
                a->pend = q_realloc(q, a->pend, sizeof *a->pend * (size_t)a->cappend);
            }
            spill_park(q, a->parts[i]);
            spill_rewind(q, a->parts[i]);
            a->pend[a->npend++] = (pending){a->parts[i], a->level + 1};
        }
        free(a->parts);
        a->parts = NULL;
        a->spill_mode = false;
    }
    if (a->level == 0)
        a->m.grant = a->m.peak; /* the first pass is over: it read the whole input */
    a->emitting = true;
    a->ec = a->ht.chunks;
    a->ee = a->ec ? ht_chunk_first(a->ec) : NULL;
}

static const tup *hagg_next(op *self)
{
    hagg *a = (hagg *)self;
    for (;;) {
        if (a->done)
            return NULL;
        if (!a->emitting) {
            consume(a);
            continue;
        }
        while (a->ec && !a->ee) {
            a->ec = a->ec->next;
            a->ee = a->ec ? ht_chunk_first(a->ec) : NULL;
        }
        if (a->ee) {
            htentry *e = a->ee;
            a->ee = ht_chunk_next(a->ec, e);
            tb_begin(&a->tb, a->d.nkeys + a->d.naggs);
            tb_copy_range(&a->tb, entry_key(a, e), 0, a->d.nkeys);
            agg_emit(&a->tb, ht_payload(e), a->d.aggs, a->d.naggs);
            return tb_end(&a->tb);
        }
        ht_reset(&a->ht);
        a->emitting = false;
        if (a->npend == 0) {
            a->done = true;
            return NULL;
        }
        pending p = a->pend[--a->npend];
        a->input = p.f;
        a->level = p.level;
        choose_npart(a);
    }
}

static void hagg_close(op *self)
{
    hagg *a = (hagg *)self;
    spill_close(a->input);
    if (a->parts)
        for (int i = 0; i < a->npart; i++)
            spill_close(a->parts[i]);
    free(a->parts);
    for (int i = 0; i < a->npend; i++)
        spill_close(a->pend[i].f);
    free(a->pend);
    ht_reset(&a->ht);
    tb_free(&a->tb);
    tb_free(&a->kb);
}

op *op_hashagg(qctx *q, op *child, int nkeys, const int *keys, int naggs, const aggspec *aggs)
{
    aggdesc d;
    aggdesc_init(q, &d, "hash aggregate", nkeys, keys, naggs, aggs);
    hagg *a = op_new(q, sizeof *a, hagg_next, hagg_close, nkeys + naggs);
    a->child = child;
    a->d = d;
    mem_init(&a->m, q);
    ht_init(&a->ht, q, &a->m);
    a->m.min_work = (AGG_MIN_PARTS + 1) * spill_writer_cost(q) + q->work_mem / 4;
    choose_npart(a);
    tb_init(&a->tb);
    tb_init(&a->kb);
    return &a->base;
}
