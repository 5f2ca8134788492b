/*
 * test_cursor.c - cursors (src/cursor.c): read positions over one file,
 * each with a block of its own.
 *
 * The model test runs random sequences in which several cursors read,
 * seek and take turns while the file itself is written (byte ranges and
 * whole blocks), read, truncated, flushed and has blocks discarded,
 * against an in-memory copy of the file: every byte a cursor returns must
 * be the model's, whatever was written since it loaded its block. Every
 * codec x 4, 8 and 64 KiB blocks x random, text and mixed data. Seeded:
 * BF_SEED=<n> replays a failure, BF_MODEL_SEQS=<n> runs more sequences per
 * case. Then: the write generation's wrap, the memory a cursor costs
 * (through the allocator hooks), the failure contract of a cursor read
 * (I/O faults, a corrupt extent, no memory for its buffer), and cursors
 * outliving their file or left open at bf_space_destroy.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buffile.h"
#include "cursor.h"
#include "space.h"
#include "support.h"

T_PARENT_FIXTURE("cursor")

/* ---- the model ------------------------------------------------------------------------------ */

typedef t_model model; /* tests/support.h */

#define NCUR 6

typedef struct run {
    uint64_t seed;
    bf_codec codec;
    uint32_t bs;
    t_data kind;
    int step;
    const char *op;
} run;

#define CHECK(r, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char _m[512];                                                                          \
            snprintf(_m, sizeof(_m), __VA_ARGS__);                                                 \
            fail_msg("cursor model mismatch: %s | seed=%llu codec=%d bs=%u data=%s step=%d op=%s " \
                     "(replay with BF_SEED=%llu)",                                                 \
                     _m, (unsigned long long)(r)->seed, (int)(r)->codec, (r)->bs,                  \
                     t_data_names[(r)->kind], (r)->step, (r)->op, (unsigned long long)(r)->seed);  \
        }                                                                                          \
    } while (0)

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v ? strtoull(v, NULL, 10) : dflt;
}

/* A cursor read of `len` at its position, checked against the model. */
static void cursor_read_check(run *r, bf_cursor *c, const model *m, size_t len, unsigned char *got)
{
    uint64_t pos = bf_cursor_tell(c);
    int64_t n = bf_cursor_read(c, got, len);
    uint64_t want = pos >= m->size ? 0 : (m->size - pos < len ? m->size - pos : len);
    CHECK(r, n == (int64_t)want, "cursor read of %zu at %llu returned %lld, want %llu", len,
          (unsigned long long)pos, (long long)n, (unsigned long long)want);
    if (want > 0 && memcmp(got, m->d + pos, want) != 0) {
        uint64_t i = 0;
        while (got[i] == m->d[pos + i])
            i++;
        CHECK(r, 0, "cursor read of %llu bytes at %llu differs at byte %llu (block %llu)",
              (unsigned long long)want, (unsigned long long)pos, (unsigned long long)(pos + i),
              (unsigned long long)((pos + i) / r->bs));
    }
    CHECK(r, bf_cursor_tell(c) == pos + want, "cursor position %llu after a read, want %llu",
          (unsigned long long)bf_cursor_tell(c), (unsigned long long)(pos + want));
}

