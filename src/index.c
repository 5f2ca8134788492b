/*
 * index.c - encode and validate the persisted block index.
 *
 * Layout (docs/format.md): a 64-byte header, the spliced parts (24 bytes +
 * name, padded to 8), nblocks 16-byte map entries, and a CRC-32C of all
 * preceding bytes. Decoding checks lengths before reading, the CRC before
 * interpreting, then every entry against the parts it names.
 */
#include "index.h"

#include <string.h>

#include "buffile.h"
#include "crc32c.h"
#include "extent.h"
#include "le.h"

static const char magic[8] = {'B', 'F', 'I', 'N', 'D', 'E', 'X', '1'};

static size_t part_size(uint16_t name_len)
{
    return (24 + (size_t)name_len + 7) & ~(size_t)7;
}

size_t bf_index_size(const bf_index *idx)
{
    size_t n = BF_INDEX_HDR;
    for (uint32_t i = 0; i < idx->nparts; i++)
        n += part_size(idx->parts[i].name_len);
    return n + (size_t)idx->nblocks * 16 + 4;
}

void bf_index_encode(const bf_index *idx, const bf_map_entry *map, unsigned char *out)
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
    unsigned char *p = out + BF_INDEX_HDR;
    for (uint32_t i = 0; i < idx->nparts; i++) {
        const bf_index_part *pt = &idx->parts[i];
        size_t sz = part_size(pt->name_len);
        memset(p, 0, sz);
        bf_put64(p, pt->bytes);
        bf_put64(p + 8, pt->blk_delta);
        bf_put32(p + 16, pt->nsegs);
        bf_put16(p + 20, pt->name_len);
        memcpy(p + 24, pt->name, pt->name_len);
        p += sz;
    }
    for (uint32_t b = 0; b < idx->nblocks; b++, p += 16) {
        bf_put64(p, map[b].off);
        bf_put32(p + 8, map[b].len);
        bf_put32(p + 12, map[b].cap);
    }
    bf_put32(p, bf_crc32c(0, out, (size_t)(p - out)));
}

void bf_index_entry(const bf_index *idx, uint32_t i, bf_map_entry *out)
{
    const unsigned char *p = idx->entries + (size_t)i * 16;
    out->off = bf_get64(p);
    out->len = bf_get32(p + 8);
    out->cap = bf_get32(p + 12);
}

static int bad(const char **why, const char *reason)
{
    *why = reason;
    return BF_ECORRUPT;
}

/*
 * Segments a writer can leave for `bytes` physical bytes: the ones the
 * bytes need, and one more when a write that opened a new segment failed
 * (or a named file's reserved segment 0 is still empty).
 */
static int segs_match(uint64_t bytes, uint32_t nsegs, uint64_t segment_size)
{
    uint64_t need = (bytes + segment_size - 1) / segment_size;
    return nsegs >= need && nsegs <= need + 1;
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
    uint32_t bs = idx->block_size;
    if (bs < BF_BLOCK_SIZE_MIN || bs > BF_BLOCK_SIZE_MAX || (bs & (bs - 1)) != 0)
        return bad(why, "bad block size in index");
    if (bf_codec_name((bf_codec)idx->codec) == NULL)
        return bad(why, "unknown codec in index");
    /* Every product below stays far from 2^64 once these bounds hold. */
    if (idx->segment_size == 0 || idx->segment_size % 4096 != 0 ||
        idx->segment_size > (UINT64_C(1) << 40) || idx->nparts >= BF_MAP_MAX_PARTS ||
        idx->nblocks > BF_MAP_MAX_BLOCK || idx->size > ((uint64_t)BF_MAP_MAX_BLOCK + 1) * bs ||
        (uint64_t)idx->nblocks > (idx->size + bs - 1) / bs || idx->phys_end > BF_MAP_OFF_MASK ||
        !segs_match(idx->phys_end, idx->nsegs, idx->segment_size))
        return bad(why, "inconsistent sizes in index header");
    return BF_OK;
}

int bf_index_decode_body(const unsigned char *buf, size_t len, bf_index *idx, const char **why)
{
    const unsigned char *p = buf + BF_INDEX_HDR, *end = buf + len - 4;
    uint32_t bs = idx->block_size;
    for (uint32_t i = 0; i < idx->nparts; i++) {
        if (end - p < 24)
            return bad(why, "index truncated in its parts");
        bf_index_part *pt = &idx->parts[i];
        pt->bytes = bf_get64(p);
        pt->blk_delta = bf_get64(p + 8);
        pt->nsegs = bf_get32(p + 16);
        pt->name_len = bf_get16(p + 20);
        if ((size_t)(end - p) < part_size(pt->name_len))
            return bad(why, "index truncated in its parts");
        pt->name = (const char *)p + 24;
        if (!bf_name_valid(pt->name, pt->name_len) || pt->bytes > BF_MAP_OFF_MASK ||
            !segs_match(pt->bytes, pt->nsegs, idx->segment_size) ||
            pt->blk_delta > BF_MAP_MAX_BLOCK)
            return bad(why, "bad part in index");
        p += part_size(pt->name_len);
    }
    if ((size_t)(end - p) != (size_t)idx->nblocks * 16)
        return bad(why, "index length does not match its block count");
    idx->entries = p;
    for (uint32_t b = 0; b < idx->nblocks; b++) {
        bf_map_entry e;
        bf_index_entry(idx, b, &e);
        if (e.cap == 0) {
            if (e.off != 0 || e.len != 0)
                return bad(why, "bad hole entry in index");
            continue;
        }
        uint32_t part = bf_map_part(&e);
        uint64_t limit = part == 0 ? idx->phys_end : 0;
        if (part > idx->nparts)
            return bad(why, "index entry names a missing part");
        if (part > 0)
            limit = idx->parts[part - 1].bytes;
        uint32_t elen = bf_map_len(&e);
        uint64_t off = bf_map_off(&e);
        if (elen < BF_EXTENT_HDR || elen > bs + BF_EXTENT_HDR || elen > e.cap ||
            off + e.cap > limit || off % idx->segment_size + e.cap > idx->segment_size)
            return bad(why, "index entry outside its segments");
    }
    return BF_OK;
}
