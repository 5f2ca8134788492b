/*
 * q19.c - TPC-H Q19, discounted revenue: a disjunction of three
 * brand/container/size/quantity groups. The conditions on one table alone
 * are pushed into its scan; the full disjunction is checked after the join.
 */
#include "qhelp.h"

#include "tpch_gen.h"

typedef struct branch {
    const char *brand;
    const char *const containers[5];
    int64_t qlo, size_max;
} branch;

static const branch branches[3] = {
    {"Brand#12", {"SM CASE", "SM BOX", "SM PACK", "SM PKG", NULL}, 1, 5},
    {"Brand#23", {"MED BAG", "MED BOX", "MED PKG", "MED PACK", NULL}, 10, 10},
    {"Brand#34", {"LG CASE", "LG BOX", "LG PACK", "LG PKG", NULL}, 20, 15},
};

static const char *const air[] = {"AIR", "AIR REG", NULL};

/* part row at offset `o`: pk, brand, container, size */
static bool part_in(const tup *r, int o, const branch *b)
{
    int64_t size = tup_i64(r, o + 3);
    return s_eq(r, o + 1, b->brand) && s_in(r, o + 2, b->containers) && size >= 1 &&
           size <= b->size_max;
}

static bool part_pred(const tup *r, void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        if (part_in(r, 0, &branches[i]))
            return true;
    return false;
}

/* pk, qty, ep, disc, instruct, mode */
static bool li_pred(const tup *r, void *arg)
{
    (void)arg;
    int64_t qty = tup_i64(r, 1);
    return qty >= 100 && qty <= 3000 && s_in(r, 5, air) && s_eq(r, 4, "DELIVER IN PERSON");
}

/* li (0..5) ++ part (6..9) */
static bool match(const tup *r, void *arg)
{
    (void)arg;
    int64_t qty = tup_i64(r, 1);
    for (int i = 0; i < 3; i++) {
        const branch *b = &branches[i];
        if (part_in(r, 6, b) && qty >= b->qlo * 100 && qty <= (b->qlo + 10) * 100)
            return true;
    }
    return false;
}

static const tup *revenue(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 1);
    tb_i64(tb, disc_price(tup_i64(r, 2), tup_i64(r, 3)));
    return tb_end(tb);
}

static op *plan(qctx *q)
{
    op *li = op_scan(q, TPCH_LINEITEM,
                     "l_partkey,l_quantity,l_extendedprice,l_discount,l_shipinstruct,l_shipmode",
                     li_pred, NULL);
    op *part = op_scan(q, TPCH_PART, "p_partkey,p_brand,p_container,p_size", part_pred, NULL);
    op *j = op_filter(q, hj1(q, li, part, JOIN_INNER, 0, 0), match, NULL);
    return op_hashagg(q, op_project(q, j, 1, revenue, NULL), 0, NULL, AGGS({AGG_SUM, 0}));
}

static const outcol cols[] = {{OC_FIX, 4}};
const qdef tpch_q19 = {19, plan, 1, cols};
