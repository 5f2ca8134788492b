/*
 * workers.c - the in-flight slots of a space and the threads that pack
 * them (workers.h says what runs where).
 *
 * The common path takes no lock and makes no system call: a block handed
 * over costs the caller a copy and a few atomic operations. A handoff
 * through a mutex, a condition variable and a futex wake per 8 KiB block
 * cost more than lz4 saved (issue 49: `none` with a worker took 1.34x the
 * wall time of `none` without, with ~4 context switches a block; a wake
 * on another vCPU costs several microseconds of both threads' time), so
 * the mutex and the condition variables are only for sleeping, and a
 * sleeping worker is woken for a batch of blocks, not for each:
 *
 * - Submitted slots go into `queue`, a ring of slot indexes in submission
 *   order: the caller (one thread) appends at `tail`, workers take at
 *   `head` with a compare-and-swap. At most nslots slots are ever queued
 *   (a slot is queued again only after it is DONE), so the ring, nslots
 *   long, never overwrites an entry not yet taken.
 * - A worker sleeps on `work` only after it counted itself in `idle` and
 *   saw the queue empty; the caller wakes one only when `idle` is not zero
 *   and half of a worker's share of the window waits (or the caller is about to
 *   wait), so a sleeping worker is woken once per few blocks, not once per
 *   block. The caller sleeps on `done` only after it counted itself in
 *   `waiting` and saw its condition unmet; a worker signals only when
 *   `waiting` is not zero and `finished` reached the caller's `wake_at`
 *   (a caller waiting for a free slot sleeps until half of what is in
 *   flight is done, woken once for the batch). Each pair is a store then a load on both sides
 *   (all sequentially consistent), so one of them sees the other: no
 *   wakeup is lost; the sleeper takes the mutex before it counts itself
 *   and the waker takes and releases it before it signals, so the signal
 *   cannot fall between the count and the wait (a sleeper counted is in
 *   its wait once the waker holds the mutex). The signal is made after the
 *   mutex is released: signalled under it, the woken thread blocks on the
 *   mutex the waker still holds, and the waker's unlock then costs a second
 *   futex call (issue 49: ~2% of the spilling thread's CPU time in
 *   __lll_lock_wake, with one worker).
 * - A slot's state is atomic: the caller's stores before QUEUED are seen by
 *   the worker that takes the slot from the ring, the worker's results
 *   before DONE by the caller that sees DONE.
 *
 * A runner's task is the same body without the loop. The set never calls
 * back into the space: committing is the caller's (file.c).
 */
#include "workers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "alloc.h"

/*
 * How long a worker that found the queue empty spins before it sleeps, and
 * the caller before it sleeps on a slot. The caller waits only when the
 * window is full or it needs a block back, and then for a block being
 * packed (lz4: ~20 us for 8 KiB): spinning that long saves a sleep and a
 * wake. A worker that ran dry would spin for the next block for nothing
 * most of the time (a spilling thread hands one over every few tens of us,
 * and it is woken for a batch anyway): the spin measured as CPU time, not
 * as wall time, so the worker's is short. Both bounded: an idle space
 * costs no CPU.
 */
#define WORKER_SPIN_NS 3000
#define CALLER_SPIN_NS 30000

/* A worker's slots hold at most this many bytes of blocks (2 to BF_WORKER_SLOTS slots). */
#define WINDOW_BYTES (128u * 1024u)

