/*
 * file.c - the logical stream: position, one block buffer, block I/O.
 * Implements: bf_file_create, bf_file_options_init_sized, bf_file_write,
 * bf_file_read, the windows (bf_file_write_window, bf_file_write_advance,
 * bf_file_read_window, bf_file_read_advance), bf_file_seek, bf_file_tell,
 * bf_file_size, bf_file_flush, bf_file_truncate, the block API
 * (bf_file_seek_block, bf_file_read_block, bf_file_write_block,
 * bf_file_discard_block), bf_file_release_buffer, the accessors
 * (bf_file_block_size, bf_file_codec, bf_file_level,
 * bf_file_space, bf_file_path) and its figures (bf_file_stats_sized,
 * bf_file_written, bf_file_memory) (buffile.h); file.h.
 *
 * Logical offsets are turned into (block, offset-in-block) by shifts; the
 * block map alone knows where a block's bytes are on disk. Nothing here
 * computes a physical offset from a logical one, which is what keeps seek,
 * tell and size exact on compressed data.
 *
 * Rewrites are copy-on-write: a block's new extent is written into free
 * space (best fit) or at the end, and only after that write succeeded is
 * the map switched and the old extent freed. A failed write therefore
 * leaves the previous contents readable, and the dirty buffer is kept so
 * that nothing acknowledged is lost. One exception (bare_patch): a block
 * stored bare that no persisted index needs, changed in part and not in
 * length, is patched in place where it changed, so that a write into part
 * of a block does not cost a whole block; a failure there leaves the
 * dirty buffer, which reads see, and only the slot torn.
 *
 * An anonymous file's segment bytes past its physical end read as zeros
 * (created empty, cut where the end drops; bf_space.holes_untrusted says
 * when a failed cut broke that), and so do clean free chunks: a bare
 * block's zeros there are left unwritten (holes_read_zero), its check
 * covering them all the same.
 *
 * Every public call either does what it says or leaves what buffile.h
 * promises for its failure: storing paths make room in the map before
 * they write and give it back if the write fails, sizes and peaks move
 * only once bytes are stored, and reads put the position back.
 */
#include "file.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"
#include "alloc.h"
#include "auto_file.h"
#include "budget.h"
#include "clock.h"
#include "codec.h"
#include "extent.h"
#include "index.h"
#include "io.h"
#include "le.h"
#include "readahead.h"

static unsigned shift_of(uint32_t block_size)
{
    return (unsigned)__builtin_ctz(block_size);
}

/* ---- accounting ------------------------------------------------------- */

/*
 * Move a file's current value from `old` to `v`: its peak, and, when the
 * file is the space's (counted), the space's sum and peak.
 */
static void track(const bf_file *f, uint64_t old, uint64_t v, uint64_t *file_peak,
                  uint64_t *space_now, uint64_t *space_peak)
{
    if (v > *file_peak)
        *file_peak = v;
    if (!f->counted)
        return;
    *space_now = *space_now - old + v;
    if (*space_now > *space_peak)
        *space_peak = *space_now;
}

/*
 * The size moves to `size`, whose bytes in the buffer (if any) the caller has written.
 * The logical peaks may lag the figures they are the peaks of (logical_append): the
 * figures this leaves count first.
 */
static void logical_move(bf_file *f, uint64_t size)
{
    bf_space *sp = f->seg.space;
    if (f->size > f->c.logical_peak)
        f->c.logical_peak = f->size;
    if (f->counted && sp->logical_now > sp->c.logical_peak)
        sp->c.logical_peak = sp->logical_now;
    track(f, f->size, size, &f->c.logical_peak, &sp->logical_now, &sp->c.logical_peak);
    f->size = size;
}

/*
 * bf_file_write's common case: the size grows to `size` within the buffered block.
 * The space's sum moves; the file's and the space's logical peaks are left to lag
 * their figures, which only grow here: whatever moves a size otherwise
 * (logical_move) lifts them first, and bf_stats_fill reports the larger of a peak
 * and its figure. Stock's BufFileWrite keeps no peak at all; a call here keeps no
 * compare and store of one either.
 */
static inline void logical_append(bf_file *f, uint64_t size)
{
    if (f->counted)
        f->seg.space->logical_now += size - f->size;
    f->size = size;
}

static uint32_t block_bytes(const bf_file *f, uint64_t blkno);

/*
 * Make the buffer's bytes past the size zero, as file.h says, if a new
 * block's were left undefined (buf_lazy): buf_switch does not zero a
 * block it does not load, because its writes (which start at or below the
 * size, or zero the gap first) cover what the size comes to cover, and a
 * flush stores only the bytes below the size. Whatever else moves the size
 * up (logical_set), reads the whole buffer, or puts the position past the
 * size (a seek: so that bf_file_write's fast case, which writes at the
 * position, never leaves a gap of undefined bytes) comes here first.
 * Only a seek or a truncate puts the position past the size, and a
 * truncate zeroes the buffer past its new size or drops the block.
 */
static void buf_settle(bf_file *f)
{
    if (!f->buf_lazy)
        return;
    f->buf_lazy = 0;
    if (f->buf_blk == BF_NO_BLOCK)
        return;
    uint32_t n = block_bytes(f, f->buf_blk);
    memset(f->buf + n, 0, f->block_size - n);
}

/* ---- the buffered block's check, summed as it fills (fauto.fill) ------ */

/*
 * A bare block's check (bf_extent_bare_crc) summed when the block is
 * stored read its 8 KiB again, by then often out of the L1 and L2 caches
 * when many files fill at once (a hash join's batches: ~0.2 us a block,
 * docs/results/none-path-profile.md). A file whose blocks all go out bare
 * (fauto.fill) instead sums the bytes its writes put into the buffer
 * while they are still hot: every FILL_BATCH bytes appended, in whole
 * units (block_size / 256), and the store sums only the rest (buf_crc).
 * fauto.fill_crc is the check of the buffer's first fill_units units, as
 * they are now; whatever changes a byte among them resets fill_units to 0
 * (fill_note, fill_reset), and the store then sums the block whole, as
 * before. The check is the same either way: the format does not change.
 */
/* 1024: callgrind with a 1 MiB L2, 256 files of 40-byte tuples, per block: 256 saved 94 L2
   misses of the store's 128 for 3,800 more instructions, 512 64 for 2,300, 1024 38 for
   1,550; user CPU (paired runs on a loaded machine) was lowest with 1024, and 256 and 512
   no better than summing at the store (docs/results/none-path-profile.md, section "The
   check summed as the block fills"). Each sum has a fixed part (its accumulators' set-up
   and merge, the 128-bit finish): on Zen 4's VPCLMULQDQ, sums in a chain cost 15 ns for
   512 bytes, 22 for 1024, 142 for 8 KiB, so 16 sums a block ~245 ns, 8 ~175 (bench/profile/
   crc_batch.c; section "The store of a full block, one path"): that is why 512 cost more.
   XXX: interleaved with the copies, as in bf_file_write, the fixed part hid and no batch
   clearly beat one sum at the store there, at 4 to 1,024 files' buffers: whether 1024 pays
   on this CPU is not settled (no PMU here; the user CPU figures above were loaded). */
#ifndef BF_FILL_BATCH
#define BF_FILL_BATCH 1024u
#endif
#define FILL_BATCH BF_FILL_BATCH
_Static_assert((FILL_BATCH & (FILL_BATCH - 1)) == 0, "FILL_BATCH: a power of two (bf_file_write)");

static inline uint32_t fill_done(const bf_file *f)
{
    return (uint32_t)f->fauto.fill_units << (shift_of(f->block_size) - 8);
}

/* The buffer's summed bytes may have changed (or it holds another block): forget them. */
static inline void fill_reset(bf_file *f)
{
    if (f->fauto.fill)
        f->fauto.fill_units = 0;
}

/* Sum the buffer's units from fill_done up to the one `end` falls in (not included). */
__attribute__((noinline)) static void fill_fold(bf_file *f, uint32_t end)
{
    unsigned us = shift_of(f->block_size) - 8;
    uint32_t done = fill_done(f), to = end >> us;
    if (to > UINT8_MAX)
        to = UINT8_MAX; /* the last unit is the store's */
    if ((to << us) <= done)
        return;
    uint32_t crc;
    if (done == 0) {
        crc = bf_extent_bare_crc(f->buf_blk, f->buf, to << us);
    } else {
        memcpy(&crc, f->fauto.fill_crc, sizeof(crc));
        crc = bf_extent_bare_crc_more(crc, f->buf + done, (to << us) - done);
    }
    memcpy(f->fauto.fill_crc, &crc, sizeof(crc));
    f->fauto.fill_units = (uint8_t)to;
}

/*
 * The buffer's bytes [off, off + len) were just written, and every byte below off + len is
 * the block's (below the size). Below what was summed: forget the sum; else sum them once
 * FILL_BATCH bytes wait. bf_file_write's appends test less (a FILL_BATCH boundary crossed).
 */
static inline void fill_note(bf_file *f, uint32_t off, size_t len)
{
    if (!f->fauto.fill)
        return;
    uint32_t done = fill_done(f);
    if (off < done)
        f->fauto.fill_units = 0;
    else if (off + len - done >= FILL_BATCH)
        fill_fold(f, (uint32_t)(off + len));
}

/* The check of the buffered block's first `n` bytes (its bytes below the size). */
static uint32_t buf_crc(const bf_file *f, uint32_t n)
{
    uint32_t done = fill_done(f), crc;
    if (!f->fauto.fill || done == 0 || done > n)
        return bf_extent_bare_crc(f->buf_blk, f->buf, n);
    memcpy(&crc, f->fauto.fill_crc, sizeof(crc));
    return bf_extent_bare_crc_more(crc, f->buf + done, n - done);
}

/* The size moves to `size` by other means than a write into the buffer. */
static void logical_set(bf_file *f, uint64_t size)
{
    if (size > f->size)
        buf_settle(f);
    else if (size < f->size)
        fill_reset(f); /* the bytes past it are no longer the block's */
    logical_move(f, size);
}

static uint64_t index_bytes(const bf_file *f)
{
    return f->named != NULL ? f->named->idx_bytes : 0;
}

void bf_file_set_physical(bf_file *f, uint64_t end, uint64_t idx)
{
    bf_space *sp = f->seg.space;
    uint64_t old_idx = index_bytes(f);
    track(f, f->phys_end, end, &f->c.physical_peak, &sp->physical_now, &sp->c.physical_peak);
    if (f->counted)
        sp->index_now = sp->index_now - old_idx + idx;
    f->phys_end = end;
    if (f->named != NULL)
        f->named->idx_bytes = idx;
    bf_budget_sync(sp);
}

static void physical_set(bf_file *f, uint64_t end)
{
    bf_file_set_physical(f, end, index_bytes(f));
}

static void live_add(bf_file *f, int64_t delta)
{
    if (f->counted)
        f->seg.space->live_now += (uint64_t)delta;
}

/* Bytes of live part-0 extents; computed, not stored, to keep the struct small. */
static uint64_t live_bytes(const bf_file *f)
{
    uint64_t live = 0;
    const bf_map_entry *e;
    for (uint64_t b = 0; (e = bf_map_next(&f->map, &b)) != NULL; b++)
        if (bf_map_part(e) == 0)
            live += bf_map_len(e);
    return live;
}

uint64_t bf_file_live_end(const bf_file *f)
{
    uint64_t end = f->named != NULL ? BF_HEAD_BYTES : 0;
    const bf_map_entry *e;
    for (uint64_t b = 0; (e = bf_map_next(&f->map, &b)) != NULL; b++)
        if (bf_map_part(e) == 0 && bf_map_off(e) + bf_map_room(e) > end)
            end = bf_map_off(e) + bf_map_room(e);
    return end;
}

/*
 * The identity the extents of `part` of `f` are sealed with: a named file's
 * own (its parts', for spliced extents), or for an anonymous file its
 * space's with its number after it, which no named file's ends with.
 */
static void file_identity(const bf_file *f, uint32_t part, unsigned char *id)
{
    if (f->named == NULL) {
        memcpy(id, f->seg.space->anon_id, 12);
        bf_put32(id + 12, f->seg.id);
        return;
    }
    memcpy(id, part == 0 ? f->named->file_id : f->named->parts[part - 1].file_id, 12);
    bf_put32(id + 12, UINT32_MAX);
}

/* The segment row holding extents of `part`, the block delta of its headers and its generation. */
static bf_seg *part_seg(bf_file *f, uint32_t part, uint64_t *delta, uint32_t *gen)
{
    if (part == 0) {
        *delta = 0;
        *gen = f->named != NULL ? f->named->gen : 0;
        return &f->seg;
    }
    const bf_part *p = &f->named->parts[part - 1];
    *delta = p->blk_delta;
    *gen = p->gen;
    return &f->named->parts[part - 1].seg;
}

#define COUNT(f, field, n)                                                                         \
    do {                                                                                           \
        (f)->c.field += (n);                                                                       \
        (f)->seg.space->c.field += (n);                                                            \
    } while (0)

/* ---- physical space --------------------------------------------------- */

void bf_file_shrink_tail(bf_file *f)
{
    bf_space *sp = f->seg.space;
    uint64_t end = bf_free_tail_start(&f->free, f->phys_end);
    uint64_t floor = 0;
    if (f->named != NULL) /* the head, and the bytes the persisted version still needs */
        floor = f->named->kept_end > BF_HEAD_BYTES ? f->named->kept_end : BF_HEAD_BYTES;
    if (end < floor)
        end = floor;
    if (end >= f->phys_end)
        return;
    if (bf_seg_resize(&f->seg, end) != BF_OK) {
        /* Not the caller's failure: the space stays free and goes at the next shrink or at
           close. Segments already removed from the end are gone, though. */
        uint64_t left = (uint64_t)f->seg.nsegs * sp->segment_size;
        if (left >= f->phys_end)
            return;
        end = left > end ? left : end;
    }
    bf_free_drop_beyond(&f->free, bf_file_alloc(f), sp->segment_size, end);
    physical_set(f, end);
}

/*
 * Forget an entry's extent. Its bytes become free space, unless they
 * belong to a spliced part (never ours to reuse) or to the last persisted
 * index (kept until a new index is durable: shadow paging).
 */
static void release_extent(bf_file *f, const bf_map_entry *e)
{
    if (bf_map_used(e) && bf_map_part(e) == 0) {
        if ((e->len & BF_MAP_KEPT) == 0)
            bf_free_put(&f->free, bf_file_alloc(f), f->seg.space->segment_size, e->off,
                        bf_map_room(e));
        live_add(f, -(int64_t)bf_map_len(e));
    }
}

/*
 * Whether the bytes of `f`'s segments past its physical end read as zeros:
 * an anonymous file's segments are created empty (O_EXCL), written below
 * the end each write then sets, and cut where the end drops (a shrink
 * whose cut fails keeps its end). A named file's may hold what an earlier
 * session left (tests/fsmodel.c plants such bytes), and a failed write
 * whose give-back cut failed too left its bytes (bf_space.holes_untrusted).
 * Where it holds, the zeros of a bare block that lie there, and in free
 * chunks that are clean (freespace.h), are not written: the file system's
 * hole reads as the zeros the block's check covers. SQLite's temp
 * databases: a page written past the end opens a block whose leading zeros
 * were written, and a short block that grows wrote its hole up to the
 * size. Were the bytes not zeros after all, the block's check fails on
 * read (BF_ECORRUPT), as for any bytes changed under the library; once a
 * load has found a block damaged, the space stops relying on holes
 * (block_load). XXX: bytes planted only in a segment's holes, with every
 * block intact, are not seen until a block stored there fails its check
 * (detected, never returned as data; an fstat of each segment as it is
 * reopened would see a grown file, not bytes planted inside it).
 */
static int holes_read_zero(const bf_file *f)
{
    return f->named == NULL && !f->seg.space->holes_untrusted;
}

/* A cut giving back what a failed write left past the physical end: best effort. */
static void cut_back(bf_file *f)
{
    if (bf_seg_resize(&f->seg, f->phys_end) != BF_OK)
        f->seg.space->holes_untrusted = 1;
}

/* The bytes a bare block leaves unwritten start and end at multiples of this within the
   block (its extent is page-aligned from a quarter page on): the page cache's sectors. */
#define HOLE_UNIT 512u

/* Leading zero bytes of p[0, n). */
static uint32_t zeros_lead(const unsigned char *p, uint32_t n)
{
    uint32_t i = 0;
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != 0)
            break;
        i += 8;
    }
    while (i < n && p[i] == 0)
        i++;
    return i;
}

/* Where the bytes of p[start, n) stop being zeros, rounded up to HOLE_UNIT (at most n). */
static uint32_t zeros_from(const unsigned char *p, uint32_t start, uint32_t n)
{
    uint32_t i = n;
    while (i > start && p[i - 1] == 0)
        i--;
    i = (i + HOLE_UNIT - 1) & ~(HOLE_UNIT - 1);
    return i < n ? i : n;
}

/*
 * `off` rounded up to a multiple of `align` (a power of two; 1: unaligned)
 * counted from the start of its segment file (of sp->segment_size bytes): the file
 * system, and its page cache, see offsets in that file. The result may lie
 * past the segment's end (a segment size is a multiple of a page, not of a
 * block): the caller checks that the extent fits.
 */
