/*
 * test_allocfail.c - every allocation of a workload fails in turn.
 *
 * The workload (create a space, a file per codec, stream writes, block
 * writes, reads, truncate, discard, close, destroy) runs once per N with
 * the counting allocator failing its N-th allocation, for every N up to
 * the number of allocations the workload makes. Each call must succeed or
 * return BF_ENOMEM with a message; data acknowledged before must read back
 * once memory is available again; and after destroy every byte allocated
 * must have been freed (live_bytes == 0), including when bf_space_create
 * itself is the call that fails.
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
#define NCODECS 4

T_PARENT_FIXTURE("allocfail")

typedef struct run {
    uint64_t fail_at;
    t_counting cnt;
    bf_space *sp;
    bf_file *f[NCODECS];
    t_image img[NCODECS];
    int failures; /* calls that returned BF_ENOMEM */
    const char *op;
} run;

/* A call's status: BF_OK, or BF_ENOMEM with a message; anything else fails the test. */
static int check(run *r, int rc)
{
    if (rc == BF_OK)
        return 0;
    if (rc != BF_ENOMEM)
        fail_msg("fail_at %llu, %s: status %d (%s), expected BF_OK or BF_ENOMEM",
                 (unsigned long long)r->fail_at, r->op, rc, r->sp ? bf_space_errmsg(r->sp) : "");
    if (r->sp != NULL && bf_space_errmsg(r->sp)[0] == '\0')
        fail_msg("fail_at %llu, %s: BF_ENOMEM without a message", (unsigned long long)r->fail_at,
                 r->op);
    r->failures++;
    return 1;
}

/* A stream write at the position; a failed one is forgotten and the position restored. */
static void do_write(run *r, int i, const unsigned char *data, size_t len)
{
    bf_file *f = r->f[i];
    uint64_t pos = bf_file_tell(f);
    r->op = "write";
    if (check(r, bf_file_write(f, data, len))) {
        t_image_resize(&r->img[i], bf_file_size(f));
        t_image_forget(&r->img[i], pos, len);
        assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
    } else {
        t_image_write(&r->img[i], pos, data, len);
    }
}

static void do_write_block(run *r, int i, uint64_t b, const unsigned char *data)
{
    bf_file *f = r->f[i];
    r->op = "write_block";
    if (check(r, bf_file_write_block(f, b, data))) {
        t_image_resize(&r->img[i], bf_file_size(f));
        t_image_forget(&r->img[i], b * BS, BS);
    } else {
        t_image_write(&r->img[i], b * BS, data, BS);
    }
}

/* Read the whole file: BF_ENOMEM, or every known byte right. */
static void do_read_all(run *r, int i)
{
    bf_file *f = r->f[i];
    const t_image *m = &r->img[i];
    unsigned char *got = malloc(m->size + 1);
    assert_non_null(got);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    r->op = "read";
    int64_t n = bf_file_read(f, got, m->size + 1);
    if (n < 0) {
        check(r, (int)n);
    } else {
        assert_int_equal(n, (int64_t)m->size);
        for (uint64_t k = 0; k < m->size; k++)
            if (m->known[k] && got[k] != m->d[k])
                fail_msg("fail_at %llu: file %d byte %llu wrong", (unsigned long long)r->fail_at, i,
                         (unsigned long long)k);
    }
    free(got);
}

static void do_read_block(run *r, int i, uint64_t b)
{
    unsigned char got[BS];
    r->op = "read_block";
    if (check(r, bf_file_read_block(r->f[i], b, got)))
        return;
    const t_image *m = &r->img[i];
    for (uint64_t k = 0; k < BS; k++) {
        uint64_t at = b * BS + k;
        unsigned char want = at < m->size ? m->d[at] : 0;
        if ((at >= m->size || m->known[at]) && got[k] != want)
            fail_msg("fail_at %llu: file %d block %llu byte %llu wrong",
                     (unsigned long long)r->fail_at, i, (unsigned long long)b,
                     (unsigned long long)k);
    }
}

