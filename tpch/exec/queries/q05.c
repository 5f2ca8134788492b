/*
 * q05.c - TPC-H Q5, local supplier volume: revenue per Asian nation from
 * lineitems whose customer and supplier are of the same nation.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

static bool region_asia(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "ASIA");
}

static bool ord_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 2);
    return d >= lo && d < hi;
}

static const tup *revenue(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 3);
    tb_copy_range(tb, r, 0, 2);
    tb_i64(tb, disc_price(tup_i64(r, 2), tup_i64(r, 3)));
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    lo = date_days(1994, 1, 1);
    hi = date_days(1995, 1, 1);
    op *nr = hj1(q, op_scan(q, TPCH_NATION, "n_nationkey,n_name,n_regionkey", NULL, NULL),
                 op_scan(q, TPCH_REGION, "r_regionkey,r_name", region_asia, NULL), JOIN_SEMI,
                 2, 0); /* nk, n_name, rk */
    op *supp = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_nationkey", NULL, NULL), nr,
                   JOIN_INNER, 1, 0); /* sk, snk, nk, n_name, rk */
    op *nr2 = hj1(q, op_scan(q, TPCH_NATION, "n_nationkey,n_regionkey", NULL, NULL),
                  op_scan(q, TPCH_REGION, "r_regionkey,r_name", region_asia, NULL), JOIN_SEMI,
                  1, 0);
    op *cust = hj1(q, op_scan(q, TPCH_CUSTOMER, "c_custkey,c_nationkey", NULL, NULL), nr2,
                   JOIN_SEMI, 1, 0); /* ck, cnk */
    op *ord = hj1(q, op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey,o_orderdate", ord_pred, NULL),
                  cust, JOIN_INNER, 1, 0); /* ok, ck, od, ck, cnk */
    op *li = op_project(q,
                        op_scan(q, TPCH_LINEITEM,
                                "l_orderkey,l_suppkey,l_extendedprice,l_discount", NULL, NULL),
                        3, revenue, NULL); /* ok, sk, rev */
    op *j1 = hj1(q, li, ord, JOIN_INNER, 0, 0); /* ok, sk, rev, ok, ck, od, ck, cnk(7) */
    op *j2 = hj2(q, j1, supp, JOIN_INNER, 1, 7, 0, 1); /* ..., sk(8), snk, nk, n_name(11), rk */
    op *a = op_hashagg(q, j2, COLS(11), AGGS({AGG_SUM, 2}));
    return op_sort(q, a, SKEYS({1, SK_I64, true}, {0, SK_STR, false}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_FIX, 4}};
const qdef tpch_q5 = {5, plan, 2, cols};
