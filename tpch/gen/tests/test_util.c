/* Implementation of the test helpers (see test_util.h). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "test_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen_dates.h"

int test_failures;

void test_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    if (++test_failures > 30)
        return;
    fprintf(stderr, "%s:%d: check failed: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

char *test_mkdtemp(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/tpchgen_%s_XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
    return strdup(buf);
}

void test_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) != NULL) {
        *len = fread(buf, 1, (size_t)st.st_size, f);
        buf[*len] = '\0';
    }
    fclose(f);
    return buf;
}

int test_tbl_load(test_tbl *t, const char *dir, const char *name, int ncols)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.tbl", dir, name);
    memset(t, 0, sizeof *t);
    size_t len;
    t->buf = test_read_file(path, &len);
    if (!t->buf) {
        CHECK(0, "cannot read %s", path);
        return -1;
    }
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += t->buf[i] == '\n';
    t->ncols = ncols;
    t->f = malloc((lines + 1) * (size_t)ncols * sizeof *t->f);
    char *p = t->buf, *end = t->buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || nl == p || nl[-1] != '|') {
            CHECK(0, "%s line %zu: not terminated by '|\\n'", name, t->nrows + 1);
            return -1;
        }
        int c = 0;
        for (char *q = p; q < nl; q++) {
            if (*q != '|')
                continue;
            if (c < ncols)
                t->f[t->nrows * (size_t)ncols + (size_t)c] = p;
            c++;
            *q = '\0';
            p = q + 1;
        }
        if (c != ncols) {
            CHECK(0, "%s line %zu: %d fields, expected %d", name, t->nrows + 1, c, ncols);
            return -1;
        }
        t->nrows++;
        p = nl + 1;
    }
    return 0;
}

void test_tbl_free(test_tbl *t)
{
    free(t->buf);
    free(t->f);
    memset(t, 0, sizeof *t);
}

int test_parse_int(const char *s, int64_t *v)
{
    char *end;
    if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
        return -1;
    long long x = strtoll(s, &end, 10);
    if (*end)
        return -1;
    *v = x;
    return 0;
}

int test_parse_money(const char *s, int64_t *cents)
{
    size_t n = strlen(s);
    if (n < 4 || s[n - 3] != '.' || s[n - 2] < '0' || s[n - 2] > '9' || s[n - 1] < '0' ||
        s[n - 1] > '9')
        return -1;
    char whole[32];
    if (n - 3 >= sizeof whole)
        return -1;
    memcpy(whole, s, n - 3);
    whole[n - 3] = '\0';
    int64_t w;
    if (test_parse_int(whole, &w) != 0)
        return -1;
    int64_t frac = (s[n - 2] - '0') * 10 + (s[n - 1] - '0');
    *cents = s[0] == '-' ? w * 100 - frac : w * 100 + frac;
    return 0;
}

int test_parse_date(const char *s, int32_t *days)
{
    int y, m, d;
    char tail;
    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-' ||
        sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 || m < 1 || m > 12 || d < 1 ||
        d > 31)
        return -1;
    *days = tpch_days_from_civil(y, m, d);
    char back[10];
    tpch_format_date(*days, back);
    return memcmp(back, s, 10) == 0 ? 0 : -1;
}