static void do_truncate(run *r, int i, uint64_t size)
{
    bf_file *f = r->f[i];
    uint64_t old = bf_file_size(f);
    r->op = "truncate";
    if (!check(r, bf_file_truncate(f, size)) || bf_file_size(f) == size) {
        t_image_resize(&r->img[i], size);
        return;
    }
    assert_int_equal(bf_file_size(f), old);
}

static void file_workload(run *r, int i, t_rng *rng)
{
    unsigned char data[3 * BS];
    t_fill(rng, T_DATA_MIXED, data, sizeof(data));
    for (size_t off = 0; off < sizeof(data) - 1000; off += 1000)
        do_write(r, i, data + off, 1000);
    t_fill(rng, T_DATA_TEXT, data, BS);
    do_write_block(r, i, 4, data);
    /* Far out: the block map has to grow (and shrinks again on truncate). */
    do_write_block(r, i, 40, data);
    do_read_all(r, i);
    do_truncate(r, i, BS + BS / 2);
    t_fill(rng, T_DATA_TEXT, data, BS);
    do_write_block(r, i, 1, data);
    do_read_block(r, i, 4);
    do_read_block(r, i, 0);
    r->op = "discard_block";
    if (!check(r, bf_file_discard_block(r->f[i], 0)))
        memset(r->img[i].d, 0, BS);
    assert_int_equal(bf_file_seek(r->f[i], 100, BF_SEEK_SET), BF_OK);
    do_write(r, i, data, 3 * BS);
    do_read_all(r, i);
}

/* Runs the workload with the fail_at-th allocation failing; returns the allocations made. */
static uint64_t workload(uint64_t fail_at, int *failures)
{
    run r;
    memset(&r, 0, sizeof(r));
    r.fail_at = fail_at;
    t_counting_init(&r.cnt);
    r.cnt.fail_at = fail_at;
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.allocator = &r.cnt.hooks;
    char err[256] = "";
    r.op = "space_create";
    if (check(&r, bf_space_create(&o, &r.sp, err, sizeof(err)))) {
        assert_null(r.sp);
        assert_true(err[0] != '\0');
        assert_int_equal(r.cnt.live_bytes, 0);
        *failures = r.failures;
        return r.cnt.calls;
    }
    t_rng rng = {fail_at};
    for (int i = 0; i < NCODECS; i++) {
        bf_file_options fo;
        bf_file_options_init(&fo);
        fo.codec = (bf_codec)i;
        r.op = "file_create";
        if (check(&r, bf_file_create(r.sp, &fo, &r.f[i])))
            assert_null(r.f[i]);
    }
    for (int i = 0; i < NCODECS; i++)
        if (r.f[i] != NULL)
            file_workload(&r, i, &rng);
    uint64_t calls = r.cnt.calls;
    /* Memory is back: everything acknowledged reads back exactly. */
    r.cnt.fail_at = 0;
    for (int i = 0; i < NCODECS; i++) {
        if (r.f[i] == NULL)
            continue;
        char what[64];
        snprintf(what, sizeof(what), "fail_at %llu, %s file", (unsigned long long)fail_at,
                 bf_codec_name((bf_codec)i));
        t_image_check(r.f[i], &r.img[i], what);
        t_image_free(&r.img[i]);
    }
    /* One file closed by hand, the rest left for destroy. */
    if (r.f[1] != NULL)
        assert_int_equal(bf_file_close(r.f[1]), BF_OK);
    bf_space_destroy(r.sp);
    if (r.cnt.live_bytes != 0)
        fail_msg("fail_at %llu: %lld bytes leaked", (unsigned long long)fail_at,
                 (long long)r.cnt.live_bytes);
    *failures = r.failures;
    return calls;
}

static void test_every_allocation_fails_once(void **state)
{
    (void)state;
    int failures;
    uint64_t total = workload(0, &failures);
    assert_int_equal(failures, 0);
    assert_true(total > 20);
    uint64_t reported = 0;
    for (uint64_t n = 1; n <= total; n++) {
        workload(n, &failures);
        reported += failures > 0;
    }
    /* Most allocations are not optional: their failure must surface as BF_ENOMEM. */
    assert_true(reported > total / 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_fails_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
