/*
 * test_faults.c - I/O failures injected through the seam (io.h).
 *
 * A deterministic workload of stream writes, block writes, flushes and
 * truncates runs with the N-th pwritev failing (ENOSPC, EIO, or a short
 * write whose retry fails), for every N up to 40, and with the N-th
 * open/ftruncate/unlink/rename failing (segment files are small, so the
 * workload creates, reopens, truncates and removes them), for every N the
 * workload reaches. The failing call must return the matching status with
 * a message naming the path and the errno text; then, with the fault
 * cleared, every acknowledged byte must read back, the file must keep
 * working and its close must leave nothing behind. Also: read errors, the
 * copy-on-write guarantee of block rewrites, and the position after a
 * failed write.
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
#include "space.h"
#include "support.h"

#define BS 4096u
#define STEPS 80
#define MAX_N 40

T_PARENT_FIXTURE("faults")

/* A space whose I/O goes through the fault table, with one file. */
typedef struct rig {
    t_faults flt;
    bf_io io;
    bf_space *sp;
    bf_file *f;
    t_image img;
    t_rng rng;
    int truncating; /* the step running is a truncate */
    unsigned char buf[3 * BS];
} rig;

static void rig_open(rig *r, bf_codec codec, uint64_t seed)
{
    memset(r, 0, sizeof(*r));
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = BS;
    o.segment_size = 16384; /* several segment files: creation is part of the workload */
    char err[256] = "";
    if (bf_space_create(&o, &r->sp, err, sizeof(err)) != BF_OK)
        fail_msg("bf_space_create: %s", err);
    r->io = t_fault_io(&r->flt);
    bf_space_set_io(r->sp, &r->io);
    assert_int_equal(bf_file_create(r->sp, NULL, &r->f), BF_OK);
    r->rng.s = seed;
}

static void rig_close(rig *r)
{
    assert_int_equal(bf_file_close(r->f), BF_OK);
    assert_int_equal(t_dir_entries(bf_space_dir(r->sp)), 0);
    bf_space_destroy(r->sp);
    t_image_free(&r->img);
}

/* Make the n-th pwritev from now fail (0: no fault). */
static void arm_write(rig *r, uint64_t n, int err, int short_write)
{
    r->flt.writes = 0;
    r->flt.fail_write_at = n;
    r->flt.fail_errno = err;
    r->flt.short_write = short_write;
    r->flt.short_armed = 0;
}

/* Make the n-th open/ftruncate/unlink/rename from now fail (0: no fault). */
static void arm_meta(rig *r, uint64_t n, int err)
{
    r->flt.metas = 0;
    r->flt.fail_meta_at = n;
    r->flt.fail_errno = err;
}

static void assert_fail_msg(const rig *r, int err)
{
    const char *msg = bf_space_errmsg(r->sp);
    if (strstr(msg, bf_space_dir(r->sp)) == NULL || strstr(msg, strerror(err)) == NULL)
        fail_msg("message \"%s\" lacks the path or \"%s\"", msg, strerror(err));
}

/*
 * After a write covering [pos, pos + len) failed: the size may have grown
 * up to the write's end, and its bytes may or may not be in the file.
 */
static void forget_failed(rig *r, uint64_t old_size, uint64_t pos, size_t len)
{
    uint64_t size = bf_file_size(r->f);
    uint64_t hi = pos + len > old_size ? pos + len : old_size;
    if (size < old_size || size > hi)
        fail_msg("size %llu after a failed write, expected %llu..%llu", (unsigned long long)size,
                 (unsigned long long)old_size, (unsigned long long)hi);
    t_image_resize(&r->img, size);
    t_image_forget(&r->img, pos, len);
}

