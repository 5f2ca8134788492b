/*
 * device.h - the modelled device behind slowfs: which buckets a read or a
 * write passes, the per-request latency, and the counters for the stats.
 *
 * A request passes the shared bucket (--rate) and its direction's bucket
 * (--read-rate or --write-rate), each where set, and completes when the
 * slower of them allows, plus the latency. Latencies of concurrent requests
 * overlap, as on a device with a command queue; bandwidth does not.
 */
#ifndef SLOWFS_DEVICE_H
#define SLOWFS_DEVICE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"

enum { SF_READ = 0, SF_WRITE = 1 };

/* The model's settings; a rate of 0 means that bucket is absent (unlimited). */
typedef struct sf_model {
    uint64_t rate;        /* shared by reads and writes, bytes/s */
    uint64_t dir_rate[2]; /* SF_READ, SF_WRITE: bytes/s */
    uint64_t burst_ns;    /* each bucket's credit (bucket.h) */
    uint64_t resume_ns;   /* the backlog a held request is released at (bucket.h) */
    uint64_t latency_ns;  /* added to every read and write request */
} sf_model;

typedef struct sf_counters {
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t bytes;
    atomic_uint_fast64_t wait_ns;     /* time the model held requests, summed over requests */
    atomic_uint_fast64_t max_request; /* largest request seen, bytes */
} sf_counters;

typedef struct sf_device {
    sf_model model;
    sf_bucket shared, dir[2];
    sf_counters count[2];
    atomic_uint_fast64_t fsyncs;
    uint64_t started_ns;
} sf_device;

/* Set up the device for `m`, its clock starting at `now_ns`. */
void sf_device_init(sf_device *d, const sf_model *m, uint64_t now_ns);
void sf_device_destroy(sf_device *d);

/*
 * Account a request of direction `dir` that arrived at `arrival_ns` and
 * moved `bytes` (what the backing call transferred; 0 for a read at end of
 * file, which still pays the latency). Returns when it may complete; the
 * hold (that time less `now_ns`, when positive) is added to the counters.
 */
uint64_t sf_device_charge(sf_device *d, int dir, uint64_t arrival_ns, uint64_t now_ns,
                          uint64_t bytes);

/* Sleep until `deadline_ns` on the monotonic clock (returns at once if it has passed). */
void sf_sleep_until(uint64_t deadline_ns);

/*
 * Write the settings and counters as "name value" lines into buf (at most
 * len bytes, NUL-terminated). Returns the length the text needs, as snprintf.
 */
int sf_device_format(sf_device *d, uint64_t now_ns, char *buf, size_t len);

/* The monotonic clock in nanoseconds. */
uint64_t sf_now_ns(void);

#endif
