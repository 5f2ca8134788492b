/*
 * test_codec.c - every built codec: round trip, "does not fit" signalled
 * as 0 (the raw path), safe failure on garbage, level ranges and names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "alloc.h"
#include "codec.h"
#include "support.h"

#define N 65536

static void roundtrip(bf_codec id, int32_t level)
{
    const bf_codec_ops *ops = bf_codec_ops_get(id);
    assert_non_null(ops);
    void *ctx = NULL;
    assert_int_equal(ops->ctx_create(&bf_default_allocator, &ctx), BF_OK);
    static unsigned char src[N], comp[N], out[N];
    t_rng r = {(uint64_t)id * 31 + (uint64_t)(level + 100)};
    for (int kind = 0; kind < 3; kind++) {
        t_fill(&r, (t_data)kind, src, N);
        int64_t c = ops->compress(ctx, level, src, N, comp, N - 1);
        assert_true(c >= 0);
        if (kind == T_DATA_TEXT && id != BF_CODEC_NONE && level == ops->default_level)
            assert_true(c > 0 && c < N * 3 / 4); /* text compresses at default levels */
        if (kind == T_DATA_RANDOM)
            assert_int_equal(c, 0); /* random bytes never fit in fewer bytes */
        if (c > 0) {
            memset(out, 0xAA, N);
            assert_int_equal(ops->decompress(ctx, comp, (size_t)c, out, N), 0);
            assert_memory_equal(out, src, N);
            /* Asking for the wrong length is a failure, not a partial result. */
            assert_int_not_equal(ops->decompress(ctx, comp, (size_t)c, out, N - 1), 0);
            /* Truncated input fails cleanly. */
            assert_int_not_equal(ops->decompress(ctx, comp, (size_t)c / 2, out, N), 0);
        }
    }
    /* Garbage input never crashes and never claims success. */
    for (int i = 0; i < 50; i++) {
        t_fill(&r, T_DATA_RANDOM, comp, 256);
        assert_int_not_equal(ops->decompress(ctx, comp, 256, out, N), 0);
    }
    ops->ctx_destroy(&bf_default_allocator, ctx);
}

static void test_roundtrips(void **state)
{
    (void)state;
    roundtrip(BF_CODEC_NONE, 0);
    roundtrip(BF_CODEC_LZ4, 1);
    roundtrip(BF_CODEC_LZ4, 64);
    roundtrip(BF_CODEC_ZSTD, -5);
    roundtrip(BF_CODEC_ZSTD, 1);
    roundtrip(BF_CODEC_ZSTD, 9);
    roundtrip(BF_CODEC_ZLIB, 1);
    roundtrip(BF_CODEC_ZLIB, 9);
}

static void test_zlib_level_switch(void **state)
{
    (void)state;
    /* One context serves blocks of different levels in any order. */
    const bf_codec_ops *ops = bf_codec_ops_get(BF_CODEC_ZLIB);
    void *ctx;
    assert_int_equal(ops->ctx_create(&bf_default_allocator, &ctx), BF_OK);
    static unsigned char src[N], comp[N], out[N];
    t_rng r = {3};
    t_fill(&r, T_DATA_TEXT, src, N);
    int64_t sizes[10];
    for (int level = 1; level <= 9; level++) {
        sizes[level] = ops->compress(ctx, level, src, N, comp, N);
        assert_true(sizes[level] > 0);
        assert_int_equal(ops->decompress(ctx, comp, (size_t)sizes[level], out, N), 0);
        assert_memory_equal(out, src, N);
    }
    assert_true(sizes[9] <= sizes[1]);
    ops->ctx_destroy(&bf_default_allocator, ctx);
}

static void test_names_and_levels(void **state)
{
    (void)state;
    bf_codec c;
    const char *names[] = {"none", "lz4", "zstd", "zlib"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(bf_codec_parse(names[i], &c), BF_OK);
        assert_int_equal(c, i);
        assert_string_equal(bf_codec_name(c), names[i]);
        assert_true(bf_codec_available(c));
    }
    assert_int_equal(bf_codec_parse("snappy", &c), BF_EINVAL);
    assert_int_equal(bf_codec_parse(NULL, &c), BF_EINVAL);
    assert_null(bf_codec_name((bf_codec)9));
    assert_false(bf_codec_available((bf_codec)9));
    int32_t lv;
    assert_int_equal(bf_codec_resolve_level(bf_codec_ops_get(BF_CODEC_ZLIB), 0, &lv), BF_EINVAL);
    assert_int_equal(bf_codec_resolve_level(bf_codec_ops_get(BF_CODEC_ZLIB), 10, &lv), BF_EINVAL);
    assert_int_equal(bf_codec_resolve_level(bf_codec_ops_get(BF_CODEC_ZLIB), BF_LEVEL_DEFAULT, &lv),
                     BF_OK);
    assert_int_equal(lv, 6);
    assert_int_equal(bf_codec_resolve_level(bf_codec_ops_get(BF_CODEC_ZSTD), -7, &lv), BF_OK);
    assert_int_equal(bf_codec_resolve_level(bf_codec_ops_get(BF_CODEC_ZSTD), 23, &lv), BF_EINVAL);
    assert_int_equal(bf_codec_resolve_level(bf_codec_ops_get(BF_CODEC_LZ4), 0, &lv), BF_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrips),
        cmocka_unit_test(test_zlib_level_switch),
        cmocka_unit_test(test_names_and_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
