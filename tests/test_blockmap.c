/*
 * test_blockmap.c - the two-level block map: growth one block at a time
 * and through holes, lookup of used entries, shrink, failed allocations,
 * and the memory bound buffile.h states, counted through the allocator
 * hooks: dense runs cost 16 bytes per block, bare blocks in stock's layout
 * 4, sparse blocks at most 31, a hole its share of the directory -
 * whatever the pattern, and
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

/* A bare block of `len` bytes at `off`, its check made up from both. */
static bf_map_entry bare(uint64_t off, uint32_t len)
{
    return (bf_map_entry){off, len | BF_MAP_RAW | BF_MAP_BARE, (uint32_t)(off * 2654435761u) ^ len};
}

static void put_entry(bf_blockmap *m, const bf_allocator *a, uint32_t b, bf_map_entry v)
{
    bf_map_entry *e = bf_map_slot(m, a, b);
    assert_non_null(e);
    bf_map_put(m, b, &v);
}

static void assert_entry(const bf_blockmap *m, uint32_t b, bf_map_entry v)
{
    const bf_map_entry *e = bf_map_get(m, b);
    if (!bf_map_used(e) || e->off != v.off || e->len != v.len || e->cap != v.cap)
        fail_msg("block %u: entry %llu/%x/%x, expected %llu/%x/%x", b,
                 e ? (unsigned long long)e->off : 0ull, e ? e->len : 0, e ? e->cap : 0,
                 (unsigned long long)v.off, v.len, v.cap);
}

/*
 * Bare blocks in stock's layout (each block_size bytes at block x block_size, as `none`
 * writes them) cost their check, 4 bytes a block, and what a run leaf adds, not 16: a
 * file's last, short block, a block rewritten in place, one rewritten elsewhere
 * (compressed) and holes each keep their entries, within the bound, and the map reads
 * as it was written at every step.
 */
static void test_bare_run(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_blockmap m = {0};
    const uint32_t n = 3 * BF_MAP_LEAF + 100;
    for (uint32_t b = 0; b < n; b++)
        put_entry(&m, &cnt.hooks, b, bare((uint64_t)b * 8192, 8192));
    assert_bounded(&m, &cnt);
    /* Four leaves' runs and the directory: 4 bytes a block and an eighth's growth. */
    if (cnt.live_bytes > (int64_t)n * 9 / 2 + 4 * 256 + 512)
        fail_msg("%lld bytes of map for %u bare blocks", (long long)cnt.live_bytes, n);
    for (uint32_t b = 0; b < n; b += 7)
        assert_entry(&m, b, bare((uint64_t)b * 8192, 8192));
    /* The file's end: a short block after the run, then the same block grown in place. */
    put_entry(&m, &cnt.hooks, n, bare((uint64_t)n * 8192, 300));
    assert_entry(&m, n, bare((uint64_t)n * 8192, 300));
    assert_entry(&m, n - 1, bare((uint64_t)(n - 1) * 8192, 8192));
    put_entry(&m, &cnt.hooks, n, bare((uint64_t)n * 8192, 8192));
    put_entry(&m, &cnt.hooks, n + 1, bare((uint64_t)(n + 1) * 8192, 8192));
    assert_entry(&m, n, bare((uint64_t)n * 8192, 8192));
    assert_entry(&m, n + 1, bare((uint64_t)(n + 1) * 8192, 8192));
    /* A block of the run rewritten in place (another check), and one rewritten elsewhere. */
    bf_map_entry in_place = bare(5 * 8192, 8192);
    in_place.cap ^= 0x5a5a;
    put_entry(&m, &cnt.hooks, 5, in_place);
    put_entry(&m, &cnt.hooks, 9, bare((uint64_t)(n + 9) * 8192, 8192));
    assert_entry(&m, 5, in_place);
    assert_entry(&m, 9, bare((uint64_t)(n + 9) * 8192, 8192));
    bf_map_entry packed = {123456, 2000 | BF_MAP_RAW, 2048};
    put_entry(&m, &cnt.hooks, BF_MAP_LEAF + 17, packed);
    assert_entry(&m, BF_MAP_LEAF + 17, packed);
    assert_entry(&m, BF_MAP_LEAF + 16, bare((uint64_t)(BF_MAP_LEAF + 16) * 8192, 8192));
    assert_bounded(&m, &cnt);
    /* Holes: the run's last block, one inside it, room made and given back. */
    assert_true(bf_map_clear(&m, &cnt.hooks, 2 * BF_MAP_LEAF - 1));
    assert_true(bf_map_clearable(&m, &cnt.hooks, 2 * BF_MAP_LEAF + 50));
    assert_true(bf_map_clear(&m, &cnt.hooks, 2 * BF_MAP_LEAF + 50));
    assert_non_null(bf_map_slot(&m, &cnt.hooks, n + 2));
    assert_false(bf_map_used(bf_map_get(&m, n + 2)));
    assert_true(bf_map_clear(&m, &cnt.hooks, n + 2));
    assert_false(bf_map_used(bf_map_get(&m, 2 * BF_MAP_LEAF - 1)));
    assert_false(bf_map_used(bf_map_get(&m, 2 * BF_MAP_LEAF + 50)));
    assert_bounded(&m, &cnt);
    uint64_t walked = 0;
    for (uint64_t b = 0; bf_map_next(&m, &b) != NULL; b++)
        walked++;
    assert_int_equal(walked, n + 2 - 2);
    for (uint32_t b = 0; b < n + 2; b++) {
        if (b == 2 * BF_MAP_LEAF - 1 || b == 2 * BF_MAP_LEAF + 50)
            continue;
        bf_map_entry v = b == 5                  ? in_place
                         : b == 9                ? bare((uint64_t)(n + 9) * 8192, 8192)
                         : b == BF_MAP_LEAF + 17 ? packed
                                                 : bare((uint64_t)b * 8192, 8192);
        assert_entry(&m, b, v);
    }
    /* Cut inside a run, then to its first blocks: what is left reads back, memory goes. */
    bf_map_shrink(&m, &cnt.hooks, 3 * BF_MAP_LEAF + 10);
    assert_entry(&m, 3 * BF_MAP_LEAF + 9, bare((uint64_t)(3 * BF_MAP_LEAF + 9) * 8192, 8192));
    assert_bounded(&m, &cnt);
    bf_map_shrink(&m, &cnt.hooks, 2);
    assert_entry(&m, 1, bare(8192, 8192));
    assert_bounded(&m, &cnt);
    bf_map_free(&m, &cnt.hooks);
    assert_int_equal(cnt.live_bytes, 0);
}

