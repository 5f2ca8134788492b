/*
 * index.c - encode and validate the persisted block index.
 * Implements: bf_index_size, bf_index_encode, bf_index_decode,
 * bf_index_decode_body, bf_index_verify, bf_index_each, bf_head_encode,
 * bf_head_decode, bf_name_valid (index.h).
 *
 * Layout (docs/format.md): a 112-byte header, the spliced parts (40 bytes +
 * name, padded to 8), runs of used map entries (first block, count, count
 * 16-byte entries; holes are not stored), for a sealed file a nonce and a
 * tag over all before them, and a CRC-32C of all preceding bytes. Decoding checks lengths before
 * reading, the CRC before interpreting, then every run and entry against the header and the parts
 * it names; only then are entries handed out. The head's slots carry a
 * CRC of their own, so a slot is whole or ignored.
 */
#include "index.h"

#include <string.h>

#include "buffile.h"
#include "crc32c.h"
#include "extent.h"
#include "le.h"

static const char magic[8] = {'B', 'F', 'I', 'N', 'D', 'E', 'X', '1'};
static const char head_magic[3] = {'B', 'F', 'H'};

#define RUN_HDR 8u
#define ENTRY 16u

/* A part record: its fixed fields (through the file id), then its name, padded to 8. */
#define PART_FIXED 40u

static size_t part_size(uint16_t name_len)
{
    return (PART_FIXED + (size_t)name_len + 7) & ~(size_t)7;
}

/* The bytes after the runs: the seal's nonce and tag when the index is tagged, and the CRC. */
static size_t tail_size(uint8_t flags)
{
    return ((flags & BF_INDEX_TAGGED) ? BF_SEAL_BYTES : 0) + 4;
}

/* The run of used blocks that starts at or after *b: its first block and length, or 0. */
static uint32_t next_run(const bf_blockmap *map, uint64_t *b)
{
    if (bf_map_next(map, b) == NULL)
        return 0;
    uint64_t end = *b + 1;
    while (end < map->n && bf_map_used(bf_map_get(map, end)))
        end++;
    return (uint32_t)(end - *b);
}

size_t bf_index_size(const bf_index *idx, const bf_blockmap *map)
{
    size_t n = BF_INDEX_HDR;
    for (uint32_t i = 0; i < idx->nparts; i++)
        n += part_size(idx->parts[i].name_len);
    uint32_t count;
    for (uint64_t b = 0; (count = next_run(map, &b)) != 0; b += count)
        n += RUN_HDR + (size_t)count * ENTRY;
    return n + tail_size(idx->flags);
}

int bf_index_encode(const bf_index *idx, const bf_blockmap *map, bf_seal *seal, unsigned char *out)
{
    memset(out, 0, BF_INDEX_HDR);
    memcpy(out, magic, 8);
    bf_put32(out + 8, BF_INDEX_VERSION);
    bf_put32(out + 12, idx->block_size);
    out[16] = idx->codec;
    bf_put32(out + 20, (uint32_t)idx->level);
    bf_put64(out + 24, idx->size);
    bf_put64(out + 32, idx->segment_size);
    bf_put64(out + 40, idx->phys_end);
    bf_put32(out + 48, idx->nsegs);
    bf_put32(out + 52, idx->nparts);
    bf_put32(out + 56, idx->nblocks);
    bf_put32(out + 60, idx->gen);
    bf_put64(out + 64, idx->idx_off);
    memcpy(out + 72, idx->file_id, 12);
    out[84] = idx->flags;
    memcpy(out + 88, idx->kcv, BF_KCV_BYTES);
    memcpy(out + 96, idx->codec_name, sizeof(idx->codec_name));
    unsigned char *p = out + BF_INDEX_HDR;
    for (uint32_t i = 0; i < idx->nparts; i++) {
        const bf_index_part *pt = &idx->parts[i];
        size_t sz = part_size(pt->name_len);
        memset(p, 0, sz);
        bf_put64(p, pt->bytes);
        bf_put64(p + 8, pt->blk_delta);
        bf_put32(p + 16, pt->nsegs);
        bf_put32(p + 20, pt->gen);
        bf_put16(p + 24, pt->name_len);
        memcpy(p + 28, pt->file_id, 12);
        memcpy(p + PART_FIXED, pt->name, pt->name_len);
        p += sz;
    }
    uint32_t count;
    for (uint64_t b = 0; (count = next_run(map, &b)) != 0; b += count) {
        bf_put32(p, (uint32_t)b);
        bf_put32(p + 4, count);
        p += RUN_HDR;
        for (uint32_t k = 0; k < count; k++, p += ENTRY) {
            const bf_map_entry *e = bf_map_get(map, b + k);
            bf_put64(p, e->off);
            bf_put32(p + 8, e->len & ~BF_MAP_KEPT); /* a session's own mark, not a fact */
            bf_put32(p + 12, e->cap);
        }
    }
    if (idx->flags & BF_INDEX_TAGGED) {
        /* The index is not secret (docs/format.md), but a map or size altered could make a
           reader return zeros or another version's blocks: a tag over all of it, nothing
           encrypted. */
        bf_seal_nonce(seal, p);
        if (bf_seal_encrypt(seal, p, out, (size_t)(p - out), NULL, 0, NULL, p + BF_NONCE_BYTES) !=
            BF_OK)
            return BF_ECODEC;
        p += BF_SEAL_BYTES;
    }
    bf_put32(p, bf_crc32c(0, out, (size_t)(p - out)));
    return BF_OK;
}

