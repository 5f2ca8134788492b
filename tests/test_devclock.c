/*
 * test_devclock.c - codec=auto's device clock (src/devclock.c): the time a
 * transfer waited on the device, not the wall. Deterministic: the wall
 * clock is a fake device's and the thread's run delay comes from a file
 * the test writes as the kernel writes /proc/thread-self/schedstat
 * (bf_space_set_schedstat), so "preempted" means what the test says.
 * Shown: a preempted page-cache transfer is not a wait, a true wait is
 * (preempted or not), a run of waits ends where the thread waited for a
 * CPU (at once or adding up) and is timed between the device's releases,
 * without schedstat the clock is the wall clock, silently, and its
 * descriptor counts in the caller's budget (fd_acquire).
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "auto.h"
#include "buffile.h"
#include "devclock.h"
#include "space.h"
#include "support.h"

T_PARENT_FIXTURE("devclock")

/* ---- a fake schedstat ---------------------------------------------------- */

static char sched_path[600];
static int sched_fd = -1;
static uint64_t run_delay; /* what the fake schedstat says now */

static void sched_write(void)
{
    char b[96];
    int n = snprintf(b, sizeof(b), "123456 %llu 42\n", (unsigned long long)run_delay);
    assert_int_equal(pwrite(sched_fd, b, (size_t)n, 0), n);
    assert_int_equal(ftruncate(sched_fd, n), 0);
}

/* The thread "waits for a CPU" `ns`: its run delay grows (the fake wall clock too, below). */
static void preempt(uint64_t ns)
{
    run_delay += ns;
    sched_write();
}

