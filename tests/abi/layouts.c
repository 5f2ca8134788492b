/*
 * layouts.c - a program built against an older buffile.h, run with the
 * library of this tree (linked as a shared library, the way an old binary
 * meets a new libbuffile.so.1).
 *
 * CMake compiles it once per header in abi/headers/<version>/ and never
 * with include/buffile.h. It checks every layout such a caller could have
 * of each growable struct: the header's own and each shorter one that ends
 * at a field boundary and could have been an older version's sizeof (no
 * tail padding reaching into the next field, as src/abi.c's BF_ENDS_AT
 * keeps every release). Each struct is placed so that it ends where a page
 * the process may neither read nor write begins: a library that read or
 * wrote one byte past the caller's struct_size (or the size a stats macro
 * passes) would get SIGSEGV, which cmocka reports as the test's failure
 * (as it did when bf_abi_read was made to copy the library's own size).
 * The fields that fit are set and must take effect; those past the size
 * must take the library's defaults. It also plays a caller of a newer
 * header (fields the library does not know, at zero and set) and one that
 * never initialised its options.
 */
#include <buffile.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static long page;
static char dir_set[256];     /* options.temp_dir when the layout has it */
static char dir_default[256]; /* $TMPDIR: where a space goes without temp_dir */

/* `size` bytes (aligned for any field) that end where an inaccessible page begins. */
static void *guarded(size_t size)
{
    unsigned char *p =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    assert_int_equal(mprotect(p + page, (size_t)page, PROT_NONE), 0);
    memset(p, 0xA5, (size_t)page); /* garbage before the struct, where a caller has its own */
    return p + page - size;
}

static void unguard(void *q)
{
    uintptr_t base = ((uintptr_t)q & ~(uintptr_t)(page - 1));
    munmap((void *)base, 2 * (size_t)page);
}

/* One field of a struct as this header lays it out. */
typedef struct field {
    const char *name;
    size_t off, size, align;
} field;

#define FIELD(type, f)                                                                             \
    {                                                                                              \
#f, offsetof(type, f), sizeof(((type *)0)->f), __alignof__(((type *)0)->f)                 \
    }

/* Where field `f` of `type` ends: the sizeof of a release whose last field it was. */
#define END(type, f) (offsetof(type, f) + sizeof(((type *)0)->f))

/*
 * The sizes released headers gave a struct, up to this header's: 1.0.0's
 * (whose last fields were auto_device and block_size) and this header's
 * own. Any other struct_size is refused (a struct that ends inside a field
 * would tear a pointer), so these are the only layouts an older caller has.
 */
static size_t released(size_t v100, size_t full, size_t *out)
{
    size_t k = 0;
    if (v100 < full)
        out[k++] = v100;
    out[k++] = full;
    return k;
}
#define SPACE_V100 END(bf_space_options, auto_device)
#define FILE_V100 END(bf_file_options, block_size)
#define DEVICE_V100 END(bf_auto_device, transfer_windows)

#define FITS(type, f, size) (offsetof(type, f) + sizeof(((type *)0)->f) <= (size))

/*
 * struct_size of a caller's struct, read and written as bytes: a layout of
 * struct_size alone is 4 bytes long and 4-aligned, less than this header's
 * struct wants, so no member access may go through it (nor does the library).
 */
