/*
 * q04.c - TPC-H Q4, order priority checking: EXISTS becomes a hash semi
 * join whose hashed side is the late lineitems (large: it spills at SF 1,
 * as PostgreSQL's plan does).
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

static bool ord_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 1);
    return d >= lo && d < hi;
}

static bool late(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 1) < tup_i64(r, 2);
}

static op *plan(qctx *q)
{
    lo = date_days(1993, 7, 1);
    hi = date_days(1993, 10, 1);
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_orderdate,o_orderpriority", ord_pred, NULL);
    op *li = op_scan(q, TPCH_LINEITEM, "l_orderkey,l_commitdate,l_receiptdate", late, NULL);
    op *semi = hj1(q, ord, SELECT(q, li, 0), JOIN_SEMI, 0, 0);
    op *a = op_hashagg(q, semi, COLS(2), AGGS({AGG_COUNT_STAR, 0}));
    return op_sort(q, a, SKEYS({0, SK_STR, false}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_INT, 0}};
const qdef tpch_q4 = {4, plan, 2, cols};