/* One workload call; returns its status, keeping the image in step. */
static int step(rig *r)
{
    bf_file *f = r->f;
    uint64_t op = t_below(&r->rng, 20);
    uint64_t size = bf_file_size(f);
    int rc;
    r->truncating = op >= 19;
    if (op < 12) {
        if (t_below(&r->rng, 4) == 0)
            assert_int_equal(bf_file_seek(f, (int64_t)t_below(&r->rng, size + BS), BF_SEEK_SET),
                             BF_OK);
        uint64_t pos = bf_file_tell(f);
        size_t len = 1 + (size_t)t_below(&r->rng, 3 * BS);
        t_fill(&r->rng, T_DATA_MIXED, r->buf, len);
        rc = bf_file_write(f, r->buf, len);
        if (rc == BF_OK) {
            t_image_write(&r->img, pos, r->buf, len);
        } else {
            forget_failed(r, size, pos, len);
            assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
        }
    } else if (op < 17) {
        uint64_t b = t_below(&r->rng, size / BS + 2);
        t_fill(&r->rng, T_DATA_MIXED, r->buf, BS);
        rc = bf_file_write_block(f, b, r->buf);
        if (rc == BF_OK)
            t_image_write(&r->img, b * BS, r->buf, BS);
        else
            forget_failed(r, size, b * BS, BS);
    } else if (op < 19) {
        /* A failed flush keeps the dirty buffer: nothing acknowledged is forgotten. */
        rc = bf_file_flush(f);
    } else {
        uint64_t to = t_below(&r->rng, size + 1);
        rc = bf_file_truncate(f, to);
        if (rc == BF_OK) {
            t_image_resize(&r->img, to);
        } else if (bf_file_size(f) != size) {
            assert_int_equal(bf_file_size(f), to);
            t_image_resize(&r->img, to);
        }
    }
    return rc;
}

typedef struct fault_kind {
    const char *name;
    int err;
    int short_write;
    int meta;   /* fails the n-th open/ftruncate/unlink/rename, not the n-th pwritev */
    int status; /* for meta faults, BF_EIO is also right: a failed unlink or ftruncate is I/O */
} fault_kind;

static const fault_kind kinds[] = {
    {"ENOSPC", ENOSPC, 0, 0, BF_ENOSPC},       {"EIO", EIO, 0, 0, BF_EIO},
    {"short+ENOSPC", ENOSPC, 1, 0, BF_ENOSPC}, {"short+EIO", EIO, 1, 0, BF_EIO},
    {"meta ENOSPC", ENOSPC, 0, 1, BF_ENOSPC},  {"meta EIO", EIO, 0, 1, BF_EIO},
};

/* Calls the workload makes without faults: every N up to them must hit a call. */
static void clean_calls(bf_codec codec, uint64_t seed, uint64_t *writes, uint64_t *metas)
{
    rig r;
    rig_open(&r, codec, seed);
    r.flt.metas = 0;
    for (int s = 0; s < STEPS; s++)
        assert_int_equal(step(&r), BF_OK);
    *writes = r.flt.writes;
    *metas = r.flt.metas;
    t_image_check(r.f, &r.img, "clean run");
    rig_close(&r);
}

