/*
 * q09.c - TPC-H Q9, product type profit: green parts' lineitems joined to
 * partsupp (on partkey and suppkey), supplier nation and order year. The
 * hashed partsupp and orders sides outgrow work_mem at SF 1.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool green(const tup *r, void *arg)
{
    (void)arg;
    return s_contains(r, 1, "green");
}

/* j2 row -> ok, sk, amount (1e-4) */
static const tup *amount(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    int64_t qty = tup_i64(r, 3), ep = tup_i64(r, 4), disc = tup_i64(r, 5), cost = tup_i64(r, 8);
    tb_begin(tb, 3);
    tb_copy(tb, r, 0);
    tb_copy(tb, r, 2);
    tb_i64(tb, disc_price(ep, disc) - cost * qty);
    return tb_end(tb);
}

/* j4 row -> nation, year, amount */
static const tup *profit(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 3);
    tb_copy(tb, r, 6);
    tb_i64(tb, date_year(tup_i64(r, 8)));
    tb_copy(tb, r, 2);
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    op *part = SELECT(q, op_scan(q, TPCH_PART, "p_partkey,p_name", green, NULL), 0);
    op *li = op_scan(q, TPCH_LINEITEM,
                     "l_orderkey,l_partkey,l_suppkey,l_quantity,l_extendedprice,l_discount", NULL,
                     NULL);
    op *j1 = hj1(q, li, part, JOIN_SEMI, 1, 0);
    op *ps = op_scan(q, TPCH_PARTSUPP, "ps_partkey,ps_suppkey,ps_supplycost", NULL, NULL);
    op *j2 = hj2(q, j1, ps, JOIN_INNER, 1, 2, 0, 1); /* ok, pk, sk, qty, ep, disc, pk, sk, cost */
    op *p = op_project(q, j2, 3, amount, NULL);
    op *sn = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_nationkey", NULL, NULL),
                 op_scan(q, TPCH_NATION, "n_nationkey,n_name", NULL, NULL), JOIN_INNER, 1, 0);
    op *j3 = hj1(q, p, sn, JOIN_INNER, 1, 0); /* ok, sk, amt, sk, snk, nk, n_name(6) */
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_orderdate", NULL, NULL);
    op *j4 = hj1(q, j3, ord, JOIN_INNER, 0, 0); /* 0..6, ok, od(8) */
    op *a = op_hashagg(q, op_project(q, j4, 3, profit, NULL), COLS(0, 1), AGGS({AGG_SUM, 2}));
    return op_sort(q, a, SKEYS({0, SK_STR, false}, {1, SK_I64, true}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_INT, 0}, {OC_FIX, 4}};
const qdef tpch_q9 = {9, plan, 3, cols};
