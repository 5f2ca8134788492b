/* tpchgen: command-line front end of the generator. Bad arguments give one
 * line on stderr and exit status 2; generation failures exit 1. The progress
 * bar goes to stderr and only when stderr is a terminal. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tpch_gen.h"

static const char usage[] =
    "usage: tpchgen --sf=SF --out=DIR [--format=tbl|bin] [--tables=t1,t2,...] [--threads=N]\n"
    "Generates TPC-H-style data (derived from TPC-H; not comparable to published results).\n"
    "  --sf=SF        scale factor, 0.01 to 100 (SF 1 is about 1 GB of .tbl text)\n"
    "  --out=DIR      output directory (created if missing)\n"
    "  --format=F     tbl: dbgen-style text (default); bin: columnar binary for the executor\n"
    "  --tables=LIST  comma-separated subset of part,supplier,partsupp,customer,orders,\n"
    "                 lineitem,nation,region (default: all)\n"
    "  --threads=N    worker threads (default: number of CPUs)\n"
    "  --help         this text\n";

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

static int bad_args(const char *msg, const char *arg)
{
    fprintf(stderr, "tpchgen: %s%s%s (see --help)\n", msg, arg ? ": " : "", arg ? arg : "");
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
        } else if (strncmp(a, "--sf=", 5) == 0) {
            if (parse_number(a + 5, &sf) != 0 || !(sf >= 0.01 && sf <= 100))
                return bad_args("scale factor must be a number from 0.01 to 100", a);
        } else if (strncmp(a, "--out=", 6) == 0 && a[6]) {
            out = a + 6;
        } else if (strncmp(a, "--format=", 9) == 0) {
            if (strcmp(a + 9, "tbl") == 0)
                fmt = TPCH_FMT_TBL;
            else if (strcmp(a + 9, "bin") == 0)
                fmt = TPCH_FMT_BIN;
            else
                return bad_args("format must be tbl or bin", a);
        } else if (strncmp(a, "--tables=", 9) == 0) {
            if (parse_tables(a + 9, &mask) != 0)
                return bad_args("unknown table list", a);
        } else if (strncmp(a, "--threads=", 10) == 0) {
            if (parse_number(a + 10, &threads) != 0 || threads < 1 || threads > 64 ||
                threads != (int)threads)
                return bad_args("threads must be an integer from 1 to 64", a);
        } else {
            return bad_args("unknown argument", a);
        }
    }
    if (sf < 0)
        return bad_args("missing --sf", NULL);
    if (!out)
        return bad_args("missing --out", NULL);

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