/*
 * A run that starts inside its leaf: an entry before it turns the leaf compact (a dense one
 * would cover 4,000 holes), a cut before it takes the leaf, and every allocation a change
 * of kind makes fails once: the map reads as it did.
 */
static void test_run_edges(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_blockmap m = {0};
    const uint32_t i0 = 4000, n = 40;
    for (uint32_t b = i0; b < i0 + n; b++)
        put_entry(&m, &cnt.hooks, b, bare((uint64_t)b * 8192, 8192));
    assert_true(cnt.live_bytes < 48 + 4 * 64); /* a run, not 4,040 dense entries */
    /* Room made after the run and not yet filled: a walk passes it by. */
    assert_non_null(bf_map_slot(&m, &cnt.hooks, i0 + n));
    uint64_t walked = 0;
    for (uint64_t x = 0; bf_map_next(&m, &x) != NULL; x++)
        walked++;
    assert_int_equal(walked, n);
    assert_true(bf_map_clear(&m, &cnt.hooks, i0 + n));
    /* The leaf's own entry a short block after the run, then a block far before it: the
       leaf turns compact with both (the first allocation failing once: as it was). */
    bf_map_entry tail = bare((uint64_t)(i0 + n) * 8192, 300), packed = {77, 500 | BF_MAP_RAW, 512};
    put_entry(&m, &cnt.hooks, i0 + n, tail);
    cnt.fail_at = 1;
    assert_null(bf_map_slot(&m, &cnt.hooks, 10));
    cnt.fail_at = 0;
    assert_entry(&m, i0 + n, tail);
    assert_false(bf_map_used(bf_map_get(&m, 10)));
    put_entry(&m, &cnt.hooks, 10, packed);
    assert_bounded(&m, &cnt);
    assert_entry(&m, 10, packed);
    assert_entry(&m, i0 + n, tail);
    for (uint32_t b = i0; b < i0 + n; b++)
        assert_entry(&m, b, bare((uint64_t)b * 8192, 8192));
    bf_map_free(&m, &cnt.hooks);

    for (uint32_t b = i0; b < i0 + n; b++)
        put_entry(&m, &cnt.hooks, b, bare((uint64_t)b * 8192, 8192));
    bf_map_shrink(&m, &cnt.hooks, i0 - 5); /* the run's leaf cut before the run: it goes */
    assert_int_equal(cnt.live_bytes, 0);
    bf_map_free(&m, &cnt.hooks);

    for (uint64_t fail = 1; fail <= 3; fail++)
        for (int what = 0; what < 4; what++) {
            for (uint32_t b = 0; b < n; b++)
                put_entry(&m, &cnt.hooks, b, bare((uint64_t)b * 8192, 8192));
            if (what == 3) /* the run's own entry, a short block, waits to be settled */
                put_entry(&m, &cnt.hooks, n, bare((uint64_t)n * 8192, 100));
            cnt.fail_at = fail;
            int ok;
            if (what == 0) { /* a block after a hole: the run becomes dense */
                ok = bf_map_slot(&m, &cnt.hooks, n + 5) != NULL;
            } else if (what == 1) { /* a hole inside the run */
                ok = bf_map_clear(&m, &cnt.hooks, 7);
            } else if (what == 2) { /* the same, made sure of first */
                ok = bf_map_clearable(&m, &cnt.hooks, 7);
            } else { /* another block's room: the short one cannot join the run */
                ok = bf_map_slot(&m, &cnt.hooks, n + 1) != NULL;
            }
            cnt.fail_at = 0;
            if (ok && what == 1)
                assert_false(bf_map_used(bf_map_get(&m, 7)));
            for (uint32_t b = 0; b < n; b++)
                if (!(ok && what == 1 && b == 7))
                    assert_entry(&m, b, bare((uint64_t)b * 8192, 8192));
            if (what == 3)
                assert_entry(&m, n, bare((uint64_t)n * 8192, 100));
            assert_int_equal((int64_t)bf_map_memory(&m), cnt.live_bytes);
            bf_map_free(&m, &cnt.hooks);
            assert_int_equal(cnt.live_bytes, 0);
        }

    /* A file of 16 blocks: the dense leaf that must grow turns run, and that one fails. */
    for (uint32_t b = 0; b < 16; b++)
        put_entry(&m, &cnt.hooks, b, bare((uint64_t)b * 8192, 8192));
    cnt.fail_at = 1;
    bf_map_entry *e = bf_map_slot(&m, &cnt.hooks, 16); /* it stays dense, and grows */
    cnt.fail_at = 0;
    if (e != NULL) {
        bf_map_entry v = bare(16 * 8192, 8192);
        bf_map_put(&m, 16, &v);
    }
    for (uint32_t b = 0; b < 16; b++)
        assert_entry(&m, b, bare((uint64_t)b * 8192, 8192));
    assert_int_equal((int64_t)bf_map_memory(&m), cnt.live_bytes);
    bf_map_free(&m, &cnt.hooks);
    assert_int_equal(cnt.live_bytes, 0);
}