static uint64_t seg_align_up(const bf_space *sp, uint64_t off, uint32_t align)
{
    uint64_t in = bf_space_segoff(sp, off);
    return off - in + ((in + align - 1) & ~(uint64_t)(align - 1));
}

/*
 * The alignment a block's extent needs: a bare block of a page or more
 * starts at a multiple of its length's largest power of two up to
 * BF_BARE_ALIGN_MAX, counted from its segment file's start: a whole block
 * at a multiple of its size, as stock's blocks are, and a file's tail at
 * the power of two below its length (not measured apart: a tail is one
 * block of a file); a shorter one of a quarter page or more (a file's tail,
 * stored while it was the last block) at a page, so that the rest of its
 * page stays free space for it to grow into where it is (gap_grows:
 * SQLite's temp databases leave blocks short behind pages written past
 * their end, then fill them; packed, each growth wrote the block whole
 * elsewhere; below a quarter page, a free chunk per extent would cost the
 * free list more than the bytes it saves: a byte in each of 2000 sparse
 * blocks, test_contracts); compressed extents and the rest are packed. Only
 * page alignment is the format's (index.c checks it); the block size's is
 * the page cache's: a bare block at an odd page after a compressed extent
 * put every later block of the file across two of its 8 KiB folios, and
 * auto, whose prior packs a space's first blocks with lz4, cost 13-20% more
 * CPU than none in ext4's page cache (docs/results/format4.md). An
 * alignment the segment size is not a multiple of (64 KiB in segments of
 * 136 KiB) is why extent_place looks at the segment the end is in.
 */
static uint32_t bare_align(const bf_extent_info *info)
{
    if (!info->bare)
        return 1;
    if (info->disk_len < BF_BARE_ALIGN)
        return info->disk_len >= BF_BARE_ALIGN / 4 ? BF_BARE_ALIGN : 1;
    uint32_t n = 1u << (31 - __builtin_clz(info->disk_len));
    return n < BF_BARE_ALIGN_MAX ? n : BF_BARE_ALIGN_MAX;
}

/*
 * Whether a short bare block of `f` keeps the rest of its page as room to
 * grow into (tail_room, extent_place; freespace.h's BF_CHUNK_ROOM): when the
 * bytes after it read as zeros where they are left unwritten, and the file
 * may pack. none packs nothing: the extents after a block are bare and
 * aligned, and leave the rest of its page free as it is.
 */
static int rooms_kept(const bf_file *f)
{
    return holes_read_zero(f) && (f->codec != BF_CODEC_NONE || f->fauto.on);
}

/*
 * Find room for an extent of `need` bytes at a multiple of `align` counted
 * from its segment's start (bare_align): a free chunk, else the end
 * (skipping to the next segment when it would straddle; the bytes skipped
 * become free space, inside the segment the end was in). *grow is set to
 * the new physical end when the end is used, else to the current one.
 * `rewrite`: the block has an extent already, which is freed only after
 * the new copy is written (the message says so at the temp limit).
 */
static int extent_place(bf_file *f, uint32_t need, uint32_t align, int rewrite, bf_chunk *ch,
                        uint64_t *grow)
{
    bf_space *sp = f->seg.space;
    *grow = f->phys_end;
    /* A spill appending to a file that never freed anything (the common case) has no
       free space to look through: no call at every block. */
    /* A short bare block placed in free space takes a page there, the rest of it its room
       (rooms_kept): placed in a freed slot that fitted it alone, it was written whole
       elsewhere at its next growth, and left a slot of its size for the next one to do so. */
    uint32_t take = align == BF_BARE_ALIGN && need < align && rooms_kept(f) ? align : need;
    if (f->free.n != 0 && (align > 1 ? bf_free_take_aligned(&f->free, bf_file_alloc(f),
                                                            sp->segment_size, take, align, ch)
                                     : bf_free_take(&f->free, bf_file_alloc(f), sp->segment_size,
                                                    need, f->block_size / 8, ch))) {
        if (take > need) {
            bf_free_put_room(&f->free, bf_file_alloc(f), sp->segment_size, ch->off + need,
                             take - need, ch->clean);
            ch->cap = need;
        }
        return BF_OK;
    }
    /* The segment is the one the end is in, not the one the aligned offset is in: the bytes
       skipped become one free chunk, and a free chunk must not run past a segment's end
       (freespace.h). When it did (a 64 KiB alignment in 136 KiB segments), a bare block
       placed there later was written whole into the first segment's file, past its end,
       while a patch of its second half went through its offset to the next segment's file,
       and the read found the old bytes failing the new check. */
    uint64_t seg_end = (bf_space_segno(sp, f->phys_end) + 1) * sp->segment_size;
    uint64_t off = seg_align_up(sp, f->phys_end, align);
    if (off + need > seg_end)
        off = seg_end; /* the next segment's start, aligned to anything */
    uint64_t end = off + need;
    if (f->counted && sp->temp_limit != 0 &&
        sp->physical_now + (end - f->phys_end) > sp->temp_limit) {
        char path[4096];
        bf_seg_path(&f->seg, (uint32_t)(off / sp->segment_size), path, sizeof(path));
        return bf_fail(sp, BF_ELIMIT, "write", path, 0,
                       "temp limit of %llu bytes reached (%llu in use, %u more needed%s)",
                       (unsigned long long)sp->temp_limit, (unsigned long long)sp->physical_now,
                       (unsigned)(end - f->phys_end),
                       rewrite ? ": a rewritten block's new copy needs room before its old one "
                                 "is freed"
                               : "");
    }
    if (f->counted && sp->budget != NULL) {
        char path[4096];
        bf_seg_path(&f->seg, (uint32_t)(off / sp->segment_size), path, sizeof(path));
        int rc = bf_budget_reserve(sp, end - f->phys_end, "write", path);
        if (rc != BF_OK)
            return rc;
    }
    ch->off = off;
    ch->cap = need;
    *grow = end;
    return BF_OK;
}

/* ---- block store and load --------------------------------------------- */

/*
 * Compress `raw_len` bytes of block `blkno` from `data` into `at` (room
 * for header + block): iov describes the extent (header and payload in
 * `at`, or header in `at` and the raw payload still in `data`).
 */
static int block_pack(bf_file *f, uint64_t blkno, const void *data, uint32_t raw_len,
                      unsigned char *at, struct iovec iov[2], int *iovcnt, bf_extent_info *info,
                      int prepare)
{
    bf_space *sp = f->seg.space;
    if (f->fauto.on && prepare)
        bf_auto_file_prepare(sp, &f->fauto, &f->codec, &f->level, data, raw_len);
    uint32_t gen = f->named != NULL ? f->named->gen : 0;
    if (f->codec == BF_CODEC_NONE && !f->sealed) {
        /* An unsealed block of codec none goes out bare without asking the codec, as
           bf_extent_pack would send it: no codec table, context or seal to look up. */
        if (data == f->buf && blkno == f->buf_blk) /* summed as it filled, in part */
            bf_extent_pack_bare_summed(BF_CODEC_NONE, blkno, gen, data, raw_len,
                                       buf_crc(f, raw_len), iov, iovcnt, info);
        else
            bf_extent_pack_bare(BF_CODEC_NONE, blkno, gen, data, raw_len, iov, iovcnt, info);
        info->codec_ns = 0;
        if (f->fauto.on)
            bf_auto_file_packed(sp, &f->fauto, BF_CODEC_NONE, info);
        return BF_OK;
    }
    const bf_codec_ops *ops = bf_space_codec_ops(sp, (bf_codec)f->codec);
    void *ctx = NULL;
    int rc = bf_space_codec_ctx(sp, (bf_codec)f->codec, &ctx);
    if (rc != BF_OK)
        return rc;
    unsigned char id[BF_FILE_ID_BYTES];
    bf_extent_seal seal = {sp->seal, id};
    if (f->sealed)
        file_identity(f, 0, id);
    rc = bf_extent_pack(ops, ctx, f->level, blkno, gen, data, raw_len, f->sealed ? &seal : NULL, at,
                        iov, iovcnt, info);
    if (f->codec != BF_CODEC_NONE)
        COUNT(f, compress_ns, info->codec_ns);
    if (rc == BF_OK && f->fauto.on)
        bf_auto_file_packed(sp, &f->fauto, (bf_codec)f->codec, info);
    if (rc != BF_OK)
        return bf_fail(sp, rc, "compress", NULL, 0, "%s on block %llu: %s", ops->name,
                       (unsigned long long)blkno, bf_strerror(rc));
    return BF_OK;
}

/* A block of `codec` was stored (`raw`: as it came; `sealed`): the block counts. */
static void count_stored(bf_file *f, bf_codec codec, int raw, int sealed)
{
    if (bf_codec_is_user(codec))
        f->seg.space->blocks_user++;
    else
        f->seg.space->blocks_by_codec[codec]++;
    f->seg.space->blocks_sealed += sealed != 0;
    if (raw)
        COUNT(f, blocks_raw, 1);
    else
        COUNT(f, blocks_compressed, 1);
    bf_space_note_blocks(f->seg.space, BF_IO_WRITE, 1);
}

/* A slot holding a block unpacked ahead for a read (not a block to store): file.c's scans of
   slots as blocks to store skip these. */
static inline int read_job(const bf_job *j)
{
    return j->task != NULL;
}

/* Slot `j` (its task set) now holds a block of `f`: counted in the space's njobs. */
static inline void job_own(bf_file *f, bf_job *j)
{
    j->owner = f;
    f->seg.space->njobs[read_job(j)]++;
    bf_workers_link(f->seg.space->workers, j);
}

/* Slot `j`, owned, was not handed over after all: unowned again, uncounted. */
static inline void job_disown(bf_workers *w, bf_job *j)
{
    ((bf_file *)j->owner)->seg.space->njobs[read_job(j)]--;
    bf_workers_release(w, j);
}

/* Slot `j` (done) is freed: counted one fewer (every release of a file's slot goes through
   here); the bytes a worker read for it, if any, are the file's physical reads. */
static inline void job_free(bf_workers *w, bf_job *j)
{
    bf_file *f = j->owner;
    f->seg.space->njobs[read_job(j)]--;
    if (read_job(j) && j->rd.got != 0)
        COUNT(f, physical_read, j->rd.got);
    bf_workers_release(w, j);
}

/* The slot of `f`'s block `blkno` unpacked ahead, or NULL: there is at most one (ra_submit
   hands a block over only when it has none). */
static bf_job *ra_find(bf_file *f, uint64_t blkno)
{
    if (f->seg.space->njobs[1] == 0)
        return NULL;
    return bf_workers_find(f->seg.space->workers, f, blkno, 1, 1);
}

/*
 * Block `blkno` of `f` gets a new extent: a copy of it unpacked ahead is
 * not the block any more. Marked here, where the map moves, not found out
 * by comparing map entries later: the old extent's bytes become free space
 * and a later extent of the same block may land on the same offset with
 * the same length, which an entry compared later could not tell apart.
 */
static void ra_stale(bf_file *f, uint64_t blkno)
{
    bf_job *j = f->seg.space->workers != NULL ? ra_find(f, blkno) : NULL;
    if (j != NULL)
        j->rd.stale = 1; /* the caller's field: the task never reads it */
}

/*
 * The extent of `blkno` has been written at `off`: point the map at it, release the old one.
 * `slot`: the block's entry (bf_map_slot made room for it before the write; the map has not
 * changed since).
 */
static void block_commit(bf_file *f, uint64_t blkno, bf_map_entry *slot, uint64_t off, uint32_t cap,
                         const bf_extent_info *info, uint32_t written)
{
    uint32_t len = info->disk_len;
    ra_stale(f, blkno);
    release_extent(f, slot);
    bf_map_entry e = {off, len | (info->raw ? BF_MAP_RAW : 0), cap};
    if (info->bare) /* a bare block's room is its length; the word holds its check */
        e = (bf_map_entry){off, len | BF_MAP_RAW | BF_MAP_BARE, info->crc};
    bf_map_put_slot(slot, &e);
    live_add(f, len);
    COUNT(f, physical_written, written);
    count_stored(f, info->codec, info->raw, info->sealed);
}

/* Give back the room map_room made for blocks first..first+n-1 (the map covered old_n). */
static void map_unroom(bf_file *f, uint64_t first, uint32_t n, uint32_t old_n)
{
    const bf_allocator *a = bf_file_alloc(f);
    bf_map_shrink(&f->map, a, old_n);
    for (uint64_t b = first; b < first + n && b < old_n; b++)
        if (bf_map_get(&f->map, b) != NULL && !bf_map_used(bf_map_get(&f->map, b)))
            bf_map_clear(&f->map, a, b);
}

/*
 * Make the map hold blocks first..first+n-1 before anything is written, so
 * that committing cannot fail; *old_n lets a failure give the room back.
 * *last (if not NULL): the entry of block first+n-1, valid until the map
 * changes again.
 */
static int map_room(bf_file *f, uint64_t first, uint32_t n, uint32_t *old_n, bf_map_entry **last)
{
    *old_n = f->map.n;
    for (uint32_t i = 0; i < n; i++) {
        bf_map_entry *e = bf_map_slot(&f->map, bf_file_alloc(f), (uint32_t)(first + i));
        if (last != NULL)
            *last = e;
        if (e == NULL) {
            map_unroom(f, first, i, *old_n);
            return bf_fail(f->seg.space, BF_ENOMEM, "write", NULL, 0, "block map for %llu blocks",
                           (unsigned long long)(first + n));
        }
    }
    return BF_OK;
}

/*
 * Where the physical end goes after a bare extent of `len` bytes written
 * at the end at `off`: a short block aligned to a page (bare_align: a
 * tail of a quarter page or more) keeps the rest of its page as free
 * space of its own, clean (past the end, never written), so that it grows
 * there (gap_grows, bare_patch) once later extents follow it. Without it the next
 * extent at the end started where the block ended whenever it needed no
 * alignment (a compressed one): auto's and lz4's short tails then could
 * not grow where they were and were written whole elsewhere at every flush
 * (SQLite's temptable group: ~2.6 KB a flush where none patched ~1 KiB).
 * Extents placed in free space do not take the room (bf_free_put_room),
 * so it stays the block's. Only when the temp limit and the budget have
 * room for the bytes it adds; else the end stays at the block's end. The
 * room counts in the physical size (a hole in the segment file) until the
 * block fills it or the file's end is cut.
 */
static uint64_t tail_room(bf_file *f, uint64_t off, uint32_t len)
{
    bf_space *sp = f->seg.space;
    if (!rooms_kept(f) || len >= BF_BARE_ALIGN || len < BF_BARE_ALIGN / 4 ||
        off % BF_BARE_ALIGN != 0)
        return off + len;
    uint64_t room = off + BF_BARE_ALIGN;
    uint64_t add = room - (off + len);
    if (bf_space_segno(sp, off) != bf_space_segno(sp, room - 1) ||
        (f->counted && sp->temp_limit != 0 &&
         sp->physical_now + (off + len - f->phys_end) + add > sp->temp_limit) ||
        (f->counted && sp->budget != NULL && bf_budget_reserve(sp, add, "write", NULL) != BF_OK))
        return off + len;
    /* The segment file is not extended over the room (a call that could fail inside a
       store that succeeded): a growth into a room that nothing follows in its segment
       writes up to its last byte (bare_patch), and an extent placed after it in the same
       segment extends the file over it. A room may end where its segment ends: the next
       extent then opens the next segment's file, and this one stays short of the room. */
    return room;
}

/*
 * Write the packed extent of block `blkno` (iov, *info: bf_extent_pack's)
 * into free space or at the end, and commit it; a failure leaves the map,
 * the free space and the physical size as they were.
 */
static int extent_store(bf_file *f, uint64_t blkno, struct iovec *iov, int iovcnt,
                        const bf_extent_info *info)
{
    bf_space *sp = f->seg.space;
    uint32_t old_n;
    bf_map_entry *slot;
    int rc = map_room(f, blkno, 1, &old_n, &slot);
    if (rc != BF_OK)
        return rc;
    bf_chunk ch = {0, 0, 0};
    uint64_t grow = f->phys_end;
    uint32_t len = info->disk_len;
    rc = extent_place(f, len, bare_align(info), bf_map_used(slot), &ch, &grow);
    int placed = rc == BF_OK;
    int from_free = placed && grow == f->phys_end;
    /* An extent that skips to the next segment leaves a gap, made part of the segment
       file (as free space) so that the physical size is what the file system holds; a bare
       block's skip to its alignment is covered by its own write. */
    int gap = placed && !from_free && ch.off > f->phys_end;
    int holes = holes_read_zero(f);
    if (gap && bf_space_segoff(sp, ch.off) == 0)
        rc = bf_seg_resize(&f->seg, ch.off);
    /* A bare block's leading zeros where the bytes read as zeros already are not written
       (holes_read_zero): the end, or a clean free chunk. Its last unit is, so that the
       segment file holds the extent's bytes up to its end. */
    uint32_t skip = 0;
    struct iovec one = iov[0];
    if (info->bare && iovcnt == 1 && (from_free ? (ch.clean & BF_CHUNK_CLEAN) != 0 : holes) &&
        len > HOLE_UNIT) {
        skip = zeros_lead(iov[0].iov_base, len - 1) & ~(HOLE_UNIT - 1);
        one.iov_base = (unsigned char *)iov[0].iov_base + skip;
        one.iov_len = len - skip;
    }
    if (rc == BF_OK)
        rc = skip != 0 ? bf_seg_write(&f->seg, ch.off + skip, &one, 1, len - skip)
                       : bf_seg_write(&f->seg, ch.off, iov, iovcnt, len);
    if (rc != BF_OK) {
        if (from_free)
            bf_free_put(&f->free, bf_file_alloc(f), sp->segment_size, ch.off, ch.cap);
        else if (placed)
            cut_back(f); /* best effort: what a short write left */
        map_unroom(f, blkno, 1, old_n);
        bf_budget_sync(sp); /* what the budget reserved for it */
        return rc;
    }
    if (!from_free) {
        if (gap) /* bytes past the end: never written, when holes_read_zero */
            (holes ? bf_free_put_clean : bf_free_put)(&f->free, bf_file_alloc(f), sp->segment_size,
                                                      f->phys_end,
                                                      (uint32_t)(ch.off - f->phys_end));
        uint64_t room = info->bare ? tail_room(f, ch.off, len) : grow;
        if (room > grow)
            bf_free_put_room(&f->free, bf_file_alloc(f), sp->segment_size, grow,
                             (uint32_t)(room - grow), BF_CHUNK_CLEAN);
        physical_set(f, room);
    }
    block_commit(f, blkno, slot, ch.off, ch.cap, info, len - skip);
    return BF_OK;
}

