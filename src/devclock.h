/*
 * devclock.h - the time a transfer waited on the device, not the wall:
 * what codec=auto's device figures are made of (auto_file.c feeds them to
 * bf_auto_note_transfer).
 *
 * A thread preempted inside a pwritev makes a page-cache write look like a
 * wait on a slow device, and runs of such false waits time the device at
 * the CPU's pace. The kernel counts, per thread, the time it was runnable
 * but waited for a CPU: the second field of /proc/thread-self/schedstat,
 * "run_delay" (ns). It moves only when the thread is switched in, so the
 * thread's own reading is exact. A transfer's wait is its wall time less
 * the run delay it had; the thread's CPU time is not taken out (against
 * auto's threshold of 1 ms + 1 ns/B a transfer's own CPU time, microseconds,
 * does not matter, and its clock costs a system call).
 *
 * Reading schedstat costs ~260 ns (a pread on a descriptor kept open; the
 * vDSO's wall clock 16 ns; an 8 KiB page-cache write ~2.6 us: a reading at
 * both ends of every transfer would add 20%). So run_delay is read
 *  - at the end of a transfer that took over BF_DEVCLOCK_LONG_NS on the
 *    wall: the run delay it had is then taken as all the delay since the
 *    last reading, up to its own duration (an upper bound: a preempted
 *    page-cache write is never a wait; a true wait is at worst undercounted
 *    by the caller's preemption since the last reading);
 *  - at both ends of the BF_DEVCLOCK_ARM timed transfers after such a one
 *    that is still over BF_DEVCLOCK_LONG_NS once that run delay is out (it
 *    may have waited on the device; a preempted page-cache call arms
 *    nothing): a device that limits makes most transfers wait, and those
 *    are then measured exactly, ~0.5 us against a wait of a millisecond or
 *    more;
 *  - at the end of the first timed transfer after BF_DEVCLOCK_WINDOW bytes
 *    of timed transfers without a reading, so that the bound stays tight.
 * In the page cache that measured 0.3-0.8 readings per MiB moved; where
 * the device waits, one or two per wait (docs/results/device-clock.md).
 *
 * `cpu_ns`: the run delay before or in the transfer; `paused`: over
 * BF_AUTO_GAP's 2 ms. auto ends a run of waits where it adds up to that
 * since the run's last wait, as at a pause of the caller: the device may
 * have run dry meanwhile. Runs themselves stay
 * timed on the wall clock, from one wait's end to another's: a device with
 * a queue works while its caller waits for a CPU (timed on wall - run
 * delay, io_limit's devices read up to 40% fast under CPU burners). But a
 * wait's end is late by the run delay the thread had in it (woken by the
 * device, it waited for a CPU): `late_ns`, known when the transfer was
 * armed, is taken off the run's ends; a transfer not armed that may have
 * had run delay is `unsure`, and no run starts at it.
 *
 * No schedstat (a kernel without CONFIG_SCHED_INFO, /proc not mounted, a
 * sandbox that hides it), or a reading that fails: the wall clock alone,
 * as before this clock, silently (wait = wall time, never paused); the
 * descriptor is closed and not tried again for the space's life.
 *
 * The descriptor is one of the space's: the caller's fd_acquire hook is
 * asked before it is opened (never with `must`: the clock can do without)
 * and fd_release called when it is closed. Refused, the clock is the wall
 * clock until BF_DEVCLOCK_WINDOW more bytes of timed transfers went by,
 * then asks again.
 *
 * Invariants: all-zero is a valid clock that opens the default path at
 * its first reading (a space is calloc'ed); `fd` is open only in state
 * BF_DEVCLOCK_OPEN, and then holds one fd_acquire of `hooks` (if they have
 * one) and reads thread `tid`'s schedstat (a reading from
 * another thread, or in a forked child, reopens it first); `rq` is the run
 * delay at the last reading. A space is one thread's at a time (buffile.h),
 * so nothing here is shared.
 */
#ifndef BF_DEVCLOCK_H
#define BF_DEVCLOCK_H

#include <stdint.h>
#include <sys/types.h>

#include "buffile.h"

#define BF_DEVCLOCK_LONG_NS 200000u   /* a transfer this long on the wall may have been preempted */
#define BF_DEVCLOCK_ARM 16u           /* timed transfers after a long one read at both ends */
#define BF_DEVCLOCK_WINDOW (1u << 20) /* bytes of timed transfers between readings at most */
#define BF_DEVCLOCK_PAUSE 2000000u    /* run delay that ends a run of waits (BF_AUTO_GAP) */

enum {
    BF_DEVCLOCK_UNOPENED = 0, /* opens `path` at its first reading */
    BF_DEVCLOCK_OPEN,         /* reading `fd` */
    BF_DEVCLOCK_WALL,         /* no run delay: the wall clock alone */
    BF_DEVCLOCK_REFUSED       /* the caller's fd_acquire said no: the wall clock for a while */
};

typedef struct bf_devclock {
    int state;
    int fd;
    const bf_io_hooks *hooks; /* the space's (fd_acquire, fd_release); NULL: none */
    pid_t tid;                /* the thread whose schedstat `fd` reads */
    const char *path;  /* NULL: /proc/thread-self/schedstat; else a test's file (its string) */
    int off;           /* the wall clock alone, by choice (a test's fake device) */
    uint64_t rq;       /* run_delay (ns) at the last reading */
    uint64_t since;    /* bytes of timed transfers since the last reading (or refusal) */
    uint32_t armed;    /* timed transfers left to read at both ends */
    int cur_armed;     /* the transfer in flight is one of them */
    uint64_t gap_rq;   /* its run delay before it (read at its start) */
    uint64_t readings; /* schedstat readings made: what the clock cost */
} bf_devclock;

/* What one transfer's time is made of. */
typedef struct bf_devwait {
    uint64_t wait_ns; /* its wall time less the run delay it (at most) had */
    uint64_t late_ns; /* the run delay it had, when read at both its ends (armed); else 0 */
    uint64_t cpu_ns;  /* the run delay before or in it since the last transfer timed (exact
                         when armed; else at most all since the last reading) */
    int paused;       /* cpu_ns is over BF_DEVCLOCK_PAUSE */
    int unsure;       /* not armed, and it may have had run delay: late_ns is not known */
} bf_devwait;

/* Just before a timed transfer's wall clock starts: reads run_delay if it is armed. */
void bf_devclock_begin(bf_devclock *dc);

/* Just after it: the transfer moved `bytes` in `wall_ns` on the wall clock. */
bf_devwait bf_devclock_end(bf_devclock *dc, uint64_t bytes, uint64_t wall_ns);

/*
 * Read run delays from `path` instead of /proc/thread-self/schedstat (tests:
 * a file they write, "CPU-time run-delay slices" as the kernel's; a path
 * that does not exist: the fallback); or, `off`, none at all (a fake
 * device's clock has no run delay). Closes what was open.
 */
void bf_devclock_set_source(bf_devclock *dc, const char *path, int off);

/* Ask `hooks` (the space's, kept; NULL: none) before opening, tell them after closing. */
void bf_devclock_set_hooks(bf_devclock *dc, const bf_io_hooks *hooks);

/* Close the descriptor (the space is destroyed); the clock may be used again after. */
void bf_devclock_close(bf_devclock *dc);

#endif
