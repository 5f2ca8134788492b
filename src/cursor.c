/*
 * cursor.c - several read positions over one file, each reading on from
 * a decompressed block of its own.
 * Implements: bf_cursor_open, bf_cursor_read, bf_cursor_seek,
 * bf_cursor_tell, bf_cursor_close, bf_cursor_memory (buffile.h); cursor.h.
 *
 * Why: the file has one block buffer, so readers that take turns over one
 * file (a merge reading a row from each of 64 runs) make it load and
 * decompress a whole block at every switch. A cursor keeps the block it
 * reads in a buffer of its own, so a switch costs a comparison, and a
 * block is loaded once per cursor that reads it.
 *
 * Why a generation and not a list of cursors on the file: every call that
 * may change what the file reads (writes, truncates, block writes and
 * discards) moves the file's 16-bit write generation (file.h,
 * bf_file_modified) before it changes anything, one increment on paths
 * that do not know cursors exist; a cursor trusts its block only while the
 * generation it was filled under is current. A generation that wraps moves
 * the space's epoch, which every cursor compares as well, so no count of
 * writes can make a stale block look current.
 *
 * A cursor never writes: it reads the file's dirty buffered block from the
 * buffer (bf_file_peek_block), so its reads fail only as loads fail, and a
 * failure leaves its position where it was.
 */
#include "cursor.h"

#include <string.h>

#include "alloc.h"
#include "space.h"

static unsigned shift_of(uint32_t block_size)
{
    return (unsigned)__builtin_ctz(block_size);
}

static int closed(bf_cursor *c, const char *op)
{
    return bf_fail(c->space, BF_EINVAL, op, NULL, 0, "the cursor's file was closed");
}

int bf_cursor_open(bf_file *f, bf_cursor **out)
{
    bf_space *sp = f->seg.space;
    bf_cursor *c = bf_calloc(&sp->alloc, 1, sizeof(*c));
    if (c == NULL) {
        *out = NULL;
        return bf_fail(sp, BF_ENOMEM, "cursor", NULL, 0, "cursor of %zu bytes", sizeof(*c));
    }
    c->space = sp;
    c->file = f;
    c->blk = BF_CURSOR_NO_BLOCK;
    c->block_size = f->block_size;
    c->next = sp->cursors;
    if (sp->cursors != NULL)
        sp->cursors->prev = c;
    sp->cursors = c;
    *out = c;
    return BF_OK;
}

void bf_cursor_close(bf_cursor *c)
{
    if (c == NULL)
        return;
    bf_space *sp = c->space;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        sp->cursors = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    bf_free(&sp->alloc, c->buf);
    bf_free(&sp->alloc, c);
}

/* The cursor's block is `blk` and still what the file reads there. */
static inline int holds(const bf_cursor *c, const bf_file *f, uint64_t blk)
{
    return c->blk == blk && c->gen == f->wgen && c->epoch == f->seg.space->wgen_epoch;
}

/* Fill the cursor's buffer with block `blk`; on failure it holds nothing. */
static int fill(bf_cursor *c, bf_file *f, uint64_t blk)
{
    if (c->buf == NULL) {
        /* On first use: a cursor opened and never read costs its struct alone. */
        c->buf = bf_malloc(&c->space->alloc, c->block_size);
        if (c->buf == NULL)
            return bf_fail(c->space, BF_ENOMEM, "cursor read", NULL, 0,
                           "cursor block buffer of %u bytes", c->block_size);
    }
    c->blk = BF_CURSOR_NO_BLOCK; /* the buffer is being overwritten */
    int rc = bf_file_peek_block(f, blk, c->buf);
    if (rc != BF_OK)
        return rc;
    c->blk = blk;
    c->gen = f->wgen;
    c->epoch = f->seg.space->wgen_epoch;
    return BF_OK;
}

static void count_read(bf_file *f, uint64_t n)
{
    f->c.logical_read += n;
    f->seg.space->c.logical_read += n;
}

static int64_t read_slow(bf_cursor *c, bf_file *f, unsigned char *dst, size_t len);

int64_t bf_cursor_read(bf_cursor *c, void *buf, size_t len)
{
    bf_file *f = c->file;
    if (f == NULL)
        return closed(c, "cursor read");
    uint32_t bs = c->block_size;
    uint32_t off = (uint32_t)(c->pos & (bs - 1));
    /* The common case: within the held block, below the size. */
    if (holds(c, f, c->pos >> shift_of(bs)) && len - 1 < (size_t)(bs - off) && c->pos < f->size &&
        len <= f->size - c->pos) {
        memcpy(buf, c->buf + off, len);
        c->pos += len;
        count_read(f, len);
        return (int64_t)len;
    }
    return read_slow(c, f, buf, len);
}

__attribute__((noinline)) static int64_t read_slow(bf_cursor *c, bf_file *f, unsigned char *dst,
                                                   size_t len)
{
    if (c->pos >= f->size || len == 0)
        return 0;
    if (len > f->size - c->pos)
        len = (size_t)(f->size - c->pos);
    if (len > INT64_MAX)
        len = INT64_MAX;
    uint32_t bs = c->block_size;
    unsigned shift = shift_of(bs);
    uint64_t pos = c->pos;
    size_t done = 0;
    while (done < len) {
        uint64_t blk = pos >> shift;
        uint32_t off = (uint32_t)(pos & (bs - 1));
        size_t n = bs - off < len - done ? bs - off : len - done;
        int rc = BF_OK;
        if (n == bs && !holds(c, f, blk)) {
            rc = bf_file_peek_block(f, blk, dst + done); /* whole blocks: straight to the caller */
        } else {
            if (!holds(c, f, blk))
                rc = fill(c, f, blk);
            if (rc == BF_OK)
                memcpy(dst + done, c->buf + off, n);
        }
        if (rc != BF_OK)
            return rc; /* the position stays where the call found it */
        pos += n;
        done += n;
    }
    c->pos = pos;
    count_read(f, done);
    return (int64_t)done;
}

int bf_cursor_seek(bf_cursor *c, int64_t offset, int whence)
{
    if (c->file == NULL)
        return closed(c, "cursor seek");
    int64_t base;
    switch (whence) {
    case BF_SEEK_SET: base = 0; break;
    case BF_SEEK_CUR: base = (int64_t)c->pos; break;
    case BF_SEEK_END: base = (int64_t)c->file->size; break;
    default: return bf_fail(c->space, BF_EINVAL, "cursor seek", NULL, 0, "bad whence %d", whence);
    }
    if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0)
        return bf_fail(c->space, BF_EINVAL, "cursor seek", NULL, 0,
                       "offset %lld from %lld is outside the file's range", (long long)offset,
                       (long long)base);
    c->pos = (uint64_t)(base + offset);
    return BF_OK;
}

uint64_t bf_cursor_tell(const bf_cursor *c)
{
    return c->pos;
}

uint64_t bf_cursor_memory(const bf_cursor *c)
{
    return sizeof(*c) + (c->buf != NULL ? c->block_size : 0);
}

void bf_cursors_detach(bf_file *f)
{
    for (bf_cursor *c = f->seg.space->cursors; c != NULL; c = c->next)
        if (c->file == f) {
            c->file = NULL;
            c->blk = BF_CURSOR_NO_BLOCK;
        }
}

void bf_cursors_free_all(bf_space *sp)
{
    while (sp->cursors != NULL)
        bf_cursor_close(sp->cursors);
}

uint64_t bf_cursors_memory(const bf_space *sp)
{
    uint64_t m = 0;
    for (const bf_cursor *c = sp->cursors; c != NULL; c = c->next)
        m += bf_cursor_memory(c);
    return m;
}
