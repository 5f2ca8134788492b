/*
 * test_fileset.c - named files shared between spaces, threads and processes.
 *
 * A writer exports a compressed file; readers in other threads and in
 * forked processes open it by name and read random blocks concurrently;
 * several files are appended (spliced) into one and read across the
 * seams; read-write reopen + append + truncate cycles run against an
 * in-memory model; broken or missing indexes give clear errors; deleting
 * the set removes everything.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "buffile.h"
#include "crc32c.h"
#include "index.h"
#include "le.h"
#include "space.h"
#include "support.h"

T_PARENT_FIXTURE("fileset")

/* The reference contents of a file: deterministic from (seed, size). */
static unsigned char *make_data(uint64_t seed, size_t size)
{
    unsigned char *d = malloc(size + 1);
    t_rng r = {seed};
    t_fill(&r, T_DATA_MIXED, d, size);
    return d;
}

static bf_space *space(bf_codec codec)
{
    return t_space(parent, codec, 8192, NULL);
}

static void write_named(bf_space *sp, const char *name, const unsigned char *d, size_t size)
{
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, name, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, size), BF_OK);
    assert_int_equal(bf_file_export(f), BF_OK);
    assert_int_equal(bf_file_write(f, "x", 1), BF_EREADONLY);
    assert_int_equal(bf_file_close(f), BF_OK);
}

/* Read `n` random ranges from the named file and compare; returns the number that differed. */
static int read_random(const char *name, const unsigned char *d, size_t size, uint64_t seed, int n)
{
    bf_space *sp = space(BF_CODEC_NONE); /* the file's own codec wins */
    bf_file *f;
    int bad = 0;
    if (bf_file_open_named(sp, set, name, BF_OPEN_READONLY, &f) != BF_OK) {
        bf_space_destroy(sp);
        return n;
    }
    bad += bf_file_size(f) != size;
    t_rng r = {seed};
    static __thread unsigned char buf[70000];
    for (int i = 0; i < n; i++) {
        uint64_t off = t_below(&r, size);
        size_t len = (size_t)t_below(&r, sizeof(buf));
        if (bf_file_seek(f, (int64_t)off, BF_SEEK_SET) != BF_OK) {
            bad++;
            continue;
        }
        int64_t got = bf_file_read(f, buf, len);
        size_t expect = size - off < len ? size - off : len;
        bad += got != (int64_t)expect || memcmp(buf, d + off, expect) != 0;
    }
    bf_file_close(f);
    bf_space_destroy(sp);
    return bad;
}

typedef struct reader_arg {
    const unsigned char *d;
    size_t size;
    uint64_t seed;
    int bad;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    a->bad = read_random("shared", a->d, a->size, a->seed, 300);
    return NULL;
}

static void test_export_threads_and_processes(void **state)
{
    (void)state;
    for (int c = 0; c < 4; c++) {
        bf_space *w = space((bf_codec)c);
        assert_int_equal(bf_fileset_create(w, set), BF_OK);
        size_t size = 3 * 1024 * 1024 + 123;
        unsigned char *d = make_data(100 + (uint64_t)c, size);
        write_named(w, "shared", d, size);

        pthread_t th[2];
        reader_arg args[2] = {{d, size, 1, -1}, {d, size, 2, -1}};
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&th[i], NULL, reader, &args[i]), 0);
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
            assert_int_equal(args[i].bad, 0);
        }
        pid_t kids[2];
        for (int i = 0; i < 2; i++) {
            kids[i] = fork();
            assert_true(kids[i] >= 0);
            if (kids[i] == 0)
                _exit(read_random("shared", d, size, 10 + (uint64_t)i, 300) == 0 ? 0 : 1);
        }
        for (int i = 0; i < 2; i++) {
            int st;
            assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
            assert_true(WIFEXITED(st));
            assert_int_equal(WEXITSTATUS(st), 0);
        }
        assert_int_equal(bf_fileset_destroy(w, set), BF_OK);
        assert_int_equal(t_dir_entries(set), -1);
        bf_space_destroy(w);
        free(d);
    }
}

