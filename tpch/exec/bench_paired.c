/*
 * bench_paired.c - spillbench's paired mode (see bench_paired.h).
 *
 * Per query: one warm-up run of configuration 0 (not counted: it pages the
 * tables in and gives the reference answer), then `rounds` rounds, each
 * running every configuration once in an order shuffled per (round, query).
 * A ratio pairs the runs of one round; the suite figures take, per round,
 * the geometric mean over a set of queries (those that spill, and the
 * control set, which never runs a codec), then the interval over rounds.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench_paired.h"

#include "spill_codecs.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "paired.h"

/* What one counted run measured. */
typedef struct sample {
    double wall, cpu, codec_ms;
    double caller_cpu; /* the query thread's CPU time (run.h) */
    long caller_waits; /* and its voluntary context switches */
    uint64_t logical, physical;
    uint64_t hash;
    int position; /* its place in the round's order */
} sample;

/* What round 0 of one (query, configuration) showed beyond the sample. */
typedef struct detail {
    uint64_t rows, files, peak_temp, blocks[4];
    int64_t op_peak;
    double probe_ms;
    const char *mem;
    char reason[256];
} detail;

typedef struct state {
    const pair_plan *p;
    int nq;
    int qnum[TPCH_NQUERIES];
    sample *s;             /* [(qi * rounds + r) * nconf + c] */
    detail *d;             /* [qi * nconf + c] */
    unsigned char *spills; /* [qi] */
    bool *failed;          /* [qi] */
    char **error;          /* [qi] */
    bool *differ;          /* [qi]: answers or bytes not the same in every run */
    double load[2][3];
    double runs_done; /* for the progress line */
} state;

static sample *at(const state *st, int qi, int r, int c)
{
    return &st->s[((size_t)qi * (size_t)st->p->rounds + (size_t)r) * (size_t)st->p->nconf +
                  (size_t)c];
}

static uint64_t fnv1a(const strbuf *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < t->len; i++)
        h = (h ^ (unsigned char)t->p[i]) * 0x100000001b3ull;
    return h;
}

static int64_t logical_of(const run_result *r)
{
    return (int64_t)r->spill.logical_written;
}