/*
 * Whether a block of `raw_len` bytes at `data`, packed into `packed` bytes,
 * costs fewer bytes written bare: its leading zeros (a page written past
 * the end opened it) are not written (holes_read_zero) where its extent
 * goes, at the end (no free chunk could hold it). The pages of its hole
 * are written next, as a rule, each then a patch of its own bytes
 * (bare_patch), where a packed block is written whole again, or goes bare
 * whole (sub_block_bound): SQLite's temp databases with lz4 wrote 4 KiB
 * more than none for each such block. The bytes decide, not the codec's
 * ratio: a block that compresses below its written bytes stays packed.
 */
static int holes_pay(const bf_file *f, const unsigned char *data, uint32_t raw_len, uint32_t packed)
{
    if (f->sealed || !holes_read_zero(f) || raw_len <= HOLE_UNIT ||
        (f->free.n != 0 && f->free.c[f->free.n - 1].cap >= raw_len))
        return 0;
    uint32_t lead = zeros_lead(data, raw_len - 1) & ~(HOLE_UNIT - 1);
    return lead != 0 && raw_len - lead <= packed;
}

/*
 * Compress and write `raw_len` bytes of block `blkno` from `data` on this
 * thread (`prepare`: codec=auto has not yet seen the block). `bound`: when
 * not 0, an extent packed larger than this goes out bare instead (the file
 * is not sealed; buf_flush's sub_block_bound).
 */
static int block_store_now(bf_file *f, uint64_t blkno, const void *data, uint32_t raw_len,
                           int prepare, uint32_t bound)
{
    struct iovec iov[2];
    int iovcnt;
    bf_extent_info info;
    bf_space *sp = f->seg.space;
    int rc = block_pack(f, blkno, data, raw_len, sp->scratch, iov, &iovcnt, &info, prepare);
    if (rc == BF_OK && !info.bare &&
        ((bound != 0 && info.disk_len > bound) || holes_pay(f, data, raw_len, info.disk_len))) {
        uint32_t gen = f->named != NULL ? f->named->gen : 0;
        rc = bf_extent_pack(bf_space_codec_ops(sp, BF_CODEC_NONE), NULL, 0, blkno, gen, data,
                            raw_len, NULL, sp->scratch, iov, &iovcnt, &info);
        info.codec = (bf_codec)f->codec; /* counted as the file's codec's raw block */
    }
    return rc != BF_OK ? rc : extent_store(f, blkno, iov, iovcnt, &info);
}

/* ---- blocks packed by the space's workers (workers.h) ------------------ */

/*
 * With workers, a block leaving the buffer (or written whole) is copied
 * into a slot and packed on a worker; its extent is written and committed
 * here, on the caller's thread, in the order the file handed its blocks
 * over: at the file's next call that stores or loads a block, at flush,
 * truncate, stats, or when a slot is needed. Until then the slot holds the
 * only copy the library has (the size already covers it): nothing
 * acknowledged is lost, and a failure (the worker's, or the write's) stays
 * on the slot and is returned by the file's next such call, which tries
 * the block again the call after (a worker's failure is reported once, then
 * the block is stored on this thread).
 */

/* The oldest slot of `f` holding a block to store, or NULL. */
static bf_job *oldest_job(bf_file *f)
{
    if (f->seg.space->njobs[0] == 0)
        return NULL;
    return bf_workers_first(f->seg.space->workers, f);
}

/* Write and commit `f`'s oldest slot `j`, which is done; free it if that worked. */
static int job_commit(bf_file *f, bf_job *j)
{
    bf_space *sp = f->seg.space;
    int rc;
    if (j->rc != BF_OK) {
        if (!j->reported) {
            j->reported = 1;
            return bf_fail(sp, j->rc, "compress", NULL, 0,
                           "%s on block %llu, on a worker: %s (the block is kept, and stored "
                           "at the file's next call)",
                           j->ops->name, (unsigned long long)j->blkno, bf_strerror(j->rc));
        }
        rc = block_store_now(f, j->blkno, j->data, j->raw_len, 0, 0);
    } else {
        if (!j->noted) { /* once, however many times the write is tried */
            j->noted = 1;
            if (j->ops->id != BF_CODEC_NONE)
                COUNT(f, compress_ns, j->info.codec_ns);
            if (f->fauto.on)
                bf_auto_file_packed(sp, &f->fauto, j->ops->id, &j->info);
        }
        rc = extent_store(f, j->blkno, j->iov, j->iovcnt, &j->info);
    }
    bf_workers_set_stuck(sp->workers, j, rc != BF_OK);
    if (rc == BF_OK)
        job_free(sp->workers, j);
    return rc;
}

/* At most this many of a file's slots are written with one pwritev (jobs_commit_batch): two
   iovecs each at most, within BF_SEG_IOV_MAX. */
#define COMMIT_BATCH 32u

/*
 * `f`'s oldest slots holding blocks to store that are done, oldest first,
 * into js (at most COMMIT_BATCH): the leading run of the file's order, up
 * to its first slot not done. Their count.
 */
static uint32_t jobs_done_run(bf_file *f, bf_job **js)
{
    bf_workers *w = f->seg.space->workers;
    uint32_t k = 0;
    /* The file's list is in submission order (workers.h's index). */
    for (bf_job *j = oldest_job(f);
         j != NULL && k < COMMIT_BATCH && bf_workers_state(w, j) == BF_JOB_DONE;
         j = bf_workers_next(w, j))
        js[k++] = j;
    return k;
}

/*
 * Write `f`'s oldest slots js[0..n-1] (done, in the file's order) with one
 * pwritev, back to back at the physical end, and commit them: how many
 * were (0: the batch does not apply to even two of them, nothing was done;
 * the caller commits one at a time), or a failure of the write (the first
 * slot is then stuck, as its own write's failure would leave it). One
 * write per block cost the caller a system call per extent (a few KiB
 * with lz4), and ext4 zeroes the rest of each new page that a write covers
 * in part (issue 49: SQLite's sorter writes its runs one 4 KiB block after
 * another into one file). The batch takes only the extents that the
 * one-at-a-time path would place the same way: blocks in a row that are
 * packed, never stored before (a rewrite frees its old extent, which a
 * later one could take) and need no alignment, while no free chunk could
 * hold any of them and they fit in the end's segment, within the temp
 * limit and the budget; so the bytes on disk are the same either way.
 */
static int jobs_commit_batch(bf_file *f, bf_job **js, uint32_t n)
{
    bf_space *sp = f->seg.space;
    uint64_t off = f->phys_end, end = off;
    uint64_t seg_end = (bf_space_segno(sp, off) + 1) * sp->segment_size;
    uint32_t k = 0, min_len = UINT32_MAX;
    for (; k < n; k++) {
        const bf_job *j = js[k];
        uint64_t b = js[0]->blkno + k;
        if (j->rc != BF_OK || j->blkno != b || bare_align(&j->info) != 1 ||
            (b < f->map.n && bf_map_used(bf_map_get(&f->map, b))) ||
            end + j->info.disk_len > seg_end)
            break;
        end += j->info.disk_len;
        if (j->info.disk_len < min_len)
            min_len = j->info.disk_len;
    }
    if (k < 2 || (f->free.n != 0 && f->free.c[f->free.n - 1].cap >= min_len) ||
        (f->counted && sp->temp_limit != 0 && sp->physical_now + (end - off) > sp->temp_limit))
        return 0;
    /* The budget's refusal is said by the one-at-a-time path, block by block. */
    if (f->counted && sp->budget != NULL && bf_budget_reserve(sp, end - off, "write", NULL) != BF_OK)
        return 0;
    uint32_t old_n;
    int rc = map_room(f, js[0]->blkno, k, &old_n, NULL);
    if (rc != BF_OK) {
        bf_budget_sync(sp);
        return 0; /* one at a time: it says so for the block that needs the room */
    }
    struct iovec iov[2 * COMMIT_BATCH];
    int iovcnt = 0;
    for (uint32_t i = 0; i < k; i++)
        for (int v = 0; v < js[i]->iovcnt; v++)
            iov[iovcnt++] = js[i]->iov[v];
    rc = bf_seg_write(&f->seg, off, iov, iovcnt, end - off);
    if (rc != BF_OK) {
        cut_back(f); /* best effort: what a short write left */
        map_unroom(f, js[0]->blkno, k, old_n);
        bf_budget_sync(sp);
        bf_workers_set_stuck(sp->workers, js[0], 1);
        return rc;
    }
    physical_set(f, end);
    for (uint32_t i = 0; i < k; i++) {
        bf_job *j = js[i];
        if (!j->noted) { /* as job_commit */
            j->noted = 1;
            if (j->ops->id != BF_CODEC_NONE)
                COUNT(f, compress_ns, j->info.codec_ns);
            if (f->fauto.on)
                bf_auto_file_packed(sp, &f->fauto, j->ops->id, &j->info);
        }
        block_commit(f, j->blkno, bf_map_get(&f->map, j->blkno), off, j->info.disk_len, &j->info,
                     j->info.disk_len);
        off += j->info.disk_len;
        bf_workers_set_stuck(sp->workers, j, 0);
        job_free(sp->workers, j);
    }
    return (int)k;
}

/*
 * Commit `f`'s slots, oldest first, while they are done (`wait`: waiting
 * for each), several with one write where they allow it
 * (jobs_commit_batch); the first failure is returned, its slot kept.
 */
static int jobs_settle(bf_file *f, int wait)
{
    bf_workers *w = f->seg.space->workers;
    bf_job *j;
    if (w == NULL)
        return BF_OK;
    while ((j = oldest_job(f)) != NULL) {
        if (bf_workers_state(w, j) != BF_JOB_DONE) {
            if (!wait)
                return BF_OK;
            bf_workers_wait(w, j);
        }
        bf_job *js[COMMIT_BATCH];
        uint32_t n = jobs_done_run(f, js);
        int rc = n >= 2 ? jobs_commit_batch(f, js, n) : 0;
        if (rc < 0)
            return rc;
        if (rc > 0)
            continue;
        rc = job_commit(f, j);
        if (rc != BF_OK)
            return rc;
    }
    return BF_OK;
}

/* The newest slot of block `blkno` of `f` to store, or NULL. */
static bf_job *newest_job(bf_file *f, uint64_t blkno)
{
    bf_workers *w = f->seg.space->workers;
    if (w == NULL || f->seg.space->njobs[0] == 0)
        return NULL;
    return bf_workers_find(w, f, blkno, 0, 1);
}

/* At most this many blocks' hash chains are looked up for a range (jobs_settle_range); a
   longer range walks the file's list. */
#define RANGE_LOOKUPS 8u

/*
 * Commit `f`'s slots of blocks `first`..`last`, oldest first, waiting for
 * each (other blocks' stay: only a block's own copies must keep their
 * order).
 */
static int jobs_settle_range(bf_file *f, uint64_t first, uint64_t last)
{
    bf_workers *w = f->seg.space->workers;
    if (w == NULL || f->seg.space->njobs[0] == 0)
        return BF_OK;
    for (;;) {
        bf_job *j = NULL;
        if (last - first < RANGE_LOOKUPS) {
            /* A block's copies are chained together: the oldest of each block's. */
            for (uint64_t b = first; b <= last; b++) {
                bf_job *c = bf_workers_find(w, f, b, 0, 0);
                if (c != NULL && (j == NULL || c->seq < j->seq))
                    j = c;
            }
        } else {
            for (bf_job *c = oldest_job(f); c != NULL && j == NULL; c = bf_workers_next(w, c))
                if (c->blkno >= first && c->blkno <= last)
                    j = c;
        }
        if (j == NULL)
            return BF_OK;
        bf_workers_wait(w, j);
        int rc = job_commit(f, j);
        if (rc != BF_OK)
            return rc;
    }
}

static int jobs_settle_block(bf_file *f, uint64_t blkno)
{
    return jobs_settle_range(f, blkno, blkno);
}

/*
 * Commit the done slots of files other than `except`, each file's in its
 * order. A failure stays on its slot for its own file's next call (its
 * message is that call's to make), and is not tried again here.
 */
static void jobs_harvest(bf_space *sp, const bf_file *except)
{
    bf_workers *w = sp->workers;
    for (int progress = 1; progress;) {
        progress = 0;
        /* The files with blocks to store, from the last: a file whose last slot is committed
           leaves the list, the last taking its place (one already seen). */
        for (uint32_t i = bf_workers_nowners(w); i-- > 0;) {
            if (i >= bf_workers_nowners(w))
                continue;
            bf_file *f = bf_workers_owner(w, i);
            bf_job *j = f != except ? oldest_job(f) : NULL;
            if (j == NULL || j->stuck || bf_workers_state(w, j) != BF_JOB_DONE || j->rc != BF_OK)
                continue;
            bf_job *js[COMMIT_BATCH];
            uint32_t n = jobs_done_run(f, js);
            int rc = n >= 2 ? jobs_commit_batch(f, js, n) : 0;
            progress |= rc > 0 || (rc == 0 && job_commit(f, j) == BF_OK);
        }
    }
}

/*
 * Whether `f`'s done slots are to be committed now, at a call of `f` that
 * stores a block (jobs_poll: its own, then others') or loads one through
 * the stream (block_load): once half the slots its block size may use are
 * taken, or to report a failure (a slot of `f` done with one, or whose
 * write failed), so that it is this call's. Committed at every block, a
 * file written block after block (SQLite's sorter, which also reads back
 * between its writes) had one done slot each time, and each went out with
 * a write of its own, where jobs_commit_batch writes a run of them with
 * one; and the harvest of others' slots scanned every slot for each (issue
 * 49: ~1% of the spilling thread's samples with one worker, in oldest_job
 * and jobs_harvest). Half the window still leaves the workers the other
 * half to pack while these wait.
 */
static int jobs_due(bf_file *f)
{
    bf_space *sp = f->seg.space;
    bf_workers *w = sp->workers;
    if (w == NULL || sp->njobs[0] == 0)
        return 0;
    return sp->njobs[0] + sp->njobs[1] >= bf_workers_window(w, f->block_size) / 2 ||
           bf_workers_bad(w, f) != 0;
}

static int jobs_poll(bf_file *f)
{
    bf_space *sp = f->seg.space;
    if (!jobs_due(f))
        return BF_OK;
    int rc = jobs_settle(f, 0);
    if (rc == BF_OK)
        jobs_harvest(sp, f);
    return rc;
}

/*
 * Wait for `f`'s slots of blocks `first`.. `last` and free them uncommitted
 * (blocks gone): blocks to store and blocks unpacked ahead alike.
 */
static void jobs_drop(bf_file *f, uint64_t first, uint64_t last)
{
    bf_workers *w = f->seg.space->workers;
    if (w == NULL || f->seg.space->njobs[0] + f->seg.space->njobs[1] == 0)
        return;
    /* Each is cancelled first, so that neither a worker nor this thread (helping in the wait
       below, bf_workers_wait packs the queued slots ahead of the one it waits for) packs
       blocks no one will read: SQLite's VACUUM closes its transient database with blocks
       queued (up to 227 a run at 2M rows), and each was packed on the caller to be thrown
       away (issue 49). */
    for (int reads = 0; reads < 2; reads++)
        for (bf_job *j = reads ? bf_workers_reads(w) : oldest_job(f); j != NULL;
             j = bf_workers_next(w, j))
            if (j->owner == f && j->blkno >= first && j->blkno <= last)
                bf_workers_cancel(w, j);
    for (int reads = 0; reads < 2; reads++) {
        bf_job *next;
        for (bf_job *j = reads ? bf_workers_reads(w) : oldest_job(f); j != NULL; j = next) {
            next = bf_workers_next(w, j); /* another slot: still linked once j is freed */
            if (j->owner == f && j->blkno >= first && j->blkno <= last) {
                f->seg.space->ra_misses += read_job(j);
                bf_workers_wait(w, j);
                job_free(w, j);
            }
        }
    }
}

