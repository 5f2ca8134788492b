/*
 * devclock.c - the time a transfer waited on the device (devclock.h has the
 * measure, its costs and the fallback).
 * Implements: devclock.h: bf_devclock_begin, bf_devclock_end,
 * bf_devclock_set_source, bf_devclock_set_hooks, bf_devclock_close.
 *
 * Invariants: as devclock.h's; nothing here prints, aborts or fails the
 * caller: any trouble with schedstat leaves the wall clock alone.
 */
#include "devclock.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define SCHEDSTAT "/proc/thread-self/schedstat"

/*
 * The run delay (second field) of a schedstat text "cpu_ns run_delay_ns
 * slices\n"; 0 when it is not there (then the reading failed).
 */
static int parse_run_delay(const char *p, uint64_t *out)
{
    while (*p == ' ')
        p++;
    while (*p >= '0' && *p <= '9')
        p++;
    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    *out = v;
    return 1;
}

/* Close the descriptor, if open, and give it back to the caller's budget. */
static void close_fd(bf_devclock *dc)
{
    if (dc->state != BF_DEVCLOCK_OPEN)
        return;
    close(dc->fd);
    if (dc->hooks != NULL && dc->hooks->fd_release != NULL)
        dc->hooks->fd_release(dc->hooks->ctx);
}

static void give_up(bf_devclock *dc)
{
    close_fd(dc);
    dc->state = BF_DEVCLOCK_WALL;
    dc->armed = 0;
}

/* Read run_delay into *rq from the descriptor; 0 when it cannot be (then give up). */
static int read_fd(bf_devclock *dc, uint64_t *rq)
{
    char b[128];
    ssize_t n;
    do
        n = pread(dc->fd, b, sizeof(b) - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return 0;
    b[n] = 0;
    dc->readings++;
    return parse_run_delay(b, rq);
}

/*
 * Open the schedstat of the calling thread `tid` and take its run delay as
 * the baseline. A failure is the fallback: the wall clock alone. The open
 * costs ~1.4 us, once per space and thread.
 */
static void open_for(bf_devclock *dc, pid_t tid)
{
    dc->since = 0;
    const bf_io_hooks *k = dc->hooks;
    if (k != NULL && k->fd_acquire != NULL && !k->fd_acquire(k->ctx, 0)) {
        dc->state = BF_DEVCLOCK_REFUSED;
        return;
    }
    int saved = errno; /* the caller's errno is not this clock's business */
    dc->fd = open(dc->path != NULL ? dc->path : SCHEDSTAT, O_RDONLY | O_CLOEXEC);
    if (dc->fd < 0) {
        if (k != NULL && k->fd_release != NULL)
            k->fd_release(k->ctx); /* every acquire is matched by one release */
        dc->state = BF_DEVCLOCK_WALL;
    } else {
        dc->state = BF_DEVCLOCK_OPEN;
        dc->tid = tid;
        if (!read_fd(dc, &dc->rq))
            give_up(dc);
    }
    errno = saved;
}

/*
 * The run delay since the last reading (0 with the wall clock alone). A
 * reading in another thread than the descriptor's (the space moved, or a
 * forked child uses it) reopens the descriptor and counts nothing: the
 * delay in between is not known. gettid is a system call (~50 ns), made
 * only at readings.
 */
static uint64_t reread(bf_devclock *dc)
{
    if (dc->off || dc->state == BF_DEVCLOCK_WALL || dc->state == BF_DEVCLOCK_REFUSED)
        return 0;
    pid_t tid = gettid();
    if (dc->state == BF_DEVCLOCK_OPEN && tid != dc->tid) {
        close_fd(dc);
        dc->state = BF_DEVCLOCK_UNOPENED;
    }
    if (dc->state == BF_DEVCLOCK_UNOPENED) {
        open_for(dc, tid);
        return 0;
    }
    int saved = errno;
    uint64_t rq;
    if (!read_fd(dc, &rq)) {
        give_up(dc);
        errno = saved;
        return 0;
    }
    errno = saved;
    uint64_t d = rq > dc->rq ? rq - dc->rq : 0;
    dc->rq = rq;
    dc->since = 0;
    return d;
}

void bf_devclock_begin(bf_devclock *dc)
{
    dc->gap_rq = 0;
    dc->cur_armed = 0;
    if (dc->off || dc->state == BF_DEVCLOCK_WALL || dc->state == BF_DEVCLOCK_REFUSED)
        return;
    if (dc->state == BF_DEVCLOCK_UNOPENED) {
        reread(dc); /* the baseline: auto's first timed transfer */
        return;
    }
    if (dc->armed > 0) {
        dc->armed--;
        dc->cur_armed = 1;
        dc->gap_rq = reread(dc);
    }
}

bf_devwait bf_devclock_end(bf_devclock *dc, uint64_t bytes, uint64_t wall_ns)
{
    if (dc->state == BF_DEVCLOCK_REFUSED && !dc->off) {
        dc->since += bytes;
        if (dc->since >= BF_DEVCLOCK_WINDOW)
            dc->state = BF_DEVCLOCK_UNOPENED; /* ask the caller again at the next one */
    }
    if (dc->off || dc->state != BF_DEVCLOCK_OPEN)
        return (bf_devwait){.wait_ns = wall_ns, .paused = 0};
    int is_long = wall_ns > BF_DEVCLOCK_LONG_NS;
    uint64_t d = 0;
    dc->since += bytes;
    if (is_long || dc->cur_armed || dc->since >= BF_DEVCLOCK_WINDOW)
        d = reread(dc);
    /* Armed: d is the transfer's own delay (read just before its start), gap_rq the
       delay before it. Not armed: d spans the time since the last reading; as much of it
       as the transfer lasted is taken as its own (an upper bound), the rest came before. */
    uint64_t own = d < wall_ns ? d : wall_ns;
    /* Arm only after a transfer that is still long once its run delay is out: it may have
       waited on the device. One that the run delay explains is a preempted page-cache
       call, and arming after it read schedstat at both ends of the next 16 transfers for
       nothing: on a loaded machine most of the clock's readings, ~0.08 a block in
       bench_spill (docs/results/none-path-profile.md). A true wait that the bound
       undercounted (the caller preempted before it, since the last reading) is missed
       once: the next wait, read alone, arms. */
    if (is_long && wall_ns - own > BF_DEVCLOCK_LONG_NS && dc->state == BF_DEVCLOCK_OPEN)
        dc->armed = BF_DEVCLOCK_ARM;
    uint64_t before = dc->gap_rq + (d - own);
    bf_devwait w = {.wait_ns = wall_ns - own,
                    .late_ns = dc->cur_armed ? own : 0,
                    .cpu_ns = before + own,
                    .paused = before + own > BF_DEVCLOCK_PAUSE,
                    .unsure = !dc->cur_armed && own > 0};
    dc->cur_armed = 0;
    dc->gap_rq = 0;
    return w;
}

void bf_devclock_set_source(bf_devclock *dc, const char *path, int off)
{
    bf_devclock_close(dc);
    dc->path = path;
    dc->off = off;
}

void bf_devclock_set_hooks(bf_devclock *dc, const bf_io_hooks *hooks)
{
    dc->hooks = hooks;
}

void bf_devclock_close(bf_devclock *dc)
{
    close_fd(dc);
    dc->state = BF_DEVCLOCK_UNOPENED;
    dc->armed = 0;
    dc->cur_armed = 0;
    dc->gap_rq = 0;
    dc->since = 0;
}
