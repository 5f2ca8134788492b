/*
 * bench_rows.c - lineitem rows for the benchmarks (see bench_rows.h).
 */
#include "bench_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "bench_util.h"
#include "tpch_gen.h"

unsigned char *bench_lineitem_rows(const char *temp_dir, const char *subdir, const char *prog,
                                   size_t len)
{
    char dir[4096], path[4200], err[256];
    snprintf(dir, sizeof(dir), "%s/%s", temp_dir, subdir);
    snprintf(path, sizeof(path), "%s/lineitem.tbl", dir);
    struct stat st;
    if (stat(path, &st) != 0 || (size_t)st.st_size < len) {
        double sf = (double)(len >> 20) / 700.0 + 0.01; /* ~750 MB of lineitem text per SF */
        if (tpch_generate(sf, dir, TPCH_FMT_TBL, 1u << TPCH_LINEITEM, 0, NULL, NULL, err,
                          sizeof(err)) != 0)
            bench_die(prog, err);
    }
    unsigned char *buf = malloc(len);
    FILE *f = fopen(path, "rb");
    if (buf == NULL || f == NULL || fread(buf, 1, len, f) != len)
        bench_die(prog, "cannot load the generated lineitem rows");
    fclose(f);
    return buf;
}
