/*
 * io_hooks.h - the I/O table that tells a caller's bf_io_hooks of every
 * transfer (io_start/io_done around each pread, pwritev and ftruncate).
 *
 * Wraps the space's table (posix, or throttled) only when the caller set a
 * transfer hook, so a space without hooks runs the plain table and pays
 * nothing. The descriptor hooks (fd_acquire/fd_release) are asked where
 * descriptors are opened and closed (segment.c), the blocks hook where
 * blocks are loaded and stored (file.c).
 */
#ifndef BF_IO_HOOKS_H
#define BF_IO_HOOKS_H

#include "buffile.h"
#include "io.h"

/*
 * Wrap `*io` with `hooks`' transfer hooks (copied), when it has any: *io
 * becomes the wrapper and *state what bf_hooks_free frees (else NULL).
 * BF_ENOMEM when the state cannot be made (*io unchanged).
 */
int bf_hooks_wrap(const bf_allocator *a, const bf_io_hooks *hooks, bf_io *io, void **state);
void bf_hooks_free(const bf_allocator *a, void *state);

#endif
