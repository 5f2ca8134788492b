/*
 * qctx.h - per-query execution context: spill space, work_mem budget,
 * memory accounting, error exit and operator registry.
 *
 * Memory accounting: every operator owns a memacct. It counts the bytes the
 * operator holds on purpose (tuples in hash tables and sort buffers, bucket
 * arrays, tape buffers) and the library's memory of each of its spill files
 * as bf_stats.memory_bytes reports it (block buffer, struct, block map, free
 * list); it is what spill decisions compare with work_mem. The context sums
 * all counters (peak of the sum) and samples jemalloc's per-thread allocated
 * bytes whenever a counter grows, so the reported peaks can be checked
 * against what the allocator really saw.
 *
 * Errors: q_fail() records a message and longjmps to the q_run() frame; the
 * registry then closes every operator, so nothing leaks on failure.
 */
#ifndef TPCH_QCTX_H
#define TPCH_QCTX_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

#include "buffile.h"
#include "tuple.h"

typedef struct qctx qctx;
typedef struct op op;
typedef struct tpch_db tpch_db;

typedef struct memacct {
    qctx *q;
    int64_t cur;       /* all the operator holds, its files' library memory included */
    int64_t lib;       /* of cur: the library's memory of the operator's files other than block
                          buffers (structs, block maps, free lists), and a tape set's free-
                          block list. It grows with the bytes spilled (16 bytes per block)
                          and is only given back when a file closes, so no choice of the
                          operator can shed it. */
    int64_t lib_grown; /* lib when the working set (cur - lib) last grew */
    int64_t min_work;  /* least working set the operator's algorithm runs in (set once) */
    int64_t grant;     /* the peak of the operator's first phase, once it is over (0 before):
                          later phases may hold as much again without raising the peak */
    int64_t need;      /* least working set the data seen so far needs (a hash join's
                          balanced batches), 0 if none; counts for the floor only */
    int64_t peak;
    int64_t peak_floor; /* mem_floor() when the peak was reached */
} memacct;

/* What the operators did, for reports and tests. */
typedef struct qstats {
    int hj_spilled;       /* hash joins that wrote batch files */
    int agg_spilled;      /* hash aggregates that wrote partitions */
    int sort_spilled;     /* sorts that wrote runs */
    int hj_max_batches;   /* largest nbatch any hash join reached */
    int agg_max_depth;    /* deepest hash-aggregate recursion level (0 = no spill) */
    int sort_max_passes;  /* most merge passes of one sort (final merge included) */
    int64_t sort_runs;    /* initial runs written, all sorts */
    bool hj_skew_stop;    /* a hash join stopped growing because a batch did not split */
} qstats;

struct qctx {
    bf_space *space;
    const tpch_db *db;
    int64_t work_mem;     /* bytes; INT64_MAX when unlimited */
    uint32_t block_size;  /* block size of the space's files */
    jmp_buf *jb;
    char errmsg[512];
    op *ops;              /* registry, newest first */
    int64_t mem_cur;      /* sum of all counters now */
    int64_t mem_peak;     /* peak of the sum */
    int64_t op_peak;      /* largest peak of any one counter */
    int64_t op_peak_floor; /* the floor of that operator at its peak */
    double op_over;        /* largest peak / max(work_mem, floor) of any operator */
    uint64_t heap_base;   /* jemalloc net bytes when the query started */
    int64_t heap_peak;    /* peak of jemalloc net bytes above heap_base */
    qstats st;
};

struct op {
    const tup *(*next)(op *self); /* next row, or NULL at end; valid until the next call */
    void (*close)(op *self);      /* free everything; called once, by the registry */
    qctx *q;
    op *reg_next;
    int natts;                    /* width of the rows it returns */
};

/* Initialise a context (space may be NULL for plans that never spill). */
void q_init(qctx *q, bf_space *space, const tpch_db *db, int64_t work_mem);
_Noreturn void q_fail(qctx *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fail with the space's message when status is an error. */
void q_check_bf(qctx *q, int status, const char *what);

/* Allocate an operator of `size` bytes (zeroed) and register it. */
void *op_new(qctx *q, size_t size, const tup *(*next)(op *), void (*close)(op *), int natts);
/* Close every registered operator (newest first) and empty the registry. */
void q_close_all(qctx *q);

void mem_init(memacct *m, qctx *q);
/* Charge (or with a negative delta give back) working memory. */
void mem_add(memacct *m, int64_t delta);
/* Charge a change of a file's library memory: `work` for its block buffer, `lib` for the
 * rest (memacct.lib). */
void mem_charge(memacct *m, int64_t work, int64_t lib);
/*
 * The space an operator may give its working set (tables, run buffers, block buffers of
 * the files it reads and writes): work_mem less the library memory of its files, but
 * never less than the least working set its algorithm runs in (memacct.min_work), nor,
 * once its first phase is over, than what keeps it within that phase's peak
 * (memacct.grant): squeezing a later batch or pass below what the operator has already
 * held would only re-spill data, not lower its peak.
 */
int64_t mem_work_budget(const memacct *m);
/*
 * The operator's floor: the memory it cannot avoid holding now, the larger of
 *  - its files' library memory (lib) plus the least working set of its algorithm
 *    (min_work) or, when larger, of the data it has seen (need), and
 *  - work_mem (or the first phase's peak, memacct.grant, when larger) plus the library
 *    memory its files gained since its working set last grew: a working set chosen within
 *    budget (a hash join's batch-0 table while the outer side is partitioned, an
 *    aggregate's groups while rows spill) cannot shrink while the block maps of the files
 *    it writes grow.
 * An operator above work_mem is at its floor when its peak is within this.
 */
int64_t mem_floor(const memacct *m);

/* Round a byte count up to 8, the alignment of everything stored in chunks. */
#define Q_ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

/* Chunk size of the memory pools (arena, hash table): work_mem / 16, within 4 KiB..64 KiB,
   so a small budget is not swallowed by one chunk and a large one is not split too finely. */
size_t q_chunk_size(const qctx *q);

/* jemalloc's net bytes allocated by this thread. */
uint64_t q_heap_now(void);

/* Checked allocation helpers (fail the query on ENOMEM). */
void *q_malloc(qctx *q, size_t n);
void *q_calloc(qctx *q, size_t n, size_t sz);
void *q_realloc(qctx *q, void *p, size_t n);

#endif
