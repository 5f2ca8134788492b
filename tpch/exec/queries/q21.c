/*
 * q21.c - TPC-H Q21, suppliers who kept orders waiting. EXISTS and NOT
 * EXISTS with the extra condition l2.l_suppkey <> l1.l_suppkey become hash
 * semi/anti joins on orderkey with a join qual; the hashed lineitem sides
 * are large and spill at SF 1.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool saudi(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "SAUDI ARABIA");
}

/* ok, sk, receipt, commit */
static bool late(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 2) > tup_i64(r, 3);
}

static bool finished(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "F");
}

/* outer: ok, sk, ...; inner: ok, sk */
static bool other_supplier(const tup *outer, const tup *inner, void *arg)
{
    (void)arg;
    return tup_i64(outer, 1) != tup_i64(inner, 1);
}

static op *late_lines(qctx *q)
{
    return SELECT(q,
                  op_scan(q, TPCH_LINEITEM, "l_orderkey,l_suppkey,l_receiptdate,l_commitdate",
                          late, NULL),
                  0, 1);
}

static op *plan(qctx *q)
{
    op *ss = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_name,s_nationkey", NULL, NULL),
                 op_scan(q, TPCH_NATION, "n_nationkey,n_name", saudi, NULL), JOIN_SEMI, 2, 0);
    op *j1 = hj1(q, late_lines(q), ss, JOIN_INNER, 1, 0); /* ok, sk, sk, name(3), nk */
    op *of = SELECT(q, op_scan(q, TPCH_ORDERS, "o_orderkey,o_orderstatus", finished, NULL), 0);
    op *j2 = hj1(q, j1, of, JOIN_SEMI, 0, 0);
    int k = 0;
    op *l2 = op_scan(q, TPCH_LINEITEM, "l_orderkey,l_suppkey", NULL, NULL);
    op *j3 = op_hashjoin(q, j2, l2, JOIN_SEMI, 1, &k, &k, other_supplier, NULL);
    op *j4 = op_hashjoin(q, j3, late_lines(q), JOIN_ANTI, 1, &k, &k, other_supplier, NULL);
    op *a = op_hashagg(q, j4, COLS(3), AGGS({AGG_COUNT_STAR, 0}));
    return op_sort(q, a, SKEYS({1, SK_I64, true}, {0, SK_STR, false}), 100);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_INT, 0}};
const qdef tpch_q21 = {21, plan, 2, cols};
