/*
 * tuple.c - reading and building tuples (format in tuple.h).
 *
 * The builder writes the header and the offsets table as fields are added,
 * so a finished tuple never needs a second pass. Builders abort on misuse
 * (wrong field count, oversize data): those are bugs in a hand-built plan,
 * not run-time conditions.
 */
#include "tuple.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static size_t hdr_size(int natts)
{
    return 6 + 2 * (size_t)natts;
}

uint32_t tup_len(const tup *t)
{
    uint32_t v;
    memcpy(&v, t, 4);
    return v;
}

int tup_natts(const tup *t)
{
    return rd16((const uint8_t *)t + 4);
}

static uint16_t end_at(const tup *t, int i)
{
    return rd16((const uint8_t *)t + 6 + 2 * (size_t)i);
}

bool tup_isnull(const tup *t, int i)
{
    return (end_at(t, i) & TUP_NULL_BIT) != 0;
}

const uint8_t *tup_field(const tup *t, int i, uint32_t *len)
{
    int n = tup_natts(t);
    uint32_t start = i == 0 ? 0 : (end_at(t, i - 1) & TUP_MAX_DATA);
    uint32_t end = end_at(t, i) & TUP_MAX_DATA;
    *len = end - start;
    return (const uint8_t *)t + hdr_size(n) + start;
}

int64_t tup_i64(const tup *t, int i)
{
    uint32_t len;
    const uint8_t *p = tup_field(t, i, &len);
    int64_t v = 0;
    if (len == 8)
        memcpy(&v, p, 8);
    return v;
}

double tup_f64(const tup *t, int i)
{
    uint32_t len;
    const uint8_t *p = tup_field(t, i, &len);
    double v = 0;
    if (len == 8)
        memcpy(&v, p, 8);
    return v;
}

const char *tup_str(const tup *t, int i, uint32_t *len)
{
    return (const char *)tup_field(t, i, len);
}

void tb_init(tbuild *b)
{
    memset(b, 0, sizeof *b);
}

void tb_free(tbuild *b)
{
    free(b->buf);
    memset(b, 0, sizeof *b);
}

static void tb_reserve(tbuild *b, size_t need)
{
    if (b->pos + need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->pos + need)
        cap *= 2;
    uint8_t *p = realloc(b->buf, cap);
    if (!p) {
        fprintf(stderr, "tuple builder: out of memory\n");
        abort();
    }
    b->buf = p;
    b->cap = cap;
}

void tb_begin(tbuild *b, int natts)
{
    if (natts < 0 || natts > TUP_MAX_ATTS)
        abort();
    b->natts = natts;
    b->cur = 0;
    b->pos = 0;
    tb_reserve(b, hdr_size(natts));
    uint16_t n = (uint16_t)natts;
    memcpy(b->buf + 4, &n, 2);
    b->pos = hdr_size(natts);
}

static void tb_put(tbuild *b, const void *p, size_t len, bool isnull)
{
    if (b->cur >= b->natts)
        abort();
    tb_reserve(b, len);
    if (len)
        memcpy(b->buf + b->pos, p, len);
    b->pos += len;
    size_t dlen = b->pos - hdr_size(b->natts);
    if (dlen > TUP_MAX_DATA)
        abort();
    uint16_t e = (uint16_t)(dlen | (isnull ? TUP_NULL_BIT : 0));
    memcpy(b->buf + 6 + 2 * (size_t)b->cur, &e, 2);
    b->cur++;
}

void tb_i64(tbuild *b, int64_t v)
{
    tb_put(b, &v, 8, false);
}

void tb_f64(tbuild *b, double v)
{
    tb_put(b, &v, 8, false);
}

void tb_str(tbuild *b, const char *s, uint32_t len)
{
    tb_put(b, s, len, false);
}

void tb_cstr(tbuild *b, const char *s)
{
    tb_put(b, s, strlen(s), false);
}

void tb_null(tbuild *b)
{
    tb_put(b, NULL, 0, true);
}

void tb_copy(tbuild *b, const tup *t, int i)
{
    uint32_t len;
    const uint8_t *p = tup_field(t, i, &len);
    tb_put(b, p, len, tup_isnull(t, i));
}

void tb_copy_range(tbuild *b, const tup *t, int from, int to)
{
    for (int i = from; i < to; i++)
        tb_copy(b, t, i);
}

const tup *tb_end(tbuild *b)
{
    if (b->cur != b->natts)
        abort();
    uint32_t len = (uint32_t)b->pos;
    memcpy(b->buf, &len, 4);
    return (const tup *)b->buf;
}
