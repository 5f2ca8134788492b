/*
 * q02.c - TPC-H Q2, minimum cost supplier. The correlated subquery (the
 * minimum supply cost of the part among European suppliers) is decorrelated
 * into a hash aggregate by part over the same candidate rows, joined back on
 * (partkey, supplycost).
 */
#include "qhelp.h"

#include "tpch_gen.h"

static bool region_europe(const tup *r, void *arg)
{
    (void)arg;
    return s_eq(r, 1, "EUROPE");
}

static bool part_pred(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 2) == 15 && s_suffix(r, 3, "BRASS");
}

/* Rows: 0 pk, 1 sk, 2 cost, 3 sk, 4 s_name, 5 s_address, 6 s_nationkey, 7 s_phone,
 * 8 s_acctbal, 9 s_comment, 10 n_nationkey, 11 n_name, 12 n_regionkey,
 * 13 p_partkey, 14 p_mfgr, 15 p_size, 16 p_type */
static op *candidates(qctx *q)
{
    op *nation = op_scan(q, TPCH_NATION, "n_nationkey,n_name,n_regionkey", NULL, NULL);
    op *region = op_scan(q, TPCH_REGION, "r_regionkey,r_name", region_europe, NULL);
    op *neu = hj1(q, nation, region, JOIN_SEMI, 2, 0);
    op *supp = op_scan(q, TPCH_SUPPLIER,
                       "s_suppkey,s_name,s_address,s_nationkey,s_phone,s_acctbal,s_comment",
                       NULL, NULL);
    op *seu = hj1(q, supp, neu, JOIN_INNER, 3, 0);
    op *ps = op_scan(q, TPCH_PARTSUPP, "ps_partkey,ps_suppkey,ps_supplycost", NULL, NULL);
    op *pseu = hj1(q, ps, seu, JOIN_INNER, 1, 0);
    op *part = op_scan(q, TPCH_PART, "p_partkey,p_mfgr,p_size,p_type", part_pred, NULL);
    return hj1(q, pseu, part, JOIN_INNER, 0, 0);
}

static op *plan(qctx *q)
{
    op *mins = op_hashagg(q, candidates(q), COLS(0), AGGS({AGG_MIN, 2}));
    op *best = hj2(q, candidates(q), mins, JOIN_SEMI, 0, 2, 0, 1);
    op *out = SELECT(q, best, 8, 4, 11, 0, 14, 5, 7, 9);
    return op_sort(q, out,
                   SKEYS({0, SK_I64, true}, {2, SK_STR, false}, {1, SK_STR, false},
                         {3, SK_I64, false}),
                   100);
}

static const outcol cols[] = {{OC_DEC2, 0}, {OC_STR, 0}, {OC_STR, 0}, {OC_INT, 0},
                              {OC_STR, 0},  {OC_STR, 0}, {OC_STR, 0}, {OC_STR, 0}};
const qdef tpch_q2 = {2, plan, 8, cols};
