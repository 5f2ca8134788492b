/*
 * file.h - the internal state of one temporary file (the logical stream).
 *
 * Invariants:
 *  - buf holds logical block buf_blk (or nothing when buf_blk ==
 *    BF_NO_BLOCK); bytes of it at or past `size` are zero (with buf_lazy:
 *    undefined until logical_set or a reader of the whole buffer zeroes
 *    them); buf_dirty means it differs from the block's extent.
 *  - map covers at most the blocks below ceil(size / block_size), also
 *    after a failed call; every used entry points at a verified-on-read
 *    extent of exactly that block, in the file's own segments (part 0) or
 *    in a spliced part.
 *  - phys_end is the end of the file's own segments and the sum of their
 *    sizes (a gap left at a segment's end is in the file, as free space);
 *    the bytes below it are live part-0 extents, free chunks, extents
 *    kept for the last persisted index, and for a named file its head
 *    (the first BF_HEAD_BYTES) and that index. Only part-0 extents without
 *    BF_MAP_KEPT are ever freed or reused: spliced parts are read-only.
 *  - named == NULL for an anonymous temp file (deleted on close).
 *  - counted: the file's bytes are the space's (it was created here or
 *    opened read-write); a read-only handle on someone's file is not.
 */
#ifndef BF_FILE_H
#define BF_FILE_H

#include <stdint.h>

#include "blockmap.h"
#include "buffile.h"
#include "freespace.h"
#include "segment.h"
#include "space.h"

#define BF_NO_BLOCK UINT32_MAX

/* Another named file's segments, spliced into this file by bf_file_append. */
typedef struct bf_part {
    bf_seg seg;
    unsigned char file_id[12]; /* the source's identity: its sealed extents name it */
    char *name;         /* the source's name in the set */
    char *prefix;       /* "<set dir>/<name>" */
    uint64_t bytes;     /* the source's physical end */
    uint64_t blk_delta; /* its extent headers hold (block number - blk_delta) */
    uint32_t gen;       /* its extents are of this generation or older */
    uint8_t marked;     /* this handle created the part's consumed marker (fileset.c) */
} bf_part;

/*
 * What a file of a file set has beyond an anonymous temp file.
 *
 * Generations and shadow paging: every session that writes a named file
 * (its creation, or a read-write open) has a generation one above the
 * index it started from, stamped into every extent it writes. While the
 * session runs, the extents of the last persisted index are marked
 * BF_MAP_KEPT in the map and never freed, and the physical end never drops
 * below `kept_end`: a crash or a failed close leaves that index valid. A
 * handle reads only extents of its generation or older, so an old reader
 * sees its own version or BF_ECORRUPT, never a later session's bytes.
 */
typedef struct bf_named {
    unsigned char file_id[12]; /* a sealed file's identity, which its extents' tags cover (a
                                  nonce drawn at its creation: no other file has it) */
    char *dir;      /* the set directory */
    char *name;     /* the file's name in the set */
    char *prefix;   /* "<dir>/<name>": the prefix of the file's own segments */
    bf_part *parts; /* parts[i] is part i + 1 of the block map */
    uint32_t nparts;
    uint32_t gen;          /* this handle's generation */
    uint64_t kept_end;     /* physical end of the last persisted version, its index included
                              (0: never persisted) */
    uint64_t kept_extents; /* where the last persisted version's extents end */
    uint64_t idx_off;      /* where the last persisted index lies (with persisted), */
    uint64_t idx_len;      /* and its length */
    uint64_t idx_bytes;    /* the head and the last persisted index: metadata, not dead bytes */
    uint8_t persisted;     /* an index of this file exists */
    uint32_t kept_parts;   /* parts[0..kept_parts) are the last persisted index's; the rest were
                              spliced in since, and their sources' consumption is this session's */
} bf_named;

/*
 * The fields bf_file_write's and bf_file_read's common case touch come first,
 * in two cache lines where the struct starts on a 64-byte boundary (jemalloc's
 * 256-byte size class; behind an allocator's chunk header, as PostgreSQL's,
 * they may take three): pos to dhi and seg.space in the first, the counters'
 * logical figures in the second. A hash join's writes go to a file picked
 * by hash among hundreds: with the list pointers first and the counters
 * last, each call touched three lines of a struct that was no longer in the
 * L1 cache (docs/results/none-path-profile.md).
 */
