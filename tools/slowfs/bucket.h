/*
 * bucket.h - slowfs's bandwidth model: a token bucket kept as a virtual
 * schedule (the "generic cell rate algorithm" form), with hysteresis.
 *
 * A bucket of `rate` bytes per second keeps the time at which the bytes
 * reserved so far will have been transferred; what remains of it at a
 * request's arrival is the backlog. A request completes at once while the
 * backlog, its own transfer included, is at most `burst_ns` (the bucket's
 * credit); past that it is held until only `resume_ns` of backlog remains.
 * With resume_ns = burst_ns every request waits just its share; with less,
 * callers are held in pauses of burst - resume, as a device with a
 * write-back cache (or the kernel's dirty-page throttling) holds a writer.
 * Requests reserve one after another under the bucket's lock, so
 * concurrent callers are served first come, first served, and their sum
 * never runs faster than the rate (over any window, by at most the burst).
 */
#ifndef SLOWFS_BUCKET_H
#define SLOWFS_BUCKET_H

#include <pthread.h>
#include <stdint.h>

typedef struct sf_bucket {
    pthread_mutex_t lock;
    uint64_t rate;      /* bytes per second; a bucket of rate 0 is never reserved on */
    uint64_t burst_ns;  /* backlog a request may leave and still complete at once */
    uint64_t resume_ns; /* backlog a held request is released at (<= burst_ns) */
    uint64_t tat_ns;    /* when the transfers reserved so far are done (0: none yet) */
} sf_bucket;

/* Set up a bucket of `rate` bytes per second; resume_ns <= burst_ns. */
void sf_bucket_init(sf_bucket *b, uint64_t rate, uint64_t burst_ns, uint64_t resume_ns);
void sf_bucket_destroy(sf_bucket *b);

/*
 * Reserve `bytes` (rate > 0) for a request that arrived at `arrival_ns`
 * (monotonic clock). Returns the time at which the request may complete:
 * arrival_ns while the backlog it leaves is within the burst, else when
 * that backlog is down to resume_ns. Thread-safe; never fails.
 */
uint64_t sf_bucket_reserve(sf_bucket *b, uint64_t arrival_ns, uint64_t bytes);

/* Transfer time of `bytes` at `rate` (> 0) bytes per second, in nanoseconds, rounded to nearest. */
uint64_t sf_transfer_ns(uint64_t bytes, uint64_t rate);

#endif
