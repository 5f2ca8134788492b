/*
 * q16.c - TPC-H Q16, parts/supplier relationship. NOT IN becomes a hash
 * anti join (s_suppkey is never NULL); count(distinct) is a sort on
 * (group, suppkey) feeding a streaming aggregate, as in PostgreSQL - the
 * sort spills at SF 1.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool complaints(const tup *r, void *arg)
{
    (void)arg;
    return s_contains2(r, 1, "Customer", "Complaints");
}

/* pk, brand, type, size */
static bool part_pred(const tup *r, void *arg)
{
    (void)arg;
    static const int64_t sizes[] = {49, 14, 23, 45, 19, 3, 36, 9};
    int64_t size = tup_i64(r, 3);
    bool in = false;
    for (int i = 0; i < 8; i++)
        in |= size == sizes[i];
    return in && !s_eq(r, 1, "Brand#45") && !s_prefix(r, 2, "MEDIUM POLISHED");
}

static op *plan(qctx *q)
{
    op *bad = SELECT(q, op_scan(q, TPCH_SUPPLIER, "s_suppkey,s_comment", complaints, NULL), 0);
    op *part = op_scan(q, TPCH_PART, "p_partkey,p_brand,p_type,p_size", part_pred, NULL);
    op *ps = op_scan(q, TPCH_PARTSUPP, "ps_partkey,ps_suppkey", NULL, NULL);
    op *j = hj1(q, ps, part, JOIN_INNER, 0, 0); /* pk, sk, pk, brand, type, size */
    op *good = hj1(q, j, bad, JOIN_ANTI, 1, 0);
    op *rows = SELECT(q, good, 3, 4, 5, 1); /* brand, type, size, sk */
    op *s = op_sort(q, rows,
                    SKEYS({0, SK_STR, false}, {1, SK_STR, false}, {2, SK_I64, false},
                          {3, SK_I64, false}),
                    -1);
    op *g = op_groupagg(q, s, COLS(0, 1, 2), AGGS({AGG_COUNT_DISTINCT, 3}));
    return op_sort(q, g,
                   SKEYS({3, SK_I64, true}, {0, SK_STR, false}, {1, SK_STR, false},
                         {2, SK_I64, false}),
                   -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_STR, 0}, {OC_INT, 0}, {OC_INT, 0}};
const qdef tpch_q16 = {16, plan, 4, cols};
