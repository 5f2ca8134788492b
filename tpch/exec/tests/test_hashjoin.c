/*
 * test_hashjoin.c - hybrid hash join under a tiny work_mem with heavy skew:
 * 20000 inner rows share one key, so that batch cannot split; growth must
 * stop (skew), the batch stays in memory, and every join type must still
 * give the exact answer, computed here by counting.
 *
 * Inner: 20000 rows with key 7, and keys 1000..20999 once each, interleaved,
 * so batches first split normally and then meet the unsplittable key.
 * Outer: keys 0..29999 once each, plus 5 more rows with key 7.
 */
#include "ops.h"
#include "test_util.h"

#define N_SKEW 20000
#define N_OUTER 30000

static const tup *gen_inner(void *arg, uint64_t i, tbuild *tb)
{
    (void)arg;
    if (i >= 2 * N_SKEW)
        return NULL;
    tb_begin(tb, 2);
    tb_i64(tb, i % 2 ? 7 : (int64_t)(1000 + i / 2));
    tb_i64(tb, (int64_t)i);
    return tb_end(tb);
}

static const tup *gen_outer(void *arg, uint64_t i, tbuild *tb)
{
    (void)arg;
    if (i >= N_OUTER + 5)
        return NULL;
    tb_begin(tb, 2);
    tb_i64(tb, i < N_OUTER ? (int64_t)i : 7);
    tb_cstr(tb, "outer row with some text");
    return tb_end(tb);
}

static void run(jointype jt, int64_t want_rows, int64_t want_nulls)
{
    test_ctx t;
    tctx_open(&t, BF_CODEC_LZ4, 4096, 64 * 1024);
    int64_t rows = 0, nulls = 0;
    if (setjmp(t.jb) == 0) {
        op *o = op_generate(&t.q, 2, gen_outer, NULL);
        op *in = op_generate(&t.q, 2, gen_inner, NULL);
        int k = 0;
        op *j = op_hashjoin(&t.q, o, in, jt, 1, &k, &k, NULL, NULL);
        const tup *r;
        while ((r = j->next(j)) != NULL) {
            rows++;
            if (jt == JOIN_INNER || jt == JOIN_LEFT) {
                CHECK(tup_natts(r) == 4);
                if (tup_isnull(r, 2))
                    nulls++;
                else
                    CHECK(tup_i64(r, 0) == tup_i64(r, 2));
            }
        }
    } else {
        fprintf(stderr, "join failed: %s\n", t.q.errmsg);
        test_failures++;
    }
    qstats st = t.q.st;
    tctx_close(&t, NULL);
    printf("join type %d: rows=%lld nulls=%lld batches=%d skew_stop=%d\n", (int)jt,
           (long long)rows, (long long)nulls, st.hj_max_batches, (int)st.hj_skew_stop);
    CHECK(rows == want_rows);
    CHECK(nulls == want_nulls);
    CHECK(st.hj_spilled == 1);
    CHECK(st.hj_max_batches >= 8);
    CHECK(st.hj_skew_stop);
}

int main(void)
{
    /* 6 outer rows with key 7 match 20000 rows each; 20000 unique keys match once */
    int64_t matched_outer = 6 + N_SKEW, unmatched = N_OUTER + 5 - matched_outer;
    run(JOIN_INNER, 6 * N_SKEW + N_SKEW, 0);
    run(JOIN_LEFT, 6 * N_SKEW + N_SKEW + unmatched, unmatched);
    run(JOIN_SEMI, matched_outer, 0);
    run(JOIN_ANTI, unmatched, 0);
    return test_failures ? 1 : 0;
}
