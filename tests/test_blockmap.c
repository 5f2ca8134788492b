/*
 * test_blockmap.c - block map growth (holes), shrink, and its memory bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "blockmap.h"
#include "support.h"

static void test_grow_and_shrink(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_blockmap m = {0};
    assert_null(bf_map_get(&m, 0));
    assert_int_equal(bf_map_ensure(&m, &cnt.hooks, 9), BF_OK);
    assert_int_equal(m.n, 10);
    for (uint32_t b = 0; b < 10; b++)
        assert_int_equal(bf_map_get(&m, b)->cap, 0); /* new entries are holes */
    m.e[3] = (bf_map_entry){4096, 100 | BF_MAP_RAW, 128};
    assert_int_equal(bf_map_len(bf_map_get(&m, 3)), 100);
    /* Appending one block at a time stays within 16 bytes x 1.125 per block (+ slack of 16). */
    for (uint32_t b = 10; b < 100000; b++)
        assert_int_equal(bf_map_ensure(&m, &cnt.hooks, b), BF_OK);
    assert_true(cnt.live_bytes <= (int64_t)(100000 * 16 * 9 / 8 + 32 * 16));
    assert_int_equal(bf_map_get(&m, 3)->off, 4096);
    bf_map_shrink(&m, &cnt.hooks, 5);
    assert_int_equal(m.n, 5);
    assert_null(bf_map_get(&m, 5));
    assert_true(cnt.live_bytes < 1024);
    bf_map_shrink(&m, &cnt.hooks, 0);
    assert_int_equal(cnt.live_bytes, 0);
    bf_map_free(&m, &cnt.hooks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_shrink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
