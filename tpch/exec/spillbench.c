/*
 * spillbench.c - run TPC-H queries under a work_mem budget with every spill
 * through libbuffile, and report per query how much was spilled, how much
 * reached the disk, memory peaks and codec CPU time.
 *
 * The data directory is generated on first use (tpch_generate) and reused;
 * one that spillbench did not create is never written to without
 * --regenerate. Exit status: 0 success, 1 a query failed or --verify found a
 * mismatch, 2 bad command line (or a data directory that does not hold
 * what was asked for).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_paired.h"
#include "bench_report.h"
#include "db.h"
#include "progress.h"
#include "queries/queries.h"
#include "run.h"
#include "spill_codecs.h"

#define DEFAULT_SF 0.1
/* The file spillbench writes into a data directory it creates, before generating. */
#define MARKER ".spillbench-generated"
#ifndef BF_TOOLS_VERSION
#define BF_TOOLS_VERSION "(unknown version)"
#endif
/* Entries of a --codec, --block-size or --work-mem list, and configurations in all. */
#define MAX_LIST 16
#define MAX_CONF 64

typedef struct options {
    bf_codec codec; /* the first of each list: the single run's, and paired mode's reference */
    int32_t level;
    uint32_t block_size;
    int64_t work_mem;
    bf_codec codecs[MAX_LIST];
    int32_t levels[MAX_LIST]; /* BF_LEVEL_DEFAULT: --level, else the codec's own */
    int ncodec;
    uint32_t block_sizes[MAX_LIST];
    int nbs;
    int64_t work_mems[MAX_LIST];
    int nwm;
    int encrypts[2]; /* --encrypt: 0 sealed-free, 1 sealed; the first is the reference */
    int nenc;
    int threads[MAX_LIST]; /* --threads: workers per query's space (0: none) */
    int nthr;
    int rounds;
    uint64_t seed;
    bool seed_set;
    int64_t temp_limit;
    int64_t io_limit;
    double sf;
    bool sf_set;     /* --sf given: the data directory must hold that scale factor */
    bool regenerate; /* --regenerate: generate into the data directory whatever it holds */
    bool queries[TPCH_NQUERIES + 1];
    const char *temp_dir;
    const char *data_dir;
    const char *results_dir;
    const char *out;
    int repeat;
    report_format format;
    bool verify;
    char work_mem_text[32];
    char level_text[16];
} options;

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: spillbench [options]\n"
        "Run TPC-H queries (data derived from TPC-H) under a work_mem budget; every\n"
        "spill goes through libbuffile. Per query: rows, time, spill files, logical and\n"
        "physical bytes spilled, compression ratio, peak temp bytes, operator memory,\n"
        "codec CPU; with several configurations, time ratios between them.\n"
        "\n"
        "Options:\n"
        "  --codec=C[:L],...           spill codec none|lz4|zstd|zlib|auto|pglz, optionally\n"
        "                              with a level (default lz4; pglz is PostgreSQL's, when\n"
        "                              built with postgresql-server-dev); a list runs paired\n"
        "                              mode. auto:\n"
        "                              a query's space starts from what the last one of its\n"
        "                              configuration learned of the temp device\n"
        "  --level=N                   codec level (default: the codec's own; lz4 1..65537,\n"
        "                              zstd -7..22, zlib 1..9)\n"
        "  --block-size=SIZE,...       buffile block size, power of two 4K..1M (default 8K)\n"
        "  --work-mem=SIZE,...         per-operator memory budget, at least 64K (default\n"
        "                              4MB; 0 or 'unlimited' = never spill)\n"
        "  --encrypt[=off,on]          seal spill files with AES-256-GCM after compression\n"
        "                              (a random key per query's space); a list of both runs\n"
        "                              paired mode\n"
        "  --threads=N,...             compress spill blocks on N worker threads of the\n"
        "                              query's space (bf_space_set_workers; default 0 =\n"
        "                              on the spilling thread); a list runs paired mode\n"
        "  --rounds=N                  paired mode: N rounds (1..1000) of every configuration\n"
        "                              (the product of the lists) per query, in shuffled\n"
        "                              order, after one warm-up; time ratios to the first\n"
        "                              with 95%% intervals (default 1; more than one\n"
        "                              configuration or round means paired mode)\n"
        "  --seed=N                    the shuffle's seed (default: from the clock, printed)\n"
        "  --sf=X                      scale factor, 0.01..100 (default: the data\n"
        "                              directory's, or %g when generating)\n"
        "  --queries=all|N,N,...       queries to run, 1..22 (default all)\n"
        "  --temp-dir=DIR              parent of the spill directories (default $TMPDIR or /tmp)\n"
        "  --temp-limit=SIZE           fail a query whose spill files exceed SIZE on disk\n"
        "  --io-limit=RATE             model a slower temp disk: RATE bytes/s for spill\n"
        "                              reads and writes together, e.g. 200MB/s\n"
        "  --data-dir=DIR              binary tables (default ./tpch-data/sf<SF>); see Data\n"
        "  --regenerate                generate the tables into DIR whatever it holds\n"
        "  --repeat=N                  run each query N times (1..1000), report the median\n"
        "                              time\n"
        "  --format=table|csv|json     report format (default table)\n"
        "  --out=FILE                  write the report to FILE instead of stdout\n"
        "  --results-dir=DIR           write each query's result rows to DIR/qN.tsv\n"
        "  --verify                    also run each query without spilling (unlimited\n"
        "                              work_mem, codec none) and compare the results\n"
        "  --help                      this text\n"
        "  --version                   the version of spillbench, libbuffile and its codecs\n"
        "SIZE takes K, M or G suffixes (powers of 1024), e.g. 256K, 4MB.\n"
        "\n"
        "Data:\n"
        "  The tables are binary ones, as tpchgen --format=bin writes them, in DIR\n"
        "  (--data-dir). spillbench generates them there when DIR does not exist, is\n"
        "  empty, or holds a generation of its own that did not finish. It refuses, and\n"
        "  says why, a DIR that holds another scale factor than --sf asks for, tbl (text)\n"
        "  tables, or other files: --regenerate generates into it anyway.\n"
        "\n"
        "Output:\n"
        "  The report goes to stdout or --out, a row as each query finishes, each line\n"
        "  flushed. When stderr is a terminal, a progress line there shows the data\n"
        "  generation, query i of n, round r of R and an estimate of the time left.\n"
        "\n"
        "Single run (one configuration), the table's columns [csv and json field]:\n"
        "  query      Qn, and total: sums, and the largest of the peaks [query]\n"
        "  rows       rows of the query's result [rows]\n"
        "  time_s     wall time of the query, the median of --repeat runs [seconds]\n"
        "  files      spill files created [spill_files]\n"
        "  logicalMB  MiB the executor wrote to its spill files [logical_bytes]\n"
        "  physicMB   MiB libbuffile wrote to disk for them [physical_bytes]\n"
        "  ratio      compression ratio: logical / physical; '-' without spill [ratio]\n"
        "  saved%%     1 - physical / logical, in percent [saved_pct]\n"
        "  peaktmpMB  peak MiB of the spill files on disk [peak_temp_bytes]\n"
        "  opMemMB    largest peak of one operator's memory counter [op_peak_bytes]\n"
        "  floorMB    that operator's floor, when its peak is over 1.1 x work_mem\n"
        "             [op_floor_bytes]\n"
        "  mem        operator memory against work_mem: ok (every peak within 1.1x),\n"
        "             floor (above, but within 1.1x of its floor), OVER (above both) [mem]\n"
        "  sumMemMB   peak of the sum of all operators' counters [mem_peak_bytes]\n"
        "  heapMB     peak heap above the start, as jemalloc counts it [heap_peak_bytes]\n"
        "  codec_ms   compress + decompress CPU time, milliseconds [codec_ms]\n"
        "  ver        --verify: ok, or MISMATCH with the unspilled run's result [verify]\n"
        "  spilled    the operators that spilled: hj:N(Bb) N hash joins, the largest with\n"
        "             B batches [hash_joins_spilled, max_batches]; agg:N(dD) N hash\n"
        "             aggregates, recursion depth D [hash_aggs_spilled, agg_depth];\n"
        "             sort:N(Rr,Pp) N sorts, R initial runs, P merge passes\n"
        "             [sorts_spilled, sort_runs, sort_passes]\n"
        "\n"
        "A query that failed has FAILED and the reason instead [error]. With codec auto,\n"
        "a list of each spilling query's extents per codec and last decision follows\n"
        "[blocks_by_codec, auto_probe_ms, auto_reason].\n"
        "\n"
        "Paired mode (several configurations, or --rounds above 1), the table's columns:\n"
        "  query                 Qn, with 'spills' when it spilled under any\n"
        "                        configuration and 'DIFFERS' when runs returned different\n"
        "                        answers or bytes (auto's bytes follow its timings: only\n"
        "                        its answers count; with --threads the bytes on disk\n"
        "                        follow the workers' timing: only the logical bytes)\n"
        "  ref_s                 the reference's (the first configuration's) median wall\n"
        "                        time, seconds\n"
        "  LABEL wall            the configuration's wall time over the reference's: the\n"
        "                        geometric mean of the per-round ratios [its 95%%\n"
        "                        interval]; '~' when the interval holds 1 (no measurable\n"
        "                        difference)\n"
        "  LABEL cpu             the same for the process's CPU time (user + system)\n"
        "  spilling geomean (N)  those ratios over the N queries that spill\n"
        "  control geomean (N)   over the queries that never spill (what noise gives)\n"
        "\n"
        "Paired mode's bytes table, a row per configuration over all queries (round 0):\n"
        "  logicalMB             as in a single run, summed over the queries\n"
        "  physicMB              as in a single run, summed over the queries\n"
        "  phys/log              physical / logical: the share of the spilled bytes that\n"
        "                        reached the disk (1 / the single run's ratio)\n"
        "  peaktmpMB             the largest of the queries' peaks\n"
        "  codec_ms              the queries' median codec times, summed\n"
        "  time_s(sum)           the queries' median wall times, summed\n"
        "  blocks                extents written with none/lz4/zstd/zlib\n"
        "\n"
        "--format=json writes every run, the ratios with their intervals, the bytes and\n"
        "the load average (docs/executor.md, docs/report.md).\n"
        "\n"
        "Exit status: 0 done; 1 a query failed, --verify found a mismatch or paired runs\n"
        "differed; 2 a bad option, or a data directory that does not hold what was asked.\n",
        DEFAULT_SF);
}

