/*
 * spill_codecs.c - the harness's codecs of the caller's own beside
 * libbuffile's: one table, so that spaces, flags and reports agree.
 */
#include "spill_codecs.h"

#include <string.h>

#include "codec_pglz.h"

static const bf_user_codec *table(uint32_t *n)
{
#ifdef BF_HAVE_PGLZ
    static bf_user_codec codecs[1];
    codecs[0] = pglz_user_codec();
    *n = 1;
    return codecs;
#else
    *n = 0;
    return NULL;
#endif
}

const bf_user_codec *spill_user_codecs(uint32_t *n)
{
    return table(n);
}

const char *spill_codec_name(bf_codec codec)
{
    uint32_t n;
    const bf_user_codec *u = table(&n);
    for (uint32_t i = 0; i < n; i++)
        if (u[i].id == (int)codec)
            return u[i].name;
    return codec == PGLZ_CODEC_ID ? "pglz" : bf_codec_name(codec);
}

int spill_codec_parse(const char *name, bf_codec *out)
{
    uint32_t n;
    const bf_user_codec *u = table(&n);
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(name, u[i].name) == 0) {
            *out = (bf_codec)u[i].id;
            return BF_OK;
        }
    }
    if (strcmp(name, "pglz") == 0)
        return BF_ENOCODEC;
    return bf_codec_parse(name, out);
}
