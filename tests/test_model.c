/*
 * test_model.c - model-based random test of the file layer.
 *
 * Random sequences of write/read/seek/truncate/flush, write and read
 * windows (filled or read in place, then advanced, abandoned or advanced
 * too far) and whole-block write/read/discard run against a buffile file and an in-memory byte
 * array at once; after every step position, size and every byte read
 * must agree. Every codec x block sizes 4, 8 and 64 KiB x random, text
 * and mixed data; half the sequences use the smallest segment size so
 * extents cross segment files. With codec=auto every step also tells the
 * policy which candidate to choose (or to choose freely), so that files
 * mix extents of every codec; the case fails unless they did. The cases
 * take a caller's codec too ("rle", tests/support.c, which asks for more
 * room than a block), and every other sequence seals its extents
 * (encrypt), so that every codec and size runs sealed and not. Seeded:
 * BF_SEED=<n> replays a failure, BF_MODEL_SEQS=<n> runs more sequences per
 * case, BF_TEST=<glob> runs the cases it matches (scripts/run-tests.sh
 * --deep: 1,000 sequences of the 4 and 8 KiB cases).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buffile.h"
#include "space.h"
#include "support.h"

typedef t_model model; /* tests/support.h */

typedef struct run {
    uint64_t seed;
    int encrypt;
    bf_codec codec;
    uint32_t bs;
    t_data kind;
    int step;
    const char *op;
    uint64_t by_codec[5]; /* extents written per codec (rle last) over the case's sequences */
    uint64_t sealed;      /* extents written sealed */
} run;

#define CHECK(r, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char _m[512];                                                                          \
            snprintf(_m, sizeof(_m), __VA_ARGS__);                                                 \
            fail_msg("model mismatch: %s | seed=%llu codec=%d bs=%u data=%s encrypt=%d step=%d "   \
                     "op=%s (replay with BF_SEED=%llu)",                                           \
                     _m, (unsigned long long)(r)->seed, (int)(r)->codec, (r)->bs,                  \
                     t_data_names[(r)->kind], (r)->encrypt, (r)->step, (r)->op,                    \
                     (unsigned long long)(r)->seed);                                               \
        }                                                                                          \
    } while (0)

