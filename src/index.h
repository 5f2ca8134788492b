/*
 * index.h - the persisted block index of a named file and the head that
 * finds it (format in docs/format.md).
 *
 * A named file keeps its index inside its own segments: segment 0 starts
 * with a head of two slots, and the slot of the newest generation names
 * where that session's index lies. A session writes its index where the
 * previous one's extents and index are not, then its slot (the one the
 * previous session did not use): a crash before the slot is written leaves
 * the previous slot, index and extents whole. So a named file is one inode
 * per segment, as PostgreSQL's own temporary files are.
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
#include "seal.h"

#define BF_INDEX_VERSION 4u
#define BF_INDEX_HDR 112u
/* Flag bits of the index header. SEALED: the file's extents are sealed. TAGGED: the index ends
   with a nonce and a tag under the writer's key, which the key check value names: every index
   a space with a key writes, so that such a space can tell a file it cannot authenticate (a
   sealed one stripped of its seal) from one of its key's. SEALED is only ever set with it. */
#define BF_INDEX_SEALED 0x01u
#define BF_INDEX_TAGGED 0x02u

/* The head: two slots at the start of a named file's segment 0, before its first extent. */
#define BF_HEAD_SLOT 32u
#define BF_HEAD_BYTES (2 * BF_HEAD_SLOT)

/* One slot: the session `gen` persisted the index of `len` bytes at physical offset `off`. */
typedef struct bf_head_slot {
    uint32_t gen;
    uint64_t off;
    uint64_t len;
} bf_head_slot;

/* The physical offset of the slot a session of generation `gen` writes (they alternate). */
static inline uint64_t bf_head_slot_at(uint32_t gen)
{
    return (uint64_t)((gen - 1) & 1) * BF_HEAD_SLOT;
}

/* Encode a slot into BF_HEAD_SLOT bytes. */
void bf_head_encode(const bf_head_slot *slot, unsigned char *out);

/*
 * From the first `n` bytes of segment 0 (a never-persisted file may have
 * fewer than BF_HEAD_BYTES), the valid slot of the newest generation.
 * Returns BF_OK, BF_ENOENT when no slot was ever written (every byte 0:
 * the file was never exported or closed), or BF_ECORRUPT with *why when
 * no slot is valid but the head is not empty. A damaged slot beside a
 * valid one counts as absent: the valid one's version is whole (a session
 * writes its slot last), and an older version's reads of blocks a newer
 * session rewrote fail on their generation, never give other bytes.
 */
int bf_head_decode(const unsigned char *buf, size_t n, bf_head_slot *slot, const char **why);

typedef struct bf_index_part {
    unsigned char file_id[12]; /* the part's identity (its sealed extents name it) */
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
    uint64_t idx_off;     /* where the index itself lies, past phys_end */
    unsigned char file_id[12];       /* the file's identity, which its sealed extents name */
    uint8_t flags;                   /* BF_INDEX_SEALED, BF_INDEX_TAGGED */
    unsigned char kcv[BF_KCV_BYTES]; /* tagged: the key's check value */
    char codec_name[16];             /* a caller's codec: its name (NUL-padded), else zeros */
    bf_index_part *parts; /* nparts entries (caller-provided storage on decode) */
    const unsigned char *runs; /* decoded: the runs of used entries, up to the CRC */
} bf_index;

/* Bytes needed to encode `idx` with the used entries of `map` (parts' names included). */
size_t bf_index_size(const bf_index *idx, const bf_blockmap *map);

/*
 * Encode into `out` (bf_index_size bytes); `map` supplies the entries. A
 * tagged index (BF_INDEX_TAGGED) ends with a nonce and a tag that `seal`
 * computes over all of it before them: BF_OK, or BF_ECODEC if it cannot.
 */
int bf_index_encode(const bf_index *idx, const bf_blockmap *map, bf_seal *seal, unsigned char *out);

/*
 * Check the tag of a tagged index that bf_index_decode_body accepted:
 * BF_OK, or BF_ECORRUPT with *why when it does not hold (the index was
 * altered: a map or size that is not the writer's).
 */
int bf_index_verify(bf_seal *seal, const unsigned char *buf, size_t len, const char **why);

/*
 * Validate `len` bytes as an index - magic, version, CRC of everything,
 * header fields, its own place (idx_off: past the extents, and the
 * segments counted reach its end) - and fill the header fields of *idx
 * (nparts tells how many parts to allocate). Returns BF_OK or BF_ECORRUPT
 * with a reason in *why.
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
