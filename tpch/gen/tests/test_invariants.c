/* Generates SF 0.01 and SF 0.1 as .tbl and checks every table against the
 * column rules of facts.md: row counts, keys, value ranges, formulas, list
 * membership, lineitem/orders consistency (totalprice, orderstatus) and the
 * customers-without-orders share. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dates.h"
#include "gen_lists.h"
#include "gen_schema.h"
#include "test_util.h"
#include "tpch_gen.h"

static tpch_lists L;
static tpch_counts N;
static int32_t START, END, CURRENT;

static int64_t get_int(const test_tbl *t, size_t r, int c)
{
    int64_t v = 0;
    CHECK(test_parse_int(test_field(t, r, c), &v) == 0, "row %zu col %d: bad integer '%s'", r, c,
          test_field(t, r, c));
    return v;
}

static int64_t get_money(const test_tbl *t, size_t r, int c)
{
    int64_t v = 0;
    CHECK(test_parse_money(test_field(t, r, c), &v) == 0, "row %zu col %d: bad decimal '%s'", r,
          c, test_field(t, r, c));
    return v;
}

static int32_t get_date(const test_tbl *t, size_t r, int c)
{
    int32_t v = 0;
    CHECK(test_parse_date(test_field(t, r, c), &v) == 0, "row %zu col %d: bad date '%s'", r, c,
          test_field(t, r, c));
    return v;
}

static int list_find(tpch_list_id id, const char *s)
{
    const tpch_list *l = &L.list[id];
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->word[i], s) == 0)
            return i;
    return -1;
}

static void check_len(const test_tbl *t, size_t r, int c, size_t lo, size_t hi)
{
    size_t n = strlen(test_field(t, r, c));
    CHECK(n >= lo && n <= hi, "row %zu col %d: length %zu not in [%zu,%zu]", r, c, n, lo, hi);
}

static void check_range(int64_t v, int64_t lo, int64_t hi, const char *what, size_t r)
{
    CHECK(v >= lo && v <= hi, "%s row %zu: %lld not in [%lld,%lld]", what, r, (long long)v,
          (long long)lo, (long long)hi);
}

static void check_numbered(const char *s, const char *prefix, int64_t expect)
{
    size_t n = strlen(prefix);
    char want[32];
    snprintf(want, sizeof want, "%s%09lld", prefix, (long long)expect);
    CHECK(strncmp(s, prefix, n) == 0 && strlen(s) == n + 9 &&
              (expect < 0 || strcmp(s, want) == 0),
          "'%s' is not %s + 9 digits", s, prefix);
}

static void check_vstring(const char *s, size_t lo, size_t hi)
{
    size_t n = strlen(s);
    CHECK(n >= lo && n <= hi, "v-string '%s' length", s);
    CHECK(strspn(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,") == n,
          "v-string '%s' has a character outside the alphabet", s);
}

static void check_phone(const char *s, int64_t nation)
{
    int cc, a, b, c;
    char tail;
    CHECK(strlen(s) == 15 && sscanf(s, "%2d-%3d-%3d-%4d%c", &cc, &a, &b, &c, &tail) == 4 &&
              cc == nation + 10 && a >= 100 && b >= 100 && c >= 1000,
          "phone '%s' for nation %lld", s, (long long)nation);
}

static void check_part(const char *dir)
{
    test_tbl t;
    if (test_tbl_load(&t, dir, "part", 9) != 0)
        return;
    CHECK(t.nrows == N.part, "part rows %zu, expected %llu", t.nrows, (unsigned long long)N.part);
    for (size_t r = 0; r < t.nrows; r++) {
        int64_t key = get_int(&t, r, COL_P_PARTKEY);
        CHECK(key == (int64_t)r + 1, "p_partkey %lld at row %zu", (long long)key, r);
        char name[128];
        snprintf(name, sizeof name, "%s", test_field(&t, r, COL_P_NAME));
        int seen[TPCH_LIST_MAX] = {0}, words = 0;
        for (char *save = NULL, *w = strtok_r(name, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            int i = list_find(TPCH_L_COLORS, w);
            CHECK(i >= 0 && !seen[i], "p_name '%s': bad or repeated colour", test_field(&t, r, 1));
            if (i >= 0)
                seen[i] = 1;
            words++;
        }
        CHECK(words == 5, "p_name '%s' has %d colours", test_field(&t, r, 1), words);
        const char *mfgr = test_field(&t, r, COL_P_MFGR), *brand = test_field(&t, r, COL_P_BRAND);
        CHECK(strlen(mfgr) == 14 && strncmp(mfgr, "Manufacturer#", 13) == 0 && mfgr[13] >= '1' &&
                  mfgr[13] <= '5',
              "p_mfgr '%s'", mfgr);
        CHECK(strlen(brand) == 8 && strncmp(brand, "Brand#", 6) == 0 && brand[6] == mfgr[13] &&
                  brand[7] >= '1' && brand[7] <= '5',
              "p_brand '%s' with %s", brand, mfgr);
        CHECK(list_find(TPCH_L_TYPES, test_field(&t, r, COL_P_TYPE)) >= 0, "p_type '%s'",
              test_field(&t, r, COL_P_TYPE));
        check_range(get_int(&t, r, COL_P_SIZE), 1, 50, "p_size", r);
        CHECK(list_find(TPCH_L_CONTAINERS, test_field(&t, r, COL_P_CONTAINER)) >= 0,
              "p_container '%s'", test_field(&t, r, COL_P_CONTAINER));
        CHECK(get_money(&t, r, COL_P_RETAILPRICE) == tpch_retailprice(key), "p_retailprice row %zu", r);
        check_len(&t, r, COL_P_COMMENT, 5, 22);
    }
    test_tbl_free(&t);
}

static void check_supplier(const char *dir)
{
    test_tbl t;
    if (test_tbl_load(&t, dir, "supplier", 7) != 0)
        return;
    CHECK(t.nrows == N.supplier, "supplier rows %zu", t.nrows);
    for (size_t r = 0; r < t.nrows; r++) {
        CHECK(get_int(&t, r, COL_S_SUPPKEY) == (int64_t)r + 1, "s_suppkey row %zu", r);
        check_numbered(test_field(&t, r, COL_S_NAME), "Supplier#", (int64_t)r + 1);
        check_vstring(test_field(&t, r, COL_S_ADDRESS), 10, 40);
        int64_t nation = get_int(&t, r, COL_S_NATIONKEY);
        check_range(nation, 0, 24, "s_nationkey", r);
        check_phone(test_field(&t, r, COL_S_PHONE), nation);
        check_range(get_money(&t, r, COL_S_ACCTBAL), -99999, 999999, "s_acctbal", r);
        check_len(&t, r, COL_S_COMMENT, 25, 100);
    }
    test_tbl_free(&t);
}

static void check_partsupp(const char *dir)
{
    test_tbl t;
    if (test_tbl_load(&t, dir, "partsupp", 5) != 0)
        return;
    CHECK(t.nrows == N.partsupp, "partsupp rows %zu", t.nrows);
    for (size_t r = 0; r < t.nrows; r++) {
        int64_t p = get_int(&t, r, COL_PS_PARTKEY), s = get_int(&t, r, COL_PS_SUPPKEY);
        CHECK(p == (int64_t)(r / 4) + 1, "ps_partkey row %zu", r);
        CHECK(s == tpch_partsupp_suppkey(p, (int64_t)(r % 4), (int64_t)N.supplier),
              "ps_suppkey row %zu", r);
        check_range(s, 1, (int64_t)N.supplier, "ps_suppkey", r);
        for (size_t q = r - r % 4; q < r; q++)
            CHECK(get_int(&t, q, COL_PS_SUPPKEY) != s, "part %lld has supplier %lld twice",
                  (long long)p, (long long)s);
        check_range(get_int(&t, r, COL_PS_AVAILQTY), 1, 9999, "ps_availqty", r);
        check_range(get_money(&t, r, COL_PS_SUPPLYCOST), 100, 100000, "ps_supplycost", r);
        check_len(&t, r, COL_PS_COMMENT, 49, 198);
    }
    test_tbl_free(&t);
}

static void check_customer(const char *dir)
{
    test_tbl t;
    if (test_tbl_load(&t, dir, "customer", 8) != 0)
        return;
    CHECK(t.nrows == N.customer, "customer rows %zu", t.nrows);
    for (size_t r = 0; r < t.nrows; r++) {
        CHECK(get_int(&t, r, COL_C_CUSTKEY) == (int64_t)r + 1, "c_custkey row %zu", r);
        check_numbered(test_field(&t, r, COL_C_NAME), "Customer#", (int64_t)r + 1);
        check_vstring(test_field(&t, r, COL_C_ADDRESS), 10, 40);
        int64_t nation = get_int(&t, r, COL_C_NATIONKEY);
        check_range(nation, 0, 24, "c_nationkey", r);
        check_phone(test_field(&t, r, COL_C_PHONE), nation);
        check_range(get_money(&t, r, COL_C_ACCTBAL), -99999, 999999, "c_acctbal", r);
        CHECK(list_find(TPCH_L_SEGMENTS, test_field(&t, r, COL_C_MKTSEGMENT)) >= 0,
              "c_mktsegment '%s'", test_field(&t, r, COL_C_MKTSEGMENT));
        check_len(&t, r, COL_C_COMMENT, 29, 116);
    }
    test_tbl_free(&t);
}

/* Checks one order's lines [first, first+n) and returns their total price. */
static int64_t check_lines(const test_tbl *li, size_t first, size_t n, int64_t okey,
                           int32_t odate, int *nf)
{
    int64_t total = 0;
    *nf = 0;
    for (size_t j = 0; j < n; j++) {
        size_t r = first + j;
        CHECK(get_int(li, r, COL_L_ORDERKEY) == okey, "l_orderkey row %zu", r);
        CHECK(get_int(li, r, COL_L_LINENUMBER) == (int64_t)j + 1, "l_linenumber row %zu", r);
        int64_t p = get_int(li, r, COL_L_PARTKEY), s = get_int(li, r, COL_L_SUPPKEY);
        check_range(p, 1, (int64_t)N.part, "l_partkey", r);
        int slot_ok = 0;
        for (int i = 0; i < 4; i++)
            slot_ok |= s == tpch_partsupp_suppkey(p, i, (int64_t)N.supplier);
        CHECK(slot_ok, "l_suppkey %lld is not a supplier of part %lld", (long long)s, (long long)p);
        int64_t qty = get_int(li, r, COL_L_QUANTITY);
        check_range(qty, 1, 50, "l_quantity", r);
        int64_t price = get_money(li, r, COL_L_EXTENDEDPRICE);
        CHECK(price == qty * tpch_retailprice(p), "l_extendedprice row %zu", r);
        int64_t disc = get_money(li, r, COL_L_DISCOUNT), tax = get_money(li, r, COL_L_TAX);
        check_range(disc, 0, 10, "l_discount", r);
        check_range(tax, 0, 8, "l_tax", r);
        total += price * (100 + tax) / 100 * (100 - disc) / 100;
        int32_t ship = get_date(li, r, COL_L_SHIPDATE), commit = get_date(li, r, COL_L_COMMITDATE);
        int32_t receipt = get_date(li, r, COL_L_RECEIPTDATE);
        check_range(ship - odate, 1, 121, "l_shipdate - o_orderdate", r);
        check_range(commit - odate, 30, 90, "l_commitdate - o_orderdate", r);
        check_range(receipt - ship, 1, 30, "l_receiptdate - l_shipdate", r);
        const char *rf = test_field(li, r, COL_L_RETURNFLAG), *ls = test_field(li, r, COL_L_LINESTATUS);
        if (receipt <= CURRENT)
            CHECK(strcmp(rf, "R") == 0 || strcmp(rf, "A") == 0, "l_returnflag '%s' row %zu", rf, r);
        else
            CHECK(strcmp(rf, "N") == 0, "l_returnflag '%s' row %zu", rf, r);
        CHECK(strcmp(ls, ship > CURRENT ? "O" : "F") == 0, "l_linestatus '%s' row %zu", ls, r);
        *nf += ls[0] == 'F';
        CHECK(list_find(TPCH_L_INSTRUCTIONS, test_field(li, r, COL_L_SHIPINSTRUCT)) >= 0,
              "l_shipinstruct row %zu", r);
        CHECK(list_find(TPCH_L_SHIPMODES, test_field(li, r, COL_L_SHIPMODE)) >= 0,
              "l_shipmode row %zu", r);
        check_len(li, r, COL_L_COMMENT, 10, 43);
    }
    return total;
}

