/*
 * extent.h - one logical block as stored on disk: a bare block, or a
 * header + payload.
 *
 * A bare block (format 4) is a block stored raw in an unsealed file: its
 * raw_len bytes alone, at a 4096-aligned offset when they fill a page or
 * more (a shorter one, a file's tail, is packed as extents are), as stock's
 * buffile.c stores every block. What describes it lives in the block map entry (and
 * a named file's index): raw length, and the CRC-32C of the block number's
 * 8 little-endian bytes followed by the data (bf_extent_bare_crc), so a
 * block's bytes found in another block's slot fail their check even when
 * identical. Compressed blocks, and every block of a sealed file, are
 * extents with the header below.
 *
 * Header (32 bytes, little-endian; docs/format.md is the reference):
 *   0  u32 magic "BFX" + format version byte
 *   4  u8  codec id        5  u8 flags (bit 0: payload stored raw; bit 1: sealed)
 *   6  u16 a compressed caller-codec extent: its codec name's check (never
 *          0); else 0. The CRC of such an extent starts from the name's
 *          CRC, so a space whose codec of that id is another one does not
 *          take its bytes (BF_ENOCODEC, or BF_ECORRUPT if the checks meet)
 *   8  u32 payload length  12 u32 raw length (logical bytes in the block)
 *  16  u64 logical block number
 *  24  u32 CRC-32C of header (this field as 0) and payload
 *  28  u32 generation: the session of a named file that wrote it (0: anonymous)
 * A sealed extent's payload is a nonce, the compressed (or raw) bytes
 * encrypted with AES-256-GCM, and the tag; the header (CRC as 0) and the
 * file's identity are authenticated with them, so an extent altered, moved
 * to another block or file, or sealed under another key does not open.
 * An extent is valid only if every field checks out against what the block
 * map expects; anything else is BF_ECORRUPT, never a crash.
 */
#ifndef BF_EXTENT_H
#define BF_EXTENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "codec.h"
#include "seal.h"

#define BF_EXTENT_HDR 32u
#define BF_EXTENT_VERSION 4u
/* A bare block's offset is a multiple of this: whole pages, as stock's blocks. */
#define BF_BARE_ALIGN 4096u
/* A whole bare block is aligned to its size up to this (file.c: the page cache's folios). */
#define BF_BARE_ALIGN_MAX 65536u
#define BF_EXTENT_FLAG_RAW 0x01u
#define BF_EXTENT_FLAG_SEALED 0x02u
/* The most bytes an extent of a `bs`-byte block takes on disk. */
#define BF_EXTENT_MAX(bs) (BF_EXTENT_HDR + (bs) + BF_SEAL_BYTES)

/* What a file is to the seal: authenticated with every extent's header. */
#define BF_FILE_ID_BYTES 16u

/* Sealing an extent: the space's sealer, and the file's identity (BF_FILE_ID_BYTES). */
typedef struct bf_extent_seal {
    bf_seal *seal;
    const unsigned char *id;
} bf_extent_seal;

typedef struct bf_extent_info {
    bf_codec codec;
    int raw;
    int sealed;
    int bare;             /* pack: stored as a bare block (no header; iov is the data) */
    uint32_t crc;         /* pack: a bare block's CRC (bf_extent_bare_crc) */
    uint32_t disk_len;    /* pack: bytes on disk: raw_len when bare, else header + payload */
    uint32_t payload_len;
    uint32_t raw_len;
    uint64_t blkno;
    uint32_t gen;
    uint64_t codec_ns; /* pack: time spent in the codec's compress call */
} bf_extent_info;

/*
 * Build the extent for `raw_len` bytes of `data` (logical block `blkno`,
 * written by generation `gen`):
 * compress into `scratch` (room: bf_space_extent_room) after the header;
 * if the payload would not be smaller than the data, store raw; with
 * `seal` (NULL: none) seal the payload. A block stored raw without a seal
 * is a bare block: iov[0] is `data` itself, *iovcnt 1, info->bare set and
 * info->crc its check (the codec `none` is not even called). Otherwise
 * iov[0..*iovcnt) describes the extent bytes (pointing into scratch; *iovcnt
 * is 1). *info says what was chosen, info->disk_len the bytes to write.
 * Returns BF_OK, BF_ENOMEM (the codec could not allocate) or BF_ECODEC.
 */
int bf_extent_pack(const bf_codec_ops *ops, void *ctx, int32_t level, uint64_t blkno, uint32_t gen,
                   const void *data, uint32_t raw_len, const bf_extent_seal *seal,
                   unsigned char *scratch, struct iovec iov[2], int *iovcnt, bf_extent_info *info);

/*
 * bf_extent_pack's bare block, for a caller that knows it is one (codec
 * none, no seal: nothing to ask the codec): iov[0] is `data`, *info filled
 * (codec `codec`; codec_ns untouched), info->crc computed. Returns BF_OK.
 */
int bf_extent_pack_bare(bf_codec codec, uint64_t blkno, uint32_t gen, const void *data,
                        uint32_t raw_len, struct iovec iov[2], int *iovcnt, bf_extent_info *info);

/* The check a bare block's map entry holds: CRC-32C of blkno (8 bytes, little-endian), then data. */
uint32_t bf_extent_bare_crc(uint64_t blkno, const void *data, uint32_t raw_len);

