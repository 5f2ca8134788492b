/*
 * op_basic.c - the stateless operators: generate (rows from a callback),
 * filter, project and select. None holds memory beyond one output row.
 */
#include <stdlib.h>
#include <string.h>

#include "ops.h"

typedef struct genop {
    op base;
    gen_fn gen;
    void *arg;
    uint64_t i;
    tbuild tb;
} genop;

static const tup *gen_next(op *self)
{
    genop *g = (genop *)self;
    return g->gen(g->arg, g->i++, &g->tb);
}

static void gen_close(op *self)
{
    tb_free(&((genop *)self)->tb);
}

op *op_generate(qctx *q, int natts, gen_fn gen, void *arg)
{
    genop *g = op_new(q, sizeof *g, gen_next, gen_close, natts);
    g->gen = gen;
    g->arg = arg;
    tb_init(&g->tb);
    return &g->base;
}

typedef struct filterop {
    op base;
    op *child;
    pred_fn pred;
    void *arg;
} filterop;

static const tup *filter_next(op *self)
{
    filterop *f = (filterop *)self;
    const tup *t;
    while ((t = f->child->next(f->child)) != NULL)
        if (f->pred(t, f->arg))
            return t;
    return NULL;
}

static void nothing_to_close(op *self)
{
    (void)self;
}

op *op_filter(qctx *q, op *child, pred_fn pred, void *arg)
{
    filterop *f = op_new(q, sizeof *f, filter_next, nothing_to_close, child->natts);
    f->child = child;
    f->pred = pred;
    f->arg = arg;
    return &f->base;
}

typedef struct projop {
    op base;
    op *child;
    project_fn fn;
    void *arg;
    int ncols;
    int cols[TUP_MAX_ATTS];
    tbuild tb;
} projop;

static const tup *project_next(op *self)
{
    projop *p = (projop *)self;
    const tup *t = p->child->next(p->child);
    return t ? p->fn(t, &p->tb, p->arg) : NULL;
}

static void project_close(op *self)
{
    tb_free(&((projop *)self)->tb);
}

op *op_project(qctx *q, op *child, int natts, project_fn fn, void *arg)
{
    projop *p = op_new(q, sizeof *p, project_next, project_close, natts);
    p->child = child;
    p->fn = fn;
    p->arg = arg;
    tb_init(&p->tb);
    return &p->base;
}

static const tup *select_cols(const tup *row, tbuild *tb, void *arg)
{
    const projop *p = arg;
    tb_begin(tb, p->ncols);
    for (int i = 0; i < p->ncols; i++)
        tb_copy(tb, row, p->cols[i]);
    return tb_end(tb);
}

op *op_select(qctx *q, op *child, int ncols, const int *cols)
{
    if (ncols < 1 || ncols > TUP_MAX_ATTS)
        q_fail(q, "select: %d columns", ncols);
    projop *p = (projop *)op_project(q, child, ncols, select_cols, NULL);
    p->arg = p;
    p->ncols = ncols;
    memcpy(p->cols, cols, sizeof *cols * (size_t)ncols);
    return &p->base;
}
