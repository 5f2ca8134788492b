/*
 * bench_paired.h - spillbench's paired mode: every query under several
 * configurations (codecs, block sizes, work_mem values) in interleaved,
 * shuffled rounds, so the machine's slow spells hit all of them alike, and
 * a report of each configuration's time ratio to the first one with a 95%
 * interval (paired.h has the statistics). The same runs give the exact
 * byte counts and check that every run returned the same answer.
 */
#ifndef TPCH_BENCH_PAIRED_H
#define TPCH_BENCH_PAIRED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_report.h"
#include "progress.h"
#include "queries/queries.h"
#include "run.h"

typedef struct pair_config {
    run_config cfg;
    char label[48];         /* e.g. "zstd:1", "lz4/32K", "none@1MB" */
    char level_text[16];    /* "default" or the level */
    char work_mem_text[32]; /* "4MB", "unlimited" */
    bf_auto_device learned; /* cfg.auto_device of an auto configuration points here */
} pair_config;

typedef struct pair_plan {
    const pair_config *conf; /* conf[0] is the reference of every ratio */
    int nconf;
    int rounds;
    uint64_t seed;
    const bool *queries;  /* [TPCH_NQUERIES + 1] */
    report_format format; /* FMT_TABLE or FMT_JSON */
    double sf;
    progress *progress; /* the progress line on stderr, counting runs (warm-ups too) */
} pair_plan;

/*
 * Run the plan and write its report to `out`: as a table, each query's row
 * as soon as its rounds are done, the suite and the bytes at the end; as
 * JSON, all at the end. Returns 0, or 1 when a run
 * failed, two runs returned different answers, or a configuration's bytes
 * differed between rounds (codec=auto's physical bytes may: its choices
 * follow measured times).
 */
int paired_run(const struct tpch_db *db, const pair_plan *plan, FILE *out);

#endif
