/*
 * q01.c - TPC-H Q1, pricing summary report: one scan of lineitem, a hash
 * aggregate on (returnflag, linestatus), a sort. Sums are exact fixed
 * point; averages divide the exact sums.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t ship_max;

static bool pred(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 6) <= ship_max;
}

/* in: rf, ls, qty, ep, disc, tax, shipdate -> rf, ls, qty, ep, disc_price(1e-4), charge(1e-6), disc */
static const tup *prices(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    int64_t ep = tup_i64(r, 3), disc = tup_i64(r, 4), tax = tup_i64(r, 5);
    tb_begin(tb, 7);
    tb_copy_range(tb, r, 0, 4);
    tb_i64(tb, disc_price(ep, disc));
    tb_i64(tb, disc_price(ep, disc) * (100 + tax));
    tb_i64(tb, disc);
    return tb_end(tb);
}

/* in: rf, ls, sum qty, sum ep, sum dp, sum charge, sum disc, count */
static const tup *finish(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    double n = (double)tup_i64(r, 7);
    tb_begin(tb, 10);
    tb_copy_range(tb, r, 0, 6);
    tb_f64(tb, (double)tup_i64(r, 2) / 100.0 / n);
    tb_f64(tb, (double)tup_i64(r, 3) / 100.0 / n);
    tb_f64(tb, (double)tup_i64(r, 6) / 100.0 / n);
    tb_copy(tb, r, 7);
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    ship_max = date_days(1998, 12, 1) - 90;
    op *li = op_scan(q, TPCH_LINEITEM,
                     "l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,"
                     "l_shipdate",
                     pred, NULL);
    op *p = op_project(q, li, 7, prices, NULL);
    op *a = op_hashagg(q, p, COLS(0, 1),
                       AGGS({AGG_SUM, 2}, {AGG_SUM, 3}, {AGG_SUM, 4}, {AGG_SUM, 5}, {AGG_SUM, 6},
                            {AGG_COUNT_STAR, 0}));
    op *f = op_project(q, a, 10, finish, NULL);
    return op_sort(q, f, SKEYS({0, SK_STR, false}, {1, SK_STR, false}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_STR, 0}, {OC_FIX, 2}, {OC_FIX, 2}, {OC_FIX, 4},
                              {OC_FIX, 6}, {OC_F64, 0}, {OC_F64, 0}, {OC_F64, 0}, {OC_INT, 0}};
const qdef tpch_q1 = {1, plan, 10, cols};
