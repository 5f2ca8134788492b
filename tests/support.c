/*
 * support.c - implementation of the shared test helpers.
 *
 * The fault table counts calls from the moment it is armed, so a test can
 * say "the 3rd write from here fails" without knowing how many writes
 * space creation or earlier steps made.
 */
#include "support.h"

#include "index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

uint64_t t_next(t_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t t_below(t_rng *r, uint64_t n)
{
    return n ? t_next(r) % n : 0;
}

const char *const t_data_names[3] = {"random", "text", "mixed"};

static const char *const words[] = {"furiously", "the",     "slyly",   "regular",  "deposits",
                                    "accounts",  "ironic",  "final",   "packages", "carefully",
                                    "express",   "pending", "quickly", "requests", "blithely"};

static size_t text_row(t_rng *r, unsigned char *out, size_t cap)
{
    char row[256];
    /* Drawn one by one: the order of evaluation of call arguments is unspecified (gcc and
       clang differ), and the same seed must give the same rows with either compiler. */
    static const uint64_t ranges[9] = {6000000, 200000, 10000, 50, 100000, 100, 9, 9, 10};
    unsigned long long v[9];
    for (int i = 0; i < 9; i++)
        v[i] = t_below(r, ranges[i]);
    int n =
        snprintf(row, sizeof(row), "%llu|%llu|%llu|%llu|%llu.%02llu|0.0%llu|N|O|1996-0%llu-1%llu|",
                 v[0], v[1], v[2], v[3] + 1, v[4], v[5], v[6], v[7] + 1, v[8]);
    for (int w = 0, nw = 2 + (int)t_below(r, 6); w < nw && n < 200; w++)
        n += snprintf(row + n, sizeof(row) - (size_t)n, "%s ",
                      words[t_below(r, sizeof(words) / sizeof(words[0]))]);
    row[n - 1] = '\n';
    size_t len = (size_t)n < cap ? (size_t)n : cap;
    memcpy(out, row, len);
    return len;
}

void t_fill(t_rng *r, t_data kind, unsigned char *buf, size_t len)
{
    size_t i = 0;
    while (i < len) {
        int random = kind == T_DATA_RANDOM || (kind == T_DATA_MIXED && t_below(r, 2));
        size_t run = kind == T_DATA_MIXED ? 1 + t_below(r, 6000) : len - i;
        if (run > len - i)
            run = len - i;
        if (random) {
            for (size_t k = 0; k < run; k++)
                buf[i + k] = (unsigned char)t_next(r);
            i += run;
        } else {
            size_t end = i + run;
            while (i < end)
                i += text_row(r, buf + i, end - i);
        }
    }
}

/* Each allocation carries its size in a 16-byte prefix so free can account it. */
/* 1 when `size` is over the test's limit: the request is refused and counted. */
static int too_large(t_counting *c, size_t size)
{
    if (c->max_request == 0 || size <= c->max_request)
        return 0;
    c->too_large++;
    if (size > c->largest_refused)
        c->largest_refused = size;
    return 1;
}

static void *count_malloc(void *ctx, size_t size)
{
    t_counting *c = ctx;
    c->calls++;
    if ((c->fail_at && --c->fail_at == 0) || too_large(c, size))
        return NULL;
    size_t *p = malloc(size + 16);
    if (p == NULL)
        return NULL;
    p[0] = size;
    c->live_bytes += (int64_t)size;
    if (c->live_bytes > c->peak_bytes)
        c->peak_bytes = c->live_bytes;
    return (char *)p + 16;
}

static void count_free(void *ctx, void *ptr)
{
    t_counting *c = ctx;
    if (ptr == NULL)
        return;
    size_t *p = (size_t *)((char *)ptr - 16);
    c->live_bytes -= (int64_t)p[0];
    if (c->poison)
        memset(ptr, 0xa5, p[0]);
    free(p);
}

static void *count_realloc(void *ctx, void *ptr, size_t size)
{
    t_counting *c = ctx;
    if (ptr == NULL)
        return count_malloc(ctx, size);
    c->calls++;
    if ((c->fail_at && --c->fail_at == 0) || too_large(c, size))
        return NULL;
    size_t *p = (size_t *)((char *)ptr - 16);
    size_t old = p[0];
    if (c->poison) { /* always move, and poison the old block */
        size_t *n = malloc(size + 16);
        if (n == NULL)
            return NULL;
        memcpy(n + 2, ptr, old < size ? old : size);
        memset(ptr, 0xa5, old);
        free(p);
        n[0] = size;
        c->live_bytes += (int64_t)size - (int64_t)old;
        if (c->live_bytes > c->peak_bytes)
            c->peak_bytes = c->live_bytes;
        return n + 2;
    }
    size_t *q = realloc(p, size + 16);
    if (q == NULL)
        return NULL;
    q[0] = size;
    c->live_bytes += (int64_t)size - (int64_t)old;
    if (c->live_bytes > c->peak_bytes)
        c->peak_bytes = c->live_bytes;
    return (char *)q + 16;
}

void t_counting_init(t_counting *c)
{
    memset(c, 0, sizeof(*c));
    c->hooks.malloc_fn = count_malloc;
    c->hooks.realloc_fn = count_realloc;
    c->hooks.free_fn = count_free;
    c->hooks.ctx = c;
}

/* Die here when this is the call the test chose to crash at. */
static void maybe_kill(t_faults *f)
{
    if (f->kill_at && ++f->calls == f->kill_at)
        raise(SIGKILL);
}

/*
 * Count a metadata call of `kind` (T_META_*, named `call`); 1 (errno set,
 * `fired` named) when it is the one to fail.
 */
static int meta_fails(t_faults *f, unsigned kind, const char *call)
{
    maybe_kill(f);
    if (f->meta_mask && !(f->meta_mask & kind))
        return 0;
    f->metas++;
    if (f->fail_meta_at && f->metas == f->fail_meta_at) {
        errno = f->fail_errno;
        f->fired = call;
        return 1;
    }
    return 0;
}

static int f_open(void *ctx, const char *path, int flags, mode_t mode)
{
    return meta_fails(ctx, T_META_OPEN, "open") ? -1 : bf_posix_io.open(NULL, path, flags, mode);
}

static int f_close(void *ctx, int fd)
{
    (void)ctx;
    return bf_posix_io.close(NULL, fd);
}

static ssize_t f_pwritev(void *ctx, int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    t_faults *f = ctx;
    maybe_kill(f);
    f->writes++;
    if (f->short_armed) {
        f->short_armed = 0;
        errno = f->fail_errno;
        return -1;
    }
    if (f->fail_write_at && f->writes == f->fail_write_at) {
        if (f->short_write) {
            size_t total = 0;
            for (int i = 0; i < iovcnt; i++)
                total += iov[i].iov_len;
            size_t half = total / 2;
            struct iovec v[4];
            int n = 0;
            for (int i = 0; i < iovcnt && half > 0; i++, n++) {
                v[n] = iov[i];
                if (v[n].iov_len > half)
                    v[n].iov_len = half;
                half -= v[n].iov_len;
            }
            f->short_armed = 1;
            return bf_posix_io.pwritev(NULL, fd, v, n, off);
        }
        errno = f->fail_errno;
        return -1;
    }
    return bf_posix_io.pwritev(NULL, fd, iov, iovcnt, off);
}

static ssize_t f_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    t_faults *f = ctx;
    f->reads++;
    if (f->fail_read_at && f->reads == f->fail_read_at) {
        errno = f->fail_errno;
        return -1;
    }
    return bf_posix_io.pread(NULL, fd, buf, len, off);
}

