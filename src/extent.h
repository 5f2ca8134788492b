/*
 * extent.h - one logical block as stored on disk: header + payload.
 *
 * Header (32 bytes, little-endian; docs/format.md is the reference):
 *   0  u32 magic "BFX" + format version byte
 *   4  u8  codec id        5  u8 flags (bit 0: payload stored raw)
 *   6  u16 reserved (0)
 *   8  u32 payload length  12 u32 raw length (logical bytes in the block)
 *  16  u64 logical block number
 *  24  u32 CRC-32C of header (this field as 0) and payload
 *  28  u32 generation: the session of a named file that wrote it (0: anonymous)
 * An extent is valid only if every field checks out against what the block
 * map expects; anything else is BF_ECORRUPT, never a crash.
 */
#ifndef BF_EXTENT_H
#define BF_EXTENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "codec.h"

#define BF_EXTENT_HDR 32u
#define BF_EXTENT_VERSION 2u
#define BF_EXTENT_FLAG_RAW 0x01u

typedef struct bf_extent_info {
    bf_codec codec;
    int raw;
    uint32_t payload_len;
    uint32_t raw_len;
    uint64_t blkno;
    uint32_t gen;
    uint64_t codec_ns; /* pack: time spent in the codec's compress call */
} bf_extent_info;

/*
 * Build the extent for `raw_len` bytes of `data` (logical block `blkno`,
 * written by generation `gen`):
 * compress into `scratch` (capacity BF_EXTENT_HDR + raw_len) after the
 * header; if the payload would not be smaller than the data, store raw.
 * On return iov[0..*iovcnt) describes the extent bytes (pointing into
 * scratch and, for raw, into `data`), *info what was chosen.
 * Returns BF_OK, BF_ENOMEM (the codec could not allocate) or BF_ECODEC.
 */
int bf_extent_pack(const bf_codec_ops *ops, void *ctx, int32_t level, uint64_t blkno, uint32_t gen,
                   const void *data, uint32_t raw_len, unsigned char *scratch, struct iovec iov[2],
                   int *iovcnt, bf_extent_info *info);

/*
 * Parse and verify the `len` extent bytes at `ext`: header fields, CRC,
 * expected block number, a generation no newer than `max_gen` (a later
 * session's extent where an older map points is not that map's data),
 * raw length <= block_size. On success *info is filled; the payload starts
 * at ext + BF_EXTENT_HDR.
 * Returns BF_OK or BF_ECORRUPT with a reason in *why.
 */
int bf_extent_check(const unsigned char *ext, size_t len, uint64_t expect_blkno, uint32_t max_gen,
                    uint32_t block_size, bf_extent_info *info, const char **why);

#endif
