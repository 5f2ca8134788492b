/*
 * bench_auto.c - codec=auto against the fixed codecs on one kind of spill
 * data: random bytes (nothing compresses: auto must settle on none and
 * cost next to nothing more), TPC-H lineitem rows, or both in runs.
 *
 * Per round, every configuration (none, lz4, zstd:1, auto, and none again
 * as a control) writes N MiB
 * through one file in 64 KiB calls and reads it back, in an order shuffled
 * per round; each configuration's time is compared with none's of the same
 * round (geometric mean of the paired ratios, 95% t interval on their logs:
 * tpch/exec/paired.c); the control's ratio is what the machine's noise
 * alone makes of two identical runs. Also printed: physical bytes and, for auto, the
 * extents it wrote per codec, its probe time and its last decision. With
 * --io-limit the temp device is the library's throttled model; --temp-dir
 * on a slowfs mount (tools/slowfs) a synchronous device. --carry adds
 * "auto+": auto whose every run starts from the device figures its last run
 * left (bf_space_auto_device into bf_space_options.auto_device, as
 * pg_buffile carries them from one process to the next; the runs before
 * the rounds count, so its first round is seeded). --files=N (N > 1)
 * writes a hash join's batches instead: N files of one space filled in
 * turn in 8 KiB calls, each block its own request, then read back one
 * after the other (bench_batches); --work=NS adds the caller's own work,
 * NS ns of CPU per KiB after each call; --trace (with --files) prints what
 * auto knows about 8 times a phase in a run of its own before the rounds. A
 * benchmark, not a test: nothing here asserts timings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "auto.h"
#include "bench_rows.h"
#include "bench_util.h"
#include "buffile.h"
#include "paired.h"
#include "space.h"
#include "tpch_gen.h"

#define NCONF 6
#define AUTO 3    /* the index of auto in the tables below */
#define CARRIED 5 /* auto from the figures its last run left (--carry) */
#define MAX_ROUNDS 200

static const bf_codec codecs[NCONF] = {BF_CODEC_NONE, BF_CODEC_LZ4,  BF_CODEC_ZSTD,
                                       BF_CODEC_AUTO, BF_CODEC_NONE, BF_CODEC_AUTO};
static const int32_t levels[NCONF] = {BF_LEVEL_DEFAULT, BF_LEVEL_DEFAULT, 1,
                                      BF_LEVEL_DEFAULT, BF_LEVEL_DEFAULT, BF_LEVEL_DEFAULT};
static const char *const labels[NCONF] = {"none", "lz4", "zstd:1", "auto", "control", "auto+"};

/* What auto+ starts from: what its last run learned (--carry). */
static bf_auto_device carried = BF_AUTO_DEVICE_INIT;

typedef struct cfg {
    size_t mib;
    int rounds;
    uint64_t io_limit;
    const char *data; /* random, text, mixed */
    const char *temp_dir;
    int files;   /* 1: one file in 64 KiB calls; more: bench_batches */
    double work; /* the caller's ns per KiB after each call */
    int trace;   /* an auto run of batches first, its state printed as it goes */
    int carry;   /* auto+ too */
} cfg;

/* splitmix64, for random bytes and the mixed runs. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned char *make_data(const cfg *c, size_t len)
{
    unsigned char *buf =
        strcmp(c->data, "random") != 0
            ? bench_lineitem_rows(c->temp_dir, "bench-auto-data", "bench_auto", len)
            : malloc(len);
    if (buf == NULL)
        bench_die("bench_auto", "out of memory");
    uint64_t s = 12345;
    if (strcmp(c->data, "text") == 0)
        return buf;
    /* random: all of it; mixed: runs of 1..64 blocks of random bytes, every other run */
    size_t off = 0;
    int random_run = 1;
    while (off < len) {
        size_t run = strcmp(c->data, "random") == 0 ? len : (1 + next(&s) % 64) * 8192;
        if (run > len - off)
            run = len - off;
        if (random_run)
            for (size_t i = 0; i < run; i += 8) {
                uint64_t v = next(&s);
                memcpy(buf + off + i, &v, run - i < 8 ? run - i : 8);
            }
        off += run;
        random_run = !random_run;
    }
    return buf;
}

/* What auto knows, about 8 times a phase: blocks per codec so far, the device, and each
   candidate's cost with its parts (auto.h; the space's internals, read, not changed). */