static void version(void)
{
    unsigned v = bf_version_number();
    printf("spillbench (buffile) %s\n", BF_TOOLS_VERSION);
    printf("libbuffile %u.%u.%u, codecs:", v / 10000, v / 100 % 100, v % 100);
    static const bf_codec codecs[] = {BF_CODEC_NONE, BF_CODEC_LZ4, BF_CODEC_ZSTD, BF_CODEC_ZLIB,
                                      BF_CODEC_AUTO};
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        if (bf_codec_available(codecs[i]))
            printf(" %s", bf_codec_name(codecs[i]));
    bf_codec pglz;
    if (spill_codec_parse("pglz", &pglz) == BF_OK)
        printf(" pglz");
    printf("\nData derived from TPC-H; results are not comparable to published TPC-H results.\n");
}

static _Noreturn void bad_flag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void bad_flag(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "spillbench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see --help)\n");
    exit(2);
}

static bool parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v))
        return false;
    double mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024.0;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024.0 * 1024.0;
        end++;
        break;
    default: break;
    }
    if (mult > 1 && (*end == 'b' || *end == 'B'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0' || v * mult > 9.0e18)
        return false;
    *out = (int64_t)(v * mult);
    return true;
}

/* 0 for an integer within lo..hi, 1 for text that is no integer, 2 for one out of range. */
static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end)
        return 1;
    if (errno == ERANGE || v < lo || v > hi)
        return 2;
    *out = v;
    return 0;
}