#define OK(r, call, f)                                                                             \
    do {                                                                                           \
        int _rc = (call);                                                                          \
        CHECK(r, _rc == BF_OK, "%s -> %d (%s)", #call, _rc, bf_space_errmsg(bf_file_space(f)));    \
    } while (0)

/* Lengths spread over orders of magnitude: mostly small, sometimes several blocks. */
static size_t random_len(t_rng *rng, uint32_t bs)
{
    unsigned bits = 0;
    while ((1u << bits) < 3 * bs)
        bits++;
    size_t len = (size_t)t_below(rng, (uint64_t)1 << t_below(rng, bits + 1));
    return len < 3 * (size_t)bs ? len : 3 * (size_t)bs;
}

/*
 * A write window (buffile.h): offered only at the end of the data, within
 * the buffered block. Pieces go in, then bytes past them are scribbled on
 * (a window not advanced is no write: the model never sees them), then one
 * advance; or the window is abandoned, or advanced too far (BF_EINVAL,
 * nothing changes). Later reads, seeks past the end and the final read
 * check that the scribbles never show.
 */
static void write_window_step(run *r, t_rng *rng, bf_file *f, model *m, unsigned char *data)
{
    r->op = "write_window";
    void *w;
    size_t room = bf_file_write_window(f, &w);
    CHECK(r, room <= r->bs - m->pos % r->bs, "window of %zu bytes at %llu", room,
          (unsigned long long)m->pos);
    CHECK(r, room == 0 || m->pos == m->size, "write window at %llu below the size %llu",
          (unsigned long long)m->pos, (unsigned long long)m->size);
    if (room == 0) {
        CHECK(r, w == NULL, "no window but a pointer");
        CHECK(r, bf_file_write_advance(f, 1) == BF_EINVAL, "advance without a window");
        return;
    }
    size_t used = 0;
    while (used < room && t_below(rng, 4) != 0) { /* small pieces, as a hash join's */
        size_t n = 1 + (size_t)t_below(rng, 64);
        if (n > room - used)
            n = room - used;
        t_fill(rng, r->kind, data + used, n);
        memcpy((unsigned char *)w + used, data + used, n);
        used += n;
    }
    memset((unsigned char *)w + used, 0xA5, room - used);
    uint64_t how = t_below(rng, 8);
    if (how == 0)
        return; /* abandoned: nothing was written */
    if (how == 1) {
        r->op = "write_advance beyond";
        CHECK(r, bf_file_write_advance(f, room + 1) == BF_EINVAL, "advance past the window");
        return;
    }
    r->op = "write_advance";
    OK(r, bf_file_write_advance(f, used), f);
    t_model_reserve(m, m->pos + used);
    memcpy(m->d + m->pos, data, used);
    m->pos += used;
    if (m->pos > m->size)
        m->size = m->pos;
}

/* A read window: its bytes are the model's at the position; one advance (or too far). */
static void read_window_step(run *r, t_rng *rng, bf_file *f, model *m)
{
    r->op = "read_window";
    const void *w;
    size_t room = bf_file_read_window(f, &w);
    uint64_t left = m->pos < m->size ? m->size - m->pos : 0;
    CHECK(r, room <= left && room <= r->bs - m->pos % r->bs,
          "read window of %zu bytes at %llu, size %llu", room, (unsigned long long)m->pos,
          (unsigned long long)m->size);
    if (room == 0) {
        CHECK(r, bf_file_read_advance(f, 1) == BF_EINVAL, "advance without a window");
        return;
    }
    CHECK(r, memcmp(w, m->d + m->pos, room) == 0, "read window at %llu: bytes differ",
          (unsigned long long)m->pos);
    if (t_below(rng, 8) == 0) {
        r->op = "read_advance beyond";
        CHECK(r, bf_file_read_advance(f, room + 1) == BF_EINVAL, "advance past the window");
        return;
    }
    size_t used = (size_t)t_below(rng, room + 1);
    r->op = "read_advance";
    OK(r, bf_file_read_advance(f, used), f);
    m->pos += used;
}

static void run_sequence(run *r, const char *parent, int steps)
{
    t_rng rng = {r->seed};
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = r->codec;
    o.block_size = r->bs;
    bf_user_codec rle = t_rle_codec(NULL, 1);
    o.user_codecs = &rle;
    o.n_user_codecs = 1;
    o.encrypt = r->encrypt;
    if (t_below(&rng, 2))
        o.segment_size = ((2 * ((uint64_t)r->bs + 4096) + 4095) / 4096) * 4096;
    bf_space *sp;
    char err[256];
    assert_int_equal(bf_space_create(&o, &sp, err, sizeof(err)), BF_OK);
    t_workers_apply(sp);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);

    const uint64_t max_size = 40ull * r->bs;
    model m = {0};
    size_t bufcap = 3 * (size_t)r->bs + 1;
    unsigned char *data = malloc(bufcap), *got = malloc(bufcap);
    assert_non_null(data);
    assert_non_null(got);

    for (r->step = 0; r->step < steps; r->step++) {
        if (r->codec == BF_CODEC_AUTO)
            sp->autoc->force = (int)t_below(&rng, (uint64_t)sp->autoc->ncand + 1) - 1;
        uint64_t op = t_below(&rng, 100);
        if (op < 30 && t_below(&rng, 4) == 0) {
            write_window_step(r, &rng, f, &m, data);
        } else if (op >= 30 && op < 55 && t_below(&rng, 4) == 0) {
            read_window_step(r, &rng, f, &m);
        } else if (op < 30) {
            r->op = "write";
            size_t len = random_len(&rng, r->bs);
            if (m.pos + len > max_size) {
                m.pos = t_below(&rng, max_size / 2);
                OK(r, bf_file_seek(f, (int64_t)m.pos, BF_SEEK_SET), f);
            }
            t_fill(&rng, r->kind, data, len);
            OK(r, bf_file_write(f, data, len), f);
            t_model_reserve(&m, m.pos + len);
            memcpy(m.d + m.pos, data, len);
            m.pos += len;
            if (len > 0 && m.pos > m.size)
                m.size = m.pos;
        } else if (op < 55) {
            r->op = "read";
            size_t len = random_len(&rng, r->bs);
            int64_t n = bf_file_read(f, got, len);
            uint64_t expect = m.pos >= m.size ? 0 : (m.size - m.pos < len ? m.size - m.pos : len);
            CHECK(r, n == (int64_t)expect, "read %zu at %llu returned %lld, expected %llu (%s)",
                  len, (unsigned long long)m.pos, (long long)n, (unsigned long long)expect,
                  bf_space_errmsg(sp));
            CHECK(r, n <= 0 || memcmp(got, m.d + m.pos, (size_t)n) == 0,
                  "read %zu at %llu: bytes differ", len, (unsigned long long)m.pos);
            m.pos += expect;
        } else if (op < 72) {
            r->op = "seek";
            int whence = (int)t_below(&rng, 3);
            uint64_t target = t_below(&rng, m.size + 2ull * r->bs + 1);
            if (target > max_size)
                target = max_size;
            int64_t base = whence == BF_SEEK_SET   ? 0
                           : whence == BF_SEEK_CUR ? (int64_t)m.pos
                                                   : (int64_t)m.size;
            OK(r, bf_file_seek(f, (int64_t)target - base, whence), f);
            m.pos = target;
        } else if (op < 77) {
            r->op = "truncate";
            uint64_t size = t_below(&rng, m.size + r->bs + 1);
            if (size > max_size)
                size = max_size;
            OK(r, bf_file_truncate(f, size), f);
            t_model_resize(&m, size);
        } else if (op < 80) {
            r->op = "flush";
            OK(r, bf_file_flush(f), f);
        } else if (op < 88) {
            r->op = "write_block";
            uint64_t b = t_below(&rng, max_size / r->bs);
            t_fill(&rng, r->kind, data, r->bs);
            OK(r, bf_file_write_block(f, b, data), f);
            t_model_reserve(&m, (b + 1) * r->bs);
            memcpy(m.d + b * r->bs, data, r->bs);
            if ((b + 1) * r->bs > m.size)
                m.size = (b + 1) * r->bs;
        } else if (op < 96) {
            r->op = "read_block";
            uint64_t b = t_below(&rng, max_size / r->bs + 2);
            OK(r, bf_file_read_block(f, b, got), f);
            t_model_reserve(&m, (b + 1) * r->bs);
            CHECK(r, memcmp(got, m.d + b * r->bs, r->bs) == 0, "block %llu differs",
                  (unsigned long long)b);
        } else {
            r->op = "discard_block";
            uint64_t b = t_below(&rng, max_size / r->bs);
            OK(r, bf_file_discard_block(f, b), f);
            if (b * r->bs < m.size) {
                uint64_t end = (b + 1) * r->bs < m.size ? (b + 1) * r->bs : m.size;
                memset(m.d + b * r->bs, 0, end - b * r->bs);
            }
        }
        CHECK(r, bf_file_tell(f) == m.pos, "tell %llu != %llu", (unsigned long long)bf_file_tell(f),
              (unsigned long long)m.pos);
        CHECK(r, bf_file_size(f) == m.size, "size %llu != %llu",
              (unsigned long long)bf_file_size(f), (unsigned long long)m.size);
    }

    /* Whole-file read back, then statistics that must hold. */
    r->op = "final read";
    OK(r, bf_file_seek(f, 0, BF_SEEK_SET), f);
    unsigned char *all = malloc(m.size + 1);
    assert_non_null(all);
    CHECK(r, bf_file_read(f, all, m.size + 1) == (int64_t)m.size, "short final read");
    CHECK(r, m.size == 0 || memcmp(all, m.d, m.size) == 0, "final contents differ");
    free(all);
    OK(r, bf_file_flush(f), f);
    bf_stats fs, ss;
    bf_file_stats(f, &fs);
    bf_space_stats(sp, &ss);
    CHECK(r, fs.logical_bytes == m.size, "stats logical %llu",
          (unsigned long long)fs.logical_bytes);
    CHECK(r, fs.dead_bytes <= fs.physical_bytes, "dead > physical");
    CHECK(r, ss.physical_bytes == fs.physical_bytes && ss.logical_bytes == fs.logical_bytes,
          "space totals differ from the only file");
    CHECK(r, fs.physical_peak >= fs.physical_bytes, "peak below current");
    if (r->codec == BF_CODEC_NONE)
        CHECK(r, fs.blocks_compressed == 0, "codec none compressed a block");
    for (int c = 0; c < 4; c++)
        r->by_codec[c] += ss.blocks_by_codec[c];
    r->by_codec[4] += ss.blocks_user_codec;
    r->sealed += ss.blocks_sealed;
    CHECK(r,
          r->encrypt ? ss.blocks_sealed == ss.blocks_compressed + ss.blocks_raw
                     : ss.blocks_sealed == 0,
          "%llu of %llu extents sealed", (unsigned long long)ss.blocks_sealed,
          (unsigned long long)(ss.blocks_compressed + ss.blocks_raw));
    OK(r, bf_file_close(f), f);
    CHECK(r, t_dir_entries(bf_space_dir(sp)) == 0, "segment files left after close");
    bf_space_destroy(sp);
    free(m.d);
    free(data);
    free(got);
}

