/*
 * extent.c - encoding, checksumming, sealing and verifying extents.
 * Implements: bf_extent_pack and its mirror bf_extent_unpack,
 * bf_extent_pack_bare(_summed), bf_extent_bare_crc(_more), bf_extent_check(_names),
 * bf_extent_expect, bf_extent_unseal, bf_extent_crc(_seeded), bf_extent_name_seed (extent.h).
 *
 * The CRC covers the header (with its CRC field zeroed) and the payload,
 * so a flipped bit anywhere, a payload from another block or a header
 * from another extent is detected before any decompressor sees the bytes.
 * A sealed payload is compressed first, then encrypted (the order that
 * leaves something to compress); its tag authenticates the header (CRC
 * zeroed), the ciphertext and the file's identity, which the CRC cannot
 * do against someone who writes the temp directory. The CRC of a sealed
 * extent covers its header, nonce and tag only: every byte is still
 * checked before any decompressor sees it, the ciphertext by the tag.
 */
#include "extent.h"

#include <string.h>

#include "clock.h"
#include "crc32c.h"
#include "le.h"

static const unsigned char magic[3] = {'B', 'F', 'X'};

/* What a sealed extent's tag authenticates: its header (CRC zeroed) and the file's identity. */
static void seal_aad(const unsigned char *hdr, const unsigned char *id, unsigned char *aad)
{
    memcpy(aad, hdr, BF_EXTENT_HDR);
    bf_put32(aad + 24, 0);
    memcpy(aad + BF_EXTENT_HDR, id, BF_FILE_ID_BYTES);
}

uint32_t bf_extent_name_seed(const char *name)
{
    return bf_crc32c(0, name, strlen(name));
}

/* The 16 bits of a name's seed a compressed caller-codec extent's header carries: never 0. */
static uint16_t name_check(uint32_t seed)
{
    uint16_t c = (uint16_t)((seed >> 16) ^ seed);
    return c != 0 ? c : 1;
}

uint32_t bf_extent_bare_crc(uint64_t blkno, const void *data, uint32_t raw_len)
{
    return bf_crc32c_le64(blkno, data, raw_len);
}

uint32_t bf_extent_bare_crc_more(uint32_t crc, const void *data, uint32_t len)
{
    return bf_crc32c(crc, data, len);
}

static const char bare_fails[] = "raw block fails its checksum (damaged, another block's, or "
                                 "rewritten by a later session of the file)";

int bf_extent_check_bare(const void *data, uint32_t raw_len, uint64_t blkno, uint32_t crc,
                         const char **why)
{
    if (bf_extent_bare_crc(blkno, data, raw_len) == crc)
        return BF_OK;
    /* No header says which: a flipped bit, another block's bytes, or a slot a later read-write
       session of a named file reused (an older reader's map holds the CRC of what it read). */
    *why = bare_fails;
    return BF_ECORRUPT;
}

int bf_extent_check_bare_copy(void *dst, const void *src, uint32_t raw_len, uint64_t blkno,
                              uint32_t crc, const char **why)
{
    if (bf_crc32c_le64_copy(blkno, dst, src, raw_len) == crc)
        return BF_OK;
    *why = bare_fails;
    return BF_ECORRUPT;
}

uint32_t bf_extent_crc(const unsigned char *hdr, const unsigned char *payload, uint32_t payload_len)
{
    return bf_extent_crc_seeded(0, hdr, payload, payload_len);
}

uint32_t bf_extent_crc_seeded(uint32_t seed, const unsigned char *hdr,
                              const unsigned char *payload, uint32_t payload_len)
{
    unsigned char h[BF_EXTENT_HDR];
    memcpy(h, hdr, BF_EXTENT_HDR);
    bf_put32(h + 24, 0);
    uint32_t crc = bf_crc32c(seed, h, BF_EXTENT_HDR);
    if ((hdr[5] & BF_EXTENT_FLAG_SEALED) == 0 || payload_len < BF_SEAL_BYTES)
        return bf_crc32c(crc, payload, payload_len);
    crc = bf_crc32c(crc, payload, BF_NONCE_BYTES);
    return bf_crc32c(crc, payload + payload_len - BF_TAG_BYTES, BF_TAG_BYTES);
}

/* A bare block: the data itself is what goes to disk; its check goes to the map. */
int bf_extent_pack_bare(bf_codec codec, uint64_t blkno, uint32_t gen, const void *data,
                        uint32_t raw_len, struct iovec iov[2], int *iovcnt, bf_extent_info *info)
{
    return bf_extent_pack_bare_summed(codec, blkno, gen, data, raw_len,
                                      bf_extent_bare_crc(blkno, data, raw_len), iov, iovcnt, info);
}

