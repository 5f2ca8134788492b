/*
 * progress.h - spillbench's progress line on stderr: what runs now, the
 * time elapsed and an estimate of the time left (ETA), redrawn in place.
 * Drawn only when stderr is a terminal (progress_init's `on`); otherwise
 * every call does nothing, so a log or a pipe gets no control characters.
 *
 * The work is counted in units (runs of a query, or the generator's own
 * units); the ETA is the elapsed time scaled by the units left over the
 * units done, so it is rough while few units are done.
 */
#ifndef TPCH_PROGRESS_H
#define TPCH_PROGRESS_H

#include <stdbool.h>

typedef struct progress {
    bool on;      /* stderr is a terminal */
    bool drawn;   /* a line is on the screen */
    double start; /* monotonic seconds at progress_init */
    double total; /* units of work in all */
    double done;  /* units done */
} progress;

/* Start counting `total` units; `on`: draw (stderr is a terminal). */
void progress_init(progress *p, bool on, double total);

/* Set the units done so far. */
void progress_set(progress *p, double done);

/* Draw "<what> | <elapsed> elapsed, ETA <left>" over the current line (printf format). */
void progress_show(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Erase the line (before other output on stderr, and at the end). */
void progress_clear(progress *p);

/* "45s", "3m05s", "2h07m": a duration in seconds as the progress line writes it. */
void progress_duration(double seconds, char *buf, unsigned n);

#endif
