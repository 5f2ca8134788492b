/*
 * segment.c - segment files, descriptor cache and the retry loops of I/O.
 * Implements: segment.h: the rows (bf_seg_init, bf_seg_path, bf_seg_write,
 * bf_seg_read, bf_seg_pin, bf_seg_resize, bf_seg_read_head, bf_seg_move,
 * bf_seg_reserve, bf_seg_remove, bf_seg_close), the descriptors
 * (bf_fd_open, bf_fd_close) and the segment cache (bf_segcache_new,
 * bf_segcache_memory, bf_segcache_free, bf_seg_cached, bf_seg_read_ahead,
 * bf_seg_forget_ahead).
 *
 * Invariants: seg->fd >= 0 iff seg is linked in the space's LRU list, and
 * space->fds_open counts those; space->fds_open <= space->fds_max after
 * every open; a descriptor pinned for a worker's reads (bf_seg_pin) is not
 * closed or moved until they are done. Writes loop over short counts; a
 * write that makes no progress is reported with errno (ENOSPC when the
 * device is full).
 */
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "auto_file.h"
#include "space.h"

void bf_seg_init(bf_seg *seg, struct bf_space *space, uint32_t id, const char *prefix)
{
    memset(seg, 0, sizeof(*seg));
    seg->space = space;
    seg->prefix = prefix;
    seg->id = id;
    seg->fd = -1;
}

void bf_seg_path(const bf_seg *seg, uint32_t segno, char *buf, size_t len)
{
    if (seg->prefix != NULL)
        snprintf(buf, len, "%s.%u", seg->prefix, segno);
    else
        snprintf(buf, len, "%s/%u.%u", seg->space->dir, seg->id, segno);
}

static void lru_unlink(bf_seg *seg)
{
    struct bf_space *sp = seg->space;
    if (seg->lru_prev)
        seg->lru_prev->lru_next = seg->lru_next;
    else
        sp->segs->lru_head = seg->lru_next;
    if (seg->lru_next)
        seg->lru_next->lru_prev = seg->lru_prev;
    else
        sp->segs->lru_tail = seg->lru_prev;
    seg->lru_prev = seg->lru_next = NULL;
}

static void lru_push(bf_seg *seg)
{
    struct bf_space *sp = seg->space;
    seg->lru_prev = NULL;
    seg->lru_next = sp->segs->lru_head;
    if (sp->segs->lru_head)
        sp->segs->lru_head->lru_prev = seg;
    else
        sp->segs->lru_tail = seg;
    sp->segs->lru_head = seg;
}

/*
 * The read-ahead buffer must never outlive, or hide a change to, the bytes it
 * copied: a change to [off, off + len) of seg drops it when the ranges meet.
 * Only then: a reader of one tape while other tapes of the same file are
 * written (hash aggregation re-spilling) would otherwise fetch its window
 * again for every block it reads.
 */
static void forget_readahead_over(bf_seg *seg, uint64_t off, uint64_t len)
{
    bf_segcache *c = seg->space->segs;
    if (c->ra_seg == seg && off < c->ra_off + c->ra_len && off + len > c->ra_off)
        c->ra_seg = NULL;
}

static void forget_readahead(bf_seg *seg)
{
    forget_readahead_over(seg, 0, UINT64_MAX);
}

void bf_seg_forget_ahead(struct bf_space *sp)
{
    sp->segs->ra_seg = NULL;
}

const unsigned char *bf_seg_cached(const bf_seg *seg, uint64_t off, size_t len)
{
    const bf_segcache *c = seg->space->segs;
    if (c->ra_seg == seg && off >= c->ra_off && off + len <= c->ra_off + c->ra_len)
        return c->ra + (off - c->ra_off);
    return NULL;
}

int bf_seg_read_ahead(bf_seg *seg, uint64_t off, uint64_t end, const unsigned char **out)
{
    bf_segcache *c = seg->space->segs;
    if (c->ra == NULL && (c->ra = bf_malloc(&seg->space->alloc, BF_READAHEAD)) == NULL)
        return BF_ENOMEM;
    c->ra_seg = NULL;
    int rc = bf_seg_read(seg, off, c->ra, (size_t)(end - off));
    if (rc != BF_OK)
        return rc;
    c->ra_seg = seg;
    c->ra_off = off;
    c->ra_len = (size_t)(end - off);
    *out = c->ra;
    return BF_OK;
}

