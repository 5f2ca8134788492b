/* .tbl formatting: dbgen-style pipe-terminated fields with hand-written number
 * formatting (printf would dominate the run time). Money prints as "-123.40",
 * quantities as whole numbers, dates as YYYY-MM-DD. */
#include "gen_sink.h"

#include <string.h>

/* Bytes a non-string field can take, with its '|': sign, 19 digits, '.', 2 digits. */
#define MAX_NUMBER_FIELD 24

static char *put_uint(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_int(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_uint(p, 0 - (uint64_t)v);
    }
    return put_uint(p, (uint64_t)v);
}

static char *put_money(char *p, int64_t v)
{
    uint64_t u = (uint64_t)v;
    if (v < 0) {
        *p++ = '-';
        u = 0 - u;
    }
    p = put_uint(p, u / 100);
    *p++ = '.';
    *p++ = (char)('0' + u % 100 / 10);
    *p++ = (char)('0' + u % 10);
    return p;
}

void tpch_tbl_add(tpch_buf *b, const tpch_schema *schema, const tpch_ctx *c, const tpch_row *row)
{
    size_t bound = 1;
    for (int i = 0; i < schema->ncols; i++)
        bound += schema->cols[i].kind == TPCH_K_STR ? row->len[i] + 1u : MAX_NUMBER_FIELD;
    char *start = tpch_buf_room(b, bound);
    if (!start)
        return;
    char *p = start;
    for (int i = 0; i < schema->ncols; i++) {
        switch (schema->cols[i].kind) {
        case TPCH_K_INT: p = put_int(p, row->v[i]); break;
        case TPCH_K_MONEY: p = put_money(p, row->v[i]); break;
        case TPCH_K_QTY: p = put_int(p, row->v[i] / 100); break;
        case TPCH_K_DATE:
            tpch_ctx_date(c, (int32_t)row->v[i], p);
            p += 10;
            break;
        case TPCH_K_STR:
            memcpy(p, row->s[i], row->len[i]);
            p += row->len[i];
            break;
        }
        *p++ = '|';
    }
    *p++ = '\n';
    b->len += (size_t)(p - start);
}
