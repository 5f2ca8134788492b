/*
 * io_stack.c - building and freeing the space's I/O stack (io_stack.h).
 * Implements: bf_iostack_init, bf_iostack_free.
 */
#include "io_stack.h"

#include <string.h>

#include "io_hooks.h"
#include "io_throttle.h"

int bf_iostack_init(bf_iostack *s, const bf_allocator *a, uint64_t io_limit,
                    const bf_io_hooks *hooks)
{
    memset(s, 0, sizeof(*s));
    s->io = bf_posix_io;
    int rc = BF_OK;
    if (io_limit != 0)
        rc = bf_throttle_wrap(a, &bf_posix_io, io_limit, &s->io, &s->throttle);
    /* Outermost, so that a hook's wait or timer covers a throttled transfer's wait too. */
    if (rc == BF_OK && hooks != NULL) {
        s->hooks = *hooks;
        rc = bf_hooks_wrap(a, hooks, &s->io, &s->hooked);
    }
    return rc;
}

void bf_iostack_free(bf_iostack *s, const bf_allocator *a)
{
    bf_hooks_free(a, s->hooked);
    bf_throttle_free(a, s->throttle);
    s->hooked = s->throttle = NULL;
}
