/*
 * bench_seq.c - sequential spill benchmark of the library, per codec.
 *
 * Writes N MiB of TPC-H lineitem rows (from our generator) through a
 * buffile file in 64 KiB calls, rewinds and reads them back, and compares
 * side by side in the same run with (a) the raw codec compressing and
 * decompressing the same blocks with no I/O and (b) plain pwrite/pread of
 * the compressed number of bytes with no compression. Prints medians of
 * --repeat runs. A benchmark, not a test: nothing here asserts timings.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "bench_rows.h"
#include "bench_util.h"
#include "buffile.h"
#include "codec.h"
#include "tpch_gen.h"

typedef struct cfg {
    size_t mib;
    int repeat;
    uint32_t block_size;
    const char *temp_dir;
} cfg;

typedef struct result {
    double lib_write, lib_read, codec_comp, codec_decomp, io_write, io_read;
    uint64_t physical;
} result;

static void run_library(const cfg *c, bf_codec codec, int32_t level, const unsigned char *data,
                        size_t len, result *r)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = c->temp_dir;
    o.codec = codec;
    o.level = level;
    o.block_size = c->block_size;
    bf_space *sp;
    bf_file *f;
    bench_space_file(&o, "bench_seq", &sp, &f);
    const size_t chunk = 65536;
    double t0 = bench_now();
    for (size_t off = 0; off < len; off += chunk)
        if (bf_file_write(f, data + off, len - off < chunk ? len - off : chunk) != BF_OK)
            bench_die("bench_seq", bf_space_errmsg(sp));
    if (bf_file_flush(f) != BF_OK)
        bench_die("bench_seq", bf_space_errmsg(sp));
    double t1 = bench_now();
    if (bf_file_seek(f, 0, BF_SEEK_SET) != BF_OK)
        bench_die("bench_seq", bf_space_errmsg(sp));
    static unsigned char buf[65536];
    size_t got = 0;
    int64_t n;
    while ((n = bf_file_read(f, buf, chunk)) > 0) {
        if (memcmp(buf, data + got, (size_t)n) != 0)
            bench_die("bench_seq", "read back differs");
        got += (size_t)n;
    }
    double t2 = bench_now();
    if (n < 0 || got != len)
        bench_die("bench_seq", "short read back");
    bf_stats st;
    bf_file_stats(f, &st);
    r->lib_write = t1 - t0;
    r->lib_read = t2 - t1;
    r->physical = st.physical_bytes;
    bf_space_destroy(sp);
}

/* The codec alone on the same blocks, into memory. */
static void run_codec(const cfg *c, bf_codec codec, int32_t level, const unsigned char *data,
                      size_t len, result *r)
{
    const bf_codec_ops *ops = bf_codec_ops_get(codec);
    void *ctx;
    if (ops->ctx_create(&bf_default_allocator, &ctx) != BF_OK)
        bench_die("bench_seq", "codec context");
    size_t bs = c->block_size, nblk = len / bs;
    unsigned char *comp = malloc(len + nblk), *out = malloc(bs);
    uint32_t *clen = malloc(nblk * sizeof(uint32_t));
    if (comp == NULL || out == NULL || clen == NULL)
        bench_die("bench_seq", "out of memory");
    memset(comp, 0, len + nblk); /* fault the pages in outside the timed loop */
    /* Timed: compress every block into one small reused buffer, as the library does. */
    unsigned char *hot = malloc(bs);
    double t0 = bench_now();
    for (size_t b = 0; b < nblk; b++)
        if (ops->compress(ctx, level, data + b * bs, bs, hot, bs - 1) < 0)
            bench_die("bench_seq", "raw codec compression failed");
    double t_comp = bench_now() - t0;
    free(hot);
    /* Untimed: keep every compressed block for the decompression pass. */
    size_t pos = 0;
    for (size_t b = 0; b < nblk; b++) {
        int64_t n = ops->compress(ctx, level, data + b * bs, bs, comp + pos, bs - 1);
        clen[b] = (uint32_t)(n > 0 ? n : 0);
        pos += clen[b];
    }
    double t1 = bench_now();
    pos = 0;
    for (size_t b = 0; b < nblk; b++) {
        if (clen[b] == 0)
            memcpy(out, data + b * bs, bs); /* a raw block is a copy for the library too */
        else if (ops->decompress(ctx, comp + pos, clen[b], out, bs) != 0)
            bench_die("bench_seq", "raw codec round trip failed");
        pos += clen[b];
    }
    double t2 = bench_now();
    r->codec_comp = t_comp;
    r->codec_decomp = t2 - t1;
    ops->ctx_destroy(&bf_default_allocator, ctx);
    free(comp);
    free(out);
    free(clen);
}

