/*
 * fuzz_segment.c - arbitrary bytes as a segment file of an open file.
 *
 * Input: a flag byte, then the new contents of one segment file.
 *   bits 0-1  codec (index into the codecs built in)
 *   bits 2-3  which segment file is replaced (modulo the file's count)
 *   bits 4-7  which blocks are rewritten afterwards
 * Each run writes a 10.5-block file of known data (4 KiB blocks, 16 KiB
 * segments, so several segment files), swaps in the input as one segment,
 * then reads every block and the whole stream. Properties: a block whose
 * extent bytes are unchanged reads back exactly; any other read returns
 * the data or BF_ECORRUPT with a message naming the segment, nothing else
 * and no crash; blocks rewritten afterwards read back exactly; truncate
 * and close still work and leave no file behind; all memory is returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "fuzz.h"
#include "support.h"

#define BS 4096u
#define SEG 16384u
#define NBLK 10u
#define TAIL 2000u
#define SIZE (NBLK * BS + TAIL)

static unsigned char expect[SIZE];

/* The file every run starts from: NBLK whole blocks and a partial one, flushed. */
static bf_file *build(bf_space *sp)
{
    fuzz_data(7, expect, SIZE);
    bf_file *f;
    FUZZ_CHECK(bf_file_create(sp, NULL, &f) == BF_OK, "create: %s", bf_space_errmsg(sp));
    for (uint32_t b = 0; b < NBLK; b++)
        FUZZ_CHECK(bf_file_write_block(f, b, expect + b * BS) == BF_OK, "write_block: %s",
                   bf_space_errmsg(sp));
    FUZZ_CHECK(bf_file_seek(f, NBLK * BS, BF_SEEK_SET) == BF_OK, "seek");
    FUZZ_CHECK(bf_file_write(f, expect + NBLK * BS, TAIL) == BF_OK && bf_file_flush(f) == BF_OK,
               "tail: %s", bf_space_errmsg(sp));
    return f;
}

static bf_codec codec_of(uint8_t flags)
{
    bf_codec codecs[4];
    int n = fuzz_codecs(codecs);
    return codecs[(flags & 3) % n];
}

/* Are block b's extent bytes the same in the replaced segment as before? */
static int intact(const bf_file *f, uint32_t b, uint32_t segno, const unsigned char *orig,
                  size_t orig_len, const unsigned char *now, size_t now_len)
{
    if (b == f->buf_blk)
        return 1; /* served from the block buffer */
    const bf_map_entry *e = bf_map_get(&f->map, b);
    if (!bf_map_used(e))
        return 1; /* a hole has no bytes to compare */
    uint64_t off = bf_map_off(e);
    if (off / SEG != segno)
        return 1;
    size_t at = (size_t)(off % SEG), len = bf_map_len(e);
    return at + len <= now_len && at + len <= orig_len && memcmp(orig + at, now + at, len) == 0;
}

static int saw_corrupt; /* a read of this run reported BF_ECORRUPT */