static uint32_t size_of(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* The fields of version 1.0.0, which every header of libbuffile.so.1 has. */
static const field space_fields[] = {
    FIELD(bf_space_options, struct_size),  FIELD(bf_space_options, temp_dir),
    FIELD(bf_space_options, block_size),   FIELD(bf_space_options, codec),
    FIELD(bf_space_options, level),        FIELD(bf_space_options, temp_limit),
    FIELD(bf_space_options, segment_size), FIELD(bf_space_options, max_open_fds),
    FIELD(bf_space_options, allocator),    FIELD(bf_space_options, io_limit),
    FIELD(bf_space_options, auto_prefer),  FIELD(bf_space_options, auto_slack_pct),
    FIELD(bf_space_options, auto_device),
};
static const field file_fields[] = {
    FIELD(bf_file_options, struct_size),
    FIELD(bf_file_options, codec),
    FIELD(bf_file_options, level),
    FIELD(bf_file_options, block_size),
#ifdef BF_SEAL_ON /* 1.1.0 */
    FIELD(bf_file_options, seal),
#endif
};
static const field device_fields[] = {
    FIELD(bf_auto_device, struct_size),
    FIELD(bf_auto_device, device_ns),
    FIELD(bf_auto_device, pace_ns),
    FIELD(bf_auto_device, limited_share),
    FIELD(bf_auto_device, transfer_ns),
    FIELD(bf_auto_device, since_wait),
    FIELD(bf_auto_device, device_runs),
    FIELD(bf_auto_device, pace_windows),
    FIELD(bf_auto_device, share_windows),
    FIELD(bf_auto_device, transfer_windows),
#if BF_VERSION_NUMBER >= 10100 /* 1.1.0: reads timed apart */
    FIELD(bf_auto_device, read_device_ns),
    FIELD(bf_auto_device, read_transfer_ns),
    FIELD(bf_auto_device, read_runs),
    FIELD(bf_auto_device, read_transfer_windows),
    FIELD(bf_auto_device, read_share_windows),
    FIELD(bf_auto_device, read_limited_windows),
    FIELD(bf_auto_device, request_ns),
    FIELD(bf_auto_device, request_fits),
    FIELD(bf_auto_device, slope_ns),
    FIELD(bf_auto_device, read_slope_ns),
    FIELD(bf_auto_device, slope_windows),
    FIELD(bf_auto_device, read_slope_windows),
#endif
};
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* A counting allocator: does the space use the hooks the caller's layout passed? */
static unsigned long allocs;
static void *count_malloc(void *ctx, size_t size)
{
    (void)ctx;
    allocs++;
    return malloc(size);
}
static void *count_realloc(void *ctx, void *p, size_t size)
{
    (void)ctx;
    allocs++;
    return realloc(p, size);
}
static void count_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}
static const bf_allocator counting = {count_malloc, count_realloc, count_free, NULL};

/* A device figure set no space has measured: a seeded space must report it back. */
static bf_auto_device seed_device(size_t size)
{
    bf_auto_device d;
    memset(&d, 0, sizeof(d));
    d.struct_size = (uint32_t)size;
    d.device_ns = 7.5;
    d.pace_ns = 6.25;
    d.limited_share = 0.5;
    d.transfer_ns = 0.75;
    d.since_wait = 12345;
    d.device_runs = 3;
    d.pace_windows = 4;
    d.share_windows = 20;
    d.transfer_windows = 6;
#if BF_VERSION_NUMBER >= 10100
    d.read_device_ns = 8.5;
    d.read_transfer_ns = 0.25;
    d.read_runs = 2;
    d.read_transfer_windows = 5;
    d.read_share_windows = 30;
    d.read_limited_windows = 12;
    d.request_ns = 45000;
    d.request_fits = 2;
    d.slope_ns = -0.5;
    d.read_slope_ns = 0.125;
    d.slope_windows = 9;
    d.read_slope_windows = 10;
#endif
    return d;
}

static unsigned char data[256 * 1024]; /* incompressible: physical bytes = logical bytes */

