/*
 * codec_none.c - the identity codec: every block is stored raw.
 * Implements: bf_codec_none_ops (codec.h).
 *
 * compress() always reports "does not fit" so the extent layer takes its
 * one raw path; there is no second copy routine for uncompressed data.
 */
#include "codec.h"

static int none_create(const bf_allocator *a, void **ctx)
{
    (void)a;
    *ctx = NULL;
    return BF_OK;
}

static void none_destroy(const bf_allocator *a, void *ctx)
{
    (void)a;
    (void)ctx;
}

static int64_t none_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                             size_t cap)
{
    (void)ctx;
    (void)level;
    (void)src;
    (void)len;
    (void)dst;
    (void)cap;
    return 0;
}

static int none_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    (void)ctx;
    (void)src;
    (void)len;
    (void)dst;
    (void)raw_len;
    return -1; /* an extent tagged "none" but not stored raw is corrupt */
}

const bf_codec_ops bf_codec_none_ops = {
    BF_CODEC_NONE, "none", 0, 0, 0, none_create, none_destroy, none_compress, none_decompress, NULL,
};
