/* The .bin files hold exactly the values of the .tbl files (all tables, SF
 * 0.01), with the documented column names, types and units; the reader
 * rejects missing, foreign, truncated and corrupted files. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_schema.h"
#include "test_util.h"
#include "tpch_bin.h"
#include "tpch_gen.h"

static void compare_value(const tpch_bin *b, int c, tpch_kind kind, size_t r, const char *text,
                          const char *table)
{
    int64_t want = 0;
    int32_t day = 0;
    switch (kind) {
    case TPCH_K_STR: {
        const uint64_t *off = tpch_bin_str_offsets(b, c);
        const char *data = tpch_bin_str_data(b, c);
        size_t n = strlen(text);
        CHECK(off && data && off[r + 1] - off[r] == n && memcmp(data + off[r], text, n) == 0,
              "%s row %zu col %d: string differs from '%s'", table, r, c, text);
        return;
    }
    case TPCH_K_DATE:
        CHECK(test_parse_date(text, &day) == 0, "bad date %s", text);
        CHECK(tpch_bin_date(b, c) && tpch_bin_date(b, c)[r] == day, "%s row %zu col %d: date",
              table, r, c);
        return;
    case TPCH_K_MONEY: CHECK(test_parse_money(text, &want) == 0, "bad decimal %s", text); break;
    case TPCH_K_QTY:
        CHECK(test_parse_int(text, &want) == 0, "bad quantity %s", text);
        want *= 100;
        break;
    case TPCH_K_INT: CHECK(test_parse_int(text, &want) == 0, "bad integer %s", text); break;
    }
    CHECK(tpch_bin_i64(b, c) && tpch_bin_i64(b, c)[r] == want, "%s row %zu col %d: %lld vs %s",
          table, r, c, tpch_bin_i64(b, c) ? (long long)tpch_bin_i64(b, c)[r] : -1LL, text);
}

static void compare_table(const char *dir, tpch_table_id t)
{
    const tpch_schema *s = tpch_schema_get(t);
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/%s.bin", dir, s->name);
    tpch_bin *b;
    if (tpch_bin_open(path, &b, err, sizeof err) != 0) {
        CHECK(0, "open: %s", err);
        return;
    }
    test_tbl tbl;
    if (test_tbl_load(&tbl, dir, s->name, s->ncols) == 0) {
        CHECK(tpch_bin_rows(b) == tbl.nrows && tbl.nrows > 0, "%s: %llu rows in .bin, %zu in .tbl",
              s->name, (unsigned long long)tpch_bin_rows(b), tbl.nrows);
        CHECK(tpch_bin_ncols(b) == s->ncols, "%s: %d columns", s->name, tpch_bin_ncols(b));
        for (int c = 0; c < s->ncols && c < tpch_bin_ncols(b); c++) {
            tpch_kind k = s->cols[c].kind;
            tpch_coltype want = k == TPCH_K_STR ? TPCH_STR : k == TPCH_K_DATE ? TPCH_DATE : TPCH_I64;
            CHECK(strcmp(tpch_bin_col_name(b, c), s->cols[c].name) == 0, "%s col %d named %s",
                  s->name, c, tpch_bin_col_name(b, c));
            CHECK(tpch_bin_col_index(b, s->cols[c].name) == c, "col_index(%s)", s->cols[c].name);
            CHECK(tpch_bin_col_type(b, c) == want, "%s type %d", s->cols[c].name,
                  (int)tpch_bin_col_type(b, c));
            /* accessors of the wrong type return NULL */
            CHECK((tpch_bin_i64(b, c) != NULL) == (want == TPCH_I64) &&
                      (tpch_bin_date(b, c) != NULL) == (want == TPCH_DATE) &&
                      (tpch_bin_str_offsets(b, c) != NULL) == (want == TPCH_STR),
                  "%s: accessor types", s->cols[c].name);
            for (size_t r = 0; r < tbl.nrows && r < tpch_bin_rows(b); r++)
                compare_value(b, c, k, r, test_field(&tbl, r, c), s->name);
        }
        CHECK(tpch_bin_col_index(b, "no_such_column") == -1, "col_index of a missing column");
        test_tbl_free(&tbl);
    }
    tpch_bin_close(b);
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, len, f) == len, "write %s", path);
    if (f)
        fclose(f);
}

static int opens(const char *path)
{
    tpch_bin *b;
    char err[256];
    if (tpch_bin_open(path, &b, err, sizeof err) != 0) {
        CHECK(strlen(err) > 0 && strchr(err, '\n') == NULL, "error message '%s'", err);
        return 0;
    }
    tpch_bin_close(b);
    return 1;
}

static void check_rejects(const char *dir)
{
    char path[4200], bad[4200];
    snprintf(path, sizeof path, "%s/orders.bin", dir);
    snprintf(bad, sizeof bad, "%s/bad.bin", dir);
    size_t len;
    char *data = test_read_file(path, &len);
    if (!data) {
        CHECK(0, "cannot read %s", path);
        return;
    }
    CHECK(opens(path), "intact file rejected");
    CHECK(!opens("/nonexistent/x.bin"), "missing file accepted");
    write_file(bad, data, len - 8);
    CHECK(!opens(bad), "truncated file accepted");
    write_file(bad, "hello", 5);
    CHECK(!opens(bad), "foreign file accepted");
    snprintf(path, sizeof path, "%s/orders.tbl", dir);
    CHECK(!opens(path), ".tbl file accepted");
    data[0] ^= 1;
    write_file(bad, data, len);
    CHECK(!opens(bad), "wrong magic accepted");
    data[0] ^= 1;
    /* column 0's array offset pointing past the end */
    uint64_t huge = (uint64_t)len + 8;
    memcpy(data + 32 + 40, &huge, 8);
    write_file(bad, data, len);
    CHECK(!opens(bad), "out-of-file array accepted");
    free(data);
    unlink(bad);
}

int main(void)
{
    char *dir = test_mkdtemp("bin");
    char err[256];
    int ok = tpch_generate(0.01, dir, TPCH_FMT_TBL, 0, 2, NULL, NULL, err, sizeof err) == 0 &&
             tpch_generate(0.01, dir, TPCH_FMT_BIN, 0, 2, NULL, NULL, err, sizeof err) == 0;
    CHECK(ok, "tpch_generate: %s", err);
    if (ok) {
        for (int t = 0; t < TPCH_NTABLES; t++)
            compare_table(dir, (tpch_table_id)t);
        check_rejects(dir);
    }
    test_rmtree(dir);
    free(dir);
    if (test_failures)
        fprintf(stderr, "%d checks failed\n", test_failures);
    return test_failures ? 1 : 0;
}
