/*
 * bench_devclock.c - does codec=auto see the device, or the CPU? A
 * benchmark, not a test: nothing here asserts. The validation of the
 * device clock (src/devclock.h) in docs/results/device-clock.md runs it
 * through bench/devclock-validate.sh (page cache with and without a CPU
 * burner per core, slowfs at 100/200/400 MB/s, io_limit).
 *
 * Per round, one space per clock: `device` (the library as built: waits are
 * wall time less the thread's run delay from /proc/thread-self/schedstat)
 * and `wall` (the same library with schedstat pointed at a path that does
 * not exist: the fallback, which is the wall clock auto used before), in
 * alternating order, each writing --mib MiB of TPC-H lineitem rows through
 * one codec=auto file in 64 KiB calls and reading them back. One line per
 * space, key=value: what auto learned of the device (bf_space_auto_device:
 * device_ns timed by runs of waits, their count, the pace of windows that
 * waited and their share, the transfers' own ns/B), the extents it stored
 * raw, and the schedstat readings the clock made (its cost).
 *
 *   bench_devclock [--dir=DIR] [--mib=N] [--rounds=N] [--clock=both|device|wall]
 *                  [--io-limit=BYTES_PER_S] [--work=NS_PER_KIB] [--label=TEXT]
 *
 * --work: the caller's own work after each 64 KiB call, in ns of CPU per KiB
 * (spun): a device with no queue of its own (slowfs, any FUSE file system)
 * idles meanwhile, which a device figure must not count as the device's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rows.h"
#include "bench_util.h"
#include "buffile.h"
#include "space.h"

#define PROG "bench_devclock"

typedef struct cfg {
    const char *dir, *label, *clock;
    size_t mib;
    int rounds;
    uint64_t io_limit;
    double work;
} cfg;

static void one(const cfg *c, int wall, const unsigned char *data, size_t len, int round)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = c->dir;
    o.codec = BF_CODEC_AUTO;
    o.io_limit = c->io_limit;
    bf_space *sp;
    bf_file *f;
    bench_space_file(&o, PROG, &sp, &f);
    if (wall) /* the fallback of a machine without schedstat: auto's wall clock as it was */
        bf_space_set_schedstat(sp, "/nonexistent/thread-self/schedstat");
    double s = bench_write_read_work(f, data, len, PROG, c->work);
    bf_stats st;
    bf_space_stats(sp, &st);
    bf_auto_device d = BF_AUTO_DEVICE_INIT;
    bf_space_auto_device(sp, &d);
    uint64_t blocks = st.blocks_raw + st.blocks_compressed;
    printf("%s round=%d clock=%s mib=%zu work=%.0f elapsed_s=%.3f device_ns=%.3f device_runs=%u "
           "read_device_ns=%.3f read_runs=%u read_limited=%u/%u "
           "pace_ns=%.3f pace_windows=%u limited_share=%.3f share_windows=%u transfer_ns=%.3f "
           "since_wait=%llu blocks=%llu raw_frac=%.4f none/lz4/zstd=%llu/%llu/%llu "
           "readings=%llu readings_per_mib=%.2f clock_state=%s\n",
           c->label, round, wall ? "wall" : "device", c->mib, c->work, s, d.device_ns,
           d.device_runs, d.read_device_ns, d.read_runs, d.read_limited_windows,
           d.read_share_windows, d.pace_ns, d.pace_windows, d.limited_share, d.share_windows,
           d.transfer_ns, (unsigned long long)d.since_wait, (unsigned long long)blocks,
           blocks ? (double)st.blocks_raw / (double)blocks : 0.0,
           (unsigned long long)st.blocks_by_codec[BF_CODEC_NONE],
           (unsigned long long)st.blocks_by_codec[BF_CODEC_LZ4],
           (unsigned long long)st.blocks_by_codec[BF_CODEC_ZSTD],
           (unsigned long long)sp->devclk.readings,
           (double)sp->devclk.readings / (2.0 * (double)c->mib),
           sp->devclk.state == BF_DEVCLOCK_OPEN ? "schedstat" : "wall");
    fflush(stdout);
    bf_file_close(f);
    bf_space_destroy(sp);
}

int main(int argc, char **argv)
{
    cfg c = {NULL, "run", "both", 64, 3, 0, 0};
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--dir=", 6) == 0)
            c.dir = argv[i] + 6;
        else if (strncmp(argv[i], "--mib=", 6) == 0)
            c.mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--rounds=", 9) == 0)
            c.rounds = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--clock=", 8) == 0)
            c.clock = argv[i] + 8;
        else if (strncmp(argv[i], "--io-limit=", 11) == 0)
            c.io_limit = strtoull(argv[i] + 11, NULL, 10);
        else if (strncmp(argv[i], "--work=", 7) == 0)
            c.work = strtod(argv[i] + 7, NULL);
        else if (strncmp(argv[i], "--label=", 8) == 0)
            c.label = argv[i] + 8;
        else {
            fprintf(stderr, "usage: " PROG " [--dir=DIR] [--mib=N] [--rounds=N] "
                            "[--clock=both|device|wall] [--io-limit=BYTES_PER_S] "
                            "[--work=NS_PER_KIB] [--label=TEXT]\n");
            return 2;
        }
    }
    int both = strcmp(c.clock, "both") == 0, wall_only = strcmp(c.clock, "wall") == 0;
    if (c.mib < 1 || c.rounds < 1 || !(c.work >= 0 && c.work <= 1e6) ||
        (!both && !wall_only && strcmp(c.clock, "device") != 0))
        bench_die(PROG, "bad --mib, --rounds, --work or --clock");
    if (c.dir == NULL)
        c.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    size_t len = c.mib << 20;
    /* The rows come from the temp dir's cache (generated there once): on slowfs they would
       be read through the device, so they live in /tmp unless BENCH_ROWS_DIR says where. */
    const char *rows = getenv("BENCH_ROWS_DIR") ? getenv("BENCH_ROWS_DIR") : "/tmp";
    unsigned char *data = bench_lineitem_rows(rows, "bench-devclock-data", PROG, len);
    for (int r = 0; r < c.rounds; r++) {
        if (both) { /* alternate which goes first: neither always meets the warmer cache */
            one(&c, r % 2, data, len, r);
            one(&c, !(r % 2), data, len, r);
        } else {
            one(&c, wall_only, data, len, r);
        }
    }
    free(data);
    return 0;
}
