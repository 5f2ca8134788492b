/*
 * progress.c - spillbench's progress line (see progress.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_init(progress *p, bool on, double total)
{
    p->on = on;
    p->drawn = false;
    p->start = now();
    p->total = total;
    p->done = 0;
}

void progress_set(progress *p, double done)
{
    p->done = done;
}

void progress_duration(double seconds, char *buf, unsigned n)
{
    long s = seconds < 0 ? 0 : (long)(seconds + 0.5);
    if (s < 60)
        snprintf(buf, n, "%lds", s);
    else if (s < 3600)
        snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, n, "%ldh%02ldm", s / 3600, s / 60 % 60);
}

void progress_show(progress *p, const char *fmt, ...)
{
    if (!p->on)
        return;
    char what[256], elapsed[32], left[32] = "?";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    double t = now() - p->start;
    progress_duration(t, elapsed, sizeof elapsed);
    if (p->done > 0 && p->total >= p->done)
        progress_duration(t * (p->total - p->done) / p->done, left, sizeof left);
    fprintf(stderr, "\r\033[K%s | %s elapsed, ETA %s", what, elapsed, left);
    fflush(stderr);
    p->drawn = true;
}

void progress_clear(progress *p)
{
    if (!p->on || !p->drawn)
        return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    p->drawn = false;
}
