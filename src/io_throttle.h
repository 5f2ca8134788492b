/*
 * io_throttle.h - an I/O table that models a device of limited bandwidth.
 *
 * Wraps another table; every pwritev/pread of n bytes occupies the modelled
 * device for n / rate seconds, reads and writes queueing one after another,
 * and the call returns when its transfer would have finished. The data
 * still goes to the page cache: only time is modelled, which is what a
 * benchmark of compression on slow disks needs.
 */
#ifndef BF_IO_THROTTLE_H
#define BF_IO_THROTTLE_H

#include <stdint.h>

#include "buffile.h"
#include "io.h"

/* Build a throttled table around `inner`; *state is allocated (free with bf_throttle_free). */
int bf_throttle_wrap(const bf_allocator *a, const bf_io *inner, uint64_t bytes_per_sec, bf_io *out,
                     void **state);
void bf_throttle_free(const bf_allocator *a, void *state);

#endif
