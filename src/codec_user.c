/*
 * codec_user.c - a caller's codec (bf_user_codec) behind the codec vtable.
 * Implements: bf_user_codec_check, bf_user_codec_ops (codec.h).
 *
 * The table's context is the space's copy of the caller's struct, so one
 * pair of trampolines serves every caller codec. They keep the caller's
 * mistakes from becoming the library's: a compressed length past the room
 * given, or a decompressed length other than the block's, fails the call
 * (BF_ECODEC) instead of being trusted; an output not smaller than the
 * input is stored raw, as for the built-in codecs; a bound past
 * BF_USER_BOUND_MAX is refused when the space is made and never believed
 * after it.
 */
#include <stdio.h>
#include <string.h>

#include "codec.h"

int bf_user_codec_check(const bf_user_codec *u, char *why, size_t len)
{
    const char *bad = NULL;
    size_t n = u->name != NULL ? strlen(u->name) : 0;
    bf_codec builtin;
    if (!bf_codec_is_user(u->id))
        bad = "its id is not in BF_CODEC_USER_MIN..BF_CODEC_USER_MAX";
    else if (n == 0 || n > 15 || strspn(u->name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
        bad = "its name is not 1..15 of [a-z0-9_-]";
    else if (bf_codec_parse(u->name, &builtin) == BF_OK)
        bad = "its name is a built-in codec's";
    else if (u->compress == NULL || u->decompress == NULL)
        bad = "compress and decompress must be set";
    else if (u->min_level > u->max_level || u->default_level < u->min_level ||
             u->default_level > u->max_level || u->min_level == BF_LEVEL_DEFAULT)
        bad = "its levels are not min <= default <= max";
    for (size_t bs = BF_BLOCK_SIZE_MIN; bad == NULL && u->bound != NULL && bs <= BF_BLOCK_SIZE_MAX;
         bs *= 2)
        if (u->bound(u->ctx, bs) > BF_USER_BOUND_MAX(bs))
            bad = "its bound is more than twice the block and 4 KiB (the room a space gives)";
    if (bad == NULL)
        return BF_OK;
    snprintf(why, len, "caller codec %d (%s): %s", u->id, n > 0 && n <= 15 ? u->name : "?", bad);
    return BF_EINVAL;
}

/*
 * The room compress gets. Held to BF_USER_BOUND_MAX whatever the caller's
 * bound says now (bf_space_create checked it once; a bound that grows
 * later must not size a buffer past what the space sums without overflow).
 */
static size_t user_bound(void *ctx, size_t len)
{
    const bf_user_codec *u = ctx;
    size_t need = u->bound != NULL ? u->bound(u->ctx, len) : 0;
    if (need > BF_USER_BOUND_MAX(len))
        need = BF_USER_BOUND_MAX(len);
    return need > len - 1 ? need : len - 1;
}

static int64_t user_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                             size_t cap)
{
    const bf_user_codec *u = ctx;
    int64_t n = u->compress(u->ctx, level, src, len, dst, cap);
    if (n < 0 || (uint64_t)n > cap)
        return -1;
    return (uint64_t)n >= len ? 0 : n;
}

static int user_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    const bf_user_codec *u = ctx;
    int64_t n = u->decompress(u->ctx, src, len, dst, raw_len);
    if (n < 0)
        return -1;
    return (uint64_t)n == raw_len ? 0 : BF_CODEC_BADLEN;
}

void bf_user_codec_ops(const bf_user_codec *u, const char *name, bf_codec_ops *out)
{
    *out = (bf_codec_ops){(bf_codec)u->id,
                          name,
                          u->default_level,
                          u->min_level,
                          u->max_level,
                          NULL,
                          NULL,
                          user_compress,
                          user_decompress,
                          user_bound};
}
