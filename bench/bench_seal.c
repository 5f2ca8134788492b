/*
 * bench_seal.c - what sealing (bf_space_options.encrypt) costs over
 * compression alone, per codec, in one run.
 *
 * Per round, every configuration - none, lz4 and zstd:1, each unsealed and
 * sealed, and lz4 unsealed again as a control - writes N MiB of TPC-H
 * lineitem rows through one file in 64 KiB calls and reads them back, in an
 * order shuffled per round. A sealed configuration's time is compared with
 * its own codec's unsealed one of the same round: the geometric mean of the
 * paired ratios with a 95% t interval on their logs (tpch/exec/paired.c),
 * and the median of the ratios; the control's ratio to lz4 is what the
 * machine's noise alone makes of two identical runs. Also printed: the
 * bytes written, and what sealing added per extent (its nonce and tag, 28
 * bytes by docs/format.md). Page-cache I/O under --temp-dir. A benchmark,
 * not a test: nothing here asserts timings.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rows.h"
#include "bench_util.h"
#include "buffile.h"
#include "paired.h"

#define NCONF 7
#define CONTROL 6
#define MAX_ROUNDS 200

static const bf_codec codecs[NCONF] = {BF_CODEC_NONE, BF_CODEC_NONE, BF_CODEC_LZ4, BF_CODEC_LZ4,
                                       BF_CODEC_ZSTD, BF_CODEC_ZSTD, BF_CODEC_LZ4};
static const int32_t levels[NCONF] = {
    BF_LEVEL_DEFAULT, BF_LEVEL_DEFAULT, BF_LEVEL_DEFAULT, BF_LEVEL_DEFAULT, 1, 1, BF_LEVEL_DEFAULT};
static const int sealed[NCONF] = {0, 1, 0, 1, 0, 1, 0};
static const char *const labels[NCONF] = {"none",   "none+enc",   "lz4",    "lz4+enc",
                                          "zstd:1", "zstd:1+enc", "control"};

typedef struct run {
    double seconds;
    uint64_t written, extents;
} run;

static void one_run(const char *temp_dir, int k, const unsigned char *data, size_t len, run *r)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = temp_dir;
    o.codec = codecs[k];
    o.level = levels[k];
    o.encrypt = sealed[k];
    bf_space *sp;
    bf_file *f;
    bench_space_file(&o, "bench_seal", &sp, &f);
    r->seconds = bench_write_read(f, data, len, "bench_seal");
    bf_stats st;
    bf_space_stats(sp, &st);
    r->written = st.physical_written;
    r->extents = st.blocks_compressed + st.blocks_raw;
    bf_file_close(f);
    bf_space_destroy(sp);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t mib = 256;
    int rounds = 15;
    const char *temp_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--rounds=", 9) == 0)
            rounds = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            temp_dir = argv[i] + 11;
        else
            rounds = -1;
    }
    if (mib < 1 || rounds < 2 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_seal [--mib=N] [--rounds=2..%d] [--temp-dir=DIR]\n",
                MAX_ROUNDS);
        return 2;
    }
    if (temp_dir == NULL)
        temp_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    size_t len = mib << 20;
    unsigned char *data = bench_lineitem_rows(temp_dir, "bench-seal-data", "bench_seal", len);
    static run runs[MAX_ROUNDS][NCONF];
    run warm;
    for (int k = 0; k < NCONF; k++)
        one_run(temp_dir, k, data, len, &warm); /* page cache, contexts: not counted */
    for (int r = 0; r < rounds; r++) {
        int order[NCONF];
        pd_shuffle(27, r, NCONF, order);
        for (int i = 0; i < NCONF; i++)
            one_run(temp_dir, order[i], data, len, &runs[r][order[i]]);
    }
    printf("bench_seal: %zu MiB of lineitem rows written and read back, 8 KiB blocks, %d rounds "
           "(shuffled), page cache under %s; cipher from %s\n",
           mib, rounds, temp_dir, OpenSSL_version(OPENSSL_VERSION));
    printf("%-11s %9s %-28s %12s %11s %11s %11s\n", "config", "median_s", "ratio [95%]",
           "median ratio", "writtenMB", "extents", "+B/extent");
    for (int k = 0; k < NCONF; k++) {
        int base = k == CONTROL ? 2 : k - sealed[k]; /* the same codec unsealed */
        double t[MAX_ROUNDS], b[MAX_ROUNDS], ratios[MAX_ROUNDS], med[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            t[r] = med[r] = runs[r][k].seconds;
            b[r] = runs[r][base].seconds;
            ratios[r] = t[r] / b[r];
        }
        qsort(ratios, (size_t)rounds, sizeof(double), cmp_double);
        char ratio[64] = "", median_ratio[32] = "";
        if (base != k) {
            pd_interval iv = pd_ratio(t, b, rounds);
            snprintf(ratio, sizeof(ratio), "%.4f [%.4f,%.4f]%s", iv.est, iv.lo, iv.hi,
                     pd_holds_one(&iv) ? "~" : "");
            snprintf(median_ratio, sizeof(median_ratio), "%.4f",
                     rounds % 2 ? ratios[rounds / 2]
                                : (ratios[rounds / 2 - 1] + ratios[rounds / 2]) / 2);
        }
        const run *r0 = &runs[0][k], *rb = &runs[0][base];
        double extra =
            r0->extents ? ((double)r0->written - (double)rb->written) / (double)r0->extents : 0;
        printf("%-11s %9.3f %-28s %12s %11.1f %11llu %11.1f\n", labels[k],
               bench_median(med, rounds), ratio, median_ratio, (double)r0->written / 1048576.0,
               (unsigned long long)r0->extents, extra);
    }
    printf("ratio: a sealed configuration's time to the same codec unsealed (control: lz4 again); "
           "'~': the interval holds 1.0\n");
    free(data);
    return 0;
}
