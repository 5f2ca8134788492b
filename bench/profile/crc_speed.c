/*
 * crc_speed.c - ns per byte of src/crc32c.c (bf_crc32c) on blocks of the
 * sizes extents have, measured on the thread's CPU clock (robust to other
 * processes on the machine), best of 9 passes of 64 MiB each.
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

int main(void)
{
    static const size_t sizes[] = {32, 4096, 8192, 8224, 65536, 262144};
    size_t cap = 262144 + 64;
    unsigned char *buf = malloc(cap);
    for (size_t i = 0; i < cap; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    volatile uint32_t sink = 0;
    printf("%8s %10s %10s %12s\n", "bytes", "hw ns/B", "sw ns/B", "hw ns/call");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        size_t iters = (64u << 20) / n;
        double best_hw = 1e9, best_sw = 1e9;
        for (int pass = 0; pass < 9; pass++) {
            double t0 = cpu_now();
            uint32_t c = 0;
            for (size_t i = 0; i < iters; i++)
                c = bf_crc32c(c, buf, n);
            double t1 = cpu_now();
            sink += c;
            if (t1 - t0 < best_hw)
                best_hw = t1 - t0;
            if (pass < 3) {
                t0 = cpu_now();
                for (size_t i = 0; i < iters / 8; i++)
                    c = bf_crc32c_sw(c, buf, n);
                t1 = cpu_now();
                sink += c;
                if ((t1 - t0) * 8 < best_sw)
                    best_sw = (t1 - t0) * 8;
            }
        }
        double bytes = (double)iters * (double)n;
        printf("%8zu %10.4f %10.4f %12.1f\n", n, best_hw * 1e9 / bytes, best_sw * 1e9 / bytes,
               best_hw * 1e9 / (double)iters);
    }
    free(buf);
    return (int)(sink & 0);
}
