/*
 * test_corrupt.c - damaged segment files are reported, never trusted.
 *
 * Bytes are changed behind the library's back (through the segment file's
 * path) in extent headers and payloads of every codec; segment files are
 * truncated, deleted, and extents copied over other blocks. A read of a
 * damaged block must return BF_ECORRUPT with a message naming the segment
 * file, every other block must still read back, and nothing may crash
 * (the suite also runs under ASan/UBSan). The fuzz test flips random bytes
 * anywhere in the segment files and asserts the crux: a read returns the
 * right data or BF_ECORRUPT, never wrong data silently.
 *
 * The block map (file.h) is read only to find where an extent lives and
 * whether a byte is live; every check goes through the public API.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "buffile.h"
#include "crc32c.h"
#include "extent.h"
#include "file.h"
#include "support.h"

#define BS 4096u
/* The smallest segment size for 4 KiB blocks: a few extents per segment, gaps at the ends. */
#define SMALL_SEG 16384u

T_PARENT_FIXTURE("corrupt")

static bf_space *space_with(bf_codec codec, uint64_t segment_size)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = BS;
    o.segment_size = segment_size;
    return t_space_opts(&o);
}

/* A file of `nblocks` whole blocks written with the block API (the buffer stays empty). */
static bf_file *filled(bf_space *sp, uint64_t nblocks, t_data kind, uint64_t seed, t_image *img)
{
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    t_rng rng = {seed};
    unsigned char blk[BS];
    for (uint64_t b = 0; b < nblocks; b++) {
        t_fill(&rng, kind, blk, BS);
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
        t_image_write(img, b * BS, blk, BS);
    }
    return f;
}

typedef struct where {
    char path[4096];
    off_t off;    /* offset of the extent in its segment file */
    uint32_t len; /* extent bytes */
    int raw;
} where;

static where locate(const bf_file *f, uint64_t b)
{
    const bf_map_entry *e = bf_map_get(&f->map, b);
    assert_non_null(e);
    assert_true(bf_map_used(e));
    where w;
    uint64_t ss = f->seg.space->segment_size;
    bf_seg_path(&f->seg, (uint32_t)(e->off / ss), w.path, sizeof(w.path));
    w.off = (off_t)(e->off % ss);
    w.len = bf_map_len(e);
    w.raw = (e->len & BF_MAP_RAW) != 0;
    return w;
}

static void disk_io(const char *path, off_t off, void *buf, size_t len, int write)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
    assert_int_equal(n, (ssize_t)len);
    close(fd);
}

static void xor_byte(const char *path, off_t off, unsigned char x)
{
    unsigned char c;
    disk_io(path, off, &c, 1, 0);
    c ^= x;
    disk_io(path, off, &c, 1, 1);
}

static void assert_msg_names(const bf_space *sp, const char *path)
{
    const char *msg = bf_space_errmsg(sp);
    if (strstr(msg, path) == NULL)
        fail_msg("message \"%s\" does not name %s", msg, path);
}

