/*
 * test_stress.c - scale: many open files, many spaces in threads, long
 * files over many segments, and a bounded soak of random rewrites.
 *
 * Default run (ctest, well under a minute):
 *  - 100,000 files open at once in one space, each with a block on disk:
 *    descriptors stay within the space's cap (counted at the I/O seam),
 *    memory per file is measured through the counting allocator, files
 *    still read back after the descriptor cache has churned, and closing
 *    them all leaves nothing behind;
 *  - 8 spaces in 8 threads, each checking its own files against a model;
 *  - 128 MiB through one file over 1 MiB segments (rollover, rewrite,
 *    truncate).
 * Longer runs, skipped unless asked for (docs/reliability.md):
 *  - BF_STRESS_GIB=10: the rollover test with 10 GiB and 64 MiB segments;
 *  - BF_SOAK_SECONDS=N: random rewrites, truncates and discards on 8
 *    files for N seconds, fully verified every 2,000 operations.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "buffile.h"
#include "space.h"
#include "support.h"

T_PARENT_FIXTURE("stress")

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bf_space *make_space(bf_codec codec, uint32_t bs, uint64_t seg, uint32_t max_fds,
                            const bf_allocator *alloc)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = bs;
    o.segment_size = seg;
    o.max_open_fds = max_fds;
    o.allocator = alloc;
    return t_space_opts(&o);
}

/*
 * Block `blkno` of a verifiable stream: a phrase shifted by the block
 * number with 8 random bytes in every 32, so lz4 gets about 2x (like
 * spill data) and no two blocks are equal. Cheap enough for 10 GiB.
 */
static void gen_block(uint64_t seed, uint64_t blkno, unsigned char *buf, size_t len)
{
    static const char phrase[] = "O|1-URGENT|Clerk#000000951|0|nstructions sleep furiously ";
    t_rng r = {seed * 0x9e3779b97f4a7c15ull + blkno};
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)phrase[(i + blkno) % (sizeof(phrase) - 1)];
    for (size_t i = 0; i + 8 <= len; i += 32) {
        uint64_t v = t_next(&r);
        memcpy(buf + i, &v, 8);
    }
}

/* ---- 100,000 open files ---------------------------------------------- */

/* Descriptors open through the seam now and at most. */
typedef struct fd_count {
    long open, peak, opens;
} fd_count;

static int count_open(void *ctx, const char *path, int flags, mode_t mode)
{
    fd_count *c = ctx;
    int fd = bf_posix_io.open(NULL, path, flags, mode);
    if (fd >= 0) {
        c->opens++;
        if (++c->open > c->peak)
            c->peak = c->open;
    }
    return fd;
}

static int count_close(void *ctx, int fd)
{
    fd_count *c = ctx;
    c->open--;
    return bf_posix_io.close(NULL, fd);
}

