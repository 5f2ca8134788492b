/*
 * bucket.c - the token bucket as a virtual schedule.
 *
 * Invariant: tat_ns is the time at which every byte reserved so far has been
 * transferred at the bucket's rate, with idle time forfeited: a reservation
 * starts its transfer at max(tat_ns, arrival). Holding the schedule instead
 * of a token count keeps one comparison and one addition under the lock, and
 * a request larger than the burst still goes through (it simply waits for
 * its transfer less the resume backlog).
 */
#include "bucket.h"

void sf_bucket_init(sf_bucket *b, uint64_t rate, uint64_t burst_ns, uint64_t resume_ns)
{
    pthread_mutex_init(&b->lock, NULL);
    b->rate = rate;
    b->burst_ns = burst_ns;
    b->resume_ns = resume_ns;
    b->tat_ns = 0;
}

void sf_bucket_destroy(sf_bucket *b)
{
    pthread_mutex_destroy(&b->lock);
}

uint64_t sf_transfer_ns(uint64_t bytes, uint64_t rate)
{
    unsigned __int128 scaled = (unsigned __int128)bytes * 1000000000u + rate / 2;
    return (uint64_t)(scaled / rate);
}

uint64_t sf_bucket_reserve(sf_bucket *b, uint64_t arrival_ns, uint64_t bytes)
{
    uint64_t cost = sf_transfer_ns(bytes, b->rate);
    pthread_mutex_lock(&b->lock);
    uint64_t start = b->tat_ns > arrival_ns ? b->tat_ns : arrival_ns;
    b->tat_ns = start + cost;
    uint64_t done = b->tat_ns;
    pthread_mutex_unlock(&b->lock);
    if (done <= arrival_ns + b->burst_ns)
        return arrival_ns;
    return done - b->resume_ns;
}
