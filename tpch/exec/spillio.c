/*
 * spillio.c - tuple streams over bf_file (see spillio.h).
 */
#include "spillio.h"

#include <stdlib.h>
#include <string.h>

/* The library's struct per file, rounded up (buffile.h: "a struct under 256 bytes"). */
#define SPILL_FILE_STRUCT 256

int64_t spill_writer_cost(const qctx *q)
{
    return (int64_t)q->block_size + SPILL_FILE_STRUCT;
}

/* Charge m what the library holds for the file now. */
static void sync_memory(spillfile *s)
{
    int64_t buf = s->buffered ? (int64_t)bf_file_block_size(s->f) : 0;
    int64_t work = buf + (int64_t)s->rcap;
    int64_t lib = (int64_t)bf_file_memory(s->f) - buf;
    mem_charge(s->m, work - s->work, lib - s->lib);
    s->work = work;
    s->lib = lib;
    uint64_t bs = bf_file_block_size(s->f);
    s->sync_at = (bf_file_tell(s->f) / bs + 1) * bs;
}

/* After a read or write: the first access allocates the buffer, a new block may grow the map. */
static void after_access(spillfile *s)
{
    s->buffered = true;
    if (bf_file_tell(s->f) >= s->sync_at)
        sync_memory(s);
}

spillfile *spill_create(qctx *q, memacct *m)
{
    spillfile *s = q_calloc(q, 1, sizeof *s);
    s->m = m;
    int rc = bf_file_create(q->space, NULL, &s->f);
    if (rc < 0) {
        free(s);
        q_check_bf(q, rc, "create spill file");
    }
    sync_memory(s);
    s->sync_at = 0;
    return s;
}

void spill_write(qctx *q, spillfile *s, uint64_t hash, const tup *t)
{
    q_check_bf(q, bf_file_write(s->f, &hash, sizeof hash), "write spill file");
    q_check_bf(q, bf_file_write(s->f, t, tup_len(t)), "write spill file");
    s->ntuples++;
    after_access(s);
}

void spill_park(qctx *q, spillfile *s)
{
    if (!s->buffered)
        return;
    q_check_bf(q, bf_file_release_buffer(s->f), "write spill file");
    s->buffered = false;
    sync_memory(s);
    s->sync_at = 0;
}

void spill_rewind(qctx *q, spillfile *s)
{
    q_check_bf(q, bf_file_seek(s->f, 0, BF_SEEK_SET), "rewind spill file");
    s->sync_at = 0;
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
        s->sync_at = 0; /* charge the read buffer now */
    }
    memcpy(s->rbuf, head + 8, 4);
    read_exact(q, s, s->rbuf + 4, len - 4);
    after_access(s);
    return (const tup *)s->rbuf;
}

void spill_close(spillfile *s)
{
    if (!s)
        return;
    bf_file_close(s->f);
    free(s->rbuf);
    mem_charge(s->m, -s->work, -s->lib);
    free(s);
}
