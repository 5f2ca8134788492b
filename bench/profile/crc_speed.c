/*
 * crc_speed.c - ns per byte of each implementation in src/crc32c.c
 * (bf_crc32c_impl: table, sse42, pclmul, vpclmul, those this CPU runs) and of
 * bf_crc32c itself, on the sizes extents have and 1 MiB, measured on the
 * thread's CPU clock (robust to other processes on the machine, not to their
 * cache and frequency effects). Every cell is the minimum over the passes
 * (default 15), each pass timing every implementation and size in turn over
 * 64 MiB (8 MiB for the table) of the same buffer, which stays in cache.
 *   crc_speed [--passes=N] [--offset=B]   (B: the buffer's distance from a
 *                                          64-byte boundary, default 0)
 * Build: cc -O2 -I src -I include bench/profile/crc_speed.c src/crc32c.c -lpthread
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define NSIZES 7
#define NROWS (BF_CRC32C_KINDS + 1) /* the implementations, then bf_crc32c */

int main(int argc, char **argv)
{
    static const size_t sizes[NSIZES] = {32, 256, 4096, 8192, 8224, 65536, 1 << 20};
    int passes = 15;
    size_t offset = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--passes=", 9) == 0)
            passes = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--offset=", 9) == 0)
            offset = (size_t)atoi(argv[i] + 9) % 64;
        else {
            fprintf(stderr, "usage: crc_speed [--passes=N] [--offset=B]\n");
            return 2;
        }
    }
    size_t cap = (1 << 20) + 128;
    unsigned char *mem = aligned_alloc(64, cap);
    unsigned char *buf = mem + offset;
    for (size_t i = 0; i < cap - 64; i++)
        buf[i] = (unsigned char)(i * 131 + 7);

    bf_crc32c_fn fn[NROWS];
    const char *name[NROWS];
    for (int w = 0; w < BF_CRC32C_KINDS; w++) {
        fn[w] = bf_crc32c_impl(w);
        name[w] = bf_crc32c_impl_name(w);
    }
    fn[BF_CRC32C_KINDS] = bf_crc32c;
    name[BF_CRC32C_KINDS] = "bf_crc32c";
    /* All agree before anything is timed. */
    for (int w = 0; w < NROWS; w++)
        for (int s = 0; s < NSIZES; s++)
            if (fn[w] && fn[w](1, buf, sizes[s]) != bf_crc32c_sw(1, buf, sizes[s])) {
                fprintf(stderr, "crc_speed: %s disagrees with the table at %zu bytes\n", name[w],
                        sizes[s]);
                return 1;
            }

    double best[NROWS][NSIZES];
    for (int w = 0; w < NROWS; w++)
        for (int s = 0; s < NSIZES; s++)
            best[w][s] = 1e9;
    volatile uint32_t sink = 0;
    for (int pass = 0; pass < passes; pass++)
        for (int w = 0; w < NROWS; w++) {
            if (!fn[w])
                continue;
            size_t total = (w == BF_CRC32C_TABLE ? 8u : 64u) << 20;
            for (int s = 0; s < NSIZES; s++) {
                size_t n = sizes[s], iters = total / n;
                uint32_t c = 0;
                double t0 = cpu_now();
                for (size_t i = 0; i < iters; i++)
                    c = fn[w](c, buf, n);
                double t = (cpu_now() - t0) * 1e9 / ((double)iters * (double)n);
                sink += c;
                if (t < best[w][s])
                    best[w][s] = t;
            }
        }

    printf("ns/B, minimum of %d passes (thread CPU time), buffer at 64-byte boundary + %zu; "
           "bf_crc32c uses %s\n",
           passes, offset, bf_crc32c_impl_name(bf_crc32c_selected()));
    printf("%-10s", "impl");
    for (int s = 0; s < NSIZES; s++)
        printf(" %8zu", sizes[s]);
    printf(" %12s\n", "ns/8KiB blk");
    for (int w = 0; w < NROWS; w++) {
        if (!fn[w])
            continue;
        printf("%-10s", name[w]);
        for (int s = 0; s < NSIZES; s++)
            printf(" %8.4f", best[w][s]);
        printf(" %12.1f\n", best[w][3] * 8192);
    }
    free(mem);
    return (int)(sink & 0);
}
