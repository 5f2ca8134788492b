/*
 * io_throttle.c - token-bucket model of a slow temp device.
 * Implements: bf_throttle_wrap, bf_throttle_free (io_throttle.h).
 *
 * Invariant: busy_until_ns is when the modelled device finishes the last
 * transfer accepted; a new transfer starts at max(now, busy_until_ns), and
 * the caller never runs more than LEAD_NS ahead of it. Charging happens
 * after the real call, so the bytes moved are the bytes charged (a short
 * transfer is charged for what it moved).
 */
#include "io_throttle.h"

#include <errno.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"

typedef struct throttle {
    bf_io inner;
    uint64_t rate;
    uint64_t busy_until_ns;
} throttle;

/*
 * How far the caller may run ahead of the modelled device before it sleeps,
 * and how far ahead it still is when it wakes. A device with a write-back
 * cache holds a writer back in pauses of milliseconds, not by trimming every
 * call: codec=auto recognises a device that limits by such pauses, which a
 * page cache does not make.
 */
#define LEAD_NS 4000000u
#define RESUME_NS 2000000u

static void charge(throttle *t, ssize_t n)
{
    if (n <= 0)
        return;
    uint64_t now = bf_now_ns();
    uint64_t start = t->busy_until_ns > now ? t->busy_until_ns : now;
    t->busy_until_ns = start + (uint64_t)((double)n * 1e9 / (double)t->rate);
    /* Sleeping per 8 KiB transfer would add the timer's overshoot (tens of
       microseconds) to every call; a bounded lead keeps the long-run rate exact
       with one sleep per couple of milliseconds of modelled transfer. */
    if (t->busy_until_ns <= now + LEAD_NS)
        return;
    uint64_t wake = t->busy_until_ns - RESUME_NS;
    int saved = errno;
    struct timespec until = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
    errno = saved;
}

static int th_open(void *ctx, const char *path, int flags, mode_t mode)
{
    throttle *t = ctx;
    return t->inner.open(t->inner.ctx, path, flags, mode);
}

static int th_close(void *ctx, int fd)
{
    throttle *t = ctx;
    return t->inner.close(t->inner.ctx, fd);
}

static ssize_t th_pwritev(void *ctx, int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    throttle *t = ctx;
    ssize_t n = t->inner.pwritev(t->inner.ctx, fd, iov, iovcnt, off);
    charge(t, n);
    return n;
}

static ssize_t th_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    throttle *t = ctx;
    ssize_t n = t->inner.pread(t->inner.ctx, fd, buf, len, off);
    charge(t, n);
    return n;
}

static int th_ftruncate(void *ctx, int fd, off_t len)
{
    throttle *t = ctx;
    return t->inner.ftruncate(t->inner.ctx, fd, len);
}

static int th_unlink(void *ctx, const char *path)
{
    throttle *t = ctx;
    return t->inner.unlink(t->inner.ctx, path);
}

int bf_throttle_wrap(const bf_allocator *a, const bf_io *inner, uint64_t bytes_per_sec, bf_io *out,
                     void **state)
{
    throttle *t = bf_calloc(a, 1, sizeof(*t));
    if (t == NULL)
        return BF_ENOMEM;
    t->inner = *inner;
    t->rate = bytes_per_sec;
    *out = (bf_io){th_open, th_close, th_pwritev, th_pread, th_ftruncate, th_unlink, t};
    *state = t;
    return BF_OK;
}

void bf_throttle_free(const bf_allocator *a, void *state)
{
    bf_free(a, state);
}