static void test_100k_open_files(void **state)
{
    (void)state;
    enum { NFILES = 100000, BS = 4096, CAP = 256, SAMPLE = 3000 };
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = make_space(BF_CODEC_LZ4, BS, 0, CAP, &cnt.hooks);
    fd_count fds = {0, 0, 0};
    bf_io io = bf_posix_io;
    io.open = count_open;
    io.close = count_close;
    io.ctx = &fds;
    bf_space_set_io(sp, &io);
    bf_file **files = malloc(sizeof(*files) * NFILES);
    assert_non_null(files);
    static unsigned char blk[BS], got[BS];
    double t0 = now_s();
    for (uint64_t i = 0; i < NFILES; i++) {
        assert_int_equal(bf_file_create(sp, NULL, &files[i]), BF_OK);
        gen_block(1, i, blk, BS);
        if (bf_file_write_block(files[i], 0, blk) != BF_OK)
            fail_msg("file %llu: %s", (unsigned long long)i, bf_space_errmsg(sp));
    }
    double t_create = now_s() - t0;
    bf_stats st;
    bf_space_stats(sp, &st);
    assert_int_equal(st.files_open, NFILES);
    int64_t mem_blocks_on_disk = cnt.live_bytes;

    /* A partial block in every 10th file: those pay for a block buffer. */
    for (uint64_t i = 0; i < NFILES; i += 10)
        assert_int_equal(bf_file_write(files[i], "tail", 4), BF_OK);
    int64_t mem_with_buffers = cnt.live_bytes;

    /* Random files read back, each needing a descriptor the cache must find. */
    t_rng r = {77};
    for (int k = 0; k < SAMPLE; k++) {
        uint64_t i = t_below(&r, NFILES);
        gen_block(1, i, blk, BS);
        if (i % 10 == 0)
            memcpy(blk, "tail", 4);
        assert_int_equal(bf_file_read_block(files[i], 0, got), BF_OK);
        assert_memory_equal(got, blk, BS);
    }
    bf_space_stats(sp, &st);
    printf("%d files open in one space: %.1f s to create and write, %llu bytes on disk, "
           "%ld segment opens, at most %ld descriptors open (cap %d)\n",
           NFILES, t_create, (unsigned long long)st.physical_bytes, fds.opens, fds.peak, CAP);
    printf("memory through the hooks: %.0f bytes/file with the block on disk, %.0f bytes/file "
           "with every 10th file buffering a partial block, peak %.1f MiB\n",
           (double)mem_blocks_on_disk / NFILES, (double)mem_with_buffers / NFILES,
           (double)cnt.peak_bytes / (1024.0 * 1024.0));
    assert_true(fds.peak <= CAP);
    assert_true(fds.opens >= NFILES + SAMPLE / 2);
    /* The struct and a small block map: well under a block. */
    assert_true(mem_blocks_on_disk / NFILES < 1024);
    assert_true((mem_with_buffers - mem_blocks_on_disk) / (NFILES / 10) <= BS + 512);

    t0 = now_s();
    for (uint64_t i = 0; i < NFILES; i++)
        assert_int_equal(bf_file_close(files[i]), BF_OK);
    printf("closed %d files in %.1f s\n", NFILES, now_s() - t0);
    assert_int_equal(fds.open, 0);
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), 0);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
    free(files);
}

/* ---- many spaces in parallel threads ---------------------------------- */

enum { THREADS = 8, TFILES = 4, TSTEPS = 1500, TBLOCKS = 64 };

typedef struct worker {
    int id;
    bf_codec codec;
    uint64_t written;
    int64_t leaked;
    char err[512];
} worker;

