/*
 * clock.h - the monotonic clock in nanoseconds, for codec timing and the
 * I/O throttle. CLOCK_MONOTONIC is read through the vDSO (tens of ns); a
 * thread CPU clock would cost a system call per block.
 */
#ifndef BF_CLOCK_H
#define BF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t bf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