/*
 * A free slot among the first `window`: committing what is done, waiting
 * for a worker if need be; NULL if none can be. A block to store goes
 * before a block unpacked ahead: a done one gives its slot up (reads never
 * starve writes).
 */
static bf_job *job_slot(bf_space *sp, uint32_t window)
{
    bf_workers *w = sp->workers;
    for (int harvested = 0;; harvested = 1) {
        bf_job *free = bf_workers_free_slot(w, window);
        if (free != NULL)
            return free;
        for (bf_job *j = bf_workers_reads(w); j != NULL; j = bf_workers_next(w, j)) {
            if ((uint32_t)(j - bf_workers_slot(w, 0)) < window &&
                bf_workers_state(w, j) == BF_JOB_DONE) {
                sp->ra_misses++;
                job_free(w, j);
                return j;
            }
        }
        if (harvested && !bf_workers_wait_any(w))
            return NULL; /* every slot holds a failed block: the caller stores on its thread */
        jobs_harvest(sp, NULL);
    }
}

/* Whether `f`'s next block (codec=auto's choice made) is packed on the caller's thread even
   with workers: stored raw and unsealed, it costs less than its handoff (job_store). */
static inline int caller_packs(const bf_file *f)
{
    return f->codec == BF_CODEC_NONE && !f->sealed;
}

/*
 * Hand block `blkno` of `f` (`raw_len` bytes at `data`, codec=auto's
 * choice made) to a worker: BF_OK when it was, 1 when it must be stored on
 * this thread (an unsealed block of codec none, a caller's codec, no slot,
 * no thread), or a
 * failure to get the slot's buffers or codec context (BF_ENOMEM).
 * `swap`, if not NULL, is where `data` is held (the file's buffer, about to
 * be refilled): the slot's block buffer is exchanged with it instead of
 * copied when both are a block long (issue 49: the copy was ~7% of the
 * library's CPU on the spilling thread with one worker).
 */
static int job_store(bf_file *f, uint64_t blkno, const void *data, uint32_t raw_len,
                     unsigned char **swap)
{
    bf_space *sp = f->seg.space;
    /* A block stored raw and unsealed (codec none, or auto's choice of none) is only a
       CRC-32C: packed here it costs the caller no more than without workers, less than the
       handoff and the commit in order (issue 49: `none` with a worker took 1.10x the wall of
       `none`, its worker computing just the CRC). */
    if (caller_packs(f))
        return 1;
    /* A caller's codec is the space's, one call at a time (a slot seals with a clone of the
       space's sealer). zstd and zlib allocate inside their compress calls: with the caller's
       allocator hooks (a memory context, not made for other threads) they stay on the
       caller's thread, so the hooks are never called from a worker. */
    if (bf_codec_is_user(f->codec))
        return 1;
    if ((f->codec == BF_CODEC_ZSTD || f->codec == BF_CODEC_ZLIB) &&
        sp->alloc.malloc_fn != bf_default_allocator.malloc_fn)
        return 1;
    uint32_t window = bf_workers_window(sp->workers, f->block_size);
    bf_job *j = job_slot(sp, window);
    if (j == NULL)
        return 1;
    const bf_codec_ops *ops = bf_space_codec_ops(sp, (bf_codec)f->codec);
    int rc = bf_space_grow(sp, &j->data, &j->data_size, f->block_size, "write",
                           "a worker's block slot");
    if (rc == BF_OK)
        rc = bf_space_grow(sp, &j->out, &j->out_size, bf_space_extent_room(sp, f->block_size),
                           "write", "a worker's extent slot");
    if (rc == BF_OK && j->ctxs[f->codec] == NULL &&
        (rc = ops->ctx_create(&sp->alloc, &j->ctxs[f->codec])) != BF_OK)
        rc = bf_fail(sp, rc, "write", NULL, 0, "%s context of a worker's slot", ops->name);
    if (rc == BF_OK && f->sealed && j->seal == NULL) {
        char why[128];
        if ((rc = bf_seal_clone(&sp->alloc, sp->seal, &j->seal, why, sizeof(why))) != BF_OK)
            rc = bf_fail(sp, rc, "write", NULL, 0, "a worker's sealer: %s", why);
    }
    if (rc != BF_OK)
        return rc;
    j->sealed = f->sealed;
    if (f->sealed)
        file_identity(f, 0, j->id);
    int swapped = swap != NULL && *swap == data && j->data_size == f->block_size;
    if (swapped) {
        unsigned char *mine = j->data; /* a free slot's: no worker holds it */
        j->data = *swap;
        *swap = mine;
    } else {
        memcpy(j->data, data, raw_len);
    }
    j->ops = ops;
    j->ctx = j->ctxs[f->codec];
    j->level = f->level;
    j->gen = f->named != NULL ? f->named->gen : 0;
    j->blkno = blkno;
    j->raw_len = raw_len;
    j->task = NULL; /* pack it */
    j->pin = NULL;
    j->fault = bf_workers_next_fault(sp->workers);
    j->reported = j->noted = j->stuck = 0;
    j->rc = BF_OK;
    job_own(f, j);
    if (bf_workers_submit(sp->workers, j, window) != BF_OK) {
        if (swapped) { /* nothing published: the buffer goes back */
            unsigned char *mine = *swap;
            *swap = j->data;
            j->data = mine;
        }
        job_disown(sp->workers, j);
        return 1;
    }
    return BF_OK;
}

/*
 * Store block `blkno` of `f`: on a worker when the space has them and the
 * file allows it, else here, after the file's blocks already handed over
 * (a later copy of a block must not be overwritten by an earlier one).
 * `swap`: job_store's (the buffer may come back another of the same size,
 * its bytes not the block's).
 */
static int block_store_bounded(bf_file *f, uint64_t blkno, const void *data, uint32_t raw_len,
                               uint32_t bound, unsigned char **swap)
{
    bf_space *sp = f->seg.space;
    if (sp->workers == NULL)
        return block_store_now(f, blkno, data, raw_len, 1, bound);
    if (f->fauto.on)
        bf_auto_file_prepare(sp, &f->fauto, &f->codec, &f->level, data, raw_len);
    /* A bounded block is packed here: the choice between its extent and a bare block is made
       when it is packed. */
    int rc = bound == 0 ? job_store(f, blkno, data, raw_len, swap) : 1;
    if (rc <= 0)
        return rc;
    /* Only this block's copies on workers must be committed before it (a later copy is not
       to be overwritten by an earlier one); the file's others stay in flight. Waiting for
       them all made the caller pack the queued ones itself (bf_workers_wait), which with a
       window that holds a burst was most of a sorter run each time SQLite flushed a run's
       short last block (issue 49). What is done is committed, and a failure reported, as
       at any store (jobs_due). */
    if ((rc = jobs_due(f) ? jobs_settle(f, 0) : BF_OK) != BF_OK ||
        (rc = jobs_settle_block(f, blkno)) != BF_OK)
        return rc;
    return block_store_now(f, blkno, data, raw_len, 0, bound);
}

static int block_store(bf_file *f, uint64_t blkno, const void *data, uint32_t raw_len,
                       unsigned char **swap)
{
    return block_store_bounded(f, blkno, data, raw_len, 0, swap);
}

int bf_file_settle(bf_file *f)
{
    return jobs_settle(f, 1);
}

/* At most this many blocks, and this many bytes, go into one batched write. */
#define BATCH_BLOCKS 32u
#define BATCH_BYTES (256u * 1024u)

/*
 * Store up to `n` whole blocks from the caller's memory as consecutive
 * extents at the physical end with one pwritev: a sequential spill written
 * in large chunks costs one system call per chunk, not one per block.
 * Returns the number of blocks stored, 0 when the batch does not apply
 * (free space to reuse, a segment or temp-limit boundary near: the caller
 * stores one block the ordinary way), or a negative status. All or none
 * of the batch is committed, so a failure loses nothing acknowledged.
 */
static int blocks_store_batch(bf_file *f, uint64_t blkno, const unsigned char *data, uint32_t n)
{
    bf_space *sp = f->seg.space;
    uint32_t bs = f->block_size;
    if (n > BATCH_BLOCKS)
        n = BATCH_BLOCKS;
    if ((uint64_t)n * bs > BATCH_BYTES)
        n = BATCH_BYTES / bs;
    /* Free space that could hold a block is reused first, one block at a time; smaller
       chunks (the pages' tails a batch skipped, below) serve compressed extents. */
    if (n < 2 || (f->free.n != 0 && f->free.c[f->free.n - 1].cap >= bs))
        return 0;
    uint32_t old_n;
    int rc = bf_space_reserve_scratch(sp, (size_t)n * bf_space_extent_room(sp, bs));
    if (rc == BF_OK)
        rc = map_room(f, blkno, n, &old_n, NULL);
    if (rc != BF_OK)
        return rc;
    static const unsigned char zeros[BF_BARE_ALIGN_MAX];
    struct iovec iov[2 * BATCH_BLOCKS];
    bf_extent_info info[BATCH_BLOCKS];
    uint64_t at[BATCH_BLOCKS];
    int iovcnt = 0;
    size_t used = 0;
    uint64_t off = f->phys_end, end = off;
    uint32_t laid = 0;
    for (uint32_t i = 0; i < n && rc == BF_OK; i++) {
        int cnt;
        rc = block_pack(f, blkno + i, data + (size_t)i * bs, bs, sp->scratch + used, iov + iovcnt,
                        &cnt, &info[i], 1);
        if (rc != BF_OK)
            break;
        /* A bare block after a compressed extent starts at its alignment: the bytes
           skipped are written as zeros (the batch stays one contiguous write) and become
           free space for later compressed extents. At the batch's start that would leave
           a hole in front of the write: the block goes the ordinary way (block_store). */
        uint64_t o = seg_align_up(sp, end, bare_align(&info[i]));
        if (o != end && i == 0)
            break;
        if (o != end) {
            iov[iovcnt + cnt] = iov[iovcnt]; /* cnt is 1 for a bare block */
            iov[iovcnt].iov_base = (void *)zeros;
            iov[iovcnt].iov_len = (size_t)(o - end);
            iovcnt++;
        }
        at[i] = o;
        end = o + info[i].disk_len;
        used += info[i].bare ? 0 : info[i].disk_len;
        iovcnt += cnt;
        laid = i + 1;
    }
    uint32_t asked = n;
    n = laid;
    uint64_t total = end - off;
    uint64_t seg_end = (bf_space_segno(sp, off) + 1) * sp->segment_size;
    int fits = n >= 1 && off + total <= seg_end &&
               !(f->counted && sp->temp_limit != 0 && sp->physical_now + total > sp->temp_limit);
    /* A batch the budget has no room for is stored block by block, which says why. */
    if (rc == BF_OK && fits && f->counted && sp->budget != NULL &&
        bf_budget_reserve(sp, total, "write", NULL) != BF_OK)
        fits = 0;
    if (rc == BF_OK && fits)
        rc = bf_seg_write(&f->seg, off, iov, iovcnt, total);
    if (rc != BF_OK && fits)
        cut_back(f); /* best effort: what a short write left */
    if (rc != BF_OK || !fits) {
        map_unroom(f, blkno, asked, old_n);
        bf_budget_sync(sp); /* what the budget reserved for it */
        return rc; /* 0 when the batch does not apply after all */
    }
    physical_set(f, end);
    for (uint32_t i = 0; i < n; i++) {
        block_commit(f, blkno + i, bf_map_get(&f->map, blkno + i), at[i], info[i].disk_len,
                     &info[i], info[i].disk_len);
        uint64_t prev_end = i == 0 ? at[0] : at[i - 1] + info[i - 1].disk_len;
        if (at[i] > prev_end) { /* written as zeros: clean */
            bf_free_put_clean(&f->free, bf_file_alloc(f), sp->segment_size, prev_end,
                              (uint32_t)(at[i] - prev_end));
            COUNT(f, physical_written, at[i] - prev_end);
        }
    }
    for (uint64_t b = blkno + n; b < blkno + asked; b++) /* room the batch did not fill */
        if (!bf_map_used(bf_map_get(&f->map, b)))
            bf_map_clear(&f->map, bf_file_alloc(f), b);
    return (int)n;
}

/*
 * A load through the stream API of block `blkno` of `f`: which of the
 * space's passes it continues (the block after a pass's last), moved to the
 * front; or a new pass, in front, the least recently continued one
 * dropped. Sets seq_front (it continued the most recent pass: what the
 * read-ahead buffer serves) and seq_any (it continued one); the pass's
 * length, that load included, is then streams[0].run.
 * A block-API load (sort tapes of the block calls) is not a pass's.
 */
static void stream_note(bf_space *sp, const bf_file *f, uint64_t blkno)
{
    struct bf_stream *s = sp->streams;
    int i = 0;
    while (i < BF_STREAMS && !(s[i].file == f && s[i].next == blkno))
        i++;
    sp->seq_front = i == 0;
    sp->seq_any = i < BF_STREAMS;
    /* The run counts loads in a row (extent_fetch's window grows with it, and a merge's turn
       to another run starts it again, as with one pass). */
    struct bf_stream e = {f, (uint32_t)(blkno + 1), i == 0 ? s[0].run + 1 : 1,
                          i < BF_STREAMS && s[i].ahead > blkno ? s[i].ahead : (uint32_t)blkno};
    if (i == BF_STREAMS)
        i = BF_STREAMS - 1;
    memmove(s + 1, s, (size_t)i * sizeof(*s));
    s[0] = e;
}

/*
 * Where the read-ahead buffer's window from block `blkno`'s extent (`len`
 * bytes at `off`) ends: over the following blocks' extents up to block
 * `last`, as long as they are physically near and the gaps small.
 */
static uint64_t ahead_end(const bf_file *f, uint64_t blkno, uint64_t off, uint32_t len,
                          uint64_t last)
{
    const bf_space *sp = f->seg.space;
    uint64_t end = off + len;
    uint64_t seg_end = (bf_space_segno(sp, off) + 1) * sp->segment_size;
    bf_map_entry here, next, *e = &next;
    bf_map_read(&f->map, blkno, &here); /* by value: the caller may hold blkno's entry */
    uint32_t part = bf_map_part(&here);
    uint64_t gaps = 0; /* bytes in the window that are not the stream's next extents */
    for (uint64_t b = blkno + 1; b <= last && b < f->map.n; b++) {
        if (!bf_map_read(&f->map, b, &next))
            break;
        uint64_t eoff = bf_map_off(e);
        uint64_t eend = eoff + bf_map_len(e);
        /* A gap is another block's extent or free space. Small gaps are read through,
           but no more of them than of the stream's own extents: files whose blocks
           were written interleaved with others' (logtape.c's tapes) have small
           extents a gap apart, and reading them ahead would read mostly the others. */
        if (bf_map_part(e) != part || eoff < end || eoff - end > 4096 || eend > seg_end ||
            eend - off > BF_READAHEAD || 2 * (gaps + eoff - end) > eend - off)
            break;
        gaps += eoff - end;
        end = eend;
    }
    return end;
}

/*
 * Find the bytes of the extent of block `blkno` (`len` bytes at `off` of
 * `seg`): in the read-ahead buffer if it holds them; else, when the stream
 * API (`stream`) reads the file block after block (the load continued the
 * most recent pass: stream_note) and the following extents are physically
 * contiguous, read them all with one pread into the read-ahead buffer;
 * else read just this extent into `into` (the scratch buffer; a bare
 * block's destination, which then needs no copy). Passes read in turn
 * (a merge of runs of one file) share the one buffer, so they do not read
 * ahead here: each would drop the others' window (without workers every
 * window read but one extent would be lost); with workers, ra_ahead reads
 * their next extents for the workers. Block-API readers (sort tapes) jump
 * between tapes and never read ahead.
 */
static int extent_fetch(bf_file *f, uint64_t blkno, int stream, bf_seg *seg, uint64_t off,
                        uint32_t len, unsigned char *into, const unsigned char **ext)
{
    bf_space *sp = f->seg.space;
    int sequential = stream && sp->seq_front;
    if (!sequential)
        bf_seg_forget_ahead(sp); /* read-ahead serves one sequential pass, nothing else */
    const unsigned char *held = bf_seg_cached(seg, off, len);
    if (held != NULL) {
        *ext = held;
        return BF_OK;
    }
    /* The window grows with the pass: at most half as many blocks ahead as the pass has
       read. A reader that leaves after k blocks (a merge turning to its next tape, which
       drops the window) has then been read at most k / 2 blocks it did not ask for;
       a fixed 256 KiB window cost it up to 3 times its bytes on sorts compressed tenfold. */
    uint64_t end =
        sequential ? ahead_end(f, blkno, off, len, blkno + sp->streams[0].run / 2) : off + len;
    /* Any failure of the larger read falls back to this extent alone, so a problem further
       on is reported for the block that has it. */
    if (end > off + len && bf_seg_read_ahead(seg, off, end, &held) == BF_OK) {
        COUNT(f, physical_read, end - off);
        *ext = held;
        return BF_OK;
    }
    int rc = bf_seg_read(seg, off, into, len);
    if (rc == BF_OK)
        COUNT(f, physical_read, len);
    *ext = into;
    return rc;
}

/* ---- blocks unpacked ahead by the space's workers (readahead.c) -------- */