/* Block b must fail its checks through both the block API and the stream. */
static void expect_corrupt(bf_file *f, uint64_t b, const char *path)
{
    unsigned char got[BS];
    int rc = bf_file_read_block(f, b, got);
    if (rc != BF_ECORRUPT)
        fail_msg("block %llu: read_block returned %d, expected BF_ECORRUPT", (unsigned long long)b,
                 rc);
    assert_msg_names(bf_file_space(f), path);
    /* A partial read goes through the block buffer: a second code path. */
    assert_int_equal(bf_file_seek(f, (int64_t)(b * BS + 100), BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(f, got, BS / 2), BF_ECORRUPT);
    assert_msg_names(bf_file_space(f), path);
}

static void expect_intact(bf_file *f, uint64_t b, const t_image *img)
{
    unsigned char got[BS];
    int rc = bf_file_read_block(f, b, got);
    if (rc != BF_OK)
        fail_msg("block %llu: read_block returned %d (%s)", (unsigned long long)b, rc,
                 bf_space_errmsg(bf_file_space(f)));
    if (memcmp(got, img->d + b * BS, BS) != 0)
        fail_msg("block %llu reads wrong data", (unsigned long long)b);
}

static void expect_all_intact(bf_file *f, uint64_t nblocks, const t_image *img)
{
    for (uint64_t b = 0; b < nblocks; b++)
        expect_intact(f, b, img);
}

static void require_codec(bf_codec c)
{
    if (!bf_codec_available(c))
        fail_msg("codec %s not built: corruption tests cover every codec", bf_codec_name(c));
}

/* Flip `x` into extent byte `at` of block 1, expect corruption, undo, expect the data back. */
static void flip_and_undo(bf_file *f, const t_image *img, uint32_t at, unsigned char x)
{
    where w = locate(f, 1);
    assert_true(at < w.len);
    xor_byte(w.path, w.off + at, x);
    expect_corrupt(f, 1, w.path);
    expect_intact(f, 0, img);
    expect_intact(f, 2, img);
    xor_byte(w.path, w.off + at, x);
    expect_all_intact(f, 4, img);
}

static void test_header_flips(void **state)
{
    (void)state;
    /* Every field: magic, version, codec, flags, reserved, lengths, block number, CRC. */
    static const uint32_t fields[] = {0,  1,  2,  3,  4,  5,  6,  7,  8, 11,
                                      12, 15, 16, 19, 23, 24, 27, 28, 31};
    for (int c = 0; c < 4; c++) {
        require_codec((bf_codec)c);
        bf_space *sp = space_with((bf_codec)c, BF_SEGMENT_SIZE_DEFAULT);
        t_image img = {0};
        bf_file *f = filled(sp, 4, T_DATA_TEXT, 11 + (uint64_t)c, &img);
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
            flip_and_undo(f, &img, fields[i], 0x01);
            flip_and_undo(f, &img, fields[i], 0x80);
        }
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_space_destroy(sp);
        t_image_free(&img);
    }
}

static void test_payload_flips(void **state)
{
    (void)state;
    for (int c = 0; c < 4; c++) {
        require_codec((bf_codec)c);
        bf_space *sp = space_with((bf_codec)c, BF_SEGMENT_SIZE_DEFAULT);
        t_image img = {0};
        bf_file *f = filled(sp, 4, T_DATA_TEXT, 21 + (uint64_t)c, &img);
        where w = locate(f, 1);
        /* Text compresses with every real codec: the decompressor path is the one at risk. */
        assert_int_equal(w.raw, c == BF_CODEC_NONE);
        uint32_t hdr = w.raw ? 0 : BF_EXTENT_HDR; /* none's blocks are bare: bytes alone */
        uint32_t plen = w.len - hdr;
        const uint32_t at[] = {hdr, hdr + 1, hdr + plen / 2, hdr + plen - 1};
        for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
            flip_and_undo(f, &img, at[i], 0x01);
            flip_and_undo(f, &img, at[i], 0xff);
        }
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_space_destroy(sp);
        t_image_free(&img);
    }
}

/*
 * Rewrite block 1's extent through `edit` with a recomputed CRC, as a
 * deliberate forger would; returns the read status and restores the bytes.
 */
static int forged_read(bf_file *f, void (*edit)(unsigned char *ext, uint32_t len, t_rng *r),
                       t_rng *rng)
{
    where w = locate(f, 1);
    unsigned char orig[BF_EXTENT_HDR + BS], ext[BF_EXTENT_HDR + BS], got[BS];
    disk_io(w.path, w.off, orig, w.len, 0);
    memcpy(ext, orig, w.len);
    edit(ext, w.len, rng);
    memset(ext + 24, 0, 4);
    uint32_t crc = bf_crc32c(0, ext, w.len);
    for (int i = 0; i < 4; i++)
        ext[24 + i] = (unsigned char)(crc >> (8 * i));
    disk_io(w.path, w.off, ext, w.len, 1);
    int rc = bf_file_read_block(f, 1, got);
    if (rc == BF_ECORRUPT)
        assert_msg_names(bf_file_space(f), w.path);
    disk_io(w.path, w.off, orig, w.len, 1);
    return rc;
}

static void edit_raw_len_down(unsigned char *ext, uint32_t len, t_rng *r)
{
    (void)len;
    (void)r;
    ext[12] = (unsigned char)(ext[12] - 1); /* 4096 -> 4095: the low byte is 0, so borrow */
    if (ext[12] == 0xff)
        ext[13] = (unsigned char)(ext[13] - 1);
}

static void edit_blkno(unsigned char *ext, uint32_t len, t_rng *r)
{
    (void)len;
    (void)r;
    ext[16] ^= 0x02; /* block 1 -> 3 */
}

static void edit_raw_flag(unsigned char *ext, uint32_t len, t_rng *r)
{
    (void)len;
    (void)r;
    ext[5] ^= BF_EXTENT_FLAG_RAW;
}

