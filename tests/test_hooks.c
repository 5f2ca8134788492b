/*
 * test_hooks.c - bf_io_hooks, bf_space_errno and bf_file_abort.
 *
 * The hooks must see every transfer as a start/done pair of the right
 * kind, count logical blocks loaded and stored whatever the codec and
 * however many blocks one system call carries (so a caller's block counts
 * do not depend on compression), and keep the caller's descriptor count
 * equal to the descriptors the space holds, also when the caller refuses
 * more. A space without hooks runs the plain table. bf_file_abort persists
 * nothing and minds no vanished set directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "buffile.h"
#include "segment.h"
#include "space.h"
#include "support.h"

T_PARENT_FIXTURE("hooks")

#define BS 8192u

typedef struct counts {
    int started[3], done[3], open_op; /* open_op: a start not yet done, +1 per level */
    uint64_t blocks[3];
    int fds, fds_peak, fd_limit, acquired, released, refused;
} counts;

static void on_start(void *ctx, bf_io_op op)
{
    counts *c = ctx;
    assert_int_equal(c->open_op, 0); /* transfers never nest */
    c->open_op++;
    c->started[op]++;
}

static void on_done(void *ctx, bf_io_op op)
{
    counts *c = ctx;
    assert_int_equal(c->open_op, 1);
    c->open_op--;
    c->done[op]++;
}

static void on_blocks(void *ctx, bf_io_op op, uint64_t n)
{
    ((counts *)ctx)->blocks[op] += n;
}

static int on_acquire(void *ctx, int must)
{
    counts *c = ctx;
    if (!must && c->fd_limit > 0 && c->fds >= c->fd_limit) {
        c->refused++;
        return 0;
    }
    c->fds++;
    c->acquired++;
    if (c->fds > c->fds_peak)
        c->fds_peak = c->fds;
    return 1;
}

static void on_release(void *ctx)
{
    counts *c = ctx;
    c->fds--;
    c->released++;
}

static bf_space *hooked_space(bf_codec codec, counts *c, uint32_t max_fds)
{
    static bf_io_hooks h;
    h = (bf_io_hooks){on_start, on_done, on_blocks, on_acquire, on_release, c};
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = BS;
    o.max_open_fds = max_fds;
    o.io_hooks = &h;
    return t_space_opts(&o);
}

/*
 * Write 100 blocks and a half through the stream API, write out and drop
 * the buffer (as a BufFile does when it seeks away), read them back.
 */
static void spill(bf_space *sp, bf_file **out)
{
    static unsigned char data[100 * BS + BS / 2], got[sizeof(data)];
    t_rng r = {7};
    t_fill(&r, T_DATA_TEXT, data, sizeof(data));
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_file_release_buffer(f), BF_OK);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(f, got, sizeof(got)), (int64_t)sizeof(got));
    assert_memory_equal(got, data, sizeof(data));
    *out = f;
}

static void test_blocks_do_not_depend_on_codec(void **state)
{
    (void)state;
    uint64_t w[2], rd[2];
    bf_codec codecs[2] = {BF_CODEC_NONE, BF_CODEC_LZ4};
    for (int i = 0; i < 2; i++) {
        if (!bf_codec_available(codecs[i]))
            skip();
        counts c = {0};
        bf_space *sp = hooked_space(codecs[i], &c, 0);
        bf_file *f;
        spill(sp, &f);
        w[i] = c.blocks[BF_IO_WRITE];
        rd[i] = c.blocks[BF_IO_READ];
        /* 101 blocks stored (the half one when the buffer went), all loaded again, each once */
        assert_int_equal(w[i], 101);
        assert_int_equal(rd[i], 101);
        bf_stats st;
        bf_file_stats(f, &st);
        assert_int_equal(st.blocks_read, rd[i]);
        assert_int_equal(st.blocks_compressed + st.blocks_raw, w[i]);
        assert_int_equal(bf_file_close(f), BF_OK);
        bf_space_destroy(sp);
        assert_int_equal(c.open_op, 0);
    }
    assert_int_equal(w[0], w[1]);
    assert_int_equal(rd[0], rd[1]);
}

static void test_transfers_are_bracketed(void **state)
{
    (void)state;
    counts c = {0};
    bf_space *sp = hooked_space(BF_CODEC_NONE, &c, 0);
    bf_file *f;
    spill(sp, &f);
    /* batched writes and read-ahead: fewer system calls than blocks, at least one each */
    assert_true(c.started[BF_IO_WRITE] >= 1 && c.started[BF_IO_WRITE] < 101);
    assert_true(c.started[BF_IO_READ] >= 1 && c.started[BF_IO_READ] < 101);
    assert_int_equal(c.started[BF_IO_TRUNCATE], 0);
    assert_int_equal(bf_file_truncate(f, 10 * BS), BF_OK);
    assert_int_equal(c.started[BF_IO_TRUNCATE], 1);
    for (int op = 0; op < 3; op++)
        assert_int_equal(c.started[op], c.done[op]);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
}

