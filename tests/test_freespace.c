/*
 * test_freespace.c - best fit, splitting, merging and tail detection of the
 * free list, and a random test of it against a byte map of what is free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "alloc.h"
#include "freespace.h"
#include "support.h"

/* Segment size of the hand-made cases. */
#define B 4096u

static void test_best_fit_and_split(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    bf_freespace fs = {0};
    bf_free_put(&fs, a, B, 0, 1000);
    bf_free_put(&fs, a, B, 5000, 300);
    bf_free_put(&fs, a, B, 9000, 600);
    bf_chunk ch;
    /* Best fit: 500 takes the 600 chunk, not the 1000 one; remainder 100 < split_min stays. */
    assert_int_equal(bf_free_take(&fs, a, B, 500, 200, &ch), 1);
    assert_int_equal(ch.off, 9000);
    assert_int_equal(ch.cap, 600);
    /* 400 from the 1000 chunk splits (600 left >= 200). */
    assert_int_equal(bf_free_take(&fs, a, B, 400, 200, &ch), 1);
    assert_int_equal(ch.off, 0);
    assert_int_equal(ch.cap, 400);
    assert_int_equal(fs.n, 2);
    assert_int_equal(bf_free_take(&fs, a, B, 700, 200, &ch), 0);
    assert_int_equal(bf_free_take(&fs, a, B, 600, 200, &ch), 1);
    assert_int_equal(ch.off, 400);
    assert_int_equal(bf_free_take(&fs, a, B, 300, 200, &ch), 1);
    assert_int_equal(ch.off, 5000);
    assert_int_equal(fs.n, 0);
    bf_free_clear(&fs, a);
}

/*
 * A chunk is clean (its bytes read as zeros) only while every byte of it is: a part split
 * off keeps it, a merge with a chunk that is not clean loses it, a merge of two keeps it.
 */
static void test_clean_chunks(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    bf_freespace fs = {0};
    uint32_t clean = 7;
    bf_free_put_clean(&fs, a, B, 0, 1000);
    bf_free_put_clean(&fs, a, B, 1000, 500); /* merged: clean */
    assert_int_equal(fs.n, 1);
    assert_int_equal(bf_free_take_at(&fs, a, B, 0, 200, &clean), 1);
    assert_int_equal(clean, 1);
    bf_chunk ch;
    assert_int_equal(bf_free_take(&fs, a, B, 300, 0, &ch), 1); /* the rest, split */
    assert_int_equal(ch.off, 200);
    assert_int_equal(ch.clean, 1);
    assert_int_equal(bf_free_take_aligned(&fs, a, B, 512, 512, &ch), 1);
    assert_int_equal(ch.off, 512);
    assert_int_equal(ch.clean, 1);
    bf_free_put(&fs, a, B, 1500, 100); /* touches the clean rest at 1024..1500 */
    assert_int_equal(fs.n, 2);         /* and 500..512 */
    assert_int_equal(bf_free_take_at(&fs, a, B, 1024, 100, &clean), 1);
    assert_int_equal(clean, 0);
    bf_free_put_clean(&fs, a, B, 3000, 1000);
    bf_free_drop_beyond(&fs, a, B, 3500); /* the part kept stays clean */
    assert_int_equal(bf_free_take_at(&fs, a, B, 3000, 500, &clean), 1);
    assert_int_equal(clean, 1);
    bf_free_clear(&fs, a);
}
static void test_tail(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    bf_freespace fs = {0};
    bf_free_put(&fs, a, B, 100, 50);  /* 100..150 */
    bf_free_put(&fs, a, B, 150, 100); /* 150..250 */
    bf_free_put(&fs, a, B, 10, 20);   /* not adjacent */
    assert_int_equal(bf_free_tail_start(&fs, 250), 100);
    assert_int_equal(bf_free_tail_start(&fs, 300), 300);
    bf_free_drop_beyond(&fs, a, B, 100);
    assert_int_equal(fs.n, 1);
    assert_int_equal(fs.c[0].off, 10);
    /* A chunk that straddles the new end is cut there. */
    bf_free_put(&fs, a, B, 40, 60); /* 40..100 */
    bf_free_drop_beyond(&fs, a, B, 70);
    assert_int_equal(fs.n, 2);
    assert_int_equal(bf_free_by_offset(&fs)[1].off, 40);
    assert_int_equal(bf_free_by_offset(&fs)[1].cap, 30);
    bf_free_clear(&fs, a);
}

