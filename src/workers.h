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
 * nothing but its slot (and a read ahead's descriptor, below): never the
 * space, a file, a map, a free list or a segment's state. The slot's state
 * (atomic), the set's queue and a read's pin (atomic) are the only fields
 * both sides touch, so every field the caller wrote before submitting is
 * seen by the worker that takes the slot, and every result the worker wrote
 * before marking it done is seen by the caller that saw it done (workers.c:
 * no lock on that path).
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
 * the caller copies an extent's bytes in, or hands over a descriptor it
 * pinned and an offset to read them from, the task checks and unpacks it
 * into the slot, and file.c takes or discards the result; that job is never
 * committed, and file.c's scans of slots as blocks to store skip it. That
 * pread, and the pin's count it lowers, are the only things outside its
 * slot a worker touches.
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

/* In-flight slots a worker at most (bf_workers_window; buffile.h says what they cost). A
   burst of stores (SQLite's sorter writes a run of ~512 blocks of 4 KiB at once, a pager
   evicts as fast) fits in the window, so the caller does not pack a block itself while a
   worker is running (issue 49); the caller's index (bf_workers_link below) keeps the cost of
   a call independent of the slots' number. */
#define BF_WORKER_SLOTS 512

/* No slot (the index's links). */
#define BF_JOB_NIL UINT32_MAX

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
        int fd;            /* >= 0: the task reads the extent itself, ext_len bytes at `at` of
                              this descriptor (pinned: `pin`); -1: the caller copied it in */
        uint64_t at;
        uint32_t got; /* the task's: bytes it read from fd (file.c counts them) */
    } rd;
    /* A count the slot holds up (rd.fd's pin, bf_seg_pin): lowered once, before the slot is
       DONE, whether the task ran or was cancelled. NULL: none. */
    _Atomic uint32_t *pin;
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
    uint8_t bad;      /* the index's: counted in its owner's `bad` (stuck, or failed on a worker) */
    uint8_t linked;   /* the index's: in its owner's list (or the reads') and the hash */
    /* The caller's: the block is dropped (bf_workers_cancel), the task skips it. In the
       padding before fnext: the slot does not grow. */
    _Atomic uint8_t cancel;
    uint32_t fnext, fprev; /* the index's: the owner's blocks to store in submission order, or
                              the space's blocks unpacked ahead */
    uint32_t hnext;        /* the index's: the (owner, blkno) hash chain */
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

/* Whether the set runs its own threads (not the caller's runner). */
int bf_workers_own_threads(const bf_workers *w);

/*
 * What file.c reads of a set at every block it stores: the first member of
 * struct bf_workers, so that the accessors below are inline. file.c used
 * to scan the slots for a file's oldest block to commit, a free slot and
 * others' blocks to harvest at every block; as calls into workers.c these
 * scans were ~2% of the spilling thread's CPU with one worker (issue 49,
 * spillbench SF 0.1 under perf: bf_workers_slot and bf_workers_nslots not
 * inlined, called per slot). It now finds them through the caller's index
 * below.
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
 * The caller's index of the slots (caller's thread only; workers.c keeps
 * it, file.c says what goes in): free slots in a bitmap, each owner's
 * blocks to store in a list in submission order (an owner's entry found by
 * a hash of the owner), every owned slot in a hash of (owner, blkno), and
 * the blocks unpacked ahead in a list of their own. With a window of 512
 * slots a worker, file.c's scans of every slot per call cost more than the
 * packing the window took off the caller (issue 49: +160 samples of ~2000
 * in a CREATE INDEX); with the index a call costs the same whatever the
 * window: a free slot is a few words of the bitmap, a file's oldest block
 * its list's head, a block's copies a hash chain.
 */

/* Slot `j` (FREE, its owner, blkno and task set: file.c) is owned: indexed. */
void bf_workers_link(bf_workers *w, bf_job *j);

/* The first slot among the first `window` that no owner holds, or NULL. */
bf_job *bf_workers_free_slot(bf_workers *w, uint32_t window);

/* The oldest block to store of `owner` (its list's head), or NULL; the next of `j`. */
bf_job *bf_workers_first(bf_workers *w, const void *owner);
static inline bf_job *bf_workers_next(bf_workers *w, const bf_job *j)
{
    return j->fnext == BF_JOB_NIL ? NULL : bf_workers_slot(w, j->fnext);
}

/* The newest (`newest` 1) or oldest slot of `owner`'s block `blkno`, of blocks to store
   (read 0) or unpacked ahead (read 1), or NULL. */
bf_job *bf_workers_find(bf_workers *w, const void *owner, uint64_t blkno, int read, int newest);

/* The oldest slot unpacked ahead (every owner's), or NULL: walked with bf_workers_next. */
bf_job *bf_workers_reads(bf_workers *w);

/* Owners with blocks to store: their number, and the i-th (an owner goes when its last
   block does: walk from the last down). */
uint32_t bf_workers_nowners(const bf_workers *w);
void *bf_workers_owner(const bf_workers *w, uint32_t i);

/* Slots of `owner` to store that are stuck or failed on a worker (bf_workers_mark_bad), after
   noting the failures workers made since the last call (a scan only when there are new ones). */
uint32_t bf_workers_bad(bf_workers *w, const void *owner);
/* `j`'s commit failed (`stuck` 1) or worked (0). */
void bf_workers_set_stuck(bf_workers *w, bf_job *j, int stuck);

/* Tests and measurements: the times the caller found its window full (bf_workers_wait_any
   with a slot in flight), and of those, the blocks it packed itself. */
void bf_workers_full_counts(const bf_workers *w, uint64_t *waits, uint64_t *packed);

/*
 * `j` (QUEUED, RUNNING or DONE, the caller's to free) is not wanted: its
 * block was truncated away or its file closed. A task that has not started
 * it yet makes it DONE without packing or unpacking (rc BF_OK, no
 * results): the caller still waits for DONE before it frees the slot, but
 * neither a worker nor the caller, helping in bf_workers_wait, spends the
 * codec on it. bf_workers_release clears the mark.
 */
void bf_workers_cancel(bf_workers *w, bf_job *j);
/* Tests and measurements: slots made DONE unpacked because they were cancelled. */
uint64_t bf_workers_cancelled(const bf_workers *w);

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

/* Wake a sleeping worker if a slot is queued (the space's own threads): after slots
   submitted with a window too large to wake one, as a batch (file.c's ra_ahead). */
void bf_workers_wake(bf_workers *w);

/* Wait until `j` is DONE; while it is queued, the caller packs the ring's oldest slots itself
   (threads of the set's own only: workers.c's help_one). */
void bf_workers_wait(bf_workers *w, const bf_job *j);

/* Make a slot DONE: when no worker is running (all asleep: woken first), pack the ring's
   oldest queued slot on the caller's thread if there is one; else wait, asleep, until half of
   the QUEUED or RUNNING slots (at least one) are DONE; 0 at once when there is none. */
int bf_workers_wait_any(bf_workers *w);

/* Give a DONE slot back (its buffers and contexts stay for the next block), unindexed. */
void bf_workers_release(bf_workers *w, bf_job *j);

/* Bytes the set holds: its struct, the slots, the queue and the slots' buffers (contexts
   not included). */
uint64_t bf_workers_memory(const bf_workers *w);

/* Tests: the `nth` submission from now (1: the next) fails with `status` after packing. */
void bf_workers_fail_at(bf_workers *w, uint64_t nth, int status);
/* The fault the next submission carries (0: none); counts the submissions (file.c). */
int bf_workers_next_fault(bf_workers *w);

#endif