/* Files in a round robin, writing one block each turn: every turn needs another descriptor. */
static void test_descriptors_follow_the_space(void **state)
{
    (void)state;
    counts c = {0};
    c.fd_limit = 2;
    bf_space *sp = hooked_space(BF_CODEC_LZ4, &c, 16);
    enum { N = 6 };
    bf_file *f[N];
    static unsigned char blk[BS];
    memset(blk, 'x', sizeof(blk));
    for (int i = 0; i < N; i++)
        assert_int_equal(bf_file_create(sp, NULL, &f[i]), BF_OK);
    for (int round = 0; round < 4; round++)
        for (int i = 0; i < N; i++) {
            assert_int_equal(bf_file_write_block(f[i], (uint64_t)round, blk), BF_OK);
            assert_int_equal(c.fds, (int)sp->segs->fds_open);
        }
    assert_true(c.refused > 0);
    assert_int_equal(c.fds_peak, 2);
    for (int i = 0; i < N; i++) {
        unsigned char got[BS];
        assert_int_equal(bf_file_read_block(f[i], 3, got), BF_OK);
        assert_memory_equal(got, blk, BS);
        assert_int_equal(bf_file_close(f[i]), BF_OK);
    }
    assert_int_equal(c.fds, 0);
    bf_space_destroy(sp);
    assert_int_equal(c.acquired, c.released);
}

/* A failed open is released at once: the caller's count never drifts. */
static void test_failed_open_is_released(void **state)
{
    (void)state;
    counts c = {0};
    bf_space *sp = hooked_space(BF_CODEC_NONE, &c, 0);
    bf_file *f;
    char missing[700];
    snprintf(missing, sizeof(missing), "%s/no-such-set", parent);
    assert_int_equal(bf_file_open_named(sp, missing, "x", BF_OPEN_READONLY, &f), BF_ENOENT);
    assert_int_equal(bf_space_errno(sp), ENOENT);
    assert_int_equal(c.fds, 0);
    bf_space_destroy(sp);
    assert_int_equal(c.acquired, c.released);
}

static void test_no_hooks_no_wrapper(void **state)
{
    (void)state;
    bf_space *sp = t_space(parent, BF_CODEC_NONE, BS, NULL);
    assert_null(sp->ios.hooked);
    assert_ptr_equal(sp->ios.io.pread, bf_posix_io.pread);
    assert_ptr_equal(sp->ios.io.pwritev, bf_posix_io.pwritev);
    assert_null(sp->ios.hooks.blocks);
    bf_space_destroy(sp);
}

static void test_errno_of_last_failure(void **state)
{
    (void)state;
    bf_space *sp = t_space(parent, BF_CODEC_NONE, BS, NULL);
    assert_int_equal(bf_space_errno(sp), 0);
    bf_file *f;
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "absent", BF_OPEN_READONLY, &f), BF_ENOENT);
    assert_int_equal(bf_space_errno(sp), ENOENT);
    /* a failure without an errno clears it */
    assert_int_equal(bf_file_create_named(sp, set, "bad/name", NULL, &f), BF_EINVAL);
    assert_int_equal(bf_space_errno(sp), 0);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
}

static void test_abort_persists_nothing(void **state)
{
    (void)state;
    bf_space *sp = t_space(parent, BF_CODEC_LZ4, BS, NULL);
    static unsigned char data[3 * BS], got[3 * BS];
    memset(data, 'a', sizeof(data));
    struct stat st;

    /* never persisted: gone, name free */
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, "f", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_file_abort(f), BF_OK);
    assert_int_equal(t_dir_entries(set), 0);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ENOENT);

    /* persisted, reopened read-write and changed, aborted: the persisted version stays */
    assert_int_equal(bf_file_create_named(sp, set, "f", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READWRITE, &f), BF_OK);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_END), BF_OK);
    memset(got, 'b', sizeof(got));
    assert_int_equal(bf_file_write(f, got, sizeof(got)), BF_OK);
    assert_int_equal(bf_file_abort(f), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_size(f), sizeof(data));
    assert_int_equal(bf_file_read(f, got, sizeof(got)), (int64_t)sizeof(data));
    assert_memory_equal(got, data, sizeof(data));
    assert_int_equal(bf_file_abort(f), BF_OK); /* read-only: just goes */

    /* the set removed under a writable handle: abort is quiet, nothing comes back */
    assert_int_equal(bf_file_create_named(sp, set, "g", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    assert_int_equal(bf_file_abort(f), BF_OK);
    assert_int_equal(stat(set, &st), -1);

    /* anonymous: deleted as by close */
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_file_abort(f), BF_OK);
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), 0);
    assert_int_equal(bf_file_abort(NULL), BF_OK);
    bf_space_destroy(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_do_not_depend_on_codec),
        cmocka_unit_test(test_transfers_are_bracketed),
        cmocka_unit_test(test_descriptors_follow_the_space),
        cmocka_unit_test(test_failed_open_is_released),
        cmocka_unit_test(test_no_hooks_no_wrapper),
        cmocka_unit_test(test_errno_of_last_failure),
        cmocka_unit_test(test_abort_persists_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
