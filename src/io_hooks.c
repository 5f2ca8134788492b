/*
 * io_hooks.c - an I/O table around the space's own that calls the caller's
 * bf_io_hooks: io_start/io_done around each pread, pwritev and ftruncate,
 * fd_acquire/fd_release around each descriptor.
 *
 * Invariants: every fd_acquire that let an open go on is matched by exactly
 * one fd_release (at the close, or at once when the open failed), so the
 * caller's count of descriptors is the space's; errno after a wrapped call
 * is the inner call's. When fd_acquire refuses, the space's least recently
 * used descriptor is closed (through this table, hence released) and the
 * hook asked again, until the space holds none and the hook must agree.
 */
#include "io_hooks.h"

#include <errno.h>

#include "alloc.h"
#include "segment.h"
#include "space.h"

typedef struct hooked {
    bf_io inner;
    struct bf_space *space;
} hooked;

static void start(const hooked *h, bf_io_op op)
{
    if (h->space->hooks.io_start != NULL)
        h->space->hooks.io_start(h->space->hooks.ctx, op);
}

static void done(const hooked *h, bf_io_op op)
{
    if (h->space->hooks.io_done != NULL)
        h->space->hooks.io_done(h->space->hooks.ctx, op);
}

static int hk_open(void *ctx, const char *path, int flags, mode_t mode)
{
    hooked *h = ctx;
    const bf_io_hooks *k = &h->space->hooks;
    if (k->fd_acquire != NULL) {
        while (!k->fd_acquire(k->ctx, h->space->lru_tail == NULL))
            bf_seg_close(h->space->lru_tail);
    }
    int fd = h->inner.open(h->inner.ctx, path, flags, mode);
    if (fd < 0 && k->fd_release != NULL) {
        int e = errno;
        k->fd_release(k->ctx);
        errno = e;
    }
    return fd;
}

static int hk_close(void *ctx, int fd)
{
    hooked *h = ctx;
    int rc = h->inner.close(h->inner.ctx, fd);
    int e = errno;
    if (h->space->hooks.fd_release != NULL)
        h->space->hooks.fd_release(h->space->hooks.ctx);
    errno = e;
    return rc;
}

static ssize_t hk_pwritev(void *ctx, int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    hooked *h = ctx;
    start(h, BF_IO_WRITE);
    ssize_t n = h->inner.pwritev(h->inner.ctx, fd, iov, iovcnt, off);
    int e = errno;
    done(h, BF_IO_WRITE);
    errno = e;
    return n;
}

static ssize_t hk_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    hooked *h = ctx;
    start(h, BF_IO_READ);
    ssize_t n = h->inner.pread(h->inner.ctx, fd, buf, len, off);
    int e = errno;
    done(h, BF_IO_READ);
    errno = e;
    return n;
}

static int hk_ftruncate(void *ctx, int fd, off_t len)
{
    hooked *h = ctx;
    start(h, BF_IO_TRUNCATE);
    int rc = h->inner.ftruncate(h->inner.ctx, fd, len);
    int e = errno;
    done(h, BF_IO_TRUNCATE);
    errno = e;
    return rc;
}

static int hk_unlink(void *ctx, const char *path)
{
    hooked *h = ctx;
    return h->inner.unlink(h->inner.ctx, path);
}

int bf_hooks_wrap(struct bf_space *sp, const bf_io_hooks *hooks)
{
    sp->hooks = *hooks;
    if (hooks->io_start == NULL && hooks->io_done == NULL && hooks->fd_acquire == NULL &&
        hooks->fd_release == NULL)
        return BF_OK; /* the blocks hook alone is called from file.c: no table needed */
    hooked *h = bf_malloc(&sp->alloc, sizeof(*h));
    if (h == NULL)
        return BF_ENOMEM;
    h->inner = sp->io;
    h->space = sp;
    sp->io = (bf_io){hk_open, hk_close, hk_pwritev, hk_pread, hk_ftruncate, hk_unlink, h};
    sp->hooked = h;
    return BF_OK;
}

void bf_hooks_free(const bf_allocator *a, void *state)
{
    bf_free(a, state);
}
