/*
 * crc_batch.c - what summing a block's CRC-32C in batches as it fills costs
 * (file.c's FILL_BATCH) against one sum at the store, on this CPU's
 * bf_crc32c (thread CPU time, minimum of the passes):
 *  1. one sum of N bytes, each continuing from the last (a fill's sums of a
 *     block are a chain: each starts from the previous one's state), for N
 *     from 256 to 8192, and what 8 KiB costs summed N bytes at a time;
 *  2. blocks of 8 KiB filled round robin, 1 KiB into each in turn, over
 *     regions of 32 KiB to 8 MiB (4 to 1,024 files' buffers), each block
 *     summed whole after its last piece (the store's sum, from wherever the
 *     region leaves its lines), or 1 or 2 KiB at a time right after its
 *     piece was copied (the fill's), or not at all (the copies alone).
 * Build: cc -O2 -I src -I include bench/profile/crc_batch.c src/crc32c.c -lpthread
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    unsigned char *src = aligned_alloc(64, 1 << 20);
    for (int i = 0; i < 1 << 20; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    printf("bf_crc32c runs %s\n", bf_crc32c_impl_name(bf_crc32c_selected()));
    static const size_t sizes[] = {256, 512, 1024, 2048, 4096, 8192};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        double best = 1e9;
        volatile uint32_t sink = 0;
        for (int pass = 0; pass < 15; pass++) {
            int n = (1 << 22) / (int)sizes[s];
            uint32_t x = 0;
            double t0 = cpu_now();
            for (int i = 0; i < n; i++)
                x = bf_crc32c(x, src + ((i * sizes[s]) & 0x7fff), sizes[s]);
            double t = (cpu_now() - t0) / n * 1e9;
            sink ^= x;
            if (t < best)
                best = t;
        }
        printf("%5zu bytes a sum: %6.1f ns; 8 KiB in %2zu sums: %6.1f ns\n", sizes[s], best,
               8192 / sizes[s], best * (double)(8192 / sizes[s]));
    }
    static const size_t regions[] = {1 << 15, 1 << 16, 1 << 18, 1 << 20, 1 << 21, 1 << 23};
    for (size_t r = 0; r < sizeof(regions) / sizeof(regions[0]); r++) {
        size_t nb = regions[r] / 8192;
        unsigned char *m = aligned_alloc(64, regions[r]);
        memset(m, 1, regions[r]);
        double best[4] = {1e9, 1e9, 1e9, 1e9};
        volatile uint32_t sink = 0;
        for (int pass = 0; pass < 9; pass++)
            for (int mode = 0; mode < 4; mode++) {
                uint32_t x = 0;
                size_t blocks = 0;
                double t0 = cpu_now();
                for (size_t rep = 0; rep < 4096 / nb + 1; rep++) {
                    for (size_t o = 0; o < 8192; o += 1024)
                        for (size_t b = 0; b < nb; b++) {
                            unsigned char *blk = m + b * 8192;
                            memcpy(blk + o, src + ((b * 8192 + o) & ((1 << 20) - 1)), 1024);
                            if (mode == 1)
                                x = bf_crc32c(x, blk + o, 1024);
                            else if (mode == 2 && (o & 1024))
                                x = bf_crc32c(x, blk + o - 1024, 2048);
                        }
                    for (size_t b = 0; b < nb; b++, blocks++)
                        if (mode == 0)
                            x = bf_crc32c(x, m + b * 8192, 8192);
                }
                double t = (cpu_now() - t0) / (double)blocks * 1e9;
                sink ^= x;
                if (t < best[mode])
                    best[mode] = t;
            }
        printf("%5zu KiB of buffers (%4zu blocks), ns a block: copies + one sum %.0f, + 1 KiB sums "
               "%.0f, + 2 KiB sums %.0f, copies alone %.0f\n",
               regions[r] >> 10, nb, best[0], best[1], best[2], best[3]);
        free(m);
    }
    free(src);
    return 0;
}
