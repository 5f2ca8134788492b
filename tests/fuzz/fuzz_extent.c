/*
 * fuzz_extent.c - arbitrary bytes as an extent (the decoder of extent.c).
 *
 * Input: a flag byte, then the extent bytes.
 *   bits 0-1  block size: 4 KiB, 8 KiB, 64 KiB, 1 MiB
 *   bit 2     fix the CRC first, so forged headers and payloads get past
 *             the checksum and reach the field checks and the decompressors
 *   bit 3     expect the block number the header names (else bits 4-7)
 * Properties: bf_extent_check accepts only what it promises (lengths,
 * raw length <= block size, built-in codec, block number), never reads
 * outside the bytes; an accepted payload fed to its decompressor with an
 * exact-size output buffer yields raw_len bytes or an error, never an
 * overrun; an accepted sealed extent opens under the fuzzer's key and
 * identity only if it is one they sealed, and what it opens to goes
 * through the same decompressor checks. Round trip: the input bytes as
 * block data, packed with every codec, unsealed and sealed, check, open
 * and decompress to themselves; any single flipped bit or a cut is
 * refused, and a sealed extent with a flipped bit whose CRC was made right
 * again does not open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "codec.h"
#include "crc32c.h"
#include "extent.h"
#include "fuzz.h"
#include "le.h"
#include "support.h"

static const uint32_t block_sizes[4] = {4096, 8192, 65536, 1u << 20};
static const unsigned char fuzz_id[BF_FILE_ID_BYTES] = "fuzz file id...";

/* One sealer under a fixed key for every run: its nonces never repeat. */
static bf_seal *sealer(void)
{
    static bf_seal *s;
    static const unsigned char key[BF_KEY_BYTES] = "fuzz_extent's key, 32 bytes....";
    char why[128];
    if (s == NULL && bf_seal_new(&bf_default_allocator, key, &s, why, sizeof(why)) != BF_OK)
        fuzz_fail("no sealer: %s", why);
    return s;
}

static void *codec_ctx(bf_codec c)
{
    static void *ctx[4];
    static int made[4];
    if (!made[c]) {
        if (bf_codec_ops_get(c)->ctx_create(&bf_default_allocator, &ctx[c]) != BF_OK)
            fuzz_fail("cannot create the %s context", bf_codec_name(c));
        made[c] = 1;
    }
    return ctx[c];
}

static void fix_crc(unsigned char *ext, size_t len)
{
    bf_put32(ext + 24, bf_extent_crc(ext, ext + BF_EXTENT_HDR, (uint32_t)(len - BF_EXTENT_HDR)));
}

/* Whether a file (sealed or not) refuses the extent as file.c reads it: the extent's
   checks, its sealing against the file's, then its tag. */
static int flip_refused(const unsigned char *ext, size_t len, uint64_t blkno, uint32_t gen,
                        uint32_t bs, int sealed, unsigned char *scratch)
{
    bf_extent_info got;
    const char *why = NULL;
    if (bf_extent_check(ext, len, blkno, gen, bs, &got, &why) != BF_OK || got.sealed != sealed)
        return 1;
    return sealed && bf_extent_unseal(sealer(), fuzz_id, ext, &got, scratch, &why) == BF_ECORRUPT;
}

static void check_decoder(const unsigned char *ext, size_t len, uint64_t expect, uint32_t bs)
{
    bf_extent_info info;
    const char *why = NULL;
    int rc = bf_extent_check(ext, len, expect, 7, bs, &info, &why);
    if (rc != BF_OK) {
        /* A compressed extent of a caller's codec names it: a reader without caller codecs
           cannot verify it and says so (BF_ENOCODEC); anything else is damage. */
        FUZZ_CHECK((rc == BF_ECORRUPT || (rc == BF_ENOCODEC && ext[4] >= BF_CODEC_USER_MIN &&
                                          ext[4] <= BF_CODEC_USER_MAX)) &&
                       why != NULL && why[0] != '\0',
                   "refusal %d without a reason", rc);
        return;
    }
    FUZZ_CHECK((uint64_t)info.payload_len + BF_EXTENT_HDR == len, "accepted a length mismatch");
    FUZZ_CHECK(info.raw_len >= 1 && info.raw_len <= bs, "accepted raw length %u", info.raw_len);
    FUZZ_CHECK(info.blkno == expect, "accepted another block's extent");
    FUZZ_CHECK(info.gen <= 7, "accepted generation %u, newer than the map's", info.gen);
    uint32_t sealing = info.sealed ? BF_SEAL_BYTES : 0;
    FUZZ_CHECK(!info.raw || info.payload_len == info.raw_len + sealing,
               "raw extent with wrong length");
    const unsigned char *payload = ext + BF_EXTENT_HDR;
    unsigned char *opened = NULL;
    if (info.sealed) {
        opened = malloc(info.payload_len - sealing);
        FUZZ_CHECK(opened != NULL, "out of memory");
        rc = bf_extent_unseal(sealer(), fuzz_id, ext, &info, opened, &why);
        FUZZ_CHECK(rc == BF_OK || rc == BF_ECORRUPT, "unseal returned %d", rc);
        payload = opened;
    }
    const bf_codec_ops *ops = bf_codec_ops_get(info.codec);
    if (rc == BF_OK && !info.raw && ops != NULL) { /* a codec not built in: file.c refuses it */
        unsigned char *out = malloc(info.raw_len);
        FUZZ_CHECK(out != NULL, "out of memory");
        int d = ops->decompress(codec_ctx(info.codec), payload, info.payload_len - sealing, out,
                                info.raw_len);
        FUZZ_CHECK(d == 0 || d == -1, "%s decompress returned %d", ops->name, d);
        free(out);
    }
    free(opened);
}