static void run_with_fault(bf_codec codec, uint64_t seed, const fault_kind *k, uint64_t n,
                           uint64_t calls)
{
    rig r;
    rig_open(&r, codec, seed);
    if (k->meta)
        arm_meta(&r, n, k->err);
    else
        arm_write(&r, n, k->err, k->short_write);
    int failed = 0, given_back = 0;
    for (int s = 0; s < STEPS && !failed && !given_back; s++) {
        const char *before = r.flt.fired;
        int rc = step(&r);
        /* Giving space back (the ftruncate, unlink or reopen of a shrinking truncate) is not
           what the caller asked for: the truncate still succeeds and the space stays free
           in the file (buffile.h). Every other fault must fail its call. */
        if (rc == BF_OK && r.flt.fired != before) {
            if (!r.truncating)
                fail_msg("%s at call %llu: %s failed inside a call that succeeded", k->name,
                         (unsigned long long)n, r.flt.fired);
            given_back = 1;
        }
        if (rc == BF_OK)
            continue;
        failed = 1;
        if (rc != k->status && !(k->meta && rc == BF_EIO))
            fail_msg("%s at call %llu: status %d (%s), expected %d", k->name, (unsigned long long)n,
                     rc, bf_space_errmsg(r.sp), k->status);
        assert_fail_msg(&r, k->err);
    }
    if (n <= calls && !failed && !given_back)
        fail_msg("%s at call %llu of %llu: no call failed", k->name, (unsigned long long)n,
                 (unsigned long long)calls);
    arm_write(&r, 0, 0, 0);
    arm_meta(&r, 0, 0);
    char what[96];
    snprintf(what, sizeof(what), "%s %s at call %llu", bf_codec_name(codec), k->name,
             (unsigned long long)n);
    t_image_check(r.f, &r.img, what);
    /* The file keeps working: more of the same workload, then everything reads back. */
    for (int s = 0; s < 20; s++)
        assert_int_equal(step(&r), BF_OK);
    assert_int_equal(bf_file_flush(r.f), BF_OK);
    t_image_check(r.f, &r.img, what);
    rig_close(&r);
}

static void faults_for(bf_codec codec, uint64_t seed)
{
    uint64_t writes, metas;
    clean_calls(codec, seed, &writes, &metas);
    assert_true(writes >= MAX_N);
    assert_true(metas >= 10);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        uint64_t calls = kinds[k].meta ? metas : writes;
        uint64_t last = kinds[k].meta ? metas : MAX_N;
        for (uint64_t n = 1; n <= last; n++)
            run_with_fault(codec, seed, &kinds[k], n, calls);
    }
}

static void test_write_faults_lz4(void **state)
{
    (void)state;
    faults_for(BF_CODEC_LZ4, 101);
}

static void test_write_faults_none(void **state)
{
    (void)state;
    faults_for(BF_CODEC_NONE, 202);
}

static void test_write_faults_zstd(void **state)
{
    (void)state;
    faults_for(BF_CODEC_ZSTD, 303);
}

/* Whole blocks 0..n-1 written through the block API, recorded in the image. */
static void write_blocks(rig *r, uint64_t n)
{
    for (uint64_t b = 0; b < n; b++) {
        t_fill(&r->rng, T_DATA_TEXT, r->buf, BS);
        assert_int_equal(bf_file_write_block(r->f, b, r->buf), BF_OK);
        t_image_write(&r->img, b * BS, r->buf, BS);
    }
}

/* Rewrite block b with `data` under a fault: the call fails and b keeps what it had. */
static void failed_rewrite(rig *r, uint64_t b, const unsigned char *data)
{
    unsigned char got[BS];
    arm_write(r, 1, EIO, 0);
    assert_int_equal(bf_file_write_block(r->f, b, data), BF_EIO);
    assert_fail_msg(r, EIO);
    arm_write(r, 0, 0, 0);
    assert_int_equal(bf_file_read_block(r->f, b, got), BF_OK);
    if (memcmp(got, r->img.d + b * BS, BS) != 0)
        fail_msg("block %llu lost its previous contents after a failed rewrite",
                 (unsigned long long)b);
    t_image_check(r->f, &r->img, "after a failed rewrite");
}