int bf_extent_pack_bare_summed(bf_codec codec, uint64_t blkno, uint32_t gen, const void *data,
                               uint32_t raw_len, uint32_t crc, struct iovec iov[2], int *iovcnt,
                               bf_extent_info *info)
{
    iov[0].iov_base = (void *)data;
    iov[0].iov_len = raw_len;
    *iovcnt = 1;
    info->codec = codec;
    info->raw = 1;
    info->sealed = 0;
    info->bare = 1;
    info->crc = crc;
    info->disk_len = raw_len;
    info->payload_len = raw_len;
    info->raw_len = raw_len;
    info->blkno = blkno;
    info->gen = gen;
    return 0;
}

int bf_extent_pack(const bf_codec_ops *ops, void *ctx, int32_t level, uint64_t blkno, uint32_t gen,
                   const void *data, uint32_t raw_len, const bf_extent_seal *seal,
                   unsigned char *scratch, struct iovec iov[2], int *iovcnt, bf_extent_info *info)
{
    unsigned char *hdr = scratch;
    unsigned char *body = scratch + BF_EXTENT_HDR + (seal != NULL ? BF_NONCE_BYTES : 0);
    if (ops->id == BF_CODEC_NONE && seal == NULL) {
        /* Nothing to ask the codec: the block goes out bare, as it came. */
        info->codec_ns = 0;
        return bf_extent_pack_bare(ops->id, blkno, gen, data, raw_len, iov, iovcnt, info);
    }
    /* Room of raw_len - 1 (or what a caller's codec asks for): a payload that is not
       smaller is not worth decompressing. Only the codec call is timed: checksums and the
       seal are not codec time. */
    size_t cap = ops->bound != NULL ? ops->bound(ctx, raw_len) : raw_len - 1;
    uint64_t t0 = bf_now_ns();
    int64_t clen = raw_len > 1 ? ops->compress(ctx, level, data, raw_len, body, cap) : 0;
    info->codec_ns = bf_now_ns() - t0;
    if (clen == BF_CODEC_NOMEM)
        return BF_ENOMEM;
    if (clen < 0)
        return BF_ECODEC;
    int raw = clen == 0;
    if (raw && seal == NULL)
        return bf_extent_pack_bare(ops->id, blkno, gen, data, raw_len, iov, iovcnt, info);
    uint32_t len = raw ? raw_len : (uint32_t)clen;
    uint32_t plen = len + (seal != NULL ? BF_SEAL_BYTES : 0);

    memset(hdr, 0, BF_EXTENT_HDR);
    memcpy(hdr, magic, 3);
    hdr[3] = BF_EXTENT_VERSION;
    hdr[4] = (unsigned char)ops->id;
    hdr[5] = (unsigned char)((raw ? BF_EXTENT_FLAG_RAW : 0) | (seal ? BF_EXTENT_FLAG_SEALED : 0));
    bf_put32(hdr + 8, plen);
    bf_put32(hdr + 12, raw_len);
    bf_put64(hdr + 16, blkno);
    bf_put32(hdr + 28, gen);
    /* A caller's codec is bound to its extents by name, not only by its id, which another
       space may give to another codec. */
    int named = bf_codec_is_user(ops->id) && !raw;
    uint32_t seed = named ? bf_extent_name_seed(ops->name) : 0;
    if (named)
        bf_put16(hdr + 6, name_check(seed));
    if (seal != NULL) {
        unsigned char aad[BF_EXTENT_HDR + BF_FILE_ID_BYTES];
        seal_aad(hdr, seal->id, aad);
        bf_seal_nonce(seal->seal, body - BF_NONCE_BYTES);
        if (bf_seal_encrypt(seal->seal, body - BF_NONCE_BYTES, aad, sizeof(aad), raw ? data : body,
                            len, body, body + len) != BF_OK)
            return BF_ECODEC;
    }
    bf_put32(hdr + 24, bf_extent_crc_seeded(seed, hdr, scratch + BF_EXTENT_HDR, plen));

    iov[0].iov_base = hdr;
    iov[0].iov_len = BF_EXTENT_HDR + plen;
    *iovcnt = 1;
    info->codec = ops->id;
    info->raw = raw;
    info->sealed = seal != NULL;
    info->bare = 0;
    info->crc = 0;
    info->disk_len = BF_EXTENT_HDR + plen;
    info->payload_len = plen;
    info->raw_len = raw_len;
    info->blkno = blkno;
    info->gen = gen;
    return 0;
}

int bf_extent_check(const unsigned char *ext, size_t len, uint64_t expect_blkno, uint32_t max_gen,
                    uint32_t block_size, bf_extent_info *info, const char **why)
{
    return bf_extent_check_names(ext, len, expect_blkno, max_gen, block_size, NULL, NULL, info,
                                 why);
}

