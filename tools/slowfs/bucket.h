/*
 * bucket.h - slowfs's bandwidth model: a token bucket kept as a virtual
 * schedule (the "generic cell rate algorithm" form).
 *
 * A bucket of `rate` bytes per second holds at most `burst_ns` of transfer
 * time in credit. Each request reserves its bytes' transfer time on the
 * bucket's schedule and learns when it may complete; requests reserve one
 * after another under the bucket's lock, so concurrent callers are served
 * first come, first served and their sum never runs faster than the rate
 * (over any window, by at most the burst).
 */
#ifndef SLOWFS_BUCKET_H
#define SLOWFS_BUCKET_H

#include <pthread.h>
#include <stdint.h>

typedef struct sf_bucket {
    pthread_mutex_t lock;
    uint64_t rate;     /* bytes per second; a bucket of rate 0 is never reserved on */
    uint64_t burst_ns; /* credit the bucket may hold, in transfer time */
    uint64_t tat_ns;   /* when the transfers reserved so far are done (0: none yet) */
} sf_bucket;

/* Set up a bucket of `rate` bytes per second with `burst_ns` of credit. */
void sf_bucket_init(sf_bucket *b, uint64_t rate, uint64_t burst_ns);
void sf_bucket_destroy(sf_bucket *b);

/*
 * Reserve `bytes` (rate > 0) for a request that arrived at `arrival_ns` (monotonic
 * clock). Returns the time at which the request may complete: never before
 * arrival_ns, and no earlier than its transfer allows after everything
 * reserved before it, less the burst credit. Thread-safe; never fails.
 */
uint64_t sf_bucket_reserve(sf_bucket *b, uint64_t arrival_ns, uint64_t bytes);

/* Transfer time of `bytes` at `rate` (> 0) bytes per second, in nanoseconds, rounded to nearest. */
uint64_t sf_transfer_ns(uint64_t bytes, uint64_t rate);

#endif
