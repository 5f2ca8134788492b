/*
 * logtape.c - tapes in one buffile file with a free-block list (see logtape.h).
 *
 * The free list is a min-heap so writers fill holes from the front of the
 * file, keeping it compact, as PostgreSQL's ltsGetFreeBlock does.
 */
#include "logtape.h"

#include <stdlib.h>
#include <string.h>

#define LT_HDR 16

struct ltset {
    qctx *q;
    memacct *m;
    bf_file *f;
    uint32_t bs;
    uint64_t nblocks;
    uint32_t *heap; /* block numbers: the library's are 32-bit too */
    size_t nfree, capfree;
    int64_t lib; /* the file's library memory, charged to m */
};

static void sync_memory(ltset *s)
{
    int64_t lib = (int64_t)bf_file_memory(s->f);
    mem_charge(s->m, 0, lib - s->lib);
    s->lib = lib;
}

ltset *lt_create(qctx *q, memacct *m)
{
    ltset *s = q_calloc(q, 1, sizeof *s);
    s->q = q;
    s->m = m;
    int rc = bf_file_create(q->space, NULL, &s->f);
    if (rc < 0) {
        free(s);
        q_check_bf(q, rc, "create tape file");
    }
    s->bs = bf_file_block_size(s->f);
    sync_memory(s);
    return s;
}

void lt_destroy(ltset *s)
{
    if (!s)
        return;
    bf_file_close(s->f);
    mem_charge(s->m, 0, -s->lib);
    mem_charge(s->m, 0, -(int64_t)(s->capfree * sizeof *s->heap));
    free(s->heap);
    free(s);
}

static void free_push(ltset *s, uint64_t b)
{
    if (s->nfree == s->capfree) {
        size_t nc = s->capfree ? s->capfree * 2 : 64;
        s->heap = q_realloc(s->q, s->heap, nc * sizeof *s->heap);
        mem_charge(s->m, 0, (int64_t)((nc - s->capfree) * sizeof *s->heap));
        s->capfree = nc;
    }
    size_t i = s->nfree++;
    while (i > 0 && s->heap[(i - 1) / 2] > b) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = (uint32_t)b;
}

static uint64_t alloc_block(ltset *s)
{
    if (s->nfree == 0)
        return s->nblocks++;
    uint64_t top = s->heap[0];
    uint32_t last = s->heap[--s->nfree];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->nfree)
            break;
        if (c + 1 < s->nfree && s->heap[c + 1] < s->heap[c])
            c++;
        if (s->heap[c] >= last)
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nfree)
        s->heap[i] = last;
    return top;
}

static uint8_t *buf_alloc(ltset *s)
{
    uint8_t *b = q_malloc(s->q, s->bs);
    mem_add(s->m, s->bs);
    return b;
}

static void buf_free(ltset *s, uint8_t *b)
{
    if (!b)
        return;
    free(b);
    mem_add(s->m, -(int64_t)s->bs);
}

static void put_block(ltwriter *w, int64_t next)
{
    ltset *s = w->s;
    memcpy(w->buf, &next, 8);
    memcpy(w->buf + 8, &w->pos, 4);
    memset(w->buf + 12, 0, 4);
    if (w->pos + LT_HDR < s->bs)
        memset(w->buf + LT_HDR + w->pos, 0, s->bs - LT_HDR - w->pos);
    q_check_bf(s->q, bf_file_write_block(s->f, (uint64_t)w->cur, w->buf), "write tape block");
    sync_memory(s);
}

void ltw_start(ltset *s, ltwriter *w)
{
    w->s = s;
    w->buf = buf_alloc(s);
    w->first = -1;
    w->cur = -1;
    w->pos = 0;
}

void ltw_write(ltwriter *w, const void *p, size_t len)
{
    ltset *s = w->s;
    const uint8_t *src = p;
    uint32_t cap = s->bs - LT_HDR;
    while (len > 0) {
        if (w->cur < 0) {
            w->cur = (int64_t)alloc_block(s);
            w->first = w->cur;
        } else if (w->pos == cap) {
            int64_t nb = (int64_t)alloc_block(s);
            put_block(w, nb);
            w->cur = nb;
            w->pos = 0;
        }
        size_t n = cap - w->pos < len ? cap - w->pos : len;
        memcpy(w->buf + LT_HDR + w->pos, src, n);
        w->pos += (uint32_t)n;
        src += n;
        len -= n;
    }
}

int64_t ltw_finish(ltwriter *w)
{
    if (w->cur >= 0)
        put_block(w, -1);
    buf_free(w->s, w->buf);
    w->buf = NULL;
    return w->first;
}

static void load_block(ltreader *r, int64_t b)
{
    ltset *s = r->s;
    q_check_bf(s->q, bf_file_read_block(s->f, (uint64_t)b, r->buf), "read tape block");
    q_check_bf(s->q, bf_file_discard_block(s->f, (uint64_t)b), "discard tape block");
    sync_memory(s);
    free_push(s, (uint64_t)b);
    memcpy(&r->next, r->buf, 8);
    memcpy(&r->used, r->buf + 8, 4);
    if (r->used > s->bs - LT_HDR || r->next < -1 || r->next >= (int64_t)s->nblocks)
        q_fail(s->q, "tape block %lld: bad header", (long long)b);
    r->pos = 0;
}

void ltr_start(ltset *s, ltreader *r, int64_t first)
{
    r->s = s;
    r->buf = buf_alloc(s);
    r->next = -1;
    r->pos = r->used = 0;
    if (first >= 0)
        load_block(r, first);
}

size_t ltr_read(ltreader *r, void *p, size_t len)
{
    uint8_t *dst = p;
    size_t got = 0;
    while (got < len) {
        if (r->pos == r->used) {
            if (r->next < 0)
                break;
            load_block(r, r->next);
            continue;
        }
        size_t n = r->used - r->pos < len - got ? r->used - r->pos : len - got;
        memcpy(dst + got, r->buf + LT_HDR + r->pos, n);
        r->pos += (uint32_t)n;
        got += n;
    }
    return got;
}

void ltr_end(ltreader *r)
{
    buf_free(r->s, r->buf);
    r->buf = NULL;
}
