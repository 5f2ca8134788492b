/*
 * test_readahead.c - sequential reads unpacked ahead on the space's workers
 * (readahead.c, file.c's ra_*): a sequential pass reads back exactly the
 * data and takes blocks from the workers (zstd, lz4, sealed lz4; 1..4
 * workers and a caller's runner); runs of one file read in turn are each
 * read ahead, and writes to blocks just ahead of them are seen; blocks
 * stored again, truncated or discarded after they were unpacked ahead are
 * never taken; a corrupt extent ahead is reported by the read of its block
 * with the message it has without workers, and the file stays usable; a
 * worker failing on a read job costs nothing but the block's work.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "extent.h"
#include "file.h"
#include "readahead.h"
#include "space.h"
#include "support.h"

T_PARENT_FIXTURE("readahead")

enum { BS = 8192 };

/* The tests' options: the fixture's directory, `codec`, BS-byte blocks. */
static bf_space_options options_of(bf_codec codec)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = BS;
    return o;
}

/* A space of options `o` with `n` workers (a runner's if `run`); NULL if `o` asks to encrypt
   and the library was built without libcrypto. */
static bf_space *space_of(const bf_space_options *o, unsigned n,
                          void (*run)(void *, void (*)(void *), void *))
{
    bf_space *sp;
    char err[256];
    int rc = bf_space_create(o, &sp, err, sizeof(err));
    if (rc == BF_ENOCODEC && o->encrypt)
        return NULL; /* built without libcrypto */
    assert_int_equal(rc, BF_OK);
    assert_int_equal(bf_space_set_workers(sp, n, run, NULL), BF_OK);
    return sp;
}

static bf_space *space_with(bf_codec codec, unsigned n, int encrypt,
                            void (*run)(void *, void (*)(void *), void *))
{
    bf_space_options o = options_of(codec);
    o.encrypt = encrypt;
    return space_of(&o, n, run);
}

static unsigned char *data_of(size_t len, uint64_t seed)
{
    unsigned char *d = malloc(len);
    assert_non_null(d);
    t_rng r = {seed};
    t_fill(&r, T_DATA_MIXED, d, len);
    return d;
}

static bf_file *file_of(bf_space *sp, const unsigned char *data, size_t len)
{
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, len), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    return f;
}

static bf_stats space_stats(bf_space *sp)
{
    bf_stats st;
    bf_space_stats(sp, &st);
    return st;
}

/* Read `len` bytes in pieces of `piece` and compare them with `data`. */
static void read_all(bf_file *f, const unsigned char *data, size_t len, size_t piece)
{
    unsigned char *got = malloc(piece);
    assert_non_null(got);
    for (size_t off = 0; off < len; off += piece) {
        size_t n = off + piece > len ? len - off : piece;
        assert_int_equal(bf_file_read(f, got, n), (int64_t)n);
        if (memcmp(got, data + off, n) != 0)
            fail_msg("bytes at %zu differ", off);
    }
    free(got);
}

/*
 * A sequential pass over a 3 MiB file reads back the data and takes blocks
 * unpacked on the workers; the figures count them as read.
 */
static void sequential_pass(bf_codec codec, unsigned n, int encrypt,
                            void (*run)(void *, void (*)(void *), void *))
{
    if (!bf_codec_available(codec))
        return;
    bf_space *sp = space_with(codec, n, encrypt, run);
    if (sp == NULL)
        return;
    size_t len = 3u << 20;
    unsigned char *data = data_of(len, n * 10 + (unsigned)codec);
    bf_file *f = file_of(sp, data, len);
    bf_stats before = space_stats(sp);
    read_all(f, data, len, 1000);
    bf_stats st = space_stats(sp);
    if (st.readahead_hits == 0)
        fail_msg("codec %d, %u workers%s: no block taken from a worker", (int)codec, n,
                 encrypt ? ", sealed" : "");
    /* Every block was read once, whether on a worker or here. */
    assert_int_equal(st.blocks_read - before.blocks_read, len / BS);
    assert_true(st.decompress_ns > before.decompress_ns);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    free(data);
}

