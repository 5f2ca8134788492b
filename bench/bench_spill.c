/*
 * bench_spill.c - the library's path against a stock-BufFile-like one on a
 * hash join's spill pattern, in one run.
 *
 * A hash join writes its batches a tuple at a time into many files, the
 * file picked by the tuple's hash, then reads each file back in turn and
 * deletes them all. Per round every configuration replays the same
 * sequence (same tuples, same files, same order) in an order shuffled per
 * round:
 *  - stock: what PostgreSQL's buffile.c does with it: an 8 KiB buffer per
 *    file, one pwritev of the whole block (one iovec, as PostgreSQL 17+'s
 *    FileWrite) at a multiple of 8 KiB when it fills, reads of 8 KiB into
 *    the buffer, then unlink; each tuple goes
 *    through a call of an out-of-line write (and read) function, as an
 *    executor calls BufFileWrite and BufFileRead, which live in another
 *    file of the server (plain_write, plain_read);
 *  - inline: stock's I/O with the copy loop written into the benchmark's
 *    own loop, no call per tuple: the reference before 2026-12-05, kept so
 *    that what the call itself costs shows beside the rest;
 *  - stock+32: the same, but every block goes out as a 32-byte header and
 *    the block in one pwritev at multiples of 8,224 bytes, and is read back
 *    as such: the library's layout of a raw extent, without the library;
 *    what it costs over stock is the file system's share (pages touched in
 *    part, not page-aligned);
 *  - none, lz4, auto: the library (one space, one anonymous file per batch),
 *    tuples through bf_file_write and bf_file_read, bf_file_close at the
 *    end;
 *  - control: stock again, what the machine's noise makes of two identical
 *    runs.
 * Each time is compared with stock's of the same round: the geometric mean
 * of the paired ratios with a 95% t interval on their logs
 * (tpch/exec/paired.c), and the extra nanoseconds per byte spilled. Times
 * of the three phases are medians: write (creating the files, which the
 * library does at a file's first block, and writing), read, close (and
 * delete). Page-cache I/O
 * under --temp-dir. A benchmark, not a test: nothing here asserts timings.
 * --only=CONFIG runs one configuration alone (a warm-up run, then --rounds
 * runs) and prints its user and system CPU per byte: for profilers
 * (callgrind --toggle-collect='run_plain*' or run_library, which stay out of
 * line for that) and for CPU time on a shared machine
 * (docs/results/none-path-profile.md).
 * --times adds, after the table, one line per run (round, place in the
 * round, configuration, its three phases, auto's raw share) for
 * bench/bench-spill-runs, which pools several invocations: one
 * invocation's interval does not cover what differs between invocations
 * (docs/results/format4.md, "Run-to-run spread"). --fresh-dir runs each
 * configuration of each round in a new subdirectory of --temp-dir,
 * removed after it, so that no run creates its files in a directory
 * that earlier runs filled and emptied. --configs=A,B,... runs stock and
 * those alone (all seven by default, in the same shuffled orders as
 * before the option existed). --seed=N shuffles the rounds from another seed
 * than 26: invocations pooled by bench-spill-runs each take their own, so
 * that no configuration holds the same place in round r of all of them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench_rows.h"
#include "bench_util.h"
#include "buffile.h"
#include "paired.h"

#define NCONF 7
#define STOCK 0
#define STOCK_HDR 1
#define LIB_NONE 2
#define LIB_LZ4 3
#define LIB_AUTO 4
#define CONTROL 5
#define INLINE 6
#define MAX_ROUNDS 200
#define MAX_FILES 1024
#define BLOCK 8192u
#define HDR 32u

static const char *const labels[NCONF] = {"stock", "stock+32", "none",  "lz4",
                                          "auto",  "control",  "inline"};
static const char *const prog = "bench_spill";

typedef struct cfg {
    const char *temp_dir;
    int files;
    size_t tuple;
    size_t len; /* bytes spilled, a whole number of tuples */
} cfg;

typedef struct run {
    double write, read, close;
    double user, sys; /* CPU seconds of the whole run (getrusage), for --times */
    double raw_share; /* the library's: the share of blocks it stored raw */
} run;

/* The batch of tuple `i`: a hash of its number, the same in every configuration. */
static int batch_of(uint64_t i, int files)
{
    uint64_t h = (i + 1) * UINT64_C(0x9e3779b97f4a7c15);
    h ^= h >> 29;
    return (int)(h % (uint64_t)files);
}

