/*
 * file.h - the internal state of one temporary file (the logical stream).
 *
 * Invariants:
 *  - buf holds logical block buf_blk (or nothing when buf_blk ==
 *    BF_NO_BLOCK); bytes of it at or past `size` are zero; buf_dirty means
 *    it differs from the block's extent.
 *  - map covers at most the blocks below ceil(size / block_size); every
 *    non-hole entry points at a verified-on-read extent of exactly that
 *    block; live_bytes is the sum of their lengths.
 *  - phys_end is the end of the last byte the file may have on disk; the
 *    bytes below it are live extents, free chunks or segment-end gaps.
 */
#ifndef BF_FILE_H
#define BF_FILE_H

#include <stdint.h>

#include "blockmap.h"
#include "buffile.h"
#include "freespace.h"
#include "segment.h"
#include "space.h"

#define BF_NO_BLOCK UINT64_MAX

struct bf_file {
    struct bf_space *space;
    struct bf_file *prev, *next; /* the space's list of open files */
    uint64_t pos;
    uint64_t size;
    unsigned char *buf;
    uint64_t buf_blk;
    uint64_t phys_end;
    uint64_t live_bytes;
    int32_t level;
    uint32_t block_size;
    uint8_t codec;
    uint8_t buf_dirty;
    uint8_t readonly;
    bf_blockmap map;
    bf_freespace free;
    bf_seg seg;
    bf_counters c;
};

#endif
