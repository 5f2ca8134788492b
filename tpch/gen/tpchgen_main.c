/* tpchgen: command-line front end of the generator. Bad arguments give one
 * line on stderr and exit status 2; generation failures exit 1. The progress
 * bar goes to stderr and only when stderr is a terminal. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tpch_gen.h"

#ifndef BF_TOOLS_VERSION
#define BF_TOOLS_VERSION "(unknown version)"
#endif

static const char usage[] =
    "Usage: tpchgen --sf=SF --out=DIR [--format=tbl|bin] [--tables=t1,t2,...] [--threads=N]\n"
    "Generates TPC-H-style data (derived from TPC-H; not comparable to published results).\n"
    "\n"
    "Options:\n"
    "  --sf=SF        scale factor, 0.01..100 (SF 1 is about 1 GB of .tbl text)\n"
    "  --out=DIR      output directory (created if missing)\n"
    "  --format=F     tbl: dbgen-style text (default); bin: columnar binary for the executor\n"
    "                 (spillbench reads bin)\n"
    "  --tables=LIST  comma-separated subset of part,supplier,partsupp,customer,orders,\n"
    "                 lineitem,nation,region (default: all)\n"
    "  --threads=N    worker threads, 1..64 (default: number of CPUs)\n"
    "  --help         this text\n"
    "  --version      the version\n"
    "\n"
    "Output:\n"
    "  DIR/TABLE.tbl  one row per line, its columns in the order of the TPC-H\n"
    "                 specification, each followed by '|' (as dbgen writes them)\n"
    "  DIR/TABLE.bin  the same columns, column by column, for mmap (docs/tpchgen.md)\n"
    "  DIR/meta.txt   written last (a directory without it is incomplete): sf=SF,\n"
    "                 format=1 (the .bin layout's version), output=tbl or bin\n"
    "When stderr is a terminal, a progress bar there shows the share done and the time.\n"
    "\n"
    "Exit status: 0 done; 1 the tables could not be written; 2 a bad option.\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
    double start;
    int last_pct;
} bar;

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    bar *b = ctx;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (pct == b->last_pct)
        return;
    b->last_pct = pct;
    char cells[41];
    int fill = pct * 40 / 100;
    memset(cells, '#', (size_t)fill);
    memset(cells + fill, '.', (size_t)(40 - fill));
    cells[40] = '\0';
    fprintf(stderr, "\r[%s] %3d%%  %.1fs", cells, pct, now() - b->start);
    fflush(stderr);
}

static int bad_args(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr naming what is wrong; the exit status of a bad option. */
static int bad_args(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tpchgen: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

static int parse_tables(const char *list, unsigned *mask)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return -1;
    *mask = 0;
    for (char *save = NULL, *name = strtok_r(buf, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int t = 0; t < TPCH_NTABLES; t++) {
            if (strcmp(name, tpch_table_name((tpch_table_id)t)) == 0) {
                *mask |= 1u << t;
                found = 1;
            }
        }
        if (!found)
            return -1;
    }
    return *mask ? 0 : -1;
}

static int parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return *s && !*end && !errno ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const char *const with_value[] = {"--sf", "--out", "--format", "--tables", "--threads"};
    double sf = -1;
    const char *out = NULL;
    tpch_format fmt = TPCH_FMT_TBL;
    unsigned mask = 0;
    double threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            printf("tpchgen (buffile) %s\n", BF_TOOLS_VERSION);
            printf("Data derived from TPC-H; results are not comparable to published TPC-H "
                   "results.\n");
            return 0;
        }
        if (a[0] != '-')
            return bad_args("unexpected argument '%s'", a);
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = eq ? eq + 1 : NULL;
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            if (strlen(with_value[k]) == len && strncmp(a, with_value[k], len) == 0)
                known = 1;
        if (!known)
            return bad_args("unknown option %.*s", (int)len, a);
        if (!val)
            return bad_args("%s needs a value (%s=...)", a, a);
        if (strncmp(a, "--sf=", 5) == 0) {
            if (parse_number(val, &sf) != 0 || isnan(sf))
                return bad_args("--sf: '%s' is not a number", val);
            if (!(sf >= 0.01 && sf <= 100))
                return bad_args("--sf: %s is out of range 0.01..100", val);
        } else if (strncmp(a, "--out=", 6) == 0) {
            if (!*val)
                return bad_args("--out: an empty directory name");
            out = val;
        } else if (strncmp(a, "--format=", 9) == 0) {
            if (strcmp(val, "tbl") == 0)
                fmt = TPCH_FMT_TBL;
            else if (strcmp(val, "bin") == 0)
                fmt = TPCH_FMT_BIN;
            else
                return bad_args("--format: '%s' is not tbl or bin", val);
        } else if (strncmp(a, "--tables=", 9) == 0) {
            if (parse_tables(val, &mask) != 0)
                return bad_args("--tables: '%s' is not a list of part, supplier, partsupp, "
                                "customer, orders, lineitem, nation, region",
                                val);
        } else if (strncmp(a, "--threads=", 10) == 0) {
            if (parse_number(val, &threads) != 0 || isnan(threads))
                return bad_args("--threads: '%s' is not an integer", val);
            if (!(threads >= 1 && threads <= 64))
                return bad_args("--threads: %s is out of range 1..64", val);
            if (threads != (int)threads)
                return bad_args("--threads: '%s' is not an integer", val);
        }
    }
    if (sf < 0)
        return bad_args("missing --sf (the scale factor, e.g. --sf=1)");
    if (!out)
        return bad_args("missing --out (the output directory)");

    bar b = {now(), -1};
    int tty = isatty(STDERR_FILENO);
    char err[512];
    int rc = tpch_generate(sf, out, fmt, mask, (int)threads, tty ? show_progress : NULL, &b,
                           err, sizeof err);
    if (tty)
        fputc('\n', stderr);
    if (rc != 0) {
        fprintf(stderr, "tpchgen: %s\n", err);
        return 1;
    }
    if (tty)
        fprintf(stderr, "tpchgen: SF %g written to %s in %.2f s\n", sf, out, now() - b.start);
    return 0;
}
