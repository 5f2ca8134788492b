/*
 * test_paired.c - the statistics of paired runs: known inputs give known
 * intervals (worked out by hand, in the comments), and the per-round
 * shuffle is a permutation that varies with the round and the seed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "paired.h"

static void close_to(double got, double want)
{
    if (fabs(got - want) > 1e-6 * fabs(want))
        fail_msg("%.9f, expected %.9f", got, want);
}

static void test_t_quantiles(void **state)
{
    (void)state;
    close_to(pd_t975(1), 12.706);
    close_to(pd_t975(4), 2.776);
    close_to(pd_t975(30), 2.042);
    assert_true(fabs(pd_t975(1000) - 1.96) < 0.001);
    assert_true(isnan(pd_t975(0)));
}

static void test_ratio_interval(void **state)
{
    (void)state;
    /* Ratios 1.0, 1.1, 0.9, 1.05, 0.95: log mean -0.002511, sd 0.079317, t(4) 2.776,
       half-width 2.776 * 0.079317 / sqrt(5) = 0.098469. */
    double num[5] = {10, 11, 9, 10.5, 9.5}, den[5] = {10, 10, 10, 10, 10};
    pd_interval iv = pd_ratio(num, den, 5);
    assert_int_equal(iv.n, 5);
    close_to(iv.est, 0.997492456);
    close_to(iv.lo, 0.903950987);
    close_to(iv.hi, 1.100713660);
    assert_true(pd_holds_one(&iv));
    assert_true(fabs(pd_halfwidth(&iv) - 0.10346) < 1e-4);
    /* The same ratios at any scale: only the pairs matter. */
    double num2[5] = {1000, 1100, 900, 1050, 950}, den2[5] = {1000, 1000, 1000, 1000, 1000};
    pd_interval iv2 = pd_ratio(num2, den2, 5);
    close_to(iv2.lo, iv.lo);
    /* A constant ratio has no spread; one pair has no interval. */
    double c[3] = {12, 24, 36}, d[3] = {10, 20, 30};
    iv = pd_ratio(c, d, 3);
    close_to(iv.est, 1.2);
    close_to(iv.lo, 1.2);
    assert_false(pd_holds_one(&iv));
    iv = pd_ratio(c, d, 1);
    close_to(iv.lo, iv.hi);
}

static void test_suite_interval(void **state)
{
    (void)state;
    /* 3 rounds x 3 queries (the middle one excluded) x 2 configurations. Per round the
       geometric mean of q0's and q2's ratios: 1.1489, 1.1, 1.1223; their log mean 0.116498,
       sd 0.021775, t(2) 4.303, half-width 0.054096. */
    double t[3 * 3 * 2] = {
        10, 12,   5, 50, 20, 22,   /* round 0: ratios 1.2, (10), 1.1 */
        11, 12.1, 5, 50, 19, 20.9, /* round 1: 1.1, (10), 1.1 */
        10, 11.5, 5, 50, 21, 23,   /* round 2: 1.15, (10), 1.0952 */
    };
    unsigned char use[3] = {1, 0, 1};
    pd_interval iv = pd_suite(t, 3, 3, 2, 1, use);
    assert_int_equal(iv.n, 3);
    close_to(iv.est, 1.123554855);
    close_to(iv.lo, 1.064389590);
    close_to(iv.hi, 1.186008885);
    /* Configuration 0 against itself: exactly 1, no spread. */
    iv = pd_suite(t, 3, 3, 2, 0, use);
    close_to(iv.est, 1.0);
    close_to(iv.hi, 1.0);
    unsigned char none[3] = {0, 0, 0};
    assert_int_equal(pd_suite(t, 3, 3, 2, 1, none).n, 0);
}

static void test_shuffle(void **state)
{
    (void)state;
    int seen_first[5] = {0};
    for (int r = 0; r < 200; r++) {
        int order[5], hit[5] = {0};
        pd_shuffle(42, r, 5, order);
        for (int i = 0; i < 5; i++) {
            assert_true(order[i] >= 0 && order[i] < 5);
            hit[order[i]]++;
        }
        for (int i = 0; i < 5; i++)
            assert_int_equal(hit[i], 1); /* every configuration once per round */
        seen_first[order[0]]++;
        int again[5];
        pd_shuffle(42, r, 5, again);
        assert_memory_equal(order, again, sizeof(order)); /* the seed replays it */
    }
    for (int i = 0; i < 5; i++)
        assert_true(seen_first[i] > 20); /* each goes first now and then (~40 of 200) */
    int a[5], b[5];
    pd_shuffle(1, 0, 5, a);
    pd_shuffle(2, 0, 5, b);
    int differ = memcmp(a, b, sizeof(a)) != 0;
    pd_shuffle(1, 1, 5, b);
    differ += memcmp(a, b, sizeof(a)) != 0;
    assert_true(differ >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_t_quantiles),
        cmocka_unit_test(test_ratio_interval),
        cmocka_unit_test(test_suite_interval),
        cmocka_unit_test(test_shuffle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
