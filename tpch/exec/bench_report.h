/*
 * bench_report.h - spillbench's report: one row per query plus a total,
 * printed as an aligned table, CSV or JSON. Only formatting lives here.
 */
#ifndef TPCH_BENCH_REPORT_H
#define TPCH_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

typedef enum { FMT_TABLE, FMT_CSV, FMT_JSON } report_format;

typedef struct bench_row {
    int query;             /* 0 for the total line */
    uint64_t rows;
    double seconds;        /* median over repeats */
    uint64_t files;        /* spill files created */
    uint64_t logical;      /* bytes the executor wrote to its spill files */
    uint64_t physical;     /* bytes buffile wrote to disk */
    uint64_t peak_temp;    /* peak physical bytes on disk */
    int64_t op_peak;       /* largest one-operator memory counter peak */
    int64_t op_floor;      /* that operator's floor when its peak is above 1.1x work_mem,
                              else 0 */
    const char *mem;       /* operator memory against work_mem: "ok" (every peak within
                              1.1x), "floor" (above, but within 1.1x of its floor), "OVER"
                              (above both), NULL when unlimited */
    int64_t mem_peak;      /* peak of the sum of operator counters */
    int64_t heap_peak;     /* jemalloc-measured peak above the start */
    double codec_ms;       /* compress + decompress CPU time */
    int hj, agg, sort;     /* operators that spilled, by kind */
    int hj_batches, agg_depth, sort_passes;
    int64_t sort_runs;
    uint64_t blocks[4];    /* extents written with none, lz4, zstd, zlib */
    double probe_ms;       /* codec=auto's probe time */
    const char *auto_reason; /* codec=auto's last decision, NULL otherwise */
    const char *verify;    /* "ok", "MISMATCH", or NULL when not verified */
    const char *error;     /* non-NULL when the query failed */
} bench_row;

typedef struct bench_header {
    double sf;
    const char *codec;
    const char *level;
    uint32_t block_size;
    const char *work_mem;
    int repeat;
} bench_header;

/*
 * The report, written as the queries finish (so that a pipe or a file gets
 * each row when its query is done): report_begin's heading, report_row for
 * each query (index from 0), report_end's total line (and auto's decisions,
 * which need every row).
 */
void report_begin(FILE *out, report_format fmt, const bench_header *h);
void report_row(FILE *out, report_format fmt, const bench_row *row, int index);
void report_end(FILE *out, report_format fmt, const bench_header *h, const bench_row *rows,
                int nrows, const bench_row *total);

/* Write `s` as a JSON string literal (quotes, escapes). */
void report_json_string(FILE *out, const char *s);

#endif
