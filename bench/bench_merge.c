/*
 * bench_merge.c - the merge of an external sort whose runs live in ONE
 * file: the three ways a caller can read them (issue 49).
 *
 * 64 sorted runs of 100-byte rows (an 8-byte key, then lineitem text from
 * our generator) are written back to back into one file per codec; the
 * merge then takes the smallest key of the 64 runs' current rows, over
 * and over, reading one row from that run's reader each time, so readers
 * switch at nearly every row. Readers:
 *   cursor   a bf_cursor per run (bf_cursor_read of one row);
 *   buf64k   a 64 KiB buffer of the caller's per run, refilled with
 *            bf_file_seek + bf_file_read of 65,500 bytes, whole rows (the
 *            issue's baseline);
 *   naive    bf_file_seek + bf_file_read of one row (the obvious first
 *            version: the file's one block buffer reloads at each switch).
 * Each round runs every (codec, reader) once in an order shuffled per
 * round; a reader is compared with buf64k of the same codec through the
 * ratios within each round (geometric mean, 95% t interval on their logs:
 * tpch/exec/paired.c). Every merge's output is checksummed and must agree.
 * Memory: what the readers took, the caller's buffers and the library's
 * heap growth during the merge, through allocator hooks. Page cache (the
 * file is read right after it is written); a benchmark, not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rows.h"
#include "bench_util.h"
#include "buffile.h"
#include "paired.h"

#define PROG "bench_merge"
#define ROW 100
#define RUNS 64
#define BUF64K 65536
#define MAX_ROUNDS 64

enum { R_CURSOR, R_BUF64K, R_NAIVE, NREADERS };
static const char *const reader_names[NREADERS] = {"cursor", "buf64k", "naive"};

/* ---- a counting allocator: the library's heap ------------------------------------------------ */

typedef struct counting {
    long long live, peak;
} counting;

static void *c_malloc(void *ctx, size_t n)
{
    counting *c = ctx;
    size_t *p = malloc(n + 16);
    if (p == NULL)
        return NULL;
    p[0] = n;
    c->live += (long long)n;
    if (c->live > c->peak)
        c->peak = c->live;
    return (unsigned char *)p + 16;
}

static void c_free(void *ctx, void *q)
{
    if (q == NULL)
        return;
    counting *c = ctx;
    size_t *p = (size_t *)((unsigned char *)q - 16);
    c->live -= (long long)p[0];
    free(p);
}

static void *c_realloc(void *ctx, void *q, size_t n)
{
    if (q == NULL)
        return c_malloc(ctx, n);
    counting *c = ctx;
    size_t *p = (size_t *)((unsigned char *)q - 16);
    size_t old = p[0];
    size_t *np = realloc(p, n + 16);
    if (np == NULL)
        return NULL;
    np[0] = n;
    c->live += (long long)n - (long long)old;
    if (c->live > c->peak)
        c->peak = c->live;
    return (unsigned char *)np + 16;
}

/* ---- the runs --------------------------------------------------------------------------------- */

typedef struct codec_case {
    bf_codec codec;
    counting heap;
    bf_allocator hooks;
    bf_space *sp;
    bf_file *f;
    uint64_t physical;
} codec_case;

static uint64_t rows_per_run;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void put_key(unsigned char *row, uint64_t k)
{
    for (int i = 0; i < 8; i++)
        row[i] = (unsigned char)(k >> (56 - 8 * i));
}

static uint64_t get_key(const unsigned char *row)
{
    uint64_t k = 0;
    for (int i = 0; i < 8; i++)
        k = k << 8 | row[i];
    return k;
}

/* The 64 runs, one after the other: each sorted by its keys, the text from lineitem rows. */
static unsigned char *make_runs(const unsigned char *text, size_t text_len)
{
    size_t total = (size_t)RUNS * rows_per_run * ROW;
    unsigned char *d = malloc(total);
    uint64_t *keys = malloc(rows_per_run * sizeof(*keys));
    if (d == NULL || keys == NULL)
        bench_die(PROG, "out of memory");
    uint64_t seed = 49;
    size_t t = 0;
    for (int r = 0; r < RUNS; r++) {
        for (uint64_t i = 0; i < rows_per_run; i++)
            keys[i] = splitmix(&seed);
        qsort(keys, rows_per_run, sizeof(*keys), cmp_u64);
        for (uint64_t i = 0; i < rows_per_run; i++) {
            unsigned char *row = d + ((size_t)r * rows_per_run + i) * ROW;
            put_key(row, keys[i]);
            if (t + ROW - 8 > text_len)
                t = 0;
            memcpy(row + 8, text + t, ROW - 8);
            t += ROW - 8;
        }
    }
    free(keys);
    return d;
}

