/*
 * devclock.h - PROTOTYPE: time a transfer waited on the device, not the
 * wall (the device-clock proposal). Not in src/: bench/profile only.
 *
 * codec=auto times its transfers with the wall clock (bf_space_io_now). A
 * thread preempted inside a pwritev makes the transfer look like a wait,
 * and a run of such false waits times the device at the CPU's pace. The
 * kernel counts, per thread, the time it was runnable but waited for a CPU:
 * the second field of /proc/thread-self/schedstat, "run_delay", which moves
 * only when the thread is switched in, so a reading by the thread itself is
 * exact. So:
 *  - a transfer waited for the device if its wall time less the run delay
 *    it had (wait_ns) is over auto's threshold (1 ms + 1 ns/B);
 *  - runs of waits are still timed on the wall clock (the device works while
 *    the caller computes or waits for a CPU, as long as it has a queue: a
 *    run of true waits is not made slower by preemption between them), but
 *    a run ends, like at a pause of the caller over 2 ms, when the thread
 *    waited over DC_PAUSE for a CPU since the last transfer (`paused`): the
 *    device may have run dry meanwhile.
 * Reading schedstat costs ~260 ns (pread on a descriptor kept open; the
 * vDSO's clock 16 ns): too much per 8 KiB transfer, so the clock reads it
 *  - at the end of a transfer that took over DC_LONG_NS on the wall: its run
 *    delay is then at most all the delay since the last reading (an upper
 *    bound: a preempted transfer in the page cache never counts as a wait;
 *    a true wait may be undercounted by the caller's preemption before it);
 *  - at both ends of the DC_ARM transfers after a long one: a device that
 *    limits makes most transfers wait, and those are then measured exactly,
 *    for ~0.5 us against a wait of a millisecond or more;
 *  - once per DC_WINDOW bytes of transfers, so that the bound stays tight.
 * In the page cache on a quiet machine that is one reading per MiB.
 */
#ifndef BF_DEVCLOCK_H
#define BF_DEVCLOCK_H

#include <stdint.h>

#define DC_LONG_NS 200000u   /* a transfer this long on the wall may have been preempted */
#define DC_ARM 16u           /* transfers after a long one read the delay at both ends */
#define DC_WINDOW (1u << 20) /* bytes of transfers between readings at most */
#define DC_PAUSE 2000000u    /* run delay between transfers that ends a run (BF_AUTO_GAP) */

typedef struct dc_clock {
    int fd;            /* /proc/thread-self/schedstat; -1: the wall clock alone */
    uint64_t rq;       /* run_delay (ns) at the last reading */
    uint64_t since;    /* bytes of transfers since the last reading */
    uint32_t armed;    /* transfers left to read at both ends */
    int cur_armed;     /* the transfer in flight is one of them */
    uint64_t gap_rq;   /* its run delay since the previous transfer (when armed) */
    uint64_t readings; /* schedstat readings made: what the clock cost */
    /* what dc_end tells of the last transfer */
    uint64_t wall_start, wall_end;
    uint64_t dev_start, dev_end; /* the same on the clock wall - run delay (as last read) */
    uint64_t wait_ns;            /* its wall time less the run delay it (at most) had */
    int paused;                  /* the thread waited over DC_PAUSE for a CPU before it */
    int preempted;               /* ... before it or in it (at most) */
} dc_clock;

void dc_init(dc_clock *dc);
void dc_close(dc_clock *dc);
void dc_begin(dc_clock *dc);
void dc_end(dc_clock *dc, uint64_t bytes);

/* The thread's run_delay now (ns), read from schedstat on `fd`; 0 if it cannot. */
uint64_t dc_read_run_delay(int fd);

/* The monotonic clock in ns (vDSO). */
uint64_t dc_wall(void);

#endif
