/*
 * codec_pglz.h - PostgreSQL's pglz (common/pg_lzcompress.c, from
 * postgresql-server-dev's libpgcommon) as a codec of the caller's for
 * libbuffile: the compressor TOAST uses by default, to measure on spills
 * what the pgsql-hackers thread compared (no/pglz/lz4).
 */
#ifndef CODEC_PGLZ_H
#define CODEC_PGLZ_H

#include "buffile.h"

/* The id pglz takes among the caller's codecs (as in the PostgreSQL integration). */
#define PGLZ_CODEC_ID BF_CODEC_USER_MIN

/* pglz at PostgreSQL's default strategy (blocks that do not shrink by 25% are stored raw). */
bf_user_codec pglz_user_codec(void);

#endif
