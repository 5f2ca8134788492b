/*
 * device.c - the modelled device: buckets, latency and counters.
 *
 * Counters are relaxed atomics: each is exact on its own, and a stats
 * snapshot taken while requests run may mix one request's bytes with the
 * previous one's wait, which no reader of totals can tell apart.
 */
#include "device.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

uint64_t sf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sf_device_init(sf_device *d, const sf_model *m, uint64_t now_ns)
{
    d->model = *m;
    sf_bucket_init(&d->shared, m->rate, m->burst_ns, m->resume_ns);
    for (int i = 0; i < 2; i++) {
        sf_bucket_init(&d->dir[i], m->dir_rate[i], m->burst_ns, m->resume_ns);
        atomic_init(&d->count[i].requests, 0);
        atomic_init(&d->count[i].bytes, 0);
        atomic_init(&d->count[i].wait_ns, 0);
        atomic_init(&d->count[i].max_request, 0);
    }
    atomic_init(&d->fsyncs, 0);
    d->started_ns = now_ns;
}

void sf_device_destroy(sf_device *d)
{
    sf_bucket_destroy(&d->shared);
    for (int i = 0; i < 2; i++)
        sf_bucket_destroy(&d->dir[i]);
}

uint64_t sf_device_charge(sf_device *d, int dir, uint64_t arrival_ns, uint64_t now_ns,
                          uint64_t bytes)
{
    uint64_t done = arrival_ns;
    if (d->model.rate) {
        uint64_t t = sf_bucket_reserve(&d->shared, arrival_ns, bytes);
        done = t > done ? t : done;
    }
    if (d->model.dir_rate[dir]) {
        uint64_t t = sf_bucket_reserve(&d->dir[dir], arrival_ns, bytes);
        done = t > done ? t : done;
    }
    done += d->model.latency_ns;

    sf_counters *c = &d->count[dir];
    atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
    if (done > now_ns)
        atomic_fetch_add_explicit(&c->wait_ns, done - now_ns, memory_order_relaxed);
    uint_fast64_t max = atomic_load_explicit(&c->max_request, memory_order_relaxed);
    while (bytes > max &&
           !atomic_compare_exchange_weak_explicit(&c->max_request, &max, bytes,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return done;
}

void sf_sleep_until(uint64_t deadline_ns)
{
    struct timespec until = {(time_t)(deadline_ns / 1000000000u),
                             (long)(deadline_ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

static uint64_t load(atomic_uint_fast64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

int sf_device_format(sf_device *d, uint64_t now_ns, char *buf, size_t len)
{
    const sf_model *m = &d->model;
    sf_counters *r = &d->count[SF_READ], *w = &d->count[SF_WRITE];
    const struct {
        const char *name;
        uint64_t value;
    } line[] = {
        {"rate", m->rate},
        {"read_rate", m->dir_rate[SF_READ]},
        {"write_rate", m->dir_rate[SF_WRITE]},
        {"burst_ns", m->burst_ns},
        {"resume_ns", m->resume_ns},
        {"latency_ns", m->latency_ns},
        {"uptime_ns", now_ns - d->started_ns},
        {"read_requests", load(&r->requests)},
        {"read_bytes", load(&r->bytes)},
        {"read_wait_ns", load(&r->wait_ns)},
        {"read_max_request", load(&r->max_request)},
        {"write_requests", load(&w->requests)},
        {"write_bytes", load(&w->bytes)},
        {"write_wait_ns", load(&w->wait_ns)},
        {"write_max_request", load(&w->max_request)},
        {"fsyncs", load(&d->fsyncs)},
    };
    size_t used = 0;
    for (size_t i = 0; i < sizeof line / sizeof line[0]; i++) {
        int n = snprintf(buf + (used < len ? used : len), used < len ? len - used : 0,
                         "%s %" PRIu64 "\n", line[i].name, line[i].value);
        used += (size_t)n;
    }
    return (int)used;
}