static void sequential_reads_taken_from_workers(void **state)
{
    (void)state;
    for (unsigned n = 1; n <= 4; n++) {
        sequential_pass(BF_CODEC_ZSTD, n, 0, NULL);
        sequential_pass(BF_CODEC_LZ4, n, 1, NULL);
        sequential_pass(BF_CODEC_ZSTD, n, 1, NULL);
    }
    sequential_pass(BF_CODEC_ZSTD, 2, 0, t_runner_thread);
    sequential_pass(BF_CODEC_ZSTD, 1, 1, t_runner_inline);
}

/*
 * Unsealed lz4 blocks are unpacked ahead too: the handoff is paid per
 * refill of several blocks (one pread, one wake), not per block (file.c's
 * ra_submit says the figures). The pass reads back right and takes blocks
 * from the workers.
 */
static void lz4_blocks_handed_over(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_LZ4))
        return;
    for (unsigned n = 1; n <= 2; n++) {
        bf_space *sp = space_with(BF_CODEC_LZ4, n, 0, NULL);
        size_t len = 1u << 20;
        unsigned char *data = data_of(len, 40 + n);
        bf_file *f = file_of(sp, data, len);
        read_all(f, data, len, 3000);
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_stats st = space_stats(sp);
        assert_true(st.blocks_compressed > 0); /* lz4 extents, not bare blocks */
        /* Taken, or thrown away when the reads outran the worker (ra_cheap then stops
           handing lz4 over: how many depends on the machine's load). */
        assert_true(st.readahead_hits + st.readahead_misses > 0);
        bf_space_destroy(sp);
        free(data);
    }
}

/*
 * A merge's reads: `k` runs of one file (`per` blocks each, written one
 * after another) read a block of each in turn through the stream API
 * (seek, read), as SQLite's sorter reads up to 16 runs of one file. With
 * a write through the file every `write_every` turns (0: none) to a block
 * just ahead of the run being read (its next or the one after, probably
 * unpacked ahead already), which the run's later read must see. Returns
 * the blocks taken from workers.
 */
static uint64_t merge_pass(bf_codec codec, unsigned k, unsigned per, unsigned write_every,
                           uint64_t seed)
{
    bf_space *sp = space_with(codec, 1, 0, NULL);
    size_t len = (size_t)k * per * BS;
    unsigned char *model = data_of(len, seed), *fresh = data_of(len, seed + 1);
    unsigned char *got = malloc(BS);
    assert_non_null(got);
    bf_file *f = file_of(sp, model, len);
    bf_stats before = space_stats(sp);
    unsigned next[32] = {0};
    t_rng r = {seed};
    unsigned turn = 0;
    for (unsigned left = k * per; left > 0;) {
        for (unsigned t = 0; t < k; t++, turn++) {
            if (next[t] == per)
                continue;
            uint64_t pos = ((uint64_t)t * per + next[t]++) * BS;
            assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
            assert_int_equal(bf_file_read(f, got, BS), BS);
            if (memcmp(got, model + pos, BS) != 0)
                fail_msg("codec %d, %u runs: run %u's block at %llu differs", (int)codec, k, t,
                         (unsigned long long)(pos / BS));
            left--;
            uint64_t at = pos + (1 + t_below(&r, 2)) * BS + t_below(&r, BS - 64);
            if (write_every != 0 && turn % write_every == 0 && at + 64 <= len) {
                memcpy(model + at, fresh + at, 64);
                assert_int_equal(bf_file_seek(f, (int64_t)at, BF_SEEK_SET), BF_OK);
                assert_int_equal(bf_file_write(f, model + at, 64), BF_OK);
            }
        }
    }
    bf_stats st = space_stats(sp);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    free(model);
    free(fresh);
    free(got);
    return st.readahead_hits - before.readahead_hits;
}

/*
 * The space follows up to 16 passes at once (bf_space.streams): runs read
 * in turn are each read ahead, so most zstd blocks are taken from the
 * workers (the first of each run and a refill's that missed its slot are
 * not; lz4's may not be, on a loaded machine: ra_cheap);
 * with more runs than that the passes push each other out and little or
 * nothing is taken, and every read is still right. Writes through the file
 * to blocks just ahead of the runs (unpacked ahead, or about to be) are
 * seen by the runs' reads: a slot of a block stored again is never taken.
 */
