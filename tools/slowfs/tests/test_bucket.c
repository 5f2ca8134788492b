/*
 * test_bucket.c - slowfs's bandwidth model on a clock the test chooses:
 * transfer times, queueing, the burst credit, forfeited idle time, slots
 * handed out exactly once under concurrent reservations, and how the
 * device combines its buckets with the latency and counts what it held.
 * No test here reads the clock.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bucket.h"
#include "device.h"

#define MIB (1024u * 1024u)
#define SEC 1000000000ull

static void test_transfer_time(void **state)
{
    (void)state;
    assert_int_equal(sf_transfer_ns(MIB, MIB), SEC);
    assert_int_equal(sf_transfer_ns(0, MIB), 0);
    /* 8 KiB at 200 MiB/s is 39062.5 ns: rounded to nearest, up at the half. */
    assert_int_equal(sf_transfer_ns(8192, 200ull * MIB), 39063);
    /* bytes x 1e9 overflows 64 bits here; the result does not: 1 TiB at 1 MiB/s. */
    assert_true(sf_transfer_ns(1ull << 40, MIB) == (1ull << 20) * SEC);
}

static void test_queueing_without_burst(void **state)
{
    (void)state;
    sf_bucket b;
    sf_bucket_init(&b, MIB, 0, 0);
    /* Requests arriving together complete one transfer after another. */
    assert_int_equal(sf_bucket_reserve(&b, 1000, MIB), 1000 + SEC);
    assert_int_equal(sf_bucket_reserve(&b, 1000, MIB / 2), 1000 + SEC + SEC / 2);
    /* One arriving while the bucket is busy waits for the queue. */
    assert_int_equal(sf_bucket_reserve(&b, 1000 + SEC, MIB), 1000 + 2 * SEC + SEC / 2);
    /* After idle time the transfer starts at arrival: idleness is not saved up. */
    assert_int_equal(sf_bucket_reserve(&b, 10 * SEC, MIB), 11 * SEC);
    /* A read at end of file (0 bytes) completes on arrival when the bucket is idle. */
    assert_int_equal(sf_bucket_reserve(&b, 20 * SEC, 0), 20 * SEC);
    sf_bucket_destroy(&b);
}

/* resume = burst: every request past the credit waits just its own share. */
static void test_burst_credit(void **state)
{
    (void)state;
    const uint64_t burst = SEC / 4; /* a quarter second: 256 KiB at 1 MiB/s */
    sf_bucket b;
    sf_bucket_init(&b, MIB, burst, burst);
    /* An idle bucket lets 256 KiB through at once, then runs at its rate. */
    for (int i = 0; i < 4; i++)
        assert_int_equal(sf_bucket_reserve(&b, SEC, 64 * 1024), SEC);
    assert_int_equal(sf_bucket_reserve(&b, SEC, 64 * 1024), SEC + SEC / 16);
    assert_int_equal(sf_bucket_reserve(&b, SEC, 64 * 1024), SEC + SEC / 8);
    /* Bytes over any window from idle: at most rate x window + burst. */
    uint64_t done = 0;
    for (int i = 0; i < 64; i++)
        done = sf_bucket_reserve(&b, SEC, 64 * 1024);
    assert_int_equal(done, SEC + (70 * SEC) / 16 - burst);
    /* A request larger than the credit waits its transfer less the credit. */
    sf_bucket_destroy(&b);
    sf_bucket_init(&b, MIB, burst, burst);
    assert_int_equal(sf_bucket_reserve(&b, 5 * SEC, MIB), 5 * SEC + SEC - burst);
    /* The credit never exceeds the burst, however long the bucket was idle. */
    assert_int_equal(sf_bucket_reserve(&b, 100 * SEC, MIB), 100 * SEC + SEC - burst);
    sf_bucket_destroy(&b);
}

/* resume < burst: callers run ahead until the backlog passes the burst, then pause until it is
   down to resume; the long-run rate is the same. */
static void test_hysteresis(void **state)
{
    (void)state;
    const uint64_t cost = SEC / 16; /* 64 KiB at 1 MiB/s */
    sf_bucket b;
    sf_bucket_init(&b, MIB, 4 * cost, 2 * cost);
    /* The first four leave at most the burst: they complete on arrival. */
    for (int i = 0; i < 4; i++)
        assert_int_equal(sf_bucket_reserve(&b, SEC, 64 * 1024), SEC);
    /* The fifth would leave five transfers' backlog: held until two remain. */
    assert_int_equal(sf_bucket_reserve(&b, SEC, 64 * 1024), SEC + 3 * cost);
    /* Released, the caller runs ahead again: two more leave four, at once. */
    assert_int_equal(sf_bucket_reserve(&b, SEC + 3 * cost, 64 * 1024), SEC + 3 * cost);
    assert_int_equal(sf_bucket_reserve(&b, SEC + 3 * cost, 64 * 1024), SEC + 3 * cost);
    /* The next leaves five: held until two remain, three transfers after the last release. */
    assert_int_equal(sf_bucket_reserve(&b, SEC + 3 * cost, 64 * 1024), SEC + 6 * cost);
    /* A caller that comes back at once: two requests pass, the third pauses, at the rate. */
    uint64_t now = SEC + 6 * cost, pauses = 0;
    for (int i = 0; i < 64; i++) {
        uint64_t done = sf_bucket_reserve(&b, now, 64 * 1024);
        if (done > now) {
            assert_int_equal(done - now, 3 * cost);
            pauses++;
        }
        now = done;
    }
    /* 72 transfers end at SEC + 72 x cost; the caller is three ahead of that (two at the last
       release, one since). */
    assert_int_equal(pauses, 21);
    assert_int_equal(now, SEC + 69 * cost);
    sf_bucket_destroy(&b);
}

