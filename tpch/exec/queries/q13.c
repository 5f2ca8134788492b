/*
 * q13.c - TPC-H Q13, customer distribution: a left outer hash join keeps
 * customers without orders (count 0), a hash aggregate per customer (it
 * spills at SF 1), then a second aggregate on the counts.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool ord_pred(const tup *r, void *arg)
{
    (void)arg;
    return !s_contains2(r, 2, "special", "requests");
}

static op *plan(qctx *q)
{
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey,o_comment", ord_pred, NULL);
    op *cust = op_scan(q, TPCH_CUSTOMER, "c_custkey", NULL, NULL);
    op *j = hj1(q, cust, SELECT(q, ord, 1, 0), JOIN_LEFT, 0, 0); /* ck, o_ck, o_ok */
    op *per_cust = op_hashagg(q, j, COLS(0), AGGS({AGG_COUNT, 2}));
    op *dist = op_hashagg(q, per_cust, COLS(1), AGGS({AGG_COUNT_STAR, 0}));
    return op_sort(q, dist, SKEYS({1, SK_I64, true}, {0, SK_I64, true}), -1);
}

static const outcol cols[] = {{OC_INT, 0}, {OC_INT, 0}};
const qdef tpch_q13 = {13, plan, 2, cols};
