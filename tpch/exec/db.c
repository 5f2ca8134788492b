/*
 * db.c - data directory: generate once per scale factor, then open.
 *
 * meta.txt is written last by the generator, so its presence (with the
 * right sf) means a complete directory; anything else is regenerated.
 */
#include "db.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int db_meta(const char *dir, double *sf, char *format, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int found = -1;
    if (n > 0)
        format[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strncmp(line, "sf=", 3) == 0) {
            *sf = strtod(line + 3, NULL);
            found = 0;
        } else if (strncmp(line, "output=", 7) == 0 && n > 0) {
            snprintf(format, n, "%s", line + 7);
        }
    }
    fclose(f);
    return found;
}

static int meta_sf(const char *dir, double *sf)
{
    char format[16];
    return db_meta(dir, sf, format, sizeof format);
}

int db_ensure(const char *dir, double sf, db_progress_fn progress, void *ctx, char *err,
              size_t errlen)
{
    double have;
    if (meta_sf(dir, &have) == 0 && fabs(have - sf) < 1e-9)
        return 0;
    return tpch_generate(sf, dir, TPCH_FMT_BIN, 0, 0, progress, ctx, err, errlen);
}

int db_open(const char *dir, struct tpch_db **out, char *err, size_t errlen)
{
    struct tpch_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (meta_sf(dir, &db->sf) != 0) {
        snprintf(err, errlen, "%s: no meta.txt (not a generated data directory)", dir);
        free(db);
        return -1;
    }
    for (int i = 0; i < TPCH_NTABLES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.bin", dir, tpch_table_name((tpch_table_id)i));
        if (tpch_bin_open(path, &db->t[i], err, errlen) != 0) {
            db_close(db);
            return -1;
        }
    }
    *out = db;
    return 0;
}

void db_close(struct tpch_db *db)
{
    if (!db)
        return;
    for (int i = 0; i < TPCH_NTABLES; i++)
        if (db->t[i])
            tpch_bin_close(db->t[i]);
    free(db);
}