bf_segcache *bf_segcache_new(const bf_allocator *a, uint32_t fds_max)
{
    bf_segcache *c = bf_calloc(a, 1, sizeof(*c));
    if (c != NULL)
        c->fds_max = fds_max;
    return c;
}

size_t bf_segcache_memory(const bf_segcache *c)
{
    return sizeof(*c) + (c->ra != NULL ? BF_READAHEAD : 0);
}

void bf_segcache_free(const bf_allocator *a, bf_segcache *c)
{
    if (c == NULL)
        return;
    bf_free(a, c->ra);
    bf_free(a, c);
}

_Atomic uint32_t *bf_seg_pin(bf_seg *seg)
{
    struct bf_seg_pin *p = seg->space->segs->pins, *free = NULL;
    for (int i = 0; i < BF_SEG_PINS; i++) {
        if (atomic_load(&p[i].n) == 0) {
            if (free == NULL)
                free = &p[i];
        } else if (p[i].fd == seg->fd) {
            /* Raised from at least 1, or from 0 if the last read ended meanwhile: the entry
               is still this descriptor's either way. */
            atomic_fetch_add(&p[i].n, 1);
            return &p[i].n;
        }
    }
    if (free == NULL)
        return NULL;
    free->fd = seg->fd; /* a free entry: no worker holds its count */
    atomic_fetch_add(&free->n, 1);
    return &free->n;
}

/*
 * Wait until no worker reads seg->fd (bf_seg_pin). Only the caller's
 * thread closes or moves a descriptor, and it is the thread that handed
 * the reads over and woke the workers for them (file.c's ra_ahead), so
 * each is queued or under way and no new one comes while it waits: a read
 * is one pread of one extent and its unpacking. Rare: a pass's descriptor
 * closes when its file closes, turns to another segment or falls out of
 * the LRU while blocks are read ahead on it.
 */
static void seg_quiesce(const bf_seg *seg)
{
    if (seg->fd < 0)
        return;
    struct bf_seg_pin *p = seg->space->segs->pins;
    for (int i = 0; i < BF_SEG_PINS; i++)
        if (p[i].fd == seg->fd)
            while (atomic_load(&p[i].n) != 0)
                sched_yield();
}

void bf_seg_close(bf_seg *seg)
{
    seg_quiesce(seg);
    forget_readahead(seg);
    if (seg->fd < 0)
        return;
    lru_unlink(seg);
    bf_fd_close(seg->space, seg->fd);
    seg->fd = -1;
    seg->space->segs->fds_open--;
}

int bf_fd_open(struct bf_space *sp, const char *path, int flags, mode_t mode)
{
    const bf_io_hooks *k = &sp->ios.hooks;
    if (k->fd_acquire != NULL) {
        while (!k->fd_acquire(k->ctx, sp->segs->lru_tail == NULL))
            bf_seg_close(sp->segs->lru_tail);
    }
    int fd = sp->ios.io.open(sp->ios.io.ctx, path, flags, mode);
    if (fd < 0 && k->fd_release != NULL) {
        int e = errno;
        k->fd_release(k->ctx);
        errno = e;
    }
    return fd;
}

void bf_fd_close(struct bf_space *sp, int fd)
{
    int e = errno;
    sp->ios.io.close(sp->ios.io.ctx, fd);
    if (sp->ios.hooks.fd_release != NULL)
        sp->ios.hooks.fd_release(sp->ios.hooks.ctx);
    errno = e;
}

/* Make seg->fd refer to segment `segno`, creating segments up to it if `create`. */
static int seg_open(bf_seg *seg, uint32_t segno, int create)
{
    struct bf_space *sp = seg->space;
    if (seg->fd >= 0 && seg->segno == segno) {
        if (sp->segs->lru_head != seg) {
            lru_unlink(seg);
            lru_push(seg);
        }
        return BF_OK;
    }
    bf_seg_close(seg);
    if (!create && segno >= seg->nsegs) {
        char path[4096];
        bf_seg_path(seg, segno, path, sizeof(path));
        return bf_fail(sp, BF_ECORRUPT, "open", path, 0, "segment %u was never written", segno);
    }
    while (sp->segs->fds_open >= sp->segs->fds_max && sp->segs->lru_tail != NULL)
        bf_seg_close(sp->segs->lru_tail);
    /* Segments are created in order so that nsegs alone says which exist. */
    while (seg->nsegs <= segno) {
        char path[4096];
        bf_seg_path(seg, seg->nsegs, path, sizeof(path));
        int fd = bf_fd_open(sp, path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            S_IRUSR | S_IWUSR);
        if (fd < 0) {
            int e = errno;
            return bf_fail(sp, e == EEXIST ? BF_EEXIST : bf_status_from_errno(e), "create", path, e,
                           NULL);
        }
        seg->nsegs++;
        if (seg->nsegs <= segno) {
            bf_fd_close(sp, fd);
            continue;
        }
        seg->fd = fd;
        seg->segno = segno;
        sp->segs->fds_open++;
        lru_push(seg);
        return BF_OK;
    }
    char path[4096];
    bf_seg_path(seg, segno, path, sizeof(path));
    int fd = bf_fd_open(sp, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        /* Missing, or a link planted where the segment was: not what was written. */
        return bf_fail(sp, e == ENOENT || e == ELOOP ? BF_ECORRUPT : BF_EIO, "open", path, e, NULL);
    }
    seg->fd = fd;
    seg->segno = segno;
    sp->segs->fds_open++;
    lru_push(seg);
    return BF_OK;
}

