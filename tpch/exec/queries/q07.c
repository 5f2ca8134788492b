/*
 * q07.c - TPC-H Q7, volume shipping between FRANCE and GERMANY by year.
 * Both nations are kept on each side; the pair condition reduces to
 * "supplier nation differs from customer nation".
 */
#include "qhelp.h"

#include <string.h>

#include "tpch_gen.h"

static int64_t lo, hi;
static const char *const pair[] = {"FRANCE", "GERMANY", NULL};

static bool nation_pred(const tup *r, void *arg)
{
    (void)arg;
    return s_in(r, 1, pair);
}

static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 4);
    return d >= lo && d <= hi;
}

/* ok, sk, ep, disc, shipdate -> ok, sk, year, volume */
static const tup *volume(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 4);
    tb_copy_range(tb, r, 0, 2);
    tb_i64(tb, date_year(tup_i64(r, 4)));
    tb_i64(tb, disc_price(tup_i64(r, 2), tup_i64(r, 3)));
    return tb_end(tb);
}

static bool cross(const tup *r, void *arg)
{
    (void)arg;
    uint32_t l1, l2;
    const char *a = tup_str(r, 7, &l1), *b = tup_str(r, 13, &l2);
    return l1 != l2 || memcmp(a, b, l1) != 0;
}

static op *nations(qctx *q)
{
    return op_scan(q, TPCH_NATION, "n_nationkey,n_name", nation_pred, NULL);
}

static op *plan(qctx *q)
{
    lo = date_days(1995, 1, 1);
    hi = date_days(1996, 12, 31);
    op *supp = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_nationkey", NULL, NULL), nations(q),
                   JOIN_INNER, 1, 0); /* sk, snk, nk, n1 */
    op *cust = hj1(q, op_scan(q, TPCH_CUSTOMER, "c_custkey,c_nationkey", NULL, NULL), nations(q),
                   JOIN_INNER, 1, 0); /* ck, cnk, nk, n2 */
    op *ord = hj1(q, op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey", NULL, NULL), cust,
                  JOIN_INNER, 1, 0); /* ok, ck, ck, cnk, nk, n2(5) */
    op *li = op_project(q,
                        op_scan(q, TPCH_LINEITEM,
                                "l_orderkey,l_suppkey,l_extendedprice,l_discount,l_shipdate",
                                li_pred, NULL),
                        4, volume, NULL);
    op *j1 = hj1(q, li, supp, JOIN_INNER, 1, 0); /* ok, sk, yr, vol, sk, snk, nk, n1(7) */
    op *j2 = hj1(q, j1, ord, JOIN_INNER, 0, 0);  /* 0..7, ok, ck, ck, cnk, nk, n2(13) */
    op *f = op_filter(q, j2, cross, NULL);
    op *a = op_hashagg(q, f, COLS(7, 13, 2), AGGS({AGG_SUM, 3}));
    return op_sort(q, a, SKEYS({0, SK_STR, false}, {1, SK_STR, false}, {2, SK_I64, false}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_STR, 0}, {OC_INT, 0}, {OC_FIX, 4}};
const qdef tpch_q7 = {7, plan, 4, cols};
