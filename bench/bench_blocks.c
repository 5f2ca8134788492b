/*
 * bench_blocks.c - random block access, as an external sort's tapes do it.
 *
 * A file of --mib MiB of lineitem rows in blocks; then --ops rounds of: read
 * a random block, discard it, write a new block at a recycled block number
 * (logtape's pattern). Compared side by side in the same run with the raw
 * codec doing the same compressions/decompressions in memory and with plain
 * pread/pwrite of the same number of compressed bytes at random offsets of
 * an uncompressed file. Prints medians of --repeat runs; asserts nothing.
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

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

typedef struct times {
    double lib, codec, io;
    uint64_t physical;
} times;

static void one_run(bf_codec codec, const char *tmp, const unsigned char *data, size_t nblk,
                    uint32_t bs, int ops, times *t)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = tmp;
    o.codec = codec;
    o.block_size = bs;
    bf_space *sp;
    bf_file *f;
    bench_space_file(&o, "bench_blocks", &sp, &f);
    for (size_t b = 0; b < nblk; b++)
        if (bf_file_write_block(f, b, data + b * bs) != BF_OK)
            bench_die("bench_blocks", bf_space_errmsg(sp));
    unsigned char *buf = malloc(bs);
    size_t *where = malloc(nblk * sizeof(size_t)); /* which data block each file block holds */
    for (size_t b = 0; b < nblk; b++)
        where[b] = b;
    bf_stats before, after;
    bf_file_stats(f, &before);
    uint64_t seed = rng;
    double t0 = bench_now();
    for (int i = 0; i < ops; i++) {
        size_t b = next() % nblk, src = next() % nblk;
        if (bf_file_read_block(f, b, buf) != BF_OK || bf_file_discard_block(f, b) != BF_OK ||
            bf_file_write_block(f, b, data + src * bs) != BF_OK)
            bench_die("bench_blocks", bf_space_errmsg(sp));
        where[b] = src;
    }
    t->lib = bench_now() - t0;
    bf_file_stats(f, &after);
    t->physical = after.physical_written - before.physical_written;
    for (size_t b = 0; b < nblk; b += 97) /* spot check */
        if (bf_file_read_block(f, b, buf) != BF_OK || memcmp(buf, data + where[b] * bs, bs))
            bench_die("bench_blocks", "read back differs");
    bf_space_destroy(sp);

    /* The raw codec: the same decompressions (of what the blocks held) and compressions. */
    const bf_codec_ops *ops_ = bf_codec_ops_get(codec);
    void *ctx;
    if (ops_->ctx_create(&bf_default_allocator, &ctx) != BF_OK)
        bench_die("bench_blocks", "codec context");
    unsigned char *comp = malloc(bs + 64), *out = malloc(bs);
    rng = seed;
    t0 = bench_now();
    for (int i = 0; i < ops; i++) {
        size_t b = next() % nblk, src = next() % nblk;
        int64_t n = ops_->compress(ctx, o.level == BF_LEVEL_DEFAULT ? ops_->default_level : o.level,
                                   data + b * bs, bs, comp, bs - 1);
        if (n > 0 && ops_->decompress(ctx, comp, (size_t)n, out, bs) != 0)
            bench_die("bench_blocks", "codec round trip");
        (void)src;
    }
    t->codec = bench_now() - t0;
    ops_->ctx_destroy(&bf_default_allocator, ctx);

    /* Plain random pread + pwrite moving the same number of compressed bytes. */
    char path[4200];
    snprintf(path, sizeof(path), "%s/bench-blocks-plain.%ld", tmp, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    size_t avg = (size_t)(t->physical / (uint64_t)ops);
    if (fd < 0 || avg == 0)
        bench_die("bench_blocks", "plain file");
    for (size_t b = 0; b < nblk; b++)
        if (pwrite(fd, data + b * bs, avg, (off_t)(b * avg)) != (ssize_t)avg)
            bench_die("bench_blocks", "plain pwrite");
    t0 = bench_now();
    for (int i = 0; i < ops; i++) {
        size_t b = next() % nblk;
        if (pread(fd, comp, avg, (off_t)(b * avg)) != (ssize_t)avg ||
            pwrite(fd, data + b * bs, avg, (off_t)(b * avg)) != (ssize_t)avg)
            bench_die("bench_blocks", "plain I/O");
    }
    t->io = bench_now() - t0;
    close(fd);
    unlink(path);
    free(buf);
    free(where);
    free(comp);
    free(out);
}

int main(int argc, char **argv)
{
    size_t mib = 64;
    int ops = 20000, repeat = 3;
    uint32_t bs = 8192;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--ops=", 6) == 0)
            ops = atoi(argv[i] + 6);
        else if (strncmp(argv[i], "--repeat=", 9) == 0)
            repeat = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--block-size=", 13) == 0)
            bs = (uint32_t)strtoul(argv[i] + 13, NULL, 10);
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            tmp = argv[i] + 11;
        else {
            fprintf(stderr, "usage: bench_blocks [--mib=N] [--ops=N] [--repeat=N] "
                            "[--block-size=B] [--temp-dir=DIR]\n");
            return 2;
        }
    }
    if (mib == 0 || ops < 1 || repeat < 1 || repeat > 99)
        bench_die("bench_blocks", "bad arguments");
    size_t nblk = (mib << 20) / bs;
    unsigned char *data = bench_lineitem_rows(tmp, "bench-blocks-data", "bench_blocks", nblk * bs);
    printf("# logtape-like: %zu blocks of %u bytes, %d x (read, discard, rewrite), median of %d\n",
           nblk, bs, ops, repeat);
    printf("%-6s | %9s %9s %9s | %12s | %8s\n", "codec", "lib s", "codec s", "io s", "us/op (lib)",
           "overhead");
    for (int c = 0; c < 4; c++) {
        double v[3][99];
        for (int r = 0; r < repeat; r++) {
            times t;
            one_run((bf_codec)c, tmp, data, nblk, bs, ops, &t);
            v[0][r] = t.lib;
            v[1][r] = t.codec;
            v[2][r] = t.io;
        }
        double lib = bench_median(v[0], repeat), codec = bench_median(v[1], repeat),
               io = bench_median(v[2], repeat);
        printf("%-6s | %9.3f %9.3f %9.3f | %12.1f | %7.2fx\n", bf_codec_name((bf_codec)c), lib,
               codec, io, lib * 1e6 / ops, lib / (codec + io));
        fflush(stdout);
    }
    free(data);
    return 0;
}
