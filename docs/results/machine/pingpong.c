/*
 * pingpong.c - what an 8 KiB block costs to cross between two CPUs, the
 * way a block handed to a worker and back does (docs/results/machine.md).
 *
 * Two threads pinned to CPUs 0 and 1 take turns on one 8 KiB buffer: each
 * reads all of it and rewrites all of it, then hands it over with an
 * atomic flag (no sleeping). `pingpong same` does the same two passes on
 * CPU 0 alone. The difference per round trip is what the two crossings
 * cost. Build: cc -O2 -pthread pingpong.c -o pingpong
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { BLOCK = 8192, ROUNDS = 200000 };

static _Atomic int turn; /* 0: CPU 0's, 1: CPU 1's */
static unsigned char buf[BLOCK] __attribute__((aligned(64)));
static volatile unsigned long sink; /* the sums land here, so the reads are not optimised away */

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* Read the block and write it again: what a codec's input and a refilled buffer cost. */
static unsigned long touch(unsigned long x, int fill)
{
    for (int j = 0; j < BLOCK; j += 8) {
        unsigned long v;
        memcpy(&v, buf + j, 8);
        x += v;
    }
    memset(buf, fill, BLOCK);
    return x;
}

static void *other(void *unused)
{
    (void)unused;
    pin(1);
    unsigned long x = 0;
    for (int i = 0; i < ROUNDS; i++) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != 1)
            ;
        x = touch(x, (int)x);
        atomic_store_explicit(&turn, 0, memory_order_release);
    }
    sink = x;
    return NULL;
}

int main(int argc, char **argv)
{
    int same = argc > 1 && strcmp(argv[1], "same") == 0;
    pthread_t t;
    pin(0);
    if (!same && pthread_create(&t, NULL, other, NULL) != 0) {
        fprintf(stderr, "pingpong: cannot start a thread\n");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long x = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (same)
            x = touch(x, (int)x); /* the other side's pass, here */
        else
            while (atomic_load_explicit(&turn, memory_order_acquire) != 0)
                ;
        x = touch(x, i);
        if (!same)
            atomic_store_explicit(&turn, 1, memory_order_release);
    }
    if (!same) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != 0)
            ;
        pthread_join(t, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    sink = x;
    printf("%s: %.3f us a round trip (two passes over %d bytes)\n",
           same ? "one CPU" : "CPU 0 <-> CPU 1", ns / ROUNDS / 1e3, BLOCK);
    return 0;
}
