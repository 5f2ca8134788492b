/*
 * devwait.c - does a transfer clock tell the device from the CPU?
 * PROTOTYPE experiment for the device-clock proposal (see devclock.h).
 *
 * Writes --mib MiB sequentially in --xfer-byte pwrites to a new file under
 * --dir, with --work ns of the caller's own CPU work between transfers
 * (a fixed loop, calibrated on the thread's CPU clock), in one of the modes
 *   pagecache          buffered writes (the page cache: no device wait)
 *   direct             O_DIRECT writes (the VM's disk)
 *   throttle:MBPS      buffered writes through io_limit's model of a device of
 *                      MBPS x 1e6 bytes/s (src/io_throttle.c: the caller runs
 *                      up to 4 ms ahead, then sleeps until 2 ms ahead)
 * and times every transfer with three clocks:
 *   wall     the monotonic clock, as auto does today (bf_space_io_now);
 *   devclk   devclock.h's: a wait is wall time less the run delay the
 *            transfer (at most) had, run_delay read from
 *            /proc/thread-self/schedstat only after long transfers, around
 *            the next DC_ARM ones, and once per MiB; runs on the wall clock,
 *            ended by a run delay over 2 ms before a transfer;
 *   exact    the same with run_delay read at both ends of every transfer
 *            (the reference; costs two schedstat readings per transfer);
 *   blocked  exact, and the thread's CPU time taken off as well (wall - CPU
 *            - run delay: the time it slept, on the device or the throttle).
 * devclk-r and exact-r: the same waits, but runs timed on the clock wall - run
 * delay (the run's own preemption taken out) instead of the wall clock.
 * devclk-p and exact-p: the same waits, runs on the wall clock, but a run is
 * also ended before a transfer when the thread waited over 2 ms for a CPU
 * before or in it (the device may have run dry meanwhile).
 * For each clock: transfers counted as waits by auto's rule (longer than
 * 1 ms + 1 ns/B), their time per byte over all bytes, and the device's
 * time per byte as auto's runs of waits measure it (time_device in
 * src/auto.c, mirrored: a run from the end of its first wait to the end of
 * its last, ended by a pause over 2 ms or 4 MiB without a wait; timed at
 * 2 MiB or 16 waits, or cut short with 2+ waits over 512 KiB): median of
 * the runs' samples.
 * --noref leaves the reference readings out: what devclk costs by itself.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devclock.h"

#define WAIT_NS 1000000.0
#define WAIT_NS_B 1.0
#define GAP 2000000u
#define CHAIN (4u << 20)
#define SPAN (2u << 20)
#define RUN_WAITS 16
#define RUN_MIN (512u << 10)

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* auto's run timer (src/auto.c time_device), one per clock. */
typedef struct runs {
    uint64_t last_end, run_start, run_last, run_bytes, run_timed, since_wait;
    uint32_t run_waits;
    double samples[4096];
    int n;
    uint64_t waits;
    double wait_ns; /* time of the transfers counted as waits */
    double all_ns;  /* time of all transfers */
} runs;

static void run_end(runs *r)
{
    if (r->run_start != 0 && r->run_waits >= 2 && r->run_timed >= RUN_MIN && r->n < 4096)
        r->samples[r->n++] = (double)(r->run_last - r->run_start) / (double)r->run_timed;
    r->run_start = 0;
}

static void run_start(runs *r, uint64_t end)
{
    r->run_start = end;
    r->run_bytes = r->run_timed = 0;
    r->run_waits = 0;
}

/* A transfer of `bytes` from `start` to `end` on the wall clock, of which `wait` counts as
   waiting for the device; `paused`: the caller waited for a CPU over DC_PAUSE before it. */
static void note(runs *r, uint64_t bytes, uint64_t start, uint64_t end, uint64_t wait, int paused)
{
    double ns = (double)wait;
    int waited = ns > WAIT_NS + WAIT_NS_B * (double)bytes;
    r->all_ns += ns;
    if (waited) {
        r->waits++;
        r->wait_ns += ns;
    }
    if (r->last_end != 0 && (start > r->last_end + GAP || paused))
        run_end(r);
    r->last_end = end;
    r->run_bytes += bytes;
    r->since_wait += bytes;
    if (r->since_wait > CHAIN)
        run_end(r);
    if (!waited)
        return;
    r->since_wait = 0;
    if (r->run_start == 0) {
        run_start(r, end);
        return;
    }
    r->run_waits++;
    r->run_last = end;
    r->run_timed = r->run_bytes;
    if (r->run_bytes < SPAN && r->run_waits < RUN_WAITS)
        return;
    run_end(r);
    run_start(r, end);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, runs *r, double bytes)
{
    run_end(r);
    qsort(r->samples, (size_t)r->n, sizeof(double), cmp);
    printf("  %-7s waits %6llu  wait ns/B %7.3f  all ns/B %7.3f  runs %3d", name,
           (unsigned long long)r->waits, r->wait_ns / bytes, r->all_ns / bytes, r->n);
    if (r->n > 0)
        printf("  device ns/B median %7.2f [%.2f .. %.2f]", r->samples[r->n / 2], r->samples[0],
               r->samples[r->n - 1]);
    printf("\n");
}

/* The caller's own work between transfers: a fixed amount of computation. */
static volatile uint64_t sink;
static uint64_t iters_per_us = 100;

static void work(uint64_t ns)
{
    uint64_t x = sink, n = ns * iters_per_us / 1000;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

static void calibrate(void)
{
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 5; k++) {
        iters_per_us = 1000;
        uint64_t c0 = cpu_ns();
        work(2000000); /* 2e6 iterations */
        uint64_t c1 = cpu_ns();
        if (c1 - c0 < best)
            best = c1 - c0;
    }
    iters_per_us = 2000000u * 1000u / best;
}

