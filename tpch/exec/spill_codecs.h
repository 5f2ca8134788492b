/*
 * spill_codecs.h - the codecs spillbench spills with: libbuffile's own, and
 * the caller's codecs the harness brings (PostgreSQL's pglz, when the build
 * found postgresql-server-dev's libpgcommon), given to every spill space.
 */
#ifndef SPILL_CODECS_H
#define SPILL_CODECS_H

#include <stdint.h>

#include "buffile.h"

/* The harness's own codecs, `*n` of them, for bf_space_options.user_codecs. */
const bf_user_codec *spill_user_codecs(uint32_t *n);

/* A codec's name, libbuffile's or the harness's; NULL if neither knows it. */
const char *spill_codec_name(bf_codec codec);

/* Parse a codec name, the harness's codecs included: BF_OK, BF_ENOCODEC (a codec
   the harness knows of but this build lacks), or BF_EINVAL. */
int spill_codec_parse(const char *name, bf_codec *out);

#endif
