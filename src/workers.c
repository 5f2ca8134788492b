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
 * - A slot the caller no longer wants (its block dropped) is marked
 *   `cancel`, relaxed: a task that sees the mark makes the slot DONE
 *   without packing it; one that started before packs it for nothing.
 *   Either way the caller frees it only once it is DONE.
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
 * wake. A worker that ran dry spins for the next block up to 200 us: a
 * spilling thread hands one over or asks for reads ahead every few tens of
 * us, and a wake of a sleeping worker cost that thread more than the codec
 * it moved away (issue 49, docs/results/workers.md "A worker that waits
 * awake": a futex wake and an IPI to an idle vCPU took ~7.6 us of the
 * caller's CPU in spillbench's Q18, one every ~5 blocks, and its own work
 * slowed around them; over its five largest spillers lz4 + 1 worker took
 * 1.06 of none's wall with a 3 us spin, 1.016 / 1.007 / 0.990 / 0.990 with
 * 50 / 100 / 200 / 500 us; over all 14, 1.032 with 3 us, 0.987 with 200). The
 * spin is paid in CPU time on an otherwise idle core (the process's CPU
 * 1.38 -> 1.58 of none's there): what a worker costs an engine that gives
 * it one. Both bounded: a space whose caller stopped handing blocks over
 * costs no CPU 200 us later.
 */
#define WORKER_SPIN_NS 200000
#define CALLER_SPIN_NS 30000

/* A worker's slots hold at most this many bytes of blocks (2 to BF_WORKER_SLOTS slots): a
   sorter run of SQLite's (~2 MB at its default cache size) fits. */
#define WINDOW_BYTES (2u * 1024u * 1024u)

/*
 * Whether the caller, its window full, packs the oldest queued block
 * itself while a worker is running (1), or waits for the workers (0: it
 * packs only when every worker is asleep). Helping kept the caller busy
 * instead of asleep, but its time is the wall with one worker on 2 cores,
 * and in SQLite's write bursts it was 5-14% of its thread (issue 49). A
 * build-time switch for measuring one against the other.
 */
#ifndef BF_WORKERS_HELP_WHEN_FULL
#define BF_WORKERS_HELP_WHEN_FULL 0
#endif

/* A cache line's size (x86-64, most arm64): the padding between fields that two threads write. */
#define LINE 64

/* An owner's entry of the caller's index (workers.h). */
typedef struct owner_ent {
    const void *owner;
    uint32_t head, tail; /* its blocks to store, oldest first (fnext) */
    uint32_t bad;        /* of those, slots with `bad` set */
} owner_ent;

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
    _Atomic uint32_t *queue; /* nslots entries: slot indexes, submission order */
    /* What a worker writes at every slot (head, finished) and what the caller writes at
       every submission (tail, next_seq) on cache lines of their own: shared, each side's
       writes took the line from the other at every block (issue 49: bf_workers_submit was
       ~2% of SQLite's thread once the worker packed whole bursts). Padding, not
       _Alignas: the struct comes from the caller's allocator (bf_calloc), which promises
       malloc's alignment only; 64 bytes between two fields keep them off one line
       wherever the struct lies. */
    _Atomic uint64_t head; /* taken (never wraps) */
    char pad_head[LINE];
    _Atomic uint64_t tail; /* appended (never wraps) */
    uint64_t next_seq;     /* submissions (the caller's) */
    char pad_tail[LINE];
    _Atomic uint64_t finished; /* slots made DONE */
    char pad_finished[LINE];
    _Atomic uint32_t tasks;   /* a runner's tasks not yet returned */
    _Atomic uint32_t idle;    /* threads asleep on `work`, or about to be */
    _Atomic uint32_t waiting; /* the caller asleep on `done`, or about to be */
    _Atomic uint64_t wake_at; /* ... for `finished` at least this (0: any slot done) */
    uint64_t fault_in;        /* tests: submissions until the faulty one (0: none) */
    int fault_status;
    _Atomic uint64_t failures; /* slots a task made DONE with a failure */
    _Atomic uint64_t skipped;  /* slots a task made DONE unpacked: cancelled (bf_workers_cancel) */
    /* the caller's index (workers.h; the caller's thread only) */
    uint64_t *freemap; /* a bit a slot: set when no owner holds it */
    uint32_t *buckets; /* nslots chains of (owner, blkno) through hnext */
    owner_ent *owners; /* owners with blocks to store, dense (nslots at most) */
    uint32_t nowners;
    uint32_t *otab; /* open addressing: an owner's entry index + 1 (0: empty) */
    uint32_t otab_mask;
    uint32_t rhead, rtail;  /* blocks unpacked ahead, oldest first */
    uint64_t failures_seen; /* `failures` at the last scan for them */
    uint64_t full_waits;    /* bf_workers_wait_any with a slot in flight: the window full */
    uint64_t full_packed;   /* of those, blocks the caller packed itself */
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

static void free_arrays(const bf_allocator *a, bf_workers *w)
{
    bf_free(a, w->h.slots);
    bf_free(a, (void *)w->queue);
    bf_free(a, w->threads);
    bf_free(a, w->freemap);
    bf_free(a, w->buckets);
    bf_free(a, w->owners);
    bf_free(a, w->otab);
    bf_free(a, w);
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
    uint32_t words = (w->h.nslots + 63) / 64, ocap = 1;
    while (ocap < 2 * w->h.nslots)
        ocap *= 2;
    w->otab_mask = ocap - 1;
    w->freemap = bf_calloc(a, words, sizeof(*w->freemap));
    w->buckets = bf_calloc(a, w->h.nslots, sizeof(*w->buckets));
    w->owners = bf_calloc(a, w->h.nslots, sizeof(*w->owners));
    w->otab = bf_calloc(a, ocap, sizeof(*w->otab));
    if (w->h.slots == NULL || w->queue == NULL || (run == NULL && w->threads == NULL) ||
        w->freemap == NULL || w->buckets == NULL || w->owners == NULL || w->otab == NULL ||
        pthread_mutex_init(&w->mu, NULL) != 0) {
        free_arrays(a, w);
        return BF_ENOMEM;
    }
    for (uint32_t i = 0; i < w->h.nslots; i++) {
        w->h.slots[i].w = w;
        w->freemap[i / 64] |= (uint64_t)1 << (i % 64);
        w->buckets[i] = BF_JOB_NIL;
    }
    w->rhead = w->rtail = BF_JOB_NIL;
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    *out = w;
    return BF_OK;
}

/* Pack one slot (the slot is RUNNING: no one else touches it but the caller, which may only
   cancel it). */
static void job_run(bf_job *j)
{
    /* Relaxed: either way is right (a block packed for nothing costs time, not data); the
       caller waits for DONE, which orders everything else. */
    if (atomic_load_explicit(&j->cancel, memory_order_relaxed)) {
        j->rc = BF_OK;
        j->w->skipped++;
        return;
    }
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
    int failed = j->rc != BF_OK;
    if (j->pin != NULL) { /* before DONE: a caller that sees the slot done sees it lowered */
        atomic_fetch_sub(j->pin, 1);
        j->pin = NULL;
    }
    j->state = BF_JOB_DONE;
    if (failed) /* after DONE: the caller that sees the count sees the slot done */
        w->failures++;
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
    free_arrays(a, w);
}

int bf_workers_own_threads(const bf_workers *w)
{
    return w->run == NULL;
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

void bf_workers_wake(bf_workers *w)
{
    if (w->run == NULL && w->idle > 0 && w->head != w->tail)
        wake(w, &w->work, 0);
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
    w->full_waits++;
    /* With a window that holds a burst, a full one means the workers are behind: the caller
       packing a block itself then costs its thread (the wall) what the worker would have
       spent (issue 49). It helps only when no worker runs (every thread asleep, about to be
       woken, or not started), or when built to (BF_WORKERS_HELP_WHEN_FULL). */
    if ((BF_WORKERS_HELP_WHEN_FULL || w->idle >= w->started) && help_one(w)) {
        w->full_packed++;
        wake_for_wait(w);
        return 1; /* a slot is done: the caller commits what it can */
    }
    /* The window is full: the caller outruns the workers. It sleeps until half of what is
       in flight is done, woken once for that batch, and does not spin: spinning for each
       slot cost the caller what the worker spent packing the block (issue 49: SQLite's
       sorter writes its runs in bursts; with one worker ~3.5% of its thread's CPU was this
       spin). The workers keep packing the other half while it refills. */
    uint64_t want = was + (w->next_seq - was + 1) / 2;
    wait_until(w, finished_reach, &want, want, 0);
    return 1;
}

/* ---- the caller's index (workers.h) ------------------------------------ */

static uint32_t slot_index(bf_workers *w, const bf_job *j)
{
    return (uint32_t)(j - w->h.slots);
}

static uint32_t hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9u;
    return (uint32_t)(x >> 32);
}

static uint32_t bucket_of(bf_workers *w, const void *owner, uint64_t blkno)
{
    uint64_t x = (hash_ptr(owner) ^ blkno) * 0x9e3779b97f4a7c15u;
    return (uint32_t)((x >> 32) % w->h.nslots);
}

/* The otab position of `owner`, or of the empty one where it would go. */
static uint32_t otab_pos(const bf_workers *w, const void *owner)
{
    uint32_t i = hash_ptr(owner) & w->otab_mask;
    while (w->otab[i] != 0 && w->owners[w->otab[i] - 1].owner != owner)
        i = (i + 1) & w->otab_mask;
    return i;
}

static owner_ent *owner_get(const bf_workers *w, const void *owner)
{
    uint32_t i = otab_pos(w, owner);
    return w->otab[i] != 0 ? &w->owners[w->otab[i] - 1] : NULL;
}

/* `owner`'s entry, made if it has none (there is room: an owner holds a slot). */
static owner_ent *owner_add(bf_workers *w, const void *owner)
{
    uint32_t i = otab_pos(w, owner);
    if (w->otab[i] == 0) {
        owner_ent *e = &w->owners[w->nowners++];
        *e = (owner_ent){owner, BF_JOB_NIL, BF_JOB_NIL, 0};
        w->otab[i] = w->nowners;
    }
    return &w->owners[w->otab[i] - 1];
}

/* `owner`'s entry goes (its list is empty): the last takes its place in the dense array, and
   the open addressing's run is shifted back over the hole (no tombstones). */
static void owner_remove(bf_workers *w, const void *owner)
{
    uint32_t i = otab_pos(w, owner), at = w->otab[i] - 1, last = w->nowners - 1;
    /* First out of the table, so that no position names `at` while the last moves there. */
    w->otab[i] = 0;
    for (uint32_t k = (i + 1) & w->otab_mask; w->otab[k] != 0; k = (k + 1) & w->otab_mask) {
        uint32_t home = hash_ptr(w->owners[w->otab[k] - 1].owner) & w->otab_mask;
        /* Moved back into the hole if its home is not in (i, k] (cyclically). */
        if (((k - home) & w->otab_mask) >= ((k - i) & w->otab_mask)) {
            w->otab[i] = w->otab[k];
            w->otab[k] = 0;
            i = k;
        }
    }
    if (at != last) {
        w->otab[otab_pos(w, w->owners[last].owner)] = at + 1;
        w->owners[at] = w->owners[last];
    }
    w->nowners--;
}

/* The head and tail a slot's list has: its owner's blocks to store, or the reads'. */
static void list_ends(bf_workers *w, const bf_job *j, uint32_t **head, uint32_t **tail,
                      owner_ent **e)
{
    *e = NULL;
    if (j->task != NULL) {
        *head = &w->rhead;
        *tail = &w->rtail;
        return;
    }
    *e = owner_get(w, j->owner);
    *head = &(*e)->head;
    *tail = &(*e)->tail;
}

void bf_workers_link(bf_workers *w, bf_job *j)
{
    uint32_t i = slot_index(w, j), *head, *tail;
    owner_ent *e;
    w->freemap[i / 64] &= ~((uint64_t)1 << (i % 64));
    uint32_t b = bucket_of(w, j->owner, j->blkno);
    j->hnext = w->buckets[b];
    w->buckets[b] = i;
    if (j->task == NULL)
        owner_add(w, j->owner);
    list_ends(w, j, &head, &tail, &e);
    j->fnext = BF_JOB_NIL;
    j->fprev = *tail;
    if (*tail != BF_JOB_NIL)
        w->h.slots[*tail].fnext = i;
    else
        *head = i;
    *tail = i;
    j->bad = 0;
    j->linked = 1;
}

static void unlink_job(bf_workers *w, bf_job *j)
{
    uint32_t i = slot_index(w, j), *head, *tail;
    owner_ent *e;
    uint32_t *p = &w->buckets[bucket_of(w, j->owner, j->blkno)];
    while (*p != i)
        p = &w->h.slots[*p].hnext;
    *p = j->hnext;
    list_ends(w, j, &head, &tail, &e);
    if (j->fprev != BF_JOB_NIL)
        w->h.slots[j->fprev].fnext = j->fnext;
    else
        *head = j->fnext;
    if (j->fnext != BF_JOB_NIL)
        w->h.slots[j->fnext].fprev = j->fprev;
    else
        *tail = j->fprev;
    if (e != NULL) {
        e->bad -= j->bad;
        if (e->head == BF_JOB_NIL)
            owner_remove(w, j->owner);
    }
    j->linked = 0;
    j->bad = 0;
    w->freemap[i / 64] |= (uint64_t)1 << (i % 64);
}

bf_job *bf_workers_free_slot(bf_workers *w, uint32_t window)
{
    for (uint32_t k = 0; k * 64 < window; k++) {
        uint64_t word = w->freemap[k];
        if (window - k * 64 < 64)
            word &= ((uint64_t)1 << (window - k * 64)) - 1;
        if (word != 0)
            return &w->h.slots[k * 64 + (uint32_t)__builtin_ctzll(word)];
    }
    return NULL;
}

bf_job *bf_workers_first(bf_workers *w, const void *owner)
{
    const owner_ent *e = w->nowners != 0 ? owner_get(w, owner) : NULL;
    return e != NULL ? &w->h.slots[e->head] : NULL;
}

bf_job *bf_workers_find(bf_workers *w, const void *owner, uint64_t blkno, int read, int newest)
{
    bf_job *best = NULL;
    for (uint32_t i = w->buckets[bucket_of(w, owner, blkno)]; i != BF_JOB_NIL;) {
        bf_job *j = &w->h.slots[i];
        if (j->owner == owner && j->blkno == blkno && (j->task != NULL) == read &&
            (best == NULL || (newest ? j->seq > best->seq : j->seq < best->seq)))
            best = j;
        i = j->hnext;
    }
    return best;
}

bf_job *bf_workers_reads(bf_workers *w)
{
    return w->rhead != BF_JOB_NIL ? &w->h.slots[w->rhead] : NULL;
}

uint32_t bf_workers_nowners(const bf_workers *w)
{
    return w->nowners;
}

void *bf_workers_owner(const bf_workers *w, uint32_t i)
{
    return (void *)w->owners[i].owner;
}

/* Whether `j`, a block to store, is to be counted bad: stuck, or failed on a worker. */
static int job_bad(const bf_job *j)
{
    return j->stuck || (j->state == BF_JOB_DONE && j->rc != BF_OK);
}

static void set_bad(bf_workers *w, bf_job *j)
{
    int bad = job_bad(j);
    if (bad != j->bad) {
        owner_ent *e = owner_get(w, j->owner);
        e->bad = e->bad + (uint32_t)bad - j->bad;
        j->bad = (uint8_t)bad;
    }
}

uint32_t bf_workers_bad(bf_workers *w, const void *owner)
{
    uint64_t failures = w->failures;
    if (failures != w->failures_seen) { /* rare: a scan of the owners' lists */
        w->failures_seen = failures;
        for (uint32_t o = 0; o < w->nowners; o++)
            for (uint32_t i = w->owners[o].head; i != BF_JOB_NIL; i = w->h.slots[i].fnext)
                set_bad(w, &w->h.slots[i]);
    }
    const owner_ent *e = w->nowners != 0 ? owner_get(w, owner) : NULL;
    return e != NULL ? e->bad : 0;
}

void bf_workers_set_stuck(bf_workers *w, bf_job *j, int stuck)
{
    j->stuck = (uint8_t)stuck;
    if (j->linked && j->task == NULL)
        set_bad(w, j);
}

void bf_workers_full_counts(const bf_workers *w, uint64_t *waits, uint64_t *packed)
{
    *waits = w->full_waits;
    *packed = w->full_packed;
}

void bf_workers_cancel(bf_workers *w, bf_job *j)
{
    (void)w;
    atomic_store_explicit(&j->cancel, 1, memory_order_relaxed);
}

uint64_t bf_workers_cancelled(const bf_workers *w)
{
    return w->skipped;
}

void bf_workers_release(bf_workers *w, bf_job *j)
{
    if (j->linked)
        unlink_job(w, j);
    /* DONE: no task reads it until the slot is submitted again, which publishes this. */
    atomic_store_explicit(&j->cancel, 0, memory_order_relaxed);
    atomic_store_explicit(&j->state, BF_JOB_FREE, memory_order_relaxed);
    j->owner = NULL;
}

uint64_t bf_workers_memory(const bf_workers *w)
{
    uint64_t m = sizeof(*w) + (uint64_t)w->h.nslots * (sizeof(bf_job) + sizeof(*w->queue)) +
                 (w->threads != NULL ? w->n * sizeof(pthread_t) : 0);
    m += (uint64_t)(w->h.nslots + 63) / 64 * sizeof(*w->freemap) +
         (uint64_t)w->h.nslots * (sizeof(*w->buckets) + sizeof(*w->owners)) +
         ((uint64_t)w->otab_mask + 1) * sizeof(*w->otab);
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
