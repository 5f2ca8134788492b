/*
 * workers.c - the in-flight slots of a space and the threads that pack
 * them (workers.h says what runs where).
 *
 * One mutex guards every slot's state and the set's own fields; the packing
 * itself runs outside it, on a slot no one else touches while it is
 * RUNNING. Threads wait on `work` for a QUEUED slot (the oldest first, so a
 * file's blocks finish roughly in order), the caller on `done`. A runner's
 * task is the same body without the loop. The set never calls back into
 * the space: committing is the caller's (file.c).
 */
#include "workers.h"

#include <pthread.h>
#include <string.h>

#include "alloc.h"

struct bf_workers {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    unsigned n;
    pthread_t *threads;
    unsigned started;
    int stop;
    void (*run)(void *ctx, void (*task)(void *arg), void *arg);
    void *run_ctx;
    uint32_t nslots;
    bf_job *slots;
    uint64_t next_seq;
    uint32_t pending; /* QUEUED or RUNNING slots */
    uint64_t fault_in; /* tests: submissions until the faulty one (0: none) */
    int fault_status;
};

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
    /* Two slots a worker: one it packs while the other waits for its commit. */
    w->nslots = 2 * n;
    w->slots = bf_calloc(a, w->nslots, sizeof(*w->slots));
    w->threads = run == NULL ? bf_calloc(a, n, sizeof(*w->threads)) : NULL;
    if (w->slots == NULL || (run == NULL && w->threads == NULL)) {
        bf_free(a, w->slots);
        bf_free(a, w->threads);
        bf_free(a, w);
        return BF_ENOMEM;
    }
    for (uint32_t i = 0; i < w->nslots; i++)
        w->slots[i].w = w;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        bf_free(a, w->slots);
        bf_free(a, w->threads);
        bf_free(a, w);
        return BF_ENOMEM;
    }
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    *out = w;
    return BF_OK;
}

/* Pack one slot (no lock held: the slot is RUNNING, no one else touches it). */
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

static void job_finish(bf_workers *w, bf_job *j)
{
    pthread_mutex_lock(&w->mu);
    j->state = BF_JOB_DONE;
    w->pending--;
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->mu);
}

/* The runner's task: one slot. */
static void job_task(void *arg)
{
    bf_job *j = arg;
    bf_workers *w = j->w;
    pthread_mutex_lock(&w->mu);
    j->state = BF_JOB_RUNNING;
    pthread_mutex_unlock(&w->mu);
    job_run(j);
    job_finish(w, j);
}

static bf_job *oldest_queued(bf_workers *w)
{
    bf_job *best = NULL;
    for (uint32_t i = 0; i < w->nslots; i++)
        if (w->slots[i].state == BF_JOB_QUEUED && (best == NULL || w->slots[i].seq < best->seq))
            best = &w->slots[i];
    return best;
}

static void *worker_main(void *arg)
{
    bf_workers *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        bf_job *j;
        while ((j = oldest_queued(w)) == NULL && !w->stop)
            pthread_cond_wait(&w->work, &w->mu);
        if (j == NULL)
            break;
        j->state = BF_JOB_RUNNING;
        pthread_mutex_unlock(&w->mu);
        job_run(j);
        job_finish(w, j);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void bf_workers_free(const bf_allocator *a, bf_workers *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    while (w->pending > 0) /* a runner's tasks, or threads' slots: they use the slots */
        pthread_cond_wait(&w->done, &w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    for (unsigned i = 0; i < w->started; i++)
        pthread_join(w->threads[i], NULL);
    for (uint32_t i = 0; i < w->nslots; i++) {
        bf_job *j = &w->slots[i];
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
    bf_free(a, w->slots);
    bf_free(a, w->threads);
    bf_free(a, w);
}

uint32_t bf_workers_nslots(const bf_workers *w)
{
    return w->nslots;
}

bf_job *bf_workers_slot(bf_workers *w, uint32_t i)
{
    return &w->slots[i];
}

int bf_workers_state(bf_workers *w, const bf_job *j)
{
    pthread_mutex_lock(&w->mu);
    int s = j->state;
    pthread_mutex_unlock(&w->mu);
    return s;
}

int bf_workers_submit(bf_workers *w, bf_job *j)
{
    pthread_mutex_lock(&w->mu);
    if (w->run == NULL && w->started < w->n) {
        /* Threads start on the first block that needs one: a space that never spills a
           block costs none. One that cannot start leaves those that did. */
        while (w->started < w->n &&
               pthread_create(&w->threads[w->started], NULL, worker_main, w) == 0)
            w->started++;
        if (w->started == 0) {
            pthread_mutex_unlock(&w->mu);
            return BF_ENOMEM;
        }
    }
    j->seq = w->next_seq++;
    j->state = BF_JOB_QUEUED;
    w->pending++;
    if (w->run == NULL)
        pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    if (w->run != NULL)
        w->run(w->run_ctx, job_task, j);
    return BF_OK;
}

void bf_workers_wait(bf_workers *w, const bf_job *j)
{
    pthread_mutex_lock(&w->mu);
    while (j->state != BF_JOB_DONE)
        pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

int bf_workers_wait_any(bf_workers *w)
{
    pthread_mutex_lock(&w->mu);
    uint32_t was = w->pending;
    while (w->pending == was && was > 0)
        pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return was > 0;
}

void bf_workers_release(bf_workers *w, bf_job *j)
{
    pthread_mutex_lock(&w->mu);
    j->state = BF_JOB_FREE;
    j->owner = NULL;
    pthread_mutex_unlock(&w->mu);
}

uint64_t bf_workers_memory(const bf_workers *w)
{
    uint64_t m = sizeof(*w) + (uint64_t)w->nslots * sizeof(bf_job) +
                 (w->threads != NULL ? w->n * sizeof(pthread_t) : 0);
    for (uint32_t i = 0; i < w->nslots; i++)
        m += w->slots[i].data_size + w->slots[i].out_size;
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
