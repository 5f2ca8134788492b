/*
 * result.c - result row formatting (see result.h).
 *
 * Fixed-point values are rounded to 4 decimals in integer arithmetic, so
 * the printed digits never depend on double rounding.
 */
#include "result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dates.h"

void sb_free(strbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void sb_append(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "result buffer: out of memory\n");
            abort();
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void result_date(int64_t days, char *buf)
{
    int y, m, d;
    date_civil(days, &y, &m, &d);
    snprintf(buf, 11, "%04d-%02d-%02d", y, m, d);
}

/* v / 10^scale printed with `digits` decimals, rounded half away from zero. */
static int fmt_fixed(char *buf, size_t n, int64_t v, int scale, int digits)
{
    __int128 x = v;
    int neg = x < 0;
    if (neg)
        x = -x;
    while (scale < digits) {
        x *= 10;
        scale++;
    }
    __int128 div = 1;
    for (int i = digits; i < scale; i++)
        div *= 10;
    x = (x + div / 2) / div;
    __int128 p10 = 1;
    for (int i = 0; i < digits; i++)
        p10 *= 10;
    unsigned long long ip = (unsigned long long)(x / p10);
    unsigned long long fp = (unsigned long long)(x % p10);
    if (ip == 0 && fp == 0)
        neg = 0;
    return snprintf(buf, n, "%s%llu.%0*llu", neg ? "-" : "", ip, digits, fp);
}

void result_format_row(strbuf *b, const tup *t, int ncols, const outcol *cols)
{
    char buf[64];
    for (int i = 0; i < ncols; i++) {
        if (i)
            sb_append(b, "|", 1);
        if (tup_isnull(t, i))
            continue;
        int n = 0;
        switch (cols[i].kind) {
        case OC_STR: {
            uint32_t len;
            const char *s = tup_str(t, i, &len);
            while (len > 0 && s[len - 1] == ' ')
                len--;
            sb_append(b, s, len);
            continue;
        }
        case OC_DATE:
            result_date(tup_i64(t, i), buf);
            n = 10;
            break;
        case OC_INT:
            n = snprintf(buf, sizeof buf, "%lld", (long long)tup_i64(t, i));
            break;
        case OC_DEC2:
            n = fmt_fixed(buf, sizeof buf, tup_i64(t, i), 2, 2);
            break;
        case OC_FIX:
            n = fmt_fixed(buf, sizeof buf, tup_i64(t, i), cols[i].scale, 4);
            break;
        case OC_F64:
            n = snprintf(buf, sizeof buf, "%.4f", tup_f64(t, i));
            break;
        }
        sb_append(b, buf, (size_t)n);
    }
    sb_append(b, "\n", 1);
}