static int f_ftruncate(void *ctx, int fd, off_t len)
{
    return meta_fails(ctx, T_META_FTRUNCATE, "ftruncate") ? -1
                                                          : bf_posix_io.ftruncate(NULL, fd, len);
}

static int f_unlink(void *ctx, const char *path)
{
    return meta_fails(ctx, T_META_UNLINK, "unlink") ? -1 : bf_posix_io.unlink(NULL, path);
}

bf_io t_fault_io(t_faults *f)
{
    bf_io io = {f_open, f_close, f_pwritev, f_pread, f_ftruncate, f_unlink, f};
    return io;
}

uint64_t t_device_clock(void *ctx)
{
    return ((t_device *)ctx)->now;
}

static void dev_moved(t_device *d, ssize_t bytes)
{
    d->now += (uint64_t)((double)bytes * d->ns_per_byte);
    if (d->moved != NULL)
        d->moved(d, bytes);
}

static ssize_t dev_pwritev(void *ctx, int fd, const struct iovec *iov, int n, off_t off)
{
    ssize_t w = bf_posix_io.pwritev(NULL, fd, iov, n, off);
    if (w > 0)
        dev_moved(ctx, w);
    return w;
}

static ssize_t dev_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    ssize_t r = bf_posix_io.pread(NULL, fd, buf, len, off);
    if (r > 0)
        dev_moved(ctx, r);
    return r;
}

