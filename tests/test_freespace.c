/*
 * test_freespace.c - best fit, splitting, tail detection of the free list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "alloc.h"
#include "freespace.h"

static void test_best_fit_and_split(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    bf_freespace fs = {0};
    bf_free_put(&fs, a, 0, 1000);
    bf_free_put(&fs, a, 5000, 300);
    bf_free_put(&fs, a, 9000, 600);
    bf_chunk ch;
    /* Best fit: 500 takes the 600 chunk, not the 1000 one; remainder 100 < split_min stays. */
    assert_int_equal(bf_free_take(&fs, a, 500, 200, &ch), 1);
    assert_int_equal(ch.off, 9000);
    assert_int_equal(ch.cap, 600);
    /* 400 from the 1000 chunk splits (600 left >= 200). */
    assert_int_equal(bf_free_take(&fs, a, 400, 200, &ch), 1);
    assert_int_equal(ch.off, 0);
    assert_int_equal(ch.cap, 400);
    assert_int_equal(fs.n, 2);
    assert_int_equal(bf_free_take(&fs, a, 700, 200, &ch), 0);
    assert_int_equal(bf_free_take(&fs, a, 600, 200, &ch), 1);
    assert_int_equal(ch.off, 400);
    assert_int_equal(bf_free_take(&fs, a, 300, 200, &ch), 1);
    assert_int_equal(ch.off, 5000);
    assert_int_equal(fs.n, 0);
    bf_free_clear(&fs, a);
}

static void test_tail(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    bf_freespace fs = {0};
    bf_free_put(&fs, a, 100, 50);  /* 100..150 */
    bf_free_put(&fs, a, 150, 100); /* 150..250 */
    bf_free_put(&fs, a, 10, 20);   /* not adjacent */
    assert_int_equal(bf_free_tail_start(&fs, 250), 100);
    assert_int_equal(bf_free_tail_start(&fs, 300), 300);
    bf_free_drop_beyond(&fs, 100);
    assert_int_equal(fs.n, 1);
    assert_int_equal(fs.c[0].off, 10);
    bf_free_clear(&fs, a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_fit_and_split),
        cmocka_unit_test(test_tail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