struct bf_file {
    uint64_t pos;
    uint64_t size;
    unsigned char *buf;
    uint32_t buf_blk;
    uint32_t block_size;
    int32_t level;
    uint8_t codec;
    /* One byte of flags, so that the struct keeps its size (tests/test_memory.c). */
    uint8_t buf_dirty : 1;
    uint8_t readonly : 1;
    uint8_t counted : 1;
    uint8_t sealed : 1; /* its extents are sealed (the space that created it encrypts) */
    /* The buffered block has bytes on disk (it was loaded, or stored since): writes into it
       take the slow path, which keeps the range they dirtied, so that a block stored bare
       is patched where it changed instead of written whole elsewhere (file.c: bare_patch),
       and a compressed one changed in part goes bare when that costs less (sub_block_bound). */
    uint8_t buf_rmw : 1;
    /* The buffered block was not loaded and its bytes past `size` were never zeroed (file.c:
       buf_settle): a new block costs no zeroing of what its writes cover. */
    uint8_t buf_lazy : 1;
    uint8_t own_alloc : 1; /* its memory goes through its own allocator: bf_file_alloc */
    uint8_t dirty_old : 1; /* with buf_rmw: a write changed bytes below the size (not only
                              appended) since the block was loaded or stored */
    bf_file_auto fauto; /* codec=auto: the file's choice (fauto.on) */
    uint16_t wgen;      /* write generation: moves at every call that may change bytes the
                           file reads (cursors compare it); a wrap moves the space's
                           wgen_epoch */
    /* With buf_rmw: the dirtied units (block_size / 256 bytes) dlo..dhi; empty if dlo > dhi.
       fauto's flags are bits so that these fit before seg: the struct stays under 256
       bytes. */
    uint8_t dlo, dhi;
    bf_seg seg;    /* seg.space is the file's space */
    bf_counters c; /* its logical figures first: the common case's; c.logical_peak may
                      lag `size`, the peak being the larger (file.c: logical_append) */
    bf_blockmap map;
    bf_freespace free;
    struct bf_file *prev, *next; /* the space's list of open files */
    uint64_t phys_end;
    bf_named *named;
};

/*
 * The allocator of the file's own memory (the struct, its buffer, map, free
 * list and named state): the space's, or, with own_alloc, the space's hooks
 * with the file's ctx (bf_file_options.alloc_ctx). The ctx alone is kept,
 * right after the struct in its allocation: 8 bytes, so that the two fill
 * a 256-byte chunk of a caller's allocator that rounds to powers of two
 * (PostgreSQL's AllocSet), where a whole bf_allocator would take a 512-byte
 * one. A macro, as the allocator it makes is a compound literal that lives
 * as long as the caller's block.
 */
#define bf_file_alloc(f)                                                                           \
    ((f)->own_alloc ? &(const bf_allocator){.malloc_fn = (f)->seg.space->alloc.malloc_fn,          \
                                            .realloc_fn = (f)->seg.space->alloc.realloc_fn,        \
                                            .free_fn = (f)->seg.space->alloc.free_fn,              \
                                            .ctx = *(void *const *)(const void *)((f) + 1)}        \
                    : (const bf_allocator *)&(f)->seg.space->alloc)

/*
 * A call that may change what the file reads is under way: cursors holding
 * a block of it must load it again (cursor.c). Called before the change,
 * so that a failure half way invalidates as well.
 */
static inline void bf_file_modified(struct bf_file *f)
{
    if (++f->wgen == 0)
        f->seg.space->wgen_epoch++;
}

/*
 * Block `blkno` as a read of the file sees it into `dst` (block_size
 * bytes): the buffered block's bytes when the buffer holds it (dirty or
 * not), else its extent loaded and checked, zeros for a hole or past the
 * data. Writes nothing, moves no position and counts no logical bytes
 * (the caller does): for cursors (cursor.c). Errors: as bf_file_read's
 * loads (BF_ECORRUPT, BF_EIO, BF_ENOMEM, BF_ENOCODEC, ...), never write
 * errors; `dst` then holds garbage.
 */
int bf_file_peek_block(struct bf_file *f, uint64_t blkno, unsigned char *dst);

/*
 * Commit the file's blocks that the space's workers packed, waiting for
 * them (a no-op without workers): the first failure, its block kept.
 */
int bf_file_settle(struct bf_file *f);

/* A new file with the options resolved, not yet counted as created (bf_file_create counts). */
int bf_file_new(struct bf_space *space, const bf_file_options *opts, struct bf_file **out);

/* Set the logical size, keeping the space's totals and peaks. */
void bf_file_set_logical(struct bf_file *f, uint64_t size);

/*
 * Set the physical end (everything on disk, a named file's head and index
 * included) and the metadata bytes among it, keeping the space's totals
 * and peaks.
 */
void bf_file_set_physical(struct bf_file *f, uint64_t phys_end, uint64_t idx_bytes);

/* Account a file whose map, segments and physical end were just filled from an index. */
void bf_file_adopt(struct bf_file *f, uint64_t size, uint64_t phys_end, uint64_t idx_bytes);

/* Where the extents of the file's own blocks end: the physical end a new index records. */
uint64_t bf_file_live_end(const struct bf_file *f);

/* Give the physical space past the live extents back (not below the kept end). */
void bf_file_shrink_tail(struct bf_file *f);

/*
 * Free the file's memory and unlink it from its space (its files are the
 * caller's; a named file's state is freed first, by fileset.c).
 */
void bf_file_release(struct bf_file *f);

/* Close an anonymous file: delete its segments and release it (the first failure, if any). */
int bf_file_discard(struct bf_file *f);

#endif
