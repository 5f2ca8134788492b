/*
 * bench_fileset.c - cost of sharing a file: index bytes per GiB of logical
 * data, export time and open time, for a named file of --mib MiB.
 * A benchmark, not a test: it prints medians and asserts nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "buffile.h"
#include "index.h"

static void check(int rc, bf_space *sp)
{
    if (rc != BF_OK) {
        fprintf(stderr, "bench_fileset: %s\n", sp ? bf_space_errmsg(sp) : bf_strerror(rc));
        exit(1);
    }
}

/* Seven timed opens of "big" in `mode` (each closed untimed), sorted ascending. */
static void open_times(bf_space *r, const char *set, int mode, double t[7])
{
    for (int i = 0; i < 7; i++) {
        bf_file *g;
        double t0 = bench_now();
        check(bf_file_open_named(r, set, "big", mode, &g), r);
        t[i] = bench_now() - t0;
        check(bf_file_close(g), r);
    }
    bench_median(t, 7); /* sorts */
}

int main(int argc, char **argv)
{
    size_t mib = 1024;
    uint32_t bs = 8192;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--block-size=", 13) == 0)
            bs = (uint32_t)strtoul(argv[i] + 13, NULL, 10);
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            tmp = argv[i] + 11;
        else {
            fprintf(stderr, "usage: bench_fileset [--mib=N] [--block-size=B] [--temp-dir=DIR]\n");
            return 2;
        }
    }
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = tmp;
    o.block_size = bs;
    bf_space *w, *r;
    char err[256];
    if (bf_space_create(&o, &w, err, sizeof(err)) != BF_OK ||
        bf_space_create(&o, &r, err, sizeof(err)) != BF_OK) {
        fprintf(stderr, "bench_fileset: %s\n", err);
        return 1;
    }
    char set[4096];
    snprintf(set, sizeof(set), "%s/bench-fileset-set", tmp);
    check(bf_fileset_create(w, set), w);
    bf_file *f;
    check(bf_file_create_named(w, set, "big", NULL, &f), w);
    /* Row-like text, varied so blocks differ: ~the ratio of spilled tuples. */
    static char chunk[1 << 16];
    uint64_t x = 88172645463325252ull;
    for (size_t done = 0; done < mib << 20; done += sizeof(chunk)) {
        size_t n = 0;
        while (n + 64 < sizeof(chunk)) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            n += (size_t)snprintf(chunk + n, 64, "%llu|%u|carefully regular deposits|\n",
                                  (unsigned long long)(x % 6000000), (unsigned)(x >> 40) % 50);
        }
        memset(chunk + n, ' ', sizeof(chunk) - n);
        check(bf_file_write(f, chunk, sizeof(chunk)), w);
    }
    double t0 = bench_now();
    check(bf_file_export(f), w);
    double export_s = bench_now() - t0;
    /* The index lies inside the file: its head names where, and how long it is. */
    char seg0[4200];
    snprintf(seg0, sizeof(seg0), "%s/big.0", set);
    unsigned char head[BF_HEAD_BYTES];
    bf_head_slot slot = {0};
    const char *why;
    int fd = open(seg0, O_RDONLY);
    ssize_t got = fd >= 0 ? pread(fd, head, sizeof(head), 0) : -1;
    if (fd >= 0)
        close(fd);
    if (got < 0 || bf_head_decode(head, (size_t)got, &slot, &why) != BF_OK) {
        fprintf(stderr, "bench_fileset: no index in %s\n", seg0);
        return 1;
    }
    double ro[7], rw[7];
    open_times(r, set, BF_OPEN_READONLY, ro);
    open_times(r, set, BF_OPEN_READWRITE, rw);
    bf_stats fs;
    bf_file_stats(f, &fs);
    printf("logical %zu MiB, %u-byte blocks, lz4: physical %.1f MiB\n", mib, bs,
           (double)fs.physical_bytes / 1048576.0);
    printf("index: %llu bytes (%.2f MiB per GiB of logical data)\n", (unsigned long long)slot.len,
           (double)slot.len / 1048576.0 / ((double)mib / 1024.0));
    printf("export (flush + write index): %.2f ms\n", export_s * 1e3);
    printf("open by name in another space: median %.2f ms of 7 (min %.2f, max %.2f)\n", ro[3] * 1e3,
           ro[0] * 1e3, ro[6] * 1e3);
    printf("open read-write (checks overlaps, rebuilds the free list): median %.2f ms of 7 "
           "(min %.2f, max %.2f)\n",
           rw[3] * 1e3, rw[0] * 1e3, rw[6] * 1e3);
    bf_file_close(f);
    check(bf_fileset_destroy(w, set), w);
    bf_space_destroy(w);
    bf_space_destroy(r);
    return 0;
}
