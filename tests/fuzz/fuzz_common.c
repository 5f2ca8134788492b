/*
 * fuzz_common.c - helpers shared by the fuzz targets (see fuzz.h).
 *
 * Everything a target creates lives under one per-process directory in
 * the build tree's test-tmp, so an aborted run leaves its litter in one
 * place and a clean run leaves none.
 */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz property failed: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

static char parent[512];

static void remove_parent(void)
{
    t_rm_rf(parent);
}

const char *fuzz_parent(void)
{
    if (parent[0] == '\0') {
        mkdir(BF_TEST_TMP, 0700);
        snprintf(parent, sizeof(parent), "%s/bf-fuzz-%ld", BF_TEST_TMP, (long)getpid());
        t_rm_rf(parent);
        if (mkdir(parent, 0700) != 0)
            fuzz_fail("cannot create %s", parent);
        atexit(remove_parent);
    }
    return parent;
}

int fuzz_space_create(bf_codec codec, uint32_t block_size, uint64_t segment_size,
                      const bf_allocator *alloc, const bf_auto_device *seed, bf_space **out,
                      char *err, size_t len)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = fuzz_parent();
    o.codec = codec;
    o.block_size = block_size;
    o.segment_size = segment_size;
    o.allocator = alloc;
    o.auto_device = seed;
    return bf_space_create(&o, out, err, len);
}

bf_space *fuzz_space(bf_codec codec, uint32_t block_size, uint64_t segment_size,
                     const bf_allocator *alloc)
{
    bf_space *sp = NULL;
    char err[256] = "";
    if (fuzz_space_create(codec, block_size, segment_size, alloc, NULL, &sp, err, sizeof(err)) !=
        BF_OK)
        fuzz_fail("bf_space_create: %s", err);
    return sp;
}

void fuzz_data(uint64_t seed, unsigned char *buf, size_t len)
{
    /* Cheap on purpose (t_fill's text rows cost too much per fuzz run): runs of random
       bytes, of a repeated phrase and of zeros, so blocks compress to varying degrees. */
    static const char phrase[] = "1996-03-13|DELIVER IN PERSON|TRUCK|furiously regular ";
    t_rng r = {seed};
    size_t i = 0;
    while (i < len) {
        size_t run = 1 + (size_t)t_below(&r, 2048);
        if (run > len - i)
            run = len - i;
        uint64_t kind = t_below(&r, 3);
        for (size_t k = 0; k < run; k++)
            buf[i + k] = kind == 0   ? (unsigned char)t_next(&r)
                         : kind == 1 ? (unsigned char)phrase[(i + k) % (sizeof(phrase) - 1)]
                                     : 0;
        i += run;
    }
}

void fuzz_seed(const char *dir, const char *name, uint8_t flags, const void *body, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unsigned char *buf = malloc(len + 1);
    if (buf == NULL)
        fuzz_fail("out of memory");
    buf[0] = flags;
    if (len > 0)
        memcpy(buf + 1, body, len);
    if (t_write_file(path, buf, len + 1) != 0)
        fuzz_fail("cannot write %s", path);
    free(buf);
}

int fuzz_codecs(bf_codec out[4])
{
    int n = 0;
    for (int c = BF_CODEC_NONE; c <= BF_CODEC_ZLIB; c++)
        if (bf_codec_available((bf_codec)c))
            out[n++] = (bf_codec)c;
    return n;
}
