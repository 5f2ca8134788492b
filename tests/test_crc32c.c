/*
 * test_crc32c.c - CRC-32C against the standard check value, and every
 * implementation this machine runs (bf_crc32c_impl: the crc32 instruction's
 * chains, PCLMULQDQ and VPCLMULQDQ folding) against the portable table at
 * every length to 1100, the folding paths' boundaries, every alignment to
 * 63, random initial CRCs, and chained calls; the copying forms
 * (bf_crc32c_copy_impl) likewise, and that they copy exactly.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "crc32c.h"
#include "support.h"

/*
 * First in the run, so that the threads race for the one-time initialisation (the
 * dispatch and the fold constants): ThreadSanitizer (ctest -L threads) checks that each
 * thread sees it complete, and each thread's result is checked against the bitwise
 * definition, which needs no initialisation.
 */
#define RACE_THREADS 8
#define RACE_LEN 9000

struct race {
    const unsigned char *buf;
    size_t off;
    uint32_t got;
};

static void *race_run(void *arg)
{
    struct race *r = arg;
    r->got = bf_crc32c(0, r->buf + r->off, RACE_LEN);
    return NULL;
}

/* The portable CRC computed bit by bit, independent of crc32c.c's tables. */
static uint32_t crc_bitwise(uint32_t crc, const unsigned char *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
    }
    return ~crc;
}

static void test_concurrent_first_use(void **state)
{
    (void)state;
    static unsigned char buf[RACE_LEN + RACE_THREADS];
    t_rng r = {99};
    t_fill(&r, T_DATA_RANDOM, buf, sizeof(buf));
    struct race args[RACE_THREADS];
    pthread_t th[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        args[i] = (struct race){buf, (size_t)i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race_run, &args[i]), 0);
    }
    for (int i = 0; i < RACE_THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].got, crc_bitwise(0, buf + i, RACE_LEN));
    }
}