static void check_orders_lineitem(const char *dir)
{
    test_tbl o, li;
    if (test_tbl_load(&o, dir, "orders", 9) != 0)
        return;
    if (test_tbl_load(&li, dir, "lineitem", 16) != 0) {
        test_tbl_free(&o);
        return;
    }
    CHECK(o.nrows == N.orders, "orders rows %zu", o.nrows);
    /* 1..7 lines per order, uniform: mean 4 */
    CHECK(li.nrows > 3.95 * (double)o.nrows && li.nrows < 4.05 * (double)o.nrows,
          "lineitem rows %zu for %zu orders", li.nrows, o.nrows);
    uint32_t *orders_of = calloc(N.customer + 1, sizeof *orders_of);
    int64_t mod1 = 0, mod2 = 0;
    size_t line = 0;
    for (size_t r = 0; r < o.nrows; r++) {
        int64_t okey = get_int(&o, r, COL_O_ORDERKEY);
        CHECK(okey == tpch_orderkey(r), "o_orderkey %lld at row %zu", (long long)okey, r);
        CHECK(okey > 0 && okey % 32 < 8, "o_orderkey %lld outside the used 8 of every 32",
              (long long)okey);
        int64_t cust = get_int(&o, r, COL_O_CUSTKEY);
        check_range(cust, 1, (int64_t)N.customer, "o_custkey", r);
        CHECK(cust % 3 != 0, "o_custkey %lld is a multiple of 3", (long long)cust);
        if (cust >= 1 && cust <= (int64_t)N.customer)
            orders_of[cust]++;
        mod1 += cust % 3 == 1;
        mod2 += cust % 3 == 2;
        int32_t odate = get_date(&o, r, COL_O_ORDERDATE);
        check_range(odate, START, END - 151, "o_orderdate", r);
        CHECK(list_find(TPCH_L_PRIORITIES, test_field(&o, r, COL_O_ORDERPRIORITY)) >= 0,
              "o_orderpriority row %zu", r);
        const char *clerk = test_field(&o, r, COL_O_CLERK);
        check_numbered(clerk, "Clerk#", -1);
        check_range(atoll(clerk + 6), 1, (int64_t)N.clerks, "o_clerk", r);
        CHECK(get_int(&o, r, COL_O_SHIPPRIORITY) == 0, "o_shippriority row %zu", r);
        check_len(&o, r, COL_O_COMMENT, 19, 78);

        size_t n = 0;
        while (line + n < li.nrows && atoll(test_field(&li, line + n, COL_L_ORDERKEY)) == okey)
            n++;
        CHECK(n >= 1 && n <= 7, "order %lld has %zu lines", (long long)okey, n);
        int nf;
        int64_t total = check_lines(&li, line, n, okey, odate, &nf);
        CHECK(get_money(&o, r, COL_O_TOTALPRICE) == total, "o_totalprice of order %lld: %s, lines give %lld",
              (long long)okey, test_field(&o, r, COL_O_TOTALPRICE), (long long)total);
        const char *st = test_field(&o, r, COL_O_ORDERSTATUS);
        const char *want = nf == (int)n ? "F" : nf == 0 ? "O" : "P";
        CHECK(strcmp(st, want) == 0, "o_orderstatus '%s' for %d of %zu lines F", st, nf, n);
        line += n;
    }
    CHECK(line == li.nrows, "%zu lineitem rows belong to no order", li.nrows - line);
    size_t without = 0;
    for (uint64_t c = 1; c <= N.customer; c++)
        without += orders_of[c] == 0;
    double share = (double)without / (double)N.customer;
    CHECK(share > 0.32 && share < 0.35, "%.3f of customers have no orders", share);
    double ratio = (double)mod1 / (double)mod2;
    CHECK(ratio > 1.8 && ratio < 2.2, "orders of keys 1 mod 3 / 2 mod 3 = %.2f", ratio);
    free(orders_of);
    test_tbl_free(&o);
    test_tbl_free(&li);
}