static void interleaved_passes_each_read_ahead(void **state)
{
    (void)state;
    const bf_codec codecs[] = {BF_CODEC_LZ4, BF_CODEC_ZSTD};
    for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
        if (!bf_codec_available(codecs[c]))
            continue;
        for (unsigned k = 2; k <= 16; k *= 2) {
            uint64_t hits = merge_pass(codecs[c], k, 24, 0, 90 + k);
            /* lz4 is handed over only while the worker keeps ahead (ra_cheap): under load
               not always. zstd's blocks are waited for. */
            if (codecs[c] == BF_CODEC_ZSTD && hits < (uint64_t)k * 24 / 2)
                fail_msg("codec %d, %u runs: %llu of %u blocks taken from the worker",
                         (int)codecs[c], k, (unsigned long long)hits, k * 24);
        }
        merge_pass(codecs[c], 24, 12, 0, 7); /* more runs than passes followed: right */
        for (unsigned every = 1; every <= 5; every += 2)
            merge_pass(codecs[c], 8, 24, every, 40 + every);
    }
}

/*
 * The read job's own read (a worker reads the extent itself where the
 * space's I/O is plain POSIX: file.c's ra_worker_reads): the task reads
 * rd.ext_len bytes at rd.at of rd.fd into the slot, then checks and
 * unpacks them as it does a copy; a descriptor whose file ends before the
 * extent does fails the task with BF_ECORRUPT, one that cannot be read
 * (a directory) with BF_EIO, each with its reason: file.c then throws the
 * work away and loads the block on the caller's thread.
 */
static void job_reads_its_extent(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_LZ4))
        return;
    const bf_codec_ops *ops = bf_codec_ops_get(BF_CODEC_LZ4);
    void *ctx = NULL;
    assert_int_equal(ops->ctx_create(&bf_default_allocator, &ctx), BF_OK);
    unsigned char *data = data_of(BS, 61), *ext = malloc(BF_EXTENT_MAX(BS)),
                  *out = malloc(2 * BF_EXTENT_MAX(BS)), *got = malloc(BS);
    assert_non_null(ext);
    assert_non_null(out);
    assert_non_null(got);
    for (size_t i = 0; i < BS / 2; i++) /* half of it compressible: an extent, not a bare block */
        data[i] = (unsigned char)(i / 64);
    struct iovec iov[2];
    int iovcnt;
    bf_extent_info info;
    assert_int_equal(bf_extent_pack(ops, ctx, 1, 7, 0, data, BS, NULL, ext, iov, &iovcnt, &info),
                     BF_OK);
    assert_false(info.bare);
    assert_int_equal(iovcnt, 1);
    char path[600];
    snprintf(path, sizeof(path), "%s/extent", parent);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    const off_t at = 5000; /* not where a buffer would start */
    assert_int_equal(pwrite(fd, iov[0].iov_base, info.disk_len, at), (ssize_t)info.disk_len);
    bf_job j;
    memset(&j, 0, sizeof(j));
    j.ops = ops;
    j.ctx = ctx;
    j.blkno = 7;
    j.data = got;
    j.out = out;
    j.task = bf_readahead_unpack;
    j.rd.expect_blkno = 7;
    j.rd.ext_len = info.disk_len;
    j.rd.block_size = BS;
    j.rd.fd = fd;
    j.rd.at = (uint64_t)at;
    assert_int_equal(bf_readahead_unpack(&j), BF_OK);
    assert_int_equal(j.rd.got, info.disk_len);
    assert_memory_equal(got, data, BS);
    /* The file ends 10 bytes into the extent. */
    assert_int_equal(ftruncate(fd, at + 10), 0);
    assert_int_equal(bf_readahead_unpack(&j), BF_ECORRUPT);
    assert_int_equal(j.rd.got, 10);
    assert_non_null(j.rd.why);
    assert_non_null(strstr(j.rd.why, "end"));
    close(fd);
    /* A descriptor that reads nothing: a directory's. */
    fd = open(parent, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    j.rd.fd = fd;
    assert_int_equal(bf_readahead_unpack(&j), BF_EIO);
    assert_int_equal(j.rd.got, 0);
    assert_non_null(j.rd.why);
    close(fd);
    unlink(path);
    ops->ctx_destroy(&bf_default_allocator, ctx);
    free(data);
    free(ext);
    free(out);
    free(got);
}