static void test_check_value(void **state)
{
    (void)state;
    /* The CRC-32C check value of "123456789" (RFC 3720 appendix). */
    assert_int_equal(bf_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(bf_crc32c_sw(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(bf_crc32c(0, "", 0), 0);
    for (int w = 0; w < BF_CRC32C_KINDS; w++) {
        bf_crc32c_fn fn = bf_crc32c_impl(w);
        if (fn) {
            assert_int_equal(fn(0, "123456789", 9), 0xe3069283u);
            assert_int_equal(fn(0, "", 0), 0);
        }
    }
}

/* The table is always there, the selected one is the fastest there, bf_crc32c is it. */
static void test_dispatch(void **state)
{
    (void)state;
    assert_non_null(bf_crc32c_impl(BF_CRC32C_TABLE));
    assert_null(bf_crc32c_impl(-1));
    assert_null(bf_crc32c_impl(BF_CRC32C_KINDS));
    int sel = bf_crc32c_selected();
    assert_non_null(bf_crc32c_impl(sel));
    for (int w = sel + 1; w < BF_CRC32C_KINDS; w++)
        assert_null(bf_crc32c_impl(w));
    char have[128] = "";
    for (int w = 0; w < BF_CRC32C_KINDS; w++)
        if (bf_crc32c_impl(w)) {
            strcat(have, " ");
            strcat(have, bf_crc32c_impl_name(w));
        }
    print_message("crc32c implementations on this machine:%s; bf_crc32c uses %s\n", have,
                  bf_crc32c_impl_name(sel));
    static unsigned char buf[5000];
    t_rng r = {3};
    t_fill(&r, T_DATA_RANDOM, buf, sizeof(buf));
    bf_crc32c_fn fn = bf_crc32c_impl(sel);
    for (size_t len = 0; len <= sizeof(buf); len += 97)
        assert_int_equal(bf_crc32c(5, buf, len), fn(5, buf, len));
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

/*
 * Every implementation but the table against the table on buf + align (len bytes, one
 * random initial CRC for all). On a mismatch, names the case (cmocka's message alone would
 * give two numbers).
 */
static void check_all(t_rng *r, const unsigned char *buf, size_t align, size_t len)
{
    uint32_t init = (uint32_t)t_next(r);
    uint32_t want = bf_crc32c_sw(init, buf + align, len);
    for (int w = BF_CRC32C_TABLE + 1; w < BF_CRC32C_KINDS; w++) {
        bf_crc32c_fn fn = bf_crc32c_impl(w);
        uint32_t got = fn ? fn(init, buf + align, len) : want;
        if (got != want)
            fail_msg("%s: length %zu at alignment %zu, initial CRC %08x: %08x, table %08x",
                     bf_crc32c_impl_name(w), len, align, (unsigned)init, (unsigned)got,
                     (unsigned)want);
    }
}

#define MAX_ALIGN 64
#define BIG (65536 + 1100)

/* Every length 0..1100 at every alignment 0..63. */
static void test_every_length_and_alignment(void **state)
{
    (void)state;
    unsigned char *buf = malloc(1100 + MAX_ALIGN);
    assert_non_null(buf);
    t_rng r = {1234};
    t_fill(&r, T_DATA_RANDOM, buf, 1100 + MAX_ALIGN);
    for (size_t align = 0; align < MAX_ALIGN; align++)
        for (size_t len = 0; len <= 1100; len++)
            check_all(&r, buf, align, len);
    free(buf);
}

/*
 * Lengths at the folding paths' boundaries: the 256-byte threshold and 4 x 512-bit step,
 * the 64-byte and 16-byte steps after it, the chains' stretches (384, 3072), an 8 KiB
 * block, and 64 KiB and on; each at every alignment, on random bytes, all ones and zeros.
 */
static void test_boundaries(void **state)
{
    (void)state;
    static const size_t base[] = {255,  256,  257,  271,  272,  319,  320,  383,  384,  385,
                                  511,  512,  513,  527,  575,  576,  1023, 1024, 1025, 3071,
                                  3072, 3073, 4095, 4096, 4097, 8191, 8192, 8193, 8224};
    unsigned char *buf = malloc(BIG + MAX_ALIGN);
    assert_non_null(buf);
    t_rng r = {77};
    for (int fill = 0; fill < 3; fill++) {
        if (fill == 0)
            t_fill(&r, T_DATA_RANDOM, buf, BIG + MAX_ALIGN);
        else
            memset(buf, fill == 1 ? 0xff : 0, BIG + MAX_ALIGN);
        for (size_t align = 0; align < MAX_ALIGN; align++) {
            for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
                check_all(&r, buf, align, base[i]);
            for (size_t k = 0; k <= 1100; k += align == 0 ? 1 : 61)
                check_all(&r, buf, align, 65536 - 17 + k);
        }
    }
    free(buf);
}

/* Random lengths, offsets, data kinds and initial CRCs. */
static void test_random(void **state)
{
    (void)state;
    unsigned char *buf = malloc(BIG + MAX_ALIGN);
    assert_non_null(buf);
    t_rng r = {2026};
    for (int round = 0; round < 40; round++) {
        t_fill(&r, (t_data)(round % 3), buf, BIG + MAX_ALIGN);
        for (int i = 0; i < 25; i++) {
            size_t len = t_below(&r, 4) ? t_below(&r, 20000) : t_below(&r, BIG);
            check_all(&r, buf, t_below(&r, MAX_ALIGN), len);
        }
    }
    free(buf);
}

/* crc(a) then b == crc(a || b), for every implementation and cuts on both sides of the
   thresholds, also when one implementation hands its CRC on to another. */
static void test_chaining(void **state)
{
    (void)state;
    enum { N = 20000 };
    unsigned char *buf = malloc(N);
    assert_non_null(buf);
    t_rng r = {7};
    t_fill(&r, T_DATA_MIXED, buf, N);
    static const size_t lens[] = {0, 1, 100, 255, 256, 300, 1000, 4097, 8192, 8224, N};
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t len = lens[li];
        uint32_t init = (uint32_t)t_next(&r);
        uint32_t whole = bf_crc32c_sw(init, buf, len);
        for (int w = 0; w < BF_CRC32C_KINDS; w++) {
            bf_crc32c_fn a = bf_crc32c_impl(w);
            if (!a)
                continue;
            for (size_t cut = 0; cut <= len; cut += cut < 600 ? 1 : 251) {
                bf_crc32c_fn b = bf_crc32c_impl((int)((w + cut) % BF_CRC32C_KINDS));
                b = b ? b : a;
                assert_int_equal(b(a(init, buf, cut), buf + cut, len - cut), whole);
            }
            /* Many small pieces in a row. */
            uint32_t c = init;
            for (size_t at = 0; at < len;) {
                size_t piece = 1 + t_below(&r, 700);
                piece = piece < len - at ? piece : len - at;
                c = a(c, buf + at, piece);
                at += piece;
            }
            assert_int_equal(c, whole);
        }
    }
    free(buf);
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

/* The bare-block check in one call: the 8 bytes of the number, low first, then the data, as
   the table computes it (the value persisted indexes hold must not change). */
static void test_le64_prefix(void **state)
{
    (void)state;
    unsigned char buf[9000];
    t_rng r = {13};
    t_fill(&r, T_DATA_RANDOM, buf, sizeof(buf));
    const uint64_t nums[] = {0, 1, 0x0102030405060708ull, UINT64_MAX, 4095};
    for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
        unsigned char b[8];
        for (int i = 0; i < 8; i++)
            b[i] = (unsigned char)(nums[k] >> (8 * i));
        for (size_t len = 0; len <= sizeof(buf); len += 997)
            assert_int_equal(bf_crc32c_le64(nums[k], buf, len),
                             bf_crc32c_sw(bf_crc32c_sw(0, b, 8), buf, len));
    }
}

/*
 * The copying forms: each implementation's sums like the table and copies exactly its
 * bytes (every length to 1100 and the folding boundaries up to an 8 KiB block and past it,
 * source and destination at different alignments), writing nothing before or after them;
 * bf_crc32c_le64_copy is bf_crc32c_le64 plus the copy.
 */
static void test_copy_sums_and_copies(void **state)
{
    (void)state;
    enum { N = 9000, PAD = 80 };
    unsigned char *src = malloc(N + MAX_ALIGN), *dst = malloc(N + MAX_ALIGN + 2 * PAD);
    assert_non_null(src);
    assert_non_null(dst);
    t_rng r = {4242};
    t_fill(&r, T_DATA_RANDOM, src, N + MAX_ALIGN);
    static const size_t big[] = {1023, 1024, 1025, 4096, 8191, 8192, 8193, 8224, N - 1};
    for (size_t i = 0; i <= 1100 + sizeof(big) / sizeof(big[0]); i++) {
        size_t len = i <= 1100 ? i : big[i - 1101];
        size_t sa = t_below(&r, MAX_ALIGN), da = t_below(&r, MAX_ALIGN);
        uint32_t init = (uint32_t)t_next(&r);
        uint32_t want = bf_crc32c_sw(init, src + sa, len);
        for (int w = 0; w < BF_CRC32C_KINDS; w++) {
            bf_crc32c_copy_fn fn = bf_crc32c_copy_impl(w);
            if (!fn)
                continue;
            memset(dst, 0xa5, N + MAX_ALIGN + 2 * PAD);
            unsigned char *d = dst + PAD + da;
            uint32_t got = fn(init, d, src + sa, len);
            if (got != want || memcmp(d, src + sa, len) != 0)
                fail_msg("%s copying: length %zu, source alignment %zu, destination %zu: "
                         "%08x, table %08x, bytes %s",
                         bf_crc32c_impl_name(w), len, sa, da, (unsigned)got, (unsigned)want,
                         memcmp(d, src + sa, len) == 0 ? "equal" : "differ");
            for (size_t k = 0; k < PAD + da; k++)
                assert_int_equal(dst[k], 0xa5);
            for (size_t k = PAD + da + len; k < N + MAX_ALIGN + 2 * PAD; k++)
                assert_int_equal(dst[k], 0xa5);
        }
        memset(dst, 0, len);
        assert_int_equal(bf_crc32c_le64_copy(i, dst, src + sa, len),
                         bf_crc32c_le64(i, src + sa, len));
        assert_memory_equal(dst, src + sa, len);
    }
    assert_null(bf_crc32c_copy_impl(-1));
    assert_null(bf_crc32c_copy_impl(BF_CRC32C_KINDS));
    free(src);
    free(dst);
}

/* The table itself against the bitwise definition (the reference of every test above). */
static void test_table_is_crc32c(void **state)
{
    (void)state;
    unsigned char buf[3000];
    t_rng r = {11};
    t_fill(&r, T_DATA_RANDOM, buf, sizeof(buf));
    for (size_t len = 0; len <= sizeof(buf); len += 13) {
        uint32_t init = (uint32_t)t_next(&r);
        assert_int_equal(bf_crc32c_sw(init, buf + len % 8, len - len % 8),
                         crc_bitwise(init, buf + len % 8, len - len % 8));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_first_use), /* first: the initialisation races */
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_table_is_crc32c),
        cmocka_unit_test(test_fast_equals_portable),
        cmocka_unit_test(test_every_length_and_alignment),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_chaining),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_le64_prefix),
        cmocka_unit_test(test_copy_sums_and_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
