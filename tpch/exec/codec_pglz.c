/*
 * codec_pglz.c - pglz behind bf_user_codec. Only this file sees
 * PostgreSQL's headers (postgres_fe.h redefines much of libc's names).
 * pglz_compress refuses (-1) input it cannot shrink by the strategy's 25%:
 * that is "store raw" to libbuffile. It may write up to PGLZ_MAX_OUTPUT
 * bytes, a few past its input: the codec's bound.
 */
#include "postgres_fe.h"

#include "common/pg_lzcompress.h"

#include "codec_pglz.h"

static size_t pglz_bound(void *ctx, size_t len)
{
    (void)ctx;
    return (size_t)PGLZ_MAX_OUTPUT(len);
}

static int64_t pglz_comp(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                         size_t cap)
{
    (void)ctx;
    (void)level;
    (void)cap;
    int32 n = pglz_compress(src, (int32)len, dst, PGLZ_strategy_default);
    return n < 0 ? 0 : n;
}

static int64_t pglz_decomp(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    (void)ctx;
    return pglz_decompress(src, (int32)len, dst, (int32)raw_len, true);
}

bf_user_codec pglz_user_codec(void)
{
    return (bf_user_codec){PGLZ_CODEC_ID, "pglz",    0,           0, 0,
                           pglz_bound,    pglz_comp, pglz_decomp, 0, NULL};
}
