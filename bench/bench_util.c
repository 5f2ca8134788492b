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

bf_space *bench_space(const bf_space_options *o, const char *prog)
{
    char err[256];
    bf_space *sp;
    if (bf_space_create(o, &sp, err, sizeof(err)) != BF_OK)
        bench_die(prog, err);
    return sp;
}

void bench_space_file(const bf_space_options *o, const char *prog, bf_space **sp, bf_file **f)
{
    *sp = bench_space(o, prog);
    if (bf_file_create(*sp, NULL, f) != BF_OK)
        bench_die(prog, bf_space_errmsg(*sp));
}

/* The caller's own work: `ns` of the CPU, spun (a sleep would hand the CPU over). */
static void spin(double ns)
{
    double end = bench_now() + ns * 1e-9;
    while (bench_now() < end)
        ;
}

double bench_write_read_work(bf_file *f, const unsigned char *data, size_t len, const char *prog,
                             double work_ns_per_kib)
{
    bf_space *sp = bf_file_space(f);
    static unsigned char buf[65536];
    const size_t chunk = sizeof(buf);
    const double work = work_ns_per_kib * (double)(chunk >> 10);
    double t0 = bench_now();
    for (size_t off = 0; off < len; off += chunk) {
        if (bf_file_write(f, data + off, len - off < chunk ? len - off : chunk) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
        if (work > 0)
            spin(work);
    }
    if (bf_file_seek(f, 0, BF_SEEK_SET) != BF_OK)
        bench_die(prog, bf_space_errmsg(sp));
    size_t got = 0;
    int64_t n;
    while ((n = bf_file_read(f, buf, chunk)) > 0) {
        got += (size_t)n;
        if (work > 0)
            spin(work);
    }
    double t = bench_now() - t0;
    if (n < 0 || got != len || memcmp(buf, data + len - chunk, chunk) != 0)
        bench_die(prog, "read back differs");
    return t;
}

double bench_batches(bf_space *sp, int nfiles, const unsigned char *data, size_t len,
                     const char *prog, double work_ns_per_kib, bench_progress progress)
{
    enum { CALL = 8192 };
    bf_file **f = calloc((size_t)nfiles, sizeof(*f));
    unsigned char *buf = malloc(CALL);
    if (f == NULL || buf == NULL)
        bench_die(prog, "out of memory");
    for (int i = 0; i < nfiles; i++)
        if (bf_file_create(sp, NULL, &f[i]) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
    const double work = work_ns_per_kib * (CALL >> 10);
    size_t calls = (len + CALL - 1) / CALL;
    double t0 = bench_now();
    /* Call i holds data[i * CALL ...] and goes to file i % nfiles, as a hash join's
       tuples go to their batches: every file's next block fills in turn. */
    for (size_t i = 0; i < calls; i++) {
        size_t off = i * CALL, n = len - off < CALL ? len - off : CALL;
        if (bf_file_write(f[i % (size_t)nfiles], data + off, n) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
        if (work > 0)
            spin(work);
        if (progress != NULL && (i + 1) % (calls / 8 + 1) == 0)
            progress(sp, 1, off + n);
    }
    /* Then each batch is read back whole, one after the other. */
    size_t read = 0, reads = 0;
    for (int b = 0; b < nfiles; b++) {
        if (bf_file_seek(f[b], 0, BF_SEEK_SET) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
        for (size_t i = (size_t)b; i < calls; i += (size_t)nfiles) {
            size_t off = i * CALL, n = len - off < CALL ? len - off : CALL;
            if (bf_file_read(f[b], buf, n) != (int64_t)n || memcmp(buf, data + off, n) != 0)
                bench_die(prog, "read back differs");
            if (work > 0)
                spin(work);
            read += n;
            if (progress != NULL && ++reads % (calls / 8 + 1) == 0)
                progress(sp, 0, read);
        }
    }
    double t = bench_now() - t0;
    for (int i = 0; i < nfiles; i++)
        bf_file_close(f[i]);
    free(buf);
    free(f);
    return t;
}

double bench_write_read(bf_file *f, const unsigned char *data, size_t len, const char *prog)
{
    return bench_write_read_work(f, data, len, prog, 0);
}
