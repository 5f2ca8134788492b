/*
 * test_limit.c - the space's temp limit on physical bytes.
 *
 * With codec none every full block is one extent of BS + header bytes, so
 * the exact block at which the limit bites is known. The limit must give
 * BF_ELIMIT (not BF_ENOSPC) with a message saying so, never let the
 * space's physical bytes exceed it, keep acknowledged data readable, let
 * writing continue once raised, and count all files of the space together.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <cmocka.h>

#include "buffile.h"
#include "extent.h"
#include "support.h"

#define BS 4096u
#define EXT BS /* codec none: bare blocks, their bytes alone */

T_PARENT_FIXTURE("limit")

static bf_space *limited_space(bf_codec codec, uint64_t limit)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = BS;
    o.temp_limit = limit;
    return t_space_opts(&o);
}

static uint64_t space_physical(const bf_space *sp)
{
    bf_stats st;
    bf_space_stats(sp, &st);
    return st.physical_bytes;
}

static void assert_limit_error(const bf_space *sp)
{
    const char *msg = bf_space_errmsg(sp);
    if (strstr(msg, "limit") == NULL || strstr(msg, strerror(ENOSPC)) != NULL)
        fail_msg("message \"%s\" should say limit, not ENOSPC", msg);
}

/*
 * Stream-write chunks of `chunk` bytes until a write fails or `max` bytes
 * went in; returns the status of the last call. Acknowledged bytes go to
 * the image, the failed call's range is forgotten.
 */
static int write_until(bf_file *f, t_image *img, t_rng *rng, size_t chunk, uint64_t max)
{
    unsigned char buf[3 * BS];
    assert_true(chunk <= sizeof(buf));
    for (uint64_t done = 0; done < max; done += chunk) {
        uint64_t pos = bf_file_tell(f);
        t_fill(rng, T_DATA_RANDOM, buf, chunk);
        int rc = bf_file_write(f, buf, chunk);
        if (rc != BF_OK) {
            t_image_resize(img, bf_file_size(f));
            t_image_forget(img, pos, chunk);
            assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
            return rc;
        }
        t_image_write(img, pos, buf, chunk);
    }
    return BF_OK;
}

static void test_limit_bites_and_lifts(void **state)
{
    (void)state;
    const uint64_t limit = 10 * EXT + 100;
    bf_space *sp = limited_space(BF_CODEC_NONE, limit);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    t_image img = {0};
    t_rng rng = {1};
    /* Odd-sized chunks: the limit bites on a buffer flush inside a write call. */
    assert_int_equal(write_until(f, &img, &rng, 1000, 100 * BS), BF_ELIMIT);
    assert_limit_error(sp);
    assert_int_equal(space_physical(sp), 10 * EXT);
    /* The last block stays in the buffer; everything acknowledged reads back. */
    t_image_check(f, &img, "at the limit");
    /* A flush of the dirty buffer hits the same wall. */
    assert_int_equal(bf_file_flush(f), BF_ELIMIT);
    assert_limit_error(sp);
    /* Raising the limit lets writing go on, up to the new limit. */
    bf_space_set_temp_limit(sp, 20 * EXT);
    assert_int_equal(write_until(f, &img, &rng, 3 * BS, 100 * BS), BF_ELIMIT);
    assert_int_equal(space_physical(sp), 20 * EXT);
    t_image_check(f, &img, "at the raised limit");
    /* No limit at all. */
    bf_space_set_temp_limit(sp, 0);
    assert_int_equal(write_until(f, &img, &rng, 3 * BS, 30 * BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    assert_true(space_physical(sp) > 20 * EXT);
    t_image_check(f, &img, "without limit");
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&img);
}

static void test_limit_counts_all_files(void **state)
{
    (void)state;
    bf_space *sp = limited_space(BF_CODEC_NONE, 20 * EXT);
    bf_file *a, *b;
    assert_int_equal(bf_file_create(sp, NULL, &a), BF_OK);
    assert_int_equal(bf_file_create(sp, NULL, &b), BF_OK);
    unsigned char blk[BS];
    t_rng rng = {2};
    t_image ia = {0}, ib = {0};
    for (uint64_t i = 0; i < 12; i++) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        assert_int_equal(bf_file_write_block(a, i, blk), BF_OK);
        t_image_write(&ia, i * BS, blk, BS);
    }
    /* File b gets exactly what file a left: 8 extents. */
    uint64_t n = 0;
    int rc;
    for (;;) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        if ((rc = bf_file_write_block(b, n, blk)) != BF_OK)
            break;
        t_image_write(&ib, n * BS, blk, BS);
        n++;
    }
    assert_int_equal(rc, BF_ELIMIT);
    assert_limit_error(sp);
    assert_int_equal(n, 8);
    assert_int_equal(space_physical(sp), 20 * EXT);
    t_image_check(a, &ia, "file a at the limit");
    t_image_check(b, &ib, "file b at the limit");
    /* Truncating file a gives its bytes back to the space: b can grow again. */
    assert_int_equal(bf_file_truncate(a, 6 * BS), BF_OK);
    t_image_resize(&ia, 6 * BS);
    for (int i = 0; i < 6; i++, n++) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        assert_int_equal(bf_file_write_block(b, n, blk), BF_OK);
        t_image_write(&ib, n * BS, blk, BS);
    }
    assert_int_equal(bf_file_write_block(b, n, blk), BF_ELIMIT);
    /* Closing file a frees the rest. */
    assert_int_equal(bf_file_close(a), BF_OK);
    for (int i = 0; i < 6; i++, n++) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        assert_int_equal(bf_file_write_block(b, n, blk), BF_OK);
        t_image_write(&ib, n * BS, blk, BS);
    }
    assert_int_equal(space_physical(sp), 20 * EXT);
    t_image_check(b, &ib, "file b after a closed");
    assert_int_equal(bf_file_close(b), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&ia);
    t_image_free(&ib);
}

