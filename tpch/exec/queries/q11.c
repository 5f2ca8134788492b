/*
 * q11.c - TPC-H Q11, important stock identification. The uncorrelated
 * scalar subquery (total German stock value) runs first; the HAVING test
 * value > total * 0.0001 is done exactly as value * 10000 > total.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool germany(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "GERMANY");
}

/* pk, sk, availqty, cost -> pk, value (hundredths) */
static const tup *value(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 2);
    tb_copy(tb, r, 0);
    tb_i64(tb, tup_i64(r, 3) * tup_i64(r, 2));
    return tb_end(tb);
}

static op *german_stock(qctx *q)
{
    op *sn = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_nationkey", NULL, NULL),
                 op_scan(q, TPCH_NATION, "n_nationkey,n_name", germany, NULL), JOIN_SEMI, 1, 0);
    op *ps = op_scan(q, TPCH_PARTSUPP, "ps_partkey,ps_suppkey,ps_availqty,ps_supplycost", NULL,
                     NULL);
    return op_project(q, hj1(q, ps, sn, JOIN_SEMI, 1, 0), 2, value, NULL);
}

static bool important(const tup *r, void *arg)
{
    return tup_i64(r, 1) * 10000 > *(const int64_t *)arg;
}

static int64_t total;

static op *plan(qctx *q)
{
    total = q_scalar(q, op_hashagg(q, german_stock(q), 0, NULL, AGGS({AGG_SUM, 1})), 0, NULL);
    op *a = op_hashagg(q, german_stock(q), COLS(0), AGGS({AGG_SUM, 1}));
    op *f = op_filter(q, a, important, &total);
    return op_sort(q, f, SKEYS({1, SK_I64, true}, {0, SK_I64, false}), -1);
}

static const outcol cols[] = {{OC_INT, 0}, {OC_FIX, 2}};
const qdef tpch_q11 = {11, plan, 2, cols};