#define WCHECK(w, cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf((w)->err, sizeof((w)->err), __VA_ARGS__);                                     \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* One thread: its own space, allocator and files, checked against its own model. */
static void *worker_run(void *arg)
{
    worker *w = arg;
    enum { BS = 8192 };
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = w->codec;
    o.block_size = BS;
    o.segment_size = 1 << 20;
    o.allocator = &cnt.hooks;
    bf_space *sp = NULL;
    bf_file *f[TFILES] = {0};
    unsigned char *model = calloc(TFILES, (size_t)TBLOCKS * BS);
    uint64_t size[TFILES] = {0};
    static _Thread_local unsigned char buf[BS], got[BS];
    t_rng r = {1000u + (uint64_t)w->id};
    if (model == NULL || bf_space_create(&o, &sp, w->err, sizeof(w->err)) != BF_OK)
        goto out;
    for (int i = 0; i < TFILES; i++)
        WCHECK(w, bf_file_create(sp, NULL, &f[i]) == BF_OK, "create: %s", bf_space_errmsg(sp));
    for (int s = 0; s < TSTEPS; s++) {
        int i = (int)t_below(&r, TFILES);
        unsigned char *m = model + (size_t)i * TBLOCKS * BS;
        uint64_t op = t_below(&r, 10);
        if (op < 5) { /* a write anywhere, often across blocks */
            uint64_t pos = t_below(&r, (uint64_t)(TBLOCKS - 2) * BS);
            size_t len = 1 + (size_t)t_below(&r, BS);
            t_fill(&r, T_DATA_MIXED, buf, len);
            WCHECK(w, bf_file_seek(f[i], (int64_t)pos, BF_SEEK_SET) == BF_OK, "seek");
            WCHECK(w, bf_file_write(f[i], buf, len) == BF_OK, "write: %s", bf_space_errmsg(sp));
            memcpy(m + pos, buf, len);
            if (pos + len > size[i])
                size[i] = pos + len;
            w->written += len;
        } else if (op < 7) { /* a whole-block rewrite */
            uint64_t b = t_below(&r, TBLOCKS);
            t_fill(&r, T_DATA_TEXT, buf, BS);
            WCHECK(w, bf_file_write_block(f[i], b, buf) == BF_OK, "write_block: %s",
                   bf_space_errmsg(sp));
            memcpy(m + b * BS, buf, BS);
            if ((b + 1) * BS > size[i])
                size[i] = (b + 1) * BS;
            w->written += BS;
        } else if (op < 9) { /* read a block back */
            uint64_t b = t_below(&r, TBLOCKS);
            WCHECK(w, bf_file_read_block(f[i], b, got) == BF_OK, "read_block: %s",
                   bf_space_errmsg(sp));
            WCHECK(w, memcmp(got, m + b * BS, BS) == 0, "file %d block %llu differs", i,
                   (unsigned long long)b);
        } else { /* truncate */
            uint64_t ns = t_below(&r, size[i] + 1);
            WCHECK(w, bf_file_truncate(f[i], ns) == BF_OK, "truncate: %s", bf_space_errmsg(sp));
            memset(m + ns, 0, (size_t)(TBLOCKS * BS - ns));
            size[i] = ns;
        }
    }
    for (int i = 0; i < TFILES; i++) {
        unsigned char *m = model + (size_t)i * TBLOCKS * BS;
        WCHECK(w, bf_file_size(f[i]) == size[i], "file %d size", i);
        WCHECK(w, bf_file_seek(f[i], 0, BF_SEEK_SET) == BF_OK, "seek");
        for (uint64_t at = 0; at < size[i]; at += BS) {
            int64_t n = bf_file_read(f[i], got, BS);
            uint64_t want = size[i] - at < BS ? size[i] - at : BS;
            WCHECK(w, n == (int64_t)want && memcmp(got, m + at, want) == 0,
                   "file %d differs at %llu", i, (unsigned long long)at);
        }
    }
out:
    for (int i = 0; i < TFILES; i++)
        if (f[i] != NULL && bf_file_close(f[i]) != BF_OK && w->err[0] == '\0')
            snprintf(w->err, sizeof(w->err), "close: %s", bf_space_errmsg(sp));
    bf_space_destroy(sp);
    w->leaked = cnt.live_bytes;
    free(model);
    return NULL;
}

static void test_parallel_spaces(void **state)
{
    (void)state;
    static const bf_codec codecs[4] = {BF_CODEC_LZ4, BF_CODEC_ZSTD, BF_CODEC_ZLIB, BF_CODEC_NONE};
    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].id = i;
        w[i].codec = codecs[i % 4];
        if (!bf_codec_available(w[i].codec))
            w[i].codec = BF_CODEC_NONE;
        assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
    }
    uint64_t total = 0;
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        if (w[i].err[0] != '\0')
            fail_msg("thread %d (%s): %s", i, bf_codec_name(w[i].codec), w[i].err);
        assert_int_equal(w[i].leaked, 0);
        total += w[i].written;
    }
    printf("%d spaces in %d threads: %d steps each over %d files, %.1f MiB written, all "
           "verified\n",
           THREADS, THREADS, TSTEPS, TFILES, (double)total / (1024.0 * 1024.0));
    assert_int_equal(t_dir_entries(parent), 0);
}

/* ---- one long file over many segments ---------------------------------- */

