/*
 * test_extent.c - extent packing and verification: raw vs compressed
 * choice, and that every single flipped bit of an extent is detected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "alloc.h"
#include "extent.h"
#include "support.h"

#define BS 4096

/* Pack into one contiguous buffer as it would be on disk. */
static size_t pack(bf_codec id, t_data kind, uint64_t blkno, unsigned char *disk,
                   bf_extent_info *info)
{
    const bf_codec_ops *ops = bf_codec_ops_get(id);
    void *ctx;
    assert_int_equal(ops->ctx_create(&bf_default_allocator, &ctx), BF_OK);
    static unsigned char data[BS], scratch[BF_EXTENT_HDR + BS];
    t_rng r = {blkno};
    t_fill(&r, kind, data, BS);
    struct iovec iov[2];
    int n;
    assert_int_equal(bf_extent_pack(ops, ctx, ops->default_level, blkno, 3, data, BS, NULL, scratch,
                                    iov, &n, info),
                     BF_OK);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        memcpy(disk + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    ops->ctx_destroy(&bf_default_allocator, ctx);
    return len;
}

static void test_raw_choice(void **state)
{
    (void)state;
    static unsigned char disk[BF_EXTENT_HDR + BS];
    bf_extent_info info;
    /* A block that does not shrink goes out bare: its bytes alone, the check in info. */
    assert_int_equal(pack(BF_CODEC_LZ4, T_DATA_RANDOM, 5, disk, &info), BS);
    assert_true(info.raw && info.bare);
    assert_int_equal(info.disk_len, BS);
    assert_int_equal(info.crc, bf_extent_bare_crc(5, disk, BS));
    size_t len = pack(BF_CODEC_LZ4, T_DATA_TEXT, 5, disk, &info);
    assert_false(info.raw || info.bare);
    assert_int_equal(info.disk_len, len);
    assert_true(len < BF_EXTENT_HDR + BS * 3 / 4);
    assert_int_equal(pack(BF_CODEC_NONE, T_DATA_TEXT, 5, disk, &info), BS);
    assert_true(info.raw && info.bare);
    assert_int_equal(info.codec_ns, 0); /* `none` is not even called */
}

static void test_bare_block_checks(void **state)
{
    (void)state;
    static unsigned char disk[BF_EXTENT_HDR + BS];
    bf_extent_info info;
    assert_int_equal(pack(BF_CODEC_NONE, T_DATA_TEXT, 77, disk, &info), BS);
    const char *why = NULL;
    assert_int_equal(bf_extent_check_bare(disk, BS, 77, info.crc, &why), BF_OK);
    /* The same bytes in another block's slot, or a shorter read of them, do not pass. */
    assert_int_equal(bf_extent_check_bare(disk, BS, 78, info.crc, &why), BF_ECORRUPT);
    assert_non_null(strstr(why, "checksum"));
    assert_int_equal(bf_extent_check_bare(disk, BS - 1, 77, info.crc, &why), BF_ECORRUPT);
    assert_int_equal(bf_extent_check_bare(disk, BS, 77 + (UINT64_C(1) << 32), info.crc, &why),
                     BF_ECORRUPT);
    for (size_t byte = 0; byte < BS; byte += 7) {
        for (int bit = 0; bit < 8; bit++) {
            disk[byte] ^= (unsigned char)(1u << bit);
            why = NULL;
            assert_int_equal(bf_extent_check_bare(disk, BS, 77, info.crc, &why), BF_ECORRUPT);
            assert_non_null(why);
            disk[byte] ^= (unsigned char)(1u << bit);
        }
    }
}

static void test_every_bit_flip_detected(void **state)
{
    (void)state;
    static unsigned char disk[BF_EXTENT_HDR + BS];
    for (int c = 1; c < 4; c++) { /* none's blocks are bare: test_bare_block_checks */
        bf_extent_info info, got;
        size_t len = pack((bf_codec)c, T_DATA_TEXT, 77, disk, &info);
        assert_false(info.bare);
        const char *why = NULL;
        assert_int_equal(bf_extent_check(disk, len, 77, 3, BS, &got, &why), BF_OK);
        assert_int_equal(got.raw_len, BS);
        assert_int_equal(got.blkno, 77);
        assert_int_equal(got.gen, 3);
        /* Written by a later session than the map that points at it expects. */
        assert_int_equal(bf_extent_check(disk, len, 77, 2, BS, &got, &why), BF_ECORRUPT);
        assert_non_null(strstr(why, "later"));
        /* Wrong block number expected by the map. */
        assert_int_equal(bf_extent_check(disk, len, 78, 3, BS, &got, &why), BF_ECORRUPT);
        assert_non_null(why);
        /* Length that does not match the map. */
        assert_int_equal(bf_extent_check(disk, len - 1, 77, 3, BS, &got, &why), BF_ECORRUPT);
        size_t step = len > 2000 ? 13 : 1;
        for (size_t byte = 0; byte < len; byte += (byte < BF_EXTENT_HDR ? 1 : step)) {
            for (int bit = 0; bit < 8; bit++) {
                disk[byte] ^= (unsigned char)(1u << bit);
                why = NULL;
                assert_int_equal(bf_extent_check(disk, len, 77, UINT32_MAX, BS, &got, &why),
                                 BF_ECORRUPT);
                assert_non_null(why);
                disk[byte] ^= (unsigned char)(1u << bit);
            }
        }
    }
}

/*
 * The store path packs a block of codec none without a seal through
 * bf_extent_pack_bare, not bf_extent_pack: the two must produce the same
 * extent (iovec, length, check, codec, generation) for every block, else a
 * file of codec none would hold what the general path would not write.
 */
static void test_bare_pack_same_as_general(void **state)
{
    (void)state;
    static unsigned char data[BS], scratch[BF_EXTENT_HDR + BS];
    const bf_codec_ops *ops = bf_codec_ops_get(BF_CODEC_NONE);
    for (uint32_t len = 1; len <= BS; len = len * 3 + 1) {
        for (uint64_t blkno = 0; blkno < 3; blkno++) {
            t_rng r = {blkno + len};
            t_fill(&r, blkno == 1 ? T_DATA_TEXT : T_DATA_RANDOM, data, len);
            struct iovec ga[2], fa[2];
            int gn = 0, fn = 0;
            bf_extent_info g, fi;
            memset(&g, 0xa5, sizeof(g));
            memset(&fi, 0x5a, sizeof(fi));
            uint32_t gen = (uint32_t)blkno * 7;
            assert_int_equal(bf_extent_pack(ops, NULL, 0, blkno << 20, gen, data, len, NULL,
                                            scratch, ga, &gn, &g),
                             BF_OK);
            assert_int_equal(
                bf_extent_pack_bare(BF_CODEC_NONE, blkno << 20, gen, data, len, fa, &fn, &fi),
                BF_OK);
            fi.codec_ns = g.codec_ns; /* left to the caller */
            assert_int_equal(gn, 1);
            assert_int_equal(fn, 1);
            assert_ptr_equal(ga[0].iov_base, fa[0].iov_base);
            assert_int_equal(ga[0].iov_len, fa[0].iov_len);
            assert_int_equal(g.codec, fi.codec);
            assert_int_equal(g.raw, fi.raw);
            assert_int_equal(g.sealed, fi.sealed);
            assert_int_equal(g.bare, fi.bare);
            assert_int_equal(g.crc, fi.crc);
            assert_int_equal(g.disk_len, fi.disk_len);
            assert_int_equal(g.payload_len, fi.payload_len);
            assert_int_equal(g.raw_len, fi.raw_len);
            assert_int_equal(g.blkno, fi.blkno);
            assert_int_equal(g.gen, fi.gen);
            assert_int_equal(g.codec_ns, 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_choice),
        cmocka_unit_test(test_every_bit_flip_detected),
        cmocka_unit_test(test_bare_block_checks),
        cmocka_unit_test(test_bare_pack_same_as_general),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