static void one_sequence(run *r, bf_space *sp, int steps)
{
    t_rng g = {r->seed};
    bf_file_options fo;
    bf_file_options_init(&fo);
    fo.codec = r->codec;
    fo.block_size = r->bs;
    bf_file *f;
    assert_int_equal(bf_file_create(sp, &fo, &f), BF_OK);
    uint32_t bs = r->bs;
    size_t maxlen = 3 * (size_t)bs + 17;
    unsigned char *data = malloc(maxlen), *got = malloc(maxlen);
    model m = {0};
    /* A start: several runs of rows, as a sort's runs in one file. */
    uint64_t init = t_below(&g, 12 * (uint64_t)bs) + 1;
    unsigned char *start = malloc(init);
    t_fill(&g, r->kind, start, init);
    assert_int_equal(bf_file_write(f, start, init), BF_OK);
    t_model_write(&m, 0, start, init);
    free(start);
    bf_cursor *cur[NCUR];
    for (int i = 0; i < NCUR; i++) {
        assert_int_equal(bf_cursor_open(f, &cur[i]), BF_OK);
        assert_int_equal(bf_cursor_seek(cur[i], (int64_t)t_below(&g, m.size + 1), BF_SEEK_SET),
                         BF_OK);
    }
    for (r->step = 0; r->step < steps; r->step++) {
        bf_cursor *c = cur[t_below(&g, NCUR)];
        uint64_t op = t_below(&g, 100);
        if (op < 45) { /* cursor reads: mostly rows, sometimes blocks */
            r->op = "cursor read";
            size_t len = t_below(&g, 4) == 0 ? t_below(&g, maxlen + 1) : 1 + t_below(&g, 200);
            cursor_read_check(r, c, &m, len, got);
        } else if (op < 52) { /* cursors taking turns, a row each */
            r->op = "merge";
            for (int k = 0; k < 3 * NCUR; k++)
                cursor_read_check(r, cur[k % NCUR], &m, 100, got);
        } else if (op < 58) {
            r->op = "cursor seek";
            uint64_t to = t_below(&g, m.size + bs + 1);
            int w = (int)t_below(&g, 3);
            int64_t off = w == BF_SEEK_SET   ? (int64_t)to
                          : w == BF_SEEK_CUR ? (int64_t)to - (int64_t)bf_cursor_tell(c)
                                             : (int64_t)to - (int64_t)m.size;
            CHECK(r, bf_cursor_seek(c, off, w) == BF_OK, "seek to %llu", (unsigned long long)to);
            CHECK(r, bf_cursor_tell(c) == to, "tell %llu after seek to %llu",
                  (unsigned long long)bf_cursor_tell(c), (unsigned long long)to);
        } else if (op < 76) { /* the file writes: small, over blocks, past the end */
            r->op = "file write";
            uint64_t at = t_below(&g, m.size + bs / 2 + 1);
            size_t len = t_below(&g, 3) == 0 ? 1 + t_below(&g, maxlen) : 1 + t_below(&g, 300);
            t_fill(&g, r->kind, data, len);
            assert_int_equal(bf_file_seek(f, (int64_t)at, BF_SEEK_SET), BF_OK);
            CHECK(r, bf_file_write(f, data, len) == BF_OK, "%s", bf_space_errmsg(sp));
            t_model_resize(&m, m.size > at ? m.size : at); /* a hole reads as zeros */
            t_model_write(&m, at, data, len);
        } else if (op < 81) {
            r->op = "file read";
            uint64_t at = t_below(&g, m.size + 1);
            size_t len = 1 + t_below(&g, 300);
            assert_int_equal(bf_file_seek(f, (int64_t)at, BF_SEEK_SET), BF_OK);
            int64_t n = bf_file_read(f, got, len);
            uint64_t want = m.size - at < len ? m.size - at : len;
            CHECK(r, n == (int64_t)want && memcmp(got, m.d + at, want) == 0, "file read at %llu",
                  (unsigned long long)at);
        } else if (op < 86) {
            r->op = "truncate";
            uint64_t to = t_below(&g, m.size + bs + 1);
            CHECK(r, bf_file_truncate(f, to) == BF_OK, "%s", bf_space_errmsg(sp));
            t_model_resize(&m, to);
        } else if (op < 91) {
            r->op = "write block";
            uint64_t blk = t_below(&g, m.size / bs + 2);
            t_fill(&g, r->kind, data, bs);
            CHECK(r, bf_file_write_block(f, blk, data) == BF_OK, "%s", bf_space_errmsg(sp));
            t_model_resize(&m, m.size > (blk + 1) * bs ? m.size : (blk + 1) * bs);
            t_model_write(&m, blk * bs, data, bs);
        } else if (op < 95) {
            r->op = "discard block";
            uint64_t blk = t_below(&g, m.size / bs + 1);
            CHECK(r, bf_file_discard_block(f, blk) == BF_OK, "%s", bf_space_errmsg(sp));
            if (blk * bs < m.size) {
                uint64_t end = (blk + 1) * bs < m.size ? (blk + 1) * bs : m.size;
                memset(m.d + blk * bs, 0, end - blk * bs);
            }
        } else if (op < 98) {
            r->op = "flush";
            CHECK(r, bf_file_flush(f) == BF_OK, "%s", bf_space_errmsg(sp));
        } else {
            r->op = "reopen cursor";
            int i = (int)t_below(&g, NCUR);
            bf_cursor_close(cur[i]);
            assert_int_equal(bf_cursor_open(f, &cur[i]), BF_OK);
        }
        CHECK(r, bf_file_size(f) == m.size, "size %llu, model %llu",
              (unsigned long long)bf_file_size(f), (unsigned long long)m.size);
    }
    /* Every cursor reads the whole file in the end, taking turns. */
    r->op = "final";
    for (int i = 0; i < NCUR; i++)
        assert_int_equal(bf_cursor_seek(cur[i], 0, BF_SEEK_SET), BF_OK);
    for (uint64_t at = 0; at < m.size; at += 100)
        for (int i = 0; i < NCUR; i++)
            cursor_read_check(r, cur[i], &m, 100, got);
    for (int i = 0; i < NCUR; i++)
        bf_cursor_close(cur[i]);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(m.d);
    free(data);
    free(got);
}

