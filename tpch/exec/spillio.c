/*
 * spillio.c - tuple streams over bf_file (see spillio.h).
 */
#include "spillio.h"

#include <stdlib.h>
#include <string.h>

spillfile *spill_create(qctx *q, memacct *m)
{
    spillfile *s = q_calloc(q, 1, sizeof *s);
    int rc = bf_file_create(q->space, NULL, &s->f);
    if (rc < 0) {
        free(s);
        q_check_bf(q, rc, "create spill file");
    }
    mem_add(m, q->block_size);
    return s;
}

void spill_write(qctx *q, spillfile *s, uint64_t hash, const tup *t)
{
    q_check_bf(q, bf_file_write(s->f, &hash, sizeof hash), "write spill file");
    q_check_bf(q, bf_file_write(s->f, t, tup_len(t)), "write spill file");
    s->ntuples++;
}

void spill_rewind(qctx *q, spillfile *s)
{
    q_check_bf(q, bf_file_seek(s->f, 0, BF_SEEK_SET), "rewind spill file");
}

static void read_exact(qctx *q, spillfile *s, void *buf, size_t len)
{
    int64_t n = bf_file_read(s->f, buf, len);
    q_check_bf(q, n < 0 ? (int)n : 0, "read spill file");
    if ((size_t)n != len)
        q_fail(q, "spill file truncated (%lld of %zu bytes)", (long long)n, len);
}

const tup *spill_read(qctx *q, spillfile *s, uint64_t *hash)
{
    uint8_t head[12];
    int64_t n = bf_file_read(s->f, head, sizeof head);
    q_check_bf(q, n < 0 ? (int)n : 0, "read spill file");
    if (n == 0)
        return NULL;
    if (n != (int64_t)sizeof head)
        q_fail(q, "spill file truncated in a record header");
    uint32_t len;
    memcpy(hash, head, 8);
    memcpy(&len, head + 8, 4);
    if (len < 6 || len > 6 + 2 * TUP_MAX_ATTS + TUP_MAX_DATA)
        q_fail(q, "spill file: bad tuple length %u", len);
    if (len > s->rcap) {
        s->rbuf = q_realloc(q, s->rbuf, len);
        s->rcap = len;
    }
    memcpy(s->rbuf, head + 8, 4);
    read_exact(q, s, s->rbuf + 4, len - 4);
    return (const tup *)s->rbuf;
}

void spill_close(memacct *m, spillfile *s)
{
    if (!s)
        return;
    bf_file_close(s->f);
    free(s->rbuf);
    mem_add(m, -(int64_t)m->q->block_size);
    free(s);
}
