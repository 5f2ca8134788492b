/*
 * codec_lz4.c - lz4 block codec; level is lz4's acceleration (1 = default).
 * Implements: bf_codec_lz4_ops (codec.h).
 *
 * The context is lz4's external state (LZ4_sizeofState bytes), so
 * compression never allocates. Decompression uses LZ4_decompress_safe,
 * which never reads or writes out of bounds on corrupt input.
 */
#include <lz4.h>

#include "alloc.h"
#include "codec.h"

static int lz4_create(const bf_allocator *a, void **ctx)
{
    *ctx = bf_malloc(a, (size_t)LZ4_sizeofState());
    return *ctx ? BF_OK : BF_ENOMEM;
}

static void lz4_destroy(const bf_allocator *a, void *ctx)
{
    bf_free(a, ctx);
}

static int64_t lz4_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                            size_t cap)
{
    /* Returns 0 when the output would exceed cap: exactly our "store raw". */
    return LZ4_compress_fast_extState(ctx, src, dst, (int)len, (int)cap, (int)level);
}

static int lz4_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    (void)ctx;
    int n = LZ4_decompress_safe(src, dst, (int)len, (int)raw_len);
    return n == (int)raw_len ? 0 : -1;
}

const bf_codec_ops bf_codec_lz4_ops = {
    BF_CODEC_LZ4, "lz4", 1, 1, 65537, lz4_create, lz4_destroy, lz4_compress, lz4_decompress, NULL,
};