static void model_case(bf_codec codec, uint32_t bs)
{
    uint64_t seqs = env_u64("BF_MODEL_SEQS", 2);
    uint64_t seed0 = env_u64("BF_SEED", 0);
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = bs;
    bf_space *sp = t_space_opts(&o);
    for (int kind = 0; kind < 3; kind++)
        for (uint64_t s = 0; s < seqs; s++) {
            run r = {0};
            r.seed = seed0 != 0 ? seed0
                                : 1000003ull * (uint64_t)codec + 7919ull * bs + 31ull * s +
                                      (uint64_t)kind + 1;
            r.codec = codec;
            r.bs = bs;
            r.kind = (t_data)kind;
            one_sequence(&r, sp, bs > 8192 ? 250 : 500);
            if (seed0 != 0)
                break;
        }
    bf_space_destroy(sp);
}

static void test_model(void **state)
{
    (void)state;
    const bf_codec codecs[] = {BF_CODEC_NONE, BF_CODEC_LZ4, BF_CODEC_ZSTD, BF_CODEC_ZLIB,
                               BF_CODEC_AUTO};
    const uint32_t sizes[] = {4096, 8192, 65536};
    for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
        if (!bf_codec_available(codecs[c]))
            continue;
        for (size_t b = 0; b < 3; b++)
            model_case(codecs[c], sizes[b]);
    }
}

/* ---- the write generation ------------------------------------------------------------------- */

/*
 * A cursor trusts its block while the file's 16-bit write generation and
 * the space's epoch are those it loaded under: 65,536 writes bring the
 * generation back to the same value, and the epoch must then tell.
 */
static void test_generation_wrap(void **state)
{
    (void)state;
    bf_space *sp = t_space(parent, BF_CODEC_LZ4, 8192, NULL);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char a[100], got[100];
    memset(a, 'a', sizeof(a));
    assert_int_equal(bf_file_write(f, a, sizeof(a)), BF_OK);
    bf_cursor *c;
    assert_int_equal(bf_cursor_open(f, &c), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 10), 10);
    assert_memory_equal(got, a, 10);
    for (int i = 0; i < 65536; i++) {
        assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
        unsigned char b = (unsigned char)('b' + (i == 65535));
        assert_int_equal(bf_file_write(f, &b, 1), BF_OK);
    }
    assert_int_equal(bf_cursor_seek(c, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 2), 2);
    assert_int_equal(got[0], 'c');
    assert_int_equal(got[1], 'a');
    bf_cursor_close(c);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
}

/* ---- memory --------------------------------------------------------------------------------- */

/*
 * What buffile.h says a cursor costs: its handle, and one block of the
 * file's size from its first read (a read of whole aligned blocks goes
 * straight to the caller and needs none); all of it through the space's
 * allocator, counted in memory_bytes, and given back at close.
 */
