/*
 * q08.c - TPC-H Q8, national market share of BRAZIL in AMERICA for one
 * part type, by order year. The share divides two exact sums.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

static bool part_pred(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "ECONOMY ANODIZED STEEL");
}

static bool region_pred(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "AMERICA");
}

static bool ord_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 2);
    return d >= lo && d <= hi;
}

/* ok, pk, sk, ep, disc -> ok, pk, sk, volume */
static const tup *volume(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 4);
    tb_copy_range(tb, r, 0, 3);
    tb_i64(tb, disc_price(tup_i64(r, 3), tup_i64(r, 4)));
    return tb_end(tb);
}

/* row of j3 -> year, brazil volume, volume */
static const tup *shares(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    int64_t v = tup_i64(r, 3);
    tb_begin(tb, 3);
    tb_i64(tb, date_year(tup_i64(r, 6)));
    tb_i64(tb, s_eq(r, 10, "BRAZIL") ? v : 0);
    tb_i64(tb, v);
    return tb_end(tb);
}

static const tup *ratio(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 2);
    tb_copy(tb, r, 0);
    tb_f64(tb, (double)tup_i64(r, 1) / (double)tup_i64(r, 2));
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    lo = date_days(1995, 1, 1);
    hi = date_days(1996, 12, 31);
    op *part = op_scan(q, TPCH_PART, "p_partkey,p_type", part_pred, NULL);
    op *li = op_project(q,
                        op_scan(q, TPCH_LINEITEM,
                                "l_orderkey,l_partkey,l_suppkey,l_extendedprice,l_discount",
                                NULL, NULL),
                        4, volume, NULL);
    op *j1 = hj1(q, li, part, JOIN_SEMI, 1, 0); /* ok, pk, sk, vol */
    op *nr = hj1(q, op_scan(q, TPCH_NATION, "n_nationkey,n_regionkey", NULL, NULL),
                 op_scan(q, TPCH_REGION, "r_regionkey,r_name", region_pred, NULL), JOIN_SEMI, 1,
                 0);
    op *cust = hj1(q, op_scan(q, TPCH_CUSTOMER, "c_custkey,c_nationkey", NULL, NULL), nr,
                   JOIN_SEMI, 1, 0);
    op *ord = hj1(q, op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey,o_orderdate", ord_pred, NULL),
                  cust, JOIN_SEMI, 1, 0); /* ok, ck, od */
    op *j2 = hj1(q, j1, ord, JOIN_INNER, 0, 0); /* ok, pk, sk, vol, ok, ck, od(6) */
    op *sn = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_nationkey", NULL, NULL),
                 op_scan(q, TPCH_NATION, "n_nationkey,n_name", NULL, NULL), JOIN_INNER, 1, 0);
    op *j3 = hj1(q, j2, sn, JOIN_INNER, 2, 0); /* 0..6, sk, snk, nk, n_name(10) */
    op *a = op_hashagg(q, op_project(q, j3, 3, shares, NULL), COLS(0),
                       AGGS({AGG_SUM, 1}, {AGG_SUM, 2}));
    return op_sort(q, op_project(q, a, 2, ratio, NULL), SKEYS({0, SK_I64, false}), -1);
}

static const outcol cols[] = {{OC_INT, 0}, {OC_F64, 0}};
const qdef tpch_q8 = {8, plan, 2, cols};
