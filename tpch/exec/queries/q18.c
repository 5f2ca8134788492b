/*
 * q18.c - TPC-H Q18, large volume customer. The IN subquery is a hash
 * aggregate of all lineitems by order (the big spill at SF 1: 1.5 M
 * groups) with HAVING, used as the hashed side of a semi join.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool large(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 1) > 30000;
}

static op *plan(qctx *q)
{
    op *sums = op_hashagg(q, op_scan(q, TPCH_LINEITEM, "l_orderkey,l_quantity", NULL, NULL),
                          COLS(0), AGGS({AGG_SUM, 1}));
    op *big = SELECT(q, op_filter(q, sums, large, NULL), 0);
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey,o_orderdate,o_totalprice", NULL,
                      NULL);
    op *obig = hj1(q, ord, big, JOIN_SEMI, 0, 0); /* ok, ck, od, tp */
    op *oc = hj1(q, obig, op_scan(q, TPCH_CUSTOMER, "c_custkey,c_name", NULL, NULL), JOIN_INNER,
                 1, 0); /* ok, ck, od, tp, ck, name */
    op *li = op_scan(q, TPCH_LINEITEM, "l_orderkey,l_quantity", NULL, NULL);
    op *j = hj1(q, li, oc, JOIN_INNER, 0, 0); /* ok, qty, ok, ck, od, tp, ck, name(7) */
    op *a = op_hashagg(q, j, COLS(7, 3, 0, 4, 5), AGGS({AGG_SUM, 1}));
    return op_sort(q, a, SKEYS({4, SK_I64, true}, {3, SK_I64, false}, {2, SK_I64, false}), 100);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_INT, 0},  {OC_INT, 0},
                              {OC_DATE, 0}, {OC_DEC2, 0}, {OC_FIX, 2}};
const qdef tpch_q18 = {18, plan, 6, cols};
