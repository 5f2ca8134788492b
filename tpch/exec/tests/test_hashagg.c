/*
 * test_hashagg.c - hash aggregation that must recurse: 60000 groups of 3
 * rows under 64 KB spill into partitions, which spill again. Every group
 * must come out exactly once with its count and sum; a keyless aggregate
 * of empty input must give one row of NULL sum and zero count. Memory: at
 * 256 KB the aggregate stays within work_mem, partition files counted; at
 * 64 KB within its floor (the least working set of a spilling pass).
 */
#include <stdlib.h>

#include "ops.h"
#include "test_util.h"

#define NGROUPS 60000

static const tup *gen_rows(void *arg, uint64_t i, tbuild *tb)
{
    (void)arg;
    if (i >= 3 * NGROUPS)
        return NULL;
    uint64_t g = (i * 7919u) % NGROUPS; /* 7919 is prime: every group 3 times, scattered */
    char key[24];
    int n = snprintf(key, sizeof key, "group-%06llu", (unsigned long long)g);
    tb_begin(tb, 2);
    tb_str(tb, key, (uint32_t)n);
    tb_i64(tb, (int64_t)g);
    return tb_end(tb);
}

static const tup *gen_none(void *arg, uint64_t i, tbuild *tb)
{
    (void)arg;
    (void)i;
    (void)tb;
    return NULL;
}

static void recursion(bf_codec codec, uint32_t block_size, int64_t work_mem, int min_depth,
                      bool within_budget)
{
    test_ctx t;
    tctx_open(&t, codec, block_size, work_mem);
    unsigned char *seen = calloc(NGROUPS, 1);
    int64_t groups = 0;
    if (setjmp(t.jb) == 0) {
        op *g = op_generate(&t.q, 2, gen_rows, NULL);
        op *a = op_hashagg(&t.q, g, 1, (int[]){0}, 2,
                           (aggspec[]){{AGG_COUNT_STAR, 0}, {AGG_SUM, 1}});
        const tup *r;
        while ((r = a->next(a)) != NULL) {
            int64_t sum = tup_i64(r, 2);
            CHECK(tup_i64(r, 1) == 3);
            CHECK(sum % 3 == 0 && sum / 3 < NGROUPS);
            if (sum % 3 == 0 && sum / 3 < NGROUPS) {
                CHECK(!seen[sum / 3]);
                seen[sum / 3] = 1;
            }
            groups++;
        }
    } else {
        fprintf(stderr, "hash agg failed: %s\n", t.q.errmsg);
        test_failures++;
    }
    qctx q = t.q;
    tctx_close(&t, NULL);
    free(seen);
    printf("hashagg %s work_mem=%lld: groups=%lld depth=%d op_peak=%lld floor=%lld\n",
           bf_codec_name(codec), (long long)work_mem, (long long)groups, q.st.agg_max_depth,
           (long long)q.op_peak, (long long)q.op_peak_floor);
    CHECK(groups == NGROUPS);
    CHECK(q.st.agg_spilled == 1);
    CHECK(q.st.agg_max_depth >= min_depth);
    CHECK(WITHIN_BUDGET_OR_FLOOR(&q));
    if (within_budget)
        CHECK(WITHIN_BUDGET(&q));
}

static void empty_input(void)
{
    test_ctx t;
    tctx_open(&t, BF_CODEC_NONE, 4096, 64 * 1024);
    if (setjmp(t.jb) == 0) {
        op *a = op_hashagg(&t.q, op_generate(&t.q, 1, gen_none, NULL), 0, NULL, 2,
                           (aggspec[]){{AGG_SUM, 0}, {AGG_COUNT_STAR, 0}});
        const tup *r = a->next(a);
        CHECK(r != NULL);
        if (r) {
            CHECK(tup_isnull(r, 0));
            CHECK(tup_i64(r, 1) == 0);
        }
        CHECK(a->next(a) == NULL);
    } else {
        test_failures++;
    }
    tctx_close(&t, NULL);
}

int main(void)
{
    recursion(BF_CODEC_NONE, 4096, 64 * 1024, 2, false);
    recursion(BF_CODEC_ZLIB, 4096, 64 * 1024, 2, false);
    recursion(BF_CODEC_LZ4, 8192, 256 * 1024, 1, true);
    empty_input();
    return test_failures ? 1 : 0;
}
