/*
 * workers.h - compression off the caller's thread: a space's bounded set of
 * in-flight block slots and the threads (or the caller's task runner) that
 * pack them (workers.c).
 *
 * What runs where. The caller's thread fills a slot (a copy of the block,
 * the codec, its level, the slot's own codec context) and submits it; a
 * worker runs bf_extent_pack on the slot alone (compress into the slot's
 * scratch, CRC) and marks it done; the caller's thread later commits it
 * (placement, pwrite, map: file.c) and frees the slot. A worker touches
 * nothing but its slot: never the space, a file, a map, a free list or a
 * segment. The slot's state (atomic) and the set's queue are the only
 * fields both sides touch, so every field the caller wrote before
 * submitting is seen by the worker that takes the slot, and every result
 * the worker wrote before marking it done is seen by the caller that saw
 * it done (workers.c: no lock on that path).
 *
 * Invariants: a slot is FREE, QUEUED (submitted, no worker has it),
 * RUNNING or DONE; only the caller moves it FREE -> QUEUED and DONE ->
 * FREE, and whoever takes it from the ring (a worker, or the caller about
 * to wait for it: bf_workers_wait) QUEUED -> RUNNING -> DONE. `seq` orders the
 * submissions, so the caller commits each file's blocks in the order it
 * handed them over. Codec contexts belong to a slot (never to a thread or
 * the space), so a runner may run a task on any thread.
 *
 * A slot may instead hold a block read ahead (bf_job.task, readahead.c):
 * the caller copies an extent's bytes in, the task checks and unpacks it
 * into the slot, and file.c takes or discards the result; that job is never
 * committed, and file.c's scans of slots as blocks to store skip it.
 */
#ifndef BF_WORKERS_H
#define BF_WORKERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "buffile.h"
#include "codec.h"
#include "extent.h"
#include "seal.h"

enum { BF_JOB_FREE, BF_JOB_QUEUED, BF_JOB_RUNNING, BF_JOB_DONE };

/* In-flight slots a worker at most (bf_workers_window; buffile.h says what they cost). */
#define BF_WORKER_SLOTS 16

/* Built-in codec ids with a context per slot (none, lz4, zstd, zlib). */
#define BF_JOB_CODECS 4

typedef struct bf_workers bf_workers;

typedef struct bf_job {
    /* the caller's, written before submitting, read by the task */
    const bf_codec_ops *ops;
    void *ctx;
    int32_t level;
    uint32_t gen;
    uint64_t blkno;
    uint32_t raw_len;
    int fault;             /* tests: the task fails with this status after packing (0: no) */
    /* What the task does instead of packing (NULL: pack): a block read ahead, unpacked
       into `data` (readahead.c, whose fields are `rd`). It sets `rc` itself. */
    int (*task)(struct bf_job *j);
    struct bf_job_read {
        uint64_t expect_blkno; /* the block number its extent's header holds */
        uint32_t ext_len;      /* extent bytes at `out`; a sealed payload opens after them */
        uint32_t block_size;
        uint8_t map_raw;  /* the map says the payload is stored raw */
        uint8_t stale;    /* the caller's: the block was stored again since (file.c) */
        uint64_t map_off; /* the map entry the extent was read for (file.c compares it) */
        uint32_t map_len, map_cap;
        const char *why;   /* the task's: what it found wrong */
        uint64_t codec_ns; /* the task's: time in the decompressor */
    } rd;
    unsigned char *data;   /* the block's copy: what keeps it until its extent is committed */
    size_t data_size;
    unsigned char *out;    /* the extent's scratch */
    size_t out_size;
    void *ctxs[BF_JOB_CODECS]; /* the slot's own codec contexts, made on first use */
    bf_seal *seal;             /* the slot's sealer (a clone of the space's), made on first use */
    int sealed;                /* seal this block, for the file `id` */
    unsigned char id[BF_FILE_ID_BYTES];
    /* the task's results, valid once DONE */
    int rc;
    int iovcnt;
    struct iovec iov[2];
    bf_extent_info info;
    /* the caller's bookkeeping (file.c): which file, and what it already did with it */
    void *owner;
    uint64_t seq;
    uint8_t reported; /* a failure of the task was reported to the owner's caller */
    uint8_t noted;    /* the codec time and auto's figures are counted */
    uint8_t stuck;    /* its commit failed: only its own file's calls try it again */
    /* the workers' */
    bf_workers *w;
    _Atomic int state;
} bf_job;