/* Run the query's warm-up and rounds; false (with st->error set) if a run failed. */
static bool run_one_query(state *st, const struct tpch_db *db, int qi)
{
    const pair_plan *p = st->p;
    int q = st->qnum[qi];
    run_result r;
    progress_set(p->progress, st->runs_done);
    progress_show(p->progress, "query %d of %d (Q%d), warm-up", qi + 1, st->nq, q);
    if (run_query(db, q, &p->conf[0].cfg, &r) != 0) {
        st->error[qi] = strdup(r.err);
        return false;
    }
    st->runs_done++;
    uint64_t answer = fnv1a(&r.text);
    sb_free(&r.text);
    int order[64];
    for (int round = 0; round < p->rounds; round++) {
        pd_shuffle(p->seed, round * (TPCH_NQUERIES + 1) + q, p->nconf, order);
        for (int k = 0; k < p->nconf; k++) {
            int c = order[k];
            progress_set(p->progress, st->runs_done);
            progress_show(p->progress, "query %d of %d (Q%d), round %d of %d, %s", qi + 1, st->nq,
                          q, round + 1, p->rounds, p->conf[c].label);
            if (run_query(db, q, &p->conf[c].cfg, &r) != 0) {
                st->error[qi] = strdup(r.err);
                return false;
            }
            st->runs_done++;
            sample *s = at(st, qi, round, c);
            *s = (sample){r.seconds,
                          r.cpu_seconds,
                          (double)(r.spill.compress_ns + r.spill.decompress_ns) / 1e6,
                          r.caller_cpu_seconds,
                          r.caller_waits,
                          (uint64_t)logical_of(&r),
                          r.spill.physical_written,
                          fnv1a(&r.text),
                          k};
            sb_free(&r.text);
            if (s->logical > 0)
                st->spills[qi] = 1;
            const sample *first = at(st, qi, 0, c);
            /* auto's choices follow its timings, and with them its bytes on disk and, since
               a raw block after a compressed one leaves a page's tail in the file's free
               list (format 4), the file memory the operators count against work_mem, so
               where they spill: its answers must agree, its bytes need not. With workers
               the logical bytes must agree but the physical need not: a file closed while
               blocks of it are still in the workers' slots drops them unwritten (jobs_drop),
               and how many are still there is the workers' timing (2 MiB a worker). */
            bool is_auto = p->conf[c].cfg.codec == BF_CODEC_AUTO;
            bool workers = p->conf[c].cfg.threads > 0;
            if (s->hash != answer ||
                (!is_auto && (s->logical != first->logical ||
                              (!workers && s->physical != first->physical))))
                st->differ[qi] = true;
            if (round == 0) {
                detail *d = &st->d[(size_t)qi * (size_t)p->nconf + (size_t)c];
                d->rows = r.rows;
                d->files = r.spill.files_created;
                d->peak_temp = r.spill.physical_peak;
                memcpy(d->blocks, r.spill.blocks_by_codec, sizeof d->blocks);
                d->op_peak = r.op_peak;
                d->probe_ms = (double)r.spill.auto_probe_ns / 1e6;
                d->mem = run_mem_mark(&r, p->conf[c].cfg.work_mem);
                snprintf(d->reason, sizeof d->reason, "%s", r.auto_reason);
            }
        }
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over rounds of a field of (qi, c). */
static double median_of(const state *st, int qi, int c, size_t field)
{
    double v[4096];
    int n = st->p->rounds < 4096 ? st->p->rounds : 4096;
    for (int r = 0; r < n; r++)
        v[r] = *(const double *)((const char *)at(st, qi, r, c) + field);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Ratio of configuration c to 0 for query qi, wall (cpu = 0) or CPU time. */
static pd_interval query_ratio(const state *st, int qi, int c, bool cpu)
{
    double num[4096], den[4096];
    int n = st->p->rounds < 4096 ? st->p->rounds : 4096;
    for (int r = 0; r < n; r++) {
        num[r] = cpu ? at(st, qi, r, c)->cpu : at(st, qi, r, c)->wall;
        den[r] = cpu ? at(st, qi, r, 0)->cpu : at(st, qi, r, 0)->wall;
    }
    return pd_ratio(num, den, n);
}

/* Suite ratio of configuration c over the queries in `use` (failed ones never count). */
static pd_interval suite_ratio(const state *st, int c, bool cpu, const unsigned char *use)
{
    const pair_plan *p = st->p;
    size_t n = (size_t)p->rounds * (size_t)st->nq * (size_t)p->nconf;
    double *t = malloc(n * sizeof *t);
    if (t == NULL)
        return (pd_interval){0, 0, 0, 0};
    for (int r = 0; r < p->rounds; r++)
        for (int qi = 0; qi < st->nq; qi++)
            for (int k = 0; k < p->nconf; k++)
                t[((size_t)r * (size_t)st->nq + (size_t)qi) * (size_t)p->nconf + (size_t)k] =
                    cpu ? at(st, qi, r, k)->cpu : at(st, qi, r, k)->wall;
    pd_interval iv = pd_suite(t, p->rounds, st->nq, p->nconf, c, use);
    free(t);
    return iv;
}

/* ---- the table ------------------------------------------------------------ */

static void cell(FILE *out, const pd_interval *iv)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f [%.3f,%.3f]%s", iv->est, iv->lo, iv->hi,
             pd_holds_one(iv) ? "~" : "");
    fprintf(out, " %-23s", buf);
}

static void suite_line(FILE *out, const state *st, const char *what, const unsigned char *use)
{
    int n = 0;
    for (int qi = 0; qi < st->nq; qi++)
        n += use[qi] != 0;
    char name[32];
    snprintf(name, sizeof name, "%s (%d)", what, n);
    fprintf(out, "%-16s %8s", name, "");
    for (int c = 1; c < st->p->nconf; c++) {
        for (int cpu = 0; cpu < 2; cpu++) {
            pd_interval iv = suite_ratio(st, c, cpu, use);
            if (iv.n == 0)
                fprintf(out, " %-23s", "-");
            else
                cell(out, &iv);
        }
    }
    fprintf(out, "\n");
}

/* The heading and the column names; the rows follow as the queries finish. */
static void table_head(FILE *out, const state *st)
{
    const pair_plan *p = st->p;
    fprintf(out, "spillbench paired: sf=%g rounds=%d seed=%llu; reference [0] %s; configs", p->sf,
            p->rounds, (unsigned long long)p->seed, p->conf[0].label);
    for (int c = 1; c < p->nconf; c++)
        fprintf(out, " [%d] %s", c, p->conf[c].label);
    fprintf(out, "\n  (data derived from TPC-H; not comparable to published results)\n"
                 "time ratios to the reference: geometric mean of the per-round paired ratios "
                 "[95%% interval, Student t on the log ratios];\n"
                 "  '~' = no measurable difference (the interval holds 1.0); wall = elapsed, "
                 "cpu = user+sys of the process\n");
    fprintf(out, "%-16s %8s", "query", "ref_s");
    for (int c = 1; c < p->nconf; c++) {
        char h[64];
        snprintf(h, sizeof h, "%s wall", p->conf[c].label);
        fprintf(out, " %-23s", h);
        snprintf(h, sizeof h, "%s cpu", p->conf[c].label);
        fprintf(out, " %-23s", h);
    }
    fprintf(out, "\n");
}

static void table_row(FILE *out, const state *st, int qi)
{
    const pair_plan *p = st->p;
    char name[32];
    snprintf(name, sizeof name, "Q%d%s%s", st->qnum[qi], st->spills[qi] ? " spills" : "",
             st->differ[qi] ? " DIFFERS" : "");
    if (st->failed[qi]) {
        fprintf(out, "%-16s FAILED: %s\n", name, st->error[qi]);
        return;
    }
    fprintf(out, "%-16s %8.3f", name, median_of(st, qi, 0, offsetof(sample, wall)));
    for (int c = 1; c < p->nconf; c++) {
        pd_interval w = query_ratio(st, qi, c, false), u = query_ratio(st, qi, c, true);
        cell(out, &w);
        cell(out, &u);
    }
    fprintf(out, "\n");
}

/* The suite lines, the load, the bytes of each configuration and auto's decisions. */
static void table_tail(FILE *out, const state *st, const unsigned char *spilling,
                       const unsigned char *control)
{
    const pair_plan *p = st->p;
    suite_line(out, st, "spilling geomean", spilling);
    suite_line(out, st, "control geomean", control);
    fprintf(out, "load average: start %.2f %.2f %.2f, end %.2f %.2f %.2f\n", st->load[0][0],
            st->load[0][1], st->load[0][2], st->load[1][0], st->load[1][1], st->load[1][2]);
    /* phys/log: the share of the spilled bytes that reached the disk (the single
     * run's "ratio" is the inverse, logical/physical). */
    fprintf(out, "\n%-12s %11s %11s %8s %10s %10s %12s  %s\n", "bytes", "logicalMB", "physicMB",
            "phys/log", "peaktmpMB", "codec_ms", "time_s(sum)", "blocks none/lz4/zstd/zlib");
    for (int c = 0; c < p->nconf; c++) {
        uint64_t lg = 0, ph = 0, peak = 0, blk[4] = {0};
        double codec = 0, secs = 0;
        for (int qi = 0; qi < st->nq; qi++) {
            if (st->failed[qi])
                continue;
            const sample *s = at(st, qi, 0, c);
            const detail *d = &st->d[(size_t)qi * (size_t)p->nconf + (size_t)c];
            lg += s->logical;
            ph += s->physical;
            peak = d->peak_temp > peak ? d->peak_temp : peak;
            for (int k = 0; k < 4; k++)
                blk[k] += d->blocks[k];
            codec += median_of(st, qi, c, offsetof(sample, codec_ms));
            secs += median_of(st, qi, c, offsetof(sample, wall));
        }
        fprintf(out, "%-12s %11.1f %11.1f %8.3f %10.1f %10.0f %12.2f  %llu/%llu/%llu/%llu\n",
                p->conf[c].label, (double)lg / 1048576.0, (double)ph / 1048576.0,
                lg ? (double)ph / (double)lg : 0.0, (double)peak / 1048576.0, codec, secs,
                (unsigned long long)blk[0], (unsigned long long)blk[1], (unsigned long long)blk[2],
                (unsigned long long)blk[3]);
    }
    for (int c = 0; c < p->nconf; c++) {
        if (p->conf[c].cfg.codec != BF_CODEC_AUTO)
            continue;
        fprintf(out, "\n%s: per spilling query, round 0's blocks none/lz4/zstd and last decision\n",
                p->conf[c].label);
        for (int qi = 0; qi < st->nq; qi++) {
            const detail *d = &st->d[(size_t)qi * (size_t)p->nconf + (size_t)c];
            if (!st->spills[qi] || st->failed[qi])
                continue;
            fprintf(out, "  Q%-3d %llu/%llu/%llu, probes %.1f ms: %s\n", st->qnum[qi],
                    (unsigned long long)d->blocks[0], (unsigned long long)d->blocks[1],
                    (unsigned long long)d->blocks[2], d->probe_ms, d->reason);
        }
    }
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_iv(FILE *out, const char *name, const pd_interval *iv)
{
    if (iv->n == 0) /* no query in the set: JSON has no NaN */
        fprintf(out, "\"%s\": {\"est\": null, \"lo\": null, \"hi\": null, \"n\": 0}", name);
    else
        fprintf(out, "\"%s\": {\"est\": %.6f, \"lo\": %.6f, \"hi\": %.6f, \"n\": %d}", name,
                iv->est, iv->lo, iv->hi, iv->n);
}

static void json_ratio(FILE *out, int c, const pd_interval *w, const pd_interval *u)
{
    fprintf(out, "{\"config\": %d, ", c);
    json_iv(out, "wall", w);
    fprintf(out, ", ");
    json_iv(out, "cpu", u);
    fprintf(out, "}");
}

static void json_suite(FILE *out, const state *st, const char *what, const unsigned char *use)
{
    fprintf(out, "    \"%s\": {\"queries\": [", what);
    int first = 1;
    for (int qi = 0; qi < st->nq; qi++) {
        if (use[qi]) {
            fprintf(out, "%s\"Q%d\"", first ? "" : ", ", st->qnum[qi]);
            first = 0;
        }
    }
    fprintf(out, "], \"ratios\": [");
    for (int c = 1; c < st->p->nconf; c++) {
        pd_interval w = suite_ratio(st, c, false, use), u = suite_ratio(st, c, true, use);
        json_ratio(out, c, &w, &u);
        fprintf(out, c + 1 < st->p->nconf ? ", " : "");
    }
    fprintf(out, "]}");
}

static void print_json(FILE *out, const state *st, const unsigned char *spilling,
                       const unsigned char *control)
{
    const pair_plan *p = st->p;
    fprintf(out,
            "{\n  \"mode\": \"paired\", \"sf\": %g, \"rounds\": %d, \"seed\": %llu,\n"
            "  \"warmup\": \"one run per query, configuration 0, not counted\",\n"
            "  \"method\": \"ratio = geometric mean of the per-round paired ratios to "
            "configuration 0; 95%% interval = Student t on the log ratios\",\n"
            "  \"load_start\": [%.2f, %.2f, %.2f], \"load_end\": [%.2f, %.2f, %.2f],\n"
            "  \"configs\": [\n",
            p->sf, p->rounds, (unsigned long long)p->seed, st->load[0][0], st->load[0][1],
            st->load[0][2], st->load[1][0], st->load[1][1], st->load[1][2]);
    for (int c = 0; c < p->nconf; c++) {
        const pair_config *pc = &p->conf[c];
        fprintf(out, "    {\"index\": %d, \"label\": ", c);
        report_json_string(out, pc->label);
        fprintf(out, ", \"codec\": \"%s\", \"level\": \"%s\", \"block_size\": %u, ",
                spill_codec_name(pc->cfg.codec), pc->level_text, pc->cfg.block_size);
        fprintf(out,
                "\"work_mem\": \"%s\", \"work_mem_bytes\": %lld, \"io_limit\": %llu, "
                "\"encrypt\": %s, \"threads\": %d}%s\n",
                pc->work_mem_text, (long long)pc->cfg.work_mem,
                (unsigned long long)pc->cfg.io_limit, pc->cfg.encrypt ? "true" : "false",
                pc->cfg.threads, c + 1 < p->nconf ? "," : "");
    }
    fprintf(out, "  ],\n  \"queries\": [\n");
    for (int qi = 0; qi < st->nq; qi++) {
        fprintf(out, "    {\"query\": \"Q%d\", \"spills\": %s", st->qnum[qi],
                st->spills[qi] ? "true" : "false");
        if (st->failed[qi]) {
            fprintf(out, ", \"error\": ");
            report_json_string(out, st->error[qi]);
            fprintf(out, "}%s\n", qi + 1 < st->nq ? "," : "");
            continue;
        }
        fprintf(out, ", \"rows\": %llu, \"answers\": \"%s\",\n      \"configs\": [\n",
                (unsigned long long)st->d[(size_t)qi * (size_t)p->nconf].rows,
                st->differ[qi] ? "DIFFER" : "identical");
        for (int c = 0; c < p->nconf; c++) {
            const sample *s = at(st, qi, 0, c);
            const detail *d = &st->d[(size_t)qi * (size_t)p->nconf + (size_t)c];
            fprintf(out,
                    "        {\"config\": %d, \"wall_s_median\": %.6f, \"cpu_s_median\": %.6f, "
                    "\"codec_ms_median\": %.3f, \"logical_bytes\": %llu, \"physical_bytes\": "
                    "%llu, \"peak_temp_bytes\": %llu, \"spill_files\": %llu, \"op_peak_bytes\": "
                    "%lld, \"mem\": ",
                    c, median_of(st, qi, c, offsetof(sample, wall)),
                    median_of(st, qi, c, offsetof(sample, cpu)),
                    median_of(st, qi, c, offsetof(sample, codec_ms)),
                    (unsigned long long)s->logical, (unsigned long long)s->physical,
                    (unsigned long long)d->peak_temp, (unsigned long long)d->files,
                    (long long)d->op_peak);
            report_json_string(out, d->mem ? d->mem : "");
            fprintf(out,
                    ", \"blocks_by_codec\": [%llu, %llu, %llu, %llu], \"auto_probe_ms\": %.3f, "
                    "\"auto_reason\": ",
                    (unsigned long long)d->blocks[0], (unsigned long long)d->blocks[1],
                    (unsigned long long)d->blocks[2], (unsigned long long)d->blocks[3],
                    d->probe_ms);
            report_json_string(out, d->reason);
            fprintf(out, "}%s\n", c + 1 < p->nconf ? "," : "");
        }
        fprintf(out, "      ],\n      \"runs\": [\n");
        for (int r = 0; r < p->rounds; r++) {
            for (int c = 0; c < p->nconf; c++) {
                const sample *s = at(st, qi, r, c);
                fprintf(
                    out,
                    "        {\"round\": %d, \"position\": %d, \"config\": %d, \"wall_s\": "
                    "%.6f, \"cpu_s\": %.6f, \"caller_cpu_s\": %.6f, \"caller_waits\": %ld, "
                    "\"codec_ms\": %.3f, \"logical_bytes\": %llu, \"physical_bytes\": %llu}%s\n",
                    r, s->position, c, s->wall, s->cpu, s->caller_cpu, s->caller_waits, s->codec_ms,
                    (unsigned long long)s->logical, (unsigned long long)s->physical,
                    r + 1 < p->rounds || c + 1 < p->nconf ? "," : "");
            }
        }
        fprintf(out, "      ],\n      \"ratios\": [");
        for (int c = 1; c < p->nconf; c++) {
            pd_interval w = query_ratio(st, qi, c, false), u = query_ratio(st, qi, c, true);
            json_ratio(out, c, &w, &u);
            fprintf(out, c + 1 < p->nconf ? ", " : "");
        }
        fprintf(out, "]}%s\n", qi + 1 < st->nq ? "," : "");
    }
    fprintf(out, "  ],\n  \"suite\": {\n");
    json_suite(out, st, "spilling", spilling);
    fprintf(out, ",\n");
    json_suite(out, st, "control", control);
    fprintf(out, "\n  },\n  \"totals\": [\n");
    for (int c = 0; c < p->nconf; c++) {
        uint64_t lg = 0, ph = 0, peak = 0;
        double secs = 0, cpus = 0, codec = 0;
        for (int qi = 0; qi < st->nq; qi++) {
            if (st->failed[qi])
                continue;
            lg += at(st, qi, 0, c)->logical;
            ph += at(st, qi, 0, c)->physical;
            uint64_t pt = st->d[(size_t)qi * (size_t)p->nconf + (size_t)c].peak_temp;
            peak = pt > peak ? pt : peak;
            secs += median_of(st, qi, c, offsetof(sample, wall));
            cpus += median_of(st, qi, c, offsetof(sample, cpu));
            codec += median_of(st, qi, c, offsetof(sample, codec_ms));
        }
        fprintf(out,
                "    {\"config\": %d, \"logical_bytes\": %llu, \"physical_bytes\": %llu, "
                "\"peak_temp_bytes\": %llu, \"wall_s_median_sum\": %.6f, \"cpu_s_median_sum\": "
                "%.6f, \"codec_ms_median_sum\": %.3f}%s\n",
                c, (unsigned long long)lg, (unsigned long long)ph, (unsigned long long)peak, secs,
                cpus, codec, c + 1 < p->nconf ? "," : "");
    }
    fprintf(out, "  ]\n}\n");
}

int paired_run(const struct tpch_db *db, const pair_plan *p, FILE *out)
{
    state st = {.p = p};
    for (int q = 1; q <= TPCH_NQUERIES; q++)
        if (p->queries[q])
            st.qnum[st.nq++] = q;
    size_t ns = (size_t)st.nq * (size_t)p->rounds * (size_t)p->nconf;
    st.s = calloc(ns ? ns : 1, sizeof *st.s);
    st.d = calloc((size_t)st.nq * (size_t)p->nconf + 1, sizeof *st.d);
    st.spills = calloc((size_t)st.nq + 1, 1);
    st.failed = calloc((size_t)st.nq + 1, sizeof *st.failed);
    st.error = calloc((size_t)st.nq + 1, sizeof *st.error);
    st.differ = calloc((size_t)st.nq + 1, sizeof *st.differ);
    unsigned char *spilling = calloc((size_t)st.nq + 1, 1), *control = calloc((size_t)st.nq + 1, 1);
    if (!st.s || !st.d || !st.spills || !st.failed || !st.error || !st.differ || !spilling ||
        !control) {
        fprintf(stderr, "spillbench: out of memory for %d runs\n", (int)ns);
        return 1;
    }
    getloadavg(st.load[0], 3);
    int status = 0;
    if (p->format != FMT_JSON)
        table_head(out, &st);
    for (int qi = 0; qi < st.nq; qi++) {
        st.failed[qi] = !run_one_query(&st, db, qi);
        st.runs_done = (double)(qi + 1) * (1.0 + (double)p->rounds * p->nconf);
        progress_clear(p->progress);
        if (st.failed[qi])
            fprintf(stderr, "spillbench: %s\n", st.error[qi]);
        if (st.failed[qi] || st.differ[qi])
            status = 1;
        spilling[qi] = !st.failed[qi] && st.spills[qi];
        control[qi] = !st.failed[qi] && !st.spills[qi];
        if (p->format != FMT_JSON)
            table_row(out, &st, qi);
    }
    getloadavg(st.load[1], 3);
    if (p->format == FMT_JSON)
        print_json(out, &st, spilling, control);
    else
        table_tail(out, &st, spilling, control);
    for (int qi = 0; qi < st.nq; qi++) {
        if (st.differ[qi])
            fprintf(stderr, "spillbench: Q%d: runs disagree (answers, or bytes between rounds)\n",
                    st.qnum[qi]);
        free(st.error[qi]);
    }
    free(st.s);
    free(st.d);
    free(st.spills);
    free(st.failed);
    free(st.error);
    free(st.differ);
    free(spilling);
    free(control);
    return status;
}
