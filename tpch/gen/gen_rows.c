/* The per-column rules of TPC-H clause 4.2.3 as summarised in
 * shared/tpch/facts.md. Each column draws from its own stream, at most
 * TPCH_DRAWS_PER_ROW draws per row, at positions fixed by the row number:
 * a row's values never depend on any other row. Lineitem streams are
 * indexed by order*8 + line so lines follow their order's index. */
#include "gen_rows.h"

#include <string.h>

#include "gen_text.h"

#define BBB_BLOCK 2000 /* one Complaints and one Recommends row per 2000 suppliers */

typedef struct {
    const tpch_ctx *c;
    tpch_table_id t;
    uint64_t r;
    tpch_row *row;
} rowgen;

static uint64_t draw(const rowgen *g, int col, unsigned k)
{
    return tpch_ctx_draw(g->c, g->t, col, g->r, k);
}

static int64_t uniform(const rowgen *g, int col, unsigned k, int64_t lo, int64_t hi)
{
    return tpch_bounded(draw(g, col, k), lo, hi);
}

static char *scratch(tpch_row *row, size_t n)
{
    char *p = row->scratch + row->used;
    row->used += n;
    return p;
}

static void set_str(tpch_row *row, int col, const char *s, size_t n)
{
    row->s[col] = s;
    row->len[col] = (uint32_t)n;
}

static void set_entry(tpch_row *row, int col, const tpch_list *l, int i)
{
    set_str(row, col, l->word[i], l->len[i]);
}

static const tpch_list *list(const rowgen *g, tpch_list_id id)
{
    return &g->c->lists.list[id];
}

static void set_pick(const rowgen *g, int col, tpch_list_id id)
{
    const tpch_list *l = list(g, id);
    set_entry(g->row, col, l, tpch_list_pick(l, draw(g, col, 0)));
}

/* Writes v as exactly n decimal digits (zero-padded). */
static void put_digits(char *out, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        out[i] = (char)('0' + v % 10);
}

/* "Supplier#000000042" and the like. */
static void set_numbered(tpch_row *row, int col, const char *prefix, uint64_t key)
{
    size_t n = strlen(prefix);
    char *p = scratch(row, n + 9);
    memcpy(p, prefix, n);
    put_digits(p + n, key, 9);
    set_str(row, col, p, n + 9);
}

/* Comment: a random-length, random-offset substring of the text pool. */
static void set_text(const rowgen *g, int col, int64_t lo, int64_t hi)
{
    int64_t len = uniform(g, col, 0, lo, hi);
    int64_t off = uniform(g, col, 1, 0, (int64_t)TPCH_POOL_BYTES - len);
    const char *text = g->c->pool + off;
    /* the pool is far larger than the caches: start loading the text now,
     * it is copied out only after the rest of the batch is generated */
    __builtin_prefetch(text);
    __builtin_prefetch(text + len - 1);
    set_str(g->row, col, text, (size_t)len);
}

/* Random characters of a 64-symbol alphabet, 10 per 64-bit draw. */
static void set_vstring(const rowgen *g, int col, int64_t lo, int64_t hi)
{
    static const char alphabet[64] =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,";
    int64_t len = uniform(g, col, 0, lo, hi);
    char *p = scratch(g->row, (size_t)len);
    uint64_t bits = 0;
    for (int64_t i = 0; i < len; i++) {
        if (i % 10 == 0)
            bits = draw(g, col, 1 + (unsigned)(i / 10));
        p[i] = alphabet[bits & 63];
        bits >>= 6;
    }
    set_str(g->row, col, p, (size_t)len);
}

/* "CC-LLL-LLL-LLLL" with CC = nationkey + 10. */
static void set_phone(const rowgen *g, int col, int64_t nation)
{
    char *p = scratch(g->row, 15);
    put_digits(p, (uint64_t)nation + 10, 2);
    p[2] = '-';
    put_digits(p + 3, (uint64_t)uniform(g, col, 0, 100, 999), 3);
    p[6] = '-';
    put_digits(p + 7, (uint64_t)uniform(g, col, 1, 100, 999), 3);
    p[10] = '-';
    put_digits(p + 11, (uint64_t)uniform(g, col, 2, 1000, 9999), 4);
    set_str(g->row, col, p, 15);
}