static void rollover(uint64_t total, uint64_t seg, bf_codec codec)
{
    enum { BS = 65536, CHUNK = 16 * BS };
    bf_space *sp = make_space(codec, BS, seg, 0, NULL);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char *buf = malloc(CHUNK), *got = malloc(CHUNK);
    assert_non_null(buf);
    assert_non_null(got);
    uint64_t nblk = total / BS;
    double t0 = now_s();
    for (uint64_t b = 0; b < nblk; b += CHUNK / BS) {
        for (uint64_t k = 0; k < CHUNK / BS; k++)
            gen_block(3, b + k, buf + k * BS, BS);
        /* An odd split, so writes straddle blocks through the buffer too. */
        assert_int_equal(bf_file_write(f, buf, 1000), BF_OK);
        if (bf_file_write(f, buf + 1000, CHUNK - 1000) != BF_OK)
            fail_msg("write at block %llu: %s", (unsigned long long)b, bf_space_errmsg(sp));
    }
    assert_int_equal(bf_file_flush(f), BF_OK);
    double t_write = now_s() - t0;
    bf_stats st;
    bf_file_stats(f, &st);
    int segs = t_dir_entries(bf_space_dir(sp));
    assert_int_equal(st.logical_bytes, nblk * BS);
    assert_int_equal(segs, (int)((st.physical_bytes + seg - 1) / seg));
    assert_true(segs > 1);

    /* Scattered rewrites (1%, past the first quarter), then everything reads back. */
    t_rng r = {5};
    uint64_t rewrites = nblk / 100 + 1;
    for (uint64_t k = 0; k < rewrites; k++) {
        uint64_t b = nblk / 4 + t_below(&r, nblk - nblk / 4);
        gen_block(4, b, buf, BS);
        assert_int_equal(bf_file_write_block(f, b, buf), BF_OK);
    }
    t0 = now_s();
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    r.s = 5;
    /* Which blocks were rewritten, re-derived from the same sequence. */
    unsigned char *rw = calloc((size_t)nblk, 1);
    assert_non_null(rw);
    for (uint64_t k = 0; k < rewrites; k++)
        rw[nblk / 4 + t_below(&r, nblk - nblk / 4)] = 1;
    for (uint64_t b = 0; b < nblk; b += CHUNK / BS) {
        assert_int_equal(bf_file_read(f, got, CHUNK), CHUNK);
        for (uint64_t k = 0; k < CHUNK / BS; k++) {
            gen_block(rw[b + k] ? 4 : 3, b + k, buf, BS);
            if (memcmp(got + k * BS, buf, BS) != 0)
                fail_msg("block %llu differs after rollover", (unsigned long long)(b + k));
        }
    }
    double t_read = now_s() - t0;
    printf("rollover: %.2f GiB logical in one file (%s, 64 KiB blocks), %.2f GiB physical in "
           "%d segment files of %llu MiB, %llu rewrites; write %.1f s, read+verify %.1f s\n",
           (double)total / (1 << 30), bf_codec_name(codec), (double)st.physical_bytes / (1 << 30),
           segs, (unsigned long long)(seg >> 20), (unsigned long long)rewrites, t_write, t_read);
    /* Truncating to a quarter gives back the segments past the new end (all extents
       there, the rewritten ones included, belong to the cut blocks). */
    assert_int_equal(bf_file_truncate(f, total / 4), BF_OK);
    bf_file_stats(f, &st);
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), (int)((st.physical_bytes + seg - 1) / seg));
    assert_true(t_dir_entries(bf_space_dir(sp)) < segs);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), 0);
    bf_space_destroy(sp);
    free(buf);
    free(got);
    free(rw);
}

static void test_rollover(void **state)
{
    (void)state;
    rollover(128ull << 20, 1ull << 20, BF_CODEC_LZ4);
}

static void test_rollover_10gib(void **state)
{
    (void)state;
    const char *gib = getenv("BF_STRESS_GIB");
    if (gib == NULL || atoi(gib) <= 0)
        skip();
    rollover((uint64_t)atoi(gib) << 30, 64ull << 20, BF_CODEC_LZ4);
}

/* ---- soak ------------------------------------------------------------ */

