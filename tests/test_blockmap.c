/*
 * test_blockmap.c - the two-level block map: growth one block at a time
 * and through holes, lookup of used entries, shrink, failed allocations,
 * and the memory bounds the design promises (under 12.5% slack; a hole
 * costs its directory slot, not 16 bytes per block).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "blockmap.h"
#include "support.h"

static void set(bf_blockmap *m, const bf_allocator *a, uint32_t b, uint64_t off)
{
    bf_map_entry *e = bf_map_slot(m, a, b);
    assert_non_null(e);
    assert_int_equal(e->cap, 0); /* new entries are holes */
    *e = (bf_map_entry){off, 100 | BF_MAP_RAW, 128};
}

static void test_grow_and_shrink(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_blockmap m = {0};
    assert_null(bf_map_get(&m, 0));
    set(&m, &cnt.hooks, 9, 4096);
    assert_int_equal(m.n, 10);
    for (uint32_t b = 0; b < 9; b++)
        assert_false(bf_map_used(bf_map_get(&m, b)));
    assert_int_equal(bf_map_len(bf_map_get(&m, 9)), 100);
    /* Appending one block at a time: under 12.5% slack over 16 bytes per block. */
    for (uint32_t b = 10; b < 100000; b++)
        set(&m, &cnt.hooks, b, (uint64_t)b * 200);
    assert_true(cnt.live_bytes <= (int64_t)(100000 * 16 * 9 / 8));
    assert_int_equal((int64_t)bf_map_memory(&m), cnt.live_bytes);
    assert_int_equal(bf_map_get(&m, 9)->off, 4096);
    assert_int_equal(bf_map_get(&m, 77777)->off, 77777u * 200);
    bf_map_shrink(&m, &cnt.hooks, 5000); /* across leaves, still two */
    assert_int_equal(m.n, 5000);
    assert_null(bf_map_get(&m, 5000));
    assert_int_equal(bf_map_get(&m, 4999)->off, 4999u * 200);
    assert_int_equal((int64_t)bf_map_memory(&m), cnt.live_bytes);
    bf_map_shrink(&m, &cnt.hooks, 5); /* back to a single leaf */
    assert_int_equal(m.n, 5);
    assert_null(bf_map_get(&m, 5));
    assert_true(cnt.live_bytes < 1024);
    set(&m, &cnt.hooks, 6, 1); /* entries once used past the end come back as holes */
    assert_false(bf_map_used(bf_map_get(&m, 5)));
    bf_map_free(&m, &cnt.hooks);
    assert_int_equal(cnt.live_bytes, 0);
}

static void test_sparse(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_blockmap m = {0};
    set(&m, &cnt.hooks, 3, 1);
    set(&m, &cnt.hooks, BF_MAP_MAX_BLOCK, 2);
    /* The directory (8 bytes per 4096 blocks) and two leaves, not 64 GiB. */
    assert_true(cnt.live_bytes < 9 << 20);
    assert_int_equal((int64_t)bf_map_memory(&m), cnt.live_bytes);
    assert_false(bf_map_used(bf_map_get(&m, 123456789)));
    set(&m, &cnt.hooks, 123456789, 3); /* a leaf of holes gets storage */
    uint64_t b = 4;
    assert_int_equal(bf_map_next(&m, &b)->off, 3);
    assert_int_equal(b, 123456789);
    b++;
    assert_int_equal(bf_map_next(&m, &b)->off, 2);
    assert_int_equal(b, BF_MAP_MAX_BLOCK);
    b++;
    assert_null(bf_map_next(&m, &b));
    bf_map_shrink(&m, &cnt.hooks, 4);
    assert_true(cnt.live_bytes < 1024);
    b = 0;
    assert_int_equal(bf_map_next(&m, &b)->off, 1);
    assert_int_equal(b, 3);
    bf_map_free(&m, &cnt.hooks);
    assert_int_equal(cnt.live_bytes, 0);
}

/* Every allocation that growth makes fails once: the map stays as it was. */
static void test_failed_growth(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    for (uint64_t fail = 1; fail < 8; fail++) {
        bf_blockmap m = {0};
        for (uint32_t b = 0; b < 4000; b++)
            set(&m, &cnt.hooks, b, b + 1);
        cnt.fail_at = fail;
        bf_map_entry *e = bf_map_slot(&m, &cnt.hooks, 3 * BF_MAP_LEAF + 7);
        cnt.fail_at = 0;
        if (e == NULL) {
            assert_int_equal(m.n, 4000);
        } else {
            assert_int_equal(m.n, 3 * BF_MAP_LEAF + 8);
            e->cap = 1;
        }
        for (uint32_t b = 0; b < 4000; b++)
            assert_int_equal(bf_map_get(&m, b)->off, b + 1);
        assert_int_equal((int64_t)bf_map_memory(&m) <= cnt.live_bytes, 1);
        bf_map_free(&m, &cnt.hooks);
        assert_int_equal(cnt.live_bytes, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_shrink),
        cmocka_unit_test(test_sparse),
        cmocka_unit_test(test_failed_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
