/*
 * loop.c - how steady is this machine's CPU? Times a fixed amount of work N times:
 * with SIZE 1, 300 M steps of a 64-bit LCG (registers only); otherwise 50 M random
 * read-modify-writes over an array of SIZE bytes (256 KiB stays in L2, 16 MiB needs the
 * shared L3). Prints one time in seconds per line. docs/results/machine.md.
 *
 *   cc -O2 -o loop loop.c && taskset -c 0 ./loop 20 16777216
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: loop N SIZE\n");
        return 2;
    }
    int n = atoi(argv[1]);
    size_t words = (size_t)atol(argv[2]) / 4;
    uint32_t *a = calloc(words ? words : 1, 4);
    uint64_t x = 1;
    if (a == NULL)
        return 1;
    for (int r = 0; r < n; r++) {
        double t = now();
        if (words <= 1)
            for (long i = 0; i < 300000000; i++)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        else
            for (long i = 0; i < 50000000; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                a[(x >> 33) % words] += (uint32_t)x;
            }
        printf("%.3f\n", now() - t);
        fflush(stdout);
    }
    return (int)((a[0] + x) & 1);
}
