/*
 * codec_zlib.c - zlib (raw deflate) block codec; levels 1..9, 6 by default.
 * Implements: bf_codec_zlib_ops (codec.h).
 *
 * Raw deflate (negative windowBits): the extent header already carries a
 * CRC and the length, so zlib's own header and adler32 would be waste.
 * The deflate and inflate streams are kept per space and reset per block;
 * deflateParams switches the level only when it changes.
 */
#include <zlib.h>

#include "alloc.h"
#include "codec.h"

typedef struct zlib_ctx {
    z_stream c;
    z_stream d;
    int32_t level;
    int c_ok, d_ok;
} zlib_ctx;

static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    return bf_calloc(opaque, items, size);
}

static void zlib_free(voidpf opaque, voidpf ptr)
{
    bf_free(opaque, ptr);
}

static void zlib_destroy(const bf_allocator *a, void *ctx)
{
    zlib_ctx *z = ctx;
    if (z == NULL)
        return;
    if (z->c_ok)
        deflateEnd(&z->c);
    if (z->d_ok)
        inflateEnd(&z->d);
    bf_free(a, z);
}

static int zlib_create(const bf_allocator *a, void **ctx)
{
    zlib_ctx *z = bf_calloc(a, 1, sizeof(*z));
    if (z == NULL)
        return BF_ENOMEM;
    z->c.zalloc = z->d.zalloc = zlib_alloc;
    z->c.zfree = z->d.zfree = zlib_free;
    z->c.opaque = z->d.opaque = (voidpf)a;
    z->level = 6;
    z->c_ok = deflateInit2(&z->c, z->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    z->d_ok = inflateInit2(&z->d, -15) == Z_OK;
    if (!z->c_ok || !z->d_ok) {
        zlib_destroy(a, z);
        return BF_ENOMEM;
    }
    *ctx = z;
    return BF_OK;
}

static int64_t zlib_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                             size_t cap)
{
    zlib_ctx *z = ctx;
    if (deflateReset(&z->c) != Z_OK)
        return -1;
    if (level != z->level) {
        if (deflateParams(&z->c, level, Z_DEFAULT_STRATEGY) != Z_OK)
            return -1;
        z->level = level;
    }
    z->c.next_in = (Bytef *)src;
    z->c.avail_in = (uInt)len;
    z->c.next_out = dst;
    z->c.avail_out = (uInt)cap;
    int rc = deflate(&z->c, Z_FINISH);
    if (rc == Z_STREAM_END)
        return (int64_t)(cap - z->c.avail_out);
    if (rc == Z_MEM_ERROR)
        return BF_CODEC_NOMEM;
    return (rc == Z_OK || rc == Z_BUF_ERROR) ? 0 : -1;
}

static int zlib_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    zlib_ctx *z = ctx;
    if (inflateReset(&z->d) != Z_OK)
        return -1;
    z->d.next_in = (Bytef *)src;
    z->d.avail_in = (uInt)len;
    z->d.next_out = dst;
    z->d.avail_out = (uInt)raw_len;
    int rc = inflate(&z->d, Z_FINISH);
    if (rc == Z_MEM_ERROR)
        return BF_CODEC_NOMEM;
    return (rc == Z_STREAM_END && z->d.avail_out == 0 && z->d.avail_in == 0) ? 0 : -1;
}

const bf_codec_ops bf_codec_zlib_ops = {
    BF_CODEC_ZLIB, "zlib", 6, 1, 9, zlib_create, zlib_destroy, zlib_compress, zlib_decompress, NULL,
};