static void write_case(codec_case *cc, const char *temp_dir, const unsigned char *d, size_t len)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = temp_dir;
    o.codec = cc->codec;
    o.temp_limit = 0;
    cc->hooks = (bf_allocator){c_malloc, c_realloc, c_free, &cc->heap};
    o.allocator = &cc->hooks;
    bench_space_file(&o, PROG, &cc->sp, &cc->f);
    for (size_t off = 0; off < len; off += BUF64K)
        if (bf_file_write(cc->f, d + off, len - off < BUF64K ? len - off : BUF64K) != BF_OK)
            bench_die(PROG, bf_space_errmsg(cc->sp));
    if (bf_file_flush(cc->f) != BF_OK)
        bench_die(PROG, bf_space_errmsg(cc->sp));
    bf_stats st;
    bf_file_stats(cc->f, &st);
    cc->physical = st.physical_bytes;
}

/* ---- the merge -------------------------------------------------------------------------------- */

typedef struct reader {
    uint64_t start, next, end; /* the run's bytes; the next row's offset */
    bf_cursor *cur;            /* R_CURSOR */
    unsigned char *buf;        /* R_BUF64K: the caller's buffer */
    uint64_t buf_at, buf_len;  /* its bytes are the file's [buf_at, buf_at + buf_len) */
    unsigned char row[ROW];    /* the current row */
} reader;

typedef struct merge_result {
    double seconds;
    uint64_t checksum, rows;
    long long heap_growth; /* the library's peak heap during the merge, over what it held */
    long long caller_bytes; /* the readers' buffers of the caller's own */
} merge_result;

/* Read run `r`'s next row into rd->row; 0 at the run's end. */
static int next_row(codec_case *cc, int how, reader *rd)
{
    if (rd->next >= rd->end)
        return 0;
    switch (how) {
    case R_CURSOR:
        if (bf_cursor_read(rd->cur, rd->row, ROW) != ROW)
            bench_die(PROG, bf_space_errmsg(cc->sp));
        break;
    case R_BUF64K:
        if (rd->next + ROW > rd->buf_at + rd->buf_len) { /* whole rows: 65,500 bytes a fill */
            uint64_t want = rd->end - rd->next < BUF64K - BUF64K % ROW ? rd->end - rd->next
                                                                       : BUF64K - BUF64K % ROW;
            if (bf_file_seek(cc->f, (int64_t)rd->next, BF_SEEK_SET) != BF_OK ||
                bf_file_read(cc->f, rd->buf, want) != (int64_t)want)
                bench_die(PROG, bf_space_errmsg(cc->sp));
            rd->buf_at = rd->next;
            rd->buf_len = want;
        }
        memcpy(rd->row, rd->buf + (rd->next - rd->buf_at), ROW);
        break;
    default:
        if (bf_file_seek(cc->f, (int64_t)rd->next, BF_SEEK_SET) != BF_OK ||
            bf_file_read(cc->f, rd->row, ROW) != ROW)
            bench_die(PROG, bf_space_errmsg(cc->sp));
    }
    rd->next += ROW;
    return 1;
}

/* A binary heap of run numbers by their current row's key. */
static void sift_down(int *heap, int n, int i, const uint64_t *key)
{
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < n && key[heap[l]] < key[heap[m]])
            m = l;
        if (l + 1 < n && key[heap[l + 1]] < key[heap[m]])
            m = l + 1;
        if (m == i)
            return;
        int t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static void merge(codec_case *cc, int how, merge_result *res)
{
    static reader rd[RUNS];
    uint64_t key[RUNS];
    int heap[RUNS], n = 0;
    long long held = cc->heap.live;
    cc->heap.peak = held;
    res->caller_bytes = 0;
    double t0 = bench_now();
    for (int r = 0; r < RUNS; r++) {
        memset(&rd[r], 0, sizeof(rd[r]));
        rd[r].start = rd[r].next = (uint64_t)r * rows_per_run * ROW;
        rd[r].end = rd[r].start + rows_per_run * ROW;
        if (how == R_CURSOR) {
            if (bf_cursor_open(cc->f, &rd[r].cur) != BF_OK ||
                bf_cursor_seek(rd[r].cur, (int64_t)rd[r].start, BF_SEEK_SET) != BF_OK)
                bench_die(PROG, bf_space_errmsg(cc->sp));
        } else if (how == R_BUF64K) {
            rd[r].buf = malloc(BUF64K);
            if (rd[r].buf == NULL)
                bench_die(PROG, "out of memory");
            res->caller_bytes += BUF64K;
        }
        if (next_row(cc, how, &rd[r])) {
            key[r] = get_key(rd[r].row);
            heap[n++] = r;
        }
    }
    for (int i = n / 2 - 1; i >= 0; i--)
        sift_down(heap, n, i, key);
    uint64_t sum = 0, rows = 0, last = 0;
    while (n > 0) {
        int r = heap[0];
        if (key[r] < last)
            bench_die(PROG, "the merge's output is not sorted");
        last = key[r];
        /* The output: a checksum over the rows in order (FNV-style over 8-byte words). */
        const unsigned char *row = rd[r].row;
        uint64_t h = sum;
        for (int i = 0; i + 8 <= ROW; i += 8) {
            uint64_t w;
            memcpy(&w, row + i, 8);
            h = (h ^ w) * 0x100000001b3ull;
        }
        sum = h;
        rows++;
        if (next_row(cc, how, &rd[r]))
            key[r] = get_key(rd[r].row);
        else
            heap[0] = heap[--n];
        sift_down(heap, n, 0, key);
    }
    res->heap_growth = cc->heap.peak - held;
    for (int r = 0; r < RUNS; r++) {
        bf_cursor_close(rd[r].cur);
        free(rd[r].buf);
    }
    res->seconds = bench_now() - t0;
    res->checksum = sum;
    res->rows = rows;
}

