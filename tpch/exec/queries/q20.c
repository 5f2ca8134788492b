/*
 * q20.c - TPC-H Q20, potential part promotion. The correlated sum of
 * shipped quantity is decorrelated into a hash aggregate by (partkey,
 * suppkey) over the 1994 lineitems of the "forest" partsupp rows, joined
 * to them; availqty > 0.5 * sum(qty) is tested exactly as
 * 200 * availqty > sum(qty in hundredths). A pair without lineitems gives
 * a NULL sum in SQL, so the inner join (which drops it) is exact.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static int64_t lo, hi;

static bool forest(const tup *r, void *arg)
{
    (void)arg;
    return s_prefix(r, 1, "forest");
}

static bool canada(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "CANADA");
}

static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t d = tup_i64(r, 3);
    return d >= lo && d < hi;
}

/* pk, sk, avail, sum qty */
static bool excess(const tup *r, void *arg)
{
    (void)arg;
    return 200 * tup_i64(r, 2) > tup_i64(r, 3);
}

static op *plan(qctx *q)
{
    lo = date_days(1994, 1, 1);
    hi = date_days(1995, 1, 1);
    op *pf = SELECT(q, op_scan(q, TPCH_PART, "p_partkey,p_name", forest, NULL), 0);
    op *psf = hj1(q, op_scan(q, TPCH_PARTSUPP, "ps_partkey,ps_suppkey,ps_availqty", NULL, NULL),
                  pf, JOIN_SEMI, 0, 0); /* pk, sk, avail */
    op *li = op_scan(q, TPCH_LINEITEM, "l_partkey,l_suppkey,l_quantity,l_shipdate", li_pred,
                     NULL);
    op *j = hj2(q, SELECT(q, li, 0, 1, 2), psf, JOIN_INNER, 0, 1, 0, 1);
    /* pk, sk, qty, pk, sk, avail(5) */
    op *a = op_hashagg(q, j, COLS(0, 1, 5), AGGS({AGG_SUM, 2}));
    op *keys = SELECT(q, op_filter(q, a, excess, NULL), 1);
    op *sn = hj1(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_name,s_address,s_nationkey", NULL, NULL),
                 op_scan(q, TPCH_NATION, "n_nationkey,n_name", canada, NULL), JOIN_SEMI, 3, 0);
    op *res = hj1(q, sn, keys, JOIN_SEMI, 0, 0);
    return SELECT(q, op_sort(q, res, SKEYS({1, SK_STR, false}, {0, SK_I64, false}), -1), 1, 2);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_STR, 0}};
const qdef tpch_q20 = {20, plan, 2, cols};
