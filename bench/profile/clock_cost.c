/*
 * clock_cost.c - what each source of "how long did this call wait on the
 * device" costs per reading: the monotonic clock (vDSO), the thread's CPU
 * clock, getrusage(RUSAGE_THREAD) (context switch counts), and
 * /proc/thread-self/schedstat (CPU time, run-queue delay, timeslices),
 * read with pread on a descriptor kept open, or opened each time.
 * ns per reading on the thread's CPU clock (other processes' load does not
 * count), best of 7 passes; and the same on the wall clock.
 * Build: cc -O2 bench/profile/clock_cost.c -o clock_cost
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static uint64_t ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int sfd = -1;
static volatile uint64_t sink;

/* run_delay (ns) from a schedstat line "<cpu ns> <run_delay ns> <slices>". */
static uint64_t parse_second(const char *b)
{
    while (*b && *b != ' ')
        b++;
    uint64_t v = 0;
    for (b++; *b >= '0' && *b <= '9'; b++)
        v = v * 10 + (uint64_t)(*b - '0');
    return v;
}

static void op_mono(void)
{
    sink += ns(CLOCK_MONOTONIC);
}
static void op_cpu(void)
{
    sink += ns(CLOCK_THREAD_CPUTIME_ID);
}
static void op_rusage(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    sink += (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}
static void op_sched_pread(void)
{
    char b[128];
    ssize_t n = pread(sfd, b, sizeof(b) - 1, 0);
    b[n > 0 ? n : 0] = 0;
    sink += parse_second(b);
}
static void op_sched_open(void)
{
    char b[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    b[n > 0 ? n : 0] = 0;
    sink += parse_second(b);
}

int main(void)
{
    sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (sfd < 0) {
        perror("schedstat");
        return 1;
    }
    struct {
        const char *name;
        void (*op)(void);
        int n;
    } ops[] = {
        {"clock_gettime(CLOCK_MONOTONIC)", op_mono, 2000000},
        {"clock_gettime(CLOCK_THREAD_CPUTIME_ID)", op_cpu, 500000},
        {"getrusage(RUSAGE_THREAD)", op_rusage, 300000},
        {"pread /proc/thread-self/schedstat", op_sched_pread, 100000},
        {"open+read+close schedstat", op_sched_open, 50000},
    };
    printf("%-42s %12s %12s\n", "reading", "cpu ns/call", "wall ns/call");
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        double best_cpu = 1e18, best_wall = 1e18;
        for (int pass = 0; pass < 7; pass++) {
            uint64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID), w0 = ns(CLOCK_MONOTONIC);
            for (int i = 0; i < ops[k].n; i++)
                ops[k].op();
            uint64_t c1 = ns(CLOCK_THREAD_CPUTIME_ID), w1 = ns(CLOCK_MONOTONIC);
            double c = (double)(c1 - c0) / ops[k].n, w = (double)(w1 - w0) / ops[k].n;
            if (c < best_cpu)
                best_cpu = c;
            if (w < best_wall)
                best_wall = w;
        }
        printf("%-42s %12.1f %12.1f\n", ops[k].name, best_cpu, best_wall);
    }
    return 0;
}