static void check_nation_region(const char *dir)
{
    test_tbl n, r;
    if (test_tbl_load(&n, dir, "nation", 4) == 0) {
        CHECK(n.nrows == 25, "nation rows %zu", n.nrows);
        for (size_t i = 0; i < n.nrows; i++) {
            CHECK(get_int(&n, i, COL_N_NATIONKEY) == (int64_t)i, "n_nationkey row %zu", i);
            CHECK(strcmp(test_field(&n, i, COL_N_NAME), L.list[TPCH_L_NATIONS].word[i]) == 0,
                  "n_name row %zu", i);
            CHECK(get_int(&n, i, COL_N_REGIONKEY) == L.list[TPCH_L_NATIONS].weight[i],
                  "n_regionkey row %zu", i);
            check_len(&n, i, COL_N_COMMENT, 31, 114);
        }
        test_tbl_free(&n);
    }
    if (test_tbl_load(&r, dir, "region", 3) == 0) {
        CHECK(r.nrows == 5, "region rows %zu", r.nrows);
        for (size_t i = 0; i < r.nrows; i++) {
            CHECK(get_int(&r, i, COL_R_REGIONKEY) == (int64_t)i, "r_regionkey row %zu", i);
            CHECK(strcmp(test_field(&r, i, COL_R_NAME), L.list[TPCH_L_REGIONS].word[i]) == 0,
                  "r_name row %zu", i);
            check_len(&r, i, COL_R_COMMENT, 31, 115);
        }
        test_tbl_free(&r);
    }
}

