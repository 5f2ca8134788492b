/*
 * logtape.h - many sort tapes in ONE buffile file, with block recycling,
 * after the idea of PostgreSQL's logtape.c.
 *
 * A tape is a chain of blocks: each block starts with a 16-byte header
 * (next block number or -1, payload bytes used) and carries a slice of the
 * tape's byte stream. Blocks are written and read whole with
 * bf_file_write_block/bf_file_read_block. A block that has been read is
 * discarded (bf_file_discard_block frees its extent) and its number goes on
 * a free list; writers take the lowest free number before extending the
 * file. So a merge pass reuses the blocks of its inputs and the file does
 * not grow to twice the data.
 *
 * Memory: tapes write and read whole blocks from their own buffers, so the
 * library never allocates a block buffer for the file. The set charges as
 * memacct.lib what grows with the bytes on its tapes and cannot be shed: the
 * file's library memory (struct, block map, free list: bf_stats.memory_bytes,
 * re-read after every block written or discarded) and its own free-block
 * list; each active writer and reader charges its block buffer.
 */
#ifndef TPCH_LOGTAPE_H
#define TPCH_LOGTAPE_H

#include <stdint.h>

#include "qctx.h"

typedef struct ltset ltset;

typedef struct ltwriter {
    ltset *s;
    uint8_t *buf;
    int64_t first; /* first block of the tape, -1 while empty */
    int64_t cur;
    uint32_t pos;
} ltwriter;

typedef struct ltreader {
    ltset *s;
    uint8_t *buf;
    int64_t next;
    uint32_t pos, used;
} ltreader;

ltset *lt_create(qctx *q, memacct *m);
void lt_destroy(ltset *s);
void ltw_start(ltset *s, ltwriter *w);
void ltw_write(ltwriter *w, const void *p, size_t len);
/* Finish the tape; returns its first block (-1 for an empty tape). */
int64_t ltw_finish(ltwriter *w);

void ltr_start(ltset *s, ltreader *r, int64_t first);
/* Read up to len bytes; fewer only at the end of the tape. */
size_t ltr_read(ltreader *r, void *p, size_t len);
void ltr_end(ltreader *r);

#endif