static int dev_open(void *ctx, const char *path, int flags, mode_t mode)
{
    (void)ctx;
    return bf_posix_io.open(NULL, path, flags, mode);
}

static int dev_close(void *ctx, int fd)
{
    (void)ctx;
    return bf_posix_io.close(NULL, fd);
}

static int dev_ftruncate(void *ctx, int fd, off_t len)
{
    (void)ctx;
    return bf_posix_io.ftruncate(NULL, fd, len);
}

static int dev_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return bf_posix_io.unlink(NULL, path);
}

bf_io t_device_io(t_device *d)
{
    bf_io io = {dev_open, dev_close, dev_pwritev, dev_pread, dev_ftruncate, dev_unlink, d};
    return io;
}

void t_model_reserve(t_model *m, uint64_t size)
{
    if (size <= m->cap && m->d != NULL)
        return;
    uint64_t cap = size * 2 + 1;
    m->d = realloc(m->d, cap);
    assert_non_null(m->d);
    memset(m->d + m->cap, 0, cap - m->cap);
    m->cap = cap;
}

void t_model_resize(t_model *m, uint64_t size)
{
    t_model_reserve(m, size);
    if (size < m->size)
        memset(m->d + size, 0, m->size - size);
    m->size = size;
}

void t_model_write(t_model *m, uint64_t pos, const unsigned char *src, size_t len)
{
    t_model_reserve(m, pos + len);
    memcpy(m->d + pos, src, len);
    if (pos + len > m->size)
        m->size = pos + len;
}

static size_t rle_bound(void *ctx, size_t len)
{
    (void)ctx;
    return 2 * len + 2;
}

static int64_t rle_compress(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                            size_t cap)
{
    t_rle_faults *f = ctx;
    (void)level;
    if (f != NULL) {
        f->compresses++;
        if (f->fail_compress)
            return -1;
        if (f->over_cap)
            return (int64_t)cap + 1;
    }
    const unsigned char *s = src;
    unsigned char *d = dst;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t run = 1;
        while (i + run < len && run < 255 && s[i + run] == s[i])
            run++;
        if (o + 2 > cap)
            return 0;
        d[o++] = (unsigned char)run;
        d[o++] = s[i];
        i += run;
    }
    return (int64_t)o;
}

static int64_t rle_decompress(void *ctx, const void *src, size_t len, void *dst, size_t raw_len)
{
    t_rle_faults *f = ctx;
    const unsigned char *s = src;
    unsigned char *d = dst;
    size_t o = 0;
    if (len % 2 != 0)
        return -1;
    for (size_t i = 0; i < len; i += 2) {
        if (s[i] == 0 || o + s[i] > raw_len)
            return -1;
        memset(d + o, s[i + 1], s[i]);
        o += s[i];
    }
    if (f != NULL) {
        f->decompresses++;
        if (f->short_decompress && o > 0)
            o--;
    }
    return (int64_t)o;
}

bf_user_codec t_rle_codec(t_rle_faults *faults, int auto_candidate)
{
    return (bf_user_codec){T_RLE_ID,       "rle",          0,     0, 0, rle_bound, rle_compress,
                           rle_decompress, auto_candidate, faults};
}

void t_temp_parent(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%s/bf-test-%s-%ld", BF_TEST_TMP, tag, (long)getpid());
    mkdir(BF_TEST_TMP, 0700);
    t_rm_rf(buf);
    assert_int_equal(mkdir(buf, 0700), 0);
}

int t_dir_entries(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

int t_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    int ok = len == 0 || write(fd, data, len) == (ssize_t)len;
    return close(fd) == 0 && ok ? 0 : -1;
}