/*
 * Runs under random changes: appends (bare, in stock's layout, or short, or compressed),
 * rewrites in place and elsewhere, room made and given back, clears and shrinks, checked
 * against a reference of whole entries after every call, half the sequences with
 * allocations failing at random: a call that fails leaves every entry as it was.
 */
static void test_random_runs_against_reference(void **state)
{
    (void)state;
    enum { N = 3 * BF_MAP_LEAF };
    static bf_map_entry ref[N];
    for (uint64_t seq = 0; seq < 40; seq++) {
        t_rng r = {seq + 1000};
        t_counting cnt;
        t_counting_init(&cnt);
        bf_blockmap m = {0};
        memset(ref, 0, sizeof(ref));
        uint32_t end = 0; /* blocks below it may hold data */
        int failures = seq % 2 == 1, failed = 0;
        /* From calm to rough: stores that do not fit a run (in 1000), and the share of clears
           that make a hole inside the data (the others clear the last block, which keeps a
           run). */
        static const uint64_t misfit[4] = {2, 10, 40, 200}, inside[4] = {0, 64, 16, 4};
        uint32_t calm = (uint32_t)(seq / 2) % 4;
        for (int step = 0; step < 6000; step++) {
            int armed = failures && t_below(&r, 16) == 0;
            if (armed)
                cnt.fail_at = 1 + t_below(&r, 2);
            uint64_t k = t_below(&r, 100);
            uint32_t b = k < 80 || end == 0 ? end : (uint32_t)t_below(&r, end);
            if (k >= 88 && k < 96 && end > 0 &&
                (inside[calm] == 0 || t_below(&r, inside[calm]) != 0))
                b = end - 1;
            if (b >= N)
                b = (uint32_t)t_below(&r, N);
            if (k < 88) { /* a store: bare in place (mostly), short, or elsewhere */
                uint64_t kind = t_below(&r, 1000) < misfit[calm] ? 1 + t_below(&r, 3) : 0;
                bf_map_entry v =
                    kind == 0   ? bare((uint64_t)b * 8192, 8192)
                    : kind == 1 ? bare((uint64_t)b * 8192, 100 + (uint32_t)t_below(&r, 8000))
                    : kind == 2 ? bare((uint64_t)(N + b) * 8192, 8192)
                                : (bf_map_entry){t_next(&r) & BF_MAP_OFF_MASK, 33 | BF_MAP_RAW, 64};
                if (kind == 0 && t_below(&r, 4) == 0)
                    v.cap ^= (uint32_t)step; /* the block's bytes changed, in place */
                bf_map_entry *e = bf_map_slot(&m, &cnt.hooks, b);
                if (e == NULL) {
                    failed = 1;
                } else if (t_below(&r, 16) == 0 && !bf_map_used(e)) {
                    assert_true(bf_map_clear(&m, &cnt.hooks, b)); /* room given back */
                } else {
                    bf_map_put(&m, b, &v);
                    ref[b] = v;
                    if (b >= end)
                        end = b + 1;
                }
            } else if (k < 96) {
                int ok = t_below(&r, 2) ? bf_map_clearable(&m, &cnt.hooks, b) &&
                                              bf_map_clear(&m, &cnt.hooks, b)
                                        : bf_map_clear(&m, &cnt.hooks, b);
                if (ok)
                    memset(&ref[b], 0, sizeof(ref[b]));
                else
                    failed = 1;
                while (end > 0 && ref[end - 1].cap == 0 && (ref[end - 1].len & BF_MAP_BARE) == 0)
                    end--;       /* the next append follows the last block holding data */
            } else if (k < 99) { /* a look at some block, as the reads do between changes */
                uint32_t x = (uint32_t)t_below(&r, (uint64_t)end + 1);
                (void)bf_map_get(&m, x);
            } else { /* a cut, mostly near the end */
                uint32_t to = t_below(&r, 4)
                                  ? end - (uint32_t)t_below(&r, end < 64 ? end + 1u : 64u)
                                  : (uint32_t)t_below(&r, (uint64_t)end + 1);
                bf_map_shrink(&m, &cnt.hooks, to < m.n ? to : m.n);
                for (uint32_t x = to; x < end; x++)
                    memset(&ref[x], 0, sizeof(ref[x]));
                if (to < end)
                    end = to;
            }
            failed |= armed && cnt.fail_at == 0;
            cnt.fail_at = 0;
            uint64_t used = 0;
            for (uint32_t x = 0; x < end; x++) {
                const bf_map_entry *e = bf_map_get(&m, x);
                int want = ref[x].cap != 0 || (ref[x].len & BF_MAP_BARE) != 0;
                used += (uint64_t)want;
                if (want != bf_map_used(e) ||
                    (want &&
                     (e->off != ref[x].off || e->len != ref[x].len || e->cap != ref[x].cap)))
                    fail_msg("seq %llu step %d (op %llu, block %u): block %u reads wrong",
                             (unsigned long long)seq, step, (unsigned long long)k, b, x);
                bf_map_entry copy;
                if (bf_map_read(&m, x, &copy) != want ||
                    (want && memcmp(&copy, &ref[x], sizeof(copy)) != 0))
                    fail_msg("seq %llu step %d: block %u read by value differs",
                             (unsigned long long)seq, step, x);
            }
            uint64_t walked = 0;
            for (uint64_t x = 0; bf_map_next(&m, &x) != NULL; x++) {
                assert_true(x < end && (ref[x].cap != 0 || (ref[x].len & BF_MAP_BARE) != 0));
                walked++;
            }
            assert_int_equal(walked, used);
            if (failed ? (int64_t)bf_map_memory(&m) > cnt.live_bytes
                       : (int64_t)bf_map_memory(&m) != cnt.live_bytes)
                fail_msg("seq %llu step %d: map says %llu bytes, the allocator holds %lld",
                         (unsigned long long)seq, step, (unsigned long long)bf_map_memory(&m),
                         (long long)cnt.live_bytes);
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
        cmocka_unit_test(test_bare_run),
        cmocka_unit_test(test_run_edges),
        cmocka_unit_test(test_random_runs_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