static void test_soak(void **state)
{
    (void)state;
    const char *env = getenv("BF_SOAK_SECONDS");
    if (env == NULL || atoi(env) <= 0)
        skip();
    enum { NF = 8, BS = 16384, MAXBLK = 1024 };
    static const bf_codec codecs[4] = {BF_CODEC_LZ4, BF_CODEC_ZSTD, BF_CODEC_ZLIB, BF_CODEC_NONE};
    double deadline = now_s() + atoi(env);
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = make_space(BF_CODEC_LZ4, BS, 1 << 20, 0, &cnt.hooks);
    bf_file *f[NF];
    t_image img[NF];
    memset(img, 0, sizeof(img));
    for (int i = 0; i < NF; i++) {
        bf_file_options fo;
        bf_file_options_init(&fo);
        fo.codec = bf_codec_available(codecs[i % 4]) ? codecs[i % 4] : BF_CODEC_NONE;
        assert_int_equal(bf_file_create(sp, &fo, &f[i]), BF_OK);
    }
    static unsigned char buf[3 * BS], got[BS];
    t_rng r = {getenv("BF_SEED") ? strtoull(getenv("BF_SEED"), NULL, 10) : 99};
    uint64_t ops = 0, written = 0, rewrites = 0, checks = 0;
    while (now_s() < deadline) {
        int i = (int)t_below(&r, NF);
        uint64_t op = t_below(&r, 100);
        uint64_t limit = (uint64_t)MAXBLK * BS;
        if (op < 45) {
            /* Rewrites anywhere, and appends that make the file grow. */
            uint64_t pos = t_below(&r, 3) ? t_below(&r, img[i].size + 1) : img[i].size;
            size_t len = 1 + (size_t)t_below(&r, sizeof(buf) - 1);
            if (pos + len > limit)
                pos = limit - len;
            t_fill(&r, T_DATA_MIXED, buf, len);
            assert_int_equal(bf_file_seek(f[i], (int64_t)pos, BF_SEEK_SET), BF_OK);
            if (bf_file_write(f[i], buf, len) != BF_OK)
                fail_msg("write: %s (seed via BF_SEED)", bf_space_errmsg(sp));
            rewrites += pos < img[i].size;
            t_image_write(&img[i], pos, buf, len);
            written += len;
        } else if (op < 70) {
            uint64_t b = t_below(&r, (img[i].size + BS - 1) / BS + 2);
            if (b >= MAXBLK)
                b = MAXBLK - 1;
            t_fill(&r, T_DATA_TEXT, buf, BS);
            assert_int_equal(bf_file_write_block(f[i], b, buf), BF_OK);
            rewrites += b * BS < img[i].size;
            t_image_write(&img[i], b * BS, buf, BS);
            written += BS;
        } else if (op < 85) {
            uint64_t b = t_below(&r, (img[i].size + BS - 1) / BS + 1);
            assert_int_equal(bf_file_read_block(f[i], b, got), BF_OK);
            for (uint32_t k = 0; k < BS; k++) {
                uint64_t at = b * BS + k;
                unsigned char want = at < img[i].size ? img[i].d[at] : 0;
                if (got[k] != want)
                    fail_msg("file %d byte %llu is %u, expected %u", i, (unsigned long long)at,
                             got[k], want);
            }
        } else if (op < 88) {
            uint64_t ns = t_below(&r, img[i].size + 1);
            /* Mostly small cuts, so files grow over several segments and shrink back. */
            if (t_below(&r, 8) != 0)
                ns = img[i].size - (img[i].size - ns) / 16;
            assert_int_equal(bf_file_truncate(f[i], ns), BF_OK);
            t_image_resize(&img[i], ns);
        } else {
            uint64_t b = t_below(&r, (img[i].size + BS - 1) / BS + 1);
            assert_int_equal(bf_file_discard_block(f[i], b), BF_OK);
            if (b * BS < img[i].size) {
                uint64_t end = (b + 1) * BS < img[i].size ? (b + 1) * BS : img[i].size;
                memset(img[i].d + b * BS, 0, end - b * BS);
            }
        }
        if (++ops % 2000 == 0) {
            for (int k = 0; k < NF; k++)
                t_image_check(f[k], &img[k], "soak");
            checks++;
        }
    }
    bf_stats st;
    bf_space_stats(sp, &st);
    for (int k = 0; k < NF; k++)
        t_image_check(f[k], &img[k], "soak end");
    printf("soak: %s s, %llu operations on %d files (%llu rewrites), %.1f MiB written, %llu "
           "full verifications; physical peak %.1f MiB, dead now %.1f MiB of %.1f MiB, peak "
           "memory %.1f MiB\n",
           env, (unsigned long long)ops, NF, (unsigned long long)rewrites,
           (double)written / (1 << 20), (unsigned long long)checks + 1,
           (double)st.physical_peak / (1 << 20), (double)st.dead_bytes / (1 << 20),
           (double)st.physical_bytes / (1 << 20), (double)cnt.peak_bytes / (1 << 20));
    for (int k = 0; k < NF; k++) {
        assert_int_equal(bf_file_close(f[k]), BF_OK);
        t_image_free(&img[k]);
    }
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), 0);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_100k_open_files),
        cmocka_unit_test(test_parallel_spaces),
        cmocka_unit_test(test_rollover),
        cmocka_unit_test(test_rollover_10gib),
        cmocka_unit_test(test_soak),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