static int exists(const char *fmt, ...)
{
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Every layout of bf_space_options: set what fits, see it used and the rest defaulted. */
static void test_space_options(void **state)
{
    (void)state;
    size_t sizes[2];
    size_t n = released(SPACE_V100, sizeof(bf_space_options), sizes);
    bf_auto_device seed = seed_device(sizeof(bf_auto_device));
    for (size_t i = 0; i < n; i++) {
        size_t k = sizes[i];
        bf_space_options *o = guarded(k);
        bf_space_options_init_sized(o, k);
        assert_int_equal(size_of(o), k);
        int has_dir = FITS(bf_space_options, temp_dir, k);
        int has_bs = FITS(bf_space_options, block_size, k);
        int has_codec = FITS(bf_space_options, codec, k);
        int has_level = FITS(bf_space_options, level, k);
        int has_limit = FITS(bf_space_options, temp_limit, k);
        int has_seg = FITS(bf_space_options, segment_size, k);
        int has_alloc = FITS(bf_space_options, allocator, k);
        int has_device = FITS(bf_space_options, auto_device, k);
        if (has_dir)
            o->temp_dir = dir_set;
        if (has_bs)
            o->block_size = 16384;
        if (has_codec)
            o->codec = BF_CODEC_ZSTD;
        if (has_level)
            o->level = 5;
        if (has_limit)
            o->temp_limit = 1024 * 1024;
        if (has_seg)
            o->segment_size = 64 * 1024;
        if (FITS(bf_space_options, max_open_fds, k))
            o->max_open_fds = 8;
        if (has_alloc)
            o->allocator = &counting;
        if (FITS(bf_space_options, io_limit, k))
            o->io_limit = 1ull << 40;
        if (FITS(bf_space_options, auto_prefer, k))
            o->auto_prefer = BF_AUTO_SPACE;
        if (FITS(bf_space_options, auto_slack_pct, k))
            o->auto_slack_pct = 10;
        if (has_device)
            o->auto_device = &seed;

        allocs = 0;
        bf_space *sp;
        char err[256] = "";
        int rc = bf_space_create(o, &sp, err, sizeof(err));
        if (rc != BF_OK)
            fail_msg("layout of %zu bytes: %s", k, err);
        const char *want_dir = has_dir ? dir_set : dir_default;
        assert_memory_equal(bf_space_dir(sp), want_dir, strlen(want_dir));
        bf_file *f;
        assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
        assert_int_equal(bf_file_block_size(f), has_bs ? 16384 : BF_BLOCK_SIZE_DEFAULT);
        assert_int_equal(bf_file_codec(f), has_codec ? BF_CODEC_ZSTD : BF_CODEC_LZ4);
        assert_int_equal(bf_file_level(f), has_level ? 5 : 1);
        assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
        assert_int_equal(bf_file_flush(f), BF_OK);
        char path[512];
        bf_file_path(f, path, sizeof(path));
        assert_int_equal(exists("%s.1", path), has_seg);
        int more = BF_OK;
        for (int j = 0; j < 4 && more == BF_OK; j++)
            more = bf_file_write(f, data, sizeof(data));
        if (more == BF_OK)
            more = bf_file_flush(f);
        assert_int_equal(more, has_limit ? BF_ELIMIT : BF_OK);
        assert_int_equal(allocs > 0, has_alloc);
        bf_auto_device got;
        bf_space_auto_device(sp, &got);
        assert_true(got.device_ns == (has_device ? seed.device_ns : 0));
        assert_int_equal(got.since_wait, has_device ? seed.since_wait : 0);
        bf_space_destroy(sp);
        unguard(o);
    }
}

/* Every layout of bf_file_options. */
static void test_file_options(void **state)
{
    (void)state;
    size_t sizes[2];
    size_t n = released(FILE_V100, sizeof(bf_file_options), sizes);
    bf_space *sp;
    assert_int_equal(bf_space_create(NULL, &sp, NULL, 0), BF_OK);
    for (size_t i = 0; i < n; i++) {
        size_t k = sizes[i];
        bf_file_options *o = guarded(k);
        bf_file_options_init_sized(o, k);
        assert_int_equal(size_of(o), k);
        int has_codec = FITS(bf_file_options, codec, k);
        int has_level = FITS(bf_file_options, level, k);
        int has_bs = FITS(bf_file_options, block_size, k);
        if (has_codec)
            o->codec = BF_CODEC_ZLIB;
        if (has_level)
            o->level = 9;
        if (has_bs)
            o->block_size = 32768;
#ifdef BF_SEAL_ON
        /* a space without a key: only "not sealed" is taken, and it must be read */
        if (FITS(bf_file_options, seal, k))
            o->seal = 2;
        bf_file *bad;
        if (FITS(bf_file_options, seal, k))
            assert_int_equal(bf_file_create(sp, o, &bad), BF_EINVAL);
        if (FITS(bf_file_options, seal, k))
            o->seal = BF_SEAL_OFF;
#endif
        bf_file *f;
        int rc = bf_file_create(sp, o, &f);
        if (rc != BF_OK)
            fail_msg("layout of %zu bytes: %s", k, bf_space_errmsg(sp));
        assert_int_equal(bf_file_codec(f), has_codec ? BF_CODEC_ZLIB : BF_CODEC_LZ4);
        assert_int_equal(bf_file_level(f), has_level ? 9 : has_codec ? 6 : 1);
        assert_int_equal(bf_file_block_size(f), has_bs ? 32768 : BF_BLOCK_SIZE_DEFAULT);
        assert_int_equal(bf_file_close(f), BF_OK);
        unguard(o);
    }
    bf_space_destroy(sp);
}

/* Every layout of bf_auto_device, read as a seed and written back by bf_space_auto_device. */
static void test_auto_device(void **state)
{
    (void)state;
    size_t sizes[2];
    size_t n = released(DEVICE_V100, sizeof(bf_auto_device), sizes);
    bf_auto_device full = seed_device(sizeof(bf_auto_device));
    for (size_t i = 0; i < n; i++) {
        size_t k = sizes[i];
        bf_auto_device *in = guarded(k);
        memcpy(in, &full, k);
        uint32_t k32 = (uint32_t)k;
        memcpy(in, &k32, sizeof(k32));
        bf_space_options o;
        bf_space_options_init(&o);
        o.auto_device = in;
        bf_space *sp;
        char err[256] = "";
        if (bf_space_create(&o, &sp, err, sizeof(err)) != BF_OK)
            fail_msg("layout of %zu bytes: %s", k, err);
        bf_auto_device *out = guarded(k);
        bf_space_auto_device_sized(sp, out, k);
        assert_int_equal(size_of(out), k);
        bf_auto_device whole;
        bf_space_auto_device(sp, &whole);
        assert_int_equal(whole.struct_size, sizeof(whole));
        for (size_t j = 1; j < NFIELDS(device_fields); j++) {
            const field *fd = &device_fields[j];
            const unsigned char *w = (const unsigned char *)&whole + fd->off;
            if (fd->off + fd->size <= k) {
                /* The seed's figure came through, and the short copy is the whole one. */
                assert_memory_equal(w, (const unsigned char *)&full + fd->off, fd->size);
                assert_memory_equal((const unsigned char *)out + fd->off, w, fd->size);
            } else {
                static const unsigned char zero[8];
                assert_memory_equal(w, zero, fd->size);
            }
        }
        bf_space_destroy(sp);
        unguard(out);
        unguard(in);
    }
}

/* bf_stats cut at every field: the library writes the prefix and nothing past it. */
static void test_stats(void **state)
{
    (void)state;
    bf_space *sp;
    assert_int_equal(bf_space_create(NULL, &sp, NULL, 0), BF_OK);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, data, sizeof(data)), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    bf_stats fwhole, swhole;
    bf_file_stats(f, &fwhole);
    bf_space_stats(sp, &swhole);
    assert_int_equal(fwhole.logical_bytes, sizeof(data));
    assert_int_equal(swhole.files_open, 1);
    for (size_t k = sizeof(uint64_t); k <= sizeof(bf_stats); k += sizeof(uint64_t)) {
        bf_stats *st = guarded(k);
        bf_file_stats_sized(f, st, k);
        assert_memory_equal(st, &fwhole, k);
        bf_space_stats_sized(sp, st, k);
        assert_memory_equal(st, &swhole, k);
        unguard(st);
    }
    bf_space_destroy(sp);
}