/*
 * Plain pwrite/pread of `bytes` bytes in 64 KiB calls, no compression. The
 * bytes come from the data cyclically (with codec none, physical bytes
 * exceed the data by the extent headers).
 */
static void run_plain_io(const cfg *c, const unsigned char *data, size_t len, uint64_t bytes,
                         result *r)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/bench-seq-plain.%ld", c->temp_dir, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        bench_die("bench_seq", "cannot create the plain I/O file");
    static unsigned char buf[65536];
    double t0 = bench_now();
    for (uint64_t off = 0; off < bytes; off += 65536) {
        size_t n = bytes - off < 65536 ? (size_t)(bytes - off) : 65536;
        if (pwrite(fd, data + off % (len - 65536), n, (off_t)off) != (ssize_t)n)
            bench_die("bench_seq", "plain pwrite failed");
    }
    double t1 = bench_now();
    for (uint64_t off = 0; off < bytes; off += 65536) {
        size_t n = bytes - off < 65536 ? (size_t)(bytes - off) : 65536;
        if (pread(fd, buf, n, (off_t)off) != (ssize_t)n)
            bench_die("bench_seq", "plain pread failed");
    }
    double t2 = bench_now();
    close(fd);
    unlink(path);
    r->io_write = t1 - t0;
    r->io_read = t2 - t1;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_seq [--mib=N] [--repeat=N] [--block-size=BYTES] "
                    "[--temp-dir=DIR]\n");
}

int main(int argc, char **argv)
{
    cfg c = {256, 3, 8192, NULL};
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            c.mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--repeat=", 9) == 0)
            c.repeat = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--block-size=", 13) == 0)
            c.block_size = (uint32_t)strtoul(argv[i] + 13, NULL, 10);
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            c.temp_dir = argv[i] + 11;
        else {
            usage();
            return 2;
        }
    }
    if (c.mib == 0 || c.repeat < 1 || c.repeat > 99) {
        usage();
        return 2;
    }
    if (c.temp_dir == NULL)
        c.temp_dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    size_t len = c.mib << 20;
    unsigned char *data = bench_lineitem_rows(c.temp_dir, "bench-seq-data", "bench_seq", len);
    struct {
        bf_codec codec;
        int32_t level;
    } runs[] = {{BF_CODEC_NONE, 0},  {BF_CODEC_LZ4, 1},  {BF_CODEC_ZSTD, 1},
                {BF_CODEC_ZSTD, -3}, {BF_CODEC_ZLIB, 1}, {BF_CODEC_ZLIB, 6}};
    printf("# %zu MiB of lineitem rows, %u-byte blocks, median of %d runs, page-cache I/O\n", c.mib,
           c.block_size, c.repeat);
    printf("%-8s %6s %7s | %10s %10s | %10s %10s | %9s %9s | %8s\n", "codec", "level", "ratio",
           "lib wr MB/s", "lib rd MB/s", "codec c MB/s", "codec d MB/s", "io wr s", "io rd s",
           "overhead");
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        double v[6][99];
        uint64_t physical = 0;
        /* One untimed round first: the first pass over the data and a fresh temp
           file system runs measurably slower, and it must not land on one side only. */
        for (int i = -1; i < c.repeat; i++) {
            result r;
            run_library(&c, runs[k].codec, runs[k].level, data, len, &r);
            run_codec(&c, runs[k].codec, runs[k].level, data, len, &r);
            run_plain_io(&c, data, len, r.physical, &r);
            physical = r.physical;
            if (i < 0)
                continue;
            double *fields[6] = {&r.lib_write,    &r.lib_read, &r.codec_comp,
                                 &r.codec_decomp, &r.io_write, &r.io_read};
            for (int j = 0; j < 6; j++)
                v[j][i] = *fields[j];
        }
        double m[6];
        for (int j = 0; j < 6; j++)
            m[j] = bench_median(v[j], c.repeat);
        double mb = (double)len / 1e6;
        /* Library time against codec time plus plain I/O of the compressed bytes. */
        double overhead = (m[0] + m[1]) / (m[2] + m[3] + m[4] + m[5]);
        printf("%-8s %6d %7.3f | %10.0f %10.0f | %10.0f %10.0f | %9.3f %9.3f | %7.2fx\n",
               bf_codec_name(runs[k].codec), (int)runs[k].level, (double)physical / (double)len,
               mb / m[0], mb / m[1], mb / m[2], mb / m[3], m[4], m[5], overhead);
        fflush(stdout);
    }
    free(data);
    return 0;
}
