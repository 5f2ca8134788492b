/*
 * op_scan.c - sequential scan of one generated binary table, building rows
 * of the requested columns and applying an optional predicate.
 *
 * Column pointers are resolved once when the plan is built, so a wrong
 * column name fails at plan time, not mid-query.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "ops.h"

#define SCAN_MAX_COLS 16

typedef struct scancol {
    tpch_coltype type;
    const int64_t *i64;
    const int32_t *date;
    const uint64_t *off;
    const char *data;
} scancol;

typedef struct scanop {
    op base;
    uint64_t row, nrows;
    int ncols;
    scancol cols[SCAN_MAX_COLS];
    scan_pred_fn pred;
    void *arg;
    tbuild tb;
} scanop;

static const tup *scan_next(op *self)
{
    scanop *s = (scanop *)self;
    while (s->row < s->nrows) {
        uint64_t r = s->row++;
        tb_begin(&s->tb, s->ncols);
        for (int i = 0; i < s->ncols; i++) {
            const scancol *c = &s->cols[i];
            switch (c->type) {
            case TPCH_I64:
                tb_i64(&s->tb, c->i64[r]);
                break;
            case TPCH_DATE:
                tb_i64(&s->tb, c->date[r]);
                break;
            case TPCH_STR:
            default:
                tb_str(&s->tb, c->data + c->off[r], (uint32_t)(c->off[r + 1] - c->off[r]));
                break;
            }
        }
        const tup *t = tb_end(&s->tb);
        if (!s->pred || s->pred(t, s->arg))
            return t;
    }
    return NULL;
}

static void scan_close(op *self)
{
    tb_free(&((scanop *)self)->tb);
}

op *op_scan(qctx *q, int table, const char *columns, scan_pred_fn pred, void *arg)
{
    const tpch_bin *t = q->db->t[table];
    char names[1024];
    snprintf(names, sizeof names, "%s", columns);
    int n = 1;
    for (const char *p = names; *p; p++)
        n += *p == ',';
    if (n > SCAN_MAX_COLS)
        q_fail(q, "scan: too many columns in \"%s\"", columns);
    scanop *s = op_new(q, sizeof *s, scan_next, scan_close, n);
    s->nrows = tpch_bin_rows(t);
    s->pred = pred;
    s->arg = arg;
    tb_init(&s->tb);
    int i = 0;
    for (char *name = names; name; ) {
        char *comma = strchr(name, ',');
        if (comma)
            *comma = '\0';
        int ci = tpch_bin_col_index(t, name);
        if (ci < 0)
            q_fail(q, "scan: no column %s in %s", name, tpch_table_name((tpch_table_id)table));
        scancol *c = &s->cols[i++];
        c->type = tpch_bin_col_type(t, ci);
        c->i64 = tpch_bin_i64(t, ci);
        c->date = tpch_bin_date(t, ci);
        c->off = tpch_bin_str_offsets(t, ci);
        c->data = tpch_bin_str_data(t, ci);
        name = comma ? comma + 1 : NULL;
    }
    s->ncols = i;
    s->base.natts = i;
    return &s->base;
}
