/*
 * qctx.c - query context: accounting, failure exit, operator registry.
 *
 * The jemalloc sample is taken only when a counter grows: peaks can only be
 * reached at such a moment, and reading two thread-local counters is cheap.
 */
#include "qctx.h"

#include <jemalloc/jemalloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *jm_alloc_p;
static uint64_t *jm_dealloc_p;
static _Thread_local bool jm_ready;

uint64_t q_heap_now(void)
{
    if (!jm_ready) {
        size_t sz = sizeof(uint64_t *);
        if (mallctl("thread.allocatedp", &jm_alloc_p, &sz, NULL, 0) != 0 ||
            mallctl("thread.deallocatedp", &jm_dealloc_p, &sz, NULL, 0) != 0)
            return 0;
        jm_ready = true;
    }
    return *jm_alloc_p - *jm_dealloc_p;
}

void q_init(qctx *q, bf_space *space, const tpch_db *db, int64_t work_mem)
{
    memset(q, 0, sizeof *q);
    q->space = space;
    q->db = db;
    q->work_mem = work_mem > 0 ? work_mem : INT64_MAX;
    q->block_size = BF_BLOCK_SIZE_DEFAULT;
    q->heap_base = q_heap_now();
}

void q_fail(qctx *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->errmsg, sizeof q->errmsg, fmt, ap);
    va_end(ap);
    if (!q->jb) {
        fprintf(stderr, "query failed outside q_run: %s\n", q->errmsg);
        abort();
    }
    longjmp(*q->jb, 1);
}

void q_check_bf(qctx *q, int status, const char *what)
{
    if (status < 0)
        q_fail(q, "%s: %s (%s)", what, bf_strerror(status),
               q->space ? bf_space_errmsg(q->space) : "");
}

void *q_malloc(qctx *q, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        q_fail(q, "out of memory (%zu bytes)", n);
    return p;
}

void *q_calloc(qctx *q, size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p)
        q_fail(q, "out of memory (%zu x %zu bytes)", n, sz);
    return p;
}

void *q_realloc(qctx *q, void *p, size_t n)
{
    void *r = realloc(p, n ? n : 1);
    if (!r)
        q_fail(q, "out of memory (%zu bytes)", n);
    return r;
}

void *op_new(qctx *q, size_t size, const tup *(*next)(op *), void (*close)(op *), int natts)
{
    op *o = q_calloc(q, 1, size);
    o->next = next;
    o->close = close;
    o->q = q;
    o->natts = natts;
    o->reg_next = q->ops;
    q->ops = o;
    return o;
}

void q_close_all(qctx *q)
{
    while (q->ops) {
        op *o = q->ops;
        q->ops = o->reg_next;
        o->close(o);
        free(o);
    }
}

void mem_init(memacct *m, qctx *q)
{
    memset(m, 0, sizeof *m);
    m->q = q;
}

int64_t mem_work_budget(const memacct *m)
{
    int64_t b = (m->q->work_mem > m->grant ? m->q->work_mem : m->grant) - m->lib;
    return b > m->min_work ? b : m->min_work;
}

int64_t mem_floor(const memacct *m)
{
    int64_t w = m->q->work_mem;
    if (w == INT64_MAX)
        return w;
    int64_t work = m->need > m->min_work ? m->need : m->min_work;
    int64_t grown = (w > m->grant ? w : m->grant) + m->lib - m->lib_grown;
    return m->lib + work > grown ? m->lib + work : grown;
}

void mem_charge(memacct *m, int64_t work, int64_t lib)
{
    qctx *q = m->q;
    m->cur += work + lib;
    m->lib += lib;
    q->mem_cur += work + lib;
    if (work > 0)
        m->lib_grown = m->lib;
    if (work + lib <= 0)
        return;
    if (m->cur > m->peak) {
        m->peak = m->cur;
        m->peak_floor = mem_floor(m);
        int64_t limit = m->peak_floor > q->work_mem ? m->peak_floor : q->work_mem;
        double over = (double)m->peak / (double)limit;
        if (over > q->op_over)
            q->op_over = over;
    }
    if (m->peak > q->op_peak) {
        q->op_peak = m->peak;
        q->op_peak_floor = m->peak_floor;
    }
    if (q->mem_cur > q->mem_peak)
        q->mem_peak = q->mem_cur;
    int64_t heap = (int64_t)(q_heap_now() - q->heap_base);
    if (heap > q->heap_peak)
        q->heap_peak = heap;
}

void mem_add(memacct *m, int64_t delta)
{
    mem_charge(m, delta, 0);
}

size_t q_chunk_size(const qctx *q)
{
    int64_t cs = q->work_mem / 16;
    if (cs > 64 * 1024)
        cs = 64 * 1024;
    if (cs < 4096)
        cs = 4096;
    return (size_t)cs;
}