static void sched_open(void)
{
    snprintf(sched_path, sizeof(sched_path), "%s/schedstat", parent);
    sched_fd = open(sched_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(sched_fd >= 0);
    run_delay = 1000000000; /* not 0: a baseline */
    sched_write();
}

static void sched_close(void)
{
    close(sched_fd);
    sched_fd = -1;
    unlink(sched_path);
}

/* ---- the clock alone ----------------------------------------------------- */

/* One transfer of `bytes` lasting `wall` ns, `own` of them waiting for a CPU. */
static bf_devwait xfer(bf_devclock *dc, uint64_t bytes, uint64_t wall, uint64_t own)
{
    bf_devclock_begin(dc);
    if (own > 0)
        preempt(own);
    return bf_devclock_end(dc, bytes, wall);
}

static void test_clock_takes_out_run_delay(void **state)
{
    (void)state;
    sched_open();
    bf_devclock dc = {0};
    bf_devclock_set_source(&dc, sched_path, 0);
    /* The first timed transfer opens it: a baseline, the wall as it is. */
    bf_devwait w = xfer(&dc, 8192, 3000, 0);
    assert_int_equal(dc.state, BF_DEVCLOCK_OPEN);
    assert_int_equal(w.wait_ns, 3000);
    /* Short transfers are not read: no cost, the wall as it is. */
    uint64_t readings = dc.readings;
    for (int i = 0; i < 10; i++)
        assert_int_equal(xfer(&dc, 8192, 3000, 0).wait_ns, 3000);
    assert_int_equal(dc.readings, readings);
    /* Preempted 5 ms in an 8 KiB page-cache write: no wait, and a pause. */
    w = xfer(&dc, 8192, 5003000, 5000000);
    assert_int_equal(w.wait_ns, 3000);
    assert_true(w.paused);
    assert_true(w.unsure); /* not armed: where the delay was is not known */
    assert_int_equal(w.late_ns, 0);
    /* The run delay explains it: nothing is armed, and the next short ones are not read. */
    assert_int_equal(dc.armed, 0);
    readings = dc.readings;
    for (int i = 0; i < 10; i++)
        xfer(&dc, 8192, 3000, 0);
    assert_int_equal(dc.readings, readings);
    /* A long one that the run delay does not explain (it may have waited on the device)
       arms the next BF_DEVCLOCK_ARM: read at both ends, exact. A true wait of 3 ms
       preempted 1 ms: 3 ms; one preempted 1 ms before it: 3 ms, not paused. */
    w = xfer(&dc, 8192, 3000000, 0);
    assert_int_equal(w.wait_ns, 3000000);
    assert_int_equal(dc.armed, BF_DEVCLOCK_ARM);
    w = xfer(&dc, 8192, 4000000, 1000000);
    assert_int_equal(w.wait_ns, 3000000);
    assert_false(w.paused);
    assert_false(w.unsure);
    assert_int_equal(w.late_ns, 1000000); /* armed: its end came 1 ms late, exactly */
    preempt(1000000);                     /* between transfers */
    w = xfer(&dc, 8192, 3000000, 0);
    assert_int_equal(w.wait_ns, 3000000);
    assert_false(w.paused);
    preempt(2500000); /* over 2 ms between transfers: the next is paused */
    w = xfer(&dc, 8192, 3000000, 0);
    assert_int_equal(w.wait_ns, 3000000);
    assert_true(w.paused);
    bf_devclock_close(&dc);
    assert_int_equal(dc.state, BF_DEVCLOCK_UNOPENED);
    sched_close();
}

/* Not armed, a long transfer takes all the delay since the last reading, up to its own length. */
static void test_unarmed_delay_is_an_upper_bound(void **state)
{
    (void)state;
    sched_open();
    bf_devclock dc = {0};
    bf_devclock_set_source(&dc, sched_path, 0);
    xfer(&dc, 8192, 3000, 0);
    preempt(700000); /* between transfers, read by no one */
    bf_devwait w = xfer(&dc, 8192, 1500000, 0);
    assert_int_equal(w.wait_ns, 800000);
    /* ... and a reading once per BF_DEVCLOCK_WINDOW bytes keeps the bound tight. */
    for (int i = 0; i < 20; i++)
        xfer(&dc, 8192, 3000, 0); /* the armed ones */
    preempt(700000);
    for (uint64_t b = 0; b < BF_DEVCLOCK_WINDOW; b += 8192)
        xfer(&dc, 8192, 3000, 0);
    w = xfer(&dc, 8192, 1500000, 0);
    assert_int_equal(w.wait_ns, 1500000);
    bf_devclock_close(&dc);
    sched_close();
}

/* No schedstat (no /proc, a sandbox), or a text it cannot read: the wall clock, silently. */
static void test_without_schedstat_the_wall(void **state)
{
    (void)state;
    char missing[700];
    snprintf(missing, sizeof(missing), "%s/no-proc/thread-self/schedstat", parent);
    bf_devclock dc = {0};
    bf_devclock_set_source(&dc, missing, 0);
    for (int i = 0; i < 3; i++) {
        bf_devwait w = xfer(&dc, 8192, 5003000, 0);
        assert_int_equal(w.wait_ns, 5003000);
        assert_false(w.paused);
    }
    assert_int_equal(dc.state, BF_DEVCLOCK_WALL);
    assert_int_equal(dc.readings, 0);
    bf_devclock_close(&dc);

    snprintf(missing, sizeof(missing), "%s/garbage", parent);
    assert_int_equal(t_write_file(missing, "cpu delay slices\n", 17), 0);
    bf_devclock_set_source(&dc, missing, 0);
    assert_int_equal(xfer(&dc, 8192, 5003000, 0).wait_ns, 5003000);
    assert_int_equal(dc.state, BF_DEVCLOCK_WALL);
    bf_devclock_close(&dc);

    /* Off (a fake device's clock): nothing is read. */
    bf_devclock_set_source(&dc, NULL, 1);
    assert_int_equal(xfer(&dc, 8192, 5003000, 0).wait_ns, 5003000);
    assert_int_equal(dc.state, BF_DEVCLOCK_UNOPENED);
    bf_devclock_close(&dc);
}

static void *other_thread(void *arg)
{
    bf_devclock *dc = arg;
    xfer(dc, 8192, 5003000, 5000000); /* long: a reading, from this thread */
    return (void *)(intptr_t)gettid();
}

/* A space used from another thread reads that thread's schedstat: it reopens. */
static void test_another_thread_reopens(void **state)
{
    (void)state;
    sched_open();
    bf_devclock dc = {0};
    bf_devclock_set_source(&dc, sched_path, 0);
    xfer(&dc, 8192, 3000, 0);
    assert_int_equal(dc.tid, gettid());
    pthread_t t;
    void *tid;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &dc), 0);
    assert_int_equal(pthread_join(t, &tid), 0);
    assert_int_equal(dc.tid, (pid_t)(intptr_t)tid);
    assert_int_equal(dc.state, BF_DEVCLOCK_OPEN);
    bf_devclock_close(&dc);
    sched_close();
}

/* A caller's descriptor budget (bf_io_hooks' fd_acquire), with a say in it. */
typedef struct budget {
    int grant;
    int acquired, released, must;
} budget;

static int budget_acquire(void *ctx, int must)
{
    budget *b = ctx;
    b->must += must;
    if (!b->grant)
        return 0;
    b->acquired++;
    return 1;
}

