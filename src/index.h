/*
 * index.h - the persisted block index of a named file (format in docs/format.md).
 *
 * Encoding is a pure function of a file's state; decoding validates every
 * field and the CRC before anything is trusted, so a truncated, corrupt or
 * foreign index is an error, never a wrong map. Holes are not stored: the
 * entries come in runs of consecutive used blocks, so a sparse file's index
 * is as small as its map.
 */
#ifndef BF_INDEX_H
#define BF_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"

#define BF_INDEX_VERSION 2u
#define BF_INDEX_HDR 64u

typedef struct bf_index_part {
    const char *name; /* points into the decoded buffer; not NUL-terminated */
    uint16_t name_len;
    uint32_t nsegs;
    uint32_t gen; /* the newest generation of the part's extents */
    uint64_t bytes;
    uint64_t blk_delta;
} bf_index_part;

typedef struct bf_index {
    uint32_t block_size;
    uint8_t codec;
    int32_t level;
    uint64_t size;
    uint64_t segment_size;
    uint64_t phys_end;
    uint32_t nsegs;
    uint32_t nparts;
    uint32_t nblocks;     /* the map covers blocks 0..nblocks-1 */
    uint32_t gen;         /* the session that wrote the index: its extents are this old or older */
    bf_index_part *parts; /* nparts entries (caller-provided storage on decode) */
    const unsigned char *runs; /* decoded: the runs of used entries, up to the CRC */
} bf_index;

/* Bytes needed to encode `idx` with the used entries of `map` (parts' names included). */
size_t bf_index_size(const bf_index *idx, const bf_blockmap *map);

/* Encode into `out` (bf_index_size bytes); `map` supplies the entries. */
void bf_index_encode(const bf_index *idx, const bf_blockmap *map, unsigned char *out);

/*
 * Validate `len` bytes as an index - magic, version, CRC of everything,
 * header fields - and fill the header fields of *idx (nparts tells how many
 * parts to allocate). Returns BF_OK or BF_ECORRUPT with a reason in *why.
 */
int bf_index_decode(const unsigned char *buf, size_t len, bf_index *idx, const char **why);

/*
 * After bf_index_decode succeeded on the same bytes, with idx->parts
 * pointing at nparts entries: fill the parts and check every part record,
 * run and map entry. Returns BF_OK or BF_ECORRUPT with a reason in *why.
 */
int bf_index_decode_body(const unsigned char *buf, size_t len, bf_index *idx, const char **why);

/*
 * Hand every used entry of an index that bf_index_decode_body accepted to
 * `put`, in block order; stops at, and returns, the first non-zero result.
 */
int bf_index_each(const bf_index *idx, const unsigned char *buf, size_t len,
                  int (*put)(void *ctx, uint32_t blkno, const bf_map_entry *e), void *ctx);

/* 1 if s[0..n) is a valid file-set name: 1..128 of [A-Za-z0-9_.-], not starting with '.'. */
int bf_name_valid(const char *s, size_t n);

#endif
