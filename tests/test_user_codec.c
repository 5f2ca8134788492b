/*
 * test_user_codec.c - codecs of the caller's own (bf_user_codec).
 *
 * With the test codec "rle" (tests/support.c): named and parsed by the
 * space, written and read back as a file's and as the space's codec,
 * counted; data it expands is stored raw; a file set's file written with
 * it opens in a space given the codec and not in one without it
 * (BF_ENOCODEC, naming it). A codec that fails, claims more bytes than its
 * room or decompresses to another length gives a clear error and loses
 * nothing: what was acknowledged reads back, and the write that failed can
 * be done again. Definitions that cannot be right are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buffile.h"
#include "support.h"

#define BS 4096u

T_PARENT_FIXTURE("user-codec")

static bf_space *rle_space(t_rle_faults *faults, bf_codec codec)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.codec = codec;
    bf_user_codec rle = t_rle_codec(faults, 0);
    o.user_codecs = &rle;
    o.n_user_codecs = 1;
    return t_space_opts(&o); /* the space copies the struct and its name */
}

/* `n` blocks of runs (compressible by rle) or of random bytes (which rle doubles). */
static void fill(unsigned char *b, uint64_t blkno, int random)
{
    t_rng rng = {blkno + 1};
    if (random) {
        t_fill(&rng, T_DATA_RANDOM, b, BS);
        return;
    }
    for (uint32_t i = 0; i < BS; i++)
        b[i] = (unsigned char)((i / 64 + blkno) & 0xff);
}

static void test_names_and_round_trip(void **state)
{
    (void)state;
    t_rle_faults calls = {0};
    bf_space *sp = rle_space(&calls, (bf_codec)T_RLE_ID);
    bf_codec c;
    assert_int_equal(bf_space_codec_parse(sp, "rle", &c), BF_OK);
    assert_int_equal(c, T_RLE_ID);
    assert_string_equal(bf_space_codec_name(sp, c), "rle");
    assert_int_equal(bf_space_codec_parse(sp, "zstd", &c), BF_OK);
    assert_int_equal(c, BF_CODEC_ZSTD);
    assert_null(bf_space_codec_name(sp, (bf_codec)(T_RLE_ID + 1)));
    assert_int_equal(bf_codec_parse("rle", &c), BF_EINVAL); /* not a built-in name */

    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK); /* the space's default: rle */
    assert_int_equal(bf_file_codec(f), T_RLE_ID);
    unsigned char blk[BS], got[BS];
    for (uint64_t b = 0; b < 8; b++) {
        fill(blk, b, b % 4 == 3);
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
    }
    for (uint64_t b = 0; b < 8; b++) {
        fill(blk, b, b % 4 == 3);
        assert_int_equal(bf_file_read_block(f, b, got), BF_OK);
        assert_memory_equal(got, blk, BS);
    }
    bf_stats fs, ss;
    bf_file_stats(f, &fs);
    bf_space_stats(sp, &ss);
    assert_int_equal(fs.blocks_compressed, 6);
    assert_int_equal(fs.blocks_raw, 2); /* random data: rle's output is larger, stored raw */
    assert_int_equal(ss.blocks_user_codec, 8);
    /* the two raw blocks, bare, and the six compressed extents in the page before them */
    assert_true(fs.physical_bytes <= 3 * BS);
    assert_int_equal(calls.compresses, 8);
    assert_int_equal(calls.decompresses, 6);
    bf_file_close(f);

    /* a file of another codec in the same space, and rle by file option in a default space */
    bf_file_options fo;
    bf_file_options_init(&fo);
    fo.codec = BF_CODEC_LZ4;
    assert_int_equal(bf_file_create(sp, &fo, &f), BF_OK);
    assert_int_equal(bf_file_codec(f), BF_CODEC_LZ4);
    bf_file_close(f);
    fo.codec = (bf_codec)(T_RLE_ID + 1);
    assert_int_equal(bf_file_create(sp, &fo, &f), BF_ENOCODEC);
    bf_space_destroy(sp);
}