static void budget_release(void *ctx)
{
    ((budget *)ctx)->released++;
}

/*
 * The descriptor is the space's: asked of the caller's budget (never as a
 * must), given back at close; refused, the wall clock, and it asks again a
 * window of bytes later. An open that fails gives back what it acquired.
 */
static void test_the_descriptor_is_in_the_callers_budget(void **state)
{
    (void)state;
    sched_open();
    budget b = {0};
    bf_io_hooks hooks = {.fd_acquire = budget_acquire, .fd_release = budget_release, .ctx = &b};
    bf_devclock dc = {0};
    bf_devclock_set_source(&dc, sched_path, 0);
    bf_devclock_set_hooks(&dc, &hooks);
    assert_int_equal(xfer(&dc, 8192, 5003000, 5000000).wait_ns, 5003000); /* refused */
    assert_int_equal(dc.state, BF_DEVCLOCK_REFUSED);
    for (uint64_t moved = 0; moved < BF_DEVCLOCK_WINDOW - 16384; moved += 8192)
        assert_int_equal(xfer(&dc, 8192, 5003000, 5000000).wait_ns, 5003000);
    assert_int_equal(dc.state, BF_DEVCLOCK_REFUSED);
    b.grant = 1;
    xfer(&dc, 8192, 3000, 0); /* a window since the refusal: asks again at the next */
    assert_int_equal(dc.state, BF_DEVCLOCK_UNOPENED);
    xfer(&dc, 8192, 3000, 0);
    assert_int_equal(dc.state, BF_DEVCLOCK_OPEN);
    assert_int_equal(xfer(&dc, 8192, 5003000, 5000000).wait_ns, 3000);
    assert_int_equal(b.acquired, 1);
    assert_int_equal(b.released, 0);
    bf_devclock_close(&dc);
    assert_int_equal(b.released, 1);

    char missing[700];
    snprintf(missing, sizeof(missing), "%s/no-proc", parent);
    bf_devclock_set_source(&dc, missing, 0);
    xfer(&dc, 8192, 3000, 0);
    assert_int_equal(dc.state, BF_DEVCLOCK_WALL);
    assert_int_equal(b.acquired, 2);
    assert_int_equal(b.released, 2);
    bf_devclock_close(&dc);
    assert_int_equal(b.released, 2);
    assert_int_equal(b.must, 0);
    sched_close();
}

/* ---- runs of waits -------------------------------------------------------- */

/*
 * Transfers of 128 KiB that wait 4 ms each on a device of 30.5 ns/B, back to
 * back; every 10th the thread also waited 50 ms for a CPU (its wall time
 * 54 ms, its wait 4 ms), `paused` as the clock says it, or not.
 */
static double run_with_pauses(int tell_paused)
{
    bf_auto a;
    bf_auto_init(&a, 0, 20);
    uint64_t now = 1;
    const uint64_t bytes = 128 << 10, dev = 4000000, cpu = 50000000;
    for (int i = 0; i < 400; i++) {
        int pre = i % 10 == 9;
        uint64_t start = now;
        now += dev + (pre ? cpu : 0);
        bf_auto_wait w = {.wait_ns = dev, .paused = pre && tell_paused};
        bf_auto_note_transfer(&a, 0, bytes, start, now, &w);
    }
    print_message("  paused %s: %u runs, device %.2f ns/B\n", tell_paused ? "told" : "not told",
                  a.dev.device_runs, a.dev.device_ns);
    assert_true(a.dev.device_runs > 0);
    return a.dev.device_ns;
}

/*
 * A device that lets a 128 KiB transfer go every 4 ms, the caller always
 * queued; woken, the thread waits 2.5 ms for a CPU after every 10th: that
 * one is paused (the run ends before it and starts at it) and late, told
 * or not: runs are timed between the device's releases, or start late.
 */
static double run_with_late_wakeups(int tell_late)
{
    bf_auto a;
    bf_auto_init(&a, 0, 20);
    uint64_t end = 1;
    const uint64_t bytes = 128 << 10, dev = 4000000, late = 2500000;
    for (int i = 0; i < 400; i++) {
        uint64_t start = end, released = 1 + (uint64_t)(i + 1) * dev;
        uint64_t own = i % 10 == 9 ? late : 0;
        end = released + own;
        bf_auto_wait w = {
            .wait_ns = released - start, .late_ns = tell_late ? own : 0, .paused = own > 0};
        bf_auto_note_transfer(&a, 0, bytes, start, end, &w);
    }
    print_message("  late %s: %u runs, device %.3f ns/B\n", tell_late ? "told" : "not told",
                  a.dev.device_runs, a.dev.device_ns);
    assert_true(a.dev.device_runs > 0);
    return a.dev.device_ns;
}