static void gen_part(const rowgen *g)
{
    tpch_row *row = g->row;
    int64_t key = (int64_t)g->r + 1;
    row->v[COL_P_PARTKEY] = key;

    /* five distinct colours: a partial Fisher-Yates shuffle, 5 draws */
    const tpch_list *colors = list(g, TPCH_L_COLORS);
    uint8_t idx[TPCH_LIST_MAX];
    for (int i = 0; i < colors->n; i++)
        idx[i] = (uint8_t)i;
    char *name = row->scratch + row->used;
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        int j = (int)uniform(g, COL_P_NAME, (unsigned)i, i, colors->n - 1);
        uint8_t pick = idx[j];
        idx[j] = idx[i];
        idx[i] = pick;
        if (i > 0)
            name[n++] = ' ';
        memcpy(name + n, colors->word[pick], colors->len[pick]);
        n += colors->len[pick];
    }
    row->used += n;
    set_str(row, COL_P_NAME, name, n);

    int64_t m = uniform(g, COL_P_MFGR, 0, 1, 5);
    char *mfgr = scratch(row, 14);
    memcpy(mfgr, "Manufacturer#", 13);
    mfgr[13] = (char)('0' + m);
    set_str(row, COL_P_MFGR, mfgr, 14);
    char *brand = scratch(row, 8);
    memcpy(brand, "Brand#", 6);
    brand[6] = (char)('0' + m);
    brand[7] = (char)('0' + uniform(g, COL_P_BRAND, 0, 1, 5));
    set_str(row, COL_P_BRAND, brand, 8);

    set_pick(g, COL_P_TYPE, TPCH_L_TYPES);
    row->v[COL_P_SIZE] = uniform(g, COL_P_SIZE, 0, 1, 50);
    set_pick(g, COL_P_CONTAINER, TPCH_L_CONTAINERS);
    row->v[COL_P_RETAILPRICE] = tpch_retailprice(key);
    set_text(g, COL_P_COMMENT, 5, 22);
}

/* About 5 suppliers per 10,000 get "Customer ... Complaints" and as many
 * "Customer ... Recommends" written over their comment: exactly one of each
 * per full block of BBB_BLOCK rows, at block positions from a block stream. */
static void apply_bbb(const rowgen *g)
{
    uint64_t block = g->r / BBB_BLOCK, pos = g->r % BBB_BLOCK;
    uint64_t bseed = g->c->seed[TPCH_SUPPLIER][TPCH_STREAM_BBB];
    uint64_t complaint = (uint64_t)tpch_bounded(tpch_draw(bseed, 2 * block), 0, BBB_BLOCK - 1);
    uint64_t recommend = (uint64_t)tpch_bounded(tpch_draw(bseed, 2 * block + 1), 0, BBB_BLOCK - 2);
    if (recommend >= complaint)
        recommend++;
    if (pos != complaint && pos != recommend)
        return;
    const char *word = pos == complaint ? "Complaints" : "Recommends";
    tpch_row *row = g->row;
    size_t len = row->len[COL_S_COMMENT];
    char *p = scratch(row, len);
    memcpy(p, row->s[COL_S_COMMENT], len);
    int64_t room = (int64_t)len - 19; /* "Customer " + "Complaints" */
    int64_t gap = uniform(g, COL_S_COMMENT, 2, 0, room);
    int64_t at = uniform(g, COL_S_COMMENT, 3, 0, room - gap);
    memcpy(p + at, "Customer ", 9);
    memcpy(p + at + 9 + gap, word, 10);
    set_str(row, COL_S_COMMENT, p, len);
}