/* Move `len` bytes at physical offset `off` of the segments of `prefix`: write if `w`. */
static int phys_io(const char *prefix, uint64_t ss, uint64_t off, unsigned char *buf, size_t len,
                   int w)
{
    while (len > 0) {
        char path[4200];
        snprintf(path, sizeof(path), "%s.%llu", prefix, (unsigned long long)(off / ss));
        size_t n = ss - off % ss < len ? (size_t)(ss - off % ss) : len;
        int fd = w ? open(path, O_WRONLY | O_CREAT, 0600) : open(path, O_RDONLY);
        if (fd < 0)
            return -1;
        ssize_t r =
            w ? pwrite(fd, buf, n, (off_t)(off % ss)) : pread(fd, buf, n, (off_t)(off % ss));
        close(fd);
        if (r != (ssize_t)n)
            return -1;
        off += n;
        buf += n;
        len -= n;
    }
    return 0;
}

int t_phys_read(const char *prefix, uint64_t segment_size, uint64_t off, void *buf, size_t len)
{
    return phys_io(prefix, segment_size, off, buf, len, 0);
}

int t_phys_write(const char *prefix, uint64_t segment_size, uint64_t off, const void *buf,
                 size_t len)
{
    return phys_io(prefix, segment_size, off, (unsigned char *)buf, len, 1);
}

unsigned char *t_index_read(const char *prefix, uint64_t segment_size, size_t *len, uint64_t *off)
{
    unsigned char head[BF_HEAD_BYTES] = {0};
    char path[4200];
    snprintf(path, sizeof(path), "%s.0", prefix);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    ssize_t got = pread(fd, head, sizeof(head), 0);
    close(fd);
    bf_head_slot slot;
    const char *why;
    if (got < 0 || bf_head_decode(head, (size_t)got, &slot, &why) != BF_OK)
        return NULL;
    unsigned char *b = malloc((size_t)slot.len);
    if (b == NULL || t_phys_read(prefix, segment_size, slot.off, b, (size_t)slot.len) != 0) {
        free(b);
        return NULL;
    }
    *len = (size_t)slot.len;
    *off = slot.off;
    return b;
}

unsigned char *t_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    size_t r;
    while (buf != NULL && (r = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += r;
        if (n == cap) {
            unsigned char *b = realloc(buf, cap * 2);
            if (b == NULL)
                free(buf);
            buf = b;
            cap *= 2;
        }
    }
    fclose(fp);
    *len = n;
    return buf;
}

void t_rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *de;
    char sub[4096];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            t_rm_rf(sub);
        else
            unlink(sub);
    }
    closedir(d);
    rmdir(path);
}

/* A task runner: the task on a thread of its own (detached), as an engine's pool would. */
typedef struct t_task {
    void (*task)(void *);
    void *arg;
} t_task;

static void *t_task_main(void *p)
{
    t_task t = *(t_task *)p;
    free(p);
    t.task(t.arg);
    return NULL;
}

void t_runner_thread(void *ctx, void (*task)(void *), void *arg)
{
    (void)ctx;
    t_task *t = malloc(sizeof(*t));
    pthread_t th;
    pthread_attr_t at;
    if (t == NULL || pthread_attr_init(&at) != 0) {
        free(t);
        task(arg);
        return;
    }
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    t->task = task;
    t->arg = arg;
    if (pthread_create(&th, &at, t_task_main, t) != 0) {
        free(t);
        task(arg);
    }
    pthread_attr_destroy(&at);
}

void t_runner_inline(void *ctx, void (*task)(void *), void *arg)
{
    (void)ctx;
    task(arg);
}

int t_workers_env(void)
{
    const char *v = getenv("BF_TEST_WORKERS");
    return v != NULL ? atoi(v) : 0;
}

void t_workers_apply(bf_space *sp)
{
    int n = t_workers_env();
    if (n <= 0)
        return;
    const char *r = getenv("BF_TEST_RUNNER");
    void (*run)(void *, void (*)(void *), void *) = NULL;
    if (r != NULL && strcmp(r, "thread") == 0)
        run = t_runner_thread;
    else if (r != NULL && strcmp(r, "inline") == 0)
        run = t_runner_inline;
    if (bf_space_set_workers(sp, (unsigned)n, run, NULL) != BF_OK)
        fail_msg("bf_space_set_workers(%d): %s", n, bf_space_errmsg(sp));
}

bf_space *t_space_opts(const bf_space_options *o)
{
    bf_space *sp = NULL;
    char err[256] = "";
    if (bf_space_create(o, &sp, err, sizeof(err)) != BF_OK)
        fail_msg("bf_space_create: %s", err);
    t_workers_apply(sp);
    return sp;
}

bf_space *t_space(const char *parent, bf_codec codec, uint32_t block_size,
                  const bf_allocator *alloc)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = codec;
    o.block_size = block_size;
    o.allocator = alloc;
    return t_space_opts(&o);
}