static void test_runs_are_timed_between_releases(void **state)
{
    (void)state;
    const double truth = 4000000.0 / (128 << 10);
    double told = run_with_late_wakeups(1), not_told = run_with_late_wakeups(0);
    assert_true(told > truth * 0.999 && told < truth * 1.001);
    assert_true(not_told < truth * 0.95); /* every run starts 2.5 ms late: too fast */
}

/*
 * Transfers of 128 KiB, every 4th a wait of 4 ms, the others 0.1 ms, each
 * of those after the thread waited `cpu` for a CPU: the runs they make.
 */
static uint32_t runs_with_cpu_waits(uint64_t cpu)
{
    bf_auto a;
    bf_auto_init(&a, 0, 20);
    uint64_t now = 1;
    for (int i = 0; i < 400; i++) {
        int wait = i % 4 == 3;
        uint64_t start = now + (wait ? 0 : cpu), ns = wait ? 4000000 : 100000;
        now = start + ns;
        bf_auto_wait w = {.wait_ns = ns, .cpu_ns = wait ? 0 : cpu};
        bf_auto_note_transfer(&a, 0, 128 << 10, start, now, &w);
    }
    return a.dev.device_runs;
}

/* CPU waits under 2 ms each that add up to more between two waits end the run too. */
static void test_cpu_waits_add_up(void **state)
{
    (void)state;
    assert_true(runs_with_cpu_waits(500000) > 0);     /* 1.5 ms between waits */
    assert_int_equal(runs_with_cpu_waits(800000), 0); /* 2.4 ms */
}

static void test_paused_ends_a_run(void **state)
{
    (void)state;
    const double truth = 4000000.0 / (128 << 10);
    double told = run_with_pauses(1), not_told = run_with_pauses(0);
    assert_true(told > truth * 0.99 && told < truth * 1.01);
    assert_true(not_told > truth * 1.3); /* the CPU's 50 ms inside the runs */
}

/* ---- through a space, on a fake device ----------------------------------- */

/*
 * A device that takes `ns_per_byte` per byte moved, on its own clock
 * (tests/support.h: t_device); every `every`-th transfer the thread is also
 * preempted `cpu_ns` inside it (the wall clock and the run delay both grow).
 */
typedef struct fake_device {
    t_device d; /* first: the device's callbacks get this */
    uint32_t every, n;
    uint64_t cpu_ns;
} fake_device;

static fake_device dev;

static void dev_preempted(t_device *d, ssize_t bytes)
{
    (void)bytes;
    fake_device *f = (fake_device *)d;
    if (f->every > 0 && ++f->n % f->every == 0) {
        d->now += f->cpu_ns;
        preempt(f->cpu_ns);
    }
}

/* An auto space on the fake device, its run delay read from `sched` (NULL: none at all). */
static bf_space *device_space(double ns_per_byte, uint32_t every, uint64_t cpu_ns,
                              const char *sched)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = BF_CODEC_AUTO;
    bf_space *sp = t_space_opts(&o);
    dev = (fake_device){{1, ns_per_byte, dev_preempted}, every, 0, cpu_ns};
    bf_io io = t_device_io(&dev.d);
    bf_space_set_io(sp, &io);
    bf_space_set_io_clock(sp, t_device_clock, &dev.d);
    if (sched != NULL)
        bf_space_set_schedstat(sp, sched);
    return sp;
}

/* Spill `mib` MiB of text through an auto file and read it back; the space's stats. */
static void spill(bf_space *sp, int mib, bf_stats *st)
{
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    t_rng rng = {77};
    size_t chunk = 64 * 1024, total = (size_t)mib << 20;
    unsigned char *buf = malloc(chunk), *got = malloc(chunk);
    t_rng check = rng;
    for (size_t done = 0; done < total; done += chunk) {
        t_fill(&rng, T_DATA_TEXT, buf, chunk);
        assert_int_equal(bf_file_write(f, buf, chunk), BF_OK);
    }
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    for (size_t done = 0; done < total; done += chunk) {
        t_fill(&check, T_DATA_TEXT, buf, chunk);
        assert_int_equal(bf_file_read(f, got, chunk), (int64_t)chunk);
        assert_memory_equal(got, buf, chunk);
    }
    bf_space_stats(sp, st);
    print_message("  none %llu, lz4 %llu, zstd %llu blocks; device runs %u, %.2f ns/B; %s\n",
                  (unsigned long long)st->blocks_by_codec[BF_CODEC_NONE],
                  (unsigned long long)st->blocks_by_codec[BF_CODEC_LZ4],
                  (unsigned long long)st->blocks_by_codec[BF_CODEC_ZSTD],
                  sp->autoc->dev.device_runs, sp->autoc->dev.device_ns, bf_space_auto_reason(sp));
    assert_int_equal(bf_file_close(f), BF_OK);
    free(buf);
    free(got);
}

