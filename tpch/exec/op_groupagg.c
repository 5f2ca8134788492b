/*
 * op_groupagg.c - aggregation of input sorted on the group keys: one group
 * at a time, so it holds only the current group's key row and states and
 * never spills. It pairs with op_sort the way PostgreSQL's GroupAggregate
 * pairs with Sort.
 */
#include <stdlib.h>
#include <string.h>

#include "ops.h"

typedef struct gagg {
    op base;
    op *child;
    aggdesc d;
    aggstate st[AGG_MAX_AGGS];
    tbuild cur; /* key row of the current group */
    tbuild out;
    bool started, done;
} gagg;

static void start_group(gagg *g, const tup *row)
{
    tb_begin(&g->cur, g->d.nkeys);
    for (int i = 0; i < g->d.nkeys; i++)
        tb_copy(&g->cur, row, g->d.keys[i]);
    tb_end(&g->cur);
    agg_init(g->st, g->d.naggs);
    agg_advance(g->base.q, g->st, g->d.aggs, g->d.naggs, row);
}

static const tup *emit(gagg *g)
{
    const tup *k = (const tup *)g->cur.buf;
    tb_begin(&g->out, g->d.nkeys + g->d.naggs);
    tb_copy_range(&g->out, k, 0, g->d.nkeys);
    agg_emit(&g->out, g->st, g->d.aggs, g->d.naggs);
    return tb_end(&g->out);
}

static const tup *gagg_next(op *self)
{
    gagg *g = (gagg *)self;
    if (g->done)
        return NULL;
    if (!g->started) {
        g->started = true;
        const tup *first = g->child->next(g->child);
        if (!first) {
            g->done = true;
            if (g->d.nkeys > 0)
                return NULL;
            agg_init(g->st, g->d.naggs);
            tb_begin(&g->cur, 0);
            tb_end(&g->cur);
            return emit(g);
        }
        start_group(g, first);
    }
    const tup *row;
    while ((row = g->child->next(g->child)) != NULL) {
        const tup *k = (const tup *)g->cur.buf;
        if (keys_equal(row, g->d.keys, k, g->d.keyid, g->d.nkeys)) {
            agg_advance(g->base.q, g->st, g->d.aggs, g->d.naggs, row);
            continue;
        }
        const tup *r = emit(g);
        start_group(g, row);
        return r;
    }
    g->done = true;
    return emit(g);
}

static void gagg_close(op *self)
{
    gagg *g = (gagg *)self;
    tb_free(&g->cur);
    tb_free(&g->out);
}

op *op_groupagg(qctx *q, op *child, int nkeys, const int *keys, int naggs, const aggspec *aggs)
{
    aggdesc d;
    aggdesc_init(q, &d, "group aggregate", nkeys, keys, naggs, aggs);
    gagg *g = op_new(q, sizeof *g, gagg_next, gagg_close, nkeys + naggs);
    g->child = child;
    g->d = d;
    tb_init(&g->cur);
    tb_init(&g->out);
    return &g->base;
}