static void image_reserve(t_image *m, uint64_t size)
{
    if (size <= m->cap && m->d != NULL)
        return;
    uint64_t cap = size * 2 + 1;
    m->d = realloc(m->d, cap);
    m->known = realloc(m->known, cap);
    assert_non_null(m->d);
    assert_non_null(m->known);
    memset(m->d + m->cap, 0, cap - m->cap);
    memset(m->known + m->cap, 1, cap - m->cap);
    m->cap = cap;
}

void t_image_resize(t_image *m, uint64_t size)
{
    image_reserve(m, size);
    if (size < m->size) {
        memset(m->d + size, 0, m->size - size);
        memset(m->known + size, 1, m->size - size);
    }
    m->size = size;
}

void t_image_write(t_image *m, uint64_t pos, const void *src, size_t len)
{
    if (len == 0)
        return;
    if (pos + len > m->size)
        t_image_resize(m, pos + len);
    memcpy(m->d + pos, src, len);
    memset(m->known + pos, 1, len);
}

void t_image_forget(t_image *m, uint64_t pos, size_t len)
{
    if (pos >= m->size)
        return;
    if (len > m->size - pos)
        len = (size_t)(m->size - pos);
    memset(m->known + pos, 0, len);
}

void t_image_free(t_image *m)
{
    free(m->d);
    free(m->known);
    memset(m, 0, sizeof(*m));
}

void t_image_check(bf_file *f, const t_image *m, const char *what)
{
    const char *msg = bf_space_errmsg(bf_file_space(f));
    if (bf_file_size(f) != m->size)
        fail_msg("%s: size %llu, expected %llu", what, (unsigned long long)bf_file_size(f),
                 (unsigned long long)m->size);
    uint64_t pos = bf_file_tell(f);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    unsigned char *got = malloc(m->size + 1);
    assert_non_null(got);
    int64_t n = bf_file_read(f, got, m->size + 1);
    if (n != (int64_t)m->size)
        fail_msg("%s: read returned %lld of %llu bytes (%s)", what, (long long)n,
                 (unsigned long long)m->size, msg);
    for (uint64_t i = 0; i < m->size; i++)
        if (m->known[i] && got[i] != m->d[i])
            fail_msg("%s: byte %llu is %u, expected %u", what, (unsigned long long)i, got[i],
                     m->d[i]);
    free(got);
    assert_int_equal(bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), BF_OK);
}

uint64_t t_map_used(const bf_blockmap *m)
{
    uint64_t n = 0;
    for (uint64_t b = 0; bf_map_next(m, &b) != NULL; b++)
        n++;
    return n;
}

uint64_t t_map_bound(uint64_t used, uint64_t nblocks)
{
    /* "at most 31 bytes per block holding data and, past 4096 blocks, a directory of 12 bytes
       and a bit per 4096 blocks, up to an eighth more as it grows, at least 200" */
    uint64_t leaves = (nblocks + 4095) / 4096;
    return 31 * used + (nblocks > 4096 ? (55 * leaves + 3) / 4 + 200 : 0);
}

int t_device_measurable(const bf_auto_device *d)
{
    /* "device_ns, pace_ns and read_device_ns of 0 to 2^64 ns per byte, transfer_ns and
       read_transfer_ns of 0 to 1,000,001, limited_share of 0 to 1, ... request_ns of 0 to
       2^64, slope_ns and read_slope_ns of -2^64 to 2^64", read_overlap and moved_ns "of 0 to
       2^64" (NaN fails every comparison) */
    const double c = 18446744073709551616.0;
    const double f[11] = {d->device_ns,        d->pace_ns,       d->read_device_ns, d->transfer_ns,
                          d->read_transfer_ns, d->limited_share, d->request_ns,     d->slope_ns,
                          d->read_slope_ns,    d->read_overlap,  d->moved_ns};
    const double lo[11] = {0, 0, 0, 0, 0, 0, 0, -c, -c, 0, 0};
    const double hi[11] = {c, c, c, 1000001, 1000001, 1, c, c, c, c, c};
    for (int i = 0; i < 11; i++)
        if (!(f[i] >= lo[i] && f[i] <= hi[i]))
            return 0;
    /* "read_limited_windows at most read_share_windows" */
    return d->read_limited_windows <= d->read_share_windows;
}