static void test_memory(void **state)
{
    (void)state;
    const uint32_t sizes[] = {4096, 8192, 65536};
    for (size_t b = 0; b < 3; b++) {
        uint32_t bs = sizes[b];
        t_counting cnt;
        t_counting_init(&cnt);
        bf_space *sp = t_space(parent, BF_CODEC_ZSTD, bs, &cnt.hooks);
        bf_file *f;
        assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
        enum { RUNS = 64 };
        size_t len = (size_t)RUNS * bs;
        unsigned char *data = malloc(len), *got = malloc(bs);
        t_rng g = {bs};
        t_fill(&g, T_DATA_TEXT, data, len);
        assert_int_equal(bf_file_write(f, data, len), BF_OK);
        assert_int_equal(bf_file_flush(f), BF_OK);
        /* Every codec context exists now: what follows is the cursors' alone. */
        bf_cursor *c0;
        assert_int_equal(bf_cursor_open(f, &c0), BF_OK);
        assert_int_equal(bf_cursor_read(c0, got, 1), 1);
        bf_cursor_close(c0);
        bf_stats st0;
        bf_space_stats(sp, &st0);
        int64_t before = cnt.live_bytes;
        bf_cursor *cur[RUNS];
        for (int i = 0; i < RUNS; i++) {
            assert_int_equal(bf_cursor_open(f, &cur[i]), BF_OK);
            assert_int_equal(bf_cursor_memory(cur[i]), sizeof(struct bf_cursor));
        }
        assert_int_equal(cnt.live_bytes - before, RUNS * (int64_t)sizeof(struct bf_cursor));
        /* Whole aligned blocks go to the caller: no buffer yet. */
        assert_int_equal(bf_cursor_read(cur[0], got, bs), (int64_t)bs);
        assert_memory_equal(got, data, bs);
        assert_int_equal(bf_cursor_memory(cur[0]), sizeof(struct bf_cursor));
        for (int i = 0; i < RUNS; i++) {
            assert_int_equal(bf_cursor_seek(cur[i], (int64_t)i * bs, BF_SEEK_SET), BF_OK);
            assert_int_equal(bf_cursor_read(cur[i], got, 100), 100);
            assert_memory_equal(got, data + (size_t)i * bs, 100);
        }
        int64_t per = (int64_t)sizeof(struct bf_cursor) + bs;
        assert_int_equal(cnt.live_bytes - before, RUNS * per);
        assert_int_equal(bf_cursor_memory(cur[5]), (uint64_t)per);
        bf_stats st;
        bf_space_stats(sp, &st);
        assert_int_equal(st.memory_bytes - st0.memory_bytes, (uint64_t)(RUNS * per));
        printf("%d cursors, %u-byte blocks: %lld bytes each (%lld in all)\n", RUNS, bs,
               (long long)per, (long long)(RUNS * per));
        assert_true(sizeof(struct bf_cursor) < 80); /* what buffile.h says */
        for (int i = 0; i < RUNS; i++)
            bf_cursor_close(cur[i]);
        assert_int_equal(cnt.live_bytes, before);
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_space_destroy(sp);
        assert_int_equal(cnt.live_bytes, 0);
        free(data);
        free(got);
    }
}

/* ---- failures ------------------------------------------------------------------------------- */

#define FBS 4096

/*
 * A cursor read that fails (pread, a damaged extent, no memory for its
 * buffer) returns the status and leaves the cursor's position, the file's
 * position, size and bytes as they were; the next read succeeds.
 */
