/*
 * run.h - run one TPC-H query under a spill configuration and collect its
 * result text and statistics. Each run gets its own buffile space (its own
 * temp directory, codec, level, block size), destroyed at the end, so spill
 * statistics belong to exactly one query run.
 */
#ifndef TPCH_RUN_H
#define TPCH_RUN_H

#include <stdint.h>

#include "buffile.h"
#include "db.h"
#include "qctx.h"
#include "result.h"

typedef struct run_config {
    bf_codec codec;
    int32_t level;        /* BF_LEVEL_DEFAULT for the codec's own */
    uint32_t block_size;
    int64_t work_mem;     /* bytes; <= 0 unlimited */
    const char *temp_dir; /* NULL: $TMPDIR or /tmp */
    uint64_t temp_limit;  /* physical spill bytes allowed; 0 = no limit */
    uint64_t io_limit;    /* modelled temp-device bandwidth, bytes/s; 0 = unthrottled */
    int encrypt;          /* seal the spill files (a random key per space) */
    int threads;          /* workers of the space (bf_space_set_workers; 0: none) */
    bf_auto_device *auto_device; /* codec=auto: the space starts from it and leaves what it
                                    learned in it; NULL: each space learns from nothing */
} run_config;

typedef struct run_result {
    strbuf text;          /* result rows in the results format */
    uint64_t rows;
    double seconds;       /* wall time of plan + execution (monotonic clock) */
    double cpu_seconds;   /* the process's user + system CPU time over the same span */
    double caller_cpu_seconds; /* the running thread's alone (not the space's workers) */
    long caller_waits;         /* its voluntary context switches: sleeps (I/O, workers) */
    bf_stats spill;       /* the space's statistics at the end */
    qstats ops;           /* what the operators did */
    int64_t op_peak;      /* largest peak of one operator's counter */
    int64_t op_peak_floor; /* that operator's floor at its peak (qctx.h: mem_floor) */
    double op_over;        /* largest peak / max(work_mem, floor) of any operator */
    int64_t mem_peak;     /* peak of the sum of all counters */
    int64_t heap_peak;    /* jemalloc: peak bytes allocated above the start */
    char auto_reason[256]; /* codec=auto's last decision and why ("" for other codecs) */
    char err[600];        /* non-empty when the run failed */
} run_result;

/*
 * Operator memory of a run against work_mem: "ok" (every peak within 1.1x,
 * the slack of chunk and block granularity), "floor" (above, but within
 * 1.1x of its documented floor), "OVER" (above both); NULL when unlimited.
 */
const char *run_mem_mark(const run_result *r, int64_t work_mem);

/* The buffile space options a run under `cfg` uses. */
void run_space_options(const run_config *cfg, bf_space_options *so);

/* 0 on success; -1 with r->err set. Free r->text with sb_free. */
int run_query(const struct tpch_db *db, int qnum, const run_config *cfg, run_result *r);

#endif