static void trace_auto(bf_space *sp, int writing, size_t bytes)
{
    const bf_auto *a = sp->autoc;
    if (a == NULL)
        return;
    bf_stats st;
    bf_space_stats(sp, &st);
    printf("  %s %6.1f MiB: blocks none/lz4/zstd %llu/%llu/%llu; device %.2f ns/B (%u runs), "
           "reads %.2f (%u runs), pace %.2f, limited share %.2f, transfers %.2f (reads %.2f), "
           "slopes %.2f (reads %.2f), caller %.2f; best %d\n",
           writing ? "write" : "read ", (double)bytes / 1048576.0,
           (unsigned long long)st.blocks_by_codec[BF_CODEC_NONE],
           (unsigned long long)st.blocks_by_codec[BF_CODEC_LZ4],
           (unsigned long long)st.blocks_by_codec[BF_CODEC_ZSTD], a->dev.device_ns,
           a->dev.device_runs, a->dev.read_device_ns, a->dev.read_runs, a->dev.pace_ns,
           a->dev.limited_share, a->dev.transfer_ns, a->dev.read_transfer_ns, a->dev.slope_ns,
           a->dev.read_slope_ns, a->other_ns, a->best);
    printf("     ");
    for (int k = 0; k < a->ncand; k++)
        printf(" [%d] cost %.2f (comp %.2f decomp %.2f ratio %.3f, write %.2f read %.2f)", k,
               bf_auto_cost(a, k), a->cand[k].comp_ns, a->cand[k].decomp_ns, a->cand[k].ratio,
               a->cand[k].extra_w, a->cand[k].extra_r);
    printf("\n");
}

typedef struct run {
    double seconds;
    uint64_t physical, blocks[4], probe_ns;
    char reason[640];
    bf_auto_device dev; /* what auto learned of the device (auto's runs) */
} run;

static void one_run(const cfg *c, int k, const unsigned char *data, size_t len, run *r)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = c->temp_dir;
    o.codec = codecs[k];
    o.level = levels[k];
    o.io_limit = c->io_limit;
    if (k == CARRIED)
        o.auto_device = &carried;
    bf_space *sp;
    bf_file *f = NULL;
    if (c->files > 1) {
        sp = bench_space(&o, "bench_auto");
        r->seconds = bench_batches(sp, c->files, data, len, "bench_auto", c->work,
                                   c->trace && codecs[k] == BF_CODEC_AUTO ? trace_auto : NULL);
    } else {
        bench_space_file(&o, "bench_auto", &sp, &f);
        r->seconds = bench_write_read_work(f, data, len, "bench_auto", c->work);
    }
    bf_stats st;
    bf_space_stats(sp, &st);
    r->physical = st.physical_written;
    memcpy(r->blocks, st.blocks_by_codec, sizeof(r->blocks));
    r->probe_ns = st.auto_probe_ns;
    snprintf(r->reason, sizeof(r->reason), "%s", bf_space_auto_reason(sp));
    r->dev = (bf_auto_device)BF_AUTO_DEVICE_INIT;
    if (codecs[k] == BF_CODEC_AUTO)
        bf_space_auto_device(sp, &r->dev);
    if (k == CARRIED)
        carried = r->dev;
    if (f != NULL)
        bf_file_close(f);
    bf_space_destroy(sp);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_auto [--data=random|text|mixed] [--mib=N] [--rounds=N] "
                    "[--io-limit=MBPS] [--temp-dir=DIR] [--files=N] [--work=NS_PER_KIB] [--trace] "
                    "[--carry]\n");
}