static void test_read_faults(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = BF_CODEC_LZ4;
    o.block_size = FBS;
    o.allocator = &cnt.hooks;
    bf_space *sp = t_space_opts(&o);
    t_faults flt;
    memset(&flt, 0, sizeof(flt));
    bf_io io = t_fault_io(&flt);
    bf_space_set_io(sp, &io);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    enum { N = 8 * FBS + 300 };
    static unsigned char data[N], got[3 * FBS];
    t_rng g = {77};
    t_fill(&g, T_DATA_TEXT, data, N);
    assert_int_equal(bf_file_write(f, data, N), BF_OK);
    assert_int_equal(bf_file_seek(f, 123, BF_SEEK_SET), BF_OK);
    bf_cursor *c;
    assert_int_equal(bf_cursor_open(f, &c), BF_OK);

    /* No memory for the cursor's buffer at its first partial read. */
    assert_int_equal(bf_cursor_seek(c, FBS + 10, BF_SEEK_SET), BF_OK);
    cnt.fail_at = 1;
    assert_int_equal(bf_cursor_read(c, got, 100), BF_ENOMEM);
    cnt.fail_at = 0;
    assert_int_equal(bf_cursor_tell(c), FBS + 10);
    assert_int_equal(bf_cursor_read(c, got, 100), 100);
    assert_memory_equal(got, data + FBS + 10, 100);

    /* pread fails at the next block: partial read, whole blocks, a read over both. */
    const struct {
        uint64_t at;
        size_t len;
    } cases[] = {{2 * FBS + 5, 100}, {3 * FBS, FBS}, {4 * FBS - 50, 2 * FBS + 100}};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(bf_cursor_seek(c, (int64_t)cases[i].at, BF_SEEK_SET), BF_OK);
        flt.reads = 0;
        flt.fail_read_at = 1;
        flt.fail_errno = EIO;
        assert_int_equal(bf_cursor_read(c, got, cases[i].len), BF_EIO);
        assert_non_null(strstr(bf_space_errmsg(sp), "read"));
        flt.fail_read_at = 0;
        assert_int_equal(bf_cursor_tell(c), cases[i].at);
        assert_int_equal(bf_file_tell(f), 123);
        assert_int_equal(bf_file_size(f), N);
        assert_int_equal(bf_cursor_read(c, got, cases[i].len), (int64_t)cases[i].len);
        assert_memory_equal(got, data + cases[i].at, cases[i].len);
    }
    /* A failure after the cursor held a block: the block it held is not served as another. */
    assert_int_equal(bf_cursor_seek(c, 10, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 10), 10);
    assert_int_equal(bf_cursor_seek(c, 5 * FBS + 10, BF_SEEK_SET), BF_OK);
    flt.reads = 0;
    flt.fail_read_at = 1;
    assert_int_equal(bf_cursor_read(c, got, 10), BF_EIO);
    flt.fail_read_at = 0;
    assert_int_equal(bf_cursor_seek(c, 20, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 10), 10);
    assert_memory_equal(got, data + 20, 10);

    /* A damaged extent: BF_ECORRUPT, nothing moves, the undamaged blocks still read. */
    assert_int_equal(bf_file_flush(f), BF_OK);
    char path[512];
    bf_file_path(f, path, sizeof(path));
    const bf_map_entry *e = bf_map_get(&f->map, 6);
    uint64_t off = bf_map_off(e) + bf_map_len(e) / 2;
    unsigned char byte;
    assert_int_equal(t_phys_read(path, BF_SEGMENT_SIZE_DEFAULT, off, &byte, 1), 0);
    byte ^= 0x5a;
    assert_int_equal(t_phys_write(path, BF_SEGMENT_SIZE_DEFAULT, off, &byte, 1), 0);
    assert_int_equal(bf_cursor_seek(c, 6 * FBS + 1, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 50), BF_ECORRUPT);
    assert_int_equal(bf_cursor_tell(c), 6 * FBS + 1);
    assert_int_equal(bf_cursor_seek(c, 7 * FBS + 1, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 50), 50);
    assert_memory_equal(got, data + 7 * FBS + 1, 50);
    /* A cursor read never writes: the file's dirty buffer is read, not flushed. */
    assert_int_equal(bf_file_seek(f, 8 * FBS + 10, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, "XYZ", 3), BF_OK);
    flt.writes = 0;
    flt.fail_write_at = 1;
    flt.fail_errno = ENOSPC;
    assert_int_equal(bf_cursor_seek(c, 8 * FBS + 9, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 5), 5);
    assert_int_equal(got[0], data[8 * FBS + 9]);
    assert_memory_equal(got + 1, "XYZ", 3);
    assert_int_equal(flt.writes, 0);
    flt.fail_write_at = 0;
    bf_cursor_close(c);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
}

/* ---- lifetime ------------------------------------------------------------------------------- */

static void test_lifetime(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = t_space(parent, BF_CODEC_ZSTD, 8192, &cnt.hooks);
    bf_file *f, *g;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_create(sp, NULL, &g), BF_OK);
    assert_int_equal(bf_file_write(f, "hello, cursor", 13), BF_OK);
    assert_int_equal(bf_file_write(g, "other", 5), BF_OK);
    bf_cursor *c, *d, *left;
    assert_int_equal(bf_cursor_open(f, &c), BF_OK);
    assert_int_equal(bf_cursor_open(g, &d), BF_OK);
    assert_int_equal(bf_cursor_open(g, &left), BF_OK);
    char got[16];
    assert_int_equal(bf_cursor_read(c, got, 5), 5);
    assert_memory_equal(got, "hello", 5);
    assert_int_equal(bf_cursor_read(left, got, 2), 2);
    /* The file goes first: its cursor's calls fail, and it still closes. */
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 5), BF_EINVAL);
    assert_non_null(strstr(bf_space_errmsg(sp), "closed"));
    assert_int_equal(bf_cursor_seek(c, 0, BF_SEEK_SET), BF_EINVAL);
    bf_cursor_close(c);
    /* The other file's cursors did not notice. */
    assert_int_equal(bf_cursor_read(d, got, 5), 5);
    assert_memory_equal(got, "other", 5);
    bf_cursor_close(d);
    bf_cursor_close(NULL);
    /* Bad whence, negative offsets. */
    assert_int_equal(bf_cursor_seek(left, 0, 7), BF_EINVAL);
    assert_int_equal(bf_cursor_seek(left, -10, BF_SEEK_SET), BF_EINVAL);
    assert_int_equal(bf_cursor_tell(left), 2);
    /* `left` and `g` stay open: bf_space_destroy frees them. */
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
}

