/* Growable byte buffer used for chunk output. Invariant: len <= cap; a failed
 * allocation sets `failed` and later appends are dropped, so hot loops check
 * once per chunk instead of once per byte. */
#ifndef TPCH_GEN_BUF_H
#define TPCH_GEN_BUF_H

#include <stddef.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} tpch_buf;

/* Makes room for `more` bytes; returns a pointer to the free space or NULL. */
char *tpch_buf_grow(tpch_buf *b, size_t more);
void tpch_buf_free(tpch_buf *b);

static inline char *tpch_buf_room(tpch_buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return b->p + b->len;
    return tpch_buf_grow(b, more);
}

static inline void tpch_buf_put(tpch_buf *b, const void *src, size_t n)
{
    char *d = tpch_buf_room(b, n);
    if (d) {
        memcpy(d, src, n);
        b->len += n;
    }
}

#endif