static void test_block_rewrite_is_copy_on_write(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, BF_CODEC_LZ4, 404);
    write_blocks(&r, 10);
    unsigned char fresh[BS], old3[BS];
    t_fill(&r.rng, T_DATA_MIXED, fresh, BS);
    /* Block on disk only: the new extent would go to the end. */
    failed_rewrite(&r, 3, fresh);
    /*
     * Block 3's old contents written as block 2 need exactly the chunk freed
     * by discarding block 3: the failed write must give the chunk back, so
     * the successful retry reuses it instead of growing the file.
     */
    memcpy(old3, r.img.d + 3 * BS, BS);
    assert_int_equal(bf_file_discard_block(r.f, 3), BF_OK);
    memset(r.img.d + 3 * BS, 0, BS);
    bf_stats before, after;
    bf_file_stats(r.f, &before);
    failed_rewrite(&r, 2, old3);
    assert_int_equal(bf_file_write_block(r.f, 2, old3), BF_OK);
    t_image_write(&r.img, 2 * BS, old3, BS);
    bf_file_stats(r.f, &after);
    assert_int_equal(after.physical_bytes, before.physical_bytes);
    /* Block loaded (clean) into the buffer by a partial read. */
    unsigned char got[100];
    assert_int_equal(bf_file_seek(r.f, 5 * BS + 10, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(r.f, got, sizeof(got)), (int64_t)sizeof(got));
    failed_rewrite(&r, 5, fresh);
    /* Block in the buffer with acknowledged, not yet stored bytes. */
    t_fill(&r.rng, T_DATA_TEXT, got, sizeof(got));
    assert_int_equal(bf_file_seek(r.f, 6 * BS + 10, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(r.f, got, sizeof(got)), BF_OK);
    t_image_write(&r.img, 6 * BS + 10, got, sizeof(got));
    failed_rewrite(&r, 6, fresh);
    /* The rewrites succeed once the fault is gone. */
    for (uint64_t b = 5; b <= 6; b++) {
        assert_int_equal(bf_file_write_block(r.f, b, fresh), BF_OK);
        t_image_write(&r.img, b * BS, fresh, BS);
    }
    t_image_check(r.f, &r.img, "after the successful rewrites");
    rig_close(&r);
}

static void test_failed_write_keeps_position(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, BF_CODEC_LZ4, 505);
    t_fill(&r.rng, T_DATA_TEXT, r.buf, 3 * BS);
    assert_int_equal(bf_file_write(r.f, r.buf, 100), BF_OK);
    /* The write fills the rest of block 0 in the buffer, then fails storing it. */
    arm_write(&r, 1, ENOSPC, 0);
    assert_int_equal(bf_file_write(r.f, r.buf + 100, 2 * BS), BF_ENOSPC);
    /* buffile.h: "on error the position is unchanged" */
    assert_int_equal(bf_file_tell(r.f), 100);
    arm_write(&r, 0, 0, 0);
    assert_int_equal(bf_file_write(r.f, r.buf + 100, 2 * BS), BF_OK);
    t_image_write(&r.img, 0, r.buf, 2 * BS + 100);
    t_image_check(r.f, &r.img, "after the retried write");
    rig_close(&r);
}

/*
 * A segment that cannot be removed at close: the close says so (path and
 * errno), and destroying the space still removes the file and the directory.
 */
static void test_failed_unlink_at_close(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, BF_CODEC_LZ4, 808);
    write_blocks(&r, 12); /* 48 KiB over 16 KiB segments: several segment files */
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(r.sp));
    arm_meta(&r, 1, EIO);
    assert_int_equal(bf_file_close(r.f), BF_EIO);
    assert_fail_msg(&r, EIO);
    assert_non_null(strstr(bf_space_errmsg(r.sp), "unlink"));
    arm_meta(&r, 0, 0);
    assert_true(t_dir_entries(dir) > 0);
    bf_space_destroy(r.sp);
    assert_int_equal(t_dir_entries(dir), -1);
    t_image_free(&r.img);
}