/* ---- named, appended, sealed --------------------------------------------------------------- */

/*
 * Cursors on named files: a sealed one whose cursor holds its last, partial
 * block while another file is appended to it (bf_file_append adds blocks
 * past the end only: the cursor reads on into the zeros and the appended
 * bytes), and a read-only handle of another space reading the result.
 */
static void test_named(void **state)
{
    (void)state;
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = BF_CODEC_ZSTD;
    o.block_size = 4096;
    o.encrypt = 1;
    static const unsigned char key[BF_KEY_BYTES] = {1, 2, 3};
    o.key = key;
    bf_space *sp = t_space_opts(&o), *other = t_space_opts(&o);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    enum { A = 3 * 4096 + 1000, B = 2 * 4096 + 77 };
    static unsigned char a[A], b[B], got[A + B + 8192];
    t_rng g = {3};
    t_fill(&g, T_DATA_TEXT, a, A);
    t_fill(&g, T_DATA_MIXED, b, B);
    bf_file *tf, *sf;
    assert_int_equal(bf_file_create_named(sp, set, "target", NULL, &tf), BF_OK);
    assert_int_equal(bf_file_create_named(sp, set, "source", NULL, &sf), BF_OK);
    assert_int_equal(bf_file_write(tf, a, A), BF_OK);
    assert_int_equal(bf_file_write(sf, b, B), BF_OK);
    assert_int_equal(bf_file_export(sf), BF_OK);
    bf_cursor *c;
    assert_int_equal(bf_cursor_open(tf, &c), BF_OK);
    assert_int_equal(bf_cursor_seek(c, 3 * 4096 + 10, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_cursor_read(c, got, 100), 100);
    assert_memory_equal(got, a + 3 * 4096 + 10, 100);
    uint64_t start;
    assert_int_equal(bf_file_append(tf, sf, &start), BF_OK);
    assert_int_equal(start, 4 * 4096);
    uint64_t from = 3 * 4096 + 110, n = start + B - from;
    assert_int_equal(bf_cursor_read(c, got, n + 50), (int64_t)n);
    assert_memory_equal(got, a + from, A - from);
    for (uint64_t i = A - from; i < start - from; i++)
        assert_int_equal(got[i], 0);
    assert_memory_equal(got + (start - from), b, B);
    bf_cursor_close(c);
    assert_int_equal(bf_file_close(sf), BF_OK);
    assert_int_equal(bf_file_close(tf), BF_OK);
    /* Another space's read-only handle, two cursors taking turns over its two parts. */
    bf_file *rf;
    assert_int_equal(bf_file_open_named(other, set, "target", BF_OPEN_READONLY, &rf), BF_OK);
    bf_cursor *x, *y;
    assert_int_equal(bf_cursor_open(rf, &x), BF_OK);
    assert_int_equal(bf_cursor_open(rf, &y), BF_OK);
    assert_int_equal(bf_cursor_seek(y, (int64_t)start, BF_SEEK_SET), BF_OK);
    for (uint64_t i = 0; i * 100 < B; i++) {
        size_t k = B - i * 100 < 100 ? B - i * 100 : 100;
        assert_int_equal(bf_cursor_read(x, got, k), (int64_t)k);
        assert_memory_equal(got, a + i * 100, k);
        assert_int_equal(bf_cursor_read(y, got, k), (int64_t)k);
        assert_memory_equal(got, b + i * 100, k);
    }
    bf_cursor_close(x);
    bf_cursor_close(y);
    assert_int_equal(bf_file_close(rf), BF_OK);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(other);
    bf_space_destroy(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),    cmocka_unit_test(test_generation_wrap),
        cmocka_unit_test(test_memory),   cmocka_unit_test(test_read_faults),
        cmocka_unit_test(test_lifetime), cmocka_unit_test(test_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
