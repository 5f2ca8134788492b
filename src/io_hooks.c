/*
 * io_hooks.c - an I/O table around the space's own that calls the caller's
 * io_start/io_done hooks around each pread, pwritev and ftruncate.
 * Implements: bf_hooks_wrap, bf_hooks_free (io_hooks.h).
 *
 * Invariants: errno after a wrapped call is the inner call's; opens,
 * closes and unlinks pass through untouched (their hooks are segment.c's).
 */
#include "io_hooks.h"

#include <errno.h>

#include "alloc.h"

typedef struct hooked {
    bf_io inner;
    bf_io_hooks hooks;
} hooked;

static void start(const hooked *h, bf_io_op op)
{
    if (h->hooks.io_start != NULL)
        h->hooks.io_start(h->hooks.ctx, op);
}

static void done(const hooked *h, bf_io_op op)
{
    if (h->hooks.io_done != NULL)
        h->hooks.io_done(h->hooks.ctx, op);
}

static int hk_open(void *ctx, const char *path, int flags, mode_t mode)
{
    hooked *h = ctx;
    return h->inner.open(h->inner.ctx, path, flags, mode);
}

static int hk_close(void *ctx, int fd)
{
    hooked *h = ctx;
    return h->inner.close(h->inner.ctx, fd);
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

int bf_hooks_wrap(const bf_allocator *a, const bf_io_hooks *hooks, bf_io *io, void **state)
{
    *state = NULL;
    if (hooks->io_start == NULL && hooks->io_done == NULL)
        return BF_OK;
    hooked *h = bf_malloc(a, sizeof(*h));
    if (h == NULL)
        return BF_ENOMEM;
    h->inner = *io;
    h->hooks = *hooks;
    *io = (bf_io){hk_open, hk_close, hk_pwritev, hk_pread, hk_ftruncate, hk_unlink, h};
    *state = h;
    return BF_OK;
}

void bf_hooks_free(const bf_allocator *a, void *state)
{
    bf_free(a, state);
}