/* The integer value of `flag`, within lo..hi; else exit 2 saying which is wrong. */
static long int_flag(const char *flag, const char *val, long lo, long hi)
{
    long n = 0;
    int rc = parse_int(val, lo, hi, &n);
    if (rc == 1)
        bad_flag("%s: '%s' is not an integer", flag, val);
    if (rc == 2)
        bad_flag("%s: %s is out of range %ld..%ld", flag, val, lo, hi);
    return n;
}

static void parse_queries(const char *s, options *o)
{
    memset(o->queries, 0, sizeof o->queries);
    if (strcmp(s, "all") == 0) {
        for (int i = 1; i <= TPCH_NQUERIES; i++)
            o->queries[i] = true;
        return;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *p = buf; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        const char *num = (*p == 'q' || *p == 'Q') ? p + 1 : p;
        long n = 0;
        int rc = parse_int(num, 1, TPCH_NQUERIES, &n);
        if (rc == 1)
            bad_flag("--queries: '%s' is not a query number (1..%d, or all)", p, TPCH_NQUERIES);
        if (rc == 2)
            bad_flag("--queries: %s is out of range 1..%d", p, TPCH_NQUERIES);
        o->queries[n] = true;
        p = comma ? comma + 1 : NULL;
    }
}

static void format_size(int64_t v, char *buf, size_t n)
{
    if (v <= 0)
        snprintf(buf, n, "unlimited");
    else if (v % (1024 * 1024) == 0)
        snprintf(buf, n, "%lldMB", (long long)(v / (1024 * 1024)));
    else if (v % 1024 == 0)
        snprintf(buf, n, "%lldKB", (long long)(v / 1024));
    else
        snprintf(buf, n, "%lldB", (long long)v);
}

/* Split a comma-separated flag value into at most MAX_LIST items (in `buf`). */
static int split_list(const char *flag, const char *val, char *buf, size_t n, char **items)
{
    snprintf(buf, n, "%s", val);
    int count = 0;
    for (char *p = buf; p != NULL; count++) {
        if (count == MAX_LIST)
            bad_flag("%s: more than %d values", flag, MAX_LIST);
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p == '\0')
            bad_flag("%s: empty value in '%s'", flag, val);
        items[count] = p;
        p = comma ? comma + 1 : NULL;
    }
    return count;
}

static void parse_codec(const char *item, bf_codec *codec, int32_t *level)
{
    char name[32];
    const char *colon = strchr(item, ':');
    snprintf(name, sizeof name, "%.*s", (int)(colon ? colon - item : (long)strlen(item)), item);
    int rc = spill_codec_parse(name, codec);
    if (rc == BF_ENOCODEC)
        bad_flag("--codec: %s was not built into spillbench (postgresql-server-dev-15)", name);
    if (rc != BF_OK)
        bad_flag("--codec: unknown codec '%s' (none, lz4, zstd, zlib, auto, pglz)", name);
    if (!bf_codec_available(*codec) && spill_codec_name(*codec) == NULL)
        bad_flag("--codec: %s is not built into this libbuffile", name);
    *level = BF_LEVEL_DEFAULT;
    long n = 0;
    int rc_level = colon ? parse_int(colon + 1, INT32_MIN + 1, INT32_MAX, &n) : 0;
    if (rc_level == 1)
        bad_flag("--codec: '%s' has no integer level after ':'", item);
    if (rc_level == 2)
        bad_flag("--codec: level %s is out of range (lz4 1..65537, zstd -7..22, zlib 1..9)",
                 colon + 1);
    if (colon)
        *level = (int32_t)n;
}