static void test_lowered_limit(void **state)
{
    (void)state;
    bf_space *sp = limited_space(BF_CODEC_NONE, 0);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char blk[BS];
    t_rng rng = {3};
    t_image img = {0};
    for (uint64_t i = 0; i < 10; i++) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        assert_int_equal(bf_file_write_block(f, i, blk), BF_OK);
        t_image_write(&img, i * BS, blk, BS);
    }
    /* Below current usage: writes that reuse freed space still work, growth does not. */
    bf_space_set_temp_limit(sp, EXT);
    assert_int_equal(bf_file_discard_block(f, 4), BF_OK);
    t_fill(&rng, T_DATA_RANDOM, blk, BS);
    assert_int_equal(bf_file_write_block(f, 4, blk), BF_OK);
    t_image_write(&img, 4 * BS, blk, BS);
    assert_int_equal(bf_file_write_block(f, 10, blk), BF_ELIMIT);
    assert_limit_error(sp);
    assert_int_equal(space_physical(sp), 10 * EXT);
    t_image_check(f, &img, "after the lowered limit");
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&img);
}

/* Compressed files: the limit counts compressed bytes, and is never exceeded. */
static void test_limit_compressed(void **state)
{
    (void)state;
    const uint64_t limit = 64 * 1024;
    bf_space *sp = limited_space(BF_CODEC_ZSTD, limit);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    t_image img = {0};
    t_rng rng = {4};
    unsigned char buf[1500];
    int rc;
    uint64_t logical = 0;
    do {
        uint64_t pos = bf_file_tell(f);
        t_fill(&rng, T_DATA_TEXT, buf, sizeof(buf));
        rc = bf_file_write(f, buf, sizeof(buf));
        if (rc == BF_OK) {
            t_image_write(&img, pos, buf, sizeof(buf));
            logical += sizeof(buf);
        } else {
            t_image_resize(&img, bf_file_size(f));
            t_image_forget(&img, pos, sizeof(buf));
        }
        assert_true(space_physical(sp) <= limit);
    } while (rc == BF_OK);
    assert_int_equal(rc, BF_ELIMIT);
    assert_limit_error(sp);
    /* Text compresses: more logical bytes went in than the limit allows physically. */
    assert_true(logical > limit);
    t_image_check(f, &img, "compressed at the limit");
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    t_image_free(&img);
}

/*
 * The default limit: 90% of the bytes free on the space's file system when
 * it is made, as bf_space_temp_limit reports it; 0 is none, a number is
 * itself, and setting BF_TEMP_LIMIT_AUTO again resolves it again.
 */
static void test_default_limit(void **state)
{
    (void)state;
    bf_space_options o;
    bf_space_options_init(&o);
    assert_true(o.temp_limit == BF_TEMP_LIMIT_AUTO);
    o.temp_dir = parent;
    bf_space *sp = t_space_opts(&o);
    struct statvfs v;
    assert_int_equal(statvfs(parent, &v), 0);
    double want = (double)v.f_bavail * (double)v.f_frsize * 0.9;
    double got = (double)bf_space_temp_limit(sp);
    /* Other processes write too: within 2% of what the file system says now. */
    if (got < want * 0.98 || got > want * 1.02)
        fail_msg("default limit %.0f, 90%% of the free bytes is %.0f", got, want);
    bf_space_set_temp_limit(sp, 12345);
    assert_int_equal(bf_space_temp_limit(sp), 12345);
    bf_space_set_temp_limit(sp, 0);
    assert_int_equal(bf_space_temp_limit(sp), 0);
    bf_space_set_temp_limit(sp, BF_TEMP_LIMIT_AUTO);
    got = (double)bf_space_temp_limit(sp);
    assert_true(got > want * 0.98 && got < want * 1.02);
    bf_space_destroy(sp);
    sp = limited_space(BF_CODEC_NONE, 0);
    assert_int_equal(bf_space_temp_limit(sp), 0);
    bf_space_destroy(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_limit),
        cmocka_unit_test(test_limit_bites_and_lifts),
        cmocka_unit_test(test_limit_counts_all_files),
        cmocka_unit_test(test_lowered_limit),
        cmocka_unit_test(test_limit_compressed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
