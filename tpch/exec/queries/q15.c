/*
 * q15.c - TPC-H Q15, top supplier. The view revenue0 is a plan built
 * twice: once for the scalar max (run first), once joined to supplier and
 * filtered on total = max (exact integers, so equality is exact).
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi, top;

static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 3);
    return d >= lo && d < hi;
}

/* supplier_no, total_revenue */
static op *revenue0(qctx *q)
{
    op *li = op_scan(q, TPCH_LINEITEM, "l_suppkey,l_extendedprice,l_discount,l_shipdate",
                     li_pred, NULL);
    return op_hashagg(q, op_project(q, li, 2, key_revenue, NULL), COLS(0), AGGS({AGG_SUM, 1}));
}

static bool is_top(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 1) == top;
}

static op *plan(qctx *q)
{
    lo = date_days(1996, 1, 1);
    hi = date_days(1996, 4, 1);
    top = q_scalar(q, op_hashagg(q, revenue0(q), 0, NULL, AGGS({AGG_MAX, 1})), 0, NULL);
    op *supp = op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_name,s_address,s_phone", NULL, NULL);
    op *j = hj1(q, supp, op_filter(q, revenue0(q), is_top, NULL), JOIN_INNER, 0, 0);
    op *s = op_sort(q, j, SKEYS({0, SK_I64, false}), -1);
    return SELECT(q, s, 0, 1, 2, 3, 5);
}

static const outcol cols[] = {{OC_INT, 0}, {OC_STR, 0}, {OC_STR, 0}, {OC_STR, 0}, {OC_FIX, 4}};
const qdef tpch_q15 = {15, plan, 5, cols};
