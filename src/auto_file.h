/*
 * auto_file.h - what the stream (file.c) and the segment layer (segment.c)
 * tell codec=auto, and what it answers: the small interface to auto.c's
 * estimates and decisions (auto_file.c).
 */
#ifndef BF_AUTO_FILE_H
#define BF_AUTO_FILE_H

#include <stdint.h>

#include "auto.h"
#include "extent.h"
#include "space.h"

/* A new auto file: its state, and the codec and level it starts with (the space's choice). */
int bf_auto_file_start(bf_space *space, bf_file_auto *fa, bf_codec *codec, int32_t *level);

/*
 * Before an auto file packs a block of `raw_len` bytes at `data`: probe
 * when the space's schedule or the file asks for it, and at the file's
 * decision points choose its codec and level (*codec, *level) for the
 * blocks that follow.
 */
void bf_auto_file_prepare(bf_space *space, bf_file_auto *fa, uint8_t *codec, int32_t *level,
                          const void *data, uint32_t raw_len);

/* An auto file packed a block with `codec`: `info` is what came out. */
void bf_auto_file_packed(bf_space *space, bf_file_auto *fa, bf_codec codec,
                         const bf_extent_info *info);

/* A block of `raw_len` bytes was decompressed with `codec` in `ns`. */
void bf_auto_file_unpacked(bf_space *space, bf_codec codec, uint32_t raw_len, uint64_t ns);

/* A block was loaded (`ns`: its decompression, 0 if stored raw). */
void bf_auto_file_loaded(bf_space *space, uint32_t raw_len, uint64_t ns);

/*
 * Around a transfer of `bytes` (segment.c): whether auto times it, and its
 * start (*t0); then its end, a read if `read`, which passes auto the time
 * it waited on the device (the space's device clock, devclock.h). Untimed
 * transfers are counted all the same.
 */
int bf_auto_io_start(bf_space *space, uint64_t bytes, uint64_t *t0);
void bf_auto_io_finish(bf_space *space, int read, uint64_t bytes, int timed, uint64_t t0);

/* Inline so that a space without auto's figures (none, lz4, ...) pays no call per transfer. */
static inline int bf_auto_io_begin(bf_space *space, uint64_t bytes, uint64_t *t0)
{
    *t0 = 0;
    return space->autoc != NULL ? bf_auto_io_start(space, bytes, t0) : 0;
}

static inline void bf_auto_io_end(bf_space *space, int read, uint64_t bytes, int timed, uint64_t t0)
{
    if (space->autoc != NULL)
        bf_auto_io_finish(space, read, bytes, timed, t0);
}

#endif