static void test_merge(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    bf_freespace fs = {0};
    bf_free_put(&fs, a, B, 100, 100);
    bf_free_put(&fs, a, B, 300, 100);
    bf_free_put(&fs, a, B, 200, 100); /* fills the gap: one chunk 100..400 */
    assert_int_equal(fs.n, 1);
    assert_int_equal(fs.c[0].off, 100);
    assert_int_equal(fs.c[0].cap, 300);
    /* Touching across the segment boundary at 4096: kept apart, but one tail run. */
    bf_free_put(&fs, a, B, 4000, 96);
    bf_free_put(&fs, a, B, 4096, 104);
    assert_int_equal(fs.n, 3);
    assert_int_equal(bf_free_tail_start(&fs, 4200), 4000);
    /* A split's tail merges back with its free neighbour. */
    bf_free_put(&fs, a, B, 400, 50); /* 100..450 */
    bf_chunk ch;
    assert_int_equal(bf_free_take(&fs, a, B, 350, 10, &ch), 1);
    assert_int_equal(ch.off, 100);
    assert_int_equal(ch.cap, 350);
    bf_free_drop_beyond(&fs, a, B, 4000);
    assert_int_equal(fs.n, 0);
    bf_free_clear(&fs, a);
}

#define SPACE 65536u
#define SEG 16384u

/* Check both orders, and that the chunks are exactly the free bytes of `model`. */
static void check(const bf_freespace *fs, const unsigned char *model)
{
    static unsigned char seen[SPACE];
    memset(seen, 0, sizeof(seen));
    for (uint32_t i = 0; i < fs->n; i++) {
        const bf_chunk *c = &fs->c[i], *o = &bf_free_by_offset(fs)[i];
        if (i > 0) {
            const bf_chunk *p = &fs->c[i - 1], *q = &bf_free_by_offset(fs)[i - 1];
            assert_true(p->cap < c->cap || (p->cap == c->cap && p->off < c->off));
            assert_true(q->off + q->cap <= o->off);
            /* Touching chunks inside one segment would have merged. */
            assert_true(q->off + q->cap < o->off || o->off % SEG == 0);
        }
        assert_true(c->cap > 0 && c->off + c->cap <= SPACE);
        assert_true(c->off / SEG == (c->off + c->cap - 1) / SEG);
        for (uint64_t b = c->off; b < c->off + c->cap; b++) {
            assert_int_equal(seen[b], 0);
            seen[b] = 1;
        }
    }
    for (uint32_t b = 0; b < SPACE; b++)
        if (seen[b] != model[b])
            fail_msg("byte %u: free list says %s, model says %s", b, seen[b] ? "free" : "used",
                     model[b] ? "free" : "used");
}

/*
 * Random frees of used ranges (never crossing a segment) and best-fit takes
 * against a byte map; the chunks must always be exactly the free bytes.
 */
static void test_random_against_model(void **state)
{
    (void)state;
    const bf_allocator *a = &bf_default_allocator;
    static unsigned char model[SPACE]; /* 1 = free */
    memset(model, 0, sizeof(model));
    bf_freespace fs = {0};
    t_rng r = {7};
    for (int step = 0; step < 20000; step++) {
        if (t_below(&r, 2) == 0) {
            uint32_t off = (uint32_t)t_below(&r, SPACE), len = 1 + (uint32_t)t_below(&r, 700);
            if (off / SEG != (off + len - 1) / SEG || off + len > SPACE)
                continue;
            int used = 1;
            for (uint32_t b = off; b < off + len && used; b++)
                used = !model[b];
            if (!used)
                continue;
            bf_free_put(&fs, a, SEG, off, len);
            memset(model + off, 1, len);
        } else {
            uint32_t need = 1 + (uint32_t)t_below(&r, 900);
            uint32_t best = UINT32_MAX;
            for (uint32_t i = 0; i < fs.n; i++)
                if (fs.c[i].cap >= need && fs.c[i].cap < best)
                    best = fs.c[i].cap;
            bf_chunk ch;
            int got = bf_free_take(&fs, a, SEG, need, 64, &ch);
            assert_int_equal(got, best != UINT32_MAX);
            if (!got)
                continue;
            assert_true(ch.cap >= need && (ch.cap == need || ch.cap - need < 64));
            assert_true(best >= need && ch.cap <= best);
            for (uint64_t b = ch.off; b < ch.off + ch.cap; b++)
                assert_int_equal(model[b], 1);
            memset(model + ch.off, 0, ch.cap);
        }
        if (step % 97 == 0)
            check(&fs, model);
    }
    check(&fs, model);
    /* Dropping the chunks from a segment boundary on, or from inside a segment (cutting a
       chunk), keeps the two orders in step. */
    bf_free_drop_beyond(&fs, a, SEG, SPACE / 2);
    memset(model + SPACE / 2, 0, SPACE / 2);
    check(&fs, model);
    bf_free_drop_beyond(&fs, a, SEG, SPACE / 2 - 777);
    memset(model + SPACE / 2 - 777, 0, 777);
    check(&fs, model);
    bf_free_clear(&fs, a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_fit_and_split),
        cmocka_unit_test(test_tail),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_clean_chunks),
        cmocka_unit_test(test_random_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
