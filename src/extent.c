/*
 * extent.c - encoding, checksumming and verifying extents.
 *
 * The CRC covers the header (with its CRC field zeroed) and the payload,
 * so a flipped bit anywhere, a payload from another block or a header
 * from another extent is detected before any decompressor sees the bytes.
 */
#include "extent.h"

#include <string.h>

#include "clock.h"
#include "crc32c.h"
#include "le.h"

static const unsigned char magic[3] = {'B', 'F', 'X'};

int bf_extent_pack(const bf_codec_ops *ops, void *ctx, int32_t level, uint64_t blkno, uint32_t gen,
                   const void *data, uint32_t raw_len, unsigned char *scratch, struct iovec iov[2],
                   int *iovcnt, bf_extent_info *info)
{
    unsigned char *hdr = scratch;
    /* Capacity raw_len - 1: a payload that is not smaller is not worth decompressing.
       Only the codec call is timed: checksums are not codec time. */
    uint64_t t0 = bf_now_ns();
    int64_t clen =
        raw_len > 1 ? ops->compress(ctx, level, data, raw_len, scratch + BF_EXTENT_HDR, raw_len - 1)
                    : 0;
    info->codec_ns = bf_now_ns() - t0;
    if (clen == BF_CODEC_NOMEM)
        return BF_ENOMEM;
    if (clen < 0)
        return BF_ECODEC;
    int raw = clen == 0;
    uint32_t plen = raw ? raw_len : (uint32_t)clen;
    const unsigned char *payload = raw ? data : scratch + BF_EXTENT_HDR;

    memset(hdr, 0, BF_EXTENT_HDR);
    memcpy(hdr, magic, 3);
    hdr[3] = BF_EXTENT_VERSION;
    hdr[4] = (unsigned char)ops->id;
    hdr[5] = raw ? BF_EXTENT_FLAG_RAW : 0;
    bf_put32(hdr + 8, plen);
    bf_put32(hdr + 12, raw_len);
    bf_put64(hdr + 16, blkno);
    bf_put32(hdr + 28, gen);
    uint32_t crc = bf_crc32c(bf_crc32c(0, hdr, BF_EXTENT_HDR), payload, plen);
    bf_put32(hdr + 24, crc);

    if (raw) {
        iov[0].iov_base = hdr;
        iov[0].iov_len = BF_EXTENT_HDR;
        iov[1].iov_base = (void *)data;
        iov[1].iov_len = plen;
        *iovcnt = 2;
    } else {
        iov[0].iov_base = hdr;
        iov[0].iov_len = BF_EXTENT_HDR + plen;
        *iovcnt = 1;
    }
    info->codec = ops->id;
    info->raw = raw;
    info->payload_len = plen;
    info->raw_len = raw_len;
    info->blkno = blkno;
    info->gen = gen;
    return 0;
}

int bf_extent_check(const unsigned char *ext, size_t len, uint64_t expect_blkno, uint32_t max_gen,
                    uint32_t block_size, bf_extent_info *info, const char **why)
{
    if (len < BF_EXTENT_HDR) {
        *why = "extent shorter than its header";
        return BF_ECORRUPT;
    }
    if (memcmp(ext, magic, 3) != 0) {
        *why = "bad extent magic";
        return BF_ECORRUPT;
    }
    if (ext[3] != BF_EXTENT_VERSION) {
        *why = "unknown extent format version";
        return BF_ECORRUPT;
    }
    info->codec = (bf_codec)ext[4];
    info->raw = (ext[5] & BF_EXTENT_FLAG_RAW) != 0;
    info->payload_len = bf_get32(ext + 8);
    info->raw_len = bf_get32(ext + 12);
    info->blkno = bf_get64(ext + 16);
    info->gen = bf_get32(ext + 28);
    if ((ext[5] & ~BF_EXTENT_FLAG_RAW) != 0 || ext[6] != 0 || ext[7] != 0) {
        *why = "reserved extent header bits set";
        return BF_ECORRUPT;
    }
    if ((uint64_t)info->payload_len + BF_EXTENT_HDR != len) {
        *why = "extent length does not match the block map";
        return BF_ECORRUPT;
    }
    if (info->raw_len == 0 || info->raw_len > block_size ||
        (info->raw && info->payload_len != info->raw_len)) {
        *why = "bad raw length in extent header";
        return BF_ECORRUPT;
    }
    unsigned char hdr[BF_EXTENT_HDR];
    memcpy(hdr, ext, BF_EXTENT_HDR);
    bf_put32(hdr + 24, 0);
    uint32_t crc =
        bf_crc32c(bf_crc32c(0, hdr, BF_EXTENT_HDR), ext + BF_EXTENT_HDR, info->payload_len);
    if (crc != bf_get32(ext + 24)) {
        *why = "extent checksum mismatch";
        return BF_ECORRUPT;
    }
    if (info->blkno != expect_blkno) {
        *why = "extent belongs to another block";
        return BF_ECORRUPT;
    }
    if (info->gen > max_gen) {
        *why = "extent written by a later read-write session of the file (reopen it)";
        return BF_ECORRUPT;
    }
    if (!info->raw && bf_codec_ops_get(info->codec) == NULL) {
        *why = "extent compressed with a codec that is not built in";
        return BF_ECORRUPT;
    }
    return BF_OK;
}
