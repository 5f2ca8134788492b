/*
 * q22.c - TPC-H Q22, global sales opportunity. The average balance is a
 * scalar subquery run first (exact: acctbal > sum/count is tested as
 * acctbal * count > sum); NOT EXISTS orders is a hash anti join whose
 * hashed side (all orders) spills at SF 1.
 */
#include "qhelp.h"

#include "tpch_gen.h"

static const char *const codes[] = {"13", "31", "23", "29", "30", "18", "17", NULL};
static int64_t avg_sum, avg_cnt;

static bool code_in(const tup *r, int col)
{
    uint32_t len;
    const char *p = tup_str(r, col, &len);
    if (len < 2)
        return false;
    for (const char *const *c = codes; *c; c++)
        if (p[0] == (*c)[0] && p[1] == (*c)[1])
            return true;
    return false;
}

/* phone, acctbal */
static bool positive(const tup *r, void *arg)
{
    (void)arg;
    return tup_i64(r, 1) > 0 && code_in(r, 0);
}

/* ck, phone, acctbal */
static bool rich(const tup *r, void *arg)
{
    (void)arg;
    return code_in(r, 1) && avg_cnt > 0 && tup_i64(r, 2) * avg_cnt > avg_sum;
}

static const tup *code(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    uint32_t len;
    const char *p = tup_str(r, 1, &len);
    tb_begin(tb, 2);
    tb_str(tb, p, 2);
    tb_copy(tb, r, 2);
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    int64_t v[2];
    op *sub = op_hashagg(q, op_scan(q, TPCH_CUSTOMER, "c_phone,c_acctbal", positive, NULL), 0,
                         NULL, AGGS({AGG_SUM, 1}, {AGG_COUNT_STAR, 0}));
    q_scalars(q, sub, COLS(0, 1), v);
    avg_sum = v[0];
    avg_cnt = v[1];
    op *cust = op_scan(q, TPCH_CUSTOMER, "c_custkey,c_phone,c_acctbal", rich, NULL);
    op *ord = op_scan(q, TPCH_ORDERS, "o_custkey", NULL, NULL);
    op *none = hj1(q, cust, ord, JOIN_ANTI, 0, 0);
    op *a = op_hashagg(q, op_project(q, none, 2, code, NULL), COLS(0),
                       AGGS({AGG_COUNT_STAR, 0}, {AGG_SUM, 1}));
    return op_sort(q, a, SKEYS({0, SK_STR, false}), -1);
}

static const outcol cols[] = {{OC_STR, 0}, {OC_INT, 0}, {OC_FIX, 2}};
const qdef tpch_q22 = {22, plan, 3, cols};
