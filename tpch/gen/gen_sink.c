/* Chunk sinks and chunk generation. Column buffers hold chunk-relative string
 * end offsets; the .bin writer rebases them as it appends chunks in order. */
#include "gen_sink.h"

#include <string.h>

void tpch_sink_init(tpch_sink *s, tpch_format fmt, tpch_table_id t)
{
    memset(s, 0, sizeof *s);
    s->fmt = fmt;
    s->schema = tpch_schema_get(t);
}

void tpch_sink_reset(tpch_sink *s)
{
    s->nrows = 0;
    s->text.len = 0;
    for (int i = 0; i < TPCH_MAXCOLS; i++)
        s->col[i].fixed.len = s->col[i].data.len = 0;
}

void tpch_sink_free(tpch_sink *s)
{
    tpch_buf_free(&s->text);
    for (int i = 0; i < TPCH_MAXCOLS; i++) {
        tpch_buf_free(&s->col[i].fixed);
        tpch_buf_free(&s->col[i].data);
    }
}

int tpch_sink_failed(const tpch_sink *s)
{
    int failed = s->text.failed;
    for (int i = 0; i < TPCH_MAXCOLS; i++)
        failed |= s->col[i].fixed.failed | s->col[i].data.failed;
    return failed;
}

static void cols_add(tpch_sink *s, const tpch_row *row)
{
    for (int i = 0; i < s->schema->ncols; i++) {
        tpch_colbuf *cb = &s->col[i];
        switch (s->schema->cols[i].kind) {
        case TPCH_K_DATE: {
            int32_t d = (int32_t)row->v[i];
            tpch_buf_put(&cb->fixed, &d, sizeof d);
            break;
        }
        case TPCH_K_STR: {
            tpch_buf_put(&cb->data, row->s[i], row->len[i]);
            uint64_t end = cb->data.len;
            tpch_buf_put(&cb->fixed, &end, sizeof end);
            break;
        }
        default:
            tpch_buf_put(&cb->fixed, &row->v[i], sizeof row->v[i]);
            break;
        }
    }
}

void tpch_sink_add(tpch_sink *s, const tpch_ctx *c, const tpch_row *row)
{
    if (s->fmt == TPCH_FMT_TBL)
        tpch_tbl_add(&s->text, s->schema, c, row);
    else
        cols_add(s, row);
    s->nrows++;
}

/* Rows are generated in small batches before being formatted, so the
 * prefetches of their comment text (see gen_rows.c) have time to land. */
#define ORDER_BATCH 8
#define ROW_BATCH 16

void tpch_chunk_gen(const tpch_ctx *c, tpch_table_id t, uint64_t first, uint64_t n,
                    tpch_sink *out, tpch_sink *lines)
{
    if (t == TPCH_ORDERS || t == TPCH_LINEITEM) {
        tpch_order_rows o[ORDER_BATCH];
        for (uint64_t k = first; k < first + n; k += ORDER_BATCH) {
            int b = first + n - k < ORDER_BATCH ? (int)(first + n - k) : ORDER_BATCH;
            for (int i = 0; i < b; i++)
                tpch_order_gen(c, k + (uint64_t)i, &o[i]);
            for (int i = 0; i < b; i++) {
                if (out)
                    tpch_sink_add(out, c, &o[i].order);
                for (int j = 0; lines && j < o[i].nlines; j++)
                    tpch_sink_add(lines, c, &o[i].line[j]);
            }
        }
        return;
    }
    tpch_row row[ROW_BATCH];
    for (uint64_t r = first; r < first + n; r += ROW_BATCH) {
        int b = first + n - r < ROW_BATCH ? (int)(first + n - r) : ROW_BATCH;
        for (int i = 0; i < b; i++)
            tpch_row_gen(c, t, r + (uint64_t)i, &row[i]);
        for (int i = 0; i < b; i++)
            tpch_sink_add(out, c, &row[i]);
    }
}