static void gen_supplier(const rowgen *g)
{
    tpch_row *row = g->row;
    row->v[COL_S_SUPPKEY] = (int64_t)g->r + 1;
    set_numbered(row, COL_S_NAME, "Supplier#", g->r + 1);
    set_vstring(g, COL_S_ADDRESS, 10, 40);
    int64_t nation = uniform(g, COL_S_NATIONKEY, 0, 0, 24);
    row->v[COL_S_NATIONKEY] = nation;
    set_phone(g, COL_S_PHONE, nation);
    row->v[COL_S_ACCTBAL] = uniform(g, COL_S_ACCTBAL, 0, -99999, 999999);
    set_text(g, COL_S_COMMENT, 25, 100);
    apply_bbb(g);
}

static void gen_partsupp(const rowgen *g)
{
    tpch_row *row = g->row;
    int64_t p = (int64_t)(g->r / 4) + 1;
    row->v[COL_PS_PARTKEY] = p;
    row->v[COL_PS_SUPPKEY] =
        tpch_partsupp_suppkey(p, (int64_t)(g->r % 4), (int64_t)g->c->n.supplier);
    row->v[COL_PS_AVAILQTY] = uniform(g, COL_PS_AVAILQTY, 0, 1, 9999);
    row->v[COL_PS_SUPPLYCOST] = uniform(g, COL_PS_SUPPLYCOST, 0, 100, 100000);
    set_text(g, COL_PS_COMMENT, 49, 198);
}

static void gen_customer(const rowgen *g)
{
    tpch_row *row = g->row;
    row->v[COL_C_CUSTKEY] = (int64_t)g->r + 1;
    set_numbered(row, COL_C_NAME, "Customer#", g->r + 1);
    set_vstring(g, COL_C_ADDRESS, 10, 40);
    int64_t nation = uniform(g, COL_C_NATIONKEY, 0, 0, 24);
    row->v[COL_C_NATIONKEY] = nation;
    set_phone(g, COL_C_PHONE, nation);
    row->v[COL_C_ACCTBAL] = uniform(g, COL_C_ACCTBAL, 0, -99999, 999999);
    set_pick(g, COL_C_MKTSEGMENT, TPCH_L_SEGMENTS);
    set_text(g, COL_C_COMMENT, 29, 116);
}

static void gen_nation(const rowgen *g)
{
    const tpch_list *nations = list(g, TPCH_L_NATIONS);
    g->row->v[COL_N_NATIONKEY] = (int64_t)g->r;
    set_entry(g->row, COL_N_NAME, nations, (int)g->r);
    g->row->v[COL_N_REGIONKEY] = nations->weight[g->r];
    set_text(g, COL_N_COMMENT, 31, 114);
}

static void gen_region(const rowgen *g)
{
    g->row->v[COL_R_REGIONKEY] = (int64_t)g->r;
    set_entry(g->row, COL_R_NAME, list(g, TPCH_L_REGIONS), (int)g->r);
    set_text(g, COL_R_COMMENT, 31, 115);
}

void tpch_row_gen(const tpch_ctx *c, tpch_table_id t, uint64_t r, tpch_row *row)
{
    rowgen g = {c, t, r, row};
    row->used = 0;
    switch (t) {
    case TPCH_PART: gen_part(&g); break;
    case TPCH_SUPPLIER: gen_supplier(&g); break;
    case TPCH_PARTSUPP: gen_partsupp(&g); break;
    case TPCH_CUSTOMER: gen_customer(&g); break;
    case TPCH_NATION: gen_nation(&g); break;
    case TPCH_REGION: gen_region(&g); break;
    default: break;
    }
}

int tpch_order_nlines(const tpch_ctx *c, uint64_t k)
{
    return (int)tpch_bounded(tpch_ctx_draw(c, TPCH_ORDERS, TPCH_STREAM_LINECOUNT, k, 0), 1,
                             TPCH_MAX_LINES);
}

/* Line j of an order with key `okey` placed on `odate`; returns its
 * contribution to the order's total price (cents, truncated per step). */
