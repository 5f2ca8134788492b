/*
 * test_hashjoin.c - hybrid hash join under a tiny work_mem with heavy skew:
 * 20000 inner rows share one key, so their batch can never split. The join
 * must still grow to many batches for the other keys, hold the skewed batch
 * in memory in one piece (over budget: the counter's peak shows it), and
 * give the exact answer for every join type, computed here by counting.
 *
 * Inner: 20000 rows with key 7, and keys 1000..20999 once each, interleaved,
 * so batches first split normally and then meet the unsplittable key.
 * Outer: keys 0..29999 once each, plus 5 more rows with key 7.
 *
 * Memory without skew: an inner side that batches can hold within work_mem
 * stays within it, every batch file counted; one too large for that (the
 * batch files' buffers alone would exceed work_mem) balances at its floor,
 * near the square-root law 2 * sqrt(inner bytes x writer cost) rather than
 * with a buffer pair per batch.
 */
#include <math.h>

#include "ops.h"
#include "spillio.h"
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
    int64_t op_peak = t.q.op_peak;
    bool within_floor = WITHIN_BUDGET_OR_FLOOR(&t.q);
    tctx_close(&t, NULL);
    printf("join type %d: rows=%lld nulls=%lld batches=%d skew_stop=%d op_peak=%lld\n", (int)jt,
           (long long)rows, (long long)nulls, st.hj_max_batches, (int)st.hj_skew_stop,
           (long long)op_peak);
    CHECK(within_floor);
    CHECK(rows == want_rows);
    CHECK(nulls == want_nulls);
    CHECK(st.hj_spilled == 1);
    CHECK(st.hj_max_batches >= 8);
    /* 20000 rows of key 7 (20+ bytes of tuple, 24 of entry header each) held at once */
    CHECK(op_peak >= (int64_t)N_SKEW * 44);
}

/* Inner: N_SKEW rows, all key 7; outer: keys 7, 8, 7, 9, 7. */
static const tup *gen_one_key(void *arg, uint64_t i, tbuild *tb)
{
    (void)arg;
    if (i >= N_SKEW)
        return NULL;
    tb_begin(tb, 2);
    tb_i64(tb, 7);
    tb_i64(tb, (int64_t)i);
    return tb_end(tb);
}

static const tup *gen_few(void *arg, uint64_t i, tbuild *tb)
{
    (void)arg;
    static const int64_t keys[] = {7, 8, 7, 9, 7};
    if (i >= 5)
        return NULL;
    tb_begin(tb, 2);
    tb_i64(tb, keys[i]);
    tb_cstr(tb, "x");
    return tb_end(tb);
}

/* A batch holding one key cannot split: the first split moves nothing, so
 * growth stops for good (PostgreSQL's growEnabled = false) and the join
 * finishes with the whole key in memory. */
static void single_key(void)
{
    test_ctx t;
    tctx_open(&t, BF_CODEC_ZSTD, 4096, 64 * 1024);
    int64_t rows = 0;
    if (setjmp(t.jb) == 0) {
        int k = 0;
        op *j = op_hashjoin(&t.q, op_generate(&t.q, 2, gen_few, NULL),
                            op_generate(&t.q, 2, gen_one_key, NULL), JOIN_INNER, 1, &k, &k, NULL,
                            NULL);
        while (j->next(j))
            rows++;
    } else {
        fprintf(stderr, "join failed: %s\n", t.q.errmsg);
        test_failures++;
    }
    qstats st = t.q.st;
    bool within_floor = WITHIN_BUDGET_OR_FLOOR(&t.q); /* the floor of skew: the key's rows */
    tctx_close(&t, NULL);
    CHECK(within_floor);
    printf("single key: rows=%lld batches=%d skew_stop=%d\n", (long long)rows,
           st.hj_max_batches, (int)st.hj_skew_stop);
    CHECK(rows == 3 * N_SKEW);
    CHECK(st.hj_skew_stop);
}

/* Keys 0..n-1 (inner: n rows, one per key; outer: every third key). */
static const tup *gen_keys(void *arg, uint64_t i, tbuild *tb)
{
    const int64_t *n = arg;
    if ((int64_t)i >= n[0])
        return NULL;
    tb_begin(tb, 2);
    tb_i64(tb, (int64_t)i * n[1]);
    tb_i64(tb, (int64_t)i);
    return tb_end(tb);
}

/* An inner join of n unique keys with every third of them under work_mem. */
static void uniform(int64_t n, int64_t work_mem, bool within_budget)
{
    test_ctx t;
    tctx_open(&t, BF_CODEC_LZ4, 8192, work_mem);
    int64_t rows = 0, inner[2] = {n, 1}, outer[2] = {n / 3, 3};
    if (setjmp(t.jb) == 0) {
        int k = 0;
        op *j =
            op_hashjoin(&t.q, op_generate(&t.q, 2, gen_keys, outer),
                        op_generate(&t.q, 2, gen_keys, inner), JOIN_INNER, 1, &k, &k, NULL, NULL);
        const tup *r;
        while ((r = j->next(j)) != NULL) {
            CHECK(tup_i64(r, 0) == tup_i64(r, 2));
            rows++;
        }
    } else {
        fprintf(stderr, "join failed: %s\n", t.q.errmsg);
        test_failures++;
    }
    qctx q = t.q;
    tctx_close(&t, NULL);
    /* the table's peak bytes per inner row: entry header, 32-byte tuple, buckets doubling */
    double table = (double)n * (24 + 32 + 24);
    double sqrt_law = 2 * sqrt(table * (double)spill_writer_cost(&q));
    printf("uniform n=%lld work_mem=%lld: rows=%lld batches=%d op_peak=%lld floor=%lld "
           "sqrt law=%.0f\n",
           (long long)n, (long long)work_mem, (long long)rows, q.st.hj_max_batches,
           (long long)q.op_peak, (long long)q.op_peak_floor, sqrt_law);
    CHECK(rows == n / 3);
    CHECK(q.st.hj_max_batches >= (within_budget ? 2 : 16));
    CHECK(!q.st.hj_skew_stop);
    CHECK(WITHIN_BUDGET_OR_FLOOR(&q));
    if (within_budget)
        CHECK(WITHIN_BUDGET(&q));
    else
        CHECK((double)q.op_peak <= 1.25 * sqrt_law);
}

int main(void)
{
    uniform(20000, 512 * 1024, true);
    uniform(200000, 64 * 1024, false);
    single_key();
    /* 6 outer rows with key 7 match 20000 rows each; 20000 unique keys match once */
    int64_t matched_outer = 6 + N_SKEW, unmatched = N_OUTER + 5 - matched_outer;
    run(JOIN_INNER, 6 * N_SKEW + N_SKEW, 0);
    run(JOIN_LEFT, 6 * N_SKEW + N_SKEW + unmatched, unmatched);
    run(JOIN_SEMI, matched_outer, 0);
    run(JOIN_ANTI, unmatched, 0);
    return test_failures ? 1 : 0;
}
