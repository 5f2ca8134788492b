/* merge_cpu.c K N W CODEC WORK [TMPDIR]: the caller-thread CPU per block of K runs of N 4 KiB
   blocks of one file read a block of each in turn (seek, read), with W workers, codec CODEC
   (1: lz4), and WORK passes over each block read (the consumer's work); issue 49,
   docs/results/sqlite.md "Blocks unpacked ahead for interleaved passes". Build against a
   tree's libbuffile.a:  cc -O2 -std=c11 -D_GNU_SOURCE -I include merge_cpu.c
   b/src/libbuffile.a -llz4 -lzstd -lz -lcrypto -lpthread -o merge_cpu */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buffile.h"
static double tcpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static double pcpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char **argv)
{
    unsigned K = atoi(argv[1]), N = atoi(argv[2]), W = atoi(argv[3]); int codec = atoi(argv[4]); unsigned WORK = argc > 5 ? atoi(argv[5]) : 0;
    const unsigned BS = 4096;
    bf_space_options o; bf_space_options_init(&o);
    o.temp_dir = argc > 6 ? argv[6] : "."; o.codec = codec; o.block_size = BS;
    bf_space *sp; char err[256];
    if (bf_space_create(&o, &sp, err, sizeof err) != BF_OK) { fprintf(stderr, "%s\n", err); return 1; }
    if (W && bf_space_set_workers(sp, W, NULL, NULL) != BF_OK) return 1;
    bf_file *f; bf_file_create(sp, NULL, &f);
    unsigned char *blk = malloc(BS); unsigned long long x = 88172645463325252ull;
    static const char *words[] = {"alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel "};
    size_t TL = 1 << 20; char *text = malloc(TL + BS); size_t q = 0;
    while (q < TL) { x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        q += snprintf(text + q, TL + BS - q, "%llu %s", x % 100000, words[(x >> 20) & 7]); }
    for (unsigned long b = 0; b < (unsigned long)K * N; b++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        memcpy(blk, text + (x % (TL - BS)), BS);
        bf_file_write(f, blk, BS);
    }
    bf_file_flush(f);
    unsigned *next = calloc(K, sizeof *next);
    double t0 = tcpu(), p0 = pcpu(); unsigned long long sum = 0;
    for (unsigned left = K * N; left;)
        for (unsigned t = 0; t < K; t++) {
            if (next[t] == N) continue;
            uint64_t pos = ((uint64_t)t * N + next[t]++) * BS;
            bf_file_seek(f, (int64_t)pos, BF_SEEK_SET);
            if (bf_file_read(f, blk, BS) != BS) return 2;
            for (unsigned rep = 0; rep < WORK; rep++)
                for (unsigned i = 0; i < BS; i += 8) sum = sum * 31 + blk[i];
            sum += blk[7]; left--;
        }
    double t1 = tcpu(), p1 = pcpu();
    bf_stats st; bf_space_stats(sp, &st);
    printf("K=%u W=%u caller_ns_per_block=%.0f process_ns_per_block=%.0f hits=%llu misses=%llu sum=%llu\n", K, W,
           (t1 - t0) / (K * N), (p1 - p0) / (K * N), (unsigned long long)st.readahead_hits, (unsigned long long)st.readahead_misses, sum);
    bf_file_close(f); bf_space_destroy(sp);
    return 0;
}
