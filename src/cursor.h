/*
 * cursor.h - read positions over a file, each with a block of its own
 * (bf_cursor, buffile.h), and what the calls that end a file or a space
 * do with them.
 *
 * Invariants: a cursor is on its space's list from open to close; `file`
 * is its file until that file is closed or aborted (then NULL: its calls
 * fail with BF_EINVAL); `buf` holds block `blk` as the file read it when
 * the file's write generation was `gen` and the space's epoch `epoch`, and
 * is only trusted while both still are (else, or with blk == NO_BLOCK,
 * nothing).
 */
#ifndef BF_CURSOR_H
#define BF_CURSOR_H

#include <stdint.h>

#include "buffile.h"
#include "file.h"

struct bf_cursor {
    struct bf_cursor *prev, *next; /* the space's list */
    bf_space *space;
    bf_file *file;      /* NULL once the file is closed */
    uint64_t pos;       /* logical position */
    uint64_t blk;       /* block held in buf, or BF_CURSOR_NO_BLOCK */
    uint64_t epoch;     /* the space's wgen_epoch when buf was filled */
    unsigned char *buf; /* block_size bytes, from the first read that needs it */
    uint32_t block_size;
    uint16_t gen; /* the file's wgen when buf was filled */
};

#define BF_CURSOR_NO_BLOCK UINT64_MAX

/* The file is going (close, abort): its cursors forget it (api.c, before the close). */
void bf_cursors_detach(bf_file *file);

/* The space is going: free every cursor still open (api.c, bf_space_destroy). */
void bf_cursors_free_all(bf_space *space);

/* Heap the space's open cursors hold (bf_stats.memory_bytes of the space). */
uint64_t bf_cursors_memory(const bf_space *space);

#endif
