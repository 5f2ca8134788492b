/*
 * test_queries.c - every TPC-H query at SF 0.01 gives, with every codec
 * (libbuffile's, lz4 with its spills sealed, and PostgreSQL's pglz when the
 * build has it) and every work_mem, byte for byte the result it gives without spilling
 * (unlimited work_mem). The small budgets must really spill: at 64 KB the
 * hash joins, the hash aggregate and the sorts all write files, and the
 * hash aggregate recurses. Every operator of every run peaks within 1.1x
 * of work_mem or of its floor (qctx.h: mem_floor).
 *
 * usage: test_queries DATA_DIR   (generated there at SF 0.01 if missing)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "queries/queries.h"
#include "codec_pglz.h"
#include "run.h"
#include "spill_codecs.h"
#include "test_util.h"

typedef struct config {
    int64_t work_mem;
    uint32_t block_size;
} config;

static const config configs[] = {
    {64 * 1024, 4096},
    {256 * 1024, 8192},
    {4 * 1024 * 1024, 16384},
};

static const struct {
    bf_codec codec;
    int encrypt;
} codecs[] = {
    {BF_CODEC_NONE, 0}, {BF_CODEC_LZ4, 0}, {BF_CODEC_ZSTD, 0},
    {BF_CODEC_ZLIB, 0}, {BF_CODEC_LZ4, 1},
#ifdef BF_HAVE_PGLZ
    {PGLZ_CODEC_ID, 0},
#endif
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_queries DATA_DIR\n");
        return 2;
    }
    char err[512];
    if (db_ensure(argv[1], 0.01, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "generate: %s\n", err);
        return 1;
    }
    struct tpch_db *db;
    if (db_open(argv[1], &db, err, sizeof err) != 0) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    strbuf base[TPCH_NQUERIES + 1];
    memset(base, 0, sizeof base);
    run_config plain = {.codec = BF_CODEC_NONE, .level = BF_LEVEL_DEFAULT, .block_size = 8192};
    for (int q = 1; q <= TPCH_NQUERIES; q++) {
        run_result r;
        if (run_query(db, q, &plain, &r) != 0) {
            fprintf(stderr, "baseline %s\n", r.err);
            return 1;
        }
        CHECK(r.spill.files_created == 0);
        base[q] = r.text;
    }
    qstats small = {0};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
            run_config cfg = {.codec = codecs[k].codec,
                              .level = BF_LEVEL_DEFAULT,
                              .block_size = configs[c].block_size,
                              .work_mem = configs[c].work_mem,
                              .encrypt = codecs[k].encrypt};
            char name[16];
            snprintf(name, sizeof name, "%s%s", spill_codec_name(codecs[k].codec),
                     codecs[k].encrypt ? "+enc" : "");
            int differ = 0, over = 0, at_floor = 0;
            uint64_t spilled = 0;
            for (int q = 1; q <= TPCH_NQUERIES; q++) {
                run_result r;
                if (run_query(db, q, &cfg, &r) != 0) {
                    fprintf(stderr, "%s\n", r.err);
                    test_failures++;
                    continue;
                }
                bool same = r.text.len == base[q].len &&
                            (r.text.len == 0 || memcmp(r.text.p, base[q].p, r.text.len) == 0);
                if (!same) {
                    fprintf(stderr, "Q%d differs: codec %s, work_mem %lld\n", q, name,
                            (long long)configs[c].work_mem);
                    differ++;
                }
                spilled += r.spill.logical_written;
                if (r.op_over > MEM_SLACK) {
                    fprintf(stderr, "Q%d: an operator peaked at %.2fx max(work_mem, floor)\n", q,
                            r.op_over);
                    over++;
                }
                at_floor += (double)r.op_peak > MEM_SLACK * (double)configs[c].work_mem;
                if (c == 0) {
                    small.hj_spilled += r.ops.hj_spilled;
                    small.agg_spilled += r.ops.agg_spilled;
                    small.sort_spilled += r.ops.sort_spilled;
                    if (r.ops.agg_max_depth > small.agg_max_depth)
                        small.agg_max_depth = r.ops.agg_max_depth;
                }
                sb_free(&r.text);
            }
            printf("work_mem %7lld block %5u codec %-8s: %d of %d differ, %llu bytes spilled, "
                   "%d above work_mem at their floor\n",
                   (long long)configs[c].work_mem, configs[c].block_size, name, differ,
                   TPCH_NQUERIES, (unsigned long long)spilled, at_floor);
            CHECK(differ == 0);
            CHECK(over == 0);
            if (configs[c].work_mem <= 256 * 1024)
                CHECK(spilled > 0);
        }
    }
    printf("at 64 KB: %d hash joins, %d hash aggregates, %d sorts spilled; agg depth %d\n",
           small.hj_spilled, small.agg_spilled, small.sort_spilled, small.agg_max_depth);
    CHECK(small.hj_spilled > 0);
    CHECK(small.agg_spilled > 0);
    CHECK(small.sort_spilled > 0);
    CHECK(small.agg_max_depth >= 2);
    for (int q = 1; q <= TPCH_NQUERIES; q++)
        sb_free(&base[q]);
    db_close(db);
    return test_failures ? 1 : 0;
}
