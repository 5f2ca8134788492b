/*
 * bench_util.h - what every benchmark here needs: a monotonic clock, the
 * median of repeated measurements, a one-line fatal error, a space with
 * one anonymous file in it, and a timed spill through it.
 */
#ifndef BF_BENCH_UTIL_H
#define BF_BENCH_UTIL_H

#include "buffile.h"

/* Seconds on the monotonic clock. */
double bench_now(void);

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* Print "<prog>: <msg>" on stderr and exit 1. */
_Noreturn void bench_die(const char *prog, const char *msg);

/* Create a space with options `o`; an error ends the process through bench_die(prog, ...).
 * The caller destroys the space. */
bf_space *bench_space(const bf_space_options *o, const char *prog);

/* Create a space with options `o` and one anonymous file in it; any error
 * ends the process through bench_die(prog, ...). The caller closes the file
 * and destroys the space. */
void bench_space_file(const bf_space_options *o, const char *prog, bf_space **sp, bf_file **f);

/* Write `len` bytes of `data` through `f` in 64 KiB calls, rewind, read them back and check the
 * last chunk; the seconds all of it took. Any error ends the process (bench_die). */
double bench_write_read(bf_file *f, const unsigned char *data, size_t len, const char *prog);

/* The same with the caller's own work after each call: `work_ns_per_kib` ns of CPU per KiB
 * the call moved, spun on the caller's thread (an executor's work between its reads and
 * writes, during which a device that has no queue idles). */
double bench_write_read_work(bf_file *f, const unsigned char *data, size_t len, const char *prog,
                             double work_ns_per_kib);

/* Called about 8 times a phase by bench_batches: `writing` or reading, `bytes` so far. */
typedef void (*bench_progress)(bf_space *sp, int writing, size_t bytes);

/* A hash join's pattern: `nfiles` new files of `sp`, `len` bytes of `data` written in 8 KiB
 * calls, call i to file i % nfiles (every file's next block fills in turn, so each goes out
 * as its own request), then each file read back whole in turn and checked, with
 * `work_ns_per_kib` of the caller's work after each call; the files are closed. The
 * seconds the writes and reads took (with `progress`'s, if not NULL). Any error ends the
 * process (bench_die). */
double bench_batches(bf_space *sp, int nfiles, const unsigned char *data, size_t len,
                     const char *prog, double work_ns_per_kib, bench_progress progress);

#endif