static void test_append(void **state)
{
    (void)state;
    bf_space *sp = space(BF_CODEC_LZ4);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    size_t sizes[3] = {100000, 8192 * 5, 777};
    unsigned char *src[3];
    char name[16];
    for (int i = 0; i < 3; i++) {
        src[i] = make_data(200 + (uint64_t)i, sizes[i]);
        snprintf(name, sizeof(name), "worker%d", i);
        write_named(sp, name, src[i], sizes[i]);
    }
    bf_file *t;
    assert_int_equal(bf_file_create_named(sp, set, "leader", NULL, &t), BF_OK);
    assert_int_equal(bf_file_write(t, "head", 4), BF_OK);
    /* The model: appended data starts at the next block boundary, zeros in between. */
    size_t msize = 4;
    unsigned char *model = calloc(1, 1 << 20);
    memcpy(model, "head", 4);
    for (int i = 0; i < 3; i++) {
        bf_file *s;
        snprintf(name, sizeof(name), "worker%d", i);
        assert_int_equal(bf_file_open_named(sp, set, name, BF_OPEN_READONLY, &s), BF_OK);
        uint64_t start;
        bf_stats before;
        bf_space_stats(sp, &before);
        assert_int_equal(bf_file_append(t, s, &start), BF_OK);
        bf_stats after;
        bf_space_stats(sp, &after);
        assert_int_equal(after.physical_written, before.physical_written); /* nothing copied */
        assert_int_equal(start % 8192, 0);
        assert_true(start >= msize && start < msize + 8192);
        memcpy(model + start, src[i], sizes[i]);
        msize = start + sizes[i];
        assert_int_equal(bf_file_size(t), msize);
        assert_int_equal(bf_file_close(s), BF_OK);
    }
    /* Appending to the target after the splice lands in its own segments. */
    assert_int_equal(bf_file_seek(t, 0, BF_SEEK_END), BF_OK);
    assert_int_equal(bf_file_write(t, "tail", 4), BF_OK);
    memcpy(model + msize, "tail", 4);
    msize += 4;
    /* Not allowed: a writable source, appending to itself, a file of another set. */
    bf_file *w;
    uint64_t start;
    assert_int_equal(bf_file_create_named(sp, set, "writable", NULL, &w), BF_OK);
    assert_int_equal(bf_file_append(t, w, &start), BF_EINVAL);
    assert_int_equal(bf_file_append(t, t, &start), BF_EINVAL);
    bf_file *anon;
    assert_int_equal(bf_file_create(sp, NULL, &anon), BF_OK);
    assert_int_equal(bf_file_append(t, anon, &start), BF_EINVAL);
    assert_int_equal(bf_file_export(anon), BF_EINVAL);
    bf_file_close(anon);
    bf_file_close(w);
    assert_int_equal(bf_file_export(t), BF_OK);
    assert_int_equal(bf_file_close(t), BF_OK);

    /* Another space reads across the seams, via the persisted index with its parts. */
    bf_space *r = space(BF_CODEC_NONE);
    bf_file *f;
    assert_int_equal(bf_file_open_named(r, set, "leader", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_size(f), msize);
    unsigned char *got = malloc(msize);
    assert_int_equal(bf_file_read(f, got, msize), (int64_t)msize);
    assert_memory_equal(got, model, msize);
    for (size_t off = 0; off + 20000 < msize; off += 9973) { /* reads that straddle seams */
        assert_int_equal(bf_file_seek(f, (int64_t)off, BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_read(f, got, 20000), 20000);
        assert_memory_equal(got, model + off, 20000);
    }
    bf_file_close(f);
    bf_space_destroy(r);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    free(got);
    free(model);
    for (int i = 0; i < 3; i++)
        free(src[i]);
}

static void test_reopen_append_truncate(void **state)
{
    (void)state;
    /* Logical replication's pattern: reopen read-write, append, truncate back. */
    bf_space *sp = space(BF_CODEC_ZSTD);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, "changes", NULL, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK); /* closing persists an empty index */
    size_t cap = 8 << 20, msize = 0;
    unsigned char *model = calloc(1, cap), *buf = malloc(1 << 20);
    t_rng r = {77};
    uint64_t max_phys = 0;
    for (int cycle = 0; cycle < 40; cycle++) {
        assert_int_equal(bf_file_open_named(sp, set, "changes", BF_OPEN_READWRITE, &f), BF_OK);
        assert_int_equal(bf_file_size(f), msize);
        uint64_t remembered = msize;
        assert_int_equal(bf_file_seek(f, 0, BF_SEEK_END), BF_OK);
        size_t len = (size_t)t_below(&r, 200000);
        t_fill(&r, T_DATA_MIXED, buf, len);
        assert_int_equal(bf_file_write(f, buf, len), BF_OK);
        memcpy(model + msize, buf, len);
        msize += len;
        if (t_below(&r, 3) == 0) { /* the transaction aborted: back to where it began */
            assert_int_equal(bf_file_truncate(f, remembered), BF_OK);
            memset(model + remembered, 0, msize - remembered);
            msize = remembered;
        }
        if (msize > 4 << 20) { /* keep it bounded: drop the second half */
            assert_int_equal(bf_file_truncate(f, msize / 2), BF_OK);
            memset(model + msize / 2, 0, msize - msize / 2);
            msize /= 2;
        }
        bf_stats st;
        bf_file_stats(f, &st);
        if (st.physical_bytes > max_phys)
            max_phys = st.physical_bytes;
        assert_int_equal(bf_file_close(f), BF_OK);

        bf_space *rs = space(BF_CODEC_NONE);
        assert_int_equal(bf_file_open_named(rs, set, "changes", BF_OPEN_READONLY, &f), BF_OK);
        unsigned char *got = malloc(msize + 1);
        assert_int_equal(bf_file_read(f, got, msize + 1), (int64_t)msize);
        assert_memory_equal(got, model, msize);
        free(got);
        assert_int_equal(bf_file_write(f, "x", 1), BF_EREADONLY);
        assert_int_equal(bf_file_truncate(f, 0), BF_EREADONLY);
        bf_file_close(f);
        bf_space_destroy(rs);
    }
    /* Truncation frees physical space: the file never held much more than 4 MiB of data. */
    assert_true(max_phys < 8u << 20);
    assert_int_equal(bf_file_delete_named(sp, set, "changes"), BF_OK);
    assert_int_equal(bf_file_delete_named(sp, set, "changes"), BF_ENOENT);
    assert_int_equal(bf_file_open_named(sp, set, "changes", BF_OPEN_READONLY, &f), BF_ENOENT);
    assert_int_equal(t_dir_entries(set), 0);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    free(model);
    free(buf);
}

static void corrupt_file(const char *path, long off, int truncate_to)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    if (truncate_to >= 0) {
        assert_int_equal(ftruncate(fileno(fp), truncate_to), 0);
    } else {
        fseek(fp, off, SEEK_SET);
        int c = fgetc(fp);
        fseek(fp, off, SEEK_SET);
        fputc(c ^ 0x40, fp);
    }
    fclose(fp);
}

