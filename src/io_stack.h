/*
 * io_stack.h - the space's I/O stack: the table every transfer of the space
 * goes through (POSIX, under a throttle when io_limit is set, under the
 * caller's transfer hooks when given: outermost, so a hook's timer covers
 * a throttled wait too), the caller's hooks themselves, and the clock
 * codec=auto times transfers with.
 *
 * Invariants: `io` is only replaced whole (tests install fault-injecting
 * tables with bf_space_set_io while no file is open); the states behind it
 * are freed with the stack.
 */
#ifndef BF_IO_STACK_H
#define BF_IO_STACK_H

#include <stdint.h>

#include "buffile.h"
#include "clock.h"
#include "io.h"

typedef struct bf_iostack {
    bf_io io;                     /* what every open, transfer and unlink goes through */
    bf_io_hooks hooks;            /* the caller's hooks (all NULL: none) */
    void *throttle;               /* io_throttle's state when io_limit is set */
    void *hooked;                 /* io_hooks' state when a transfer hook is set */
    uint64_t (*clock)(void *ctx); /* what auto times transfers with; NULL: monotonic */
    void *clock_ctx;
} bf_iostack;

/*
 * Build the stack: POSIX, throttled to `io_limit` bytes per second (0:
 * not), under `hooks` (NULL: none; copied). BF_OK or BF_ENOMEM (what was
 * made is freed by bf_iostack_free all the same).
 */
int bf_iostack_init(bf_iostack *s, const bf_allocator *a, uint64_t io_limit,
                    const bf_io_hooks *hooks);

void bf_iostack_free(bf_iostack *s, const bf_allocator *a);

/* The time codec=auto gives a transfer. */
static inline uint64_t bf_iostack_now(const bf_iostack *s)
{
    return s->clock != NULL ? s->clock(s->clock_ctx) : bf_now_ns();
}

/* Tell the caller's blocks hook, if any, of `n` logical blocks loaded or stored. */
static inline void bf_iostack_blocks(const bf_iostack *s, bf_io_op op, uint64_t n)
{
    if (s->hooks.blocks != NULL)
        s->hooks.blocks(s->hooks.ctx, op, n);
}

#endif
