/* Growth policy for tpch_buf: doubling, so appends are amortised O(1). */
#include "gen_buf.h"

#include <stdlib.h>

char *tpch_buf_grow(tpch_buf *b, size_t more)
{
    if (b->failed)
        return NULL;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return NULL;
    }
    b->p = p;
    b->cap = cap;
    return p + b->len;
}

void tpch_buf_free(tpch_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}
