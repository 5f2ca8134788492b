/*
 * q14.c - TPC-H Q14, promotion effect: share of promotional revenue in one
 * month, from two exact sums.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 3);
    return d >= lo && d < hi;
}

/* pk, rev, pk, type -> promo rev, rev */
static const tup *promo(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    int64_t rev = tup_i64(r, 1);
    tb_begin(tb, 2);
    tb_i64(tb, s_prefix(r, 3, "PROMO") ? rev : 0);
    tb_i64(tb, rev);
    return tb_end(tb);
}

static const tup *percent(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 1);
    if (tup_isnull(r, 1) || tup_i64(r, 1) == 0)
        tb_null(tb);
    else
        tb_f64(tb, 100.0 * (double)tup_i64(r, 0) / (double)tup_i64(r, 1));
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    lo = date_days(1995, 9, 1);
    hi = date_days(1995, 10, 1);
    op *li = op_project(q,
                        op_scan(q, TPCH_LINEITEM,
                                "l_partkey,l_extendedprice,l_discount,l_shipdate", li_pred, NULL),
                        2, key_revenue, NULL);
    op *part = op_scan(q, TPCH_PART, "p_partkey,p_type", NULL, NULL);
    op *j = hj1(q, li, part, JOIN_INNER, 0, 0);
    op *a = op_hashagg(q, op_project(q, j, 2, promo, NULL), 0, NULL,
                       AGGS({AGG_SUM, 0}, {AGG_SUM, 1}));
    return op_project(q, a, 1, percent, NULL);
}

static const outcol cols[] = {{OC_F64, 0}};
const qdef tpch_q14 = {14, plan, 1, cols};