/* The long options: whether each takes a value (OPTIONAL: --encrypt alone means on). */
enum { NO_VALUE, VALUE, OPTIONAL };
static const struct {
    const char *name;
    int value;
} known_options[] = {
    {"--codec", VALUE},      {"--level", VALUE},
    {"--block-size", VALUE}, {"--work-mem", VALUE},
    {"--encrypt", OPTIONAL}, {"--rounds", VALUE},
    {"--seed", VALUE},       {"--sf", VALUE},
    {"--queries", VALUE},    {"--temp-dir", VALUE},
    {"--temp-limit", VALUE}, {"--io-limit", VALUE},
    {"--data-dir", VALUE},   {"--regenerate", NO_VALUE},
    {"--repeat", VALUE},     {"--format", VALUE},
    {"--out", VALUE},        {"--results-dir", VALUE},
    {"--verify", NO_VALUE},  {"--help", NO_VALUE},
    {"--version", NO_VALUE}, {"--threads", VALUE},
};

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->codec = BF_CODEC_LZ4;
    o->level = BF_LEVEL_DEFAULT;
    o->block_size = BF_BLOCK_SIZE_DEFAULT;
    o->work_mem = 4 * 1024 * 1024;
    o->sf = DEFAULT_SF;
    o->repeat = 1;
    o->rounds = 1;
    o->codecs[0] = o->codec;
    o->levels[0] = BF_LEVEL_DEFAULT;
    o->ncodec = 1;
    o->block_sizes[0] = o->block_size;
    o->nbs = 1;
    o->work_mems[0] = o->work_mem;
    o->nwm = 1;
    o->nenc = 1;
    o->nthr = 1;
    char list[512], *items[MAX_LIST];
    o->format = FMT_TABLE;
    parse_queries("all", o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0)
            a = "--help";
        if (strncmp(a, "--", 2) != 0) {
            if (a[0] == '-')
                bad_flag("unknown option %s", a);
            bad_flag("unexpected argument '%s'", a);
        }
        char name[64];
        const char *eq = strchr(a, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - a : (long)strlen(a)), a);
        int kind = -1;
        for (size_t k = 0; k < sizeof known_options / sizeof known_options[0]; k++)
            if (strcmp(name, known_options[k].name) == 0)
                kind = known_options[k].value;
        if (kind < 0)
            bad_flag("unknown option %s", name);
        if (kind == NO_VALUE && eq)
            bad_flag("%s takes no value", name);
        const char *val = eq ? eq + 1 : NULL;
        if (kind == VALUE && !val) {
            if (i + 1 >= argc)
                bad_flag("%s needs a value (%s=...)", name, name);
            val = argv[++i];
        }
        int64_t size;
        if (strcmp(name, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(name, "--version") == 0) {
            version();
            exit(0);
        } else if (strcmp(name, "--verify") == 0) {
            o->verify = true;
        } else if (strcmp(name, "--regenerate") == 0) {
            o->regenerate = true;
        } else if (strcmp(name, "--encrypt") == 0 && !val) {
            o->encrypts[0] = 1;
        } else if (strcmp(name, "--codec") == 0) {
            o->ncodec = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->ncodec; k++)
                parse_codec(items[k], &o->codecs[k], &o->levels[k]);
        } else if (strcmp(name, "--rounds") == 0) {
            o->rounds = (int)int_flag(name, val, 1, 1000);
        } else if (strcmp(name, "--seed") == 0) {
            char *end;
            errno = 0;
            o->seed = strtoull(val, &end, 10);
            if (end == val || *end || strchr(val, '-'))
                bad_flag("--seed: '%s' is not a non-negative integer", val);
            if (errno == ERANGE)
                bad_flag("--seed: %s is out of range 0..%llu", val, (unsigned long long)UINT64_MAX);
            o->seed_set = true;
        } else if (strcmp(name, "--level") == 0) {
            /* The library checks each codec's range (check_spill_config says it). */
            long n = 0;
            int rc = parse_int(val, INT32_MIN + 1, INT32_MAX, &n);
            if (rc == 1)
                bad_flag("--level: '%s' is not an integer", val);
            if (rc == 2)
                bad_flag("--level: %s is out of range (lz4 1..65537, zstd -7..22, zlib 1..9)", val);
            o->level = (int32_t)n;
        } else if (strcmp(name, "--block-size") == 0) {
            o->nbs = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->nbs; k++) {
                if (!parse_size(items[k], &size))
                    bad_flag("--block-size: '%s' is not a size (e.g. 8K)", items[k]);
                if (size < BF_BLOCK_SIZE_MIN || size > BF_BLOCK_SIZE_MAX)
                    bad_flag("--block-size: %s is out of range 4K..1M", items[k]);
                if ((size & (size - 1)) != 0)
                    bad_flag("--block-size: %s is not a power of two (4K, 8K, ..., 1M)", items[k]);
                o->block_sizes[k] = (uint32_t)size;
            }
        } else if (strcmp(name, "--work-mem") == 0) {
            o->nwm = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->nwm; k++) {
                if (strcmp(items[k], "unlimited") == 0)
                    size = 0;
                else if (!parse_size(items[k], &size))
                    bad_flag("--work-mem: '%s' is not a size (e.g. 4MB, 256K, unlimited)",
                             items[k]);
                else if (size > 0 && size < 64 * 1024)
                    bad_flag("--work-mem: %s is out of range: at least 64K (or 0 = unlimited)",
                             items[k]);
                o->work_mems[k] = size;
            }
        } else if (strcmp(name, "--encrypt") == 0) {
            o->nenc = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->nenc; k++) {
                if (k > 1 || (strcmp(items[k], "on") != 0 && strcmp(items[k], "off") != 0))
                    bad_flag("--encrypt: '%s' is not on, off or a list of both", val);
                o->encrypts[k] = strcmp(items[k], "on") == 0;
            }
        } else if (strcmp(name, "--threads") == 0) {
            o->nthr = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->nthr; k++) {
                char *end;
                long n = strtol(items[k], &end, 10);
                if (*items[k] == '\0' || *end != '\0' || n < 0 || n > BF_WORKERS_MAX)
                    bad_flag("--threads: '%s' is not a number of workers 0..%d", items[k],
                             BF_WORKERS_MAX);
                o->threads[k] = (int)n;
            }
        } else if (strcmp(name, "--sf") == 0) {
            char *end;
            errno = 0;
            o->sf = strtod(val, &end);
            if (end == val || *end || isnan(o->sf))
                bad_flag("--sf: '%s' is not a number", val);
            if (!(o->sf >= 0.01 && o->sf <= 100))
                bad_flag("--sf: %s is out of range 0.01..100", val);
            o->sf_set = true;
        } else if (strcmp(name, "--queries") == 0) {
            parse_queries(val, o);
        } else if (strcmp(name, "--temp-dir") == 0) {
            o->temp_dir = val;
        } else if (strcmp(name, "--temp-limit") == 0) {
            if (!parse_size(val, &size))
                bad_flag("--temp-limit: '%s' is not a size (e.g. 100MB)", val);
            if (size <= 0)
                bad_flag("--temp-limit: %s is out of range: at least 1 byte (no flag: no limit)",
                         val);
            o->temp_limit = size;
        } else if (strcmp(name, "--io-limit") == 0) {
            char rate[64];
            size_t vl = strlen(val);
            snprintf(rate, sizeof rate, "%.*s",
                     (int)(vl > 2 && strcmp(val + vl - 2, "/s") == 0 ? vl - 2 : vl), val);
            if (!parse_size(rate, &size))
                bad_flag("--io-limit: '%s' is not a rate (e.g. 200MB/s)", val);
            if (size <= 0)
                bad_flag("--io-limit: %s is out of range: at least 1 byte/s (no flag: no limit)",
                         val);
            o->io_limit = size;
        } else if (strcmp(name, "--data-dir") == 0) {
            o->data_dir = val;
        } else if (strcmp(name, "--results-dir") == 0) {
            o->results_dir = val;
        } else if (strcmp(name, "--out") == 0) {
            o->out = val;
        } else if (strcmp(name, "--repeat") == 0) {
            o->repeat = (int)int_flag(name, val, 1, 1000);
        } else if (strcmp(name, "--format") == 0) {
            if (strcmp(val, "table") == 0)
                o->format = FMT_TABLE;
            else if (strcmp(val, "csv") == 0)
                o->format = FMT_CSV;
            else if (strcmp(val, "json") == 0)
                o->format = FMT_JSON;
            else
                bad_flag("--format: '%s' is not table, csv or json", val);
        }
    }
    for (int k = 0; k < o->ncodec; k++)
        if (o->levels[k] == BF_LEVEL_DEFAULT)
            o->levels[k] = o->level; /* --level: for the entries without their own */
    o->codec = o->codecs[0];
    o->level = o->levels[0];
    o->block_size = o->block_sizes[0];
    o->work_mem = o->work_mems[0];
    int nconf = o->ncodec * o->nbs * o->nwm * o->nenc * o->nthr;
    if (nconf > MAX_CONF)
        bad_flag("%d configurations: at most %d", nconf, MAX_CONF);
    if (nconf > 1 || o->rounds > 1) {
        if (o->repeat > 1)
            bad_flag("--repeat is for a single configuration; paired mode has --rounds");
        if (o->format == FMT_CSV)
            bad_flag("paired mode reports as a table or JSON, not CSV");
        if (o->verify || o->results_dir)
            bad_flag("--verify and --results-dir are for a single configuration; paired mode "
                     "checks that every run returns the same answer");
    }
    format_size(o->work_mem, o->work_mem_text, sizeof o->work_mem_text);
    if (o->level == BF_LEVEL_DEFAULT)
        snprintf(o->level_text, sizeof o->level_text, "default");
    else
        snprintf(o->level_text, sizeof o->level_text, "%d", o->level);
}