static void edit_unknown_codec(unsigned char *ext, uint32_t len, t_rng *r)
{
    (void)len;
    (void)r;
    ext[4] = 9;
}

static void edit_payload(unsigned char *ext, uint32_t len, t_rng *r)
{
    for (int i = 0, n = 1 + (int)t_below(r, 4); i < n; i++)
        ext[BF_EXTENT_HDR + t_below(r, len - BF_EXTENT_HDR)] ^=
            (unsigned char)(1 + t_below(r, 255));
}

static void test_forged_extents(void **state)
{
    (void)state;
    /* Compressed extents only: a bare block's check is in the map, out of a forger's reach
       (test_payload_flips and test_wrong_block alter bare blocks). */
    for (int c = 1; c < 4; c++) {
        require_codec((bf_codec)c);
        bf_space *sp = space_with((bf_codec)c, BF_SEGMENT_SIZE_DEFAULT);
        t_image img = {0};
        bf_file *f = filled(sp, 4, T_DATA_TEXT, 31 + (uint64_t)c, &img);
        t_rng rng = {77 + (uint64_t)c};
        /* A valid CRC does not make a header consistent with the block map. */
        assert_int_equal(forged_read(f, edit_raw_len_down, &rng), BF_ECORRUPT);
        assert_int_equal(forged_read(f, edit_blkno, &rng), BF_ECORRUPT);
        assert_int_equal(forged_read(f, edit_raw_flag, &rng), BF_ECORRUPT);
        assert_int_equal(forged_read(f, edit_unknown_codec, &rng), BF_ECORRUPT);
        /*
         * A forged payload reaches the decompressor: it may decode to other
         * bytes (the CRC was forged), but must never crash or overrun.
         */
        for (int i = 0; i < 60; i++) {
            int rc = forged_read(f, edit_payload, &rng);
            assert_true(rc == BF_OK || rc == BF_ECORRUPT);
        }
        expect_all_intact(f, 4, &img);
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_space_destroy(sp);
        t_image_free(&img);
    }
}

static void test_truncated_segment(void **state)
{
    (void)state;
    static const bf_codec codecs[] = {BF_CODEC_NONE, BF_CODEC_LZ4, BF_CODEC_ZSTD, BF_CODEC_ZLIB};
    for (size_t c = 0; c < 4; c++) {
        require_codec(codecs[c]);
        bf_space *sp = space_with(codecs[c], BF_SEGMENT_SIZE_DEFAULT);
        t_image img = {0};
        bf_file *f = filled(sp, 8, T_DATA_MIXED, 41 + c, &img);
        where w5 = locate(f, 5);
        /* Cut inside block 5's payload, then inside its header, then everything. */
        const off_t cuts[] = {w5.off + (off_t)w5.len - 1, w5.off + BF_EXTENT_HDR / 2, w5.off, 0};
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
            assert_int_equal(truncate(w5.path, cuts[i]), 0);
            for (uint64_t b = 0; b < 8; b++) {
                where w = locate(f, b);
                if (w.off + (off_t)w.len <= cuts[i])
                    expect_intact(f, b, &img);
                else
                    expect_corrupt(f, b, w.path);
            }
        }
        assert_int_equal(bf_file_close(f), BF_OK);
        assert_int_equal(t_dir_entries(bf_space_dir(sp)), 0);
        bf_space_destroy(sp);
        t_image_free(&img);
    }
}

static void copy_extent(const where *from, const where *to)
{
    unsigned char buf[BF_EXTENT_HDR + BS];
    assert_int_equal(from->len, to->len);
    disk_io(from->path, from->off, buf, from->len, 0);
    disk_io(to->path, to->off, buf, to->len, 1);
}

