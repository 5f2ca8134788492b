/* devclock.c - see devclock.h. PROTOTYPE (bench/profile only, not in src/). */
#define _GNU_SOURCE
#include "devclock.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

uint64_t dc_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t dc_read_run_delay(int fd)
{
    char b[96];
    ssize_t n = pread(fd, b, sizeof(b) - 1, 0);
    if (n <= 0)
        return 0;
    b[n] = 0;
    const char *p = b;
    while (*p && *p != ' ')
        p++;
    uint64_t v = 0;
    for (p++; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return v;
}

/* The run delay since the last reading. (A space used by another thread than the one that
   opened the file would read that thread's: a real version keeps the descriptor per thread.) */
static uint64_t reread(dc_clock *dc)
{
    if (dc->fd < 0)
        return 0;
    uint64_t rq = dc_read_run_delay(dc->fd), d = rq > dc->rq ? rq - dc->rq : 0;
    dc->rq = rq;
    dc->readings++;
    dc->since = 0;
    return d;
}

void dc_init(dc_clock *dc)
{
    *dc = (dc_clock){0};
    dc->fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    reread(dc);
}

void dc_close(dc_clock *dc)
{
    if (dc->fd >= 0)
        close(dc->fd);
    dc->fd = -1;
}

void dc_begin(dc_clock *dc)
{
    dc->cur_armed = dc->armed > 0;
    dc->gap_rq = 0;
    if (dc->cur_armed) {
        dc->armed--;
        dc->gap_rq = reread(dc);
    }
    dc->wall_start = dc_wall();
    dc->dev_start = dc->wall_start - dc->rq;
}

void dc_end(dc_clock *dc, uint64_t bytes)
{
    uint64_t wall = dc_wall(), dur = wall - dc->wall_start, d = 0;
    int is_long = dur > DC_LONG_NS;
    dc->wall_end = wall;
    dc->since += bytes;
    if (is_long || dc->cur_armed || dc->since >= DC_WINDOW)
        d = reread(dc);
    if (is_long)
        dc->armed = DC_ARM;
    /* Armed: d is the transfer's own delay (read just before its start), gap_rq the
       delay before it. Not armed: d spans the time since the last reading; as much of
       it as the transfer lasted is taken as its own (an upper bound), the rest came
       before it. */
    uint64_t own = d < dur ? d : dur;
    uint64_t before = (dc->cur_armed ? dc->gap_rq : 0) + (d - own);
    dc->wait_ns = dur - own;
    dc->paused = before > DC_PAUSE;
    dc->preempted = before + own > DC_PAUSE;
    dc->dev_end = wall - dc->rq;
}
