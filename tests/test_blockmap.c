/*
 * test_blockmap.c - the two-level block map: growth one block at a time
 * and through holes, lookup of used entries, shrink, failed allocations,
 * and the memory bound buffile.h states, counted through the allocator
 * hooks: dense runs cost 16 bytes per block, sparse blocks at most 31, a
 * hole its share of the directory - whatever the pattern, and
 * after random sequences of slots, puts, clears and shrinks checked against
 * a reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "blockmap.h"
#include "support.h"

static void set(bf_blockmap *m, const bf_allocator *a, uint32_t b, uint64_t off)
{
    bf_map_entry *e = bf_map_slot(m, a, b);
    assert_non_null(e);
    assert_int_equal(e->cap, 0); /* new entries are holes */
    bf_map_entry v = {off, 100 | BF_MAP_RAW, 128};
    bf_map_put(m, b, &v);
}

/* The map's memory is what the allocator holds, and within buffile.h's bound. */
static void assert_bounded(const bf_blockmap *m, const t_counting *cnt)
{
    assert_int_equal((int64_t)bf_map_memory(m), cnt->live_bytes);
    uint64_t used = t_map_used(m);
    if (bf_map_memory(m) > t_map_bound(used, m->n))
        fail_msg("%llu bytes of map for %llu blocks holding data of %u: the bound is %llu",
                 (unsigned long long)bf_map_memory(m), (unsigned long long)used, m->n,
                 (unsigned long long)t_map_bound(used, m->n));
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
    /* Appending one block at a time: dense leaves, under 12.5% slack over 16 bytes a block. */
    for (uint32_t b = 10; b < 100000; b++)
        set(&m, &cnt.hooks, b, (uint64_t)b * 200);
    assert_true(cnt.live_bytes <= (int64_t)(100000 * 16 * 9 / 8));
    assert_bounded(&m, &cnt);
    assert_int_equal(bf_map_get(&m, 9)->off, 4096);
    assert_int_equal(bf_map_get(&m, 77777)->off, 77777u * 200);
    bf_map_shrink(&m, &cnt.hooks, 5000); /* across leaves, still two */
    assert_int_equal(m.n, 5000);
    assert_null(bf_map_get(&m, 5000));
    assert_int_equal(bf_map_get(&m, 4999)->off, 4999u * 200);
    assert_bounded(&m, &cnt);
    bf_map_shrink(&m, &cnt.hooks, 5); /* back to a single leaf */
    assert_int_equal(m.n, 5);
    assert_null(bf_map_get(&m, 5));
    assert_true(cnt.live_bytes < 1024);
    set(&m, &cnt.hooks, 6, 1); /* entries once used past the end come back as holes */
    assert_false(bf_map_used(bf_map_get(&m, 5)));
    bf_map_free(&m, &cnt.hooks);
    assert_int_equal(cnt.live_bytes, 0);
}

/*
 * A file's first blocks appended one at a time (a spill's common case) allocate a few
 * times, not once a block: the compact leaf grows in steps, and the map stays within its
 * bound at every size.
 */
static void test_append_allocates_in_steps(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_blockmap m = {0};
    for (uint32_t b = 0; b < 16; b++) {
        set(&m, &cnt.hooks, b, (uint64_t)b * 8192);
        assert_bounded(&m, &cnt);
    }
    if (cnt.calls > 8)
        fail_msg("%llu allocator calls for a map's first 16 blocks appended",
                 (unsigned long long)cnt.calls);
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
    /* The directory (12 bytes and a bit per 4096 blocks) and two one-entry leaves, not 64 GiB. */
    assert_true(cnt.live_bytes < (12 << 20) + (128 << 10) + 256);
    assert_bounded(&m, &cnt);
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
    assert_true(cnt.live_bytes < 64);
    b = 0;
    assert_int_equal(bf_map_next(&m, &b)->off, 1);
    assert_int_equal(b, 3);
    bf_map_free(&m, &cnt.hooks);
    assert_int_equal(cnt.live_bytes, 0);
}

/*
 * One block of data every `stride` blocks, `count` of them (before compact
 * leaves, 2000 blocks 4096 apart took a 64 KiB leaf each, 125 MiB), then
 * every other one cleared, then the others: within the bound at every step,
 * and nothing left once all are holes.
 */
