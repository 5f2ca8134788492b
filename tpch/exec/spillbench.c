/*
 * spillbench.c - run TPC-H queries under a work_mem budget with every spill
 * through libbuffile, and report per query how much was spilled, how much
 * reached the disk, memory peaks and codec CPU time.
 *
 * The data directory is generated on first use (tpch_generate) and reused.
 * Exit status: 0 success, 1 a query failed or --verify found a mismatch,
 * 2 bad command line.
 */
#define _POSIX_C_SOURCE 200809L

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
#include "queries/queries.h"
#include "run.h"
#include "spill_codecs.h"

#define DEFAULT_SF 0.1
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
    int rounds;
    uint64_t seed;
    bool seed_set;
    int64_t temp_limit;
    int64_t io_limit;
    double sf;
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
        "usage: spillbench [options]\n"
        "Run TPC-H queries (data derived from TPC-H) under a work_mem budget; every\n"
        "spill goes through libbuffile. Per query: rows, time, spill files, logical and\n"
        "physical bytes spilled, ratio, peak temp bytes, operator memory, codec CPU.\n"
        "\n"
        "  --codec=C[:L],...           spill codec none|lz4|zstd|zlib|auto|pglz, optionally\n"
        "                              with a level (default lz4; pglz is PostgreSQL's, when\n"
        "                              built with postgresql-server-dev); a list runs paired\n"
        "                              mode. auto:\n"
        "                              a query's space starts from what the last one of its\n"
        "                              configuration learned of the temp device\n"
        "  --level=N                   codec level (default: the codec's own)\n"
        "  --block-size=SIZE,...       buffile block size, power of two 4K..1M (default 8K)\n"
        "  --work-mem=SIZE,...         per-operator memory budget (default 4MB;\n"
        "                              0 or 'unlimited' = never spill)\n"
        "  --encrypt[=off,on]          seal spill files with AES-256-GCM after compression\n"
        "                              (a random key per query's space); a list of both runs\n"
        "                              paired mode\n"
        "  --rounds=N                  paired mode: N rounds of every configuration (the\n"
        "                              product of the lists) per query, in shuffled order,\n"
        "                              after one warm-up; time ratios to the first with 95%%\n"
        "                              intervals (default 1; more than one configuration\n"
        "                              or round means paired mode)\n"
        "  --seed=N                    the shuffle's seed (default: from the clock, printed)\n"
        "  --sf=X                      scale factor, 0.01..100 (default %g)\n"
        "  --queries=all|N,N,...       queries to run (default all)\n"
        "  --temp-dir=DIR              parent of the spill directories (default $TMPDIR or /tmp)\n"
        "  --temp-limit=SIZE           fail a query whose spill files exceed SIZE on disk\n"
        "  --io-limit=RATE             model a slower temp disk: RATE bytes/s for spill\n"
        "                              reads and writes together, e.g. 200MB/s\n"
        "  --data-dir=DIR              binary tables (default ./tpch-data/sf<SF>);\n"
        "                              generated there if DIR/meta.txt is missing\n"
        "  --repeat=N                  run each query N times, report the median time\n"
        "  --format=table|csv|json     report format (default table)\n"
        "  --out=FILE                  write the report to FILE instead of stdout\n"
        "  --results-dir=DIR           write each query's result rows to DIR/qN.tsv\n"
        "  --verify                    also run each query without spilling (unlimited\n"
        "                              work_mem, codec none) and compare the results\n"
        "  --help                      this text\n"
        "SIZE takes K, M or G suffixes (powers of 1024), e.g. 256K, 4MB.\n",
        DEFAULT_SF);
}

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

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
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
        long n;
        if (!parse_int(num, 1, TPCH_NQUERIES, &n))
            bad_flag("--queries: '%s' is not a query number 1..%d", p, TPCH_NQUERIES);
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
    long n;
    if (colon && !parse_int(colon + 1, -1000000, 1000000, &n))
        bad_flag("--codec: '%s' has no integer level after ':'", item);
    if (colon)
        *level = (int32_t)n;
}

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
    char list[512], *items[MAX_LIST];
    o->format = FMT_TABLE;
    parse_queries("all", o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--verify") == 0) {
            o->verify = true;
            continue;
        }
        if (strcmp(a, "--encrypt") == 0) {
            o->encrypts[0] = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            bad_flag("unexpected argument '%s'", a);
        char name[64];
        const char *eq = strchr(a, '=');
        const char *val;
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
            if (i + 1 >= argc)
                bad_flag("%s needs a value", a);
            val = argv[++i];
        }
        int64_t size;
        long n;
        if (strcmp(name, "--codec") == 0) {
            o->ncodec = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->ncodec; k++)
                parse_codec(items[k], &o->codecs[k], &o->levels[k]);
        } else if (strcmp(name, "--rounds") == 0) {
            if (!parse_int(val, 1, 1000, &n))
                bad_flag("--rounds: '%s' is not a count from 1 to 1000", val);
            o->rounds = (int)n;
        } else if (strcmp(name, "--seed") == 0) {
            char *end;
            errno = 0;
            o->seed = strtoull(val, &end, 10);
            if (end == val || *end || errno)
                bad_flag("--seed: '%s' is not a non-negative integer", val);
            o->seed_set = true;
        } else if (strcmp(name, "--level") == 0) {
            if (!parse_int(val, -1000000, 1000000, &n))
                bad_flag("--level: '%s' is not an integer", val);
            o->level = (int32_t)n;
        } else if (strcmp(name, "--block-size") == 0) {
            o->nbs = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->nbs; k++) {
                if (!parse_size(items[k], &size) || size < BF_BLOCK_SIZE_MIN ||
                    size > BF_BLOCK_SIZE_MAX || (size & (size - 1)) != 0)
                    bad_flag("--block-size: '%s' is not a power of two from 4K to 1M", items[k]);
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
                    bad_flag("--work-mem: %s is below the minimum of 64K", items[k]);
                o->work_mems[k] = size;
            }
        } else if (strcmp(name, "--encrypt") == 0) {
            o->nenc = split_list(name, val, list, sizeof list, items);
            for (int k = 0; k < o->nenc; k++) {
                if (k > 1 || (strcmp(items[k], "on") != 0 && strcmp(items[k], "off") != 0))
                    bad_flag("--encrypt: '%s' is not on, off or a list of both", val);
                o->encrypts[k] = strcmp(items[k], "on") == 0;
            }
        } else if (strcmp(name, "--sf") == 0) {
            char *end;
            o->sf = strtod(val, &end);
            if (end == val || *end || !(o->sf >= 0.01 && o->sf <= 100))
                bad_flag("--sf: '%s' is not a scale factor from 0.01 to 100", val);
        } else if (strcmp(name, "--queries") == 0) {
            parse_queries(val, o);
        } else if (strcmp(name, "--temp-dir") == 0) {
            o->temp_dir = val;
        } else if (strcmp(name, "--temp-limit") == 0) {
            if (!parse_size(val, &size) || size <= 0)
                bad_flag("--temp-limit: '%s' is not a size (e.g. 100MB)", val);
            o->temp_limit = size;
        } else if (strcmp(name, "--io-limit") == 0) {
            char rate[64];
            size_t vl = strlen(val);
            snprintf(rate, sizeof rate, "%.*s",
                     (int)(vl > 2 && strcmp(val + vl - 2, "/s") == 0 ? vl - 2 : vl), val);
            if (!parse_size(rate, &size) || size <= 0)
                bad_flag("--io-limit: '%s' is not a rate (e.g. 200MB/s)", val);
            o->io_limit = size;
        } else if (strcmp(name, "--data-dir") == 0) {
            o->data_dir = val;
        } else if (strcmp(name, "--results-dir") == 0) {
            o->results_dir = val;
        } else if (strcmp(name, "--out") == 0) {
            o->out = val;
        } else if (strcmp(name, "--repeat") == 0) {
            if (!parse_int(val, 1, 1000, &n))
                bad_flag("--repeat: '%s' is not a count from 1 to 1000", val);
            o->repeat = (int)n;
        } else if (strcmp(name, "--format") == 0) {
            if (strcmp(val, "table") == 0)
                o->format = FMT_TABLE;
            else if (strcmp(val, "csv") == 0)
                o->format = FMT_CSV;
            else if (strcmp(val, "json") == 0)
                o->format = FMT_JSON;
            else
                bad_flag("--format: '%s' is not table, csv or json", val);
        } else {
            bad_flag("unknown option '%s'", name);
        }
    }
    for (int k = 0; k < o->ncodec; k++)
        if (o->levels[k] == BF_LEVEL_DEFAULT)
            o->levels[k] = o->level; /* --level: for the entries without their own */
    o->codec = o->codecs[0];
    o->level = o->levels[0];
    o->block_size = o->block_sizes[0];
    o->work_mem = o->work_mems[0];
    int nconf = o->ncodec * o->nbs * o->nwm * o->nenc;
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

