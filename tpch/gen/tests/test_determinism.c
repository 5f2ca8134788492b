/* Determinism: any split of a table into row (or order) ranges concatenates
 * to the bytes of one single-range run; tpch_generate output is identical for
 * 1, 2 and 3 threads, across repeated runs, and whether or not the other
 * tables are requested, in both formats. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_sink.h"
#include "test_util.h"
#include "tpch_gen.h"

/* .tbl text of units [first, first+n) of table t (orders/lineitem by order). */
static void gen_range(const tpch_ctx *c, tpch_table_id t, uint64_t first, uint64_t n,
                      tpch_buf *out)
{
    tpch_sink s;
    int lines = t == TPCH_LINEITEM;
    tpch_sink_init(&s, TPCH_FMT_TBL, t);
    tpch_chunk_gen(c, t, first, n, lines ? NULL : &s, lines ? &s : NULL);
    tpch_buf_put(out, s.text.p, s.text.len);
    tpch_sink_free(&s);
}

static void check_chunking(void)
{
    tpch_ctx c;
    char err[256];
    if (tpch_ctx_init(&c, 0.01, err, sizeof err) != 0) {
        CHECK(0, "ctx: %s", err);
        return;
    }
    for (int t = 0; t < TPCH_NTABLES; t++) {
        uint64_t units = tpch_counts_units(&c.n, (tpch_table_id)t);
        tpch_buf whole = {0}, pieces = {0};
        gen_range(&c, (tpch_table_id)t, 0, units, &whole);
        /* uneven pieces, starting anywhere, including single rows */
        uint64_t first = 0, step = 1;
        while (first < units) {
            uint64_t n = step < units - first ? step : units - first;
            gen_range(&c, (tpch_table_id)t, first, n, &pieces);
            first += n;
            step = step * 3 + 1;
        }
        CHECK(whole.len > 0 && whole.len == pieces.len &&
                  memcmp(whole.p, pieces.p, whole.len) == 0,
              "%s: chunked generation differs from one run", tpch_table_name((tpch_table_id)t));
        /* a range generated on its own equals the same bytes inside the whole */
        tpch_buf mid = {0};
        gen_range(&c, (tpch_table_id)t, units / 2, 1, &mid);
        CHECK(mid.len > 0 && memmem(whole.p, whole.len, mid.p, mid.len) != NULL,
              "%s: a middle row alone is not found in the whole", tpch_table_name((tpch_table_id)t));
        tpch_buf_free(&whole);
        tpch_buf_free(&pieces);
        tpch_buf_free(&mid);
    }
    tpch_ctx_free(&c);
}

static char *generate(tpch_format fmt, unsigned mask, int threads)
{
    char *dir = test_mkdtemp("det");
    char err[256];
    CHECK(tpch_generate(0.01, dir, fmt, mask, threads, NULL, NULL, err, sizeof err) == 0,
          "tpch_generate: %s", err);
    return dir;
}

static void compare_dirs(const char *a, const char *b, tpch_format fmt, unsigned mask,
                         const char *what)
{
    for (int t = 0; t < TPCH_NTABLES; t++) {
        if (!(mask >> t & 1u))
            continue;
        char pa[4200], pb[4200];
        const char *ext = fmt == TPCH_FMT_BIN ? "bin" : "tbl";
        snprintf(pa, sizeof pa, "%s/%s.%s", a, tpch_table_name((tpch_table_id)t), ext);
        snprintf(pb, sizeof pb, "%s/%s.%s", b, tpch_table_name((tpch_table_id)t), ext);
        size_t la = 0, lb = 0;
        char *fa = test_read_file(pa, &la), *fb = test_read_file(pb, &lb);
        CHECK(fa && fb && la > 0 && la == lb && memcmp(fa, fb, la) == 0, "%s: %s differs (%s)",
              what, pa, ext);
        free(fa);
        free(fb);
    }
}

static void check_runs(tpch_format fmt)
{
    unsigned all = (1u << TPCH_NTABLES) - 1;
    char *one = generate(fmt, 0, 1);
    char *two = generate(fmt, 0, 2);
    char *three = generate(fmt, 0, 3);
    char *again = generate(fmt, 0, 2);
    char *alone = generate(fmt, 1u << TPCH_LINEITEM | 1u << TPCH_PART, 2);
    compare_dirs(one, two, fmt, all, "1 vs 2 threads");
    compare_dirs(one, three, fmt, all, "1 vs 3 threads");
    compare_dirs(two, again, fmt, all, "two runs");
    compare_dirs(one, alone, fmt, 1u << TPCH_LINEITEM | 1u << TPCH_PART, "subset of tables");
    char orders[4200];
    snprintf(orders, sizeof orders, "%s/orders.%s", alone, fmt == TPCH_FMT_BIN ? "bin" : "tbl");
    FILE *f = fopen(orders, "r");
    CHECK(f == NULL, "%s written although not requested", orders);
    if (f)
        fclose(f);
    char *dirs[] = {one, two, three, again, alone};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        test_rmtree(dirs[i]);
        free(dirs[i]);
    }
}

int main(void)
{
    check_chunking();
    check_runs(TPCH_FMT_TBL);
    check_runs(TPCH_FMT_BIN);
    if (test_failures)
        fprintf(stderr, "%d checks failed\n", test_failures);
    return test_failures ? 1 : 0;
}