/* The progress line of the data generation, in the generator's units. */
typedef struct gen_line {
    progress p;
    double sf;
    const char *dir;
} gen_line;

static void gen_progress(void *ctx, uint64_t done, uint64_t total)
{
    gen_line *g = ctx;
    if (total == 0)
        return;
    g->p.total = (double)total;
    progress_set(&g->p, (double)done);
    progress_show(&g->p, "generating the tables (SF %g) into %s: %.0f%%", g->sf, g->dir,
                  100.0 * (double)done / (double)total);
}

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int write_result(const char *dir, int qnum, const strbuf *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/q%d.tsv", dir, qnum);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = text->len ? fwrite(text->p, 1, text->len, f) : 0;
    int rc = (n == text->len && fclose(f) == 0) ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "spillbench: cannot write %s: %s\n", path, strerror(errno));
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool same_text(const strbuf *a, const strbuf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static void fill_row(bench_row *row, int qnum, const run_result *r, double median, int64_t work_mem)
{
    memset(row, 0, sizeof *row);
    row->query = qnum;
    row->rows = r->rows;
    row->seconds = median;
    row->files = r->spill.files_created;
    row->logical = r->spill.logical_written;
    row->physical = r->spill.physical_written;
    row->peak_temp = r->spill.physical_peak;
    row->op_peak = r->op_peak;
    row->mem = run_mem_mark(r, work_mem);
    if (row->mem != NULL && strcmp(row->mem, "ok") != 0)
        row->op_floor = r->op_peak_floor;
    row->mem_peak = r->mem_peak;
    row->heap_peak = r->heap_peak;
    row->codec_ms = (double)(r->spill.compress_ns + r->spill.decompress_ns) / 1e6;
    memcpy(row->blocks, r->spill.blocks_by_codec, sizeof row->blocks);
    row->probe_ms = (double)r->spill.auto_probe_ns / 1e6;
    row->auto_reason = r->auto_reason[0] != '\0' ? strdup(r->auto_reason) : NULL;
    row->hj = r->ops.hj_spilled;
    row->agg = r->ops.agg_spilled;
    row->sort = r->ops.sort_spilled;
    row->hj_batches = r->ops.hj_max_batches;
    row->agg_depth = r->ops.agg_max_depth;
    row->sort_passes = r->ops.sort_max_passes;
    row->sort_runs = r->ops.sort_runs;
}

static int mem_rank(const char *mem)
{
    if (!mem)
        return -1;
    return strcmp(mem, "ok") == 0 ? 0 : strcmp(mem, "floor") == 0 ? 1 : 2;
}

static void add_total(bench_row *t, const bench_row *r)
{
    t->rows += r->rows;
    t->seconds += r->seconds;
    t->files += r->files;
    t->logical += r->logical;
    t->physical += r->physical;
    if (r->peak_temp > t->peak_temp)
        t->peak_temp = r->peak_temp;
    if (r->op_peak > t->op_peak)
        t->op_peak = r->op_peak;
    if (r->op_floor > t->op_floor)
        t->op_floor = r->op_floor;
    if (mem_rank(r->mem) > mem_rank(t->mem)) /* the total shows the worst */
        t->mem = r->mem;
    if (r->mem_peak > t->mem_peak)
        t->mem_peak = r->mem_peak;
    if (r->heap_peak > t->heap_peak)
        t->heap_peak = r->heap_peak;
    t->codec_ms += r->codec_ms;
    for (int k = 0; k < 4; k++)
        t->blocks[k] += r->blocks[k];
    t->probe_ms += r->probe_ms;
    t->hj += r->hj;
    t->agg += r->agg;
    t->sort += r->sort;
    if (r->hj_batches > t->hj_batches)
        t->hj_batches = r->hj_batches;
    if (r->agg_depth > t->agg_depth)
        t->agg_depth = r->agg_depth;
    if (r->sort_passes > t->sort_passes)
        t->sort_passes = r->sort_passes;
    t->sort_runs += r->sort_runs;
}

/* Reject a codec/level/block-size/temp-dir combination the library refuses,
 * before spending time on data generation. */
static void check_spill_config(const run_config *cfg)
{
    bf_space_options so;
    run_space_options(cfg, &so);
    bf_space *space;
    char err[256] = "";
    int rc = bf_space_create(&so, &space, err, sizeof err);
    if (rc == 0 && cfg->threads > 0 &&
        (rc = bf_space_set_workers(space, (unsigned)cfg->threads, NULL, NULL)) != 0) {
        snprintf(err, sizeof err, "%s", bf_space_errmsg(space));
        bf_space_destroy(space);
    }
    if (rc == BF_EINVAL)
        bad_flag("spill configuration refused: %s", err);
    if (rc != 0) {
        fprintf(stderr, "spillbench: cannot create a spill space: %s\n", err);
        exit(1);
    }
    bf_space_destroy(space);
}

/*
 * The configurations of paired mode: the product of the lists, work_mem
 * outermost, then block size, codec, and encryption innermost; labels name
 * only what varies.
 */
static int make_configs(const options *o, pair_config *conf)
{
    int n = 0;
    for (int w = 0; w < o->nwm; w++) {
        for (int b = 0; b < o->nbs; b++) {
            for (int k = 0; k < o->ncodec * o->nenc * o->nthr; k++, n++) {
                int c = k / (o->nenc * o->nthr), e = k / o->nthr % o->nenc, t = k % o->nthr;
                pair_config *pc = &conf[n];
                memset(pc, 0, sizeof *pc);
                pc->cfg = (run_config){.codec = o->codecs[c],
                                       .level = o->levels[c],
                                       .block_size = o->block_sizes[b],
                                       .work_mem = o->work_mems[w],
                                       .temp_dir = o->temp_dir,
                                       .temp_limit = (uint64_t)o->temp_limit,
                                       .io_limit = (uint64_t)o->io_limit,
                                       .encrypt = o->encrypts[e],
                                       .threads = o->threads[t]};
                if (pc->cfg.codec == BF_CODEC_AUTO) {
                    pc->learned = (bf_auto_device)BF_AUTO_DEVICE_INIT;
                    pc->cfg.auto_device = &pc->learned;
                }
                check_spill_config(&pc->cfg);
                format_size(o->work_mems[w], pc->work_mem_text, sizeof pc->work_mem_text);
                if (o->levels[c] == BF_LEVEL_DEFAULT)
                    snprintf(pc->level_text, sizeof pc->level_text, "default");
                else
                    snprintf(pc->level_text, sizeof pc->level_text, "%d", (int)o->levels[c]);
                size_t len = (size_t)snprintf(pc->label, sizeof pc->label, "%s",
                                              spill_codec_name(o->codecs[c]));
                if (o->levels[c] != BF_LEVEL_DEFAULT)
                    len += (size_t)snprintf(pc->label + len, sizeof pc->label - len, ":%d",
                                            (int)o->levels[c]);
                if (o->nbs > 1)
                    len += (size_t)snprintf(pc->label + len, sizeof pc->label - len, "/%uK",
                                            o->block_sizes[b] / 1024);
                if (o->nenc > 1 || o->encrypts[e])
                    len += (size_t)snprintf(pc->label + len, sizeof pc->label - len, "%s",
                                            o->encrypts[e] ? "+enc" : "");
                if (o->threads[t] > 0)
                    len += (size_t)snprintf(pc->label + len, sizeof pc->label - len, "+%dw",
                                            o->threads[t]);
                if (o->nwm > 1)
                    snprintf(pc->label + len, sizeof pc->label - len, "@%s", pc->work_mem_text);
            }
        }
    }
    return n;
}

/* 1 if dir exists and holds nothing but `allowed` (NULL: nothing), 0 if it holds more,
 * -1 if it does not exist (or cannot be read: the generator will say why). */
static int dir_state(const char *dir, const char *allowed)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int only = 1;
    struct dirent *e;
    while (only && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            (allowed == NULL || strcmp(e->d_name, allowed) != 0))
            only = 0;
    closedir(d);
    return only;
}

