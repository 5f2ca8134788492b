/*
 * test_sort.c - external sort: a tiny work_mem forces hundreds of runs and
 * several balanced merge passes; the output must be the input in order,
 * and block recycling must keep the one tape file near the data size
 * (without it a merge pass would grow the file to about twice the data).
 * Memory: at 256 KB the sort stays within work_mem, the tape file's library
 * memory counted; at 32 KB the tape file's block map and free lists alone
 * come near work_mem and the sort stays within its floor (qctx.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "test_util.h"

#define NROWS 150000

/* key: pseudo-random int64; payload: a string derived from it */
static const tup *gen_rows(void *arg, uint64_t i, tbuild *tb)
{
    uint64_t *bytes = arg;
    if (i >= NROWS)
        return NULL;
    uint64_t k = (i * 2654435761u) % 1000003u;
    char s[32];
    int n = snprintf(s, sizeof s, "row-%llu-payload", (unsigned long long)(k % 977));
    tb_begin(tb, 2);
    tb_i64(tb, (int64_t)k);
    tb_str(tb, s, (uint32_t)n);
    const tup *t = tb_end(tb);
    *bytes += tup_len(t);
    return t;
}

static void run(bf_codec codec, int64_t work_mem, int min_passes, bool within_budget)
{
    test_ctx t;
    tctx_open(&t, codec, 4096, work_mem);
    uint64_t bytes = 0;
    if (setjmp(t.jb) == 0) {
        op *g = op_generate(&t.q, 2, gen_rows, &bytes);
        op *s = op_sort(&t.q, g, 2, (sortkey[]){{0, SK_I64, false}, {1, SK_STR, false}}, -1);
        int64_t prev = -1, n = 0;
        uint64_t sum = 0;
        const tup *r;
        while ((r = s->next(s)) != NULL) {
            int64_t k = tup_i64(r, 0);
            CHECK(k >= prev);
            prev = k;
            sum += (uint64_t)k;
            n++;
        }
        uint64_t want = 0;
        for (uint64_t i = 0; i < NROWS; i++)
            want += (i * 2654435761u) % 1000003u;
        CHECK(n == NROWS);
        CHECK(sum == want);
    } else {
        fprintf(stderr, "sort failed: %s\n", t.q.errmsg);
        test_failures++;
    }
    qstats st = t.q.st;
    qctx q = t.q;
    bf_stats bs;
    tctx_close(&t, &bs);
    printf("sort %s work_mem=%lld: runs=%lld passes=%d file peak=%llu data=%llu op_peak=%lld "
           "floor=%lld\n",
           bf_codec_name(codec), (long long)work_mem, (long long)st.sort_runs, st.sort_max_passes,
           (unsigned long long)bs.logical_peak, (unsigned long long)bytes, (long long)q.op_peak,
           (long long)q.op_peak_floor);
    CHECK(st.sort_spilled == 1);
    CHECK(st.sort_max_passes >= min_passes);
    CHECK(bs.files_created == 1); /* all tapes in one buffile */
    /* Tape blocks carry 16 header bytes of 4096 and each initial run ends in a partly
     * filled block; beyond that, recycling keeps merge passes from growing the file
     * (without it every pass would append a full copy of the data). */
    CHECK(bs.logical_peak <= bytes + bytes / 64 + (uint64_t)st.sort_runs * 4096 + 64 * 4096);
    CHECK(WITHIN_BUDGET_OR_FLOOR(&q));
    if (within_budget)
        CHECK(WITHIN_BUDGET(&q));
}

int main(void)
{
    run(BF_CODEC_NONE, 32 * 1024, 3, false);
    run(BF_CODEC_LZ4, 32 * 1024, 3, false);
    run(BF_CODEC_ZSTD, 256 * 1024, 1, true);
    return test_failures ? 1 : 0;
}
