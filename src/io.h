/*
 * io.h - the I/O seam: the only way the library touches the file system.
 *
 * Every open/pwrite/pread/ftruncate/unlink/close goes through a bf_io
 * table held by the space. Production uses bf_posix_io; tests install
 * tables that fail at the Nth call (ENOSPC, EIO, short transfers) and,
 * later, a throttle can model a slow disk. Functions follow POSIX: -1 and
 * errno on failure, short counts allowed for pwritev/pread.
 */
#ifndef BF_IO_H
#define BF_IO_H

#include <sys/types.h>
#include <sys/uio.h>

typedef struct bf_io {
    int (*open)(void *ctx, const char *path, int flags, mode_t mode);
    int (*close)(void *ctx, int fd);
    ssize_t (*pwritev)(void *ctx, int fd, const struct iovec *iov, int iovcnt, off_t off);
    ssize_t (*pread)(void *ctx, int fd, void *buf, size_t len, off_t off);
    int (*ftruncate)(void *ctx, int fd, off_t len);
    int (*unlink)(void *ctx, const char *path);
    void *ctx;
} bf_io;

extern const bf_io bf_posix_io;

#endif