/*
 * A pass of the stream API over a file (block b loaded right after block
 * b - 1, through the buffer or straight into the caller's memory; several
 * passes over one file or several at once, read in turn: the space's
 * streams, stream_note) hands the blocks after b to workers, which check
 * and unpack them into their slots while the caller reads on; the load of
 * b + 1 then takes it from its slot. Bounds: a pass keeps RA_DEPTH blocks
 * ahead and refills to twice that when fewer are in flight (the refill's
 * extents read with one pread, its slots woken for with one wake), at most
 * half the slots in the space, only free slots (a read never waits for
 * one), and a block to store takes back a done one (job_slot): reads never
 * starve writes. The slots' buffers are the memory; nothing else is
 * allocated but, for a sealed file, a slot's extent buffer grown to hold
 * the opened payload after the extent. Only blocks whose unpacking costs
 * more than the handoff go: not bare blocks or raw extents (ra_submit says
 * why).
 *
 * Where the bytes come from. Extents in the space's read-ahead buffer
 * (bf_seg_cached) are copied from there into the slot. Others the worker
 * reads itself, with one pread of the extent on the segment's descriptor
 * (ra_worker_reads), where the space's I/O is plain POSIX (no hook, fault
 * injector or throttle of the caller is ever called from a worker) and the
 * space runs its own threads: the pread, its copy out of the page cache and
 * the extent's bytes then stay off the caller's thread (issue 49: SQLite's
 * CREATE INDEX with lz4 and one worker, 0.953 of the wall of the caller
 * reading the refill's extents and copying each into its slot;
 * docs/results/workers.md "The worker reads what it unpacks"). The
 * descriptor is pinned (bf_seg_pin) until the job is done, so the
 * descriptor cache cannot close it under the read (bf_seg_close waits; with
 * every pin held, the refill stops and the pass loads its blocks itself). A
 * read racing a write of the same bytes is possible only for an extent
 * freed since, that is for a block stored again, whose job is stale and
 * never taken; torn bytes fail the check like any others. Otherwise (a
 * space with I/O hooks, a runner, a file of the caller's codecs or of
 * codec=auto) the caller reads the refill's extents into the buffer with
 * one pread (ahead_end's window), the pread the loads of those blocks would
 * have made one at a time, and copies each into its slot.
 *
 * Why a block taken is the block. A job records the map entry it was read
 * for; it is taken only if the block's entry is still that one and the
 * block was not stored since: block_commit, the only place a used entry
 * is replaced, marks the block's jobs stale (ra_stale), and truncate and
 * discard drop them (jobs_drop). The entry alone would not do: a block
 * stored twice may land where its first old extent was, with its length.
 * The window's bytes themselves are current: a write over them drops the
 * window (segment.c).
 *
 * Failures. A job that failed (a corrupt extent, an injected fault) is
 * thrown away and the block loaded on the caller's thread as without
 * workers, which meets the same problem and reports it, with the same
 * message, at the read of that block: not earlier, not lost. Work that is
 * only a guess, the refill's pread included, is never reported by itself.
 */
enum { RA_DEPTH = 4 };

/*
 * Whether a block whose unpacking costs about what handing it over costs
 * (unsealed lz4) goes to the workers now: only while the reads find the
 * blocks ahead done. The handoff saves the caller's thread the codec only
 * if the worker is ahead; a read that reaches a block not done yet spins
 * for it or unpacks the queue's head itself (bf_workers_wait), paying the
 * handoff and the codec. Caller-thread CPU per 4 KiB lz4 block read
 * (docs/results/sqlite.md "Blocks unpacked ahead for interleaved passes"):
 * a merge of 16 runs with no other work per block, base 2,027 ns -> 1,559
 * ns with every lz4 block handed over; but one pass or 4 runs with no work
 * per block outran the worker, 1,296 -> 1,471 and 1,982 -> 2,443 ns. Each
 * late block adds RA_LATE_STEP, each load of a pass takes one off; cheap
 * codecs go while the sum is under RA_LATE_MAX / 2 (about one late block
 * in RA_LATE_STEP loads at most), so such a reader soon unpacks on its own
 * thread again and probes now and then.
 */
enum { RA_LATE_STEP = 8, RA_LATE_MAX = 64 };
static inline int ra_cheap(const bf_space *sp)
{
    return sp->ra_late < RA_LATE_MAX / 2;
}

/* A slot's buffer of at least `need` bytes, or -1: best effort, so not reported. */
static int ra_grow(bf_space *sp, unsigned char **buf, size_t *size, size_t need)
{
    if (*size >= need)
        return 0;
    unsigned char *p = bf_realloc(&sp->alloc, *buf, need);
    if (p == NULL)
        return -1;
    *buf = p;
    *size = need;
    return 0;
}

/*
 * Whether a worker may read the extent at physical `off` of `seg` itself
 * (see "Where the bytes come from" above): the space's I/O is plain POSIX,
 * its workers are its own threads, the descriptor is open on that segment,
 * and the file's one codec is a built-in one, which names the extent's
 * (the caller sees no header first). Not codec=auto's files, whose blocks
 * may be of several codecs: a wrong guess would fail the worker's check
 * and cost the block's work (XXX: they keep the copy path).
 */
static int ra_worker_reads(const bf_file *f, const bf_seg *seg, uint64_t off)
{
    const bf_space *sp = f->seg.space;
    return !f->fauto.on && sp->ios.io.pread == bf_posix_io.pread &&
           bf_workers_own_threads(sp->workers) &&
           (f->codec == BF_CODEC_LZ4 || f->codec == BF_CODEC_ZSTD || f->codec == BF_CODEC_ZLIB) &&
           seg->fd >= 0 && seg->segno == bf_space_segno(sp, off);
}

/* Whether block `blkno` of `f` has a copy in a slot (unpacked ahead, or to store). */
static inline int ra_covered(bf_file *f, uint64_t blkno)
{
    return ra_find(f, blkno) != NULL || newest_job(f, blkno) != NULL;
}

/*
 * The read slots are all taken: free the done ones no pass will take (of a
 * block that is no pass's next RA_DEPTH * 2: passes that ended, a merge's
 * runs read to their end, or that the stream table dropped). 1 if it freed
 * one. A scan of the read slots, only when they are all taken.
 */
static int ra_reclaim(bf_space *sp)
{
    bf_workers *w = sp->workers;
    int freed = 0;
    bf_job *next;
    for (bf_job *j = bf_workers_reads(w); j != NULL; j = next) {
        next = bf_workers_next(w, j);
        if (bf_workers_state(w, j) != BF_JOB_DONE)
            continue;
        int wanted = 0;
        for (int i = 0; i < BF_STREAMS && !wanted; i++)
            wanted = sp->streams[i].file == j->owner && j->blkno >= sp->streams[i].next &&
                     j->blkno < (uint64_t)sp->streams[i].next + 2 * RA_DEPTH;
        if (!wanted) {
            sp->ra_misses++;
            job_free(w, j);
            freed = 1;
        }
    }
    return freed;
}

/*
 * Hand block `blkno` of `f` to a worker to unpack, if it is worth it and
 * can be done without waiting: its extent in the read-ahead buffer (read
 * there first, up to block `last`'s, if `fetch` and it is not), of a
 * built-in codec the slot may run, a free slot within the bounds. No worker
 * is woken (the caller does, bf_workers_wake). Nothing is reported: a
 * block not handed over is loaded as usual. 1 if it was handed over; 0 if
 * not, -1 when no later block of the refill would be either.
 */
static int ra_submit(bf_file *f, uint64_t blkno, uint64_t last, int fetch)
{
    bf_space *sp = f->seg.space;
    bf_workers *w = sp->workers;
    /* A block with a copy on a worker to store: its map entry is not the block (block_load
       takes it from that slot). */
    if (blkno >= f->map.n)
        return -1;
    if (ra_covered(f, blkno))
        return 0;
    const bf_map_entry *e = bf_map_get(&f->map, blkno);
    if (!bf_map_used(e) || bf_map_bare(e)) /* a bare block is a pread and a CRC: no work */
        return 0;
    uint32_t len = bf_map_len(e), gen;
    uint64_t delta;
    bf_seg *seg = part_seg(f, bf_map_part(e), &delta, &gen);
    if (len < BF_EXTENT_HDR || len > bf_space_extent_room(sp, f->block_size))
        return 0;
    /* The slots this block size may use (their buffers stay bounded: bf_workers_window). */
    uint32_t window = bf_workers_window(w, f->block_size);
    if (sp->njobs[1] >= window / 2 && !ra_reclaim(sp))
        return -1;
    uint64_t off = bf_map_off(e);
    int map_raw = (e->len & BF_MAP_RAW) != 0;
    const unsigned char *ext = bf_seg_cached(seg, off, len);
    int by_worker = ext == NULL && ra_worker_reads(f, seg, off);
    if (ext == NULL && !by_worker && fetch) {
        uint64_t end = ahead_end(f, blkno, off, len, last);
        if (bf_seg_read_ahead(seg, off, end, &ext) == BF_OK)
            COUNT(f, physical_read, end - off);
        else
            ext = NULL;
    }
    if (ext == NULL && !by_worker)
        return -1;
    /* The codec the header names (checked again on the worker, with the CRC), or for an
       extent the worker reads, the map's raw flag and the file's codec. Caller codecs are the
       space's, one call at a time; zstd and zlib allocate as they decompress, so with the
       caller's allocator hooks they stay on this thread (as for packing: job_store). */
    int raw = by_worker ? map_raw : (ext[5] & BF_EXTENT_FLAG_RAW) != 0;
    bf_codec codec = by_worker ? (bf_codec)f->codec : (bf_codec)ext[4];
    const bf_codec_ops *ops = NULL;
    /* Only unpacking that costs more than handing it over. A raw extent is a copy and a CRC:
       the copy into the slot and out of it cost the caller as much. Unsealed lz4 goes since
       the handoff is paid per refill, not per block (issue 49, docs/results/sqlite.md "Blocks
       unpacked ahead for interleaved passes"): one pread for the refill's extents, the ones
       a load would have made anyway, and one wake; per block the caller copies the extent
       in and the block out (~4 KiB to 8 KiB each) and does two hash lookups, where lz4
       decompressing a 4 KiB page cost it ~2 us. A sealed extent (AES-GCM) is opened ahead
       whatever its codec. */
    if (raw && !f->sealed)
        return 0;
    if (!f->sealed && codec == BF_CODEC_LZ4 && !ra_cheap(sp))
        return 0;
    if (!raw) {
        if (codec >= BF_JOB_CODECS || (ops = bf_space_codec_ops(sp, codec)) == NULL)
            return 0;
        if ((codec == BF_CODEC_ZSTD || codec == BF_CODEC_ZLIB) &&
            sp->alloc.malloc_fn != bf_default_allocator.malloc_fn)
            return 0;
    }
    bf_job *j = bf_workers_free_slot(w, window);
    if (j == NULL)
        return -1;
    if (ra_grow(sp, &j->data, &j->data_size, f->block_size) != 0 ||
        ra_grow(sp, &j->out, &j->out_size, (size_t)len * (f->sealed ? 2 : 1)) != 0)
        return -1;
    if (ops != NULL && j->ctxs[codec] == NULL &&
        ops->ctx_create(&sp->alloc, &j->ctxs[codec]) != BF_OK)
        return -1;
    if (f->sealed && j->seal == NULL) {
        char why[128];
        if (bf_seal_clone(&sp->alloc, sp->seal, &j->seal, why, sizeof(why)) != BF_OK)
            return -1;
    }
    if (by_worker && (j->pin = bf_seg_pin(seg)) != NULL) { /* lowered by job_finish */
        j->rd.fd = seg->fd;
        j->rd.at = bf_space_segoff(sp, off);
    } else if (by_worker) {
        return -1; /* every pin is held: the caller reads this pass's next extents */
    } else {
        j->rd.fd = -1;
        j->pin = NULL;
        memcpy(j->out, ext, len);
    }
    j->rd.got = 0;
    j->task = bf_readahead_unpack;
    j->ops = ops;
    j->ctx = ops != NULL ? j->ctxs[codec] : NULL;
    j->gen = gen;
    j->blkno = blkno;
    j->sealed = f->sealed;
    if (f->sealed)
        file_identity(f, bf_map_part(e), j->id);
    j->rd.expect_blkno = blkno - delta;
    j->rd.ext_len = len;
    j->rd.block_size = f->block_size;
    j->rd.map_raw = (uint8_t)map_raw;
    j->rd.stale = 0;
    j->rd.map_off = e->off;
    j->rd.map_len = e->len;
    j->rd.map_cap = e->cap;
    j->fault = bf_workers_next_fault(w);
    j->reported = j->noted = j->stuck = 0;
    j->rc = BF_OK;
    job_own(f, j);
    /* A window no submission reaches: the refill wakes a worker once, at its end. */
    if (bf_workers_submit(w, j, UINT32_MAX) != BF_OK) {
        if (j->pin != NULL) {
            atomic_fetch_sub(j->pin, 1);
            j->pin = NULL;
        }
        job_disown(w, j);
        return -1;
    }
    return 1;
}

/*
 * Block `blkno` was just loaded by a pass: when fewer than RA_DEPTH blocks
 * after it are in flight, refill up to 2 * RA_DEPTH ahead: the first
 * block not in flight and those after it, their extents read with one
 * pread if the read-ahead buffer does not hold them, one wake for all.
 */
static void ra_ahead(bf_file *f, uint64_t blkno)
{
    /* The pass is the space's front stream (stream_note); `ahead` says how far it was handed
       over, so a load with enough in flight costs no lookup of the blocks ahead. */
    bf_space *sp = f->seg.space;
    struct bf_stream *s = &sp->streams[0];
    if (sp->ra_late > 0)
        sp->ra_late--;
    /* No pread ahead for a refill of blocks that would not go (ra_submit checks each). */
    if (s->ahead >= blkno + RA_DEPTH || (!f->sealed && f->codec == BF_CODEC_LZ4 && !ra_cheap(sp)))
        return;
    uint64_t b = s->ahead > blkno ? (uint64_t)s->ahead + 1 : blkno + 1;
    uint64_t last = blkno + 2 * RA_DEPTH;
    int any = 0, fetch = 1;
    for (; b <= last; b++) {
        int r = ra_submit(f, b, last, fetch);
        if (r < 0)
            break;
        any |= r;
        fetch &= !r; /* the refill's extents are in the buffer now */
    }
    s->ahead = (uint32_t)(b - 1);
    if (any)
        bf_workers_wake(sp->workers);
}

/*
 * Take block `blkno` of `f` into `dst` from its slot, if a worker unpacked
 * it and it is still the block: 1, counted as the load would have been;
 * else 0 (the slot, if any, is freed: the caller loads the block itself).
 */
static int ra_take(bf_file *f, uint64_t blkno, unsigned char *dst)
{
    bf_space *sp = f->seg.space;
    bf_workers *w = sp->workers;
    bf_job *j = ra_find(f, blkno);
    if (j == NULL)
        return 0;
    int state = bf_workers_state(w, j);
    if (state != BF_JOB_DONE && sp->ra_late < RA_LATE_MAX)
        sp->ra_late += RA_LATE_STEP;
    if (state == BF_JOB_QUEUED && sp->njobs[0] > 0 && !j->sealed && j->ops != NULL &&
        j->ops->id == BF_CODEC_LZ4) {
        /* A cheap block not started, with blocks to store in flight: waiting would make this
           thread run the ring's queued slots up to it (bf_workers_wait), blocks to store
           included, which SQLite's merge queues ahead of its reads (issue 49: its thread's
           lz4 compression 95 -> 316 samples of ~8,000 in an ORDER BY), where loading it
           costs one lz4 call. So it is loaded here; the slot is cancelled and never taken
           (stale), freed once done (ra_reclaim, jobs_drop). With only reads queued, the
           ones ahead of it are blocks the passes will take: helping unpacks them (a merge
           of 16 runs, no writes: cancelling cost the caller 1,664 -> 2,311 ns a block).
           Dearer blocks are waited for: the worker may be on them. */
        bf_workers_cancel(w, j);
        j->rd.stale = 1;
        return 0;
    }
    bf_workers_wait(w, j);
    const bf_map_entry *e = blkno < f->map.n ? bf_map_get(&f->map, blkno) : NULL;
    int ok = j->rc == BF_OK && !j->rd.stale && e != NULL && e->off == j->rd.map_off &&
             e->len == j->rd.map_len && e->cap == j->rd.map_cap;
    if (ok) {
        memcpy(dst, j->data, f->block_size);
        const bf_extent_info *info = &j->info;
        if (!info->raw) {
            COUNT(f, decompress_ns, j->rd.codec_ns);
            bf_auto_file_unpacked(sp, info->codec, info->raw_len, j->rd.codec_ns);
        }
        COUNT(f, blocks_read, 1);
        bf_space_note_blocks(sp, BF_IO_READ, 1);
        bf_auto_file_loaded(sp, info->raw_len, j->rd.codec_ns);
    }
    if (ok)
        sp->ra_hits++;
    else
        sp->ra_misses++;
    job_free(w, j);
    return ok;
}

/* The name of the space's caller codec `id` (NULL if it has none): what its extents bind. */
static const char *space_codec_name(const void *sp, bf_codec id)
{
    return bf_space_codec_name(sp, id);
}