int main(int argc, char **argv)
{
    cfg c = {128, 7, 0, "random", NULL, 1, 0, 0, 0};
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            c.mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--rounds=", 9) == 0)
            c.rounds = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--io-limit=", 11) == 0)
            c.io_limit = strtoull(argv[i] + 11, NULL, 10) * 1000000ull;
        else if (strncmp(argv[i], "--data=", 7) == 0)
            c.data = argv[i] + 7;
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            c.temp_dir = argv[i] + 11;
        else if (strncmp(argv[i], "--files=", 8) == 0)
            c.files = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "--work=", 7) == 0)
            c.work = strtod(argv[i] + 7, NULL);
        else if (strcmp(argv[i], "--trace") == 0)
            c.trace = 1;
        else if (strcmp(argv[i], "--carry") == 0)
            c.carry = 1;
        else {
            usage();
            return 2;
        }
    }
    if (c.mib < 1 || c.rounds < 2 || c.rounds > MAX_ROUNDS || c.files < 1 || c.files > 4096 ||
        !(c.work >= 0 && c.work <= 1e6) || (c.trace && c.files < 2) ||
        (strcmp(c.data, "random") != 0 && strcmp(c.data, "text") != 0 &&
         strcmp(c.data, "mixed") != 0)) {
        usage();
        return 2;
    }
    if (c.temp_dir == NULL)
        c.temp_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    size_t len = c.mib << 20;
    unsigned char *data = make_data(&c, len);
    static run runs[MAX_ROUNDS][NCONF];
    run warm;
    if (c.trace) {
        printf("bench_auto: auto's state as it goes (a run before the rounds, not counted)\n");
        one_run(&c, AUTO, data, len, &warm);
        c.trace = 0;
    }
    int nconf = c.carry ? NCONF : CARRIED;
    for (int k = 0; k < nconf; k++)
        one_run(&c, k, data, len, &warm); /* page cache, codec contexts: not counted */
    for (int r = 0; r < c.rounds; r++) {
        int order[NCONF];
        pd_shuffle(777, r, nconf, order);
        for (int i = 0; i < nconf; i++)
            one_run(&c, order[i], data, len, &runs[r][order[i]]);
    }
    printf("bench_auto: %zu MiB of %s data written and read back (%d file%s, caller's work %.0f "
           "ns/KiB), %d rounds (shuffled), io_limit %s\n",
           c.mib, c.data, c.files, c.files > 1 ? "s in turn, 8 KiB calls" : ", 64 KiB calls",
           c.work, c.rounds, c.io_limit ? "" : "none (page cache)");
    if (c.io_limit)
        printf("  device modelled at %llu MB/s\n", (unsigned long long)(c.io_limit / 1000000));
    printf("%-8s %9s %-26s %10s %8s  %s\n", "config", "median_s", "ratio to none [95%]", "physicMB",
           "phys/log", "extents none/lz4/zstd, probes");
    for (int k = 0; k < nconf; k++) {
        double t[MAX_ROUNDS], base[MAX_ROUNDS], med[MAX_ROUNDS];
        for (int r = 0; r < c.rounds; r++) {
            t[r] = med[r] = runs[r][k].seconds;
            base[r] = runs[r][0].seconds;
        }
        pd_interval iv = pd_ratio(t, base, c.rounds);
        char ratio[64];
        snprintf(ratio, sizeof(ratio), "%.4f [%.4f,%.4f]%s", iv.est, iv.lo, iv.hi,
                 k > 0 && pd_holds_one(&iv) ? "~" : "");
        const run *r0 = &runs[0][k];
        printf("%-8s %9.3f %-26s %10.1f %8.3f  %llu/%llu/%llu, %.1f ms\n", labels[k],
               bench_median(med, c.rounds), k == 0 ? "1" : ratio, (double)r0->physical / 1048576.0,
               (double)r0->physical / (double)len, (unsigned long long)r0->blocks[0],
               (unsigned long long)r0->blocks[1], (unsigned long long)r0->blocks[2],
               (double)r0->probe_ns / 1e6);
    }
    for (int k = AUTO; k < nconf; k += CARRIED - AUTO) {
        printf("%s's last decision (round 0): %s\n", labels[k], runs[0][k].reason);
        for (int r = 0; r < c.rounds; r++) {
            const bf_auto_device *d = &runs[r][k].dev;
            printf("%s's device, round %d: device_ns %.3f (%u runs), reads %.3f (%u runs), "
                   "pace_ns %.3f (%u windows), limited share %.3f of %u windows, transfers %.3f "
                   "ns/B (reads %.3f); blocks none/lz4/zstd %llu/%llu/%llu\n",
                   labels[k], r, d->device_ns, d->device_runs, d->read_device_ns, d->read_runs,
                   d->pace_ns, d->pace_windows, d->limited_share, d->share_windows, d->transfer_ns,
                   d->read_transfer_ns, (unsigned long long)runs[r][k].blocks[0],
                   (unsigned long long)runs[r][k].blocks[1],
                   (unsigned long long)runs[r][k].blocks[2]);
        }
    }
    printf("'~': no measurable difference (the interval holds 1.0); control: none run again, "
           "what noise alone makes of a ratio\n");
    free(data);
    return 0;
}