int main(int argc, char **argv)
{
    size_t mib = 32;
    int rounds = 7;
    const char *temp_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mib=", 6) == 0)
            mib = strtoul(argv[i] + 6, NULL, 10);
        else if (strncmp(argv[i], "--rounds=", 9) == 0)
            rounds = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--temp-dir=", 11) == 0)
            temp_dir = argv[i] + 11;
        else
            rounds = -1;
    }
    if (mib < 1 || rounds < 2 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: " PROG " [--mib=N] [--rounds=2..%d] [--temp-dir=DIR]\n",
                MAX_ROUNDS);
        return 2;
    }
    if (temp_dir == NULL)
        temp_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    rows_per_run = ((uint64_t)mib << 20) / RUNS / ROW;
    size_t len = (size_t)RUNS * rows_per_run * ROW;
    unsigned char *text = bench_lineitem_rows(temp_dir, "bench-merge-data", PROG, 8u << 20);
    unsigned char *data = make_runs(text, 8u << 20);
    free(text);

    codec_case cases[3] = {{.codec = BF_CODEC_NONE}, {.codec = BF_CODEC_LZ4},
                           {.codec = BF_CODEC_ZSTD}};
    enum { NCASES = 3, NCONF = NCASES * NREADERS };
    for (int c = 0; c < NCASES; c++)
        write_case(&cases[c], temp_dir, data, len);
    free(data);

    static merge_result res[MAX_ROUNDS][NCONF];
    merge_result warm;
    uint64_t want = 0;
    for (int k = 0; k < NCONF; k++) { /* contexts, page cache: not counted */
        merge(&cases[k / NREADERS], k % NREADERS, &warm);
        if (k == 0)
            want = warm.checksum;
        if (warm.checksum != want || warm.rows != (uint64_t)RUNS * rows_per_run) {
            fprintf(stderr, PROG ": %s with %s: checksum %016llx, rows %llu (want %016llx, %llu)\n",
                    reader_names[k % NREADERS], bf_codec_name(cases[k / NREADERS].codec),
                    (unsigned long long)warm.checksum, (unsigned long long)warm.rows,
                    (unsigned long long)want, (unsigned long long)RUNS * rows_per_run);
            bench_die(PROG, "the readers disagree on the merge's output");
        }
    }
    for (int r = 0; r < rounds; r++) {
        int order[NCONF];
        pd_shuffle(49, r, NCONF, order);
        for (int i = 0; i < NCONF; i++) {
            int k = order[i];
            merge(&cases[k / NREADERS], k % NREADERS, &res[r][k]);
            if (res[r][k].checksum != want)
                bench_die(PROG, "the readers disagree on the merge's output");
        }
    }
    printf(PROG ": %d sorted runs of %llu rows of %d bytes (%.1f MiB) in one file, 8 KiB "
               "blocks, merged one row per switch; %d rounds (shuffled), page cache under %s\n",
           RUNS, (unsigned long long)rows_per_run, ROW, (double)len / 1048576.0, rounds, temp_dir);
    printf("%-5s %-7s %9s %-26s %12s %12s %10s\n", "codec", "reader", "median_s",
           "vs buf64k [95%]", "caller_KiB", "library_KiB", "file_MiB");
    for (int c = 0; c < NCASES; c++)
        for (int h = 0; h < NREADERS; h++) {
            int k = c * NREADERS + h, base = c * NREADERS + R_BUF64K;
            double t[MAX_ROUNDS], b[MAX_ROUNDS], med[MAX_ROUNDS];
            for (int r = 0; r < rounds; r++) {
                t[r] = med[r] = res[r][k].seconds;
                b[r] = res[r][base].seconds;
            }
            char ratio[64] = "";
            if (k != base) {
                pd_interval iv = pd_ratio(t, b, rounds);
                snprintf(ratio, sizeof(ratio), "%.3f [%.3f, %.3f]", iv.est, iv.lo, iv.hi);
            }
            printf("%-5s %-7s %9.3f %-26s %12.1f %12.1f %10.2f\n", bf_codec_name(cases[c].codec),
                   reader_names[h], bench_median(med, rounds), ratio,
                   (double)res[0][k].caller_bytes / 1024.0,
                   (double)res[0][k].heap_growth / 1024.0,
                   (double)cases[c].physical / 1048576.0);
        }
    printf("vs buf64k: the paired ratio to the 64 KiB-per-run reader of the same codec; "
           "caller_KiB: the readers' own buffers; library_KiB: the library's heap growth "
           "during the merge (allocator hooks: cursors' blocks, read-ahead)\n");
    for (int c = 0; c < NCASES; c++) {
        bf_file_close(cases[c].f);
        bf_space_destroy(cases[c].sp);
    }
    return 0;
}
