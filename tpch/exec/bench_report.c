/*
 * bench_report.c - spillbench report formatting (see bench_report.h).
 *
 * Ratio is logical/physical (how many times smaller the spill got on disk);
 * saved is 1 - physical/logical, in percent. Both are "-" without spill.
 */
#include "bench_report.h"

#include <string.h>

static double mb(double bytes)
{
    return bytes / (1024.0 * 1024.0);
}

static void ratio_text(const bench_row *r, char *ratio, char *saved, size_t n)
{
    if (r->logical == 0 || r->physical == 0) {
        snprintf(ratio, n, "-");
        snprintf(saved, n, "-");
        return;
    }
    snprintf(ratio, n, "%.2f", (double)r->logical / (double)r->physical);
    snprintf(saved, n, "%.1f", 100.0 * (1.0 - (double)r->physical / (double)r->logical));
}

static void spilled_text(const bench_row *r, char *buf, size_t n)
{
    if (!r->hj && !r->agg && !r->sort) {
        snprintf(buf, n, "-");
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    if (r->hj)
        len += (size_t)snprintf(buf + len, n - len, "hj:%d(%db) ", r->hj, r->hj_batches);
    if (r->agg && len < n)
        len += (size_t)snprintf(buf + len, n - len, "agg:%d(d%d) ", r->agg, r->agg_depth);
    if (r->sort && len < n)
        len += (size_t)snprintf(buf + len, n - len, "sort:%d(%lldr,%dp) ", r->sort,
                                (long long)r->sort_runs, r->sort_passes);
    if (len > 0 && len < n)
        buf[len - 1] = '\0';
}

static void floor_text(const bench_row *r, char *buf, size_t n)
{
    if (r->op_floor > 0)
        snprintf(buf, n, "%.2f", mb((double)r->op_floor));
    else
        snprintf(buf, n, "-");
}

static void name_of(const bench_row *r, char *buf, size_t n)
{
    if (r->query)
        snprintf(buf, n, "Q%d", r->query);
    else
        snprintf(buf, n, "total");
}

static void table_row(FILE *out, const bench_row *r)
{
    char name[16], ratio[32], saved[32], spilled[128], fl[32];
    name_of(r, name, sizeof name);
    ratio_text(r, ratio, saved, sizeof ratio);
    spilled_text(r, spilled, sizeof spilled);
    floor_text(r, fl, sizeof fl);
    if (r->error) {
        fprintf(out, "%-6s FAILED: %s\n", name, r->error);
        return;
    }
    fprintf(out,
            "%-6s %8llu %8.3f %6llu %10.1f %10.1f %6s %6s %9.1f %7.2f %7s %-5s %7.2f %7.2f "
            "%8.0f  %-3s %s\n",
            name, (unsigned long long)r->rows, r->seconds, (unsigned long long)r->files,
            mb((double)r->logical), mb((double)r->physical), ratio, saved, mb((double)r->peak_temp),
            mb((double)r->op_peak), fl, r->mem ? r->mem : "-", mb((double)r->mem_peak),
            mb((double)r->heap_peak), r->codec_ms, r->verify ? r->verify : "-", spilled);
}

static void csv_row(FILE *out, const bench_row *r)
{
    char name[16], ratio[32], saved[32], spilled[128];
    name_of(r, name, sizeof name);
    ratio_text(r, ratio, saved, sizeof ratio);
    spilled_text(r, spilled, sizeof spilled);
    fprintf(out,
            "%s,%llu,%.6f,%llu,%llu,%llu,%s,%s,%llu,%lld,%lld,%s,%lld,%lld,%.3f,%d,%d,%d,%d,%d,%d,%"
            "lld,%s,\"%s\"\n",
            name, (unsigned long long)r->rows, r->seconds, (unsigned long long)r->files,
            (unsigned long long)r->logical, (unsigned long long)r->physical, ratio, saved,
            (unsigned long long)r->peak_temp, (long long)r->op_peak, (long long)r->op_floor,
            r->mem ? r->mem : "", (long long)r->mem_peak, (long long)r->heap_peak, r->codec_ms,
            r->hj, r->hj_batches, r->agg, r->agg_depth, r->sort, r->sort_passes,
            (long long)r->sort_runs, r->verify ? r->verify : "", r->error ? r->error : "");
}

void report_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        if ((unsigned char)*s < 0x20)
            fprintf(out, "\\u%04x", *s);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

static void json_row(FILE *out, const bench_row *r)
{
    char name[16];
    name_of(r, name, sizeof name);
    fprintf(out, "    {\"query\": ");
    report_json_string(out, name);
    fprintf(out,
            ", \"rows\": %llu, \"seconds\": %.6f, \"spill_files\": %llu, "
            "\"logical_bytes\": %llu, \"physical_bytes\": %llu, \"ratio\": %.4f, "
            "\"saved_pct\": %.2f, \"peak_temp_bytes\": %llu, \"op_peak_bytes\": %lld, "
            "\"op_floor_bytes\": %lld, \"mem_peak_bytes\": %lld, \"heap_peak_bytes\": %lld, "
            "\"codec_ms\": %.3f, "
            "\"hash_joins_spilled\": %d, \"max_batches\": %d, \"hash_aggs_spilled\": %d, "
            "\"agg_depth\": %d, \"sorts_spilled\": %d, \"sort_passes\": %d, \"sort_runs\": %lld",
            (unsigned long long)r->rows, r->seconds, (unsigned long long)r->files,
            (unsigned long long)r->logical, (unsigned long long)r->physical,
            r->physical ? (double)r->logical / (double)r->physical : 0.0,
            r->logical ? 100.0 * (1.0 - (double)r->physical / (double)r->logical) : 0.0,
            (unsigned long long)r->peak_temp, (long long)r->op_peak, (long long)r->op_floor,
            (long long)r->mem_peak, (long long)r->heap_peak, r->codec_ms, r->hj, r->hj_batches,
            r->agg, r->agg_depth, r->sort, r->sort_passes, (long long)r->sort_runs);
    fprintf(out, ", \"blocks_by_codec\": [%llu, %llu, %llu, %llu], \"auto_probe_ms\": %.3f",
            (unsigned long long)r->blocks[0], (unsigned long long)r->blocks[1],
            (unsigned long long)r->blocks[2], (unsigned long long)r->blocks[3], r->probe_ms);
    if (r->auto_reason) {
        fprintf(out, ", \"auto_reason\": ");
        report_json_string(out, r->auto_reason);
    }
    if (r->mem) {
        fprintf(out, ", \"mem\": ");
        report_json_string(out, r->mem);
    }
    if (r->verify) {
        fprintf(out, ", \"verify\": ");
        report_json_string(out, r->verify);
    }
    if (r->error) {
        fprintf(out, ", \"error\": ");
        report_json_string(out, r->error);
    }
    fprintf(out, "}");
}

void report_begin(FILE *out, report_format fmt, const bench_header *h)
{
    switch (fmt) {
    case FMT_TABLE:
        fprintf(out,
                "spillbench: sf=%g codec=%s level=%s block=%uK work_mem=%s repeat=%d "
                "(data derived from TPC-H; not comparable to published results)\n",
                h->sf, h->codec, h->level, h->block_size / 1024, h->work_mem, h->repeat);
        fprintf(out, "%-6s %8s %8s %6s %10s %10s %6s %6s %9s %7s %7s %-5s %7s %7s %8s  %-3s %s\n",
                "query", "rows", "time_s", "files", "logicalMB", "physicMB", "ratio", "saved%",
                "peaktmpMB", "opMemMB", "floorMB", "mem", "sumMemMB", "heapMB", "codec_ms", "ver",
                "spilled (batches, depth, runs, passes)");
        break;
    case FMT_CSV:
        fprintf(out, "query,rows,seconds,spill_files,logical_bytes,physical_bytes,ratio,saved_pct,"
                     "peak_temp_bytes,op_peak_bytes,op_floor_bytes,mem,mem_peak_bytes,heap_peak_"
                     "bytes,codec_ms,"
                     "hash_joins_spilled,max_batches,hash_aggs_spilled,agg_depth,sorts_spilled,"
                     "sort_passes,sort_runs,verify,error\n");
        break;
    case FMT_JSON:
        fprintf(out, "{\n  \"sf\": %g, \"codec\": ", h->sf);
        report_json_string(out, h->codec);
        fprintf(out, ", \"level\": ");
        report_json_string(out, h->level);
        fprintf(out, ", \"block_size\": %u, \"work_mem\": ", h->block_size);
        report_json_string(out, h->work_mem);
        fprintf(out, ", \"repeat\": %d,\n  \"queries\": [\n", h->repeat);
        break;
    }
}

void report_row(FILE *out, report_format fmt, const bench_row *row, int index)
{
    switch (fmt) {
    case FMT_TABLE: table_row(out, row); break;
    case FMT_CSV: csv_row(out, row); break;
    case FMT_JSON:
        if (index > 0)
            fprintf(out, ",\n");
        json_row(out, row);
        break;
    }
}

void report_end(FILE *out, report_format fmt, const bench_header *h, const bench_row *rows,
                int nrows, const bench_row *total)
{
    switch (fmt) {
    case FMT_TABLE:
        table_row(out, total);
        if (strcmp(h->codec, "auto") == 0)
            fprintf(out, "auto: per spilling query, extents none/lz4/zstd and the last decision\n");
        for (int i = 0; i < nrows && strcmp(h->codec, "auto") == 0; i++)
            if (rows[i].logical > 0 && rows[i].auto_reason != NULL)
                fprintf(
                    out, "  Q%-3d %llu/%llu/%llu, probes %.1f ms: %s\n", rows[i].query,
                    (unsigned long long)rows[i].blocks[0], (unsigned long long)rows[i].blocks[1],
                    (unsigned long long)rows[i].blocks[2], rows[i].probe_ms, rows[i].auto_reason);
        break;
    case FMT_CSV: csv_row(out, total); break;
    case FMT_JSON:
        fprintf(out, "%s  ],\n  \"total\":\n", nrows > 0 ? "\n" : "");
        json_row(out, total);
        fprintf(out, "\n}\n");
        break;
    }
}