static void check_scale(double sf, uint64_t parts, uint64_t orders)
{
    char *dir = test_mkdtemp("inv");
    char err[256];
    tpch_counts_init(&N, sf);
    CHECK(N.part == parts && N.orders == orders, "SF %g: %llu parts, %llu orders", sf,
          (unsigned long long)N.part, (unsigned long long)N.orders);
    int rc = tpch_generate(sf, dir, TPCH_FMT_TBL, 0, 2, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "tpch_generate: %s", err);
    if (rc == 0) {
        size_t len;
        char path[4200];
        snprintf(path, sizeof path, "%s/meta.txt", dir);
        char *meta = test_read_file(path, &len);
        CHECK(meta && strstr(meta, "format=1\n") && strncmp(meta, "sf=", 3) == 0,
              "meta.txt: %s", meta ? meta : "(missing)");
        free(meta);
        check_part(dir);
        check_supplier(dir);
        check_partsupp(dir);
        check_customer(dir);
        check_orders_lineitem(dir);
        check_nation_region(dir);
    }
    test_rmtree(dir);
    free(dir);
}

int main(void)
{
    char err[256];
    if (tpch_lists_load(&L, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    START = tpch_days_from_civil(1992, 1, 1);
    END = tpch_days_from_civil(1998, 12, 31);
    CURRENT = tpch_days_from_civil(1995, 6, 17);
    check_scale(0.01, 2000, 15000);
    check_scale(0.1, 20000, 150000);
    tpch_lists_free(&L);
    if (test_failures)
        fprintf(stderr, "%d checks failed\n", test_failures);
    return test_failures ? 1 : 0;
}
