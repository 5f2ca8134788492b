/*
 * test_budget.c - the temp budget several spaces share (src/budget.c).
 *
 *  - one thread: spaces joined by their options and by bf_space_set_budget
 *    count their physical bytes in the budget; a write past it fails with
 *    BF_ELIMIT naming the budget and leaves what the failing call's
 *    contract says (acknowledged data reads back, sizes and the budget's
 *    use as they were); closing, truncating and destroying give bytes back;
 *    the space's own limit still holds beside the budget; a budget in use
 *    is not destroyed; moving a space between budgets moves its bytes.
 *  - 4 threads, each with its own space, writing, truncating and closing
 *    files against one budget they hit often, and destroying their space
 *    mid-way with files open: the budget's use never passes the limit (a
 *    sampler watches it, and its peak says so), every failure is
 *    BF_ELIMIT with the file intact, and nothing stays counted at the end.
 *    Labelled "threads" (ThreadSanitizer runs it).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buffile.h"
#include "support.h"

T_PARENT_FIXTURE("budget")

#define BS 4096

static bf_space *space_with(bf_budget *b, bf_codec codec, uint64_t temp_limit)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = BS;
    o.temp_limit = temp_limit;
    o.budget = b;
    return t_space_opts(&o);
}

static uint64_t physical(bf_space *sp)
{
    bf_stats st;
    bf_space_stats(sp, &st);
    return st.physical_bytes;
}

/* Write random (incompressible) data until a write fails; the status of that write. */
static int fill_until_failure(bf_file *f, t_image *img, t_rng *g, uint64_t most)
{
    unsigned char buf[3 * BS];
    for (uint64_t done = 0; done < most;) {
        size_t len = 1 + t_below(g, sizeof(buf));
        t_fill(g, T_DATA_RANDOM, buf, len);
        uint64_t pos = bf_file_tell(f);
        int rc = bf_file_write(f, buf, len);
        if (rc != BF_OK) {
            t_image_resize(img, bf_file_size(f)); /* it may cover bytes of the call stored */
            t_image_forget(img, pos, len);
            return rc;
        }
        t_image_write(img, pos, buf, len);
        done += len;
    }
    return BF_OK;
}

