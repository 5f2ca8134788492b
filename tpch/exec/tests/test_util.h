/*
 * test_util.h - shared scaffolding of the executor tests: a CHECK macro
 * that records failures, and a query context over a fresh buffile space.
 */
#ifndef TPCH_TEST_UTIL_H
#define TPCH_TEST_UTIL_H

#include <setjmp.h>
#include <stdio.h>

#include "qctx.h"

extern int test_failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            test_failures++;                                                           \
        }                                                                              \
    } while (0)

/* A context with its own space (codec, block size) and work_mem. */
typedef struct test_ctx {
    qctx q;
    jmp_buf jb;
    bf_space *space;
} test_ctx;

void tctx_open(test_ctx *t, bf_codec codec, uint32_t block_size, int64_t work_mem);
/* Close all operators, then read the space's statistics and destroy it. */
void tctx_close(test_ctx *t, bf_stats *stats);

/* The slack allowed for chunk and block granularity, as spillbench's report allows it. */
#define MEM_SLACK 1.1
/* Every operator of the context peaked within MEM_SLACK x max(work_mem, its floor). */
#define WITHIN_BUDGET_OR_FLOOR(q) ((q)->op_over <= MEM_SLACK)
/* Every operator peaked within MEM_SLACK x work_mem. */
#define WITHIN_BUDGET(q) ((double)(q)->op_peak <= MEM_SLACK * (double)(q)->work_mem)

#endif
