/*
 * index.h - the persisted block index of a named file (format in docs/format.md).
 *
 * Encoding is a pure function of a file's state; decoding validates every
 * field and the CRC before anything is trusted, so a truncated, corrupt or
 * foreign index is an error, never a wrong map.
 */
#ifndef BF_INDEX_H
#define BF_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"

#define BF_INDEX_VERSION 1u
#define BF_INDEX_HDR 64u

typedef struct bf_index_part {
    const char *name; /* points into the decoded buffer; not NUL-terminated */
    uint16_t name_len;
    uint32_t nsegs;
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
    uint32_t nblocks;
    bf_index_part *parts;         /* nparts entries (caller-provided storage on decode) */
    const unsigned char *entries; /* nblocks x 16 bytes, little-endian */
} bf_index;

/* Bytes needed to encode `idx` (parts' names included). */
size_t bf_index_size(const bf_index *idx);

/* Encode into `out` (bf_index_size bytes); `map` supplies the entries. */
void bf_index_encode(const bf_index *idx, const bf_map_entry *map, unsigned char *out);

/*
 * Validate `len` bytes as an index - magic, version, CRC of everything,
 * header fields - and fill the header fields of *idx (nparts tells how many
 * parts to allocate). Returns BF_OK or BF_ECORRUPT with a reason in *why.
 */
int bf_index_decode(const unsigned char *buf, size_t len, bf_index *idx, const char **why);

/*
 * After bf_index_decode succeeded on the same bytes, with idx->parts
 * pointing at nparts entries: fill the parts and check every part record
 * and map entry. Returns BF_OK or BF_ECORRUPT with a reason in *why.
 */
int bf_index_decode_body(const unsigned char *buf, size_t len, bf_index *idx, const char **why);

/* 1 if s[0..n) is a valid file-set name: 1..128 of [A-Za-z0-9_.-], not starting with '.'. */
int bf_name_valid(const char *s, size_t n);

/* Entry `i` of a decoded index. */
void bf_index_entry(const bf_index *idx, uint32_t i, bf_map_entry *out);

#endif