/* block_load without what workers add to it. */
static int block_load_here(bf_file *f, uint64_t blkno, int stream, unsigned char *dst)
{
    bf_space *sp = f->seg.space;
    const bf_map_entry *found = bf_map_get(&f->map, blkno);
    if (!bf_map_used(found)) {
        memset(dst, 0, f->block_size);
        return BF_OK;
    }
    /* A copy: the read-ahead below looks up the blocks after this one, and a run leaf's
       lookups share one copy of an entry (blockmap.h). */
    const bf_map_entry entry = *found, *e = &entry;
    uint32_t len = bf_map_len(e), gen;
    uint64_t delta;
    bf_seg *seg = part_seg(f, bf_map_part(e), &delta, &gen);
    uint64_t off = bf_map_off(e);
    const unsigned char *ext = NULL;
    const char *why = NULL;
    char path[4096];
    if (bf_map_bare(e)) {
        /* Checked where the bytes landed (in the window, they are checked each time served),
           before any reaches the caller. A sealed file has no bare blocks: one that does was
           altered by someone without the key. */
        if (len > f->block_size) { /* the index's checks keep this out; the map is memory */
            bf_seg_path(seg, (uint32_t)(off / sp->segment_size), path, sizeof(path));
            return bf_fail(sp, BF_ECORRUPT, "read", path, 0, "block %llu: raw length %u",
                           (unsigned long long)blkno, len);
        }
        int rc = extent_fetch(f, blkno, stream, seg, off, len, dst, &ext);
        if (rc != BF_OK)
            return rc;
        /* From the read-ahead window the check copies as it sums (one pass over the bytes,
           not two); what failed is in dst then, which a failed load hands to no one
           (buf_switch leaves the buffer holding no block; bf_file_read's buffer holds
           garbage on error, as after a pread into it). */
        if (f->sealed)
            rc = BF_ECORRUPT;
        else if (ext != dst)
            rc = bf_extent_check_bare_copy(dst, ext, len, blkno - delta, e->cap, &why);
        else
            rc = bf_extent_check_bare(ext, len, blkno - delta, e->cap, &why);
        if (f->sealed)
            why = "a raw block without a seal in a sealed file";
        if (rc != BF_OK) {
            bf_seg_path(seg, (uint32_t)(off / sp->segment_size), path, sizeof(path));
            return bf_fail(sp, rc, "read", path, 0, "block %llu at offset %llu: %s",
                           (unsigned long long)blkno,
                           (unsigned long long)(off % sp->segment_size), why);
        }
        memset(dst + len, 0, f->block_size - len);
        COUNT(f, blocks_read, 1);
        bf_space_note_blocks(sp, BF_IO_READ, 1);
        bf_auto_file_loaded(sp, len, 0);
        return BF_OK;
    }
    int rc = extent_fetch(f, blkno, stream, seg, off, len, sp->scratch, &ext);
    if (rc != BF_OK)
        return rc;
    bf_extent_info info;
    rc = bf_extent_check_names(ext, len, blkno - delta, gen, f->block_size, space_codec_name, sp,
                               &info, &why);
    if (rc == BF_OK)
        rc = bf_extent_expect(&info, (e->len & BF_MAP_RAW) != 0, f->sealed, &why);
    const bf_codec_ops *ops = NULL;
    void *ctx = NULL;
    if (rc == BF_OK && !info.raw && (ops = bf_space_codec_ops(sp, info.codec)) == NULL) {
        rc = bf_codec_is_user(info.codec) ? BF_ENOCODEC : BF_ECORRUPT;
        why = rc == BF_ENOCODEC ? "extent compressed with a caller's codec this space was not given"
                                : "extent compressed with a codec that is not built in";
    }
    if (rc == BF_OK && !info.raw && (rc = bf_space_codec_ctx(sp, info.codec, &ctx)) != BF_OK)
        return rc;
    unsigned char id[BF_FILE_ID_BYTES];
    bf_extent_seal seal = {sp->seal, id};
    if (rc == BF_OK && info.sealed) {
        file_identity(f, bf_map_part(e), id);
        if (!info.raw && (rc = bf_space_grow(sp, &sp->unsealed, &sp->unsealed_size,
                                             info.payload_len, "read",
                                             "buffer to open sealed extents")) != BF_OK)
            return rc;
    }
    uint64_t dt = 0;
    if (rc == BF_OK) {
        rc = bf_extent_unpack(ext, &info, ops, ctx, &seal, sp->unsealed, dst, &dt, &why);
        if (!info.raw) {
            COUNT(f, decompress_ns, dt);
            if (rc == BF_OK)
                bf_auto_file_unpacked(sp, info.codec, info.raw_len, dt);
        }
    }
    if (rc != BF_OK) {
        bf_seg_path(seg, (uint32_t)(off / sp->segment_size), path, sizeof(path));
        return bf_fail(sp, rc, "read", path, 0, "block %llu at offset %llu: %s",
                       (unsigned long long)blkno, (unsigned long long)(off % sp->segment_size),
                       why);
    }
    memset(dst + info.raw_len, 0, f->block_size - info.raw_len);
    COUNT(f, blocks_read, 1);
    bf_space_note_blocks(sp, BF_IO_READ, 1);
    bf_auto_file_loaded(sp, info.raw_len, dt);
    return BF_OK;
}

/*
 * Read block `blkno` into `dst` (block_size bytes; zeros for holes and past
 * the data). `stream`: a read through the stream API, which may read ahead:
 * with workers, a block unpacked ahead is taken from its slot, and a load
 * of the block after the one the stream loaded last (a sequential pass,
 * through the buffer or straight into the caller's memory) hands the next
 * ones over.
 */
static int block_load_any(bf_file *f, uint64_t blkno, int stream, unsigned char *dst)
{
    bf_space *sp = f->seg.space;
    if (sp->workers == NULL) /* nothing below but the load: no calls at every block */
        return block_load_here(f, blkno, stream, dst);
    /* A load waits for no block on a worker: the map is right for a block with no copy in
       flight, and one with a copy is taken from its slot (below); the stream reader hands to
       workers only blocks with no copy in flight (ra_submit). Waiting for the rest of the
       file's, a reader of one region while another is being written (SQLite's sorter merges
       from the file it writes) waited for the worker to pack them all, at every block
       (issue 49: ~110,000 waits of ~20 us spinning in a CREATE INDEX of 10M rows). Blocks
       read into the read-ahead buffer while a newer copy is on a worker are harmless: their
       loads take that copy, and its commit marks any job unpacked ahead stale (ra_stale) or
       the write over the window drops it. What is done is committed without waiting when
       jobs_due says so (half the window taken, or a failure to report: a worker's failure is
       still reported at the file's next load), several blocks with one write. */
    int rc = jobs_due(f) ? jobs_settle(f, 0) : BF_OK; /* a worker's failure: this call's */
    if (rc != BF_OK)
        return rc;
    /* A block whose newest copy is still on a worker is that copy: taken from its slot, with
       no wait for the worker and no packing here (issue 49: SQLite's sorter reads back the
       blocks of a run it just wrote; waiting for them made the caller pack the queued blocks
       ahead of them itself, bf_workers_wait). Its extent is committed later, as any. The
       map stays as it is: a rewrite of part of the block settles it first (bare_patch). */
    bf_job *mine = newest_job(f, blkno);
    if (mine == NULL && !stream)
        return block_load_here(f, blkno, stream, dst);
    if (mine != NULL) {
        memcpy(dst, mine->data, mine->raw_len);
        memset(dst + mine->raw_len, 0, f->block_size - mine->raw_len);
        if (!stream)
            return BF_OK;
    } else if (!ra_take(f, blkno, dst) && (rc = block_load_here(f, blkno, stream, dst)) != BF_OK) {
        return rc;
    }
    if (sp->seq_any)
        ra_ahead(f, blkno);
    return BF_OK;
}

/*
 * A load's status `rc`, and a block found damaged (BF_ECORRUPT) tells the space
 * that bytes changed under it: from then on no file of the space relies on
 * holes reading as zeros (holes_read_zero), so that blocks stored after
 * the damage was seen are written whole and read back whatever else the
 * damage touched (fuzz_segment: a segment file replaced, then blocks
 * rewritten into its free space). block_load: block_load_any, so noted.
 */
static int load_noted(bf_file *f, int rc)
{
    if (rc == BF_ECORRUPT)
        f->seg.space->holes_untrusted = 1;
    return rc;
}

static int block_load(bf_file *f, uint64_t blkno, int stream, unsigned char *dst)
{
    if (stream)
        stream_note(f->seg.space, f, blkno);
    return load_noted(f, block_load_any(f, blkno, stream, dst));
}

/* ---- the block buffer ------------------------------------------------- */

/* Bytes of block `blkno` below the logical size (what its extent stores). */
static uint32_t block_bytes(const bf_file *f, uint64_t blkno)
{
    uint64_t start = blkno << shift_of(f->block_size);
    if (start >= f->size)
        return 0;
    return f->size - start < f->block_size ? (uint32_t)(f->size - start) : f->block_size;
}

/*
 * Note that the buffer's bytes [off, off + n) changed (n >= 1), for bare_patch; and
 * whether bytes below the size changed (else the write only appended: bare_patch then
 * writes from where the extent ends, not from the start of the first unit).
 */
static inline void dirty_range(bf_file *f, uint32_t off, size_t n)
{
    unsigned shift = shift_of(f->block_size) - 8; /* a unit: 1/256 of the block */
    uint8_t lo = (uint8_t)(off >> shift), hi = (uint8_t)((off + n - 1) >> shift);
    if (lo < f->dlo)
        f->dlo = lo;
    if (hi > f->dhi)
        f->dhi = hi;
    if (((uint64_t)f->buf_blk << shift_of(f->block_size)) + off < f->size)
        f->dirty_old = 1;
}

static void range_clear(bf_file *f)
{
    f->dlo = UINT8_MAX;
    f->dhi = 0;
    f->dirty_old = 0;
}

/* The buffer's dirtied units as bytes [*lo, *hi) of its `n` bytes; 0 when none are known. */
static int dirty_bytes(const bf_file *f, uint32_t n, uint32_t *lo, uint32_t *hi)
{
    if (!f->buf_rmw || f->dlo > f->dhi)
        return 0;
    unsigned shift = shift_of(f->block_size) - 8;
    *lo = (uint32_t)f->dlo << shift;
    *hi = ((uint32_t)f->dhi + 1) << shift;
    if (*hi > n)
        *hi = n;
    return *lo < *hi;
}

/*
 * Whether a bare extent of `old` bytes at `off`, the last bytes of the
 * file, may grow to `n` where it is: it stays in its segment, a named
 * file's bare block of a page or more stays page-aligned (docs/format.md:
 * its index says so; an anonymous file's is read where it is, straddling
 * pages, rather than written again elsewhere), and the temp limit and the
 * budget have room for the bytes it adds (else the ordinary way decides,
 * which may find free space, and says why it fails).
 */
static int tail_grows(bf_file *f, uint64_t off, uint32_t old, uint32_t n)
{
    bf_space *sp = f->seg.space;
    uint64_t end = off + n;
    if (off + old != f->phys_end ||
        (f->named != NULL && n >= BF_BARE_ALIGN && off % BF_BARE_ALIGN != 0) ||
        off / sp->segment_size != (end - 1) / sp->segment_size)
        return 0;
    if (f->counted && sp->temp_limit != 0 && sp->physical_now + (n - old) > sp->temp_limit)
        return 0;
    return !f->counted || sp->budget == NULL ||
           bf_budget_reserve(sp, n - old, "write", NULL) == BF_OK;
}

/*
 * Whether a bare extent of `old` bytes at `off`, not the file's last, may
 * grow to `n` where it is: the bytes after it are free space of the file
 * (taken here; the caller gives them back if its write fails), in the same
 * segment, and a named file's block stays page-aligned. A block stored
 * short because it was the last (its bytes up to the size), then left
 * behind by later blocks, grows so when its page past the old end is
 * written (SQLite's pages written past the end of a temp database): its
 * alignment left the rest of its slot free.
 */
static int gap_grows(bf_file *f, uint64_t off, uint32_t old, uint32_t n, uint32_t *clean)
{
    bf_space *sp = f->seg.space;
    if ((f->named != NULL && n >= BF_BARE_ALIGN && off % BF_BARE_ALIGN != 0) ||
        off / sp->segment_size != (off + n - 1) / sp->segment_size)
        return 0;
    return bf_free_take_at(&f->free, bf_file_alloc(f), sp->segment_size, off + old, n - old, clean);
}

/*
 * Store the buffered block's changes in place when its extent is a bare
 * block that no persisted index needs (not kept, not a spliced part's), of
 * the same length or shorter, when it is the file's last extent (a tail
 * growing by small appends) or free space follows it (gap_grows): the
 * dirtied units (and the bytes the block grew by) alone are written over it
 * and the map's check (and length) updated; a write into part of a block
 * costs what it changed, not a whole block elsewhere (SQLite's pages
 * smaller than a block, a tuplestore's reads and writes taking turns, a
 * journal appended between reads). Returns 1 when it does not apply (the
 * block is stored the ordinary way), else a status. A failure leaves the
 * buffer dirty and holding the block: the slot may be torn, but the buffer
 * is what reads see, and a later flush writes it again; bytes written past
 * the physical end are given back, and free space taken goes back.
 */
static int bare_patch(bf_file *f, uint32_t n)
{
    uint32_t lo, hi;
    if (!dirty_bytes(f, n, &lo, &hi))
        return 1;
    /* A copy of the block still on a worker would land over the patch: it goes first. */
    int rc = jobs_settle_block(f, f->buf_blk);
    if (rc != BF_OK)
        return rc;
    bf_map_entry *e = bf_map_get(&f->map, f->buf_blk);
    if (!bf_map_bare(e) || (e->len & BF_MAP_KEPT) != 0 || bf_map_part(e) != 0)
        return 1;
    /* The entry the patch is stored into (a run leaf takes a store only there): an
       occupied block's, so only a run leaf's change can fail, before anything changed. */
    e = bf_map_slot(&f->map, bf_file_alloc(f), f->buf_blk);
    if (e == NULL)
        return 1; /* the general path stores the block, or reports the failure */
    uint32_t old = bf_map_len(e);
    uint64_t off = bf_map_off(e);
    int at_end = 0;
    uint32_t clean = 0;
    if (n < old ||
        (n > old && !(at_end = tail_grows(f, off, old, n)) && !gap_grows(f, off, old, n, &clean)))
        return 1;
    /* bytes below the old length changed, not the whole block: the file rewrites in place */
    int part = f->dirty_old && lo < old && hi - lo < n;
    if (n > old) { /* the new bytes too, zeros of a hole included */
        lo = f->dirty_old && lo < old ? lo : old;
        hi = n;
        /* but not the zeros where the bytes read as zeros already (holes_read_zero): past
           the end, before the dirtied bytes; in a clean free chunk, after them too (the
           segment file holds its bytes: it is below the end), unless the chunk is the room
           of a tail that nothing followed in its segment (tail_room: past the segment
           file's end, which the write must reach). A room that ends where its segment
           ends is such a room whatever came after it: the extents after it went into the
           next segment's file, and nothing need have extended this one over the room */
        uint64_t room_end = off + BF_BARE_ALIGN;
        int past_eof =
            at_end || ((clean & BF_CHUNK_ROOM) != 0 &&
                       (room_end >= f->phys_end || bf_space_segoff(f->seg.space, room_end) == 0));
        if (lo == old && (at_end ? holes_read_zero(f) : (clean & BF_CHUNK_CLEAN) != 0)) {
            lo = (old + zeros_lead(f->buf + old, n - old - 1)) & ~(HOLE_UNIT - 1);
            lo = lo > old ? lo : old;
            hi = past_eof ? n : zeros_from(f->buf, lo, n);
        }
    }
    struct iovec iov = {f->buf + lo, hi - lo};
    rc = hi > lo ? bf_seg_write(&f->seg, off + lo, &iov, 1, hi - lo) : BF_OK;
    if (rc != BF_OK) {
        if (at_end) {
            cut_back(f);                         /* best effort: what a short write left */
            bf_budget_sync(f->seg.space);        /* what the budget reserved for it */
        } else if (n > old) {
            bf_free_put(&f->free, bf_file_alloc(f), f->seg.space->segment_size, off + old, n - old);
        }
        return rc;
    }
    bf_map_entry ne = {e->off, (e->len & BF_MAP_FLAGS) | n, buf_crc(f, n)};
    bf_map_put_slot(e, &ne);
    ra_stale(f, f->buf_blk); /* a copy unpacked ahead holds the old bytes */
    if (n > old)
        live_add(f, (int64_t)(n - old));
    if (at_end)
        physical_set(f, off + n);
    f->fauto.rewrites |= part; /* sub_block_bound */
    COUNT(f, physical_written, hi - lo);
    count_stored(f, (bf_codec)f->codec, 1, 0);
    return BF_OK;
}