/*
 * Two files read block by block in alternation, with one descriptor for
 * the whole space (max_open_fds = 1): each read of one file closes the
 * other's descriptor (the LRU) while blocks of that file are read ahead on
 * the worker from it. Both files read back right and blocks are still
 * taken from the worker (TSan and ASan run this in CI). That the close
 * waits for those reads is pinned_descriptor_close_waits' check: here a
 * read of a closed or reused descriptor would most often be caught by the
 * extent's check and cost only a block's work.
 */
static void descriptor_closed_under_reads_ahead(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_ZSTD))
        return;
    bf_space_options o = options_of(BF_CODEC_ZSTD);
    o.max_open_fds = 1;
    bf_space *sp = space_of(&o, 1, NULL);
    size_t len = 96 * BS;
    unsigned char *a = data_of(len, 71), *b = data_of(len, 72), *got = malloc(BS);
    assert_non_null(got);
    bf_file *fa = file_of(sp, a, len), *fb = file_of(sp, b, len);
    for (size_t off = 0; off < len; off += BS) {
        assert_int_equal(bf_file_read(fa, got, BS), BS);
        if (memcmp(got, a + off, BS) != 0)
            fail_msg("file a: block %zu differs", off / BS);
        assert_int_equal(bf_file_read(fb, got, BS), BS);
        if (memcmp(got, b + off, BS) != 0)
            fail_msg("file b: block %zu differs", off / BS);
    }
    bf_stats st = space_stats(sp);
    assert_true(st.readahead_hits > 0);
    assert_int_equal(bf_file_close(fa), BF_OK);
    assert_int_equal(bf_file_close(fb), BF_OK);
    bf_space_destroy(sp);
    free(a);
    free(b);
    free(got);
}

struct release_later {
    _Atomic uint32_t *pin;
    _Atomic int released;
};

static void *release_after_a_while(void *arg)
{
    struct release_later *r = arg;
    usleep(50 * 1000);
    atomic_store(&r->released, 1);
    atomic_fetch_sub(r->pin, 1);
    return NULL;
}

/*
 * A descriptor pinned for a worker's read (bf_seg_pin) is not closed until
 * the read is done: the close of a file whose descriptor another thread
 * holds pinned returns only after that thread lowered the pin (it marks
 * `released` first, 50 ms later). Pins of one descriptor share an entry.
 */
static void pinned_descriptor_close_waits(void **state)
{
    (void)state;
    bf_space *sp = space_with(BF_CODEC_LZ4, 0, 0, NULL);
    unsigned char *data = data_of(4 * BS, 81);
    bf_file *f = file_of(sp, data, 4 * BS);
    assert_true(f->seg.fd >= 0);
    _Atomic uint32_t *pin = bf_seg_pin(&f->seg);
    assert_non_null(pin);
    assert_ptr_equal(bf_seg_pin(&f->seg), pin);
    assert_int_equal(atomic_load(pin), 2);
    atomic_fetch_sub(pin, 1);
    struct release_later r = {pin, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_after_a_while, &r), 0);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(atomic_load(&r.released), 1);
    pthread_join(t, NULL);
    bf_space_destroy(sp);
    free(data);
}

/* Without workers nothing is unpacked ahead. */
static void no_workers_no_readahead(void **state)
{
    (void)state;
    bf_space *sp = space_with(BF_CODEC_LZ4, 0, 0, NULL);
    size_t len = 1u << 20;
    unsigned char *data = data_of(len, 3);
    bf_file *f = file_of(sp, data, len);
    read_all(f, data, len, 4096);
    bf_stats st = space_stats(sp);
    assert_int_equal(st.readahead_hits, 0);
    assert_int_equal(st.readahead_misses, 0);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    free(data);
}

