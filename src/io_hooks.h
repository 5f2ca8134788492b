/*
 * io_hooks.h - the I/O table that tells a caller's bf_io_hooks of every
 * transfer and descriptor of a space.
 *
 * Wraps the space's table (posix, or throttled) only when the caller set a
 * hook, so a space without hooks runs the plain table and pays nothing.
 */
#ifndef BF_IO_HOOKS_H
#define BF_IO_HOOKS_H

#include "buffile.h"

struct bf_space;

/* Copy `hooks` into the space and wrap its I/O table; BF_ENOMEM when the state cannot be made. */
int bf_hooks_wrap(struct bf_space *space, const bf_io_hooks *hooks);
void bf_hooks_free(const bf_allocator *a, void *state);

#endif