static void test_file_set_needs_the_codec(void **state)
{
    (void)state;
    bf_space *w = rle_space(NULL, (bf_codec)T_RLE_ID);
    bf_space *r = rle_space(NULL, BF_CODEC_LZ4);
    bf_space *none = t_space(parent, BF_CODEC_LZ4, BS, NULL);
    assert_int_equal(bf_fileset_create(w, set), BF_OK);
    bf_file *f;
    assert_int_equal(bf_file_create_named(w, set, "x", NULL, &f), BF_OK);
    unsigned char blk[BS], got[BS];
    for (uint64_t b = 0; b < 4; b++) {
        fill(blk, b, 0);
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
    }
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(none, set, "x", BF_OPEN_READONLY, &f), BF_ENOCODEC);
    assert_non_null(strstr(bf_space_errmsg(none), "rle"));
    assert_int_equal(bf_file_open_named(r, set, "x", BF_OPEN_READWRITE, &f), BF_OK);
    for (uint64_t b = 0; b < 4; b++) {
        fill(blk, b, 0);
        assert_int_equal(bf_file_read_block(f, b, got), BF_OK);
        assert_memory_equal(got, blk, BS);
    }
    assert_int_equal(bf_file_codec(f), T_RLE_ID); /* the file's codec, not the space's */
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_fileset_destroy(w, set), BF_OK);
    bf_space_destroy(w);
    bf_space_destroy(r);
    bf_space_destroy(none);
}

/* A codec that fails or lies: the status says so, and what was acknowledged stays. */
static void test_misbehaving_codec(void **state)
{
    (void)state;
    t_rle_faults flt = {0};
    bf_space *sp = rle_space(&flt, (bf_codec)T_RLE_ID);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char blk[BS], got[BS];
    fill(blk, 0, 0);
    assert_int_equal(bf_file_write_block(f, 0, blk), BF_OK);
    for (int fault = 0; fault < 2; fault++) {
        flt.fail_compress = fault == 0;
        flt.over_cap = fault == 1;
        fill(blk, 1, 0);
        uint64_t size = bf_file_size(f);
        assert_int_equal(bf_file_write_block(f, 3, blk), BF_ECODEC);
        assert_non_null(strstr(bf_space_errmsg(sp), "rle"));
        assert_int_equal(bf_file_size(f), size); /* nothing of the failed write */
        /* the stream keeps its dirty block: a flush fails alike, then succeeds */
        assert_int_equal(bf_file_seek(f, 2 * BS, BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_write(f, blk, 100), BF_OK);
        assert_int_equal(bf_file_flush(f), BF_ECODEC);
        flt.fail_compress = flt.over_cap = 0;
        assert_int_equal(bf_file_flush(f), BF_OK);
        assert_int_equal(bf_file_write_block(f, 1, blk), BF_OK);
        assert_int_equal(bf_file_read_block(f, 1, got), BF_OK);
        assert_memory_equal(got, blk, BS);
    }
    fill(blk, 0, 0);
    assert_int_equal(bf_file_read_block(f, 0, got), BF_OK);
    assert_memory_equal(got, blk, BS);
    flt.short_decompress = 1;
    assert_int_equal(bf_file_read_block(f, 0, got), BF_ECODEC);
    assert_non_null(strstr(bf_space_errmsg(sp), "another length"));
    flt.short_decompress = 0;
    assert_int_equal(bf_file_read_block(f, 0, got), BF_OK);
    assert_memory_equal(got, blk, BS);
    bf_file_close(f);
    bf_space_destroy(sp);
}

static void test_bad_definitions(void **state)
{
    (void)state;
    bf_user_codec u[2] = {t_rle_codec(NULL, 0), t_rle_codec(NULL, 0)};
    static const struct {
        int field;
        const char *why;
    } bad[] = {{0, "id"}, {1, "name"}, {2, "name"}, {3, "compress"}, {4, "levels"}, {5, "share"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        u[0] = u[1] = t_rle_codec(NULL, 0);
        uint32_t n = 1;
        switch (bad[i].field) {
        case 0: u[0].id = BF_CODEC_USER_MAX + 1; break;
        case 1: u[0].name = "lz4"; break;
        case 2: u[0].name = "Has Space"; break;
        case 3: u[0].decompress = NULL; break;
        case 4: u[0].default_level = 3; break;
        case 5: u[1].name = "other", n = 2; break; /* same id twice */
        }
        bf_space_options o;
        bf_space_options_init(&o);
        o.temp_dir = parent;
        o.user_codecs = u;
        o.n_user_codecs = n;
        bf_space *sp;
        char err[256];
        assert_int_equal(bf_space_create(&o, &sp, err, sizeof(err)), BF_EINVAL);
        if (strstr(err, bad[i].why) == NULL)
            fail_msg("definition %zu refused with \"%s\", not naming %s", i, err, bad[i].why);
    }
}

/*
 * "rlx": rle whose value bytes are flipped. Given rle's extents it decodes
 * them to the same length and other bytes, so only the codec's name tells
 * the two apart.
 */
static bf_user_codec rle_def;
static int64_t rlx_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                            size_t cap)
{
    int64_t n = rle_def.compress(ctx, level, src, len, dst, cap);
    for (int64_t i = 1; i < n; i += 2)
        ((unsigned char *)dst)[i] ^= 0x5a;
    return n;
}
static int64_t rlx_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    unsigned char *tmp = malloc(len ? len : 1);
    memcpy(tmp, src, len);
    for (size_t i = 1; i < len; i += 2)
        tmp[i] ^= 0x5a;
    int64_t n = rle_def.decompress(ctx, tmp, len, dst, raw_len);
    free(tmp);
    return n;
}