static void test_bad_index(void **state)
{
    (void)state;
    bf_space *sp = space(BF_CODEC_LZ4);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    size_t size = 200000;
    unsigned char *d = make_data(5, size);
    char seg[700], prefix[700], copy[2000];
    snprintf(seg, sizeof(seg), "%s/f.0", set);
    snprintf(prefix, sizeof(prefix), "%s/f", set);
    snprintf(copy, sizeof(copy), "cp %s %s/good.0", seg, set);
    bf_file *f;
    write_named(sp, "f", d, size);
    assert_int_equal(system(copy), 0); /* a named file is its segments: a copy is a file */
    snprintf(copy, sizeof(copy), "cp %s/good.0 %s", set, seg);
    size_t ilen;
    uint64_t ioff;
    unsigned char *index = t_index_read(prefix, BF_SEGMENT_SIZE_DEFAULT, &ilen, &ioff);
    assert_non_null(index);
    free(index);

    assert_int_equal(bf_file_create_named(sp, set, "f", NULL, &f), BF_EEXIST);
    assert_int_equal(bf_file_open_named(sp, set, "nope", BF_OPEN_READONLY, &f), BF_ENOENT);
    assert_non_null(strstr(bf_space_errmsg(sp), "nope"));
    assert_int_equal(bf_file_open_named(sp, set, "../f", BF_OPEN_READONLY, &f), BF_EINVAL);
    assert_int_equal(bf_file_open_named(sp, set, "f", 5, &f), BF_EINVAL);

    corrupt_file(seg, 0, (int)(ioff + 40)); /* truncated index */
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "f.0"));
    assert_int_equal(system(copy), 0);
    corrupt_file(seg, (long)ioff + 100, -1); /* flipped byte in the map */
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "checksum"));
    assert_int_equal(system(copy), 0);
    corrupt_file(seg, 3, -1); /* flipped byte in the head's only slot */
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "head"));
    assert_int_equal(system(copy), 0);
    corrupt_file(seg, 0, 1000); /* segments shorter than the head says */
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "truncated"));
    corrupt_file(seg, 0, 0); /* a head never written: the file was never persisted */
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ENOENT);
    unlink(seg);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ENOENT);

    /* A space with another segment size cannot read the file's layout. */
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.segment_size = 1 << 20;
    bf_space *other;
    assert_int_equal(bf_space_create(&o, &other, NULL, 0), BF_OK);
    assert_int_equal(bf_file_open_named(other, set, "good", BF_OPEN_READONLY, &f), BF_EINVAL);
    bf_space_destroy(other);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    free(d);
}