/*
 * A caller of a newer header: its structs are longer than the library's.
 * The library zeroes what it does not know, accepts it left at zero and
 * refuses it set; an options struct never initialised is refused too.
 */
#define NEWER 512
static void test_newer_and_uninitialised(void **state)
{
    (void)state;
    unsigned char *buf = guarded(NEWER);
    bf_space_options *o = (bf_space_options *)buf;
    bf_space_options_init_sized(o, NEWER);
    assert_int_equal(buf[NEWER - 1], 0);
    o->temp_dir = dir_set;
    bf_space *sp;
    char err[256] = "";
    assert_int_equal(bf_space_create(o, &sp, err, sizeof(err)), BF_OK);
    bf_space_destroy(sp);
    buf[NEWER - 1] = 1;
    assert_int_equal(bf_space_create(o, &sp, err, sizeof(err)), BF_EINVAL);
    assert_null(sp);
    assert_non_null(strstr(err, "newer buffile.h"));
    o->struct_size = 0;
    assert_int_equal(bf_space_create(o, &sp, err, sizeof(err)), BF_EINVAL);
    assert_non_null(strstr(err, "struct_size is 0"));

    assert_int_equal(bf_space_create(NULL, &sp, NULL, 0), BF_OK);
    bf_file_options *fo = (bf_file_options *)buf;
    bf_file_options_init_sized(fo, NEWER);
    assert_int_equal(buf[NEWER - 1], 0);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, fo, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    buf[NEWER - 1] = 1;
    assert_int_equal(bf_file_create(sp, fo, &f), BF_EINVAL);
    assert_non_null(strstr(bf_space_errmsg(sp), "newer buffile.h"));
    fo->struct_size = 0;
    assert_int_equal(bf_file_create(sp, fo, &f), BF_EINVAL);
    assert_non_null(strstr(bf_space_errmsg(sp), "struct_size is 0"));

    memset(buf, 0xA5, NEWER);
    bf_space_stats_sized(sp, (bf_stats *)buf, NEWER);
    assert_int_equal(buf[NEWER - 1], 0);
    bf_auto_device *d = (bf_auto_device *)buf;
    memset(buf, 0xA5, NEWER);
    bf_space_auto_device_sized(sp, d, NEWER);
    assert_int_equal(d->struct_size, NEWER);
    assert_int_equal(buf[NEWER - 1], 0);
    bf_space_destroy(sp);

    /* What a newer caller got from bf_space_auto_device goes back in as a seed. */
    bf_space_options plain;
    bf_space_options_init(&plain);
    plain.auto_device = d;
    assert_int_equal(bf_space_create(&plain, &sp, err, sizeof(err)), BF_OK);
    bf_space_destroy(sp);
    unguard(buf);
}