static void test_strides(void **state)
{
    (void)state;
    static const uint32_t strides[] = {1, 2, 3, 7, 16, 100, 1000, 4095, 4096, 4097, 65536};
    for (size_t s = 0; s < sizeof(strides) / sizeof(strides[0]); s++) {
        t_counting cnt;
        t_counting_init(&cnt);
        bf_blockmap m = {0};
        uint32_t count = strides[s] < 16 ? 20000 : 2000;
        for (uint32_t i = 0; i < count; i++) {
            set(&m, &cnt.hooks, i * strides[s], i + 1);
            if (i % 97 == 0)
                assert_bounded(&m, &cnt);
        }
        assert_bounded(&m, &cnt);
        print_message("  stride %5u: %u blocks, %lld bytes of map (%.1f per block)\n", strides[s],
                      count, (long long)cnt.live_bytes, (double)cnt.live_bytes / count);
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t i = (uint32_t)pass; i < count; i += 2) {
                bf_map_clear(&m, &cnt.hooks, (uint64_t)i * strides[s]);
                if (i % 89 == 0)
                    assert_bounded(&m, &cnt);
            }
        assert_int_equal(cnt.live_bytes, (int64_t)bf_map_memory(&m));
        assert_int_equal(t_map_used(&m), 0);
        bf_map_shrink(&m, &cnt.hooks, 0);
        assert_int_equal(cnt.live_bytes, 0);
    }
}

/*
 * A small dense leaf emptied one block at a time, from either end and from the middle: within
 * the bound at every count. The dense leaf must turn compact before it costs more than 31
 * bytes a block holding data (a leaf of 17 appended blocks cleared to 9 held 288 bytes where
 * 279 were allowed, found by fuzz_ops).
 */
static void test_small_dense_leaf_emptied(void **state)
{
    (void)state;
    for (uint32_t n = 15; n <= 40; n++)
        for (int order = 0; order < 3; order++) {
            t_counting cnt;
            t_counting_init(&cnt);
            bf_blockmap m = {0};
            for (uint32_t b = 0; b < n; b++)
                set(&m, &cnt.hooks, b, (uint64_t)b * 8192 + 1);
            assert_bounded(&m, &cnt);
            for (uint32_t k = 0; k < n; k++) {
                uint32_t b = order == 0 ? k : order == 1 ? n - 1 - k : (k * 7) % n;
                if (order == 2 && n % 7 == 0)
                    b = k; /* 7 does not walk every block of a multiple of 7 */
                bf_map_clear(&m, &cnt.hooks, b);
                assert_bounded(&m, &cnt);
            }
            assert_int_equal(t_map_used(&m), 0);
            bf_map_free(&m, &cnt.hooks);
            assert_int_equal(cnt.live_bytes, 0);
        }
}

/* Every allocation that growth makes fails once: the map stays as it was. */
static void test_failed_growth(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    for (uint64_t fail = 1; fail < 8; fail++) {
        static const uint32_t far[3] = {3 * BF_MAP_LEAF + 7, 4000, 100};
        for (int k = 0; k < 3; k++) {
            bf_blockmap m = {0};
            for (uint32_t b = 0; b < 4000; b += k == 2 ? 2 : 1)
                set(&m, &cnt.hooks, b, b + 1);
            uint32_t n = m.n;
            cnt.fail_at = fail;
            bf_map_entry *e = bf_map_slot(&m, &cnt.hooks, far[k] + (k == 2));
            cnt.fail_at = 0;
            if (e == NULL) {
                assert_int_equal(m.n, n);
            } else {
                bf_map_entry v = {7, 40, 64};
                bf_map_put(&m, far[k] + (k == 2), &v);
            }
            for (uint32_t b = 0; b < 4000; b += k == 2 ? 2 : 1)
                assert_int_equal(bf_map_get(&m, b)->off, b + 1);
            assert_int_equal((int64_t)bf_map_memory(&m), cnt.live_bytes);
            bf_map_free(&m, &cnt.hooks);
            assert_int_equal(cnt.live_bytes, 0);
        }
    }
}

/* Block numbers a sequence uses: clustered, scattered, in ranges of many leaves. */
static uint32_t pick_block(t_rng *r)
{
    switch (t_below(r, 5)) {
    case 0: return (uint32_t)t_below(r, 64);
    case 1: return (uint32_t)t_below(r, 3 * BF_MAP_LEAF);
    case 2: return (uint32_t)(t_below(r, 40) * 4096 + t_below(r, 3));
    case 3: return 64 * BF_MAP_LEAF - (uint32_t)t_below(r, 5000);
    default: return (uint32_t)t_below(r, 64 * BF_MAP_LEAF);
    }
}