static void test_one_thread(void **state)
{
    (void)state;
    enum { LIMIT = 256 * 1024 };
    t_counting cnt;
    t_counting_init(&cnt);
    bf_budget *b;
    assert_int_equal(bf_budget_create("", LIMIT, NULL, &b), BF_EINVAL);
    assert_int_equal(bf_budget_create("workers", LIMIT, &cnt.hooks, &b), BF_OK);
    assert_string_equal(bf_budget_name(b), "workers");
    assert_int_equal(bf_budget_limit(b), LIMIT);
    bf_space *a = space_with(b, BF_CODEC_LZ4, 0);
    bf_space *c = space_with(NULL, BF_CODEC_NONE, 0);
    assert_ptr_equal(bf_space_budget(a), b);
    assert_null(bf_space_budget(c));
    assert_int_equal(bf_space_set_budget(c, b), BF_OK);
    assert_int_equal(bf_budget_destroy(b), BF_EBUSY); /* in use */

    t_rng g = {5};
    bf_file *fa, *fc;
    t_image ia = {0}, ic = {0};
    assert_int_equal(bf_file_create(a, NULL, &fa), BF_OK);
    assert_int_equal(bf_file_create(c, NULL, &fc), BF_OK);
    assert_int_equal(fill_until_failure(fa, &ia, &g, LIMIT / 2), BF_OK);
    assert_int_equal(bf_file_flush(fa), BF_OK);
    assert_int_equal(bf_budget_used(b), physical(a) + physical(c));
    /* The second space runs into what the first holds. */
    uint64_t size_before = 0;
    int rc = fill_until_failure(fc, &ic, &g, 2 * LIMIT);
    assert_int_equal(rc, BF_ELIMIT);
    assert_non_null(strstr(bf_space_errmsg(c), "budget \"workers\""));
    size_before = bf_file_size(fc);
    assert_true(bf_budget_used(b) <= LIMIT);
    assert_int_equal(bf_budget_used(b), physical(a) + physical(c));
    assert_true(bf_budget_peak(b) <= LIMIT);
    t_image_check(fc, &ic, "after BF_ELIMIT from the budget");
    assert_int_equal(bf_file_size(fc), size_before);
    /* Closing the first space's file gives its bytes back: the second goes on. */
    t_image_check(fa, &ia, "space a");
    assert_int_equal(bf_file_close(fa), BF_OK);
    t_image_free(&ia);
    assert_int_equal(bf_budget_used(b), physical(c));
    assert_int_equal(bf_file_seek(fc, 0, BF_SEEK_END), BF_OK);
    assert_int_equal(fill_until_failure(fc, &ic, &g, LIMIT / 4), BF_OK);
    assert_int_equal(bf_file_flush(fc), BF_OK);
    assert_int_equal(bf_budget_used(b), physical(c));
    /* Truncating gives bytes back too. */
    uint64_t used = bf_budget_used(b);
    assert_int_equal(bf_file_truncate(fc, BS), BF_OK);
    t_image_resize(&ic, BS);
    assert_true(bf_budget_used(b) < used);
    assert_int_equal(bf_budget_used(b), physical(c));
    /* A lower limit: the next growing write fails, then a higher one lets it through. */
    bf_budget_set_limit(b, bf_budget_used(b));
    assert_int_equal(bf_file_seek(fc, 0, BF_SEEK_END), BF_OK);
    assert_int_equal(fill_until_failure(fc, &ic, &g, 4 * BS), BF_ELIMIT);
    bf_budget_set_limit(b, LIMIT);
    assert_int_equal(bf_file_seek(fc, 0, BF_SEEK_END), BF_OK);
    assert_int_equal(fill_until_failure(fc, &ic, &g, 4 * BS), BF_OK);
    assert_int_equal(bf_file_flush(fc), BF_OK);
    t_image_check(fc, &ic, "after the limit moved");
    /* The space's own limit still holds, and its message is its own. */
    bf_space_set_temp_limit(a, 2 * BS);
    assert_int_equal(bf_file_create(a, NULL, &fa), BF_OK);
    assert_int_equal(fill_until_failure(fa, &ia, &g, 8 * BS), BF_ELIMIT);
    assert_non_null(strstr(bf_space_errmsg(a), "temp limit"));
    assert_true(physical(a) <= 2 * BS);
    assert_int_equal(bf_budget_used(b), physical(a) + physical(c));
    /* A space moves to another budget with its bytes, or stays where it is. */
    bf_budget *small, *big;
    assert_int_equal(bf_budget_create("small", 1, NULL, &small), BF_OK);
    assert_int_equal(bf_budget_create("big", 0, NULL, &big), BF_OK);
    uint64_t pc = physical(c);
    assert_true(pc > 1);
    assert_int_equal(bf_space_set_budget(c, small), BF_ELIMIT);
    assert_non_null(strstr(bf_space_errmsg(c), "small"));
    assert_ptr_equal(bf_space_budget(c), b);
    assert_int_equal(bf_space_set_budget(c, big), BF_OK);
    assert_int_equal(bf_budget_used(big), pc);
    assert_int_equal(bf_budget_used(b), physical(a));
    assert_int_equal(bf_space_set_budget(c, NULL), BF_OK);
    assert_int_equal(bf_budget_used(big), 0);
    assert_int_equal(bf_budget_destroy(big), BF_OK);
    assert_int_equal(bf_budget_destroy(small), BF_OK);
    /* A named file's index counts as well, and comes back with the file's deletion. */
    assert_int_equal(bf_fileset_create(a, set), BF_OK);
    bf_space_set_temp_limit(a, 0);
    bf_file *nf;
    assert_int_equal(bf_file_create_named(a, set, "n", NULL, &nf), BF_OK);
    assert_int_equal(bf_file_write(nf, "abc", 3), BF_OK);
    assert_int_equal(bf_file_export(nf), BF_OK);
    assert_int_equal(bf_budget_used(b), physical(a));
    assert_int_equal(bf_file_close(nf), BF_OK);
    assert_int_equal(bf_fileset_destroy(a, set), BF_OK);
    /* Destroying a space with files open gives everything back. */
    bf_space_destroy(a);
    assert_int_equal(bf_budget_used(b), 0);
    assert_int_equal(bf_budget_destroy(b), BF_OK);
    assert_int_equal(bf_file_close(fc), BF_OK);
    bf_space_destroy(c);
    t_image_free(&ia);
    t_image_free(&ic);
    assert_int_equal(cnt.live_bytes, 0);
}

/* ---- 4 threads, one budget ------------------------------------------------------------------ */

enum { THREADS = 4, TFILES = 3, TSTEPS = 600 };
#define TLIMIT (128u * 1024u)

typedef struct worker {
    int id;
    bf_budget *budget;
    uint64_t limits_hit, destroyed;
    char err[512];
} worker;

static atomic_int running;