int bf_seg_write(bf_seg *seg, uint64_t off, const struct iovec *iov, int iovcnt, size_t total)
{
    struct bf_space *sp = seg->space;
    uint32_t segno = (uint32_t)bf_space_segno(sp, off);
    uint64_t soff = bf_space_segoff(sp, off);
    if (soff + total > sp->segment_size) {
        /* A caller's bug, refused rather than written: the bytes past the end would go into
           this segment's file while a later write or read of them by their own offset goes
           to the next one's (reads would find old bytes failing their check). */
        char path[4096];
        bf_seg_path(seg, segno, path, sizeof(path));
        return bf_fail(sp, BF_EINVAL, "write", path, 0,
                       "%zu bytes at offset %llu run past the segment's end (%llu bytes)", total,
                       (unsigned long long)soff, (unsigned long long)sp->segment_size);
    }
    forget_readahead_over(seg, off, total);
    int rc = seg_open(seg, segno, 1);
    if (rc != BF_OK)
        return rc;
    struct iovec local[BF_SEG_IOV_MAX];
    if (iovcnt > BF_SEG_IOV_MAX)
        return bf_fail(sp, BF_EINVAL, "write", NULL, 0, "%d iovecs in one write", iovcnt);
    int n = iovcnt;
    /* The caller's iovecs, until a short write: then a copy in `local` that moves past the
       bytes written (copying them before every write cost each block a memcpy call). */
    const struct iovec *v = iov;
    size_t done = 0;
    uint64_t t0;
    int timed = bf_auto_io_begin(sp, total, &t0);
    while (done < total) {
        ssize_t w = sp->ios.io.pwritev(sp->ios.io.ctx, seg->fd, v, n, (off_t)(soff + done));
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            char path[4096];
            bf_seg_path(seg, segno, path, sizeof(path));
            return bf_fail(sp, bf_status_from_errno(e), "write", path, e,
                           "%zu bytes at offset %llu", total - done,
                           (unsigned long long)(soff + done));
        }
        done += (size_t)w;
        if (done >= total)
            break;
        /* Skip the iovecs the short write consumed. */
        memmove(local, v, (size_t)n * sizeof(*v));
        struct iovec *m = local;
        size_t skip = (size_t)w;
        while (n > 0 && skip >= m->iov_len) {
            skip -= m->iov_len;
            m++;
            n--;
        }
        if (n > 0) {
            m->iov_base = (char *)m->iov_base + skip;
            m->iov_len -= skip;
        }
        v = m;
    }
    bf_auto_io_end(sp, 0, total, timed, t0);
    return BF_OK;
}

int bf_seg_read(bf_seg *seg, uint64_t off, void *buf, size_t len)
{
    struct bf_space *sp = seg->space;
    uint32_t segno = (uint32_t)bf_space_segno(sp, off);
    uint64_t soff = bf_space_segoff(sp, off);
    int rc = seg_open(seg, segno, 0);
    if (rc != BF_OK)
        return rc;
    size_t done = 0;
    uint64_t t0;
    int timed = bf_auto_io_begin(sp, len, &t0);
    while (done < len) {
        ssize_t r = sp->ios.io.pread(sp->ios.io.ctx, seg->fd, (char *)buf + done, len - done,
                                     (off_t)(soff + done));
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            char path[4096];
            bf_seg_path(seg, segno, path, sizeof(path));
            if (r == 0)
                return bf_fail(sp, BF_ECORRUPT, "read", path, 0,
                               "segment truncated: %zu bytes missing at offset %llu", len - done,
                               (unsigned long long)(soff + done));
            return bf_fail(sp, BF_EIO, "read", path, e, "%zu bytes at offset %llu", len - done,
                           (unsigned long long)(soff + done));
        }
        done += (size_t)r;
    }
    bf_auto_io_end(sp, 1, len, timed, t0);
    return BF_OK;
}

