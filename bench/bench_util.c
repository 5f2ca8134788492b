/*
 * bench_util.c - shared helpers of the benchmarks (see bench_util.h).
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

double bench_write_read(bf_file *f, const unsigned char *data, size_t len, const char *prog)
{
    bf_space *sp = bf_file_space(f);
    static unsigned char buf[65536];
    const size_t chunk = sizeof(buf);
    double t0 = bench_now();
    for (size_t off = 0; off < len; off += chunk)
        if (bf_file_write(f, data + off, len - off < chunk ? len - off : chunk) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
    if (bf_file_seek(f, 0, BF_SEEK_SET) != BF_OK)
        bench_die(prog, bf_space_errmsg(sp));
    size_t got = 0;
    int64_t n;
    while ((n = bf_file_read(f, buf, chunk)) > 0)
        got += (size_t)n;
    double t = bench_now() - t0;
    if (n < 0 || got != len || memcmp(buf, data + len - chunk, chunk) != 0)
        bench_die(prog, "read back differs");
    return t;
}