/* A space whose codec of id `id` is rle, or rlx (`other`). */
static bf_space *id_space(int id, int other)
{
    rle_def = t_rle_codec(NULL, 0);
    bf_user_codec u = rle_def;
    u.id = id;
    if (other) {
        u.name = "rlx";
        u.compress = rlx_compress;
        u.decompress = rlx_decompress;
    }
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.codec = BF_CODEC_LZ4;
    o.user_codecs = &u;
    o.n_user_codecs = 1;
    return t_space_opts(&o);
}

/* Read what `sp` takes of file `name`: no block may read back other bytes than written. */
static int read_named(bf_space *sp, const char *name, uint64_t first, uint64_t n)
{
    bf_file *f;
    int rc = bf_file_open_named(sp, set, name, BF_OPEN_READONLY, &f);
    if (rc != BF_OK)
        return rc;
    unsigned char blk[BS], got[BS];
    int worst = BF_OK;
    for (uint64_t b = 0; b < first + n; b++) {
        rc = bf_file_read_block(f, b, got);
        fill(blk, b < first ? b + 100 : b - first, 0);
        if (rc == BF_OK && memcmp(got, blk, BS) != 0)
            fail_msg("%s: block %llu read back other bytes with BF_OK", name,
                     (unsigned long long)b);
        if (rc != BF_OK)
            worst = rc;
    }
    assert_int_equal(bf_file_close(f), BF_OK);
    return worst;
}

/*
 * Two spaces that give one id to two codecs (rle and rlx, for every id a
 * caller may use): a file written with one opens in the other as
 * BF_ENOCODEC naming both, and a file of another codec holding a spliced
 * part written with it reads that part as BF_ENOCODEC, never as other
 * bytes (the index names only the file's own codec: the extents are bound
 * to their codec's name too).
 */
static void test_one_id_two_codecs(void **state)
{
    (void)state;
    for (int id = BF_CODEC_USER_MIN; id <= BF_CODEC_USER_MAX; id += 9) {
        bf_space *a = id_space(id, 0), *b = id_space(id, 1), *a2 = id_space(id, 0);
        assert_int_equal(bf_fileset_create(a, set), BF_OK);
        bf_file_options fo;
        bf_file_options_init(&fo);
        fo.codec = (bf_codec)id;
        bf_file *x, *q;
        assert_int_equal(bf_file_create_named(a, set, "x", &fo, &x), BF_OK);
        assert_int_equal(bf_file_create_named(a, set, "q", NULL, &q), BF_OK);
        unsigned char blk[BS];
        for (uint64_t blkno = 0; blkno < 4; blkno++) {
            fill(blk, blkno, 0);
            assert_int_equal(bf_file_write_block(x, blkno, blk), BF_OK);
            fill(blk, blkno + 100, 0);
            assert_int_equal(bf_file_write_block(q, blkno, blk), BF_OK);
        }
        assert_int_equal(bf_file_export(x), BF_OK);
        uint64_t at;
        assert_int_equal(bf_file_append(q, x, &at), BF_OK);
        assert_int_equal(at, 4 * BS);
        assert_int_equal(bf_file_close(q), BF_OK);
        assert_int_equal(bf_file_close(x), BF_OK);

        assert_int_equal(read_named(a2, "x", 0, 4), BF_OK);
        assert_int_equal(read_named(a2, "q", 4, 4), BF_OK);
        assert_int_equal(read_named(b, "x", 0, 4), BF_ENOCODEC);
        assert_non_null(strstr(bf_space_errmsg(b), "rle"));
        assert_non_null(strstr(bf_space_errmsg(b), "rlx"));
        assert_int_equal(read_named(b, "q", 4, 4), BF_ENOCODEC);
        assert_int_equal(bf_fileset_destroy(a, set), BF_OK);
        bf_space_destroy(a);
        bf_space_destroy(a2);
        bf_space_destroy(b);
    }
}

