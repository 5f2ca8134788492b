/*
 * op_sort.c - external merge sort over logical tapes, and top-N.
 *
 * Rows are copied into an accounted arena until one more would exceed the
 * working budget (work_mem less the tape file's library memory, but at least
 * what a SORT_MIN_ORDER-way merge needs; mem_work_budget) less the block
 * buffer of the tape writer; the buffer is then sorted and written as a run
 * on a new tape. At the end, runs are merged in balanced passes of at most
 * `order` runs, as many as the budget holds block buffers for (each input
 * tape costs one plus its current row, the output tape one), until one final
 * pass of at most `order` runs is merged on the fly into the output. All
 * tapes share one buffile file, whose blocks are recycled (logtape.h).
 *
 * With a limit the operator is a top-N: a bounded max-heap of the best
 * `limit` rows, as PostgreSQL's bounded heapsort; it never spills.
 */
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "logtape.h"
#include "ops.h"

#define SORT_MAX_KEYS 12
/* Least merge order: fewer inputs per pass would multiply the passes for little memory. */
#define SORT_MIN_ORDER 4

typedef struct mreader {
    ltreader r;
    uint8_t *cur; /* current row, NULL when the tape is exhausted */
    size_t cap;
} mreader;

typedef struct sortop {
    op base;
    op *child;
    int nkeys;
    sortkey keys[SORT_MAX_KEYS];
    int64_t limit;
    memacct m;
    arena ar;
    const tup **arr;
    size_t n, cap, emit_pos;
    ltset *lts;
    int64_t *runs;
    size_t nruns, caprun;
    /* final merge */
    mreader *rd;
    int *heap;
    int nrd, nheap, last;
    bool sorted, merging, spilled;
    int passes;
} sortop;

static int cmp(const sortop *s, const tup *a, const tup *b)
{
    return keys_compare(a, b, s->nkeys, s->keys);
}

static void swap_ptr(const tup **a, const tup **b)
{
    const tup *t = *a;
    *a = *b;
    *b = t;
}