/*
 * The most bytes the buffered block's new extent should take before it is
 * better stored bare: a block that had an extent and whose bytes changed
 * in part (a page rewritten in a larger block) is stored bare when its
 * packed extent is larger than the bytes that changed, so that later
 * rewrites patch it (bare_patch) instead of writing a compressed block
 * whole each time. A block that was only appended to (a tail growing
 * between reads elsewhere: SQLite's temp databases and journals, a
 * tuplestore's) and is not yet whole, appended to again as a rule: stored
 * packed, each flush writes it whole; stored bare, the flush writes it
 * whole once and the next ones their appended bytes (bare_patch). It goes
 * bare when the bytes a packed store writes beyond that append (packed -
 * (n - lo)) reach the bytes going bare costs beyond the packed store (n -
 * packed): packed >= n - lo / 2, a block that compresses to half or less
 * stays packed; a rent paid once buys no more than the purchase.
 *
 * A file that has rewritten a block in part (fauto.rewrites, set here and
 * by bare_patch: SQLite's temp databases, whose 1 KiB pages are rewritten
 * in 4 KiB blocks) is taken to rewrite its other blocks too: each of its
 * blocks, new ones included, goes bare when it packs to more than a
 * quarter of the bytes its bare store writes (its leading zeros not
 * counted where the file system's hole holds them: holes_read_zero, a
 * block a page past the end opened). A block stored packed and rewritten
 * later costs its packed extent at each rewrite, and then itself bare
 * whole, where none wrote its page once and patched its pages. A half rule
 * (bare above n / 2) left SQLite's pages that are part empty (zeros: they
 * pack to 0.25-0.5) and the blocks a page past the end opened (a page and
 * zeros, packing to ~0.13 of the block) packed, then packed again at each
 * page and bare whole at last: the temptable group with lz4 wrote 1.016x
 * its logical bytes against none's 1.001x, 0.989x with the quarter
 * (docs/results/sqlite-subblock.md). Blocks that pack to a quarter or less
 * stay packed (the tempdb group's temp databases pack to ~0.06). A bare
 * block patched below its old length sets the bit too: the blocks that
 * file packs next are bounded from the start. Files that never write
 * below their size (hash joins' batches, sorts' runs, PostgreSQL's BLCKSZ
 * blocks written whole) never set the bit.
 * 0: no bound (the block is new or written whole in a file that never
 * rewrote a block in part, or the file is sealed, whose raw blocks keep
 * their header).
 */
static uint32_t sub_block_bound(bf_file *f, uint32_t n)
{
    uint32_t lo, hi;
    /* auto on none may pack a probe with another codec (block_pack): bounded too */
    if (f->sealed || (f->codec == BF_CODEC_NONE && !f->fauto.on))
        return 0;
    uint32_t quarter = 0; /* 0: the file never rewrote in part */
    if (f->fauto.rewrites) {
        uint32_t lead =
            holes_read_zero(f) && n > HOLE_UNIT ? zeros_lead(f->buf, n - 1) & ~(HOLE_UNIT - 1) : 0;
        quarter = (n - lead) / 4 > 0 ? (n - lead) / 4 : 1;
    }
    if (!dirty_bytes(f, n, &lo, &hi))
        return quarter;
    if (f->dirty_old) {
        if (hi - lo >= n)
            return quarter;
        f->fauto.rewrites = 1;
        return quarter != 0 && quarter < hi - lo ? quarter : hi - lo;
    }
    uint32_t tail = n < f->block_size && lo > 0 ? n - lo / 2 - 1 : 0;
    return quarter != 0 && (tail == 0 || quarter < tail) ? quarter : tail;
}

/*
 * Smallest gap, in bytes, between the range a block's earlier writes dirtied and a new
 * write's that makes patch_apart store the earlier range first: below it, one write over
 * the gap costs less than a second system call.
 */
#define PATCH_GAP 512u

/*
 * Before a write of bytes [off, off + n) into the buffered block: when the
 * block is patched in place (bare_patch) and the write lies apart from the
 * range dirtied so far, the range is patched now, so that the flush does
 * not write the unchanged bytes between them too (SQLite's 1 KiB pages in a
 * 4 KiB block: two pages changed before a flush wrote the pages between).
 * The range stays one range (the struct has no room for a bitmap): each run
 * of changed bytes costs a write of its own, as stock's page writes do, and
 * no more than its bytes. A block not patched in place keeps one range (its
 * flush stores it whole, or bounded by the range: sub_block_bound). BF_OK,
 * or a failure of the patch (the buffer stays dirty and whole, as after a
 * failed flush; nothing of the new write is in it).
 */
static int patch_apart(bf_file *f, uint32_t off, size_t n)
{
    uint32_t lo, hi, size = block_bytes(f, f->buf_blk);
    if (!f->buf_dirty || !dirty_bytes(f, size, &lo, &hi))
        return BF_OK;
    if ((off >= hi && off - hi < PATCH_GAP) || (off + n <= lo && lo - (off + n) < PATCH_GAP) ||
        (off < hi && off + n > lo))
        return BF_OK; /* overlapping or close: one range */
    int rc = bare_patch(f, size);
    if (rc == BF_OK) {
        f->buf_dirty = 0;
        range_clear(f);
    }
    return rc == 1 ? BF_OK : rc;
}

/*
 * Store the buffered block if it changed. `dropping`: the caller drops the
 * block from the buffer next, so its bytes may go to a worker's slot with
 * the buffer itself (block_store's swap), the buffer coming back unfilled.
 */
static int buf_flush(bf_file *f, int dropping)
{
    if (!f->buf_dirty)
        return BF_OK;
    uint32_t n = block_bytes(f, f->buf_blk);
    int rc = BF_OK;
    /* A block never stored (no buf_rmw: an append) has no extent to patch: no call. */
    if (n > 0 && (rc = f->buf_rmw ? bare_patch(f, n) : 1) == 1)
        rc = block_store_bounded(f, f->buf_blk, f->buf, n, sub_block_bound(f, n),
                                 dropping ? &f->buf : NULL);
    if (rc == BF_OK) {
        f->buf_dirty = 0;
        f->buf_rmw = n > 0; /* it has an extent now */
        range_clear(f);
    }
    return rc;
}

static void buf_drop(bf_file *f)
{
    f->buf_blk = BF_NO_BLOCK;
    f->buf_dirty = 0;
    f->buf_rmw = 0;
    f->buf_lazy = 0;
    range_clear(f);
    fill_reset(f);
}

/* How buf_switch fills the buffer. */
enum { FILL_ZERO, FILL_LOAD, FILL_STREAM };

/*
 * Make the buffer hold block `blkno`: flush the current one (an error
 * leaves it in place), then load the block (FILL_STREAM: for the stream
 * reader, which may read ahead), or, for a block past the size
 * (FILL_ZERO), leave its bytes to the writes and buf_settle.
 */
static int buf_switch(bf_file *f, uint64_t blkno, int fill)
{
    if (f->buf_blk == blkno)
        return BF_OK;
    int rc = buf_flush(f, 1);
    if (rc != BF_OK)
        return rc;
    buf_drop(f);
    if (f->buf == NULL) {
        /* Allocated on first use: files that are created and never written cost no buffer. */
        f->buf = bf_malloc(bf_file_alloc(f), f->block_size);
        if (f->buf == NULL)
            return bf_fail(f->seg.space, BF_ENOMEM, "write", NULL, 0, "block buffer of %u bytes",
                           f->block_size);
    }
    if (fill != FILL_ZERO) {
        rc = block_load(f, blkno, fill == FILL_STREAM, f->buf);
        if (rc != BF_OK)
            return rc;
        const bf_map_entry *e = bf_map_get(&f->map, blkno);
        f->buf_rmw = e != NULL && bf_map_used(e);
    }
    f->buf_lazy = fill == FILL_ZERO; /* not zeroed: buf_settle */
    f->buf_blk = (uint32_t)blkno;
    return BF_OK;
}

/* ---- public API ------------------------------------------------------- */

static int check_writable(bf_file *f, const char *op)
{
    if (f->readonly)
        return bf_fail(f->seg.space, BF_EREADONLY, op, NULL, 0, "file is read-only");
    return BF_OK;
}

/* Reject writes that would need a block number the map cannot hold. */
static int check_extent(bf_file *f, uint64_t end, const char *op)
{
    uint64_t max = ((uint64_t)BF_MAP_MAX_BLOCK + 1) << shift_of(f->block_size);
    if (end > max)
        return bf_fail(f->seg.space, BF_EINVAL, op, NULL, 0,
                       "offset %llu beyond the largest file size (%llu bytes)",
                       (unsigned long long)end, (unsigned long long)max);
    return BF_OK;
}

/*
 * Whether the `len` bytes (at least one) at the position fall inside the
 * buffered block: the common case of bf_file_write and bf_file_read, as of
 * stock's BufFileWrite and BufFileRead, served by one test and one copy.
 */
static inline int in_buffer(const bf_file *f, size_t len, uint32_t *off)
{
    uint32_t bs = f->block_size;
    *off = (uint32_t)(f->pos & (bs - 1));
    return (f->pos >> shift_of(bs)) == f->buf_blk && f->buf_blk != BF_NO_BLOCK &&
           len - 1 < (size_t)(bs - *off);
}

static int write_blocks(bf_file *f, const void *data, size_t len);

/*
 * The common case first (in_buffer): the copy, the position and the size.
 * Everything else (a block switch, whole blocks, a read-only file, an
 * empty or overflowing length) takes write_blocks, whose checks the fast
 * case cannot fail: a buffered block's end is within the largest size, and
 * a writable file stays writable while its block is buffered.
 */
int bf_file_write(bf_file *f, const void *data, size_t len)
{
    uint32_t off;
    /* Two bit-field tests joined by && are one test of the byte's mask; `|` made it six. */
    if (in_buffer(f, len, &off) && !f->readonly && !f->buf_rmw) {
        bf_file_modified(f);
        memcpy(f->buf + off, data, len);
        /* At or past the size (an append), the write is past what fill_fold summed: only
           a write across a FILL_BATCH boundary calls it (three instructions a call, where
           fill_note's loads took ~16). Below the size, fill_note decides. All from fields
           read after the copy: a value kept across it costs register saves (5 where 1). */
        uint64_t p0 = f->pos, end = p0 + len;
        f->buf_dirty = 1;
        f->pos = end;
        if (p0 >= f->size) {
            logical_append(f, end);
            if ((p0 ^ end) >= FILL_BATCH && f->fauto.fill)
                fill_fold(f, (uint32_t)(end - ((uint64_t)f->buf_blk << shift_of(f->block_size))));
        } else {
            if (end > f->size)
                logical_append(f, end);
            fill_note(f, (uint32_t)(p0 & (f->block_size - 1)), len);
        }
        COUNT(f, logical_written, len);
        return BF_OK;
    }
    return write_blocks(f, data, len);
}

__attribute__((noinline)) static int write_blocks(bf_file *f, const void *data, size_t len)
{
    int rc = check_writable(f, "write");
    if (rc == BF_OK && len > 0)
        rc = jobs_poll(f); /* a failure of a block handed to a worker is this call's */
    if (rc != BF_OK || len == 0)
        return rc;
    bf_file_modified(f);
    if (f->pos + len < f->pos || (rc = check_extent(f, f->pos + len, "write")) != BF_OK)
        return rc != BF_OK ? rc
                           : bf_fail(f->seg.space, BF_EINVAL, "write", NULL, 0, "length overflow");
    const unsigned char *p = data;
    unsigned shift = shift_of(f->block_size);
    uint32_t bs = f->block_size;
    uint64_t start = f->pos;
    size_t left = len;
    while (left > 0) {
        uint64_t blkno = f->pos >> shift;
        uint32_t off = (uint32_t)(f->pos & (bs - 1));
        size_t n = bs - off < left ? bs - off : left;
        if (n == bs && blkno != f->buf_blk) {
            /* Whole blocks: compress straight from the caller's memory, several per write.
               The size moves only over blocks stored. */
            uint64_t whole = left / bs;
            if (f->buf_blk > blkno && f->buf_blk - blkno < whole)
                whole = f->buf_blk - blkno; /* stop before the buffered block */
            if (whole > BATCH_BLOCKS)
                whole = BATCH_BLOCKS;
            uint64_t stored = 0;
            /* With workers each block goes to a slot of its own (block_store), but for a
               file whose blocks are all stored raw on this thread anyway (caller_packs). */
            rc = f->seg.space->workers == NULL || (caller_packs(f) && !f->fauto.on)
                     ? blocks_store_batch(f, blkno, p, (uint32_t)whole)
                     : 0;
            if (rc == 0) {
                rc = block_store(f, blkno, p, bs, NULL);
                stored = rc == BF_OK;
            } else if (rc > 0) {
                stored = (uint64_t)rc;
                rc = BF_OK;
            }
            n = (size_t)(stored * bs);
            if (n > 0 && f->pos + n > f->size)
                logical_set(f, f->pos + n);
        } else {
            int covered = off == 0 && n == bs;
            int load = !covered && (blkno << shift) < f->size;
            rc = buf_switch(f, blkno, load ? FILL_LOAD : FILL_ZERO);
            if (rc == BF_OK && f->buf_rmw)
                rc = patch_apart(f, off, n);
            if (rc == BF_OK) {
                uint32_t below = block_bytes(f, blkno);
                if (f->buf_lazy && off > below) /* past the size: the gap reads as zeros */
                    memset(f->buf + below, 0, off - below);
                memcpy(f->buf + off, p, n);
                f->buf_dirty = 1;
                if (f->buf_rmw)
                    dirty_range(f, off, n);
                if (f->pos + n > f->size)
                    logical_move(f, f->pos + n);
                fill_note(f, off, n);
            }
        }
        if (rc != BF_OK) {
            f->pos = start; /* the call failed: the position says so */
            return rc;
        }
        f->pos += n;
        p += n;
        left -= n;
    }
    COUNT(f, logical_written, len);
    return BF_OK;
}

static int64_t read_blocks(bf_file *f, void *data, size_t len);

/* The common case first (in_buffer), below the size; the rest the full way. */
int64_t bf_file_read(bf_file *f, void *data, size_t len)
{
    uint32_t off;
    if (in_buffer(f, len, &off) && f->pos < f->size && len <= f->size - f->pos) {
        memcpy(data, f->buf + off, len);
        f->pos += len;
        COUNT(f, logical_read, len);
        return (int64_t)len;
    }
    return read_blocks(f, data, len);
}

__attribute__((noinline)) static int64_t read_blocks(bf_file *f, void *data, size_t len)
{
    if (f->pos >= f->size || len == 0)
        return 0;
    if (len > f->size - f->pos)
        len = (size_t)(f->size - f->pos);
    if (len > INT64_MAX)
        len = INT64_MAX;
    unsigned char *p = data;
    unsigned shift = shift_of(f->block_size);
    uint32_t bs = f->block_size;
    uint64_t start = f->pos;
    size_t done = 0;
    while (done < len) {
        uint64_t blkno = f->pos >> shift;
        uint32_t off = (uint32_t)(f->pos & (bs - 1));
        size_t n = bs - off < len - done ? bs - off : len - done;
        int rc;
        if (n == bs && blkno != f->buf_blk) {
            rc = block_load(f, blkno, 1, p + done);
        } else {
            rc = buf_switch(f, blkno, FILL_STREAM);
            if (rc == BF_OK)
                memcpy(p + done, f->buf + off, n);
        }
        if (rc != BF_OK) {
            f->pos = start; /* the call failed: the position says so */
            return rc;
        }
        f->pos += n;
        done += n;
    }
    COUNT(f, logical_read, done);
    return (int64_t)done;
}

/*
 * Windows (buffile.h): the fast cases of bf_file_write and bf_file_read
 * handed to the caller, who copies many small pieces itself and settles
 * them in one call. A write window is offered only at the end of the data
 * (position == size), so what the caller puts into it lies past the size
 * until it is advanced: the buffer is marked buf_lazy there, whose bytes
 * past the size nothing reads before buf_settle zeroes them, so bytes put
 * in and never advanced are no write. The advances check the window again
 * (one test per window, not per piece) and do what the fast cases do.
 */
size_t bf_file_write_window(bf_file *f, void **ptr)
{
    uint32_t off;
    if (!in_buffer(f, 1, &off) || f->readonly || f->buf_rmw || f->pos != f->size) {
        *ptr = NULL;
        return 0;
    }
    f->buf_lazy = 1; /* the bytes past the size are the caller's until advanced */
    *ptr = f->buf + off;
    return f->block_size - off;
}

int bf_file_write_advance(bf_file *f, size_t n)
{
    uint32_t off;
    if (n == 0)
        return BF_OK;
    if (!in_buffer(f, n, &off) || f->readonly || f->buf_rmw || f->pos != f->size)
        return bf_fail(f->seg.space, BF_EINVAL, "write", NULL, 0,
                       "advance of %zu bytes beyond the write window", n);
    bf_file_modified(f);
    f->buf_dirty = 1;
    f->pos += n;
    logical_append(f, f->pos);
    fill_note(f, off, n);
    COUNT(f, logical_written, n);
    return BF_OK;
}

size_t bf_file_read_window(bf_file *f, const void **ptr)
{
    uint32_t off;
    if (!in_buffer(f, 1, &off) || f->pos >= f->size) {
        *ptr = NULL;
        return 0;
    }
    *ptr = f->buf + off;
    uint64_t left = f->size - f->pos;
    return left < f->block_size - off ? (size_t)left : f->block_size - off;
}

int bf_file_read_advance(bf_file *f, size_t n)
{
    uint32_t off;
    if (n == 0)
        return BF_OK;
    if (!in_buffer(f, n, &off) || f->pos >= f->size || n > f->size - f->pos)
        return bf_fail(f->seg.space, BF_EINVAL, "read", NULL, 0,
                       "advance of %zu bytes beyond the read window", n);
    f->pos += n;
    COUNT(f, logical_read, n);
    return BF_OK;
}