/* The test codec rle with a bound of the test's choosing. */
static size_t bound_value;     /* what bound returns once it has been asked `honest_calls` times */
static unsigned honest_calls;  /* answers len + 16 this many times first */
static unsigned bound_calls;
static size_t chosen_bound(void *ctx, size_t len)
{
    (void)ctx;
    return bound_calls++ < honest_calls ? len + 16 : bound_value;
}

/* The largest bound a space takes: twice the input and 4 KiB. */
static size_t largest_bound(void *ctx, size_t len)
{
    (void)ctx;
    return 2 * len + 4096;
}

/* Write incompressible blocks (rle doubles them: it fills all the room it is given, up to
   twice the block) and compressible ones, and read them back. */
static void write_and_read(bf_space *sp)
{
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char blk[BS], got[BS];
    for (uint64_t b = 0; b < 8; b++) {
        fill(blk, b, b % 2);
        int rc = bf_file_write_block(f, b, blk);
        if (rc != BF_OK)
            fail_msg("block %llu: %d %s", (unsigned long long)b, rc, bf_space_errmsg(sp));
    }
    for (uint64_t b = 0; b < 8; b++) {
        fill(blk, b, b % 2);
        assert_int_equal(bf_file_read_block(f, b, got), BF_OK);
        assert_memory_equal(got, blk, BS);
    }
    assert_int_equal(bf_file_close(f), BF_OK);
}

/* A space's options with the caller's codec `u` as its only one and its default. */
static bf_space_options codec_options(const bf_user_codec *u)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.codec = (bf_codec)u->id;
    o.user_codecs = u;
    o.n_user_codecs = 1;
    return o;
}

/*
 * A codec whose bound is hostile: near SIZE_MAX (fixed values and random
 * draws), near 2^32 and 2^48, and one that answers honestly when the space
 * is made and SIZE_MAX afterwards. A bound the space cannot hold (more
 * than twice the block and 4 KiB) is refused at bf_space_create naming
 * the codec; one that changes later is held to what the space allocated.
 * Room was bound + header + seal bytes, which wrapped: a scratch buffer of
 * about 60 bytes while compress was told it had SIZE_MAX (a heap overflow,
 * which ASan reports).
 */
static void test_hostile_bound(void **state)
{
    (void)state;
    bf_user_codec u = t_rle_codec(NULL, 0);
    u.bound = chosen_bound;
    size_t values[64];
    size_t n = 0;
    static const size_t fixed[] = {SIZE_MAX,      SIZE_MAX - 1,  SIZE_MAX - 31, SIZE_MAX - 59,
                                   SIZE_MAX - 60, SIZE_MAX - 61, SIZE_MAX / 2,  (size_t)1 << 48,
                                   UINT32_MAX,    UINT32_MAX + (size_t)40,      2 * BS + 4097};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        values[n++] = fixed[i];
    t_rng rng = {45};
    while (n < sizeof(values) / sizeof(values[0]))
        values[n++] = SIZE_MAX - (size_t)t_below(&rng, 1u << 20);
    for (size_t i = 0; i <= n; i++) {
        int liar = i == n; /* honest while the space is made, SIZE_MAX after */
        bound_value = liar ? SIZE_MAX : values[i];
        honest_calls = liar ? 1000 : 0;
        bound_calls = 0;
        bf_space_options o = codec_options(&u);
        bf_space *sp = NULL;
        char err[256] = "";
        int rc = bf_space_create(&o, &sp, err, sizeof(err));
        if (!liar) {
            if (rc != BF_EINVAL)
                fail_msg("bound %zu: bf_space_create %d (%s)", values[i], rc, err);
            assert_non_null(strstr(err, "rle"));
            assert_non_null(strstr(err, "bound"));
            continue;
        }
        assert_int_equal(rc, BF_OK);
        bound_calls = honest_calls; /* from now on: SIZE_MAX */
        write_and_read(sp);
        bf_space_destroy(sp);
    }
    /* The largest bound taken, at every block size. */
    u.bound = largest_bound;
    bf_space_options o = codec_options(&u);
    bf_space *sp = t_space_opts(&o);
    write_and_read(sp);
    bf_space_destroy(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_round_trip),
        cmocka_unit_test(test_file_set_needs_the_codec),
        cmocka_unit_test(test_misbehaving_codec),
        cmocka_unit_test(test_bad_definitions),
        cmocka_unit_test(test_hostile_bound),
        cmocka_unit_test(test_one_id_two_codecs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
