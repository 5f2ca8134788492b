/*
 * q17.c - TPC-H Q17, small-quantity-order revenue. The correlated average
 * is decorrelated: the candidate lineitems (of the chosen parts) are
 * aggregated per part (sum, count) and joined back; quantity < 0.2 * avg
 * is tested exactly as 5 * qty * count < sum.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool part_pred(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "Brand#23") && s_eq(r, 2, "MED BOX");
}

/* pk, qty, ep */
static op *candidates(qctx *q)
{
    op *part = SELECT(q, op_scan(q, TPCH_PART, "p_partkey,p_brand,p_container", part_pred, NULL),
                      0);
    op *li = op_scan(q, TPCH_LINEITEM, "l_partkey,l_quantity,l_extendedprice", NULL, NULL);
    return hj1(q, li, part, JOIN_SEMI, 0, 0);
}

/* pk, qty, ep, pk, sum qty, count */
static bool small(const tup *r, void *arg)
{
    (void)arg;
    return 5 * tup_i64(r, 1) * tup_i64(r, 5) < tup_i64(r, 4);
}

static const tup *yearly(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 1);
    if (tup_isnull(r, 0))
        tb_null(tb);
    else
        tb_f64(tb, (double)tup_i64(r, 0) / 100.0 / 7.0);
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    op *avg = op_hashagg(q, candidates(q), COLS(0), AGGS({AGG_SUM, 1}, {AGG_COUNT_STAR, 0}));
    op *j = hj1(q, candidates(q), avg, JOIN_INNER, 0, 0);
    op *a = op_hashagg(q, op_filter(q, j, small, NULL), 0, NULL, AGGS({AGG_SUM, 2}));
    return op_project(q, a, 1, yearly, NULL);
}

static const outcol cols[] = {{OC_F64, 0}};
const qdef tpch_q17 = {17, plan, 1, cols};