/* 1 when `size` ends strictly inside one of the fields `fs`. */
static int inside_field(const field *fs, size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++)
        if (size > fs[i].off && size < fs[i].off + fs[i].size)
            return 1;
    return 0;
}

/*
 * Give `create` a copy of `full` (this header's struct, every pointer field
 * set) that claims struct_size k, for every k from 0 to sizeof + 64: the
 * library takes a released size, refuses every other size at or below
 * this header's with BF_EINVAL, and never reads a torn field (a size that
 * ends inside a pointer made bf_space_create follow half of it). Sizes past
 * this header's are a newer header's: taken when the bytes past it are
 * zero and the size is a multiple of the struct's alignment, as every
 * sizeof is.
 */
static void every_size(const char *type, const void *full, size_t fsize, size_t align,
                       const size_t *ok, size_t nok, const field *fs, size_t nfs,
                       int (*create)(const void *opts, char *err, size_t len))
{
    for (size_t k = 0; k <= fsize + 64; k++) {
        size_t have = k < sizeof(uint32_t) ? sizeof(uint32_t) : k;
        unsigned char *p = guarded(have);
        memset(p, 0, have);
        memcpy(p, full, k < fsize ? k : fsize);
        uint32_t k32 = (uint32_t)k;
        memcpy(p, &k32, sizeof(k32));
        char err[256] = "";
        int rc = create(p, err, sizeof(err));
        int known = 0;
        for (size_t i = 0; i < nok; i++)
            known |= ok[i] == k;
        if (rc != BF_OK && rc != BF_EINVAL)
            fail_msg("%s of %zu bytes: %d (%s)", type, k, rc, err);
        if (k <= fsize && rc != (known ? BF_OK : BF_EINVAL))
            fail_msg("%s of %zu bytes (%s): %d (%s)", type, k,
                     known                       ? "a released size"
                     : inside_field(fs, nfs, k) ? "ends inside a field"
                                                 : "no release had it",
                     rc, err);
        if (k > fsize && k % align != 0 && rc != BF_EINVAL)
            fail_msg("%s of %zu bytes, not a multiple of %zu: taken", type, k, align);
        if (rc == BF_EINVAL && strstr(err, type) == NULL)
            fail_msg("%s of %zu bytes refused without naming the struct: %s", type, k, err);
        unguard(p);
    }
}