static void expect_ok_or_corrupt(bf_space *sp, int64_t rc, const char *seg_path, const char *op)
{
    if (rc >= 0)
        return;
    saw_corrupt = 1;
    FUZZ_CHECK(rc == BF_ECORRUPT, "%s returned %lld: %s", op, (long long)rc, bf_space_errmsg(sp));
    FUZZ_CHECK(strstr(bf_space_errmsg(sp), seg_path) != NULL, "%s: message \"%s\" lacks %s", op,
               bf_space_errmsg(sp), seg_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = fuzz_space(codec_of(flags), BS, SEG, &cnt.hooks);
    bf_file *f = build(sp);
    uint32_t segno = ((flags >> 2) & 3) % f->seg.nsegs;
    char path[4096];
    bf_seg_path(&f->seg, segno, path, sizeof(path));
    size_t orig_len;
    unsigned char *orig = t_read_file(path, &orig_len);
    FUZZ_CHECK(orig != NULL, "cannot read %s", path);
    bf_seg_close(&f->seg); /* the next read reopens the replaced file */
    FUZZ_CHECK(t_write_file(path, data + 1, size - 1) == 0, "cannot write %s", path);

    static unsigned char got[SIZE];
    int all_intact = 1;
    saw_corrupt = 0;
    for (uint32_t b = 0; b <= NBLK; b++) {
        int ok = intact(f, b, segno, orig, orig_len, data + 1, size - 1);
        all_intact &= ok;
        int rc = bf_file_read_block(f, b, got);
        if (ok) {
            FUZZ_CHECK(rc == BF_OK, "intact block %u: %d %s", b, rc, bf_space_errmsg(sp));
            uint32_t n = b < NBLK ? BS : TAIL;
            FUZZ_CHECK(memcmp(got, expect + b * BS, n) == 0, "intact block %u differs", b);
        }
        expect_ok_or_corrupt(sp, rc, path, "read_block");
    }
    FUZZ_CHECK(bf_file_seek(f, 0, BF_SEEK_SET) == BF_OK, "seek");
    int64_t n = bf_file_read(f, got, SIZE + 1);
    if (all_intact)
        FUZZ_CHECK(n == SIZE && memcmp(got, expect, SIZE) == 0, "intact stream read: %lld",
                   (long long)n);
    expect_ok_or_corrupt(sp, n, path, "read");

    /* Rewrites go to fresh extents and must read back whatever lies around them, once the
       damage was seen: the library then writes blocks whole. Before (every read intact), a
       rewrite into the replaced segment's free space may leave zeros to its holes, which the
       input may have filled: the block must then fail its check naming the segment, never
       read back other bytes (docs/design.md, holes). */
    uint32_t rewrite[2] = {(flags >> 4) % NBLK, (uint32_t)(flags >> 6) * 3 % NBLK};
    static unsigned char fresh[BS];
    for (int i = 0; i < 2; i++) {
        fuzz_data(1000u + rewrite[i], fresh, BS);
        FUZZ_CHECK(bf_file_write_block(f, rewrite[i], fresh) == BF_OK, "rewrite: %s",
                   bf_space_errmsg(sp));
    }
    int damage_seen = saw_corrupt;
    for (int i = 0; i < 2; i++) {
        fuzz_data(1000u + rewrite[i], fresh, BS);
        const bf_map_entry *e = bf_map_get(&f->map, rewrite[i]);
        int in_replaced = e != NULL && bf_map_used(e) && bf_map_off(e) / SEG == segno;
        int rc = bf_file_read_block(f, rewrite[i], got);
        if (rc == BF_ECORRUPT && in_replaced && !damage_seen) {
            expect_ok_or_corrupt(sp, rc, path, "read of a rewritten block");
            continue;
        }
        FUZZ_CHECK(rc == BF_OK && memcmp(got, fresh, BS) == 0,
                   "rewritten block %u does not read back: %s", rewrite[i], bf_space_errmsg(sp));
    }
    int rc = bf_file_truncate(f, SIZE / 2 + 1);
    FUZZ_CHECK(rc == BF_OK || rc == BF_ECORRUPT, "truncate: %d %s", rc, bf_space_errmsg(sp));
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(sp));
    FUZZ_CHECK(bf_file_close(f) == BF_OK, "close: %s", bf_space_errmsg(sp));
    FUZZ_CHECK(t_dir_entries(dir) == 0, "segment files left after close");
    bf_space_destroy(sp);
    FUZZ_CHECK(t_dir_entries(dir) == -1, "space directory left after destroy");
    FUZZ_CHECK(cnt.live_bytes == 0, "%lld bytes not freed", (long long)cnt.live_bytes);
    free(orig);
    return 0;
}

/* Seeds: the real segment files of every codec, first and second segment. */
int fuzz_write_seeds(const char *dir)
{
    bf_codec codecs[4];
    int n = fuzz_codecs(codecs);
    for (int c = 0; c < n; c++) {
        for (uint32_t segno = 0; segno < 2; segno++) {
            bf_space *sp = fuzz_space(codecs[c], BS, SEG, NULL);
            bf_file *f = build(sp);
            if (segno >= f->seg.nsegs) { /* well compressed: fewer segments */
                bf_file_close(f);
                bf_space_destroy(sp);
                break;
            }
            char path[4096], name[64];
            bf_seg_path(&f->seg, segno, path, sizeof(path));
            size_t len;
            unsigned char *seg = t_read_file(path, &len);
            if (seg == NULL)
                return 1;
            snprintf(name, sizeof(name), "%s-seg%u", bf_codec_name(codecs[c]), segno);
            fuzz_seed(dir, name, (uint8_t)(c | (segno << 2) | 0x50), seg, len);
            free(seg);
            bf_file_close(f);
            bf_space_destroy(sp);
        }
    }
    return 0;
}