int bf_file_seek(bf_file *f, int64_t offset, int whence)
{
    int64_t base;
    switch (whence) {
    case BF_SEEK_SET: base = 0; break;
    case BF_SEEK_CUR: base = (int64_t)f->pos; break;
    case BF_SEEK_END: base = (int64_t)f->size; break;
    default: return bf_fail(f->seg.space, BF_EINVAL, "seek", NULL, 0, "bad whence %d", whence);
    }
    if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0)
        return bf_fail(f->seg.space, BF_EINVAL, "seek", NULL, 0,
                       "offset %lld from %lld is outside the file's range", (long long)offset,
                       (long long)base);
    f->pos = (uint64_t)(base + offset);
    if (f->pos > f->size)
        buf_settle(f); /* a write here leaves a gap in the buffer: zeros */
    return BF_OK;
}

uint64_t bf_file_tell(const bf_file *f)
{
    return f->pos;
}

uint64_t bf_file_size(const bf_file *f)
{
    return f->size;
}

int bf_file_flush(bf_file *f)
{
    int rc = buf_flush(f, 0);
    return rc != BF_OK ? rc : jobs_settle(f, 1);
}

int bf_file_truncate(bf_file *f, uint64_t size)
{
    int rc = check_writable(f, "truncate");
    if (rc != BF_OK)
        return rc;
    bf_file_modified(f);
    if (size >= f->size) {
        if ((rc = check_extent(f, size, "truncate")) != BF_OK)
            return rc;
        logical_set(f, size);
        return BF_OK;
    }
    bf_space *sp = f->seg.space;
    unsigned shift = shift_of(f->block_size);
    uint64_t keep = (size + f->block_size - 1) >> shift;
    uint32_t tail = (uint32_t)(size & (f->block_size - 1));
    fill_reset(f); /* the buffer's last bytes become zeros, or it takes another block */
    if (tail != 0 && f->buf_blk != keep - 1) {
        /* The new last block must read as zeros past the new end, so it goes into the
           buffer. It is loaded into a new one: if that fails, the current buffer (perhaps
           a dirty block past the new end) is still there. Only a dirty block before the
           new end must be written first. */
        if (f->buf_dirty && f->buf_blk < keep - 1 && (rc = buf_flush(f, 0)) != BF_OK)
            return rc;
        unsigned char *nb = bf_malloc(bf_file_alloc(f), f->block_size);
        if (nb == NULL)
            return bf_fail(sp, BF_ENOMEM, "truncate", NULL, 0, "block buffer of %u bytes",
                           f->block_size);
        /* With workers, a newer copy of the block than its extent's may be in a slot: that
           one, so that a shrink writes nothing (block_load would commit it first). Else its
           stored copy, and not through block_load either, which commits the file's finished
           blocks when due: those past the new end are dropped below, and committing them
           met the temp limit in a shrink that writes nothing (the file-set model, 2 workers,
           sealed, BF_SEED=60009718). */
        const bf_job *j = newest_job(f, keep - 1);
        if (j != NULL) {
            memcpy(nb, j->data, j->raw_len);
            memset(nb + j->raw_len, 0, f->block_size - j->raw_len);
        } else if ((rc = load_noted(f, block_load_here(f, keep - 1, 0, nb))) != BF_OK) {
            bf_free(bf_file_alloc(f), nb);
            return rc;
        }
        bf_free(bf_file_alloc(f), f->buf);
        f->buf = nb;
        f->buf_blk = (uint32_t)(keep - 1);
        f->buf_rmw = 0; /* written whole (copy-on-write) when flushed */
        f->buf_lazy = 0;
        range_clear(f);
    }
    if (tail != 0) {
        /* Its copy on a worker goes below: the extent is then older than the buffer outside
           the range dirtied, so a patch in place (bare_patch) would leave the dropped copy's
           changes out of it. The block is written whole when flushed. */
        if (f->buf_rmw && newest_job(f, keep - 1) != NULL) {
            f->buf_rmw = 0;
            range_clear(f);
        }
        memset(f->buf + tail, 0, f->block_size - tail);
        f->buf_dirty = 1;
        if (f->buf_rmw) /* those zeros replace bytes a later write may bring back to length */
            dirty_range(f, tail, f->block_size - tail);
    } else if (f->buf_blk != BF_NO_BLOCK && f->buf_blk >= keep) {
        buf_drop(f); /* past the new end: nothing to write */
    }
    /* Blocks on workers past the new end go, and those of the new last block: the buffer
       holds its newest copy (nothing can fail from here on). The others stay in flight. */
    jobs_drop(f, tail != 0 ? keep - 1 : keep, UINT64_MAX);
    bf_map_entry *e;
    for (uint64_t b = keep; (e = bf_map_next(&f->map, &b)) != NULL; b++)
        release_extent(f, e);
    bf_map_shrink(&f->map, bf_file_alloc(f), (uint32_t)(keep < f->map.n ? keep : f->map.n));
    logical_set(f, size);
    bf_file_shrink_tail(f);
    return BF_OK;
}

uint32_t bf_file_block_size(const bf_file *f)
{
    return f->block_size;
}

bf_codec bf_file_codec(const bf_file *f)
{
    return f->fauto.on ? BF_CODEC_AUTO : (bf_codec)f->codec;
}

int32_t bf_file_level(const bf_file *f)
{
    return f->level;
}

bf_space *bf_file_space(const bf_file *f)
{
    return f->seg.space;
}

int bf_file_path(const bf_file *f, char *buf, size_t len)
{
    if (f->seg.prefix != NULL)
        return snprintf(buf, len, "%s", f->seg.prefix);
    return snprintf(buf, len, "%s/%u", f->seg.space->dir, f->seg.id);
}

int bf_file_seek_block(bf_file *f, uint64_t blkno)
{
    if (blkno > BF_MAP_MAX_BLOCK)
        return bf_fail(f->seg.space, BF_EINVAL, "seek", NULL, 0, "block %llu out of range",
                       (unsigned long long)blkno);
    f->pos = blkno << shift_of(f->block_size);
    if (f->pos > f->size)
        buf_settle(f); /* a write here leaves a gap in the buffer: zeros */
    return BF_OK;
}

int bf_file_read_block(bf_file *f, uint64_t blkno, void *buf)
{
    if (blkno > BF_MAP_MAX_BLOCK)
        return bf_fail(f->seg.space, BF_EINVAL, "read", NULL, 0, "block %llu out of range",
                       (unsigned long long)blkno);
    int rc = BF_OK;
    buf_settle(f);
    if (blkno == f->buf_blk)
        memcpy(buf, f->buf, f->block_size);
    else
        rc = block_load(f, blkno, 0, buf);
    if (rc == BF_OK)
        COUNT(f, logical_read, f->block_size);
    return rc;
}

int bf_file_peek_block(bf_file *f, uint64_t blkno, unsigned char *dst)
{
    if (blkno == f->buf_blk) {
        buf_settle(f);
        memcpy(dst, f->buf, f->block_size);
        return BF_OK;
    }
    return block_load(f, blkno, 0, dst);
}

int bf_file_write_block(bf_file *f, uint64_t blkno, const void *buf)
{
    int rc = check_writable(f, "write");
    if (rc != BF_OK)
        return rc;
    if (blkno > BF_MAP_MAX_BLOCK)
        return bf_fail(f->seg.space, BF_EINVAL, "write", NULL, 0, "block %llu out of range",
                       (unsigned long long)blkno);
    if ((rc = jobs_poll(f)) != BF_OK)
        return rc;
    bf_file_modified(f);
    /* The whole block is stored, so the file covers it once the store succeeded. */
    rc = block_store(f, blkno, buf, f->block_size, NULL);
    if (rc != BF_OK)
        return rc; /* the previous contents (on disk, or in a dirty buffer) stay */
    uint64_t end = (blkno + 1) << shift_of(f->block_size);
    if (end > f->size)
        logical_set(f, end);
    if (blkno == f->buf_blk) {
        memcpy(f->buf, buf, f->block_size);
        f->buf_dirty = 0;
        fill_reset(f);
    }
    COUNT(f, logical_written, f->block_size);
    return BF_OK;
}

int bf_file_discard_block(bf_file *f, uint64_t blkno)
{
    int rc = check_writable(f, "discard");
    if (rc != BF_OK)
        return rc;
    /* The map's clear below must not fail once the buffer and the jobs are gone. */
    if (!bf_map_clearable(&f->map, bf_file_alloc(f), blkno))
        return bf_fail(f->seg.space, BF_ENOMEM, "discard", NULL, 0, "block map");
    bf_file_modified(f);
    if (blkno == f->buf_blk)
        buf_drop(f);
    jobs_drop(f, blkno, blkno);
    const bf_map_entry *e = bf_map_get(&f->map, blkno);
    if (e != NULL) {
        release_extent(f, e);
        bf_map_clear(&f->map, bf_file_alloc(f), blkno);
    }
    bf_file_shrink_tail(f);
    return BF_OK;
}

uint64_t bf_file_memory(const bf_file *f)
{
    uint64_t m = sizeof(*f) + (f->buf ? f->block_size : 0) + bf_map_memory(&f->map) +
                 bf_free_memory(&f->free);
    if (f->own_alloc)
        m += sizeof(void *);
    if (f->named != NULL)
        m += sizeof(*f->named) + (uint64_t)f->named->nparts * sizeof(bf_part);
    return m;
}

void bf_file_stats_sized(const bf_file *f, bf_stats *out, size_t size)
{
    /* Figures of blocks committed: those on workers are first (a failure stays on its slot
       for the file's next call). The handle is the caller's, not const to the library. */
    (void)jobs_settle((bf_file *)f, 1);
    bf_stats st;
    bf_stats_fill(&st, &f->c, f->size, f->phys_end, f->phys_end - index_bytes(f) - live_bytes(f));
    st.memory_bytes = bf_file_memory(f);
    bf_abi_write(out, size, &st, sizeof(st));
}

void bf_file_written(const bf_file *f, uint64_t *logical, uint64_t *physical)
{
    if (logical != NULL)
        *logical = f->c.logical_written;
    if (physical != NULL)
        *physical = f->c.physical_written;
}

int bf_file_release_buffer(bf_file *f)
{
    int rc = buf_flush(f, 1);
    if (rc != BF_OK)
        return rc;
    buf_drop(f);
    bf_free(bf_file_alloc(f), f->buf);
    f->buf = NULL;
    return BF_OK;
}

/* ---- lifecycle -------------------------------------------------------- */

void bf_file_set_logical(bf_file *f, uint64_t size)
{
    logical_set(f, size);
}

void bf_file_adopt(bf_file *f, uint64_t size, uint64_t phys_end, uint64_t idx_bytes)
{
    logical_set(f, size);
    bf_file_set_physical(f, phys_end, idx_bytes);
    live_add(f, (int64_t)live_bytes(f));
}

void bf_file_options_init_sized(bf_file_options *opts, size_t size)
{
    bf_file_options d = {.struct_size = (uint32_t)size,
                         .codec = BF_CODEC_DEFAULT,
                         .level = BF_LEVEL_DEFAULT,
                         .block_size = 0};
    bf_abi_write(opts, size, &d, sizeof(d));
}

int bf_file_new(bf_space *sp, const bf_file_options *opts, bf_file **out)
{
    *out = NULL;
    bf_file_options o;
    bf_file_options_init(&o);
    char why[256];
    if (opts != NULL && bf_abi_read(&o, &bf_abi_file_options, opts, why, sizeof(why)) != BF_OK)
        return bf_fail(sp, BF_EINVAL, "create", NULL, 0, "%s", why);
    bf_codec codec = o.codec == BF_CODEC_DEFAULT ? sp->codec : o.codec;
    if (bf_space_codec_name(sp, codec) == NULL && !bf_codec_is_user(codec))
        return bf_fail(sp, BF_EINVAL, "create", NULL, 0, "unknown codec %d", (int)codec);
    int32_t level = o.level;
    if (level == BF_LEVEL_DEFAULT && codec == sp->codec)
        level = sp->level;
    bf_file_auto fa = {0};
    if (codec == BF_CODEC_AUTO) {
        if (level != BF_LEVEL_DEFAULT)
            return bf_fail(sp, BF_EINVAL, "create", NULL, 0,
                           "codec auto chooses its own levels: leave the level at its default");
        int rc = bf_auto_file_start(sp, &fa, &codec, &level);
        if (rc != BF_OK)
            return rc;
    }
    const bf_codec_ops *ops = bf_space_codec_ops(sp, codec);
    if (ops == NULL && bf_codec_is_user(codec))
        return bf_fail(sp, BF_ENOCODEC, "create", NULL, 0,
                       "caller codec %d was not given to this space", (int)codec);
    if (ops == NULL)
        return bf_fail(sp, BF_ENOCODEC, "create", NULL, 0, "codec %s was not built in",
                       bf_codec_name(codec));
    if (bf_codec_resolve_level(ops, level, &level) != BF_OK)
        return bf_fail(sp, BF_EINVAL, "create", NULL, 0, "level %d out of range %d..%d for %s",
                       (int)o.level, (int)ops->min_level, (int)ops->max_level, ops->name);
    uint32_t bs = o.block_size ? o.block_size : sp->block_size;
    if (bs < BF_BLOCK_SIZE_MIN || bs > BF_BLOCK_SIZE_MAX || (bs & (bs - 1)) != 0)
        return bf_fail(sp, BF_EINVAL, "create", NULL, 0,
                       "block size %u is not a power of two in %u..%u", bs, BF_BLOCK_SIZE_MIN,
                       BF_BLOCK_SIZE_MAX);
    if (sp->segment_size < 2 * (uint64_t)BF_EXTENT_MAX(bs))
        return bf_fail(sp, BF_EINVAL, "create", NULL, 0,
                       "segment size %llu too small for %u-byte blocks",
                       (unsigned long long)sp->segment_size, bs);
    if (o.seal != 0 && o.seal != BF_SEAL_ON && o.seal != BF_SEAL_OFF)
        return bf_fail(sp, BF_EINVAL, "create", NULL, 0,
                       "bad seal %d (0, BF_SEAL_ON or BF_SEAL_OFF)", (int)o.seal);
    if (o.seal == BF_SEAL_ON && sp->seal == NULL)
        return bf_fail(sp, BF_EKEY, "create", NULL, 0,
                       "a sealed file asked of a space without a key (encrypt or key)");
    int rc = bf_space_reserve_scratch(sp, bf_space_extent_room(sp, bs));
    if (rc != BF_OK)
        return rc;
    /* The file's own memory goes through the space's hooks with the file's ctx when it has
       one: the ctx lies right after the struct, in the same allocation (bf_file_alloc). */
    bf_allocator fa_ctx = sp->alloc;
    fa_ctx.ctx = o.alloc_ctx;
    bf_file *f = o.alloc_ctx != NULL ? bf_calloc(&fa_ctx, 1, sizeof(*f) + sizeof(void *))
                                     : bf_calloc(&sp->alloc, 1, sizeof(*f));
    if (f == NULL)
        return bf_fail(sp, BF_ENOMEM, "create", NULL, 0, "file struct");
    if (o.alloc_ctx != NULL) {
        *(void **)(void *)(f + 1) = o.alloc_ctx;
        f->own_alloc = 1;
    }
    f->buf_blk = BF_NO_BLOCK;
    f->block_size = bs;
    f->codec = (uint8_t)codec;
    f->level = level;
    f->fauto = fa;
    f->sealed = o.seal == BF_SEAL_ON || (o.seal == 0 && sp->seal_default);
    /* Its blocks all go out bare (block_pack): summed as they fill. */
    f->fauto.fill = !fa.on && codec == BF_CODEC_NONE && !f->sealed;
    bf_seg_init(&f->seg, sp, sp->next_file_id++, NULL);
    f->next = sp->files;
    if (sp->files)
        sp->files->prev = f;
    sp->files = f;
    sp->files_open++;
    *out = f;
    return BF_OK;
}

int bf_file_create(bf_space *sp, const bf_file_options *opts, bf_file **out)
{
    int rc = bf_file_new(sp, opts, out);
    if (rc == BF_OK) {
        (*out)->counted = 1;
        sp->files_created++;
    }
    return rc;
}

void bf_file_release(bf_file *f)
{
    bf_space *sp = f->seg.space;
    jobs_drop(f, 0, UINT64_MAX); /* closed: its blocks on workers are not wanted any more */
    live_add(f, -(int64_t)live_bytes(f));
    logical_set(f, 0);
    bf_file_set_physical(f, 0, 0);
    bf_seg_close(&f->seg);
    if (f->prev)
        f->prev->next = f->next;
    else
        sp->files = f->next;
    if (f->next)
        f->next->prev = f->prev;
    sp->files_open--;
    const bf_allocator a = *bf_file_alloc(f); /* it may lie in the struct freed last */
    bf_map_free(&f->map, &a);
    bf_free_clear(&f->free, &a);
    bf_free(&a, f->buf);
    bf_free(&a, f);
}

int bf_file_discard(bf_file *f)
{
    int rc = bf_seg_remove(&f->seg);
    bf_file_release(f);
    return rc;
}
