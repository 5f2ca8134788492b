/*
 * codec_zstd.c - zstd block codec; levels -7..22, 1 by default.
 * Implements: bf_codec_zstd_ops (codec.h).
 *
 * One compression and one decompression context per space, allocated
 * through the space's allocator (ZSTD_customMem) so the memory they take is
 * visible to the caller's accounting. zstd allocates its workspace lazily on
 * the first block, so an allocation failure can surface there; it is
 * reported as BF_CODEC_NOMEM, not as a codec failure.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include "alloc.h"
#include "codec.h"

typedef struct zstd_ctx {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
} zstd_ctx;

static void *zstd_alloc(void *opaque, size_t size)
{
    return bf_malloc(opaque, size);
}

static void zstd_free(void *opaque, void *ptr)
{
    bf_free(opaque, ptr);
}

static void zstd_destroy(const bf_allocator *a, void *ctx)
{
    zstd_ctx *z = ctx;
    if (z == NULL)
        return;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    bf_free(a, z);
}

static int zstd_create(const bf_allocator *a, void **ctx)
{
    zstd_ctx *z = bf_calloc(a, 1, sizeof(*z));
    if (z == NULL)
        return BF_ENOMEM;
    ZSTD_customMem mem = {zstd_alloc, zstd_free, (void *)a};
    z->c = ZSTD_createCCtx_advanced(mem);
    z->d = ZSTD_createDCtx_advanced(mem);
    if (z->c == NULL || z->d == NULL) {
        zstd_destroy(a, z);
        return BF_ENOMEM;
    }
    *ctx = z;
    return BF_OK;
}

static int64_t zstd_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                             size_t cap)
{
    zstd_ctx *z = ctx;
    size_t n = ZSTD_compressCCtx(z->c, dst, cap, src, len, level);
    if (!ZSTD_isError(n))
        return (int64_t)n;
    switch (ZSTD_getErrorCode(n)) {
    case ZSTD_error_dstSize_tooSmall: return 0;
    case ZSTD_error_memory_allocation: return BF_CODEC_NOMEM;
    default: return -1;
    }
}

static int zstd_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    zstd_ctx *z = ctx;
    size_t n = ZSTD_decompressDCtx(z->d, dst, raw_len, src, len);
    if (ZSTD_isError(n) && ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
        return BF_CODEC_NOMEM;
    return (!ZSTD_isError(n) && n == raw_len) ? 0 : -1;
}

const bf_codec_ops bf_codec_zstd_ops = {
    BF_CODEC_ZSTD, "zstd",          1,    -7, 22, zstd_create, zstd_destroy,
    zstd_compress, zstd_decompress, NULL,
};