/*
 * One stock-like file: room for a header and a block (the block's bytes
 * always at HDR), what of the block is filled, and where the next goes.
 * With a stride of BLOCK the header is neither written nor read.
 */
typedef struct plain {
    int fd;
    unsigned char buf[HDR + BLOCK];
    size_t used;  /* writing: bytes of the block filled; reading: bytes of it consumed */
    size_t avail; /* reading: bytes of the block loaded */
    off_t end;    /* writing: where the next block goes; reading: where the next is read */
    off_t size;   /* reading: where the file ends */
} plain;

/* The path of stock-like batch file `k`. */
static void batch_path(const cfg *c, int k, char *path, size_t len)
{
    snprintf(path, len, "%s/bench-spill.%ld.%d", c->temp_dir, (long)getpid(), k);
}

static void plain_flush(plain *p, size_t stride)
{
    size_t skip = HDR + BLOCK - stride;
    struct iovec iov = {p->buf + skip, stride - BLOCK + p->used};
    if (pwritev(p->fd, &iov, 1, p->end) != (ssize_t)iov.iov_len)
        bench_die(prog, "pwritev failed");
    p->end += (off_t)stride;
    p->used = 0;
}

/*
 * A tuple into a stock-like file, as BufFileWrite takes it: a call per
 * tuple, the copy in a loop that flushes each block as it fills. Out of
 * line, as a server's BufFileWrite is to its executor.
 */
__attribute__((noinline)) static void plain_write(plain *p, size_t stride, const unsigned char *t,
                                                  size_t len)
{
    while (len > 0) {
        if (p->used == BLOCK)
            plain_flush(p, stride);
        size_t n = len < BLOCK - p->used ? len : BLOCK - p->used;
        memcpy(p->buf + HDR + p->used, t, n);
        p->used += n;
        t += n;
        len -= n;
    }
}

/* Up to `len` bytes from a stock-like file, as BufFileRead gives them: 0 at its end. */
__attribute__((noinline)) static size_t plain_read(plain *p, size_t stride, unsigned char *dst,
                                                   size_t len)
{
    size_t got = 0;
    while (got < len) {
        if (p->used == p->avail) {
            if (p->end >= p->size)
                break;
            ssize_t n = pread(p->fd, p->buf + HDR + BLOCK - stride, stride, p->end);
            if (n <= (ssize_t)(stride - BLOCK))
                bench_die(prog, "pread failed");
            p->end += (off_t)stride;
            p->used = 0;
            p->avail = (size_t)n - (stride - BLOCK);
        }
        size_t n = len - got < p->avail - p->used ? len - got : p->avail - p->used;
        memcpy(dst + got, p->buf + HDR + p->used, n);
        p->used += n;
        got += n;
    }
    return got;
}

__attribute__((noinline)) static void run_plain(const cfg *c, size_t stride, int inl,
                                                const unsigned char *data, run *r)
{
    static plain files[MAX_FILES];
    char path[4200];
    double t0 = bench_now();
    for (int k = 0; k < c->files; k++) {
        batch_path(c, k, path, sizeof(path));
        files[k].fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (files[k].fd < 0)
            bench_die(prog, "cannot create a batch file");
        files[k].used = 0;
        files[k].end = 0;
    }
    for (uint64_t i = 0; i * c->tuple < c->len; i++) {
        plain *p = &files[batch_of(i, c->files)];
        const unsigned char *t = data + i * c->tuple;
        if (!inl) {
            plain_write(p, stride, t, c->tuple);
            continue;
        }
        size_t done = 0;
        while (done < c->tuple) {
            size_t n = c->tuple - done < BLOCK - p->used ? c->tuple - done : BLOCK - p->used;
            memcpy(p->buf + HDR + p->used, t + done, n);
            p->used += n;
            done += n;
            if (p->used == BLOCK)
                plain_flush(p, stride);
        }
    }
    for (int k = 0; k < c->files; k++)
        if (files[k].used > 0)
            plain_flush(&files[k], stride);
    double t1 = bench_now();
    unsigned char tuple[65536];
    uint64_t sum = 0, got = 0;
    for (int k = 0; k < c->files; k++) {
        plain *p = &files[k];
        if (!inl) {
            p->size = p->end;
            p->end = 0;
            p->used = p->avail = 0;
            size_t n;
            while ((n = plain_read(p, stride, tuple, c->tuple)) > 0) {
                sum += tuple[0];
                got += n;
            }
            continue;
        }
        size_t avail = 0, at = 0;
        for (off_t off = 0;;) {
            if (at == avail) {
                if (off >= p->end)
                    break;
                size_t skip = HDR + BLOCK - stride;
                ssize_t n = pread(p->fd, p->buf + skip, stride, off);
                if (n <= (ssize_t)(stride - BLOCK))
                    bench_die(prog, "pread failed");
                off += (off_t)stride;
                at = HDR;
                avail = skip + (size_t)n;
            }
            size_t n = c->tuple < avail - at ? c->tuple : avail - at;
            memcpy(tuple, p->buf + at, n);
            at += n;
            sum += tuple[0];
        }
    }
    double t2 = bench_now();
    for (int k = 0; k < c->files; k++) {
        batch_path(c, k, path, sizeof(path));
        close(files[k].fd);
        unlink(path);
    }
    double t3 = bench_now();
    if (sum == 0 || (!inl && got != c->len))
        bench_die(prog, "read back a different number of bytes");
    r->write = t1 - t0;
    r->read = t2 - t1;
    r->close = t3 - t2;
}