static int bad(const char **why, const char *reason)
{
    *why = reason;
    return BF_ECORRUPT;
}

int bf_index_verify(bf_seal *seal, const unsigned char *buf, size_t len, const char **why)
{
    const unsigned char *nonce = buf + len - 4 - BF_SEAL_BYTES;
    if (bf_seal_decrypt(seal, nonce, buf, (size_t)(nonce - buf), NULL, 0, NULL,
                        nonce + BF_NONCE_BYTES) != BF_OK)
        return bad(why, "the index's seal does not hold (altered)");
    return BF_OK;
}

/* The segments that hold `bytes` physical bytes: a named file's own, or a part's. */
static uint64_t segs_for(uint64_t bytes, uint64_t segment_size)
{
    return (bytes + segment_size - 1) / segment_size;
}

int bf_name_valid(const char *s, size_t n)
{
    if (n == 0 || n > 128 || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

int bf_index_decode(const unsigned char *buf, size_t len, bf_index *idx, const char **why)
{
    if (len < BF_INDEX_HDR + 4)
        return bad(why, "index shorter than its header");
    if (memcmp(buf, magic, 8) != 0)
        return bad(why, "not a buffile index (bad magic)");
    if (bf_get32(buf + 8) != BF_INDEX_VERSION)
        return bad(why, "unknown index format version");
    if (bf_crc32c(0, buf, len - 4) != bf_get32(buf + len - 4))
        return bad(why, "index checksum mismatch (truncated or corrupt)");
    idx->block_size = bf_get32(buf + 12);
    idx->codec = buf[16];
    idx->level = (int32_t)bf_get32(buf + 20);
    idx->size = bf_get64(buf + 24);
    idx->segment_size = bf_get64(buf + 32);
    idx->phys_end = bf_get64(buf + 40);
    idx->nsegs = bf_get32(buf + 48);
    idx->nparts = bf_get32(buf + 52);
    idx->nblocks = bf_get32(buf + 56);
    idx->gen = bf_get32(buf + 60);
    idx->idx_off = bf_get64(buf + 64);
    memcpy(idx->file_id, buf + 72, 12);
    idx->flags = buf[84];
    memcpy(idx->kcv, buf + 88, BF_KCV_BYTES);
    memcpy(idx->codec_name, buf + 96, sizeof(idx->codec_name));
    uint32_t bs = idx->block_size;
    if (bs < BF_BLOCK_SIZE_MIN || bs > BF_BLOCK_SIZE_MAX || (bs & (bs - 1)) != 0)
        return bad(why, "bad block size in index");
    if (bf_codec_name((bf_codec)idx->codec) == NULL && !bf_codec_is_user(idx->codec))
        return bad(why, "unknown codec in index");
    /* A caller's codec is named (so that a space without it can say which); no other is. */
    int named = idx->codec_name[0] != '\0';
    size_t nl = strnlen(idx->codec_name, sizeof(idx->codec_name));
    if (named != bf_codec_is_user(idx->codec) || nl == sizeof(idx->codec_name) ||
        (idx->flags & ~(BF_INDEX_SEALED | BF_INDEX_TAGGED)) != 0 ||
        (idx->flags & (BF_INDEX_SEALED | BF_INDEX_TAGGED)) == BF_INDEX_SEALED || buf[85] != 0 ||
        buf[86] != 0 || buf[87] != 0 ||
        len < BF_INDEX_HDR + tail_size(idx->flags))
        return bad(why, "bad codec name, flags or length in index header");
    for (size_t i = nl; i < sizeof(idx->codec_name); i++)
        if (idx->codec_name[i] != '\0')
            return bad(why, "bad codec name, flags or length in index header");
    /* Every product below stays far from 2^64 once these bounds hold. The file's own
       segments are exactly those that reach the index's end, the file's last byte. */
    /* nblocks counts blocks 0..BF_MAP_MAX_BLOCK at most (any 32-bit count), and no more than
       the size covers. */
    if (idx->segment_size == 0 || idx->segment_size % 4096 != 0 ||
        idx->segment_size > (UINT64_C(1) << 40) || idx->nparts >= BF_MAP_MAX_PARTS ||
        idx->nparts > (len - BF_INDEX_HDR) / PART_FIXED || /* bounds the parts' allocation */
        idx->size > ((uint64_t)BF_MAP_MAX_BLOCK + 1) * bs ||
        (uint64_t)idx->nblocks > (idx->size + bs - 1) / bs || idx->phys_end < BF_HEAD_BYTES ||
        idx->idx_off < idx->phys_end || idx->idx_off > BF_MAP_OFF_MASK - len ||
        idx->nsegs != segs_for(idx->idx_off + len, idx->segment_size))
        return bad(why, "inconsistent sizes in index header");
    return BF_OK;
}

void bf_head_encode(const bf_head_slot *slot, unsigned char *out)
{
    memset(out, 0, BF_HEAD_SLOT);
    memcpy(out, head_magic, 3);
    out[3] = (unsigned char)BF_INDEX_VERSION;
    bf_put32(out + 4, slot->gen);
    bf_put64(out + 8, slot->off);
    bf_put64(out + 16, slot->len);
    bf_put32(out + 28, bf_crc32c(0, out, 28));
}

/* 1 and *slot if the BF_HEAD_SLOT bytes at p are a whole slot of a plausible index, else 0. */
static int slot_valid(const unsigned char *p, bf_head_slot *slot)
{
    if (memcmp(p, head_magic, 3) != 0 || p[3] != BF_INDEX_VERSION || bf_get32(p + 24) != 0 ||
        bf_crc32c(0, p, 28) != bf_get32(p + 28))
        return 0;
    slot->gen = bf_get32(p + 4);
    slot->off = bf_get64(p + 8);
    slot->len = bf_get64(p + 16);
    /* Both bounded before they are added: a length past the offset mask would wrap. */
    return slot->gen != 0 && slot->off >= BF_HEAD_BYTES && slot->len >= BF_INDEX_HDR + 4 &&
           slot->len <= BF_MAP_OFF_MASK && slot->off <= BF_MAP_OFF_MASK - slot->len;
}

int bf_head_decode(const unsigned char *buf, size_t n, bf_head_slot *slot, const char **why)
{
    unsigned char head[BF_HEAD_BYTES] = {0};
    memcpy(head, buf, n < BF_HEAD_BYTES ? n : BF_HEAD_BYTES);
    int found = 0, written = 0;
    for (uint32_t i = 0; i < 2; i++) {
        const unsigned char *p = head + i * BF_HEAD_SLOT;
        bf_head_slot s;
        for (uint32_t k = 0; k < BF_HEAD_SLOT; k++)
            written |= p[k] != 0;
        /* A session writes the slot its generation names: one found elsewhere was not. */
        if (slot_valid(p, &s) && bf_head_slot_at(s.gen) == i * BF_HEAD_SLOT &&
            (!found || s.gen > slot->gen)) {
            *slot = s;
            found = 1;
        }
    }
    if (found)
        return BF_OK;
    if (!written)
        return BF_ENOENT;
    return bad(why, "no valid slot in the file's head (corrupt)");
}

/* Check one used entry against the header and the parts. */
static int entry_ok(const bf_index *idx, const bf_map_entry *e)
{
    uint32_t part = bf_map_part(e);
    if ((e->len & BF_MAP_KEPT) != 0 || part > idx->nparts)
        return 0;
    uint64_t limit = part == 0 ? idx->phys_end : idx->parts[part - 1].bytes;
    uint32_t elen = bf_map_len(e);
    uint64_t off = bf_map_off(e);
    if (bf_map_bare(e)) /* raw, unsealed, at most a block, a page or more page-aligned */
        return (e->len & BF_MAP_RAW) != 0 && (idx->flags & BF_INDEX_SEALED) == 0 && elen >= 1 &&
               elen <= idx->block_size && (elen < BF_BARE_ALIGN || off % BF_BARE_ALIGN == 0) &&
               off >= BF_HEAD_BYTES &&
               off + elen <= limit && off % idx->segment_size + elen <= idx->segment_size;
    if (e->cap == 0)
        return 0;
    uint32_t seal = (idx->flags & BF_INDEX_SEALED) ? BF_SEAL_BYTES : 0;
    return elen > BF_EXTENT_HDR + seal && elen <= BF_EXTENT_MAX(idx->block_size) &&
           elen <= e->cap && off >= BF_HEAD_BYTES && off + e->cap <= limit &&
           off % idx->segment_size + e->cap <= idx->segment_size;
}

static void entry_at(const unsigned char *p, bf_map_entry *e)
{
    e->off = bf_get64(p);
    e->len = bf_get32(p + 8);
    e->cap = bf_get32(p + 12);
}

/*
 * Walk the runs from idx->runs to the CRC: with `put` NULL only check them
 * (ascending, disjoint, inside nblocks, every entry valid), else hand the
 * entries out.
 */
static int walk_runs(const bf_index *idx, const unsigned char *end,
                     int (*put)(void *ctx, uint32_t blkno, const bf_map_entry *e), void *ctx,
                     const char **why)
{
    uint64_t next = 0;
    for (const unsigned char *p = idx->runs; p < end;) {
        if ((size_t)(end - p) < RUN_HDR)
            return bad(why, "index truncated in a run header");
        uint64_t first = bf_get32(p), count = bf_get32(p + 4);
        p += RUN_HDR;
        if (count == 0 || first < next || first + count > idx->nblocks ||
            (size_t)(end - p) / ENTRY < count)
            return bad(why, "bad run of entries in index");
        for (uint64_t k = 0; k < count; k++, p += ENTRY) {
            bf_map_entry e;
            entry_at(p, &e);
            if (put == NULL && !entry_ok(idx, &e))
                return bad(why, "index entry outside its segments");
            int rc = put != NULL ? put(ctx, (uint32_t)(first + k), &e) : BF_OK;
            if (rc != BF_OK)
                return rc;
        }
        next = first + count;
    }
    return BF_OK;
}

int bf_index_decode_body(const unsigned char *buf, size_t len, bf_index *idx, const char **why)
{
    const unsigned char *p = buf + BF_INDEX_HDR, *end = buf + len - tail_size(idx->flags);
    for (uint32_t i = 0; i < idx->nparts; i++) {
        if (end - p < PART_FIXED)
            return bad(why, "index truncated in its parts");
        bf_index_part *pt = &idx->parts[i];
        pt->bytes = bf_get64(p);
        pt->blk_delta = bf_get64(p + 8);
        pt->nsegs = bf_get32(p + 16);
        pt->gen = bf_get32(p + 20);
        pt->name_len = bf_get16(p + 24);
        memcpy(pt->file_id, p + 28, 12);
        if ((size_t)(end - p) < part_size(pt->name_len))
            return bad(why, "index truncated in its parts");
        pt->name = (const char *)p + PART_FIXED;
        /* A part can start just past the largest block: a source of holes only. */
        if (!bf_name_valid(pt->name, pt->name_len) || pt->bytes > BF_MAP_OFF_MASK || p[26] != 0 ||
            p[27] != 0 || pt->bytes < BF_HEAD_BYTES ||
            pt->nsegs != segs_for(pt->bytes, idx->segment_size) ||
            pt->blk_delta > (uint64_t)BF_MAP_MAX_BLOCK + 1)
            return bad(why, "bad part in index");
        p += part_size(pt->name_len);
    }
    idx->runs = p;
    return walk_runs(idx, end, NULL, NULL, why);
}

int bf_index_each(const bf_index *idx, const unsigned char *buf, size_t len,
                  int (*put)(void *ctx, uint32_t blkno, const bf_map_entry *e), void *ctx)
{
    const char *why = NULL;
    return walk_runs(idx, buf + len - tail_size(idx->flags), put, ctx, &why);
}