static void test_wrong_block(void **state)
{
    (void)state;
    bf_space *sp = space_with(BF_CODEC_NONE, BF_SEGMENT_SIZE_DEFAULT);
    t_image img = {0};
    bf_file *f = filled(sp, 8, T_DATA_RANDOM, 51, &img);
    where w[8];
    for (uint64_t b = 0; b < 8; b++) {
        w[b] = locate(f, b);
        /* codec none: every block is bare and as long, so any can stand in for any other */
        assert_int_equal(w[b].len, BS);
    }
    /* Block 1's valid extent copied over block 0's. */
    copy_extent(&w[1], &w[0]);
    expect_corrupt(f, 0, w[0].path);
    assert_non_null(strstr(bf_space_errmsg(sp), "block 0"));
    expect_intact(f, 1, &img);
    /* Blocks 2 and 3 swapped. */
    unsigned char b2[BF_EXTENT_HDR + BS];
    disk_io(w[2].path, w[2].off, b2, w[2].len, 0);
    copy_extent(&w[3], &w[2]);
    disk_io(w[3].path, w[3].off, b2, w[3].len, 1);
    expect_corrupt(f, 2, w[2].path);
    expect_corrupt(f, 3, w[3].path);
    for (uint64_t b = 4; b < 8; b++)
        expect_intact(f, b, &img);
    /* The whole-file stream read must stop at the first bad block, not return its bytes. */
    unsigned char *all = malloc(8 * BS);
    assert_non_null(all);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(f, all, 8 * BS), BF_ECORRUPT);
    free(all);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&img);
}

/*
 * A bare block read sequentially through the stream comes out of the read-ahead window,
 * checked as it is copied into the file's buffer: a damaged one fails that read and every
 * read of it after (the bytes copied are not kept as the block), the blocks before it read
 * back, and once the damage is undone and the window dropped, the whole file does.
 */
static void test_stream_flip_in_window(void **state)
{
    (void)state;
    enum { N = 16, BAD = 7, STEP = BS / 4 };
    bf_space *sp = space_with(BF_CODEC_NONE, BF_SEGMENT_SIZE_DEFAULT);
    t_image img = {0};
    bf_file *f = filled(sp, N, T_DATA_RANDOM, 61, &img);
    where w = locate(f, BAD);
    assert_int_equal(w.len, BS);
    xor_byte(w.path, w.off + BS / 2, 0x10);
    unsigned char got[STEP];
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    for (uint64_t at = 0; at < (uint64_t)BAD * BS; at += STEP) {
        assert_int_equal(bf_file_read(f, got, STEP), STEP);
        assert_memory_equal(got, img.d + at, STEP);
    }
    /* The damaged block is in the window the pass read ahead at block 6 (blocks 6..9): the
       path under test. */
    const bf_map_entry *e = bf_map_get(&f->map, BAD);
    assert_non_null(bf_seg_cached(&f->seg, e->off, BS));
    for (int again = 0; again < 2; again++) {
        assert_int_equal(bf_file_seek(f, (int64_t)BAD * BS, BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_read(f, got, STEP), BF_ECORRUPT);
        assert_msg_names(sp, w.path);
    }
    xor_byte(w.path, w.off + BS / 2, 0x10);
    unsigned char *all = malloc((size_t)N * BS);
    assert_non_null(all);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(f, all, (size_t)N * BS), (int64_t)N * BS);
    assert_memory_equal(all, img.d, (size_t)N * BS);
    free(all);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&img);
}

static void test_deleted_segment(void **state)
{
    (void)state;
    bf_space *sp = space_with(BF_CODEC_NONE, SMALL_SEG);
    t_image img = {0};
    bf_file *f = filled(sp, 9, T_DATA_RANDOM, 61, &img);
    where w0 = locate(f, 0), w8 = locate(f, 8);
    /* The descriptor is on the last segment, so segment 0 must be opened by path. */
    assert_true(strcmp(w0.path, w8.path) != 0);
    assert_true(t_dir_entries(bf_space_dir(sp)) >= 3);
    assert_int_equal(unlink(w0.path), 0);
    for (uint64_t b = 0; b < 9; b++) {
        where w = locate(f, b);
        if (strcmp(w.path, w0.path) == 0)
            expect_corrupt(f, b, w0.path);
        else
            expect_intact(f, b, &img);
    }
    /* Closing a file whose segment is already gone still cleans up the rest. */
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), 0);
    bf_space_destroy(sp);
    t_image_free(&img);
}

/* ---- fuzz ------------------------------------------------------------- */

#define FUZZ_BLOCKS 24u
#define FUZZ_ITERS 150

/*
 * A file with dead bytes: blocks rewritten with data of other sizes (free
 * chunks), discarded blocks, segment-end gaps, and a partial write that
 * leaves the buffer holding a block.
 */