int bf_extent_check_names(const unsigned char *ext, size_t len, uint64_t expect_blkno,
                          uint32_t max_gen, uint32_t block_size, bf_extent_names names,
                          const void *names_ctx, bf_extent_info *info, const char **why)
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
    info->sealed = (ext[5] & BF_EXTENT_FLAG_SEALED) != 0;
    info->payload_len = bf_get32(ext + 8);
    info->raw_len = bf_get32(ext + 12);
    info->blkno = bf_get64(ext + 16);
    info->gen = bf_get32(ext + 28);
    int named = bf_codec_is_user(info->codec) && !info->raw;
    uint16_t check = bf_get16(ext + 6);
    if ((ext[5] & ~(BF_EXTENT_FLAG_RAW | BF_EXTENT_FLAG_SEALED)) != 0 || (check != 0) != named) {
        *why = "reserved extent header bits set";
        return BF_ECORRUPT;
    }
    if ((uint64_t)info->payload_len + BF_EXTENT_HDR != len) {
        *why = "extent length does not match the block map";
        return BF_ECORRUPT;
    }
    uint32_t sealing = info->sealed ? BF_SEAL_BYTES : 0;
    if (info->raw_len == 0 || info->raw_len > block_size || info->payload_len <= sealing ||
        (info->raw && info->payload_len != info->raw_len + sealing)) {
        *why = "bad raw length in extent header";
        return BF_ECORRUPT;
    }
    uint32_t seed = 0;
    if (named) {
        const char *name = names != NULL ? names(names_ctx, info->codec) : NULL;
        if (name == NULL) {
            *why = "extent compressed with a caller's codec this space was not given";
            return BF_ENOCODEC;
        }
        seed = bf_extent_name_seed(name);
        if (name_check(seed) != check) {
            *why = "extent compressed with another caller codec than this space's of that id";
            return BF_ENOCODEC;
        }
    }
    if (bf_extent_crc_seeded(seed, ext, ext + BF_EXTENT_HDR, info->payload_len) !=
        bf_get32(ext + 24)) {
        *why = named ? "extent checksum mismatch (or written by another caller codec of this id)"
                     : "extent checksum mismatch";
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
    return BF_OK;
}

int bf_extent_expect(const bf_extent_info *info, int map_raw, int file_sealed, const char **why)
{
    if (info->raw != map_raw) {
        *why = "raw flag differs from the block map";
        return BF_ECORRUPT;
    }
    if (info->sealed != file_sealed) {
        *why = file_sealed ? "extent not sealed in a sealed file"
                           : "sealed extent in a file not sealed";
        return BF_ECORRUPT;
    }
    return BF_OK;
}

int bf_extent_unseal(bf_seal *seal, const unsigned char *id, const unsigned char *ext,
                     const bf_extent_info *info, unsigned char *out, const char **why)
{
    unsigned char aad[BF_EXTENT_HDR + BF_FILE_ID_BYTES];
    seal_aad(ext, id, aad);
    const unsigned char *nonce = ext + BF_EXTENT_HDR;
    uint32_t len = info->payload_len - BF_SEAL_BYTES;
    if (bf_seal_decrypt(seal, nonce, aad, sizeof(aad), nonce + BF_NONCE_BYTES, len, out,
                        nonce + BF_NONCE_BYTES + len) != BF_OK) {
        *why = "sealed extent does not open: altered, moved, another file's or another key's";
        return BF_ECORRUPT;
    }
    return BF_OK;
}

int bf_extent_unpack(const unsigned char *ext, const bf_extent_info *info,
                     const bf_codec_ops *ops, void *ctx, const bf_extent_seal *seal,
                     unsigned char *open_buf, unsigned char *dst, uint64_t *codec_ns,
                     const char **why)
{
    *codec_ns = 0;
    const unsigned char *payload = ext + BF_EXTENT_HDR;
    uint32_t plen = info->payload_len;
    if (info->sealed) {
        unsigned char *out = info->raw ? dst : open_buf;
        int rc = bf_extent_unseal(seal->seal, seal->id, ext, info, out, why);
        if (rc != BF_OK)
            return rc;
        payload = out;
        plen -= BF_SEAL_BYTES;
    }
    if (info->raw) {
        if (payload != dst)
            memcpy(dst, payload, info->raw_len);
        return BF_OK;
    }
    uint64_t t0 = bf_now_ns();
    int d = ops->decompress(ctx, payload, plen, dst, info->raw_len);
    *codec_ns = bf_now_ns() - t0;
    if (d == BF_CODEC_NOMEM) {
        *why = "out of memory in the decompressor";
        return BF_ENOMEM;
    }
    if (d == BF_CODEC_BADLEN) {
        *why = "the caller's codec decompressed to another length than the block's";
        return BF_ECODEC;
    }
    if (d != 0) {
        *why = "payload does not decompress to the recorded length";
        return BF_ECORRUPT;
    }
    return BF_OK;
}