#define NREF 600

/*
 * Random slots (some never filled and cleared, as a failed write leaves
 * them), puts, clears and shrinks against a reference list of the blocks
 * holding data; half the sequences with allocations failing at random.
 * After every call: each block of the reference and some others read as
 * the reference says, bf_map_next walks exactly the reference, and, while
 * nothing failed, the memory is what the allocator holds and within the
 * bound (after a failure, at most what it holds).
 */
static void test_random_against_reference(void **state)
{
    (void)state;
    static uint32_t ref[NREF];
    static uint64_t val[NREF];
    for (uint64_t seq = 0; seq < 60; seq++) {
        t_rng r = {seq + 1};
        t_counting cnt;
        t_counting_init(&cnt);
        bf_blockmap m = {0};
        int nref = 0, failures = seq % 2 == 1, failed = 0;
        for (int step = 0; step < 3000; step++) {
            uint32_t b = pick_block(&r);
            int at = -1;
            for (int i = 0; i < nref; i++)
                if (ref[i] == b)
                    at = i;
            int armed = failures && t_below(&r, 4) == 0;
            if (armed)
                cnt.fail_at = 1 + t_below(&r, 3);
            uint64_t k = t_below(&r, 100);
            if (k < 55 && (at >= 0 || nref < NREF)) { /* store, or room left unfilled */
                bf_map_entry *e = bf_map_slot(&m, &cnt.hooks, b);
                if (e == NULL) {
                    failed = 1;
                } else if (t_below(&r, 8) == 0 && at < 0) {
                    bf_map_clear(&m, &cnt.hooks, b); /* a failed write gives its room back */
                } else {
                    bf_map_entry v = {t_next(&r) & BF_MAP_OFF_MASK, 33, 64};
                    bf_map_put(&m, b, &v);
                    if (at < 0)
                        at = nref++;
                    ref[at] = b;
                    val[at] = v.off;
                }
            } else if (k < 90) {
                if (at < 0 && nref > 0)
                    b = ref[at = (int)t_below(&r, (uint64_t)nref)];
                bf_map_clear(&m, &cnt.hooks, b);
                if (at >= 0) {
                    ref[at] = ref[--nref];
                    val[at] = val[nref];
                }
            } else {
                uint32_t to = t_below(&r, 3) ? b : (uint32_t)t_below(&r, 100);
                bf_map_shrink(&m, &cnt.hooks, to < m.n ? to : m.n);
                for (int i = 0; i < nref;)
                    if (ref[i] >= to) {
                        ref[i] = ref[--nref];
                        val[i] = val[nref];
                    } else {
                        i++;
                    }
            }
            failed |= armed && cnt.fail_at == 0; /* it struck, perhaps inside a call */
            cnt.fail_at = 0;
            for (int i = 0; i < nref; i++) {
                const bf_map_entry *e = bf_map_get(&m, ref[i]);
                if (!bf_map_used(e) || e->off != val[i])
                    fail_msg("seq %llu step %d: block %u lost its entry", (unsigned long long)seq,
                             step, ref[i]);
            }
            uint64_t walked = 0;
            for (uint64_t x = 0; bf_map_next(&m, &x) != NULL; x++)
                walked++;
            assert_int_equal(walked, nref);
            uint32_t other = pick_block(&r);
            int known = 0;
            for (int i = 0; i < nref; i++)
                known |= ref[i] == other;
            assert_true(known || !bf_map_used(bf_map_get(&m, other)));
            /* A shrink that could not give memory back holds more than the map counts. */
            if (failed ? (int64_t)bf_map_memory(&m) > cnt.live_bytes
                       : (int64_t)bf_map_memory(&m) != cnt.live_bytes)
                fail_msg("seq %llu step %d (op %llu, block %u): map says %llu bytes, the "
                         "allocator holds %lld",
                         (unsigned long long)seq, step, (unsigned long long)k, b,
                         (unsigned long long)bf_map_memory(&m), (long long)cnt.live_bytes);
            if (!failed)
                assert_bounded(&m, &cnt);
        }
        bf_map_free(&m, &cnt.hooks);
        assert_int_equal(cnt.live_bytes, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_shrink),
        cmocka_unit_test(test_append_allocates_in_steps),
        cmocka_unit_test(test_sparse),
        cmocka_unit_test(test_strides),
        cmocka_unit_test(test_small_dense_leaf_emptied),
        cmocka_unit_test(test_failed_growth),
        cmocka_unit_test(test_random_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