/* Set a 64-bit field of named file `prefix`'s index and fix its checksum, as a forger (or a bug)
   would. */
static void forge_index(const char *prefix, long off, uint64_t val)
{
    size_t len;
    uint64_t at;
    unsigned char *b = t_index_read(prefix, BF_SEGMENT_SIZE_DEFAULT, &len, &at);
    assert_non_null(b);
    assert_true(len >= (size_t)off + 8 + 4);
    bf_put64(b + off, val);
    bf_put32(b + len - 4, bf_crc32c(0, b, len - 4));
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, at, b, len), 0);
    free(b);
}

/*
 * Indexes whose checksum holds but whose contents cannot be true: the
 * segment count far beyond the physical end, a segment file the count
 * leaves out, and two blocks mapped onto the same bytes. A reader may
 * still open the latter (each read checks its extent), but a writer must
 * not: freeing one would hand out the other.
 */
static void test_forged_index(void **state)
{
    (void)state;
    bf_space *sp = space(BF_CODEC_LZ4);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    size_t size = 100000;
    unsigned char *d = make_data(6, size);
    write_named(sp, "f", d, size);
    char idx[700];
    snprintf(idx, sizeof(idx), "%s/f", set);
    size_t len;
    uint64_t at;
    /* written back after each forgery */
    unsigned char *good = t_index_read(idx, BF_SEGMENT_SIZE_DEFAULT, &len, &at);
    assert_non_null(good);
    bf_file *f;

    /* Header: 112 bytes, segment count at 48 (a u32; the u64 write also keeps parts = 0). The
       file's segments are exactly those its index's end needs: one here. */
    for (uint64_t nsegs = 0; nsegs < 3; nsegs += 2) {
        forge_index(idx, 48, nsegs);
        assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READWRITE, &f), BF_ECORRUPT);
        assert_non_null(strstr(bf_space_errmsg(sp), "inconsistent sizes"));
        assert_int_equal(t_phys_write(idx, BF_SEGMENT_SIZE_DEFAULT, at, good, len), 0);
    }
    /* The index's own place, at 64, must be the one the head names. */
    forge_index(idx, 64, at + 1);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "head's slot"));
    assert_int_equal(t_phys_write(idx, BF_SEGMENT_SIZE_DEFAULT, at, good, len), 0);

    /* Segment files after the ones the index counts, as a session killed before its index
       was durable leaves them: readers ignore them, a writer removes them (it creates its
       segments with O_EXCL). */
    char extra[800], extra2[800];
    snprintf(extra, sizeof(extra), "%s/f.1", set);
    snprintf(extra2, sizeof(extra2), "%s/f.2", set);
    assert_int_equal(t_write_file(extra, "x", 1), 0);
    assert_int_equal(t_write_file(extra2, "y", 1), 0);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(access(extra, F_OK), 0);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READWRITE, &f), BF_OK);
    assert_int_equal(access(extra, F_OK), -1);
    assert_int_equal(access(extra2, F_OK), -1);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(good); /* that session persisted the file anew: its index is the one to keep */
    good = t_index_read(idx, BF_SEGMENT_SIZE_DEFAULT, &len, &at);
    assert_non_null(good);

    /* One run of entries after the 112-byte header (first block, count, then 16 bytes per
       block): block 1 mapped onto block 0's extent. */
    forge_index(idx, 112 + 8 + 16, bf_get64(good + 112 + 8));
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READWRITE, &f), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "two extents"));
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_OK);
    unsigned char blk[8192];
    assert_int_equal(bf_file_read_block(f, 0, blk), BF_OK);
    assert_int_equal(bf_file_read_block(f, 1, blk), BF_ECORRUPT);
    assert_int_equal(bf_file_close(f), BF_OK);

    /* The untouched index still opens read-write, writes and persists. */
    assert_int_equal(t_phys_write(idx, BF_SEGMENT_SIZE_DEFAULT, at, good, len), 0);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READWRITE, &f), BF_OK);
    assert_int_equal(bf_file_seek(f, 5000, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, d, 20000), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_OK);
    unsigned char *got = malloc(size);
    assert_int_equal(bf_file_read(f, got, size), (int64_t)size);
    memmove(d + 5000, d, 20000);
    assert_memory_equal(got, d, size);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(got);
    free(good);
    free(d);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
}

