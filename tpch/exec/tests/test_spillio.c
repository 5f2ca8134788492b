/*
 * test_spillio.c - a spill file charges its operator exactly what the library
 * holds for it (bf_stats.memory_bytes, plus the tuple read buffer), split into
 * the block buffer (working memory) and the rest (memacct.lib); parking a file
 * gives its block buffer back; and jemalloc, the process allocator, sees the
 * same bytes come and go as the counter.
 */
#include <stdlib.h>

#include "spillio.h"
#include "test_util.h"

#define NFILES 64
#define NROWS 3000 /* per file: ~35 blocks of 4 KiB, so the block maps grow */

static int64_t library_bytes(spillfile **f, int n)
{
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        bf_stats st;
        bf_file_stats(f[i]->f, &st);
        sum += (int64_t)st.memory_bytes;
    }
    return sum;
}

/* The library's memory of the whole space: its open files, its scratch and read-ahead. */
static int64_t space_bytes(const test_ctx *t)
{
    bf_stats st;
    bf_space_stats(t->space, &st);
    return (int64_t)st.memory_bytes;
}

/* jemalloc's net bytes match the library's own count of its memory, plus our spillfile
 * structs and jemalloc's size-class rounding (within 15%: the block maps grow by 1/8). */
static bool heap_matches(int64_t heap, int64_t library)
{
    int64_t ours = NFILES * (int64_t)sizeof(spillfile);
    return heap >= library && heap <= library + ours + library * 15 / 100;
}

/* Sanitizer builds replace malloc: then jemalloc sees nothing and there is nothing to check. */
static bool jemalloc_allocates(void)
{
    uint64_t before = q_heap_now();
    char *volatile p = malloc(1 << 20); /* volatile: the pair must not be optimised away */
    bool seen = p && q_heap_now() - before >= (1 << 20);
    free(p);
    if (!seen)
        printf("jemalloc is not the allocator here: heap checks skipped\n");
    return seen;
}

static const tup *row(tbuild *tb, int i)
{
    tb_begin(tb, 2);
    tb_i64(tb, i);
    tb_cstr(tb, "a spilled row with a little text in it");
    return tb_end(tb);
}

int main(void)
{
    test_ctx t;
    tctx_open(&t, BF_CODEC_LZ4, 4096, 1 << 20);
    memacct m;
    mem_init(&m, &t.q);
    spillfile *f[NFILES];
    tbuild tb;
    tb_init(&tb);
    if (setjmp(t.jb) == 0) {
        /* Warm up: the codec context (not the files' memory: buffile.h) and row builder. */
        spillfile *w = spill_create(&t.q, &m);
        for (int r = 0; r < NROWS; r++)
            spill_write(&t.q, w, (uint64_t)r, row(&tb, r));
        spill_close(w);
        bool jemalloc = jemalloc_allocates();
        uint64_t heap0 = q_heap_now();
        int64_t space0 = space_bytes(&t);
        for (int i = 0; i < NFILES; i++)
            f[i] = spill_create(&t.q, &m);
        for (int r = 0; r < NROWS; r++)
            for (int i = 0; i < NFILES; i++)
                spill_write(&t.q, f[i], (uint64_t)r, row(&tb, r));
        int64_t lib = library_bytes(f, NFILES);
        int64_t heap = (int64_t)(q_heap_now() - heap0);
        printf("writing: charged %lld (lib %lld), library %lld, jemalloc %lld\n", (long long)m.cur,
               (long long)m.lib, (long long)lib, (long long)heap);
        /* Re-read at every block boundary, so at most the last block's map growth lags. */
        CHECK(m.cur == lib);
        CHECK(m.cur - m.lib == NFILES * 4096);
        CHECK(!jemalloc || heap_matches(heap, space_bytes(&t) - space0));

        for (int i = 0; i < NFILES; i++)
            spill_park(&t.q, f[i]);
        int64_t parked = library_bytes(f, NFILES);
        int64_t heap_parked = (int64_t)(q_heap_now() - heap0);
        printf("parked: charged %lld (lib %lld), library %lld, jemalloc %lld\n", (long long)m.cur,
               (long long)m.lib, (long long)parked, (long long)heap_parked);
        CHECK(m.cur == parked);
        CHECK(m.cur == m.lib); /* no block buffer left */
        CHECK(parked == lib - NFILES * 4096);
        CHECK(!jemalloc || heap_matches(heap_parked, space_bytes(&t) - space0));

        /* Reading one back takes its buffer and a tuple buffer again; every row returns. */
        spill_rewind(&t.q, f[7]);
        uint64_t h;
        int n = 0;
        const tup *x;
        while ((x = spill_read(&t.q, f[7], &h)) != NULL) {
            CHECK(h == (uint64_t)n && tup_i64(x, 0) == n);
            n++;
        }
        CHECK(n == NROWS);
        CHECK(m.cur == library_bytes(f, NFILES) + (int64_t)f[7]->rcap);
        CHECK(m.cur - m.lib == 4096 + (int64_t)f[7]->rcap);

        for (int i = 0; i < NFILES; i++)
            spill_close(f[i]);
        CHECK(m.cur == 0 && m.lib == 0);
    } else {
        fprintf(stderr, "failed: %s\n", t.q.errmsg);
        test_failures++;
    }
    tb_free(&tb);
    tctx_close(&t, NULL);
    return test_failures ? 1 : 0;
}