/*
 * Reads interleaved with changes to the blocks just ahead of them: a block
 * rewritten through the stream (the buffer moves there and back), written
 * whole (bf_file_write_block), discarded, the file truncated short of it
 * and grown again, every change repeated so that a new extent may land
 * where an old one of the same block was. Each read must see the change.
 * Returns the blocks taken from workers (the pass and a clean one after).
 */
static uint64_t changes_ahead_pass(bf_space *sp, unsigned sealed, uint64_t seed)
{
    size_t len = 96 * BS;
    unsigned char *model = data_of(len, 77), *fresh = data_of(len, 78);
    unsigned char *got = malloc(2 * BS);
    bf_file *f = file_of(sp, model, len);
    t_rng r = {seed};
    uint64_t b = 0;
    while (b * BS < len) {
        size_t n = BS / 2 + t_below(&r, BS);
        uint64_t pos = b * BS;
        if (pos + n > len)
            n = len - pos;
        assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_read(f, got, n), (int64_t)n);
        if (memcmp(got, model + pos, n) != 0)
            fail_msg("sealed %u: block %llu differs", sealed, (unsigned long long)b);
        /* Read on into the next block to make the pass sequential, then change one
           just ahead of it. */
        uint64_t ahead = b + 1 + t_below(&r, 2);
        uint64_t at = ahead * BS;
        switch (t_below(&r, 4)) {
        case 0: { /* through the stream: a few bytes in the middle of the block */
            if (at >= len)
                break;
            size_t k = 100;
            memcpy(model + at + 1000, fresh + at, k);
            assert_int_equal(bf_file_seek(f, (int64_t)at + 1000, BF_SEEK_SET), BF_OK);
            assert_int_equal(bf_file_write(f, model + at + 1000, k), BF_OK);
            break;
        }
        case 1: /* whole */
            if (at + 2 * BS > len)
                break;
            memcpy(model + at, fresh + at + BS / 3, BS);
            memmove(fresh + at, fresh + at + 1, BS); /* another copy next time */
            assert_int_equal(bf_file_write_block(f, ahead, model + at), BF_OK);
            break;
        case 2: /* discarded: reads zeros */
            if (at >= len)
                break;
            memset(model + at, 0, BS);
            assert_int_equal(bf_file_discard_block(f, ahead), BF_OK);
            break;
        default: /* truncated short of it, then grown back with new bytes */
            if (at >= len)
                break;
            assert_int_equal(bf_file_truncate(f, at + 10), BF_OK);
            memcpy(model + at + 10, fresh + at, len - at - 10);
            assert_int_equal(bf_file_seek(f, (int64_t)at + 10, BF_SEEK_SET), BF_OK);
            assert_int_equal(bf_file_write(f, model + at + 10, len - at - 10), BF_OK);
            break;
        }
        b++;
    }
    /* And a clean pass over the result. */
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    read_all(f, model, len, 3000);
    bf_stats st = space_stats(sp);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(model);
    free(fresh);
    free(got);
    return st.readahead_hits;
}

/*
 * changes_ahead_pass, sealed and not, until a run of it took blocks from
 * workers (a run without is no test of what it checks). Whether a block
 * read next is handed over depends on where the changes put its new extent
 * and on when workers finished the earlier ones (blocks from workers are
 * placed one by one as they are committed): in about 1 run of 40 on a
 * loaded machine none was. Every run checks every read.
 */
static void changes_ahead_are_seen(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_ZSTD))
        return;
    for (unsigned sealed = 0; sealed <= 1; sealed++) {
        uint64_t hits = 0;
        int runs = 0;
        for (uint64_t seed = 5; seed < 15 && hits == 0; seed++) {
            bf_space *sp = space_with(BF_CODEC_ZSTD, 2, (int)sealed, NULL);
            if (sp == NULL)
                break; /* built without libcrypto */
            hits = changes_ahead_pass(sp, sealed, seed + sealed);
            bf_space_destroy(sp);
            runs++;
        }
        if (runs > 0 && hits == 0)
            fail_msg("sealed %u: no block taken from a worker in 10 runs", sealed);
    }
}

