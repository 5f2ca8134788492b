/*
 * test_util.c - test scaffolding (see test_util.h).
 */
#include "test_util.h"

#include <stdlib.h>

int test_failures;

void tctx_open(test_ctx *t, bf_codec codec, uint32_t block_size, int64_t work_mem)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.codec = codec;
    o.block_size = block_size;
    char err[256];
    if (bf_space_create(&o, &t->space, err, sizeof err) != 0) {
        fprintf(stderr, "bf_space_create: %s\n", err);
        exit(1);
    }
    q_init(&t->q, t->space, NULL, work_mem);
    t->q.block_size = block_size;
    t->q.jb = &t->jb;
}

void tctx_close(test_ctx *t, bf_stats *stats)
{
    q_close_all(&t->q);
    if (stats)
        bf_space_stats(t->space, stats);
    bf_space_destroy(t->space);
}
