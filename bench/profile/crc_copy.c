/*
 * crc_copy.c - ns per 8 KiB block of a bare block's check read out of a
 * read-ahead window: bf_crc32c_le64 alone (what a write costs), followed by a
 * memcpy into a block buffer (the read before d396256), and
 * bf_crc32c_le64_copy (the read since: the copy in the CRC's pass). The
 * source walks 64 blocks (512 KiB, a window's size: in L2, not L1); each
 * figure is the minimum over 25 passes of 2000 blocks on the thread's CPU
 * clock. Built against an older src/crc32c.c it times only the first two.
 * Build: cc -O2 -I src bench/profile/crc_copy.c src/crc32c.c -lpthread
 *        (-DNO_COPY for a crc32c.c without bf_crc32c_le64_copy)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"

enum { BLOCK = 8192, WINDOW = 64, CALLS = 2000, PASSES = 25 };

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(void)
{
    unsigned char *src = aligned_alloc(64, (size_t)BLOCK * WINDOW);
    unsigned char *dst = aligned_alloc(64, BLOCK);
    if (src == NULL || dst == NULL)
        return 1;
    for (size_t i = 0; i < (size_t)BLOCK * WINDOW; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    volatile uint32_t sink = 0;
    double best[3] = {1e30, 1e30, 1e30};
    for (int pass = 0; pass < PASSES; pass++) {
        double t[4];
        t[0] = now_ns();
        for (int k = 0; k < CALLS; k++)
            sink += bf_crc32c_le64((uint64_t)k, src + (size_t)(k % WINDOW) * BLOCK, BLOCK);
        t[1] = now_ns();
        for (int k = 0; k < CALLS; k++) {
            const unsigned char *s = src + (size_t)(k % WINDOW) * BLOCK;
            sink += bf_crc32c_le64((uint64_t)k, s, BLOCK);
            memcpy(dst, s, BLOCK);
        }
        t[2] = now_ns();
#ifndef NO_COPY
        for (int k = 0; k < CALLS; k++)
            sink +=
                bf_crc32c_le64_copy((uint64_t)k, dst, src + (size_t)(k % WINDOW) * BLOCK, BLOCK);
#endif
        t[3] = now_ns();
        for (int i = 0; i < 3; i++)
            if (t[i + 1] - t[i] < best[i])
                best[i] = t[i + 1] - t[i];
    }
    printf("%s: le64 %.1f ns/block, le64 + memcpy %.1f, le64_copy %.1f\n",
           bf_crc32c_impl_name(bf_crc32c_selected()), best[0] / CALLS, best[1] / CALLS,
           best[2] / CALLS);
    free(src);
    free(dst);
    return (int)(sink & 0);
}