/*
 * A sequential pass where block `bad` has a corrupt extent, with `n`
 * workers: every block before it reads, its read fails with BF_ECORRUPT;
 * the message (without the path, which is the space's) goes to `msg`.
 * The file then stays usable: the blocks after it read, and a new copy of
 * the bad block reads back.
 */
static void corrupt_pass(unsigned n, int encrypt, uint64_t bad, char *msg, size_t msglen,
                         bf_stats *st, int *handed)
{
    bf_space *sp = space_with(BF_CODEC_ZSTD, n, encrypt, NULL);
    size_t len = 64 * BS;
    unsigned char *data = data_of(len, 99), *got = malloc(BS);
    bf_file *f = file_of(sp, data, len);
    const bf_map_entry *e = bf_map_get(&f->map, bad);
    assert_true(bf_map_used(e) && !bf_map_bare(e));
    char path[600];
    bf_file_path(f, path, sizeof(path) - 3);
    strcat(path, ".0");
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    /* The byte flipped, not set: a sealed extent's bytes differ at every run (a nonce of its
       own), and a fixed junk byte was already there in 1 of 256 passes. */
    off_t junk_at = (off_t)(bf_map_off(e) + bf_map_len(e) / 2);
    unsigned char junk;
    assert_int_equal(pread(fd, &junk, 1, junk_at), 1);
    junk ^= 0xff;
    assert_int_equal(pwrite(fd, &junk, 1, junk_at), 1);
    close(fd);
    for (uint64_t b = 0; b < bad; b++) {
        assert_int_equal(bf_file_read(f, got, BS), BS);
        assert_memory_equal(got, data + b * BS, BS);
    }
    /* Whether the bad block is on a worker now (handed over with its pass's refill). */
    *handed = 0;
    for (uint32_t i = 0; sp->workers != NULL && i < bf_workers_nslots(sp->workers); i++) {
        const bf_job *j = bf_workers_slot(sp->workers, i);
        *handed |= j->owner == f && j->task != NULL && j->blkno == bad;
    }
    uint64_t misses = space_stats(sp).readahead_misses;
    assert_int_equal(bf_file_read(f, got, BS), BF_ECORRUPT);
    assert_int_equal(bf_file_tell(f), bad * BS); /* a failed read moves nothing */
    /* Found corrupt on the worker, thrown away, loaded again here. */
    if (*handed)
        assert_int_equal(space_stats(sp).readahead_misses, misses + 1);
    const char *m = bf_space_errmsg(sp);
    const char *tail = strstr(m, ": block ");
    assert_non_null(tail);
    /* The message without the extent's offset: blocks handed to workers are placed one by
       one, without them a write of whole blocks goes out as a batch, and in a file of
       compressed and bare blocks the two can place the bad block's extent apart. */
    const char *at = strstr(tail, " at offset ");
    assert_non_null(at);
    const char *rest = at + strlen(" at offset ");
    while (*rest >= '0' && *rest <= '9')
        rest++;
    snprintf(msg, msglen, "%.*s%s", (int)(at - tail), tail, rest);
    /* Usable: the blocks after it, and the bad block written again. */
    assert_int_equal(bf_file_seek(f, (int64_t)(bad + 1) * BS, BF_SEEK_SET), BF_OK);
    read_all(f, data + (bad + 1) * BS, len - (bad + 1) * BS, 5000);
    assert_int_equal(bf_file_write_block(f, bad, data + bad * BS), BF_OK);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    read_all(f, data, len, 7000);
    *st = space_stats(sp);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    free(data);
    free(got);
}

static void corrupt_extent_ahead_reported_at_its_read(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_ZSTD))
        return;
    for (int encrypt = 0; encrypt <= 1; encrypt++) {
        if (encrypt) {
            bf_space *probe = space_with(BF_CODEC_ZSTD, 0, 1, NULL);
            if (probe == NULL)
                return;
            bf_space_destroy(probe);
        }
        int handed_any = 0;
        uint64_t bads[] = {3, 9, 20, 33, 47};
        for (size_t k = 0; k < sizeof(bads) / sizeof(bads[0]); k++) {
            char without[512], with[512];
            bf_stats st;
            int handed;
            corrupt_pass(0, encrypt, bads[k], without, sizeof(without), &st, &handed);
            for (unsigned n = 1; n <= 3; n++) {
                corrupt_pass(n, encrypt, bads[k], with, sizeof(with), &st, &handed);
                assert_string_equal(with, without);
                assert_true(st.readahead_hits > 0);
                handed_any |= handed;
            }
        }
        /* Some of those passes had the bad block on a worker when its read came. */
        assert_true(handed_any);
    }
}