/*
 * A new set of `n` workers (1..BF_WORKERS_MAX): threads of the set's own
 * when `run` is NULL (started on the first submission), else tasks handed
 * to run(run_ctx, task, arg). BF_WORKER_SLOTS x n slots. BF_ENOMEM.
 */
int bf_workers_new(const bf_allocator *a, unsigned n,
                   void (*run)(void *ctx, void (*task)(void *arg), void *arg), void *run_ctx,
                   bf_workers **out);

/* Wait for every submitted task, stop and join the threads, free the slots and contexts. */
void bf_workers_free(const bf_allocator *a, bf_workers *w);

/*
 * What file.c reads of a set at every block it stores: the first member of
 * struct bf_workers, so that the accessors below are inline. file.c scans
 * the slots for a file's oldest block to commit, a free slot and others'
 * blocks to harvest at every block; as calls into workers.c these scans
 * were ~2% of the spilling thread's CPU with one worker (issue 49,
 * spillbench SF 0.1 under perf: bf_workers_slot and bf_workers_nslots not
 * inlined, called per slot).
 */
typedef struct bf_workers_head {
    uint32_t nslots;
    bf_job *slots;
} bf_workers_head;

/* The slots. */
static inline uint32_t bf_workers_nslots(const bf_workers *w)
{
    return ((const bf_workers_head *)(const void *)w)->nslots;
}

static inline bf_job *bf_workers_slot(bf_workers *w, uint32_t i)
{
    return &((bf_workers_head *)(void *)w)->slots[i];
}

/* A slot's state now (a worker may move it on right after). */
static inline int bf_workers_state(bf_workers *w, const bf_job *j)
{
    (void)w;
    return j->state;
}

/*
 * The slots (the first ones) that blocks of `block_size` bytes may use:
 * 128 KiB of blocks a worker, at least 2 and at most BF_WORKER_SLOTS a
 * worker. The slot buffers a block size may grow stay bounded so, and
 * small blocks get enough slots for a worker to be woken for a batch.
 */
uint32_t bf_workers_window(const bf_workers *w, uint32_t block_size);

/*
 * Hand slot `j` (FREE, filled, one of the `window` its block size may use)
 * to a worker. BF_ENOMEM when no thread could be started (the slot stays
 * FREE: the caller stores the block itself).
 */
int bf_workers_submit(bf_workers *w, bf_job *j, uint32_t window);

/* Wait until `j` is DONE; while it is queued, the caller packs the ring's oldest slots itself
   (threads of the set's own only: workers.c's help_one). */
void bf_workers_wait(bf_workers *w, const bf_job *j);

/* Make a slot DONE: pack the ring's oldest queued slot on the caller's thread if there is one,
   else wait, asleep, until half of the QUEUED or RUNNING slots (at least one) are DONE; 0 at
   once when there is none. */
int bf_workers_wait_any(bf_workers *w);

/* Give a DONE slot back (its buffers and contexts stay for the next block). */
void bf_workers_release(bf_workers *w, bf_job *j);

/* Bytes the set holds: its struct, the slots, the queue and the slots' buffers (contexts
   not included). */
uint64_t bf_workers_memory(const bf_workers *w);

/* Tests: the `nth` submission from now (1: the next) fails with `status` after packing. */
void bf_workers_fail_at(bf_workers *w, uint64_t nth, int status);
/* The fault the next submission carries (0: none); counts the submissions (file.c). */
int bf_workers_next_fault(bf_workers *w);

#endif