#define WCHECK(w, cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf((w)->err, sizeof((w)->err), __VA_ARGS__);                                     \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static void *worker_run(void *arg)
{
    worker *w = arg;
    static const bf_codec codecs[] = {BF_CODEC_NONE, BF_CODEC_LZ4, BF_CODEC_ZSTD, BF_CODEC_NONE};
    t_rng g = {(uint64_t)w->id * 7919 + 1};
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codecs[w->id % 4];
    o.block_size = BS;
    o.temp_limit = 0;
    o.budget = w->budget;
    bf_space *sp = NULL;
    bf_file *f[TFILES] = {0};
    uint64_t size[TFILES] = {0};
    unsigned char *buf = malloc(4 * BS), *got = malloc(4 * BS);
    char err[256];
    WCHECK(w, bf_space_create(&o, &sp, err, sizeof(err)) == BF_OK, "space: %s", err);
    for (int step = 0; step < TSTEPS; step++) {
        int i = (int)t_below(&g, TFILES);
        uint64_t op = t_below(&g, 100);
        if (f[i] == NULL) {
            WCHECK(w, bf_file_create(sp, NULL, &f[i]) == BF_OK, "create: %s", bf_space_errmsg(sp));
            size[i] = 0;
        }
        if (op < 70) { /* append: mixed data, some of it incompressible */
            size_t len = 1 + t_below(&g, 4 * BS);
            t_fill(&g, T_DATA_MIXED, buf, len);
            WCHECK(w, bf_file_seek(f[i], 0, BF_SEEK_END) == BF_OK, "seek");
            int rc = bf_file_write(f[i], buf, len);
            if (rc == BF_ELIMIT) {
                w->limits_hit++;
                WCHECK(w, strstr(bf_space_errmsg(sp), "budget \"shared\"") != NULL, "message: %s",
                       bf_space_errmsg(sp));
                WCHECK(w, bf_file_size(f[i]) <= size[i] + len, "size grew past the write");
                size[i] = bf_file_size(f[i]);
            } else {
                WCHECK(w, rc == BF_OK, "write: %d %s", rc, bf_space_errmsg(sp));
                size[i] += len;
            }
        } else if (op < 80) { /* read the tail back */
            uint64_t at = size[i] > 100 ? size[i] - 100 : 0;
            WCHECK(w, bf_file_seek(f[i], (int64_t)at, BF_SEEK_SET) == BF_OK, "seek");
            int64_t n = bf_file_read(f[i], got, 100);
            /* A read that moves the buffer may have to write the dirty block first. */
            WCHECK(w, n == (int64_t)(size[i] - at) || n == BF_ELIMIT, "read: %lld %s", (long long)n,
                   bf_space_errmsg(sp));
        } else if (op < 88) {
            uint64_t to = t_below(&g, size[i] + 1);
            int rc = bf_file_truncate(f[i], to);
            WCHECK(w, rc == BF_OK || rc == BF_ELIMIT, "truncate: %s", bf_space_errmsg(sp));
            if (rc == BF_OK)
                size[i] = to;
        } else if (op < 97) {
            int rc = bf_file_close(f[i]);
            WCHECK(w, rc == BF_OK, "close: %s", bf_space_errmsg(sp));
            f[i] = NULL;
        } else { /* the space goes mid-way, its files open: its bytes must come back */
            bf_space_destroy(sp);
            sp = NULL;
            memset(f, 0, sizeof(f));
            w->destroyed++;
            WCHECK(w, bf_space_create(&o, &sp, err, sizeof(err)) == BF_OK, "space: %s", err);
        }
    }
out:
    bf_space_destroy(sp);
    free(buf);
    free(got);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    bf_budget *b;
    assert_int_equal(bf_budget_create("shared", TLIMIT, NULL, &b), BF_OK);
    worker w[THREADS];
    pthread_t th[THREADS];
    atomic_store(&running, THREADS);
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].id = i;
        w[i].budget = b;
        assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
    }
    /* The sampler: the sum never passes the limit, at any moment. */
    uint64_t samples = 0, most = 0;
    while (atomic_load(&running) > 0) {
        uint64_t u = bf_budget_used(b);
        if (u > most)
            most = u;
        assert_true(u <= TLIMIT);
        samples++;
    }
    uint64_t hits = 0, destroyed = 0;
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        if (w[i].err[0] != '\0')
            fail_msg("worker %d: %s", i, w[i].err);
        hits += w[i].limits_hit;
        destroyed += w[i].destroyed;
    }
    printf("4 threads, budget of %u bytes: peak %llu (sampled %llu times, most seen %llu), "
           "%llu writes refused, %llu spaces destroyed with files open\n",
           TLIMIT, (unsigned long long)bf_budget_peak(b), (unsigned long long)samples,
           (unsigned long long)most, (unsigned long long)hits, (unsigned long long)destroyed);
    assert_true(bf_budget_peak(b) <= TLIMIT);
    assert_true(hits > 0);      /* the budget was reached */
    assert_true(destroyed > 0); /* and spaces went mid-way */
    assert_int_equal(bf_budget_used(b), 0);
    assert_int_equal(bf_budget_destroy(b), BF_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_thread),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