/*
 * A worker fails on a block read ahead (after unpacking it): the read of
 * that block loads it on the caller's thread, reports nothing and returns
 * the data; the block counts as a miss.
 */
static void worker_fails_on_read_job(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_ZSTD))
        return;
    for (uint64_t nth = 1; nth <= 9; nth += 4) {
        bf_space *sp = space_with(BF_CODEC_ZSTD, 2, 0, NULL);
        size_t len = 2u << 20;
        unsigned char *data = data_of(len, nth);
        bf_file *f = file_of(sp, data, len);
        bf_workers_fail_at(sp->workers, nth, BF_ECODEC); /* the nth read job */
        read_all(f, data, len, 1500);
        bf_stats st = space_stats(sp);
        assert_true(st.readahead_hits > 0);
        assert_true(st.readahead_misses >= 1);
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_space_destroy(sp);
        free(data);
    }
}

/* Blocks stored bare (codec none) are read on the caller's thread: nothing to unpack. */
static void bare_blocks_not_handed_over(void **state)
{
    (void)state;
    bf_space *sp = space_with(BF_CODEC_NONE, 2, 0, NULL);
    size_t len = 1u << 20;
    unsigned char *data = data_of(len, 4);
    bf_file *f = file_of(sp, data, len);
    read_all(f, data, len, 4096);
    bf_stats st = space_stats(sp);
    assert_int_equal(st.readahead_hits + st.readahead_misses, 0);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    free(data);
}

/*
 * Writes take their slots back from blocks unpacked ahead: two files, one
 * read sequentially while the other is written, with one worker (two
 * slots); both are right, the reader is unpacked ahead at times, and the
 * writer never fails for want of a slot.
 */
static void writes_take_slots_back(void **state)
{
    (void)state;
    if (!bf_codec_available(BF_CODEC_ZSTD))
        return;
    bf_space *sp = space_with(BF_CODEC_ZSTD, 1, 0, NULL);
    size_t len = 1u << 20;
    unsigned char *data = data_of(len, 11), *wdata = data_of(len, 12);
    bf_file *r = file_of(sp, data, len), *w;
    assert_int_equal(bf_file_create(sp, NULL, &w), BF_OK);
    unsigned char *got = malloc(3000);
    for (size_t off = 0; off < len; off += 3000) {
        size_t n = off + 3000 > len ? len - off : 3000;
        assert_int_equal(bf_file_read(r, got, n), (int64_t)n);
        assert_memory_equal(got, data + off, n);
        assert_int_equal(bf_file_write(w, wdata + off, n), BF_OK);
    }
    assert_int_equal(bf_file_seek(w, 0, BF_SEEK_SET), BF_OK);
    read_all(w, wdata, len, 4000);
    bf_stats st = space_stats(sp);
    assert_true(st.readahead_hits > 0);
    assert_int_equal(bf_file_close(r), BF_OK);
    assert_int_equal(bf_file_close(w), BF_OK);
    bf_space_destroy(sp);
    free(data);
    free(wdata);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sequential_reads_taken_from_workers),
        cmocka_unit_test(no_workers_no_readahead),
        cmocka_unit_test(job_reads_its_extent),
        cmocka_unit_test(descriptor_closed_under_reads_ahead),
        cmocka_unit_test(pinned_descriptor_close_waits),
        cmocka_unit_test(changes_ahead_are_seen),
        cmocka_unit_test(corrupt_extent_ahead_reported_at_its_read),
        cmocka_unit_test(worker_fails_on_read_job),
        cmocka_unit_test(bare_blocks_not_handed_over),
        cmocka_unit_test(lz4_blocks_handed_over),
        cmocka_unit_test(interleaved_passes_each_read_ahead),
        cmocka_unit_test(writes_take_slots_back),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