static void test_read_faults(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, BF_CODEC_ZLIB, 606);
    write_blocks(&r, 8);
    unsigned char got[BS];
    /* The block API reads straight into the caller's memory. */
    r.flt.reads = 0;
    r.flt.fail_read_at = 1;
    r.flt.fail_errno = EIO;
    assert_int_equal(bf_file_read_block(r.f, 2, got), BF_EIO);
    assert_fail_msg(&r, EIO);
    r.flt.fail_read_at = 0;
    assert_int_equal(bf_file_read_block(r.f, 2, got), BF_OK);
    assert_memory_equal(got, r.img.d + 2 * BS, BS);
    /* A partial stream read goes through the buffer; the failed load must not stick. */
    assert_int_equal(bf_file_seek(r.f, 4 * BS + 7, BF_SEEK_SET), BF_OK);
    r.flt.reads = 0;
    r.flt.fail_read_at = 1;
    assert_int_equal(bf_file_read(r.f, got, 50), BF_EIO);
    assert_fail_msg(&r, EIO);
    r.flt.fail_read_at = 0;
    assert_int_equal(bf_file_seek(r.f, 4 * BS + 7, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(r.f, got, 50), 50);
    assert_memory_equal(got, r.img.d + 4 * BS + 7, 50);
    /* A read failure while loading for a partial write: the write fails, nothing changes. */
    assert_int_equal(bf_file_seek(r.f, 6 * BS + 7, BF_SEEK_SET), BF_OK);
    r.flt.reads = 0;
    r.flt.fail_read_at = 1;
    assert_int_equal(bf_file_write(r.f, "xyz", 3), BF_EIO);
    r.flt.fail_read_at = 0;
    t_image_forget(&r.img, 6 * BS + 7, 3);
    t_image_check(r.f, &r.img, "after read faults");
    rig_close(&r);
}

/*
 * An I/O table whose transfers are short at random (but make progress):
 * the library must loop until every byte is written or read, cutting
 * iovecs at any point, header included.
 */
typedef struct choppy {
    t_rng rng;
    uint64_t calls, short_calls;
} choppy;

static ssize_t choppy_pwritev(void *ctx, int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    choppy *c = ctx;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    size_t want =
        total > 1 && t_below(&c->rng, 2) ? 1 + (size_t)t_below(&c->rng, total - 1) : total;
    struct iovec v[8];
    int n = 0;
    for (size_t left = want; n < iovcnt && left > 0; n++) {
        v[n] = iov[n];
        if (v[n].iov_len > left)
            v[n].iov_len = left;
        left -= v[n].iov_len;
    }
    c->calls++;
    c->short_calls += want < total;
    return bf_posix_io.pwritev(NULL, fd, v, n, off);
}

static ssize_t choppy_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    choppy *c = ctx;
    size_t want = len > 1 && t_below(&c->rng, 2) ? 1 + (size_t)t_below(&c->rng, len - 1) : len;
    c->short_calls += want < len;
    return bf_posix_io.pread(NULL, fd, buf, want, off);
}

static void test_short_transfers_are_completed(void **state)
{
    (void)state;
    static const bf_codec codecs[] = {BF_CODEC_NONE, BF_CODEC_LZ4};
    for (size_t c = 0; c < 2; c++) {
        rig r;
        rig_open(&r, codecs[c], 707 + c);
        choppy ch = {{99 + c}, 0, 0};
        bf_io io = bf_posix_io;
        io.pwritev = choppy_pwritev;
        io.pread = choppy_pread;
        io.ctx = &ch;
        bf_space_set_io(r.sp, &io);
        for (int s = 0; s < STEPS; s++)
            assert_int_equal(step(&r), BF_OK);
        assert_int_equal(bf_file_flush(r.f), BF_OK);
        t_image_check(r.f, &r.img, "short transfers");
        assert_true(ch.short_calls > 20);
        rig_close(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_faults_lz4),
        cmocka_unit_test(test_write_faults_none),
        cmocka_unit_test(test_write_faults_zstd),
        cmocka_unit_test(test_block_rewrite_is_copy_on_write),
        cmocka_unit_test(test_failed_write_keeps_position),
        cmocka_unit_test(test_failed_unlink_at_close),
        cmocka_unit_test(test_read_faults),
        cmocka_unit_test(test_short_transfers_are_completed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