static void quicksort(const sortop *s, const tup **v, size_t n)
{
    while (n > 16) {
        size_t mid = n / 2;
        if (cmp(s, v[mid], v[0]) < 0)
            swap_ptr(&v[mid], &v[0]);
        if (cmp(s, v[n - 1], v[0]) < 0)
            swap_ptr(&v[n - 1], &v[0]);
        if (cmp(s, v[n - 1], v[mid]) < 0)
            swap_ptr(&v[n - 1], &v[mid]);
        const tup *pivot = v[mid];
        size_t i = 0, j = n - 1;
        for (;;) {
            while (cmp(s, v[i], pivot) < 0)
                i++;
            while (cmp(s, pivot, v[j]) < 0)
                j--;
            if (i >= j)
                break;
            swap_ptr(&v[i], &v[j]);
            i++;
            j--;
        }
        size_t left = j + 1;
        if (left < n - left) {
            quicksort(s, v, left);
            v += left;
            n -= left;
        } else {
            quicksort(s, v + left, n - left);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        const tup *x = v[i];
        size_t j = i;
        while (j > 0 && cmp(s, x, v[j - 1]) < 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* The pointer array starts small (a tiny budget is not spent on it) and doubles. */
#define SORT_ARR_FIRST 64

static void grow_arr(sortop *s)
{
    size_t nc = s->cap ? s->cap * 2 : SORT_ARR_FIRST;
    s->arr = q_realloc(s->base.q, s->arr, nc * sizeof *s->arr);
    mem_add(&s->m, (int64_t)((nc - s->cap) * sizeof *s->arr));
    s->cap = nc;
}

static void add_run(sortop *s, int64_t first)
{
    if (s->nruns == s->caprun) {
        s->caprun = s->caprun ? s->caprun * 2 : 64;
        s->runs = q_realloc(s->base.q, s->runs, s->caprun * sizeof *s->runs);
    }
    s->runs[s->nruns++] = first;
}

static void dump_run(sortop *s)
{
    qctx *q = s->base.q;
    if (!s->lts) {
        s->lts = lt_create(q, &s->m);
        s->spilled = true;
        q->st.sort_spilled++;
    }
    quicksort(s, s->arr, s->n);
    ltwriter w;
    ltw_start(s->lts, &w);
    for (size_t i = 0; i < s->n; i++)
        ltw_write(&w, s->arr[i], tup_len(s->arr[i]));
    add_run(s, ltw_finish(&w));
    q->st.sort_runs++;
    arena_reset(&s->ar);
    s->n = 0;
}

/* Load the next row of a tape into r->cur (NULL at the end). */
static void reader_advance(sortop *s, mreader *r)
{
    uint32_t len;
    size_t got = ltr_read(&r->r, &len, 4);
    if (got == 0) {
        mem_add(&s->m, -(int64_t)r->cap);
        free(r->cur);
        r->cur = NULL;
        r->cap = 0;
        ltr_end(&r->r);
        return;
    }
    if (got != 4 || len < 6)
        q_fail(s->base.q, "sort tape: truncated row");
    if (len > r->cap) {
        r->cur = q_realloc(s->base.q, r->cur, len);
        mem_add(&s->m, (int64_t)(len - r->cap));
        r->cap = len;
    }
    memcpy(r->cur, &len, 4);
    if (ltr_read(&r->r, r->cur + 4, len - 4) != len - 4)
        q_fail(s->base.q, "sort tape: truncated row");
}

static bool heap_less(const sortop *s, const mreader *rd, int a, int b)
{
    int c = cmp(s, (const tup *)rd[a].cur, (const tup *)rd[b].cur);
    return c < 0 || (c == 0 && a < b);
}

static void sift_down(const sortop *s, const mreader *rd, int *heap, int n, int i)
{
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && heap_less(s, rd, heap[c + 1], heap[c]))
            c++;
        if (!heap_less(s, rd, heap[c], heap[i]))
            return;
        int t = heap[c];
        heap[c] = heap[i];
        heap[i] = t;
        i = c;
    }
}

/* Open readers on the k tapes starting at runs[0] and heapify them. */
static void open_merge(sortop *s, const int64_t *runs, int k)
{
    s->rd = q_calloc(s->base.q, (size_t)k, sizeof *s->rd);
    s->heap = q_calloc(s->base.q, (size_t)k, sizeof *s->heap);
    s->nheap = 0;
    s->nrd = k;
    for (int i = 0; i < k; i++) {
        ltr_start(s->lts, &s->rd[i].r, runs[i]);
        reader_advance(s, &s->rd[i]);
        if (s->rd[i].cur)
            s->heap[s->nheap++] = i;
    }
    for (int i = s->nheap / 2 - 1; i >= 0; i--)
        sift_down(s, s->rd, s->heap, s->nheap, i);
    s->last = -1;
}

static void close_merge(sortop *s)
{
    for (int i = 0; s->rd && i < s->nrd; i++) {
        if (s->rd[i].cur) {
            mem_add(&s->m, -(int64_t)s->rd[i].cap);
            free(s->rd[i].cur);
            ltr_end(&s->rd[i].r);
        }
    }
    free(s->rd);
    free(s->heap);
    s->rd = NULL;
    s->heap = NULL;
    s->nrd = 0;
}

/* Pop the smallest row; the reader is advanced lazily on the next pop. */
static const tup *merge_next(sortop *s)
{
    if (s->last >= 0) {
        reader_advance(s, &s->rd[s->last]);
        if (!s->rd[s->last].cur)
            s->heap[0] = s->heap[--s->nheap];
        sift_down(s, s->rd, s->heap, s->nheap, 0);
        s->last = -1;
    }
    if (s->nheap == 0)
        return NULL;
    s->last = s->heap[0];
    return (const tup *)s->rd[s->last].cur;
}

/* What an input tape of a merge costs: its block buffer and its current row (taken as a
 * quarter block). */
static int64_t merge_input_cost(const qctx *q)
{
    return q->block_size + q->block_size / 4;
}

/* Merge fan-in: input tapes that fit in the working budget beside the output tape's
 * buffer; at least SORT_MIN_ORDER (the budget is never below what that needs). */
static int merge_order(const sortop *s)
{
    const qctx *q = s->base.q;
    int64_t k =
        (mem_work_budget(&s->m) - (s->m.cur - s->m.lib) - q->block_size) / merge_input_cost(q);
    if (k > 1024)
        k = 1024;
    return k < SORT_MIN_ORDER ? SORT_MIN_ORDER : (int)k;
}

static void merge_runs(sortop *s)
{
    int order;
    s->passes = 0;
    while (s->nruns > (size_t)(order = merge_order(s))) {
        int64_t *old = s->runs;
        size_t nold = s->nruns;
        s->runs = NULL;
        s->nruns = s->caprun = 0;
        for (size_t i = 0; i < nold; i += (size_t)order) {
            int k = nold - i < (size_t)order ? (int)(nold - i) : order;
            open_merge(s, old + i, k);
            ltwriter w;
            ltw_start(s->lts, &w);
            const tup *t;
            while ((t = merge_next(s)) != NULL)
                ltw_write(&w, t, tup_len(t));
            close_merge(s);
            add_run(s, ltw_finish(&w));
        }
        free(old);
        s->passes++;
    }
    open_merge(s, s->runs, (int)s->nruns);
    s->passes++;
    if (s->passes > s->base.q->st.sort_max_passes)
        s->base.q->st.sort_max_passes = s->passes;
    s->merging = true;
}

static void heap_topn_sift(sortop *s, size_t i)
{
    /* max-heap on the sort order: the root is the worst row kept */
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n)
            return;
        if (c + 1 < s->n && cmp(s, s->arr[c + 1], s->arr[c]) > 0)
            c++;
        if (cmp(s, s->arr[c], s->arr[i]) <= 0)
            return;
        swap_ptr(&s->arr[c], &s->arr[i]);
        i = c;
    }
}

