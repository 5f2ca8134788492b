/* Helpers shared by the generator tests: failure reporting, scratch
 * directories, whole-file reads and a .tbl table loader. */
#ifndef TPCH_TEST_UTIL_H
#define TPCH_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

extern int test_failures;

/* Records a failure (printing at most a few per check site) and goes on. */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond))                                                         \
            test_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);               \
    } while (0)

void test_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Creates a fresh directory under $TMPDIR (or /tmp); caller frees the name. */
char *test_mkdtemp(const char *tag);
/* Removes a directory tree made by the tests. */
void test_rmtree(const char *dir);
/* Reads a whole file (NUL-terminated); NULL on error. */
char *test_read_file(const char *path, size_t *len);

/* A .tbl file split into fields: field(r, c) is NUL-terminated. */
typedef struct {
    char *buf;
    size_t nrows;
    int ncols;
    char **f;
} test_tbl;

/* Loads dir/<name>.tbl, checking every line has ncols '|'-terminated fields. */
int test_tbl_load(test_tbl *t, const char *dir, const char *name, int ncols);
void test_tbl_free(test_tbl *t);

static inline const char *test_field(const test_tbl *t, size_t r, int c)
{
    return t->f[r * (size_t)t->ncols + (size_t)c];
}

/* Strict parsers: -1 and CHECK-free on malformed text. */
int test_parse_int(const char *s, int64_t *v);
int test_parse_money(const char *s, int64_t *cents);   /* "-123.40" */
int test_parse_date(const char *s, int32_t *days);      /* "1995-06-17" */

#endif