static bf_file *fuzz_file(bf_space *sp, t_rng *rng, t_image *img)
{
    bf_file *f = filled(sp, FUZZ_BLOCKS, T_DATA_MIXED, t_next(rng), img);
    unsigned char blk[BS];
    for (int i = 0; i < 10; i++) {
        uint64_t b = t_below(rng, FUZZ_BLOCKS);
        t_fill(rng, (t_data)t_below(rng, 3), blk, BS);
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
        t_image_write(img, b * BS, blk, BS);
    }
    for (int i = 0; i < 3; i++) {
        uint64_t b = t_below(rng, FUZZ_BLOCKS - 1);
        assert_int_equal(bf_file_discard_block(f, b), BF_OK);
        memset(blk, 0, BS);
        t_image_write(img, b * BS, blk, BS);
    }
    uint64_t pos = 5 * BS + 300;
    t_fill(rng, T_DATA_TEXT, blk, 700);
    assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, blk, 700), BF_OK);
    t_image_write(img, pos, blk, 700);
    assert_int_equal(bf_file_flush(f), BF_OK);
    return f;
}

/* The block whose live extent holds physical byte `phys`, or BF_NO_BLOCK (dead byte). */
static uint64_t owner_of(const bf_file *f, uint64_t phys)
{
    const bf_map_entry *e;
    for (uint64_t b = 0; (e = bf_map_next(&f->map, &b)) != NULL; b++)
        if (phys >= e->off && phys < e->off + bf_map_len(e))
            return b;
    return BF_NO_BLOCK;
}

static void fuzz_codec(bf_codec codec, int *live_hits, int *dead_hits)
{
    bf_space *sp = space_with(codec, SMALL_SEG);
    t_rng rng = {900 + (uint64_t)codec};
    t_image img = {0};
    bf_file *f = fuzz_file(sp, &rng, &img);
    unsigned char got[BS];
    unsigned char *all = malloc(img.size);
    assert_non_null(all);
    for (int it = 0; it < FUZZ_ITERS; it++) {
        uint32_t segno = (uint32_t)t_below(&rng, f->seg.nsegs);
        char path[4096];
        bf_seg_path(&f->seg, segno, path, sizeof(path));
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        off_t seg_len = st.st_size;
        assert_true(seg_len > 0);
        off_t off = (off_t)t_below(&rng, (uint64_t)seg_len);
        unsigned char x = (unsigned char)(1 + t_below(&rng, 255));
        uint64_t owner = owner_of(f, segno * f->seg.space->segment_size + (uint64_t)off);
        /* The block held in the buffer is served from memory, so its flip is harmless. */
        int detectable = owner != BF_NO_BLOCK && owner != f->buf_blk;
        *(detectable ? live_hits : dead_hits) += 1;
        xor_byte(path, off, x);
        for (uint64_t b = 0; b < FUZZ_BLOCKS; b++) {
            int rc = bf_file_read_block(f, b, got);
            if (detectable && b == owner) {
                if (rc != BF_ECORRUPT)
                    fail_msg("%s iter %d: flip at %s+%lld in block %llu's extent read as %d",
                             bf_codec_name(codec), it, path, (long long)off, (unsigned long long)b,
                             rc);
                assert_msg_names(sp, path);
            } else {
                if (rc != BF_OK || memcmp(got, img.d + b * BS, BS) != 0)
                    fail_msg("%s iter %d: flip at %s+%lld (dead or other block) broke block "
                             "%llu: rc %d",
                             bf_codec_name(codec), it, path, (long long)off, (unsigned long long)b,
                             rc);
            }
        }
        /* The stream: all the right bytes, or an error; never wrong bytes. */
        assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
        int64_t n = bf_file_read(f, all, img.size);
        if (detectable)
            assert_int_equal(n, BF_ECORRUPT);
        else
            assert_true(n == (int64_t)img.size && memcmp(all, img.d, img.size) == 0);
        xor_byte(path, off, x);
    }
    free(all);
    t_image_check(f, &img, "after fuzz");
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&img);
}

static void test_fuzz_flips(void **state)
{
    (void)state;
    int live = 0, dead = 0;
    for (int c = 0; c < 4; c++) {
        require_codec((bf_codec)c);
        fuzz_codec((bf_codec)c, &live, &dead);
    }
    /* Both kinds of byte must have been hit for the test to mean anything. */
    assert_true(live > 100);
    assert_true(dead > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_flips),   cmocka_unit_test(test_payload_flips),
        cmocka_unit_test(test_forged_extents), cmocka_unit_test(test_truncated_segment),
        cmocka_unit_test(test_wrong_block),    cmocka_unit_test(test_deleted_segment),
        cmocka_unit_test(test_fuzz_flips),     cmocka_unit_test(test_stream_flip_in_window),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