static uint64_t blocks(const bf_stats *st)
{
    return st->blocks_by_codec[0] + st->blocks_by_codec[1] + st->blocks_by_codec[2] +
           st->blocks_by_codec[3];
}

/*
 * The page cache (0.05 ns/B) with the thread preempted 10 ms in one
 * transfer in 20: on the device clock nothing waits and auto stores the
 * text raw; without schedstat (the wall clock, as before) the preemptions
 * make a slow device of it (7.65 ns/B here) and it compresses.
 */
static void test_preempted_page_cache_is_not_a_wait(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_LZ4))
        skip();
    sched_open();
    bf_stats st;
    bf_space *sp = device_space(0.05, 20, 10000000, sched_path);
    spill(sp, 16, &st);
    assert_int_equal(sp->autoc->dev.device_runs, 0);
    assert_int_equal(sp->devclk.state, BF_DEVCLOCK_OPEN);
    /* Until the first 256 KiB of transfers are timed, the prior (200 MB/s) picks lz4. */
    assert_true(st.blocks_by_codec[BF_CODEC_NONE] * 100 >= blocks(&st) * 85);
    bf_space_destroy(sp);

    char missing[700];
    snprintf(missing, sizeof(missing), "%s/no-proc", parent);
    sp = device_space(0.05, 20, 10000000, missing);
    spill(sp, 16, &st);
    assert_int_equal(sp->devclk.state, BF_DEVCLOCK_WALL);
    /* The preemptions are taken for waits: runs time them, at 20x the page cache's
       0.05 ns/B or more, or, once compressed blocks make requests of several sizes, as a
       time per request whatever the size (auto.c, fit_run), which a preemption is. Which
       of the two, and what it then chooses, depends on this machine's codec times. */
    assert_true(sp->autoc->dev.device_runs > 0);
    assert_true(sp->autoc->dev.device_ns > 20 * 0.05 || sp->autoc->dev.request_fits > 0);
    bf_space_destroy(sp);
    sched_close();
}

/*
 * A slow device (100 KB/s: 82 ms per 8 KiB block), the thread preempted
 * 1 ms in one transfer in 4, or 5 ms (a pause: it ends a run) in one in
 * 40: its waits are waits, the runs time it within 25%, and the text is
 * compressed (but for the raw windows that confirm the runs).
 */
static void test_a_true_wait_is_a_wait(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_LZ4))
        skip();
    sched_open();
    static const struct {
        uint32_t every;
        uint64_t cpu;
    } cases[] = {{4, 1000000}, {40, 5000000}};
    for (int i = 0; i < 2; i++) {
        bf_stats st;
        bf_space *sp = device_space(10000, cases[i].every, cases[i].cpu, sched_path);
        spill(sp, 8, &st);
        assert_true(sp->autoc->dev.device_runs > 0);
        double d = sp->autoc->dev.device_ns;
        assert_true(d > 10000 * 0.75 && d < 10000 * 1.25);
        /* raw: the first window, and those written raw until BF_AUTO_SHARE_EARLY raw
           windows all waited (auto.c, explore_next): the preempted ones waited too */
        assert_true(st.blocks_by_codec[BF_CODEC_NONE] <=
                    (1 + BF_AUTO_SHARE_EARLY) * (uint64_t)(BF_AUTO_IO_WINDOW / 8192));
        bf_space_destroy(sp);
    }
    sched_close();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_takes_out_run_delay),
        cmocka_unit_test(test_unarmed_delay_is_an_upper_bound),
        cmocka_unit_test(test_without_schedstat_the_wall),
        cmocka_unit_test(test_another_thread_reopens),
        cmocka_unit_test(test_the_descriptor_is_in_the_callers_budget),
        cmocka_unit_test(test_paused_ends_a_run),
        cmocka_unit_test(test_cpu_waits_add_up),
        cmocka_unit_test(test_runs_are_timed_between_releases),
        cmocka_unit_test(test_preempted_page_cache_is_not_a_wait),
        cmocka_unit_test(test_a_true_wait_is_a_wait),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