enum { THREADS = 8, PER_THREAD = 5000 };

typedef struct worker {
    sf_bucket *b;
    uint64_t done[PER_THREAD];
} worker;

static void *reserve_many(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++)
        w->done[i] = sf_bucket_reserve(w->b, 0, 100);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void test_concurrent_slots(void **state)
{
    (void)state;
    /* 100 bytes at 1e9 B/s is 100 ns: every slot k*100 must be handed out exactly once. */
    sf_bucket b;
    sf_bucket_init(&b, SEC, 0, 0);
    worker *w = calloc(THREADS, sizeof *w);
    assert_non_null(w);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].b = &b;
        assert_int_equal(pthread_create(&t[i], NULL, reserve_many, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    uint64_t *all = malloc(sizeof(uint64_t) * THREADS * PER_THREAD);
    assert_non_null(all);
    for (int i = 0; i < THREADS; i++) {
        /* Each thread's own requests complete in the order it made them. */
        for (int k = 1; k < PER_THREAD; k++)
            assert_true(w[i].done[k] > w[i].done[k - 1]);
        memcpy(all + i * PER_THREAD, w[i].done, sizeof w[i].done);
    }
    qsort(all, THREADS * PER_THREAD, sizeof *all, cmp_u64);
    for (int k = 0; k < THREADS * PER_THREAD; k++)
        assert_int_equal(all[k], 100ull * (uint64_t)(k + 1));
    free(all);
    free(w);
    sf_bucket_destroy(&b);
}

static void test_device_buckets_and_latency(void **state)
{
    (void)state;
    /* Shared 2 MiB/s, reads alone 1 MiB/s, writes unlimited alone; 50 us latency. */
    sf_model m = {.rate = 2 * MIB, .dir_rate = {MIB, 0}, .latency_ns = 50000};
    sf_device d;
    sf_device_init(&d, &m, 0);
    /* A read pays the slower of its buckets (its own), plus the latency. */
    assert_int_equal(sf_device_charge(&d, SF_READ, 0, 0, MIB), SEC + 50000);
    /* A write pays the shared bucket, behind the read's half second there. */
    assert_int_equal(sf_device_charge(&d, SF_WRITE, 0, 0, MIB), SEC + 50000);
    /* The next read queues behind both on the shared bucket, and behind itself on its own. */
    assert_int_equal(sf_device_charge(&d, SF_READ, 0, 0, MIB / 2), SEC + SEC / 2 + 50000);
    /* Counters: requests, bytes, the time held after `now`, the largest request. */
    char text[2048];
    int len = sf_device_format(&d, 7, text, sizeof text);
    assert_true(len > 0 && (size_t)len < sizeof text);
    assert_non_null(strstr(text, "\nread_requests 2\nread_bytes 1572864\n"));
    assert_non_null(strstr(text, "\nread_wait_ns 2500100000\nread_max_request 1048576\n"));
    assert_non_null(strstr(text, "\nwrite_requests 1\nwrite_bytes 1048576\nwrite_wait_ns "
                                 "1000050000\n"));
    assert_non_null(strstr(text, "\nlatency_ns 50000\nuptime_ns 7\n"));
    /* Time already spent in the backing call (now past arrival) is not counted as held. */
    assert_int_equal(sf_device_charge(&d, SF_WRITE, 10 * SEC, 10 * SEC + 20000, 0),
                     10 * SEC + 50000);
    sf_device_format(&d, 7, text, sizeof text);
    assert_non_null(strstr(text, "\nwrite_wait_ns 1000080000\n"));
    /* The text is cut, not overrun, and the full length is still reported. */
    char small[16];
    assert_int_equal(sf_device_format(&d, 7, small, sizeof small), len);
    assert_int_equal(strlen(small), sizeof small - 1);
    sf_device_destroy(&d);
}

static void test_device_unlimited(void **state)
{
    (void)state;
    sf_model m = {0};
    sf_device d;
    sf_device_init(&d, &m, 0);
    assert_int_equal(sf_device_charge(&d, SF_WRITE, 123, 456, 1ull << 30), 123);
    char text[2048];
    sf_device_format(&d, 0, text, sizeof text);
    assert_non_null(strstr(text, "\nwrite_bytes 1073741824\nwrite_wait_ns 0\n"));
    sf_device_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer_time),    cmocka_unit_test(test_queueing_without_burst),
        cmocka_unit_test(test_burst_credit),     cmocka_unit_test(test_hysteresis),
        cmocka_unit_test(test_concurrent_slots), cmocka_unit_test(test_device_buckets_and_latency),
        cmocka_unit_test(test_device_unlimited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
