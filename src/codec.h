/*
 * codec.h - the small vtable every block codec implements.
 *
 * A codec context is created lazily by the space on first use and reused
 * for every block of every file in that space: no codec state per file.
 * compress() must not write past `cap` and returns 0 when the output does
 * not fit, which the extent layer takes as "store raw". decompress() must
 * produce exactly `raw_len` bytes or fail; it must be safe on any input.
 * The built-in codecs are static tables (codec.c); a caller's codec
 * (bf_user_codec) gets a table of the space's own (codec_user.c), whose
 * context is the space's copy of the caller's struct.
 */
#ifndef BF_CODEC_H
#define BF_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buffile.h"

/* Returned by compress/decompress when the codec's own allocation failed. */
#define BF_CODEC_NOMEM (-2)
/* Returned by decompress when a caller's codec produced another length than the block's. */
#define BF_CODEC_BADLEN (-3)

typedef struct bf_codec_ops {
    bf_codec id;
    const char *name;
    int32_t default_level;
    int32_t min_level;
    int32_t max_level;
    /* Create the context; *ctx may be set to NULL for stateless codecs. Returns a bf_status. */
    int (*ctx_create)(const bf_allocator *a, void **ctx);
    void (*ctx_destroy)(const bf_allocator *a, void *ctx);
    /* Compressed length in 1..cap, 0 if it does not fit in cap, -1 on codec failure,
       BF_CODEC_NOMEM when the codec could not allocate. */
    int64_t (*compress)(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                        size_t cap);
    /* 0 when exactly raw_len bytes were produced, BF_CODEC_NOMEM when the codec could
       not allocate, -1 otherwise (bad input). */
    int (*decompress)(void *ctx, const void *src, size_t len, void *dst, size_t raw_len);
    /* Room compress needs for `len` bytes (at least len - 1); NULL (the built-in codecs):
       len - 1, the output not fitting being "store raw". */
    size_t (*bound)(void *ctx, size_t len);
} bf_codec_ops;

/* The ops of a built codec, or NULL if `codec` is unknown or was not built. */
const bf_codec_ops *bf_codec_ops_get(bf_codec codec);

/* Resolve BF_LEVEL_DEFAULT and check the range; returns BF_OK or BF_EINVAL. */
int bf_codec_resolve_level(const bf_codec_ops *ops, int32_t level, int32_t *out);

/* 1 if `codec` is an id of the caller's codecs' range. */
static inline int bf_codec_is_user(int codec)
{
    return codec >= BF_CODEC_USER_MIN && codec <= BF_CODEC_USER_MAX;
}

/*
 * The most room a caller's codec may ask for `len` bytes of input: twice
 * them and 4 KiB (pglz writes a few bytes past its input; no codec worth
 * storing a block with needs more). Sums of it with headers stay far from
 * SIZE_MAX.
 */
#define BF_USER_BOUND_MAX(len) (2 * (size_t)(len) + 4096)

/*
 * Check a caller's codec `u` (id, name, levels, functions, and its bound at
 * every block size); BF_OK or BF_EINVAL with the reason in `why`.
 */
int bf_user_codec_check(const bf_user_codec *u, char *why, size_t len);

/* The table of caller codec `u`, named `name` (the space's copies of both). */
void bf_user_codec_ops(const bf_user_codec *u, const char *name, bf_codec_ops *out);

extern const bf_codec_ops bf_codec_none_ops;
extern const bf_codec_ops bf_codec_lz4_ops;
extern const bf_codec_ops bf_codec_zstd_ops;
extern const bf_codec_ops bf_codec_zlib_ops;

#endif