typedef struct model_case {
    bf_codec codec;
    uint32_t bs;
} model_case;

static void test_model(void **state)
{
    const model_case *c = *state;
    if (!bf_codec_available(c->codec) && c->codec != T_RLE_ID)
        fail_msg("codec %s not built: the model test covers every codec", bf_codec_name(c->codec));
    char parent[512];
    char tag[64];
    snprintf(tag, sizeof(tag), "model-%d-%u", (int)c->codec, c->bs);
    t_temp_parent(parent, sizeof(parent), tag);
    const char *env_seed = getenv("BF_SEED");
    const char *env_seqs = getenv("BF_MODEL_SEQS");
    int seqs = env_seqs ? atoi(env_seqs) : 12;
    uint64_t base =
        env_seed ? strtoull(env_seed, NULL, 10) : 1000003ull * (uint64_t)c->codec + c->bs;
    uint64_t by_codec[5] = {0}, sealed = 0;
    for (int kind = 0; kind < 3; kind++) {
        for (int i = 0; i < (env_seed ? 1 : seqs); i++) {
            run r = {base + (uint64_t)kind * 7919 + (uint64_t)i * 104729,
                     0,
                     c->codec,
                     c->bs,
                     (t_data)kind,
                     0,
                     "",
                     {0},
                     0};
            if (env_seed)
                r.seed = base;
            r.encrypt = (int)(r.seed % 2);
            run_sequence(&r, parent, 300);
            for (int k = 0; k < 5; k++)
                by_codec[k] += r.by_codec[k];
            sealed += r.sealed;
        }
    }
    if (c->codec == BF_CODEC_AUTO && !env_seed &&
        (by_codec[0] == 0 || by_codec[1] == 0 || by_codec[2] == 0 || by_codec[4] == 0))
        fail_msg("auto files did not mix codecs: none %llu, lz4 %llu, zstd %llu, rle %llu extents",
                 (unsigned long long)by_codec[0], (unsigned long long)by_codec[1],
                 (unsigned long long)by_codec[2], (unsigned long long)by_codec[4]);
    if (!env_seed && sealed == 0)
        fail_msg("no sequence of the case sealed an extent");
    t_rm_rf(parent);
}

int main(void)
{
    static model_case cases[6][3];
    static const uint32_t sizes[3] = {4096, 8192, 65536};
    struct CMUnitTest tests[18];
    static char names[18][48];
    int n = 0;
    for (int c = 0; c <= BF_CODEC_AUTO + 1; c++) {
        bf_codec codec = c <= BF_CODEC_AUTO ? (bf_codec)c : (bf_codec)T_RLE_ID;
        for (int s = 0; s < 3; s++) {
            cases[c][s] = (model_case){codec, sizes[s]};
            snprintf(names[n], sizeof(names[n]), "model_%s_%uk",
                     c <= BF_CODEC_AUTO ? bf_codec_name(codec) : "rle", sizes[s] / 1024);
            tests[n] = (struct CMUnitTest){names[n], test_model, NULL, NULL, &cases[c][s]};
            n++;
        }
    }
    if (getenv("BF_TEST")) /* e.g. BF_TEST='model_*_4k' */
        cmocka_set_test_filter(getenv("BF_TEST"));
    return _cmocka_run_group_tests("model", tests, (size_t)n, NULL, NULL);
}
