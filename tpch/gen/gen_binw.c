/* .bin writer; see gen_binw.h for the strategy and gen_binfmt.h for layout. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gen_binw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_binfmt.h"
#include "tpch_bin.h"

struct tpch_binw {
    int fd;
    const tpch_schema *schema;
    uint64_t nrows, rows_done;
    uint64_t arrays_end;
    tpch_bin_coldesc desc[TPCH_MAXCOLS];
    int tmpfd[TPCH_MAXCOLS]; /* string bytes, -1 for fixed-width columns */
    char final_path[4096], path[4200];
};

static int fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return -1;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *p = buf;
    while (n) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static uint32_t bin_type(tpch_kind k)
{
    return k == TPCH_K_STR ? TPCH_STR : k == TPCH_K_DATE ? TPCH_DATE : TPCH_I64;
}

static uint64_t array_bytes(uint32_t type, uint64_t nrows)
{
    return type == TPCH_STR ? (nrows + 1) * 8 : type == TPCH_DATE ? nrows * 4 : nrows * 8;
}

static void close_all(tpch_binw *w)
{
    for (int i = 0; i < w->schema->ncols; i++)
        if (w->tmpfd[i] >= 0)
            close(w->tmpfd[i]);
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

void tpch_binw_abort(tpch_binw *w)
{
    if (!w)
        return;
    close_all(w);
    unlink(w->path);
    free(w);
}

int tpch_binw_open(tpch_binw **out, const char *dir, tpch_table_id t, uint64_t nrows,
                   char *err, size_t errlen)
{
    tpch_binw *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->schema = tpch_schema_get(t);
    w->nrows = nrows;
    for (int i = 0; i < TPCH_MAXCOLS; i++)
        w->tmpfd[i] = -1;
    snprintf(w->final_path, sizeof w->final_path, "%s/%s.bin", dir, w->schema->name);
    snprintf(w->path, sizeof w->path, "%s.part", w->final_path);
    w->fd = open(w->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        fail(err, errlen, "cannot create", w->path);
        free(w);
        return -1;
    }
    uint64_t pos = sizeof(tpch_bin_header) + (uint64_t)w->schema->ncols * sizeof(tpch_bin_coldesc);
    for (int i = 0; i < w->schema->ncols; i++) {
        tpch_bin_coldesc *d = &w->desc[i];
        snprintf(d->name, sizeof d->name, "%s", w->schema->cols[i].name);
        d->type = bin_type(w->schema->cols[i].kind);
        d->array_off = pos = tpch_align8(pos);
        pos += array_bytes(d->type, nrows);
        if (d->type != TPCH_STR)
            continue;
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", w->path, i % 100);
        w->tmpfd[i] = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        uint64_t zero = 0;
        if (w->tmpfd[i] < 0 || unlink(tmp) != 0 ||
            pwrite_all(w->fd, &zero, sizeof zero, d->array_off) != 0) {
            fail(err, errlen, "cannot write", tmp);
            tpch_binw_abort(w);
            return -1;
        }
    }
    w->arrays_end = tpch_align8(pos);
    *out = w;
    return 0;
}

int tpch_binw_append(tpch_binw *w, tpch_sink *s, char *err, size_t errlen)
{
    if (w->rows_done + s->nrows > w->nrows) {
        snprintf(err, errlen, "%s.bin: more rows than announced", w->schema->name);
        return -1;
    }
    for (int i = 0; i < w->schema->ncols; i++) {
        tpch_bin_coldesc *d = &w->desc[i];
        tpch_buf *fixed = &s->col[i].fixed;
        uint64_t at;
        if (d->type == TPCH_STR) {
            uint64_t *ends = (uint64_t *)(void *)fixed->p;
            for (uint64_t r = 0; r < s->nrows; r++)
                ends[r] += d->data_len;
            at = d->array_off + (w->rows_done + 1) * 8;
            const tpch_buf *data = &s->col[i].data;
            if (pwrite_all(w->tmpfd[i], data->p, data->len, d->data_len) != 0)
                return fail(err, errlen, "cannot write temporary file for", w->path);
            d->data_len += data->len;
        } else {
            at = d->array_off + w->rows_done * (d->type == TPCH_DATE ? 4 : 8);
        }
        if (pwrite_all(w->fd, fixed->p, fixed->len, at) != 0)
            return fail(err, errlen, "cannot write", w->path);
    }
    w->rows_done += s->nrows;
    return 0;
}

/* Copies n bytes of `from` (from offset 0) to `to` at offset `at`, in the
 * kernel when it can. */
static int copy_range(int from, int to, uint64_t n, uint64_t at)
{
    loff_t in = 0, outpos = (loff_t)at;
    while (n) {
        ssize_t k = copy_file_range(from, &in, to, &outpos, n, 0);
        if (k <= 0)
            break;
        n -= (uint64_t)k;
    }
    if (n == 0)
        return 0;
    size_t cap = (size_t)1 << 20;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -1;
    while (rc == 0 && n) {
        size_t chunk = n < cap ? (size_t)n : cap;
        ssize_t k = pread(from, buf, chunk, in);
        if (k <= 0 || pwrite_all(to, buf, (size_t)k, (uint64_t)outpos) != 0) {
            rc = -1;
            break;
        }
        in += k;
        outpos += k;
        n -= (uint64_t)k;
    }
    free(buf);
    return rc;
}

int tpch_binw_finish(tpch_binw *w, char *err, size_t errlen)
{
    int rc = -1;
    if (w->rows_done != w->nrows) {
        snprintf(err, errlen, "%s.bin: %llu rows written, %llu announced", w->schema->name,
                 (unsigned long long)w->rows_done, (unsigned long long)w->nrows);
        goto out;
    }
    uint64_t pos = w->arrays_end;
    for (int i = 0; i < w->schema->ncols; i++) {
        tpch_bin_coldesc *d = &w->desc[i];
        if (d->type != TPCH_STR)
            continue;
        d->data_off = pos;
        if (copy_range(w->tmpfd[i], w->fd, d->data_len, pos) != 0) {
            fail(err, errlen, "cannot write", w->path);
            goto out;
        }
        pos = tpch_align8(pos + d->data_len);
    }
    tpch_bin_header h = {.version = TPCH_BIN_VERSION,
                         .ncols = (uint32_t)w->schema->ncols,
                         .nrows = w->nrows,
                         .file_size = pos};
    memcpy(h.magic, TPCH_BIN_MAGIC, sizeof h.magic);
    if (pwrite_all(w->fd, &h, sizeof h, 0) != 0 ||
        pwrite_all(w->fd, w->desc, sizeof w->desc[0] * (size_t)w->schema->ncols, sizeof h) != 0 ||
        ftruncate(w->fd, (off_t)pos) != 0) {
        fail(err, errlen, "cannot write", w->path);
        goto out;
    }
    close_all(w);
    if (rename(w->path, w->final_path) != 0) {
        fail(err, errlen, "cannot rename", w->path);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        tpch_binw_abort(w);
    else
        free(w);
    return rc;
}
