/*
 * q06.c - TPC-H Q6, forecasting revenue change: a filtered scan and one sum.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

/* ep, disc, qty, shipdate */
static bool pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 3), disc = tup_i64(r, 1);
    return d >= lo && d < hi && disc >= 5 && disc <= 7 && tup_i64(r, 2) < 2400;
}

static const tup *amount(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 1);
    tb_i64(tb, tup_i64(r, 0) * tup_i64(r, 1));
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    lo = date_days(1994, 1, 1);
    hi = date_days(1995, 1, 1);
    op *li = op_scan(q, TPCH_LINEITEM, "l_extendedprice,l_discount,l_quantity,l_shipdate", pred,
                     NULL);
    return op_hashagg(q, op_project(q, li, 1, amount, NULL), 0, NULL, AGGS({AGG_SUM, 0}));
}

static const outcol cols[] = {{OC_FIX, 4}};
const qdef tpch_q6 = {6, plan, 1, cols};
