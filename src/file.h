/*
 * file.h - the internal state of one temporary file (the logical stream).
 *
 * Invariants:
 *  - buf holds logical block buf_blk (or nothing when buf_blk ==
 *    BF_NO_BLOCK); bytes of it at or past `size` are zero; buf_dirty means
 *    it differs from the block's extent.
 *  - map covers at most the blocks below ceil(size / block_size); every
 *    non-hole entry points at a verified-on-read extent of exactly that
 *    block, in the file's own segments (part 0) or in a spliced part.
 *  - phys_end is the end of the file's own segments; the bytes below it
 *    are live part-0 extents, free chunks or segment-end gaps. Only part-0
 *    extents are ever freed or reused: spliced parts are read-only.
 *  - named == NULL for an anonymous temp file (deleted on close).
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

/* Another named file's segments, spliced into this file by bf_file_append. */
typedef struct bf_part {
    bf_seg seg;
    char *name;         /* the source's name in the set */
    char *prefix;       /* "<set dir>/<name>" */
    uint64_t bytes;     /* the source's physical end */
    uint64_t blk_delta; /* its extent headers hold (block number - blk_delta) */
} bf_part;

/* What a file of a file set has beyond an anonymous temp file. */
typedef struct bf_named {
    char *dir;      /* the set directory */
    char *name;     /* the file's name in the set */
    char *prefix;   /* "<dir>/<name>": the prefix of the file's own segments */
    bf_part *parts; /* parts[i] is part i + 1 of the block map */
    uint32_t nparts;
} bf_named;

struct bf_file {
    struct bf_space *space;
    struct bf_file *prev, *next; /* the space's list of open files */
    uint64_t pos;
    uint64_t size;
    unsigned char *buf;
    uint64_t buf_blk;
    uint64_t phys_end;
    bf_named *named;
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

/* Heap bytes the file holds (struct, buffer, map, free list, named state). */
uint64_t bf_file_memory(const struct bf_file *f);

/* Set the logical size, keeping the space's totals and peaks. */
void bf_file_set_logical(struct bf_file *f, uint64_t size);

/* Account a file whose map, segments and physical end were just filled from an index. */
void bf_file_adopt(struct bf_file *f, uint64_t size, uint64_t phys_end);

/* fileset.c: write a named file's index (flushing first); free its named state. */
int bf_named_persist(struct bf_file *f);
void bf_named_release(struct bf_file *f);

#endif