/*
 * A head slot whose checksum holds but whose offset and length do not fit:
 * lengths past the offset mask (offset + length wraps past 2^64, or past
 * 2^48), offsets near either, and lengths far past the file's end. Each is
 * BF_ECORRUPT, and no request larger than the file reaches the allocator
 * (one for the slot's length was asked before the slot was bounded).
 */
static void test_forged_head_slot(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = t_space(parent, BF_CODEC_LZ4, 8192, &cnt.hooks);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    unsigned char *d = make_data(7, 50000);
    write_named(sp, "h", d, 50000);
    char prefix[700], seg0[800];
    snprintf(prefix, sizeof(prefix), "%s/h", set);
    snprintf(seg0, sizeof(seg0), "%s.0", prefix);
    unsigned char head[BF_HEAD_BYTES];
    assert_int_equal(t_phys_read(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, head, sizeof(head)), 0);
    bf_head_slot good;
    const char *why;
    assert_int_equal(bf_head_decode(head, sizeof(head), &good, &why), BF_OK);
    struct stat st;
    assert_int_equal(stat(seg0, &st), 0);
    const uint64_t mask = (UINT64_C(1) << 48) - 1;
    const struct {
        uint64_t off, len;
    } forged[] = {
        {good.off, UINT64_MAX - good.off + 1},    /* off + len wraps to 0 */
        {good.off, UINT64_MAX - 4095},            /* wraps to just below off */
        {good.off, UINT64_MAX},                   /* the largest length */
        {good.off, mask + 1},                     /* just past the offset mask */
        {mask - 200, 200},                        /* fits the mask, far past the file */
        {UINT64_MAX - 8, good.len},               /* an offset past the mask */
        {good.off, (uint64_t)st.st_size * 4},     /* past the file's end, under 1 MiB */
        {good.off, (UINT64_C(1) << 20) + 1},      /* and over it */
    };
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        unsigned char h[BF_HEAD_BYTES];
        memcpy(h, head, sizeof(h));
        bf_head_encode(&(bf_head_slot){good.gen, forged[i].off, forged[i].len},
                       h + bf_head_slot_at(good.gen));
        assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, h, sizeof(h)), 0);
        cnt.max_request = (uint64_t)st.st_size;
        bf_file *f = NULL;
        int rc = bf_file_open_named(sp, set, "h", BF_OPEN_READONLY, &f);
        cnt.max_request = 0;
        if (rc != BF_ECORRUPT || cnt.too_large != 0)
            fail_msg("slot %zu (offset %llu, length %llu): open %d, %llu requests over %lld "
                     "bytes (largest %llu): %s",
                     i, (unsigned long long)forged[i].off, (unsigned long long)forged[i].len, rc,
                     (unsigned long long)cnt.too_large, (long long)st.st_size,
                     (unsigned long long)cnt.largest_refused, bf_space_errmsg(sp));
        assert_null(f);
    }
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, head, sizeof(head)), 0);
    bf_file *f;
    assert_int_equal(bf_file_open_named(sp, set, "h", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(d);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
}

/*
 * Export and open under I/O faults: the N-th pwritev, pread or metadata
 * call (open, ftruncate, unlink) fails, for every N the clean run makes. A
 * failed export says so (status, path, errno text), leaves the head naming
 * no index, and the handle can export again once the fault is gone; a
 * failed open says so and leaks nothing; in the end a reader gets the
 * exact bytes.
 */
static void test_export_and_open_faults(void **state)
{
    (void)state;
    size_t size = 70000;
    unsigned char *d = make_data(8, size);
    char prefix[700];
    snprintf(prefix, sizeof(prefix), "%s/f", set);
    static const int errs[] = {ENOSPC, EIO};
    int injected = 0;
    for (int what = 0; what < 3; what++) { /* 0 pwritev, 1 metadata, 2 pread */
        for (uint64_t n = 1;; n++) {
            t_counting cnt;
            t_counting_init(&cnt);
            bf_space *sp = t_space(parent, BF_CODEC_LZ4, 8192, &cnt.hooks);
            t_faults flt = {0};
            bf_io io = t_fault_io(&flt);
            bf_space_set_io(sp, &io);
            assert_int_equal(bf_fileset_create(sp, set), BF_OK);
            bf_file *f;
            assert_int_equal(bf_file_create_named(sp, set, "f", NULL, &f), BF_OK);
            assert_int_equal(bf_file_write(f, d, size), BF_OK);
            int err = errs[n % 2];
            flt.writes = flt.metas = flt.reads = 0;
            flt.fail_errno = err;
            if (what == 0)
                flt.fail_write_at = n;
            else if (what == 1)
                flt.fail_meta_at = n;
            int rc = what == 2 ? BF_OK : bf_file_export(f);
            int fired = rc != BF_OK;
            if (fired) {
                assert_true(rc == BF_ENOSPC || rc == BF_EIO);
                const char *msg = bf_space_errmsg(sp);
                if (strstr(msg, set) == NULL || strstr(msg, strerror(err)) == NULL)
                    fail_msg("export fault %d at %llu: message \"%s\"", what, (unsigned long long)n,
                             msg);
                size_t ilen;
                uint64_t ioff;
                assert_null(t_index_read(prefix, BF_SEGMENT_SIZE_DEFAULT, &ilen, &ioff));
                flt.fail_write_at = flt.fail_meta_at = 0;
                assert_int_equal(bf_file_export(f), BF_OK);
            }
            flt.fail_write_at = flt.fail_meta_at = 0;
            assert_int_equal(bf_file_close(f), BF_OK);
            if (what == 2) {
                flt.reads = 0;
                flt.fail_read_at = n;
                rc = bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f);
                fired = rc != BF_OK;
                if (fired) {
                    assert_int_equal(rc, BF_EIO);
                    assert_non_null(strstr(bf_space_errmsg(sp), strerror(err)));
                } else {
                    assert_int_equal(bf_file_close(f), BF_OK);
                }
                flt.fail_read_at = 0;
            }
            injected += fired;
            assert_int_equal(read_random("f", d, size, n, 20), 0);
            assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
            bf_space_destroy(sp);
            assert_int_equal(cnt.live_bytes, 0);
            if (!fired)
                break; /* N went past the calls the operation makes */
        }
    }
    /* export: the last block, the index and the head's slot (three pwritev); open: the head and
       the index (two preads); no metadata call can fail either (a file of one segment). */
    assert_int_equal(injected, 5);
    print_message("export/open faults injected: %d\n", injected);
    free(d);
}