__attribute__((noinline)) static void run_library(const cfg *c, bf_codec codec,
                                                  const unsigned char *data, run *r)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = c->temp_dir;
    o.codec = codec;
    o.block_size = BLOCK;
    bf_space *sp = bench_space(&o, prog);
    static bf_file *files[MAX_FILES];
    double t0 = bench_now();
    for (int k = 0; k < c->files; k++)
        if (bf_file_create(sp, NULL, &files[k]) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
    for (uint64_t i = 0; i * c->tuple < c->len; i++)
        if (bf_file_write(files[batch_of(i, c->files)], data + i * c->tuple, c->tuple) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
    for (int k = 0; k < c->files; k++)
        if (bf_file_flush(files[k]) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
    double t1 = bench_now();
    unsigned char tuple[65536];
    uint64_t sum = 0, got = 0;
    for (int k = 0; k < c->files; k++) {
        if (bf_file_seek(files[k], 0, BF_SEEK_SET) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
        int64_t n;
        while ((n = bf_file_read(files[k], tuple, c->tuple)) > 0) {
            sum += tuple[0];
            got += (uint64_t)n;
        }
        if (n < 0)
            bench_die(prog, bf_space_errmsg(sp));
    }
    double t2 = bench_now();
    for (int k = 0; k < c->files; k++)
        if (bf_file_close(files[k]) != BF_OK)
            bench_die(prog, bf_space_errmsg(sp));
    double t3 = bench_now();
    bf_stats st;
    bf_space_stats(sp, &st);
    uint64_t blocks = st.blocks_raw + st.blocks_compressed;
    r->raw_share = blocks > 0 ? (double)st.blocks_raw / (double)blocks : 0;
    bf_space_destroy(sp);
    if (sum == 0 || got != c->len)
        bench_die(prog, "read back a different number of bytes");
    r->write = t1 - t0;
    r->read = t2 - t1;
    r->close = t3 - t2;
}

static void one_run_in(const cfg *c, int k, const unsigned char *data, run *r)
{
    switch (k) {
    case STOCK:
    case CONTROL: run_plain(c, BLOCK, 0, data, r); break;
    case STOCK_HDR: run_plain(c, BLOCK + HDR, 0, data, r); break;
    case INLINE: run_plain(c, BLOCK, 1, data, r); break;
    case LIB_NONE: run_library(c, BF_CODEC_NONE, data, r); break;
    case LIB_LZ4: run_library(c, BF_CODEC_LZ4, data, r); break;
    case LIB_AUTO: run_library(c, BF_CODEC_AUTO, data, r); break;
    }
}

/* Run `k` under c->temp_dir, or with --fresh-dir in a new subdirectory of it (made and
   removed outside the timed phases; the round and configuration name it). */
static int fresh_dir = 0;
static double cpu_s(const struct timeval *t)
{
    return (double)t->tv_sec + (double)t->tv_usec * 1e-6;
}

static void one_run(const cfg *c, int k, int round, const unsigned char *data, run *r)
{
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    if (!fresh_dir) {
        one_run_in(c, k, data, r);
        getrusage(RUSAGE_SELF, &u1);
        r->user = cpu_s(&u1.ru_utime) - cpu_s(&u0.ru_utime);
        r->sys = cpu_s(&u1.ru_stime) - cpu_s(&u0.ru_stime);
        return;
    }
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/bench-spill-run.%ld.%d.%d", c->temp_dir, (long)getpid(), round,
             k);
    if (mkdir(dir, 0700) != 0)
        bench_die(prog, "cannot create a run's directory (--fresh-dir)");
    cfg sub = *c;
    sub.temp_dir = dir;
    one_run_in(&sub, k, data, r);
    if (rmdir(dir) != 0)
        bench_die(prog, "a run left files in its directory (--fresh-dir)");
    getrusage(RUSAGE_SELF, &u1);
    r->user = cpu_s(&u1.ru_utime) - cpu_s(&u0.ru_utime);
    r->sys = cpu_s(&u1.ru_stime) - cpu_s(&u0.ru_stime);
}

static double total(const run *r)
{
    return r->write + r->read + r->close;
}

int main(int argc, char **argv)
{
    cfg c = {NULL, 32, 100, 0};
    size_t mib = 128;
    int rounds = 11;
    int only = -1; /* --only=CONFIG: that configuration alone, for profilers */
    int times = 0; /* --times: every run's phases, one line each, after the table */
    int use[NCONF] = {1, 1, 1, 1, 1, 1, 1}; /* --configs: which run (stock always) */
    uint64_t seed = 26;                     /* --seed: of the rounds' shuffled orders */
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--rounds=", 9) == 0)
            rounds = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--files=", 8) == 0)
            c.files = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "--tuple=", 8) == 0)
            c.tuple = strtoul(argv[i] + 8, NULL, 10);
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            c.temp_dir = argv[i] + 11;
        else if (strcmp(argv[i], "--times") == 0)
            times = 1;
        else if (strncmp(argv[i], "--seed=", 7) == 0)
            seed = strtoull(argv[i] + 7, NULL, 10);
        else if (strcmp(argv[i], "--fresh-dir") == 0)
            fresh_dir = 1;
        else if (strncmp(argv[i], "--configs=", 10) == 0) {
            memset(use, 0, sizeof(use));
            use[STOCK] = 1;
            for (const char *p = argv[i] + 10; *p;) {
                size_t n = strcspn(p, ",");
                int found = 0;
                for (int k = 0; k < NCONF; k++)
                    if (strlen(labels[k]) == n && strncmp(p, labels[k], n) == 0)
                        found = use[k] = 1;
                if (!found)
                    rounds = -1;
                p += n + (p[n] == ',');
            }
        } else if (strncmp(argv[i], "--only=", 7) == 0) {
            for (int k = 0; k < NCONF; k++)
                if (strcmp(argv[i] + 7, labels[k]) == 0)
                    only = k;
            if (only < 0)
                rounds = -1;
        } else
            rounds = -1;
    }
    if (mib < 1 || rounds < 2 || rounds > MAX_ROUNDS || c.files < 1 || c.files > MAX_FILES ||
        c.tuple < 1 || c.tuple > 65536) {
        fprintf(stderr,
                "usage: bench_spill [--mib=N] [--rounds=2..%d] [--files=1..%d] "
                "[--tuple=1..65536] [--temp-dir=DIR] [--times] [--fresh-dir] [--configs=A,B,..] "
                "[--seed=N] "
                "[--only=stock|stock+32|none|lz4|auto|control|inline]\n",
                MAX_ROUNDS, MAX_FILES);
        return 2;
    }
    if (c.temp_dir == NULL)
        c.temp_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    c.len = (mib << 20) / c.tuple * c.tuple;
    unsigned char *data = bench_lineitem_rows(c.temp_dir, "bench-spill-data", prog, c.len);
    static run runs[MAX_ROUNDS][NCONF];
    run warm;
    if (only >= 0) {
        /* One configuration, a warm-up run and `rounds` runs: for callgrind (toggle-collect
           run_plain or run_library) and for CPU time (user and system, from getrusage). */
        one_run(&c, only, -1, data, &warm);
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        double w[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            one_run(&c, only, r, data, &runs[r][only]);
            w[r] = total(&runs[r][only]);
        }
        getrusage(RUSAGE_SELF, &r1);
        double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                      (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6;
        double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
        double bytes = (double)c.len * rounds;
        printf("%s: %zu MiB, %zu-byte tuples, %d files, %d runs (+1 warm-up): median wall %.4f s, "
               "CPU per byte: user %.3f ns, sys %.3f ns\n",
               labels[only], mib, c.tuple, c.files, rounds, bench_median(w, rounds),
               user * 1e9 / bytes, sys * 1e9 / bytes);
        free(data);
        return 0;
    }
    int chosen[NCONF], nchosen = 0; /* the configurations that run, in label order */
    for (int k = 0; k < NCONF; k++)
        if (use[k])
            chosen[nchosen++] = k;
    for (int i = 0; i < nchosen; i++)
        one_run(&c, chosen[i], -1, data, &warm); /* page cache, contexts: not counted */
    static int orders[MAX_ROUNDS][NCONF];
    for (int r = 0; r < rounds; r++) {
        pd_shuffle(seed, r, nchosen, orders[r]);
        for (int i = 0; i < nchosen; i++) {
            orders[r][i] = chosen[orders[r][i]];
            one_run(&c, orders[r][i], r, data, &runs[r][orders[r][i]]);
        }
    }
    printf("bench_spill: %zu MiB of lineitem text as %zu-byte tuples into %d batch files "
           "(hash order), read back file by file, deleted; %d rounds (shuffled), page cache "
           "under %s%s\n",
           mib, c.tuple, c.files, rounds, c.temp_dir,
           fresh_dir ? " (a new directory per run)" : "");
    printf("%-9s %8s %8s %8s %8s  %-26s %10s\n", "config", "write_s", "read_s", "close_s",
           "total_s", "total / stock [95%]", "+ns/B");
    for (int k = 0; k < NCONF; k++) {
        if (!use[k])
            continue;
        double w[MAX_ROUNDS], rd[MAX_ROUNDS], cl[MAX_ROUNDS], t[MAX_ROUNDS], b[MAX_ROUNDS],
            extra[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            w[r] = runs[r][k].write;
            rd[r] = runs[r][k].read;
            cl[r] = runs[r][k].close;
            t[r] = total(&runs[r][k]);
            b[r] = total(&runs[r][STOCK]);
            extra[r] = (t[r] - b[r]) * 1e9 / (double)c.len;
        }
        char ratio[64] = "", ns[32] = "";
        if (k != STOCK) {
            pd_interval iv = pd_ratio(t, b, rounds);
            snprintf(ratio, sizeof(ratio), "%.3f [%.3f, %.3f]%s", iv.est, iv.lo, iv.hi,
                     pd_holds_one(&iv) ? "~" : "");
            snprintf(ns, sizeof(ns), "%+.3f", bench_median(extra, rounds));
        }
        printf("%-9s %8.3f %8.3f %8.3f %8.3f  %-26s %10s\n", labels[k], bench_median(w, rounds),
               bench_median(rd, rounds), bench_median(cl, rounds), bench_median(t, rounds), ratio,
               ns);
    }
    double share[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        share[r] = runs[r][LIB_AUTO].raw_share;
    if (use[LIB_AUTO])
        printf("auto stored %.1f%% of its blocks raw (median over the rounds)\n",
               100 * bench_median(share, rounds));
    printf("'~': the interval holds 1.0 (no measurable difference); +ns/B: the median over the "
           "rounds of the time beyond stock's, per byte spilled\n");
    if (times) {
        /* For bench-spill-runs: seconds, as measured; raw is auto's share of blocks stored raw
           (the library's configurations only, 0 for the others); user and sys the run's CPU
           time (getrusage's granularity, with --fresh-dir the directory's making too). */
        printf("times: round place config write_s read_s close_s raw user_s sys_s\n");
        for (int r = 0; r < rounds; r++)
            for (int i = 0; i < nchosen; i++) {
                const run *x = &runs[r][orders[r][i]];
                printf("time %d %d %s %.9f %.9f %.9f %.6f %.6f %.6f\n", r, i, labels[orders[r][i]],
                       x->write, x->read, x->close, x->raw_share, x->user, x->sys);
            }
    }
    free(data);
    return 0;
}
