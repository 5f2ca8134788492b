/*
 * test_memory.c - per-file memory, measured through the allocator hooks.
 *
 * Per open file: one block buffer + the block map + a struct under 256
 * bytes. 10,000 open files of 8 KiB blocks must stay under 100 MiB in
 * total, and codec contexts must belong to the space, so a zstd file
 * costs no more than an uncompressed one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buffile.h"
#include "file.h"
#include "support.h"

static void test_struct_size(void **state)
{
    (void)state;
    assert_true(sizeof(struct bf_file) < 256);
    /* with its own allocator ctx behind it (bf_file_options.alloc_ctx): still one 256-byte
       chunk of a power-of-two allocator */
    assert_true(sizeof(struct bf_file) + sizeof(void *) <= 256);
    assert_int_equal(sizeof(bf_map_entry), 16);
}

static void test_ten_thousand_files(void **state)
{
    (void)state;
    char parent[512];
    t_temp_parent(parent, sizeof(parent), "memory");
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = t_space(parent, BF_CODEC_ZSTD, 8192, &cnt.hooks);
    enum { NFILES = 10000 };
    bf_file **files = malloc(sizeof(*files) * NFILES);
    static unsigned char data[20000];
    t_rng r = {1};
    t_fill(&r, T_DATA_TEXT, data, sizeof(data));
    for (int i = 0; i < NFILES; i++) {
        assert_int_equal(bf_file_create(sp, NULL, &files[i]), BF_OK);
        /* Two whole blocks on disk and a partial one in the buffer: a typical batch file. */
        assert_int_equal(bf_file_write(files[i], data, sizeof(data)), BF_OK);
    }
    double mib = (double)cnt.peak_bytes / (1024.0 * 1024.0);
    printf("10000 open files, 8 KiB blocks: peak %.1f MiB through the hooks (%.0f bytes/file)\n",
           mib, (double)cnt.peak_bytes / NFILES);
    assert_true(cnt.peak_bytes < 100ll * 1024 * 1024);
    /* Every file reads back. */
    static unsigned char got[20000];
    for (int i = 0; i < NFILES; i += 97) {
        assert_int_equal(bf_file_seek(files[i], 0, BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_read(files[i], got, sizeof(got)), (int64_t)sizeof(got));
        assert_memory_equal(got, data, sizeof(data));
    }
    for (int i = 0; i < NFILES; i++)
        assert_int_equal(bf_file_close(files[i]), BF_OK);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
    free(files);
    t_rm_rf(parent);
}

/* Live bytes added by `n` files of `codec`, each with one written block. */
static int64_t cost_of_files(const char *parent, bf_codec codec, int n)
{
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = t_space(parent, BF_CODEC_NONE, 8192, &cnt.hooks);
    bf_file_options fo;
    bf_file_options_init(&fo);
    fo.codec = codec;
    static unsigned char data[8192];
    t_rng r = {2};
    t_fill(&r, T_DATA_TEXT, data, sizeof(data));
    bf_file *first;
    assert_int_equal(bf_file_create(sp, &fo, &first), BF_OK);
    assert_int_equal(bf_file_write_block(first, 0, data), BF_OK); /* contexts exist now */
    int64_t before = cnt.live_bytes;
    for (int i = 0; i < n; i++) {
        bf_file *f;
        assert_int_equal(bf_file_create(sp, &fo, &f), BF_OK);
        assert_int_equal(bf_file_write_block(f, 0, data), BF_OK);
        assert_int_equal(bf_file_write(f, data, 100), BF_OK);
    }
    int64_t cost = cnt.live_bytes - before;
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
    return cost;
}

static void test_codec_state_is_per_space(void **state)
{
    (void)state;
    char parent[512];
    t_temp_parent(parent, sizeof(parent), "memory-codec");
    int64_t none = cost_of_files(parent, BF_CODEC_NONE, 200);
    for (int c = 1; c < 4; c++) {
        int64_t cost = cost_of_files(parent, (bf_codec)c, 200);
        printf("200 files with %s: %lld bytes (none: %lld)\n", bf_codec_name((bf_codec)c),
               (long long)cost, (long long)none);
        assert_int_equal(cost, none);
    }
    t_rm_rf(parent);
}

static void test_memory_figure_and_release(void **state)
{
    (void)state;
    /* bf_stats.memory_bytes moves exactly as the allocator sees per-file memory move,
       and releasing buffers gives back one block per file. */
    char parent[512];
    t_temp_parent(parent, sizeof(parent), "memory-figure");
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = t_space(parent, BF_CODEC_LZ4, 8192, &cnt.hooks);
    static unsigned char data[20000], got[20000];
    t_rng r = {3};
    t_fill(&r, T_DATA_TEXT, data, sizeof(data));
    bf_file *first;
    assert_int_equal(bf_file_create(sp, NULL, &first), BF_OK);
    assert_int_equal(bf_file_write(first, data, sizeof(data)), BF_OK); /* contexts exist now */
    bf_stats st;
    bf_space_stats(sp, &st);
    int64_t gap = cnt.live_bytes - (int64_t)st.memory_bytes;
    bf_file *files[100];
    for (int i = 0; i < 100; i++) {
        assert_int_equal(bf_file_create(sp, NULL, &files[i]), BF_OK);
        assert_int_equal(bf_file_write(files[i], data, sizeof(data)), BF_OK);
    }
    bf_space_stats(sp, &st);
    assert_int_equal(cnt.live_bytes - (int64_t)st.memory_bytes, gap);
    for (int i = 0; i < 100; i++) /* the last block's extent joins the map first */
        assert_int_equal(bf_file_flush(files[i]), BF_OK);
    bf_space_stats(sp, &st);
    assert_int_equal(cnt.live_bytes - (int64_t)st.memory_bytes, gap);
    uint64_t before = st.memory_bytes;
    for (int i = 0; i < 100; i++)
        assert_int_equal(bf_file_release_buffer(files[i]), BF_OK);
    bf_space_stats(sp, &st);
    assert_int_equal(before - st.memory_bytes, 100 * 8192);
    assert_int_equal(cnt.live_bytes - (int64_t)st.memory_bytes, gap);
    for (int i = 0; i < 100; i += 9) { /* data written before the release reads back */
        assert_int_equal(bf_file_seek(files[i], 0, BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_read(files[i], got, sizeof(got)), (int64_t)sizeof(got));
        assert_memory_equal(got, data, sizeof(data));
    }
    bf_file_stats(files[0], &st);
    assert_true(st.memory_bytes >= 8192 && st.memory_bytes < 8192 + 1024);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
    t_rm_rf(parent);
}

/*
 * bf_file_options.alloc_ctx: a file's own memory (struct, buffer, map,
 * free list, named state) goes through the space's hooks with the file's
 * ctx, all of it given back at close; the space's memory does not grow with
 * such files. Anonymous files, and named ones created and opened.
 */
static void test_file_memory_in_its_own_ctx(void **state)
{
    (void)state;
    char parent[512], set[600];
    t_temp_parent(parent, sizeof(parent), "memory-ctx");
    t_counting cnt, fc, oc;
    t_counting_init(&cnt);
    t_counting_init(&fc);
    t_counting_init(&oc);
    bf_space *sp = t_space(parent, BF_CODEC_LZ4, 8192, &cnt.hooks);
    static unsigned char data[20000], got[20000];
    t_rng r = {5};
    t_fill(&r, T_DATA_TEXT, data, sizeof(data));
    snprintf(set, sizeof(set), "%s/set", parent);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    bf_file *warm; /* the space's contexts and scratch exist before the measure */
    assert_int_equal(bf_file_create(sp, NULL, &warm), BF_OK);
    assert_int_equal(bf_file_write(warm, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_file_close(warm), BF_OK);
    int64_t space_before = cnt.live_bytes;

    bf_file_options o;
    bf_file_options_init(&o);
    o.alloc_ctx = &fc;
    bf_file *files[20];
    for (int i = 0; i < 20; i++) {
        assert_int_equal(bf_file_create(sp, &o, &files[i]), BF_OK);
        assert_int_equal(bf_file_write(files[i], data, sizeof(data)), BF_OK);
        assert_int_equal(bf_file_flush(files[i]), BF_OK);
    }
    bf_file *named;
    assert_int_equal(bf_file_create_named(sp, set, "n", &o, &named), BF_OK);
    assert_int_equal(bf_file_write(named, data, sizeof(data)), BF_OK);
    /* every byte of the files is in their ctx: a buffer, a map, a struct each */
    assert_true(fc.live_bytes >= 21 * (8192 + (int64_t)sizeof(struct bf_file)));
    assert_int_equal(cnt.live_bytes, space_before);
    int64_t sum = 0;
    for (int i = 0; i < 20; i++) {
        bf_stats st;
        bf_file_stats(files[i], &st);
        sum += (int64_t)st.memory_bytes;
    }
    assert_true(sum <= fc.live_bytes);
    assert_int_equal(bf_file_close(named), BF_OK); /* persists its index */
    for (int i = 0; i < 20; i++)
        assert_int_equal(bf_file_close(files[i]), BF_OK);
    assert_int_equal(fc.live_bytes, 0);

    /* a named file opened with a ctx of its own: read, then closed */
    bf_file_options oo;
    bf_file_options_init(&oo);
    oo.alloc_ctx = &oc;
    bf_file *rd;
    assert_int_equal(bf_file_open_named_opts(sp, set, "n", BF_OPEN_READONLY, &oo, &rd), BF_OK);
    assert_int_equal(bf_file_read(rd, got, sizeof(got)), (int64_t)sizeof(got));
    assert_memory_equal(got, data, sizeof(data));
    assert_true(oc.live_bytes >= 8192 + (int64_t)sizeof(struct bf_file));
    assert_int_equal(bf_file_close(rd), BF_OK);
    assert_int_equal(oc.live_bytes, 0);
    assert_int_equal(fc.live_bytes, 0);

    /* a struct_size no header gives is refused */
    oo.struct_size = 3;
    assert_int_equal(bf_file_open_named_opts(sp, set, "n", BF_OPEN_READONLY, &oo, &rd), BF_EINVAL);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
    t_rm_rf(parent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_struct_size),
        cmocka_unit_test(test_ten_thousand_files),
        cmocka_unit_test(test_codec_state_is_per_space),
        cmocka_unit_test(test_memory_figure_and_release),
        cmocka_unit_test(test_file_memory_in_its_own_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
