/*
 * q03.c - TPC-H Q3, shipping priority: customers of a segment, their
 * orders before a date, lineitems shipped after it; revenue per order, top 10.
 * The orders side (hashed) is what outgrows work_mem at SF 1.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t cut;

static bool cust_pred(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "BUILDING");
}

static bool ord_pred(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 2) < cut;
}

static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 3) > cut;
}

static op *plan(qctx *q)
{
    cut = date_days(1995, 3, 15);
    op *cust = op_scan(q, TPCH_CUSTOMER, "c_custkey,c_mktsegment", cust_pred, NULL);
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_custkey,o_orderdate,o_shippriority",
                      ord_pred, NULL);
    op *oc = hj1(q, ord, cust, JOIN_SEMI, 1, 0); /* ok, ck, od, sp */
    op *li = op_scan(q, TPCH_LINEITEM, "l_orderkey,l_extendedprice,l_discount,l_shipdate",
                     li_pred, NULL);
    op *lr = op_project(q, li, 2, key_revenue, NULL);   /* ok, rev */
    op *j = hj1(q, lr, oc, JOIN_INNER, 0, 0);        /* ok, rev, ok, ck, od, sp */
    op *a = op_hashagg(q, j, COLS(0, 4, 5), AGGS({AGG_SUM, 1})); /* ok, od, sp, rev */
    op *top = op_sort(q, a, SKEYS({3, SK_I64, true}, {1, SK_I64, false}, {0, SK_I64, false}),
                      10);
    return SELECT(q, top, 0, 3, 1, 2);
}

static const outcol cols[] = {{OC_INT, 0}, {OC_FIX, 4}, {OC_DATE, 0}, {OC_INT, 0}};
const qdef tpch_q3 = {3, plan, 4, cols};