/*
 * bf_extent_bare_crc extended: `crc` is a bare block's check of its first bytes, the result
 * its check with the `len` bytes at `data` appended (a block summed as it fills, file.c).
 */
uint32_t bf_extent_bare_crc_more(uint32_t crc, const void *data, uint32_t len);

/* bf_extent_pack_bare with the check already computed (`crc`: bf_extent_bare_crc's). */
int bf_extent_pack_bare_summed(bf_codec codec, uint64_t blkno, uint32_t gen, const void *data,
                               uint32_t raw_len, uint32_t crc, struct iovec iov[2], int *iovcnt,
                               bf_extent_info *info);

/*
 * Verify the `raw_len` bytes of a bare block read for block `blkno` (its
 * source block in a spliced part) against the map's `crc`. BF_OK or
 * BF_ECORRUPT with *why.
 */
int bf_extent_check_bare(const void *data, uint32_t raw_len, uint64_t blkno, uint32_t crc,
                         const char **why);

/*
 * bf_extent_check_bare of `src` that also copies its bytes to `dst` in the same pass. On
 * BF_ECORRUPT `dst` holds the bytes that failed: the caller must not hand them on.
 */
int bf_extent_check_bare_copy(void *dst, const void *src, uint32_t raw_len, uint64_t blkno,
                              uint32_t crc, const char **why);

/*
 * The CRC-32C an extent's header records, of the header `hdr` (its CRC
 * field counted as 0) and the `payload_len` bytes at `payload`; of a sealed
 * extent's payload only the nonce and the tag, which authenticates the
 * ciphertext between them: summing bytes the tag already vouches for would
 * cost as much again as sealing them.
 */
uint32_t bf_extent_crc(const unsigned char *hdr, const unsigned char *payload,
                       uint32_t payload_len);

/* The same from `seed`: a compressed caller-codec extent's is bf_extent_name_seed(name). */
uint32_t bf_extent_crc_seeded(uint32_t seed, const unsigned char *hdr,
                              const unsigned char *payload, uint32_t payload_len);

/* The CRC-32C of a caller codec's name, which its compressed extents' CRC starts from. */
uint32_t bf_extent_name_seed(const char *name);

/* The caller codec of id `id` that the reader has: its name, or NULL. */
typedef const char *(*bf_extent_names)(const void *ctx, bf_codec id);

/*
 * Parse and verify the `len` extent bytes at `ext`: header fields, CRC,
 * expected block number, a generation no newer than `max_gen` (a later
 * session's extent where an older map points is not that map's data),
 * raw length <= block_size. On success *info is filled; the payload starts
 * at ext + BF_EXTENT_HDR.
 * A compressed caller-codec extent is checked against `names(names_ctx,
 * id)` (NULL: no caller codecs): BF_ENOCODEC when the reader has no codec
 * of that id or one of another name.
 * Returns BF_OK, BF_ECORRUPT or BF_ENOCODEC with a reason in *why.
 */
int bf_extent_check_names(const unsigned char *ext, size_t len, uint64_t expect_blkno,
                          uint32_t max_gen, uint32_t block_size, bf_extent_names names,
                          const void *names_ctx, bf_extent_info *info, const char **why);

/* bf_extent_check_names for a reader without caller codecs. */
int bf_extent_check(const unsigned char *ext, size_t len, uint64_t expect_blkno, uint32_t max_gen,
                    uint32_t block_size, bf_extent_info *info, const char **why);

/*
 * What the reader's map and file say of an extent bf_extent_check accepted:
 * stored raw as the map entry says (`map_raw`), sealed as the file is
 * (`file_sealed`: an unsealed extent in a sealed file would be anyone's
 * bytes). BF_OK or BF_ECORRUPT with *why.
 */
int bf_extent_expect(const bf_extent_info *info, int map_raw, int file_sealed, const char **why);

/*
 * Open the payload of a sealed extent that bf_extent_check accepted, of the
 * file `id`, into `out` (room: payload length - BF_SEAL_BYTES): the
 * compressed or raw bytes. BF_OK, or BF_ECORRUPT with *why when its tag
 * does not hold (altered, moved, another file's, another key's).
 */
int bf_extent_unseal(bf_seal *seal, const unsigned char *id, const unsigned char *ext,
                     const bf_extent_info *info, unsigned char *out, const char **why);

/*
 * Unpack an extent that bf_extent_check and bf_extent_expect accepted into
 * `dst` (room for the block; info->raw_len bytes are written): the mirror of
 * bf_extent_pack. A sealed payload is opened with `seal` (the space's sealer
 * and the file's identity) into `open_buf` (room: payload length; raw
 * ones straight into dst); a compressed one is decompressed with `ops` and
 * its context `ctx` (unused for raw extents), *codec_ns its time (0 for
 * raw). Returns BF_OK; BF_ECORRUPT (a tag that does not hold, a payload
 * that does not decompress to its length), BF_ECODEC (a caller's codec
 * that gave another length) or BF_ENOMEM (the decompressor), with *why.
 */
int bf_extent_unpack(const unsigned char *ext, const bf_extent_info *info,
                     const bf_codec_ops *ops, void *ctx, const bf_extent_seal *seal,
                     unsigned char *open_buf, unsigned char *dst, uint64_t *codec_ns,
                     const char **why);

#endif