static bool file_exists(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Generate the tables at o->sf into dir, marking it as spillbench's first. */
static void generate(const options *o, const char *dir, bool tty)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, MARKER);
    FILE *f = mkdirs(dir) == 0 ? fopen(path, "w") : NULL;
    if (!f ||
        fprintf(f, "spillbench created this directory and generates the TPC-H tables "
                   "into it; without meta.txt, the generation did not finish.\n") < 0 ||
        fclose(f) != 0) {
        fprintf(stderr, "spillbench: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    gen_line g = {.sf = o->sf, .dir = dir};
    progress_init(&g.p, tty, 1);
    gen_progress(&g, 0, 1);
    int rc = tpch_generate(o->sf, dir, TPCH_FMT_BIN, 0, 0, gen_progress, &g, err, sizeof err);
    progress_clear(&g.p);
    if (rc != 0) {
        fprintf(stderr, "spillbench: generating %s: %s\n", dir, err);
        exit(1);
    }
}

/*
 * Make dir hold the binary tables at the scale factor asked for, generating
 * them only into a directory that is missing, empty or spillbench's own
 * unfinished one (or under --regenerate); refuse anything else with one
 * line saying what dir holds and what to do. Sets o->sf to the data's.
 */
static void prepare_data(options *o, const char *dir, bool tty)
{
    double have = 0;
    char format[16];
    bool meta = db_meta(dir, &have, format, sizeof format) == 0;
    if (o->regenerate || (!meta && dir_state(dir, MARKER) != 0) ||
        (!meta && file_exists(dir, MARKER))) {
        generate(o, dir, tty);
        return;
    }
    if (!meta)
        bad_flag("%s is not empty and has no meta.txt (not a tpchgen data directory): choose "
                 "another --data-dir, or pass --regenerate to generate SF %g into it",
                 dir, o->sf);
    if (strcmp(format, "tbl") == 0)
        bad_flag("%s holds SF %g in tbl (text) format, and spillbench reads binary tables: "
                 "tpchgen --sf=%g --format=bin --out=DIR writes them (or pass --regenerate to "
                 "write them into %s)",
                 dir, have, have, dir);
    if (o->sf_set && fabs(have - o->sf) > 1e-9 * o->sf)
        bad_flag("%s holds SF %g, not the SF %g asked for: drop --sf to use it, choose another "
                 "--data-dir, or pass --regenerate to replace it with SF %g",
                 dir, have, o->sf, o->sf);
    o->sf = have;
}

int main(int argc, char **argv)
{
    options o;
    parse_args(argc, argv, &o);
    run_config cfg = {.codec = o.codec,
                      .level = o.level,
                      .block_size = o.block_size,
                      .work_mem = o.work_mem,
                      .temp_dir = o.temp_dir,
                      .temp_limit = (uint64_t)o.temp_limit,
                      .io_limit = (uint64_t)o.io_limit,
                      .encrypt = o.encrypts[0],
                      .threads = o.threads[0]};
    bf_auto_device learned = BF_AUTO_DEVICE_INIT;
    if (cfg.codec == BF_CODEC_AUTO)
        cfg.auto_device = &learned;
    check_spill_config(&cfg);
    static pair_config conf[MAX_CONF];
    int nconf = make_configs(&o, conf);
    bool paired = nconf > 1 || o.rounds > 1;
    /* Spill directories of earlier runs that were killed (their process is gone). */
    bf_sweep(o.temp_dir);
    bool tty = isatty(STDERR_FILENO);
    /* A pipe or a file gets each line of the report as it is written. */
    if (!isatty(STDOUT_FILENO))
        setvbuf(stdout, NULL, _IOLBF, 0);

    char data_dir[4096];
    if (o.data_dir)
        snprintf(data_dir, sizeof data_dir, "%s", o.data_dir);
    else
        snprintf(data_dir, sizeof data_dir, "./tpch-data/sf%g", o.sf);
    prepare_data(&o, data_dir, tty);
    char err[512];
    struct tpch_db *db;
    if (db_open(data_dir, &db, err, sizeof err) != 0) {
        fprintf(stderr, "spillbench: %s (tpchgen --format=bin writes all eight tables)\n", err);
        return 1;
    }
    if (o.results_dir && mkdirs(o.results_dir) != 0) {
        fprintf(stderr, "spillbench: cannot create %s: %s\n", o.results_dir, strerror(errno));
        return 1;
    }
    FILE *out = stdout;
    if (o.out) {
        if (!(out = fopen(o.out, "w"))) {
            fprintf(stderr, "spillbench: cannot open %s: %s\n", o.out, strerror(errno));
            return 1;
        }
        setvbuf(out, NULL, _IOLBF, 0);
    }
    int nq = 0;
    for (int q = 1; q <= TPCH_NQUERIES; q++)
        nq += o.queries[q];

    if (paired) {
        if (!o.seed_set) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            o.seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
        }
        progress prog;
        progress_init(&prog, tty, (double)nq * (1.0 + (double)o.rounds * nconf));
        pair_plan plan = {conf, nconf, o.rounds, o.seed, o.queries, o.format, db->sf, &prog};
        int status = paired_run(db, &plan, out);
        if (out != stdout && fclose(out) != 0) {
            fprintf(stderr, "spillbench: writing %s: %s\n", o.out, strerror(errno));
            status = 1;
        }
        db_close(db);
        return status;
    }

    run_config plain = {.codec = BF_CODEC_NONE,
                        .level = BF_LEVEL_DEFAULT,
                        .block_size = o.block_size,
                        .temp_dir = o.temp_dir};
    bench_row rows[TPCH_NQUERIES], total;
    memset(&total, 0, sizeof total);
    int nrows = 0, done = 0, status = 0;
    double *times = calloc((size_t)o.repeat, sizeof *times);
    if (!times)
        return 1;
    bench_header h = {db->sf,       spill_codec_name(o.codec), o.level_text,
                      o.block_size, o.work_mem_text,           o.repeat};
    report_begin(out, o.format, &h);
    /* Progress in runs: each query's repeats, and its unspilled run under --verify. */
    int per_query = o.repeat + (o.verify ? 1 : 0);
    progress prog;
    progress_init(&prog, tty, (double)nq * per_query);
    for (int q = 1; q <= TPCH_NQUERIES; q++) {
        if (!o.queries[q])
            continue;
        done++;
        run_result r;
        int rc = 0;
        for (int rep = 0; rep < o.repeat && rc == 0; rep++) {
            progress_set(&prog, (double)(done - 1) * per_query + rep);
            if (o.repeat > 1)
                progress_show(&prog, "query %d of %d (Q%d), run %d of %d", done, nq, q, rep + 1,
                              o.repeat);
            else
                progress_show(&prog, "query %d of %d (Q%d)", done, nq, q);
            if (rep > 0)
                sb_free(&r.text);
            rc = run_query(db, q, &cfg, &r);
            times[rep] = r.seconds;
        }
        bench_row *row = &rows[nrows++];
        if (rc != 0) {
            memset(row, 0, sizeof *row);
            row->query = q;
            row->error = strdup(r.err);
            progress_clear(&prog);
            fprintf(stderr, "spillbench: %s\n", r.err);
            report_row(out, o.format, row, nrows - 1);
            status = 1;
            continue;
        }
        qsort(times, (size_t)o.repeat, sizeof *times, cmp_double);
        fill_row(row, q, &r, times[o.repeat / 2], o.work_mem);
        if (o.results_dir && write_result(o.results_dir, q, &r.text) != 0)
            status = 1;
        if (o.verify) {
            progress_set(&prog, (double)done * per_query - 1);
            progress_show(&prog, "query %d of %d (Q%d), verify", done, nq, q);
            run_result base;
            if (run_query(db, q, &plain, &base) != 0) {
                row->verify = "ERROR";
                status = 1;
            } else {
                row->verify = same_text(&r.text, &base.text) ? "ok" : "MISMATCH";
                if (strcmp(row->verify, "ok") != 0)
                    status = 1;
                sb_free(&base.text);
            }
        }
        sb_free(&r.text);
        add_total(&total, row);
        progress_clear(&prog); /* (stdout may be the same terminal) */
        report_row(out, o.format, row, nrows - 1);
    }
    progress_clear(&prog);
    free(times);
    report_end(out, o.format, &h, rows, nrows, &total);
    for (int i = 0; i < nrows; i++) {
        free((char *)rows[i].error);
        free((char *)rows[i].auto_reason);
    }
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "spillbench: writing %s: %s\n", o.out, strerror(errno));
        status = 1;
    }
    db_close(db);
    return status;
}
