/*
 * bench_util.c - shared helpers of the benchmarks (see bench_util.h).
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_die(const char *prog, const char *msg)
{
    fprintf(stderr, "%s: %s\n", prog, msg);
    exit(1);
}

void bench_space_file(const bf_space_options *o, const char *prog, bf_space **sp, bf_file **f)
{
    char err[256];
    if (bf_space_create(o, sp, err, sizeof(err)) != BF_OK)
        bench_die(prog, err);
    if (bf_file_create(*sp, NULL, f) != BF_OK)
        bench_die(prog, bf_space_errmsg(*sp));
}