static void test_segments_and_cost(void **state)
{
    (void)state;
    /* Small segments: a named file spanning many segment files exports and reopens. */
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.segment_size = 64 * 1024;
    o.codec = BF_CODEC_ZSTD;
    bf_space *sp;
    assert_int_equal(bf_space_create(&o, &sp, NULL, 0), BF_OK);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    size_t size = 2 * 1024 * 1024;
    unsigned char *d = make_data(9, size);
    write_named(sp, "big", d, size);
    char prefix[800];
    snprintf(prefix, sizeof(prefix), "%s/big", set);
    size_t ilen;
    uint64_t ioff;
    unsigned char *index = t_index_read(prefix, o.segment_size, &ilen, &ioff);
    assert_non_null(index);
    free(index);
    /* 112 + one run (8 + 16 bytes per block) + 4: 2 MiB / 8 KiB = 256 blocks. */
    assert_int_equal(ilen, 112 + 8 + 256 * 16 + 4);
    assert_true(t_dir_entries(set) > 10);
    bf_file *f;
    assert_int_equal(bf_file_open_named(sp, set, "big", BF_OPEN_READONLY, &f), BF_OK);
    unsigned char *got = malloc(size);
    assert_int_equal(bf_file_read(f, got, size), (int64_t)size);
    assert_memory_equal(got, d, size);
    bf_file_close(f);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    free(got);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_threads_and_processes),
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_reopen_append_truncate),
        cmocka_unit_test(test_bad_index),
        cmocka_unit_test(test_forged_index),
        cmocka_unit_test(test_forged_head_slot),
        cmocka_unit_test(test_export_and_open_faults),
        cmocka_unit_test(test_segments_and_cost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
