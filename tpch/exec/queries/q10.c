/*
 * q10.c - TPC-H Q10, returned item reporting. As in PostgreSQL's plan the
 * wide customer rows are sorted on the customer key and grouped by a
 * streaming aggregate (the sort spills at SF 1), then a top-20.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

static bool ord_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 2);
    return d >= lo && d < hi;
}

static bool returned(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 3, "R");
}

static op *plan(qctx *q)
{
    lo = date_days(1993, 10, 1);
    hi = date_days(1994, 1, 1);
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey,o_orderdate", ord_pred, NULL);
    op *li = op_project(q,
                        op_scan(q, TPCH_LINEITEM,
                                "l_orderkey,l_extendedprice,l_discount,l_returnflag", returned,
                                NULL),
                        2, key_revenue, NULL);        /* ok, rev */
    op *j1 = hj1(q, li, ord, JOIN_INNER, 0, 0);   /* ok, rev, ok, ck, od */
    op *cn = hj1(q,
                 op_scan(q, TPCH_CUSTOMER,
                         "c_custkey,c_name,c_address,c_nationkey,c_phone,c_acctbal,c_comment",
                         NULL, NULL),
                 op_scan(q, TPCH_NATION, "n_nationkey,n_name", NULL, NULL), JOIN_INNER, 3, 0);
    /* ck, name, addr, cnk, phone, acct, comment, nk, n_name(8), ck, rev(10) */
    op *j2 = hj1(q, cn, SELECT(q, j1, 3, 1), JOIN_INNER, 0, 0);
    op *s = op_sort(q, j2, SKEYS({0, SK_I64, false}), -1);
    /* ck, name, acct, phone, n_name, addr, comment, revenue(7) */
    op *g = op_groupagg(q, s, COLS(0, 1, 5, 4, 8, 2, 6), AGGS({AGG_SUM, 10}));
    op *top = op_sort(q, g, SKEYS({7, SK_I64, true}, {0, SK_I64, false}), 20);
    return SELECT(q, top, 0, 1, 7, 2, 4, 5, 3, 6);
}

static const outcol cols[] = {{OC_INT, 0}, {OC_STR, 0}, {OC_FIX, 4}, {OC_DEC2, 0},
                              {OC_STR, 0}, {OC_STR, 0}, {OC_STR, 0}, {OC_STR, 0}};
const qdef tpch_q10 = {10, plan, 8, cols};