/* Unlink segment `segno`; a segment that is already gone is not an error. */
static int seg_unlink(bf_seg *seg, uint32_t segno)
{
    struct bf_space *sp = seg->space;
    char path[4096];
    bf_seg_path(seg, segno, path, sizeof(path));
    if (sp->ios.io.unlink(sp->ios.io.ctx, path) != 0 && errno != ENOENT)
        return bf_fail(sp, BF_EIO, "unlink", path, errno, NULL);
    return BF_OK;
}

int bf_seg_resize(bf_seg *seg, uint64_t end)
{
    struct bf_space *sp = seg->space;
    uint32_t keep = (uint32_t)((end + sp->segment_size - 1) / sp->segment_size);
    if (keep == 0 && seg->prefix != NULL && seg->nsegs > 0)
        keep = 1; /* a named file's segment 0 holds its name */
    forget_readahead_over(seg, end, UINT64_MAX - end);
    while (seg->nsegs > keep) {
        uint32_t last = seg->nsegs - 1;
        if (seg->fd >= 0 && seg->segno == last)
            bf_seg_close(seg);
        /* A segment that could not be removed still exists: nsegs must keep saying so. */
        int rc = seg_unlink(seg, last);
        if (rc != BF_OK)
            return rc;
        seg->nsegs--;
    }
    if (keep == 0)
        return BF_OK;
    uint64_t tail = end - (uint64_t)(keep - 1) * sp->segment_size;
    int rc = seg_open(seg, keep - 1, 0);
    if (rc != BF_OK)
        return rc;
    if (sp->ios.io.ftruncate(sp->ios.io.ctx, seg->fd, (off_t)tail) != 0) {
        int e = errno; /* extending a segment over a gap can find the disk full */
        char path[4096];
        bf_seg_path(seg, keep - 1, path, sizeof(path));
        return bf_fail(sp, bf_status_from_errno(e), "truncate", path, e, "to %llu bytes",
                       (unsigned long long)tail);
    }
    return BF_OK;
}

int bf_seg_read_head(bf_seg *seg, void *buf, size_t len, size_t *got)
{
    struct bf_space *sp = seg->space;
    seg->nsegs = 1;
    int rc = seg_open(seg, 0, 0);
    if (rc != BF_OK) {
        seg->nsegs = 0;
        if (sp->err.errnum == ENOENT)
            rc = bf_fail(sp, BF_ENOENT, "open", seg->prefix, ENOENT, "no such file in its set");
        return rc;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t r =
            sp->ios.io.pread(sp->ios.io.ctx, seg->fd, (char *)buf + done, len - done, (off_t)done);
        if (r < 0) {
            char path[4096];
            bf_seg_path(seg, 0, path, sizeof(path));
            return bf_fail(sp, BF_EIO, "read", path, errno, "the file's head");
        }
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return BF_OK;
}

void bf_seg_move(bf_seg *to, bf_seg *from)
{
    seg_quiesce(from);
    forget_readahead(from);
    to->nsegs = from->nsegs;
    if (from->fd >= 0) {
        lru_unlink(from);
        to->fd = from->fd;
        to->segno = from->segno;
        lru_push(to);
        from->fd = -1;
    }
}

int bf_seg_reserve(bf_seg *seg)
{
    return seg_open(seg, 0, 1);
}

int bf_seg_remove(bf_seg *seg)
{
    /* The descriptor goes first: the caller may free seg whatever happens below. */
    bf_seg_close(seg);
    int status = BF_OK;
    while (seg->nsegs > 0) {
        int rc = seg_unlink(seg, seg->nsegs - 1);
        if (rc != BF_OK && seg->prefix != NULL)
            return rc; /* what stays is segments 0..k: segment 0 holds the name and
                          bf_file_delete_named looks from 0 up; after a gap the name would
                          look free, and its next writer fail creating the segment that
                          stayed (O_EXCL) */
        if (status == BF_OK)
            status = rc;
        seg->nsegs--;
    }
    return status;
}