int main(int argc, char **argv)
{
    const char *mode = "pagecache", *dir = "/tmp";
    size_t mib = 64, xfer = 8192;
    uint64_t work_ns = 0, rate = 0;
    int ref = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mode=", 7) == 0)
            mode = argv[i] + 7;
        else if (strncmp(argv[i], "--dir=", 6) == 0)
            dir = argv[i] + 6;
        else if (strncmp(argv[i], "--mib=", 6) == 0)
            mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--xfer=", 7) == 0)
            xfer = strtoul(argv[i] + 7, NULL, 10);
        else if (strncmp(argv[i], "--work=", 7) == 0)
            work_ns = strtoull(argv[i] + 7, NULL, 10);
        else if (strcmp(argv[i], "--noref") == 0)
            ref = 0;
        else {
            fprintf(stderr, "usage: devwait [--mode=pagecache|direct|throttle:MBPS] [--dir=D] "
                            "[--mib=N] [--xfer=BYTES] [--work=NS] [--noref]\n");
            return 2;
        }
    }
    int direct = strcmp(mode, "direct") == 0;
    if (strncmp(mode, "throttle:", 9) == 0)
        rate = strtoull(mode + 9, NULL, 10) * 1000000u;
    calibrate();
    char path[4096];
    snprintf(path, sizeof(path), "%s/devwait.%ld", dir, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    unsigned char *buf;
    if (posix_memalign((void **)&buf, 4096, xfer) != 0)
        return 1;
    for (size_t i = 0; i < xfer; i++)
        buf[i] = (unsigned char)(i * 7);
    int rfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    dc_clock dc;
    dc_init(&dc);
    static runs rw, rd, rx, rb, rd2, rx2, rd3, rx3;
    uint64_t n = ((uint64_t)mib << 20) / xfer, busy_until = 0;
    uint64_t rq_total = 0, cpu_total = 0, prev_r1 = 0;
    uint64_t t0 = dc_wall(), rq0 = dc_read_run_delay(rfd), c00 = cpu_ns();
    for (uint64_t i = 0; i < n; i++) {
        work(work_ns);
        uint64_t c0 = 0, r0 = 0, w0 = 0;
        if (ref) {
            c0 = cpu_ns();
            r0 = dc_read_run_delay(rfd);
            w0 = dc_wall();
        }
        dc_begin(&dc);
        if (pwrite(fd, buf, xfer, (off_t)(i * xfer)) != (ssize_t)xfer) {
            perror("pwrite");
            return 1;
        }
        if (rate != 0) { /* src/io_throttle.c's charge() */
            uint64_t now = dc_wall();
            uint64_t start = busy_until > now ? busy_until : now;
            busy_until = start + (uint64_t)((double)xfer * 1e9 / (double)rate);
            if (busy_until > now + 4000000u) {
                uint64_t wake = busy_until - 2000000u;
                struct timespec until = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0)
                    ;
            }
        }
        dc_end(&dc, xfer);
        note(&rw, xfer, dc.wall_start, dc.wall_end, dc.wall_end - dc.wall_start, 0);
        note(&rd, xfer, dc.wall_start, dc.wall_end, dc.wait_ns, dc.paused);
        note(&rd2, xfer, dc.dev_start, dc.dev_end, dc.wait_ns, 0);
        note(&rd3, xfer, dc.wall_start, dc.wall_end, dc.wait_ns, dc.preempted);
        if (ref) {
            uint64_t w1 = dc_wall(), r1 = dc_read_run_delay(rfd), c1 = cpu_ns();
            uint64_t wall = w1 - w0, rqd = r1 - r0, cpu = c1 - c0;
            int paused = prev_r1 != 0 && r0 - prev_r1 > DC_PAUSE;
            note(&rx, xfer, w0, w1, wall > rqd ? wall - rqd : 0, paused);
            uint64_t blocked = wall > rqd + cpu ? wall - rqd - cpu : 0;
            note(&rb, xfer, w0, w1, blocked, paused);
            note(&rx2, xfer, w0 - r0, w1 - r1, wall > rqd ? wall - rqd : 0, 0);
            int preempted = prev_r1 != 0 && r1 - prev_r1 > DC_PAUSE;
            note(&rx3, xfer, w0, w1, wall > rqd ? wall - rqd : 0, preempted);
            rq_total += rqd;
            cpu_total += cpu;
            prev_r1 = r1;
        }
    }
    uint64_t t1 = dc_wall(), rq1 = dc_read_run_delay(rfd), c11 = cpu_ns();
    close(fd);
    unlink(path);
    double bytes = (double)n * (double)xfer;
    printf(
        "devwait %s: %zu MiB in %zu-byte writes, caller work %llu ns each; elapsed ns/B: wall "
        "%.3f, wall - run delay %.3f, thread CPU %.3f; run delay %.1f ms (in transfers %.1f ms); "
        "devclk schedstat readings %llu (%.1f per MiB)\n",
        mode, mib, xfer, (unsigned long long)work_ns, (double)(t1 - t0) / bytes,
        (double)((t1 - t0) - (rq1 - rq0)) / bytes, (double)(c11 - c00) / bytes,
        (double)(rq1 - rq0) / 1e6, (double)rq_total / 1e6, (unsigned long long)dc.readings,
        (double)dc.readings / (double)mib);
    report("wall", &rw, bytes);
    report("devclk", &rd, bytes);
    if (ref) {
        report("exact", &rx, bytes);
        report("blocked", &rb, bytes);
    }
    report("devclk-r", &rd2, bytes);
    if (ref)
        report("exact-r", &rx2, bytes);
    report("devclk-p", &rd3, bytes);
    if (ref)
        report("exact-p", &rx3, bytes);
    dc_close(&dc);
    return 0;
}
