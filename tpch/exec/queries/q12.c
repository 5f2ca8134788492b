/*
 * q12.c - TPC-H Q12, shipping modes and order priority. Orders is the
 * hashed side (as in PostgreSQL's plan), which spills at SF 1.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;
static const char *const modes[] = {"MAIL", "SHIP", NULL};

/* ok, mode, commit, receipt, ship */
static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t commit = tup_i64(r, 2), receipt = tup_i64(r, 3), ship = tup_i64(r, 4);
    return commit < receipt && ship < commit && receipt >= lo && receipt < hi &&
           s_in(r, 1, modes);
}

/* ok, mode, ok, priority -> mode, high, low */
static const tup *classify(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    bool high = s_eq(r, 3, "1-URGENT") || s_eq(r, 3, "2-HIGH");
    tb_begin(tb, 3);
    tb_copy(tb, r, 1);
    tb_i64(tb, high);
    tb_i64(tb, !high);
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    lo = date_days(1994, 1, 1);
    hi = date_days(1995, 1, 1);
    op *li = op_scan(q, TPCH_LINEITEM,
                     "l_orderkey,l_shipmode,l_commitdate,l_receiptdate,l_shipdate", li_pred, NULL);
    op *ord = op_scan(q, TPCH_ORDERS, "o_orderkey,o_orderpriority", NULL, NULL);
    op *j = hj1(q, SELECT(q, li, 0, 1), ord, JOIN_INNER, 0, 0);
    op *a = op_hashagg(q, op_project(q, j, 3, classify, NULL), COLS(0),
                       AGGS({AGG_SUM, 1}, {AGG_SUM, 2}));
    return op_sort(q, a, SKEYS({0, SK_STR, false}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_INT, 0}, {OC_INT, 0}};
const qdef tpch_q12 = {12, plan, 3, cols};
