/*
 * io_posix.c - the production I/O table: thin wrappers over POSIX calls.
 * Implements: bf_posix_io (io.h).
 *
 * EINTR is retried here so that every layer above sees only real failures.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static int posix_open(void *ctx, const char *path, int flags, mode_t mode)
{
    (void)ctx;
    int fd;
    do
        fd = open(path, flags, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

static int posix_close(void *ctx, int fd)
{
    (void)ctx;
    return close(fd);
}

static ssize_t posix_pwritev(void *ctx, int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    (void)ctx;
    ssize_t n;
    /* One buffer (a bare block: the common case) goes out as stock's does, with pwrite: the
       kernel then has no iovec array to copy in. */
    do
        n = iovcnt == 1 ? pwrite(fd, iov[0].iov_base, iov[0].iov_len, off)
                        : pwritev(fd, iov, iovcnt, off);
    while (n < 0 && errno == EINTR);
    return n;
}

static ssize_t posix_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    (void)ctx;
    ssize_t n;
    do
        n = pread(fd, buf, len, off);
    while (n < 0 && errno == EINTR);
    return n;
}

static int posix_ftruncate(void *ctx, int fd, off_t len)
{
    (void)ctx;
    int rc;
    do
        rc = ftruncate(fd, len);
    while (rc < 0 && errno == EINTR);
    return rc;
}

static int posix_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return unlink(path);
}

const bf_io bf_posix_io = {posix_open,      posix_close,  posix_pwritev, posix_pread,
                           posix_ftruncate, posix_unlink, NULL};
