/*
 * test_crc32c.c - CRC-32C against the standard check value, and the fast
 * path against the portable one at every alignment and length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "crc32c.h"
#include "support.h"

static void test_check_value(void **state)
{
    (void)state;
    /* The CRC-32C check value of "123456789" (RFC 3720 appendix). */
    assert_int_equal(bf_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(bf_crc32c_sw(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(bf_crc32c(0, "", 0), 0);
}

static void test_fast_equals_portable(void **state)
{
    (void)state;
    /* Lengths cover the three-chain stretches (3 x 1024, 3 x 128) and every remainder. */
    static unsigned char buf[20000 + 16];
    t_rng r = {42};
    t_fill(&r, T_DATA_RANDOM, buf, sizeof(buf));
    for (size_t align = 0; align < 8; align++)
        for (size_t len = 0; len < 20000; len += len < 400 ? 7 : 211)
            assert_int_equal(bf_crc32c(0, buf + align, len), bf_crc32c_sw(0, buf + align, len));
    assert_int_equal(bf_crc32c(0, buf, 3072), bf_crc32c_sw(0, buf, 3072));
    assert_int_equal(bf_crc32c(0, buf, 384), bf_crc32c_sw(0, buf, 384));
}

static void test_incremental(void **state)
{
    (void)state;
    unsigned char buf[1000];
    t_rng r = {7};
    t_fill(&r, T_DATA_TEXT, buf, sizeof(buf));
    uint32_t whole = bf_crc32c(0, buf, sizeof(buf));
    for (size_t cut = 0; cut <= sizeof(buf); cut += 37)
        assert_int_equal(bf_crc32c(bf_crc32c(0, buf, cut), buf + cut, sizeof(buf) - cut), whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_fast_equals_portable),
        cmocka_unit_test(test_incremental),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
