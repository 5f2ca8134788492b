/*
 * codec.c - codec registry: names, availability, level ranges.
 * Implements: bf_codec_name, bf_codec_parse, bf_codec_available
 * (buffile.h); bf_codec_ops_get, bf_codec_resolve_level (codec.h).
 *
 * Which codecs exist is decided at build time (BF_HAVE_LZ4/ZSTD/ZLIB); a
 * codec that was not built is reported as such, never replaced silently.
 * "auto" has a name but no ops: it is a policy over the others (auto.c).
 */
#include "codec.h"

#include <string.h>

static const bf_codec_ops *const registry[] = {
    &bf_codec_none_ops,
#ifdef BF_HAVE_LZ4
    &bf_codec_lz4_ops,
#else
    NULL,
#endif
#ifdef BF_HAVE_ZSTD
    &bf_codec_zstd_ops,
#else
    NULL,
#endif
#ifdef BF_HAVE_ZLIB
    &bf_codec_zlib_ops,
#else
    NULL,
#endif
};

static const char *const names[] = {"none", "lz4", "zstd", "zlib", "auto"};
#define NCODECS (sizeof(registry) / sizeof(registry[0]))
#define NNAMES (sizeof(names) / sizeof(names[0]))

const bf_codec_ops *bf_codec_ops_get(bf_codec codec)
{
    if ((int)codec < 0 || (size_t)codec >= NCODECS)
        return NULL;
    return registry[codec];
}

const char *bf_codec_name(bf_codec codec)
{
    if ((int)codec < 0 || (size_t)codec >= NNAMES)
        return NULL;
    return names[codec];
}

int bf_codec_parse(const char *name, bf_codec *out)
{
    for (size_t i = 0; name != NULL && i < NNAMES; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (bf_codec)i;
            return BF_OK;
        }
    }
    return BF_EINVAL;
}

int bf_codec_available(bf_codec codec)
{
    return codec == BF_CODEC_AUTO || bf_codec_ops_get(codec) != NULL;
}

int bf_codec_resolve_level(const bf_codec_ops *ops, int32_t level, int32_t *out)
{
    if (level == BF_LEVEL_DEFAULT)
        level = ops->default_level;
    if (level < ops->min_level || level > ops->max_level)
        return BF_EINVAL;
    *out = level;
    return BF_OK;
}