/*
 * A block stored bare (raw, unsealed): its bytes alone, checked by the CRC the map keeps. Every
 * single flipped bit, a cut, and the same bytes read for another block are refused.
 */
static void bare_round_trip(const char *name, unsigned char *ext, const unsigned char *data,
                            uint32_t raw_len, uint64_t blkno, const bf_extent_info *info,
                            int sealed)
{
    const char *why = NULL;
    FUZZ_CHECK(!sealed && info->raw && info->disk_len == raw_len, "%s: bare block misdescribed",
               name);
    FUZZ_CHECK(memcmp(ext, data, raw_len) == 0, "%s: bare block is not the data", name);
    FUZZ_CHECK(bf_extent_check_bare(ext, raw_len, blkno, info->crc, &why) == BF_OK,
               "%s: own bare block refused", name);
    FUZZ_CHECK(bf_extent_check_bare(ext, raw_len, blkno + 1, info->crc, &why) == BF_ECORRUPT,
               "%s: bare block accepted for another block", name);
    FUZZ_CHECK(raw_len < 2 ||
                   bf_extent_check_bare(ext, raw_len - 1, blkno, info->crc, &why) == BF_ECORRUPT,
               "%s: cut bare block accepted", name);
    size_t bit = (raw_len * 2654435761u + data[0]) % ((size_t)raw_len * 8);
    ext[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    FUZZ_CHECK(bf_extent_check_bare(ext, raw_len, blkno, info->crc, &why) == BF_ECORRUPT,
               "%s: bare block with bit %zu flipped accepted", name, bit);
    ext[bit / 8] ^= (unsigned char)(1u << (bit % 8));
}

static void round_trip(const unsigned char *data, uint32_t raw_len, uint64_t blkno, uint32_t bs)
{
    bf_codec codecs[4];
    int n = fuzz_codecs(codecs);
    unsigned char *scratch = malloc(BF_EXTENT_MAX((size_t)raw_len));
    unsigned char *ext = malloc(BF_EXTENT_MAX((size_t)raw_len));
    unsigned char *out = malloc(raw_len);
    FUZZ_CHECK(scratch && ext && out, "out of memory");
    bf_extent_seal seal = {sealer(), fuzz_id};
    for (int c = 0; c < 2 * n; c++) {
        const bf_codec_ops *ops = bf_codec_ops_get(codecs[c % n]);
        int sealed = c >= n;
        struct iovec iov[2];
        int iovcnt;
        bf_extent_info info;
        uint32_t gen = (uint32_t)(blkno % 5);
        int rc = bf_extent_pack(ops, codec_ctx(codecs[c % n]), ops->default_level, blkno, gen, data,
                                raw_len, sealed ? &seal : NULL, scratch, iov, &iovcnt, &info);
        FUZZ_CHECK(rc == BF_OK, "%s pack failed: %d", ops->name, rc);
        size_t len = 0;
        for (int i = 0; i < iovcnt; i++) {
            memcpy(ext + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
        }
        FUZZ_CHECK(len == info.disk_len, "%s: iovecs and disk length differ", ops->name);
        if (info.bare) {
            bare_round_trip(ops->name, ext, data, raw_len, blkno, &info, sealed);
            continue;
        }
        FUZZ_CHECK(len == BF_EXTENT_HDR + info.payload_len, "%s: iovecs and header differ",
                   ops->name);
        FUZZ_CHECK(info.payload_len <= raw_len + (sealed ? BF_SEAL_BYTES : 0), "%s: extent grew",
                   ops->name);
        bf_extent_info got;
        const char *why = NULL;
        rc = bf_extent_check(ext, len, blkno, gen, bs, &got, &why);
        FUZZ_CHECK(rc == BF_OK, "%s: own extent refused: %s", ops->name, why);
        if (gen > 0)
            FUZZ_CHECK(bf_extent_check(ext, len, blkno, gen - 1, bs, &got, &why) == BF_ECORRUPT,
                       "%s: extent of a later generation accepted", ops->name);
        const unsigned char *payload = ext + BF_EXTENT_HDR;
        uint32_t plen = got.payload_len;
        if (sealed) {
            FUZZ_CHECK(bf_extent_unseal(sealer(), fuzz_id, ext, &got, scratch, &why) == BF_OK,
                       "%s: own sealed extent does not open: %s", ops->name, why);
            payload = scratch;
            plen -= BF_SEAL_BYTES;
        }
        if (got.raw)
            memcpy(out, payload, raw_len);
        else
            FUZZ_CHECK(ops->decompress(codec_ctx(codecs[c % n]), payload, plen, out, raw_len) == 0,
                       "%s: own payload does not decompress", ops->name);
        FUZZ_CHECK(memcmp(out, data, raw_len) == 0, "%s: round trip changed the data", ops->name);
        /* One flipped bit, chosen by the data, must be caught: by the CRC-32C (which finds
           every one in the bytes it covers) or, in a sealed extent's ciphertext, by the tag. */
        size_t bit = (raw_len * 2654435761u + data[0]) % (len * 8);
        ext[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        FUZZ_CHECK(flip_refused(ext, len, blkno, gen, bs, sealed, scratch),
                   "%s: flipped bit %zu accepted", ops->name, bit);
        if (sealed && bit / 8 != 24 && bit / 8 != 25 && bit / 8 != 26 && bit / 8 != 27) {
            /* The CRC made right again: only the tag stands between the flip and the data. */
            fix_crc(ext, len);
            FUZZ_CHECK(flip_refused(ext, len, blkno, gen, bs, sealed, scratch),
                       "%s: sealed extent with bit %zu flipped, CRC fixed, opened", ops->name, bit);
        }
        ext[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        fix_crc(ext, len);
        FUZZ_CHECK(bf_extent_check(ext, len - 1, blkno, gen, bs, &got, &why) == BF_ECORRUPT,
                   "%s: cut extent accepted", ops->name);
    }
    free(scratch);
    free(ext);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    uint32_t bs = block_sizes[flags & 3];
    size_t len = size - 1;
    unsigned char *ext = malloc(len ? len : 1);
    FUZZ_CHECK(ext != NULL, "out of memory");
    if (len > 0)
        memcpy(ext, data + 1, len);
    if ((flags & 4) && len >= BF_EXTENT_HDR)
        fix_crc(ext, len);
    uint64_t expect = (flags & 8) && len >= 24 ? bf_get64(ext + 16) : (uint64_t)(flags >> 4);
    check_decoder(ext, len, expect, bs);
    free(ext);
    if (len > 0)
        round_trip(data + 1, (uint32_t)(len < bs ? len : bs), expect, bs);
    return 0;
}

/*
 * Seeds: real extents of every codec (compressed and raw), with and without
 * CRC fixing, unsealed and sealed under the fuzzer's key.
 */
int fuzz_write_seeds(const char *dir)
{
    bf_codec codecs[4];
    int n = fuzz_codecs(codecs);
    static unsigned char data[8192], scratch[BF_EXTENT_MAX(8192)], ext[BF_EXTENT_MAX(8192)];
    bf_extent_seal seal = {sealer(), fuzz_id};
    for (int c = 0; c < n; c++) {
        for (int kind = 0; kind < 4; kind++) {
            const bf_codec_ops *ops = bf_codec_ops_get(codecs[c]);
            uint32_t raw_len = kind % 2 == 0 ? 4096 : 700;
            t_rng rng = {100 + (uint64_t)c};
            t_fill(&rng, T_DATA_TEXT, data, raw_len);
            if (kind % 2 == 1)
                for (uint32_t i = 0; i < raw_len; i++)
                    data[i] = (unsigned char)(i * 7u + (unsigned)c);
            struct iovec iov[2];
            int iovcnt;
            bf_extent_info info;
            if (bf_extent_pack(ops, codec_ctx(codecs[c]), ops->default_level, 5, 0, data, raw_len,
                               kind >= 2 ? &seal : NULL, scratch, iov, &iovcnt, &info) != BF_OK)
                return 1;
            size_t len = 0;
            for (int i = 0; i < iovcnt; i++) {
                memcpy(ext + len, iov[i].iov_base, iov[i].iov_len);
                len += iov[i].iov_len;
            }
            char name[64];
            snprintf(name, sizeof(name), "%s-%s%s", ops->name, kind % 2 == 0 ? "text" : "ramp",
                     kind >= 2 ? "-sealed" : "");
            /* 4 KiB blocks; expect block 5 from the header; bit 2 varies with the seed. */
            fuzz_seed(dir, name, (uint8_t)(0x08 | (kind % 2 == 0 ? 0x04 : 0x00)), ext, len);
        }
    }
    return 0;
}
