/* Reader of .bin table files: maps the file read-only and checks, before
 * handing out any pointer, that the header is ours, that every array lies
 * inside the file and is 8-byte aligned, and that each string column's
 * offsets start at 0 and end at its byte count. Offsets in between are
 * trusted (checking them would read the whole file at open). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "tpch_bin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen_binfmt.h"

struct tpch_bin {
    const char *map;
    size_t size;
    const tpch_bin_header *h;
    const tpch_bin_coldesc *cols;
};

static int bad(char *err, size_t errlen, const char *path, const char *why)
{
    snprintf(err, errlen, "%s: %s", path, why);
    return -1;
}

static int in_file(uint64_t off, uint64_t len, uint64_t size)
{
    return off % 8 == 0 && off <= size && len <= size - off;
}

static int check_column(const tpch_bin_coldesc *d, const char *map, uint64_t nrows,
                        uint64_t size)
{
    if (memchr(d->name, '\0', sizeof d->name) == NULL || d->name[0] == '\0')
        return -1;
    switch (d->type) {
    case TPCH_I64: return in_file(d->array_off, nrows * 8, size) ? 0 : -1;
    case TPCH_DATE: return in_file(d->array_off, nrows * 4, size) ? 0 : -1;
    case TPCH_STR: {
        if (!in_file(d->array_off, (nrows + 1) * 8, size) || d->data_off > size ||
            d->data_len > size - d->data_off)
            return -1;
        const uint64_t *off = (const uint64_t *)(const void *)(map + d->array_off);
        return off[0] == 0 && off[nrows] == d->data_len ? 0 : -1;
    }
    default: return -1;
    }
}

static int validate(const char *map, size_t size, const char *path, char *err, size_t errlen)
{
    const tpch_bin_header *h = (const tpch_bin_header *)(const void *)map;
    if (size < sizeof *h || memcmp(h->magic, TPCH_BIN_MAGIC, sizeof h->magic) != 0)
        return bad(err, errlen, path, "not a tpchgen .bin file");
    if (h->version != TPCH_BIN_VERSION)
        return bad(err, errlen, path, "unsupported .bin version");
    if (h->file_size != size)
        return bad(err, errlen, path, "file size does not match header (truncated?)");
    if (h->ncols == 0 || h->ncols > TPCH_BIN_MAXCOLS ||
        sizeof *h + h->ncols * sizeof(tpch_bin_coldesc) > size || h->nrows > size)
        return bad(err, errlen, path, "corrupt header");
    const tpch_bin_coldesc *cols = (const tpch_bin_coldesc *)(const void *)(map + sizeof *h);
    for (uint32_t i = 0; i < h->ncols; i++)
        if (check_column(&cols[i], map, h->nrows, size) != 0)
            return bad(err, errlen, path, "corrupt column descriptor");
    return 0;
}

int tpch_bin_open(const char *path, tpch_bin **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return bad(err, errlen, path, "empty or unreadable file");
    }
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        return -1;
    }
    tpch_bin *t = malloc(sizeof *t);
    if (!t || validate(map, size, path, err, errlen) != 0) {
        if (!t)
            snprintf(err, errlen, "out of memory");
        free(t);
        munmap(map, size);
        return -1;
    }
    t->map = map;
    t->size = size;
    t->h = (const tpch_bin_header *)map;
    t->cols = (const tpch_bin_coldesc *)(const void *)(t->map + sizeof *t->h);
    *out = t;
    return 0;
}

void tpch_bin_close(tpch_bin *t)
{
    if (!t)
        return;
    munmap((void *)t->map, t->size);
    free(t);
}

uint64_t tpch_bin_rows(const tpch_bin *t)
{
    return t->h->nrows;
}

int tpch_bin_ncols(const tpch_bin *t)
{
    return (int)t->h->ncols;
}

static const tpch_bin_coldesc *column(const tpch_bin *t, int col)
{
    return col >= 0 && (uint32_t)col < t->h->ncols ? &t->cols[col] : NULL;
}

const char *tpch_bin_col_name(const tpch_bin *t, int col)
{
    const tpch_bin_coldesc *d = column(t, col);
    return d ? d->name : NULL;
}

tpch_coltype tpch_bin_col_type(const tpch_bin *t, int col)
{
    const tpch_bin_coldesc *d = column(t, col);
    return d ? (tpch_coltype)d->type : (tpch_coltype)0;
}

int tpch_bin_col_index(const tpch_bin *t, const char *name)
{
    for (uint32_t i = 0; i < t->h->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

static const void *array_of(const tpch_bin *t, int col, tpch_coltype type)
{
    const tpch_bin_coldesc *d = column(t, col);
    return d && d->type == (uint32_t)type ? t->map + d->array_off : NULL;
}

const int64_t *tpch_bin_i64(const tpch_bin *t, int col)
{
    return array_of(t, col, TPCH_I64);
}

const int32_t *tpch_bin_date(const tpch_bin *t, int col)
{
    return array_of(t, col, TPCH_DATE);
}

const uint64_t *tpch_bin_str_offsets(const tpch_bin *t, int col)
{
    return array_of(t, col, TPCH_STR);
}

const char *tpch_bin_str_data(const tpch_bin *t, int col)
{
    const tpch_bin_coldesc *d = column(t, col);
    return d && d->type == TPCH_STR ? t->map + d->data_off : NULL;
}