struct bf_workers {
    bf_workers_head h; /* first: workers.h's inline accessors read it (nslots, slots) */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    unsigned n;
    pthread_t *threads;
    unsigned started;
    _Atomic int stop;
    void (*run)(void *ctx, void (*task)(void *arg), void *arg);
    void *run_ctx;
    _Atomic uint32_t *queue;     /* nslots entries: slot indexes, submission order */
    _Atomic uint64_t head, tail; /* taken, appended (never wrap) */
    uint64_t next_seq;           /* submissions (the caller's) */
    _Atomic uint64_t finished;   /* slots made DONE */
    _Atomic uint32_t tasks;      /* a runner's tasks not yet returned */
    _Atomic uint32_t idle;       /* threads asleep on `work`, or about to be */
    _Atomic uint32_t waiting;    /* the caller asleep on `done`, or about to be */
    _Atomic uint64_t wake_at;    /* ... for `finished` at least this (0: any slot done) */
    uint64_t fault_in;           /* tests: submissions until the faulty one (0: none) */
    int fault_status;
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Wake one (`all`: every) thread asleep on `cv`. The mutex is taken and
 * released first: a sleeper that counted itself under it is then in its
 * wait (the signal cannot fall before it); the signal follows the unlock,
 * so the woken thread does not find the mutex held (header comment).
 */
static void wake(bf_workers *w, pthread_cond_t *cv, int all)
{
    pthread_mutex_lock(&w->mu);
    pthread_mutex_unlock(&w->mu);
    if (all)
        pthread_cond_broadcast(cv);
    else
        pthread_cond_signal(cv);
}

/* Spin until done(w, arg) or `spin_ns` have passed; whether it is done. */
static int spin_until(bf_workers *w, int (*done)(bf_workers *, const void *), const void *arg,
                      uint64_t spin_ns)
{
    uint64_t until = 0;
    for (unsigned i = 0;; i++) {
        if (done(w, arg))
            return 1;
        if ((i & 63) == 0) { /* the clock now and then: a pause is ~10-150 cycles */
            uint64_t t = now_ns();
            if (until == 0)
                until = t + spin_ns;
            else if (t >= until)
                return 0;
        }
        cpu_relax();
    }
}

int bf_workers_new(const bf_allocator *a, unsigned n,
                   void (*run)(void *ctx, void (*task)(void *arg), void *arg), void *run_ctx,
                   bf_workers **out)
{
    *out = NULL;
    bf_workers *w = bf_calloc(a, 1, sizeof(*w));
    if (w == NULL)
        return BF_ENOMEM;
    w->n = n;
    w->run = run;
    w->run_ctx = run_ctx;
    /* Up to BF_WORKER_SLOTS a worker (bf_workers_window): one it packs, the others queued
       or waiting for their commit, so that a sleeping worker is woken for a batch and a
       burst of blocks does not make the caller wait. */
    w->h.nslots = BF_WORKER_SLOTS * n;
    w->h.slots = bf_calloc(a, w->h.nslots, sizeof(*w->h.slots));
    w->queue = bf_calloc(a, w->h.nslots, sizeof(*w->queue));
    w->threads = run == NULL ? bf_calloc(a, n, sizeof(*w->threads)) : NULL;
    if (w->h.slots == NULL || w->queue == NULL || (run == NULL && w->threads == NULL)) {
        bf_free(a, w->h.slots);
        bf_free(a, (void *)w->queue);
        bf_free(a, w->threads);
        bf_free(a, w);
        return BF_ENOMEM;
    }
    for (uint32_t i = 0; i < w->h.nslots; i++)
        w->h.slots[i].w = w;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        bf_free(a, w->h.slots);
        bf_free(a, (void *)w->queue);
        bf_free(a, w->threads);
        bf_free(a, w);
        return BF_ENOMEM;
    }
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    *out = w;
    return BF_OK;
}

/* Pack one slot (the slot is RUNNING: no one else touches it). */
static void job_run(bf_job *j)
{
    if (j->task != NULL) { /* not a block to pack: a block read ahead (readahead.c) */
        j->rc = j->task(j);
        return;
    }
    bf_extent_seal seal = {j->seal, j->id};
    j->rc = bf_extent_pack(j->ops, j->ctx, j->level, j->blkno, j->gen, j->data, j->raw_len,
                           j->sealed ? &seal : NULL, j->out, j->iov, &j->iovcnt, &j->info);
    if (j->rc == BF_OK && j->fault != 0)
        j->rc = j->fault; /* a worker failing mid-block: its bytes are packed, then lost */
}

/* The slot is done: the caller sees its results with its state; wake it if it sleeps. */
static void job_finish(bf_workers *w, bf_job *j)
{
    j->state = BF_JOB_DONE;
    uint64_t finished = ++w->finished;
    if (w->waiting > 0 && finished >= w->wake_at)
        wake(w, &w->done, 1);
}

/* The runner's task: one slot. */
static void job_task(void *arg)
{
    bf_job *j = arg;
    bf_workers *w = j->w;
    j->state = BF_JOB_RUNNING;
    job_run(j);
    job_finish(w, j);
    w->tasks--; /* the task's last touch of the set: bf_workers_free waits for it */
}

static int queue_nonempty(bf_workers *w, const void *unused)
{
    (void)unused;
    return w->head != w->tail || w->stop;
}