static bool progress_on;

static void gen_progress(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    if (progress_on && total)
        fprintf(stderr, "\rgenerating data: %3.0f%%", 100.0 * (double)done / (double)total);
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
            for (int k = 0; k < o->ncodec * o->nenc; k++, n++) {
                int c = k / o->nenc, e = k % o->nenc;
                pair_config *pc = &conf[n];
                memset(pc, 0, sizeof *pc);
                pc->cfg = (run_config){.codec = o->codecs[c],
                                       .level = o->levels[c],
                                       .block_size = o->block_sizes[b],
                                       .work_mem = o->work_mems[w],
                                       .temp_dir = o->temp_dir,
                                       .temp_limit = (uint64_t)o->temp_limit,
                                       .io_limit = (uint64_t)o->io_limit,
                                       .encrypt = o->encrypts[e]};
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
                if (o->nwm > 1)
                    snprintf(pc->label + len, sizeof pc->label - len, "@%s", pc->work_mem_text);
            }
        }
    }
    return n;
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
                      .encrypt = o.encrypts[0]};
    bf_auto_device learned = BF_AUTO_DEVICE_INIT;
    if (cfg.codec == BF_CODEC_AUTO)
        cfg.auto_device = &learned;
    check_spill_config(&cfg);
    static pair_config conf[MAX_CONF];
    int nconf = make_configs(&o, conf);
    bool paired = nconf > 1 || o.rounds > 1;
    /* Spill directories of earlier runs that were killed (their process is gone). */
    bf_sweep(o.temp_dir);
    progress_on = isatty(2);

    char data_dir[4096];
    if (o.data_dir)
        snprintf(data_dir, sizeof data_dir, "%s", o.data_dir);
    else
        snprintf(data_dir, sizeof data_dir, "./tpch-data/sf%g", o.sf);
    char err[512];
    if (db_ensure(data_dir, o.sf, gen_progress, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%sspillbench: generating %s: %s\n", progress_on ? "\n" : "", data_dir,
                err);
        return 1;
    }
    if (progress_on)
        fprintf(stderr, "\r\033[K");
    struct tpch_db *db;
    if (db_open(data_dir, &db, err, sizeof err) != 0) {
        fprintf(stderr, "spillbench: %s\n", err);
        return 1;
    }
    if (fabs(db->sf - o.sf) > 1e-9)
        fprintf(stderr, "spillbench: note: %s holds sf=%g data (not %g)\n", data_dir, db->sf, o.sf);
    if (o.results_dir && mkdirs(o.results_dir) != 0) {
        fprintf(stderr, "spillbench: cannot create %s: %s\n", o.results_dir, strerror(errno));
        return 1;
    }
    FILE *out = stdout;
    if (o.out && !(out = fopen(o.out, "w"))) {
        fprintf(stderr, "spillbench: cannot open %s: %s\n", o.out, strerror(errno));
        return 1;
    }

    if (paired) {
        if (!o.seed_set) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            o.seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
        }
        pair_plan plan = {conf, nconf, o.rounds, o.seed, o.queries, o.format, db->sf, progress_on};
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
    int nrows = 0, nq = 0, done = 0, status = 0;
    for (int q = 1; q <= TPCH_NQUERIES; q++)
        nq += o.queries[q];
    double *times = calloc((size_t)o.repeat, sizeof *times);
    if (!times)
        return 1;
    for (int q = 1; q <= TPCH_NQUERIES; q++) {
        if (!o.queries[q])
            continue;
        done++;
        run_result r;
        int rc = 0;
        for (int rep = 0; rep < o.repeat && rc == 0; rep++) {
            if (progress_on)
                fprintf(stderr, "\r\033[K[%d/%d] Q%d run %d/%d", done, nq, q, rep + 1, o.repeat);
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
            fprintf(stderr, "%sspillbench: %s\n", progress_on ? "\n" : "", r.err);
            status = 1;
            continue;
        }
        qsort(times, (size_t)o.repeat, sizeof *times, cmp_double);
        fill_row(row, q, &r, times[o.repeat / 2], o.work_mem);
        if (o.results_dir && write_result(o.results_dir, q, &r.text) != 0)
            status = 1;
        if (o.verify) {
            if (progress_on)
                fprintf(stderr, "\r\033[K[%d/%d] Q%d verify", done, nq, q);
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
    }
    if (progress_on)
        fprintf(stderr, "\r\033[K");
    free(times);
    bench_header h = {db->sf,       spill_codec_name(o.codec), o.level_text,
                      o.block_size, o.work_mem_text,           o.repeat};
    report_print(out, o.format, &h, rows, nrows, &total);
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