static int create_space(const void *opts, char *err, size_t len)
{
    bf_space *sp;
    int rc = bf_space_create(opts, &sp, err, len);
    if (rc == BF_OK)
        bf_space_destroy(sp);
    return rc;
}

static bf_space *file_space;
static int create_file(const void *opts, char *err, size_t len)
{
    bf_file *f;
    int rc = bf_file_create(file_space, opts, &f);
    snprintf(err, len, "%s", rc == BF_OK ? "" : bf_space_errmsg(file_space));
    if (rc == BF_OK)
        assert_int_equal(bf_file_close(f), BF_OK);
    return rc;
}

static int create_seeded(const void *seed, char *err, size_t len)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = dir_set;
    o.auto_device = seed;
    return create_space(&o, err, len);
}

static void test_every_struct_size(void **state)
{
    (void)state;
    bf_space_options so;
    bf_space_options_init(&so);
    so.temp_dir = dir_set;
    so.allocator = &counting;
    bf_auto_device seed = seed_device(sizeof(bf_auto_device));
    so.auto_device = &seed;
#ifdef BF_SEAL_ON /* 1.1.0's pointers */
    static const bf_io_hooks no_hooks;
    static const unsigned char key[BF_KEY_BYTES] = "a key for the struct_size walk.";
    so.io_hooks = &no_hooks;
    so.key = key;
#endif
    size_t ok[2];
    size_t n = released(SPACE_V100, sizeof(so), ok);
    every_size("bf_space_options", &so, sizeof(so), __alignof__(bf_space_options), ok, n,
               space_fields, NFIELDS(space_fields), create_space);

    bf_file_options fo;
    bf_file_options_init(&fo);
    fo.codec = BF_CODEC_ZLIB;
    fo.level = 9;
    fo.block_size = 32768;
    n = released(FILE_V100, sizeof(fo), ok);
    assert_int_equal(bf_space_create(NULL, &file_space, NULL, 0), BF_OK);
    every_size("bf_file_options", &fo, sizeof(fo), __alignof__(bf_file_options), ok, n,
               file_fields, NFIELDS(file_fields), create_file);
    bf_space_destroy(file_space);

    n = released(DEVICE_V100, sizeof(seed), ok);
    every_size("auto_device", &seed, sizeof(seed), __alignof__(bf_auto_device), ok, n,
               device_fields, NFIELDS(device_fields), create_seeded);
}

/* The running library is of this header's major version and no older than it. */
static void test_version(void **state)
{
    (void)state;
    unsigned v = bf_version_number();
    assert_int_equal(v / 10000, BF_VERSION_MAJOR);
    assert_true(v >= BF_VERSION_NUMBER);
}

static void make_dir(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%s/abi-%s-%ld", BF_TEST_TMP, tag, (long)getpid());
    mkdir(BF_TEST_TMP, 0700);
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
        perror(buf);
        exit(1);
    }
}

int main(void)
{
    page = sysconf(_SC_PAGESIZE);
    make_dir(dir_set, sizeof(dir_set), "set");
    make_dir(dir_default, sizeof(dir_default), "default");
    setenv("TMPDIR", dir_default, 1);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof(data); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        data[i] = (unsigned char)x;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),      cmocka_unit_test(test_space_options),
        cmocka_unit_test(test_file_options), cmocka_unit_test(test_auto_device),
        cmocka_unit_test(test_stats),        cmocka_unit_test(test_newer_and_uninitialised),
        cmocka_unit_test(test_every_struct_size),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir_set);
    rmdir(dir_default);
    return failed;
}
