/*
 * bench_util.h - what every benchmark here needs: a monotonic clock, the
 * median of repeated measurements, and a one-line fatal error.
 */
#ifndef BF_BENCH_UTIL_H
#define BF_BENCH_UTIL_H

/* Seconds on the monotonic clock. */
double bench_now(void);

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* Print "<prog>: <msg>" on stderr and exit 1. */
_Noreturn void bench_die(const char *prog, const char *msg);

#endif