static int64_t gen_line(const rowgen *g, int64_t okey, int32_t odate, int j)
{
    const tpch_ctx *c = g->c;
    tpch_row *row = g->row;
    row->used = 0;
    row->v[COL_L_ORDERKEY] = okey;
    int64_t part = uniform(g, COL_L_PARTKEY, 0, 1, (int64_t)c->n.part);
    row->v[COL_L_PARTKEY] = part;
    row->v[COL_L_SUPPKEY] = tpch_partsupp_suppkey(part, uniform(g, COL_L_SUPPKEY, 0, 0, 3),
                                                  (int64_t)c->n.supplier);
    row->v[COL_L_LINENUMBER] = j + 1;
    int64_t qty = uniform(g, COL_L_QUANTITY, 0, 1, 50);
    int64_t price = qty * tpch_retailprice(part);
    int64_t disc = uniform(g, COL_L_DISCOUNT, 0, 0, 10);
    int64_t tax = uniform(g, COL_L_TAX, 0, 0, 8);
    row->v[COL_L_QUANTITY] = qty * 100;
    row->v[COL_L_EXTENDEDPRICE] = price;
    row->v[COL_L_DISCOUNT] = disc;
    row->v[COL_L_TAX] = tax;
    int32_t ship = odate + (int32_t)uniform(g, COL_L_SHIPDATE, 0, 1, 121);
    int32_t receipt = ship + (int32_t)uniform(g, COL_L_RECEIPTDATE, 0, 1, 30);
    row->v[COL_L_SHIPDATE] = ship;
    row->v[COL_L_COMMITDATE] = odate + uniform(g, COL_L_COMMITDATE, 0, 30, 90);
    row->v[COL_L_RECEIPTDATE] = receipt;
    if (receipt <= c->current_date)
        set_pick(g, COL_L_RETURNFLAG, TPCH_L_RETURNFLAGS);
    else
        set_str(row, COL_L_RETURNFLAG, "N", 1);
    set_str(row, COL_L_LINESTATUS, ship > c->current_date ? "O" : "F", 1);
    set_pick(g, COL_L_SHIPINSTRUCT, TPCH_L_INSTRUCTIONS);
    set_pick(g, COL_L_SHIPMODE, TPCH_L_SHIPMODES);
    set_text(g, COL_L_COMMENT, 10, 43);
    return price * (100 + tax) / 100 * (100 - disc) / 100;
}

void tpch_order_gen(const tpch_ctx *c, uint64_t k, tpch_order_rows *o)
{
    tpch_row *row = &o->order;
    rowgen g = {c, TPCH_ORDERS, k, row};
    row->used = 0;
    int64_t okey = tpch_orderkey(k);
    row->v[COL_O_ORDERKEY] = okey;
    /* a third of the customers (keys divisible by 3) never order */
    int64_t ncust = (int64_t)c->n.customer;
    int64_t cust = uniform(&g, COL_O_CUSTKEY, 0, 1, ncust);
    if (cust % 3 == 0)
        cust = cust < ncust ? cust + 1 : cust - 1;
    row->v[COL_O_CUSTKEY] = cust;
    int32_t odate = (int32_t)uniform(&g, COL_O_ORDERDATE, 0, c->start_date, c->end_date - 151);
    row->v[COL_O_ORDERDATE] = odate;
    set_pick(&g, COL_O_ORDERPRIORITY, TPCH_L_PRIORITIES);
    set_numbered(row, COL_O_CLERK, "Clerk#",
                 (uint64_t)uniform(&g, COL_O_CLERK, 0, 1, (int64_t)c->n.clerks));
    row->v[COL_O_SHIPPRIORITY] = 0;
    set_text(&g, COL_O_COMMENT, 19, 78);

    o->nlines = tpch_order_nlines(c, k);
    int64_t total = 0;
    int nf = 0;
    for (int j = 0; j < o->nlines; j++) {
        rowgen lg = {c, TPCH_LINEITEM, k * 8 + (uint64_t)j, &o->line[j]};
        total += gen_line(&lg, okey, odate, j);
        nf += o->line[j].s[COL_L_LINESTATUS][0] == 'F';
    }
    row->v[COL_O_TOTALPRICE] = total;
    set_str(row, COL_O_ORDERSTATUS, nf == o->nlines ? "F" : nf == 0 ? "O" : "P", 1);
}