static const tup *copy_row(sortop *s, const tup *t)
{
    void *p = arena_alloc(&s->ar, tup_len(t));
    memcpy(p, t, tup_len(t));
    return p;
}

static void consume_topn(sortop *s)
{
    const tup *t;
    size_t lim = (size_t)s->limit;
    while ((t = s->child->next(s->child)) != NULL) {
        if (lim == 0)
            continue;
        if (s->n < lim) {
            if (s->n == s->cap)
                grow_arr(s);
            s->arr[s->n++] = copy_row(s, t);
            size_t i = s->n - 1;
            while (i > 0 && cmp(s, s->arr[(i - 1) / 2], s->arr[i]) < 0) {
                swap_ptr(&s->arr[(i - 1) / 2], &s->arr[i]);
                i = (i - 1) / 2;
            }
        } else if (cmp(s, t, s->arr[0]) < 0) {
            /* the replaced row's arena space is not reused: N is small */
            s->arr[0] = copy_row(s, t);
            heap_topn_sift(s, 0);
        }
    }
    quicksort(s, s->arr, s->n);
}

static void consume(sortop *s)
{
    qctx *q = s->base.q;
    if (s->limit >= 0) {
        consume_topn(s);
        s->sorted = true;
        return;
    }
    const tup *t;
    while ((t = s->child->next(s->child)) != NULL) {
        /* the rows, their pointer array, and the tape writer's block buffer of a dump */
        int64_t cost = (int64_t)arena_cost(&s->ar, tup_len(t)) +
                       (s->n == s->cap ? (int64_t)(s->cap ? s->cap : SORT_ARR_FIRST) * 8 : 0);
        if (s->n > 0 && s->m.cur - s->m.lib + cost + q->block_size > mem_work_budget(&s->m))
            dump_run(s);
        if (s->n == s->cap)
            grow_arr(s);
        s->arr[s->n++] = copy_row(s, t);
    }
    if (s->nruns == 0) {
        quicksort(s, s->arr, s->n);
    } else {
        if (s->n > 0)
            dump_run(s);
        mem_add(&s->m, -(int64_t)(s->cap * sizeof *s->arr));
        free(s->arr);
        s->arr = NULL;
        s->cap = 0;
        merge_runs(s);
    }
    s->sorted = true;
}

static const tup *sort_next(op *self)
{
    sortop *s = (sortop *)self;
    if (!s->sorted)
        consume(s);
    if (s->merging)
        return merge_next(s);
    if (s->emit_pos < s->n)
        return s->arr[s->emit_pos++];
    return NULL;
}

static void sort_close(op *self)
{
    sortop *s = (sortop *)self;
    close_merge(s);
    lt_destroy(s->lts);
    arena_reset(&s->ar);
    free(s->arr);
    free(s->runs);
}

op *op_sort(qctx *q, op *child, int nkeys, const sortkey *keys, int64_t limit)
{
    if (nkeys < 1 || nkeys > SORT_MAX_KEYS)
        q_fail(q, "sort: %d keys (1..%d supported)", nkeys, SORT_MAX_KEYS);
    sortop *s = op_new(q, sizeof *s, sort_next, sort_close, child->natts);
    s->child = child;
    s->nkeys = nkeys;
    memcpy(s->keys, keys, sizeof *keys * (size_t)nkeys);
    s->limit = limit;
    mem_init(&s->m, q);
    s->m.min_work = SORT_MIN_ORDER * merge_input_cost(q) + q->block_size;
    arena_init(&s->ar, q, &s->m);
    return &s->base;
}