/* The oldest queued slot, taken (RUNNING), or NULL when the queue is empty. */
static bf_job *queue_take(bf_workers *w)
{
    uint64_t h = w->head;
    while (h != w->tail) {
        uint32_t i = w->queue[h % w->h.nslots];
        if (atomic_compare_exchange_weak(&w->head, &h, h + 1)) {
            bf_job *j = &w->h.slots[i];
            j->state = BF_JOB_RUNNING;
            return j;
        }
    }
    return NULL;
}

static void *worker_main(void *arg)
{
    bf_workers *w = arg;
    for (;;) {
        bf_job *j = queue_take(w);
        if (j != NULL) {
            job_run(j);
            job_finish(w, j);
            continue;
        }
        if (w->stop)
            break;
        if (spin_until(w, queue_nonempty, NULL, WORKER_SPIN_NS))
            continue;
        pthread_mutex_lock(&w->mu);
        w->idle++;
        while (!queue_nonempty(w, NULL))
            pthread_cond_wait(&w->work, &w->mu);
        w->idle--;
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

/* The caller is about to wait: a worker asleep with slots queued is woken first. */
static void wake_for_wait(bf_workers *w)
{
    if (w->idle > 0 && w->head != w->tail)
        wake(w, &w->work, 1);
}

/*
 * Wait until done(w, arg): spinning first if `spin`, then asleep, woken by
 * a slot made DONE once `finished` reaches `wake_at` (0: at every slot).
 * wake_at is stored before `waiting` is counted, and job_finish reads it
 * after `waiting`: a worker that sees the caller counted sees its target.
 */
static void wait_until(bf_workers *w, int (*done)(bf_workers *, const void *), const void *arg,
                       uint64_t wake_at, int spin)
{
    wake_for_wait(w);
    if (spin && spin_until(w, done, arg, CALLER_SPIN_NS))
        return;
    pthread_mutex_lock(&w->mu);
    w->wake_at = wake_at;
    w->waiting++;
    while (!done(w, arg))
        pthread_cond_wait(&w->done, &w->mu);
    w->waiting--;
    pthread_mutex_unlock(&w->mu);
}

static int all_finished(bf_workers *w, const void *unused)
{
    (void)unused;
    return w->finished == w->next_seq;
}

void bf_workers_free(const bf_allocator *a, bf_workers *w)
{
    if (w == NULL)
        return;
    /* A runner's tasks, or threads' slots, use the slots; a task past its slot's DONE is
       about to return (a moment). */
    wait_until(w, all_finished, NULL, 0, 1);
    while (w->tasks > 0)
        sched_yield();
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    for (unsigned i = 0; i < w->started; i++)
        pthread_join(w->threads[i], NULL);
    for (uint32_t i = 0; i < w->h.nslots; i++) {
        bf_job *j = &w->h.slots[i];
        for (int c = 0; c < BF_JOB_CODECS; c++)
            if (j->ctxs[c] != NULL)
                bf_codec_ops_get((bf_codec)c)->ctx_destroy(a, j->ctxs[c]);
        bf_seal_free(a, j->seal);
        bf_free(a, j->data);
        bf_free(a, j->out);
    }
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->mu);
    bf_free(a, w->h.slots);
    bf_free(a, (void *)w->queue);
    bf_free(a, w->threads);
    bf_free(a, w);
}

uint32_t bf_workers_window(const bf_workers *w, uint32_t block_size)
{
    uint32_t per = block_size > 0 ? WINDOW_BYTES / block_size : BF_WORKER_SLOTS;
    per = per < 2 ? 2 : per > BF_WORKER_SLOTS ? BF_WORKER_SLOTS : per;
    return per * w->n;
}

int bf_workers_submit(bf_workers *w, bf_job *j, uint32_t window)
{
    if (w->run == NULL && w->started < w->n) {
        /* Threads start on the first block that needs one: a space that never spills a
           block costs none. One that cannot start leaves those that did. */
        while (w->started < w->n &&
               pthread_create(&w->threads[w->started], NULL, worker_main, w) == 0)
            w->started++;
        if (w->started == 0)
            return BF_ENOMEM;
    }
    j->seq = w->next_seq++;
    j->state = BF_JOB_QUEUED;
    if (w->run != NULL) {
        w->tasks++;
        w->run(w->run_ctx, job_task, j);
        return BF_OK;
    }
    uint64_t t = w->tail;
    w->queue[t % w->h.nslots] = (uint32_t)(j - w->h.slots);
    w->tail = t + 1; /* publishes the slot (and the entry) to the workers */
    /* A sleeping worker is woken once half of a worker's share of the window waits: then
       it packs a batch while the caller fills the other half. Fewer wait only until the
       caller needs a slot or a block back (wake_for_wait). */
    uint32_t wake_at = window / w->n / 2;
    if (w->idle > 0 && t + 1 - w->head >= (wake_at > 0 ? wake_at : 1))
        wake(w, &w->work, 0);
    return BF_OK;
}

static int job_done(bf_workers *w, const void *j)
{
    (void)w;
    return ((const bf_job *)j)->state == BF_JOB_DONE;
}

/*
 * The caller, about to wait, packs the oldest queued slot itself (taken
 * from the ring as a worker takes it): 1 if it did, 0 when the ring is
 * empty (every slot in flight is running on a worker) or the slots are the
 * runner's. Waiting there cost the caller a wake of a sleeping worker, a
 * sleep of its own and the wake-up latency, and with one worker on 2 cores
 * the caller's time is the wall (issue 49: in a burst of spilled blocks,
 * a hash join's batches, the caller fills the window faster than one
 * worker packs lz4, and slept in bf_workers_wait_any ~100 times a query at
 * SF 0.1). Packing here costs what the same block costs without workers,
 * and the worker packs the next one meanwhile. Only the caller's thread
 * waits, so a slot's contexts and sealer are still used by one thread at a
 * time, and the allocator hooks are not called (the contexts exist).
 * XXX a failure of a slot packed here is reported as it is for a worker's
 * (at the file's next call, its message saying "on a worker": file.c's
 * job_commit does not know which thread ran it).
 */
static int help_one(bf_workers *w)
{
    if (w->run != NULL)
        return 0;
    bf_job *k = queue_take(w);
    if (k == NULL)
        return 0;
    job_run(k);
    job_finish(w, k);
    return 1;
}

void bf_workers_wait(bf_workers *w, const bf_job *j)
{
    /* The ring is in submission order: a queued `j` is reached by taking from its head. */
    while (!job_done(w, j) && j->state == BF_JOB_QUEUED && help_one(w))
        ;
    if (!job_done(w, j))
        wait_until(w, job_done, j, 0, 1);
}

static int finished_reach(bf_workers *w, const void *want)
{
    return w->finished >= *(const uint64_t *)want;
}

int bf_workers_wait_any(bf_workers *w)
{
    uint64_t was = w->finished;
    if (was == w->next_seq)
        return 0; /* nothing queued or running */
    if (help_one(w))
        return 1; /* a slot is done: the caller commits what it can */
    /* The window is full: the caller outruns the workers. It sleeps until half of what is
       in flight is done, woken once for that batch, and does not spin: spinning for each
       slot cost the caller what the worker spent packing the block (issue 49: SQLite's
       sorter writes its runs in bursts; with one worker ~3.5% of its thread's CPU was this
       spin). The workers keep packing the other half while it refills. */
    uint64_t want = was + (w->next_seq - was + 1) / 2;
    wait_until(w, finished_reach, &want, want, 0);
    return 1;
}

void bf_workers_release(bf_workers *w, bf_job *j)
{
    (void)w;
    atomic_store_explicit(&j->state, BF_JOB_FREE, memory_order_relaxed);
    j->owner = NULL;
}

uint64_t bf_workers_memory(const bf_workers *w)
{
    uint64_t m = sizeof(*w) + (uint64_t)w->h.nslots * (sizeof(bf_job) + sizeof(*w->queue)) +
                 (w->threads != NULL ? w->n * sizeof(pthread_t) : 0);
    for (uint32_t i = 0; i < w->h.nslots; i++)
        m += w->h.slots[i].data_size + w->h.slots[i].out_size;
    return m;
}

void bf_workers_fail_at(bf_workers *w, uint64_t nth, int status)
{
    w->fault_in = nth;
    w->fault_status = status;
}

int bf_workers_next_fault(bf_workers *w)
{
    if (w->fault_in == 0)
        return 0;
    return --w->fault_in == 0 ? w->fault_status : 0;
}
